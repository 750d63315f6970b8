/*
 * The events' clock (util/clock.h): what the capture side reads raw comes out of the writer's
 * conversion as CLOCK_MONOTONIC, close to a clock_gettime() read at the same instant, also for a
 * value read before the writer's first anchor and one read long after it; monotonic where the
 * raw values are; the pool readings' throttle in raw units. The counter's mode runs where the
 * kernel keeps time with it (this machine's clocksource is tsc, or the mode part is skipped).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "util/clock.h"

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t
absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* A raw read between two clock_gettime() reads converts to within them (and @p slack ns). */
static void
check_between(uint64_t slack)
{
	uint64_t before = gmt_clock_mono_ns(), raw = gmt_clock_raw(), after = gmt_clock_mono_ns();
	gmt_clock_anchor();
	uint64_t ns = gmt_clock_ns(raw);
	if (ns + slack < before || ns > after + slack) {
		fprintf(stderr, "converted %llu not in [%llu, %llu] +- %llu\n",
			(unsigned long long)ns, (unsigned long long)before,
			(unsigned long long)after, (unsigned long long)slack);
		exit(1);
	}
}

int
main(void)
{
	/* CLOCK_MONOTONIC mode: the raw value is ns, the conversion none, the span itself */
	gmt_clock_reset(GMT_CLOCK_MONO);
	uint64_t a = gmt_clock_mono_ns(), raw = gmt_clock_raw(), b = gmt_clock_mono_ns();
	CHECK(raw >= a && raw <= b);
	gmt_clock_anchor();
	CHECK_EQ_U64(gmt_clock_ns(raw), raw);
	CHECK_EQ_U64(gmt_clock_raw_span(1000000), 1000000);

	/* the decision: the same at every call, and only the two modes */
	gmt_clock_reset(GMT_CLOCK_UNSET);
	(void)gmt_clock_raw();
	int mode = atomic_load(&gmt_clock_mode);
	CHECK(mode == GMT_CLOCK_MONO || mode == GMT_CLOCK_TSC);
	gmt_clock_setup();
	CHECK(atomic_load(&gmt_clock_mode) == mode);
	if (mode != GMT_CLOCK_TSC) {
		printf("clock: the kernel does not keep time with the TSC here: counter mode not "
		       "tested\n");
		return 0;
	}

	/* the counter's mode, from a fresh start */
	gmt_clock_reset(GMT_CLOCK_UNSET);
	gmt_clock_setup();
	CHECK(atomic_load(&gmt_clock_mode) == GMT_CLOCK_TSC);
	/* before the writer's rate, the capture side's own: none in the first 100 us (every pool
	 * reading is due), then from the decision's instant to now */
	uint64_t first = gmt_clock_raw_span(1000000);
	CHECK(first == 0 || (first > 100000 && first < 100000000));
	sleep_ms(20);
	uint64_t estimate = gmt_clock_raw_span(1000000);
	CHECK(estimate > 100000 && estimate < 100000000);
	uint64_t early_before = gmt_clock_mono_ns(), early = gmt_clock_raw();
	uint64_t early_after = gmt_clock_mono_ns();
	sleep_ms(5);
	gmt_clock_anchor(); /* the first: waits a millisecond for a rate */
	uint64_t per_ms = gmt_clock_raw_span(1000000);
	CHECK(per_ms > 100000);	   /* > 100 MHz */
	CHECK(per_ms < 100000000); /* < 100 GHz */
	/* within 5% (its span, 20 ms or more, read in two pairings a loaded machine may delay) */
	CHECK(absdiff(per_ms, estimate) < per_ms / 20);
	/* read before the first anchor, converted after it: still its instant */
	uint64_t ns = gmt_clock_ns(early);
	CHECK(ns + 20000 >= early_before && ns <= early_after + 20000);

	/* at the writer's pace: anchors every few ms, values within tens of microseconds of a
	 * clock_gettime() read around them (the loaded CI machine: generous), and in order */
	uint64_t last = 0;
	for (int i = 0; i < 20; i++) {
		check_between(50000);
		uint64_t r = gmt_clock_raw();
		gmt_clock_anchor();
		uint64_t n = gmt_clock_ns(r);
		CHECK(n + 1000 >=
		      last); /* later reads, later times (a µs for the rate's refinement) */
		last = n;
		sleep_ms(2);
	}
	/* after a longer stretch the rate is better known: a value 200 ms old converts right */
	uint64_t old_before = gmt_clock_mono_ns(), old = gmt_clock_raw();
	uint64_t old_after = gmt_clock_mono_ns();
	sleep_ms(200);
	gmt_clock_anchor();
	ns = gmt_clock_ns(old);
	CHECK(absdiff(ns, old_before / 2 + old_after / 2) < 50000 + (old_after - old_before));
	check_between(50000);
	printf("clock: %llu ticks per ms; conversions within 50 us of CLOCK_MONOTONIC\n",
	       (unsigned long long)gmt_clock_raw_span(1000000));
	return 0;
}
