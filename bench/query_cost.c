/*
 * @brief What the driver queries the tracer could make inside an application's call cost on the
 * real runtime, untraced: cudaGetDevice (what the interposed wrappers ask for each event's
 * device), cuCtxGetCurrent, cuCtxGetDevice, cuCtxGetId, pairs of them,
 * clock_gettime(CLOCK_MONOTONIC) (each event's clock) and the time-stamp counter. Each query in a
 * loop of N calls, 11 repetitions, the median ns per call; one JSON line on stdout.
 *
 *   LD_LIBRARY_PATH=$CUDA_HOME/lib64 BUILD/bench/query_cost [N]
 *
 * Built by Meson against the double (tests/simcuda), which it also runs on; on the GPU host
 * LD_LIBRARY_PATH outranks the RUNPATH and the real runtime and driver answer. A benchmark
 * (docs/performance.md), not a test.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#	include <x86intrin.h>
#endif

#include "bench_clock.h"

#define REPS 11

static volatile uint64_t sink;

/* One query, n times, REPS repetitions: the median ns per call. */
#define MEASURE(label, body)                                                                       \
	do {                                                                                       \
		double per[REPS];                                                                  \
		for (int r = 0; r < REPS; r++) {                                                   \
			uint64_t t0 = mono_ns();                                                   \
			for (long i = 0; i < n; i++) {                                             \
				body;                                                              \
			}                                                                          \
			per[r] = (double)(mono_ns() - t0) / (double)n;                             \
		}                                                                                  \
		qsort(per, REPS, sizeof(per[0]), cmp_double);                                      \
		printf("%s\"%s\":%.1f", first ? "" : ",", label, per[REPS / 2]);                   \
		first = 0;                                                                         \
	} while (0)

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int dev = 0, first = 1;
	CUcontext ctx = NULL;
	CUdevice cudev = 0;
	unsigned long long id = 0;
	void *p = NULL, *drv;

	if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "query_cost: no CUDA device\n");
		return 2;
	}
	/* the driver the runtime loaded (not linked: the build's RUNPATH names the double's) */
	drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	__typeof__(&cuCtxGetCurrent) get_current =
	    drv ? (__typeof__(&cuCtxGetCurrent))dlsym(drv, "cuCtxGetCurrent") : NULL;
	__typeof__(&cuCtxGetDevice) get_device =
	    drv ? (__typeof__(&cuCtxGetDevice))dlsym(drv, "cuCtxGetDevice") : NULL;
	__typeof__(&cuCtxGetId) get_id = /* CUDA 12's; the double has none */
	    drv ? (__typeof__(&cuCtxGetId))dlsym(drv, "cuCtxGetId") : NULL;
	if (!get_current || !get_device) {
		fprintf(stderr,
			"query_cost: libcuda.so.1 is not loaded, or has no context queries\n");
		return 2;
	}
	printf("{\"n\":%ld,\"ns_per_call\":{", n);
	MEASURE("cudaGetDevice", (cudaGetDevice(&dev), sink += (uint64_t)dev));
	MEASURE("cuCtxGetCurrent", (get_current(&ctx), sink += (uint64_t)(uintptr_t)ctx));
	MEASURE("cuCtxGetDevice", (get_device(&cudev), sink += (uint64_t)cudev));
	MEASURE("cuCtxGetCurrent+cuCtxGetDevice",
		(get_current(&ctx), get_device(&cudev), sink += (uint64_t)cudev));
	if (get_id) {
		MEASURE("cuCtxGetId", (get_id(ctx, &id), sink += id));
		MEASURE("cuCtxGetCurrent+cuCtxGetId",
			(get_current(&ctx), get_id(ctx, &id), sink += id));
	}
	MEASURE("clock_gettime", sink += mono_ns());
#if defined(__x86_64__)
	MEASURE("rdtsc", sink += __rdtsc());
#endif
	MEASURE(
	    "cudaMallocAsync+cudaFreeAsync",
	    (cudaMallocAsync(&p, 1 << 20, 0), cudaFreeAsync(p, 0), sink += (uint64_t)(uintptr_t)p));
	printf("}}\n");
	cudaDeviceSynchronize();
	return 0;
}
