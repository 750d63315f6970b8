/*
 * An example workload shaped like a training job, for `scripts/demo`: model weights allocated
 * once, activations per step from the stream-ordered allocator, a pinned staging buffer, a
 * metrics history that grows every step and is never freed (the leak the report should find),
 * and at the end a large request that does not fit.
 *
 * Linked against libcudart.so.13: runs on a GPU with the real runtime, or on tests/simcuda.
 * It launches no kernels; it only exercises memory.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpumemtrace.h>

#define LAYERS 8
#define STEPS 20
#define MiB (1024UL * 1024UL)

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, "training_loop: %s: %s\n", #call,                          \
				cudaGetErrorString(rc_));                                          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void *weights[LAYERS];
static void *history[STEPS];

static void
build_model(void)
{
	for (int i = 0; i < LAYERS; i++)
		CK(cudaMalloc(&weights[i], 16 * MiB));
}

static void
forward_backward(cudaStream_t s)
{
	void *act[LAYERS];
	for (int i = 0; i < LAYERS; i++)
		CK(cudaMallocAsync(&act[i], 8 * MiB, s));
	for (int i = LAYERS - 1; i >= 0; i--)
		CK(cudaFreeAsync(act[i], s));
}

static void
record_metrics(int step)
{
	/* the bug: each step keeps a device buffer "for later" and nobody frees it */
	CK(cudaMalloc(&history[step], 2 * MiB));
}

static void
try_huge_batch(void)
{
	void *p;
	size_t free_b = 0, total_b = 0;
	CK(cudaMemGetInfo(&free_b, &total_b));
	cudaError_t rc = cudaMalloc(&p, total_b); /* more than is free: fails */
	if (rc == cudaSuccess) {
		CK(cudaFree(p));
		return;
	}
	printf("training_loop: a batch of %zu MiB did not fit (%s), as expected\n", total_b / MiB,
	       cudaGetErrorString(rc));
	cudaGetLastError();
}

int
main(void)
{
	cudaStream_t s;
	void *staging;

	CK(cudaFree(NULL));
	CK(cudaStreamCreate(&s));
	build_model();
	CK(cudaMallocHost(&staging, 4 * MiB));
	for (int step = 0; step < STEPS; step++) {
		if (step % 5 == 0) {
			char label[32];
			snprintf(label, sizeof(label), "epoch %d", step / 5);
			GMT_MARK(label);
		}
		forward_backward(s);
		record_metrics(step);
	}
	CK(cudaStreamSynchronize(s));
	try_huge_batch();
	for (int i = 0; i < LAYERS; i++)
		CK(cudaFree(weights[i]));
	CK(cudaFreeHost(staging));
	CK(cudaStreamDestroy(s));
	printf("training_loop: %d steps done\n", STEPS);
	return 0;
}
