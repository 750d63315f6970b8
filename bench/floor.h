/*
 * @brief The floors of the hook-overhead benchmark (floor_cupti.c, floor_interpose.c): the bare
 * minimum of a recorded event, shared by both, so that what the tracer costs above it is ours.
 *
 * A recorded event at its least is: the re-entry guard (a thread-local depth), a timestamp
 * (CLOCK_MONOTONIC through the vDSO), a sequence number (one atomic counter of the process) and
 * one slot of a ring written and published (a release store). No consumer drains the ring here:
 * slots are overwritten round and round, so the floor excludes the writer thread; the tracer
 * pays for its writer on another core. Header-only; each floor library includes it once.
 */
#ifndef GMT_BENCH_FLOOR_H
#define GMT_BENCH_FLOOR_H

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#define FLOOR_TLS __thread __attribute__((tls_model("initial-exec")))
#define FLOOR_SLOTS (1u << 16)

/* One cache line: the turn that publishes it and the facts of an event. */
struct floor_slot {
	_Atomic uint64_t turn;
	uint64_t seq, ts, ptr, size;
	uint32_t what, tid;
	uint64_t pad[2];
};
_Static_assert(sizeof(struct floor_slot) == 64, "one cache line per slot");

static FLOOR_TLS unsigned floor_depth;
static FLOOR_TLS uint64_t floor_calls, floor_records; /* read at exit on the main thread */
/* gmt_bench_pause(): the tracer's pause, so that hook_overhead --in-process times the floor too
 * (run_hook_inprocess.py): paused, a wrapper forwards at once and a callback returns at once. */
static FLOOR_TLS int floor_paused;
static _Atomic uint64_t floor_seq;
static struct floor_slot *floor_ring;

/* Guard, timestamp, sequence number, slot write. */
static inline void
floor_record(uint32_t what, uint64_t ptr, uint64_t size)
{
	if (floor_depth++ == 0 && floor_ring) {
		uint64_t ts = mono_ns();
		uint64_t seq = atomic_fetch_add_explicit(&floor_seq, 1, memory_order_relaxed) + 1;
		struct floor_slot *s = &floor_ring[seq & (FLOOR_SLOTS - 1)];
		s->seq = seq;
		s->ts = ts;
		s->ptr = ptr;
		s->size = size;
		s->what = what;
		atomic_store_explicit(&s->turn, seq, memory_order_release);
		floor_records++;
	}
	floor_depth--;
}

static inline void
floor_map_ring(void)
{
	void *p = mmap(NULL, FLOOR_SLOTS * sizeof(struct floor_slot), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	floor_ring = p == MAP_FAILED ? NULL : p;
}

/* As the tracer's (src/capture/api.c): the calling thread's events paused (1) or recorded (0). */
__attribute__((visibility("default"))) void gmt_bench_pause(int on);
void
gmt_bench_pause(int on)
{
	floor_paused = on != 0;
}

/* One line for the runner: what this process's main thread saw (the benchmark is one thread). */
static inline void
floor_report(const char *name, const char *mode)
{
	char line[256];
	int n = snprintf(
	    line, sizeof(line),
	    "gmt-floor: {\"floor\":\"%s\",\"mode\":\"%s\",\"calls\":%llu,\"records\":%llu}\n", name,
	    mode, (unsigned long long)floor_calls, (unsigned long long)floor_records);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;
}

#endif
