/*
 * A steady churn for the bounded-mode tests (run_bounded.py): what a long job does to memory,
 * paced to a given rate of events for a given time.
 *
 *   churn SECONDS EVENTS_PER_S [THREADS]
 *
 * A fixed live set of 64 buffers of 256 KiB made at the start (half freed at the end). Each
 * thread, per step: three short-lived temporaries from 3 call sites (4 KiB .. 512 KiB, 64 KiB,
 * 1 MiB) freed in varied order, a pinned staging buffer every 8th step; the steps are paced to
 * EVENTS_PER_S in all. Thread 0, once a second: 4 KiB kept for good (the slow leak) and a marker;
 * once, at half time, a burst of 16 MiB buffers (the peak) and a cudaMalloc too large for any
 * device (a failure, then a smaller one that succeeds). The rate moves only the temporaries: what
 * a bounded trace must keep (the live set, the leak, the markers) goes with time. Prints the
 * successful allocations and the bytes live at exit; exit
 * code 0, 1 on a CUDA error.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gpumemtrace.h>

#define LIVE 64
#define KiB 1024UL
#define MiB (1024UL * 1024UL)

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, "churn: %s: %s\n", #call, cudaGetErrorString(rc_));        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static double seconds, rate;
static int nthreads = 1;

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* distinct call sites: each its own function, not inlined */
static __attribute__((noinline)) void *
temp_a(size_t n)
{
	void *p;
	CK(cudaMalloc(&p, n));
	return p;
}

static __attribute__((noinline)) void *
temp_b(size_t n)
{
	void *p;
	CK(cudaMalloc(&p, n));
	return p;
}

static __attribute__((noinline)) void *
temp_c(size_t n)
{
	void *p;
	CK(cudaMalloc(&p, n));
	return p;
}

static __attribute__((noinline)) void *
staging(size_t n)
{
	void *p;
	CK(cudaMallocHost(&p, n));
	return p;
}

static __attribute__((noinline)) void *
keep(size_t n)
{
	void *p;
	CK(cudaMalloc(&p, n));
	return p;
}

static __attribute__((noinline)) void *
leak(void)
{
	void *p;
	CK(cudaMalloc(&p, 4 * KiB));
	return p;
}

static __attribute__((noinline)) void
burst_and_fail(void)
{
	void *big[16], *p;
	for (int i = 0; i < 16; i++)
		CK(cudaMalloc(&big[i], 16 * MiB));
	GMT_MARK("burst");
	for (int i = 0; i < 16; i++)
		CK(cudaFree(big[i]));
	if (cudaMalloc(&p, (size_t)1 << 50) == cudaSuccess) /* more than any device: fails */
		CK(cudaFree(p));
	cudaGetLastError();
	CK(cudaMalloc(&p, 1 * MiB)); /* the retry, smaller: the failure still counts */
	CK(cudaFree(p));
}

static _Atomic uint64_t allocations; /* successful, for run_bounded.py to compare */
static _Atomic uint64_t leaked;

static void *
run(void *arg)
{
	int id = (int)(intptr_t)arg;
	unsigned x = 12345u + (unsigned)id;
	/* one step is 6.25 events on average (3 temporaries, a pinned buffer every 8th step) */
	double steps_per_s = rate / 6.25 / nthreads;
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
	uint64_t next_leak = start + 1000000000ULL, next_mark = start + 1000000000ULL;
	bool burst_done = id != 0;

	for (uint64_t step = 0;; step++) {
		uint64_t t = now_ns();
		if (t >= end)
			break;
		/* pace: step N is due at start + N / steps_per_s */
		uint64_t due = start + (uint64_t)((double)step / steps_per_s * 1e9);
		if (due > t) {
			struct timespec ts = {(time_t)((due - t) / 1000000000ULL),
					      (long)((due - t) % 1000000000ULL)};
			nanosleep(&ts, NULL);
		}
		x = x * 1103515245u + 12345u;
		void *a = temp_a(4 * KiB << (x >> 28 & 7));
		void *b = temp_b(64 * KiB);
		void *c = temp_c(1 * MiB);
		void *h = (step % 8 == 0) ? staging(256 * KiB) : NULL;
		allocations += 3 + (h != NULL);
		if (x >> 16 & 1) {
			CK(cudaFree(a));
			CK(cudaFree(b));
		} else {
			CK(cudaFree(b));
			CK(cudaFree(a));
		}
		CK(cudaFree(c));
		if (h)
			CK(cudaFreeHost(h));
		if (id == 0 && t >= next_leak) { /* the slow leak: 4 KiB a second, never freed */
			(void)leak();
			allocations++;
			leaked += 4 * KiB;
			next_leak += 1000000000ULL;
		}
		if (id == 0 && t >= next_mark) {
			GMT_MARK("step");
			next_mark += 1000000000ULL;
		}
		if (!burst_done && t >= start + (end - start) / 2) {
			burst_and_fail();
			allocations += 17;
			burst_done = true;
		}
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: churn SECONDS EVENTS_PER_S [THREADS]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	rate = atof(argv[2]);
	if (argc > 3)
		nthreads = atoi(argv[3]);
	if (seconds <= 0 || rate <= 0 || nthreads < 1 || nthreads > 64)
		return 2;
	CK(cudaFree(NULL));
	GMT_MARK("start");
	void *live[LIVE]; /* the long-lived set: half of it is still live at exit */
	for (int i = 0; i < LIVE; i++)
		live[i] = keep(256 * KiB);
	allocations += LIVE;
	pthread_t th[64];
	for (int i = 1; i < nthreads; i++)
		pthread_create(&th[i], NULL, run, (void *)(intptr_t)i);
	run((void *)(intptr_t)0);
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < LIVE; i += 2)
		CK(cudaFree(live[i]));
	GMT_MARK("end");
	printf("allocations %llu live_bytes %lu\n", (unsigned long long)allocations,
	       (unsigned long)(LIVE / 2 * 256 * KiB + leaked));
	return 0;
}
