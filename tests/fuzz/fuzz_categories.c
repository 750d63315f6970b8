/*
 * @brief Fuzz target `categories`: one input is one rule file of `gpumemtrace report
 * --categories` (report/categories.c: `CATEGORY WHERE PATTERN` lines, `no-builtin`), read, then
 * the rules asked for the category of a few call stacks (Python and native frames, an autograd
 * thread). Its corpus: tests/fuzz/corpus/categories/.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "analysis/report/categories.h"
#include "fuzz.h"

static const struct gmt_cat_frame frames[] = {
    {false, "at::native::empty_cuda", NULL, "/usr/lib/libtorch_cuda.so"},
    {true, "Linear.forward", "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", NULL},
    {true, "train_step", "/home/u/train.py", NULL},
    {false, NULL, NULL, NULL},
    {true, "_apply", "/usr/lib/python3/site-packages/torch/nn/modules/module.py", NULL},
    {false, "cublasLtWorkspace*?[x]", "", "[vdso]"},
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct gmt_cat_rules *r = gmt_cat_load(fuzz_memfd_path(data, size), err, sizeof(err));
	const size_t n = sizeof(frames) / sizeof(frames[0]);

	if (!r)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		gmt_cat_of(r, frames + i, n - i, false);
		gmt_cat_of(r, frames + i, n - i, true);
	}
	gmt_cat_free(r);
	return 0;
}
