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
 * Python users need no compiler: under the tracer the symbol is in the process's global scope,
 * so `ctypes.CDLL(None).gmt_mark(b"epoch 1")` works (guard with `hasattr(..., "gmt_mark")`).
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
#  define GMT_WEAK __attribute__((weak))
#else
#  define GMT_WEAK
#endif

/**
 * Put a marker in the trace: a point in the sequence of allocations with a label (truncated to
 * 63 bytes). Reports use markers to name phases. Safe from any thread; never blocks.
 */
void gmt_mark(const char *label) GMT_WEAK;

/** Call gmt_mark() when the tracer is loaded, else do nothing. */
#define GMT_MARK(label) \
	do { \
		if (gmt_mark) \
			gmt_mark(label); \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif
