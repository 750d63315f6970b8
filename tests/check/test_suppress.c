/*
 * @brief Unit tests of the check's building blocks without the CLI: suppression patterns
 * (globs, anchors, match anywhere), the matching of a report entry's frames and call, and the
 * size parser of the threshold options.
 */
#include <string.h>

#include "analysis/gate/suppress.h"
#include "analysis/report/units.h"
#include "check.h"

static void
test_patterns(void)
{
	/* Anywhere in the text, as LeakSanitizer matches. */
	CHECK(gmt_supp_pattern_match("alloc", "lib_alloc_weights"));
	CHECK(!gmt_supp_pattern_match("allocx", "lib_alloc_weights"));
	/* Anchors. */
	CHECK(gmt_supp_pattern_match("^lib_", "lib_alloc_weights"));
	CHECK(!gmt_supp_pattern_match("^alloc", "lib_alloc_weights"));
	CHECK(gmt_supp_pattern_match("weights$", "lib_alloc_weights"));
	CHECK(!gmt_supp_pattern_match("alloc$", "lib_alloc_weights"));
	CHECK(gmt_supp_pattern_match("^b$", "b"));
	CHECK(!gmt_supp_pattern_match("^b$", "bb"));
	/* Globs, with backtracking over several stars. */
	CHECK(gmt_supp_pattern_match("^lib*weights$", "lib_alloc_weights"));
	CHECK(gmt_supp_pattern_match("^*$", ""));
	CHECK(gmt_supp_pattern_match("a*b*c", "xxaxxbxxbxxcxx"));
	CHECK(!gmt_supp_pattern_match("^a*b*c$", "axxbxxcx"));
	CHECK(gmt_supp_pattern_match("^a*b*c$", "axxbxxcxc"));
	CHECK(gmt_supp_pattern_match("c?da", "libcudart.so"));
	CHECK(gmt_supp_pattern_match("^?$", "x"));
	CHECK(!gmt_supp_pattern_match("^?$", ""));
	CHECK(!gmt_supp_pattern_match("^??$", "x"));
	CHECK(gmt_supp_pattern_match("**", "anything"));
	/* NULL texts (a frame without a function) never match. */
	CHECK(!gmt_supp_pattern_match("x", NULL));
	CHECK(!gmt_supp_pattern_match("*", NULL));
}

static void
test_match(void)
{
	struct gmt_suppressions s = {0};
	struct gmt_suppression v[] = {
	    {.type = GMT_SUPP_PEAK, .pattern = (char *)"train"},
	    {.type = GMT_SUPP_LEAK, .pattern = (char *)"^step$"},
	    {.type = GMT_SUPP_LEAK, .pattern = (char *)"libfoo.so"},
	    {.type = GMT_SUPP_LEAK, .pattern = (char *)"cuMemAlloc"},
	};
	json_t *stack = json_pack("[{ss ss si sn} {ss sn sn ss}]", "function", "step", "file",
				  "/src/train.py", "line", 3, "module", "function", "g", "file",
				  "line", "module", "/usr/lib/libfoo.so");
	json_t *site = json_array_get(stack, 0);

	s.v = v;
	s.n = sizeof(v) / sizeof(v[0]);
	/* The type filters first; then the first match in file order. */
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_LEAK, stack, site, "cudaMalloc", NULL) == &v[1]);
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_PEAK, stack, NULL, NULL, NULL) == &v[0]);
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_GROWTH, stack, site, "cudaMalloc", NULL) == NULL);
	/* A module of an outer frame. */
	json_object_set_new(site, "function", json_string("other"));
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_LEAK, stack, site, NULL, NULL) == &v[2]);
	/* The driver call; no stack at all. */
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_LEAK, NULL, NULL, "cudaMalloc",
				     "cuMemAlloc_v2") == &v[3]);
	CHECK(gmt_suppressions_match(&s, GMT_SUPP_LEAK, NULL, NULL, "cudaMalloc", NULL) == NULL);
	json_decref(stack);
}

static void
test_sizes(void)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} ok[] = {
	    {"0", 0},
	    {"1048576", 1048576},
	    {"18446744073709551615", UINT64_MAX},
	    {"1K", 1024},
	    {"1KiB", 1024},
	    {"1KB", 1000},
	    {"20GiB", 20ull << 30},
	    {"20G", 20ull << 30},
	    {"20GB", 20000000000ull},
	    {"1.5M", 1572864},
	    {"2 MiB", 2097152},
	    {"3mib", 3145728},
	    {"1T", 1ull << 40},
	    {"512B", 512},
	    {".5K", 512},
	};
	static const char *const bad[] = {
	    "",		 "12QB",  "-1", "1e3",	  "0x10", "inf",
	    "nan",	 "1KiBx", "K",	"1.2.3M", "1 2",  "18446744073709551616",
	    "16777216T", " ",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 7;

		if (gmt_parse_bytes(ok[i].text, &v) != 0)
			fprintf(stderr, "rejected: '%s'\n", ok[i].text);
		CHECK(gmt_parse_bytes(ok[i].text, &v) == 0);
		CHECK_EQ_U64(v, ok[i].bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 7;

		if (gmt_parse_bytes(bad[i], &v) == 0)
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
		CHECK(gmt_parse_bytes(bad[i], &v) != 0);
		CHECK_EQ_U64(v, 7);
	}
}

int
main(void)
{
	test_patterns();
	test_match();
	test_sizes();
	return 0;
}
