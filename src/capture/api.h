/*
 * @brief The public entry points of this copy of the tracer (api.c): gmt_mark(),
 * gmt_range_push()/pop() (include/gpumemtrace.h) and InitializeInjection() (cupti.h), and the
 * gmt_tracer_instance another copy finds them by (instance.h).
 */
#ifndef GMT_CAPTURE_API_H
#define GMT_CAPTURE_API_H

#include <stdbool.h>

/**
 * At the constructor, before anything else: true when another copy of the tracer traces this
 * process (instance.h); the public entry points then go to it and this copy stays inert.
 */
bool gmt_api_defer(bool quiet);

/** Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void);

/**
 * Exported for the Python start-up hook, called with the GIL held (ctypes.PYFUNCTYPE): subscribe
 * the code watcher that makes Python walks cheaper (capture/pystack.h gmt_py_watch_code()).
 * 0: on; -1: not (no Python stacks, Python < 3.12, no watcher free).
 */
int gmt_py_watch(void);

/**
 * Exported for the PyTorch layer (python/gpumemtrace/_torch.py: torch's optimizer step hook): a
 * point marker flagged as an automatic step ("auto":"step"), which the analysis takes for step
 * boundaries when the trace has no marks of the user's.
 */
void gmt_step_mark(const char *label);

/** Exported for the PyTorch layer's gc.callbacks hook (_torch.py): capture/torch.h. */
void gmt_torch_gc(int collecting);

/** Exported for the PyTorch layer's end-of-run walk (_torch.py): capture/torch.h. */
void gmt_torch_holders(const char *json);
/** For benchmarks: the calling thread's CUDA calls are not recorded while @p on (api.c). */
void gmt_bench_pause(int on);
/** For benchmarks: CUPTI's callbacks off (@p on 0) or on again, process-wide (api.c). */
int gmt_bench_cupti(int on);
/** For benchmarks: the writer held (@p on 0) or draining again until the ring is empty (api.c). */
int gmt_bench_writer(int on);

#endif
