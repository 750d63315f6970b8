/* SPDX-License-Identifier: MIT */
/**
 * @file simcuda-driver.h
 * @brief The driver API calls of the test double: one list, shared by the simulated runtime
 *        (which implements them) and the simulated libcuda.so.1 (which exports them).
 *
 * TEST DOUBLE, not CUDA. The simulated state (devices, heaps, pools, VMM, graphs) lives in
 * libcudart.so.13, as the only place both APIs can reach. For every entry X(name, params, args)
 * of SIMCUDA_DRIVER_APIS:
 *  - libcudart.so.13 defines simcuda_<name> (symbol version SIMCUDA_1): it fires the
 *    CUPTI DRIVER_API callbacks of <name> around sim_do_<name>, the simulation proper;
 *  - the simulated runtime calls simcuda_<name> where the real runtime calls the driver, so a
 *    cuda* call shows its driver call with the same correlation id, as on a GPU;
 *  - libcuda.so.1 defines <name> itself, unversioned like the real driver, as a call of
 *    simcuda_<name>: a program (or a tracer's dlsym) that calls the driver directly sees it.
 * params is the prototype of cuda.h (libcuda.c re-declares each one, so the compiler checks it
 * against cuda.h), args the same names in parentheses. The CUPTI callback id, the functionName
 * and the parameter struct of generated_cuda_meta.h follow from name.
 */
#ifndef SIMCUDA_DRIVER_H
#define SIMCUDA_DRIVER_H

#include <cuda.h>

/* clang-format off */
#define SIMCUDA_DRIVER_APIS(X)                                                                   \
	/* initialisation, devices, contexts */                                                  \
	X(cuInit, (unsigned int Flags), (Flags))                                                 \
	X(cuDriverGetVersion, (int *driverVersion), (driverVersion))                             \
	X(cuDeviceGet, (CUdevice *device, int ordinal), (device, ordinal))                       \
	X(cuDeviceGetCount, (int *count), (count))                                               \
	X(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev), (pciBusId, len, dev))    \
	X(cuCtxGetDevice, (CUdevice *device), (device))                                          \
	X(cuCtxGetCurrent, (CUcontext *pctx), (pctx))                                            \
	X(cuCtxSetCurrent, (CUcontext ctx), (ctx))                                               \
	X(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev), (pctx, dev))                \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))                                   \
	X(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev))                                     \
	/* device and host memory */                                                             \
	X(cuMemGetInfo_v2, (size_t *free_bytes, size_t *total_bytes), (free_bytes, total_bytes)) \
	X(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize))                 \
	X(cuMemAllocPitch_v2,                                                                    \
	  (CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,                \
	   unsigned int ElementSizeBytes),                                                       \
	  (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                \
	X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                              \
	X(cuMemGetAddressRange_v2, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr),        \
	  (pbase, psize, dptr))                                                                  \
	X(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),           \
	  (dptr, bytesize, flags))                                                               \
	X(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))                       \
	X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags)) \
	X(cuMemFreeHost, (void *p), (p))                                                         \
	X(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags),                  \
	  (p, bytesize, Flags))                                                                  \
	X(cuMemHostUnregister, (void *p), (p))                                                   \
	/* stream-ordered allocator and pools */                                                 \
	X(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),               \
	  (dptr, bytesize, hStream))                                                             \
	X(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),          \
	  (dptr, bytesize, hStream))                                                             \
	X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                 \
	X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))            \
	X(cuMemAllocFromPoolAsync,                                                               \
	  (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),             \
	  (dptr, bytesize, pool, hStream))                                                       \
	X(cuMemAllocFromPoolAsync_ptsz,                                                          \
	  (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),             \
	  (dptr, bytesize, pool, hStream))                                                       \
	X(cuDeviceGetMemPool, (CUmemoryPool *pool, CUdevice dev), (pool, dev))                   \
	X(cuDeviceGetDefaultMemPool, (CUmemoryPool *pool_out, CUdevice dev), (pool_out, dev))    \
	X(cuMemPoolCreate, (CUmemoryPool *pool, const CUmemPoolProps *poolProps),                \
	  (pool, poolProps))                                                                     \
	X(cuMemPoolDestroy, (CUmemoryPool pool), (pool))                                         \
	X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))   \
	X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),     \
	  (pool, attr, value))                                                                   \
	X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),     \
	  (pool, attr, value))                                                                   \
	/* virtual memory management */                                                          \
	X(cuMemGetAllocationGranularity,                                                         \
	  (size_t *granularity, const CUmemAllocationProp *prop,                                 \
	   CUmemAllocationGranularity_flags option),                                             \
	  (granularity, prop, option))                                                           \
	X(cuMemAddressReserve,                                                                   \
	  (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,                    \
	   unsigned long long flags),                                                            \
	  (ptr, size, alignment, addr, flags))                                                   \
	X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))                         \
	X(cuMemCreate,                                                                           \
	  (CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,   \
	   unsigned long long flags),                                                            \
	  (handle, size, prop, flags))                                                           \
	X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                         \
	X(cuMemMap,                                                                              \
	  (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,     \
	   unsigned long long flags),                                                            \
	  (ptr, size, offset, handle, flags))                                                    \
	X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))                               \
	X(cuMemSetAccess,                                                                        \
	  (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),             \
	  (ptr, size, desc, count))                                                              \
	X(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle *handle, void *addr),       \
	  (handle, addr))                                                                        \
	/* graphs */                                                                             \
	X(cuGraphCreate, (CUgraph *phGraph, unsigned int flags), (phGraph, flags))               \
	X(cuGraphDestroy, (CUgraph hGraph), (hGraph))                                            \
	X(cuGraphAddMemAllocNode,                                                                \
	  (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,            \
	   size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams),                      \
	  (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))                      \
	X(cuGraphAddMemFreeNode,                                                                 \
	  (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,            \
	   size_t numDependencies, CUdeviceptr dptr),                                            \
	  (phGraphNode, hGraph, dependencies, numDependencies, dptr))                            \
	X(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType *type), (hNode, type))         \
	X(cuGraphMemAllocNodeGetParams,                                                          \
	  (CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out), (hNode, params_out))      \
	X(cuGraphMemFreeNodeGetParams, (CUgraphNode hNode, CUdeviceptr *dptr_out),               \
	  (hNode, dptr_out))                                                                     \
	X(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode)) \
	X(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))          \
	X(cuGraphInstantiateWithFlags,                                                           \
	  (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags),                  \
	  (phGraphExec, hGraph, flags))                                                          \
	X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))      \
	X(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))                            \
	X(cuDeviceGraphMemTrim, (CUdevice device), (device))                                     \
	X(cuDeviceGetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value), \
	  (device, attr, value))
/* clang-format on */

#ifdef __cplusplus
extern "C" {
#endif

#define SIMCUDA_DECLARE_DRIVER(name, params, args) CUresult simcuda_##name params;
SIMCUDA_DRIVER_APIS(SIMCUDA_DECLARE_DRIVER)
#undef SIMCUDA_DECLARE_DRIVER

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_DRIVER_H */
