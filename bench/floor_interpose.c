/*
 * @brief The interposition floor of bench/run_hook_overhead.py: LD_PRELOAD wrappers of the four
 * calls the benchmark makes (cudaMalloc, cudaFree, cudaMallocAsync, cudaFreeAsync), exported at
 * the version libcudart.so.13 as the tracer's are (floor_interpose.sym), each doing the bare
 * minimum of a recorded event (floor.h) around the real call: a free records before it, an
 * allocation after it. The real functions come from dlvsym(RTLD_NEXT), once.
 *
 * At exit one line on stderr, "gmt-floor: {...}", says how many calls and records the main thread
 * saw. Not a test double: it runs on tests/simcuda's runtime and on NVIDIA's.
 */
#include "floor.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static void *
real(const char *name, _Atomic(void *) *cache)
{
	void *p = atomic_load_explicit(cache, memory_order_acquire);
	if (!p) {
		p = dlvsym(RTLD_NEXT, name, "libcudart.so.13");
		if (!p) {
			fprintf(stderr, "gmt-floor: no real %s\n", name);
			abort(); /* a benchmark only: it measured nothing */
		}
		atomic_store_explicit(cache, p, memory_order_release);
	}
	return p;
}

#define REAL(name)                                                                                 \
	({                                                                                         \
		static _Atomic(void *) cache_;                                                     \
		(__typeof__(&name))real(#name, &cache_);                                           \
	})

EXPORT cudaError_t
cudaMalloc(void **ptr, size_t size)
{
	if (floor_paused)
		return REAL(cudaMalloc)(ptr, size);
	cudaError_t rc = REAL(cudaMalloc)(ptr, size);
	floor_calls++;
	floor_record(1, rc == cudaSuccess && ptr ? (uint64_t)(uintptr_t)*ptr : 0, size);
	return rc;
}

EXPORT cudaError_t
cudaFree(void *ptr)
{
	if (floor_paused)
		return REAL(cudaFree)(ptr);
	floor_calls++;
	if (ptr)
		floor_record(2, (uint64_t)(uintptr_t)ptr, 0);
	return REAL(cudaFree)(ptr);
}

EXPORT cudaError_t
cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
	if (floor_paused)
		return REAL(cudaMallocAsync)(ptr, size, stream);
	cudaError_t rc = REAL(cudaMallocAsync)(ptr, size, stream);
	floor_calls++;
	floor_record(3, rc == cudaSuccess && ptr ? (uint64_t)(uintptr_t)*ptr : 0, size);
	return rc;
}

EXPORT cudaError_t
cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	if (floor_paused)
		return REAL(cudaFreeAsync)(ptr, stream);
	floor_calls++;
	if (ptr)
		floor_record(4, (uint64_t)(uintptr_t)ptr, 0);
	return REAL(cudaFreeAsync)(ptr, stream);
}

__attribute__((constructor)) static void
floor_init(void)
{
	floor_map_ring();
}

__attribute__((destructor)) static void
floor_fini(void)
{
	floor_report("interpose", "record");
}
