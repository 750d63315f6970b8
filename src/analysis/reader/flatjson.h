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
 * error messages. Reading a line allocates nothing: strings are NUL-terminated in place in the
 * caller's copy of the line.
 */
#ifndef GMT_READER_FLATJSON_H
#define GMT_READER_FLATJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	long long num;	 /**< GMT_FLAT_INT; GMT_FLAT_PAIR: the first */
	long long num2;	 /**< GMT_FLAT_PAIR: the second */
	enum gmt_flat_type type;
};

#define GMT_FLAT_INDEX 128 /* open addressing over the keys: a power of two > 2 x GMT_FLAT_MAX */

struct gmt_flat {
	struct gmt_flat_value v[GMT_FLAT_MAX];
	size_t n;
	uint8_t index[GMT_FLAT_INDEX]; /**< v's position + 1 by a hash of the key; 0 empty */
};

/**
 * Parse the @p len bytes at @p buf (modified: strings are cut out in place) into @p out. False
 * when the line is not of the simple shape, and then @p out means nothing.
 */
bool gmt_flat_parse(char *buf, size_t len, struct gmt_flat *out);

/* The index's hash: the format's keys differ in length, first or last letter. */
static inline size_t
gmt_flat_hash(const char *key, size_t len)
{
	return (len * 31u + (unsigned char)key[0] * 7u + (unsigned char)key[len ? len - 1 : 0]) &
	       (GMT_FLAT_INDEX - 1);
}

/**
 * The value of @p key (the last occurrence), or NULL when the object has no such key. Inline: a
 * key given as a literal has its length and hash folded at compile time (it is called ~15 times
 * per event line).
 */
static inline const struct gmt_flat_value *
gmt_flat_get(const struct gmt_flat *f, const char *key)
{
	size_t len = __builtin_strlen(key);

	for (size_t h = gmt_flat_hash(key, len); f->index[h]; h = (h + 1) & (GMT_FLAT_INDEX - 1)) {
		const struct gmt_flat_value *v = &f->v[f->index[h] - 1];

		if (v->klen == len && __builtin_memcmp(v->key, key, len) == 0)
			return v;
	}
	return NULL;
}

#endif
