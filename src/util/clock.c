/*
 * @brief The events' clock (clock.h): the mode, and the writer's conversion of the counter into
 * CLOCK_MONOTONIC nanoseconds.
 *
 * The conversion pairs the counter with CLOCK_MONOTONIC at the writer's every loop (an anchor)
 * and maps a raw value from the latest anchor, at the rate measured from the first anchor to it:
 * the rate is known to a part in 10^4 after the first millisecond and better as the process
 * runs, and an event is converted within milliseconds of the latest anchor, so it is off by well
 * under a microsecond. NTP's slewing of CLOCK_MONOTONIC (at most 500 parts per million) is
 * followed the same way, anchor by anchor.
 */
#define _GNU_SOURCE
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#	include <cpuid.h>
#endif

_Atomic int gmt_clock_mode;

_Atomic uint64_t gmt_clock_ticks_per_ms;

/* The counter and CLOCK_MONOTONIC when the mode was decided (gmt_clock_estimate_ticks_per_ms()). */
static _Atomic uint64_t setup_tick, setup_ns;

/* The writer's thread only. */
static struct {
	bool have;
	uint64_t t0, m0;   /* the first anchor */
	uint64_t t1, m1;   /* the latest */
	uint64_t rate_q32; /* ns per tick, 32 fractional bits */
} anchors;

/* The kernel keeps time with the TSC: it found it constant, and the same on every CPU. */
static bool
kernel_uses_tsc(void)
{
	char buf[32] = {0};
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

static bool
invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1u;
#else
	return false;
#endif
}

#if defined(__x86_64__)
/* The counter and CLOCK_MONOTONIC at one instant: the closest of a few tries (an interrupt
 * between the reads would pair them badly). */
static void
pairing(uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 4; i++) {
		uint64_t a = __rdtsc(), m = gmt_clock_mono_ns(), b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = m;
		}
	}
}
#endif

void
gmt_clock_setup(void)
{
	if (atomic_load_explicit(&gmt_clock_mode, memory_order_relaxed) != GMT_CLOCK_UNSET)
		return;
	/* racing threads find the same answer: the last store wins harmlessly; inside the
	 * application's first CUDA call, perhaps, so its errno is kept */
	int saved_errno = errno;
	int mode = invariant_tsc() && kernel_uses_tsc() ? GMT_CLOCK_TSC : GMT_CLOCK_MONO;
	errno = saved_errno;
#if defined(__x86_64__)
	if (mode == GMT_CLOCK_TSC) {
		uint64_t expected = 0, tick, ns;
		pairing(&tick, &ns);
		if (atomic_compare_exchange_strong(&setup_ns, &expected, ns))
			atomic_store_explicit(&setup_tick, tick, memory_order_release);
	}
#endif
	atomic_store_explicit(&gmt_clock_mode, mode, memory_order_relaxed);
}

uint64_t
gmt_clock_estimate_ticks_per_ms(void)
{
#if defined(__x86_64__)
	uint64_t t0 = atomic_load_explicit(&setup_tick, memory_order_acquire);
	uint64_t m0 = atomic_load_explicit(&setup_ns, memory_order_relaxed);
	uint64_t t, m;
	pairing(&t, &m);
	if (!t0 || m < m0 + 100000u || t <= t0)
		return 0;
	uint64_t per_ms = (uint64_t)((unsigned __int128)(t - t0) * 1000000u / (m - m0));
	uint64_t none = 0; /* the writer's measure, when it came meanwhile, stays */
	atomic_compare_exchange_strong(&gmt_clock_ticks_per_ms, &none, per_ms);
	return per_ms;
#else
	return 0;
#endif
}

void
gmt_clock_anchor(void)
{
#if defined(__x86_64__)
	if (atomic_load_explicit(&gmt_clock_mode, memory_order_relaxed) != GMT_CLOCK_TSC)
		return;
	uint64_t t, m;
	pairing(&t, &m);
	if (!anchors.have) {
		anchors.t0 = t;
		anchors.m0 = m;
		anchors.have = true;
		/* a rate needs a span: a millisecond (the writer's thread, once; a counter that
		 * does not move in a second leaves every time at the anchor's) */
		for (int i = 0; i < 1000 && (m - anchors.m0 < 1000000u || t <= anchors.t0); i++) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			pairing(&t, &m);
		}
		anchors.t1 = anchors.t0;
		anchors.m1 = anchors.m0;
	}
	if (t <= anchors.t0 || m <= anchors.m0)
		return; /* not a later pairing: keep the last one */
	anchors.t1 = t;
	anchors.m1 = m;
	anchors.rate_q32 =
	    (uint64_t)(((unsigned __int128)(m - anchors.m0) << 32) / (t - anchors.t0));
	atomic_store_explicit(
	    &gmt_clock_ticks_per_ms,
	    (uint64_t)((unsigned __int128)(t - anchors.t0) * 1000000u / (m - anchors.m0)),
	    memory_order_relaxed);
#endif
}

uint64_t
gmt_clock_ns(uint64_t raw)
{
	if (atomic_load_explicit(&gmt_clock_mode, memory_order_relaxed) != GMT_CLOCK_TSC)
		return raw;
	if (!anchors.have)
		gmt_clock_anchor();
	/* from the latest anchor, either way */
	if (raw >= anchors.t1)
		return anchors.m1 +
		       (uint64_t)(((unsigned __int128)(raw - anchors.t1) * anchors.rate_q32) >> 32);
	uint64_t back =
	    (uint64_t)(((unsigned __int128)(anchors.t1 - raw) * anchors.rate_q32) >> 32);
	return back < anchors.m1 ? anchors.m1 - back : 0;
}

void
gmt_clock_reset(int mode)
{
	atomic_store_explicit(&gmt_clock_mode, mode, memory_order_relaxed);
	atomic_store_explicit(&gmt_clock_ticks_per_ms, 0, memory_order_relaxed);
	atomic_store_explicit(&setup_tick, 0, memory_order_relaxed);
	atomic_store_explicit(&setup_ns, 0, memory_order_relaxed);
	memset(&anchors, 0, sizeof(anchors));
}
