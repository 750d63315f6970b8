/*
 * @brief The trace reader's lines that name things: stack, modules, pycode and pyinfo lines, and
 * the stacks and Python code settled at the end (reader_int.h).
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

/* @p size bytes of the stacks' memory; NULL (and the read stops) out of memory. */
static void *
stack_mem(struct reader *r, size_t size)
{
	void *p = gmt_trace_mem(r->t, size);

	if (!p)
		rd_nomem(r);
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
		if (!hash || !rd_resize(r, &t->addresses, cap / 2, sizeof(*t->addresses))) {
			free(hash);
			rd_nomem(r);
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
		if (!rd_resize(r, &r->stack_addrs, n > 64 ? n : 64, sizeof(*r->stack_addrs)))
			return false;
		r->stack_addrs_cap = n > 64 ? n : 64;
	}
	if (n > GMT_TRACE_MAX_PYFRAMES)
		n = GMT_TRACE_MAX_PYFRAMES;
	if (r->stack_py_cap < n) {
		if (!rd_resize(r, &r->stack_py, n > 64 ? n : 64, sizeof(*r->stack_py)))
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
	/* A second line with the same id is found once all are read (rd_settle_stacks()). */
	if ((t->nstacks & (t->nstacks - 1)) == 0 &&
	    !rd_resize(r, &t->stacks, t->nstacks ? t->nstacks * 2 : 16, sizeof(*t->stacks)))
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
		rd_note_line(r, lineno, "stack %u with unknown \"pystate\" \"%s\", ignored", st->id,
			     state);
}

static void
end_stack(struct reader *r, size_t lineno, struct gmt_trace_stack *st)
{
	if (st->cut)
		rd_note_line(r, lineno,
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
		rd_bad_line(
		    r, lineno,
		    "stack %u with bad \"py\" (expected [[code_id, instr_offset, 0 or 1], ...]): "
		    "its Python frames are ignored",
		    st->id);
	err = rd_get_str(JS(obj), "pystate", &state);
	if (err == -EINVAL)
		rd_bad_line(r, lineno, "stack %u with bad \"pystate\" (expected a string), ignored",
			    st->id);
	else if (err == 0)
		stack_pystate(r, lineno, st, state);
}

bool
rd_read_stack(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace_stack *st;
	json_t *frames, *e;
	uint64_t id, addr;
	size_t i, n;
	int err;

	err = rd_get_u64(JS(obj), "id", &id);
	if (err || id == 0 || id > UINT32_MAX)
		return rd_key_error(r, lineno, "stack", "id", err ? err : -EINVAL,
				    "a positive integer");
	frames = json_object_get(obj, "frames");
	if (!frames)
		return rd_key_error(r, lineno, "stack", "frames", -ENOENT, "");
	if (!json_is_array(frames))
		return rd_key_error(r, lineno, "stack", "frames", -EINVAL,
				    "an array of hex strings");
	/* Every frame is checked; the innermost GMT_TRACE_MAX_FRAMES are kept. */
	n = json_array_size(frames);
	if (!stack_room(r, n))
		return false;
	json_array_foreach(frames, i, e)
	{
		if (!json_is_string(e) || rd_parse_hex(json_string_value(e), &addr) != 0)
			return rd_key_error(r, lineno, "stack", "frames", -EINVAL,
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
				return rd_nomem(r); /* declined: the slow path stops on it too */
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
				return rd_nomem(r);
			r->stack_py[*n] = (struct gmt_trace_pyframe){code, offset, entry == 1};
		}
		(*n)++;
	} while (scan_char(s, ','));
	return scan_char(s, ']');
}

bool
rd_read_stack_fast(struct reader *r, const char *buf, size_t len, size_t lineno)
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
	rd_lead_end(r, lineno); /* a stack line shows the file is a trace, as on the slow path */
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

/* Decode a hex string into a new buffer; NULL when it is not whole bytes of hex. */
static uint8_t *
hex_decode(struct reader *r, const char *s, size_t *n)
{
	size_t len = strlen(s);
	uint8_t *d = gmt_realloc_array(NULL, len / 2, 1);
	ssize_t got;

	if (!d) {
		rd_nomem(r);
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
	    !rd_resize(r, &t->modules, t->nmodules ? t->nmodules * 2 : 64, sizeof(*t->modules)))
		goto err_nomem;
	t->modules[t->nmodules] = *m;
	r->modhash[slot] = (uint32_t)t->nmodules + 1;
	return (uint32_t)t->nmodules++;

err_nomem: /* the entry goes; the caller stops on r->nomem */
	rd_nomem(r);
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

	if (n % 2 || !(d = rd_dup_str(r, s)))
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

	if (!json_is_object(e) || rd_get_str(JS(e), "path", &path) ||
	    rd_get_hex(JS(e), "base", &m->base) || rd_get_str(JS(e), "build_id", &bid))
		return false;
	segs = json_object_get(e, "segments");
	if (!json_is_array(segs))
		return false;
	if (!(m->segments = gmt_realloc_array(NULL, json_array_size(segs), sizeof(*m->segments))))
		return rd_nomem(r);
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
	if (!(m->path = rd_dup_str(r, path))) {
		free(m->build_id);
		free(m->segments);
		return false;
	}
	/* a path that is not UTF-8, byte for byte (docs/trace-format.md, "modules") */
	if (rd_get_str(JS(e), "path_hex", &hex) != -ENOENT) {
		size_t n = 0;
		uint8_t *bytes = hex ? hex_decode(r, hex, &n) : NULL, *file = NULL;

		if (bytes && n && !memchr(bytes, '\0', n) &&
		    !(file = gmt_realloc_array(bytes, n + 1, 1)))
			rd_nomem(r);
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
bool
rd_read_modules(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_modset ms = {.line = (uint32_t)lineno};
	json_t *a, *e;
	size_t i, bad = 0, first_bad = 0;
	int err;

	if ((err = rd_get_u64(JS(obj), "seq", &ms.seq)) == -EINVAL)
		return rd_key_error(r, lineno, "modules", "seq", err, "an integer");
	a = json_object_get(obj, "modules");
	if (!a)
		return rd_key_error(r, lineno, "modules", "modules", -ENOENT, "");
	if (!json_is_array(a))
		return rd_key_error(r, lineno, "modules", "modules", -EINVAL, "an array");
	if (!(ms.mods = gmt_realloc_array(NULL, json_array_size(a), sizeof(*ms.mods))))
		return rd_nomem(r);
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
	if (r->nomem || !rd_resize(r, &t->modsets, t->nmodsets + 1, sizeof(*t->modsets))) {
		free(ms.mods);
		return false;
	}
	if (bad)
		rd_bad_line(r, lineno,
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
	int err = rd_get_str(JS(obj), key, &s);

	if (err == -EINVAL)
		return false;
	*out = err ? NULL : rd_dup_str(r, s);
	return !r->nomem;
}

bool
rd_read_pycode(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	struct gmt_trace_pycode c = {.line = (uint32_t)lineno};
	const char *table;
	uint64_t id;
	long long first;
	int err;

	err = rd_get_u64(JS(obj), "id", &id);
	if (err || id > UINT32_MAX)
		return rd_key_error(r, lineno, "pycode", "id", err ? err : -EINVAL, "an integer");
	if ((err = rd_get_i64(JS(obj), "firstlineno", &first)) || first < 0 || first > INT32_MAX)
		return rd_key_error(r, lineno, "pycode", "firstlineno", err ? err : -EINVAL,
				    "a non-negative integer");
	if ((err = rd_get_str(JS(obj), "linetable", &table)))
		return rd_key_error(r, lineno, "pycode", "linetable", err, "a hex string");
	c.id = (uint32_t)id;
	c.firstlineno = (int)first;
	c.linetable = hex_decode(r, table, &c.nlinetable);
	if (!c.linetable)
		return rd_key_error(r, lineno, "pycode", "linetable", -EINVAL, "a hex string");
	if (!opt_str(r, obj, "file", &c.file) || !opt_str(r, obj, "name", &c.name) ||
	    !opt_str(r, obj, "qualname", &c.qualname) || !opt_str(r, obj, "python", &c.python) ||
	    ((t->npycodes & (t->npycodes - 1)) == 0 &&
	     !rd_resize(r, &t->pycodes, t->npycodes ? t->npycodes * 2 : 16, sizeof(*t->pycodes)))) {
		free(c.file);
		free(c.name);
		free(c.qualname);
		free(c.python);
		free(c.linetable);
		rd_bad_line(r, lineno, "pycode with a non-string file, name, qualname or python");
		return false;
	}
	t->pycodes[t->npycodes++] = c;
	return true;
}

/* Python was found after the header was written (libpython loaded later): the last one counts. */
bool
rd_read_pyinfo(struct reader *r, json_t *obj, size_t lineno)
{
	struct gmt_trace *t = r->t;
	const char *v;
	int err = rd_get_str(JS(obj), "python", &v);

	if (err == -EINVAL)
		return rd_key_error(r, lineno, "pyinfo", "python", err, "a string or null");
	free(t->python);
	t->python = err ? NULL : rd_dup_str(r, v);
	return true;
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
void
rd_settle_stacks(struct reader *r)
{
	struct gmt_trace *t = r->t;
	size_t k = 0;

	if (t->nstacks > 1)
		qsort(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack_line);
	for (size_t i = 0; i < t->nstacks; i++) {
		if (k && t->stacks[k - 1].id == t->stacks[i].id) {
			rd_bad_line(r, t->stacks[i].line, "stack %u defined twice, ignored",
				    t->stacks[i].id);
			continue; /* its frame lists stay in the trace's blocks, unused */
		}
		t->stacks[k++] = t->stacks[i];
	}
	t->nstacks = k;
	/* Reading doubled both lists as they grew: give back what no stack will use. */
	rd_shrink(&t->stacks, k, sizeof(*t->stacks));
	rd_shrink(&t->addresses, t->naddresses, sizeof(*t->addresses));
}

static int
cmp_pycode(const void *pa, const void *pb)
{
	const struct gmt_trace_pycode *a = pa, *b = pb;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/*
 * Sort the pycode lines by id and keep the first of each id (a second one is a tracer bug,
 * reported); then say once per stack which Python frames name a code no line defines (they are
 * shown as unknown code).
 */
void
rd_settle_pycodes(struct reader *r)
{
	struct gmt_trace *t = r->t;
	size_t k = 0;

	if (t->npycodes > 1)
		qsort(t->pycodes, t->npycodes, sizeof(*t->pycodes), cmp_pycode);
	for (size_t i = 0; i < t->npycodes; i++) {
		if (k && t->pycodes[k - 1].id == t->pycodes[i].id) {
			rd_bad_line(r, t->pycodes[i].line, "pycode %u defined twice, ignored",
				    t->pycodes[i].id);
			rd_pycode_free(&t->pycodes[i]);
			continue;
		}
		t->pycodes[k++] = t->pycodes[i];
	}
	t->npycodes = k;
	for (size_t i = 0; i < t->nstacks; i++) {
		const struct gmt_trace_stack *st = &t->stacks[i];

		for (uint32_t f = 0; f < st->npy; f++) {
			if (!gmt_trace_pycode(t, st->py[f].code)) {
				rd_note_line(r, st->line,
					     "stack %u names Python code %u, which no pycode line "
					     "defines",
					     st->id, st->py[f].code);
				break;
			}
		}
	}
}
