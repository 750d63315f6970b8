/*
 * @brief Benchmark load generator: T threads producing allocation/free events at a target rate for
 * a fixed time, to find how many events per second the tracer's writer sustains without drops
 * (bench/run_writer_throughput.py steps the rate up and reads the trace trailer).
 *
 *   writer_throughput [--threads T] [--rate EVENTS_PER_S] [--seconds S] [--mode malloc|async]
 *                     [--size BYTES] [--settle-ms MS] [--vary SEED]
 *
 * Each thread does cudaMalloc+cudaFree (or cudaMallocAsync+cudaFreeAsync on its own stream) of
 * --size bytes (default 4 KiB) in a loop. With --rate R > 0 the threads share R events/s (2 per
 * pair): each thread runs to a schedule, doing a batch of pairs worth about 1 ms and then sleeping
 * until the schedule says the next batch is due (absolute deadlines, so a late batch is caught up
 * and the average rate stays R). With --rate 0 they run flat out (the raw maximum).
 *
 * --vary SEED (not 0) makes the events look like a real program's rather than one line repeated
 * (which zstd shrinks to a few bytes for nothing): each thread keeps 64 allocations live, and each
 * pair frees a random one of them and allocates in its place a size drawn log-uniformly from
 * 256 B to 1 MiB (so addresses, sizes and the live set vary), from one of 8 call sites (8 native
 * stacks). The live ones are freed at the end (counted in `events`).
 *
 * Before the load starts, the main thread does one pair and sleeps --settle-ms (default 200): a
 * tracer starts its writer at the first event, and the load should meet a running writer (the
 * start-up itself is measured with --settle-ms 0). At the end it prints ONE line of JSON on stdout:
 *
 *   {"bench":"writer_throughput","mode":"malloc","threads":T,"target_rate":R,"seconds":S,
 *    "events":E,"start_ns":T0,"elapsed_ns":NS,"offered_rate":..}
 *
 * `events` is what a tracer should record (settling pair included); `start_ns` is when the load
 * started (CLOCK_MONOTONIC, the clock of the trace's `ts`); `offered_rate` is what the producers
 * achieved over the load (below the target when the machine cannot keep up). Meant for
 * tests/simcuda with SIMCUDA_ALLOC_DELAY_NS=0, where a pair costs tens of nanoseconds, so the
 * writer is the bottleneck; it uses no simulation-specific symbol and also runs on the real
 * runtime.
 */
#define _GNU_SOURCE
#define BENCH_PROG "writer_throughput"
#include "bench_util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define BATCH_NS 1000000ULL /* a rate-limited thread produces about this much work per wake-up */

enum bench_mode {
	BENCH_MALLOC,
	BENCH_ASYNC,
};

struct bench_args {
	enum bench_mode mode;
	unsigned long threads;
	unsigned long rate; /* events/s over all threads; 0 = unlimited */
	unsigned long seconds_ms;
	unsigned long size;
	unsigned long settle_ms;
	unsigned long vary; /* seed; 0: one size, one site, alloc then free */
};

#define VARY_LIVE 64

struct producer {
	pthread_t thread;
	const struct bench_args *args;
	double rate;	   /* this thread's events/s, 0 = unlimited */
	uint64_t start_ns; /* common start */
	uint64_t end_ns;   /* stop producing at this time */
	unsigned long pairs;
	unsigned long events; /* calls that make an event (--vary frees some pairs lack) */
	uint64_t rng;
	void *live[VARY_LIVE];
};

static void
sleep_until(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
			      .tv_nsec = (long)(ns % 1000000000ULL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: writer_throughput [--threads T] [--rate EVENTS_PER_S] [--seconds S] "
		"[--mode malloc|async] [--size BYTES] [--settle-ms MS] [--vary SEED]\n");
	exit(2);
}

static unsigned long
parse_seconds_ms(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0.0) || v > 3600.0) {
		fprintf(stderr, "writer_throughput: bad duration '%s' (seconds, > 0)\n", s);
		exit(2);
	}
	return (unsigned long)(v * 1000.0 + 0.5);
}

static void
parse_args(int argc, char **argv, struct bench_args *a)
{
	*a = (struct bench_args){
	    .mode = BENCH_MALLOC,
	    .threads = 1,
	    .rate = 0,
	    .seconds_ms = 2000,
	    .size = 4096,
	    .settle_ms = 200,
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
		} else if (strcmp(opt, "--threads") == 0) {
			a->threads = parse_ulong(val, 1, MAX_THREADS);
		} else if (strcmp(opt, "--rate") == 0) {
			a->rate = parse_ulong(val, 0, 1000000000UL);
		} else if (strcmp(opt, "--seconds") == 0) {
			a->seconds_ms = parse_seconds_ms(val);
		} else if (strcmp(opt, "--size") == 0) {
			a->size = parse_ulong(val, 1, 1UL << 30);
		} else if (strcmp(opt, "--settle-ms") == 0) {
			a->settle_ms = parse_ulong(val, 0, 60000);
		} else if (strcmp(opt, "--vary") == 0) {
			a->vary = parse_ulong(val, 0, 1UL << 31);
		} else {
			usage();
		}
	}
}

// --- producers ----------------------------------------------------------------------------------

static void
one_pair(const struct bench_args *a, cudaStream_t s)
{
	void *p;

	if (a->mode == BENCH_MALLOC) {
		CK(cudaMalloc(&p, a->size));
		CK(cudaFree(p));
	} else {
		CK(cudaMallocAsync(&p, a->size, s));
		CK(cudaFreeAsync(p, s));
	}
}

static uint64_t
xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* --vary's allocation sites: 8 functions, so 8 native stacks */
#define VARY_SITE(n)                                                                               \
	__attribute__((noinline)) static void vary_site##n(const struct bench_args *a,             \
							   cudaStream_t s, void **p, size_t size)  \
	{                                                                                          \
		if (a->mode == BENCH_MALLOC)                                                       \
			CK(cudaMalloc(p, size));                                                   \
		else                                                                               \
			CK(cudaMallocAsync(p, size, s));                                           \
		__asm__ volatile("" ::: "memory");                                                 \
	}
VARY_SITE(0)
VARY_SITE(1)
VARY_SITE(2)
VARY_SITE(3)
VARY_SITE(4)
VARY_SITE(5)
VARY_SITE(6)
VARY_SITE(7)
static void (*const vary_sites[8])(const struct bench_args *, cudaStream_t, void **, size_t) = {
    vary_site0, vary_site1, vary_site2, vary_site3, vary_site4, vary_site5, vary_site6, vary_site7,
};

static void
vary_free(const struct bench_args *a, cudaStream_t s, void *p)
{
	if (a->mode == BENCH_MALLOC)
		CK(cudaFree(p));
	else
		CK(cudaFreeAsync(p, s));
}

/* one --vary pair: free a random live allocation, allocate a new one in its place */
static void
vary_pair(struct producer *pr, cudaStream_t s)
{
	const struct bench_args *a = pr->args;
	uint64_t r = xorshift(&pr->rng);
	unsigned slot = (unsigned)(r % VARY_LIVE);
	/* log-uniform from 2^8 to 2^20 bytes, in 256-byte steps */
	unsigned shift = 8 + (unsigned)((r >> 8) % 13);
	size_t size =
	    ((size_t)1 << shift) + (((r >> 16) & (((size_t)1 << shift) - 1)) & ~(size_t)255);

	if (pr->live[slot]) {
		vary_free(a, s, pr->live[slot]);
		pr->events++;
	}
	vary_sites[(r >> 40) & 7](a, s, &pr->live[slot], size);
	pr->events++;
}

static void *
producer_main(void *arg)
{
	struct producer *pr = arg;
	const struct bench_args *a = pr->args;
	cudaStream_t s = NULL;
	unsigned long batch = 64; /* unlimited: check the clock every 64 pairs */

	if (a->mode == BENCH_ASYNC)
		CK(cudaStreamCreate(&s));
	if (pr->rate > 0.0) {
		/* pairs per ~1 ms at this thread's rate, at least one */
		batch = (unsigned long)(pr->rate / 2.0 * (double)BATCH_NS / 1e9);
		if (batch < 1)
			batch = 1;
	}
	sleep_until(pr->start_ns);
	for (;;) {
		uint64_t now = mono_ns();

		if (now >= pr->end_ns)
			break;
		if (pr->rate > 0.0) {
			/* when the next batch is due: pairs done so far at 2 events per pair */
			uint64_t due =
			    pr->start_ns + (uint64_t)((double)pr->pairs * 2.0 * 1e9 / pr->rate);
			if (due > now) {
				sleep_until(due < pr->end_ns ? due : pr->end_ns);
				continue;
			}
		}
		for (unsigned long i = 0; i < batch; i++) {
			if (a->vary) {
				vary_pair(pr, s);
			} else {
				one_pair(a, s);
				pr->events += 2;
			}
		}
		pr->pairs += batch;
	}
	for (unsigned i = 0; i < VARY_LIVE; i++)
		if (pr->live[i]) {
			vary_free(a, s, pr->live[i]);
			pr->live[i] = NULL;
			pr->events++;
		}
	if (s) {
		CK(cudaStreamSynchronize(s));
		CK(cudaStreamDestroy(s));
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct bench_args a;
	static struct producer prs[MAX_THREADS];
	unsigned long events = 0;

	parse_args(argc, argv, &a);
	CK(cudaFree(NULL)); /* context, not an event */
	if (a.settle_ms) {
		one_pair(&a, NULL);
		events += 2;
		sleep_until(mono_ns() + (uint64_t)a.settle_ms * 1000000ULL);
	}

	uint64_t start = mono_ns() + 10000000ULL; /* 10 ms: let every thread be created first */
	uint64_t end = start + (uint64_t)a.seconds_ms * 1000000ULL;
	for (unsigned long t = 0; t < a.threads; t++) {
		prs[t] = (struct producer){
		    .args = &a,
		    .rate = (double)a.rate / (double)a.threads,
		    .start_ns = start,
		    .end_ns = end,
		    .rng = 0x9e3779b97f4a7c15ULL * (a.vary + 1) + t,
		};
	}
	for (unsigned long t = 0; t < a.threads; t++) {
		int rc = pthread_create(&prs[t].thread, NULL, producer_main, &prs[t]);
		if (rc != 0) {
			fprintf(stderr, "writer_throughput: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	for (unsigned long t = 0; t < a.threads; t++) {
		pthread_join(prs[t].thread, NULL);
		events += prs[t].events;
	}
	uint64_t elapsed = mono_ns() - start;
	unsigned long load = events - (a.settle_ms ? 2 : 0);

	printf(
	    "{\"bench\":\"writer_throughput\",\"mode\":\"%s\",\"threads\":%lu,\"target_rate\":%lu,"
	    "\"seconds\":%.3f,\"size\":%lu,\"settle_ms\":%lu,\"vary\":%lu,\"events\":%lu,\"start_"
	    "ns\":%llu,"
	    "\"elapsed_ns\":%llu,\"offered_rate\":%.0f}\n",
	    a.mode == BENCH_MALLOC ? "malloc" : "async", a.threads, a.rate,
	    (double)a.seconds_ms / 1000.0, a.size, a.settle_ms, a.vary, events,
	    (unsigned long long)start, (unsigned long long)elapsed,
	    (double)load * 1e9 / (double)elapsed);
	return 0;
}
