/*
 * The JSON report's value helpers (report/jvalues.h): an address as "0x%" PRIx64 writes it, for
 * every digit count (the golden reports have no 0 and no 16-digit one), and a difference that a
 * broken trace's sizes cannot overflow.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/report/jvalues.h"
#include "check.h"

static void
hex_is(uint64_t v)
{
	char want[32];
	json_t *j = jhex(v);

	snprintf(want, sizeof(want), "0x%" PRIx64, v);
	CHECK(j && json_is_string(j));
	CHECK(strcmp(json_string_value(j), want) == 0);
	CHECK(json_string_length(j) == strlen(want));
	json_decref(j);
}

static void
diff_is(uint64_t a, uint64_t b, long long want)
{
	json_t *j = jdiff(a, b);

	CHECK(j && json_is_integer(j));
	CHECK(json_integer_value(j) == want);
	json_decref(j);
}

int
main(void)
{
	hex_is(0);
	for (unsigned s = 0; s < 64; s++) {
		hex_is(1ull << s);
		hex_is((1ull << s) - 1);
		hex_is(0xfedcba9876543210ull >> s);
	}
	hex_is(UINT64_MAX);

	diff_is(5, 3, 2);
	diff_is(3, 5, -2);
	diff_is(7, 7, 0);
	diff_is(UINT64_MAX, 0, INT64_MAX);
	diff_is(0, UINT64_MAX, INT64_MIN);
	diff_is(0, 1ull << 63, INT64_MIN);
	diff_is(0, (1ull << 63) - 1, -INT64_MAX);
	/* the fuzz input's OOM: held past 2^63, the difference below -2^62 but exact */
	diff_is(82678120448ull, 9223372036925030399ull, -9223371954246909951ll);
	diff_is(1, UINT64_MAX, INT64_MIN);
	puts("jvalues: ok");
	return 0;
}
