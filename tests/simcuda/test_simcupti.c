/* SPDX-License-Identifier: MIT */
/**
 * @file test_simcupti.c
 * @brief Unit test of the CUPTI and driver TEST DOUBLES: the exact callback sequences a
 *        subscriber sees, as the real stack produces them.
 *
 * Strategy: one recording subscriber takes every callback of the RUNTIME_API, DRIVER_API and
 * RESOURCE domains into a table (domain, cbid, site, correlation id, context, the parameters
 * that matter, the result at EXIT). Each case makes a few calls, compares the table with the
 * exact sequence expected, then checks the details: a runtime call and its driver call share a
 * correlation id, every other pair has a fresh one, correlationData survives from ENTER to
 * EXIT, outputs are readable at EXIT.
 *
 * Modes (argv[1]), each a separate meson test with its own environment:
 *   (none)   the main run: SIMCUDA_DEVICES=1 SIMCUDA_MEM_BYTES=64M
 *   other    SIMCUPTI_OTHER_SUBSCRIBER="Nsight Systems": every subscribe gets error 39
 *   inject   CUDA_INJECTION64_PATH=<test_inject library>: its InitializeInjection subscribes
 *   inject-missing  CUDA_INJECTION64_PATH names no library: one warning, CUDA keeps working
 *   inject-nosym    CUDA_INJECTION64_PATH names a library without InitializeInjection: the same
 */
#define _GNU_SOURCE
#include "simcuda.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			dump();                                                                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define OK(call) CHECK((call) == 0)

// --- the recording subscriber -------------------------------------------------------------

#define SITE_RESOURCE (-1)

struct rec {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	int site; /* CUPTI_API_ENTER, CUPTI_API_EXIT, SITE_RESOURCE */
	const char *name;
	uint32_t corr;
	uint64_t *corr_data;
	uint64_t corr_value; /* *correlationData at EXIT */
	CUcontext ctx;
	uint32_t uid;	  /* contextUid, or cuptiGetContextId for a resource callback */
	int ret;	  /* *functionReturnValue at EXIT */
	uint64_t in, out; /* the parameter that names the memory; the output at EXIT */
	int has_params;
	pthread_t thread;
};

#define MAX_RECS 512

static struct rec recs[MAX_RECS];
static int n_recs;
static CUpti_SubscriberHandle sub;
static void (*hook)(const struct rec *r); /* a test's extra action inside a callback */

static void
dump(void)
{
	int i;

	for (i = 0; i < n_recs; i++)
		fprintf(stderr,
			"  [%d] domain %d cbid %u site %d %s corr %u ctx %p uid %u ret %d "
			"in 0x%llx out 0x%llx\n",
			i, recs[i].domain, recs[i].cbid, recs[i].site,
			recs[i].name ? recs[i].name : "-", recs[i].corr, (void *)recs[i].ctx,
			recs[i].uid, recs[i].ret, (unsigned long long)recs[i].in,
			(unsigned long long)recs[i].out);
}

/* The parameter that names the memory of the calls the tests look at (in), and the output. */
static void
runtime_values(CUpti_CallbackId cbid, const void *p, int exiting, struct rec *r)
{
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
		const cudaMalloc_v3020_params *q = p;

		r->in = q->size;
		r->out = exiting && q->devPtr ? (uint64_t)(uintptr_t)*q->devPtr : 0;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
		r->in = (uint64_t)(uintptr_t)((const cudaFree_v3020_params *)p)->devPtr;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020: {
		const cudaMallocAsync_v11020_params *q = p;

		r->in = q->size;
		r->out = exiting ? (uint64_t)(uintptr_t)*q->devPtr : 0;
		break;
	}
	default: break;
	}
}

static void
driver_values(CUpti_CallbackId cbid, const void *p, int exiting, struct rec *r)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		r->in = ((const cuMemAlloc_v2_params *)p)->bytesize;
		r->out = exiting ? *((const cuMemAlloc_v2_params *)p)->dptr : 0;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
		r->in = ((const cuMemFree_v2_params *)p)->dptr;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
		r->in = ((const cuMemAllocAsync_params *)p)->bytesize;
		r->out = exiting ? *((const cuMemAllocAsync_params *)p)->dptr : 0;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
		r->in = ((const cuMemFreeAsync_params *)p)->dptr;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
		r->in = ((const cuMemAllocFromPoolAsync_params *)p)->bytesize;
		r->out = exiting ? *((const cuMemAllocFromPoolAsync_params *)p)->dptr : 0;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve:
		r->in = ((const cuMemAddressReserve_params *)p)->size;
		r->out = exiting ? *((const cuMemAddressReserve_params *)p)->ptr : 0;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
		r->in = ((const cuMemCreate_params *)p)->size;
		r->out = exiting ? *((const cuMemCreate_params *)p)->handle : 0;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
		r->in = ((const cuMemMap_params *)p)->ptr;
		r->out = ((const cuMemMap_params *)p)->handle;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
		r->in = ((const cuMemUnmap_params *)p)->ptr;
		r->out = ((const cuMemUnmap_params *)p)->size;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
		r->in = ((const cuMemRelease_params *)p)->handle;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
		r->in = (uint64_t)((const cuDevicePrimaryCtxReset_v2_params *)p)->dev;
		break;
	default: break;
	}
}

static void
record_api(struct rec *r, CUpti_CallbackDomain domain, const CUpti_CallbackData *d)
{
	int exiting = d->callbackSite == CUPTI_API_EXIT;

	r->site = d->callbackSite;
	r->name = d->functionName;
	r->corr = d->correlationId;
	r->corr_data = d->correlationData;
	r->ctx = d->context;
	r->uid = d->contextUid;
	r->has_params = d->functionParams != NULL;
	CHECK(d->symbolName == NULL);
	if (exiting) {
		r->ret = *(const int *)d->functionReturnValue;
		r->corr_value = *d->correlationData;
	} else {
		*d->correlationData = 0x5eed00000000ull | d->correlationId;
	}
	if (d->functionParams && domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_values(r->cbid, d->functionParams, exiting, r);
	else if (d->functionParams)
		driver_values(r->cbid, d->functionParams, exiting, r);
}

static void
record_resource(struct rec *r, const CUpti_ResourceData *d)
{
	r->site = SITE_RESOURCE;
	r->ctx = d->context;
	if (d->context && cuptiGetContextId(d->context, &r->uid) != CUPTI_SUCCESS)
		r->uid = 0;
	if (r->cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)
		r->in = (uint64_t)(uintptr_t)((const CUpti_GraphData *)d->resourceDescriptor)->node;
}

static atomic_int stress_mode;
static void stress_check(CUpti_CallbackDomain domain, const CUpti_CallbackData *d);

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	struct rec *r;

	if (atomic_load(&stress_mode)) {
		if (domain != CUPTI_CB_DOMAIN_RESOURCE)
			stress_check(domain, data);
		return;
	}
	CHECK(userdata == &recs);
	CHECK(n_recs < MAX_RECS);
	r = &recs[n_recs++];
	memset(r, 0, sizeof(*r));
	r->domain = domain;
	r->cbid = cbid;
	r->thread = pthread_self();
	if (domain == CUPTI_CB_DOMAIN_RESOURCE)
		record_resource(r, data);
	else
		record_api(r, domain, data);
	if (hook)
		hook(r);
}

// --- expected sequences -------------------------------------------------------------------

struct exp {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	int site;
};

#define RT_IN(cb)                                                                                  \
	{                                                                                          \
		CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##cb, CUPTI_API_ENTER        \
	}
#define RT_OUT(cb)                                                                                 \
	{                                                                                          \
		CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##cb, CUPTI_API_EXIT         \
	}
#define DRV_IN(cb)                                                                                 \
	{                                                                                          \
		CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##cb, CUPTI_API_ENTER          \
	}
#define DRV_OUT(cb)                                                                                \
	{                                                                                          \
		CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##cb, CUPTI_API_EXIT           \
	}
#define DRV(cb) DRV_IN(cb), DRV_OUT(cb)
#define RES(cb)                                                                                    \
	{                                                                                          \
		CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_##cb, SITE_RESOURCE                  \
	}
/* A runtime call around the driver call it maps to. */
#define PAIR(rt, drv) RT_IN(rt), DRV(drv), RT_OUT(rt)

#define EXPECT(...)                                                                                \
	do {                                                                                       \
		static const struct exp want_[] = {__VA_ARGS__};                                   \
		expect_seq(want_, sizeof(want_) / sizeof(want_[0]), __LINE__);                     \
	} while (0)

static void
expect_seq(const struct exp *want, int n, int line)
{
	int i, ok = n_recs == n;

	for (i = 0; ok && i < n; i++)
		ok = recs[i].domain == want[i].domain && recs[i].cbid == want[i].cbid &&
		     recs[i].site == want[i].site;
	if (ok)
		return;
	fprintf(stderr, "%s:%d: callback sequence differs; expected %d:\n", __FILE__, line, n);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  [%d] domain %d cbid %u site %d\n", i, want[i].domain,
			want[i].cbid, want[i].site);
	fprintf(stderr, "got %d:\n", n_recs);
	dump();
	exit(1);
}

static uint32_t last_corr;

/* An ENTER/EXIT pair at i, i + 1: one fresh correlation id, correlationData kept. */
static void
check_pair(int i)
{
	CHECK(recs[i].site == CUPTI_API_ENTER && recs[i + 1].site == CUPTI_API_EXIT);
	CHECK(recs[i].corr == recs[i + 1].corr && recs[i].corr != 0);
	CHECK(recs[i].corr_data == recs[i + 1].corr_data && recs[i].corr_data != NULL);
	CHECK(recs[i + 1].corr_value == (0x5eed00000000ull | recs[i].corr));
	CHECK(strcmp(recs[i].name, recs[i + 1].name) == 0);
	CHECK(pthread_equal(recs[i].thread, pthread_self()));
}

/* A runtime call at i with its driver call inside: one correlation id, two correlationData. */
static void
check_sandwich(int i, const char *rt_name, const char *drv_name)
{
	check_pair(i + 1);
	CHECK(recs[i].corr == recs[i + 3].corr && recs[i].corr == recs[i + 1].corr);
	CHECK(recs[i].corr_data == recs[i + 3].corr_data);
	CHECK(recs[i].corr_data != recs[i + 1].corr_data);
	CHECK(recs[i + 3].corr_value == (0x5eed00000000ull | recs[i].corr));
	CHECK(strcmp(recs[i].name, rt_name) == 0 && strcmp(recs[i + 1].name, drv_name) == 0);
	CHECK(recs[i].corr > last_corr);
	last_corr = recs[i].corr;
}

/* Every driver-only pair from i on: fresh, increasing correlation ids. */
static void
check_driver_pairs(int i, int n)
{
	for (; n > 0; n--, i += 2) {
		check_pair(i);
		CHECK(recs[i].domain == CUPTI_CB_DOMAIN_DRIVER_API && recs[i].corr > last_corr);
		last_corr = recs[i].corr;
	}
}

static void
reset_recs(void)
{
	n_recs = 0;
}

static size_t
used_bytes(void)
{
	size_t free_b, total_b;

	OK(cudaMemGetInfo(&free_b, &total_b));
	return total_b - free_b;
}

// --- cases --------------------------------------------------------------------------------

static void
subscribe_all(void)
{
	CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
				    .subscriberName = "simcupti-test"};

	OK(cuptiSubscribe_v2(&sub, on_callback, &recs, &p));
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
}

/* Before the first CUDA call: the driver is not initialised; versions need no init. */
static void
test_before_init(void)
{
	uint32_t v = 0;
	size_t f, t;
	int dv = 0;

	OK(cuptiGetVersion(&v));
	CHECK(v == 130001 && v == CUPTI_API_VERSION);
	CHECK(cuMemGetInfo(&f, &t) == CUDA_ERROR_NOT_INITIALIZED);
	OK(cuDriverGetVersion(&dv));
	CHECK(dv == 13000);
}

/* cudaFree(NULL) as the first call: init, the context, and cuMemFree_v2(0). */
static void
test_first_call(void)
{
	uint32_t uid = 0, dev = 9;

	reset_recs();
	OK(cudaFree(NULL));
	EXPECT(RT_IN(cudaFree_v3020), RES(CU_INIT_FINISHED), RES(CONTEXT_CREATED),
	       DRV(cuMemFree_v2), RT_OUT(cudaFree_v3020));
	CHECK(recs[0].ctx == NULL && recs[0].uid == 0); /* no context yet at ENTER */
	CHECK(recs[1].ctx == NULL);
	CHECK(recs[2].ctx != NULL && recs[2].uid == 1);
	CHECK(recs[3].ctx == recs[2].ctx && recs[3].uid == 1 && recs[5].ctx == recs[2].ctx);
	CHECK(recs[3].in == 0 && recs[4].ret == CUDA_SUCCESS && recs[5].ret == cudaSuccess);
	CHECK(recs[0].corr == recs[3].corr && recs[0].corr == recs[5].corr);
	CHECK(recs[0].in == 0);
	OK(cuptiGetContextId(recs[2].ctx, &uid));
	OK(cuptiGetDeviceId(recs[2].ctx, &dev));
	CHECK(uid == 1 && dev == 0);
	OK(cuptiGetDeviceId(NULL, &dev));
	CHECK(dev == 0);
	last_corr = recs[0].corr;
}

static void
test_malloc_free_oom(void)
{
	void *p = NULL, *q = (void *)1;

	reset_recs();
	OK(cudaMalloc(&p, 1000));
	EXPECT(PAIR(cudaMalloc_v3020, cuMemAlloc_v2));
	check_sandwich(0, "cudaMalloc", "cuMemAlloc_v2");
	CHECK(recs[0].in == 1000 && recs[1].in == 1000);
	CHECK(recs[2].out == (uint64_t)(uintptr_t)p && recs[3].out == (uint64_t)(uintptr_t)p);
	CHECK(recs[2].ret == CUDA_SUCCESS && recs[3].ret == cudaSuccess);
	CHECK(recs[0].has_params && recs[0].uid == 1);

	/* 64 MiB devices: 128 MiB fails in the driver, and both EXITs say so. */
	reset_recs();
	CHECK(cudaMalloc(&q, 128 * MiB) == cudaErrorMemoryAllocation);
	CHECK(q == NULL);
	EXPECT(PAIR(cudaMalloc_v3020, cuMemAlloc_v2));
	check_sandwich(0, "cudaMalloc", "cuMemAlloc_v2");
	CHECK(recs[2].ret == CUDA_ERROR_OUT_OF_MEMORY && recs[3].ret == cudaErrorMemoryAllocation);
	CHECK(recs[3].out == 0);
	CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);

	/* Answered by the runtime alone: no driver call. */
	reset_recs();
	OK(cudaMalloc(&q, 0));
	CHECK(cudaMalloc(NULL, 16) == cudaErrorInvalidValue);
	EXPECT(RT_IN(cudaMalloc_v3020), RT_OUT(cudaMalloc_v3020), RT_IN(cudaMalloc_v3020),
	       RT_OUT(cudaMalloc_v3020));
	check_pair(0);
	check_pair(2);
	CHECK(recs[3].ret == cudaErrorInvalidValue);
	last_corr = recs[2].corr;
	cudaGetLastError();

	reset_recs();
	OK(cudaFree(p));
	CHECK(cudaFree(p) == cudaErrorInvalidValue);
	EXPECT(PAIR(cudaFree_v3020, cuMemFree_v2), PAIR(cudaFree_v3020, cuMemFree_v2));
	check_sandwich(0, "cudaFree", "cuMemFree_v2");
	check_sandwich(4, "cudaFree", "cuMemFree_v2");
	CHECK(recs[1].in == (uint64_t)(uintptr_t)p && recs[6].ret == CUDA_ERROR_INVALID_VALUE);
	cudaGetLastError();
}

static void
test_pools(void)
{
	struct cudaMemPoolProps props;
	cudaMemPool_t def, pool;
	cudaStream_t s;
	void *a, *b;
	uint64_t reserved = 0;

	reset_recs();
	OK(cudaDeviceGetDefaultMemPool(&def, 0));
	OK(cudaMallocAsync(&a, 1000, 0));
	OK(cudaFreeAsync(a, 0));
	OK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReservedMemCurrent, &reserved));
	OK(cudaMemPoolTrimTo(def, 0));
	EXPECT(PAIR(cudaDeviceGetDefaultMemPool_v11020, cuDeviceGetDefaultMemPool),
	       PAIR(cudaMallocAsync_v11020, cuMemAllocAsync),
	       PAIR(cudaFreeAsync_v11020, cuMemFreeAsync),
	       PAIR(cudaMemPoolGetAttribute_v11020, cuMemPoolGetAttribute),
	       PAIR(cudaMemPoolTrimTo_v11020, cuMemPoolTrimTo));
	check_sandwich(0, "cudaDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool");
	check_sandwich(4, "cudaMallocAsync", "cuMemAllocAsync");
	check_sandwich(8, "cudaFreeAsync", "cuMemFreeAsync");
	check_sandwich(12, "cudaMemPoolGetAttribute", "cuMemPoolGetAttribute");
	check_sandwich(16, "cudaMemPoolTrimTo", "cuMemPoolTrimTo");
	CHECK(recs[4].in == 1000 && recs[6].out == (uint64_t)(uintptr_t)a);
	CHECK(recs[7].out == (uint64_t)(uintptr_t)a && recs[9].in == (uint64_t)(uintptr_t)a);
	CHECK(reserved == 2 * MiB);

	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	OK(cudaStreamCreate(&s));
	reset_recs();
	OK(cudaMemPoolCreate(&pool, &props));
	OK(cudaMallocFromPoolAsync(&b, 4096, pool, s));
	OK(cudaFreeAsync(b, s));
	OK(cudaMemPoolDestroy(pool));
	EXPECT(PAIR(cudaMemPoolCreate_v11020, cuMemPoolCreate),
	       PAIR(cudaMallocFromPoolAsync_v11020, cuMemAllocFromPoolAsync),
	       PAIR(cudaFreeAsync_v11020, cuMemFreeAsync),
	       PAIR(cudaMemPoolDestroy_v11020, cuMemPoolDestroy));
	check_sandwich(4, "cudaMallocFromPoolAsync", "cuMemAllocFromPoolAsync");
	CHECK(recs[6].out == (uint64_t)(uintptr_t)b);
	OK(cudaStreamDestroy(s));
	CHECK(used_bytes() == 0);
}

/* VMM through the driver double: only DRIVER callbacks, each with its own correlation id. */
static void
test_vmm(void)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUmemGenericAllocationHandle h, h1, again;
	CUdeviceptr va, base;
	size_t gran = 0, size = 0, used0 = used_bytes();
	unsigned char byte = 0;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

	reset_recs();
	OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	CHECK(gran == 2 * MiB);
	OK(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
	CHECK(used_bytes() == used0); /* address space only */
	reset_recs();
	OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
	OK(cuMemMap(va, 4 * MiB, 0, h, 0));
	OK(cuMemSetAccess(va, 4 * MiB, &access, 1));
	OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 100)));
	OK(cuMemRelease(again));
	OK(cuMemUnmap(va, 4 * MiB));
	OK(cuMemRelease(h));
	EXPECT(DRV(cuMemCreate), DRV(cuMemMap), DRV(cuMemSetAccess),
	       DRV(cuMemRetainAllocationHandle), DRV(cuMemRelease), DRV(cuMemUnmap),
	       DRV(cuMemRelease));
	check_driver_pairs(0, 7);
	CHECK(recs[0].in == 4 * MiB && recs[1].out == h && recs[2].in == va && recs[3].out == h);
	CHECK(recs[10].in == va && recs[11].out == 4 * MiB && recs[12].in == h);
	CHECK(again == h);
	CHECK(used_bytes() == used0);

	/* Physical memory is used capacity; a mapping with access is touchable memory. */
	OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
	CHECK(used_bytes() == used0 + 4 * MiB);
	OK(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h, 0));
	OK(cuMemSetAccess(va + 2 * MiB, 4 * MiB, &access, 1));
	OK(cudaMemset((void *)(uintptr_t)(va + 3 * MiB), 0x5a, MiB));
	OK(cudaMemcpy(&byte, (void *)(uintptr_t)(va + 4 * MiB - 1), 1, cudaMemcpyDeviceToHost));
	CHECK(byte == 0x5a);
	OK(cuMemGetAddressRange(&base, &size, va + 5 * MiB));
	CHECK(base == va + 2 * MiB && size == 4 * MiB);

	/* The handle lives on while mapped, after its last release. */
	OK(cuMemRelease(h));
	CHECK(cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE);
	CHECK(used_bytes() == used0 + 4 * MiB);
	OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 2 * MiB)));
	CHECK(again == h);
	OK(cuMemRelease(again));

	/* One unmap over two mappings, the second of another handle. */
	OK(cuMemCreate(&h1, 2 * MiB, &prop, 0));
	OK(cuMemMap(va, 2 * MiB, 0, h1, 0));
	CHECK(cuMemUnmap(va, 3 * MiB) == CUDA_ERROR_INVALID_VALUE); /* ends inside a mapping */
	CHECK(cuMemAddressFree(va, 8 * MiB) == CUDA_ERROR_INVALID_VALUE); /* still mapped */
	OK(cuMemUnmap(va, 6 * MiB));
	CHECK(used_bytes() == used0 + 2 * MiB); /* h is gone, h1 still held */
	OK(cuMemRelease(h1));
	CHECK(used_bytes() == used0);

	/* Errors as the driver documents them. */
	CHECK(cuMemCreate(&h, 3 * MiB, &prop, 0) == CUDA_ERROR_INVALID_VALUE); /* not granular */
	CHECK(cuMemCreate(&h, 128 * MiB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
	prop.location.id = 5;
	CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_ERROR_INVALID_DEVICE);
	prop.location.id = 0;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
	CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) == CUDA_ERROR_NOT_PERMITTED);
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	CHECK(cuMemMap(va + 4096, 2 * MiB, 0, h1, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemGetAddressRange(&base, &size, va) == CUDA_ERROR_NOT_FOUND);
	OK(cuMemAddressFree(va, 8 * MiB));
	CHECK(cuMemAddressFree(va, 8 * MiB) == CUDA_ERROR_INVALID_VALUE);
	last_corr = recs[n_recs - 1].corr;
}

static CUcontext ctx0;
static uint32_t uid_in_destroy;

static void
query_in_destroy(const struct rec *r)
{
	if (r->cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING &&
	    r->domain == CUPTI_CB_DOMAIN_RESOURCE)
		uid_in_destroy = r->uid; /* cuptiGetContextId inside the callback */
}

/* Reset: DESTROY_STARTING inside the driver call, then a new uid on the same pointer. */
static void
test_reset(void)
{
	cudaMemPool_t pool;
	void *p, *a;
	uint32_t uid = 0;

	OK(cudaMalloc(&p, 4096));
	OK(cudaMallocAsync(&a, 4096, 0));
	ctx0 = recs[n_recs - 1].ctx;
	reset_recs();
	hook = query_in_destroy;
	OK(cudaDeviceReset());
	hook = NULL;
	EXPECT(RT_IN(cudaDeviceReset_v3020), DRV_IN(cuDevicePrimaryCtxReset_v2),
	       RES(CONTEXT_DESTROY_STARTING), DRV_OUT(cuDevicePrimaryCtxReset_v2),
	       RT_OUT(cudaDeviceReset_v3020));
	CHECK(!recs[0].has_params && recs[1].in == 0);
	CHECK(recs[0].corr == recs[1].corr && recs[1].corr == recs[4].corr);
	CHECK(recs[2].ctx == ctx0 && uid_in_destroy == 1);
	CHECK(recs[4].ctx == NULL && recs[4].uid == 0); /* gone at EXIT */
	CHECK(cuptiGetContextId(ctx0, &uid) == CUPTI_ERROR_INVALID_CONTEXT);
	last_corr = recs[0].corr;

	reset_recs();
	CHECK(cudaFree(p) == cudaErrorInvalidValue); /* the reset freed it */
	EXPECT(RT_IN(cudaFree_v3020), RES(CONTEXT_CREATED), DRV(cuMemFree_v2),
	       RT_OUT(cudaFree_v3020));
	CHECK(recs[1].ctx == ctx0 && recs[1].uid == 2); /* same pointer, new uid */
	CHECK(recs[2].uid == 2 && recs[0].uid == 0);
	OK(cuptiGetContextId(ctx0, &uid));
	CHECK(uid == 2);
	OK(cudaFreeAsync(a, 0)); /* pool memory survives a reset */
	OK(cudaDeviceGetDefaultMemPool(&pool, 0));
	OK(cudaMemPoolTrimTo(pool, 0));
	CHECK(used_bytes() == 0);
	cudaGetLastError();
	last_corr = recs[n_recs - 1].corr;
}

static int nested_done;

/* From inside a RUNTIME ENTER, call the runtime again: its callbacks nest, with their own ids. */
static void
nest_a_malloc(const struct rec *r)
{
	void *p;

	if (nested_done || r->domain != CUPTI_CB_DOMAIN_RUNTIME_API ||
	    r->cbid != CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020 || r->site != CUPTI_API_ENTER)
		return;
	nested_done = 1;
	CHECK(cudaMalloc(&p, 512) == cudaSuccess);
	CHECK(cudaFree(p) == cudaSuccess);
}

static void
test_nested_and_host(void)
{
	char buf[8192];
	void *h;

	reset_recs();
	hook = nest_a_malloc;
	OK(cudaMallocHost(&h, 100));
	hook = NULL;
	EXPECT(RT_IN(cudaMallocHost_v3020), PAIR(cudaMalloc_v3020, cuMemAlloc_v2),
	       PAIR(cudaFree_v3020, cuMemFree_v2), DRV(cuMemAllocHost_v2),
	       RT_OUT(cudaMallocHost_v3020));
	check_sandwich(1, "cudaMalloc", "cuMemAlloc_v2");
	check_sandwich(5, "cudaFree", "cuMemFree_v2");
	CHECK(recs[0].corr == recs[9].corr && recs[0].corr == recs[10].corr);
	CHECK(recs[0].corr < recs[1].corr);
	CHECK(recs[0].corr_data == recs[11].corr_data && recs[9].corr_data == recs[10].corr_data);

	reset_recs();
	OK(cudaFreeHost(h));
	OK(cudaHostAlloc(&h, 100, cudaHostAllocMapped));
	OK(cudaFreeHost(h));
	OK(cudaHostRegister(buf, sizeof(buf), cudaHostRegisterDefault));
	CHECK(cudaHostRegister(buf + 100, 10, 0) == cudaErrorHostMemoryAlreadyRegistered);
	OK(cudaHostUnregister(buf));
	CHECK(cudaHostUnregister(buf) == cudaErrorHostMemoryNotRegistered);
	EXPECT(PAIR(cudaFreeHost_v3020, cuMemFreeHost), PAIR(cudaHostAlloc_v3020, cuMemHostAlloc),
	       PAIR(cudaFreeHost_v3020, cuMemFreeHost),
	       PAIR(cudaHostRegister_v4000, cuMemHostRegister_v2),
	       PAIR(cudaHostRegister_v4000, cuMemHostRegister_v2),
	       PAIR(cudaHostUnregister_v4000, cuMemHostUnregister),
	       PAIR(cudaHostUnregister_v4000, cuMemHostUnregister));
	check_sandwich(12, "cudaHostRegister", "cuMemHostRegister_v2");
	CHECK(recs[18].ret == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CHECK(recs[26].ret == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CHECK(used_bytes() == 0);
	cudaGetLastError();
}

static uint64_t
graph_attr(enum cudaGraphMemAttributeType attr)
{
	uint64_t v = UINT64_MAX;

	OK(cudaDeviceGetGraphMemAttribute(0, attr, &v));
	return v;
}

static CUgraphNodeType node_type;
static CUdeviceptr node_ptr;

/* Inside GRAPHNODE_CREATED: ask the driver what the node is, as a tracer does. */
static void
query_node(const struct rec *r)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;
	CUgraphNode node = (CUgraphNode)(uintptr_t)r->in;

	if (r->domain != CUPTI_CB_DOMAIN_RESOURCE ||
	    r->cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)
		return;
	CHECK(cuGraphNodeGetType(node, &node_type) == CUDA_SUCCESS);
	if (node_type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
		CHECK(cuGraphMemAllocNodeGetParams(node, &p) == CUDA_SUCCESS);
		node_ptr = p.dptr;
	} else {
		CHECK(cuGraphMemFreeNodeGetParams(node, &node_ptr) == CUDA_SUCCESS);
	}
}

static void
test_graph_capture(void)
{
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	void *g = NULL;
	size_t used0;

	OK(cudaStreamCreate(&s));
	used0 = used_bytes();
	OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	reset_recs();
	hook = query_node;
	OK(cudaMallocAsync(&g, 3 * MiB, s));
	EXPECT(RT_IN(cudaMallocAsync_v11020), DRV_IN(cuMemAllocAsync), RES(GRAPHNODE_CREATED),
	       DRV(cuGraphNodeGetType), DRV(cuGraphMemAllocNodeGetParams), DRV_OUT(cuMemAllocAsync),
	       RT_OUT(cudaMallocAsync_v11020));
	CHECK(node_type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && node_ptr == (CUdeviceptr)g && g);
	CHECK(recs[0].corr == recs[1].corr && recs[1].corr == recs[7].corr);
	CHECK(recs[3].corr != recs[0].corr && recs[5].corr != recs[3].corr);
	CHECK(recs[7].out == (uint64_t)(uintptr_t)g);
	CHECK(used_bytes() == used0); /* an address, no memory yet */

	reset_recs();
	OK(cudaFreeAsync(g, s));
	hook = NULL;
	EXPECT(RT_IN(cudaFreeAsync_v11020), DRV_IN(cuMemFreeAsync), RES(GRAPHNODE_CREATED),
	       DRV(cuGraphNodeGetType), DRV(cuGraphMemFreeNodeGetParams), DRV_OUT(cuMemFreeAsync),
	       RT_OUT(cudaFreeAsync_v11020));
	CHECK(node_type == CU_GRAPH_NODE_TYPE_MEM_FREE && node_ptr == (CUdeviceptr)g);
	OK(cudaStreamEndCapture(s, &graph));
	OK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 0);

	/* The first launch takes the graph's memory from the device and keeps it. */
	reset_recs();
	OK(cudaGraphLaunch(exec, s));
	EXPECT(PAIR(cudaGraphLaunch_v10000, cuGraphLaunch));
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 4 * MiB);
	CHECK(graph_attr(cudaGraphMemAttrUsedMemCurrent) == 0); /* freed inside the graph */
	CHECK(graph_attr(cudaGraphMemAttrUsedMemHigh) == 4 * MiB);
	CHECK(used_bytes() == used0 + 4 * MiB);
	OK(cudaGraphLaunch(exec, s));
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 4 * MiB);
	OK(cudaDeviceGraphMemTrim(0));
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 0);
	CHECK(used_bytes() == used0);
	OK(cudaGraphExecDestroy(exec));
	OK(cudaGraphDestroy(graph));
	OK(cudaStreamDestroy(s));
}

static void
test_graph_explicit(void)
{
	struct cudaMemAllocNodeParams params;
	cudaGraph_t graph;
	cudaGraphNode_t node, free_node;
	cudaGraphExec_t exec;
	CUgraphNodeType type;

	memset(&params, 0, sizeof(params));
	params.poolProps.allocType = cudaMemAllocationTypePinned;
	params.poolProps.location.type = cudaMemLocationTypeDevice;
	params.poolProps.location.id = 0;
	params.bytesize = MiB;
	OK(cudaGraphCreate(&graph, 0));
	reset_recs();
	OK(cudaGraphAddMemAllocNode(&node, graph, NULL, 0, &params));
	EXPECT(RT_IN(cudaGraphAddMemAllocNode_v11040), DRV_IN(cuGraphAddMemAllocNode),
	       RES(GRAPHNODE_CREATED), DRV_OUT(cuGraphAddMemAllocNode),
	       RT_OUT(cudaGraphAddMemAllocNode_v11040));
	CHECK(params.dptr != NULL && recs[2].in == (uint64_t)(uintptr_t)node);
	OK(cuGraphNodeGetType(node, &type));
	CHECK(type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
	OK(cudaGraphInstantiate(&exec, graph, 0));
	OK(cudaGraphLaunch(exec, 0));
	CHECK(graph_attr(cudaGraphMemAttrUsedMemCurrent) == 2 * MiB);
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 2 * MiB);
	OK(cudaDeviceGraphMemTrim(0)); /* in use: stays */
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 2 * MiB);
	OK(cudaFree(params.dptr)); /* graph memory may be freed outside the graph */
	CHECK(graph_attr(cudaGraphMemAttrUsedMemCurrent) == 0);
	CHECK(cudaFree(params.dptr) == cudaErrorInvalidValue);
	OK(cudaDeviceGraphMemTrim(0));
	CHECK(graph_attr(cudaGraphMemAttrReservedMemCurrent) == 0);

	reset_recs();
	OK(cudaGraphAddMemFreeNode(&free_node, graph, &node, 1, params.dptr));
	EXPECT(RT_IN(cudaGraphAddMemFreeNode_v11040), DRV_IN(cuGraphAddMemFreeNode),
	       RES(GRAPHNODE_CREATED), DRV_OUT(cuGraphAddMemFreeNode),
	       RT_OUT(cudaGraphAddMemFreeNode_v11040));
	OK(cuGraphNodeGetType(free_node, &type));
	CHECK(type == CU_GRAPH_NODE_TYPE_MEM_FREE);
	OK(cudaGraphExecDestroy(exec));
	OK(cudaGraphDestroy(graph));
	cudaGetLastError();
	CHECK(used_bytes() == 0);
}

/* Only what is enabled is delivered. */
static void
test_enable_filter(void)
{
	void *p;
	uint32_t on = 9;

	OK(cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			       CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
	OK(cuptiGetCallbackState(&on, sub, CUPTI_CB_DOMAIN_DRIVER_API,
				 CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
	CHECK(on == 0);
	OK(cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_RESOURCE));
	reset_recs();
	OK(cudaMalloc(&p, 100));
	OK(cudaFree(p));
	EXPECT(RT_IN(cudaMalloc_v3020), RT_OUT(cudaMalloc_v3020),
	       PAIR(cudaFree_v3020, cuMemFree_v2));
	CHECK(recs[0].corr == recs[1].corr && recs[2].corr > recs[1].corr);
	CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, 100000) ==
	      CUPTI_ERROR_INVALID_PARAMETER);
	CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_INVALID, 1) ==
	      CUPTI_ERROR_INVALID_PARAMETER);
	CHECK(cuptiGetLastError() == CUPTI_ERROR_INVALID_PARAMETER);
	CHECK(cuptiGetLastError() == CUPTI_SUCCESS);
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
}

static void
test_second_subscriber(void)
{
	CUpti_SubscriberHandle other;
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
	char tiny[6];
	const char *s = NULL;
	CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
				    .subscriberName = "second",
				    .oldSubscriberName = old,
				    .oldSubscriberSize = sizeof(old)};
	void *ptr;

	CHECK(cuptiSubscribe_v2(&other, on_callback, &recs, &p) ==
	      CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	CHECK(strcmp(old, "CUPTI for simcupti-test") == 0);
	p.oldSubscriberName = tiny;
	p.oldSubscriberSize = sizeof(tiny);
	CHECK(cuptiSubscribe_v2(&other, on_callback, &recs, &p) == 39);
	CHECK(strcmp(tiny, "CUPTI") == 0); /* truncated to what fits */
	CHECK(cuptiSubscribe(&other, on_callback, &recs) == 39);
	CHECK(cuptiGetLastError() == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	p.structSize = 8;
	CHECK(cuptiSubscribe_v2(&other, on_callback, &recs, &p) == CUPTI_ERROR_INVALID_PARAMETER);
	OK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s));
	CHECK(strcmp(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0);
	OK(cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &s));
	CHECK(strcmp(s, "CUPTI_ERROR_UNKNOWN") == 0);
	CHECK(cuptiGetResultString((CUptiResult)500, &s) == CUPTI_ERROR_INVALID_PARAMETER);

	/* Unsubscribed: nothing arrives; the slot is free again, now without a name. */
	OK(cuptiUnsubscribe(sub));
	CHECK(cuptiUnsubscribe(sub) == CUPTI_ERROR_INVALID_PARAMETER);
	reset_recs();
	OK(cudaMalloc(&ptr, 100));
	OK(cudaFree(ptr));
	CHECK(n_recs == 0);
	OK(cuptiSubscribe(&sub, on_callback, &recs));
	p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	p.oldSubscriberName = old;
	p.oldSubscriberSize = sizeof(old);
	CHECK(cuptiSubscribe_v2(&other, on_callback, &recs, &p) == 39);
	CHECK(strcmp(old, "CUPTI for <not provided>") == 0);
	OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
	reset_recs();
	OK(cudaFree(NULL));
	EXPECT(DRV(cuMemFree_v2));
	OK(cuptiFinalize());
	reset_recs();
	OK(cudaFree(NULL));
	CHECK(n_recs == 0);
	subscribe_all();
}

// --- many threads at once ----------------------------------------------------------------

#define STRESS_THREADS 8
#define STRESS_ITERS 2000

static atomic_int stress_errors;
static atomic_long stress_callbacks;
static _Thread_local uint32_t stress_rt_corr, stress_drv_corr, stress_last_corr;

/*
 * Per thread, the nesting must hold whatever the other threads do: a driver call inside a
 * runtime call has its correlation id, each ENTER is matched by its EXIT, and the ids a thread
 * sees grow (one process-wide counter).
 */
static void
stress_check(CUpti_CallbackDomain domain, const CUpti_CallbackData *d)
{
	int bad = 0;

	atomic_fetch_add_explicit(&stress_callbacks, 1, memory_order_relaxed);
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && d->callbackSite == CUPTI_API_ENTER) {
		bad = stress_rt_corr != 0 || d->correlationId <= stress_last_corr;
		stress_rt_corr = stress_last_corr = d->correlationId;
	} else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		bad = stress_rt_corr != d->correlationId;
		stress_rt_corr = 0;
	} else if (d->callbackSite == CUPTI_API_ENTER) {
		bad = stress_drv_corr != 0 || d->correlationId != stress_rt_corr;
		stress_drv_corr = d->correlationId;
	} else {
		bad = stress_drv_corr != d->correlationId;
		stress_drv_corr = 0;
	}
	if (bad)
		atomic_fetch_add(&stress_errors, 1);
}

static void *
stress_thread(void *opaque)
{
	void *p[4] = {NULL};
	int i;

	(void)opaque;
	for (i = 0; i < STRESS_ITERS; i++) {
		void **slot = &p[i % 4];

		if (*slot) {
			if ((i & 1 ? cudaFree(*slot) : cudaFreeAsync(*slot, 0)) != cudaSuccess)
				atomic_fetch_add(&stress_errors, 1);
			*slot = NULL;
		} else if ((i & 2 ? cudaMalloc(slot, 4096) : cudaMallocAsync(slot, 4096, 0)) !=
			   cudaSuccess) {
			atomic_fetch_add(&stress_errors, 1);
		}
	}
	for (i = 0; i < 4; i++)
		if (p[i] && cudaFree(p[i]) != cudaSuccess)
			atomic_fetch_add(&stress_errors, 1);
	return NULL;
}

static void
test_stress(void)
{
	pthread_t t[STRESS_THREADS];
	cudaMemPool_t pool;
	int i;

	atomic_store(&stress_mode, 1);
	for (i = 0; i < STRESS_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, stress_thread, NULL) == 0);
	for (i = 0; i < STRESS_THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	atomic_store(&stress_mode, 0);
	CHECK(atomic_load(&stress_errors) == 0);
	/* Every call is a runtime pair around a driver pair. */
	CHECK(atomic_load(&stress_callbacks) == 4L * STRESS_THREADS * STRESS_ITERS);
	OK(cudaDeviceGetDefaultMemPool(&pool, 0));
	OK(cudaMemPoolTrimTo(pool, 0));
	CHECK(used_bytes() == 0 && simcuda_check(0) == 0);
}

struct thread_arg {
	int n_before;
	pthread_t self;
};

static void *
alloc_thread(void *opaque)
{
	struct thread_arg *arg = opaque;
	void *p;

	arg->self = pthread_self();
	if (cudaMalloc(&p, 100) == cudaSuccess)
		cudaFree(p);
	return NULL;
}

/* Callbacks run on the calling thread. */
static void
test_thread(void)
{
	struct thread_arg arg = {0};
	pthread_t t;

	reset_recs();
	CHECK(pthread_create(&t, NULL, alloc_thread, &arg) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	EXPECT(PAIR(cudaMalloc_v3020, cuMemAlloc_v2), PAIR(cudaFree_v3020, cuMemFree_v2));
	CHECK(pthread_equal(recs[0].thread, arg.self) && pthread_equal(recs[7].thread, arg.self));
	CHECK(recs[0].ctx != NULL); /* the device's context is the process's */
}

static int
run_main(void)
{
	CHECK(simcuda_is_simulated() == 1);
	test_before_init();
	subscribe_all();
	test_first_call();
	test_malloc_free_oom();
	test_pools();
	test_vmm();
	test_reset();
	test_nested_and_host();
	test_graph_capture();
	test_graph_explicit();
	test_enable_filter();
	test_thread();
	test_stress();
	test_second_subscriber();
	printf("simcupti: all checks passed\n");
	return 0;
}

// --- the other environments ---------------------------------------------------------------

static int
run_other(void)
{
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
				    .oldSubscriberName = old,
				    .oldSubscriberSize = sizeof(old)};
	void *ptr;

	CHECK(cuptiSubscribe_v2(&sub, on_callback, &recs, &p) ==
	      CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	CHECK(strcmp(old, "Nsight Systems") == 0);
	CHECK(cuptiSubscribe(&sub, on_callback, &recs) == 39);
	OK(cudaMalloc(&ptr, 100)); /* CUDA itself is unaffected */
	OK(cudaFree(ptr));
	CHECK(n_recs == 0);
	printf("simcupti-other: subscribe refused as with another tool attached\n");
	return 0;
}

struct inject_counts {
	int initialize_calls;
	int subscribe_result;
	int init_finished;
	int context_created;
	int runtime_malloc;
	int driver_alloc;
	int driver_free;
	int first_event_cbid;
};

static int
run_inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	const struct inject_counts *(*get)(void);
	const struct inject_counts *c;
	void *h, *p;

	CHECK(path && dlopen(path, RTLD_NOW | RTLD_NOLOAD) == NULL); /* not loaded before CUDA */
	OK(cudaMalloc(&p, 100)); /* the first CUDA call: cuInit, so the injection */
	h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h != NULL);
	get = (const struct inject_counts *(*)(void))dlsym(h, "inject_test_counts");
	CHECK(get != NULL);
	c = get();
	CHECK(c->initialize_calls == 1 && c->subscribe_result == CUPTI_SUCCESS);
	/* Subscribed inside the first call: it sees that call's driver part and the start-up. */
	CHECK(c->init_finished == 1 && c->context_created == 1);
	CHECK(c->first_event_cbid ==
	      (CUPTI_CB_DOMAIN_RESOURCE << 16 | CUPTI_CBID_RESOURCE_CU_INIT_FINISHED));
	CHECK(c->driver_alloc == 2 && c->runtime_malloc == 0);
	OK(cudaMalloc(&p, 100));
	OK(cudaFree(p));
	CHECK(c->initialize_calls == 1 && c->runtime_malloc == 2 && c->driver_alloc == 4 &&
	      c->driver_free == 2);
	/* Its subscriber holds CUPTI: a tool subscribing later is refused. */
	CHECK(cuptiSubscribe(&sub, on_callback, &recs) == 39);
	printf("simcupti-inject: InitializeInjection ran once, at the first call\n");
	return 0;
}

/* A library that is missing, or has no InitializeInjection: one line on stderr, CUDA works. */
static int
run_inject_broken(const char *want)
{
	char buf[1024] = "";
	FILE *err = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;
	void *p;

	CHECK(err && saved >= 0 && dup2(fileno(err), STDERR_FILENO) >= 0);
	OK(cudaMalloc(&p, 100));
	OK(cudaFree(p));
	CHECK(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(err);
	n = fread(buf, 1, sizeof(buf) - 1, err);
	fclose(err);
	buf[n] = '\0';
	CHECK(strchr(buf, '\n') == buf + n - 1); /* exactly one line */
	CHECK(strstr(buf, "CUDA_INJECTION64_PATH") && strstr(buf, want));
	printf("simcupti-inject: %s", buf);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "other") == 0)
		return run_other();
	if (strcmp(mode, "inject") == 0)
		return run_inject();
	if (strcmp(mode, "inject-missing") == 0)
		return run_inject_broken("cannot load");
	if (strcmp(mode, "inject-nosym") == 0)
		return run_inject_broken("no InitializeInjection");
	if (mode[0] != '\0') {
		fprintf(stderr, "usage: %s [other|inject|inject-missing|inject-nosym]\n", argv[0]);
		return 2;
	}
	return run_main();
}
