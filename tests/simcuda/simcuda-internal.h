/* SPDX-License-Identifier: MIT */
/**
 * @file simcuda-internal.h
 * @brief Declarations shared by the files of the simulated runtime; never installed.
 *
 * How the files of libcudart.so.13 (a TEST DOUBLE) divide the work:
 *  - runtime.c   the exported cuda* calls: argument handling, RUNTIME_API callbacks, and a call
 *                of the driver call each one maps to (simcuda_cu*);
 *  - driver.c    simcuda_cu*: DRIVER_API callbacks around sim_do_cu*;
 *  - device.c    sim_do_cu* of devices, contexts, device memory and pools, and the state;
 *  - host.c      sim_do_cu* of pinned and registered host memory;
 *  - vmm.c       sim_do_cu* of the virtual memory management calls;
 *  - graph.c     sim_do_cu* of graphs, graph memory nodes and stream capture;
 *  - callbacks.c the CUPTI sink, correlation ids, contexts, and start-up (libcuda.so.1,
 *                CUDA_INJECTION64_PATH, CU_INIT_FINISHED).
 * Callbacks are only ever fired through callbacks.c (sim_rt_*, sim_drv_*, sim_emit_resource,
 * sim_ctx_*), and never with a lock of device.c, host.c, vmm.c or graph.c held: a callback may
 * call back into the runtime or the driver.
 */
#ifndef SIMCUDA_INTERNAL_H
#define SIMCUDA_INTERNAL_H

#include "simcuda-cupti.h"
#include "simcuda-driver.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_callbacks.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_DEVICES 64
#define SIM_GRANULARITY ((size_t)2 << 20) /* VMM granularity, pool and graph chunks */

/*
 * The per-thread-default-stream entry points. The CUDA headers declare them only when a program
 * is built with CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread), and then
 * under the plain names through macros, so the library declares them itself. The signatures are
 * those of the plain calls, as in the real runtime.
 */
extern cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **ptr,
							  size_t size,
							  cudaMemPool_t memPool,
							  cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst,
					     const void *src,
					     size_t count,
					     enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value, size_t count);
extern cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(
    void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void *devPtr,
						  int value,
						  size_t count,
						  cudaStream_t stream);

// --- errors.c: the real runtime's names and messages, "unrecognized error code" otherwise ---

const char *sim_error_name(cudaError_t code);
const char *sim_error_string(cudaError_t code);

// --- device.c -------------------------------------------------------------------------------

struct sim_graph;

/* One line on stderr, unbuffered, prefixed "simcuda[pid]: ". */
void sim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Initialise on first use (the runtime's way in: plays cuInit) and say whether devices work. */
cudaError_t sim_ready(void);

/* The driver's check: CUDA_ERROR_NOT_INITIALIZED until cuInit or a runtime call initialised. */
CUresult sim_drv_ready(void);

int sim_device_count(void);

/* The calling thread's current device (cudaSetDevice, cuCtxSetCurrent). */
int sim_current_ordinal(void);

void sim_set_current(int device);

/* SIMCUDA_ALLOC_DELAY_NS of busy-waiting; call outside locks. */
void sim_delay(void);

/* Reserve or release device capacity that is no user pointer (VMM physical memory, the graph
 * pool). Returns 0, or -1 when the device heap has no room. */
int sim_phys_alloc(int device, size_t size, uintptr_t *addr);
void sim_phys_free(int device, uintptr_t addr);

/* A stream's device and the graph it is capturing into (NULL when not capturing). */
CUresult sim_stream_lookup(CUstream stream, int *device, struct sim_graph **capture);

/* Start (graph) or end (NULL) a capture: CUDA_ERROR_INVALID_HANDLE for an unknown stream,
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for 0/legacy/per-thread, CUDA_ERROR_ILLEGAL_STATE when
 * the stream is already (or not) capturing. */
CUresult sim_stream_set_capture(CUstream stream, struct sim_graph *graph);

/* Calls with no driver counterpart in the simulation: the runtime does them itself. */
cudaError_t sim_stream_create(cudaStream_t *out, unsigned int flags);
cudaError_t sim_stream_destroy(cudaStream_t stream);
cudaError_t sim_stream_sync(cudaStream_t stream);
cudaError_t sim_memset(void *ptr, int value, size_t count, cudaStream_t stream);
cudaError_t
sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);

// --- host.c ---------------------------------------------------------------------------------

/* Reset of a device: drop the pinned blocks and registered ranges made while it was current. */
void sim_host_reset(int device);

// --- callbacks.c ----------------------------------------------------------------------------

/** One API call as CUPTI reports it: lives on the caller's stack from ENTER to EXIT. */
struct sim_api {
	simcuda_cupti_sink sink; /* NULL: nobody listens, the call is not reported */
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	CUpti_CallbackData data;
	uint64_t correlation_data; /* what data.correlationData points to */
	uint32_t saved_pending;
	union {
		cudaError_t rt;
		CUresult drv;
	} ret;
};

void sim_rt_enter(struct sim_api *a, CUpti_CallbackId cbid, const char *name, const void *params);
cudaError_t sim_rt_exit(struct sim_api *a, cudaError_t err);
void sim_drv_enter(struct sim_api *a, CUpti_CallbackId cbid, const char *name, const void *params);

/** A driver query's cost and count (device.c: SIMCUDA_QUERY_NS, SIMCUDA_QUERY_STATS). */
void sim_query(void);
CUresult sim_drv_exit(struct sim_api *a, CUresult rc);

/* A RESOURCE callback (context, CU_INIT_FINISHED, graph node); never under a lock. */
void sim_emit_resource(CUpti_CallbackId cbid, CUcontext ctx, void *descriptor);

/* After the state is initialised: load libcuda.so.1, run CUDA_INJECTION64_PATH, fire
 * CU_INIT_FINISHED (when ok). Once per process; other threads wait until it is done. */
void sim_start(int ok);

/* The fake CUcontext of a device: the same pointer for the life of the process. */
CUcontext sim_ctx_handle(int device);

/* The device of a context handle of ours, or -1. */
int sim_ctx_device(CUcontext ctx);

/* contextUid of the device's context; 0 while it does not exist. */
uint32_t sim_ctx_uid(int device);

/* Create the device's context if it does not exist (fires CONTEXT_CREATED). */
void sim_ctx_use(int device);

/* Reset: fire CONTEXT_DESTROY_STARTING (if the context exists), then after the memory is gone
 * sim_ctx_destroyed, which gives the next context of the device a new uid. */
void sim_ctx_destroy_starting(int device);
void sim_ctx_destroyed(int device);

// --- vmm.c ----------------------------------------------------------------------------------

/* [p, p + count) lies inside one mapping with read-write access: 0, else -1. */
int sim_vmm_check_range(uintptr_t p, size_t count);

/* The mapping that holds p: 0 and its range, or -1. */
int sim_vmm_address_range(uintptr_t p, uintptr_t *base, size_t *size);

// --- graph.c --------------------------------------------------------------------------------

/* A cuMemAllocAsync / cuMemFreeAsync on a capturing stream becomes a graph node; the callback
 * GRAPHNODE_CREATED fires inside. */
CUresult
sim_graph_capture_alloc(struct sim_graph *graph, int device, size_t size, CUdeviceptr *dptr);
CUresult sim_graph_capture_free(struct sim_graph *graph, CUdeviceptr dptr);

/* cuMemFree / cuMemFreeAsync of graph memory outside a graph: 1 when dptr was graph memory
 * (now freed, or *rc says why not), 0 when it is not graph memory at all. */
int sim_graph_free_ptr(CUdeviceptr dptr, CUresult *rc);

// --- the driver calls themselves (device.c, vmm.c, graph.c) ---------------------------------

#define SIM_DECLARE_DO(name, params, args) CUresult sim_do_##name params;
SIMCUDA_DRIVER_APIS(SIM_DECLARE_DO)
#undef SIM_DECLARE_DO

#endif /* SIMCUDA_INTERNAL_H */
