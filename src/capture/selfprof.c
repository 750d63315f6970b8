/*
 * @brief The tracer timing itself (selfprof.h).
 */
#define _GNU_SOURCE
#include "capture/selfprof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define SLOTS 256 /* threads counted; later ones are not */

struct slot {
	uint64_t ticks[GMT_PROF_COUNT];
	uint64_t count[GMT_PROF_COUNT];
} __attribute__((aligned(64)));

bool gmt_prof_on;

static struct slot slots[SLOTS];
static _Atomic unsigned slots_taken;
static _Atomic uint64_t uncounted; /* probes of threads past SLOTS */
static __thread struct slot *mine __attribute__((tls_model("initial-exec")));
static __thread bool full __attribute__((tls_model("initial-exec")));
static char out_path[4096];
static uint64_t tick0, ns0; /* for the ticks' rate */

static uint64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void
gmt_prof_setup(const char *path)
{
	if (!path || !path[0])
		return;
	if (strlen(path) >= sizeof(out_path)) {
		gmt_warn("GPUMEMTRACE_SELF_PROFILE: the path is too long; no self-profile");
		return;
	}
	strcpy(out_path, path);
	tick0 = gmt_prof_ticks();
	ns0 = mono_ns();
	gmt_prof_on = true;
}

void
gmt_prof_add_slow(enum gmt_prof_part part, uint64_t ticks)
{
	struct slot *s = mine;

	if (!s) {
		if (full) {
			atomic_fetch_add_explicit(&uncounted, 1, memory_order_relaxed);
			return;
		}
		unsigned i = atomic_fetch_add_explicit(&slots_taken, 1, memory_order_relaxed);
		if (i >= SLOTS) {
			full = true;
			atomic_fetch_add_explicit(&uncounted, 1, memory_order_relaxed);
			return;
		}
		s = mine = &slots[i];
	}
	/* this thread's slot alone: plain adds; the exit reads them after the threads' calls */
	s->ticks[part] += ticks;
	s->count[part]++;
}

/* What one begin/end pair costs, in ticks (the median of short batches). */
static double
probe_ticks(void)
{
	double best[9];
	for (int r = 0; r < 9; r++) {
		uint64_t t0 = gmt_prof_ticks(), sum = 0;
		for (int i = 0; i < 1000; i++) {
			uint64_t a = gmt_prof_ticks();
			sum += gmt_prof_ticks() - a;
		}
		(void)t0;
		best[r] = (double)sum / 1000.0;
	}
	for (int i = 1; i < 9; i++) /* insertion sort, then the median */
		for (int j = i; j > 0 && best[j] < best[j - 1]; j--) {
			double t = best[j];
			best[j] = best[j - 1];
			best[j - 1] = t;
		}
	return best[4];
}

void
gmt_prof_write(void)
{
	static const char *const names[GMT_PROF_COUNT] = {
#define GMT_PROF_NAME(id, name) [GMT_PROF_##id] = name,
	    GMT_PROF_PARTS(GMT_PROF_NAME)
#undef GMT_PROF_NAME
	};
	uint64_t ticks[GMT_PROF_COUNT] = {0}, count[GMT_PROF_COUNT] = {0};
	char buf[8192];
	size_t len = 0;

	if (!gmt_prof_on)
		return;
	gmt_prof_on = false;
	uint64_t dt = gmt_prof_ticks() - tick0, dns = mono_ns() - ns0;
	double ns_per_tick = dt ? (double)dns / (double)dt : 1.0;
	unsigned n = atomic_load(&slots_taken);
	if (n > SLOTS)
		n = SLOTS;
	for (unsigned i = 0; i < n; i++)
		for (int p = 0; p < GMT_PROF_COUNT; p++) {
			ticks[p] += slots[i].ticks[p];
			count[p] += slots[i].count[p];
		}
	len += (size_t)snprintf(buf + len, sizeof(buf) - len,
				"{\"self_profile\":1,\"pid\":%d,\"ns_per_tick\":%.6f,"
				"\"probe_ns\":%.2f,\"threads\":%u,\"uncounted\":%llu,\"parts\":{",
				(int)getpid(), ns_per_tick, probe_ticks() * ns_per_tick, n,
				(unsigned long long)atomic_load(&uncounted));
	for (int p = 0, first = 1; p < GMT_PROF_COUNT && len < sizeof(buf); p++) {
		if (!count[p])
			continue;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%s\"%s\":{\"count\":%llu,\"ns\":%.0f}", first ? "" : ",",
					names[p], (unsigned long long)count[p],
					(double)ticks[p] * ns_per_tick);
		first = 0;
	}
	if (len < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "}}\n");
	if (len >= sizeof(buf)) {
		gmt_warn(
		    "GPUMEMTRACE_SELF_PROFILE: the profile does not fit its buffer; not written");
		return;
	}
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		char value[GMT_LOG_VALUE_MAX];
		int e = errno;
		gmt_warn("GPUMEMTRACE_SELF_PROFILE=%s cannot be written: %s",
			 gmt_log_value(value, out_path), strerror(e));
	}
	if (fd >= 0)
		close(fd);
}
