/*
 * @brief Interposition of the CUDA runtime's memory API (LD_PRELOAD path).
 *
 * Each wrapper here has the exact signature of its libcudart.so.13 function and is exported
 * with the symbol version `libcudart.so.13` (libgpumemtrace.sym), so it interposes only calls
 * bound to CUDA 13's runtime, never a cu12 library's. The real function is found at first use:
 * dlvsym(RTLD_NEXT) when the runtime is in the global scope, else through the already-loaded
 * libcudart.so.13 (dlopen RTLD_NOLOAD), which also finds a runtime loaded RTLD_LOCAL.
 *
 * Order matters (docs/trace-format.md): a free takes its sequence number before the real call,
 * because once the real free returns another thread may receive the same address; an
 * allocation takes it after the real call succeeded.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/cupti.h"
#include "capture/stacks.h"
#include "util/devices.h"
#include "util/log.h"

/* The per-thread-default-stream entry points; cuda_runtime_api.h only declares them when the
 * application is compiled with --default-stream per-thread. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);

#define CUDART_VERSION_NAME "libcudart.so.13"

/* Every real function we forward to or query. */
#define REAL_FUNCTIONS(X) \
	X(cudaMalloc) X(cudaMallocPitch) X(cudaMallocManaged) X(cudaMallocHost) X(cudaHostAlloc) \
	X(cudaMallocAsync) X(cudaMallocAsync_ptsz) X(cudaMallocFromPoolAsync) \
	X(cudaMallocFromPoolAsync_ptsz) X(cudaFree) X(cudaFreeHost) X(cudaFreeAsync) \
	X(cudaFreeAsync_ptsz) X(cudaDeviceReset) X(cudaGetDevice) X(cudaMemGetInfo) \
	X(cudaDeviceGetPCIBusId)

enum real_fn {
#define X(name) REAL_##name,
	REAL_FUNCTIONS(X)
#undef X
	REAL_COUNT
};

static const char *const real_names[REAL_COUNT] = {
#define X(name) [REAL_##name] = #name,
	REAL_FUNCTIONS(X)
#undef X
};

static _Atomic(void *) real_fns[REAL_COUNT];

static void *
resolve(enum real_fn fn, void *self)
{
	const char *name = real_names[fn];
	void *p = dlvsym(RTLD_NEXT, name, CUDART_VERSION_NAME);

	if (!p || p == self) {
		/* cudart loaded RTLD_LOCAL (e.g. by a Python extension) is not in RTLD_NEXT's scope;
		 * RTLD_NOLOAD finds the loaded copy by soname without loading anything. */
		void *h = dlopen(CUDART_VERSION_NAME, RTLD_NOW | RTLD_NOLOAD);
		p = h ? dlvsym(h, name, CUDART_VERSION_NAME) : NULL;
		if (h)
			gmt_real_dlclose(h);
	}
	if (p == self)
		p = NULL;
	if (!p && self) /* a missing query only costs the event its device or OOM facts */
		gmt_warn("cannot find the real %s in " CUDART_VERSION_NAME
			 "; the call returns cudaErrorInitializationError", name);
	return p;
}

static inline void *
real(enum real_fn fn, void *self)
{
	void *p = atomic_load_explicit(&real_fns[fn], memory_order_acquire);
	if (__builtin_expect(p == NULL, 0)) {
		/* Racing resolvers find the same address; the last store wins harmlessly. */
		p = resolve(fn, self);
		if (p)
			atomic_store_explicit(&real_fns[fn], p, memory_order_release);
	}
	return p;
}

#define REAL(name) ((__typeof__(&name))real(REAL_##name, (void *)&name))
/* A runtime function we only query and do not define ourselves. */
#define REAL_QUERY(name) ((__typeof__(&name))real(REAL_##name, NULL))

/* Forward to the real function, or fail cleanly when there is none. */
#define CALL_REAL(name, ...) \
	({ \
		__typeof__(&name) fn_ = REAL(name); \
		fn_ ? fn_(__VA_ARGS__) : cudaErrorInitializationError; \
	})

/* CUPTI records when it can (cupti.c): the wrappers then only forward. The first wrapper call
 * of the process starts CUPTI if the driver's injection has not yet. */
static inline bool
cupti_records(void)
{
	if (gmt_depth != 0 || atomic_load_explicit(&gmt_state, memory_order_relaxed) == GMT_STATE_DISABLED)
		return false;
	return gmt_cupti_records();
}

// --- event helpers ------------------------------------------------------------------------------

/* The device's PCI bus id, once per device, for the writer's NVML readings. */
static void
note_device(int32_t dev)
{
	char busid[GMT_BUSID_MAX];
	__typeof__(&cudaDeviceGetPCIBusId) fn;

	if (gmt_device_known(dev))
		return;
	fn = REAL_QUERY(cudaDeviceGetPCIBusId);
	if (fn && fn(busid, (int)sizeof(busid), dev) == cudaSuccess)
		gmt_device_note(dev, busid);
}

static int32_t
current_device(void)
{
	int dev = -1;
	__typeof__(&cudaGetDevice) fn = REAL_QUERY(cudaGetDevice);

	if (!fn || fn(&dev) != cudaSuccess)
		return -1;
	return dev;
}

/* An allocation event as the wrapper knows it after the real call; alloc_end() completes it. */
static struct gmt_event
alloc_event(enum gmt_api api, cudaError_t rc, void *const *ptrp, size_t size, cudaStream_t stream,
	    uint32_t flags)
{
	return (struct gmt_event){
		.op = GMT_OP_ALLOC,
		.api = (uint16_t)api,
		.kind = (uint8_t)gmt_api_kind(api),
		.ptr = rc == cudaSuccess && ptrp ? (uint64_t)(uintptr_t)*ptrp : 0,
		.size = size,
		.stream = (uint64_t)(uintptr_t)stream,
		.result = (int32_t)rc,
		.flags = flags,
	};
}

/* The second half of every allocation: device, OOM facts, sequence number (after the real call
 * succeeded), then into the ring. */
static void
alloc_end(struct gmt_event *ev)
{
	int saved_errno = errno;

	ev->device = current_device();
	note_device(ev->device);
	ev->stack = gmt_stack_capture(NULL);
	if (ev->result != cudaSuccess) {
		/* An OOM is an event: keep what was asked and what the device had left. */
		size_t free_b = 0, total_b = 0;
		__typeof__(&cudaMemGetInfo) meminfo = REAL_QUERY(cudaMemGetInfo);
		if (meminfo && meminfo(&free_b, &total_b) == cudaSuccess) {
			ev->free_bytes = free_b;
			ev->total_bytes = total_b;
			ev->flags |= GMT_EV_HAS_MEMINFO;
		}
	}
	gmt_stamp(ev);
	gmt_emit(ev);
	errno = saved_errno;
}

/* The first half of a free: the sequence number is taken before the real call. */
static void
free_begin(struct gmt_event *ev, enum gmt_api api, const void *ptr, cudaStream_t stream, uint32_t flags)
{
	*ev = (struct gmt_event){
		.op = gmt_api_op(api),
		.api = (uint16_t)api,
		.kind = (uint8_t)gmt_api_kind(api),
		.ptr = (uint64_t)(uintptr_t)ptr,
		.stream = (uint64_t)(uintptr_t)stream,
		.flags = flags,
	};
	ev->device = current_device();
	gmt_stamp(ev);
}

static void
free_end(struct gmt_event *ev, cudaError_t rc)
{
	int saved_errno = errno;
	ev->result = (int32_t)rc;
	gmt_emit(ev);
	errno = saved_errno;
}

// --- allocations --------------------------------------------------------------------------------

/* The body every allocation wrapper shares: call, then record. */
/* cflags: the call's own flags argument, recorded when flags has GMT_EV_HAS_FLAGS */
#define ALLOC_WRAPPER(api, name, ptrp, size, stream, flags, cflags, ...) \
	if (cupti_records()) \
		return CALL_REAL(name, __VA_ARGS__); \
	if (!gmt_hook_enter()) { \
		gmt_hook_leave(); \
		return CALL_REAL(name, __VA_ARGS__); \
	} \
	cudaError_t rc = CALL_REAL(name, __VA_ARGS__); \
	struct gmt_event ev = alloc_event(api, rc, (void *const *)(ptrp), size, stream, flags); \
	ev.cuda_flags = (cflags); \
	alloc_end(&ev); \
	gmt_hook_leave(); \
	return rc

GMT_EXPORT cudaError_t
cudaMalloc(void **devPtr, size_t size)
{
	ALLOC_WRAPPER(GMT_API_cudaMalloc, cudaMalloc, devPtr, size, NULL, 0, 0, devPtr, size);
}

GMT_EXPORT cudaError_t
cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	ALLOC_WRAPPER(GMT_API_cudaMallocManaged, cudaMallocManaged, devPtr, size, NULL, GMT_EV_HAS_FLAGS,
		      flags, devPtr, size, flags);
}

GMT_EXPORT cudaError_t
cudaMallocHost(void **ptr, size_t size)
{
	ALLOC_WRAPPER(GMT_API_cudaMallocHost, cudaMallocHost, ptr, size, NULL, 0, 0, ptr, size);
}

GMT_EXPORT cudaError_t
cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	ALLOC_WRAPPER(GMT_API_cudaMallocAsync, cudaMallocAsync, devPtr, size, hStream, 0, 0, devPtr,
		      size, hStream);
}

GMT_EXPORT cudaError_t
cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	ALLOC_WRAPPER(GMT_API_cudaMallocAsync, cudaMallocAsync_ptsz, devPtr, size, hStream, GMT_EV_PTSZ,
		      0, devPtr, size, hStream);
}

/* Wrappers whose events carry an extra argument (flags, pool, pitch) spell the call out. */

GMT_EXPORT cudaError_t
cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	if (cupti_records())
		return CALL_REAL(cudaHostAlloc, pHost, size, flags);
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return CALL_REAL(cudaHostAlloc, pHost, size, flags);
	}
	cudaError_t rc = CALL_REAL(cudaHostAlloc, pHost, size, flags);
	struct gmt_event ev = alloc_event(GMT_API_cudaHostAlloc, rc, pHost, size, NULL, GMT_EV_HAS_FLAGS);
	ev.cuda_flags = flags;
	alloc_end(&ev);
	gmt_hook_leave();
	return rc;
}

static void
malloc_from_pool(cudaError_t rc, void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream,
		 uint32_t flags)
{
	struct gmt_event ev =
		alloc_event(GMT_API_cudaMallocFromPoolAsync, rc, ptr, size, stream, flags);
	ev.pool = (uint64_t)(uintptr_t)pool;
	ev.flags |= GMT_EV_HAS_POOL;
	alloc_end(&ev);
}

GMT_EXPORT cudaError_t
cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	if (cupti_records())
		return CALL_REAL(cudaMallocFromPoolAsync, ptr, size, memPool, stream);
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return CALL_REAL(cudaMallocFromPoolAsync, ptr, size, memPool, stream);
	}
	cudaError_t rc = CALL_REAL(cudaMallocFromPoolAsync, ptr, size, memPool, stream);
	malloc_from_pool(rc, ptr, size, memPool, stream, 0);
	gmt_hook_leave();
	return rc;
}

GMT_EXPORT cudaError_t
cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	if (cupti_records())
		return CALL_REAL(cudaMallocFromPoolAsync_ptsz, ptr, size, memPool, stream);
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return CALL_REAL(cudaMallocFromPoolAsync_ptsz, ptr, size, memPool, stream);
	}
	cudaError_t rc = CALL_REAL(cudaMallocFromPoolAsync_ptsz, ptr, size, memPool, stream);
	malloc_from_pool(rc, ptr, size, memPool, stream, GMT_EV_PTSZ);
	gmt_hook_leave();
	return rc;
}

GMT_EXPORT cudaError_t
cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	if (cupti_records())
		return CALL_REAL(cudaMallocPitch, devPtr, pitch, width, height);
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return CALL_REAL(cudaMallocPitch, devPtr, pitch, width, height);
	}
	cudaError_t rc = CALL_REAL(cudaMallocPitch, devPtr, pitch, width, height);
	/* granted = pitch * height on success; on failure only the request is known */
	size_t granted = rc == cudaSuccess && pitch ? *pitch * height : width * height;
	struct gmt_event ev = alloc_event(GMT_API_cudaMallocPitch, rc, devPtr, granted, NULL, 0);
	ev.requested = width * height;
	alloc_end(&ev);
	gmt_hook_leave();
	return rc;
}

// --- frees --------------------------------------------------------------------------------------

/* cudaFree(NULL) frees nothing (CUDA code calls it to create a context): not an event. */
#define FREE_WRAPPER(api, name, ptr, stream, flags, ...) \
	if (cupti_records()) \
		return CALL_REAL(name, __VA_ARGS__); \
	if (!gmt_hook_enter() || (ptr) == NULL) { \
		gmt_hook_leave(); \
		return CALL_REAL(name, __VA_ARGS__); \
	} \
	struct gmt_event ev; \
	free_begin(&ev, api, ptr, stream, flags); \
	cudaError_t rc = CALL_REAL(name, __VA_ARGS__); \
	free_end(&ev, rc); \
	gmt_hook_leave(); \
	return rc

GMT_EXPORT cudaError_t
cudaFree(void *devPtr)
{
	FREE_WRAPPER(GMT_API_cudaFree, cudaFree, devPtr, NULL, 0, devPtr);
}

GMT_EXPORT cudaError_t
cudaFreeHost(void *ptr)
{
	FREE_WRAPPER(GMT_API_cudaFreeHost, cudaFreeHost, ptr, NULL, 0, ptr);
}

GMT_EXPORT cudaError_t
cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	FREE_WRAPPER(GMT_API_cudaFreeAsync, cudaFreeAsync, devPtr, hStream, 0, devPtr, hStream);
}

GMT_EXPORT cudaError_t
cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	FREE_WRAPPER(GMT_API_cudaFreeAsync, cudaFreeAsync_ptsz, devPtr, hStream, GMT_EV_PTSZ, devPtr,
		     hStream);
}

GMT_EXPORT cudaError_t
cudaDeviceReset(void)
{
	if (cupti_records())
		return CALL_REAL(cudaDeviceReset);
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return CALL_REAL(cudaDeviceReset);
	}
	struct gmt_event ev;
	free_begin(&ev, GMT_API_cudaDeviceReset, NULL, NULL, 0);
	ev.stack = gmt_stack_capture(NULL);
	cudaError_t rc = CALL_REAL(cudaDeviceReset);
	free_end(&ev, rc);
	gmt_hook_leave();
	return rc;
}
