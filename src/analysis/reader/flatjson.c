/*
 * @brief The flat-object JSON reader (flatjson.h).
 *
 * One pass over the bytes: `{`, then `"key":value` pairs separated by commas, then `}` and
 * nothing but whitespace. Anything outside that grammar returns false at once; the caller then
 * hands the line to jansson, which either reads it (an escape, a nested value) or says what is
 * wrong with it.
 */
#include "analysis/reader/flatjson.h"

#include <limits.h>
#include <string.h>
#ifdef __SSE2__
#	include <emmintrin.h>
#endif

/* Bytes that end the fast scans: whitespace for skip_ws(); for plain_string(), the closing
 * quote and what it declines (an escape, a control byte, a byte of a multi-byte character). */
enum { WS = 1, STR_END = 2 };

static const unsigned char byte_class[256] = {
    [0x00 ... 0x08] = STR_END,
    ['\t'] = WS | STR_END,
    ['\n'] = WS | STR_END,
    [0x0b ... 0x0c] = STR_END,
    ['\r'] = WS | STR_END,
    [0x0e ... 0x1f] = STR_END,
    [' '] = WS,
    ['"'] = STR_END,
    ['\\'] = STR_END,
    [0x80 ... 0xff] = STR_END,
};

/* Inline, as the scans below: it runs four times a key, and the tracer's lines have no whitespace,
 * which one compare tells (a call and a table lookup per byte cost more than that). */
static inline __attribute__((always_inline)) const char *
skip_ws(const char *p, const char *end)
{
	if (__builtin_expect(p < end && (unsigned char)*p <= ' ', 0))
		while (p < end && (byte_class[(unsigned char)*p] & WS))
			p++;
	return p;
}

#ifdef __SSE2__
/*
 * Where the 16 bytes at @p p first hold a byte plain_string() stops at (a quote, a backslash, a
 * control or non-ASCII byte): 0-15, 16 none. One signed compare takes both control bytes and
 * bytes >= 0x80 (negative as signed chars). A trace's strings are names and addresses of 3-16
 * bytes, which a byte-at-a-time scan ends at a mispredicted branch each.
 */
static inline unsigned
string_stop16(const char *p)
{
	const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
						       _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
					  _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));

	return (unsigned)__builtin_ctz((unsigned)_mm_movemask_epi8(stop) | 0x10000u);
}
#endif

/* A string without escapes, control or non-ASCII bytes: NUL-terminated in place, its length in
 * *@p n. */
static inline __attribute__((always_inline)) char *
plain_string(char *p, const char *end, const char **out, size_t *n)
{
	char *s = ++p; /* after the opening quote */

#ifdef __SSE2__
	for (unsigned k; end - p >= 16; p += 16) {
		if ((k = string_stop16(p)) < 16) {
			p += k;
			goto stop;
		}
	}
#endif
	while (p < end && !(byte_class[(unsigned char)*p] & STR_END))
		p++;
#ifdef __SSE2__
stop:
#endif
	if (p < end && *p == '"') {
		*p = '\0';
		*out = s;
		*n = (size_t)(p - s);
		return p + 1;
	}
	return NULL;
}

#ifdef __SSE2__
/* How many of the 16 bytes at @p p are decimal digits before the first that is not: 0-16. */
static inline unsigned
digit_run16(const char *p)
{
	const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
					    _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));

	return (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(digit) | 0x10000u);
}

/*
 * The value of the @p n digits (1-8) at @p p, 8 bytes readable there: the digits, less '0', as
 * the low bytes of a word (the first in the lowest), shifted up so that the missing ones read
 * as leading zeros, then pairs, fours and eights of them combined in three multiplies. No lane
 * overflows: 9 * 10 + 9, 99 * 100 + 99, 9999 * 10000 + 9999. The bytes past the digits and the
 * borrows their subtraction makes go out at the top.
 */
static inline uint64_t
digits8(const char *p, unsigned n)
{
	uint64_t w;

	memcpy(&w, p, 8);
	w = (w - 0x3030303030303030ull) << (8 * (8 - n));
	w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffull;
	w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffull;
	return (w * 10000 + (w >> 32)) & 0xffffffffull;
}
#endif

/* An integer as JSON writes it (no leading zeros, no fraction or exponent), within long long;
 * with @p big, a positive one up to ULLONG_MAX too (*@p big says whether it is past LLONG_MAX). */
static inline __attribute__((always_inline)) char *
integer(char *p, const char *end, long long *out, bool *big)
{
	bool neg = p < end && *p == '-';
	unsigned long long v = 0, limit = neg	? (unsigned long long)LLONG_MAX + 1
					  : big ? ULLONG_MAX
						: LLONG_MAX;
	char *digits;

	if (neg)
		p++;
	digits = p;
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* up to 16 digits (every value the tracer writes but the largest) without a branch per
	 * digit: a loop over a field's digits ends at a mispredicted branch, one per integer */
	unsigned n;
	if (end - p >= 16 && (n = digit_run16(p)) >= 1 && n <= 16) {
		v = n <= 8 ? digits8(p, n)
			   : digits8(p, n - 8) * 100000000ull + digits8(p + n - 8, 8);
		p += n;
		if (n < 16 || p >= end || *p < '0' || *p > '9')
			goto digits_done;
		/* 16 digits and more: go on one by one */
	}
#endif
	/* 18 digits cannot overflow (10^18 < 2^63); past them, check each step */
	for (; p < end && *p >= '0' && *p <= '9' && p - digits < 18; p++)
		v = v * 10 + (unsigned)(*p - '0');
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v) ||
		    v > limit)
			return NULL;
	}
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
digits_done:
#endif
	if (p == digits || (*digits == '0' && p - digits > 1))
		return NULL;
	if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
		return NULL;
	*out = neg ? (long long)(0 - v) : (long long)v;
	if (big)
		*big = !neg && v > LLONG_MAX;
	return p;
}

/*
 * The keys of the last line parsed on this thread, by position. A trace's lines repeat their
 * shape (the writer prints an event's keys in one order), so a key is first compared whole with
 * the one at its position last time: one compare of a known length, where scanning it byte by
 * byte would end at a mispredicted branch per key (the parse's largest cost). A key that differs
 * is scanned as before and takes the place. What matches is the bytes of a key that was read
 * (no escape, control or non-ASCII byte), quotes included, so it reads the same either way.
 */
#define SHAPE_KEY 24 /* '"' key '"': longer keys are not remembered */

struct shape {
	uint8_t len[GMT_FLAT_MAX]; /* of the quoted key; 0 none */
	uint8_t id[GMT_FLAT_MAX];  /* its enum gmt_flat_key */
	char key[GMT_FLAT_MAX][SHAPE_KEY];
};

static _Thread_local struct shape last_shape;

/* Note v[i]'s key, @p k: a known key's slot points at its last occurrence (jansson's rule). */
static inline void
index_key(struct gmt_flat *f, size_t i, enum gmt_flat_key k)
{
	if (k != GMT_FK_OTHER)
		f->known[k] = (uint8_t)(i + 1);
	else
		f->other = true;
}

/* The key at @p p (its opening quote) into @p v, as plain_string() reads it; after it, or NULL. */
static char *
read_key(struct shape *sh,
	 size_t i,
	 char *p,
	 const char *end,
	 struct gmt_flat_value *v,
	 enum gmt_flat_key *k)
{
	size_t n = sh->len[i];

	if (n && (size_t)(end - p) >= n && gmt_same_bytes(p, sh->key[i], n)) {
		v->key = p + 1;
		v->klen = n - 2;
		p[n - 1] = '\0';
		*k = (enum gmt_flat_key)sh->id[i];
		return p + n;
	}
	if (!(p = plain_string(p, end, &v->key, &v->klen)))
		return NULL;
	*k = gmt_flat_key(v->key, v->klen);
	if (v->klen + 2 <= SHAPE_KEY) {
		sh->len[i] = (uint8_t)(v->klen + 2);
		sh->id[i] = (uint8_t)*k;
		sh->key[i][0] = '"';
		memcpy(sh->key[i] + 1, v->key, v->klen);
		sh->key[i][v->klen + 1] = '"';
	} else {
		sh->len[i] = 0;
	}
	return p;
}

/* On a cache line of its own: where the linker happens to put the hot loop otherwise moves a
 * one-core read by 3-5% from one build to the next (docs/performance.md). */
__attribute__((aligned(64))) bool
gmt_flat_parse(char *buf, size_t len, struct gmt_flat *out)
{
	char *p = buf;
	const char *end = buf + len;
	struct shape *sh = &last_shape;

	out->n = 0;
	out->other = false;
	memset(out->known, 0, sizeof(out->known));
	p = (char *)skip_ws(p, end);
	if (p >= end || *p != '{')
		return false;
	p = (char *)skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return false; /* {} is not an event: let the slow path say so */
	for (;;) {
		struct gmt_flat_value *v;

		if (out->n == GMT_FLAT_MAX || p >= end || *p != '"')
			return false;
		enum gmt_flat_key k;
		v = &out->v[out->n];
		if (!(p = read_key(sh, out->n, p, end, v, &k)))
			return false;
		index_key(out, out->n++, k);
		p = (char *)skip_ws(p, end);
		if (p >= end || *p != ':')
			return false;
		p = (char *)skip_ws(p + 1, end);
		if (p >= end)
			return false;
		if (*p == '"') {
			v->type = GMT_FLAT_STR;
			p = plain_string(p, end, &v->str, &v->slen);
		} else if (*p == 'n') {
			if (end - p < 4 || memcmp(p, "null", 4) != 0)
				return false;
			v->type = GMT_FLAT_NULL;
			p += 4;
		} else if (*p == '[') { /* a pair of integers: a block line's pool id */
			v->type = GMT_FLAT_PAIR;
			p = (char *)skip_ws(p + 1, end);
			if (!(p = integer(p, end, &v->num, NULL)))
				return false;
			p = (char *)skip_ws(p, end);
			if (p >= end || *p != ',')
				return false;
			p = (char *)skip_ws(p + 1, end);
			if (!(p = integer(p, end, &v->num2, NULL)))
				return false;
			p = (char *)skip_ws(p, end);
			if (p >= end || *p != ']')
				return false;
			p++;
		} else {
			v->type = GMT_FLAT_INT;
			p = integer(p, end, &v->num, &v->big);
		}
		if (!p)
			return false;
		p = (char *)skip_ws(p, end);
		if (p < end && *p == ',') {
			p = (char *)skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}')
			break;
		return false;
	}
	return skip_ws(p + 1, end) == end;
}
