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
#include <strings.h>
#include <time.h>

#include "capture/capture.h"
#include "capture/dlclose.h"
#include "capture/hook_lookup.h"
#include "capture/params.h"
#include "capture/runtimes.h"
#include "capture/selfprof.h"
#include "capture/stacks.h"
#include "util/clock.h"
#include "util/devices.h"
#include "util/log.h"
#include "util/options.h"

_Atomic int gmt_cupti_phase = GMT_CUPTI_UNTRIED;

static char reason[256];

// --- libcupti and libcuda, found at run time
// ------------------------------------------------------

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
/* clang-format off */
#define DRIVER_QUERIES(X)                                                                          \
	X(cuMemGetInfo_v2)                                                                         \
	X(cuMemGetAddressRange_v2)                                                                 \
	X(cuDeviceGetMemPool)                                                                      \
	X(cuMemPoolGetAttribute)                                                                   \
	X(cuGraphNodeGetType)                                                                      \
	X(cuGraphMemAllocNodeGetParams)                                                            \
	X(cuGraphMemFreeNodeGetParams)                                                             \
	X(cuDeviceGetGraphMemAttribute)                                                            \
	X(cuDeviceGetPCIBusId)
/* clang-format on */

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
	if (__builtin_expect(p != NULL, 1) ||
	    atomic_load_explicit(&query_missing[q], memory_order_relaxed))
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

/* What cupti_open() opened, for the header; written before the phase is published. */
static const char *cupti_opened;

const char *
gmt_cupti_opened(void)
{
	return atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire) == GMT_CUPTI_ACTIVE
		   ? cupti_opened
		   : NULL;
}

/* A CUPTI of one soname: the loader's path, then the toolkit's places. */
static void *
cupti_load(const char *soname)
{
	static const char *const toolkit[] = {
	    "/usr/local/cuda/extras/CUPTI/lib64/",
	    "/usr/local/cuda/lib64/",
	    "/usr/local/cuda/targets/x86_64-linux/lib/",
	};
	char path[128];
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	for (size_t i = 0; !h && i < sizeof(toolkit) / sizeof(toolkit[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", toolkit[i], soname);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	return h;
}

/* The copy already in the process first (torch's wheel maps one at import): a second copy would
 * be a second CUPTI instance. Then the option; then the CUPTI of the runtime the process has
 * loaded (a cu12 PyTorch's libcupti.so.12 next to its libcudart.so.12), then the others, newest
 * first: CUPTI talks to the driver, so any major the driver supports records. */
static void *
cupti_open(const struct gmt_options *opts)
{
	unsigned loaded = gmt_cudart_seen();
	void *h;

	for (int rt = 0; rt < GMT_CUDART_COUNT; rt++) {
		h = dlopen(gmt_cupti_sonames[rt], RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			cupti_opened = gmt_cupti_sonames[rt];
			return h;
		}
	}
	if (opts->cupti_lib[0]) {
		cupti_opened = opts->cupti_lib;
		return dlopen(opts->cupti_lib, RTLD_NOW | RTLD_LOCAL);
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int rt = 0; rt < GMT_CUDART_COUNT; rt++) {
			if (!!(loaded & (1u << rt)) != (pass == 0))
				continue;
			h = cupti_load(gmt_cupti_sonames[rt]);
			if (h) {
				cupti_opened = gmt_cupti_sonames[rt];
				return h;
			}
		}
	}
	return NULL;
}

// --- per-thread call state
// ------------------------------------------------------------------------

#define TLS __thread __attribute__((tls_model("initial-exec")))

/* The runtime call in progress on this thread (runtime calls do not nest). */
static TLS struct {
	uint32_t corr;
	uint16_t api;	/* 0: none */
	uint8_t joined; /* a driver or resource event was recorded for it */
	uint8_t ptsz;
	uint16_t failed_driver; /* a driver call under it failed: the runtime's result decides */
	uint8_t wrapped;	/* a wrapper plays the runtime callbacks ("the runtime side") */
	uint8_t has_stack;	/* a wrapper's allocation: its stack, taken before the real call */
	uint32_t stack;
	uint64_t seq, ts; /* frees and resets: taken at ENTER, handed to the driver call */
} rt;

/* The driver memory call in progress on this thread. */
static TLS struct {
	uint32_t corr;
	uint16_t api;
	uint8_t consumed; /* a resource callback inside it recorded the event (graph node, reset) */
	uint32_t
	    context;   /* its context: resource callbacks inside it (graph nodes) may have none */
	CUcontext ctx; /* the same, for its device: asked only by such a callback */
	uint64_t seq, ts;
} drv;

/* Last context seen on this thread and its device: most calls hit it. */
static TLS struct {
	uint32_t uid;
	int32_t device;
} ctx_cache;

/* context_device() when the context is not the cached one: CUPTI asked. */
static __attribute__((noinline)) int32_t
context_device_asked(CUcontext ctx, uint32_t uid)
{
	uint32_t dev;
	uint64_t t0 = gmt_prof_begin();
	CUptiResult r = cupti.GetDeviceId(ctx, &dev);
	gmt_prof_end(GMT_PROF_CONTEXT, t0);
	if (r != CUPTI_SUCCESS)
		return -1;
	ctx_cache.uid = uid;
	ctx_cache.device = (int32_t)dev;
	return (int32_t)dev;
}

static inline int32_t
context_device(CUcontext ctx, uint32_t uid)
{
	if (!ctx)
		return -1;
	if (uid && uid == ctx_cache.uid)
		return ctx_cache.device;
	return context_device_asked(ctx, uid);
}

/* Is this driver callback the one under the runtime call in progress? (A wrapper's call has no
 * correlation id: every driver call under it is its.) */
static bool
joined_to_runtime(uint32_t corr)
{
	return rt.api != GMT_API_NONE && (rt.wrapped || rt.corr == corr);
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

// --- the runtime side: CUPTI's runtime callbacks, or the wrappers
// --------------------------------------------------------------
//
// The runtime call above a driver call gives the event its name (cudaMallocAsync over
// cuMemAllocAsync), a free its order before the memory can be handed out again, and the
// application's result when cudart retries a failed driver call. CUPTI's runtime callbacks
// say it, at a price: on the H200 a callback costs about 70 ns even when empty, two per call
// (docs/performance.md, floor-cupti against floor-cupti-driver). When the interposed wrappers
// are bound (LD_PRELOAD: the program's calls into a shared libcudart reach interpose.c first),
// the wrapper of a call says the same for a few stores: the wrapped calls' runtime callbacks
// stay off (GPUMEMTRACE_CUPTI_RUNTIME=auto, the default) and gmt_cupti_wrap_*() fill `rt`.
// A driver call of the kinds the wrapped calls make that comes with no runtime call around it
// (a static cudart, a library bound past the wrappers, or the program calling the driver
// itself) turns the callbacks back on: the writer's next loop (gmt_cupti_tick()) or the next
// wrapped call, whichever comes first, enables them outside any callback, and from then on the
// tracer names calls as with GPUMEMTRACE_CUPTI_RUNTIME=callbacks.

enum rt_mode {
	RT_CALLBACKS, /* CUPTI's runtime callbacks name every runtime call (or none: "off") */
	RT_WRAPPERS,  /* the wrapped calls' callbacks are off: the wrappers play them */
	RT_RESTORING, /* a call went past the wrappers: the next wrapper turns the callbacks on */
	RT_ENABLING,  /* a wrapper is turning them on */
};
static _Atomic int rt_mode = RT_CALLBACKS;

/* The runtime calls the wrappers see (hooks.def's WRAP rows), and the kinds they make: filled
 * by enable_all(), before any callback. */
static const enum gmt_api wrapped_rows[] = {
#define GMT_HOOK_WRAP(id, api, ptsz, family, args) GMT_API_##api,
#include "capture/hooks.def"
};
static bool wrapped_api[GMT_API_COUNT];
static bool wrapped_kind[GMT_KIND_COUNT];

static bool
wrapped_runtime_cbid(CUpti_CallbackId cbid)
{
	struct gmt_hook h = gmt_hook_runtime(cbid);
	return h.api != GMT_API_NONE && wrapped_api[h.api];
}

/* The wrapped calls' runtime callbacks on again (a wrapper or the writer's tick, outside any
 * callback). */
static void
restore_runtime_callbacks(void)
{
	int expected = RT_RESTORING;

	if (!atomic_compare_exchange_strong(&rt_mode, &expected, RT_ENABLING))
		return;
	gmt_depth++;
	for (size_t i = 0; i < GMT_CBID_COUNT(runtime_cbids); i++)
		if (wrapped_runtime_cbid(runtime_cbids[i]))
			(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
						   runtime_cbids[i]);
	gmt_depth--;
	atomic_store_explicit(&rt_mode, RT_CALLBACKS, memory_order_release);
}

void
gmt_cupti_tick(void)
{
	if (atomic_load_explicit(&rt_mode, memory_order_acquire) == RT_RESTORING)
		restore_runtime_callbacks();
}

/* A driver call with no runtime call around it, of a kind a wrapped call makes: maybe a runtime
 * the wrappers do not see. */
static void
check_unwrapped(enum gmt_api api)
{
	enum gmt_op op = gmt_api_op(api);

	if (rt.api != GMT_API_NONE || (op != GMT_OP_ALLOC && op != GMT_OP_FREE) ||
	    atomic_load_explicit(&rt_mode, memory_order_acquire) != RT_WRAPPERS ||
	    !wrapped_kind[gmt_api_kind(api)])
		return; /* the usual case: a runtime call is around it */
	int expected = RT_WRAPPERS;
	atomic_compare_exchange_strong(&rt_mode, &expected, RT_RESTORING);
}

static void stamp_order(uint64_t *seq, uint64_t *ts);

/*
 * An allocation's stack is taken here, in the wrapper, before the real call: from inside the
 * driver's callback the unwinder would first walk our callback's frames, CUPTI's, the driver's
 * and cudart's (most of a stack under PyTorch's allocator, in libraries of tens of megabytes),
 * to keep only cudart's and the driver's, which a report skips anyway. The stack
 * then starts at the wrapper's caller, as on the interposition path.
 */
static inline __attribute__((always_inline)) bool
wrap_enter_as(bool prof, int api, bool ptsz, bool takes_order)
{
	uint64_t t_all = gmt_prof_begin_if(prof);
	int m = atomic_load_explicit(&rt_mode, memory_order_acquire);

	if (m == RT_CALLBACKS)
		return false;
	if (m == RT_RESTORING)
		restore_runtime_callbacks(); /* and this call is still the wrapper's */
	rt.corr = 0;
	rt.api = (uint16_t)api;
	rt.joined = 0;
	rt.ptsz = ptsz;
	rt.failed_driver = GMT_API_NONE;
	rt.seq = rt.ts = 0;
	rt.has_stack = 0;
	rt.wrapped = 1;
	if (takes_order)
		stamp_order(&rt.seq, &rt.ts);
	if (gmt_api_op((enum gmt_api)api) == GMT_OP_ALLOC) {
		rt.stack = 0; /* stacks off: none to take */
		if (!atomic_load_explicit(&gmt_stacks_none, memory_order_relaxed)) {
			uint64_t t0 = gmt_prof_begin_if(prof);
			int saved_errno = errno;
			gmt_depth++; /* the unwinder's own calls are not the application's */
			rt.stack = gmt_stack_capture(NULL);
			gmt_depth--;
			errno = saved_errno;
			gmt_prof_end_if(prof, GMT_PROF_STACK, t0);
		}
		rt.has_stack = 1;
	}
	gmt_prof_end_if(prof, GMT_PROF_WRAP_ENTER, t_all);
	return true;
}

bool
gmt_cupti_wrap_enter(int api, bool ptsz, bool takes_order)
{
	if (__builtin_expect(gmt_prof_on, 0))
		return wrap_enter_as(true, api, ptsz, takes_order);
	return wrap_enter_as(false, api, ptsz, takes_order);
}

bool
gmt_cupti_wrap_end(void)
{
	enum gmt_op op = gmt_api_op((enum gmt_api)rt.api);
	if (rt.wrapped && !rt.joined && (op == GMT_OP_ALLOC || op == GMT_OP_FREE))
		return true; /* the wrapper records, then leaves */
	gmt_cupti_wrap_leave();
	return false;
}

void
gmt_cupti_wrap_leave(void)
{
	rt.api = GMT_API_NONE;
	rt.wrapped = 0;
	rt.has_stack = 0;
}

// --- reservation readings
// -------------------------------------------------------------------------

/* Last reading per pool (or device graph pool): a reading is recorded only when it changed, so
 * the steady state writes no trace line. */
#define USAGE_SLOTS 256
static struct {
	_Atomic uint64_t key;
	_Atomic uint64_t value;	  /* reading + 1; 0 = none yet */
	_Atomic uint64_t read_ts; /* when a pool allocation last read it (pool_reading_due) */
} usage_last[USAGE_SLOTS];

/* The slot of @p key, claimed when new; NULL when the table is full. */
static __typeof__(&usage_last[0])
usage_slot(uint64_t key)
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
			return &usage_last[j];
	}
	return NULL;
}

static bool
usage_changed(uint64_t key, uint64_t value)
{
	__typeof__(&usage_last[0]) u = usage_slot(key);
	if (!u)
		return true; /* table full: record every reading */
	if (atomic_load_explicit(&u->value, memory_order_relaxed) == value + 1)
		return false; /* unchanged: not even a store to the shared line */
	return atomic_exchange(&u->value, value + 1) != value + 1;
}

/* A reading the ring had no room for (counted dropped): forget it, so that the next reading of
 * the same key is written although its value did not move (the trace would otherwise keep the
 * old value, or none, until the value changed again). A pool is read again at its next
 * allocation after POOL_READ_NS, as before: an overflowing ring is not filled faster. A newer
 * reading another thread stored meanwhile is kept. */
static void
usage_forget(uint64_t key, uint64_t value)
{
	__typeof__(&usage_last[0]) u = usage_slot(key);
	if (!u)
		return;
	uint64_t mine = value + 1;
	atomic_compare_exchange_strong(&u->value, &mine, 0);
}

/*
 * After a pool allocation, is a reading of its pool due? At most one per POOL_READ_NS per pool:
 * the query (cuMemPoolGetAttribute) is a driver call inside the application's, paid before on
 * every allocation although a warm pool's reservation does not move. A growth inside the window
 * shows at the pool's next reading (the next allocation after it, a trim, an attribute change,
 * its destruction); the allocations themselves are every one recorded (docs/trace-format.md).
 */
#define POOL_READ_NS 1000000ULL

static bool
pool_reading_due(uint64_t pool, uint64_t now)
{
	__typeof__(&usage_last[0]) u = usage_slot(pool);
	if (!u)
		return true;
	uint64_t last = atomic_load_explicit(&u->read_ts, memory_order_relaxed);
	/* @p now is an event's raw clock (util/clock.h); until the writer knows the counter's
	 * rate, every allocation reads */
	if (last && now - last < gmt_clock_raw_span(POOL_READ_NS))
		return false;
	/* racing threads may both read once: harmless */
	atomic_store_explicit(&u->read_ts, now ? now : 1, memory_order_relaxed);
	return true;
}

static void
emit_usage(enum gmt_kind kind,
	   enum gmt_api api,
	   enum gmt_api driver,
	   uint64_t key,
	   uint64_t pool,
	   int32_t device,
	   uint64_t context,
	   uint64_t value)
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
	if (!gmt_emit_reading(&ev))
		usage_forget(key, value);
}

static void
read_pool(CUmemoryPool pool, const struct gmt_event *cause)
{
	cuuint64_t reserved = 0;
	__typeof__(&cuMemPoolGetAttribute) get = QUERY(cuMemPoolGetAttribute);

	if (!pool || !get ||
	    get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
		return;
	emit_usage(GMT_KIND_POOL_RESERVE, (enum gmt_api)cause->api, (enum gmt_api)cause->driver,
		   (uint64_t)(uintptr_t)pool, (uint64_t)(uintptr_t)pool, cause->device,
		   cause->context, reserved);
}

/* The pool a cuMemAllocAsync draws from: the current pool of the device, cached per device (one
 * query instead of two per allocation) until the program sets another one. */
static _Atomic(CUmemoryPool) current_pools[GMT_DEVICES_MAX];

static CUmemoryPool
current_pool(int32_t device)
{
	CUmemoryPool pool;
	__typeof__(&cuDeviceGetMemPool) get_pool;

	if (device < 0 || device >= GMT_DEVICES_MAX)
		return NULL;
	pool = atomic_load_explicit(&current_pools[device], memory_order_acquire);
	if (pool)
		return pool;
	get_pool = QUERY(cuDeviceGetMemPool);
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

static void
read_graph_pool(int32_t device, const struct gmt_event *cause)
{
	cuuint64_t reserved = 0;
	__typeof__(&cuDeviceGetGraphMemAttribute) get = QUERY(cuDeviceGetGraphMemAttribute);

	if (device < 0 || !get ||
	    get((CUdevice)device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
		CUDA_SUCCESS)
		return;
	emit_usage(GMT_KIND_GRAPH_RESERVE, (enum gmt_api)cause->api, (enum gmt_api)cause->driver,
		   (1ULL << 62) | (uint64_t)device, 0, device, cause->context, reserved);
}

// --- extractor families only the callbacks use (capture/params.h has the shared ones) ------------

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

/* The ops each family below serves (checked against every row at build time). */
enum {
	GMT_FAMILY_OPS_array = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_array3d = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_vmm_create = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_vmm_map = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_vmm_retain = GMT_OPS(RETAIN),
	GMT_FAMILY_OPS_import = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_pool_import = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_external = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_handle = GMT_OPS(FREE),
	GMT_FAMILY_OPS_graph_alloc = GMT_OPS(ALLOC),
	GMT_FAMILY_OPS_pool_read = GMT_OPS(USAGE),
	GMT_FAMILY_OPS_pool_gone = GMT_OPS(USAGE),
	GMT_FAMILY_OPS_graph_pool = GMT_OPS(USAGE),
	GMT_FAMILY_OPS_graph_pool_of = GMT_OPS(USAGE),
	GMT_FAMILY_OPS_pool_choice = GMT_OPS(NONE),
};

/* A CUDA array and its descriptor (1D/2D, or 3D and mipmapped). */
static enum gmt_params
family_array(struct gmt_event *ev, bool ok, uint64_t ptr, const CUDA_ARRAY_DESCRIPTOR *d)
{
	ev->ptr = ptr;
	ev->size = d ? array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels) : 0;
	return GMT_PARAMS_EVENT;
}

static enum gmt_params
family_array3d(struct gmt_event *ev, bool ok, uint64_t ptr, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	ev->ptr = ptr;
	ev->size = d ? array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
	return GMT_PARAMS_EVENT;
}

/* VMM: a physical allocation (on the device its properties name), a mapping of one into a
 * reserved range, a handle retained again (a failed retain says nothing). */
static enum gmt_params
family_vmm_create(
    struct gmt_event *ev, bool ok, uint64_t handle, uint64_t size, const CUmemAllocationProp *prop)
{
	family_addr(ev, ok, handle, size);
	if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
		ev->device = prop->location.id;
	return GMT_PARAMS_EVENT;
}

static enum gmt_params
family_vmm_map(
    struct gmt_event *ev, bool ok, uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle)
{
	family_addr(ev, ok, ptr, size);
	ev->offset = offset;
	ev->handle = handle;
	return GMT_PARAMS_EVENT;
}

static enum gmt_params
family_vmm_retain(struct gmt_event *ev, bool ok, uint64_t handle, uint64_t addr)
{
	ev->ptr = handle;
	ev->handle = addr;
	return ok ? GMT_PARAMS_EVENT : GMT_PARAMS_NOTHING;
}

/* Another process's memory mapped here: its size from the range it lies in. */
static enum gmt_params
family_import(struct gmt_event *ev, bool ok, uint64_t ptr)
{
	return family_addr(ev, ok, ptr, range_size(ptr));
}

static enum gmt_params
family_pool_import(struct gmt_event *ev, bool ok, uint64_t ptr, CUmemoryPool pool)
{
	family_import(ev, ok, ptr);
	ev->pool = (uint64_t)(uintptr_t)pool;
	ev->flags |= GMT_EV_HAS_POOL;
	return GMT_PARAMS_EVENT;
}

/* A buffer of an external memory object (ended when the object is destroyed: `handle`). */
static enum gmt_params
family_external(struct gmt_event *ev,
		bool ok,
		uint64_t ptr,
		const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *desc,
		CUexternalMemory ext)
{
	family_addr(ev, ok, ptr, desc ? desc->size : 0);
	ev->handle = (uint64_t)(uintptr_t)ext;
	return GMT_PARAMS_EVENT;
}

static enum gmt_params
family_handle(struct gmt_event *ev, bool ok, uint64_t handle)
{
	(void)ok;
	ev->handle = handle;
	return GMT_PARAMS_EVENT;
}

/* An explicit graph memory node: the address is known once the call succeeded. */
static enum gmt_params
family_graph_alloc(struct gmt_event *ev, bool ok, const CUDA_MEM_ALLOC_NODE_PARAMS *node)
{
	return family_addr(ev, ok, ok && node ? node->dptr : 0, node ? node->bytesize : 0);
}

/* Calls that change a reservation: their readings, with the call's event as the cause (they
 * make no event of their own). */
static enum gmt_params
family_pool_read(struct gmt_event *cause, bool ok, CUmemoryPool pool)
{
	if (ok)
		read_pool(pool, cause);
	return GMT_PARAMS_NAME;
}

static enum gmt_params
family_pool_gone(struct gmt_event *cause, bool ok, CUmemoryPool pool)
{
	if (ok) {
		__typeof__(&usage_last[0]) u = usage_slot((uint64_t)(uintptr_t)pool);
		emit_usage(GMT_KIND_POOL_RESERVE, (enum gmt_api)cause->api,
			   (enum gmt_api)cause->driver, (uint64_t)(uintptr_t)pool,
			   (uint64_t)(uintptr_t)pool, cause->device, cause->context, 0);
		if (u) /* a new pool at the same address gets its first reading at once */
			atomic_store_explicit(&u->read_ts, 0, memory_order_relaxed);
	}
	return GMT_PARAMS_NAME;
}

/* The graph pool of the call's device (a launch), or of the device it names (a trim). */
static enum gmt_params
family_graph_pool(struct gmt_event *cause, bool ok)
{
	if (ok)
		read_graph_pool(cause->device, cause);
	return GMT_PARAMS_NAME;
}

static enum gmt_params
family_graph_pool_of(struct gmt_event *cause, bool ok, CUdevice device)
{
	if (ok)
		read_graph_pool((int32_t)device, cause);
	return GMT_PARAMS_NAME;
}

/* A call that changes which pool cuMemAllocAsync draws from on @p device (-1: any). */
static enum gmt_params
family_pool_choice(struct gmt_event *ev, bool ok, int32_t device)
{
	(void)ev;
	(void)ok;
	forget_current_pools(device);
	return GMT_PARAMS_NAME;
}

/* Every row's family serves its API's op. */
#define GMT_HOOK_RT(id, api, ptsz, family, args) GMT_FAMILY_FITS(id, api, family)
#define GMT_HOOK_DRV(id, api, ptsz, family, args) GMT_FAMILY_FITS(id, api, family)
#include "capture/hooks.def"

/* One case of call_params(): the row's family on the callback's parameter struct `p` (a call
 * without parameters, such as cudaDeviceReset, has no struct and its row no arguments). */
#define PARAMS_STRUCT(id, ...) __VA_OPT__(const id##_params *p = params; (void)p;)
#define PARAMS_CASE(domain, id, family, args)                                                      \
	case domain(id): {                                                                         \
		PARAMS_STRUCT(id, GMT_UNPACK args)                                                 \
		return GMT_FAMILY_CALL(family, ev, ok, args);                                      \
	}

/*
 * What a call's parameters make (hooks.def): fills @p ev at EXIT (@p ok: the call succeeded);
 * a free asks at ENTER, with @p ok true, whether it frees anything. The families of readings
 * and pool choices act here, with @p ev as their cause.
 */
static enum gmt_params
call_params(CUpti_CallbackDomain domain,
	    CUpti_CallbackId cbid,
	    const void *params,
	    bool ok,
	    struct gmt_event *ev)
{
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		switch (cbid) {
#define GMT_HOOK_DRV(id, api, ptsz, family, args) PARAMS_CASE(DRV, id, family, args)
#include "capture/hooks.def"
		}
	} else {
		switch (cbid) {
#define GMT_HOOK_RT(id, api, ptsz, family, args) PARAMS_CASE(RT, id, family, args)
#include "capture/hooks.def"
		}
	}
	return GMT_PARAMS_NAME;
}

/*
 * A free of NULL frees nothing and is not recorded, so it takes no seq: a seq that no line
 * carries is a gap the reader's reorder window waits for. The families of frees only write the
 * fields they set, so the probe is not cleared.
 */
static bool
frees_nothing(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params)
{
	struct gmt_event probe;

	probe.flags = 0;
	return call_params(domain, cbid, params, true, &probe) == GMT_PARAMS_NOTHING;
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

/*
 * The end of an event a callback records from a call: an allocation gets its stack (and, when
 * it failed, what the device had left) and its seq now; a free keeps the order @p seq taken at
 * its ENTER (0: none was taken, it takes one now). Then into the ring. @p prof: the profiler is
 * on (selfprof.h: made with a constant where every call records).
 */
static inline __attribute__((always_inline)) void
emit_call_event_as(bool prof, struct gmt_event *ev, uint64_t seq, uint64_t ts)
{
	uint64_t t0;

	if (ev->op == GMT_OP_ALLOC && ev->result != 0) {
		t0 = gmt_prof_begin_if(prof);
		add_meminfo(ev);
		gmt_prof_end_if(prof, GMT_PROF_MEMINFO, t0);
	}
	if (ev->op == GMT_OP_ALLOC && rt.wrapped && rt.has_stack) {
		ev->stack =
		    rt.stack; /* the wrapper's, taken before the call (gmt_cupti_wrap_enter) */
	} else if (ev->op == GMT_OP_ALLOC) {
		t0 = gmt_prof_begin_if(prof);
		ev->stack = callback_stack();
		gmt_prof_end_if(prof, GMT_PROF_STACK, t0);
	}
	t0 = gmt_prof_begin_if(prof);
	if (ev->op == GMT_OP_FREE && seq) {
		ev->seq = seq;
		ev->ts_ns = ts;
		ev->tid = gmt_tid();
	} else {
		gmt_stamp(ev);
	}
	gmt_prof_end_if(prof, GMT_PROF_STAMP, t0);
	t0 = gmt_prof_begin_if(prof);
	gmt_emit_core(ev); /* a CUDA-level event: its core alone */
	gmt_prof_end_if(prof, GMT_PROF_EMIT, t0);
}

/* emit_call_event_as() where the profiler's flag is read here (the paths not made twice). */
static __attribute__((noinline)) void
emit_call_event(struct gmt_event *ev, uint64_t seq, uint64_t ts)
{
	if (__builtin_expect(gmt_prof_on, 0))
		emit_call_event_as(true, ev, seq, ts);
	else
		emit_call_event_as(false, ev, seq, ts);
}

void
gmt_cupti_wrap_record(struct gmt_event *ev)
{
	/* as the runtime EXIT: the event from the call's own parameters, the runtime's result,
	 * the failed driver call under it, a free's order from before the call */
	ev->driver = rt.failed_driver;
	if (rt.ptsz)
		ev->flags |= GMT_EV_PTSZ;
	gmt_depth++; /* our queries (memory info after a failure) are not the application's */
	emit_call_event(ev, rt.seq, rt.ts);
	gmt_depth--;
}

// --- driver callbacks
// -----------------------------------------------------------------------------

static inline __attribute__((always_inline)) void
on_driver_enter(CUpti_CallbackId cbid, enum gmt_api api, const CUpti_CallbackData *cb)
{
	drv.corr = cb->correlationId;
	drv.api = (uint16_t)api;
	drv.consumed = 0;
	drv.context = cb->contextUid;
	drv.ctx = cb->context;
	drv.seq = drv.ts = 0;
	check_unwrapped(api);
	if (gmt_api_op(api) != GMT_OP_FREE)
		return;
	if (rt.wrapped && rt.seq) {
		/* the wrapper read the call's parameters and took its order: it frees something */
		drv.seq = rt.seq;
		drv.ts = rt.ts;
		rt.seq = 0; /* one runtime call, one free order (take_free_order) */
		return;
	}
	if (!frees_nothing(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb->functionParams))
		take_free_order(&drv.seq, &drv.ts, cb->correlationId);
}

static inline __attribute__((always_inline)) void
on_driver_exit(
    bool prof, CUpti_CallbackId cbid, enum gmt_api api, bool ptsz, const CUpti_CallbackData *cb)
{
	uint64_t t_prep = gmt_prof_begin_if(prof);
	bool seen_enter = drv.api == api && drv.corr == cb->correlationId;
	bool joined = joined_to_runtime(cb->correlationId);
	enum gmt_op op = gmt_api_op(api);
	CUresult rc =
	    cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
	bool ok = rc == CUDA_SUCCESS;

	if (seen_enter && drv.consumed) { /* a resource callback inside recorded it */
		drv.api = 0;
		return;
	}
	drv.api = 0;
	if (op == GMT_OP_RESET)
		return; /* the CONTEXT_DESTROY_STARTING callback records resets */

	struct gmt_event ev; /* its core: what emit_call_event() copies */
	gmt_event_clear_core(&ev);
	ev.op = (uint8_t)op;
	ev.kind = (uint8_t)gmt_api_kind(api);
	ev.api = (uint16_t)(joined ? rt.api : api);
	ev.driver = (uint16_t)(joined ? api : GMT_API_NONE);
	ev.result = (int32_t)rc;
	ev.context = cb->contextUid;
	ev.device = context_device(cb->context, cb->contextUid);
	ev.flags = ptsz || (joined && rt.ptsz) ? GMT_EV_PTSZ : 0;
	gmt_prof_end_if(prof, GMT_PROF_EXIT_PREP, t_prep);
	uint64_t t0 = gmt_prof_begin_if(prof);
	enum gmt_params got =
	    call_params(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb->functionParams, ok, &ev);
	gmt_prof_end_if(prof, GMT_PROF_PARAMS, t0);
	if (op == GMT_OP_USAGE) { /* the family made the readings */
		if (joined)
			rt.joined = 1;
		return;
	}
	if (got != GMT_PARAMS_EVENT)
		return;
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
	emit_call_event_as(prof, &ev, seen_enter ? drv.seq : 0, drv.ts);
	if (joined)
		rt.joined = 1;
	if (ok && (api == GMT_API_cuMemAllocAsync || api == GMT_API_cuMemAllocFromPoolAsync)) {
		t0 = gmt_prof_begin_if(prof);
		CUmemoryPool pool = api == GMT_API_cuMemAllocFromPoolAsync
					? (CUmemoryPool)(uintptr_t)ev.pool
					: current_pool(ev.device);
		if (pool && pool_reading_due((uint64_t)(uintptr_t)pool, ev.ts_ns))
			read_pool(pool, &ev);
		gmt_prof_end_if(prof, GMT_PROF_POOL, t0);
	}
}

static inline __attribute__((always_inline)) void
on_driver(bool prof, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct gmt_hook hook = gmt_hook_driver(cbid);
	enum gmt_api api = (enum gmt_api)hook.api;
	bool ptsz = hook.ptsz;

	if (api == GMT_API_NONE) { /* a pool choice: its family acts at EXIT */
		struct gmt_event none = {0};
		if (cb->callbackSite == CUPTI_API_EXIT)
			call_params(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb->functionParams, true,
				    &none);
		return;
	}
	if (cb->callbackSite == CUPTI_API_ENTER)
		on_driver_enter(cbid, api, cb);
	else
		on_driver_exit(prof, cbid, api, ptsz, cb);
}

// --- runtime callbacks
// ----------------------------------------------------------------------------

/* Out of line, as on_resource(): inlined, their frames would be on_callback()'s, paid by every
 * callback (the paused ones too). */
static __attribute__((noinline)) void
on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct gmt_hook hook = gmt_hook_runtime(cbid);
	enum gmt_api api = (enum gmt_api)hook.api;
	bool ptsz = hook.ptsz;

	if (api == GMT_API_NONE || rt.wrapped)
		return; /* not ours, or a wrapper owns the call (its callbacks came on during it) */
	if (cb->callbackSite == CUPTI_API_ENTER) {
		rt.corr = cb->correlationId;
		rt.api = (uint16_t)api;
		rt.joined = 0;
		rt.ptsz = ptsz;
		rt.failed_driver = GMT_API_NONE;
		rt.seq = rt.ts = 0;
		if (gmt_api_op(api) == GMT_OP_FREE &&
		    !frees_nothing(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, cb->functionParams))
			stamp_order(&rt.seq, &rt.ts);
		return;
	}
	if (rt.api != api || rt.corr != cb->correlationId)
		return; /* its ENTER came before we subscribed */
	enum gmt_op op = gmt_api_op(api);
	if (rt.joined || (op != GMT_OP_ALLOC && op != GMT_OP_FREE)) {
		/* the common case: a driver (or resource) event recorded it, under this name */
		rt.api = GMT_API_NONE;
		return;
	}

	cudaError_t rc =
	    cb->functionReturnValue ? *(const cudaError_t *)cb->functionReturnValue : cudaSuccess;
	struct gmt_event ev = {
	    .op = (uint8_t)op,
	    .kind = (uint8_t)gmt_api_kind(api),
	    .api = (uint16_t)api,
	    .result = (int32_t)rc,
	    .context = cb->contextUid,
	    .device = context_device(cb->context, cb->contextUid),
	    .flags = ptsz ? GMT_EV_PTSZ : 0,
	};
	/* cudart reached the memory without a driver callback we saw: record from the runtime's own
	 * parameters, where its family has them */
	if (call_params(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, cb->functionParams, rc == cudaSuccess,
			&ev) == GMT_PARAMS_EVENT) {
		ev.driver = rt.failed_driver;
		emit_call_event(&ev, rt.seq, rt.ts);
	}
	rt.api = GMT_API_NONE;
}

// --- resource callbacks
// ---------------------------------------------------------------------------

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
resource_context_destroy(const CUpti_ResourceData *rd)
{
	CUcontext ctx = rd->context;
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
resource_context_created(const CUpti_ResourceData *rd)
{
	CUcontext ctx = rd->context;
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
resource_graph_node(const CUpti_ResourceData *rd)
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
		ev.device = context_device(drv.ctx, drv.context);
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

/* The resource callbacks of the hook table, each to its handler. */
static __attribute__((noinline)) void
on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	switch (cbid) {
#define GMT_HOOK_RES(id, api, ptsz, family, args)                                                  \
	case RES(id):                                                                              \
		resource_##family(rd);                                                             \
		break;
#include "capture/hooks.def"
	}
}

// --- the subscriber
// -------------------------------------------------------------------------------

/* A callback to record (on_callback()): one frame, with the driver's handling inlined in it.
 * Made twice: on_recorded() with the profiler off, on_recorded_profiled() with it on. */
static inline __attribute__((always_inline)) void
on_recorded_as(bool prof, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	gmt_depth++;
	int *errno_at = gmt_errno_at(), saved_errno = *errno_at;
	uint64_t t0 = gmt_prof_begin_if(prof);
	switch (domain) {
	case CUPTI_CB_DOMAIN_DRIVER_API: on_driver(prof, cbid, data); break;
	case CUPTI_CB_DOMAIN_RUNTIME_API: on_runtime(cbid, data); break;
	case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, data); break;
	default: break;
	}
	if (prof) { /* which part */
		bool enter = (domain == CUPTI_CB_DOMAIN_DRIVER_API ||
			      domain == CUPTI_CB_DOMAIN_RUNTIME_API) &&
			     ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER;
		enum gmt_prof_part part =
		    domain == CUPTI_CB_DOMAIN_DRIVER_API
			? (enter ? GMT_PROF_CB_DRIVER_ENTER : GMT_PROF_CB_DRIVER_EXIT)
		    : domain == CUPTI_CB_DOMAIN_RUNTIME_API
			? (enter ? GMT_PROF_CB_RUNTIME_ENTER : GMT_PROF_CB_RUNTIME_EXIT)
			: GMT_PROF_CB_RESOURCE;
		gmt_prof_end_if(true, part, t0);
	}
	*errno_at = saved_errno;
	gmt_depth--;
}

static __attribute__((noinline)) void
on_recorded(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	on_recorded_as(false, domain, cbid, data);
}

static __attribute__((noinline, cold)) void
on_recorded_profiled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	on_recorded_as(true, domain, cbid, data);
}

/*
 * A driver call's ENTER (half of the recorded callbacks), in a frame of its own: an
 * allocation's, a free whose order its wrapper took and a pool choice's (nothing at ENTER) only
 * note the call (on_driver_enter()): no query, nothing that can touch errno, none of the EXIT's
 * registers to save. A free still to be read goes the general way (on_recorded()).
 */
static __attribute__((noinline)) void
on_driver_entering(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	enum gmt_api api = (enum gmt_api)gmt_hook_driver(cbid).api;

	if (api == GMT_API_NONE)
		return; /* a pool choice: its family acts at EXIT */
	if (gmt_api_op(api) == GMT_OP_FREE && !(rt.wrapped && rt.seq)) {
		on_recorded(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb); /* its parameters, its order */
		return;
	}
	on_driver_enter(cbid, api, cb);
}

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	/* our own calls (the wrappers' first call, our queries, the writer) are not the
	 * application's; nor is anything while tracing is off: both return before any frame */
	if (gmt_depth != 0 ||
	    atomic_load_explicit(&gmt_state, memory_order_relaxed) == GMT_STATE_DISABLED)
		return;
	if (__builtin_expect(gmt_prof_on, 0))
		on_recorded_profiled(domain, cbid, data); /* every part timed, the ENTERs too */
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
		 ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
		on_driver_entering(cbid, data);
	else
		on_recorded(domain, cbid, data);
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

/* GPUMEMTRACE_CUPTI_RUNTIME: auto (the default; 1, on, yes, true), callbacks, or off (0, no,
 * false). */
static enum gmt_rt_choice { RT_CHOICE_AUTO, RT_CHOICE_CALLBACKS, RT_CHOICE_OFF } rt_choice(void)
{
	const char *v = gmt_tracer_options()->cupti_runtime;
	static const char *const on[] = {"auto", "1", "on", "yes", "true"};
	static const char *const off[] = {"off", "0", "no", "false"};

	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		if (!strcasecmp(v, on[i]))
			return RT_CHOICE_AUTO;
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		if (!strcasecmp(v, off[i]))
			return RT_CHOICE_OFF;
	if (!strcasecmp(v, "callbacks"))
		return RT_CHOICE_CALLBACKS;
	char shown[GMT_LOG_VALUE_MAX];
	gmt_warn(GMT_OPTION_PREFIX "CUPTI_RUNTIME: invalid value %s (expected auto, callbacks or "
				   "off); using auto",
		 gmt_log_value(shown, v));
	return RT_CHOICE_AUTO;
}

/* Enable each callback id; an id this CUPTI does not know is skipped, not fatal. The wrapped
 * runtime calls' ids stay off when the wrappers can name them ("runtime side" above): the
 * wrappers are bound and a shared libcudart is loaded (a program with only a static cudart
 * has nothing the wrappers see). */
static size_t
enable_all(void)
{
	size_t enabled = 0;
	enum gmt_rt_choice choice = rt_choice();
	bool by_wrappers = choice == RT_CHOICE_AUTO && gmt_wrappers_bound() && gmt_cudart_seen();

	for (size_t i = 0; i < sizeof(wrapped_rows) / sizeof(wrapped_rows[0]); i++) {
		wrapped_api[wrapped_rows[i]] = true;
		wrapped_kind[gmt_api_kind(wrapped_rows[i])] = true;
	}
	for (size_t s = 0; s < GMT_CBID_SETS; s++) {
		const struct gmt_cbid_set *set = &gmt_cbid_sets[s];
		bool runtime = set->domain == CUPTI_CB_DOMAIN_RUNTIME_API;
		if (runtime && choice == RT_CHOICE_OFF)
			continue;
		for (size_t i = 0; i < set->n; i++) {
			if (runtime && by_wrappers && wrapped_runtime_cbid(set->ids[i]))
				continue;
			enabled += cupti.EnableCallback(1, subscriber, set->domain, set->ids[i]) ==
				   CUPTI_SUCCESS;
		}
	}
	atomic_store_explicit(&rt_mode, by_wrappers ? RT_WRAPPERS : RT_CALLBACKS,
			      memory_order_release);
	return enabled;
}

/* For benchmarks (api.c, gmt_bench_cupti()): every id of the subscription off, or on again as
 * at the start; the ids changed, -1 when CUPTI is not active. */
int
gmt_cupti_bench_enable(bool on)
{
	int changed = 0;

	if (gmt_cupti_state() != GMT_CUPTI_ACTIVE)
		return -1;
	if (on)
		return (int)enable_all();
	for (size_t s = 0; s < GMT_CBID_SETS; s++) {
		const struct gmt_cbid_set *set = &gmt_cbid_sets[s];
		for (size_t i = 0; i < set->n; i++)
			changed += cupti.EnableCallback(0, subscriber, set->domain, set->ids[i]) ==
				   CUPTI_SUCCESS;
	}
	return changed;
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
		const char *err = dlerror(), *lib = opts->cupti_lib;
		char value[GMT_LOG_VALUE_MAX], why[GMT_LOG_VALUE_MAX], line[sizeof(reason)];
		size_t n = strlen(lib);

		/* dlerror() names the path it tried, from the environment (the option's value,
		 * LD_LIBRARY_PATH), and what the loader read there: both shown escaped, never raw
		 * on a terminal; the option's value once, quoted */
		if (!err)
			err = "not found";
		if (n && strncmp(err, lib, n) == 0 && err[n] == ':')
			for (err += n + 1; *err == ' ';)
				err++;
		gmt_log_value(why, err);
		if (n)
			snprintf(line, sizeof(line),
				 GMT_OPTION_PREFIX "CUPTI_LIB=%s cannot be loaded (%s)",
				 gmt_log_value(value, lib), why);
		else
			snprintf(line, sizeof(line),
				 "libcupti.so.13, .so.12 or .so.11.8 cannot be loaded (%s)", why);
		unavailable("%s", line);
		gmt_warn(
		    "%s; recording the CUDA runtime API only: static cudart, NVIDIA libraries' own "
		    "allocations and driver-API memory (VMM, expandable segments) are not seen; "
		    "set " GMT_OPTION_PREFIX "CUPTI_LIB to its path",
		    reason);
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
			    holder[0] ? holder
				      : "a profiler such as torch.profiler, Nsight or cuda-gdb");
		gmt_warn(
		    "%s; recording the CUDA runtime API only: static cudart, NVIDIA libraries' own "
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
		if (atomic_load_explicit(&gmt_cupti_phase, memory_order_acquire) !=
		    GMT_CUPTI_STARTING)
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
