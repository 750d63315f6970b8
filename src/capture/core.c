/*
 * @brief The capture side's core (capture.h): tracer state, the re-entry depth, the stamp (seq,
 * clock, tid), the options, and gmt_emit() into the ring. Everything here runs on application
 * threads inside their CUDA calls; it knows the ring and util, nothing of the writer: the
 * process's first event asks the lifecycle (lifecycle.c) to start it.
 */
#define _GNU_SOURCE
#include "capture/capture.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring.h"
#include "util/clock.h"
#include "util/options.h"

_Atomic int gmt_state = GMT_STATE_UNINIT;
__thread unsigned gmt_depth __attribute__((tls_model("initial-exec")));

__thread int32_t gmt_core_tid __attribute__((tls_model("initial-exec")));
__thread int *gmt_core_errno_at __attribute__((tls_model("initial-exec")));

static struct gmt_options opts;
static _Atomic bool opts_loaded;
struct gmt_ring gmt_core_events;
_Atomic uint64_t gmt_core_next_seq;
static _Atomic uint64_t dropped;
static _Atomic uint64_t dropped_readings; /* of dropped: usage readings */

// --- small facts --------------------------------------------------------------------------------

int32_t
gmt_tid_slow(void)
{
	gmt_core_tid = (int32_t)syscall(SYS_gettid);
	return gmt_core_tid;
}

int *
gmt_errno_at_slow(void)
{
	gmt_core_errno_at = &errno; /* the thread's own, for its life (a fork child's too) */
	return gmt_core_errno_at;
}

const struct gmt_options *
gmt_tracer_options(void)
{
	if (!atomic_load_explicit(&opts_loaded, memory_order_acquire)) {
		gmt_options_load(&opts, (gmt_getenv_fn)getenv, gmt_options_secure());
		atomic_store_explicit(&opts_loaded, true, memory_order_release);
	}
	return &opts;
}

// --- the ring -----------------------------------------------------------------------------------

struct gmt_ring *
gmt_core_ring(void)
{
	return &gmt_core_events;
}

_Atomic uint64_t *
gmt_core_dropped(void)
{
	return &dropped;
}

_Atomic uint64_t *
gmt_core_dropped_readings(void)
{
	return &dropped_readings;
}

void
gmt_core_after_fork(void)
{
	gmt_core_tid = 0;
}

/* Returns true when events can be pushed. The first caller starts the tracer; threads that race
 * with it wait for at most ~10 ms (start takes microseconds), then count their event as dropped. */
static bool
ensure_running(void)
{
	int st = atomic_load_explicit(&gmt_state, memory_order_acquire);
	if (st == GMT_STATE_RUNNING)
		return true;
	if (st == GMT_STATE_UNINIT) {
		int expected = GMT_STATE_UNINIT;
		if (atomic_compare_exchange_strong(&gmt_state, &expected, GMT_STATE_STARTING)) {
			gmt_tracer_start();
			return atomic_load(&gmt_state) == GMT_STATE_RUNNING;
		}
	}
	for (int i = 0; i < 10000; i++) {
		st = atomic_load_explicit(&gmt_state, memory_order_acquire);
		if (st != GMT_STATE_STARTING)
			break;
		if (i < 100) {
			sched_yield();
		} else {
			struct timespec ts = {0, 1000};
			nanosleep(&ts, NULL);
		}
	}
	return st == GMT_STATE_RUNNING;
}

/* Push @p ev (its core alone when @p core); a drop is counted (also among the readings when
 * @p reading), except while the tracer is disabled. */
static inline bool
emit(struct gmt_event *ev, bool reading, bool core)
{
	if (ensure_running() &&
	    (core ? gmt_ring_push_core(&gmt_core_events, ev) : gmt_ring_push(&gmt_core_events, ev)))
		return true;
	if (atomic_load_explicit(&gmt_state, memory_order_relaxed) != GMT_STATE_DISABLED) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		if (reading)
			atomic_fetch_add_explicit(&dropped_readings, 1, memory_order_relaxed);
	}
	return false;
}

bool
gmt_emit(struct gmt_event *ev)
{
	return emit(ev, false, false);
}

bool
gmt_emit_core_slow(struct gmt_event *ev)
{
	int *errno_at = gmt_errno_at(), saved_errno = *errno_at; /* the start may set it */
	bool pushed = emit(ev, false, true);
	*errno_at = saved_errno;
	return pushed;
}

bool
gmt_emit_reading(struct gmt_event *ev)
{
	return emit(ev, true, false);
}

struct gmt_event *
gmt_emit_claim_slow(uint64_t *pos)
{
	int *errno_at = gmt_errno_at(), saved_errno = *errno_at; /* the start may set it */
	struct gmt_event *ev = NULL;

	if (ensure_running()) {
		ev = gmt_ring_claim(&gmt_core_events, pos);
		if (!ev)
			atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	} else if (atomic_load_explicit(&gmt_state, memory_order_relaxed) != GMT_STATE_DISABLED) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	}
	*errno_at = saved_errno;
	return ev;
}
