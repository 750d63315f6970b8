/*
 * Markers from C when the tracer comes in through CUDA_INJECTION64_PATH alone: the CUDA driver
 * dlopen()s it RTLD_LOCAL at cuInit, after the program's weak references to gmt_mark & co were
 * bound (to NULL). The program looks them up itself once CUDA is initialised, as
 * docs/markers.md shows; under LD_PRELOAD the weak symbols are there already.
 *
 *   cudaMalloc A; mark "after init"; push "phase" (1); cudaMalloc B; pop; mark "end"; frees
 *
 * Prints "markers: weak|lookup|none" (how the functions were found).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpumemtrace.h>

/* The documented lookup (docs/markers.md, "Under CUDA_INJECTION64_PATH alone"). */
static void *
tracer_fn(const char *name)
{
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	void *h = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;

	return h ? dlsym(h, name) : NULL;
}

int
main(void)
{
	void (*mark)(const char *) = gmt_mark;
	void (*push)(const char *) = gmt_range_push;
	void (*pop)(void) = gmt_range_pop;
	const char *how = "weak";
	void *a, *b;

	/* the first CUDA call initialises CUDA: the driver loads the tracer */
	if (cudaMalloc(&a, 1 << 20) != cudaSuccess)
		return 1;
	if (!mark) {
		mark = (void (*)(const char *))tracer_fn("gmt_mark");
		push = (void (*)(const char *))tracer_fn("gmt_range_push");
		pop = (void (*)(void))tracer_fn("gmt_range_pop");
		how = mark && push && pop ? "lookup" : "none";
	}
	if (mark)
		mark("after init");
	if (push)
		push("phase");
	if (cudaMalloc(&b, 2 << 20) != cudaSuccess)
		return 1;
	if (pop)
		pop();
	if (mark)
		mark("end");
	cudaFree(a);
	cudaFree(b);
	printf("markers: %s\n", how);
	return 0;
}
