/* SPDX-License-Identifier: MIT */
/**
 * @file test_inject.c
 * @brief A tiny CUDA_INJECTION64_PATH library for the simcupti-inject test (TEST DOUBLE use).
 *
 * The simulated runtime calls InitializeInjection at its first CUDA call, as the driver does at
 * cuInit. It subscribes through the CUPTI double, enables the resource domain, cudaMalloc and
 * cuMemAlloc_v2/cuMemFree_v2, and counts what it sees; the test reads the counts back with
 * dlsym(inject_test_counts).
 */
#include <cupti.h>

/** What the subscriber saw; filled by the callback, read by the test. */
struct inject_counts {
	int initialize_calls;
	int subscribe_result;
	int init_finished;
	int context_created;
	int runtime_malloc;   /* cudaMalloc ENTER + EXIT */
	int driver_alloc;     /* cuMemAlloc_v2 ENTER + EXIT */
	int driver_free;      /* cuMemFree_v2 ENTER + EXIT */
	int first_event_cbid; /* the first (domain << 16 | cbid) seen */
};

static struct inject_counts counts;
static CUpti_SubscriberHandle subscriber;

const struct inject_counts *inject_test_counts(void);
int InitializeInjection(void);

const struct inject_counts *
inject_test_counts(void)
{
	return &counts;
}

static void
count(int *field)
{
	__atomic_add_fetch(field, 1, __ATOMIC_RELAXED);
}

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	(void)data;
	if (!counts.first_event_cbid)
		counts.first_event_cbid = (int)domain << 16 | (int)cbid;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CU_INIT_FINISHED)
		count(&counts.init_finished);
	else if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		count(&counts.context_created);
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		count(&counts.runtime_malloc);
	else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)
		count(&counts.driver_alloc);
	else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2)
		count(&counts.driver_free);
}

int
InitializeInjection(void)
{
	CUpti_SubscriberParams p = {
	    .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
	    .subscriberName = "inject-test",
	};

	count(&counts.initialize_calls);
	counts.subscribe_result = cuptiSubscribe_v2(&subscriber, on_callback, NULL, &p);
	if (counts.subscribe_result != CUPTI_SUCCESS)
		return 0;
	cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
	cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
			    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
	cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
			    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
	cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
			    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
	return 1;
}
