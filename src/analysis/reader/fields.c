/*
 * @brief The trace reader's messages about lines and typed access to their keys (reader_int.h).
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

void __attribute__((format(printf, 3, 4)))
rd_bad_line(struct reader *r, size_t lineno, const char *fmt, ...)
{
	va_list ap;

	if (!r) /* a line read ahead of its turn (pipeline.c): it is read again then, and said */
		return;
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
void __attribute__((format(printf, 3, 4)))
rd_note_line(struct reader *r, size_t lineno, const char *fmt, ...)
{
	va_list ap;

	if (r->nomem || r->shown >= GMT_TRACE_MAX_DIAG)
		return;
	r->shown++;
	va_start(ap, fmt);
	line_message(r, lineno, "note: ", fmt, ap);
	va_end(ap);
}

/* The format writes every pointer as "0x" + hex digits so 64-bit values survive JSON. */
int
rd_parse_hex(const char *s, uint64_t *out)
{
	return gmt_hex_u64(s, strlen(s), out) ? 0 : -EINVAL;
}

/* Report a required key that get_*() rejected; false, so callers can return its result. */
/* A pair of integers [a, b] (a block line's pool id). */
int
rd_get_pair(struct src obj, const char *key, uint64_t out[2])
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
bool
rd_get_true(struct src obj, const char *key)
{
	return obj.json && json_is_true(json_object_get(obj.json, key));
}

bool
rd_key_error(struct reader *r,
	     size_t lineno,
	     const char *type,
	     const char *key,
	     int err,
	     const char *expected)
{
	if (err == -ENOENT)
		rd_bad_line(r, lineno, "%s without \"%s\"", type, key);
	else
		rd_bad_line(r, lineno, "%s with bad \"%s\" (expected %s)", type, key, expected);
	return false;
}

/*
 * Out of memory: the read stops after this line and the file is unreadable ("out of memory"),
 * so what the line had taken only needs to be freeable. Returns false, for `return rd_nomem(r)`.
 */
bool
rd_nomem(struct reader *r)
{
	r->nomem = true;
	return false;
}

void
rd_refuse(struct reader *r, size_t lineno, const char *why)
{
	if (lineno)
		fprintf(r->diag, "%s:%zu: %s\n", r->epath, lineno, why);
	else
		fprintf(r->diag, "%s: %s\n", r->epath, why);
	if (!r->refuse_why[0])
		snprintf(r->refuse_why, sizeof(r->refuse_why), "%s", why);
	r->refused = true;
}

/* strdup() of @p s; NULL (and the read stops) out of memory. */
char *
rd_dup_str(struct reader *r, const char *s)
{
	char *d = strdup(s);

	if (!d)
		rd_nomem(r);
	return d;
}

/* An array of @p n elements with room for more, cut to @p n (kept as it is when that fails: the
 * room is only slack). */
void
rd_shrink(void *pp, size_t n, size_t size)
{
	void *q = n ? gmt_realloc_array(*(void **)pp, n, size) : NULL;

	if (q)
		*(void **)pp = q;
}

/* realloc(*@p pp, @p n * @p size); false (*@p pp untouched, the read stops) out of memory. */
bool
rd_resize(struct reader *r, void *pp, size_t n, size_t size)
{
	void *q = gmt_realloc_array(*(void **)pp, n, size);

	if (!q)
		return rd_nomem(r);
	*(void **)pp = q;
	return true;
}

void
rd_see_ts(struct reader *r, uint64_t ts)
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
int
rd_intern(struct reader *r, const char *s)
{
	return rd_intern_hashed(r, s, rd_name_key(s));
}

/* Remember string @p i in @p slot under @p key, when the string has the key's length (a name
 * with a NUL inside is stored up to it: the scan's strcmp() finds it, the cache never does). */
static void
cache_name(struct gmt_trace *t, size_t i, uint64_t key, size_t slot)
{
	if (i >= UINT16_MAX - 1 || strlen(t->strings[i]) != (size_t)(key >> 32))
		return;
	t->string_cache[slot].key = key;
	t->string_cache[slot].index1 = (uint16_t)(i + 1);
}

int
rd_intern_hashed(struct reader *r, const char *s, uint64_t key)
{
	struct gmt_trace *t = r->t;
	/* a direct-mapped cache in front of the scan: a trace names a few dozen calls, each often
	 */
	size_t slot = (uint32_t)key & 255;
	unsigned idx1 = t->string_cache[slot].index1;

	if (idx1 && t->string_cache[slot].key == key &&
	    gmt_same_bytes(t->strings[idx1 - 1], s, (size_t)(key >> 32)))
		return (int)idx1 - 1;
	for (size_t i = 0; i < t->nstrings; i++) {
		if (strcmp(t->strings[i], s) == 0) {
			cache_name(t, i, key, slot);
			return (int)i;
		}
	}
	/* UINT16_MAX itself stays free: it is GMT_TRACE_NO_STRING. */
	if (t->nstrings >= UINT16_MAX)
		return -1;
	rd_sink_sync(r); /* the strings move */
	if (!rd_resize(r, &t->strings, t->nstrings + 1, sizeof(*t->strings)) ||
	    !(t->strings[t->nstrings] = rd_dup_str(r, s)))
		return -1;
	cache_name(t, t->nstrings, key, slot);
	return (int)t->nstrings++;
}
