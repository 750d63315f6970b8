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
#include <string.h>
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

/* Per byte of @p x (each < 0x80), its top bit set when the byte is in [@p lo, @p hi]: no carry
 * crosses a byte, each sum stays under 0x100. */
static inline uint64_t
gmt_hex_bytes_in(uint64_t x, unsigned lo, unsigned hi)
{
	const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f * ones;

	return ((x & low7) + (0x80 - lo) * ones) & ~((x & low7) + (0x7f - hi) * ones) & ~x &
	       0x80 * ones;
}

/*
 * Eight hex digits at @p s (either case) into *@p out: false when one is not a digit. The
 * bytes' values side by side (a letter's low nibble + 9), then paired, fours, eights, the first
 * digit the highest. An address's 12 digits take one pass instead of a loop step each.
 */
static inline bool
gmt_hex8(const char *s, uint32_t *out)
{
	const uint64_t ones = 0x0101010101010101ull;
	uint64_t w, lower, x;

	memcpy(&w, s, 8);
	lower = w | 0x20 * ones; /* A-F as a-f (and nothing else as a-f) */
	if ((gmt_hex_bytes_in(w, '0', '9') | gmt_hex_bytes_in(lower, 'a', 'f')) != 0x80 * ones)
		return false;
	x = (w & 0x0f * ones) + 9 * ((w >> 6) & ones);
	x = ((x << 4) | (x >> 8)) & 0x00ff00ff00ff00ffull;
	x = ((x << 8) | (x >> 16)) & 0x0000ffff0000ffffull;
	*out = (uint32_t)((x << 16) | (x >> 32));
	return true;
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
	size_t i = 2;

	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* the digits that do not fill a group of eight one by one, then the groups */
	const size_t lead = i + (n - i) % 8;
#else
	const size_t lead = n;
#endif
	for (; i < lead; i++) {
		/* without gmt_hex_digit()'s branches: digits and letters mix in an address, so a
		 * branch on which one a byte is would go wrong at about every other digit */
		unsigned c = (unsigned char)s[i], dec = c - '0', let = (c | 0x20) - 'a';
		unsigned d = dec < 10 ? dec : let < 6 ? let + 10 : 16;

		if (d == 16 || v >> 60) /* not a digit, or a 17th one */
			return false;
		v = v << 4 | d;
	}
	for (uint32_t g; i < n; i += 8) {
		if (!gmt_hex8(s + i, &g) || v >> 32) /* not a digit, or past 16 */
			return false;
		v = v << 32 | g;
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
