/*
 * @brief Fuzz target `suppress`: one input is one suppression file of `gpumemtrace check
 * --suppressions` (gate/suppress.c): read, then every suppression matched against a call stack
 * as the JSON report has them and against the patterns of the file itself (LSan's glob: `*`,
 * `?`, `^`, `$`). Its corpus: tests/fuzz/corpus/suppress/.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/gate/suppress.h"
#include "fuzz.h"

/* Texts longer than this are not matched against the file's patterns: the glob is
 * O(pattern x text) per start, and a fuzzer's patterns are its texts here. */
#define MAX_TEXT 256

static json_t *stack, *site;

static void
setup(void)
{
	json_error_t err;

	stack = json_loads("[{\"function\":\"c10::cuda::CUDACachingAllocator::malloc\",\"file\":"
			   "\"CUDACachingAllocator.cpp\","
			   "\"module\":\"/usr/lib/libc10_cuda.so\"},"
			   "{\"function\":\"forward\",\"file\":\"/home/u/model.py\",\"line\":12},"
			   "{\"function\":\"<module>\",\"file\":\"t.py\"},{\"function\":null},7,"
			   "{\"function\":\"\",\"file\":\"\\u00e9\\u0000x*?^$\"}]",
			   JSON_ALLOW_NUL, &err);
	site = json_loads("{\"function\":\"train_step\",\"file\":\"train.py\"}", 0, &err);
	if (!stack || !site)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gmt_suppressions s = {0};

	if (!stack)
		setup();
	gmt_suppressions_load(&s, fuzz_memfd_path(data, size), fuzz_devnull());
	for (int type = 0; type < GMT_SUPP_NTYPES; type++)
		gmt_suppressions_match(&s, (enum gmt_supp_type)type, stack, site, "cudaMalloc",
				       "cuMemAlloc_v2");
	for (size_t i = 0; i + 1 < s.n; i++)
		if (strlen(s.v[i + 1].pattern) <= MAX_TEXT)
			gmt_supp_pattern_match(s.v[i].pattern, s.v[i + 1].pattern);
	gmt_suppressions_free(&s);
	return 0;
}
