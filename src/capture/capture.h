/*
 * @brief The capture side's core (core.c): tracer state, the per-thread re-entry guard, the
 * stamp, the options, and emitting an event into the ring. Runs on application threads, inside
 * their CUDA calls. It depends on the ring and util only.
 *
 * Rules for everything here: no malloc, no stdio, no locks the writer can hold, no CUDA calls
 * beyond trivial queries, never change what the application's call returns. The one exception is
 * the process's first event, which maps the ring and starts the writer thread (gmt_tracer_start()).
 */
#ifndef GMT_CAPTURE_CAPTURE_H
#define GMT_CAPTURE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/event.h"
#include "ring/ring.h"
#include "util/clock.h"

#define GMT_EXPORT __attribute__((visibility("default")))

enum gmt_state {
	GMT_STATE_UNINIT = 0, /* nothing started yet: the first event starts the writer */
	GMT_STATE_STARTING,   /* one thread is starting it; the others wait briefly */
	GMT_STATE_RUNNING,
	GMT_STATE_DISABLED, /* GPUMEMTRACE_ENABLE=0 or a tracer failure: pass-through */
	GMT_STATE_STOPPED,  /* process exit has begun: later events are counted as dropped */
};

extern _Atomic int gmt_state;

/* Depth of tracer-visible calls on this thread. Initial-exec TLS: no allocation, no lock on first
 * touch (memray's MEMRAY_FAST_TLS). The writer thread holds it at 1 for its whole life. */
extern __thread unsigned gmt_depth __attribute__((tls_model("initial-exec")));

/**
 * Enter a hooked call. Returns true when this call is to be recorded: it is the outermost
 * tracer-visible call on this thread and tracing is not off. Always pair with gmt_hook_leave().
 */
static inline bool
gmt_hook_enter(void)
{
	if (gmt_depth++ != 0)
		return false;
	int st = atomic_load_explicit(&gmt_state, memory_order_relaxed);
	return st != GMT_STATE_DISABLED;
}

static inline void
gmt_hook_leave(void)
{
	gmt_depth--;
}

/* The core's state that the inline fast paths below read (core.c defines it): the global order,
 * this thread's id (0 until asked), the ring every event goes through. */
extern _Atomic uint64_t gmt_core_next_seq;
extern __thread int32_t gmt_core_tid __attribute__((tls_model("initial-exec")));
extern struct gmt_ring gmt_core_events;

/** gmt_tid()'s first call on a thread: asks the kernel, keeps it. */
int32_t gmt_tid_slow(void);

/** This thread's id (cached). */
static inline int32_t
gmt_tid(void)
{
	int32_t tid = gmt_core_tid;
	return __builtin_expect(tid != 0, 1) ? tid : gmt_tid_slow();
}

extern __thread int *gmt_core_errno_at __attribute__((tls_model("initial-exec")));
int *gmt_errno_at_slow(void);

/** This thread's errno, where it is (its address asked once per thread): a recording keeps the
 * application's errno as it was, for two loads and a store instead of two calls into libc. */
static inline int *
gmt_errno_at(void)
{
	int *at = gmt_core_errno_at;
	return __builtin_expect(at != NULL, 1) ? at : gmt_errno_at_slow();
}

/** gmt_stamp()'s seq, ts and tid, for an event not written yet (gmt_emit_claim()). */
static inline void
gmt_stamp_values(uint64_t *seq, uint64_t *ts_ns, int32_t *tid)
{
	*seq = atomic_fetch_add_explicit(&gmt_core_next_seq, 1, memory_order_relaxed) + 1;
	*ts_ns = gmt_clock_raw(); /* the writer makes it ns (util/clock.h) */
	*tid = gmt_tid();
}

/** Fill seq (the global order) and ts. Call before a free's real call, after an alloc's. */
static inline void
gmt_stamp(struct gmt_event *ev)
{
	gmt_stamp_values(&ev->seq, &ev->ts_ns, &ev->tid);
}

struct gmt_options;
/** The tracer's options (read once, at load or first use). */
const struct gmt_options *gmt_tracer_options(void);

/** Hand a stamped event to the writer. Never blocks: a full ring counts a drop (false). */
bool gmt_emit(struct gmt_event *ev);

/** gmt_emit_core() when the tracer is not running yet or the ring was full: starts it (the
 * process's first event), pushes again, or counts the drop. */
bool gmt_emit_core_slow(struct gmt_event *ev);

/** gmt_emit() of an event whose bytes past its core are zero (format/event.h,
 * GMT_EVENT_CORE_BYTES: the CUDA level's allocations, frees and resets): the core alone is
 * copied, and @p ev's other bytes are not read (gmt_event_clear_core() is enough). Inline: it
 * runs in every recorded CUDA call. */
static inline bool
gmt_emit_core(struct gmt_event *ev)
{
	if (__builtin_expect(
		atomic_load_explicit(&gmt_state, memory_order_acquire) == GMT_STATE_RUNNING, 1) &&
	    __builtin_expect(gmt_ring_push_core(&gmt_core_events, ev), 1))
		return true;
	return gmt_emit_core_slow(ev);
}

/** gmt_emit() for a `usage` reading: a drop is also counted among the dropped readings (the
 * trailer's `dropped_readings`: of the drops, those that lost no allocation or free). */
bool gmt_emit_reading(struct gmt_event *ev);

/**
 * gmt_emit() without the copy: the ring slot the caller fills in place (every byte: it holds an
 * old event), and its position in @p pos; NULL when the event cannot be pushed (counted as a
 * drop, as gmt_emit() counts it). Stamp it there, then gmt_emit_commit() at once: the writer
 * waits at a claimed slot.
 */
static inline struct gmt_event *gmt_emit_claim(uint64_t *pos);

/** gmt_emit_claim() when the tracer is not running yet or the ring was full: starts it (the
 * process's first event), claims again, or counts the drop. */
struct gmt_event *gmt_emit_claim_slow(uint64_t *pos);

static inline struct gmt_event *
gmt_emit_claim(uint64_t *pos)
{
	struct gmt_event *ev;

	if (__builtin_expect(
		atomic_load_explicit(&gmt_state, memory_order_acquire) == GMT_STATE_RUNNING, 1) &&
	    __builtin_expect((ev = gmt_ring_claim(&gmt_core_events, pos)) != NULL, 1))
		return ev;
	return gmt_emit_claim_slow(pos);
}

/** Hand the event claimed at @p pos to the writer. */
static inline void
gmt_emit_commit(uint64_t pos)
{
	gmt_ring_commit(&gmt_core_events, pos);
}

/* For the lifecycle (lifecycle.c), which starts and stops what the core feeds. */
struct gmt_ring;
/** The ring gmt_emit() pushes into (gmt_core_events; initialised by the lifecycle before
 * RUNNING). */
struct gmt_ring *gmt_core_ring(void);
/** Events that could not be pushed (full ring, not running). */
_Atomic uint64_t *gmt_core_dropped(void);
/** Of those, the `usage` readings (gmt_emit_reading()). */
_Atomic uint64_t *gmt_core_dropped_readings(void);
/** In a fork child: the cached tid is the parent's thread's. */
void gmt_core_after_fork(void);

/**
 * Start the tracer for the process's first event: provided by the lifecycle (lifecycle.c), the
 * one part that knows the writer; the core calls it once, with gmt_state STARTING, and it
 * leaves gmt_state RUNNING or DISABLED.
 */
void gmt_tracer_start(void);

/**
 * Before an exec or an _exit of this process (capture/ends.c): no destructor of ours runs and the
 * writer thread goes, so the trace is ended now, as at exit, with @p reason in its trailer
 * ("exec", "_exit"). Not in a vfork child, nor from inside the tracer's own calls. True when a
 * running trace was ended (an exec that then fails leaves the rest of the process untraced).
 */
bool gmt_tracer_end_early(const char *reason);

/**
 * A signal whose default action ends the process arrived (capture/ends.c's handler, @p name the
 * signal's, e.g. "SIGTERM"): the trace is ended now, everything written, with @p name as its
 * trailer's reason, waiting for the writer at most a few seconds (less when it makes no
 * progress: the thread that got the signal may hold what the writer needs). In a signal
 * handler, from any thread but the writer; also from inside the tracer's own calls (a process
 * spends its time in CUDA calls). True when a running trace was ended.
 */
bool gmt_tracer_end_on_signal(const char *name);

/** For benchmarks (gmt_bench_writer()): the writer held (@p run false) or draining again, once
 * the ring is empty (writer/writer.h's gmt_writer_bench_hold()). */
bool gmt_tracer_bench_writer(bool run);

/** capture/ends.c: libc's exec family and _exit looked up (the library's constructor). */
void gmt_ends_setup(void);

/**
 * capture/ends.c: the handler that ends the trace before a signal ends the process, installed
 * for each signal whose default action ends it and whose disposition is still the default
 * (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGXCPU,
 * SIGXFSZ, SIGPIPE); a handler the program has, or installs later, is left alone. When the trace
 * starts (gmt_tracer_start(), before the writer).
 */
void gmt_ends_signals(void);

#endif
