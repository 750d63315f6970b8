/*
 * @brief CUPTI callbacks: every memory call of the driver API, joined with the runtime call
 * above it, recorded once (see cupti.h and docs/design.md, "Capture paths").
 *
 * How one application call becomes one event. A runtime call fires RUNTIME ENTER, then the
 * driver call it makes fires DRIVER ENTER/EXIT with the same correlation id, then RUNTIME EXIT.
 *
 *   RUNTIME ENTER   remember (correlation id, api) in `rt`; a free takes its sequence number
 *   DRIVER ENTER    remember the driver call in `drv`; a free takes its sequence number (the
 *                   runtime's when joined): before the memory can be handed out again
 *   DRIVER EXIT     build the event from the driver call's parameters; api = the runtime call
 *                   when joined, driver = the driver call; an allocation takes its seq now
 *   RUNTIME EXIT    when no driver event joined it (cudart used a private path), record from the
 *                   runtime call's own parameters; then forget `rt`
 *
 * Resource callbacks add what no API call says: context destruction (cudaDeviceReset, also
 * without a runtime call) and graph memory nodes (explicit and captured from streams).
 *
 * Inside a callback: no allocation, no lock, no I/O; only trivial driver queries (device of a
 * context, pool reservation, graph node parameters), which fire no callbacks of ours because
 * gmt_depth is held for the callback's duration.
 */
#define _GNU_SOURCE
#include "capture/cupti.h"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "capture/capture.h"
#include "capture/hooks.h"
#include "capture/instance.h"
#include "capture/stacks.h"
#include "util/devices.h"
#include "util/log.h"
#include "util/options.h"

_Atomic int gmt_cupti_phase = GMT_CUPTI_UNTRIED;

static char reason[256];

// --- libcupti and libcuda, found at run time ------------------------------------------------------

static struct {
	__typeof__(&cuptiGetVersion) GetVersion;
	__typeof__(&cuptiSubscribe) Subscribe;
	__typeof__(&cuptiSubscribe_v2) Subscribe_v2; /* optional */
	__typeof__(&cuptiUnsubscribe) Unsubscribe;
	__typeof__(&cuptiEnableCallback) EnableCallback;
	__typeof__(&cuptiGetResultString) GetResultString;
	__typeof__(&cuptiGetContextId) GetContextId;
	__typeof__(&cuptiGetDeviceId) GetDeviceId;
} cupti;

static CUpti_SubscriberHandle subscriber;

/* Driver queries made from inside callbacks; resolved at first use (libcuda may load after us). */
#define DRIVER_QUERIES(X) \
	X(cuMemGetInfo_v2) X(cuMemGetAddressRange_v2) X(cuDeviceGetMemPool) \
	X(cuMemPoolGetAttribute) X(cuGraphNodeGetType) X(cuGraphMemAllocNodeGetParams) \
	X(cuGraphMemFreeNodeGetParams) X(cuDeviceGetGraphMemAttribute) X(cuDeviceGetPCIBusId)

enum drv_query {
#define X(name) Q_##name,
	DRIVER_QUERIES(X)
#undef X
	Q_COUNT
};

static const char *const query_names[Q_COUNT] = {
#define X(name) [Q_##name] = #name,
	DRIVER_QUERIES(X)
#undef X
};

static _Atomic(void *) queries[Q_COUNT];
static _Atomic bool query_missing[Q_COUNT];

static void *
driver_query(enum drv_query q)
{
	void *p = atomic_load_explicit(&queries[q], memory_order_acquire);
	if (__builtin_expect(p != NULL, 1) || atomic_load_explicit(&query_missing[q], memory_order_relaxed))
		return p;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		p = dlsym(h, query_names[q]);
		gmt_real_dlclose(h);
	}
	if (p)
		atomic_store_explicit(&queries[q], p, memory_order_release);
	else if (h)
		atomic_store_explicit(&query_missing[q], true, memory_order_relaxed);
	return p;
}

#define QUERY(name) ((__typeof__(&name))driver_query(Q_##name))

static bool
cupti_resolve(void *h)
{
#define SYM(field, name) cupti.field = (__typeof__(cupti.field))dlsym(h, name)
	SYM(GetVersion, "cuptiGetVersion");
	SYM(Subscribe, "cuptiSubscribe");
	SYM(Subscribe_v2, "cuptiSubscribe_v2");
	SYM(Unsubscribe, "cuptiUnsubscribe");
	SYM(EnableCallback, "cuptiEnableCallback");
	SYM(GetResultString, "cuptiGetResultString");
	SYM(GetContextId, "cuptiGetContextId");
	SYM(GetDeviceId, "cuptiGetDeviceId");
#undef SYM
	return cupti.Subscribe && cupti.EnableCallback && cupti.GetContextId && cupti.GetDeviceId;
}

/* The copy already in the process first (torch's wheel maps one at import): a second copy would
 * be a second CUPTI instance. Then the option, the loader path, the toolkit. */
static void *
cupti_open(const struct gmt_options *opts)
{
	static const char *const toolkit[] = {
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
		"/usr/local/cuda/lib64/libcupti.so.13",
		"/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
	};
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (h)
		return h;
	if (opts->cupti_lib[0])
		return dlopen(opts->cupti_lib, RTLD_NOW | RTLD_LOCAL);
	h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !h && i < sizeof(toolkit) / sizeof(toolkit[0]); i++)
		h = dlopen(toolkit[i], RTLD_NOW | RTLD_LOCAL);
	return h;
}

// --- per-thread call state ------------------------------------------------------------------------

#define TLS __thread __attribute__((tls_model("initial-exec")))

/* The runtime call in progress on this thread (runtime calls do not nest). */
static TLS struct {
	uint32_t corr;
	uint16_t api;   /* 0: none */
	uint8_t joined; /* a driver or resource event was recorded for it */
	uint8_t ptsz;
	uint16_t failed_driver; /* a driver call under it failed: the runtime's result decides */
	uint64_t seq, ts; /* frees and resets: taken at ENTER, handed to the driver call */
} rt;

/* The driver memory call in progress on this thread. */
static TLS struct {
	uint32_t corr;
	uint16_t api;
	uint8_t consumed; /* a resource callback inside it recorded the event (graph node, reset) */
	uint32_t context; /* its context: resource callbacks inside it (graph nodes) may have none */
	int32_t device;
	uint64_t seq, ts;
} drv;

/* Last context seen on this thread and its device: most calls hit it. */
static TLS struct {
	uint32_t uid;
	int32_t device;
} ctx_cache;

static int32_t
context_device(CUcontext ctx, uint32_t uid)
{
	uint32_t dev;

	if (!ctx)
		return -1;
	if (uid && uid == ctx_cache.uid)
		return ctx_cache.device;
	if (cupti.GetDeviceId(ctx, &dev) != CUPTI_SUCCESS)
		return -1;
	ctx_cache.uid = uid;
	ctx_cache.device = (int32_t)dev;
	return (int32_t)dev;
}

/* Is this driver callback the one under the runtime call in progress? */
static bool
joined_to_runtime(uint32_t corr)
{
	return rt.api != GMT_API_NONE && rt.corr == corr;
}

static void
stamp_order(uint64_t *seq, uint64_t *ts)
{
	struct gmt_event tmp;
	gmt_stamp(&tmp);
	*seq = tmp.seq;
	*ts = tmp.ts_ns;
}

/* A free's order is taken before the memory can be handed out again (trace-format.md): at the
 * runtime call's ENTER when there is one, else at the driver call's. */
static void
take_free_order(uint64_t *seq, uint64_t *ts, uint32_t corr)
{
	if (joined_to_runtime(corr) && rt.seq) {
		*seq = rt.seq;
		*ts = rt.ts;
		rt.seq = 0; /* one runtime call, one free order */
		return;
	}
	stamp_order(seq, ts);
}

// --- reservation readings -------------------------------------------------------------------------

/* Last reading per pool (or device graph pool): a reading is recorded only when it changed, so a
 * pool allocation costs two driver queries and no trace line in the steady state. */
#define USAGE_SLOTS 256
static struct {
	_Atomic uint64_t key;
	_Atomic uint64_t value; /* reading + 1; 0 = none yet */
} usage_last[USAGE_SLOTS];

static bool
usage_changed(uint64_t key, uint64_t value)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < USAGE_SLOTS; i++) {
		size_t j = (size_t)(h + i) & (USAGE_SLOTS - 1);
		uint64_t k = atomic_load_explicit(&usage_last[j].key, memory_order_acquire);
		if (k == 0) {
			uint64_t expected = 0;
			if (!atomic_compare_exchange_strong(&usage_last[j].key, &expected, key) &&
			    expected != key)
				continue;
			k = key;
		}
		if (k == key)
			return atomic_exchange(&usage_last[j].value, value + 1) != value + 1;
	}
	return true; /* table full: record every reading */
}

static void
emit_usage(enum gmt_kind kind, enum gmt_api api, enum gmt_api driver, uint64_t key, uint64_t pool,
	   int32_t device, uint64_t context, uint64_t value)
{
	if (!usage_changed(key, value))
		return;
	struct gmt_event ev = {
		.op = GMT_OP_USAGE,
		.kind = (uint8_t)kind,
		.api = (uint16_t)api,
		.driver = (uint16_t)driver,
		.pool = pool,
		.size = value,
		.device = device,
		.context = context,
		.flags = pool ? GMT_EV_HAS_POOL : 0,
	};
	gmt_stamp(&ev);
	gmt_emit(&ev);
}

static void
read_pool(CUmemoryPool pool, const struct gmt_event *cause)
{
	cuuint64_t reserved = 0;
	__typeof__(&cuMemPoolGetAttribute) get = QUERY(cuMemPoolGetAttribute);

	if (!pool || !get || get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
		return;
	emit_usage(GMT_KIND_POOL_RESERVE, (enum gmt_api)cause->api, (enum gmt_api)cause->driver,
		   (uint64_t)(uintptr_t)pool, (uint64_t)(uintptr_t)pool, cause->device, cause->context,
		   reserved);
}

/* The pool a cuMemAllocAsync draws from: the current pool of the device, cached per device (one
 * query instead of two per allocation) until the program sets another one. */
static _Atomic(CUmemoryPool) current_pools[GMT_DEVICES_MAX];

static CUmemoryPool
current_pool(int32_t device)
{
	CUmemoryPool pool;
	__typeof__(&cuDeviceGetMemPool) get_pool = QUERY(cuDeviceGetMemPool);

	if (device < 0 || device >= GMT_DEVICES_MAX)
		return NULL;
	pool = atomic_load_explicit(&current_pools[device], memory_order_acquire);
	if (pool)
		return pool;
	if (!get_pool || get_pool(&pool, (CUdevice)device) != CUDA_SUCCESS)
		return NULL;
	atomic_store_explicit(&current_pools[device], pool, memory_order_release);
	return pool;
}

static void
forget_current_pools(int32_t device)
{
	for (int32_t d = 0; d < GMT_DEVICES_MAX; d++)
		if (device < 0 || d == device)
			atomic_store_explicit(&current_pools[d], NULL, memory_order_release);
}

/* Calls that change which pool cuMemAllocAsync uses; they make no event. */
static bool
on_pool_choice(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	if (cbid != DRV(cuDeviceSetMemPool) && cbid != DRV(cuMemSetMemPool))
		return false;
	if (cb->callbackSite == CUPTI_API_EXIT)
		forget_current_pools(cbid == DRV(cuDeviceSetMemPool)
					     ? (int32_t)((const cuDeviceSetMemPool_params *)cb->functionParams)->dev
					     : -1);
	return true;
}

static void
read_graph_pool(int32_t device, const struct gmt_event *cause)
{
	cuuint64_t reserved = 0;
	__typeof__(&cuDeviceGetGraphMemAttribute) get = QUERY(cuDeviceGetGraphMemAttribute);

	if (device < 0 || !get ||
	    get((CUdevice)device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
		return;
	emit_usage(GMT_KIND_GRAPH_RESERVE, (enum gmt_api)cause->api, (enum gmt_api)cause->driver,
		   (1ULL << 62) | (uint64_t)device, 0, device, cause->context, reserved);
}

// --- events from parameters -----------------------------------------------------------------------

static uint64_t
out_ptr(bool ok, const void *p)
{
	return ok && p ? (uint64_t)(uintptr_t)p : 0;
}

/* Nominal bytes of a CUDA array: what was asked for; the driver's layout is opaque. */
static uint64_t
array_bytes(size_t w, size_t h, size_t d, CUarray_format fmt, unsigned channels)
{
	size_t elem;
	switch (fmt) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8: elem = 1; break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF: elem = 2; break;
	default: elem = 4; break;
	}
	return (uint64_t)w * (h ? h : 1) * (d ? d : 1) * elem * (channels ? channels : 1);
}

/* Size of the allocation containing @p ptr (IPC and pool imports name no size). */
static uint64_t
range_size(uint64_t ptr)
{
	CUdeviceptr base;
	size_t size = 0;
	__typeof__(&cuMemGetAddressRange_v2) get = QUERY(cuMemGetAddressRange_v2);

	if (!ptr || !get || get(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
		return 0;
	return size;
}

/* Fill @p ev from a driver call's parameters at EXIT. Returns false when the call is not an
 * event (a free of NULL, a call that is recorded elsewhere or only names an enclosing call). */
static bool
driver_event(CUpti_CallbackId cbid, const void *params, bool ok, struct gmt_event *ev)
{
	switch (cbid) {
	case DRV(cuMemAlloc_v2): {
		const cuMemAlloc_v2_params *p = params;
		ev->ptr = ok ? *p->dptr : 0;
		ev->size = p->bytesize;
		return true;
	}
	case DRV(cuMemAllocPitch_v2): {
		const cuMemAllocPitch_v2_params *p = params;
		ev->ptr = ok ? *p->dptr : 0;
		ev->requested = p->WidthInBytes * p->Height;
		ev->size = ok && p->pPitch ? *p->pPitch * p->Height : ev->requested;
		return true;
	}
	case DRV(cuMemAllocManaged): {
		const cuMemAllocManaged_params *p = params;
		ev->ptr = ok ? *p->dptr : 0;
		ev->size = p->bytesize;
		ev->cuda_flags = p->flags;
		ev->flags |= GMT_EV_HAS_FLAGS;
		return true;
	}
	case DRV(cuMemAllocHost_v2): {
		const cuMemAllocHost_v2_params *p = params;
		ev->ptr = out_ptr(ok, *p->pp);
		ev->size = p->bytesize;
		return true;
	}
	case DRV(cuMemHostAlloc): {
		const cuMemHostAlloc_params *p = params;
		ev->ptr = out_ptr(ok, *p->pp);
		ev->size = p->bytesize;
		ev->cuda_flags = p->Flags;
		ev->flags |= GMT_EV_HAS_FLAGS;
		return true;
	}
	case DRV(cuMemHostRegister_v2): {
		const cuMemHostRegister_v2_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->p;
		ev->size = p->bytesize;
		ev->cuda_flags = p->Flags;
		ev->flags |= GMT_EV_HAS_FLAGS;
		return true;
	}
	case DRV(cuMemAllocAsync):
	case DRV(cuMemAllocAsync_ptsz): {
		const cuMemAllocAsync_params *p = params;
		ev->ptr = ok ? *p->dptr : 0;
		ev->size = p->bytesize;
		ev->stream = (uint64_t)(uintptr_t)p->hStream;
		return true;
	}
	case DRV(cuMemAllocFromPoolAsync):
	case DRV(cuMemAllocFromPoolAsync_ptsz): {
		const cuMemAllocFromPoolAsync_params *p = params;
		ev->ptr = ok ? *p->dptr : 0;
		ev->size = p->bytesize;
		ev->stream = (uint64_t)(uintptr_t)p->hStream;
		ev->pool = (uint64_t)(uintptr_t)p->pool;
		ev->flags |= GMT_EV_HAS_POOL;
		return true;
	}
	case DRV(cuArrayCreate_v2): {
		const cuArrayCreate_v2_params *p = params;
		const CUDA_ARRAY_DESCRIPTOR *d = p->pAllocateArray;
		ev->ptr = out_ptr(ok, *p->pHandle);
		ev->size = d ? array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels) : 0;
		return true;
	}
	case DRV(cuArray3DCreate_v2): {
		const cuArray3DCreate_v2_params *p = params;
		const CUDA_ARRAY3D_DESCRIPTOR *d = p->pAllocateArray;
		ev->ptr = out_ptr(ok, *p->pHandle);
		ev->size = d ? array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
		return true;
	}
	case DRV(cuMipmappedArrayCreate): {
		const cuMipmappedArrayCreate_params *p = params;
		const CUDA_ARRAY3D_DESCRIPTOR *d = p->pMipmappedArrayDesc;
		ev->ptr = out_ptr(ok, *p->pHandle);
		ev->size = d ? array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
		return true;
	}
	case DRV(cuMemAddressReserve): {
		const cuMemAddressReserve_params *p = params;
		ev->ptr = ok ? *p->ptr : 0;
		ev->size = p->size;
		return true;
	}
	case DRV(cuMemCreate): {
		const cuMemCreate_params *p = params;
		ev->ptr = ok ? *p->handle : 0;
		ev->size = p->size;
		if (p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
			ev->device = p->prop->location.id;
		return true;
	}
	case DRV(cuMemMap): {
		const cuMemMap_params *p = params;
		ev->ptr = p->ptr;
		ev->size = p->size;
		ev->offset = p->offset;
		ev->handle = p->handle;
		return true;
	}
	case DRV(cuMemRetainAllocationHandle): {
		const cuMemRetainAllocationHandle_params *p = params;
		ev->ptr = ok ? *p->handle : 0;
		ev->handle = (uint64_t)(uintptr_t)p->addr;
		return ok;
	}
	case DRV(cuMemImportFromShareableHandle): {
		const cuMemImportFromShareableHandle_params *p = params;
		ev->ptr = ok ? *p->handle : 0;
		return true;
	}
	case DRV(cuIpcOpenMemHandle_v2): {
		const cuIpcOpenMemHandle_v2_params *p = params;
		ev->ptr = ok ? *p->pdptr : 0;
		ev->size = range_size(ev->ptr);
		return true;
	}
	case DRV(cuMemPoolImportPointer): {
		const cuMemPoolImportPointer_params *p = params;
		ev->ptr = ok ? *p->ptr_out : 0;
		ev->size = range_size(ev->ptr);
		ev->pool = (uint64_t)(uintptr_t)p->pool;
		ev->flags |= GMT_EV_HAS_POOL;
		return true;
	}
	case DRV(cuExternalMemoryGetMappedBuffer): {
		const cuExternalMemoryGetMappedBuffer_params *p = params;
		ev->ptr = ok ? *p->devPtr : 0;
		ev->size = p->bufferDesc ? p->bufferDesc->size : 0;
		ev->handle = (uint64_t)(uintptr_t)p->extMem;
		return true;
	}
	case DRV(cuGraphAddMemAllocNode): {
		const cuGraphAddMemAllocNode_params *p = params;
		ev->ptr = ok && p->nodeParams ? p->nodeParams->dptr : 0;
		ev->size = p->nodeParams ? p->nodeParams->bytesize : 0;
		return true;
	}
	case DRV(cuMemFree_v2): {
		const cuMemFree_v2_params *p = params;
		ev->ptr = p->dptr;
		return p->dptr != 0; /* cuMemFree(0) creates a context; it frees nothing */
	}
	case DRV(cuMemFreeHost): {
		const cuMemFreeHost_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->p;
		return p->p != NULL;
	}
	case DRV(cuMemHostUnregister): {
		const cuMemHostUnregister_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->p;
		return true;
	}
	case DRV(cuMemFreeAsync):
	case DRV(cuMemFreeAsync_ptsz): {
		const cuMemFreeAsync_params *p = params;
		ev->ptr = p->dptr;
		ev->stream = (uint64_t)(uintptr_t)p->hStream;
		return p->dptr != 0;
	}
	case DRV(cuArrayDestroy): {
		const cuArrayDestroy_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->hArray;
		return true;
	}
	case DRV(cuMipmappedArrayDestroy): {
		const cuMipmappedArrayDestroy_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->hMipmappedArray;
		return true;
	}
	case DRV(cuMemAddressFree): {
		const cuMemAddressFree_params *p = params;
		ev->ptr = p->ptr;
		ev->size = p->size;
		return true;
	}
	case DRV(cuMemRelease): {
		const cuMemRelease_params *p = params;
		ev->ptr = p->handle;
		return true;
	}
	case DRV(cuMemUnmap): {
		const cuMemUnmap_params *p = params;
		ev->ptr = p->ptr;
		ev->size = p->size;
		return true;
	}
	case DRV(cuIpcCloseMemHandle): {
		const cuIpcCloseMemHandle_params *p = params;
		ev->ptr = p->dptr;
		return true;
	}
	case DRV(cuDestroyExternalMemory): {
		const cuDestroyExternalMemory_params *p = params;
		ev->handle = (uint64_t)(uintptr_t)p->extMem;
		return true;
	}
	case DRV(cuGraphAddMemFreeNode): {
		const cuGraphAddMemFreeNode_params *p = params;
		ev->ptr = p->dptr;
		return true;
	}
	default:
		return false;
	}
}

/* The stack of an event made in a callback: above the caller are our frames and CUPTI's. */
static uint32_t
callback_stack(void)
{
	return gmt_stack_capture((const void *)cupti.Subscribe);
}

/* An out-of-memory attempt keeps what the device had left right after it. */
static void
add_meminfo(struct gmt_event *ev)
{
	size_t free_b, total_b;
	__typeof__(&cuMemGetInfo_v2) meminfo = QUERY(cuMemGetInfo_v2);

	if (meminfo && meminfo(&free_b, &total_b) == CUDA_SUCCESS) {
		ev->free_bytes = free_b;
		ev->total_bytes = total_b;
		ev->flags |= GMT_EV_HAS_MEMINFO;
	}
}

// --- driver callbacks -----------------------------------------------------------------------------

/* Readings after calls that change a pool's or the graph pool's reservation. */
static void
after_usage_call(CUpti_CallbackId cbid, const void *params, const struct gmt_event *cause)
{
	switch (cbid) {
	case DRV(cuMemPoolTrimTo):
		read_pool(((const cuMemPoolTrimTo_params *)params)->pool, cause);
		break;
	case DRV(cuMemPoolSetAttribute):
		read_pool(((const cuMemPoolSetAttribute_params *)params)->pool, cause);
		break;
	case DRV(cuMemPoolDestroy): {
		CUmemoryPool pool = ((const cuMemPoolDestroy_params *)params)->pool;
		emit_usage(GMT_KIND_POOL_RESERVE, (enum gmt_api)cause->api,
			   (enum gmt_api)cause->driver, (uint64_t)(uintptr_t)pool,
			   (uint64_t)(uintptr_t)pool, cause->device, cause->context, 0);
		break;
	}
	case DRV(cuGraphLaunch):
	case DRV(cuGraphLaunch_ptsz):
		read_graph_pool(cause->device, cause);
		break;
	case DRV(cuDeviceGraphMemTrim):
		read_graph_pool((int32_t)((const cuDeviceGraphMemTrim_params *)params)->device, cause);
		break;
	default:
		break;
	}
}

/* A free of NULL frees nothing and is not recorded, so it takes no seq: a seq that no line
 * carries is a gap the reader's reorder window waits for. */
static bool
driver_frees_null(CUpti_CallbackId cbid, const void *params)
{
	switch (cbid) {
	case DRV(cuMemFree_v2): return !((const cuMemFree_v2_params *)params)->dptr;
	case DRV(cuMemFreeHost): return !((const cuMemFreeHost_params *)params)->p;
	case DRV(cuMemFreeAsync):
	case DRV(cuMemFreeAsync_ptsz): return !((const cuMemFreeAsync_params *)params)->dptr;
	default: return false;
	}
}

static void
on_driver_enter(CUpti_CallbackId cbid, enum gmt_api api, const CUpti_CallbackData *cb)
{
	drv.corr = cb->correlationId;
	drv.api = (uint16_t)api;
	drv.consumed = 0;
	drv.context = cb->contextUid;
	drv.device = context_device(cb->context, cb->contextUid);
	drv.seq = drv.ts = 0;
	if (gmt_api_op(api) == GMT_OP_FREE && !driver_frees_null(cbid, cb->functionParams))
		take_free_order(&drv.seq, &drv.ts, cb->correlationId);
}

static void
on_driver_exit(CUpti_CallbackId cbid, enum gmt_api api, bool ptsz, const CUpti_CallbackData *cb)
{
	bool seen_enter = drv.api == api && drv.corr == cb->correlationId;
	bool joined = joined_to_runtime(cb->correlationId);
	enum gmt_op op = gmt_api_op(api);
	CUresult rc = cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
	bool ok = rc == CUDA_SUCCESS;

	if (seen_enter && drv.consumed) { /* a resource callback inside recorded it */
		drv.api = 0;
		return;
	}
	drv.api = 0;
	if (op == GMT_OP_RESET)
		return; /* the CONTEXT_DESTROY_STARTING callback records resets */

	struct gmt_event ev = {
		.op = (uint8_t)op,
		.kind = (uint8_t)gmt_api_kind(api),
		.api = (uint16_t)(joined ? rt.api : api),
		.driver = (uint16_t)(joined ? api : GMT_API_NONE),
		.result = (int32_t)rc,
		.context = cb->contextUid,
		.device = context_device(cb->context, cb->contextUid),
		.flags = ptsz || (joined && rt.ptsz) ? GMT_EV_PTSZ : 0,
	};
	if (op == GMT_OP_USAGE) {
		if (ok)
			after_usage_call(cbid, cb->functionParams, &ev);
		if (joined)
			rt.joined = 1;
		return;
	}
	if (!driver_event(cbid, cb->functionParams, ok, &ev))
		return;
	if (!ok && op == GMT_OP_RETAIN)
		return; /* a failed retain says nothing */
	if (!ok && joined) {
		/* cudart may retry a failed driver call (seen on the H200 under contention for a
		 * pool): the failure is the application's only if the runtime call fails, at its
		 * EXIT. A free hands its order back to the runtime call: the EXIT (or the retry)
		 * records with it. */
		rt.failed_driver = (uint16_t)api;
		if (op == GMT_OP_FREE && seen_enter && drv.seq && !rt.seq) {
			rt.seq = drv.seq;
			rt.ts = drv.ts;
		}
		return;
	}
	if (!ok && op == GMT_OP_ALLOC)
		add_meminfo(&ev);
	if (op == GMT_OP_ALLOC)
		ev.stack = callback_stack();
	if (op == GMT_OP_FREE && seen_enter) {
		ev.seq = drv.seq;
		ev.ts_ns = drv.ts;
		ev.tid = gmt_tid();
	} else {
		gmt_stamp(&ev);
	}
	gmt_emit(&ev);
	if (joined)
		rt.joined = 1;
	if (ok && (api == GMT_API_cuMemAllocAsync || api == GMT_API_cuMemAllocFromPoolAsync))
		read_pool(api == GMT_API_cuMemAllocFromPoolAsync ? (CUmemoryPool)(uintptr_t)ev.pool
								 : current_pool(ev.device),
			  &ev);
}

static void
on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct gmt_hook hook = gmt_hook_driver(cbid);
	enum gmt_api api = (enum gmt_api)hook.api;
	bool ptsz = hook.ptsz;

	if (api == GMT_API_NONE) {
		on_pool_choice(cbid, cb);
		return;
	}
	if (cb->callbackSite == CUPTI_API_ENTER)
		on_driver_enter(cbid, api, cb);
	else
		on_driver_exit(cbid, api, ptsz, cb);
}

// --- runtime callbacks ----------------------------------------------------------------------------

/* cudart reached the memory without a driver callback we saw: record from the runtime's own
 * parameters. Only the families whose parameters say everything. */
static bool
runtime_event(CUpti_CallbackId cbid, const void *params, bool ok, struct gmt_event *ev)
{
	switch (cbid) {
	case RT(cudaMalloc_v3020): {
		const cudaMalloc_v3020_params *p = params;
		ev->ptr = out_ptr(ok, *p->devPtr);
		ev->size = p->size;
		return true;
	}
	case RT(cudaMallocManaged_v6000): {
		const cudaMallocManaged_v6000_params *p = params;
		ev->ptr = out_ptr(ok, *p->devPtr);
		ev->size = p->size;
		ev->cuda_flags = p->flags;
		ev->flags |= GMT_EV_HAS_FLAGS;
		return true;
	}
	case RT(cudaMallocHost_v3020): {
		const cudaMallocHost_v3020_params *p = params;
		ev->ptr = out_ptr(ok, *p->ptr);
		ev->size = p->size;
		return true;
	}
	case RT(cudaHostAlloc_v3020): {
		const cudaHostAlloc_v3020_params *p = params;
		ev->ptr = out_ptr(ok, *p->pHost);
		ev->size = p->size;
		ev->cuda_flags = p->flags;
		ev->flags |= GMT_EV_HAS_FLAGS;
		return true;
	}
	case RT(cudaMallocAsync_v11020):
	case RT(cudaMallocAsync_ptsz_v11020): {
		const cudaMallocAsync_v11020_params *p = params;
		ev->ptr = out_ptr(ok, *p->devPtr);
		ev->size = p->size;
		ev->stream = (uint64_t)(uintptr_t)p->hStream;
		return true;
	}
	case RT(cudaMallocFromPoolAsync_v11020):
	case RT(cudaMallocFromPoolAsync_ptsz_v11020): {
		const cudaMallocFromPoolAsync_v11020_params *p = params;
		ev->ptr = out_ptr(ok, *p->ptr);
		ev->size = p->size;
		ev->stream = (uint64_t)(uintptr_t)p->stream;
		ev->pool = (uint64_t)(uintptr_t)p->memPool;
		ev->flags |= GMT_EV_HAS_POOL;
		return true;
	}
	case RT(cudaFree_v3020):
		ev->ptr = (uint64_t)(uintptr_t)((const cudaFree_v3020_params *)params)->devPtr;
		return ev->ptr != 0;
	case RT(cudaFreeHost_v3020):
		ev->ptr = (uint64_t)(uintptr_t)((const cudaFreeHost_v3020_params *)params)->ptr;
		return ev->ptr != 0;
	case RT(cudaFreeAsync_v11020):
	case RT(cudaFreeAsync_ptsz_v11020): {
		const cudaFreeAsync_v11020_params *p = params;
		ev->ptr = (uint64_t)(uintptr_t)p->devPtr;
		ev->stream = (uint64_t)(uintptr_t)p->hStream;
		return ev->ptr != 0;
	}
	default:
		return false;
	}
}

/* The runtime's frees of NULL: no seq either (see driver_frees_null()). */
static bool
runtime_frees_null(CUpti_CallbackId cbid, const void *params)
{
	switch (cbid) {
	case RT(cudaFree_v3020): return !((const cudaFree_v3020_params *)params)->devPtr;
	case RT(cudaFreeHost_v3020): return !((const cudaFreeHost_v3020_params *)params)->ptr;
	case RT(cudaFreeAsync_v11020):
	case RT(cudaFreeAsync_ptsz_v11020):
		return !((const cudaFreeAsync_v11020_params *)params)->devPtr;
	default: return false;
	}
}

static void
on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct gmt_hook hook = gmt_hook_runtime(cbid);
	enum gmt_api api = (enum gmt_api)hook.api;
	bool ptsz = hook.ptsz;

	if (api == GMT_API_NONE)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		rt.corr = cb->correlationId;
		rt.api = (uint16_t)api;
		rt.joined = 0;
		rt.ptsz = ptsz;
		rt.failed_driver = GMT_API_NONE;
		rt.seq = rt.ts = 0;
		if (gmt_api_op(api) == GMT_OP_FREE && !runtime_frees_null(cbid, cb->functionParams))
			stamp_order(&rt.seq, &rt.ts);
		return;
	}
	if (rt.api != api || rt.corr != cb->correlationId)
		return; /* its ENTER came before we subscribed */

	cudaError_t rc = cb->functionReturnValue ? *(const cudaError_t *)cb->functionReturnValue : cudaSuccess;
	enum gmt_op op = gmt_api_op(api);
	struct gmt_event ev = {
		.op = (uint8_t)op,
		.kind = (uint8_t)gmt_api_kind(api),
		.api = (uint16_t)api,
		.result = (int32_t)rc,
		.context = cb->contextUid,
		.device = context_device(cb->context, cb->contextUid),
		.flags = ptsz ? GMT_EV_PTSZ : 0,
	};
	if (!rt.joined && (op == GMT_OP_ALLOC || op == GMT_OP_FREE) &&
	    runtime_event(cbid, cb->functionParams, rc == cudaSuccess, &ev)) {
		ev.driver = rt.failed_driver;
		if (op == GMT_OP_ALLOC && rc != cudaSuccess)
			add_meminfo(&ev);
		if (op == GMT_OP_ALLOC)
			ev.stack = callback_stack();
		if (op == GMT_OP_FREE && rt.seq) {
			ev.seq = rt.seq;
			ev.ts_ns = rt.ts;
			ev.tid = gmt_tid();
		} else {
			gmt_stamp(&ev);
		}
		gmt_emit(&ev);
	}
	rt.api = GMT_API_NONE;
}

// --- resource callbacks ---------------------------------------------------------------------------

/* The call that led to a resource event: the runtime call, else the driver call in progress. */
static void
name_resource_event(struct gmt_event *ev, enum gmt_api fallback)
{
	bool in_rt = rt.api != GMT_API_NONE, in_drv = drv.api != GMT_API_NONE;

	ev->api = (uint16_t)(in_rt ? rt.api : in_drv ? drv.api : fallback);
	ev->driver = (uint16_t)(in_rt && in_drv ? drv.api : GMT_API_NONE);
	if (in_rt)
		rt.joined = 1;
	if (in_drv)
		drv.consumed = 1;
}

static void
on_context_destroy(CUcontext ctx)
{
	uint32_t uid = 0;
	struct gmt_event ev = {.op = GMT_OP_RESET};

	if (cupti.GetContextId(ctx, &uid) != CUPTI_SUCCESS)
		uid = 0;
	ev.context = uid;
	ev.device = context_device(ctx, uid);
	name_resource_event(&ev, GMT_API_cuCtxDestroy_v2);
	ev.stack = callback_stack();
	gmt_stamp(&ev); /* DESTROY_STARTING: before the context's memory is released */
	gmt_emit(&ev);
	forget_current_pools(ev.device);
	ctx_cache.uid = 0; /* the context pointer will be reused by the next one */
}

static void
on_context_created(CUcontext ctx)
{
	uint32_t dev;
	char busid[GMT_BUSID_MAX];
	__typeof__(&cuDeviceGetPCIBusId) get = QUERY(cuDeviceGetPCIBusId);

	if (cupti.GetDeviceId(ctx, &dev) != CUPTI_SUCCESS || gmt_device_known((int)dev) || !get)
		return;
	if (get(busid, sizeof(busid), (CUdevice)dev) == CUDA_SUCCESS)
		gmt_device_note((int)dev, busid);
}

/* A graph memory node: made explicitly (cudaGraphAddMemAllocNode) or by a cudaMallocAsync /
 * cudaFreeAsync captured from a stream. Recorded here, once, as kind "graph". */
static void
on_graph_node(const CUpti_ResourceData *rd)
{
	const CUpti_GraphData *g = rd->resourceDescriptor;
	CUgraphNodeType type;
	__typeof__(&cuGraphNodeGetType) get_type = QUERY(cuGraphNodeGetType);

	if (!g || !g->node || !get_type || get_type(g->node, &type) != CUDA_SUCCESS)
		return;
	if (type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && type != CU_GRAPH_NODE_TYPE_MEM_FREE)
		return;

	struct gmt_event ev = {.kind = GMT_KIND_GRAPH, .device = -1};
	uint32_t uid = 0;
	if (rd->context && cupti.GetContextId(rd->context, &uid) == CUPTI_SUCCESS) {
		ev.context = uid;
		ev.device = context_device(rd->context, uid);
	} else if (drv.api != GMT_API_NONE) { /* graphs belong to no context: the call's */
		ev.context = drv.context;
		ev.device = drv.device;
	}

	if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
		CUDA_MEM_ALLOC_NODE_PARAMS p;
		__typeof__(&cuGraphMemAllocNodeGetParams) get = QUERY(cuGraphMemAllocNodeGetParams);
		memset(&p, 0, sizeof(p));
		if (!get || get(g->node, &p) != CUDA_SUCCESS)
			return;
		ev.op = GMT_OP_ALLOC;
		ev.ptr = p.dptr;
		ev.size = p.bytesize;
		if (p.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
			ev.device = p.poolProps.location.id; /* where the graph pool backs it */
		name_resource_event(&ev, GMT_API_cuGraphAddMemAllocNode);
		ev.stack = callback_stack();
		gmt_stamp(&ev);
	} else {
		CUdeviceptr dptr = 0;
		__typeof__(&cuGraphMemFreeNodeGetParams) get = QUERY(cuGraphMemFreeNodeGetParams);
		if (!get || get(g->node, &dptr) != CUDA_SUCCESS)
			return;
		ev.op = GMT_OP_FREE;
		ev.ptr = dptr;
		bool have_order = drv.api != GMT_API_NONE && drv.seq;
		name_resource_event(&ev, GMT_API_cuGraphAddMemFreeNode);
		if (have_order) {
			ev.seq = drv.seq;
			ev.ts_ns = drv.ts;
			ev.tid = gmt_tid();
		} else {
			gmt_stamp(&ev);
		}
	}
	gmt_emit(&ev);
}

static void
on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	switch (cbid) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		on_context_created(rd->context);
		break;
	case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
		on_context_destroy(rd->context);
		break;
	case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
		on_graph_node(rd);
		break;
	default:
		break;
	}
}

// --- the subscriber -------------------------------------------------------------------------------

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	/* our own calls (the wrappers' first call, our queries, the writer) are not the application's */
	if (gmt_depth != 0 || atomic_load_explicit(&gmt_state, memory_order_relaxed) == GMT_STATE_DISABLED)
		return;
	gmt_depth++;
	int saved_errno = errno;
	switch (domain) {
	case CUPTI_CB_DOMAIN_DRIVER_API: on_driver(cbid, data); break;
	case CUPTI_CB_DOMAIN_RUNTIME_API: on_runtime(cbid, data); break;
	case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, data); break;
	default: break;
	}
	errno = saved_errno;
	gmt_depth--;
}

static const char *
result_string(CUptiResult r)
{
	const char *s = NULL;
	if (!cupti.GetResultString || cupti.GetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static CUptiResult
subscribe(char *holder, size_t holder_len)
{
	holder[0] = '\0';
	if (!cupti.Subscribe_v2)
		return cupti.Subscribe(&subscriber, on_callback, NULL);
	CUpti_SubscriberParams p;
	memset(&p, 0, sizeof(p));
	p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	p.subscriberName = "gpumemtrace";
	p.oldSubscriberName = holder;
	p.oldSubscriberSize = holder_len;
	return cupti.Subscribe_v2(&subscriber, on_callback, NULL, &p);
}

/* Enable each callback id; an id this CUPTI does not know is skipped, not fatal. */
static size_t
enable_all(void)
{
	static const struct {
		CUpti_CallbackDomain domain;
		const CUpti_CallbackId *ids;
		size_t n;
	} sets[] = {
		{CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids, sizeof(driver_cbids) / sizeof(driver_cbids[0])},
		{CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids, sizeof(runtime_cbids) / sizeof(runtime_cbids[0])},
		{CUPTI_CB_DOMAIN_RESOURCE, resource_cbids, sizeof(resource_cbids) / sizeof(resource_cbids[0])},
	};
	size_t enabled = 0;
	bool runtime = gmt_tracer_options()->cupti_runtime;

	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		if (sets[s].domain == CUPTI_CB_DOMAIN_RUNTIME_API && !runtime)
			continue;
		for (size_t i = 0; i < sets[s].n; i++)
			if (cupti.EnableCallback(1, subscriber, sets[s].domain, sets[s].ids[i]) == CUPTI_SUCCESS)
				enabled++;
	}
	return enabled;
}

static void
unavailable(const char *why_fmt, const char *arg)
{
	snprintf(reason, sizeof(reason), why_fmt, arg);
	atomic_store_explicit(&gmt_cupti_phase, GMT_CUPTI_UNAVAILABLE, memory_order_release);
}

/* Returns the phase reached. Runs once per process (and again in a fork child only if the parent
 * never tried: a subscription is inherited like the rest of memory). */
static int
start_once(void)
{
	const struct gmt_options *opts = gmt_tracer_options();
	char holder[128];

	if (!opts->cupti) {
		unavailable("%s", GMT_OPTION_PREFIX "CUPTI=0");
		return GMT_CUPTI_UNAVAILABLE;
	}
	void *h = cupti_open(opts);
	if (!h) {
		const char *err = dlerror();
		unavailable("libcupti.so.13 cannot be loaded (%s)", err ? err : "not found");
		gmt_warn("%s; recording the CUDA runtime API only: static cudart, NVIDIA libraries' own "
			 "allocations and driver-API memory (VMM, expandable segments) are not seen; "
			 "set " GMT_OPTION_PREFIX "CUPTI_LIB to its path", reason);
		return GMT_CUPTI_UNAVAILABLE;
	}
	if (!cupti_resolve(h)) {
		unavailable("%s", "the loaded libcupti lacks the callback API");
		gmt_warn("%s; recording the CUDA runtime API only", reason);
		return GMT_CUPTI_UNAVAILABLE;
	}
	CUptiResult r = subscribe(holder, sizeof(holder));
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		unavailable("another CUPTI subscriber holds the callback API (CUPTI error 39): %s",
			    holder[0] ? holder : "a profiler such as torch.profiler, Nsight or cuda-gdb");
		gmt_warn("%s; recording the CUDA runtime API only: static cudart, NVIDIA libraries' own "
			 "allocations and driver-API memory (VMM, expandable segments) are not seen",
			 reason);
		return GMT_CUPTI_UNAVAILABLE;
	}
	if (r != CUPTI_SUCCESS) {
		unavailable("cuptiSubscribe failed: %s", result_string(r));
		gmt_warn("%s; recording the CUDA runtime API only", reason);
		return GMT_CUPTI_UNAVAILABLE;
	}
	if (enable_all() == 0) {
		cupti.Unsubscribe(subscriber);
		unavailable("%s", "CUPTI enabled none of the memory callbacks");
		gmt_warn("%s; recording the CUDA runtime API only", reason);
		return GMT_CUPTI_UNAVAILABLE;
	}
	reason[0] = '\0';
	atomic_store_explicit(&gmt_cupti_phase, GMT_CUPTI_ACTIVE, memory_order_release);
	gmt_warn("holding the CUPTI callback API for complete capture: torch.profiler, Nsight and "
		 "other CUPTI tools in this process get no CUDA activity; " GMT_OPTION_PREFIX
		 "CUPTI=0 leaves CUPTI to them (runtime API only)");
	return GMT_CUPTI_ACTIVE;
}

static TLS bool starting_here;

bool
gmt_cupti_start(void)
{
	int expected = GMT_CUPTI_UNTRIED;

	if (atomic_compare_exchange_strong(&gmt_cupti_phase, &expected, GMT_CUPTI_STARTING)) {
		starting_here = true;
		gmt_depth++; /* anything CUDA does while we subscribe is not the application's */
		int ph = start_once();
		gmt_depth--;
		starting_here = false;
		return ph == GMT_CUPTI_ACTIVE;
	}
	/* Another thread is starting it (or this one, re-entered from cuInit: do not wait on
	 * ourselves). Starting takes milliseconds; wait for at most ~2 s. */
	for (int i = 0; !starting_here && i < 200000; i++) {
		if (atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire) != GMT_CUPTI_STARTING)
			break;
		struct timespec ts = {0, 10000};
		nanosleep(&ts, NULL);
	}
	return atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire) == GMT_CUPTI_ACTIVE;
}

const char *
gmt_cupti_reason(void)
{
	int ph = atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire);
	if (ph == GMT_CUPTI_ACTIVE)
		return NULL;
	if (ph == GMT_CUPTI_UNTRIED || !reason[0])
		return "CUPTI was not started";
	return reason;
}

/*
 * Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library: the way in
 * for programs with a static cudart (and the constructor sets the variable under LD_PRELOAD).
 * Returns 1 (success) whatever happens: a tracer problem must never fail the application's cuInit.
 */
int
gmt_cupti_inject(void)
{
	if (atomic_load_explicit(&gmt_state, memory_order_relaxed) == GMT_STATE_DISABLED)
		return 1;
	gmt_cupti_start();
	return 1;
}

/* The driver may load another copy of the tracer than the one tracing the process (a second
 * build named by CUDA_INJECTION64_PATH): that copy defers (instance.h) and hands the call on. */
GMT_EXPORT int
InitializeInjection(void)
{
	const struct gmt_instance *f = gmt_instance_forward();

	if (f)
		return f->initialize_injection ? f->initialize_injection() : 1;
	return gmt_cupti_inject();
}
