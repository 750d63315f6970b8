/* SPDX-License-Identifier: MIT */
/**
 * @file callbacks.c
 * @brief CUPTI callbacks of the simulated runtime and driver (TEST DOUBLE): the sink the CUPTI
 *        double installs, correlation ids, contexts, and start-up (libcuda.so.1,
 *        CUDA_INJECTION64_PATH, CU_INIT_FINISHED).
 *
 * What a cuda* call looks like to a subscriber, as on a GPU:
 *
 *   RUNTIME ENTER  (correlation id N)
 *     DRIVER ENTER (the driver call the runtime makes, correlation id N)
 *     DRIVER EXIT  (functionReturnValue -> CUresult)
 *   RUNTIME EXIT   (functionReturnValue -> cudaError_t)
 *
 * Every ENTER/EXIT pair has a fresh process-wide correlation id, except the one driver call a
 * runtime call makes, which takes the runtime call's id: sim_rt_enter leaves it in the thread's
 * sim_pending_correlation and sim_drv_enter takes it. Whenever code of someone else runs (a
 * callback, InitializeInjection) the pending id is put aside, so API calls made from there get
 * ids of their own and the enclosing call still gets its own back.
 *
 * Nothing here holds a lock while a callback runs: a callback may call the runtime or the
 * driver again. When no sink is installed (no CUPTI double, or no subscriber) an API call costs
 * one relaxed load of sim_sink and builds nothing.
 */
#define _GNU_SOURCE
#include "simcuda-internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(simcuda_cupti_sink) sim_sink;
static atomic_uint sim_next_correlation = 1;
static _Thread_local uint32_t sim_pending_correlation;

void
simcuda_set_cupti_sink(simcuda_cupti_sink sink)
{
	atomic_store_explicit(&sim_sink, sink, memory_order_release);
}

/* Run a callback with the pending correlation id put aside (see the file comment). */
static void
sim_deliver(simcuda_cupti_sink sink,
	    CUpti_CallbackDomain domain,
	    CUpti_CallbackId cbid,
	    const void *data)
{
	uint32_t pending = sim_pending_correlation;

	sim_pending_correlation = 0;
	sink(domain, cbid, data);
	sim_pending_correlation = pending;
}

void
sim_emit_resource(CUpti_CallbackId cbid, CUcontext ctx, void *descriptor)
{
	simcuda_cupti_sink sink = atomic_load_explicit(&sim_sink, memory_order_relaxed);
	CUpti_ResourceData data;

	if (!sink)
		return;
	memset(&data, 0, sizeof(data));
	data.context = ctx;
	data.resourceDescriptor = descriptor;
	sim_deliver(sink, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

// --- contexts -----------------------------------------------------------------------------

/*
 * One primary context per device. The CUcontext handed out is the address of the device's
 * entry: the same pointer for the life of the process, so a context re-created after a reset
 * has the old pointer and a new uid, as on the real driver.
 */
struct sim_ctx {
	atomic_uint uid;   /* contextUid; 0 while there is no context */
	atomic_int ready;  /* CONTEXT_CREATED has been delivered */
	pthread_t creator; /* the thread delivering it (may use the context meanwhile) */
};

static struct sim_ctx sim_ctxs[SIM_MAX_DEVICES];
static uint32_t sim_next_uid = 1;
static pthread_mutex_t sim_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sim_ctx_cond = PTHREAD_COND_INITIALIZER;

CUcontext
sim_ctx_handle(int device)
{
	return (CUcontext)&sim_ctxs[device];
}

int
sim_ctx_device(CUcontext ctx)
{
	uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)sim_ctxs;

	if (p < base || p >= base + sizeof(sim_ctxs) || (p - base) % sizeof(sim_ctxs[0]))
		return -1;
	return (int)((p - base) / sizeof(sim_ctxs[0]));
}

uint32_t
sim_ctx_uid(int device)
{
	return atomic_load_explicit(&sim_ctxs[device].uid, memory_order_acquire);
}

/* Claim the creation of the context, or wait until its creator has announced it. */
static int
sim_ctx_claim(struct sim_ctx *c)
{
	int create = 0;

	pthread_mutex_lock(&sim_ctx_lock);
	if (atomic_load(&c->uid) == 0) {
		atomic_store(&c->uid, sim_next_uid++);
		c->creator = pthread_self();
		create = 1;
	}
	while (!create && !atomic_load(&c->ready) && !pthread_equal(c->creator, pthread_self()))
		pthread_cond_wait(&sim_ctx_cond, &sim_ctx_lock);
	pthread_mutex_unlock(&sim_ctx_lock);
	return create;
}

void
sim_ctx_use(int device)
{
	struct sim_ctx *c = &sim_ctxs[device];

	if (atomic_load_explicit(&c->ready, memory_order_acquire) || !sim_ctx_claim(c))
		return;
	sim_emit_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, sim_ctx_handle(device), NULL);
	pthread_mutex_lock(&sim_ctx_lock);
	atomic_store(&c->ready, 1);
	pthread_cond_broadcast(&sim_ctx_cond);
	pthread_mutex_unlock(&sim_ctx_lock);
}

void
sim_ctx_destroy_starting(int device)
{
	if (sim_ctx_uid(device))
		sim_emit_resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
				  sim_ctx_handle(device), NULL);
}

void
sim_ctx_destroyed(int device)
{
	pthread_mutex_lock(&sim_ctx_lock);
	atomic_store(&sim_ctxs[device].ready, 0);
	atomic_store(&sim_ctxs[device].uid, 0);
	pthread_mutex_unlock(&sim_ctx_lock);
}

int
simcuda_context_info(CUcontext ctx, uint32_t *uid, int *device)
{
	int dev = ctx ? sim_ctx_device(ctx) : sim_current_ordinal();
	uint32_t u;

	if (dev < 0 || dev >= sim_device_count())
		return -1;
	u = sim_ctx_uid(dev);
	if (ctx && u == 0)
		return -1; /* never created, or destroyed by a reset */
	if (uid)
		*uid = u;
	if (device)
		*device = dev;
	return 0;
}

// --- API calls ----------------------------------------------------------------------------

static uint32_t
sim_new_correlation(void)
{
	return atomic_fetch_add_explicit(&sim_next_correlation, 1, memory_order_relaxed);
}

/* Site and context as they are now (a call may create or destroy the context). */
static void
sim_api_site(struct sim_api *a, CUpti_ApiCallbackSite site)
{
	int device = sim_current_ordinal();
	uint32_t uid = sim_ctx_uid(device);

	a->data.callbackSite = site;
	a->data.context = uid ? sim_ctx_handle(device) : NULL;
	a->data.contextUid = uid;
}

static void
sim_api_begin(struct sim_api *a,
	      CUpti_CallbackDomain domain,
	      CUpti_CallbackId cbid,
	      const char *name,
	      const void *params,
	      uint32_t correlation)
{
	memset(&a->data, 0, sizeof(a->data));
	memset(&a->ret, 0, sizeof(a->ret));
	a->domain = domain;
	a->cbid = cbid;
	a->correlation_data = 0;
	a->data.functionName = name;
	a->data.functionParams = params;
	a->data.functionReturnValue = &a->ret;
	a->data.symbolName = NULL;
	a->data.correlationData = &a->correlation_data;
	a->data.correlationId = correlation;
	sim_api_site(a, CUPTI_API_ENTER);
	sim_deliver(a->sink, domain, cbid, &a->data);
}

static void
sim_api_end(struct sim_api *a)
{
	sim_api_site(a, CUPTI_API_EXIT);
	sim_deliver(a->sink, a->domain, a->cbid, &a->data);
}

void
sim_rt_enter(struct sim_api *a, CUpti_CallbackId cbid, const char *name, const void *params)
{
	a->sink = atomic_load_explicit(&sim_sink, memory_order_relaxed);
	if (!a->sink)
		return;
	a->saved_pending = sim_pending_correlation;
	sim_api_begin(a, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, params, sim_new_correlation());
	/* Only now: calls made from the ENTER callback must not take the id. */
	sim_pending_correlation = a->data.correlationId;
}

cudaError_t
sim_rt_exit(struct sim_api *a, cudaError_t err)
{
	if (!a->sink)
		return err;
	sim_pending_correlation = a->saved_pending; /* also when no driver call took it */
	a->ret.rt = err;
	sim_api_end(a);
	return err;
}

void
sim_drv_enter(struct sim_api *a, CUpti_CallbackId cbid, const char *name, const void *params)
{
	uint32_t correlation;

	a->sink = atomic_load_explicit(&sim_sink, memory_order_relaxed);
	if (!a->sink)
		return;
	correlation = sim_pending_correlation;
	sim_pending_correlation = 0;
	if (!correlation)
		correlation = sim_new_correlation();
	sim_api_begin(a, CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, params, correlation);
}

CUresult
sim_drv_exit(struct sim_api *a, CUresult rc)
{
	if (!a->sink)
		return rc;
	a->ret.drv = rc;
	sim_api_end(a);
	return rc;
}

// --- start-up -----------------------------------------------------------------------------

static atomic_int sim_start_state; /* 0 not started, 1 starting, 2 done */
static pthread_mutex_t sim_start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sim_start_cond = PTHREAD_COND_INITIALIZER;
static _Thread_local int sim_starting; /* this thread is running sim_start */
static void *sim_libcuda;

/*
 * Like the real runtime, load the driver: the libcuda.so.1 already in the process, else the
 * one next to this library (so that a program with a build RUNPATH, which does not reach
 * dlopen calls made from here, still finds the double and never a real driver). Quiet when it
 * is missing, unless SIMCUDA_VERBOSE=1: the runtime works without it.
 */
static void
sim_load_driver(void)
{
	char path[PATH_MAX];
	const char *slash, *verbose = getenv("SIMCUDA_VERBOSE");
	Dl_info info;

	sim_libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!sim_libcuda && dladdr((void *)&sim_load_driver, &info) && info.dli_fname &&
	    (slash = strrchr(info.dli_fname, '/')) != NULL &&
	    snprintf(path, sizeof(path), "%.*s/libcuda.so.1", (int)(slash - info.dli_fname),
		     info.dli_fname) < (int)sizeof(path))
		sim_libcuda = dlopen(path, RTLD_NOW);
	if (!sim_libcuda && verbose && strcmp(verbose, "1") == 0)
		sim_warn("the simulated libcuda.so.1 is not next to " SIMCUDA_CUDART_SONAME
			 "; driver calls "
			 "are only reachable through the runtime");
}

/* CUDA_INJECTION64_PATH, as the driver does at cuInit: load it and call InitializeInjection. */
static void
sim_inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	uint32_t pending;
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		sim_warn("CUDA_INJECTION64_PATH: cannot load '%s' (%s); continuing without it",
			 path, dlerror());
		return;
	}
	init = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init) {
		sim_warn("CUDA_INJECTION64_PATH: '%s' has no InitializeInjection; continuing "
			 "without it",
			 path);
		return;
	}
	pending = sim_pending_correlation;
	sim_pending_correlation = 0;
	init();
	sim_pending_correlation = pending;
}

void
sim_start(int ok)
{
	int expected = 0;

	if (atomic_load_explicit(&sim_start_state, memory_order_acquire) == 2 || sim_starting)
		return;
	if (!atomic_compare_exchange_strong(&sim_start_state, &expected, 1)) {
		pthread_mutex_lock(&sim_start_lock);
		while (atomic_load(&sim_start_state) != 2)
			pthread_cond_wait(&sim_start_cond, &sim_start_lock);
		pthread_mutex_unlock(&sim_start_lock);
		return;
	}
	sim_starting = 1;
	sim_load_driver();
	sim_inject();
	if (ok)
		sim_emit_resource(CUPTI_CBID_RESOURCE_CU_INIT_FINISHED, NULL, NULL);
	sim_starting = 0;
	pthread_mutex_lock(&sim_start_lock);
	atomic_store(&sim_start_state, 2);
	pthread_cond_broadcast(&sim_start_cond);
	pthread_mutex_unlock(&sim_start_lock);
}
