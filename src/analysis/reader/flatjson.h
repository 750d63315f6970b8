/*
 * @brief A fast reader for the one shape most trace lines have: a flat JSON object whose values
 * are integers, plain strings, null or a pair of integers `[a,b]` (every `event` line the tracer
 * writes, and `block` lines, whose pool id is such a pair).
 *
 * The trace reader tries it first for event lines and falls back to jansson for anything it
 * declines: nested values, numbers with a fraction or exponent, strings with escapes or non-ASCII
 * bytes, true/false, more than GMT_FLAT_MAX keys, trailing bytes. It accepts only what jansson
 * accepts and reads it the same way (an array of any other shape is declined) (the last of
 * duplicate keys wins), so a line means the same whichever path read it; the jansson path gives the
 * error messages. One exception: an integer from 2^63 to 2^64 - 1, which jansson refuses (too big
 * integer), is read (`big`): the tracer writes a failed allocation's size as it was asked, and
 * `cudaMalloc(&p, (size_t)-1)` asks for 2^64 - 1 bytes. The jansson path hands a line it refuses
 * so to this reader (dispatch.c), so such a line still means the same on either path. Reading a
 * line allocates nothing: strings are NUL-terminated in place in the caller's copy of the line.
 */
#ifndef GMT_READER_FLATJSON_H
#define GMT_READER_FLATJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GMT_FLAT_MAX 40

enum gmt_flat_type {
	GMT_FLAT_NULL = 0,
	GMT_FLAT_INT,
	GMT_FLAT_STR,
	GMT_FLAT_PAIR, /**< [num, num2] */
};

struct gmt_flat_value {
	const char *key;
	size_t klen;
	const char *str; /**< GMT_FLAT_STR */
	size_t slen;	 /**< GMT_FLAT_STR: str's length */
	long long num;	 /**< GMT_FLAT_INT; GMT_FLAT_PAIR: the first */
	long long num2;	 /**< GMT_FLAT_PAIR: the second */
	enum gmt_flat_type type;
	bool big; /**< GMT_FLAT_INT past LLONG_MAX: num holds it as (long long)(uint64_t) */
};

/*
 * The keys of event and block lines (docs/trace-format.md), each with a slot of its own: a line's
 * keys are found by one switch when it is parsed, and a lookup of a key given as a literal folds
 * to one array read (the reader looks up ~15 keys per event line). Any other key is kept too,
 * found by a scan (the last occurrence wins, as in jansson, for both).
 */
enum gmt_flat_key {
	GMT_FK_TYPE,
	GMT_FK_SEQ,
	GMT_FK_TS,
	GMT_FK_TID,
	GMT_FK_OP,
	GMT_FK_API,
	GMT_FK_DRIVER,
	GMT_FK_KIND,
	GMT_FK_DEVICE,
	GMT_FK_CONTEXT,
	GMT_FK_STREAM,
	GMT_FK_PTR,
	GMT_FK_SIZE,
	GMT_FK_RESULT,
	GMT_FK_STACK,
	GMT_FK_HANDLE,
	GMT_FK_OFFSET,
	GMT_FK_REQUESTED,
	GMT_FK_FREE_BYTES,
	GMT_FK_TOTAL_BYTES,
	GMT_FK_POOL,
	GMT_FK_ACTION,
	GMT_FK_POOL_TYPE,
	GMT_FK_DEVICE_FREE,
	GMT_FK_COUNT,
	GMT_FK_OTHER = GMT_FK_COUNT,
};

struct gmt_flat {
	struct gmt_flat_value v[GMT_FLAT_MAX];
	size_t n;
	uint8_t known[GMT_FK_COUNT]; /**< v's position + 1 of each known key; 0 absent */
	bool other;		     /**< some key is not a known one */
};

/**
 * Parse the @p len bytes at @p buf (modified: strings are cut out in place) into @p out. False
 * when the line is not of the simple shape, and then @p out means nothing.
 */
bool gmt_flat_parse(char *buf, size_t len, struct gmt_flat *out);

/** Which known key @p key (@p len bytes) is, GMT_FK_OTHER none. */
static inline __attribute__((always_inline)) enum gmt_flat_key
gmt_flat_key(const char *key, size_t len)
{
#define GMT_FK_IS(lit) (len == sizeof(lit) - 1 && __builtin_memcmp(key, lit, len) == 0)
	switch (len) {
	case 2: return GMT_FK_IS("ts") ? GMT_FK_TS : GMT_FK_IS("op") ? GMT_FK_OP : GMT_FK_OTHER;
	case 3:
		return GMT_FK_IS("seq")	  ? GMT_FK_SEQ
		       : GMT_FK_IS("tid") ? GMT_FK_TID
		       : GMT_FK_IS("api") ? GMT_FK_API
		       : GMT_FK_IS("ptr") ? GMT_FK_PTR
					  : GMT_FK_OTHER;
	case 4:
		return GMT_FK_IS("type")   ? GMT_FK_TYPE
		       : GMT_FK_IS("kind") ? GMT_FK_KIND
		       : GMT_FK_IS("size") ? GMT_FK_SIZE
		       : GMT_FK_IS("pool") ? GMT_FK_POOL
					   : GMT_FK_OTHER;
	case 5: return GMT_FK_IS("stack") ? GMT_FK_STACK : GMT_FK_OTHER;
	case 6:
		return GMT_FK_IS("driver")   ? GMT_FK_DRIVER
		       : GMT_FK_IS("device") ? GMT_FK_DEVICE
		       : GMT_FK_IS("stream") ? GMT_FK_STREAM
		       : GMT_FK_IS("result") ? GMT_FK_RESULT
		       : GMT_FK_IS("handle") ? GMT_FK_HANDLE
		       : GMT_FK_IS("offset") ? GMT_FK_OFFSET
		       : GMT_FK_IS("action") ? GMT_FK_ACTION
					     : GMT_FK_OTHER;
	case 7: return GMT_FK_IS("context") ? GMT_FK_CONTEXT : GMT_FK_OTHER;
	case 9:
		return GMT_FK_IS("requested")	? GMT_FK_REQUESTED
		       : GMT_FK_IS("pool_type") ? GMT_FK_POOL_TYPE
						: GMT_FK_OTHER;
	case 10: return GMT_FK_IS("free_bytes") ? GMT_FK_FREE_BYTES : GMT_FK_OTHER;
	case 11:
		return GMT_FK_IS("total_bytes")	  ? GMT_FK_TOTAL_BYTES
		       : GMT_FK_IS("device_free") ? GMT_FK_DEVICE_FREE
						  : GMT_FK_OTHER;
	default: return GMT_FK_OTHER;
	}
#undef GMT_FK_IS
}

/**
 * The value of @p key (the last occurrence), or NULL when the object has no such key. Inline: a
 * known key given as a literal folds to its slot (it is called ~15 times per event line).
 */
static inline __attribute__((always_inline)) const struct gmt_flat_value *
gmt_flat_get(const struct gmt_flat *f, const char *key)
{
	size_t len = __builtin_strlen(key);
	enum gmt_flat_key k = gmt_flat_key(key, len);

	if (k != GMT_FK_OTHER)
		return f->known[k] ? &f->v[f->known[k] - 1] : NULL;
	if (!f->other)
		return NULL;
	for (size_t i = f->n; i-- > 0;)
		if (f->v[i].klen == len && __builtin_memcmp(f->v[i].key, key, len) == 0)
			return &f->v[i];
	return NULL;
}

/** Whether @p v is the string @p lit (a literal: its length folds, one compare of that many
 * bytes instead of strcmp()'s scan). */
static inline __attribute__((always_inline)) bool
gmt_flat_str_is(const struct gmt_flat_value *v, const char *lit)
{
	size_t len = __builtin_strlen(lit);

	return v && v->type == GMT_FLAT_STR && v->slen == len &&
	       __builtin_memcmp(v->str, lit, len) == 0;
}

/*
 * @p n bytes at @p a and @p b equal: a few word loads, overlapping at the end, never past the n
 * bytes; the branches follow n (the same at a key's position line after line, and for a call
 * name read again and again). The flat reader's remembered keys and the reader's name cache.
 */
static inline bool
gmt_same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y, diff = 0;
	uint32_t u, w;
	uint16_t h, g;

	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8) {
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			diff |= x ^ y;
		}
		memcpy(&x, a + n - 8, 8);
		memcpy(&y, b + n - 8, 8);
		return (diff | (x ^ y)) == 0;
	}
	if (n >= 4) {
		memcpy(&u, a, 4), memcpy(&w, b, 4);
		diff = u ^ w;
		memcpy(&u, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
		return (diff | (u ^ w)) == 0;
	}
	if (n < 2)
		return n == 0 || a[0] == b[0];
	memcpy(&h, a, 2), memcpy(&g, b, 2);
	diff = h ^ g;
	memcpy(&h, a + n - 2, 2), memcpy(&g, b + n - 2, 2);
	return (diff | (uint16_t)(h ^ g)) == 0;
}

#endif
