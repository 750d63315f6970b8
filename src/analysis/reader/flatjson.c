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

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (byte_class[(unsigned char)*p] & WS))
		p++;
	return p;
}

/* A string without escapes, control or non-ASCII bytes: NUL-terminated in place. */
static char *
plain_string(char *p, const char *end, const char **out)
{
	char *s = ++p; /* after the opening quote */

	while (p < end && !(byte_class[(unsigned char)*p] & STR_END))
		p++;
	if (p < end && *p == '"') {
		*p = '\0';
		*out = s;
		return p + 1;
	}
	return NULL;
}

/* An integer as JSON writes it (no leading zeros, no fraction or exponent), within long long. */
static char *
integer(char *p, const char *end, long long *out)
{
	bool neg = p < end && *p == '-';
	unsigned long long v = 0, limit = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	char *digits;

	if (neg)
		p++;
	digits = p;
	/* 18 digits cannot overflow (10^18 < 2^63); past them, check each step */
	for (; p < end && *p >= '0' && *p <= '9' && p - digits < 18; p++)
		v = v * 10 + (unsigned)(*p - '0');
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v) ||
		    v > limit)
			return NULL;
	}
	if (p == digits || (*digits == '0' && p - digits > 1))
		return NULL;
	if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
		return NULL;
	*out = neg ? (long long)(0 - v) : (long long)v;
	return p;
}

/* Index v[i]; a key seen before points at its last occurrence (jansson's rule). */
static void
index_key(struct gmt_flat *f, size_t i)
{
	const struct gmt_flat_value *v = &f->v[i];

	for (size_t h = gmt_flat_hash(v->key, v->klen);; h = (h + 1) & (GMT_FLAT_INDEX - 1)) {
		const struct gmt_flat_value *o;

		if (!f->index[h]) {
			f->index[h] = (uint8_t)(i + 1);
			return;
		}
		o = &f->v[f->index[h] - 1];
		if (o->klen == v->klen && memcmp(o->key, v->key, v->klen) == 0) {
			f->index[h] = (uint8_t)(i + 1);
			return;
		}
	}
}

bool
gmt_flat_parse(char *buf, size_t len, struct gmt_flat *out)
{
	char *p = buf;
	const char *end = buf + len;

	out->n = 0;
	memset(out->index, 0, sizeof(out->index));
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
		v = &out->v[out->n++];
		char *key_start = p + 1;
		if (!(p = plain_string(p, end, &v->key)))
			return false;
		v->klen = (size_t)(p - 1 - key_start);
		index_key(out, out->n - 1);
		p = (char *)skip_ws(p, end);
		if (p >= end || *p != ':')
			return false;
		p = (char *)skip_ws(p + 1, end);
		if (p >= end)
			return false;
		if (*p == '"') {
			v->type = GMT_FLAT_STR;
			p = plain_string(p, end, &v->str);
		} else if (*p == 'n') {
			if (end - p < 4 || memcmp(p, "null", 4) != 0)
				return false;
			v->type = GMT_FLAT_NULL;
			p += 4;
		} else if (*p == '[') { /* a pair of integers: a block line's pool id */
			v->type = GMT_FLAT_PAIR;
			p = (char *)skip_ws(p + 1, end);
			if (!(p = integer(p, end, &v->num)))
				return false;
			p = (char *)skip_ws(p, end);
			if (p >= end || *p != ',')
				return false;
			p = (char *)skip_ws(p + 1, end);
			if (!(p = integer(p, end, &v->num2)))
				return false;
			p = (char *)skip_ws(p, end);
			if (p >= end || *p != ']')
				return false;
			p++;
		} else {
			v->type = GMT_FLAT_INT;
			p = integer(p, end, &v->num);
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
