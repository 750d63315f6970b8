/*
 * @brief The trace reader: docs/trace-format.md (version 1) into struct gmt_trace.
 *
 * One pass over the file with getline() (argv and stack lines have no length limit), one jansson
 * parse per line, and the values copied out at once into compact structs. Validation follows the
 * format document: a line that is not JSON, has no "type", or lacks a key its type requires is
 * reported and skipped; a header of an unknown format or version makes the whole file unreadable,
 * because guessing the meaning of keys would produce a confident wrong report.
 */
#define _GNU_SOURCE
#include "analysis/trace.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Bad lines shown per file; a garbled file must not bury the report under its diagnostics. */
#define GMT_TRACE_MAX_DIAG 20

struct reader {
	struct gmt_trace *t;
	FILE *diag;
	size_t shown;
	size_t usable; /* lines that contributed something */
	bool refused;  /* unknown format or version: the file is unreadable */
	bool have_min_ts;
	bool have_start_ts;
	uint64_t min_ts; /* time origin when there is no header */
};

// --- messages ---------------------------------------------------------------------------------

static void __attribute__((format(printf, 3, 4)))
bad_line(struct reader *r, size_t lineno, const char *fmt, ...)
{
	va_list ap;

	r->t->bad_lines++;
	if (r->shown >= GMT_TRACE_MAX_DIAG)
		return;
	r->shown++;
	fprintf(r->diag, "%s:%zu: ", r->t->path, lineno);
	va_start(ap, fmt);
	vfprintf(r->diag, fmt, ap);
	va_end(ap);
	fputc('\n', r->diag);
}

// --- typed key access -------------------------------------------------------------------------
//
// Each getter returns 0 when the key is present and well-formed, -ENOENT when it is absent (or
// null) and -EINVAL when it has the wrong type, so callers can say which of the two it was.

static int
get_u64(json_t *obj, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EINVAL;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int
get_i64(json_t *obj, const char *key, long long *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_integer(v))
		return -EINVAL;
	*out = json_integer_value(v);
	return 0;
}

static int
parse_hex(const char *s, uint64_t *out)
{
	char *end;

	/* The format writes every pointer as "0x" + hex digits so 64-bit values survive JSON. */
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s[2] == '\0')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s + 2, &end, 16);
	if (errno || *end != '\0' || s[2] == '-' || s[2] == '+' || s[2] == ' ')
		return -EINVAL;
	return 0;
}

static int
get_hex(json_t *obj, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_string(v))
		return -EINVAL;
	return parse_hex(json_string_value(v), out);
}

static int
get_str(json_t *obj, const char *key, const char **out)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_string(v))
		return -EINVAL;
	*out = json_string_value(v);
	return 0;
}

/* Report a required key that get_*() rejected; false, so callers can return its result. */
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

static char *
xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		fprintf(stderr, "gpumemtrace: out of memory\n");
		exit(3);
	}
	return d;
}

static void *
xrealloc(void *p, size_t n, size_t size)
{
	void *q;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		q = NULL;
	} else {
		q = realloc(p, n * size > 0 ? n * size : 1);
	}
	if (!q) {
		fprintf(stderr, "gpumemtrace: out of memory\n");
		exit(3);
	}
	return q;
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
}

static int
intern(struct gmt_trace *t, const char *s)
{
	for (size_t i = 0; i < t->nstrings; i++)
		if (strcmp(t->strings[i], s) == 0)
			return (int)i;
	/* UINT16_MAX itself stays free: it is GMT_TRACE_NO_STRING. */
	if (t->nstrings >= UINT16_MAX)
		return -1;
	t->strings = xrealloc(t->strings, t->nstrings + 1, sizeof(*t->strings));
	t->strings[t->nstrings] = xstrdup(s);
	return (int)t->nstrings++;
}

// --- one function per line type ---------------------------------------------------------------

static void
read_capture(struct gmt_trace *t, json_t *a)
{
	size_t i;
	json_t *e;

	if (!json_is_array(a))
		return;
	t->capture = xrealloc(NULL, json_array_size(a), sizeof(*t->capture));
	json_array_foreach(a, i, e) if (json_is_string(e)) t->capture[t->ncapture++] =
	    xstrdup(json_string_value(e));
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
	err = get_str(obj, "format", &s);
	if (err) {
		key_error(r, lineno, "header", "format", err, "a string");
		r->refused = true;
		return false;
	}
	if (strcmp(s, "gpumemtrace") != 0) {
		fprintf(r->diag, "%s:%zu: not a gpumemtrace trace (header format \"%s\")\n",
			t->path, lineno, s);
		r->refused = true;
		return false;
	}
	err = get_i64(obj, "version", &v);
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
		    t->path, lineno, v, GMT_FORMAT_VERSION);
		r->refused = true;
		return false;
	}
	t->have_header = true;
	t->version = (int)v;

	/* The rest describes the process; a missing or odd value leaves it "unknown". */
	if (get_i64(obj, "pid", &v) == 0)
		t->pid = v;
	if (get_i64(obj, "ppid", &v) == 0)
		t->ppid = v;
	if (get_i64(obj, "forked_from", &v) == 0)
		t->forked_from = v;
	if (get_str(obj, "host", &s) == 0)
		t->host = xstrdup(s);
	if (get_str(obj, "tracer", &s) == 0)
		t->tracer = xstrdup(s);
	if (get_str(obj, "coverage", &s) == 0)
		t->coverage = xstrdup(s);
	if (get_str(obj, "coverage_reason", &s) == 0)
		t->coverage_reason = xstrdup(s);
	read_capture(t, json_object_get(obj, "capture"));
	if (get_u64(obj, "start_ts", &u) == 0) {
		t->start_ts = u;
		r->have_start_ts = true;
	} else {
		fprintf(r->diag,
			"%s:%zu: note: header without \"start_ts\"; times are counted from "
			"the first event\n",
			t->path, lineno);
	}
	if (get_u64(obj, "start_unix_ns", &u) == 0)
		t->start_unix_ns = u;
	a = json_object_get(obj, "argv");
	if (json_is_array(a)) {
		size_t i;
		json_t *e;

		t->argv = xrealloc(NULL, json_array_size(a), sizeof(*t->argv));
		json_array_foreach(a, i, e) if (json_is_string(e)) t->argv[t->argc++] =
		    xstrdup(json_string_value(e));
	}
	rank = json_object_get(obj, "rank");
	if (json_is_object(rank)) {
		t->has_rank = true;
		get_i64(rank, "rank", &t->rank);
		get_i64(rank, "local_rank", &t->local_rank);
		get_i64(rank, "world_size", &t->world_size);
	}
	return true;
}

static bool
read_stack(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_stack *st;
	json_t *frames, *e;
	uint64_t id;
	size_t i;
	int err;

	err = get_u64(obj, "id", &id);
	if (err || id == 0 || id > UINT32_MAX)
		return key_error(r, lineno, "stack", "id", err ? err : -EINVAL,
				 "a positive integer");
	frames = json_object_get(obj, "frames");
	if (!frames)
		return key_error(r, lineno, "stack", "frames", -ENOENT, "");
	if (!json_is_array(frames))
		return key_error(r, lineno, "stack", "frames", -EINVAL, "an array of hex strings");
	for (size_t k = 0; k < t->nstacks; k++) {
		if (t->stacks[k].id == id) {
			bad_line(r, lineno, "stack %llu defined twice, ignored",
				 (unsigned long long)id);
			return false;
		}
	}
	t->stacks = xrealloc(t->stacks, t->nstacks + 1, sizeof(*t->stacks));
	st = &t->stacks[t->nstacks];
	st->id = (uint32_t)id;
	st->nframes = 0;
	st->frames = xrealloc(NULL, json_array_size(frames), sizeof(*st->frames));
	json_array_foreach(frames, i, e)
	{
		if (!json_is_string(e) || parse_hex(json_string_value(e), &st->frames[i]) != 0) {
			free(st->frames);
			return key_error(r, lineno, "stack", "frames", -EINVAL,
					 "an array of hex strings");
		}
		st->nframes++;
	}
	t->nstacks++;
	return true;
}

static const char *const op_names[] = {
    [GMT_TOP_NONE] = "none",   [GMT_TOP_ALLOC] = "alloc",   [GMT_TOP_FREE] = "free",
    [GMT_TOP_RESET] = "reset", [GMT_TOP_RETAIN] = "retain", [GMT_TOP_USAGE] = "usage",
};

static bool
parse_op(const char *name, uint8_t *op)
{
	for (size_t i = GMT_TOP_NONE + 1; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
		if (strcmp(name, op_names[i]) == 0) {
			*op = (uint8_t)i;
			return true;
		}
	}
	return false;
}

/*
 * The kind, by op: an allocation must name one, a usage reading must name a reading kind, a free
 * or retain may name one (informational). A kind this reader does not know means the line is
 * from a newer tracer: its address space is unknown, so the line is reported and skipped.
 */
static bool
event_kind(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_event *ev)
{
	const char *kind;
	enum gmt_tkind k;
	int err;

	if (ev->op == GMT_TOP_RESET)
		return true;
	err = get_str(obj, "kind", &kind);
	if (err == -ENOENT && (ev->op == GMT_TOP_FREE || ev->op == GMT_TOP_RETAIN))
		return true;
	if (err)
		return key_error(r, lineno, "event", "kind", err, "a string");
	k = gmt_kind_parse(kind);
	if (k == GMT_TK_NONE && strcmp(kind, "none") == 0 && ev->op != GMT_TOP_ALLOC &&
	    ev->op != GMT_TOP_USAGE)
		return true;
	if (k == GMT_TK_NONE) {
		bad_line(r, lineno, "event with unknown kind \"%s\": line skipped", kind);
		return false;
	}
	if (gmt_kind_is_reading(k) != (ev->op == GMT_TOP_USAGE)) {
		bad_line(r, lineno, "%s event with kind \"%s\" (%s): line skipped",
			 op_names[ev->op], kind,
			 ev->op == GMT_TOP_USAGE ? "usage reads pool_reserve or graph_reserve"
						 : "only usage events carry it");
		return false;
	}
	ev->kind = (uint8_t)k;
	return true;
}

/* seq, ts, op, api, result, device: what every event has. */
static bool
event_common(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_event *ev)
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
	else if ((ev->op != GMT_TOP_FREE && ev->op != GMT_TOP_RETAIN) || err == -EINVAL)
		return key_error(r, lineno, "event", "device", err, "an integer");
	return true;
}

/* ptr, size and pool, whose presence depends on the op. */
static bool
event_ptr_size(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_event *ev)
{
	int err;

	if (ev->op == GMT_TOP_ALLOC || ev->op == GMT_TOP_FREE) {
		if ((err = get_hex(obj, "ptr", &ev->ptr)))
			return key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_TOP_ALLOC || ev->op == GMT_TOP_USAGE) {
		if ((err = get_u64(obj, "size", &ev->size)))
			return key_error(r, lineno, "event", "size", err, "an integer");
	} else if (ev->op == GMT_TOP_FREE) {
		err = get_u64(obj, "size", &ev->size);
		if (err == -EINVAL)
			return key_error(r, lineno, "event", "size", err, "an integer");
		if (err == 0)
			ev->flags |= GMT_TEV_SIZE;
	}
	if (ev->op == GMT_TOP_USAGE && ev->kind == GMT_TK_POOL_RESERVE) {
		if ((err = get_hex(obj, "pool", &ev->ptr)))
			return key_error(r, lineno, "event", "pool", err, "a hex string");
	}
	return true;
}

/* offset: the tracer writes an integer; a hex string is accepted as for every other number-like
 * handle value. */
static int
get_u64_or_hex(json_t *obj, const char *key, uint64_t *out)
{
	int err = get_u64(obj, key, out);

	return err == -EINVAL ? get_hex(obj, key, out) : err;
}

/* handle, offset, context, the failure's memory info and the stack: all optional. */
static bool
event_optional(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_event *ev)
{
	uint64_t u;
	int err;

	if ((err = get_hex(obj, "handle", &ev->handle)) == -EINVAL)
		return key_error(r, lineno, "event", "handle", err, "a hex string");
	if ((err = get_u64_or_hex(obj, "offset", &ev->offset)) == -EINVAL)
		return key_error(r, lineno, "event", "offset", err, "an integer");
	if ((err = get_u64(obj, "context", &ev->context)) == -EINVAL)
		return key_error(r, lineno, "event", "context", err, "an integer");
	if (ev->op == GMT_TOP_RETAIN) {
		/* The handle is "ptr"; a retain's "handle" is the address that was asked about. */
		if ((err = get_hex(obj, "ptr", &ev->ptr)))
			return key_error(r, lineno, "event", "ptr", err, "a hex string");
	}
	if (ev->op == GMT_TOP_ALLOC && get_u64(obj, "free_bytes", &ev->free_bytes) == 0 &&
	    get_u64(obj, "total_bytes", &ev->total_bytes) == 0)
		ev->flags |= GMT_TEV_MEMINFO;
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
event_names(struct reader *r, json_t *obj, size_t lineno, struct gmt_trace_event *ev)
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
		idx = intern(r->t, driver);
		if (idx < 0)
			goto full;
		ev->driver = (uint16_t)idx;
	}
	idx = intern(r->t, api);
	if (idx < 0)
		goto full;
	ev->api = (uint16_t)idx;
	return true;
full:
	bad_line(r, lineno, "too many distinct \"api\" names, event ignored");
	return false;
}

static bool
read_event(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_event ev = {.line = (uint32_t)lineno, .device = -1};

	if (!event_common(r, obj, lineno, &ev) || !event_kind(r, obj, lineno, &ev) ||
	    !event_ptr_size(r, obj, lineno, &ev) || !event_optional(r, obj, lineno, &ev) ||
	    !event_names(r, obj, lineno, &ev))
		return false;
	see_ts(r, ev.ts);
	if ((t->nevents & (t->nevents - 1)) == 0)
		t->events =
		    xrealloc(t->events, t->nevents ? t->nevents * 2 : 64, sizeof(*t->events));
	t->events[t->nevents++] = ev;
	return true;
}

static bool
read_marker(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_marker m = {.line = (uint32_t)lineno};
	const char *label;
	int err;

	if ((err = get_u64(obj, "seq", &m.seq)))
		return key_error(r, lineno, "marker", "seq", err, "an integer");
	if ((err = get_u64(obj, "ts", &m.ts)))
		return key_error(r, lineno, "marker", "ts", err, "an integer");
	if ((err = get_str(obj, "label", &label)))
		return key_error(r, lineno, "marker", "label", err, "a string");
	m.label = xstrdup(label);
	see_ts(r, m.ts);
	t->markers = xrealloc(t->markers, t->nmarkers + 1, sizeof(*t->markers));
	t->markers[t->nmarkers++] = m;
	return true;
}

/* One element of a snapshot's "nvml" array; false when it is malformed. */
static bool
nvml_entry(json_t *e, struct gmt_trace_nvml *n)
{
	long long dev, index = -1;
	json_t *pu;

	if (!json_is_object(e) || get_i64(e, "device", &dev) || dev < INT32_MIN ||
	    dev > INT32_MAX || get_u64(e, "total", &n->total) || get_u64(e, "used", &n->used))
		return false;
	if (get_i64(e, "index", &index) == -EINVAL)
		return false;
	n->device = (int32_t)dev;
	n->index = index >= 0 && index <= INT32_MAX ? (int32_t)index : -1;
	/* null is a statement ("NVML does not say"), not a missing key; both mean no figure. */
	pu = json_object_get(e, "process_used");
	if (pu && !json_is_null(pu)) {
		if (get_u64(e, "process_used", &n->process_used))
			return false;
		n->has_process_used = true;
	}
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
	t->nvml = xrealloc(t->nvml, n0 + json_array_size(a), sizeof(*t->nvml));
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
	uint64_t dropped;
	int err;

	if ((err = get_u64(obj, "ts", &proto.ts)))
		return key_error(r, lineno, "snapshot", "ts", err, "an integer");
	if ((err = get_u64(obj, "dropped", &dropped)))
		return key_error(r, lineno, "snapshot", "dropped", err, "an integer");
	err = get_u64(obj, "seq", &proto.seq);
	if (err == -EINVAL)
		return key_error(r, lineno, "snapshot", "seq", err, "an integer");
	proto.has_seq = err == 0;
	if (!read_nvml(r, obj, lineno, &proto))
		return false;
	see_ts(r, proto.ts);
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
	if ((err = get_u64(obj, "events", &events)))
		return key_error(r, lineno, "trailer", "events", err, "an integer");
	if ((err = get_u64(obj, "dropped", &dropped)))
		return key_error(r, lineno, "trailer", "dropped", err, "an integer");
	if (get_u64(obj, "ts", &ts) == 0)
		see_ts(r, ts);
	t->complete = true;
	t->trailer_events = events;
	t->dropped = dropped;
	return true;
}

static void
read_line(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	json_error_t jerr;
	json_t *obj;
	const char *type;
	bool used = false;

	obj = json_loadb(buf, len, 0, &jerr);
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
	if (get_str(obj, "type", &type) != 0) {
		bad_line(r, lineno, "line without \"type\"");
		goto out;
	}
	if (strcmp(type, "event") == 0)
		used = read_event(r, obj, lineno);
	else if (strcmp(type, "stack") == 0)
		used = read_stack(r, obj, lineno);
	else if (strcmp(type, "marker") == 0)
		used = read_marker(r, obj, lineno);
	else if (strcmp(type, "snapshot") == 0)
		used = read_snapshot(r, obj, lineno);
	else if (strcmp(type, "header") == 0)
		used = read_header(r, obj, lineno);
	else if (strcmp(type, "trailer") == 0)
		used = read_trailer(r, obj, lineno);
	/*
	 * Other types are ignored without a word: the architecture plans more line types (module,
	 * python-code) and adding one is not a format change.
	 */
	if (used)
		r->usable++;
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

enum gmt_trace_status
gmt_trace_read(const char *path, FILE *diag, struct gmt_trace **out)
{
	struct gmt_trace *t;
	struct reader r = {.diag = diag};
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int read_errno = 0;

	*out = NULL;
	f = fopen(path, "r");
	if (!f) {
		fprintf(diag, "%s: cannot open: %s\n", path, strerror(errno));
		return GMT_TRACE_UNREADABLE;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		fclose(f);
		fprintf(diag, "%s: out of memory\n", path);
		return GMT_TRACE_UNREADABLE;
	}
	r.t = t;
	t->path = xstrdup(path);
	t->pid = t->ppid = t->forked_from = -1;
	t->rank = t->local_rank = t->world_size = -1;

	errno = 0;
	while ((n = getline(&buf, &cap, f)) >= 0) {
		size_t len = (size_t)n;

		t->lines++;
		if (len == 0 || buf[len - 1] != '\n') {
			/*
			 * getline() only returns a line without its '\n' at the end of the file:
			 * the writer was killed in the middle of a write. The format says to ignore
			 * it.
			 */
			t->torn = true;
			fprintf(diag,
				"%s:%zu: note: last line is incomplete (torn write), ignored\n",
				path, t->lines);
			break;
		}
		len--;
		if (len && buf[len - 1] == '\r')
			len--;
		read_line(&r, buf, len, t->lines);
		if (r.refused)
			break;
		errno = 0;
	}
	if (ferror(f))
		read_errno = errno ? errno : EIO;
	free(buf);
	fclose(f);

	if (r.shown < t->bad_lines)
		fprintf(diag, "%s: %zu more bad lines not shown\n", path, t->bad_lines - r.shown);
	if (read_errno) {
		fprintf(diag, "%s: read error: %s\n", path, strerror(read_errno));
		r.refused = true;
	} else if (!r.refused && !t->have_header && r.usable == 0) {
		if (t->lines == 0)
			fprintf(diag, "%s: empty file, not a trace\n", path);
		else
			fprintf(diag, "%s: no header and no usable line, not a trace\n", path);
		r.refused = true;
	}
	if (r.refused) {
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	if (!t->have_header) {
		fprintf(diag, "%s: note: no header line; read as format version %d\n", path,
			GMT_FORMAT_VERSION);
		t->version = GMT_FORMAT_VERSION;
		t->start_ts = r.have_min_ts ? r.min_ts : 0;
	} else if (!r.have_start_ts && r.have_min_ts) {
		t->start_ts = r.min_ts;
	}

	/* The writer emits lines in drain order; what happened is the seq order. */
	if (t->nevents > 1)
		qsort(t->events, t->nevents, sizeof(*t->events), cmp_event);
	if (t->nmarkers > 1)
		qsort(t->markers, t->nmarkers, sizeof(*t->markers), cmp_marker);
	if (t->nstacks > 1)
		qsort(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack);
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
	for (size_t i = 0; i < t->ncapture; i++)
		free(t->capture[i]);
	free(t->capture);
	free(t->nvml);
	free(t->events);
	for (size_t i = 0; i < t->nmarkers; i++)
		free(t->markers[i].label);
	free(t->markers);
	for (size_t i = 0; i < t->nstacks; i++)
		free(t->stacks[i].frames);
	free(t->stacks);
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

double
gmt_trace_time_s(const struct gmt_trace *t, uint64_t ts)
{
	if (ts >= t->start_ts)
		return (double)(ts - t->start_ts) / 1e9;
	return -(double)(t->start_ts - ts) / 1e9;
}
