/*
 * @brief Interposition of the CUDA runtime's memory API (LD_PRELOAD path).
 *
 * The wrappers are the WRAP rows of the hook table (hooks.def), written out at the end of this
 * file once per CUDA runtime the tracer knows (runtimes.h: 13, 12, 11.x): each has the exact
 * signature of its runtime function (the runtime's declaration must agree with its family's
 * prototype) and is exported with that runtime's symbol version. CUDA 13's copy is `cudaMalloc`
 * at the default version `libcudart.so.13` (the generated version script); the others are
 * `gmt_cu12_cudaMalloc` and the like, exported by `.symver` as cudaMalloc@libcudart.so.12 and
 * cudaMalloc@libcudart.so.11.0. A program binds to the copy of the runtime it was linked
 * against, and the copy forwards to the same version of the real function, so a process with
 * two runtimes (a cu12 extension in a cu13 program) has each call reach its own. The real
 * function is found at first use: dlvsym(RTLD_NEXT) when the runtime is in the global scope,
 * else through the already-loaded runtime of that soname (dlopen RTLD_NOLOAD), which also finds
 * a runtime loaded RTLD_LOCAL.
 *
 * Order matters (docs/trace-format.md): a free takes its sequence number before the real call,
 * because once the real free returns another thread may receive the same address; an
 * allocation takes it after the real call succeeded.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/cupti.h"
#include "capture/dlclose.h"
#include "capture/params.h"
#include "capture/runtimes.h"
#include "capture/selfprof.h"
#include "capture/stacks.h"
#include "util/devices.h"
#include "util/log.h"

/* Every real function we forward to (the hook table's WRAP rows) or query. */
#define REAL_QUERIES(X) X(cudaGetDevice) X(cudaMemGetInfo) X(cudaDeviceGetPCIBusId)

enum real_fn {
#define GMT_HOOK_WRAP(id, api, ptsz, family, args) REAL_##id,
#include "capture/hooks.def"
#define X(name) REAL_##name,
	REAL_QUERIES(X)
#undef X
	    REAL_COUNT
};

static const char *const real_names[REAL_COUNT] = {
#define GMT_HOOK_WRAP(id, api, ptsz, family, args) [REAL_##id] = #id,
#include "capture/hooks.def"
#define X(name) [REAL_##name] = #name,
    REAL_QUERIES(X)
#undef X
};

/* By runtime: the real functions of that soname, found at first use. */
static _Atomic(void *) real_fns[GMT_CUDART_COUNT][REAL_COUNT];
/* The runtime is loaded and has no such function (an older or another runtime): it is not looked
 * up again at every call, which would cost a dlvsym, a dlopen and a dlclose inside each one. */
static _Atomic bool real_missing[GMT_CUDART_COUNT][REAL_COUNT];

static void *
resolve(enum gmt_cuda_runtime rt, enum real_fn fn, void *self)
{
	const char *name = real_names[fn], *soname = gmt_cudart_sonames[rt];
	void *p = dlvsym(RTLD_NEXT, name, soname);

	if (!p || p == self) {
		/* cudart loaded RTLD_LOCAL (e.g. by a Python extension) is not in RTLD_NEXT's
		 * scope; RTLD_NOLOAD finds the loaded copy by soname without loading anything. */
		void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
		p = h ? dlvsym(h, name, soname) : NULL;
		if (h) {
			gmt_real_dlclose(h);
			if (!p || p == self)
				atomic_store_explicit(&real_missing[rt][fn], true,
						      memory_order_relaxed);
		}
	}
	if (p == self)
		p = NULL;
	if (!p && self) /* a missing query only costs the event its device or OOM facts */
		gmt_warn(
		    "cannot find the real %s in %s; the call returns cudaErrorInitializationError",
		    name, soname);
	return p;
}

static inline void *
real(enum gmt_cuda_runtime rt, enum real_fn fn, void *self)
{
	void *p = atomic_load_explicit(&real_fns[rt][fn], memory_order_acquire);
	if (__builtin_expect(p == NULL, 0) &&
	    !atomic_load_explicit(&real_missing[rt][fn], memory_order_relaxed)) {
		/* Racing resolvers find the same address; the last store wins harmlessly. */
		p = resolve(rt, fn, self);
		if (p)
			atomic_store_explicit(&real_fns[rt][fn], p, memory_order_release);
	}
	return p;
}

/* Inside a wrapper: rt_ is its runtime, self_ the wrapper itself (never "found" as the real). */
#define REAL(name) ((__typeof__(&name))real(rt_, REAL_##name, self_))
/* A runtime function we only query and do not define ourselves, of runtime `rt`. */
#define REAL_QUERY(rt, name) ((__typeof__(&name))real(rt, REAL_##name, NULL))

/* Forward to the real function, or fail cleanly when there is none. */
#define CALL_REAL(name, ...)                                                                       \
	({                                                                                         \
		__typeof__(&name) fn_ = REAL(name);                                                \
		fn_ ? fn_(__VA_ARGS__) : cudaErrorInitializationError;                             \
	})

/* CUPTI records when it can (cupti.c): the wrappers then only forward. The first wrapper call
 * of the process starts CUPTI if the driver's injection has not yet; after that, one load. */
static inline bool
cupti_records(void)
{
	if (gmt_depth != 0 ||
	    atomic_load_explicit(&gmt_state, memory_order_relaxed) == GMT_STATE_DISABLED)
		return false;
	int ph = gmt_cupti_state();
	if (__builtin_expect(ph <= GMT_CUPTI_STARTING, 0))
		return gmt_cupti_start(); /* start it, or wait for the thread that is starting it */
	return ph == GMT_CUPTI_ACTIVE;
}

bool
gmt_wrappers_bound(void)
{
	Dl_info found, ours;
	void *p = dlsym(RTLD_DEFAULT, "cudaMalloc");

	return p && dladdr(p, &found) && dladdr((void *)&gmt_wrappers_bound, &ours) &&
	       found.dli_fbase == ours.dli_fbase;
}

// --- event helpers ------------------------------------------------------------------------------

/* The device's PCI bus id, once per device, for the writer's NVML readings. */
static void
note_device(enum gmt_cuda_runtime rt, int32_t dev)
{
	char busid[GMT_BUSID_MAX];
	__typeof__(&cudaDeviceGetPCIBusId) fn;

	if (gmt_device_known(dev))
		return;
	fn = REAL_QUERY(rt, cudaDeviceGetPCIBusId);
	if (fn && fn(busid, (int)sizeof(busid), dev) == cudaSuccess)
		gmt_device_note(dev, busid);
}

/*
 * The device of each event, as cudaGetDevice says it, for less: on the H100 host cudaGetDevice
 * costs 40-55 ns a call, libcuda's cuCtxGetDevice about 10 (bench/query_cost.c,
 * docs/performance.md), and the runtime's current device is the device of the thread's current
 * context whenever it has one. cuCtxGetDevice answers for that context and fails when the
 * thread has none (CUDA_ERROR_INVALID_CONTEXT), so it needs no cuCtxGetCurrent before it. libcuda
 * is looked up once it is loaded (the runtime loads it at its first call); until then, or on a
 * thread with no context yet, cudaGetDevice answers.
 */
static struct {
	_Atomic(__typeof__(&cuCtxGetDevice)) get_device;
	_Atomic bool missing;	     /* libcuda is loaded without it: cudaGetDevice for good */
	_Atomic unsigned not_loaded; /* lookups while libcuda was not loaded (one in 1024 looks) */
} ctxq;

static __typeof__(&cuCtxGetDevice)
context_device_query(void)
{
	__typeof__(&cuCtxGetDevice) get_device =
	    atomic_load_explicit(&ctxq.get_device, memory_order_acquire);
	if (__builtin_expect(get_device != NULL, 1))
		return get_device;
	if (atomic_load_explicit(&ctxq.missing, memory_order_relaxed) ||
	    (atomic_fetch_add_explicit(&ctxq.not_loaded, 1, memory_order_relaxed) & 1023) != 0)
		return NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NULL; /* not loaded yet: looked at again later */
	get_device = (__typeof__(&cuCtxGetDevice))dlsym(h, "cuCtxGetDevice");
	gmt_real_dlclose(h);
	if (!get_device) {
		atomic_store_explicit(&ctxq.missing, true, memory_order_relaxed);
		return NULL;
	}
	/* racing threads find the same address */
	atomic_store_explicit(&ctxq.get_device, get_device, memory_order_release);
	return get_device;
}

static inline __attribute__((always_inline)) int32_t
current_device(bool prof, enum gmt_cuda_runtime rt)
{
	__typeof__(&cuCtxGetDevice) get_device = context_device_query();
	CUdevice cudev;
	int dev = -1;
	uint64_t t0 = gmt_prof_begin_if(prof);

	if (get_device && get_device(&cudev) == CUDA_SUCCESS) {
		gmt_prof_end_if(prof, GMT_PROF_DEVICE, t0);
		return (int32_t)cudev;
	}
	__typeof__(&cudaGetDevice) fn = REAL_QUERY(rt, cudaGetDevice);
	cudaError_t r = fn ? fn(&dev) : cudaErrorInitializationError;
	gmt_prof_end_if(prof, GMT_PROF_DEVICE, t0);
	return r == cudaSuccess ? dev : -1;
}

/* current_device() off the usual path (a wrapper recording what no driver callback did). */
static __attribute__((noinline)) int32_t
device_of_call(enum gmt_cuda_runtime rt)
{
	return current_device(gmt_prof_on, rt);
}

/* The second half of every allocation: device, OOM facts, sequence number (after the real call
 * succeeded), then into the ring. Made twice, with the profiler off and on (selfprof.h). */
static inline __attribute__((always_inline)) void
alloc_end_as(bool prof, enum gmt_cuda_runtime rt, struct gmt_event *ev)
{
	int *errno_at = gmt_errno_at(), saved_errno = *errno_at;
	uint64_t t_all = gmt_prof_begin_if(prof), t0;

	ev->device = current_device(prof, rt);
	note_device(rt, ev->device);
	if (!atomic_load_explicit(&gmt_stacks_none, memory_order_relaxed)) {
		t0 = gmt_prof_begin_if(prof);
		ev->stack = gmt_stack_capture(NULL);
		gmt_prof_end_if(prof, GMT_PROF_STACK, t0);
	}
	if (ev->result != cudaSuccess) {
		/* An OOM is an event: keep what was asked and what the device had left. */
		size_t free_b = 0, total_b = 0;
		__typeof__(&cudaMemGetInfo) meminfo = REAL_QUERY(rt, cudaMemGetInfo);
		if (meminfo && meminfo(&free_b, &total_b) == cudaSuccess) {
			ev->free_bytes = free_b;
			ev->total_bytes = total_b;
			ev->flags |= GMT_EV_HAS_MEMINFO;
		}
	}
	t0 = gmt_prof_begin_if(prof);
	gmt_stamp(ev);
	gmt_prof_end_if(prof, GMT_PROF_STAMP, t0);
	t0 = gmt_prof_begin_if(prof);
	gmt_emit_core(ev);
	gmt_prof_end_if(prof, GMT_PROF_EMIT, t0);
	gmt_prof_end_if(prof, GMT_PROF_WRAP_RECORD, t_all);
	*errno_at = saved_errno;
}

static void
alloc_end(enum gmt_cuda_runtime rt, struct gmt_event *ev)
{
	if (__builtin_expect(gmt_prof_on, 0))
		alloc_end_as(true, rt, ev);
	else
		alloc_end_as(false, rt, ev);
}

/* The first half of a free or reset: the sequence number is taken before the real call. */
static inline __attribute__((always_inline)) void
free_begin_as(bool prof, enum gmt_cuda_runtime rt, struct gmt_event *ev)
{
	uint64_t t_all = gmt_prof_begin_if(prof), t0;

	ev->device = current_device(prof, rt);
	t0 = gmt_prof_begin_if(prof);
	gmt_stamp(ev);
	gmt_prof_end_if(prof, GMT_PROF_STAMP, t0);
	gmt_prof_end_if(prof, GMT_PROF_WRAP_RECORD, t_all);
}

static void
free_begin(enum gmt_cuda_runtime rt, struct gmt_event *ev)
{
	if (__builtin_expect(gmt_prof_on, 0))
		free_begin_as(true, rt, ev);
	else
		free_begin_as(false, rt, ev);
}

static void
free_end(struct gmt_event *ev, cudaError_t rc)
{
	ev->result = (int32_t)rc;
	if (__builtin_expect(gmt_prof_on, 0)) {
		uint64_t t0 = gmt_prof_ticks();
		gmt_emit_core(ev);
		gmt_prof_end_if(true, GMT_PROF_EMIT, t0);
		gmt_prof_end_if(true, GMT_PROF_WRAP_RECORD, t0);
		return;
	}
	gmt_emit_core(ev); /* its slow path (the first event starts the tracer) keeps errno */
}

// --- the wrappers ------------------------------------------------------------------------------

/*
 * The wrappers of the hook table's WRAP rows, by family: the op they record (an allocation
 * records after the real call, a free or reset before it), their parameters (the runtime's
 * declaration must agree), the arguments forwarded and the family's arguments.
 */
#define WRAP_addr ALLOC, (void **ptr, size_t size), (ptr, size), (OUT(ptr), size)
#define WRAP_addr_flags                                                                            \
	ALLOC, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags),                  \
	    (OUT(ptr), size, flags)
#define WRAP_stream                                                                                \
	ALLOC, (void **ptr, size_t size, cudaStream_t stream), (ptr, size, stream),                \
	    (OUT(ptr), size, stream)
#define WRAP_pool_stream                                                                           \
	ALLOC, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream),                 \
	    (ptr, size, pool, stream), (OUT(ptr), size, pool, stream)
#define WRAP_pitch                                                                                 \
	ALLOC, (void **ptr, size_t *pitch, size_t width, size_t height),                           \
	    (ptr, pitch, width, height), (OUT(ptr), pitch, width, height)
#define WRAP_free FREE, (void *ptr), (ptr), (PTR(ptr))
#define WRAP_free_stream FREE, (void *ptr, cudaStream_t stream), (ptr, stream), (PTR(ptr), stream)
#define WRAP_reset RESET, (void), (), ()

/* An allocation: call, then record: device, stack, OOM facts, the seq after it succeeded. */
#define WRAP_BODY_ALLOC(sym, ev, family, call, args)                                               \
	cudaError_t rc = CALL_REAL(sym, GMT_UNPACK call);                                          \
	bool ok = rc == cudaSuccess;                                                               \
	ev.result = (int32_t)rc;                                                                   \
	GMT_FAMILY_CALL(family, &ev, ok, args);                                                    \
	alloc_end(rt_, &ev);                                                                       \
	gmt_hook_leave();                                                                          \
	return rc

/* A free: the seq before the real call; a free of nothing (NULL) is not an event. */
#define WRAP_BODY_FREE(sym, ev, family, call, args)                                                \
	if (GMT_FAMILY_CALL(family, &ev, true, args) == GMT_PARAMS_NOTHING) {                      \
		gmt_hook_leave();                                                                  \
		return CALL_REAL(sym, GMT_UNPACK call);                                            \
	}                                                                                          \
	free_begin(rt_, &ev);                                                                      \
	cudaError_t rc = CALL_REAL(sym, GMT_UNPACK call);                                          \
	free_end(&ev, rc);                                                                         \
	gmt_hook_leave();                                                                          \
	return rc

/* A reset: as a free, with the stack of the call. */
#define WRAP_BODY_RESET(sym, ev, family, call, args)                                               \
	free_begin(rt_, &ev);                                                                      \
	ev.stack = gmt_stack_capture(NULL);                                                        \
	cudaError_t rc = CALL_REAL(sym, GMT_UNPACK call);                                          \
	free_end(&ev, rc);                                                                         \
	gmt_hook_leave();                                                                          \
	return rc

/* The event a wrapper's call makes, before its parameters are read: its core alone, the part
 * a CUDA-level event fills and gmt_emit_core() copies. */
static inline void
wrap_event(struct gmt_event *ev, enum gmt_api api, bool ptsz, enum gmt_op op)
{
	gmt_event_clear_core(ev);
	ev->op = (uint8_t)op;
	ev->api = (uint16_t)api;
	ev->kind = (uint8_t)gmt_api_kind(api);
	ev->flags = ptsz ? GMT_EV_PTSZ : 0;
}
#define WRAP_EVENT(ev, a, ptsz, o) wrap_event(&(ev), GMT_API_##a, GMT_HOOK_PTSZ_##ptsz, GMT_OP_##o)

/*
 * CUPTI records the call: the wrapper plays the runtime callbacks when they are off for it
 * (cupti.c, "the runtime side"): the call's name, a free's order taken before the real call,
 * and, when no driver callback recorded the call, the event from its own parameters with the
 * runtime's result.
 */
#define WRAP_CUPTI(sym, a, ptsz, family, o, call, args)                                            \
	do {                                                                                       \
		bool ok = true, order = false; /* a free's parameters are read before the call */  \
		if (GMT_OP_##o == GMT_OP_FREE) {                                                   \
			/* does it free anything: read before the call (a free's family writes     \
			 * only the fields it sets, so the probe is not cleared) */                \
			struct gmt_event probe_;                                                   \
			probe_.flags = 0;                                                          \
			order = GMT_FAMILY_CALL(family, &probe_, ok, args) != GMT_PARAMS_NOTHING;  \
		}                                                                                  \
		if (!gmt_cupti_wrap_enter(GMT_API_##a, GMT_HOOK_PTSZ_##ptsz, order))               \
			return CALL_REAL(sym, GMT_UNPACK call);                                    \
		cudaError_t rc = CALL_REAL(sym, GMT_UNPACK call);                                  \
		ok = rc == cudaSuccess;                                                            \
		if (__builtin_expect(!gmt_cupti_wrap_end(), 1))                                    \
			return rc; /* a driver callback recorded it */                             \
		struct gmt_event ev;                                                               \
		WRAP_EVENT(ev, a, ptsz, o);                                                        \
		if (GMT_FAMILY_CALL(family, &ev, ok, args) == GMT_PARAMS_EVENT) {                  \
			int saved_errno = errno;                                                   \
			ev.result = (int32_t)rc;                                                   \
			gmt_depth++;                                                               \
			ev.device = device_of_call(rt_);                                           \
			gmt_depth--;                                                               \
			gmt_cupti_wrap_record(&ev);                                                \
			errno = saved_errno;                                                       \
		}                                                                                  \
		gmt_cupti_wrap_leave();                                                            \
		return rc;                                                                         \
	} while (0)

/* One wrapper, `fname`, of runtime `tag`: CUPTI records when it can; nested calls (depth) and
 * tracing off pass through. */
#define WRAPPER(tag, fname, sym, a, ptsz, family, o, params, call, args)                           \
	GMT_EXPORT cudaError_t fname params                                                        \
	{                                                                                          \
		const enum gmt_cuda_runtime rt_ = GMT_CUDART_##tag;                                \
		void *const self_ = (void *)&fname;                                                \
		gmt_runtime_note(rt_);                                                             \
		if (cupti_records())                                                               \
			WRAP_CUPTI(sym, a, ptsz, family, o, call, args);                           \
		if (!gmt_hook_enter()) {                                                           \
			gmt_hook_leave();                                                          \
			return CALL_REAL(sym, GMT_UNPACK call);                                    \
		}                                                                                  \
		struct gmt_event ev;                                                               \
		WRAP_EVENT(ev, a, ptsz, o);                                                        \
		WRAP_BODY_##o(sym, ev, family, call, args);                                        \
	}

/* CUDA 13's copy is the symbol itself (the runtime's declaration checks the prototype); the
 * older runtimes' are aliases at their versions. */
#define WRAPPERS(sym, a, ptsz, family, o, params, call, args)                                      \
	_Static_assert((int)GMT_OP_##o == (int)GMT_OP_OF_##a, #sym ": its family, another op");    \
	GMT_FAMILY_FITS(sym, a, family)                                                            \
	cudaError_t sym params;                                                                    \
	WRAPPER(13, sym, sym, a, ptsz, family, o, params, call, args)                              \
	OLD_WRAPPER(12, sym, a, ptsz, family, o, params, call, args)                               \
	OLD_WRAPPER(11, sym, a, ptsz, family, o, params, call, args)
#define OLD_WRAPPER(tag, sym, a, ptsz, family, o, params, call, args)                              \
	GMT_EXPORT cudaError_t gmt_cu##tag##_##sym params;                                         \
	__asm__(".symver gmt_cu" #tag "_" #sym ", " #sym "@" GMT_CUDART_SONAME_##tag);             \
	WRAPPER(tag, gmt_cu##tag##_##sym, sym, a, ptsz, family, o, params, call, args)
_Static_assert(GMT_CUDART_COUNT == 3, "a runtime in runtimes.h needs its OLD_WRAPPER line here");

#define WRAPPERS_EXPAND(...) WRAPPERS(__VA_ARGS__)
#define GMT_HOOK_WRAP(id, api, ptsz, family, args)                                                 \
	WRAPPERS_EXPAND(id, api, ptsz, family, WRAP_##family)
#include "capture/hooks.def"
