/* SPDX-License-Identifier: MIT */
/**
 * @file test_simcupti_abi.c
 * @brief ABI check: a program linked against the REAL libcupti.so.13, libcuda.so.1 (the
 *        toolkit's stub) and libcudart.so.13 runs on the three TEST DOUBLES.
 *
 * Built with -lcupti -lcuda -lcudart from the CUDA toolkit and run with LD_LIBRARY_PATH pointing
 * at the doubles. A soname or symbol version that differed would stop the dynamic linker; a real
 * library picked up instead would have no simcuda_is_simulated, or deliver no callbacks here.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static int calls;

static void CUPTIAPI
count(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	(void)data;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)
		calls++;
}

int
main(void)
{
	CUpti_SubscriberHandle sub;
	CUdeviceptr d;
	uint32_t version = 0;
	void *p;

	if (!dlsym(RTLD_DEFAULT, "simcuda_is_simulated")) {
		fprintf(stderr, "not running on the simulated libraries (LD_LIBRARY_PATH?)\n");
		return 1;
	}
	CHECK(cuptiGetVersion(&version) == CUPTI_SUCCESS && version == 130001);
	CHECK(cuptiSubscribe(&sub, count, NULL) == CUPTI_SUCCESS);
	CHECK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
				  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) == CUPTI_SUCCESS);
	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(cuMemAlloc(&d, 4096) == CUDA_SUCCESS); /* cuMemAlloc_v2, as cuda.h spells it */
	CHECK(calls == 2);
	CHECK(cudaMalloc(&p, 4096) == cudaSuccess);
	CHECK(calls == 4);
	CHECK(cudaFree(p) == cudaSuccess);
	CHECK(cuMemFree(d) == CUDA_SUCCESS);
	CHECK(cuptiUnsubscribe(sub) == CUPTI_SUCCESS);
	printf(
	    "simcupti-abi: program linked against the real CUPTI and driver ran on the doubles\n");
	return 0;
}
