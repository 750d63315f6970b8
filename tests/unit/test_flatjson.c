/*
 * The fast reader of flat JSON objects (src/analysis/flatjson.c): what it reads, and what it
 * leaves to jansson. A line it declines is not an error (jansson then reads it or says what is
 * wrong); a line it accepts must mean what jansson would read, so the limits are those of
 * jansson's integers (long long) and its rule for duplicate keys (the last wins).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/reader/flatjson.h"
#include "check.h"
#include "util/hex.h"

static struct gmt_flat f;
static char buf[512];

static bool
parse(const char *line)
{
	strcpy(buf, line);
	return gmt_flat_parse(buf, strlen(buf), &f);
}

/* The integer of the only key "a" of @p line; the line must be accepted. */
static long long
int_of(const char *line)
{
	const struct gmt_flat_value *v;

	CHECK(parse(line));
	v = gmt_flat_get(&f, "a");
	CHECK(v && v->type == GMT_FLAT_INT);
	return v->num;
}

static void
integers(void)
{
	CHECK(int_of("{\"a\":0}") == 0);
	CHECK(int_of("{\"a\":-0}") == 0);
	CHECK(int_of("{\"a\":123456789012345678}") == 123456789012345678LL);   /* 18 digits */
	CHECK(int_of("{\"a\":1234567890123456789}") == 1234567890123456789LL); /* 19 */
	CHECK(int_of("{\"a\":9223372036854775807}") == LLONG_MAX);
	CHECK(int_of("{\"a\":-9223372036854775808}") == LLONG_MIN);
	/* from 2^63 to 2^64 - 1 (a failed allocation's size as asked: cudaMalloc(&p, (size_t)-1)):
	 * read, marked big, its bits in num; jansson refuses them, and hands such a line here */
	CHECK((unsigned long long)int_of("{\"a\":9223372036854775808}") == 1ULL << 63);
	CHECK(gmt_flat_get(&f, "a")->big);
	CHECK((unsigned long long)int_of("{\"a\":18446744073709551615}") == ULLONG_MAX);
	CHECK(gmt_flat_get(&f, "a")->big);
	CHECK(int_of("{\"a\":9223372036854775807}") == LLONG_MAX && !gmt_flat_get(&f, "a")->big);
	/* past that, leading zeros, fractions, exponents: jansson's to read or refuse */
	CHECK(!parse("{\"a\":-9223372036854775809}"));
	CHECK(!parse("{\"a\":18446744073709551616}"));
	CHECK(!parse("{\"a\":99999999999999999999999}"));
	CHECK(!parse("{\"a\":01}"));
	CHECK(!parse("{\"a\":1.5}"));
	CHECK(!parse("{\"a\":1e3}"));
	CHECK(!parse("{\"a\":-}"));
	CHECK(!parse("{\"a\":+1}"));
}

static void
strings_and_shape(void)
{
	const struct gmt_flat_value *v;

	CHECK(parse(" { \"type\" : \"event\" ,\t\"ptr\":\"0x7f00\", \"stream\":null }\r\n"));
	CHECK(f.n == 3);
	v = gmt_flat_get(&f, "ptr");
	CHECK(v && v->type == GMT_FLAT_STR && strcmp(v->str, "0x7f00") == 0);
	v = gmt_flat_get(&f, "stream");
	CHECK(v && v->type == GMT_FLAT_NULL);
	CHECK(!gmt_flat_get(&f, "size"));
	CHECK(!gmt_flat_get(&f, "typ"));
	/* the last of duplicate keys wins, as in jansson */
	CHECK(parse("{\"type\":\"event\",\"size\":1,\"type\":\"marker\"}"));
	v = gmt_flat_get(&f, "type");
	CHECK(v && strcmp(v->str, "marker") == 0);
	/* declined: escapes, control and non-ASCII bytes, nesting, true/false, {} and trailing
	 * bytes */
	CHECK(!parse("{\"a\":\"x\\\"y\"}"));
	CHECK(!parse("{\"a\":\"x\ty\"}"));
	CHECK(!parse("{\"a\":\"caf\xc3\xa9\"}"));
	CHECK(!parse("{\"a\":[1]}"));
	CHECK(!parse("{\"a\":{\"b\":1}}"));
	CHECK(!parse("{\"a\":true}"));
	CHECK(!parse("{}"));
	CHECK(!parse("{\"a\":1} x"));
	CHECK(!parse("{\"a\":1"));
	CHECK(!parse("{\"a\" 1}"));
	CHECK(!parse("{\"a\":\"unterminated}"));
}

/*
 * The parser first compares each key with the one at its position in the line before (the
 * lines of a trace repeat their shape): a line that differs there, by a key of the same length,
 * a longer or shorter one, an escape or a byte that is not a key's, reads as if it came first.
 */
static void
shapes_that_change(void)
{
	const struct gmt_flat_value *v;

	CHECK(parse("{\"type\":\"event\",\"ptr\":\"0x10\",\"size\":5,\"an_unknown_key\":7}"));
	CHECK(parse("{\"type\":\"event\",\"api\":\"0x20\",\"sizes\":6,\"an_unknown_key\":8}"));
	CHECK(!gmt_flat_get(&f, "ptr") && !gmt_flat_get(&f, "size"));
	v = gmt_flat_get(&f, "api");
	CHECK(v && v->type == GMT_FLAT_STR && strcmp(v->str, "0x20") == 0);
	v = gmt_flat_get(&f, "sizes");
	CHECK(v && v->type == GMT_FLAT_INT && v->num == 6);
	v = gmt_flat_get(&f, "an_unknown_key");
	CHECK(v && v->num == 8);
	/* the same key again, then one cut short, one with an escape, one that is not a key */
	CHECK(parse("{\"type\":\"event\",\"api\":\"x\",\"size\":1}"));
	CHECK(gmt_flat_get(&f, "size") && gmt_flat_get(&f, "size")->num == 1);
	CHECK(!parse("{\"type\":\"event\",\"ap"));
	CHECK(!parse("{\"type\":\"event\",\"a\\u0070i\":\"x\"}"));
	CHECK(!parse("{\"type\":\"event\",\"api\" \"x\"}"));
	CHECK(parse("{\"typ\":\"event\",\"api\":\"y\"}"));
	CHECK(!gmt_flat_get(&f, "type") && gmt_flat_get(&f, "typ"));
	CHECK(strcmp(gmt_flat_get(&f, "api")->str, "y") == 0);
	/* keys longer than the remembered ones, twice over */
	CHECK(parse("{\"a_key_longer_than_twenty_two_bytes\":1,\"ts\":2}"));
	CHECK(parse("{\"a_key_longer_than_twenty_two_bytes\":3,\"ts\":4}"));
	CHECK(gmt_flat_get(&f, "a_key_longer_than_twenty_two_bytes")->num == 3);
	CHECK(gmt_flat_get(&f, "ts")->num == 4);
}

/*
 * The 16-byte scans (integers of up to 16 digits at once, a string's end found 16 bytes at a
 * time) run where 16 bytes follow, the byte-at-a-time ones near the line's end: every length
 * of integer and string, with its end at every place of a 16-byte block, followed by a long
 * tail and by none, reads as strtoll() and memchr() say, and a stop byte anywhere in a string
 * declines the line.
 */
static void
wide_scans(void)
{
	static const char *const tails[] = {"}", ",\"pad\":\"0123456789abcdefghij\"}"};
	char digits[32], line[256];

	for (int n = 1; n <= 20; n++) {
		for (int form = 0; form < 4; form++) {
			/* 10^(n-1), all nines, a mixed pattern, the last one negative */
			for (int i = 0; i < n; i++)
				digits[i] = form == 0	? (i ? '0' : '1')
					    : form == 1 ? '9'
							: (char)('1' + (i * 7 + n) % 9);
			digits[n] = '\0';
			for (size_t t = 0; t < 2; t++) {
				snprintf(line, sizeof(line), "{\"a\":%s%s%s", form == 3 ? "-" : "",
					 digits, tails[t]);
				char num[40];
				snprintf(num, sizeof(num), "%s%s", form == 3 ? "-" : "", digits);
				errno = 0;
				long long want = strtoll(num, NULL, 10);
				if (errno == ERANGE && form != 3) {
					/* past long long: read up to 2^64 - 1 (big), refused past
					 */
					errno = 0;
					unsigned long long u = strtoull(num, NULL, 10);
					if (errno == ERANGE) {
						CHECK(!parse(line));
					} else {
						CHECK((unsigned long long)int_of(line) == u);
						CHECK(gmt_flat_get(&f, "a")->big);
					}
					continue;
				}
				if (errno == ERANGE) {
					CHECK(!parse(line));
					continue;
				}
				CHECK(int_of(line) == want);
			}
		}
	}
	/* 16 digits, then more, a fraction or a leading zero past the first block */
	CHECK(int_of("{\"a\":12345678901234567,\"pad\":\"0123456789abcdefghij\"}") ==
	      12345678901234567LL);
	CHECK(!parse("{\"a\":1234567890123456.5,\"pad\":\"0123456789abcdefghij\"}"));
	CHECK(!parse("{\"a\":0123456789,\"pad\":\"0123456789abcdefghij\"}"));
	CHECK(!parse("{\"a\":99999999999999999999,\"pad\":\"0123456789abcdefghij\"}"));

	for (int n = 0; n <= 40; n++) {
		for (size_t t = 0; t < 2; t++) {
			char str[48];
			const struct gmt_flat_value *v;

			for (int i = 0; i < n; i++)
				str[i] = (char)('a' + i % 26);
			str[n] = '\0';
			snprintf(line, sizeof(line), "{\"b\":\"%s\"%s", str, tails[t]);
			CHECK(parse(line));
			v = gmt_flat_get(&f, "b");
			CHECK(v && v->type == GMT_FLAT_STR && v->slen == (size_t)n &&
			      strcmp(v->str, str) == 0);
			for (int at = 0; at < n; at++) {
				static const char stops[] = {'\\', '\t',       0x01,
							     0x1f, (char)0x80, (char)0xff};

				for (size_t k = 0; k < sizeof(stops); k++) {
					char bad[48];

					memcpy(bad, str, (size_t)n + 1);
					bad[at] = stops[k];
					snprintf(line, sizeof(line), "{\"b\":\"%s\"%s", bad,
						 tails[t]);
					CHECK(!parse(line));
				}
			}
		}
	}
}

/* gmt_hex_u64() as it was, a digit at a time: what the eight-at-a-time one must agree with. */
static bool
hex_by_digit(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	int d;

	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (size_t i = 2; i < n; i++) {
		if ((d = gmt_hex_digit(s[i])) < 0 || v >> 60)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

/*
 * Addresses: every byte value at every place of 1 to 20 digits (leading zeros, upper case, a
 * 17th significant digit) reads as the digit-at-a-time parse reads it, in the groups of eight
 * and in the digits before them.
 */
static void
hex_addresses(void)
{
	char s[24];

	for (size_t digits = 1; digits <= 20; digits++) {
		size_t n = digits + 2;

		for (size_t at = 2; at < n; at++) {
			for (int c = 0; c < 256; c++) {
				for (int form = 0; form < 3; form++) {
					uint64_t want = 1, got = 1;

					memcpy(s, "0x", 2);
					for (size_t i = 2; i < n; i++)
						s[i] = form == 0 ? "0123456789abcdef"[(i * 5) % 16]
						       : form == 1
							   ? "0123456789ABCDEF"[(i * 3) % 16]
							   : '0'; /* leading zeros */
					s[at] = (char)c;
					bool a = hex_by_digit(s, n, &want),
					     b = gmt_hex_u64(s, n, &got);
					CHECK(a == b && want == got);
				}
			}
		}
	}
	uint64_t v;
	CHECK(gmt_hex_u64("0x600000000000", 14, &v) && v == 0x600000000000ull);
	CHECK(gmt_hex_u64("0xFFFFFFFFFFFFFFFF", 18, &v) && v == UINT64_MAX);
	CHECK(gmt_hex_u64("0x00000FFFFFFFFFFFFFFFF", 23, &v) && v == UINT64_MAX);
	CHECK(!gmt_hex_u64("0x1FFFFFFFFFFFFFFFF", 19, &v));
	CHECK(!gmt_hex_u64("0x", 2, &v) && !gmt_hex_u64("0y12345678", 10, &v));
}

int
main(void)
{
	integers();
	strings_and_shape();
	shapes_that_change();
	wide_scans();
	hex_addresses();
	puts("flatjson: ok");
	return 0;
}
