/*
 * @brief Call stacks captured in the hook and interned there: an event carries a stack id, the
 * stack itself is stored once.
 *
 * Inside the application's CUDA call (capture side): gmt_stack_capture() unwinds the native stack
 * with libunwind (per-thread caches), walks the thread's Python frames (pystack.h), drops the
 * tracer's own frames and interns the result in a lock-free, insert-only table backed by memory
 * mapped once: no malloc, no lock, no I/O. Identical stacks get one id.
 *
 * On the writer thread: gmt_stack_get() returns a published stack by id, so the writer writes
 * each stack line once, before the first event that names it (docs/trace-format.md).
 */
#ifndef GMT_CAPTURE_STACKS_H
#define GMT_CAPTURE_STACKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/stack.h"

/**
 * Read GPUMEMTRACE_STACKS / STACK_DEPTH and prepare the unwinder. Called once before the first
 * event (tracer start); cheap and idempotent.
 */
void gmt_stacks_setup(void);

/**
 * Capture the calling thread's stack and intern it. Returns its id, 0 when stacks are off or
 * the table is full. @p skip_lib: the address of a function in a library whose frames at the top of
 * the stack are the CUDA machinery rather than the caller (libcupti for callbacks), or NULL.
 */
uint32_t gmt_stack_capture(const void *skip_lib);

/** Set once the setup found stacks off (GPUMEMTRACE_STACKS=none, or no way to take them):
 * gmt_stack_capture() would return 0, and a caller may skip the call and what goes around it. */
extern _Atomic bool gmt_stacks_none;

/** Writer side: the stack with @p id, when it is published. */
bool gmt_stack_get(uint32_t id, struct gmt_stack_view *out);

/** Header facts: native stacks on, their depth. */
bool gmt_stacks_native(void);
unsigned gmt_stacks_depth(void);
/** Header fact: native stacks of Python threads go on below the innermost eval frame. */
bool gmt_stacks_interpreter(void);
bool gmt_stacks_python(void);

/**
 * From Python with the GIL held (the exported gmt_py_watch, api.c): set up now if the first CUDA
 * call is still to come and, with Python stacks on, subscribe the code watcher that makes the
 * Python walk cheaper (pystack.h gmt_py_watch_code()). 0: on; -1: not.
 */
int gmt_stacks_watch_python(void);

/** Stacks dropped because the table or its arena was full. */
uint64_t gmt_stacks_overflow(void);

#endif
