/*
 * A C program built against an installed gpumemtrace: the public header found through the
 * installed gpumemtrace.pc, the CUDA runtime of LD_LIBRARY_PATH (tests/simcuda). Marks, leaks
 * 1 MiB, allocates and frees 2 MiB, and says whether the tracer's symbols resolved and what
 * LD_PRELOAD it was given.
 */
#include <gpumemtrace.h>
#include <stdio.h>
#include <stdlib.h>

/* the two runtime calls it needs, as libcudart.so.13 exports them (no CUDA headers needed) */
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);

int
main(void)
{
	void *kept = NULL, *tmp = NULL;
	const char *preload = getenv("LD_PRELOAD");

	GMT_MARK("c start");
	if (cudaMalloc(&kept, 1 << 20) != 0 || cudaMalloc(&tmp, 2 << 20) != 0) {
		fprintf(stderr, "victim: cudaMalloc failed\n");
		return 1;
	}
	cudaFree(tmp);
	GMT_MARK("c end");
	printf("tracer: %s\n", gmt_mark ? "present" : "absent");
	printf("preload: %s\n", preload ? preload : "");
	return 0; /* kept is never freed: the report names this file's line */
}
