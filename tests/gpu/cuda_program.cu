// A plain CUDA C++ program for scripts/gpu-check, built with `nvcc -cudart shared`: it allocates
// with the runtime API, runs kernels over the memory, frees most of it and prints on stdout one
// JSON line with what it did (the format tests/preload/run_preload.py compares with the trace).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <unistd.h>

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, "cuda_program: %s: %s\n", #call, cudaGetErrorString(rc_)); \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void fill(float *p, size_t n, float v)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

__global__ void sum_into(const float *a, const float *b, float *out, size_t n)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = a[i] + b[i];
}

int main()
{
	const size_t n = 1 << 22; // 16 MiB of floats
	float *a, *b, *c, *keep, *h, *m, *pooled;
	cudaStream_t s;
	long mallocs = 0, frees = 0, hosts = 0, host_frees = 0, manageds = 0, asyncs = 0, async_frees = 0;

	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&a, n * sizeof(float))); mallocs++;
	CK(cudaMalloc(&b, n * sizeof(float))); mallocs++;
	CK(cudaMalloc(&c, n * sizeof(float))); mallocs++;
	CK(cudaMalloc(&keep, 1 << 20)); mallocs++; // leaked on purpose
	// In C++, cuda_runtime.h's cudaMallocHost(T **, size, flags = 0) template calls cudaHostAlloc:
	// the runtime (and so the trace) sees cudaHostAlloc.
	CK(cudaMallocHost(&h, n * sizeof(float))); hosts++;
	CK(cudaMallocManaged(&m, 1 << 20)); manageds++; // leaked on purpose
	fill<<<256, 256, 0, s>>>(a, n, 1.0f);
	fill<<<256, 256, 0, s>>>(b, n, 2.0f);
	for (int step = 0; step < 50; step++) {
		CK(cudaMallocAsync(&pooled, n * sizeof(float), s)); asyncs++;
		sum_into<<<256, 256, 0, s>>>(a, b, pooled, n);
		sum_into<<<256, 256, 0, s>>>(pooled, b, c, n);
		CK(cudaFreeAsync(pooled, s)); async_frees++;
	}
	CK(cudaMemcpyAsync(h, c, n * sizeof(float), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	if (h[12345] != 5.0f) {
		fprintf(stderr, "cuda_program: wrong result %f\n", h[12345]);
		return 2;
	}
	CK(cudaFree(a)); frees++;
	CK(cudaFree(b)); frees++;
	CK(cudaFree(c)); frees++;
	CK(cudaFreeHost(h)); host_frees++;
	CK(cudaStreamDestroy(s));
	printf("{\"pid\":%d,\"allocs\":{\"cudaMalloc\":%ld,\"cudaHostAlloc\":%ld,\"cudaMallocManaged\":%ld,"
	       "\"cudaMallocAsync\":%ld},\"frees\":{\"cudaFree\":%ld,\"cudaFreeHost\":%ld,\"cudaFreeAsync\":%ld},"
	       "\"failed\":0,\"leaked_bytes\":%d,\"leaked_allocations\":2,\"markers\":0}\n",
	       (int)getpid(), mallocs, hosts, manageds, asyncs, frees, host_frees, async_frees, 2 << 20);
	return 0;
}
