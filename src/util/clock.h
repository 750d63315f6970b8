/*
 * @brief The events' clock. An event's time is read inside the application's call, where
 * clock_gettime(CLOCK_MONOTONIC) costs 15-20 ns on the development VM and 27-40 on the GPU hosts,
 * the time-stamp counter about half (bench/event_core.c, docs/performance.md). Where the kernel
 * itself keeps time with the TSC (its clocksource is "tsc": the counter runs at a constant rate,
 * the same on every CPU), the capture side stores the raw counter and the writer turns it into
 * CLOCK_MONOTONIC nanoseconds, the clock of the trace (docs/trace-format.md); elsewhere the raw
 * value is CLOCK_MONOTONIC itself and the conversion is none.
 *
 * The capture side: gmt_clock_raw() (any thread, any time; the first call decides the mode if
 * gmt_clock_setup() has not, the same way on every thread) and gmt_clock_raw_span(). The writer's
 * thread alone: gmt_clock_anchor() before it converts, gmt_clock_ns() for each event.
 */
#ifndef GMT_UTIL_CLOCK_H
#define GMT_UTIL_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#	include <x86intrin.h>
#endif

enum gmt_clock_mode {
	GMT_CLOCK_UNSET = 0,
	GMT_CLOCK_MONO, /* the raw value is CLOCK_MONOTONIC in ns */
	GMT_CLOCK_TSC,	/* the raw value is the time-stamp counter */
};

extern _Atomic int gmt_clock_mode;
/* The counter's ticks per millisecond, once the writer has measured them (0 before). */
extern _Atomic uint64_t gmt_clock_ticks_per_ms;

/** Decide the mode (idempotent: every caller finds the same). The library's constructor. */
void gmt_clock_setup(void);

static inline uint64_t
gmt_clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/** Now, in the raw unit of this process (gmt_clock_ns() turns it into ns). */
static inline uint64_t
gmt_clock_raw(void)
{
	int mode = atomic_load_explicit(&gmt_clock_mode, memory_order_relaxed);
#if defined(__x86_64__)
	if (__builtin_expect(mode == GMT_CLOCK_TSC, 1))
		return __rdtsc();
#endif
	if (__builtin_expect(mode == GMT_CLOCK_UNSET, 0)) {
		gmt_clock_setup();
		return gmt_clock_raw();
	}
	return gmt_clock_mono_ns();
}

/** gmt_clock_raw_span()'s rate before the writer has measured one: from the mode's decision
 * to now, once 100 us lie between them (0 before: a span of nothing). */
uint64_t gmt_clock_estimate_ticks_per_ms(void);

/** About @p ns nanoseconds (at most a few seconds) in the raw unit, for throttling on the
 * capture side; 0 in the first 100 us of the counter's mode (no rate yet). */
static inline uint64_t
gmt_clock_raw_span(uint64_t ns)
{
	if (atomic_load_explicit(&gmt_clock_mode, memory_order_relaxed) != GMT_CLOCK_TSC)
		return ns;
	uint64_t per_ms = atomic_load_explicit(&gmt_clock_ticks_per_ms, memory_order_relaxed);
	if (__builtin_expect(per_ms == 0, 0))
		per_ms = gmt_clock_estimate_ticks_per_ms();
	return ns * per_ms / 1000000u;
}

/** The writer's thread: a new pairing of the counter with CLOCK_MONOTONIC, before converting
 * what it drained. The first call waits until a millisecond separates two pairings (its rate). */
void gmt_clock_anchor(void);

/** The writer's thread: @p raw (gmt_clock_raw()) in CLOCK_MONOTONIC ns. */
uint64_t gmt_clock_ns(uint64_t raw);

/** For tests: force @p mode (GMT_CLOCK_MONO or GMT_CLOCK_TSC) and forget the anchors. */
void gmt_clock_reset(int mode);

#endif
