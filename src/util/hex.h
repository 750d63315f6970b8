/*
 * @brief Hexadecimal, as the trace writes it: addresses ("0x" and digits, so that 64-bit values
 * survive JSON), byte strings (build-ids, Python line tables, paths that are not UTF-8).
 *
 * Header-only: the reader runs these for every digit of every event's address, and the
 * Python line-table test builds pyline.c on its own.
 */
#ifndef GMT_UTIL_HEX_H
#define GMT_UTIL_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** The value of the hex digit @p c (either case), or -1. */
static inline int
gmt_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/**
 * Parse "0x" (or "0X") and one or more hex digits, the @p n bytes of @p s and nothing else,
 * into *@p out: at most 64 bits once leading zeros are dropped. Returns false (and leaves
 * *@p out) otherwise.
 */
static inline bool
gmt_hex_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (size_t i = 2; i < n; i++) {
		/* without gmt_hex_digit()'s branches: digits and letters mix in an address, so a
		 * branch on which one a byte is would go wrong at about every other digit */
		unsigned c = (unsigned char)s[i], dec = c - '0', let = (c | 0x20) - 'a';
		unsigned d = dec < 10 ? dec : let < 6 ? let + 10 : 16;

		if (d == 16 || v >> 60) /* not a digit, or a 17th one */
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/**
 * Decode the hex string @p hex (@p len characters, either case) into @p out (@p cap bytes).
 * Returns the number of bytes, or -1 for an odd length, a non-hex character or too small a
 * buffer (len / 2 bytes always suffice).
 */
static inline ssize_t
gmt_unhex(const char *hex, size_t len, uint8_t *out, size_t cap)
{
	if (len % 2 != 0 || len / 2 > cap)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		int hi = gmt_hex_digit(hex[i]), lo = gmt_hex_digit(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return (ssize_t)(len / 2);
}

/** @p n bytes of @p bits as lowercase hex into @p out (@p max bytes, terminated; cut to fit). */
static inline void
gmt_hex_encode(const unsigned char *bits, size_t n, char *out, size_t max)
{
	static const char digits[] = "0123456789abcdef";
	size_t k = 0;

	for (size_t i = 0; i < n && k + 2 < max; i++) {
		out[k++] = digits[bits[i] >> 4];
		out[k++] = digits[bits[i] & 0xf];
	}
	out[k] = '\0';
}

#endif
