/**
 * @file gpumemtrace.h
 * @brief Optional client API of gpumemtrace: markers in the trace.
 *
 * Every function here is declared weak. A program that calls them runs unchanged without the
 * tracer (the symbols are then NULL and the macros do nothing); under
 * `LD_PRELOAD=libgpumemtrace.so` (or `gpumemtrace run`) the calls land in the trace:
 *
 *     #include <gpumemtrace.h>
 *     for (int epoch = 0; epoch < n; epoch++) {
 *             GMT_MARK("epoch start");
 *             train_one_epoch();
 *     }
 *
 * Ranges name a span of the program (a phase, a step), and nest:
 *
 *     GMT_RANGE_PUSH("forward");
 *     model_forward();
 *     GMT_RANGE_POP();
 *
 * Python users need no compiler: the `gpumemtrace` module (python/, made importable by
 * `gpumemtrace run`) has mark(), range_push(), range_pop() and range() (a context manager and
 * decorator); or, by hand, `ctypes.CDLL(None).gmt_mark(b"epoch 1")` (under LD_PRELOAD the symbols
 * are in the process's global scope; guard with `hasattr(..., "gmt_mark")`).
 *
 * With CUDA_INJECTION64_PATH alone (no LD_PRELOAD) the driver loads the tracer RTLD_LOCAL at
 * cuInit, after these weak symbols were bound: they stay NULL. Use LD_PRELOAD, or look the
 * functions up after the first CUDA call with dlopen(getenv("CUDA_INJECTION64_PATH"),
 * RTLD_NOW | RTLD_NOLOAD) and dlsym (docs/markers.md shows how). The Python module does that
 * by itself.
 */
#ifndef GPUMEMTRACE_H
#define GPUMEMTRACE_H

#define GPUMEMTRACE_VERSION 100 /* 0.1.0 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#	define GMT_WEAK __attribute__((weak))
#else
#	define GMT_WEAK
#endif

/**
 * Put a marker in the trace: a point in the sequence of allocations with a label (truncated to
 * 63 bytes). Reports use markers to name phases. Safe from any thread; never blocks.
 */
void gmt_mark(const char *label) GMT_WEAK;

/** Call gmt_mark() when the tracer is loaded, else do nothing. */
#define GMT_MARK(label)                                                                            \
	do {                                                                                       \
		if (gmt_mark)                                                                      \
			gmt_mark(label);                                                           \
	} while (0)

/**
 * Open a range named @p label (truncated to 63 bytes) on the calling thread: a marker with
 * "range":"push" and its nesting depth (1 = outermost). Ranges nest per thread; close each with
 * gmt_range_pop() on the same thread. Safe from any thread; never blocks, never allocates.
 */
void gmt_range_push(const char *label) GMT_WEAK;

/**
 * Close the innermost open range of the calling thread: a marker with "range":"pop" and the
 * depth of the range it closes (the report takes its label from the matching push of the same
 * thread). Without an open range it records depth 0.
 */
void gmt_range_pop(void) GMT_WEAK;

/** Call gmt_range_push() when the tracer is loaded, else do nothing. */
#define GMT_RANGE_PUSH(label)                                                                      \
	do {                                                                                       \
		if (gmt_range_push)                                                                \
			gmt_range_push(label);                                                     \
	} while (0)

/** Call gmt_range_pop() when the tracer is loaded, else do nothing. */
#define GMT_RANGE_POP()                                                                            \
	do {                                                                                       \
		if (gmt_range_pop)                                                                 \
			gmt_range_pop();                                                           \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif
