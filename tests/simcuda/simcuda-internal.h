/* SPDX-License-Identifier: MIT */
/**
 * @file simcuda-internal.h
 * @brief Declarations shared by the files of the simulated runtime; never installed.
 */
#ifndef SIMCUDA_INTERNAL_H
#define SIMCUDA_INTERNAL_H

#include <cuda_runtime_api.h>

/*
 * The per-thread-default-stream entry points. The CUDA headers declare them only when a program
 * is built with CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread), and then
 * under the plain names through macros, so the library declares them itself. The signatures are
 * those of the plain calls, as in the real runtime.
 */
extern cudaError_t CUDARTAPI
cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI
cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI
cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
extern cudaError_t CUDARTAPI
cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t CUDARTAPI
cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI
cudaMemset_ptds(void *devPtr, int value, size_t count);
extern cudaError_t CUDARTAPI
cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
		     cudaStream_t stream);
extern cudaError_t CUDARTAPI
cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);

/* errors.c: the real runtime's names and messages, "unrecognized error code" otherwise. */
const char *
sim_error_name(cudaError_t code);
const char *
sim_error_string(cudaError_t code);

#endif /* SIMCUDA_INTERNAL_H */
