/*
 * Allocation calls given a NULL output pointer, under the tracer: the runtime and the driver
 * reject them (CUDA error 1), and the tracer must record the failed attempt, not read through
 * the NULL (it did, in the CUPTI callbacks: the application died of SIGSEGV). Prints each
 * call's result as "name=code", one a line.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

int
main(void)
{
	void *warm;

	/* a first successful call: CUDA and the tracer are started */
	if (cudaMalloc(&warm, 64) != cudaSuccess)
		return 3;
	printf("cudaMalloc=%d\n", (int)cudaMalloc(NULL, 64));
	printf("cudaMallocHost=%d\n", (int)cudaMallocHost(NULL, 64));
	printf("cudaHostAlloc=%d\n", (int)cudaHostAlloc(NULL, 64, cudaHostAllocDefault));
	printf("cudaMallocManaged=%d\n", (int)cudaMallocManaged(NULL, 64, cudaMemAttachGlobal));
	printf("cudaMallocAsync=%d\n", (int)cudaMallocAsync(NULL, 64, 0));
	printf("cuMemAllocHost_v2=%d\n", (int)cuMemAllocHost(NULL, 64));
	printf("cuMemHostAlloc=%d\n", (int)cuMemHostAlloc(NULL, 64, 0));
	cudaFree(warm);
	return 0;
}
