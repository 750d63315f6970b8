/*
 * @brief Benchmark: the time of one allocation + free pair through the CUDA runtime, for
 * measuring what the tracer adds to each call (bench/run_hook_overhead.py runs it with and
 * without LD_PRELOAD=libgpumemtrace.so, interleaved).
 *
 *   hook_overhead [--mode malloc|async] [--iters N] [--reps R] [--warmup W] [--size BYTES]
 *                 [--gap-ms MS] [--in-process 1 [--off 1]] [--touch KB] [--sweep KB]
 *                 [--branches K]
 *
 *   malloc  cudaMalloc + cudaFree of --size bytes (default 1 MiB)
 *   async   cudaMallocAsync + cudaFreeAsync of --size bytes on a created stream; the device's
 *           default pool keeps its memory (release threshold UINT64_MAX), so after the warm-up
 *           the pool is warm and every pair is served from it
 *
 * After W warm-up pairs (in chunks of at most N) it times R repetitions of N pairs each
 * (CLOCK_MONOTONIC around the N pairs; in async mode the stream is synchronised once at the end of
 * each repetition, inside the timed region) and prints ONE line of JSON on stdout:
 *
 *   {"bench":"hook_overhead","mode":"malloc","runtime":"sim","size":1048576,"iters":N,"reps":R,
 *    "warmup":W,"events":E,"median_ns_per_pair":M,"samples_ns_per_pair":[...]}
 *
 * `events` is the number of memory events a tracer should record (2 per pair, warm-up included);
 * `runtime` is "sim" on tests/simcuda and "real" otherwise. Between repetitions the program
 * sleeps --gap-ms (outside the timed region) so that a tracer's writer can drain its ring: a
 * repetition of 2N events must fit in the ring (GPUMEMTRACE_RING_SLOTS) for a no-drop run.
 *
 * --in-process 1 (under the tracer only): each repetition times its N pairs twice, with the
 * tracer paused on this thread (gmt_bench_pause(): its wrappers forward at once, its CUPTI
 * callbacks return at once) and recording, in alternating order; the line adds the medians of
 * both ("paused_median_ns_per_pair", "recording_median_ns_per_pair") and the median of the
 * per-repetition differences ("added_median_ns_per_pair"): what recording costs above an empty
 * callback on the same ids, measured in one process (bench/run_hook_inprocess.py). `events`
 * counts the recorded pairs only. With --off 1, where the preloaded library can turn its CUPTI
 * callbacks off (gmt_bench_cupti(); the tracer holding CUPTI, or floor-cupti*), a third state:
 * paused with the callbacks off, what the calls cost with no subscriber ("off_median_ns_per_pair",
 * and per repetition the empty callback's own cost, paused less off:
 * "callback_median_ns_per_pair"), the three states' order rotating from one repetition to the
 * next; a library holding no subscription (the wrappers alone) has no third state.
 *
 * --touch KB: before each call the program writes one byte in every cache line of a KB-sized
 * buffer of its own, as a real program's work between its CUDA calls does to the caches (a
 * Python interpreter's loop around torch.empty() touches hundreds of KB): the tracer's code and
 * data then come from farther away, as they do there. The same work runs in every state, so
 * the in-process differences are still the tracer's. --sweep KB (at most 64): KB of code of its
 * own run before each call, as an interpreter's loop evicts the tracer's code. --branches K (at
 * most 64): K thousand conditional branches at their own addresses, each the same way at every
 * call, run before each call, as an interpreter's loop leaves the processor's branch predictor cold
 * for the tracer's branches.
 *
 * Linked against libcudart.so.13 and nothing simulation-specific: it runs on tests/simcuda or,
 * with LD_LIBRARY_PATH at the toolkit's lib64, on the real runtime and a GPU. Which one it got is
 * probed at run time with dlsym (the double exports simcuda_is_simulated, the real library does
 * not).
 */
#define _GNU_SOURCE
#define BENCH_PROG "hook_overhead"
#include "bench_util.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 1000

enum bench_mode {
	BENCH_MALLOC,
	BENCH_ASYNC,
};

struct bench_args {
	enum bench_mode mode;
	unsigned long iters;
	unsigned long reps;
	unsigned long warmup;
	unsigned long size;
	unsigned long gap_ms;
	bool in_process;
	bool off; /* --off 1: the third state, the CUPTI callbacks off */
	unsigned long touch_kb;
};

/* --touch: the program's own working set between its calls */
static unsigned char *touch_buf;
static size_t touch_bytes;

/* --sweep KB: KB of straight-line code run before each call (one-byte nops in 4 KB functions of
 * their own, 64 KB at most), as an interpreter's own code between the calls evicts the tracer's
 * from the instruction cache */
static unsigned long sweep_kb;
#define SWEEP_FN(n)                                                                                \
	static __attribute__((noinline)) void sweep_##n(void)                                      \
	{                                                                                          \
		__asm__ volatile(".rept 4096\n\tnop\n\t.endr" ::: "memory");                       \
	}
SWEEP_FN(0)
SWEEP_FN(1)
SWEEP_FN(2)
SWEEP_FN(3)
SWEEP_FN(4)
SWEEP_FN(5)
SWEEP_FN(6)
SWEEP_FN(7)
SWEEP_FN(8)
SWEEP_FN(9)
SWEEP_FN(10)
SWEEP_FN(11)
SWEEP_FN(12)
SWEEP_FN(13)
SWEEP_FN(14)
SWEEP_FN(15)
static void (*const sweeps[16])(void) = {sweep_0,  sweep_1,  sweep_2,  sweep_3, sweep_4,  sweep_5,
					 sweep_6,  sweep_7,  sweep_8,  sweep_9, sweep_10, sweep_11,
					 sweep_12, sweep_13, sweep_14, sweep_15};

/* --branches K: K thousand conditional branches of their own, each at its own address, each
 * taken or not the same way at every call (learnt, so they cost a cycle or so each, not a
 * misprediction), run before each call, as an interpreter's loop between the calls (thousands of
 * branches at thousands of addresses) fills the predictor's tables and its target buffer: the
 * tracer's own branches are then predicted cold, as they are there */
static unsigned long branches_k;
static __attribute__((noinline)) void
branches_1k(uint64_t x)
{
	__asm__ volatile(".rept 1024\n\t"
			 "ror $1, %0\n\t"
			 "test $1, %0\n\t"
			 "jz 1f\n\t"
			 "nop\n"
			 "1:\n\t"
			 ".endr"
			 : "+r"(x)
			 :
			 : "cc");
}

static inline void
touch(void)
{
	for (size_t i = 0; i < touch_bytes; i += 64)
		touch_buf[i]++;
	for (unsigned long k = 0; k < sweep_kb / 4; k++)
		sweeps[k]();
	for (unsigned long k = 0; k < branches_k; k++)
		branches_1k(0x9e3779b97f4a7c15ULL * (k + 1)); /* a pattern per block, fixed */
}

static void
sleep_ms(unsigned long ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void
usage(void)
{
	fprintf(stderr, "usage: hook_overhead [--mode malloc|async] [--iters N] [--reps R] "
			"[--warmup W] [--size BYTES] [--gap-ms MS] [--in-process 1 [--off 1]] "
			"[--touch KB] [--sweep KB] [--branches K]\n");
	exit(2);
}

static void
parse_args(int argc, char **argv, struct bench_args *a)
{
	*a = (struct bench_args){
	    .mode = BENCH_MALLOC,
	    .iters = 2000,
	    .reps = 11,
	    .warmup = 200,
	    .size = 1UL << 20,
	    .gap_ms = 0,
	};
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val)
			usage();
		i++;
		if (strcmp(opt, "--mode") == 0) {
			if (strcmp(val, "malloc") == 0)
				a->mode = BENCH_MALLOC;
			else if (strcmp(val, "async") == 0)
				a->mode = BENCH_ASYNC;
			else
				usage();
		} else if (strcmp(opt, "--iters") == 0) {
			a->iters = parse_ulong(val, 1, 100000000UL);
		} else if (strcmp(opt, "--reps") == 0) {
			a->reps = parse_ulong(val, 1, MAX_REPS);
		} else if (strcmp(opt, "--warmup") == 0) {
			a->warmup = parse_ulong(val, 0, 100000000UL);
		} else if (strcmp(opt, "--size") == 0) {
			a->size = parse_ulong(val, 1, 1UL << 40);
		} else if (strcmp(opt, "--gap-ms") == 0) {
			a->gap_ms = parse_ulong(val, 0, 10000);
		} else if (strcmp(opt, "--in-process") == 0) {
			a->in_process = parse_ulong(val, 0, 1) == 1;
		} else if (strcmp(opt, "--off") == 0) {
			a->off = parse_ulong(val, 0, 1) == 1;
		} else if (strcmp(opt, "--touch") == 0) {
			a->touch_kb = parse_ulong(val, 0, 1UL << 20);
		} else if (strcmp(opt, "--sweep") == 0) {
			sweep_kb = parse_ulong(val, 0, 64);
		} else if (strcmp(opt, "--branches") == 0) {
			branches_k = parse_ulong(val, 0, 64);
		} else {
			usage();
		}
	}
}

// --- the timed loops ----------------------------------------------------------------------------

static void
pairs_malloc(unsigned long n, size_t size)
{
	void *p;

	for (unsigned long i = 0; i < n; i++) {
		touch();
		CK(cudaMalloc(&p, size));
		touch();
		CK(cudaFree(p));
	}
}

static void
pairs_async(unsigned long n, size_t size, cudaStream_t s)
{
	void *p;

	for (unsigned long i = 0; i < n; i++) {
		touch();
		CK(cudaMallocAsync(&p, size, s));
		touch();
		CK(cudaFreeAsync(p, s));
	}
	CK(cudaStreamSynchronize(s));
}

static void
run_pairs(const struct bench_args *a, unsigned long n, cudaStream_t s)
{
	if (a->mode == BENCH_MALLOC)
		pairs_malloc(n, a->size);
	else
		pairs_async(n, a->size, s);
}

/* Keep the default pool's memory across synchronisations (the default threshold 0 lets CUDA
 * return it to the device at every sync), so the async pairs measure a warm pool. */
static void
keep_pool_warm(void)
{
	cudaMemPool_t pool;
	uint64_t threshold = UINT64_MAX;
	int dev;

	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetDefaultMemPool(&pool, dev));
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}

static double
median_of(const double *v, unsigned long n)
{
	static double sorted[MAX_REPS];

	memcpy(sorted, v, n * sizeof(v[0]));
	qsort(sorted, n, sizeof(sorted[0]), cmp_double);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

/* N pairs timed, ns per pair. */
static double
timed_pairs(const struct bench_args *a, cudaStream_t s)
{
	uint64_t t0 = mono_ns();
	run_pairs(a, a->iters, s);
	return (double)(mono_ns() - t0) / (double)a->iters;
}

/* The two states of an --in-process repetition, each a function of its own: under callgrind
 * their inclusive instruction counts are what this thread ran in each (run_hook_instructions.py),
 * the writer's thread not included. */
static __attribute__((noinline)) double
timed_paused(const struct bench_args *a, cudaStream_t s, void (*pause)(int))
{
	pause(1);
	double ns = timed_pairs(a, s);
	pause(0);
	return ns;
}

static __attribute__((noinline)) double
timed_recording(const struct bench_args *a, cudaStream_t s)
{
	return timed_pairs(a, s);
}

/* Paused with the library's CUPTI callbacks off (process-wide), on again after. */
static __attribute__((noinline)) double
timed_off(const struct bench_args *a, cudaStream_t s, void (*pause)(int), int (*cupti)(int))
{
	cupti(0);
	double ns = timed_paused(a, s, pause);
	cupti(1);
	return ns;
}

int
main(int argc, char **argv)
{
	struct bench_args a;
	static double samples[MAX_REPS], paused[MAX_REPS], added[MAX_REPS];
	static double off[MAX_REPS], callback[MAX_REPS];
	cudaStream_t s = NULL;
	int (*simulated)(void);
	void (*pause)(int) = NULL;
	int (*cupti)(int) = NULL;

	parse_args(argc, argv, &a);
	if (a.touch_kb) {
		touch_bytes = (size_t)a.touch_kb << 10;
		touch_buf = calloc(1, touch_bytes);
		if (!touch_buf) {
			fprintf(stderr, "hook_overhead: --touch %lu: out of memory\n", a.touch_kb);
			return 2;
		}
	}
	if (a.in_process) {
		*(void **)&pause = dlsym(RTLD_DEFAULT, "gmt_bench_pause");
		if (!pause) {
			fprintf(stderr,
				"hook_overhead: --in-process needs the tracer (gmt_bench_pause) "
				"preloaded\n");
			return 2;
		}
	}

	/* Context creation outside everything that is measured; cudaFree(NULL) is not an event. */
	CK(cudaFree(NULL));
	if (a.mode == BENCH_ASYNC) {
		CK(cudaStreamCreate(&s));
		keep_pool_warm();
	}
	/* the third state where the library holds CUPTI (its subscription is made by now) */
	if (pause && a.off) {
		*(void **)&cupti = dlsym(RTLD_DEFAULT, "gmt_bench_cupti");
		if (cupti && cupti(1) < 0)
			cupti = NULL;
	}

	/* The warm-up runs in chunks of at most N pairs with the gap after each, like the timed
	 * repetitions: long enough to touch a tracer's whole ring once without overflowing it. */
	for (unsigned long done = 0; done < a.warmup;) {
		unsigned long n = a.warmup - done < a.iters ? a.warmup - done : a.iters;
		run_pairs(&a, n, s);
		done += n;
		if (a.gap_ms)
			sleep_ms(a.gap_ms);
	}
	for (unsigned long r = 0; r < a.reps; r++) {
		if (a.gap_ms && r > 0)
			sleep_ms(a.gap_ms);
		if (!pause) {
			samples[r] = timed_pairs(&a, s);
			continue;
		}
		/* paused and recording (and off), the order rotating: none always runs first */
		int states = cupti ? 3 : 2;
		for (int k = 0; k < states; k++) {
			int which = (int)((k + r) % (unsigned long)states);
			if (which == 0)
				paused[r] = timed_paused(&a, s, pause);
			else if (which == 1)
				samples[r] = timed_recording(&a, s);
			else
				off[r] = timed_off(&a, s, pause, cupti);
		}
		added[r] = samples[r] - paused[r];
		if (cupti)
			callback[r] = paused[r] - off[r];
	}
	if (s)
		CK(cudaStreamDestroy(s));

	double median = median_of(samples, a.reps);

	*(void **)&simulated = dlsym(RTLD_DEFAULT, "simcuda_is_simulated");
	printf("{\"bench\":\"hook_overhead\",\"mode\":\"%s\",\"runtime\":\"%s\",\"size\":%lu,"
	       "\"iters\":%lu,\"reps\":%lu,\"warmup\":%lu,\"touch_kb\":%lu,\"sweep_kb\":%lu,"
	       "\"branches_k\":%lu,\"events\":%lu,"
	       "\"median_ns_per_pair\":%.1f,\"samples_ns_per_pair\":[",
	       a.mode == BENCH_MALLOC ? "malloc" : "async",
	       simulated && simulated() ? "sim" : "real", a.size, a.iters, a.reps, a.warmup,
	       a.touch_kb, sweep_kb, branches_k, 2 * (a.warmup + a.iters * a.reps), median);
	for (unsigned long r = 0; r < a.reps; r++)
		printf("%s%.1f", r ? "," : "", samples[r]);
	printf("]");
	if (pause) {
		printf(",\"in_process\":true,\"recording_median_ns_per_pair\":%.1f,"
		       "\"paused_median_ns_per_pair\":%.1f,\"added_median_ns_per_pair\":%.1f,"
		       "\"added_samples_ns_per_pair\":[",
		       median, median_of(paused, a.reps), median_of(added, a.reps));
		for (unsigned long r = 0; r < a.reps; r++)
			printf("%s%.1f", r ? "," : "", added[r]);
		printf("]");
	}
	if (cupti) {
		printf(",\"off_median_ns_per_pair\":%.1f,\"callback_median_ns_per_pair\":%.1f,"
		       "\"callback_samples_ns_per_pair\":[",
		       median_of(off, a.reps), median_of(callback, a.reps));
		for (unsigned long r = 0; r < a.reps; r++)
			printf("%s%.1f", r ? "," : "", callback[r]);
		printf("]");
	}
	printf("}\n");
	return 0;
}
