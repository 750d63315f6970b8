/*
 * @brief The CUPTI callback ids the tracer enables: the driver API's memory calls, the runtime
 * API's (for the names the program called) and three resource callbacks. Never whole domains.
 *
 * In a header so that bench/launch_inprocess.cu can hold exactly this set while it measures
 * what a subscriber costs kernel launches.
 */
#ifndef GMT_CAPTURE_CUPTI_IDS_H
#define GMT_CAPTURE_CUPTI_IDS_H

#include <cupti.h>

#ifndef RT
#define RT(cb) CUPTI_RUNTIME_TRACE_CBID_##cb
#endif
#ifndef DRV
#define DRV(cb) CUPTI_DRIVER_TRACE_CBID_##cb
#endif

static const CUpti_CallbackId runtime_cbids[] = {
	RT(cudaMalloc_v3020), RT(cudaMallocPitch_v3020), RT(cudaMalloc3D_v3020),
	RT(cudaMallocManaged_v6000), RT(cudaMallocHost_v3020), RT(cudaHostAlloc_v3020),
	RT(cudaHostRegister_v4000), RT(cudaMallocAsync_v11020), RT(cudaMallocAsync_ptsz_v11020),
	RT(cudaMallocFromPoolAsync_v11020), RT(cudaMallocFromPoolAsync_ptsz_v11020),
	RT(cudaMallocArray_v3020), RT(cudaMalloc3DArray_v3020), RT(cudaMallocMipmappedArray_v5000),
	RT(cudaIpcOpenMemHandle_v4010), RT(cudaMemPoolImportPointer_v11020),
	RT(cudaExternalMemoryGetMappedBuffer_v10000), RT(cudaGraphAddMemAllocNode_v11040),
	RT(cudaFree_v3020), RT(cudaFreeHost_v3020), RT(cudaHostUnregister_v4000),
	RT(cudaFreeAsync_v11020), RT(cudaFreeAsync_ptsz_v11020), RT(cudaFreeArray_v3020),
	RT(cudaFreeMipmappedArray_v5000), RT(cudaIpcCloseMemHandle_v4010),
	RT(cudaDestroyExternalMemory_v10000), RT(cudaGraphAddMemFreeNode_v11040),
	RT(cudaDeviceReset_v3020), RT(cudaMemPoolCreate_v11020), RT(cudaMemPoolDestroy_v11020),
	RT(cudaMemPoolTrimTo_v11020), RT(cudaDeviceGraphMemTrim_v11040),
};

static const CUpti_CallbackId driver_cbids[] = {
	DRV(cuMemAlloc_v2), DRV(cuMemAllocPitch_v2), DRV(cuMemAllocManaged), DRV(cuMemAllocHost_v2),
	DRV(cuMemHostAlloc), DRV(cuMemHostRegister_v2), DRV(cuMemAllocAsync),
	DRV(cuMemAllocAsync_ptsz), DRV(cuMemAllocFromPoolAsync), DRV(cuMemAllocFromPoolAsync_ptsz),
	DRV(cuArrayCreate_v2), DRV(cuArray3DCreate_v2), DRV(cuMipmappedArrayCreate),
	DRV(cuMemAddressReserve), DRV(cuMemCreate), DRV(cuMemMap), DRV(cuMemRetainAllocationHandle),
	DRV(cuMemImportFromShareableHandle), DRV(cuIpcOpenMemHandle_v2), DRV(cuMemPoolImportPointer),
	DRV(cuExternalMemoryGetMappedBuffer), DRV(cuGraphAddMemAllocNode), DRV(cuMemFree_v2),
	DRV(cuMemFreeHost), DRV(cuMemHostUnregister), DRV(cuMemFreeAsync), DRV(cuMemFreeAsync_ptsz),
	DRV(cuArrayDestroy), DRV(cuMipmappedArrayDestroy), DRV(cuMemAddressFree), DRV(cuMemRelease),
	DRV(cuMemUnmap), DRV(cuIpcCloseMemHandle), DRV(cuDestroyExternalMemory),
	DRV(cuGraphAddMemFreeNode), DRV(cuCtxDestroy_v2), DRV(cuDevicePrimaryCtxReset_v2),
	DRV(cuMemPoolDestroy), DRV(cuMemPoolTrimTo), DRV(cuMemPoolSetAttribute), DRV(cuGraphLaunch),
	DRV(cuGraphLaunch_ptsz), DRV(cuDeviceGraphMemTrim), DRV(cuDeviceSetMemPool), DRV(cuMemSetMemPool),
};

static const CUpti_CallbackId resource_cbids[] = {
	CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
	CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
	CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
};

#endif
