/*
 * @brief The capture side's core: tracer state, the per-thread re-entry guard, and emitting an
 * event into the ring. Runs on application threads, inside their CUDA calls.
 *
 * Rules for everything here: no malloc, no stdio, no locks the writer can hold, no CUDA calls
 * beyond trivial queries, never change what the application's call returns. The one exception is
 * the process's first event, which maps the ring and starts the writer thread (tracer_start()).
 */
#ifndef GMT_CAPTURE_CAPTURE_H
#define GMT_CAPTURE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/event.h"

#define GMT_EXPORT __attribute__((visibility("default")))

enum gmt_state {
	GMT_STATE_UNINIT = 0, /* nothing started yet: the first event starts the writer */
	GMT_STATE_STARTING,   /* one thread is starting it; the others wait briefly */
	GMT_STATE_RUNNING,
	GMT_STATE_DISABLED,   /* GPUMEMTRACE_ENABLE=0 or a tracer failure: pass-through */
	GMT_STATE_STOPPED,    /* process exit has begun: later events are counted as dropped */
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

/** Fill seq (the global order) and ts. Call before a free's real call, after an alloc's. */
void gmt_stamp(struct gmt_event *ev);

/** This thread's id (cached). */
int32_t gmt_tid(void);

struct gmt_options;
/** The tracer's options (read once, at load or first use). */
const struct gmt_options *gmt_tracer_options(void);

/** dlclose() without our interposition (capture/dlclose.c), for the tracer's own handles. */
int gmt_real_dlclose(void *handle);

/** Hand a stamped event to the writer. Never blocks: a full ring counts a drop (false). */
bool gmt_emit(struct gmt_event *ev);

/* The public API's work (include/gpumemtrace.h): the exported gmt_mark() etc. call these, or
 * forward to another copy of the tracer that traces the process (instance.h). */
void gmt_api_mark(const char *label);
void gmt_api_range_push(const char *label);
void gmt_api_range_pop(void);
struct gmt_torch_entry;
int gmt_api_torch_record(const struct gmt_torch_entry *entry);
void gmt_api_torch_layer(const char *version, const char *backend, const char *alloc_conf,
			 const char *status, const char *detail);

#endif
