/*
 * @brief The part of every recorded event that does not depend on how the call was seen: its
 * order (an atomic increment of the process's sequence), its clock (CLOCK_MONOTONIC) and the
 * ring's push (a compare-and-swap on the head, the 128-byte core copied into the slot, the
 * commit), timed on this machine with a consumer draining the ring as the tracer's writer does
 * (every millisecond, all that is there). No CUDA, no tracer: src/ring itself and the same
 * operations core.c does, so that a host's floor for any event in this design is measured, not
 * assumed (docs/performance.md, issue 30).
 *
 *   BUILD/bench/event_core [N [GAP]]
 *
 * Parts, each a loop of N events (default 200,000), 11 repetitions, the median ns per event:
 * `seq` (the increment), `clock` (clock_gettime), `tsc` (the time-stamp counter, for
 * comparison), `push` (claim, copy, commit), `stamp+push` (the three together: an event's
 * core, what a tracer in this design pays at the least); then how they combine: `seq+push`
 * (two locked instructions, no clock), `tsc+push` (one, and the counter), `tsc+seq+push` (the
 * tracer's core as capture.h takes it: the seq, the counter, then the push) and
 * `claim+seq+tsc` (the slot claimed first, the seq and the counter written into it: the
 * counter's read after the locked instructions, not between them). Between two events the
 * loop does GAP rounds of arithmetic (default 500, about 600 ns here: the application's CUDA
 * call, during which the prefetch of the next slot lands); each part is reported less the same
 * loop with nothing in it (`gap`, reported too), in the same repetition. One JSON line on
 * stdout.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#	include <x86intrin.h>
#endif

#include "bench_clock.h"
#include "ring/ring.h"

#define REPS 11
#define SLOTS 65536 /* the tracer's default ring */

static struct gmt_ring ring;
static _Atomic uint64_t next_seq;
static _Atomic bool stop;
static _Atomic uint64_t popped;

/* The writer's rhythm: sleep 1 ms, then take everything there is. */
static void *
consumer(void *arg)
{
	struct gmt_event ev;
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_acquire)) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		uint64_t n = 0;
		while (gmt_ring_pop(&ring, &ev))
			n++;
		atomic_fetch_add_explicit(&popped, n, memory_order_relaxed);
	}
	while (gmt_ring_pop(&ring, &ev))
		atomic_fetch_add_explicit(&popped, 1, memory_order_relaxed);
	return NULL;
}

enum part {
	P_GAP,
	P_SEQ,
	P_CLOCK,
	P_TSC,
	P_PUSH,
	P_CORE,
	P_SEQ_PUSH,
	P_TSC_PUSH,
	P_TRACER,
	P_CLAIMED,
	P_COUNT
};
static const char *const part_names[P_COUNT] = {
    "gap",	  "seq",      "clock",	  "tsc",	  "push",
    "stamp+push", "seq+push", "tsc+push", "tsc+seq+push", "claim+seq+tsc"};
static unsigned long gap_rounds = 500;

/* The application's work between two events: a dependent chain the compiler cannot drop. */
static inline uint64_t
gap(uint64_t x)
{
	for (unsigned long i = 0; i < gap_rounds; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static volatile uint64_t sink;

/* N events of @p part; ns per event. */
static double
run(enum part part, unsigned long n)
{
	struct gmt_event ev;
	uint64_t acc = 0, drops = 0;

	memset(&ev, 0, sizeof(ev));
	ev.op = 1;
	ev.size = 1 << 20;
	uint64_t t0 = mono_ns();
	for (unsigned long i = 0; i < n; i++) {
		switch (part) {
		case P_SEQ:
			acc += atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed);
			break;
		case P_CLOCK: acc += mono_ns(); break;
		case P_TSC:
#if defined(__x86_64__)
			acc += __rdtsc();
#endif
			break;
		case P_PUSH:
			ev.ptr = i;
			drops += !gmt_ring_push_core(&ring, &ev);
			break;
		case P_CORE:
			ev.seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
			ev.ts_ns = mono_ns();
			ev.ptr = i;
			drops += !gmt_ring_push_core(&ring, &ev);
			break;
		case P_SEQ_PUSH: /* two locked instructions an event, no clock */
			ev.seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
			ev.ptr = i;
			drops += !gmt_ring_push_core(&ring, &ev);
			break;
		case P_TSC_PUSH: /* one locked instruction, the counter's clock */
#if defined(__x86_64__)
			ev.ts_ns = __rdtsc();
#endif
			ev.ptr = i;
			drops += !gmt_ring_push_core(&ring, &ev);
			break;
		case P_CLAIMED: { /* the slot claimed first, then the seq and the counter into it */
			uint64_t pos;
			struct gmt_event *slot = gmt_ring_claim(&ring, &pos);
			if (!slot) {
				drops++;
				break;
			}
			memcpy(slot, &ev, GMT_EVENT_CORE_BYTES);
			slot->ptr = i;
			slot->seq =
			    atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
#if defined(__x86_64__)
			slot->ts_ns = __rdtsc();
#endif
			gmt_ring_commit(&ring, pos);
			break;
		}
		case P_TRACER: /* the tracer's core (capture.h): seq, the counter, the push */
			ev.seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
#if defined(__x86_64__)
			ev.ts_ns = __rdtsc();
#endif
			ev.ptr = i;
			drops += !gmt_ring_push_core(&ring, &ev);
			break;
		default: break;
		}
		acc = gap(acc);
	}
	double ns = (double)(mono_ns() - t0) / (double)n;
	sink = acc;
	if (drops) {
		fprintf(
		    stderr,
		    "event_core: %llu of %lu events found the ring full: fewer per repetition\n",
		    (unsigned long long)drops, n);
		exit(1);
	}
	return ns;
}

int
main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
	if (argc > 2)
		gap_rounds = strtoul(argv[2], NULL, 10);
	double samples[P_COUNT][REPS];
	pthread_t th;

	if (n == 0 || n > SLOTS * 64UL) {
		fprintf(stderr, "usage: event_core [N [GAP]], 0 < N <= %lu\n", SLOTS * 64UL);
		return 2;
	}
	void *mem = mmap(NULL, gmt_ring_bytes(SLOTS), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("event_core: mmap");
		return 1;
	}
	gmt_ring_init(&ring, mem, SLOTS);
	if (pthread_create(&th, NULL, consumer, NULL) != 0) {
		fprintf(stderr, "event_core: cannot start the consumer\n");
		return 1;
	}
	/* a lap of the ring first: its pages mapped, as in a tracer that has run a while */
	for (unsigned long i = 0; i < SLOTS; i += 1000) {
		run(P_PUSH, 1000);
		struct timespec ms = {0, 2000000};
		nanosleep(&ms, NULL);
	}
	for (int r = 0; r < REPS; r++) {
		for (int p = 0; p < P_COUNT; p++) {
			/* at most half a ring between drains: the pushes never find it full */
			unsigned long done = 0;
			double total = 0;
			while (done < n) {
				unsigned long chunk = n - done < 20000 ? n - done : 20000;
				total += run((enum part)p, chunk) * (double)chunk;
				done += chunk;
				if (p >= P_PUSH) {
					struct timespec ms = {0, 5000000};
					nanosleep(&ms, NULL);
				}
			}
			samples[p][r] = total / (double)n;
		}
	}
	atomic_store_explicit(&stop, true, memory_order_release);
	pthread_join(th, NULL);

	printf("{\"bench\":\"event_core\",\"n\":%lu,\"gap_rounds\":%lu,\"reps\":%d,"
	       "\"ns_per_event\":{",
	       n, gap_rounds, REPS);
	for (int p = 0; p < P_COUNT; p++) {
		double d[REPS];
		for (int r = 0; r < REPS; r++) /* the part alone: less the empty loop's time */
			d[r] = p == P_GAP ? samples[p][r] : samples[p][r] - samples[P_GAP][r];
		qsort(d, REPS, sizeof(double), cmp_double);
		printf("%s\"%s\":%.1f", p ? "," : "", part_names[p], d[REPS / 2]);
	}
	printf("},\"popped\":%llu}\n", (unsigned long long)atomic_load(&popped));
	return 0;
}
