/*
 * @brief The trace reader: docs/trace-format.md (version 1) into struct gmt_trace.
 *
 * One pass over the file, a line at a time (reader/input.h: up to 64 MiB, a longer one skipped),
 * one jansson parse per line, and the values copied out at once into compact structs. Validation
 * follows the format document: a line that is not JSON, has no "type", or lacks a key its type
 * requires is reported and skipped; a header of an unknown format or version makes the whole file
 * unreadable, because guessing the meaning of keys would produce a confident wrong report.
 */
#define _GNU_SOURCE
#include "analysis/reader/trace.h"
#include "analysis/reader/flatjson.h"
#include "analysis/reader/input.h"
#include "analysis/reader/reorder.h"
#include "analysis/reader/snapshot.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Bad lines shown per file; a garbled file must not bury the report under its diagnostics. */
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
};

/* The stacks' frame lists: blocks handed out in order, freed with the trace. */
struct gmt_trace_block {
	struct gmt_trace_block *next;
	size_t used, cap;
	_Alignas(8) unsigned char data[];
};

#define STACK_BLOCK (64u * 1024)

struct open_range {
	int64_t tid;
	uint32_t depth;
	const char *label;
};

// --- messages ---------------------------------------------------------------------------------

/*
 * "FILE:LINE: " @p kind and the message, escaped as a whole: what a message quotes of a line
 * (a name, a key's value, jansson's "near '...'") is the trace's, not ours.
 */
static void
line_message(struct reader *r, size_t lineno, const char *kind, const char *fmt, va_list ap)
{
	char *msg;

	fprintf(r->diag, "%s:%zu: %s", r->epath, lineno, kind);
	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs("(out of memory)", r->diag);
	} else {
		gmt_fputs_esc(msg, r->diag);
		free(msg);
	}
	fputc('\n', r->diag);
}

static void __attribute__((format(printf, 3, 4)))
bad_line(struct reader *r, size_t lineno, const char *fmt, ...)
{
	va_list ap;

	if (r->nomem) /* the line failed for lack of memory: the file is unreadable, said once */
		return;
	r->t->bad_lines++;
	if (r->shown >= GMT_TRACE_MAX_DIAG)
		return;
	r->shown++;
	va_start(ap, fmt);
	line_message(r, lineno, "", fmt, ap);
	va_end(ap);
}

/* A remark about a line that is still used (not counted as a bad line); shares the cap. */
static void __attribute__((format(printf, 3, 4)))
note_line(struct reader *r, size_t lineno, const char *fmt, ...)
{
	va_list ap;

	if (r->nomem || r->shown >= GMT_TRACE_MAX_DIAG)
		return;
	r->shown++;
	va_start(ap, fmt);
	line_message(r, lineno, "note: ", fmt, ap);
	va_end(ap);
}

// --- typed key access -------------------------------------------------------------------------
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
	const char *str;
};

static inline __attribute__((always_inline)) struct fval
field(struct src o, const char *key)
{
	struct fval f = {F_ABSENT, 0, NULL};

	if (o.flat) {
		const struct gmt_flat_value *v = gmt_flat_get(o.flat, key);

		if (v) {
			f.kind = v->type == GMT_FLAT_INT    ? F_INT
				 : v->type == GMT_FLAT_STR  ? F_STR
				 : v->type == GMT_FLAT_PAIR ? F_OTHER
							    : F_NULL;
			f.num = v->num;
			f.str = v->str;
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
		f.kind = F_STR, f.str = json_string_value(v);
	else
		f.kind = F_OTHER;
	return f;
}

static inline __attribute__((always_inline)) int
get_u64(struct src obj, const char *key, uint64_t *out)
{
	struct fval v = field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_INT || v.num < 0)
		return -EINVAL;
	*out = (uint64_t)v.num;
	return 0;
}

static inline __attribute__((always_inline)) int
get_i64(struct src obj, const char *key, long long *out)
{
	struct fval v = field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_INT)
		return -EINVAL;
	*out = v.num;
	return 0;
}

/* The format writes every pointer as "0x" + hex digits so 64-bit values survive JSON. */
static int
parse_hex(const char *s, uint64_t *out)
{
	return gmt_hex_u64(s, strlen(s), out) ? 0 : -EINVAL;
}

static inline __attribute__((always_inline)) int
get_hex(struct src obj, const char *key, uint64_t *out)
{
	struct fval v = field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_STR)
		return -EINVAL;
	return parse_hex(v.str, out);
}

static inline __attribute__((always_inline)) int
get_str(struct src obj, const char *key, const char **out)
{
	struct fval v = field(obj, key);

	if (v.kind == F_ABSENT || v.kind == F_NULL)
		return -ENOENT;
	if (v.kind != F_STR)
		return -EINVAL;
	*out = v.str;
	return 0;
}

/* Report a required key that get_*() rejected; false, so callers can return its result. */
/* A pair of integers [a, b] (a block line's pool id). */
static int
get_pair(struct src obj, const char *key, uint64_t out[2])
{
	if (obj.flat) {
		const struct gmt_flat_value *v = gmt_flat_get(obj.flat, key);

		if (!v || v->type == GMT_FLAT_NULL)
			return -ENOENT;
		if (v->type != GMT_FLAT_PAIR)
			return -EINVAL;
		out[0] = (uint64_t)v->num;
		out[1] = (uint64_t)v->num2;
		return 0;
	}
	json_t *a = json_object_get(obj.json, key);
	if (!a || json_is_null(a))
		return -ENOENT;
	json_t *p0 = json_array_get(a, 0), *p1 = json_array_get(a, 1);
	if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_integer(p0) ||
	    !json_is_integer(p1))
		return -EINVAL;
	out[0] = (uint64_t)json_integer_value(p0);
	out[1] = (uint64_t)json_integer_value(p1);
	return 0;
}

/* Whether @p key is true (the fast path declines lines with booleans: there it is absent). */
static bool
get_true(struct src obj, const char *key)
{
	return obj.json && json_is_true(json_object_get(obj.json, key));
}

static bool
key_error(struct reader *r,
	  size_t lineno,
	  const char *type,
	  const char *key,
	  int err,
	  const char *expected)
{
	if (err == -ENOENT)
		bad_line(r, lineno, "%s without \"%s\"", type, key);
	else
		bad_line(r, lineno, "%s with bad \"%s\" (expected %s)", type, key, expected);
	return false;
}

/*
 * Out of memory: the read stops after this line and the file is unreadable ("out of memory"),
 * so what the line had taken only needs to be freeable. Returns false, for `return nomem(r)`.
 */
static bool
nomem(struct reader *r)
{
	r->nomem = true;
	return false;
}

/* strdup() of @p s; NULL (and the read stops) out of memory. */
static char *
dup_str(struct reader *r, const char *s)
{
	char *d = strdup(s);

	if (!d)
		nomem(r);
	return d;
}

/* An array of @p n elements with room for more, cut to @p n (kept as it is when that fails: the
 * room is only slack). */
static void
shrink(void *pp, size_t n, size_t size)
{
	void *q = n ? gmt_realloc_array(*(void **)pp, n, size) : NULL;

	if (q)
		*(void **)pp = q;
}

/* realloc(*@p pp, @p n * @p size); false (*@p pp untouched, the read stops) out of memory. */
static bool
resize(struct reader *r, void *pp, size_t n, size_t size)
{
	void *q = gmt_realloc_array(*(void **)pp, n, size);

	if (!q)
		return nomem(r);
	*(void **)pp = q;
	return true;
}

static void
see_ts(struct reader *r, uint64_t ts)
{
	struct gmt_trace *t = r->t;

	if (!t->have_ts || ts > t->last_ts)
		t->last_ts = ts;
	t->have_ts = true;
	if (!r->have_min_ts || ts < r->min_ts)
		r->min_ts = ts;
	r->have_min_ts = true;
	/* no start_ts from a header: times count from the earliest seen so far (a streamed
	 * report's --from/--to in seconds are placed by the first event; the final origin is the
	 * earliest of the file, later lines can only be out of order by the writer's drain) */
	if (!r->have_start_ts)
		t->start_ts = r->min_ts;
}

/* The index of the name @p s in the trace's strings, added when new; -1 when there is no room
 * (or out of memory: r->nomem). */
static int
intern(struct reader *r, const char *s)
{
	struct gmt_trace *t = r->t;

	/* a direct-mapped cache in front of the scan: a trace names a few dozen calls, each often
	 */
	uint32_t h = 2166136261u;
	for (const char *c = s; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	uint16_t *slot = &t->string_cache[(h ^ (h >> 16)) & 255];

	if (*slot && strcmp(t->strings[*slot - 1], s) == 0)
		return *slot - 1;
	for (size_t i = 0; i < t->nstrings; i++) {
		if (strcmp(t->strings[i], s) == 0) {
			*slot = (uint16_t)(i + 1);
			return (int)i;
		}
	}
	/* UINT16_MAX itself stays free: it is GMT_TRACE_NO_STRING. */
	if (t->nstrings >= UINT16_MAX)
		return -1;
	if (!resize(r, &t->strings, t->nstrings + 1, sizeof(*t->strings)) ||
	    !(t->strings[t->nstrings] = dup_str(r, s)))
		return -1;
	if (t->nstrings < UINT16_MAX - 1)
		*slot = (uint16_t)(t->nstrings + 1);
	return (int)t->nstrings++;
}

// --- one function per line type ---------------------------------------------------------------

/* The strings of array @p a into a new *@p v of *@p n (other elements skipped). */
static void
read_strings(struct reader *r, json_t *a, char ***v, size_t *n)
{
	size_t i;
	json_t *e;

	if (!json_is_array(a) || !resize(r, v, json_array_size(a), sizeof(**v)))
		return;
	json_array_foreach(a, i, e)
	{
		if (json_is_string(e) && !((*v)[*n] = dup_str(r, json_string_value(e))))
			return;
		*n += json_is_string(e);
	}
}

/* The header's "stacks" object: what the tracer captured. Odd values leave "unknown". */
static void
read_stacks_info(struct reader *r, json_t *o)
{
	struct gmt_trace *t = r->t;
	json_t *v;
	uint64_t depth;

	if (!json_is_object(o))
		return;
	t->have_stacks_info = true;
	v = json_object_get(o, "native");
	t->stacks_native = json_is_true(v);
	if (get_u64(JS(o), "depth", &depth) == 0 && depth <= UINT32_MAX)
		t->stacks_depth = (uint32_t)depth;
	v = json_object_get(o, "python");
	if (json_is_string(v) && !t->python)
		t->python = dup_str(r, json_string_value(v));
}

static bool
read_header(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	const char *s;
	long long v;
	uint64_t u;
	json_t *a, *rank;
	int err;

	if (t->have_header) {
		bad_line(r, lineno, "second header, ignored");
		return false;
	}
	/*
	 * Format and version decide what every other key means; without them (or with values this
	 * reader does not know) the file is refused rather than misread.
	 */
	err = get_str(JS(obj), "format", &s);
	if (err) {
		key_error(r, lineno, "header", "format", err, "a string");
		r->refused = true;
		return false;
	}
	if (strcmp(s, "gpumemtrace") != 0) {
		fprintf(r->diag, "%s:%zu: not a gpumemtrace trace (header format \"%s\")\n",
			r->epath, lineno, gmt_esc(s));
		r->refused = true;
		return false;
	}
	err = get_i64(JS(obj), "version", &v);
	if (err) {
		key_error(r, lineno, "header", "version", err, "an integer");
		r->refused = true;
		return false;
	}
	if (v != GMT_FORMAT_VERSION) {
		fprintf(
		    r->diag,
		    "%s:%zu: trace format version %lld is not supported (this gpumemtrace reads "
		    "version %d)\n",
		    r->epath, lineno, v, GMT_FORMAT_VERSION);
		r->refused = true;
		return false;
	}
	t->have_header = true;
	t->version = (int)v;

	/* The rest describes the process; a missing or odd value leaves it "unknown". */
	if (get_i64(JS(obj), "pid", &v) == 0)
		t->pid = v;
	if (get_i64(JS(obj), "ppid", &v) == 0)
		t->ppid = v;
	if (get_i64(JS(obj), "forked_from", &v) == 0)
		t->forked_from = v;
	if (get_str(JS(obj), "host", &s) == 0)
		t->host = dup_str(r, s);
	if (get_str(JS(obj), "tracer", &s) == 0)
		t->tracer = dup_str(r, s);
	if (get_str(JS(obj), "coverage", &s) == 0)
		t->coverage = dup_str(r, s);
	if (get_str(JS(obj), "coverage_reason", &s) == 0)
		t->coverage_reason = dup_str(r, s);
	read_strings(r, json_object_get(obj, "capture"), &t->capture, &t->ncapture);
	if (get_u64(JS(obj), "start_ts", &u) == 0) {
		t->start_ts = u;
		r->have_start_ts = true;
	} else {
		fprintf(r->diag,
			"%s:%zu: note: header without \"start_ts\"; times are counted from "
			"the first event\n",
			r->epath, lineno);
	}
	if (get_u64(JS(obj), "start_unix_ns", &u) == 0)
		t->start_unix_ns = u;
	a = json_object_get(obj, "argv");
	read_strings(r, a, &t->argv, &t->argc);
	read_stacks_info(r, json_object_get(obj, "stacks"));
	json_t *opts = json_object_get(obj, "options");
	if (json_is_object(opts) && json_is_true(json_object_get(opts, GMT_OPT_BOUNDED))) {
		t->bounded = true;
		get_u64(JS(opts), GMT_OPT_BUCKET_MS, &t->bucket_ms);
	}
	rank = json_object_get(obj, "rank");
	if (json_is_object(rank)) {
		t->has_rank = true;
		get_i64(JS(rank), "rank", &t->rank);
		get_i64(JS(rank), "local_rank", &t->local_rank);
		get_i64(JS(rank), "world_size", &t->world_size);
	}
	return true;
}

// --- stacks -------------------------------------------------------------------------------------

void *
gmt_trace_mem(struct gmt_trace *t, size_t size)
{
	struct gmt_trace_block *b = t->stack_mem, *nb;
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (!b || b->cap - b->used < size) {
		/*
		 * Blocks double from 1 KiB to STACK_BLOCK (a trace of a few stacks, one of many in
		 * a directory, takes little); a list of more than a quarter block gets its own.
		 */
		size_t grow = b && b->cap >= STACK_BLOCK / 2 ? STACK_BLOCK : b ? b->cap * 2 : 1024;
		size_t cap = size > grow / 4 ? size : grow;

		if (!(nb = malloc(sizeof(*nb) + cap)))
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (b && cap != grow) { /* behind the current block, which stays in use */
			nb->next = b->next;
			b->next = nb;
			nb->used = size;
			return nb->data;
		}
		nb->next = b;
		t->stack_mem = b = nb;
	}
	p = b->data + b->used;
	b->used += size;
	return p;
}

/* @p size bytes of the stacks' memory; NULL (and the read stops) out of memory. */
static void *
stack_mem(struct reader *r, size_t size)
{
	void *p = gmt_trace_mem(r->t, size);

	if (!p)
		nomem(r);
	return p;
}

static uint64_t
address_hash(uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

/* The index of @p addr in t->addresses, added when new. */
static uint32_t
address_id(struct reader *r, uint64_t addr)
{
	struct gmt_trace *t = r->t;
	size_t slot;

	if ((t->naddresses + 1) * 2 > r->addrhash_mask + 1) {
		size_t cap = r->addrhash_mask ? (r->addrhash_mask + 1) * 2 : 1024;

		uint32_t *hash = calloc(cap, sizeof(*r->addrhash));

		/* the list grows with the table: half its slots, more than its length */
		if (!hash || !resize(r, &t->addresses, cap / 2, sizeof(*t->addresses))) {
			free(hash);
			nomem(r);
			return 0;
		}
		free(r->addrhash);
		r->addrhash = hash;
		r->addrhash_mask = cap - 1;
		for (size_t i = 0; i < t->naddresses; i++) {
			for (slot = address_hash(t->addresses[i]) & r->addrhash_mask;
			     r->addrhash[slot]; slot = (slot + 1) & r->addrhash_mask)
				;
			r->addrhash[slot] = (uint32_t)i + 1;
		}
	}
	for (slot = address_hash(addr) & r->addrhash_mask; r->addrhash[slot];
	     slot = (slot + 1) & r->addrhash_mask)
		if (t->addresses[r->addrhash[slot] - 1] == addr)
			return r->addrhash[slot] - 1;
	t->addresses[t->naddresses] = addr;
	r->addrhash[slot] = (uint32_t)++t->naddresses;
	return (uint32_t)(t->naddresses - 1);
}

/* Room for the first @p n frames of a stack line in r->stack_addrs and r->stack_py; false out
 * of memory. */
static bool
stack_room(struct reader *r, size_t n)
{
	if (n > GMT_TRACE_MAX_FRAMES)
		n = GMT_TRACE_MAX_FRAMES;
	if (r->stack_addrs_cap < n) {
		if (!resize(r, &r->stack_addrs, n > 64 ? n : 64, sizeof(*r->stack_addrs)))
			return false;
		r->stack_addrs_cap = n > 64 ? n : 64;
	}
	if (n > GMT_TRACE_MAX_PYFRAMES)
		n = GMT_TRACE_MAX_PYFRAMES;
	if (r->stack_py_cap < n) {
		if (!resize(r, &r->stack_py, n > 64 ? n : 64, sizeof(*r->stack_py)))
			return false;
		r->stack_py_cap = n > 64 ? n : 64;
	}
	return true;
}

/*
 * A new stack @p id of line @p lineno whose line had @p n native frames, the first of them in
 * r->stack_addrs: each kept address is interned. The caller adds the Python part, then
 * end_stack().
 */
static struct gmt_trace_stack *
begin_stack(struct reader *r, size_t lineno, uint32_t id, size_t n)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_stack *st;
	size_t keep = n < GMT_TRACE_MAX_FRAMES ? n : GMT_TRACE_MAX_FRAMES;
	uint32_t *ids = NULL;

	if (keep) {
		if (!(ids = stack_mem(r, keep * sizeof(*ids))))
			return NULL;
		for (size_t i = 0; i < keep; i++)
			ids[i] = address_id(r, r->stack_addrs[i]);
		if (r->nomem)
			return NULL;
	}
	/* A second line with the same id is found once all are read (settle_stacks()). */
	if ((t->nstacks & (t->nstacks - 1)) == 0 &&
	    !resize(r, &t->stacks, t->nstacks ? t->nstacks * 2 : 16, sizeof(*t->stacks)))
		return NULL;
	st = &t->stacks[t->nstacks];
	memset(st, 0, sizeof(*st));
	st->id = id;
	st->line = (uint32_t)lineno;
	/* A stack names the module list in force when it was written: the latest one so far. */
	st->modset = t->nmodsets ? (int32_t)(t->nmodsets - 1) : -1;
	st->frames = ids;
	st->nframes = (uint32_t)keep;
	st->cut = (uint32_t)(n - keep);
	return st;
}

/* The Python frames of @p st: @p n on its line, the first of them in r->stack_py. */
static void
store_py(struct reader *r, struct gmt_trace_stack *st, size_t n)
{
	size_t keep = n < GMT_TRACE_MAX_PYFRAMES ? n : GMT_TRACE_MAX_PYFRAMES;
	struct gmt_trace_pyframe *py;

	if (keep) {
		if (!(py = stack_mem(r, keep * sizeof(*py))))
			return;
		memcpy(py, r->stack_py, keep * sizeof(*py));
		st->py = py;
	}
	st->npy = (uint32_t)keep;
	st->cut += (uint32_t)(n - keep);
}

static void
stack_pystate(struct reader *r, size_t lineno, struct gmt_trace_stack *st, const char *state)
{
	if (strcmp(state, "empty") == 0)
		st->pystate = GMT_PYSTATE_EMPTY;
	else if (strcmp(state, "none") == 0)
		st->pystate = GMT_PYSTATE_NONE;
	else
		note_line(r, lineno, "stack %u with unknown \"pystate\" \"%s\", ignored", st->id,
			  state);
}

static void
end_stack(struct reader *r, size_t lineno, struct gmt_trace_stack *st)
{
	if (st->cut)
		note_line(r, lineno,
			  "stack %u has %u more frames than the %u native and %u Python kept "
			  "(the innermost)",
			  st->id, st->cut, st->nframes, st->npy);
	r->t->nstacks++;
}

/* "py": [[code_id, instr_offset, entry], ...]; false when any element is malformed. */
static bool
read_py(struct reader *r, json_t *a, struct gmt_trace_stack *st)
{
	size_t i, n, keep;
	json_t *e;

	if (!json_is_array(a))
		return false;
	n = json_array_size(a);
	keep = n < GMT_TRACE_MAX_PYFRAMES ? n : GMT_TRACE_MAX_PYFRAMES;
	if (!stack_room(r, keep))
		return true; /* out of memory: the read stops, no word about the line */
	json_array_foreach(a, i, e)
	{
		json_t *c = json_array_get(e, 0), *o = json_array_get(e, 1),
		       *en = json_array_get(e, 2);

		if (!json_is_array(e) || json_array_size(e) != 3 || !json_is_integer(c) ||
		    !json_is_integer(o) || !json_is_integer(en) || json_integer_value(c) < 0 ||
		    json_integer_value(c) > UINT32_MAX || json_integer_value(o) < 0 ||
		    json_integer_value(o) > UINT32_MAX ||
		    (json_integer_value(en) != 0 && json_integer_value(en) != 1))
			return false;
		if (i >= keep)
			continue; /* checked, not kept */
		r->stack_py[i] = (struct gmt_trace_pyframe){
		    .code = (uint32_t)json_integer_value(c),
		    .offset = (uint32_t)json_integer_value(o),
		    .entry = json_integer_value(en) == 1,
		};
	}
	store_py(r, st, n);
	return true;
}

/*
 * The Python part of a stack line ("py" or "pystate"). It is optional: when it is malformed the
 * line is reported (and counted) but its native frames are kept, since they are still right.
 */
static void
read_stack_python(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_stack *st)
{
	json_t *py = json_object_get(obj, "py");
	const char *state;
	int err;

	if (py && !json_is_null(py) && !read_py(r, py, st))
		bad_line(
		    r, lineno,
		    "stack %u with bad \"py\" (expected [[code_id, instr_offset, 0 or 1], ...]): "
		    "its Python frames are ignored",
		    st->id);
	err = get_str(JS(obj), "pystate", &state);
	if (err == -EINVAL)
		bad_line(r, lineno, "stack %u with bad \"pystate\" (expected a string), ignored",
			 st->id);
	else if (err == 0)
		stack_pystate(r, lineno, st, state);
}

static bool
read_stack(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace_stack *st;
	json_t *frames, *e;
	uint64_t id, addr;
	size_t i, n;
	int err;

	err = get_u64(JS(obj), "id", &id);
	if (err || id == 0 || id > UINT32_MAX)
		return key_error(r, lineno, "stack", "id", err ? err : -EINVAL,
				 "a positive integer");
	frames = json_object_get(obj, "frames");
	if (!frames)
		return key_error(r, lineno, "stack", "frames", -ENOENT, "");
	if (!json_is_array(frames))
		return key_error(r, lineno, "stack", "frames", -EINVAL, "an array of hex strings");
	/* Every frame is checked; the innermost GMT_TRACE_MAX_FRAMES are kept. */
	n = json_array_size(frames);
	if (!stack_room(r, n))
		return false;
	json_array_foreach(frames, i, e)
	{
		if (!json_is_string(e) || parse_hex(json_string_value(e), &addr) != 0)
			return key_error(r, lineno, "stack", "frames", -EINVAL,
					 "an array of hex strings");
		if (i < GMT_TRACE_MAX_FRAMES)
			r->stack_addrs[i] = addr;
	}
	if (!(st = begin_stack(r, lineno, (uint32_t)id, n)))
		return false;
	read_stack_python(r, obj, lineno, st);
	end_stack(r, lineno, st);
	return true;
}

/*
 * The fast path of stack lines: the tracer's shape, {"type":"stack","id":N,"frames":["0x..",..],
 * "py":[[c,o,e],..],"pystate":"..."}, read without jansson, so that a line of many frames costs
 * the frames kept, not a JSON value per frame. It declines (false) anything else: another key
 * order or key, a repeated key, an escape or a byte above 0x7f in a string, a number that is not
 * a plain unsigned integer, a value jansson's path would report; that path then reads the line.
 */
struct scan {
	const char *p, *end;
};

static void
scan_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool
scan_char(struct scan *s, char c)
{
	scan_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

/* A string of printable ASCII without escapes: [*str, *str + *n). */
static bool
scan_str(struct scan *s, const char **str, size_t *n)
{
	const char *q;

	if (!scan_char(s, '"'))
		return false;
	for (q = s->p; s->p < s->end && *s->p != '"'; s->p++)
		if (*s->p == '\\' || (unsigned char)*s->p < 0x20 || (unsigned char)*s->p > 0x7e)
			return false;
	if (s->p == s->end)
		return false;
	*str = q;
	*n = (size_t)(s->p - q);
	s->p++;
	return true;
}

static bool
scan_key(struct scan *s, const char *key)
{
	const char *k;
	size_t n;

	return scan_str(s, &k, &n) && n == strlen(key) && memcmp(k, key, n) == 0 &&
	       scan_char(s, ':');
}

/* An unsigned integer of JSON's grammar (no sign, fraction or exponent) up to UINT32_MAX. */
static bool
scan_u32(struct scan *s, uint32_t *out)
{
	uint64_t v = 0;
	const char *q;

	scan_ws(s);
	for (q = s->p; s->p < s->end && *s->p >= '0' && *s->p <= '9'; s->p++) {
		v = v * 10 + (uint64_t)(*s->p - '0');
		if (v > UINT32_MAX)
			return false;
	}
	if (s->p == q || (*q == '0' && s->p - q > 1))
		return false;
	if (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E'))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool
scan_frames(struct reader *r, struct scan *s, size_t *n)
{
	const char *str;
	uint64_t addr;
	size_t len;

	*n = 0;
	if (!scan_char(s, '['))
		return false;
	if (scan_char(s, ']'))
		return true;
	do {
		if (!scan_str(s, &str, &len) || !gmt_hex_u64(str, len, &addr))
			return false;
		if (*n < GMT_TRACE_MAX_FRAMES) {
			if (gmt_grow(&r->stack_addrs, &r->stack_addrs_cap, *n + 1,
				     sizeof(*r->stack_addrs), 64) != 0)
				return nomem(r); /* declined: the slow path stops on it too */
			r->stack_addrs[*n] = addr;
		}
		(*n)++;
	} while (scan_char(s, ','));
	return scan_char(s, ']');
}

static bool
scan_py(struct reader *r, struct scan *s, size_t *n)
{
	uint32_t code, offset, entry;

	*n = 0;
	if (!scan_char(s, '['))
		return false;
	if (scan_char(s, ']'))
		return true;
	do {
		if (!scan_char(s, '[') || !scan_u32(s, &code) || !scan_char(s, ',') ||
		    !scan_u32(s, &offset) || !scan_char(s, ',') || !scan_u32(s, &entry) ||
		    entry > 1 || !scan_char(s, ']'))
			return false;
		if (*n < GMT_TRACE_MAX_PYFRAMES) {
			if (gmt_grow(&r->stack_py, &r->stack_py_cap, *n + 1, sizeof(*r->stack_py),
				     64) != 0)
				return nomem(r);
			r->stack_py[*n] = (struct gmt_trace_pyframe){code, offset, entry == 1};
		}
		(*n)++;
	} while (scan_char(s, ','));
	return scan_char(s, ']');
}

static void lead_end(struct reader *r, size_t lineno);

static bool
read_stack_fast(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	struct scan s = {buf, buf + len};
	const char *str, *pystate = NULL;
	char state[32];
	size_t n, nframes = 0, npy = 0, npystate = 0;
	uint32_t id = 0;
	bool have_frames = false, have_py = false;
	struct gmt_trace_stack *st;

	if (r->no_fast || !scan_char(&s, '{') || !scan_key(&s, "type") || !scan_str(&s, &str, &n) ||
	    n != 5 || memcmp(str, "stack", 5) != 0)
		return false;
	while (scan_char(&s, ',')) {
		if (!scan_str(&s, &str, &n) || !scan_char(&s, ':'))
			return false;
		if (n == 2 && memcmp(str, "id", 2) == 0 && !id) {
			if (!scan_u32(&s, &id) || id == 0)
				return false;
		} else if (n == 6 && memcmp(str, "frames", 6) == 0 && !have_frames) {
			if (!scan_frames(r, &s, &nframes))
				return false;
			have_frames = true;
		} else if (n == 2 && memcmp(str, "py", 2) == 0 && !have_py) {
			if (!scan_py(r, &s, &npy))
				return false;
			have_py = true;
		} else if (n == 7 && memcmp(str, "pystate", 7) == 0 && !pystate) {
			if (!scan_str(&s, &pystate, &npystate) || npystate >= sizeof(state))
				return false;
		} else {
			return false;
		}
	}
	if (!scan_char(&s, '}') || (scan_ws(&s), s.p != s.end) || !id || !have_frames)
		return false;
	lead_end(r, lineno); /* a stack line shows the file is a trace, as on the slow path */
	if (!(st = begin_stack(r, lineno, id, nframes)))
		return true; /* out of memory: the read stops */
	if (have_py)
		store_py(r, st, npy);
	if (pystate) {
		memcpy(state, pystate, npystate);
		state[npystate] = '\0';
		stack_pystate(r, lineno, st, state);
	}
	end_stack(r, lineno, st);
	r->usable++;
	return true;
}

// --- modules, pycode, pyinfo --------------------------------------------------------------------

/* Decode a hex string into a new buffer; NULL when it is not whole bytes of hex. */
static uint8_t *
hex_decode(struct reader *r, const char *s, size_t *n)
{
	size_t len = strlen(s);
	uint8_t *d = gmt_realloc_array(NULL, len / 2, 1);
	ssize_t got;

	if (!d) {
		nomem(r);
		return NULL;
	}
	got = gmt_unhex(s, len, d, len / 2);
	if (got < 0) {
		free(d);
		return NULL;
	}
	*n = (size_t)got;
	return d;
}

static uint64_t
module_hash(const struct gmt_trace_module *m)
{
	/* only to spread module entries over the dedup table */
	uint64_t h = gmt_fnv1a(GMT_FNV_SEED, m->path, strlen(m->path));
	if (m->file)
		h = gmt_fnv1a(h, m->file, strlen(m->file));
	h = gmt_fnv1a(h, &m->base, sizeof(m->base));
	h = gmt_fnv1a(h, m->build_id, strlen(m->build_id));
	return gmt_fnv1a(h, m->segments, m->nsegments * sizeof(*m->segments));
}

static bool
module_equal(const struct gmt_trace_module *a, const struct gmt_trace_module *b)
{
	return a->base == b->base && a->nsegments == b->nsegments &&
	       strcmp(a->path, b->path) == 0 && strcmp(a->build_id, b->build_id) == 0 &&
	       !a->file == !b->file && (!a->file || strcmp(a->file, b->file) == 0) &&
	       memcmp(a->segments, b->segments, a->nsegments * sizeof(*a->segments)) == 0;
}

/* The index of @p m among the trace's modules: an existing equal entry, or @p m moved in. */
static uint32_t
module_intern(struct reader *r, struct gmt_trace_module *m)
{
	struct gmt_trace *t = r->t;
	size_t slot;

	if (t->nmodules * 2 >= r->modhash_mask) {
		size_t cap = r->modhash_mask ? (r->modhash_mask + 1) * 2 : 256;

		uint32_t *hash = calloc(cap, sizeof(*r->modhash));

		if (!hash)
			goto err_nomem;
		free(r->modhash);
		r->modhash = hash;
		r->modhash_mask = cap - 1;
		for (size_t i = 0; i < t->nmodules; i++) {
			slot = module_hash(&t->modules[i]) & r->modhash_mask;
			while (r->modhash[slot])
				slot = (slot + 1) & r->modhash_mask;
			r->modhash[slot] = (uint32_t)i + 1;
		}
	}
	slot = module_hash(m) & r->modhash_mask;
	for (; r->modhash[slot]; slot = (slot + 1) & r->modhash_mask) {
		uint32_t k = r->modhash[slot] - 1;

		if (module_equal(&t->modules[k], m)) {
			free(m->path);
			free(m->file);
			free(m->build_id);
			free(m->segments);
			return k;
		}
	}
	if ((t->nmodules & (t->nmodules - 1)) == 0 &&
	    !resize(r, &t->modules, t->nmodules ? t->nmodules * 2 : 64, sizeof(*t->modules)))
		goto err_nomem;
	t->modules[t->nmodules] = *m;
	r->modhash[slot] = (uint32_t)t->nmodules + 1;
	return (uint32_t)t->nmodules++;

err_nomem: /* the entry goes; the caller stops on r->nomem */
	nomem(r);
	free(m->path);
	free(m->file);
	free(m->build_id);
	free(m->segments);
	return 0;
}

/* A hex string of whole bytes; lowercased into a new string, NULL when it is not one. */
static char *
hex_lower(struct reader *r, const char *s)
{
	size_t n = strlen(s);
	char *d;

	if (n % 2 || !(d = dup_str(r, s)))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = d[i];

		if (c >= 'A' && c <= 'F')
			d[i] = (char)(c - 'A' + 'a');
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			free(d);
			return NULL;
		}
	}
	return d;
}

/* One element of a modules line; false (and @p m untouched) when it is malformed. */
static bool
module_entry(struct reader *r, json_t *e, struct gmt_trace_module *m)
{
	const char *path, *bid, *hex = NULL;
	json_t *segs, *sg;
	size_t i;

	if (!json_is_object(e) || get_str(JS(e), "path", &path) ||
	    get_hex(JS(e), "base", &m->base) || get_str(JS(e), "build_id", &bid))
		return false;
	segs = json_object_get(e, "segments");
	if (!json_is_array(segs))
		return false;
	if (!(m->segments = gmt_realloc_array(NULL, json_array_size(segs), sizeof(*m->segments))))
		return nomem(r);
	json_array_foreach(segs, i, sg)
	{
		json_t *v = json_array_get(sg, 0), *sz = json_array_get(sg, 1);

		if (!json_is_array(sg) || json_array_size(sg) != 2 || !json_is_integer(v) ||
		    !json_is_integer(sz) || json_integer_value(v) < 0 ||
		    json_integer_value(sz) < 0) {
			free(m->segments);
			return false;
		}
		m->segments[i][0] = (uint64_t)json_integer_value(v);
		m->segments[i][1] = (uint64_t)json_integer_value(sz);
	}
	m->build_id = hex_lower(r, bid);
	if (!m->build_id) {
		free(m->segments);
		return false;
	}
	m->nsegments = (uint32_t)json_array_size(segs);
	if (!(m->path = dup_str(r, path))) {
		free(m->build_id);
		free(m->segments);
		return false;
	}
	/* a path that is not UTF-8, byte for byte (docs/trace-format.md, "modules") */
	if (get_str(JS(e), "path_hex", &hex) != -ENOENT) {
		size_t n = 0;
		uint8_t *bytes = hex ? hex_decode(r, hex, &n) : NULL, *file = NULL;

		if (bytes && n && !memchr(bytes, '\0', n) &&
		    !(file = gmt_realloc_array(bytes, n + 1, 1)))
			nomem(r);
		if (!file) {
			free(bytes);
			free(m->path);
			free(m->build_id);
			free(m->segments);
			return false;
		}
		m->file = (char *)file;
		m->file[n] = '\0';
	}
	return true;
}

/*
 * A modules line: the complete list of loaded objects from here on. A malformed entry is left
 * out (its addresses then belong to no module and are shown as plain addresses); the rest of the
 * list is used.
 */
static bool
read_modules(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_modset ms = {.line = (uint32_t)lineno};
	json_t *a, *e;
	size_t i, bad = 0, first_bad = 0;
	int err;

	if ((err = get_u64(JS(obj), "seq", &ms.seq)) == -EINVAL)
		return key_error(r, lineno, "modules", "seq", err, "an integer");
	a = json_object_get(obj, "modules");
	if (!a)
		return key_error(r, lineno, "modules", "modules", -ENOENT, "");
	if (!json_is_array(a))
		return key_error(r, lineno, "modules", "modules", -EINVAL, "an array");
	if (!(ms.mods = gmt_realloc_array(NULL, json_array_size(a), sizeof(*ms.mods))))
		return nomem(r);
	json_array_foreach(a, i, e)
	{
		struct gmt_trace_module m = {0};
		uint32_t k;

		if (!module_entry(r, e, &m)) {
			if (!bad++)
				first_bad = i;
			continue;
		}
		k = module_intern(r, &m);
		if (r->nomem)
			break;
		ms.mods[ms.nmods++] = k;
	}
	if (r->nomem || !resize(r, &t->modsets, t->nmodsets + 1, sizeof(*t->modsets))) {
		free(ms.mods);
		return false;
	}
	if (bad)
		bad_line(r, lineno,
			 "modules: %zu malformed %s (first: #%zu; expected {path, base (hex), "
			 "build_id (hex), segments [[vaddr, memsz], ...]}), left out",
			 bad, bad == 1 ? "entry" : "entries", first_bad);
	t->modsets[t->nmodsets++] = ms;
	return true;
}

/* A string key that may be null (the tracer writes null when it could not read the value). */
static bool
opt_str(struct reader *r, json_t *obj, const char *key, char **out)
{
	const char *s;
	int err = get_str(JS(obj), key, &s);

	if (err == -EINVAL)
		return false;
	*out = err ? NULL : dup_str(r, s);
	return !r->nomem;
}

static bool
read_pycode(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_pycode c = {.line = (uint32_t)lineno};
	const char *table;
	uint64_t id;
	long long first;
	int err;

	err = get_u64(JS(obj), "id", &id);
	if (err || id > UINT32_MAX)
		return key_error(r, lineno, "pycode", "id", err ? err : -EINVAL, "an integer");
	if ((err = get_i64(JS(obj), "firstlineno", &first)) || first < 0 || first > INT32_MAX)
		return key_error(r, lineno, "pycode", "firstlineno", err ? err : -EINVAL,
				 "a non-negative integer");
	if ((err = get_str(JS(obj), "linetable", &table)))
		return key_error(r, lineno, "pycode", "linetable", err, "a hex string");
	c.id = (uint32_t)id;
	c.firstlineno = (int)first;
	c.linetable = hex_decode(r, table, &c.nlinetable);
	if (!c.linetable)
		return key_error(r, lineno, "pycode", "linetable", -EINVAL, "a hex string");
	if (!opt_str(r, obj, "file", &c.file) || !opt_str(r, obj, "name", &c.name) ||
	    !opt_str(r, obj, "qualname", &c.qualname) || !opt_str(r, obj, "python", &c.python) ||
	    ((t->npycodes & (t->npycodes - 1)) == 0 &&
	     !resize(r, &t->pycodes, t->npycodes ? t->npycodes * 2 : 16, sizeof(*t->pycodes)))) {
		free(c.file);
		free(c.name);
		free(c.qualname);
		free(c.python);
		free(c.linetable);
		bad_line(r, lineno, "pycode with a non-string file, name, qualname or python");
		return false;
	}
	t->pycodes[t->npycodes++] = c;
	return true;
}

/* Python was found after the header was written (libpython loaded later): the last one counts. */
static bool
read_pyinfo(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	const char *v;
	int err = get_str(JS(obj), "python", &v);

	if (err == -EINVAL)
		return key_error(r, lineno, "pyinfo", "python", err, "a string or null");
	free(t->python);
	t->python = err ? NULL : dup_str(r, v);
	return true;
}

/* The ops an event line may have (a marker, a block or the PyTorch layer's status is a line of
 * its own type). */
static bool
parse_op(const char *name, uint8_t *op)
{
	enum gmt_op o = gmt_op_from_name(name);

	if (o != GMT_OP_ALLOC && o != GMT_OP_FREE && o != GMT_OP_RESET && o != GMT_OP_RETAIN &&
	    o != GMT_OP_USAGE)
		return false;
	*op = (uint8_t)o;
	return true;
}

/*
 * The kind, by op: an allocation must name one, a usage reading must name a reading kind, a free
 * or retain may name one (informational). A kind this reader does not know means the line is
 * from a newer tracer: its address space is unknown, so the line is reported and skipped.
 */
static bool
event_kind(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	const char *kind;
	enum gmt_tkind k;
	int err;

	if (ev->op == GMT_OP_RESET)
		return true;
	err = get_str(obj, "kind", &kind);
	if (err == -ENOENT && (ev->op == GMT_OP_FREE || ev->op == GMT_OP_RETAIN))
		return true;
	if (err)
		return key_error(r, lineno, "event", "kind", err, "a string");
	k = gmt_kind_parse(kind);
	if (k == GMT_TK_NONE && strcmp(kind, "none") == 0 && ev->op != GMT_OP_ALLOC &&
	    ev->op != GMT_OP_USAGE)
		return true;
	if (k == GMT_TK_NONE) {
		bad_line(r, lineno, "event with unknown kind \"%s\": line skipped", kind);
		return false;
	}
	if (gmt_kind_is_reading(k) != (ev->op == GMT_OP_USAGE)) {
		bad_line(r, lineno, "%s event with kind \"%s\" (%s): line skipped",
			 gmt_op_name((enum gmt_op)ev->op), kind,
			 ev->op == GMT_OP_USAGE ? "usage reads pool_reserve or graph_reserve"
						: "only usage events carry it");
		return false;
	}
	ev->kind = (uint8_t)k;
	return true;
}

/* seq, ts, op, api, result, device: what every event has. */
static bool
event_common(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	const char *op;
	long long v;
	int err;

	if ((err = get_u64(obj, "seq", &ev->seq)))
		return key_error(r, lineno, "event", "seq", err, "an integer");
	if ((err = get_u64(obj, "ts", &ev->ts)))
		return key_error(r, lineno, "event", "ts", err, "an integer");
	if ((err = get_str(obj, "op", &op)))
		return key_error(r, lineno, "event", "op", err, "a string");
	if (!parse_op(op, &ev->op)) {
		bad_line(r, lineno, "event with unknown op \"%s\": line skipped", op);
		return false;
	}
	/* Without result a failed call would be counted as memory the application holds. */
	if ((err = get_i64(obj, "result", &v)) || v < INT32_MIN || v > INT32_MAX)
		return key_error(r, lineno, "event", "result", err ? err : -EINVAL, "an integer");
	ev->result = (int32_t)v;

	err = get_i64(obj, "device", &v);
	if (err == 0 && (v < INT32_MIN || v > INT32_MAX))
		err = -EINVAL;
	if (err == 0)
		ev->device = (int32_t)v;
	else if ((ev->op != GMT_OP_FREE && ev->op != GMT_OP_RETAIN) || err == -EINVAL)
		return key_error(r, lineno, "event", "device", err, "an integer");
	return true;
}

/* ptr, size and pool, whose presence depends on the op. */
static bool
event_ptr_size(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	int err;

	if (ev->op == GMT_OP_ALLOC || ev->op == GMT_OP_FREE) {
		if ((err = get_hex(obj, "ptr", &ev->ptr)))
			return key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_OP_ALLOC || ev->op == GMT_OP_USAGE) {
		if ((err = get_u64(obj, "size", &ev->size)))
			return key_error(r, lineno, "event", "size", err, "an integer");
	} else if (ev->op == GMT_OP_FREE) {
		err = get_u64(obj, "size", &ev->size);
		if (err == -EINVAL)
			return key_error(r, lineno, "event", "size", err, "an integer");
		if (err == 0)
			ev->flags |= GMT_EV_HAS_RANGE;
	}
	if (ev->op == GMT_OP_USAGE && ev->kind == GMT_TK_POOL_RESERVE) {
		if ((err = get_hex(obj, "pool", &ev->ptr)))
			return key_error(r, lineno, "event", "pool", err, "a hex string");
	}
	return true;
}

/* offset: the tracer writes an integer; a hex string is accepted as for every other number-like
 * handle value. */
static int
get_u64_or_hex(struct src obj, const char *key, uint64_t *out)
{
	int err = get_u64(obj, key, out);

	return err == -EINVAL ? get_hex(obj, key, out) : err;
}

/* handle, offset, context, the failure's memory info and the stack: all optional. */
static bool
event_optional(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	uint64_t u;
	int err;

	if ((err = get_hex(obj, "handle", &ev->handle)) == -EINVAL)
		return key_error(r, lineno, "event", "handle", err, "a hex string");
	if ((err = get_u64_or_hex(obj, "offset", &ev->offset)) == -EINVAL)
		return key_error(r, lineno, "event", "offset", err, "an integer");
	if ((err = get_u64(obj, "context", &ev->context)) == -EINVAL)
		return key_error(r, lineno, "event", "context", err, "an integer");
	if (ev->op == GMT_OP_RETAIN) {
		/* The handle is "ptr"; a retain's "handle" is the address that was asked about. */
		if ((err = get_hex(obj, "ptr", &ev->ptr)))
			return key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_OP_ALLOC && get_u64(obj, "requested", &ev->requested) == 0)
		ev->flags |= GMT_EV_HAS_REQUESTED;
	if (ev->op == GMT_OP_ALLOC && get_u64(obj, "free_bytes", &ev->free_bytes) == 0 &&
	    get_u64(obj, "total_bytes", &ev->total_bytes) == 0)
		ev->flags |= GMT_EV_HAS_MEMINFO;
	/* 0 is "no stack captured" in the format; an absent key means the same. */
	err = get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return key_error(r, lineno, "event", "stack", -EINVAL, "an integer");
	if (err == 0)
		ev->stack = (uint32_t)u;
	return true;
}

/* api and driver into the string table; false (reported) when the table is full. */
static bool
event_names(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	const char *api, *driver;
	int err, idx;

	if ((err = get_str(obj, "api", &api)))
		return key_error(r, lineno, "event", "api", err, "a string");
	err = get_str(obj, "driver", &driver);
	if (err == -EINVAL)
		return key_error(r, lineno, "event", "driver", err, "a string");
	ev->driver = GMT_TRACE_NO_STRING;
	if (err == 0) {
		idx = intern(r, driver);
		if (idx < 0)
			goto full;
		ev->driver = (uint16_t)idx;
	}
	idx = intern(r, api);
	if (idx < 0)
		goto full;
	ev->api = (uint16_t)idx;
	return true;
full:
	if (r->nomem)
		return false;
	bad_line(r, lineno, "too many distinct \"api\" names, event ignored");
	return false;
}

// --- streaming: the reorder window's output (reorder.h) ---------------------------------------

/* A pop's label is its push's: the latest open push of the same thread at that depth. */
static void
name_pop_now(struct reader *r, struct gmt_trace_marker *mk)
{
	if (mk->range == GMT_RANGE_PUSH) {
		if (resize(r, &r->open, r->nopen + 1, sizeof(*r->open)))
			r->open[r->nopen++] = (struct open_range){mk->tid, mk->depth, mk->label};
		return;
	}
	if (mk->range != GMT_RANGE_POP)
		return;
	for (size_t i = r->nopen; i-- > 0;) {
		if (r->open[i].tid != mk->tid || r->open[i].depth != mk->depth)
			continue;
		char *label;

		if (!mk->label[0] && (label = dup_str(r, r->open[i].label))) {
			free(mk->label);
			mk->label = label;
		}
		memmove(&r->open[i], &r->open[i + 1], (r->nopen - i - 1) * sizeof(*r->open));
		r->nopen--;
		break;
	}
}

static void
late(struct reader *r, size_t line, uint64_t seq)
{
	if (r->t->late_events++ == 0) {
		r->first_late_line = line;
		r->first_late_seq = seq;
	}
}

/* An item out of the window goes to the sink; a late one is counted (noted once the file is
 * read). */
static void
window_deliver(void *ctx, const struct gmt_reorder_item *p, bool is_late)
{
	struct reader *r = ctx;
	struct gmt_trace *t = r->t;

	if (is_late) {
		late(r, p->line, p->seq);
	} else {
		r->delivered_any = true;
		if (!p->marker) {
			r->event_seq = p->seq;
			r->event_ts = p->ev.ts;
		}
	}
	if (p->marker) {
		struct gmt_trace_marker *mk = &t->markers[p->marker - 1];

		name_pop_now(r, mk);
		r->sink->marker(r->sink->ctx, t, mk);
	} else {
		r->sink->event(r->sink->ctx, t, &p->ev);
	}
}

/* A read event (or block line) into the reorder window when streaming, else into the events. */
static bool
keep_event(struct reader *r, const struct gmt_trace_event *ev)
{
	struct gmt_trace *t = r->t;

	see_ts(r, ev->ts);
	if (r->sink) {
		t->nevents++;
		if (gmt_reorder_push(&r->window,
				     &(struct gmt_reorder_item){ev->seq, ev->line, 0, *ev}) != 0)
			return nomem(r);
		return true;
	}
	if ((t->nevents & (t->nevents - 1)) == 0 &&
	    !resize(r, &t->events, t->nevents ? t->nevents * 2 : 64, sizeof(*t->events)))
		return false;
	t->events[t->nevents++] = *ev;
	return true;
}

static bool
read_event(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev = {.line = (uint32_t)lineno, .device = -1};

	if (!event_common(r, obj, lineno, &ev) || !event_kind(r, obj, lineno, &ev) ||
	    !event_ptr_size(r, obj, lineno, &ev) || !event_optional(r, obj, lineno, &ev) ||
	    !event_names(r, obj, lineno, &ev))
		return false;
	return keep_event(r, &ev);
}

/* An elided line's "sizes" and "lifetimes" into the trace's elided_bins (jansson lines only). */
static bool
elided_bins(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	struct gmt_trace *t = r->t;
	static const char *const keys[2] = {GMT_ELIDED_SIZES, GMT_ELIDED_LIFETIMES};

	ev->handle = t->nelided_bins;
	if (!obj.json)
		return true;
	for (int which = 0; which < 2; which++) {
		json_t *a = json_object_get(obj.json, keys[which]), *e;
		size_t i;

		if (!a)
			continue;
		if (!json_is_array(a)) {
			bad_line(r, lineno,
				 "elided line whose \"%s\" is not an array: line skipped",
				 keys[which]);
			return false;
		}
		json_array_foreach(a, i, e)
		{
			json_t *b0 = json_array_get(e, 0), *b1 = json_array_get(e, 1),
			       *b2 = json_array_get(e, 2);
			if (!json_is_integer(b0) || !json_is_integer(b1) ||
			    json_integer_value(b0) < 0 || json_integer_value(b0) >= 64 ||
			    json_integer_value(b1) < 0 || (which == 0 && !json_is_integer(b2))) {
				bad_line(r, lineno,
					 "elided line with a bad \"%s\" entry: line skipped",
					 keys[which]);
				t->nelided_bins = ev->handle;
				return false;
			}
			if ((t->nelided_bins & (t->nelided_bins - 1)) == 0 &&
			    !resize(r, &t->elided_bins, t->nelided_bins ? t->nelided_bins * 2 : 64,
				    sizeof(*t->elided_bins)))
				return false;
			t->elided_bins[t->nelided_bins++] = (struct gmt_trace_elided_bin){
			    .lifetime = which == 1,
			    .bucket = (uint8_t)json_integer_value(b0),
			    .count = (uint64_t)json_integer_value(b1),
			    .bytes = which == 0 ? (uint64_t)json_integer_value(b2) : 0,
			};
		}
	}
	ev->requested = t->nelided_bins - ev->handle;
	return true;
}

/* An elided line (a bounded trace, format/elided.h) as an event of op ELIDED (trace.h). */
static bool
read_elided(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev = {.line = (uint32_t)lineno, .device = -1, .op = GMT_OP_ELIDED};
	const char *kind;
	long long v;
	uint64_t u;
	int err;

	if ((err = get_u64(obj, "seq", &ev.seq)))
		return key_error(r, lineno, GMT_ELIDED_TYPE, "seq", err, "an integer");
	if ((err = get_u64(obj, "ts", &ev.ts)))
		return key_error(r, lineno, GMT_ELIDED_TYPE, "ts", err, "an integer");
	if ((err = get_i64(obj, "device", &v)) || v < INT32_MIN || v > INT32_MAX)
		return key_error(r, lineno, GMT_ELIDED_TYPE, "device", err ? err : -EINVAL,
				 "an integer");
	ev.device = (int32_t)v;
	if ((err = get_str(obj, "kind", &kind)))
		return key_error(r, lineno, GMT_ELIDED_TYPE, "kind", err, "a string");
	ev.kind = (uint8_t)gmt_kind_parse(kind);
	if (ev.kind == GMT_TK_NONE || gmt_kind_is_reading((enum gmt_tkind)ev.kind)) {
		bad_line(r, lineno, "elided line with kind \"%s\": line skipped", gmt_esc(kind));
		return false;
	}
	if ((err = get_u64(obj, GMT_ELIDED_ALLOCATIONS, &ev.offset)))
		return key_error(r, lineno, GMT_ELIDED_TYPE, GMT_ELIDED_ALLOCATIONS, err,
				 "an integer");
	if ((err = get_u64(obj, GMT_ELIDED_BYTES, &ev.size)))
		return key_error(r, lineno, GMT_ELIDED_TYPE, GMT_ELIDED_BYTES, err, "an integer");
	err = get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return key_error(r, lineno, GMT_ELIDED_TYPE, "stack", -EINVAL, "an integer");
	if (err == 0)
		ev.stack = (uint32_t)u;
	get_u64(obj, GMT_ELIDED_TEMPORARIES, &ev.free_bytes);
	get_u64(obj, GMT_ELIDED_TEMPORARY_BYTES, &ev.total_bytes);
	if (!event_names(r, obj, lineno, &ev) || !elided_bins(r, obj, lineno, &ev))
		return false;
	r->t->elided_lines++;
	r->t->elided_allocations += ev.offset;
	return keep_event(r, &ev);
}

/* A block line (the PyTorch layer's, docs/trace-format.md "block") as an event of op BLOCK
 * (trace.h says which field holds what); it is stored and streamed with the events, in seq order.
 */
static bool
read_block(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_event ev = {.line = (uint32_t)lineno,
				     .device = -1,
				     .op = GMT_OP_BLOCK,
				     .api = GMT_TRACE_NO_STRING,
				     .driver = GMT_TRACE_NO_STRING};
	const char *action;
	long long v;
	uint64_t u;
	int err;

	if ((err = get_u64(obj, "seq", &ev.seq)))
		return key_error(r, lineno, "block", "seq", err, "an integer");
	if ((err = get_u64(obj, "ts", &ev.ts)))
		return key_error(r, lineno, "block", "ts", err, "an integer");
	if ((err = get_str(obj, "action", &action)))
		return key_error(r, lineno, "block", "action", err, "a string");
	unsigned a = gmt_torch_action_from_name(action);
	if (!a) {
		bad_line(r, lineno, "block with unknown action \"%s\": line skipped", action);
		return false;
	}
	ev.kind = (uint8_t)a;
	if ((err = get_i64(obj, "device", &v)) == 0 && v >= INT32_MIN && v <= INT32_MAX)
		ev.device = (int32_t)v;
	else if (err != -ENOENT)
		return key_error(r, lineno, "block", "device", -EINVAL, "an integer");
	if ((err = get_hex(obj, "ptr", &ev.ptr)) == -EINVAL ||
	    (err == -ENOENT && a != GMT_TORCH_OOM && a != GMT_TORCH_SNAPSHOT))
		return key_error(r, lineno, "block", "ptr", err, "a hex string");
	if ((err = get_u64(obj, "size", &ev.size)))
		return key_error(r, lineno, "block", "size", err, "an integer");
	if ((err = get_hex(obj, "stream", &ev.handle)) == -EINVAL)
		return key_error(r, lineno, "block", "stream", err, "a hex string");
	uint64_t pool[2];
	if ((err = get_pair(obj, "pool", pool)) == -EINVAL)
		return key_error(r, lineno, "block", "pool", err, "two integers");
	if (err == 0) {
		ev.offset = pool[0];
		ev.context = pool[1];
	}
	if ((err = get_u64(obj, "requested", &ev.requested)) == -EINVAL)
		return key_error(r, lineno, "block", "requested", err, "an integer");
	if ((err = get_u64(obj, "device_free", &ev.free_bytes)) == -EINVAL)
		return key_error(r, lineno, "block", "device_free", err, "an integer");
	err = get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return key_error(r, lineno, "block", "stack", -EINVAL, "an integer");
	if (err == 0)
		ev.stack = (uint32_t)u;
	uint32_t flags = 0;
	if (get_true(obj, "allocated"))
		flags |= GMT_TORCH_F_ALLOCATED;
	if (get_true(obj, "active"))
		flags |= GMT_TORCH_F_ACTIVE;
	if (get_true(obj, "expandable"))
		flags |= GMT_TORCH_F_EXPANDABLE;
	const char *pt;
	if (get_str(obj, "pool_type", &pt) == 0 && strcmp(pt, "large") == 0)
		flags |= GMT_TORCH_F_LARGE;
	ev.result = (int32_t)flags;
	if (get_true(obj, "gc"))
		ev.flags |= GMT_EV_IN_GC;
	t->nblocks++;
	return keep_event(r, &ev);
}

static void
holders_free(struct gmt_trace *t)
{
	for (size_t i = 0; i < t->nholders; i++) {
		free(t->holders[i].what);
		free(t->holders[i].ptrs);
		free(t->holders[i].devices);
	}
	free(t->holders);
	t->holders = NULL;
	t->nholders = 0;
}

/*
 * What kept the live tensors at the end (a "holders" line, the PyTorch layer's walk): the last
 * line counts. An entry that is not {holder, kind, roots, blocks: [[device, "0x.."], ...]} is
 * skipped, named; the others are kept.
 */
static bool
read_holders(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	json_t *a = json_object_get(obj, "holders"), *e;
	size_t i, bad = 0;

	if (!json_is_array(a))
		return key_error(r, lineno, "holders", "holders", -EINVAL, "an array");
	holders_free(t);
	json_t *seq = json_object_get(obj, "seq");
	t->holders_seq = json_is_integer(seq) ? (uint64_t)json_integer_value(seq) : UINT64_MAX;
	if (json_array_size(a) && !(t->holders = calloc(json_array_size(a), sizeof(*t->holders))))
		return nomem(r);
	json_array_foreach(a, i, e)
	{
		const char *what = json_string_value(json_object_get(e, "holder"));
		const char *kind = json_string_value(json_object_get(e, "kind"));
		json_t *blocks = json_object_get(e, "blocks"), *b;
		json_t *roots = json_object_get(e, "roots");
		struct gmt_trace_holder *h = &t->holders[t->nholders];
		size_t k, n = json_array_size(blocks);

		if (!what || !kind || !json_is_array(blocks) || !json_is_integer(roots)) {
			bad++;
			continue;
		}
		h->what = strdup(what);
		h->graph = strcmp(kind, "graph") == 0;
		h->roots = (uint32_t)json_integer_value(roots);
		h->ptrs = n ? calloc(n, sizeof(*h->ptrs)) : NULL;
		h->devices = n ? calloc(n, sizeof(*h->devices)) : NULL;
		if (!h->what || (n && (!h->ptrs || !h->devices))) {
			free(h->what);
			free(h->ptrs);
			free(h->devices);
			return nomem(r);
		}
		json_array_foreach(blocks, k, b)
		{
			const char *p = json_string_value(json_array_get(b, 1));
			json_t *d = json_array_get(b, 0);
			uint64_t ptr;

			if (json_array_size(b) != 2 || !json_is_integer(d) || !p ||
			    parse_hex(p, &ptr) != 0 || json_integer_value(d) < 0 ||
			    json_integer_value(d) > INT32_MAX) {
				bad++;
				continue;
			}
			h->ptrs[h->nptrs] = ptr;
			h->devices[h->nptrs++] = (int32_t)json_integer_value(d);
		}
		t->nholders++;
	}
	if (bad)
		bad_line(r, lineno, "holders: %zu malformed entries or blocks skipped", bad);
	return true;
}

/* The PyTorch layer's status (a "torch" line); the last one counts. */
static bool
read_torch(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	static const char *const keys[] = {"version", "backend", "alloc_conf", "layer", "detail"};
	char **dst[] = {&t->torch_version, &t->torch_backend, &t->torch_alloc_conf, &t->torch_layer,
			&t->torch_detail};
	const char *v;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int err = get_str(JS(obj), keys[i], &v);
		if (err == -EINVAL)
			return key_error(r, lineno, "torch", keys[i], err, "a string");
		char *copy = err ? NULL : dup_str(r, v);
		if (!err && !copy)
			return false;
		free(*dst[i]);
		*dst[i] = copy;
	}
	t->have_torch = true;
	return true;
}

static bool
read_marker(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_marker m = {.line = (uint32_t)lineno};
	const char *label, *range;
	int err;

	if ((err = get_u64(JS(obj), "seq", &m.seq)))
		return key_error(r, lineno, "marker", "seq", err, "an integer");
	if ((err = get_u64(JS(obj), "ts", &m.ts)))
		return key_error(r, lineno, "marker", "ts", err, "an integer");
	if ((err = get_str(JS(obj), "label", &label)))
		return key_error(r, lineno, "marker", "label", err, "a string");
	json_t *tid = json_object_get(obj, "tid");
	if (json_is_integer(tid))
		m.tid = json_integer_value(tid);
	if (!get_str(JS(obj), "range", &range)) {
		uint64_t depth = 0;
		if (strcmp(range, "push") == 0)
			m.range = GMT_RANGE_PUSH;
		else if (strcmp(range, "pop") == 0)
			m.range = GMT_RANGE_POP;
		else
			return key_error(r, lineno, "marker", "range", -EINVAL,
					 "\"push\" or \"pop\"");
		if ((err = get_u64(JS(obj), "depth", &depth)) || depth > UINT32_MAX)
			return key_error(r, lineno, "marker", "depth", err ? err : -EINVAL,
					 "an integer");
		m.depth = (uint32_t)depth;
	}
	const char *autov;
	if (!get_str(JS(obj), "auto", &autov)) {
		if (strcmp(autov, "step") != 0 || m.range != GMT_RANGE_NONE)
			return key_error(r, lineno, "marker", "auto", -EINVAL,
					 "\"step\", on a point marker");
		m.auto_step = true;
	}
	if (!(m.label = dup_str(r, label)))
		return false;
	see_ts(r, m.ts);
	if (!resize(r, &t->markers, t->nmarkers + 1, sizeof(*t->markers))) {
		free(m.label);
		return false;
	}
	t->markers[t->nmarkers++] = m;
	if (r->sink && gmt_reorder_push(
			   &r->window,
			   &(struct gmt_reorder_item){
			       .seq = m.seq, .line = m.line, .marker = (uint32_t)t->nmarkers}) != 0)
		return nomem(r);
	return true;
}

/*
 * A pop line carries only the depth it closes (the tracer keeps no labels): give it the label of
 * the push it closes, the latest push of the same thread at that depth. A pop with a label of
 * its own (older writers) keeps it.
 */
static void
name_pops(struct reader *r)
{
	struct gmt_trace *t = r->t;

	for (size_t i = 0; i < t->nmarkers; i++) {
		struct gmt_trace_marker *pop = &t->markers[i];

		if (pop->range != GMT_RANGE_POP || pop->depth == 0 || pop->label[0])
			continue;
		for (size_t j = i; j-- > 0;) {
			const struct gmt_trace_marker *push = &t->markers[j];

			if (push->tid != pop->tid || push->depth != pop->depth)
				continue;
			char *label;

			if (push->range == GMT_RANGE_PUSH && (label = dup_str(r, push->label))) {
				free(pop->label);
				pop->label = label;
			}
			break; /* the latest range end at that depth: a pop means it was closed */
		}
	}
}

/* One element of a snapshot's "nvml" array; false when it is malformed. */
static bool
nvml_entry(json_t *e, struct gmt_trace_nvml *n)
{
	long long dev, index = -1;
	json_t *pu;

	if (!json_is_object(e) || get_i64(JS(e), "device", &dev) || dev < INT32_MIN ||
	    dev > INT32_MAX || get_u64(JS(e), "total", &n->total) ||
	    get_u64(JS(e), "used", &n->used))
		return false;
	if (get_i64(JS(e), "index", &index) == -EINVAL)
		return false;
	n->device = (int32_t)dev;
	n->index = index >= 0 && index <= INT32_MAX ? (int32_t)index : -1;
	/* null is a statement ("NVML does not say"), not a missing key; both mean no figure. */
	pu = json_object_get(e, "process_used");
	if (pu && !json_is_null(pu)) {
		if (get_u64(JS(e), "process_used", &n->process_used))
			return false;
		n->has_process_used = true;
	}
	/* how it was found (a newer tracer's word we do not know reads as by pid) */
	static const char *const from[] = {"pid", "nspid", "only_process", "device_used"};
	const char *f = json_string_value(json_object_get(e, "process_used_from"));
	for (uint8_t i = 0; f && i < sizeof(from) / sizeof(from[0]); i++)
		if (strcmp(f, from[i]) == 0)
			n->used_from = i;
	n->pid_namespace = json_is_true(json_object_get(e, "pid_namespace"));
	return true;
}

/* The readings of a snapshot, appended to the trace only when every one of them is well-formed. */
static bool
read_nvml(struct reader *r, json_t *obj, size_t lineno, const struct gmt_trace_nvml *proto)
{
	struct gmt_trace *t = r->t;
	json_t *a = json_object_get(obj, "nvml"), *e;
	size_t i, n0 = t->nnvml;

	if (!a || json_is_null(a))
		return true;
	if (!json_is_array(a))
		return key_error(r, lineno, "snapshot", "nvml", -EINVAL, "an array");
	if (!resize(r, &t->nvml, n0 + json_array_size(a), sizeof(*t->nvml)))
		return false;
	json_array_foreach(a, i, e)
	{
		t->nvml[n0 + i] = *proto;
		if (!nvml_entry(e, &t->nvml[n0 + i]))
			return key_error(r, lineno, "snapshot", "nvml", -EINVAL,
					 "objects {device, total, used, process_used}");
	}
	t->nnvml = n0 + json_array_size(a);
	return true;
}

static bool
read_snapshot(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_nvml proto = {.line = (uint32_t)lineno};
	size_t nvml_before = t->nnvml;
	uint64_t dropped;
	int err;

	if ((err = get_u64(JS(obj), "ts", &proto.ts)))
		return key_error(r, lineno, "snapshot", "ts", err, "an integer");
	if ((err = get_u64(JS(obj), "dropped", &dropped)))
		return key_error(r, lineno, "snapshot", "dropped", err, "an integer");
	err = get_u64(JS(obj), "seq", &proto.seq);
	if (err == -EINVAL)
		return key_error(r, lineno, "snapshot", "seq", err, "an integer");
	proto.has_seq = err == 0;
	if (!read_nvml(r, obj, lineno, &proto))
		return false;
	see_ts(r, proto.ts);
	/* Streaming: the model takes a reading in before the first event after it (by seq, else
	 * ts). The writer's snapshot names the last seq it wrote, so no later event went before
	 * it; in a file where one did, the reading comes late. */
	if (r->sink && t->nnvml > nvml_before && r->delivered_any &&
	    (proto.has_seq ? proto.seq < r->event_seq : proto.ts < r->event_ts))
		late(r, lineno, proto.seq);
	/* The trailer's count wins when there is one; a dead process only left snapshots. */
	if (!t->complete && dropped > t->dropped)
		t->dropped = dropped;
	t->snapshots++;
	return true;
}

static bool
read_trailer(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	uint64_t events, dropped, ts;
	int err;

	if (t->complete) {
		bad_line(r, lineno, "second trailer, ignored");
		return false;
	}
	if ((err = get_u64(JS(obj), "events", &events)))
		return key_error(r, lineno, "trailer", "events", err, "an integer");
	if ((err = get_u64(JS(obj), "dropped", &dropped)))
		return key_error(r, lineno, "trailer", "dropped", err, "an integer");
	if (get_u64(JS(obj), "ts", &ts) == 0)
		see_ts(r, ts);
	t->complete = true;
	t->trailer_events = events;
	get_u64(JS(obj), GMT_TRAILER_ELIDED, &t->trailer_elided);
	get_u64(JS(obj), GMT_TRAILER_LATE, &t->bounded_late);
	t->dropped = dropped;
	return true;
}

/*
 * Line @p lineno was longer than the reader keeps (GMT_TRACE_MAX_LINE) and went by unread: a bad
 * line (the report says the trace was damaged, check does not pass it), or one more line before
 * the first trace line. Nothing of it is quoted.
 */
static void
long_line(struct reader *r, size_t lineno, const struct gmt_trace_line *line)
{
	if (!r->trace_line_seen) {
		r->lead++;
		return;
	}
	bad_line(r, lineno,
		 "line of %llu bytes%s, longer than the %u MiB a line may have: skipped (not a "
		 "line the tracer writes: a damaged or hostile file)",
		 line->skipped, line->torn ? " (the file ends inside it)" : "",
		 GMT_TRACE_MAX_LINE >> 20);
}

/* Line @p lineno is the first trace line: the lines before it are counted as bad, unquoted. */
static void
lead_end(struct reader *r, size_t lineno)
{
	if (r->trace_line_seen)
		return;
	r->trace_line_seen = true;
	if (!r->lead)
		return;
	r->t->bad_lines += r->lead;
	r->shown++;
	fprintf(r->diag,
		"%s:%zu: %zu line%s before the first trace line skipped (not trace lines: a file "
		"cut at its start?)\n",
		r->epath, lineno - r->lead, r->lead, r->lead == 1 ? "" : "s");
}

/*
 * The fast path: an event line of the plain shape, read without jansson (flatjson.h). False when
 * it declines the line; the slow path then reads it, with its messages.
 */
static bool
read_line_fast(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	struct gmt_flat flat;

	/* any flat object is tried (a writer may put spaces or order keys its own way); a line
	 * with a nested value (stack, snapshot, header) is declined at its first '[' or '{' */
	if (r->no_fast || len < 2)
		return false;
	if (len + 1 > r->scratch_cap) {
		size_t cap = len + 1 > 4096 ? len + 1 : 4096;

		if (!resize(r, &r->scratch, cap, 1))
			return true; /* taken: the read stops */
		r->scratch_cap = cap;
	}
	memcpy(r->scratch, buf, len);
	r->scratch[len] = '\0';
	if (!gmt_flat_parse(r->scratch, len, &flat))
		return false;
	/* a second "type" key wins, as in jansson: that line is not an event */
	const struct gmt_flat_value *type = gmt_flat_get(&flat, "type");
	bool block = type && type->type == GMT_FLAT_STR && strcmp(type->str, "block") == 0;
	if (!type || type->type != GMT_FLAT_STR || (!block && strcmp(type->str, "event") != 0))
		return false;
	lead_end(r, lineno);
	struct src src = {.flat = &flat};
	if (block ? read_block(r, src, lineno) : read_event(r, src, lineno)) {
		r->usable++;
		r->content++;
	}
	return true;
}

static bool
known_type(const char *type)
{
	static const char *const types[] = {
	    "header", "event",	"stack", "marker", "snapshot",	    "trailer", "modules",
	    "pycode", "pyinfo", "torch", "block",  GMT_ELIDED_TYPE, NULL};

	for (size_t i = 0; types[i]; i++)
		if (strcmp(type, types[i]) == 0)
			return true;
	return false;
}

static void
read_line(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	json_error_t jerr;
	json_t *obj;
	const char *type;

	/* the tracer's stack lines start so; the flat path would copy a long one only to decline */
	if (len > 15 && memcmp(buf, "{\"type\":\"stack\"", 15) == 0) {
		if (read_stack_fast(r, buf, len, lineno))
			return;
	} else if (read_line_fast(r, buf, len, lineno)) {
		return;
	}
	bool used = false, content = false; /* before any goto out */

	obj = json_loadb(buf, len, 0, &jerr);
	if (!r->trace_line_seen && (!obj || !json_is_object(obj) ||
				    get_str(JS(obj), "type", &type) != 0 || !known_type(type))) {
		r->lead++; /* not quoted: this file has not shown it is a trace */
		json_decref(obj);
		return;
	}
	lead_end(r, lineno);
	if (!obj) {
		if (len == 0)
			bad_line(r, lineno, "empty line");
		else
			bad_line(r, lineno, "invalid JSON: %s", jerr.text);
		return;
	}
	if (!json_is_object(obj)) {
		bad_line(r, lineno, "not a JSON object");
		goto out;
	}
	if (get_str(JS(obj), "type", &type) != 0) {
		bad_line(r, lineno, "line without \"type\"");
		goto out;
	}
	if (strcmp(type, "event") == 0)
		used = content = read_event(r, JS(obj), lineno);
	else if (strcmp(type, "stack") == 0)
		used = read_stack(r, obj, lineno);
	else if (strcmp(type, "marker") == 0)
		used = content = read_marker(r, obj, lineno);
	else if (strcmp(type, "snapshot") == 0)
		used = content = read_snapshot(r, obj, lineno);
	else if (strcmp(type, "header") == 0)
		used = read_header(r, obj, lineno);
	else if (strcmp(type, "trailer") == 0)
		used = content = read_trailer(r, obj, lineno);
	else if (strcmp(type, "modules") == 0)
		used = read_modules(r, obj, lineno);
	else if (strcmp(type, "pycode") == 0)
		used = read_pycode(r, obj, lineno);
	else if (strcmp(type, "pyinfo") == 0)
		used = read_pyinfo(r, obj, lineno);
	else if (strcmp(type, "block") == 0)
		used = content = read_block(r, JS(obj), lineno);
	else if (strcmp(type, "torch") == 0)
		used = read_torch(r, obj, lineno);
	else if (strcmp(type, GMT_ELIDED_TYPE) == 0)
		used = content = read_elided(r, JS(obj), lineno);
	else if (strcmp(type, "holders") == 0)
		used = read_holders(r, obj, lineno);
	/* Other types are ignored without a word: adding a line type is not a format change. */
	if (used)
		r->usable++;
	if (content)
		r->content++;
out:
	json_decref(obj);
}

// --- the file ---------------------------------------------------------------------------------

static int
cmp_event(const void *pa, const void *pb)
{
	const struct gmt_trace_event *a = pa, *b = pb;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int
cmp_marker(const void *pa, const void *pb)
{
	const struct gmt_trace_marker *a = pa, *b = pb;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int
cmp_stack(const void *pa, const void *pb)
{
	const struct gmt_trace_stack *a = pa, *b = pb;

	return a->id < b->id ? -1 : a->id > b->id;
}

/* By id, then line: of the lines defining one id, the first comes first. */
static int
cmp_stack_line(const void *pa, const void *pb)
{
	const struct gmt_trace_stack *a = pa, *b = pb;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/*
 * Sort the stacks by id and keep the first line of each id: a second definition is a tracer bug,
 * reported and ignored. Done once at the end, since a search per line is quadratic in the
 * number of stacks.
 */
static void
settle_stacks(struct reader *r)
{
	struct gmt_trace *t = r->t;
	size_t k = 0;

	if (t->nstacks > 1)
		qsort(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack_line);
	for (size_t i = 0; i < t->nstacks; i++) {
		if (k && t->stacks[k - 1].id == t->stacks[i].id) {
			bad_line(r, t->stacks[i].line, "stack %u defined twice, ignored",
				 t->stacks[i].id);
			continue; /* its frame lists stay in the trace's blocks, unused */
		}
		t->stacks[k++] = t->stacks[i];
	}
	t->nstacks = k;
	/* Reading doubled both lists as they grew: give back what no stack will use. */
	shrink(&t->stacks, k, sizeof(*t->stacks));
	shrink(&t->addresses, t->naddresses, sizeof(*t->addresses));
}

static int
cmp_pycode(const void *pa, const void *pb)
{
	const struct gmt_trace_pycode *a = pa, *b = pb;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static void
pycode_free(struct gmt_trace_pycode *c)
{
	free(c->file);
	free(c->name);
	free(c->qualname);
	free(c->python);
	free(c->linetable);
}

/*
 * Sort the pycode lines by id and keep the first of each id (a second one is a tracer bug,
 * reported); then say once per stack which Python frames name a code no line defines (they are
 * shown as unknown code).
 */
static void
settle_pycodes(struct reader *r)
{
	struct gmt_trace *t = r->t;
	size_t k = 0;

	if (t->npycodes > 1)
		qsort(t->pycodes, t->npycodes, sizeof(*t->pycodes), cmp_pycode);
	for (size_t i = 0; i < t->npycodes; i++) {
		if (k && t->pycodes[k - 1].id == t->pycodes[i].id) {
			bad_line(r, t->pycodes[i].line, "pycode %u defined twice, ignored",
				 t->pycodes[i].id);
			pycode_free(&t->pycodes[i]);
			continue;
		}
		t->pycodes[k++] = t->pycodes[i];
	}
	t->npycodes = k;
	for (size_t i = 0; i < t->nstacks; i++) {
		const struct gmt_trace_stack *st = &t->stacks[i];

		for (uint32_t f = 0; f < st->npy; f++) {
			if (!gmt_trace_pycode(t, st->py[f].code)) {
				note_line(r, st->line,
					  "stack %u names Python code %u, which no pycode line "
					  "defines",
					  st->id, st->py[f].code);
				break;
			}
		}
	}
}

// --- progress on a terminal --------------------------------------------------------------------

#define PROGRESS_EVERY ((1u << 14) - 1) /* lines between looks at the clock */

/* A line on @p diag, rewritten in place at most once a second, for traces that take a while. */
struct progress {
	const struct gmt_trace_input *in;
	FILE *diag;
	bool on;
	bool shown;
	double start, last;
	double every; /* seconds between updates */
	long long size;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct progress
progress_start(const struct gmt_trace_input *in, FILE *diag, const struct gmt_read_options *opt)
{
	struct progress p = {.in = in, .diag = diag};

	/* against the file's own bytes: a compressed file's, as its stream consumes them */
	p.on = isatty(fileno(diag));
	p.size = p.on ? gmt_trace_input_size(in) : 0;
	p.start = p.last = now_s();
	p.every = opt->progress_every_s >= 0 ? opt->progress_every_s : 1.0;
	return p;
}

static void
progress_show(struct progress *p, const char *path, size_t lines)
{
	double t;
	long long at;

	if (!p->on || (t = now_s()) - p->last < p->every)
		return;
	p->last = t;
	at = gmt_trace_input_offset(p->in);
	fprintf(p->diag, "\rgpumemtrace: reading %s: %zu lines", path, lines);
	if (p->size > 0 && at >= 0)
		fprintf(p->diag, ", %.0f%% (%.0f MB/s)", 100.0 * (double)at / (double)p->size,
			(double)at / 1e6 / (t - p->start));
	fflush(p->diag);
	p->shown = true;
}

static void
progress_end(struct progress *p)
{
	if (p->shown) /* erase the line: what follows starts clean */
		fprintf(p->diag, "\r\033[K");
}

// --- reading ----------------------------------------------------------------------------------

/* Bytes free (for unprivileged writers) below which a file system counts as full. */
#define DISK_FULL_BYTES (1u << 20)

/*
 * A trace without a trailer: did a full disk cut it? The writer stops at ENOSPC (its warning
 * went to the program's stderr, long gone), and the process may well have exited normally.
 * Two signs, either is enough: the file ends in the middle of a line exactly at a block
 * boundary (a write cut short where the blocks ran out; a process killed in a write ends
 * there one time in thousands), or the file system holding it is full now.
 */
static void
disk_check(struct reader *r, int fd)
{
	struct gmt_trace *t = r->t;
	struct statvfs vfs;
	struct stat st;
	long long unit;

	if (fstat(fd, &st) != 0)
		return;
	unit = st.st_blksize > 0 && st.st_blksize < 4096 ? st.st_blksize : 4096;
	if (t->torn && st.st_size > 0 && st.st_size % unit == 0) {
		t->cut_by_disk = true;
		fprintf(r->diag,
			"%s: note: no trailer, and the file ends in the middle of a line at a "
			"%lld-byte block boundary: most likely the disk (or a quota) was full and "
			"the tracer stopped writing; the program may have run on untraced\n",
			r->epath, unit);
	} else if (fstatvfs(fd, &vfs) == 0 && vfs.f_blocks > 0 && !(vfs.f_flag & ST_RDONLY) &&
		   (unsigned long long)vfs.f_bavail * vfs.f_frsize < DISK_FULL_BYTES) {
		/* (a read-only file system, squashfs or ISO 9660, says 0 free: it was not written)
		 */
		t->cut_by_disk = true;
		fprintf(
		    r->diag,
		    "%s: note: no trailer, and the file system holding it is full (%llu KiB "
		    "free): most likely the tracer stopped writing when the disk filled up; the "
		    "program may have run on untraced\n",
		    r->epath, (unsigned long long)vfs.f_bavail * vfs.f_frsize / 1024);
	}
}

enum gmt_trace_status
gmt_trace_read(const char *path,
	       FILE *diag,
	       const struct gmt_read_options *opt,
	       struct gmt_trace **out)
{
	return gmt_trace_read_sink(path, diag, opt, NULL, out);
}

enum gmt_trace_status
gmt_trace_read_sink(const char *path,
		    FILE *diag,
		    const struct gmt_read_options *opt,
		    const struct gmt_trace_sink *sink,
		    struct gmt_trace **out)
{
	static const struct gmt_read_options defaults = GMT_READ_OPTIONS_INIT;
	struct gmt_trace *t;
	struct reader r = {.diag = diag, .sink = sink};
	struct gmt_trace_line line;
	int n;
	struct gmt_trace_input in;
	const char *cut_why;
	FILE *f;
	int read_errno = 0;
	char why[GMT_TRACE_INPUT_WHY];

	*out = NULL;
	if (!opt)
		opt = &defaults;
	r.no_fast = opt->slow;
	gmt_reorder_init(&r.window, GMT_TRACE_REORDER_WINDOW, window_deliver, &r);
	if (gmt_trace_input_open(&in, path, why) != 0) {
		fprintf(diag, "%s: cannot open: %s\n", gmt_esc(path), gmt_esc(why));
		return GMT_TRACE_UNREADABLE;
	}
	f = in.f;
	/* A pickle (protocol 2 and later start with PROTO, 0x80) is a PyTorch memory snapshot, or
	 * nothing we read: never a trace, whose first byte is '{'. */
	int first = getc(f);
	if (first != EOF)
		ungetc(first, f);
	size_t plen = strlen(path);
	if (first == 0x80 || (plen > 7 && strcmp(path + plen - 7, ".pickle") == 0)) {
		enum gmt_trace_status rc = gmt_snapshot_read(f, path, diag, sink, out);
		gmt_trace_input_close(&in);
		gmt_reorder_fini(&r.window);
		return rc;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		gmt_trace_input_close(&in);
		fprintf(diag, "%s: out of memory\n", gmt_esc(path));
		return GMT_TRACE_UNREADABLE;
	}
	r.t = t;
	t->path = strdup(path);
	r.epath = strdup(gmt_esc(path));
	if (!t->path || !r.epath) {
		gmt_trace_input_close(&in);
		fprintf(diag, "%s: out of memory\n", gmt_esc(path));
		free(r.epath);
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	t->pid = t->ppid = t->forked_from = -1;
	t->rank = t->local_rank = t->world_size = -1;

	struct progress prog = progress_start(&in, diag, opt);

	errno = 0;
	while ((n = gmt_trace_input_line(&in, &line, GMT_TRACE_MAX_LINE)) > 0) {
		size_t len = line.len;

		t->lines++;
		if ((t->lines & PROGRESS_EVERY) == 0)
			progress_show(&prog, r.epath, t->lines);
		if (line.skipped) {
			long_line(&r, t->lines, &line);
			if (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD)
				break; /* not a trace: the rest is not read either */
			if (line.torn)
				break;
			continue;
		}
		if (line.torn) {
			/*
			 * A line without its '\n' can only be the last: the writer was killed in
			 * the middle of a write. The format says to ignore it.
			 */
			t->torn = true;
			fprintf(diag,
				"%s:%zu: note: last line is incomplete (torn write), ignored\n",
				r.epath, t->lines);
			break;
		}
		if (len && line.text[len - 1] == '\r')
			len--;
		read_line(&r, line.text, len, t->lines);
		if (r.refused || r.nomem)
			break;
		if (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD)
			break; /* not a trace: the rest is not read either */
		errno = 0;
	}
	if (n < 0 || ferror(f))
		read_errno = errno ? errno : EIO;
	progress_end(&prog);
	/*
	 * A compressed stream ends early without an error of its own: what was decoded has been
	 * read, as a plain file is read up to its torn line. Unless the read stopped before it
	 * (a refused or foreign file), the reason is said once, with the file's byte.
	 */
	switch (gmt_trace_input_end(&in, &cut_why)) {
	case GMT_TRACE_INPUT_END_NONE: break;
	case GMT_TRACE_INPUT_END_READ_ERROR:
		if (!read_errno) { /* as a plain file's read error: unreadable */
			fprintf(diag, "%s: %s compressed trace: %s\n", r.epath,
				gmt_trace_input_kind_name(in.kind), cut_why);
			r.refused = true;
		}
		break;
	case GMT_TRACE_INPUT_END_TRUNCATED:
		if (r.refused || r.nomem || (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD))
			break;
		fprintf(diag, "%s: note: %s compressed trace %s: read up to there\n", r.epath,
			gmt_trace_input_kind_name(in.kind), cut_why);
		break;
	case GMT_TRACE_INPUT_END_CORRUPT:
		if (r.refused || r.nomem || (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD))
			break;
		fprintf(diag, "%s: %s compressed trace %s: read as far as it is good\n", r.epath,
			gmt_trace_input_kind_name(in.kind), cut_why);
		break;
	}
	if (!t->complete && !read_errno && !r.refused && r.trace_line_seen &&
	    gmt_trace_input_fd(&in) >= 0)
		disk_check(&r, gmt_trace_input_fd(&in));
	gmt_trace_input_close(&in);

	if (!r.refused && !r.nomem)
		gmt_reorder_drain(&r.window);
	gmt_reorder_fini(&r.window);
	free(r.open);
	free(r.modhash);
	free(r.scratch);
	free(r.addrhash);
	free(r.stack_addrs);
	free(r.stack_py);
	if (r.nomem) {
		fprintf(diag, "%s: out of memory\n", r.epath);
		r.refused = true;
	}
	if (!r.refused) {
		settle_stacks(&r);
		settle_pycodes(&r);
	}
	if (t->late_events) /* one line whatever the cap: it says how far to trust the order */
		fprintf(
		    diag,
		    "%s:%zu: note: %" PRIu64 " line%s applied late, the first with seq %" PRIu64
		    ": a seq that repeats, one that came after %d waiting lines gave up on it, or "
		    "a snapshot behind the events before it (the counts stay right; the order at "
		    "%s may not)\n",
		    r.epath, r.first_late_line, t->late_events, t->late_events == 1 ? "" : "s",
		    r.first_late_seq, GMT_TRACE_REORDER_WINDOW,
		    t->late_events == 1 ? "that moment" : "those moments");
	if (r.shown < t->bad_lines)
		fprintf(diag, "%s: %zu more bad lines not shown\n", r.epath,
			t->bad_lines - r.shown);
	if (read_errno) {
		fprintf(diag, "%s: read error: %s\n", r.epath, strerror(read_errno));
		r.refused = true;
	} else if (!r.refused && !r.trace_line_seen && t->lines > 0) {
		/* nothing of it is quoted: it may be any file this user can read */
		if (r.lead > GMT_TRACE_MAX_LEAD)
			fprintf(diag,
				"%s: not a gpumemtrace trace (none of its first %d lines is a JSON "
				"object with a \"type\" of the format)\n",
				r.epath, GMT_TRACE_MAX_LEAD + 1);
		else
			fprintf(diag,
				"%s: not a gpumemtrace trace (no line is a JSON object with a "
				"\"type\" of the format)\n",
				r.epath);
		r.refused = true;
	} else if (!r.refused && !t->have_header && r.content == 0) {
		/* call stacks, modules and Python code alone describe nothing that happened */
		if (t->lines == 0)
			fprintf(diag, "%s: empty file, not a trace\n", r.epath);
		else if (r.usable == 0)
			fprintf(diag, "%s: no header and no usable line, not a trace\n", r.epath);
		else
			fprintf(
			    diag,
			    "%s: no header and no event, marker, snapshot or trailer line, not a "
			    "trace\n",
			    r.epath);
		r.refused = true;
	}
	if (r.refused) {
		free(r.epath);
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	if (!t->have_header) {
		fprintf(diag, "%s: note: no header line; read as format version %d\n", r.epath,
			GMT_FORMAT_VERSION);
		t->version = GMT_FORMAT_VERSION;
		t->start_ts = r.have_min_ts ? r.min_ts : 0;
	} else if (!r.have_start_ts && r.have_min_ts) {
		t->start_ts = r.min_ts;
	}
	if (!t->have_ts) /* nothing after the header: the trace ends where it starts */
		t->last_ts = t->start_ts;
	if (t->have_header && r.content == 0)
		fprintf(diag,
			"%s: note: nothing after the header (no event, marker, snapshot or "
			"trailer): the process %s\n",
			r.epath,
			t->cut_by_disk
			    ? "could not write more (the disk was full)"
			    : "stopped before its first GPU memory call was written, or is "
			      "still running");

	/* The writer emits lines in drain order; what happened is the seq order. */
	if (t->events && t->nevents > 1) /* streamed traces keep no events */
		qsort(t->events, t->nevents, sizeof(*t->events), cmp_event);
	if (t->nmarkers > 1)
		qsort(t->markers, t->nmarkers, sizeof(*t->markers), cmp_marker);
	name_pops(&r);
	if (r.nomem) {
		fprintf(diag, "%s: out of memory\n", r.epath);
		free(r.epath);
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	free(r.epath);
	*out = t;
	return GMT_TRACE_OK;
}

void
gmt_trace_free(struct gmt_trace *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->host);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->tracer);
	free(t->coverage);
	free(t->coverage_reason);
	free(t->elided_bins);
	free(t->torch_version);
	free(t->torch_backend);
	free(t->torch_alloc_conf);
	free(t->torch_layer);
	free(t->torch_detail);
	holders_free(t);
	for (size_t i = 0; i < t->ncapture; i++)
		free(t->capture[i]);
	free(t->capture);
	free(t->nvml);
	free(t->events);
	for (size_t i = 0; i < t->nmarkers; i++)
		free(t->markers[i].label);
	free(t->markers);
	for (struct gmt_trace_block *b = t->stack_mem, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(t->stacks);
	free(t->addresses);
	free(t->python);
	for (size_t i = 0; i < t->nmodules; i++) {
		free(t->modules[i].path);
		free(t->modules[i].file);
		free(t->modules[i].build_id);
		free(t->modules[i].segments);
	}
	free(t->modules);
	for (size_t i = 0; i < t->nmodsets; i++)
		free(t->modsets[i].mods);
	free(t->modsets);
	for (size_t i = 0; i < t->npycodes; i++)
		pycode_free(&t->pycodes[i]);
	free(t->pycodes);
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t);
}

const char *
gmt_trace_string(const struct gmt_trace *t, uint16_t idx)
{
	return idx < t->nstrings ? t->strings[idx] : "?";
}

const char *
gmt_trace_driver(const struct gmt_trace *t, uint16_t idx)
{
	return idx < t->nstrings ? t->strings[idx] : NULL;
}

const struct gmt_trace_stack *
gmt_trace_stack(const struct gmt_trace *t, uint32_t id)
{
	struct gmt_trace_stack key = {.id = id};

	if (id == 0 || t->nstacks == 0)
		return NULL;
	return bsearch(&key, t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack);
}

const struct gmt_trace_pycode *
gmt_trace_pycode(const struct gmt_trace *t, uint32_t id)
{
	struct gmt_trace_pycode key = {.id = id};

	if (t->npycodes == 0)
		return NULL;
	/* After reading, ids are unique, so the line number never decides the comparison. */
	for (size_t lo = 0, hi = t->npycodes; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->pycodes[mid].id == key.id)
			return &t->pycodes[mid];
		if (t->pycodes[mid].id < key.id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

double
gmt_trace_time_s(const struct gmt_trace *t, uint64_t ts)
{
	if (ts >= t->start_ts)
		return (double)(ts - t->start_ts) / 1e9;
	return -(double)(t->start_ts - ts) / 1e9;
}
