/*
 * @brief The CUPTI capture path: callbacks of the driver API's memory calls (the allocation
 * truth), the runtime API's (the name the application called) and the resource domain
 * (contexts, graph nodes). The primary path; interposition (interpose.c) records only where
 * CUPTI cannot be had.
 *
 * CUPTI is loaded at run time (no link-time dependency) and started once per process: by the
 * driver through InitializeInjection (CUDA_INJECTION64_PATH, also for static-cudart programs), by
 * the first interposed call, or at the first event. Which of those comes first does not matter.
 */
#ifndef GMT_CAPTURE_CUPTI_H
#define GMT_CAPTURE_CUPTI_H

#include <stdatomic.h>
#include <stdbool.h>

enum gmt_cupti_phase {
	GMT_CUPTI_UNTRIED = 0,
	GMT_CUPTI_STARTING,
	GMT_CUPTI_ACTIVE,      /* our subscriber holds the callbacks: CUPTI records everything */
	GMT_CUPTI_UNAVAILABLE, /* opted out, not found, or held by another tool: interposition
				  records */
};

extern _Atomic int gmt_cupti_phase;

/**
 * Start the CUPTI path if it was not tried yet; returns true when CUPTI records. Idempotent and
 * cheap after the first call. Prints one line when CUPTI cannot be had, and one when it is held
 * (other profilers in the process lose their CUDA activity).
 */
bool gmt_cupti_start(void);

/** The phase now, with no side effect: a pure query (starting is gmt_cupti_start()'s). */
static inline int
gmt_cupti_state(void)
{
	return atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire);
}

/** InitializeInjection()'s work in this copy of the tracer (api.c; another copy forwards to
 * it): start CUPTI. Returns 1 whatever happens. */
int gmt_cupti_inject(void);

/** The CUPTI the tracer subscribed with (a soname or the path of GPUMEMTRACE_CUPTI_LIB), NULL
 * when none. */
const char *gmt_cupti_opened(void);

/** Why CUPTI is not used (for the trace header), or NULL when it is. */
const char *gmt_cupti_reason(void);

struct gmt_event;

/**
 * The runtime side of a wrapped call while CUPTI records (cupti.c, "the runtime side"): when
 * the wrapped runtime calls' CUPTI callbacks are off, the wrapper plays them. Before the real
 * call, gmt_cupti_wrap_enter() with the call's api, whether it is a per-thread-stream variant
 * and whether it takes a free's order now (a free of something); false: the callbacks do it,
 * just forward. Otherwise, after the real call, gmt_cupti_wrap_end(): false (the usual case:
 * a driver callback recorded the call) and the wrapper is done; true when no driver callback
 * recorded it (cudart reached the memory another way, or the driver call failed and the
 * runtime's result decides): then, if the call's own parameters make an event,
 * gmt_cupti_wrap_record() with it (its result and device filled in), and in any case
 * gmt_cupti_wrap_leave().
 */
bool gmt_cupti_wrap_enter(int api, bool ptsz, bool takes_order);
bool gmt_cupti_wrap_end(void);
void gmt_cupti_wrap_record(struct gmt_event *ev);
void gmt_cupti_wrap_leave(void);

/**
 * The writer thread's tick (outside any callback): a driver allocation came with no runtime call
 * around it (a static cudart, cudart's functions reached through dlsym or ctypes, past the
 * wrappers), so the wrapped calls' runtime callbacks go on again now, not only at the next
 * wrapped call, which such a process may never make: its calls are named by their runtime call
 * within a few milliseconds.
 */
void gmt_cupti_tick(void);

/** For benchmarks (gmt_bench_cupti()): every callback id of the subscription off (false) or on
 * again as at the start (true), process-wide; the ids changed, -1 when CUPTI is not active. */
int gmt_cupti_bench_enable(bool on);

/** Whether the interposed wrappers are bound: the process's calls into a shared libcudart reach
 * them first (interpose.c). */
bool gmt_wrappers_bound(void);

#endif
