/* SPDX-License-Identifier: MIT */
/**
 * @file test_simcuda_abi.c
 * @brief ABI check: a program linked against the REAL libcudart.so.13 runs on the double.
 *
 * Built with -lcudart from the CUDA toolkit and run with LD_LIBRARY_PATH pointing at the
 * simulated library. If the soname or a symbol version differed, the dynamic linker would
 * refuse to start the program; if the real library were picked up instead, the dlsym below
 * would find no simcuda_is_simulated. Either way the test fails.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

int
main(void)
{
	int (*is_simulated)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "simcuda_is_simulated");
	size_t free_b, total_b;
	void *p, *q;

	if (!is_simulated) {
		fprintf(stderr, "not running on the simulated libcudart (LD_LIBRARY_PATH?)\n");
		return 1;
	}
	CHECK(is_simulated() == 1);
	CHECK(cudaMalloc(&p, 1000) == cudaSuccess);
	CHECK(cudaMallocAsync(&q, 1000, 0) == cudaSuccess);
	CHECK(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
	CHECK(total_b - free_b == 1024 + (2u << 20));
	CHECK(cudaFreeAsync(q, 0) == cudaSuccess);
	CHECK(cudaFree(p) == cudaSuccess);
	CHECK(cudaFree(p) == cudaErrorInvalidValue);
	CHECK(strcmp(cudaGetErrorString(cudaGetLastError()), "invalid argument") == 0);
	printf("simcuda-abi: real-linked program ran on the double\n");
	return 0;
}
