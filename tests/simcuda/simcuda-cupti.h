/* SPDX-License-Identifier: MIT */
/**
 * @file simcuda-cupti.h
 * @brief The hook between the simulated runtime and the simulated CUPTI (TEST DOUBLES).
 *
 * libcudart.so.13 (the runtime double) fires CUPTI callbacks; libcupti.so.13 (the CUPTI
 * double) owns the subscriber and what it enabled. The CUPTI double looks these two SIMCUDA_1
 * symbols up with dlopen("libcudart.so.13", RTLD_NOLOAD) + dlsym when a subscriber appears and
 * installs its sink; with no sink installed the runtime builds no callback data at all, so a
 * process without the CUPTI double pays one relaxed atomic load per call.
 */
#ifndef SIMCUDA_CUPTI_H
#define SIMCUDA_CUPTI_H

/* Which CUDA the doubles are: tests/simcuda builds CUDA 13's (these defaults) and, in cu12/ and
 * cu11/, CUDA 12's and 11.8's, with the real libraries' sonames (= their symbol versions). */
#ifndef SIMCUDA_CUDART_SONAME
#	define SIMCUDA_CUDART_SONAME "libcudart.so.13"
#endif
#ifndef SIMCUDA_RUNTIME_VERSION
#	define SIMCUDA_RUNTIME_VERSION 13000 /* what cudaRuntimeGetVersion reports */
#endif

#include <cupti_callbacks.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Receives every callback the runtime fires, on the thread that made the API call, with no
 * lock of the runtime held. cbdata is a CUpti_CallbackData (DRIVER_API, RUNTIME_API) or a
 * CUpti_ResourceData (RESOURCE), valid for the duration of the call. The sink filters by what
 * the subscriber enabled.
 */
typedef void (*simcuda_cupti_sink)(CUpti_CallbackDomain domain,
				   CUpti_CallbackId cbid,
				   const void *cbdata);

/** Install (or, with NULL, remove) the sink. */
void simcuda_set_cupti_sink(simcuda_cupti_sink sink);

/**
 * What CUPTI needs to know about a context: its contextUid and device. ctx NULL means the
 * context of the calling thread's current device. Returns 0, or -1 when ctx is not a live
 * context of the simulation (never created, or destroyed by a reset).
 */
int simcuda_context_info(CUcontext ctx, uint32_t *uid, int *device);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_CUPTI_H */
