/*
 * @brief The trace reader's lines of what happened: header, event, block, elided, marker, holders,
 * torch, nvml, snapshot and trailer lines, and the reorder window's output to the sink
 * (reader_int.h).
 */
#define _GNU_SOURCE
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

#include "analysis/reader/reader_int.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The strings of array @p a into a new *@p v of *@p n (other elements skipped). */
static void
read_strings(struct reader *r, json_t *a, char ***v, size_t *n)
{
	size_t i;
	json_t *e;

	if (!json_is_array(a) || !rd_resize(r, v, json_array_size(a), sizeof(**v)))
		return;
	json_array_foreach(a, i, e)
	{
		if (json_is_string(e) && !((*v)[*n] = rd_dup_str(r, json_string_value(e))))
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
	if (rd_get_u64(JS(o), "depth", &depth) == 0 && depth <= UINT32_MAX)
		t->stacks_depth = (uint32_t)depth;
	v = json_object_get(o, "python");
	if (json_is_string(v) && !t->python)
		t->python = rd_dup_str(r, json_string_value(v));
}

bool
rd_read_header(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	const char *s;
	long long v;
	uint64_t u;
	json_t *a, *rank;
	int err;

	if (t->have_header) {
		rd_bad_line(r, lineno, "second header, ignored");
		return false;
	}
	/*
	 * Format and version decide what every other key means; without them (or with values this
	 * reader does not know) the file is refused rather than misread.
	 */
	char why[GMT_TRACE_WHY];
	err = rd_get_str(JS(obj), "format", &s);
	if (err) {
		rd_refuse(r, lineno,
			  err == -ENOENT ? "header without \"format\""
					 : "header with bad \"format\" (expected a string)");
		return false;
	}
	if (strcmp(s, "gpumemtrace") != 0) {
		/* another program's file: refused without a reason kept (not a lost trace) */
		fprintf(r->diag, "%s:%zu: not a gpumemtrace trace (header format \"%s\")\n",
			r->epath, lineno, gmt_esc(s));
		r->refused = true;
		return false;
	}
	err = rd_get_i64(JS(obj), "version", &v);
	if (err) {
		rd_refuse(r, lineno,
			  err == -ENOENT ? "header without \"version\""
					 : "header with bad \"version\" (expected an integer)");
		return false;
	}
	if (v != GMT_FORMAT_VERSION) {
		snprintf(why, sizeof(why),
			 "trace format version %lld is not supported (this gpumemtrace reads "
			 "version %d)",
			 v, GMT_FORMAT_VERSION);
		rd_refuse(r, lineno, why);
		return false;
	}
	t->have_header = true;
	t->version = (int)v;

	/* The rest describes the process; a missing or odd value leaves it "unknown". */
	if (rd_get_i64(JS(obj), "pid", &v) == 0)
		t->pid = v;
	if (rd_get_i64(JS(obj), "ppid", &v) == 0)
		t->ppid = v;
	if (rd_get_i64(JS(obj), "forked_from", &v) == 0)
		t->forked_from = v;
	if (rd_get_str(JS(obj), "host", &s) == 0)
		t->host = rd_dup_str(r, s);
	if (rd_get_str(JS(obj), "tracer", &s) == 0)
		t->tracer = rd_dup_str(r, s);
	if (rd_get_str(JS(obj), "coverage", &s) == 0)
		t->coverage = rd_dup_str(r, s);
	if (rd_get_str(JS(obj), "coverage_reason", &s) == 0)
		t->coverage_reason = rd_dup_str(r, s);
	read_strings(r, json_object_get(obj, "capture"), &t->capture, &t->ncapture);
	if (rd_get_u64(JS(obj), "start_ts", &u) == 0) {
		t->start_ts = u;
		r->have_start_ts = true;
	} else {
		fprintf(r->diag,
			"%s:%zu: note: header without \"start_ts\"; times are counted from "
			"the first event\n",
			r->epath, lineno);
	}
	if (rd_get_u64(JS(obj), "start_unix_ns", &u) == 0)
		t->start_unix_ns = u;
	a = json_object_get(obj, "argv");
	read_strings(r, a, &t->argv, &t->argc);
	read_stacks_info(r, json_object_get(obj, "stacks"));
	json_t *opts = json_object_get(obj, "options");
	if (json_is_object(opts) && json_is_true(json_object_get(opts, GMT_OPT_BOUNDED))) {
		t->bounded = true;
		rd_get_u64(JS(opts), GMT_OPT_BUCKET_MS, &t->bucket_ms);
	}
	rank = json_object_get(obj, "rank");
	if (json_is_object(rank)) {
		t->has_rank = true;
		rd_get_i64(JS(rank), "rank", &t->rank);
		rd_get_i64(JS(rank), "local_rank", &t->local_rank);
		rd_get_i64(JS(rank), "world_size", &t->world_size);
	}
	return true;
}

/*
 * What a name of a few bytes (an op, a kind) was read as the last times on this thread, by its
 * length and first byte: every event line names its op and kind, and gmt_op_from_name() and
 * gmt_kind_parse() compare the name with each of theirs in turn. A name is only taken from here
 * when it is the same bytes (a pure function of them: the same answer as the parse).
 */
#define MEMO_SLOTS 16
#define MEMO_NAME 15

struct name_memo {
	uint8_t len; /* 0: empty (an empty name is not kept) */
	uint8_t val;
	char name[MEMO_NAME];
};

static inline struct name_memo *
memo_slot(struct name_memo *m, const char *s, size_t n)
{
	return &m[(n * 7 + (uint8_t)s[0]) % MEMO_SLOTS];
}

/* The @p n bytes (1 to MEMO_NAME) at @p a and @p b equal: two loads each, overlapping, never
 * past the n bytes (memcmp() of a length not known here is a call, longer than the compare). */
static inline bool
memo_same(const char *a, const char *b, size_t n)
{
	uint64_t x, y, u, v;
	uint32_t h, i, j, k;

	if (n >= 8) {
		memcpy(&x, a, 8), memcpy(&y, b, 8);
		memcpy(&u, a + n - 8, 8), memcpy(&v, b + n - 8, 8);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	if (n >= 4) {
		memcpy(&h, a, 4), memcpy(&i, b, 4);
		memcpy(&j, a + n - 4, 4), memcpy(&k, b + n - 4, 4);
		return ((h ^ i) | (j ^ k)) == 0;
	}
	return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

/* The value kept for @p s (@p n bytes), or -1. */
static inline int
memo_get(struct name_memo *m, const char *s, size_t n)
{
	const struct name_memo *e;

	if (n == 0 || n > MEMO_NAME)
		return -1;
	e = memo_slot(m, s, n);
	return e->len == n && memo_same(e->name, s, n) ? e->val : -1;
}

static inline void
memo_put(struct name_memo *m, const char *s, size_t n, int val)
{
	struct name_memo *e;

	if (n == 0 || n > MEMO_NAME || val < 0 || val > UINT8_MAX)
		return;
	e = memo_slot(m, s, n);
	e->len = (uint8_t)n;
	e->val = (uint8_t)val;
	memcpy(e->name, s, n);
}

static _Thread_local struct name_memo op_memo[MEMO_SLOTS], kind_memo[MEMO_SLOTS];

/* gmt_op_from_name() of @p name (@p n bytes, no NUL among them), through op_memo. */
static enum gmt_op
op_from_name(const char *name, size_t n)
{
	int v = memo_get(op_memo, name, n);

	if (v < 0) {
		v = (int)gmt_op_from_name(name);
		memo_put(op_memo, name, n, v);
	}
	return (enum gmt_op)v;
}

/* gmt_kind_parse() of @p name (@p n bytes, no NUL among them), through kind_memo. */
static enum gmt_tkind
kind_parse(const char *name, size_t n)
{
	int v = memo_get(kind_memo, name, n);

	if (v < 0) {
		v = (int)gmt_kind_parse(name);
		memo_put(kind_memo, name, n, v);
	}
	return (enum gmt_tkind)v;
}

/* The ops an event line may have (a marker, a block or the PyTorch layer's status is a line of
 * its own type). */
static bool
parse_op(const char *name, size_t n, uint8_t *op)
{
	enum gmt_op o = op_from_name(name, n);

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
	size_t n;
	enum gmt_tkind k;
	int err;

	if (ev->op == GMT_OP_RESET)
		return true;
	err = rd_get_strn(obj, "kind", &kind, &n);
	if (err == -ENOENT && (ev->op == GMT_OP_FREE || ev->op == GMT_OP_RETAIN))
		return true;
	if (err)
		return rd_key_error(r, lineno, "event", "kind", err, "a string");
	k = kind_parse(kind, n);
	if (k == GMT_TK_NONE && strcmp(kind, "none") == 0 && ev->op != GMT_OP_ALLOC &&
	    ev->op != GMT_OP_USAGE)
		return true;
	if (k == GMT_TK_NONE) {
		rd_bad_line(r, lineno, "event with unknown kind \"%s\": line skipped", kind);
		return false;
	}
	if (gmt_kind_is_reading(k) != (ev->op == GMT_OP_USAGE)) {
		rd_bad_line(r, lineno, "%s event with kind \"%s\" (%s): line skipped",
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
	size_t n;
	long long v;
	int err;

	if ((err = rd_get_u64(obj, "seq", &ev->seq)))
		return rd_key_error(r, lineno, "event", "seq", err, "an integer");
	if ((err = rd_get_u64(obj, "ts", &ev->ts)))
		return rd_key_error(r, lineno, "event", "ts", err, "an integer");
	if ((err = rd_get_strn(obj, "op", &op, &n)))
		return rd_key_error(r, lineno, "event", "op", err, "a string");
	if (!parse_op(op, n, &ev->op)) {
		rd_bad_line(r, lineno, "event with unknown op \"%s\": line skipped", op);
		return false;
	}
	/* Without result a failed call would be counted as memory the application holds. */
	if ((err = rd_get_i64(obj, "result", &v)) || v < INT32_MIN || v > INT32_MAX)
		return rd_key_error(r, lineno, "event", "result", err ? err : -EINVAL,
				    "an integer");
	ev->result = (int32_t)v;

	err = rd_get_i64(obj, "device", &v);
	if (err == 0 && (v < INT32_MIN || v > INT32_MAX))
		err = -EINVAL;
	if (err == 0)
		ev->device = (int32_t)v;
	else if ((ev->op != GMT_OP_FREE && ev->op != GMT_OP_RETAIN) || err == -EINVAL)
		return rd_key_error(r, lineno, "event", "device", err, "an integer");
	return true;
}

/* ptr, size and pool, whose presence depends on the op. */
static bool
event_ptr_size(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	int err;

	if (ev->op == GMT_OP_ALLOC || ev->op == GMT_OP_FREE) {
		if ((err = rd_get_hex(obj, "ptr", &ev->ptr)))
			return rd_key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_OP_ALLOC && ev->result != 0) {
		/* the bytes asked for, whatever they were: (size_t)-1 too (rd_get_size()) */
		if ((err = rd_get_size(obj, "size", &ev->size)))
			return rd_key_error(r, lineno, "event", "size", err, "an integer");
	} else if (ev->op == GMT_OP_ALLOC || ev->op == GMT_OP_USAGE) {
		if ((err = rd_get_u64(obj, "size", &ev->size)))
			return rd_key_error(r, lineno, "event", "size", err, "an integer");
	} else if (ev->op == GMT_OP_FREE) {
		err = rd_get_u64(obj, "size", &ev->size);
		if (err == -EINVAL)
			return rd_key_error(r, lineno, "event", "size", err, "an integer");
		if (err == 0)
			ev->flags |= GMT_EV_HAS_RANGE;
	}
	if (ev->op == GMT_OP_USAGE && ev->kind == GMT_TK_POOL_RESERVE) {
		if ((err = rd_get_hex(obj, "pool", &ev->ptr)))
			return rd_key_error(r, lineno, "event", "pool", err, "a hex string");
	}
	return true;
}

/* offset: the tracer writes an integer; a hex string is accepted as for every other number-like
 * handle value. */
static int
get_u64_or_hex(struct src obj, const char *key, uint64_t *out)
{
	int err = rd_get_u64(obj, key, out);

	return err == -EINVAL ? rd_get_hex(obj, key, out) : err;
}

/* handle, offset, context, the failure's memory info and the stack: all optional. */
static bool
event_optional(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *ev)
{
	uint64_t u;
	int err;

	if ((err = rd_get_hex(obj, "handle", &ev->handle)) == -EINVAL)
		return rd_key_error(r, lineno, "event", "handle", err, "a hex string");
	if ((err = get_u64_or_hex(obj, "offset", &ev->offset)) == -EINVAL)
		return rd_key_error(r, lineno, "event", "offset", err, "an integer");
	if ((err = rd_get_u64(obj, "context", &ev->context)) == -EINVAL)
		return rd_key_error(r, lineno, "event", "context", err, "an integer");
	if (ev->op == GMT_OP_RETAIN) {
		/* The handle is "ptr"; a retain's "handle" is the address that was asked about. */
		if ((err = rd_get_hex(obj, "ptr", &ev->ptr)))
			return rd_key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_OP_ALLOC && (ev->result != 0 ? rd_get_size(obj, "requested", &u)
						       : rd_get_u64(obj, "requested", &u)) == 0) {
		ev->requested = u;
		ev->flags |= GMT_EV_HAS_REQUESTED;
	}
	if (ev->op == GMT_OP_ALLOC && rd_get_u64(obj, "free_bytes", &ev->free_bytes) == 0 &&
	    rd_get_u64(obj, "total_bytes", &ev->total_bytes) == 0)
		ev->flags |= GMT_EV_HAS_MEMINFO;
	/* 0 is "no stack captured" in the format; an absent key means the same. */
	err = rd_get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return rd_key_error(r, lineno, "event", "stack", -EINVAL, "an integer");
	if (err == 0)
		ev->stack = (uint32_t)u;
	return true;
}

/* api and driver, as the line names them (@p driver NULL when it has none), and their
 * rd_name_hash() in @p hash (the driver's 0 when it has none). */
static bool
event_name_strs(struct reader *r,
		struct src obj,
		size_t lineno,
		const char *type,
		const char **api,
		const char **driver,
		uint64_t key[2])
{
	size_t n;
	int err;

	if ((err = rd_get_strn(obj, "api", api, &n)))
		return rd_key_error(r, lineno, type, "api", err, "a string");
	key[0] = rd_name_key_n(*api, n);
	err = rd_get_strn(obj, "driver", driver, &n);
	if (err == -EINVAL)
		return rd_key_error(r, lineno, type, "driver", err, "a string");
	if (err)
		*driver = NULL;
	key[1] = *driver ? rd_name_key_n(*driver, n) : 0;
	return true;
}

/* api and driver into the string table; false (reported) when the table is full. */
static bool
intern_names(struct reader *r,
	     size_t lineno,
	     struct gmt_trace_event *ev,
	     const char *api,
	     const char *driver,
	     uint64_t api_key,
	     uint64_t driver_key)
{
	int idx;

	ev->driver = GMT_TRACE_NO_STRING;
	if (driver) {
		idx = rd_intern_hashed(r, driver, driver_key);
		if (idx < 0)
			goto full;
		ev->driver = (uint16_t)idx;
	}
	idx = rd_intern_hashed(r, api, api_key);
	if (idx < 0)
		goto full;
	ev->api = (uint16_t)idx;
	return true;
full:
	if (r->nomem)
		return false;
	rd_bad_line(r, lineno, "too many distinct \"api\" names, event ignored");
	return false;
}

/*
 * A pop's label is its push's, as rd_name_pops() gives it to a stored trace's sorted markers:
 * the latest marker of the same thread at that depth, when it is a push. So the open pushes are
 * kept one per thread and depth: any marker there takes the place of the one before it (a
 * second push at a depth still open, a pop, a pop that has a label of its own), and a pop at
 * depth 0 gets none.
 */
static void
name_pop_now(struct reader *r, struct gmt_trace_marker *mk)
{
	size_t i = r->nopen;

	while (i-- > 0)
		if (r->open[i].tid == mk->tid && r->open[i].depth == mk->depth)
			break;
	if (i != SIZE_MAX) {
		char *label;

		if (mk->range == GMT_RANGE_POP && mk->depth != 0 && !mk->label[0] &&
		    (label = rd_dup_str(r, r->open[i].label))) {
			free(mk->label);
			mk->label = label;
		}
		memmove(&r->open[i], &r->open[i + 1], (r->nopen - i - 1) * sizeof(*r->open));
		r->nopen--;
	}
	if (mk->range == GMT_RANGE_PUSH && rd_resize(r, &r->open, r->nopen + 1, sizeof(*r->open)))
		r->open[r->nopen++] = (struct open_range){mk->tid, mk->depth, mk->label};
}

void
rd_late(struct reader *r, size_t line, uint64_t seq)
{
	if (r->t->late_events++ == 0) {
		r->first_late_line = line;
		r->first_late_seq = seq;
	}
}

/* An item out of the window goes to the sink; a late one is counted (noted once the file is
 * read). */
void
rd_window_deliver(void *ctx, const struct gmt_reorder_item *p, bool is_late)
{
	struct reader *r = ctx;
	struct gmt_trace *t = r->t;

	if (is_late) {
		rd_late(r, p->line, p->seq);
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

	rd_see_ts(r, ev->ts);
	if (r->sink) {
		t->nevents++;
		if (gmt_reorder_push(&r->window,
				     &(struct gmt_reorder_item){ev->seq, ev->line, 0, *ev}) != 0)
			return rd_nomem(r);
		return true;
	}
	if ((t->nevents & (t->nevents - 1)) == 0 &&
	    !rd_resize(r, &t->events, t->nevents ? t->nevents * 2 : 64, sizeof(*t->events)))
		return false;
	t->events[t->nevents++] = *ev;
	return true;
}

bool
rd_parse_event(struct reader *r,
	       struct src obj,
	       size_t lineno,
	       struct gmt_trace_event *ev,
	       const char **api,
	       const char **driver,
	       uint64_t key[2])
{
	/* zeroed in two parts: a compound literal, or one memset() of the whole, is a `rep stos`
	 * (GCC's choice past 64 bytes), slow to start for ~100; two become a few 16-byte stores */
	memset(ev, 0, 64);
	memset((char *)ev + 64, 0, sizeof(*ev) - 64);
	ev->line = (uint32_t)lineno;
	ev->device = -1;
	return event_common(r, obj, lineno, ev) && event_kind(r, obj, lineno, ev) &&
	       event_ptr_size(r, obj, lineno, ev) && event_optional(r, obj, lineno, ev) &&
	       event_name_strs(r, obj, lineno, "event", api, driver, key);
}

bool
rd_take_event_hashed(struct reader *r,
		     struct gmt_trace_event *ev,
		     const char *api,
		     const char *driver,
		     uint64_t api_key,
		     uint64_t driver_key)
{
	return intern_names(r, ev->line, ev, api, driver, api_key, driver_key) && keep_event(r, ev);
}

bool
rd_read_event(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev;
	const char *api, *driver;
	uint64_t key[2];

	return rd_parse_event(r, obj, lineno, &ev, &api, &driver, key) &&
	       rd_take_event_hashed(r, &ev, api, driver, key[0], key[1]);
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
			rd_bad_line(r, lineno,
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
				rd_bad_line(r, lineno,
					    "elided line with a bad \"%s\" entry: line skipped",
					    keys[which]);
				t->nelided_bins = ev->handle;
				return false;
			}
			if ((t->nelided_bins & (t->nelided_bins - 1)) == 0 &&
			    !rd_resize(r, &t->elided_bins,
				       t->nelided_bins ? t->nelided_bins * 2 : 64,
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
bool
rd_read_elided(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev = {.line = (uint32_t)lineno, .device = -1, .op = GMT_OP_ELIDED};
	const char *kind;
	long long v;
	uint64_t u;
	int err;

	if ((err = rd_get_u64(obj, "seq", &ev.seq)))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, "seq", err, "an integer");
	if ((err = rd_get_u64(obj, "ts", &ev.ts)))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, "ts", err, "an integer");
	if ((err = rd_get_i64(obj, "device", &v)) || v < INT32_MIN || v > INT32_MAX)
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, "device", err ? err : -EINVAL,
				    "an integer");
	ev.device = (int32_t)v;
	if ((err = rd_get_str(obj, "kind", &kind)))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, "kind", err, "a string");
	ev.kind = (uint8_t)gmt_kind_parse(kind);
	if (ev.kind == GMT_TK_NONE || gmt_kind_is_reading((enum gmt_tkind)ev.kind)) {
		rd_bad_line(r, lineno, "elided line with kind \"%s\": line skipped", gmt_esc(kind));
		return false;
	}
	if ((err = rd_get_u64(obj, GMT_ELIDED_ALLOCATIONS, &ev.offset)))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, GMT_ELIDED_ALLOCATIONS, err,
				    "an integer");
	if ((err = rd_get_u64(obj, GMT_ELIDED_BYTES, &ev.size)))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, GMT_ELIDED_BYTES, err,
				    "an integer");
	err = rd_get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return rd_key_error(r, lineno, GMT_ELIDED_TYPE, "stack", -EINVAL, "an integer");
	if (err == 0)
		ev.stack = (uint32_t)u;
	rd_get_u64(obj, GMT_ELIDED_TEMPORARIES, &ev.free_bytes);
	rd_get_u64(obj, GMT_ELIDED_TEMPORARY_BYTES, &ev.total_bytes);
	const char *api, *driver;
	uint64_t key[2];
	if (!event_name_strs(r, obj, lineno, "event", &api, &driver, key) ||
	    !intern_names(r, lineno, &ev, api, driver, key[0], key[1]) ||
	    !elided_bins(r, obj, lineno, &ev))
		return false;
	r->t->elided_lines++;
	r->t->elided_allocations += ev.offset;
	return keep_event(r, &ev);
}

/* An elided_blocks line (a bounded trace: PyTorch blocks of one site left out of one bucket,
 * format/elided.h) as an event of op ELIDED and kind NONE (trace.h). */
bool
rd_read_elided_blocks(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev = {.line = (uint32_t)lineno,
				     .op = GMT_OP_ELIDED,
				     .kind = GMT_TK_NONE,
				     .api = GMT_TRACE_NO_STRING,
				     .driver = GMT_TRACE_NO_STRING};
	long long v;
	uint64_t u;
	int err;

	if ((err = rd_get_u64(obj, "seq", &ev.seq)))
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, "seq", err, "an integer");
	if ((err = rd_get_u64(obj, "ts", &ev.ts)))
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, "ts", err, "an integer");
	if ((err = rd_get_i64(obj, "device", &v)) || v < INT32_MIN || v > INT32_MAX)
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, "device",
				    err ? err : -EINVAL, "an integer");
	ev.device = (int32_t)v;
	if ((err = rd_get_u64(obj, GMT_ELIDED_ALLOCATIONS, &ev.offset)))
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, GMT_ELIDED_ALLOCATIONS, err,
				    "an integer");
	if ((err = rd_get_u64(obj, GMT_ELIDED_BYTES, &ev.size)))
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, GMT_ELIDED_BYTES, err,
				    "an integer");
	err = rd_get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return rd_key_error(r, lineno, GMT_ELIDED_BLOCKS_TYPE, "stack", -EINVAL,
				    "an integer");
	if (err == 0)
		ev.stack = (uint32_t)u;
	r->t->elided_lines++;
	r->t->elided_blocks += ev.offset;
	return keep_event(r, &ev);
}

/* A block line (the PyTorch layer's, docs/trace-format.md "block") as an event of op BLOCK
 * (trace.h says which field holds what); it is stored and streamed with the events, in seq order.
 */
bool
rd_parse_block(struct reader *r, struct src obj, size_t lineno, struct gmt_trace_event *out)
{
	struct gmt_trace_event ev = {.line = (uint32_t)lineno,
				     .device = -1,
				     .op = GMT_OP_BLOCK,
				     .api = GMT_TRACE_NO_STRING,
				     .driver = GMT_TRACE_NO_STRING};
	const char *action;
	long long v;
	uint64_t u;
	int err;

	if ((err = rd_get_u64(obj, "seq", &ev.seq)))
		return rd_key_error(r, lineno, "block", "seq", err, "an integer");
	if ((err = rd_get_u64(obj, "ts", &ev.ts)))
		return rd_key_error(r, lineno, "block", "ts", err, "an integer");
	if ((err = rd_get_str(obj, "action", &action)))
		return rd_key_error(r, lineno, "block", "action", err, "a string");
	unsigned a = gmt_torch_action_from_name(action);
	if (!a) {
		rd_bad_line(r, lineno, "block with unknown action \"%s\": line skipped", action);
		return false;
	}
	ev.kind = (uint8_t)a;
	if ((err = rd_get_i64(obj, "device", &v)) == 0 && v >= INT32_MIN && v <= INT32_MAX)
		ev.device = (int32_t)v;
	else if (err != -ENOENT)
		return rd_key_error(r, lineno, "block", "device", -EINVAL, "an integer");
	if ((err = rd_get_hex(obj, "ptr", &ev.ptr)) == -EINVAL ||
	    (err == -ENOENT && a != GMT_TORCH_OOM && a != GMT_TORCH_SNAPSHOT))
		return rd_key_error(r, lineno, "block", "ptr", err, "a hex string");
	if ((err = rd_get_u64(obj, "size", &ev.size)))
		return rd_key_error(r, lineno, "block", "size", err, "an integer");
	if ((err = rd_get_hex(obj, "stream", &ev.handle)) == -EINVAL)
		return rd_key_error(r, lineno, "block", "stream", err, "a hex string");
	uint64_t pool[2];
	if ((err = rd_get_pair(obj, "pool", pool)) == -EINVAL)
		return rd_key_error(r, lineno, "block", "pool", err, "two integers");
	if (err == 0) {
		ev.offset = pool[0];
		ev.context = pool[1];
	}
	if ((err = rd_get_u64(obj, "requested", &ev.requested)) == -EINVAL)
		return rd_key_error(r, lineno, "block", "requested", err, "an integer");
	if ((err = rd_get_u64(obj, "device_free", &ev.free_bytes)) == -EINVAL)
		return rd_key_error(r, lineno, "block", "device_free", err, "an integer");
	err = rd_get_u64(obj, "stack", &u);
	if (err == -EINVAL || (err == 0 && u > UINT32_MAX))
		return rd_key_error(r, lineno, "block", "stack", -EINVAL, "an integer");
	if (err == 0)
		ev.stack = (uint32_t)u;
	uint32_t flags = 0;
	if (rd_get_true(obj, "allocated"))
		flags |= GMT_TORCH_F_ALLOCATED;
	if (rd_get_true(obj, "active"))
		flags |= GMT_TORCH_F_ACTIVE;
	if (rd_get_true(obj, "expandable"))
		flags |= GMT_TORCH_F_EXPANDABLE;
	const char *pt;
	if (rd_get_str(obj, "pool_type", &pt) == 0 && strcmp(pt, "large") == 0)
		flags |= GMT_TORCH_F_LARGE;
	ev.result = (int32_t)flags;
	if (rd_get_true(obj, "gc"))
		ev.flags |= GMT_EV_IN_GC;
	*out = ev;
	return true;
}

bool
rd_take_block(struct reader *r, const struct gmt_trace_event *ev)
{
	r->t->nblocks++;
	return keep_event(r, ev);
}

bool
rd_read_block(struct reader *r, struct src obj, size_t lineno)
{
	struct gmt_trace_event ev;

	return rd_parse_block(r, obj, lineno, &ev) && rd_take_block(r, &ev);
}

/*
 * What kept the live tensors at the end (a "holders" line, the PyTorch layer's walk): the last
 * line counts. An entry that is not {holder, kind, roots, blocks: [[device, "0x.."], ...]} is
 * skipped, named; the others are kept.
 */
bool
rd_read_holders(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	json_t *a = json_object_get(obj, "holders"), *e;
	size_t i, bad = 0;

	if (!json_is_array(a))
		return rd_key_error(r, lineno, "holders", "holders", -EINVAL, "an array");
	rd_holders_free(t);
	json_t *seq = json_object_get(obj, "seq");
	t->holders_seq = json_is_integer(seq) ? (uint64_t)json_integer_value(seq) : UINT64_MAX;
	if (json_array_size(a) && !(t->holders = calloc(json_array_size(a), sizeof(*t->holders))))
		return rd_nomem(r);
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
			return rd_nomem(r);
		}
		json_array_foreach(blocks, k, b)
		{
			const char *p = json_string_value(json_array_get(b, 1));
			json_t *d = json_array_get(b, 0);
			uint64_t ptr;

			if (json_array_size(b) != 2 || !json_is_integer(d) || !p ||
			    rd_parse_hex(p, &ptr) != 0 || json_integer_value(d) < 0 ||
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
		rd_bad_line(r, lineno, "holders: %zu malformed entries or blocks skipped", bad);
	return true;
}

/* The PyTorch layer's status (a "torch" line); the last one counts. */
bool
rd_read_torch(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	static const char *const keys[] = {"version", "backend", "alloc_conf", "layer", "detail"};
	char **dst[] = {&t->torch_version, &t->torch_backend, &t->torch_alloc_conf, &t->torch_layer,
			&t->torch_detail};
	const char *v;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int err = rd_get_str(JS(obj), keys[i], &v);
		if (err == -EINVAL)
			return rd_key_error(r, lineno, "torch", keys[i], err, "a string");
		char *copy = err ? NULL : rd_dup_str(r, v);
		if (!err && !copy)
			return false;
		free(*dst[i]);
		*dst[i] = copy;
	}
	t->have_torch = true;
	return true;
}

bool
rd_read_marker(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_marker m = {.line = (uint32_t)lineno};
	const char *label, *range;
	int err;

	if ((err = rd_get_u64(JS(obj), "seq", &m.seq)))
		return rd_key_error(r, lineno, "marker", "seq", err, "an integer");
	if ((err = rd_get_u64(JS(obj), "ts", &m.ts)))
		return rd_key_error(r, lineno, "marker", "ts", err, "an integer");
	if ((err = rd_get_str(JS(obj), "label", &label)))
		return rd_key_error(r, lineno, "marker", "label", err, "a string");
	json_t *tid = json_object_get(obj, "tid");
	if (json_is_integer(tid))
		m.tid = json_integer_value(tid);
	if (!rd_get_str(JS(obj), "range", &range)) {
		uint64_t depth = 0;
		if (strcmp(range, "push") == 0)
			m.range = GMT_RANGE_PUSH;
		else if (strcmp(range, "pop") == 0)
			m.range = GMT_RANGE_POP;
		else
			return rd_key_error(r, lineno, "marker", "range", -EINVAL,
					    "\"push\" or \"pop\"");
		if ((err = rd_get_u64(JS(obj), "depth", &depth)) || depth > UINT32_MAX)
			return rd_key_error(r, lineno, "marker", "depth", err ? err : -EINVAL,
					    "an integer");
		m.depth = (uint32_t)depth;
	}
	const char *autov;
	if (!rd_get_str(JS(obj), "auto", &autov)) {
		if (strcmp(autov, "step") != 0 || m.range != GMT_RANGE_NONE)
			return rd_key_error(r, lineno, "marker", "auto", -EINVAL,
					    "\"step\", on a point marker");
		m.auto_step = true;
	}
	if (!(m.label = rd_dup_str(r, label)))
		return false;
	rd_see_ts(r, m.ts);
	if (!rd_resize(r, &t->markers, t->nmarkers + 1, sizeof(*t->markers))) {
		free(m.label);
		return false;
	}
	t->markers[t->nmarkers++] = m;
	if (r->sink && gmt_reorder_push(
			   &r->window,
			   &(struct gmt_reorder_item){
			       .seq = m.seq, .line = m.line, .marker = (uint32_t)t->nmarkers}) != 0)
		return rd_nomem(r);
	return true;
}

/*
 * A pop line carries only the depth it closes (the tracer keeps no labels): give it the label of
 * the push it closes, the latest push of the same thread at that depth. A pop with a label of
 * its own (older writers) keeps it.
 */
void
rd_name_pops(struct reader *r)
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

			if (push->range == GMT_RANGE_PUSH && (label = rd_dup_str(r, push->label))) {
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

	if (!json_is_object(e) || rd_get_i64(JS(e), "device", &dev) || dev < INT32_MIN ||
	    dev > INT32_MAX || rd_get_u64(JS(e), "total", &n->total) ||
	    rd_get_u64(JS(e), "used", &n->used))
		return false;
	if (rd_get_i64(JS(e), "index", &index) == -EINVAL)
		return false;
	n->device = (int32_t)dev;
	n->index = index >= 0 && index <= INT32_MAX ? (int32_t)index : -1;
	/* null is a statement ("NVML does not say"), not a missing key; both mean no figure. */
	pu = json_object_get(e, "process_used");
	if (pu && !json_is_null(pu)) {
		if (rd_get_u64(JS(e), "process_used", &n->process_used))
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
		return rd_key_error(r, lineno, "snapshot", "nvml", -EINVAL, "an array");
	if (!rd_resize(r, &t->nvml, n0 + json_array_size(a), sizeof(*t->nvml)))
		return false;
	json_array_foreach(a, i, e)
	{
		t->nvml[n0 + i] = *proto;
		if (!nvml_entry(e, &t->nvml[n0 + i]))
			return rd_key_error(r, lineno, "snapshot", "nvml", -EINVAL,
					    "objects {device, total, used, process_used}");
	}
	t->nnvml = n0 + json_array_size(a);
	return true;
}

bool
rd_read_snapshot(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_nvml proto = {.line = (uint32_t)lineno};
	size_t nvml_before = t->nnvml;
	uint64_t dropped;
	int err;

	if ((err = rd_get_u64(JS(obj), "ts", &proto.ts)))
		return rd_key_error(r, lineno, "snapshot", "ts", err, "an integer");
	if ((err = rd_get_u64(JS(obj), "dropped", &dropped)))
		return rd_key_error(r, lineno, "snapshot", "dropped", err, "an integer");
	err = rd_get_u64(JS(obj), "seq", &proto.seq);
	if (err == -EINVAL)
		return rd_key_error(r, lineno, "snapshot", "seq", err, "an integer");
	proto.has_seq = err == 0;
	if (!read_nvml(r, obj, lineno, &proto))
		return false;
	rd_see_ts(r, proto.ts);
	/* Streaming: the model takes a reading in before the first event after it (by seq, else
	 * ts). The writer's snapshot names the last seq it wrote, so no later event went before
	 * it; in a file where one did, the reading comes late. */
	if (r->sink && t->nnvml > nvml_before && r->delivered_any &&
	    (proto.has_seq ? proto.seq < r->event_seq : proto.ts < r->event_ts))
		rd_late(r, lineno, proto.seq);
	/* The trailer's count wins when there is one; a dead process only left snapshots. */
	if (!t->complete && dropped > t->dropped)
		t->dropped = dropped;
	t->snapshots++;
	return true;
}

/* A trailer's reason that names a signal (the tracer's for a process a signal ended: SIGTERM,
 * SIGABRT, ...): "SIG" and 1-12 capital letters or digits. */
static bool
signal_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > 15 || strncmp(s, "SIG", 3) != 0)
		return false;
	for (size_t i = 3; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

bool
rd_read_trailer(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	uint64_t events, dropped, ts;
	int err;

	if (t->complete || t->ended_by[0]) {
		rd_bad_line(r, lineno, "second trailer, ignored");
		return false;
	}
	if ((err = rd_get_u64(JS(obj), "events", &events)))
		return rd_key_error(r, lineno, "trailer", "events", err, "an integer");
	if ((err = rd_get_u64(JS(obj), "dropped", &dropped)))
		return rd_key_error(r, lineno, "trailer", "dropped", err, "an integer");
	if (rd_get_u64(JS(obj), "ts", &ts) == 0)
		rd_see_ts(r, ts);
	const char *reason;
	if (rd_get_str(JS(obj), "reason", &reason) == 0 && signal_name(reason))
		snprintf(t->ended_by, sizeof(t->ended_by), "%s", reason);
	else
		t->complete = true;
	t->trailer_events = events;
	rd_get_u64(JS(obj), GMT_TRAILER_ELIDED, &t->trailer_elided);
	rd_get_u64(JS(obj), GMT_TRAILER_LATE, &t->bounded_late);
	t->dropped = dropped;
	uint64_t readings = 0;
	if (rd_get_u64(JS(obj), GMT_TRAILER_DROPPED_READINGS, &readings) == 0)
		t->dropped_readings = readings <= dropped ? readings : dropped;
	return true;
}

int
rd_cmp_event(const void *pa, const void *pb)
{
	const struct gmt_trace_event *a = pa, *b = pb;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

int
rd_cmp_marker(const void *pa, const void *pb)
{
	const struct gmt_trace_marker *a = pa, *b = pb;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}
