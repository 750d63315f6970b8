/* SPDX-License-Identifier: MIT */
/**
 * @file cupti.c
 * @brief A simulated libcupti.so.13: the CUPTI callback API over the simulated runtime and
 *        driver. TEST DOUBLE, not NVIDIA's CUPTI: no activity API, no profiling.
 *
 * Like CUPTI 13.0 it allows one subscriber per process: a second cuptiSubscribe(_v2) gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and cuptiSubscribe_v2 writes the holder's name
 * ("CUPTI for <name>", or "CUPTI for <not provided>") into oldSubscriberName. With
 * SIMCUPTI_OTHER_SUBSCRIBER=<name> in the environment another tool (Nsight, say) is taken to
 * hold CUPTI already: every subscribe fails that way, naming <name>.
 *
 * The callbacks come from libcudart.so.13 (the runtime double), which this library finds with
 * dlopen("libcudart.so.13", RTLD_NOLOAD) when the first subscriber appears (or, when no runtime
 * is loaded yet, by loading the libcuda.so.1 double next to it, which needs the runtime, as
 * the real CUPTI loads the driver). It installs its sink there while a subscriber exists and
 * delivers a callback only for a (domain, cbid) the subscriber enabled.
 *
 * The subscriber is one static record, never freed: a callback racing with cuptiUnsubscribe
 * can never touch freed memory. As CUPTI documents, the subscriber serialises its enable calls.
 *
 * What a callback costs: on the H200 CUPTI takes about 70 ns to deliver one, even to an empty
 * callback (docs/performance.md: floor-cupti against no subscriber), here a function call.
 * SIMCUPTI_CALLBACK_NS spins that long per delivered callback, for benchmarks to see what a
 * tracer saves by taking fewer. SIMCUPTI_STATS=FILE gets, at exit, the callbacks delivered per
 * domain ("delivered runtime N", "delivered driver N", "delivered resource N"), so a test can
 * see which a tracer takes.
 */
#define _GNU_SOURCE
#include "simcuda-cupti.h"

#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIM_MAX_CBID 1024
#define SIM_NAME_PREFIX "CUPTI for "

_Static_assert(CUPTI_DRIVER_TRACE_CBID_SIZE <= SIM_MAX_CBID, "driver cbids");
_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= SIM_MAX_CBID, "runtime cbids");

/* The number of callback ids of each domain (valid ids are 1 .. size - 1). */
static const uint32_t sim_domain_size[CUPTI_CB_DOMAIN_SIZE] = {
    [CUPTI_CB_DOMAIN_DRIVER_API] = CUPTI_DRIVER_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RUNTIME_API] = CUPTI_RUNTIME_TRACE_CBID_SIZE,
    [CUPTI_CB_DOMAIN_RESOURCE] = CUPTI_CBID_RESOURCE_SIZE,
    [CUPTI_CB_DOMAIN_SYNCHRONIZE] = CUPTI_CBID_SYNCHRONIZE_SIZE,
    [CUPTI_CB_DOMAIN_NVTX] = CUPTI_CBID_NVTX_SIZE,
    [CUPTI_CB_DOMAIN_STATE] = CUPTI_CBID_STATE_SIZE,
};

/* The opaque type of CUpti_SubscriberHandle, defined here. */
struct CUpti_Subscriber_st {
	_Atomic(CUpti_CallbackFunc) callback;
	_Atomic(void *) userdata;
	char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN]; /* "CUPTI for <name>" */
	atomic_uchar enabled[CUPTI_CB_DOMAIN_SIZE][SIM_MAX_CBID];
};

static struct CUpti_Subscriber_st sim_subscriber;
static atomic_int sim_subscribed;
static pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER; /* subscribe, unsubscribe */
static _Thread_local CUptiResult sim_last_error = CUPTI_SUCCESS;

/* The runtime double's hook, found at the first subscribe or context query. */
static struct {
	void (*set_sink)(simcuda_cupti_sink sink);
	int (*context_info)(CUcontext ctx, uint32_t *uid, int *device);
} sim_rt;
static atomic_int sim_rt_found; /* sim_rt is filled in (set once, under sim_lock) */

/* Record a failure as the thread's last error (cuptiGetLastError returns and clears it). */
static CUptiResult
sim_result(CUptiResult rc)
{
	if (rc != CUPTI_SUCCESS)
		sim_last_error = rc;
	return rc;
}

// --- finding the runtime double -----------------------------------------------------------

/* The libcuda.so.1 double next to this library; it needs (and so loads) libcudart.so.13. */
static void
sim_load_driver_next_to_me(void)
{
	char path[PATH_MAX];
	const char *slash;
	Dl_info info;

	if (!dladdr((void *)&sim_load_driver_next_to_me, &info) || !info.dli_fname)
		return;
	slash = strrchr(info.dli_fname, '/');
	if (slash && snprintf(path, sizeof(path), "%.*s/libcuda.so.1",
			      (int)(slash - info.dli_fname), info.dli_fname) < (int)sizeof(path))
		dlopen(path, RTLD_NOW);
}

/* Resolve the hook once. sim_lock held. Returns 0, or -1 when no runtime double is reachable. */
static int
sim_connect(void)
{
	void *h;

	if (atomic_load(&sim_rt_found))
		return 0;
	h = dlopen(SIMCUDA_CUDART_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		sim_load_driver_next_to_me();
		h = dlopen(SIMCUDA_CUDART_SONAME, RTLD_NOW | RTLD_NOLOAD);
	}
	if (!h)
		return -1;
	sim_rt.context_info =
	    (int (*)(CUcontext, uint32_t *, int *))dlsym(h, "simcuda_context_info");
	sim_rt.set_sink = (void (*)(simcuda_cupti_sink))dlsym(h, "simcuda_set_cupti_sink");
	if (!sim_rt.set_sink || !sim_rt.context_info)
		return -1;
	atomic_store_explicit(&sim_rt_found, 1, memory_order_release);
	return 0;
}

/* sim_connect for the queries, which callbacks make: no lock once the hook is known. */
static int
sim_connected(void)
{
	int rc;

	if (atomic_load_explicit(&sim_rt_found, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&sim_lock);
	rc = sim_connect();
	pthread_mutex_unlock(&sim_lock);
	return rc;
}

// --- delivery -----------------------------------------------------------------------------

static _Atomic unsigned long long sim_delivered[CUPTI_CB_DOMAIN_SIZE];
static _Atomic int sim_cost_read;
static unsigned long long sim_callback_ns;

static void
sim_write_stats(void)
{
	const char *path = getenv("SIMCUPTI_STATS");
	FILE *f = path && *path ? fopen(path, "w") : NULL;

	if (!f)
		return;
	fprintf(f, "delivered runtime %llu\ndelivered driver %llu\ndelivered resource %llu\n",
		(unsigned long long)atomic_load(&sim_delivered[CUPTI_CB_DOMAIN_RUNTIME_API]),
		(unsigned long long)atomic_load(&sim_delivered[CUPTI_CB_DOMAIN_DRIVER_API]),
		(unsigned long long)atomic_load(&sim_delivered[CUPTI_CB_DOMAIN_RESOURCE]));
	fclose(f);
}

/* The environment's cost and stats file, once, at the first delivery (a callback racing with
 * it may go uncharged). */
static void
sim_read_cost(void)
{
	const char *s = getenv("SIMCUPTI_CALLBACK_NS");
	char *end;

	if (s && *s) {
		unsigned long long v = strtoull(s, &end, 10);
		if (*end == '\0' && v <= 1000000000ull)
			sim_callback_ns = v;
		else
			fprintf(stderr,
				"simcupti: ignoring SIMCUPTI_CALLBACK_NS='%s': not an integer "
				"of at most 1e9; using 0\n",
				s);
	}
	const char *stats = getenv("SIMCUPTI_STATS");
	if (stats && *stats)
		atexit(sim_write_stats);
}

static void
sim_callback_cost(void)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((unsigned long long)(t.tv_sec - t0.tv_sec) * 1000000000ull +
		     (unsigned long long)(t.tv_nsec - t0.tv_nsec) <
		 sim_callback_ns);
}

/* The sink: on the API thread, outside the runtime's locks. */
static void
sim_deliver(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
	CUpti_CallbackFunc callback;

	if ((unsigned)domain >= CUPTI_CB_DOMAIN_SIZE || cbid >= SIM_MAX_CBID ||
	    !atomic_load_explicit(&sim_subscribed, memory_order_acquire) ||
	    !atomic_load_explicit(&sim_subscriber.enabled[domain][cbid], memory_order_relaxed))
		return;
	callback = atomic_load_explicit(&sim_subscriber.callback, memory_order_acquire);
	if (!callback)
		return;
	if (!atomic_exchange_explicit(&sim_cost_read, 1, memory_order_acq_rel))
		sim_read_cost();
	atomic_fetch_add_explicit(&sim_delivered[domain], 1, memory_order_relaxed);
	if (sim_callback_ns)
		sim_callback_cost();
	callback(atomic_load_explicit(&sim_subscriber.userdata, memory_order_relaxed), domain, cbid,
		 cbdata);
}

// --- subscribers --------------------------------------------------------------------------

static void
sim_copy_name(char *dst, size_t size, const char *name)
{
	if (dst && size > 0)
		snprintf(dst, size, "%s", name);
}

static void
sim_enable_all(uint32_t enable)
{
	int d;
	uint32_t c;

	for (d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
		for (c = 1; c < sim_domain_size[d]; c++)
			atomic_store_explicit(&sim_subscriber.enabled[d][c], enable ? 1 : 0,
					      memory_order_relaxed);
}

/* Take the one subscriber slot. sim_lock held. */
static CUptiResult
sim_take_slot(CUpti_CallbackFunc callback, void *userdata, const char *name)
{
	if (sim_connect() < 0)
		return CUPTI_ERROR_UNKNOWN; /* what the real CUPTI says when it finds no driver */
	sim_enable_all(0);
	snprintf(sim_subscriber.name, sizeof(sim_subscriber.name), SIM_NAME_PREFIX "%.*s",
		 CUPTI_SUBSCRIBER_NAME_MAX_LEN, name ? name : "<not provided>");
	atomic_store(&sim_subscriber.callback, callback);
	atomic_store(&sim_subscriber.userdata, userdata);
	atomic_store(&sim_subscribed, 1);
	sim_rt.set_sink(sim_deliver);
	return CUPTI_SUCCESS;
}

static CUptiResult
sim_subscribe(CUpti_SubscriberHandle *subscriber,
	      CUpti_CallbackFunc callback,
	      void *userdata,
	      const char *name,
	      char *old_name,
	      size_t old_size)
{
	const char *other = getenv("SIMCUPTI_OTHER_SUBSCRIBER");
	CUptiResult rc;

	if (!subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (other && *other) {
		sim_copy_name(old_name, old_size, other);
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&sim_lock);
	if (atomic_load(&sim_subscribed)) {
		sim_copy_name(old_name, old_size, sim_subscriber.name);
		rc = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	} else {
		rc = sim_take_slot(callback, userdata, name);
		if (rc == CUPTI_SUCCESS)
			*subscriber = &sim_subscriber;
	}
	pthread_mutex_unlock(&sim_lock);
	return rc;
}

CUptiResult CUPTIAPI
cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata)
{
	return sim_result(sim_subscribe(subscriber, callback, userdata, NULL, NULL, 0));
}

CUptiResult CUPTIAPI
cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
		  CUpti_CallbackFunc callback,
		  void *userdata,
		  CUpti_SubscriberParams *pParams)
{
	if (!pParams)
		return sim_result(sim_subscribe(subscriber, callback, userdata, NULL, NULL, 0));
	if (pParams->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	return sim_result(sim_subscribe(subscriber, callback, userdata, pParams->subscriberName,
					pParams->oldSubscriberName, pParams->oldSubscriberSize));
}

static int
sim_is_subscriber(CUpti_SubscriberHandle subscriber)
{
	return subscriber == &sim_subscriber && atomic_load(&sim_subscribed);
}

/* Give the slot up. sim_lock held. */
static void
sim_release_slot(void)
{
	atomic_store(&sim_subscribed, 0);
	sim_rt.set_sink(NULL);
	sim_enable_all(0);
	atomic_store(&sim_subscriber.callback, NULL);
	atomic_store(&sim_subscriber.userdata, NULL);
	sim_subscriber.name[0] = '\0';
}

CUptiResult CUPTIAPI
cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	CUptiResult rc = CUPTI_ERROR_INVALID_PARAMETER;

	pthread_mutex_lock(&sim_lock);
	if (sim_is_subscriber(subscriber)) {
		sim_release_slot();
		rc = CUPTI_SUCCESS;
	}
	pthread_mutex_unlock(&sim_lock);
	return sim_result(rc);
}

/* Detach: the subscriber, if any, is dropped; a later subscribe starts afresh. */
CUptiResult CUPTIAPI
cuptiFinalize(void)
{
	pthread_mutex_lock(&sim_lock);
	if (atomic_load(&sim_subscribed))
		sim_release_slot();
	pthread_mutex_unlock(&sim_lock);
	return CUPTI_SUCCESS;
}

static int
sim_valid_domain(CUpti_CallbackDomain domain)
{
	return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE;
}

static int
sim_valid_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	return sim_valid_domain(domain) && cbid > 0 && cbid < sim_domain_size[domain];
}

CUptiResult CUPTIAPI
cuptiEnableCallback(uint32_t enable,
		    CUpti_SubscriberHandle subscriber,
		    CUpti_CallbackDomain domain,
		    CUpti_CallbackId cbid)
{
	if (!sim_is_subscriber(subscriber) || !sim_valid_cbid(domain, cbid))
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	atomic_store_explicit(&sim_subscriber.enabled[domain][cbid], enable ? 1 : 0,
			      memory_order_relaxed);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain)
{
	uint32_t c;

	if (!sim_is_subscriber(subscriber) || !sim_valid_domain(domain))
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	for (c = 1; c < sim_domain_size[domain]; c++)
		atomic_store_explicit(&sim_subscriber.enabled[domain][c], enable ? 1 : 0,
				      memory_order_relaxed);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
	if (!sim_is_subscriber(subscriber))
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	sim_enable_all(enable);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetCallbackState(uint32_t *enable,
		      CUpti_SubscriberHandle subscriber,
		      CUpti_CallbackDomain domain,
		      CUpti_CallbackId cbid)
{
	if (!enable || !sim_is_subscriber(subscriber) || !sim_valid_cbid(domain, cbid))
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	*enable = atomic_load_explicit(&sim_subscriber.enabled[domain][cbid], memory_order_relaxed);
	return CUPTI_SUCCESS;
}

// --- contexts, versions, errors -----------------------------------------------------------

CUptiResult CUPTIAPI
cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
	if (!contextId)
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	if (sim_connected() < 0)
		return sim_result(CUPTI_ERROR_NOT_INITIALIZED);
	if (!context || sim_rt.context_info(context, contextId, NULL) < 0)
		return sim_result(CUPTI_ERROR_INVALID_CONTEXT);
	return CUPTI_SUCCESS;
}

/* context NULL: the device of the calling thread's current context. */
CUptiResult CUPTIAPI
cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
	int device;

	if (!deviceId)
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	if (sim_connected() < 0)
		return sim_result(CUPTI_ERROR_NOT_INITIALIZED);
	if (sim_rt.context_info(context, NULL, &device) < 0)
		return sim_result(CUPTI_ERROR_INVALID_DEVICE);
	*deviceId = (uint32_t)device;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetLastError(void)
{
	CUptiResult rc = sim_last_error;

	sim_last_error = CUPTI_SUCCESS;
	return rc;
}

#define SIM_RESULT_NAME(code) [code] = #code

/* The names CUPTI 13.0 gives; 36 and 37 have none there either (INVALID_PARAMETER). */
static const char *const sim_result_names[] = {
    SIM_RESULT_NAME(CUPTI_SUCCESS),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_PARAMETER),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_DEVICE),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_CONTEXT),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_EVENT_ID),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_EVENT_NAME),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_OPERATION),
    SIM_RESULT_NAME(CUPTI_ERROR_OUT_OF_MEMORY),
    SIM_RESULT_NAME(CUPTI_ERROR_HARDWARE),
    SIM_RESULT_NAME(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT),
    SIM_RESULT_NAME(CUPTI_ERROR_API_NOT_IMPLEMENTED),
    SIM_RESULT_NAME(CUPTI_ERROR_MAX_LIMIT_REACHED),
    SIM_RESULT_NAME(CUPTI_ERROR_NOT_READY),
    SIM_RESULT_NAME(CUPTI_ERROR_NOT_COMPATIBLE),
    SIM_RESULT_NAME(CUPTI_ERROR_NOT_INITIALIZED),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_METRIC_ID),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_METRIC_NAME),
    SIM_RESULT_NAME(CUPTI_ERROR_QUEUE_EMPTY),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_HANDLE),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_STREAM),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_KIND),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_EVENT_VALUE),
    SIM_RESULT_NAME(CUPTI_ERROR_DISABLED),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_MODULE),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_METRIC_VALUE),
    SIM_RESULT_NAME(CUPTI_ERROR_HARDWARE_BUSY),
    SIM_RESULT_NAME(CUPTI_ERROR_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE),
    SIM_RESULT_NAME(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES),
    SIM_RESULT_NAME(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS),
    SIM_RESULT_NAME(CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE),
    SIM_RESULT_NAME(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
    SIM_RESULT_NAME(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES),
    SIM_RESULT_NAME(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED),
    SIM_RESULT_NAME(CUPTI_ERROR_INVALID_CHIP_NAME),
};

CUptiResult CUPTIAPI
cuptiGetResultString(CUptiResult result, const char **str)
{
	const char *name = NULL;

	if (result == CUPTI_ERROR_UNKNOWN)
		name = "CUPTI_ERROR_UNKNOWN";
	else if ((unsigned)result < sizeof(sim_result_names) / sizeof(sim_result_names[0]))
		name = sim_result_names[result];
	if (!str || !name)
		return sim_result(CUPTI_ERROR_INVALID_PARAMETER);
	*str = name;
	return CUPTI_SUCCESS;
}
