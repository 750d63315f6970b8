/*
 * @brief Escaping of strings printed for people (see esc.h).
 */
#include "util/esc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The length of the valid UTF-8 sequence at @p s (1 to 4), or 0 when the byte at @p s does not
 * start one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or a
 * sequence cut short by the end of the string).
 */
static size_t
utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	/* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* A valid sequence of @p n bytes that is still a control: C1, bidirectional overrides. */
static bool
utf8_control(const unsigned char *s, size_t n)
{
	if (n == 2)
		return s[0] == 0xc2 && s[1] <= 0x9f; /* U+0080-U+009F */
	if (n == 3 && s[0] == 0xe2)
		return (s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) || /* U+202A-U+202E */
		       (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9);	 /* U+2066-U+2069 */
	return false;
}

/*
 * How the sequence at @p s prints: writes its escape into @p esc (at most 4 bytes plus NUL) and
 * returns how many input bytes it covers (1 for an escaped byte); 0 in *@p esc_len means the
 * bytes print as they are.
 */
static size_t
next(const unsigned char *s, char esc[5], size_t *esc_len)
{
	static const char named[] = "\aa\bb\tt\nn\vv\ff\rr\\\\";
	unsigned char c = s[0];
	size_t n;

	*esc_len = 0;
	if (c >= 0x20 && c < 0x7f && c != '\\')
		return 1;
	for (size_t i = 0; named[i]; i += 2)
		if ((unsigned char)named[i] == c) {
			esc[0] = '\\';
			esc[1] = named[i + 1];
			esc[2] = '\0';
			*esc_len = 2;
			return 1;
		}
	n = c >= 0x80 ? utf8_len(s) : 0;
	if (n > 0 && !utf8_control(s, n))
		return n;
	/* one byte of a control, or of something that is not UTF-8 */
	esc[0] = '\\';
	esc[1] = (char)('0' + (c >> 6));
	esc[2] = (char)('0' + ((c >> 3) & 7));
	esc[3] = (char)('0' + (c & 7));
	esc[4] = '\0';
	*esc_len = 4;
	return 1;
}

bool
gmt_esc_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[5];
	size_t el;

	if (!s)
		return true;
	while (*p) {
		p += next(p, esc, &el);
		if (el)
			return false;
	}
	return true;
}

/* The escaped length of @p s, without the NUL. */
static size_t
esc_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, el, n;
	char esc[5];

	while (*p) {
		n = next(p, esc, &el);
		len += el ? el : n;
		p += n;
	}
	return len;
}

char *
gmt_esc_buf(const char *s, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = 0, el, n;
	char esc[5];

	while (*p) {
		n = next(p, esc, &el);
		if (len + (el ? el : n) >= size)
			break;
		memcpy(buf + len, el ? esc : (const char *)p, el ? el : n);
		len += el ? el : n;
		p += n;
	}
	buf[len] = '\0';
	return buf;
}

const char *
gmt_esc(const char *s)
{
	static char *slot[GMT_ESC_SLOTS];
	static size_t cap[GMT_ESC_SLOTS];
	static unsigned turn;
	unsigned i;
	size_t need;

	int saved = errno; /* callers print strerror(errno) in the same printf */

	if (gmt_esc_clean(s))
		return s;
	i = turn++ % GMT_ESC_SLOTS;
	need = esc_len(s) + 1;
	if (need > cap[i]) {
		char *p = realloc(slot[i], need);

		if (!p) {
			/* out of memory: the escaped start of it, in a buffer of its own (never
			 * raw) */
			static char cut[GMT_ESC_SLOTS][256];

			gmt_esc_buf(s, cut[i], sizeof(cut[i]));
			errno = saved;
			return cut[i];
		}
		slot[i] = p;
		cap[i] = need;
	}
	gmt_esc_buf(s, slot[i], need);
	errno = saved;
	return slot[i];
}

int
gmt_fputs_esc(const char *s, FILE *f)
{
	return fputs(s ? gmt_esc(s) : "(null)", f);
}

bool
gmt_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n)
		if (!(n = utf8_len(p)))
			return false;
	return true;
}

char *
gmt_utf8_lossy(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out;
	size_t len = 0, n;

	if (!s || !(out = malloc(strlen(s) * 3 + 1)))
		return NULL;
	for (; *p; p += n ? n : 1) {
		if ((n = utf8_len(p))) {
			memcpy(out + len, p, n);
			len += n;
		} else {
			memcpy(out + len, "\xef\xbf\xbd", 3);
			len += 3;
		}
	}
	out[len] = '\0';
	return out;
}
