/*
 * @brief Internal to the trace reader (docs/trace-format.md into struct gmt_trace): the reading
 * state every line's function shares, and the reader's files, one job each:
 *
 *   fields.c    messages about lines, and typed access to a line's keys (below)
 *   meta.c      the lines that name things: stack, modules, pycode, pyinfo
 *   lines.c     one function per line of what happened: header, event, block, elided, marker,
 *               holders, torch, nvml, snapshot, trailer, and the reorder window's output
 *   dispatch.c  one line in its turn: the fast path (flatjson) or jansson, to its function
 *   read.c      the JSON Lines read: a file line by line into dispatch.c, and what it says whole
 *   trace.c     struct gmt_trace itself: its memory and accessors
 *   open.c      gmt_trace_read(), gmt_trace_read_sink(): open the input, tell what it is (a
 *               trace, a PyTorch snapshot pickle: snapshot.c), hand it to its reader
 *   pipeline.c  the same read with the event lines parsed ahead on worker threads (jobs > 1)
 *
 * Dependencies one way: open -> read -> pipeline -> dispatch -> lines, meta -> fields -> trace;
 * read -> dispatch; snapshot -> trace.
 */
#ifndef GMT_READER_READER_INT_H
#define GMT_READER_READER_INT_H

#include "analysis/reader/flatjson.h"
#include "analysis/reader/reorder.h"
#include "analysis/reader/trace.h"
#include "analysis/reader/trace_input.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GMT_TRACE_MAX_DIAG 20

/*
 * Lines that may come before the first trace line (a file cut at its start, `tail -c`), skipped
 * without a word about what they hold; one more and the file is not a trace.
 */
#define GMT_TRACE_MAX_LEAD 4

struct reader {
	struct gmt_trace *t;
	FILE *diag;
	char *epath; /* the path as messages show it (esc.h): a file name may hold anything */
	size_t shown;
	size_t usable;	/* lines that contributed something */
	size_t content; /* of those, events, markers, snapshots, trailers: what only a trace has */
	/*
	 * Until a line has shown the file to be a trace (a JSON object with a "type" of the
	 * format), nothing of what it holds is quoted: a trace path may be a symlink to any file
	 * the reader may read, and jansson's messages quote the text they stopped at.
	 */
	bool trace_line_seen;
	size_t lead;  /* lines before it, skipped unquoted */
	bool refused; /* unknown format or version: the file is unreadable */
	bool nomem;   /* out of memory: the read stopped, the file is unreadable (nomem()) */
	/* why a trace was refused, in words that quote nothing of the file (rd_refuse()): what
	 * the session keeps of a lost input; empty when the file is another program's */
	char refuse_why[GMT_TRACE_WHY];
	bool have_min_ts;
	bool have_start_ts;
	uint64_t min_ts;   /* time origin when there is no header */
	uint32_t *modhash; /* open addressing over t->modules (index + 1; 0 empty) */
	size_t modhash_mask;
	bool no_fast; /* GMT_TRACE_SLOW=1: every line through jansson (tests compare both) */
	/* streaming (gmt_trace_read_sink()): a min-heap by seq of what is not delivered yet */
	const struct gmt_trace_sink *sink;
	struct gmt_reorder window;
	bool delivered_any;	      /* an item went to the sink in order */
	uint64_t event_seq, event_ts; /* of the last event delivered in order */
	size_t first_late_line;	      /* and its seq: for the note on lines applied late */
	uint64_t first_late_seq;
	struct open_range *open; /* pushes delivered and not popped yet, to name pops */
	size_t nopen;
	char *scratch; /* the fast path's copy of a line */
	size_t scratch_cap;
	uint32_t *addrhash; /* open addressing over t->addresses (index + 1; 0 empty) */
	size_t addrhash_mask;
	uint64_t *stack_addrs; /* a stack line's kept frames while it is checked */
	struct gmt_trace_pyframe *stack_py;
	size_t stack_addrs_cap, stack_py_cap;
	const struct gmt_read_progress *progress; /* NULL: none */
	const struct gmt_trace_input *in;
};

/* Before the trace changes where the sink may look (gmt_trace_sink.sync). */
static inline void
rd_sink_sync(struct reader *r)
{
	if (r->sink && r->sink->sync)
		r->sink->sync(r->sink->ctx);
}

/* @p lines read, the input at byte @p offset: every GMT_READ_PROGRESS_LINES, the progress is told
 * (trace.h). */
static inline void
rd_progress_at(struct reader *r, size_t lines, long long offset)
{
	if (r->progress && (lines & (GMT_READ_PROGRESS_LINES - 1)) == 0)
		r->progress->step(r->progress->ctx, lines, offset);
}

/* @p lines read, the input where it stands now. */
static inline void
rd_progress_step(struct reader *r, size_t lines)
{
	if (r->progress && (lines & (GMT_READ_PROGRESS_LINES - 1)) == 0)
		r->progress->step(r->progress->ctx, lines, gmt_trace_input_offset(r->in));
}

struct open_range {
	int64_t tid;
	uint32_t depth;
	const char *label;
};

// --- typed key access (fields.c) ---------------------------------------------------------------
//
// Each getter returns 0 when the key is present and well-formed, -ENOENT when it is absent (or
// null) and -EINVAL when it has the wrong type, so callers can say which of the two it was.
// Always inlined: with the key a literal, the flat record's lookup folds to a compare or two.

/*
 * Where a line's keys come from: the jansson object, or (event lines of the plain shape) the
 * flat record of flatjson.h. The getters below read either the same way.
 */
struct src {
	json_t *json;
	const struct gmt_flat *flat;
};

#define JS(obj) ((struct src){.json = (obj)})

enum fkind { F_ABSENT, F_NULL, F_INT, F_STR, F_OTHER };

struct fval {
	enum fkind kind;
	long long num;
	bool big; /* F_INT past LLONG_MAX (the fast path's only, flatjson.h): num is its bits */
	const char *str;
	size_t slen; /* str's length up to its first NUL (what jansson's string may hold past it is
		      * not read, as strlen() would not) */
};

void __attribute__((format(printf, 3, 4)))
rd_bad_line(struct reader *r, size_t lineno, const char *fmt, ...);

void __attribute__((format(printf, 3, 4)))
rd_note_line(struct reader *r, size_t lineno, const char *fmt, ...);

int rd_parse_hex(const char *s, uint64_t *out);

int rd_get_pair(struct src obj, const char *key, uint64_t out[2]);

bool rd_get_true(struct src obj, const char *key);

bool rd_key_error(struct reader *r,
		  size_t lineno,
		  const char *type,
		  const char *key,
		  int err,
		  const char *expected);

bool rd_nomem(struct reader *r);

/* The file refused (unreadable): @p why kept as the reason (the first one), said on diag after
 * the path (and @p lineno unless 0). @p why must quote nothing of the file. */
void rd_refuse(struct reader *r, size_t lineno, const char *why);

char *rd_dup_str(struct reader *r, const char *s);

void rd_shrink(void *pp, size_t n, size_t size);

bool rd_resize(struct reader *r, void *pp, size_t n, size_t size);

void rd_see_ts(struct reader *r, uint64_t ts);

/*
 * The hash of a name that rd_intern()'s cache is indexed by: a pure function of the bytes, so
 * a worker reading a line ahead (rd_pre_read()) computes it off the thread that interns. Eight
 * bytes at a time (every event hashes its two names: a multiply per byte was ~3% of a read), a
 * multiply each, never a byte past the name's @p n bytes: whole words, then the last 1-7 bytes
 * as two overlapping loads of 4 (or the 1-3 one by one). Only which cache slot a name takes
 * depends on it: the cache compares the name itself.
 */
static inline uint32_t
rd_name_hash_n(const char *s, size_t n)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h = n * k, w;
	uint32_t a, b;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	if (n >= 4) {
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		w = (uint64_t)a << 32 | b;
	} else {
		w = 0;
		for (size_t i = 0; i < n; i++)
			w = w << 8 | (uint8_t)s[i];
	}
	h = (h ^ w) * k;
	return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/*
 * A name's key in rd_intern()'s cache: its length above its rd_name_hash_n(). A hit compares
 * the name in a few word loads (gmt_same_bytes()): a strcmp() per name, two per event, was a sixth
 * of the calling thread's time.
 */
static inline uint64_t
rd_name_key_n(const char *s, size_t n)
{
	return (uint64_t)n << 32 | rd_name_hash_n(s, n);
}

/* rd_name_key_n() of a NUL-terminated name. */
static inline uint64_t
rd_name_key(const char *s)
{
	return rd_name_key_n(s, strlen(s));
}

int rd_intern(struct reader *r, const char *s);

/** rd_intern() of @p s whose rd_name_key() is @p key (the name has its length's bytes). */
int rd_intern_hashed(struct reader *r, const char *s, uint64_t key);

bool rd_read_header(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_stack(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_stack_fast(struct reader *r, const char *buf, size_t len, size_t lineno);

bool rd_read_modules(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_pycode(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_pyinfo(struct reader *r, json_t *obj, size_t lineno);

void rd_late(struct reader *r, size_t line, uint64_t seq);

void rd_window_deliver(void *ctx, const struct gmt_reorder_item *p, bool is_late);

bool rd_read_event(struct reader *r, struct src obj, size_t lineno);

/*
 * An event line in two steps, as rd_read_event() takes it: what the line says (@p r NULL: no
 * message, nothing of the reader touched, so a worker may read the line ahead of its turn), then
 * its names interned and the event kept, in its turn (rd_take_event_hashed()). @p api and
 * @p driver point into the line; @p key: their rd_name_key_n() (the driver's 0 when none).
 */
bool rd_parse_event(struct reader *r,
		    struct src obj,
		    size_t lineno,
		    struct gmt_trace_event *ev,
		    const char **api,
		    const char **driver,
		    uint64_t key[2]);

/** The event rd_parse_event() read, its names (whose rd_name_key_n() it gave) interned, kept. */
bool rd_take_event_hashed(struct reader *r,
			  struct gmt_trace_event *ev,
			  const char *api,
			  const char *driver,
			  uint64_t api_key,
			  uint64_t driver_key);

/* A block line in the same two steps (rd_read_block()). */
bool rd_parse_block(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *out);

bool rd_take_block(struct reader *r, const struct gmt_trace_event *ev);

bool rd_read_elided(struct reader *r, struct src obj, size_t lineno);
bool rd_read_elided_blocks(struct reader *r, struct src obj, size_t lineno);

bool rd_read_block(struct reader *r, struct src obj, size_t lineno);

void rd_holders_free(struct gmt_trace *t);

bool rd_read_holders(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_torch(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_marker(struct reader *r, json_t *obj, size_t lineno);

void rd_name_pops(struct reader *r);

bool rd_read_snapshot(struct reader *r, json_t *obj, size_t lineno);

bool rd_read_trailer(struct reader *r, json_t *obj, size_t lineno);

void rd_lead_end(struct reader *r, size_t lineno);

int rd_cmp_event(const void *pa, const void *pb);

int rd_cmp_marker(const void *pa, const void *pb);

void rd_settle_stacks(struct reader *r);

void rd_pycode_free(struct gmt_trace_pycode *c);

void rd_settle_pycodes(struct reader *r);

static inline __attribute__((always_inline)) struct fval
rd_field(struct src o, const char *key)
{
	struct fval f = {F_ABSENT, 0, false, NULL, 0};

	if (o.flat) {
		const struct gmt_flat_value *v = gmt_flat_get(o.flat, key);

		if (v) {
			f.kind = v->type == GMT_FLAT_INT    ? F_INT
				 : v->type == GMT_FLAT_STR  ? F_STR
				 : v->type == GMT_FLAT_PAIR ? F_OTHER
							    : F_NULL;
			f.num = v->num;
			f.big = v->type == GMT_FLAT_INT && v->big;
			f.str = v->str;
			f.slen = v->slen;
		}
		return f;
	}
	json_t *v = json_object_get(o.json, key);
	if (!v)
		return f;
	if (json_is_null(v))
		f.kind = F_NULL;
	else if (json_is_integer(v))
		f.kind = F_INT, f.num = json_integer_value(v);
	else if (json_is_string(v))
		f.kind = F_STR, f.str = json_string_value(v), f.slen = strlen(f.str);
	else
		f.kind = F_OTHER;
	return f;
}

static inline __attribute__((always_inline)) int
rd_get_u64(struct src obj, const char *key, uint64_t *out)
{
	struct fval v = rd_field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_INT || v.num < 0)
		return -EINVAL;
	*out = (uint64_t)v.num;
	return 0;
}

/*
 * A size as the tracer writes it: any uint64_t. Only a failed allocation's can be past
 * LLONG_MAX (what was asked: `cudaMalloc(&p, (size_t)-1)`); every other number the reader
 * takes is within long long, past it an error as jansson has it (rd_get_u64()).
 */
static inline __attribute__((always_inline)) int
rd_get_size(struct src obj, const char *key, uint64_t *out)
{
	struct fval v = rd_field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_INT || (v.num < 0 && !v.big))
		return -EINVAL;
	*out = (uint64_t)v.num;
	return 0;
}

static inline __attribute__((always_inline)) int
rd_get_i64(struct src obj, const char *key, long long *out)
{
	struct fval v = rd_field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_INT || v.big)
		return -EINVAL;
	*out = v.num;
	return 0;
}

static inline __attribute__((always_inline)) int
rd_get_hex(struct src obj, const char *key, uint64_t *out)
{
	struct fval v = rd_field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_STR)
		return -EINVAL;
	return gmt_hex_u64(v.str, v.slen, out) ? 0 : -EINVAL;
}

/* A string field and its length. */
static inline __attribute__((always_inline)) int
rd_get_strn(struct src obj, const char *key, const char **out, size_t *len)
{
	struct fval v = rd_field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_STR)
		return -EINVAL;
	*out = v.str;
	*len = v.slen;
	return 0;
}

static inline __attribute__((always_inline)) int
rd_get_str(struct src obj, const char *key, const char **out)
{
	size_t len;

	return rd_get_strn(obj, key, out, &len);
}

// --- the pipelined read (pipeline.c) -----------------------------------------------------------

/* What a worker read of a line ahead of its turn (rd_pre_read()). */
enum { RD_PRE_NONE, RD_PRE_EVENT, RD_PRE_BLOCK };

struct rd_pre {
	uint8_t kind;
	struct gmt_trace_event ev;
	const char *api, *driver; /* events: the names, in the worker's copy (driver NULL: none) */
	uint64_t api_key, driver_key; /* their rd_name_key_n() */
	/* short names copied here by the worker (api and driver point here then): the calling
	 * thread reads this entry anyway, the line's bytes it would fetch from the worker's core */
	char names[2][24];
};

void rd_pre_read(char *text, size_t len, size_t lineno, struct rd_pre *pre);

bool rd_take_line(struct reader *r, const struct gmt_trace_line *line, const struct rd_pre *pre);

/* How a pipelined read ended: the input's last answer (n, errno), or early: a line stopped it. */
struct rd_pipeline_end {
	int n;
	int err;
	bool early;
};

/* Whether @p opt asks for a pipelined read (jobs > 1, the fast path on). */
bool rd_pipeline_wanted(const struct gmt_read_options *opt);

/*
 * The lines of @p in into rd_take_line() in their order, as the serial loop of read.c hands
 * them, while opt->jobs - 1 workers (and this thread, when it would wait) read the event and
 * block lines ahead (rd_pre_read()).
 */
struct rd_pipeline_end
rd_read_pipelined(struct reader *r, struct gmt_trace_input *in, const struct gmt_read_options *opt);

/** The JSON Lines read of @p in, a trace (read.c); takes @p in over and closes it. @p why as
 * gmt_trace_read_sink()'s. */
enum gmt_trace_status rd_read_jsonl(struct gmt_trace_input *in,
				    const char *path,
				    FILE *diag,
				    const struct gmt_read_options *opt,
				    const struct gmt_trace_sink *sink,
				    struct gmt_trace **out,
				    char why[GMT_TRACE_WHY]);

#endif
