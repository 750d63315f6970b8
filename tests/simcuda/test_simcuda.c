/* SPDX-License-Identifier: MIT */
/**
 * @file test_simcuda.c
 * @brief Unit test of the simulated runtime: the heap model the profiler's tests rely on.
 *
 * Strategy: every number a profiler test will assert on (addresses, free bytes, error codes)
 * is checked here against the model written in README.md, through the public cuda* API and,
 * for the allocator alone, through struct sim_heap with its invariant checker after every
 * step. Each case starts and ends with all devices empty (expect_clean), so a leak in one
 * case fails that case and not a later one.
 *
 * Modes (argv[1]), each a separate meson test with its own environment:
 *   (none)       the main run, SIMCUDA_DEVICES=2 SIMCUDA_MEM_BYTES=1G
 *   env-invalid  SIMCUDA_MEM_BYTES=lots: warn and fall back to 1 GiB
 *   env-suffix   SIMCUDA_DEVICES=3 SIMCUDA_MEM_BYTES=64M
 *   no-device    SIMCUDA_DEVICES=0
 */
#include "heap.h"
#include "simcuda-internal.h" /* the _ptsz prototypes */
#include "simcuda.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Check a call's cudaError_t, naming both codes on failure. */
#define CHECK_CUDA(call, want)                                                                     \
	do {                                                                                       \
		cudaError_t got_ = (call);                                                         \
		if (got_ != (want)) {                                                              \
			fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n",          \
				__FILE__, __LINE__, #call, (int)got_, cudaGetErrorName(got_),      \
				(int)(want), cudaGetErrorName(want));                              \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define OK(call) CHECK_CUDA(call, cudaSuccess)

static size_t
used_bytes(void)
{
	size_t free_b, total_b;

	OK(cudaMemGetInfo(&free_b, &total_b));
	return total_b - free_b;
}

static uintptr_t
device_base(int device)
{
	uintptr_t base;
	size_t cap;

	CHECK(simcuda_device_range(device, &base, &cap) == 0);
	return base;
}

static int
in_device(const void *p, int device)
{
	uintptr_t base;
	size_t cap;

	CHECK(simcuda_device_range(device, &base, &cap) == 0);
	return (uintptr_t)p >= base && (uintptr_t)p - base < cap;
}

/* Every device empty, its invariants hold, no pending error; leaves device 0 current. */
static void
expect_clean(void)
{
	int n, d;

	OK(cudaGetDeviceCount(&n));
	for (d = 0; d < n; d++) {
		cudaMemPool_t pool;

		OK(cudaSetDevice(d));
		OK(cudaDeviceGetDefaultMemPool(&pool, d));
		OK(cudaMemPoolTrimTo(pool, 0));
		CHECK(used_bytes() == 0);
		CHECK(simcuda_check(d) == 0);
	}
	OK(cudaSetDevice(0));
	CHECK_CUDA(cudaGetLastError(), cudaSuccess);
}

// --- the allocator alone ------------------------------------------------------------------

static void
test_heap_model(void)
{
	struct sim_heap h;
	uintptr_t a, b, c, live[256] = {0};
	unsigned seed = 12345;
	int i;

	CHECK(sim_heap_init(&h, 0x10000, 64 * KiB) == 0);
	CHECK(sim_heap_alloc(&h, 0, 1, NULL, &a) < 0); /* zero bytes is the caller's business */
	CHECK(sim_heap_alloc(&h, 1, 1, NULL, &a) == 0 && a == 0x10000);
	CHECK(sim_heap_alloc(&h, 513, 2, NULL, &b) == 0 && b == 0x10000 + 512);
	CHECK(sim_heap_alloc(&h, 512, 3, NULL, &c) == 0 && c == 0x10000 + 1536);
	CHECK(h.used == 2048);
	CHECK(sim_heap_find(&h, b)->size == 1024 && sim_heap_find(&h, b)->kind == 2);
	CHECK(sim_heap_find(&h, b + 1) == NULL);
	CHECK(sim_heap_find_containing(&h, b + 1023)->addr == b);
	CHECK(sim_heap_find_containing(&h, c + 512) == NULL);
	CHECK(sim_heap_free(&h, b + 512, NULL) < 0); /* interior */
	CHECK(sim_heap_free(&h, b, NULL) == 0);
	CHECK(sim_heap_free(&h, b, NULL) < 0); /* double */
	CHECK(sim_heap_check(&h) == 0 && h.n_free == 2);
	CHECK(sim_heap_free(&h, a, NULL) == 0);
	CHECK(sim_heap_check(&h) == 0 && h.n_free == 2); /* a and b merged */
	CHECK(sim_heap_free(&h, c, NULL) == 0);
	CHECK(sim_heap_check(&h) == 0 && h.n_free == 1 && h.used == 0);
	CHECK(sim_heap_largest_free(&h) == 64 * KiB);
	CHECK(sim_heap_alloc(&h, 64 * KiB + 1, 1, NULL, &a) < 0);
	CHECK(sim_heap_alloc(&h, SIZE_MAX, 1, NULL, &a) < 0);

	/* Random churn with the invariant checker after every step. */
	for (i = 0; i < 20000; i++) {
		unsigned slot;

		seed = seed * 1103515245u + 12345u;
		slot = (seed >> 8) % 256;
		if (live[slot]) {
			CHECK(sim_heap_free(&h, live[slot], NULL) == 0);
			live[slot] = 0;
		} else {
			size_t size = 1 + (seed >> 16) % 2048;

			if (sim_heap_alloc(&h, size, 1, NULL, &live[slot]) < 0)
				live[slot] = 0;
			else
				CHECK(live[slot] % 512 == 0);
		}
		CHECK(sim_heap_check(&h) == 0);
	}
	sim_heap_fini(&h);
}

// --- the runtime API ----------------------------------------------------------------------

static void
test_identity(void)
{
	int v, n;

	CHECK(simcuda_is_simulated() == 1);
	OK(cudaDriverGetVersion(&v));
	CHECK(v == 13000);
	OK(cudaRuntimeGetVersion(&v));
	CHECK(v == 13000);
	OK(cudaGetDeviceCount(&n));
	CHECK(n == 2);

	/* The real runtime's text, byte for byte. */
	CHECK(strcmp(cudaGetErrorString(cudaSuccess), "no error") == 0);
	CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
	CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
	CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") ==
	      0);
	CHECK(strcmp(cudaGetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice") == 0);
	CHECK(strcmp(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected") ==
	      0);
	CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal") == 0);
	CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidResourceHandle),
		     "cudaErrorInvalidResourceHandle") == 0);
	CHECK(strcmp(cudaGetErrorString(cudaErrorUnknown), "unknown error") == 0);
	CHECK(strcmp(cudaGetErrorString((cudaError_t)12345), "unrecognized error code") == 0);
	CHECK(strcmp(cudaGetErrorName((cudaError_t)12345), "unrecognized error code") == 0);
	expect_clean();
}

/* Like the real runtime, the double loads libcuda.so.1 at start-up; both see the same devices. */
static void
test_driver_loaded(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CUresult (*get_info)(size_t *, size_t *);
	size_t free_d, total_d, free_r, total_r;
	void *p;

	CHECK(h != NULL);
	get_info = (CUresult(*)(size_t *, size_t *))dlsym(h, "cuMemGetInfo_v2");
	CHECK(get_info != NULL);
	OK(cudaMalloc(&p, MiB));
	CHECK(get_info(&free_d, &total_d) == CUDA_SUCCESS);
	OK(cudaMemGetInfo(&free_r, &total_r));
	CHECK(free_d == free_r && total_d == total_r && total_d - free_d == MiB);
	OK(cudaFree(p));
	dlclose(h);
	expect_clean();
}

static void
test_first_fit_alignment(void)
{
	void *a, *b, *c, *d, *e, *f, *z = (void *)1;
	uintptr_t base = device_base(0);

	OK(cudaMalloc(&a, 1));
	OK(cudaMalloc(&b, 513));
	OK(cudaMalloc(&c, 512));
	CHECK((uintptr_t)a == base);
	CHECK((uintptr_t)b == base + 512);  /* 1 byte occupies 512 */
	CHECK((uintptr_t)c == base + 1536); /* 513 bytes occupy 1024 */
	CHECK(used_bytes() == 2048);

	OK(cudaFree(b));
	OK(cudaMalloc(&d, 100));
	CHECK(d == b); /* the lowest hole that fits */
	OK(cudaMalloc(&e, 1024));
	CHECK((uintptr_t)e == (uintptr_t)c + 512); /* the 512 B left of the hole is too small */
	OK(cudaMalloc(&f, 512));
	CHECK((uintptr_t)f == (uintptr_t)b + 512); /* ...but takes a 512 B request */
	CHECK(used_bytes() == 3072);

	OK(cudaMalloc(&z, 0)); /* zero bytes: success and NULL, as the real runtime */
	CHECK(z == NULL);
	CHECK_CUDA(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);

	OK(cudaFree(a));
	OK(cudaFree(c));
	OK(cudaFree(d));
	OK(cudaFree(e));
	OK(cudaFree(f));
	expect_clean();
}

static void
test_coalescing(void)
{
	void *p[4], *q;
	int i;

	for (i = 0; i < 4; i++)
		OK(cudaMalloc(&p[i], MiB));
	/* Free around b so that it has to merge on both sides. */
	OK(cudaFree(p[0]));
	OK(cudaFree(p[2]));
	CHECK(simcuda_check(0) == 0);
	OK(cudaFree(p[1]));
	CHECK(simcuda_check(0) == 0);
	OK(cudaMalloc(&q, 3 * MiB));
	CHECK(q == p[0]); /* only possible if the three holes became one */
	OK(cudaFree(q));
	OK(cudaFree(p[3]));
	expect_clean();
}

static void
test_fragmentation_and_last_error(void)
{
	void *p[4], *q = (void *)1, *r;
	size_t free_b, total_b;
	int i;

	for (i = 0; i < 4; i++)
		OK(cudaMalloc(&p[i], 256 * MiB));
	CHECK(used_bytes() == GiB);
	CHECK_CUDA(cudaMalloc(&q, 1), cudaErrorMemoryAllocation);
	CHECK(q == NULL);
	CHECK_CUDA(cudaGetLastError(), cudaErrorMemoryAllocation);
	CHECK_CUDA(cudaGetLastError(), cudaSuccess);

	OK(cudaFree(p[0]));
	OK(cudaFree(p[2]));
	OK(cudaMemGetInfo(&free_b, &total_b));
	CHECK(total_b == GiB && free_b == 512 * MiB);

	q = (void *)1;
	CHECK_CUDA(cudaMalloc(&q, 512 * MiB), cudaErrorMemoryAllocation);
	CHECK(q == NULL);
	OK(cudaMemGetInfo(&free_b, &total_b)); /* the failure changed nothing */
	CHECK(free_b == 512 * MiB);

	/* A later success does not overwrite the last error; peek does not clear it. */
	OK(cudaMalloc(&r, 256 * MiB));
	CHECK(r == p[0]);
	CHECK_CUDA(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
	CHECK_CUDA(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
	CHECK_CUDA(cudaGetLastError(), cudaErrorMemoryAllocation);
	CHECK_CUDA(cudaGetLastError(), cudaSuccess);
	CHECK_CUDA(cudaPeekAtLastError(), cudaSuccess);

	OK(cudaFree(r));
	OK(cudaFree(p[1]));
	OK(cudaFree(p[3]));
	expect_clean();
}

static void
test_invalid_free(void)
{
	void *p, *h;
	int local;
	size_t used;

	OK(cudaFree(NULL));
	OK(cudaMalloc(&p, 4096));
	OK(cudaMallocHost(&h, 64));
	used = used_bytes();

	CHECK_CUDA(cudaFree(&local), cudaErrorInvalidValue);	       /* host stack */
	CHECK_CUDA(cudaFree((char *)p + 512), cudaErrorInvalidValue);  /* interior */
	CHECK_CUDA(cudaFree((char *)p + 8192), cudaErrorInvalidValue); /* unallocated */
	CHECK_CUDA(cudaFree(h), cudaErrorInvalidValue);		       /* pinned host */
	CHECK_CUDA(cudaFreeHost(p), cudaErrorInvalidValue);	       /* device */
	CHECK_CUDA(cudaFreeHost(&local), cudaErrorInvalidValue);
	CHECK(used_bytes() == used && simcuda_check(0) == 0);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);

	OK(cudaFree(p));
	CHECK_CUDA(cudaFree(p), cudaErrorInvalidValue); /* double free */
	OK(cudaFreeHost(h));
	CHECK_CUDA(cudaFreeHost(h), cudaErrorInvalidValue);
	OK(cudaFreeHost(NULL));
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
	expect_clean();
}

static void
test_memset_memcpy(void)
{
	unsigned char host[3000], back[3000];
	unsigned char *p, *q;
	size_t i;

	OK(cudaMalloc((void **)&p, sizeof(host)));
	OK(cudaMalloc((void **)&q, sizeof(host)));
	OK(cudaMemset(p, 0xab, sizeof(host)));
	OK(cudaMemcpy(back, p, sizeof(back), cudaMemcpyDeviceToHost));
	for (i = 0; i < sizeof(back); i++)
		CHECK(back[i] == 0xab);

	for (i = 0; i < sizeof(host); i++)
		host[i] = (unsigned char)(i * 7);
	OK(cudaMemcpy(p, host, sizeof(host), cudaMemcpyHostToDevice));
	OK(cudaMemcpy(q, p, sizeof(host), cudaMemcpyDeviceToDevice));
	memset(back, 0, sizeof(back));
	OK(cudaMemcpy(back, q, sizeof(back), cudaMemcpyDefault));
	CHECK(memcmp(host, back, sizeof(host)) == 0);

	/* 3000 bytes occupy 3072: up to there is the allocation, beyond is not. */
	OK(cudaMemset(p, 0, 3072));
	CHECK_CUDA(cudaMemset(p, 0, 3073), cudaErrorInvalidValue);
	CHECK_CUDA(cudaMemset(host, 0, 16), cudaErrorInvalidValue);
	CHECK_CUDA(cudaMemcpy(host, p, 16, (enum cudaMemcpyKind)9),
		   cudaErrorInvalidMemcpyDirection);
	CHECK_CUDA(cudaMemcpy(p, host, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
	OK(cudaFree(p));
	CHECK_CUDA(cudaMemset(p, 0, 16), cudaErrorInvalidValue); /* freed */
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
	OK(cudaFree(q));
	expect_clean();
}

static void
test_pitch_managed_pinned(void)
{
	void *p, *m, *h, *h2;
	size_t pitch = 0, used;

	OK(cudaMallocPitch(&p, &pitch, 1000, 3));
	CHECK(pitch == 1024 && used_bytes() == 3072);
	OK(cudaMallocManaged(&m, 100 * KiB, cudaMemAttachGlobal));
	CHECK(used_bytes() == 3072 + 100 * KiB && in_device(m, 0));
	memset(m, 0x5a, 100 * KiB); /* managed memory is host-accessible */
	CHECK_CUDA(cudaMallocManaged(&m, 16, 0x80), cudaErrorInvalidValue);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);

	used = used_bytes();
	OK(cudaMallocHost(&h, 100));
	OK(cudaHostAlloc(&h2, 5 * MiB, cudaHostAllocMapped | cudaHostAllocPortable));
	CHECK(used_bytes() == used); /* pinned memory is not device capacity */
	CHECK(!in_device(h, 0) && !in_device(h, 1) && ((uintptr_t)h & 4095) == 0);
	memset(h, 1, 100);
	memset(h2, 2, 5 * MiB);
	CHECK_CUDA(cudaHostAlloc(&h, 16, 0x100), cudaErrorInvalidValue);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidValue);

	OK(cudaFree(p));
	OK(cudaFree(m));
	OK(cudaFreeHost(h2));
	OK(cudaFreeHost(h));
	expect_clean();
}

static uint64_t
pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
	uint64_t v = UINT64_MAX;

	OK(cudaMemPoolGetAttribute(pool, attr, &v));
	return v;
}

static void
test_pools(void)
{
	cudaMemPool_t def, pool;
	cudaStream_t s;
	struct cudaMemPoolProps props;
	void *a, *b, *c, *d, *x = (void *)1;

	OK(cudaDeviceGetDefaultMemPool(&def, 0));
	CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 2), cudaErrorInvalidDevice);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidDevice);

	/* The first request reserves a 2 MiB chunk, which cudaMemGetInfo shows. */
	OK(cudaMallocAsync(&a, 1000, 0));
	CHECK(in_device(a, 0));
	CHECK(used_bytes() == 2 * MiB);
	CHECK(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 2 * MiB);
	CHECK(pool_attr(def, cudaMemPoolAttrUsedMemCurrent) == 1024);
	OK(cudaMallocAsync(&b, 1000, cudaStreamPerThread));
	CHECK((uintptr_t)b == (uintptr_t)a + 1024); /* first fit inside the chunk */

	/* A plain cudaMalloc goes after the chunk in the device heap. */
	OK(cudaMalloc(&d, 512));
	CHECK((uintptr_t)d == (uintptr_t)a + 2 * MiB);

	/* Too big for the chunk: a new one of the request rounded up to 2 MiB. */
	OK(cudaStreamCreate(&s));
	OK(cudaMallocAsync(&c, 3 * MiB, s));
	CHECK(used_bytes() == 2 * MiB + 512 + 4 * MiB);
	CHECK(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 6 * MiB);

	/* Freed stream-ordered memory stays reserved in the pool... */
	OK(cudaFreeAsync(a, 0));
	OK(cudaFreeAsync(b, s));
	OK(cudaFreeAsync(c, s));
	OK(cudaStreamSynchronize(s));
	CHECK(pool_attr(def, cudaMemPoolAttrUsedMemCurrent) == 0);
	CHECK(pool_attr(def, cudaMemPoolAttrUsedMemHigh) == 2048 + 3 * MiB);
	CHECK(used_bytes() == 6 * MiB + 512);
	/* ...until trimmed: newest empty chunk first, down to minBytesToKeep. */
	OK(cudaMemPoolTrimTo(def, 3 * MiB));
	CHECK(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 2 * MiB);
	OK(cudaMemPoolTrimTo(def, 0));
	CHECK(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 0);
	CHECK(used_bytes() == 512);
	OK(cudaFree(d));

	/* Pool OOM: the device heap cannot grow the pool. */
	CHECK_CUDA(cudaMallocAsync(&x, 2 * GiB, 0), cudaErrorMemoryAllocation);
	CHECK(x == NULL);
	CHECK_CUDA(cudaGetLastError(), cudaErrorMemoryAllocation);

	/* An explicit pool on device 1, used while device 0 is current. */
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 1;
	OK(cudaMemPoolCreate(&pool, &props));
	OK(cudaMallocFromPoolAsync(&a, 4096, pool, s));
	CHECK(in_device(a, 1));
	OK(cudaMallocFromPoolAsync(&b, 4096, pool, s));
	OK(cudaFree(a)); /* cudaFree may free stream-ordered memory */
	CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent) == 4096);
	CHECK(simcuda_check(1) == 0);

	/* Destroy with a live block: the handle dies at once, the memory when b goes. */
	OK(cudaMemPoolDestroy(pool));
	CHECK_CUDA(cudaMallocFromPoolAsync(&x, 16, pool, s), cudaErrorInvalidValue);
	CHECK_CUDA(cudaMemPoolTrimTo(pool, 0), cudaErrorInvalidValue);
	OK(cudaSetDevice(1));
	CHECK(used_bytes() == 2 * MiB);
	OK(cudaFreeAsync(b, s));
	CHECK(used_bytes() == 0);
	OK(cudaSetDevice(0));

	CHECK_CUDA(cudaMemPoolDestroy(def), cudaErrorInvalidValue); /* default pools stay */
	props.location.id = 7;
	CHECK_CUDA(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidDevice);
	CHECK_CUDA(cudaMallocAsync(&x, 16, (cudaStream_t)&props), cudaErrorInvalidResourceHandle);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidResourceHandle);

	/* The _ptsz spellings are the same calls. */
	OK(cudaMallocAsync_ptsz(&a, 100, 0));
	OK(cudaFreeAsync_ptsz(a, 0));
	OK(cudaStreamDestroy(s));
	CHECK_CUDA(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidResourceHandle);
	expect_clean();
}

static void
test_device_reset(void)
{
	cudaMemPool_t def;
	cudaStream_t s;
	void *a, *m, *p, *h, *h1, *d, *x1;
	size_t pitch;

	/* Device 1 state that a reset of device 0 must not touch. */
	OK(cudaSetDevice(1));
	OK(cudaMalloc(&x1, 4096));
	OK(cudaMallocHost(&h1, 64));
	OK(cudaSetDevice(0));

	OK(cudaMalloc(&a, 10 * MiB));
	OK(cudaMallocManaged(&m, MiB, cudaMemAttachGlobal));
	OK(cudaMallocPitch(&p, &pitch, 100, 100));
	OK(cudaMallocHost(&h, 4096));
	OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	OK(cudaMallocAsync(&d, 1000, s));
	OK(cudaMemset(d, 7, 1000));

	OK(cudaDeviceReset());
	CHECK(used_bytes() == 2 * MiB); /* only the pool's chunk is left */
	CHECK_CUDA(cudaFree(a), cudaErrorInvalidValue);
	CHECK_CUDA(cudaFree(m), cudaErrorInvalidValue);
	CHECK_CUDA(cudaFree(p), cudaErrorInvalidValue);
	CHECK_CUDA(cudaFreeHost(h), cudaErrorInvalidValue);
	CHECK_CUDA(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidResourceHandle);
	OK(cudaDeviceGetDefaultMemPool(&def, 0));
	CHECK(pool_attr(def, cudaMemPoolAttrUsedMemCurrent) == 1024);
	OK(cudaFreeAsync(d, 0)); /* the stream-ordered block survived */

	OK(cudaSetDevice(1));
	CHECK(used_bytes() == 4096);
	OK(cudaFree(x1));
	OK(cudaFreeHost(h1));
	expect_clean();
}

struct thread_result {
	int device;
};

static void *
thread_current_device(void *arg)
{
	struct thread_result *r = arg;

	if (cudaGetDevice(&r->device) != cudaSuccess)
		r->device = -1;
	return NULL;
}

static void
test_multi_device(void)
{
	struct thread_result r = {-2};
	pthread_t t;
	cudaStream_t s1;
	void *p0, *p1, *q;
	size_t free_b, total_b;
	int dev;

	CHECK_CUDA(cudaSetDevice(2), cudaErrorInvalidDevice);
	CHECK_CUDA(cudaSetDevice(-1), cudaErrorInvalidDevice);
	CHECK_CUDA(cudaGetLastError(), cudaErrorInvalidDevice);
	OK(cudaGetDevice(&dev));
	CHECK(dev == 0);

	OK(cudaMalloc(&p0, 3 * MiB));
	OK(cudaSetDevice(1));
	OK(cudaGetDevice(&dev));
	CHECK(dev == 1);
	OK(cudaMalloc(&p1, 5 * MiB));
	CHECK(in_device(p0, 0) && in_device(p1, 1));
	CHECK((uintptr_t)p1 == device_base(1));
	OK(cudaMemGetInfo(&free_b, &total_b));
	CHECK(total_b == GiB && free_b == GiB - 5 * MiB);
	OK(cudaStreamCreate(&s1));

	/* The current device is per thread: a new thread starts on device 0. */
	CHECK(pthread_create(&t, NULL, thread_current_device, &r) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(r.device == 0);

	/* A stream remembers its device: async memory goes there whatever is current. */
	OK(cudaSetDevice(0));
	CHECK(used_bytes() == 3 * MiB);
	OK(cudaMallocAsync(&q, 100, s1));
	CHECK(in_device(q, 1));
	CHECK(used_bytes() == 3 * MiB);
	OK(cudaFreeAsync(q, s1));
	OK(cudaFree(p1)); /* freeing does not need the owning device to be current */
	OK(cudaFree(p0));
	OK(cudaStreamDestroy(s1));
	expect_clean();
}

// --- concurrency --------------------------------------------------------------------------

#define STRESS_THREADS 16
#define STRESS_ITERS 1500
#define STRESS_SLOTS 32

struct stress_arg {
	int id;
	int failed;
};

struct stress_slot {
	unsigned char *p;
	size_t size;
	unsigned char fill;
};

/* Check that a block still holds its fill: another thread's block placed on top would not. */
static int
stress_verify(const struct stress_slot *s, unsigned char *buf)
{
	size_t i;

	if (cudaMemcpy(buf, s->p, s->size, cudaMemcpyDeviceToHost) != cudaSuccess)
		return -1;
	for (i = 0; i < s->size; i++)
		if (buf[i] != s->fill)
			return -1;
	return 0;
}

static void *
stress_thread(void *opaque)
{
	struct stress_arg *arg = opaque;
	struct stress_slot slots[STRESS_SLOTS] = {{0}};
	unsigned seed = 0x9e3779b9u * (unsigned)(arg->id + 1);
	unsigned char *buf = malloc(64 * KiB);
	cudaStream_t stream;
	int i, device = arg->id % 2;

	if (!buf || cudaSetDevice(device) != cudaSuccess ||
	    cudaStreamCreate(&stream) != cudaSuccess) {
		arg->failed = __LINE__;
		return NULL;
	}
	for (i = 0; i < STRESS_ITERS && !arg->failed; i++) {
		struct stress_slot *s;
		cudaError_t err;

		seed = seed * 1103515245u + 12345u;
		s = &slots[(seed >> 8) % STRESS_SLOTS];
		if (s->p) {
			if (stress_verify(s, buf) < 0)
				arg->failed = __LINE__;
			else if ((seed & 1 ? cudaFree(s->p) : cudaFreeAsync(s->p, stream)) !=
				 cudaSuccess)
				arg->failed = __LINE__;
			s->p = NULL;
			continue;
		}
		s->size = 1 + (seed >> 12) % (64 * KiB);
		s->fill = (unsigned char)(arg->id * 16 + i);
		err = seed & 2 ? cudaMalloc((void **)&s->p, s->size)
			       : cudaMallocAsync((void **)&s->p, s->size, stream);
		if (err != cudaSuccess || !in_device(s->p, device) ||
		    cudaMemset(s->p, s->fill, s->size) != cudaSuccess)
			arg->failed = __LINE__;
	}
	for (i = 0; i < STRESS_SLOTS; i++) {
		if (!slots[i].p)
			continue;
		if (stress_verify(&slots[i], buf) < 0 || cudaFree(slots[i].p) != cudaSuccess)
			arg->failed = __LINE__;
	}
	if (cudaStreamDestroy(stream) != cudaSuccess)
		arg->failed = __LINE__;
	free(buf);
	return NULL;
}

static void
test_stress(void)
{
	pthread_t t[STRESS_THREADS];
	struct stress_arg args[STRESS_THREADS];
	int i;

	for (i = 0; i < STRESS_THREADS; i++) {
		args[i].id = i;
		args[i].failed = 0;
		CHECK(pthread_create(&t[i], NULL, stress_thread, &args[i]) == 0);
	}
	for (i = 0; i < STRESS_THREADS; i++) {
		CHECK(pthread_join(t[i], NULL) == 0);
		if (args[i].failed)
			fprintf(stderr, "stress thread %d failed at line %d\n", i, args[i].failed);
		CHECK(args[i].failed == 0);
	}
	CHECK(simcuda_check(0) == 0 && simcuda_check(1) == 0);
	expect_clean();
}

// --- the other environments ---------------------------------------------------------------

static int
run_env_invalid(void)
{
	size_t free_b, total_b;

	/* SIMCUDA_MEM_BYTES=lots: one warning on stderr, then the 1 GiB default. */
	OK(cudaMemGetInfo(&free_b, &total_b));
	CHECK(total_b == GiB && free_b == GiB);
	return 0;
}

static int
run_env_suffix(void)
{
	size_t free_b, total_b;
	void *p = (void *)1;
	int n, d;

	OK(cudaGetDeviceCount(&n));
	CHECK(n == 3);
	for (d = 0; d < 3; d++) {
		OK(cudaSetDevice(d));
		OK(cudaMemGetInfo(&free_b, &total_b));
		CHECK(total_b == 64 * MiB && free_b == 64 * MiB);
		CHECK(d == 0 || device_base(d) != device_base(d - 1));
	}
	CHECK_CUDA(cudaMalloc(&p, 64 * MiB + 1), cudaErrorMemoryAllocation);
	CHECK(p == NULL);
	OK(cudaMalloc(&p, 64 * MiB));
	OK(cudaFree(p));
	return 0;
}

static int
run_no_device(void)
{
	void *p = (void *)1;
	int n = -1, v;

	CHECK_CUDA(cudaGetDeviceCount(&n), cudaErrorNoDevice);
	CHECK(n == 0);
	CHECK_CUDA(cudaMalloc(&p, 16), cudaErrorNoDevice);
	CHECK_CUDA(cudaSetDevice(0), cudaErrorNoDevice);
	CHECK_CUDA(cudaGetLastError(), cudaErrorNoDevice);
	OK(cudaDriverGetVersion(&v));
	CHECK(strcmp(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected") ==
	      0);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "env-invalid") == 0)
		return run_env_invalid();
	if (strcmp(mode, "env-suffix") == 0)
		return run_env_suffix();
	if (strcmp(mode, "no-device") == 0)
		return run_no_device();
	if (mode[0] != '\0') {
		fprintf(stderr, "usage: %s [env-invalid|env-suffix|no-device]\n", argv[0]);
		return 2;
	}

	test_heap_model();
	test_identity();
	test_driver_loaded();
	test_first_fit_alignment();
	test_coalescing();
	test_fragmentation_and_last_error();
	test_invalid_free();
	test_memset_memcpy();
	test_pitch_managed_pinned();
	test_pools();
	test_device_reset();
	test_multi_device();
	test_stress();
	printf("simcuda: all checks passed\n");
	return 0;
}
