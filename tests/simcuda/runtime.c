/* SPDX-License-Identifier: MIT */
/**
 * @file runtime.c
 * @brief The cuda* entry points of the simulated libcudart.so.13 (TEST DOUBLE, not CUDA).
 *
 * Each entry point fires CUPTI RUNTIME_API ENTER, checks what the real runtime checks itself
 * (an output pointer, a zero-byte request, the current device), calls the driver call it maps
 * to (simcuda_cu*, which fires DRIVER_API ENTER/EXIT with the same correlation id), and fires
 * RUNTIME_API EXIT with the cudaError_t. The mapping:
 *
 *   cudaMalloc -> cuMemAlloc_v2            cudaMallocPitch -> cuMemAllocPitch_v2
 *   cudaFree -> cuMemFree_v2 (NULL too)    cudaMallocManaged -> cuMemAllocManaged
 *   cudaMallocHost -> cuMemAllocHost_v2    cudaHostAlloc -> cuMemHostAlloc
 *   cudaFreeHost -> cuMemFreeHost          cudaHostRegister/Unregister -> cuMemHostRegister_v2/
 *   cudaMallocAsync(_ptsz) -> cuMemAllocAsync(_ptsz)                    cuMemHostUnregister
 *   cudaFreeAsync(_ptsz) -> cuMemFreeAsync(_ptsz)
 *   cudaMallocFromPoolAsync(_ptsz) -> cuMemAllocFromPoolAsync(_ptsz)
 *   cudaMemPool{Create,Destroy,TrimTo,SetAttribute,GetAttribute} -> cuMemPool*
 *   cudaDeviceGetDefaultMemPool -> cuDeviceGetDefaultMemPool, cudaMemGetInfo -> cuMemGetInfo_v2
 *   cudaDeviceReset -> cuDevicePrimaryCtxReset_v2
 *   graphs: cudaGraph{Create,Destroy,AddMemAllocNode,AddMemFreeNode,Instantiate,Launch,
 *   ExecDestroy}, cudaStream{Begin,End}Capture, cudaDeviceGraphMemTrim,
 *   cudaDeviceGetGraphMemAttribute -> their cu* counterparts
 *
 * A call answered by the runtime alone (a zero-byte request, a NULL output pointer, bad flags)
 * fires no driver callback. Streams, memset, memcpy, device selection and versions have only
 * their runtime callbacks. cudaGetLastError, cudaPeekAtLastError, cudaGetErrorName and
 * cudaGetErrorString fire none.
 *
 * No exported cuda* function calls another: a profiler interposing these symbols sees exactly
 * one call per API call.
 *
 * Errors follow the runtime: a failing call stores its code as the calling thread's last error
 * (cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it); a successful
 * call leaves the last error alone.
 */
#include "heap.h"
#include "simcuda-internal.h"

#include <cupti.h> /* the CBIDs and generated_cuda_runtime_api_meta.h */
#include <stdint.h>

/* Per thread, as in CUDA: the last error. */
static _Thread_local cudaError_t sim_last_error = cudaSuccess;

/* Record a failure as the thread's last error; success leaves it alone, as in CUDA. */
static cudaError_t
sim_result(cudaError_t err)
{
	if (err != cudaSuccess)
		sim_last_error = err;
	return err;
}

/*
 * The body of a cuda* call: RUNTIME ENTER with the call's parameter struct, the call, RUNTIME
 * EXIT with its result (which becomes the thread's last error first).
 */
#define SIM_RT(api, ver, call, ...)                                                                \
	do {                                                                                       \
		api##_##ver##_params p_ = {__VA_ARGS__};                                           \
		struct sim_api a_;                                                                 \
                                                                                                   \
		sim_rt_enter(&a_, CUPTI_RUNTIME_TRACE_CBID_##api##_##ver, #api, &p_);              \
		return sim_rt_exit(&a_, sim_result(call));                                         \
	} while (0)

/* The same for a call without parameters: functionParams is NULL. */
#define SIM_RT0(api, ver, call)                                                                    \
	do {                                                                                       \
		struct sim_api a_;                                                                 \
                                                                                                   \
		sim_rt_enter(&a_, CUPTI_RUNTIME_TRACE_CBID_##api##_##ver, #api, NULL);             \
		return sim_rt_exit(&a_, sim_result(call));                                         \
	} while (0)

/* The runtime's code for a driver result. For every code the simulated driver returns the
 * numbers are the same, so this is a cast; the assertions keep it honest. */
_Static_assert((int)CUDA_ERROR_INVALID_VALUE == (int)cudaErrorInvalidValue, "codes");
_Static_assert((int)CUDA_ERROR_OUT_OF_MEMORY == (int)cudaErrorMemoryAllocation, "codes");
_Static_assert((int)CUDA_ERROR_NOT_INITIALIZED == (int)cudaErrorInitializationError, "codes");
_Static_assert((int)CUDA_ERROR_NO_DEVICE == (int)cudaErrorNoDevice, "codes");
_Static_assert((int)CUDA_ERROR_INVALID_DEVICE == (int)cudaErrorInvalidDevice, "codes");
_Static_assert((int)CUDA_ERROR_INVALID_CONTEXT == (int)cudaErrorDeviceUninitialized, "codes");
_Static_assert((int)CUDA_ERROR_INVALID_HANDLE == (int)cudaErrorInvalidResourceHandle, "codes");
_Static_assert((int)CUDA_ERROR_ILLEGAL_STATE == (int)cudaErrorIllegalState, "codes");
_Static_assert((int)CUDA_ERROR_NOT_FOUND == (int)cudaErrorSymbolNotFound, "codes");
_Static_assert((int)CUDA_ERROR_NOT_SUPPORTED == (int)cudaErrorNotSupported, "codes");
_Static_assert((int)CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ==
		   (int)cudaErrorHostMemoryAlreadyRegistered,
	       "codes");
_Static_assert((int)CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED == (int)cudaErrorHostMemoryNotRegistered,
	       "codes");
_Static_assert((int)CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED == (int)cudaErrorStreamCaptureUnsupported,
	       "codes");
_Static_assert((int)CU_MEMPOOL_ATTR_USED_MEM_HIGH == (int)cudaMemPoolAttrUsedMemHigh, "attrs");
_Static_assert((int)CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH == (int)cudaGraphMemAttrReservedMemHigh,
	       "attrs");

static cudaError_t
sim_rt_error(CUresult rc)
{
	return (cudaError_t)rc;
}

// --- allocation ---------------------------------------------------------------------------

/*
 * What every allocating call settles before it reaches the driver: initialisation, the output
 * pointer, and a zero-byte request (success and NULL, like the real runtime). Returns 1 when
 * the driver must be called, else 0 with the answer in *err.
 */
static int
sim_alloc_begin(void **out, size_t size, cudaError_t *err)
{
	*err = sim_ready();
	if (*err != cudaSuccess)
		return 0;
	if (!out) {
		*err = cudaErrorInvalidValue;
		return 0;
	}
	*out = NULL;
	if (size == 0)
		return 0;
	sim_ctx_use(sim_current_ordinal());
	return 1;
}

static cudaError_t
sim_malloc(void **devPtr, size_t size)
{
	CUdeviceptr d = 0;
	cudaError_t err;

	if (!sim_alloc_begin(devPtr, size, &err))
		return err;
	err = sim_rt_error(simcuda_cuMemAlloc_v2(&d, size));
	*devPtr = (void *)d;
	return err;
}

static cudaError_t
sim_malloc_managed(void **devPtr, size_t size, unsigned int flags)
{
	CUdeviceptr d = 0;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
		return cudaErrorInvalidValue;
	if (!sim_alloc_begin(devPtr, size, &err))
		return err;
	err = sim_rt_error(simcuda_cuMemAllocManaged(&d, size, flags));
	*devPtr = (void *)d;
	return err;
}

/* The pitch is the width rounded up to 512 B; the runtime asks for 4-byte elements. */
static cudaError_t
sim_malloc_pitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t p = sim_heap_round(width);
	CUdeviceptr d = 0;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!devPtr || !pitch)
		return cudaErrorInvalidValue;
	*devPtr = NULL;
	if ((width && !p) || (height && p > SIZE_MAX / height))
		return cudaErrorMemoryAllocation;
	*pitch = p;
	if (!sim_alloc_begin(devPtr, p * height, &err))
		return err;
	err = sim_rt_error(simcuda_cuMemAllocPitch_v2(&d, pitch, width, height, 4));
	*devPtr = (void *)d;
	return err;
}

/* Like the real runtime, cudaFree(NULL) reaches the driver: cuMemFree_v2(0). */
static cudaError_t
sim_free(void *devPtr)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	sim_ctx_use(sim_current_ordinal());
	return sim_rt_error(simcuda_cuMemFree_v2((CUdeviceptr)devPtr));
}

static cudaError_t
sim_host_alloc(void **pHost, size_t size, unsigned int flags, int with_flags)
{
	const unsigned int known =
	    cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (flags & ~known)
		return cudaErrorInvalidValue;
	if (!sim_alloc_begin(pHost, size, &err))
		return err;
	if (with_flags)
		return sim_rt_error(simcuda_cuMemHostAlloc(pHost, size, flags));
	return sim_rt_error(simcuda_cuMemAllocHost_v2(pHost, size));
}

static cudaError_t
sim_free_host(void *ptr)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuMemFreeHost(ptr));
}

static cudaError_t
sim_host_register(void *ptr, size_t size, unsigned int flags)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuMemHostRegister_v2(ptr, size, flags));
}

static cudaError_t
sim_host_unregister(void *ptr)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuMemHostUnregister(ptr));
}

/* The four stream-ordered allocation calls of the driver. */
enum sim_async_call {
	SIM_ASYNC,
	SIM_ASYNC_PTSZ,
	SIM_FROM_POOL,
	SIM_FROM_POOL_PTSZ,
};

static CUresult
sim_async_driver(
    enum sim_async_call call, CUdeviceptr *d, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
	switch (call) {
	case SIM_ASYNC: return simcuda_cuMemAllocAsync(d, size, stream);
	case SIM_ASYNC_PTSZ: return simcuda_cuMemAllocAsync_ptsz(d, size, stream);
	case SIM_FROM_POOL: return simcuda_cuMemAllocFromPoolAsync(d, size, pool, stream);
	default: return simcuda_cuMemAllocFromPoolAsync_ptsz(d, size, pool, stream);
	}
}

/* cudaMallocAsync and cudaMallocFromPoolAsync, plain or _ptsz. */
static cudaError_t
sim_malloc_async(
    void **out, size_t size, cudaMemPool_t pool, cudaStream_t stream, enum sim_async_call call)
{
	CUdeviceptr d = 0;
	CUresult rc;
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!out)
		return cudaErrorInvalidValue;
	*out = NULL;
	err = sim_rt_error(sim_stream_lookup(stream, &device, NULL));
	if (err != cudaSuccess || size == 0)
		return err;
	sim_ctx_use(device);
	rc = sim_async_driver(call, &d, size, pool, stream);
	*out = (void *)d;
	return sim_rt_error(rc);
}

static cudaError_t
sim_free_async(void *devPtr, cudaStream_t stream, int ptsz)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (ptsz)
		return sim_rt_error(simcuda_cuMemFreeAsync_ptsz((CUdeviceptr)devPtr, stream));
	return sim_rt_error(simcuda_cuMemFreeAsync((CUdeviceptr)devPtr, stream));
}

static cudaError_t
sim_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!free_bytes || !total_bytes)
		return cudaErrorInvalidValue;
	sim_ctx_use(sim_current_ordinal());
	return sim_rt_error(simcuda_cuMemGetInfo_v2(free_bytes, total_bytes));
}

cudaError_t CUDARTAPI
cudaMalloc(void **devPtr, size_t size)
{
	SIM_RT(cudaMalloc, v3020, sim_malloc(devPtr, size), devPtr, size);
}

cudaError_t CUDARTAPI
cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	SIM_RT(cudaMallocManaged, v6000, sim_malloc_managed(devPtr, size, flags), devPtr, size,
	       flags);
}

cudaError_t CUDARTAPI
cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	SIM_RT(cudaMallocPitch, v3020, sim_malloc_pitch(devPtr, pitch, width, height), devPtr,
	       pitch, width, height);
}

cudaError_t CUDARTAPI
cudaFree(void *devPtr)
{
	SIM_RT(cudaFree, v3020, sim_free(devPtr), devPtr);
}

cudaError_t CUDARTAPI
cudaMallocHost(void **ptr, size_t size)
{
	SIM_RT(cudaMallocHost, v3020, sim_host_alloc(ptr, size, 0, 0), ptr, size);
}

cudaError_t CUDARTAPI
cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	SIM_RT(cudaHostAlloc, v3020, sim_host_alloc(pHost, size, flags, 1), pHost, size, flags);
}

cudaError_t CUDARTAPI
cudaFreeHost(void *ptr)
{
	SIM_RT(cudaFreeHost, v3020, sim_free_host(ptr), ptr);
}

cudaError_t CUDARTAPI
cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	SIM_RT(cudaHostRegister, v4000, sim_host_register(ptr, size, flags), ptr, size, flags);
}

cudaError_t CUDARTAPI
cudaHostUnregister(void *ptr)
{
	SIM_RT(cudaHostUnregister, v4000, sim_host_unregister(ptr), ptr);
}

cudaError_t CUDARTAPI
cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	SIM_RT(cudaMallocAsync, v11020, sim_malloc_async(devPtr, size, NULL, hStream, SIM_ASYNC),
	       devPtr, size, hStream);
}

cudaError_t CUDARTAPI
cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	SIM_RT(cudaMallocAsync_ptsz, v11020,
	       sim_malloc_async(devPtr, size, NULL, hStream, SIM_ASYNC_PTSZ), devPtr, size,
	       hStream);
}

cudaError_t CUDARTAPI
cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	SIM_RT(cudaFreeAsync, v11020, sim_free_async(devPtr, hStream, 0), devPtr, hStream);
}

cudaError_t CUDARTAPI
cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	SIM_RT(cudaFreeAsync_ptsz, v11020, sim_free_async(devPtr, hStream, 1), devPtr, hStream);
}

cudaError_t CUDARTAPI
cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	SIM_RT(cudaMallocFromPoolAsync, v11020,
	       sim_malloc_async(ptr, size, memPool, stream, SIM_FROM_POOL), ptr, size, memPool,
	       stream);
}

cudaError_t CUDARTAPI
cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	SIM_RT(cudaMallocFromPoolAsync_ptsz, v11020,
	       sim_malloc_async(ptr, size, memPool, stream, SIM_FROM_POOL_PTSZ), ptr, size, memPool,
	       stream);
}

cudaError_t CUDARTAPI
cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
	SIM_RT(cudaMemGetInfo, v3020, sim_mem_get_info(free_bytes, total_bytes), free_bytes,
	       total_bytes);
}

// --- memset and memcpy: no driver call in the simulation ----------------------------------

cudaError_t CUDARTAPI
cudaMemset(void *devPtr, int value, size_t count)
{
	SIM_RT(cudaMemset, v3020, sim_memset(devPtr, value, count, NULL), devPtr, value, count);
}

cudaError_t CUDARTAPI
cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	SIM_RT(cudaMemset_ptds, v7000, sim_memset(devPtr, value, count, NULL), devPtr, value,
	       count);
}

cudaError_t CUDARTAPI
cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	SIM_RT(cudaMemsetAsync, v3020, sim_memset(devPtr, value, count, stream), devPtr, value,
	       count, stream);
}

cudaError_t CUDARTAPI
cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	SIM_RT(cudaMemsetAsync_ptsz, v7000, sim_memset(devPtr, value, count, stream), devPtr, value,
	       count, stream);
}

cudaError_t CUDARTAPI
cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	SIM_RT(cudaMemcpy, v3020, sim_memcpy(dst, src, count, kind, NULL), dst, src, count, kind);
}

cudaError_t CUDARTAPI
cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	SIM_RT(cudaMemcpy_ptds, v7000, sim_memcpy(dst, src, count, kind, NULL), dst, src, count,
	       kind);
}

cudaError_t CUDARTAPI
cudaMemcpyAsync(
    void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	SIM_RT(cudaMemcpyAsync, v3020, sim_memcpy(dst, src, count, kind, stream), dst, src, count,
	       kind, stream);
}

cudaError_t CUDARTAPI
cudaMemcpyAsync_ptsz(
    void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	SIM_RT(cudaMemcpyAsync_ptsz, v7000, sim_memcpy(dst, src, count, kind, stream), dst, src,
	       count, kind, stream);
}

// --- memory pools -------------------------------------------------------------------------

static cudaError_t
sim_default_pool(cudaMemPool_t *memPool, int device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuDeviceGetDefaultMemPool((CUmemoryPool *)memPool, device));
}

static cudaError_t
sim_pool_create(cudaMemPool_t *memPool, const struct cudaMemPoolProps *props)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	/* struct cudaMemPoolProps is CUmemPoolProps field for field. */
	return sim_rt_error(
	    simcuda_cuMemPoolCreate((CUmemoryPool *)memPool, (const CUmemPoolProps *)props));
}

static cudaError_t
sim_pool_destroy(cudaMemPool_t pool)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuMemPoolDestroy(pool));
}

static cudaError_t
sim_pool_trim(cudaMemPool_t pool, size_t keep)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuMemPoolTrimTo(pool, keep));
}

static cudaError_t
sim_pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value, int set)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (set)
		return sim_rt_error(
		    simcuda_cuMemPoolSetAttribute(pool, (CUmemPool_attribute)attr, value));
	return sim_rt_error(simcuda_cuMemPoolGetAttribute(pool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI
cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	SIM_RT(cudaDeviceGetDefaultMemPool, v11020, sim_default_pool(memPool, device), memPool,
	       device);
}

cudaError_t CUDARTAPI
cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	SIM_RT(cudaMemPoolCreate, v11020, sim_pool_create(memPool, poolProps), memPool, poolProps);
}

cudaError_t CUDARTAPI
cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	SIM_RT(cudaMemPoolDestroy, v11020, sim_pool_destroy(memPool), memPool);
}

cudaError_t CUDARTAPI
cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	SIM_RT(cudaMemPoolTrimTo, v11020, sim_pool_trim(memPool, minBytesToKeep), memPool,
	       minBytesToKeep);
}

cudaError_t CUDARTAPI
cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	SIM_RT(cudaMemPoolGetAttribute, v11020, sim_pool_attr(memPool, attr, value, 0), memPool,
	       attr, value);
}

cudaError_t CUDARTAPI
cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	SIM_RT(cudaMemPoolSetAttribute, v11020, sim_pool_attr(memPool, attr, value, 1), memPool,
	       attr, value);
}

// --- devices ------------------------------------------------------------------------------

static cudaError_t
sim_get_device_count(int *count)
{
	cudaError_t err;

	if (!count)
		return cudaErrorInvalidValue;
	*count = 0;
	err = sim_ready();
	if (err == cudaSuccess)
		*count = sim_device_count();
	return err;
}

static cudaError_t
sim_get_device(int *device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!device)
		return cudaErrorInvalidValue;
	*device = sim_current_ordinal();
	return cudaSuccess;
}

/* Since CUDA 12, cudaSetDevice also initialises the device's primary context. */
static cudaError_t
sim_set_device(int device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (device < 0 || device >= sim_device_count())
		return cudaErrorInvalidDevice;
	sim_set_current(device);
	sim_ctx_use(device);
	return cudaSuccess;
}

/* On the current device (see sim_do_cuDevicePrimaryCtxReset_v2 for what it frees). */
static cudaError_t
sim_device_reset(void)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuDevicePrimaryCtxReset_v2(sim_current_ordinal()));
}

static cudaError_t
sim_version(int *version, int value)
{
	if (!version)
		return cudaErrorInvalidValue;
	*version = value;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaGetDeviceCount(int *count)
{
	SIM_RT(cudaGetDeviceCount, v3020, sim_get_device_count(count), count);
}

/* A query with a real cost: 40-55 ns a call on the H100 host against 8-10 for libcuda's
 * cuCtxGetCurrent and cuCtxGetDevice (bench/query_cost.c), so it is charged and counted as the
 * driver's queries are (device.c, sim_query): a tracer asking it at every event shows. */
cudaError_t CUDARTAPI
cudaGetDevice(int *device)
{
	sim_query();
	SIM_RT(cudaGetDevice, v3020, sim_get_device(device), device);
}

cudaError_t CUDARTAPI
cudaSetDevice(int device)
{
	SIM_RT(cudaSetDevice, v3020, sim_set_device(device), device);
}

cudaError_t CUDARTAPI
cudaDeviceSynchronize(void)
{
	SIM_RT0(cudaDeviceSynchronize, v3020, sim_ready());
}

cudaError_t CUDARTAPI
cudaDeviceReset(void)
{
	SIM_RT0(cudaDeviceReset, v3020, sim_device_reset());
}

cudaError_t CUDARTAPI
cudaDriverGetVersion(int *driverVersion)
{
	SIM_RT(cudaDriverGetVersion, v3020, sim_version(driverVersion, 13000), driverVersion);
}

cudaError_t CUDARTAPI
cudaRuntimeGetVersion(int *runtimeVersion)
{
	SIM_RT(cudaRuntimeGetVersion, v3020, sim_version(runtimeVersion, SIMCUDA_RUNTIME_VERSION),
	       runtimeVersion);
}

// --- streams ------------------------------------------------------------------------------

cudaError_t CUDARTAPI
cudaStreamCreate(cudaStream_t *pStream)
{
	SIM_RT(cudaStreamCreate, v3020, sim_stream_create(pStream, cudaStreamDefault), pStream);
}

cudaError_t CUDARTAPI
cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	SIM_RT(cudaStreamCreateWithFlags, v5000, sim_stream_create(pStream, flags), pStream, flags);
}

cudaError_t CUDARTAPI
cudaStreamDestroy(cudaStream_t stream)
{
	SIM_RT(cudaStreamDestroy, v5050, sim_stream_destroy(stream), stream);
}

cudaError_t CUDARTAPI
cudaStreamSynchronize(cudaStream_t stream)
{
	SIM_RT(cudaStreamSynchronize, v3020, sim_stream_sync(stream), stream);
}

cudaError_t CUDARTAPI
cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	SIM_RT(cudaStreamSynchronize_ptsz, v7000, sim_stream_sync(stream), stream);
}

// --- graphs -------------------------------------------------------------------------------

static cudaError_t
sim_graph_create(cudaGraph_t *pGraph, unsigned int flags)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphCreate(pGraph, flags));
}

static cudaError_t
sim_graph_destroy(cudaGraph_t graph)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphDestroy(graph));
}

/* struct cudaMemAllocNodeParams is CUDA_MEM_ALLOC_NODE_PARAMS field for field. */
static cudaError_t
sim_graph_add_alloc(cudaGraphNode_t *node,
		    cudaGraph_t graph,
		    const cudaGraphNode_t *deps,
		    size_t n_deps,
		    struct cudaMemAllocNodeParams *params)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphAddMemAllocNode(node, graph, deps, n_deps,
							   (CUDA_MEM_ALLOC_NODE_PARAMS *)params));
}

static cudaError_t
sim_graph_add_free(cudaGraphNode_t *node,
		   cudaGraph_t graph,
		   const cudaGraphNode_t *deps,
		   size_t n_deps,
		   void *dptr)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(
	    simcuda_cuGraphAddMemFreeNode(node, graph, deps, n_deps, (CUdeviceptr)dptr));
}

static cudaError_t
sim_begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuStreamBeginCapture_v2(stream, (CUstreamCaptureMode)mode));
}

static cudaError_t
sim_end_capture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuStreamEndCapture(stream, pGraph));
}

static cudaError_t
sim_graph_instantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphInstantiateWithFlags(exec, graph, flags));
}

static cudaError_t
sim_graph_launch(cudaGraphExec_t exec, cudaStream_t stream)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphLaunch(exec, stream));
}

static cudaError_t
sim_graph_exec_destroy(cudaGraphExec_t exec)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuGraphExecDestroy(exec));
}

static cudaError_t
sim_graph_mem_trim(int device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(simcuda_cuDeviceGraphMemTrim(device));
}

static cudaError_t
sim_graph_mem_attr(int device, enum cudaGraphMemAttributeType attr, void *value)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	return sim_rt_error(
	    simcuda_cuDeviceGetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

cudaError_t CUDARTAPI
cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	SIM_RT(cudaGraphCreate, v10000, sim_graph_create(pGraph, flags), pGraph, flags);
}

cudaError_t CUDARTAPI
cudaGraphDestroy(cudaGraph_t graph)
{
	SIM_RT(cudaGraphDestroy, v10000, sim_graph_destroy(graph), graph);
}

cudaError_t CUDARTAPI
cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode,
			 cudaGraph_t graph,
			 const cudaGraphNode_t *pDependencies,
			 size_t numDependencies,
			 struct cudaMemAllocNodeParams *nodeParams)
{
	SIM_RT(cudaGraphAddMemAllocNode, v11040,
	       sim_graph_add_alloc(pGraphNode, graph, pDependencies, numDependencies, nodeParams),
	       pGraphNode, graph, pDependencies, numDependencies, nodeParams);
}

cudaError_t CUDARTAPI
cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode,
			cudaGraph_t graph,
			const cudaGraphNode_t *pDependencies,
			size_t numDependencies,
			void *dptr)
{
	SIM_RT(cudaGraphAddMemFreeNode, v11040,
	       sim_graph_add_free(pGraphNode, graph, pDependencies, numDependencies, dptr),
	       pGraphNode, graph, pDependencies, numDependencies, dptr);
}

cudaError_t CUDARTAPI
cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	SIM_RT(cudaStreamBeginCapture, v10000, sim_begin_capture(stream, mode), stream, mode);
}

cudaError_t CUDARTAPI
cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	SIM_RT(cudaStreamEndCapture, v10000, sim_end_capture(stream, pGraph), stream, pGraph);
}

cudaError_t CUDARTAPI
cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
	SIM_RT(cudaGraphInstantiate, v12000, sim_graph_instantiate(pGraphExec, graph, flags),
	       pGraphExec, graph, flags);
}

cudaError_t CUDARTAPI
cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	SIM_RT(cudaGraphLaunch, v10000, sim_graph_launch(graphExec, stream), graphExec, stream);
}

cudaError_t CUDARTAPI
cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	SIM_RT(cudaGraphExecDestroy, v10000, sim_graph_exec_destroy(graphExec), graphExec);
}

cudaError_t CUDARTAPI
cudaDeviceGraphMemTrim(int device)
{
	SIM_RT(cudaDeviceGraphMemTrim, v11040, sim_graph_mem_trim(device), device);
}

cudaError_t CUDARTAPI
cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
	SIM_RT(cudaDeviceGetGraphMemAttribute, v11040, sim_graph_mem_attr(device, attr, value),
	       device, attr, value);
}

// --- errors -------------------------------------------------------------------------------

cudaError_t CUDARTAPI
cudaGetLastError(void)
{
	cudaError_t err = sim_last_error;

	sim_last_error = cudaSuccess;
	return err;
}

cudaError_t CUDARTAPI
cudaPeekAtLastError(void)
{
	return sim_last_error;
}

const char *CUDARTAPI
cudaGetErrorName(cudaError_t error)
{
	return sim_error_name(error);
}

const char *CUDARTAPI
cudaGetErrorString(cudaError_t error)
{
	return sim_error_string(error);
}
