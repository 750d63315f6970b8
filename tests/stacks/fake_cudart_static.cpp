/*
 * @brief A stand-in for libcudart_static.a, nvcc's default runtime, for the call-site test.
 *
 * With the static runtime, cudaMalloc and the runtime's internals are linked into the program's
 * own executable: the frames between the user's call and libcuda.so.1 are in the user's module.
 * They are named as NVIDIA names them (CUDA 13: cudaMalloc and libcudart_static_<sha1> helpers;
 * older toolkits: cudart::...), and the archive carries no debug information, so the report sees
 * ELF symbols only: build this file without -g. The chain down to the driver is
 * cudaMalloc -> cudart::globalState::mallocPtr -> libcudart_static_<sha1> -> cuMemAlloc_v2.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

extern "C" __attribute__((noinline)) CUresult
libcudart_static_5382377d1a7b0c4e9f20d6e8b1c3a5f7e9d0b2c4(CUdeviceptr *p, size_t n)
{
	static bool initialised;

	/* The runtime initialises the driver on its first call, as the real one does. */
	if (!initialised) {
		CUresult r = cuInit(0);

		if (r != CUDA_SUCCESS)
			return r;
		initialised = true;
	}
	return cuMemAlloc_v2(p, n);
}

namespace cudart
{

struct globalState {
	static __attribute__((noinline)) cudaError_t mallocPtr(void **p, size_t n);
};

cudaError_t
globalState::mallocPtr(void **p, size_t n)
{
	CUdeviceptr d = 0;
	CUresult r = libcudart_static_5382377d1a7b0c4e9f20d6e8b1c3a5f7e9d0b2c4(&d, n);

	*p = r == CUDA_SUCCESS ? (void *)d : nullptr;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
}

} // namespace cudart

extern "C" __attribute__((noinline)) cudaError_t
cudaMalloc(void **p, size_t n)
{
	if (!p)
		return cudaErrorInvalidValue;
	return cudart::globalState::mallocPtr(p, n);
}
