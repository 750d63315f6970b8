/*
 * @brief Benchmark: empty-kernel launches per second, for measuring what the tracer costs a
 * program that launches many kernels and allocates little (bench/run_launch_throughput.py runs it
 * without and with the tracer, interleaved). Holding CUPTI callbacks must not slow kernel
 * launches: the tracer enables only memory CBIDs, never the launch ones.
 *
 *   nvcc -O2 -cudart shared -o launch_throughput launch_throughput.cu
 *   launch_throughput [--launches N] [--reps R] [--warmup W] [--batch B]
 *
 * Built with the shared cudart so that both capture paths apply (CUPTI, and LD_PRELOAD
 * interposition with GPUMEMTRACE_CUPTI=0). It makes one cudaMalloc + cudaFree first, so a tracer
 * has started (its writer thread runs) before anything is timed, then W warm-up launches, then R
 * repetitions of two measurements of N launches of an empty kernel <<<1, 1>>> on a created stream:
 *
 *   submit      the launch calls only, in batches of B (default 256, well below the launch
 *               queue's depth, so a launch never waits for the GPU), the stream synchronised
 *               after each batch outside the timed region: what a launch costs the CPU, which is
 *               where a tracer could add time
 *   end-to-end  N launches and one cudaStreamSynchronize, timed together: what a program sees
 *               (bounded by the GPU when the queue fills)
 *
 * CLOCK_MONOTONIC. It prints ONE line of JSON:
 *
 *   {"bench":"launch_throughput","cudart":"shared","launches":N,"reps":R,"warmup":W,"batch":B,
 *    "events":2,"median_launches_per_s":M,"samples_launches_per_s":[...],
 *    "median_e2e_launches_per_s":E,"samples_e2e_launches_per_s":[...]}
 *
 * median_launches_per_s is the submit rate. `events` is what a tracer should record (the
 * malloc/free pair).
 */
#define BENCH_PROG "launch_throughput"
#include "bench_util.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <string.h>

#include "launch_common.cuh"

#define MAX_REPS 1000

static double
median_of(const double *v, unsigned long n)
{
	static double sorted[MAX_REPS];
	memcpy(sorted, v, n * sizeof(v[0]));
	std::sort(sorted, sorted + n);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

static void
usage()
{
	fprintf(stderr,
		"usage: launch_throughput [--launches N] [--reps R] [--warmup W] [--batch B]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	unsigned long launches = 20000, reps = 7, warmup = 20000, batch = 256;
	static double samples[MAX_REPS], e2e[MAX_REPS];
	cudaStream_t s;
	void *p;

	for (int i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!val)
			usage();
		if (strcmp(argv[i], "--launches") == 0)
			launches = parse_ulong(val, 1, 100000000UL);
		else if (strcmp(argv[i], "--reps") == 0)
			reps = parse_ulong(val, 1, MAX_REPS);
		else if (strcmp(argv[i], "--warmup") == 0)
			warmup = parse_ulong(val, 0, 100000000UL);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = parse_ulong(val, 1, 100000UL);
		else
			usage();
		i++;
	}

	CK(cudaFree(NULL)); /* the context, outside everything measured; not an event */
	CK(cudaMalloc(&p, 1 << 20));
	CK(cudaFree(p));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (unsigned long i = 0; i < warmup; i++)
		empty_kernel<<<1, 1, 0, s>>>();
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(s));

	for (unsigned long r = 0; r < reps; r++) {
		struct launch_rate rate = measure_launches(s, launches, batch);
		samples[r] = rate.submit;
		e2e[r] = rate.e2e;
	}
	CK(cudaStreamDestroy(s));
	double median = median_of(samples, reps), median_e2e = median_of(e2e, reps);

	Dl_info dl;
	cudaError_t (*rt_malloc)(void **, size_t) = cudaMalloc;
	const char *cudart =
	    dladdr((void *)rt_malloc, &dl) && dl.dli_fname &&
		    (strstr(dl.dli_fname, "libcudart") || strstr(dl.dli_fname, "libgpumemtrace"))
		? "shared"
		: "static";
	printf("{\"bench\":\"launch_throughput\",\"cudart\":\"%s\",\"launches\":%lu,\"reps\":%lu,"
	       "\"warmup\":%lu,"
	       "\"batch\":%lu,\"events\":2,\"median_launches_per_s\":%.1f,\"samples_launches_per_"
	       "s\":[",
	       cudart, launches, reps, warmup, batch, median);
	for (unsigned long r = 0; r < reps; r++)
		printf("%s%.1f", r ? "," : "", samples[r]);
	printf("],\"median_e2e_launches_per_s\":%.1f,\"samples_e2e_launches_per_s\":[", median_e2e);
	for (unsigned long r = 0; r < reps; r++)
		printf("%s%.1f", r ? "," : "", e2e[r]);
	printf("]}\n");
	return 0;
}
