// @brief The GPU proof's CUDA program: known allocations of every memory kind of the trace format,
// built with nvcc's default *static* cudart (so LD_PRELOAD interposition sees none of it; only
// CUPTI does), printing exactly what it did so tests/gpu/check_trace.py can compare a trace with
// it.
//
//   nvcc -O2 -o static_program static_program.cu -lcuda      (no -cudart shared)
//   static_program [all|reset|import] [--expect FILE]
//
//   all     every kind once or more, some leaks on purpose, one failed (out of memory) cudaMalloc
//           and one failed cudaFree; see run_all() for the list
//   reset   all, then cudaDeviceReset() with allocations live, then a little more after it
//   import  VMM export/import in the same process (cuMemExportToShareableHandle to a POSIX fd,
//           cuMemImportFromShareableHandle, cuMemMap of the imported handle): the "imported"
//           kind. Exits 77 when the device cannot export POSIX fds.
//
// What it did is kept in a small model that applies the format's rules (issue-3 spec): pairing
// by address per namespace (memory addresses, VMM handles, mapped ranges, reservations, array
// handles), cuMemUnmap ending every mapping inside its range, a reset releasing the context's
// device/pinned/registered/managed/array/imported allocations but not pool/vmm/graph ones.
// The model's totals are written as JSON to --expect FILE (and a one-line summary to stdout):
//
//   {"program":"static_program","mode":"all","pid":N,"cudart":"static","retains":1,
//    "kinds":{"device":{"allocs":..,"alloc_bytes":..,"frees":..,"free_bytes":..,"reset_frees":..,
//                       "reset_bytes":..,"live":..,"live_bytes":..,"failed":..},...},
//    "apis":{"cudaMalloc":{"alloc":3,"free":0,"failed":1},...},
//    "resets":R,"failed_allocs":F,"failed_frees":B,"kernels":K,"notes":[..],"info":{..}}
//
// "apis" counts calls (a cuMemUnmap that ends two mappings is one "free" call); "kinds" counts
// allocations. Any CUDA call that fails unexpectedly ends the program with exit status 2, after
// writing the account so far with a note "stopped at line N: ..." (the trace can be checked up to
// there).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A call that must succeed; on failure the account of what was done so far is still written
 * (with a note saying where it stopped), so the trace can be checked up to that point. */
#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess)                                                            \
			fail_at(__LINE__, #call, cudaGetErrorString(rc_), (int)rc_);               \
	} while (0)

#define CKD(call)                                                                                  \
	do {                                                                                       \
		CUresult rc_ = (call);                                                             \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			const char *s_ = NULL;                                                     \
			cuGetErrorName(rc_, &s_);                                                  \
			fail_at(__LINE__, #call, s_ ? s_ : "?", (int)rc_);                         \
		}                                                                                  \
	} while (0)

static void fail_at(int line, const char *call, const char *err, int rc);

// --- the model of what the program did -----------------------------------------------------------

enum kind {
	K_DEVICE,
	K_PINNED,
	K_REGISTERED,
	K_MANAGED,
	K_POOL,
	K_ARRAY,
	K_VMM_RESERVE,
	K_VMM_PHYSICAL,
	K_VMM_MAPPED,
	K_IMPORTED,
	K_GRAPH,
	K_COUNT,
};

static const char *const kind_names[K_COUNT] = {
    "device",	   "pinned",	   "registered", "managed",  "pool",  "array",
    "vmm_reserve", "vmm_physical", "vmm_mapped", "imported", "graph",
};

enum ns { NS_MEM, NS_HANDLE, NS_MAPPED, NS_RESERVE, NS_ARRAY };

struct counts {
	unsigned long long allocs, alloc_bytes, frees, free_bytes, reset_frees, reset_bytes, failed;
};

struct live {
	int used, kind, ns, epoch;
	unsigned long long ptr, size;
};

struct api_count {
	const char *name;
	unsigned long long alloc, free, failed;
};

#define MAX_LIVE 256
#define MAX_APIS 64
#define MAX_NOTES 16

static struct {
	struct counts k[K_COUNT];
	struct live live[MAX_LIVE];
	struct api_count apis[MAX_APIS];
	int napis, epoch, resets, kernels, nnotes, retains;
	unsigned long long failed_allocs, failed_frees;
	const char *notes[MAX_NOTES];
	char info[1024];
} m;

static struct api_count *
api(const char *name)
{
	for (int i = 0; i < m.napis; i++)
		if (strcmp(m.apis[i].name, name) == 0)
			return &m.apis[i];
	if (m.napis == MAX_APIS) {
		fprintf(stderr, "static_program: too many APIs\n");
		exit(2);
	}
	m.apis[m.napis].name = name;
	return &m.apis[m.napis++];
}

static void
note(const char *s)
{
	if (m.nnotes < MAX_NOTES)
		m.notes[m.nnotes++] = s;
}

static void
info(const char *key, unsigned long long v)
{
	size_t n = strlen(m.info);
	snprintf(m.info + n, sizeof(m.info) - n, "%s\"%s\":%llu", n ? "," : "", key, v);
}

static void
did_alloc(const char *call, int kind, int ns, unsigned long long ptr, unsigned long long size)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		if (m.live[i].used && m.live[i].ns == ns && m.live[i].ptr == ptr) {
			fprintf(stderr, "static_program: %s returned live %s 0x%llx\n", call,
				kind_names[m.live[i].kind], ptr);
			note("an allocation returned an address/handle that was still live");
		}
	}
	for (int i = 0; i < MAX_LIVE; i++) {
		if (!m.live[i].used) {
			m.live[i] = (struct live){1, kind, ns, m.epoch, ptr, size};
			m.k[kind].allocs++;
			m.k[kind].alloc_bytes += size;
			api(call)->alloc++;
			return;
		}
	}
	fprintf(stderr, "static_program: model full\n");
	exit(2);
}

static void
did_fail_alloc(const char *call, int kind)
{
	m.k[kind].failed++;
	m.failed_allocs++;
	api(call)->failed++;
}

static void
did_free(const char *call, int ns, unsigned long long ptr)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		struct live *e = &m.live[i];
		if (e->used && e->ns == ns && e->ptr == ptr) {
			e->used = 0;
			m.k[e->kind].frees++;
			m.k[e->kind].free_bytes += e->size;
			api(call)->free++;
			return;
		}
	}
	fprintf(stderr, "static_program: %s of 0x%llx that the model does not hold\n", call, ptr);
	exit(2);
}

static void
did_fail_free(const char *call)
{
	m.failed_frees++;
	api(call)->failed++;
}

/* cuMemRetainAllocationHandle: a reference on a live handle; the next cuMemRelease drops it */
static void
did_retain(void)
{
	m.retains++;
}

static void
did_release_ref(void)
{
	api("cuMemRelease")->free++;
}

static void
did_unmap(unsigned long long ptr, unsigned long long size)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		struct live *e = &m.live[i];
		if (e->used && e->ns == NS_MAPPED && e->ptr >= ptr && e->ptr < ptr + size) {
			e->used = 0;
			m.k[e->kind].frees++;
			m.k[e->kind].free_bytes += e->size;
		}
	}
	api("cuMemUnmap")->free++;
}

static void
did_reset(void)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		struct live *e = &m.live[i];
		bool released = e->kind == K_DEVICE || e->kind == K_PINNED ||
				e->kind == K_REGISTERED || e->kind == K_MANAGED ||
				e->kind == K_ARRAY || e->kind == K_IMPORTED;
		if (e->used && released && e->epoch == m.epoch) {
			e->used = 0;
			m.k[e->kind].reset_frees++;
			m.k[e->kind].reset_bytes += e->size;
		}
	}
	m.resets++;
	m.epoch++; /* the next context */
}

static const char *expect_path, *run_mode = "all";
static char failure[512];

static void write_expect(const char *path, const char *mode);

static void
fail_at(int line, const char *call, const char *err, int rc)
{
	fprintf(stderr, "static_program:%d: %s: %s (%d)\n", line, call, err, rc);
	snprintf(failure, sizeof(failure), "stopped at line %d: %s failed: %s (%d)", line, call,
		 err, rc);
	for (char *c = failure; *c; c++)
		if (*c == '"' || *c == '\\')
			*c = '\'';
	note(failure);
	write_expect(expect_path, run_mode);
	exit(2);
}

static unsigned long long
u(const void *p)
{
	return (unsigned long long)(uintptr_t)p;
}

static void
write_expect(const char *path, const char *mode)
{
	Dl_info dl;
	const char *cudart = "static";
	cudaError_t (*rt_malloc)(void **, size_t) = cudaMalloc;
	if (dladdr((void *)rt_malloc, &dl) && dl.dli_fname && strstr(dl.dli_fname, "libcudart"))
		cudart = "shared";

	FILE *f = path ? fopen(path, "w") : NULL;
	if (path && !f) {
		fprintf(stderr, "static_program: cannot write %s\n", path);
		exit(2);
	}
	for (int pass = 0; pass < 2; pass++) {
		FILE *o = pass == 0 ? f : stdout;
		if (!o)
			continue;
		fprintf(o,
			"{\"program\":\"static_program\",\"mode\":\"%s\",\"pid\":%d,\"cudart\":\"%"
			"s\",\"kinds\":{",
			mode, (int)getpid(), cudart);
		for (int k = 0; k < K_COUNT; k++) {
			unsigned long long live = 0, live_bytes = 0;
			for (int i = 0; i < MAX_LIVE; i++) {
				if (m.live[i].used && m.live[i].kind == k) {
					live++;
					live_bytes += m.live[i].size;
				}
			}
			const struct counts *c = &m.k[k];
			fprintf(o,
				"%s\"%s\":{\"allocs\":%llu,\"alloc_bytes\":%llu,\"frees\":%llu,"
				"\"free_bytes\":%llu,"
				"\"reset_frees\":%llu,\"reset_bytes\":%llu,\"live\":%llu,\"live_"
				"bytes\":%llu,"
				"\"failed\":%llu}",
				k ? "," : "", kind_names[k], c->allocs, c->alloc_bytes, c->frees,
				c->free_bytes, c->reset_frees, c->reset_bytes, live, live_bytes,
				c->failed);
		}
		fputs("},\"apis\":{", o);
		for (int i = 0; i < m.napis; i++)
			fprintf(o, "%s\"%s\":{\"alloc\":%llu,\"free\":%llu,\"failed\":%llu}",
				i ? "," : "", m.apis[i].name, m.apis[i].alloc, m.apis[i].free,
				m.apis[i].failed);
		fprintf(
		    o,
		    "},\"resets\":%d,\"retains\":%d,\"failed_allocs\":%llu,\"failed_frees\":%llu,"
		    "\"kernels\":%d,\"notes\":[",
		    m.resets, m.retains, m.failed_allocs, m.failed_frees, m.kernels);
		for (int i = 0; i < m.nnotes; i++)
			fprintf(o, "%s\"%s\"", i ? "," : "", m.notes[i]);
		fprintf(o, "],\"info\":{%s}}\n", m.info);
		if (pass == 0)
			fclose(o);
	}
}

// --- kernels -------------------------------------------------------------------------------------

__global__ void
touch(unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

static void
touch_on(void *p, size_t n, cudaStream_t s, unsigned char v)
{
	touch<<<64, 256, 0, s>>>((unsigned char *)p, n, v);
	CK(cudaGetLastError());
	m.kernels++;
}

/* The kernel really wrote the memory: read one byte back. */
static void
verify(const void *dev, size_t off, unsigned char v)
{
	unsigned char got = 0;
	CK(cudaMemcpy(&got, (const unsigned char *)dev + off, 1, cudaMemcpyDefault));
	if (got != v)
		fail_at(__LINE__, "verify: a kernel's write read back", "wrong value", (int)got);
}

// --- the cases -----------------------------------------------------------------------------------

static int dev;
static cudaStream_t s;

static void
device_memory(void)
{
	void *a, *b, *c, *p;
	size_t pitch;
	CUdeviceptr d;

	CK(cudaMalloc(&a, (1 << 20) + 3)); /* odd sizes: the trace must keep the requested bytes */
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(a), (1 << 20) + 3);
	CK(cudaMalloc(&b, 64 << 20));
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(b), 64 << 20);
	CK(cudaMalloc(&c, 256)); /* leaked */
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(c), 256);
	touch_on(a, (1 << 20) + 3, s, 7);
	touch_on(b, 64 << 20, s, 8);
	CK(cudaStreamSynchronize(s));
	verify(a, 1 << 20, 7);
	CK(cudaFree(a));
	did_free("cudaFree", NS_MEM, u(a));
	CK(cudaFree(b));
	did_free("cudaFree", NS_MEM, u(b));

	CK(cudaMallocPitch(&p, &pitch, 1000, 10));
	did_alloc("cudaMallocPitch", K_DEVICE, NS_MEM, u(p), (unsigned long long)pitch * 10);
	info("pitch", pitch);
	CK(cudaFree(p));
	did_free("cudaFree", NS_MEM, u(p));

	/* the driver API directly (api "cuMemAlloc_v2", no runtime call above it) */
	CKD(cuMemAlloc(&d, 3 << 20));
	did_alloc("cuMemAlloc_v2", K_DEVICE, NS_MEM, d, 3 << 20);
	CKD(cuMemFree(d));
	did_free("cuMemFree_v2", NS_MEM, d);
}

static void
host_memory(void)
{
	void *h1, *h2, *h3;

	CK(cudaMallocHost(&h1, 1 << 20)); /* the C API (void **, size_t), not the C++ template */
	did_alloc("cudaMallocHost", K_PINNED, NS_MEM, u(h1), 1 << 20);
	CK(cudaHostAlloc(&h2, (2 << 20) + 100, cudaHostAllocDefault));
	did_alloc("cudaHostAlloc", K_PINNED, NS_MEM, u(h2), (2 << 20) + 100);
	CK(cudaHostAlloc(&h3, 4096, cudaHostAllocPortable | cudaHostAllocMapped)); /* leaked */
	did_alloc("cudaHostAlloc", K_PINNED, NS_MEM, u(h3), 4096);
	memset(h1, 1, 1 << 20);
	CK(cudaFreeHost(h1));
	did_free("cudaFreeHost", NS_MEM, u(h1));
	CK(cudaFreeHost(h2));
	did_free("cudaFreeHost", NS_MEM, u(h2));

	/* page-locking existing memory: kind "registered" */
	size_t n = 8 << 20;
	void *buf = aligned_alloc(4096, n), *d;
	if (!buf)
		exit(2);
	memset(buf, 3, n);
	CK(cudaHostRegister(buf, n, cudaHostRegisterDefault));
	did_alloc("cudaHostRegister", K_REGISTERED, NS_MEM, u(buf), n);
	CK(cudaMalloc(&d, n));
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(d), n);
	CK(cudaMemcpyAsync(d, buf, n, cudaMemcpyHostToDevice, s));
	CK(cudaStreamSynchronize(s));
	verify(d, n - 1, 3);
	CK(cudaFree(d));
	did_free("cudaFree", NS_MEM, u(d));
	CK(cudaHostUnregister(buf));
	did_free("cudaHostUnregister", NS_MEM, u(buf));
	free(buf);
}

static void
managed_memory(void)
{
	void *m1, *m2;

	CK(cudaMallocManaged(&m1, 1 << 20, cudaMemAttachGlobal));
	did_alloc("cudaMallocManaged", K_MANAGED, NS_MEM, u(m1), 1 << 20);
	CK(cudaMallocManaged(&m2, 4096 + 1, cudaMemAttachGlobal)); /* leaked */
	did_alloc("cudaMallocManaged", K_MANAGED, NS_MEM, u(m2), 4096 + 1);
	touch_on(m1, 1 << 20, s, 9);
	CK(cudaStreamSynchronize(s));
	if (((unsigned char *)m1)[12345] != 9)
		fail_at(__LINE__, "managed memory read on the host", "wrong value",
			((unsigned char *)m1)[12345]);
	CK(cudaFree(m1));
	did_free("cudaFree", NS_MEM, u(m1));
}

static void
pool_memory(void)
{
	void *p[8];
	cudaMemPool_t def, pool;
	unsigned long long reserved = 0;

	/* the device's default pool: 8 allocations, 6 freed stream-ordered, 1 by cudaFree, 1 leaked
	 */
	for (int i = 0; i < 8; i++) {
		size_t size = (size_t)(i + 1) * 100000 + 1;
		CK(cudaMallocAsync(&p[i], size, s));
		did_alloc("cudaMallocAsync", K_POOL, NS_MEM, u(p[i]), size);
		touch_on(p[i], size, s, (unsigned char)i);
	}
	for (int i = 0; i < 6; i++) {
		CK(cudaFreeAsync(p[i], s));
		did_free("cudaFreeAsync", NS_MEM, u(p[i]));
	}
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(p[6])); /* a pool pointer freed by cudaFree (allowed after the stream's work) */
	did_free("cudaFree", NS_MEM, u(p[6]));
	CK(cudaDeviceGetDefaultMemPool(&def, dev));
	CK(cudaMemPoolTrimTo(def, 0));
	CK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReservedMemCurrent, &reserved));
	info("default_pool_reserved_after_trim", reserved);

	/* a created pool: 4 allocations, 3 freed stream-ordered, 1 by cudaFree, then destroyed */
	struct cudaMemPoolProps props;
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	CK(cudaMemPoolCreate(&pool, &props));
	void *q[4];
	for (int i = 0; i < 4; i++) {
		CK(cudaMallocFromPoolAsync(&q[i], 1 << 20, pool, s));
		did_alloc("cudaMallocFromPoolAsync", K_POOL, NS_MEM, u(q[i]), 1 << 20);
		touch_on(q[i], 1 << 20, s, 5);
	}
	for (int i = 0; i < 3; i++) {
		CK(cudaFreeAsync(q[i], s));
		did_free("cudaFreeAsync", NS_MEM, u(q[i]));
	}
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(q[3]));
	did_free("cudaFree", NS_MEM, u(q[3]));
	CK(cudaMemPoolTrimTo(pool, 0));
	CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
	info("created_pool_reserved_after_trim", reserved);
	CK(cudaMemPoolDestroy(pool));
}

static void
array_memory(void)
{
	cudaArray_t arr;
	struct cudaChannelFormatDesc desc =
	    cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);

	CK(cudaMallocArray(&arr, &desc, 256, 64, 0));
	did_alloc("cudaMallocArray", K_ARRAY, NS_ARRAY, u(arr), 256 * 64 * 4);
	CK(cudaFreeArray(arr));
	did_free("cudaFreeArray", NS_ARRAY, u(arr));
}

static CUmemAllocationProp
vmm_prop(CUmemAllocationHandleType handles)
{
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	prop.requestedHandleTypes = handles;
	return prop;
}

static void
vmm_access(CUdeviceptr va, size_t size)
{
	CUmemAccessDesc acc;
	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CKD(cuMemSetAccess(va, size, &acc, 1));
}

static size_t
vmm_granularity(void)
{
	CUmemAllocationProp prop = vmm_prop(CU_MEM_HANDLE_TYPE_NONE);
	size_t g = 0;
	CKD(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	info("vmm_granularity", g);
	return g;
}

static void
vmm_memory(void)
{
	size_t g = vmm_granularity();
	CUmemAllocationProp prop = vmm_prop(CU_MEM_HANDLE_TYPE_NONE);
	CUmemGenericAllocationHandle h1, h2, h3;
	CUdeviceptr va, va2;

	/* two physical allocations mapped side by side into one reservation, unmapped in one call
	 */
	CKD(cuMemCreate(&h1, 2 * g, &prop, 0));
	did_alloc("cuMemCreate", K_VMM_PHYSICAL, NS_HANDLE, h1, 2 * g);
	CKD(cuMemCreate(&h2, g, &prop, 0));
	did_alloc("cuMemCreate", K_VMM_PHYSICAL, NS_HANDLE, h2, g);
	CKD(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
	did_alloc("cuMemAddressReserve", K_VMM_RESERVE, NS_RESERVE, va, 4 * g);
	CKD(cuMemMap(va, 2 * g, 0, h1, 0));
	did_alloc("cuMemMap", K_VMM_MAPPED, NS_MAPPED, va, 2 * g);
	CKD(cuMemMap(va + 2 * g, g, 0, h2, 0));
	did_alloc("cuMemMap", K_VMM_MAPPED, NS_MAPPED, va + 2 * g, g);
	vmm_access(va, 3 * g);
	/* a reference taken from a mapped address and dropped again: h2 must stay live */
	CUmemGenericAllocationHandle again;
	CKD(cuMemRetainAllocationHandle(&again, (void *)(va + 2 * g)));
	did_retain();
	if (again != h2)
		note("cuMemRetainAllocationHandle returned another value than the mapped handle");
	CKD(cuMemRelease(again));
	did_release_ref();
	touch_on((void *)va, 3 * g, s, 4);
	CK(cudaStreamSynchronize(s));
	verify((void *)va, 3 * g - 1, 4);
	CKD(cuMemUnmap(va, 3 * g));
	did_unmap(va, 3 * g);
	CKD(cuMemRelease(h1));
	did_free("cuMemRelease", NS_HANDLE, h1);
	CKD(cuMemRelease(h2));
	did_free("cuMemRelease", NS_HANDLE, h2);
	CKD(cuMemAddressFree(va, 4 * g));
	did_free("cuMemAddressFree", NS_RESERVE, va);

	/* the common "release the handle once mapped" pattern, then leaked: the handle record ends
	 * at cuMemRelease while its mapping and the reservation stay live to the end */
	CKD(cuMemCreate(&h3, g, &prop, 0));
	did_alloc("cuMemCreate", K_VMM_PHYSICAL, NS_HANDLE, h3, g);
	CKD(cuMemAddressReserve(&va2, g, 0, 0, 0));
	did_alloc("cuMemAddressReserve", K_VMM_RESERVE, NS_RESERVE, va2, g);
	CKD(cuMemMap(va2, g, 0, h3, 0));
	did_alloc("cuMemMap", K_VMM_MAPPED, NS_MAPPED, va2, g);
	vmm_access(va2, g);
	CKD(cuMemRelease(h3));
	did_free("cuMemRelease", NS_HANDLE, h3);
	touch_on((void *)va2, g, s, 6);
	CK(cudaStreamSynchronize(s));
}

static void
graph_memory(void)
{
	cudaGraph_t g, g2, g3;
	cudaGraphExec_t ge, ge2, ge3;
	cudaGraphNode_t an, kn, fn, an3, kn3;
	struct cudaMemAllocNodeParams ap;
	struct cudaKernelNodeParams kp;
	size_t n1 = 8 << 20, n3 = 2 << 20;
	unsigned char v = 11;
	unsigned long long reserved = 0;

	/* explicit: alloc node -> kernel -> free node, launched three times */
	CK(cudaGraphCreate(&g, 0));
	memset(&ap, 0, sizeof(ap));
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = dev;
	ap.bytesize = n1;
	CK(cudaGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	did_alloc("cudaGraphAddMemAllocNode", K_GRAPH, NS_MEM, u(ap.dptr), n1);
	void *ptr1 = ap.dptr;
	void *args1[] = {&ptr1, &n1, &v};
	memset(&kp, 0, sizeof(kp));
	kp.func = (void *)touch;
	kp.gridDim = dim3(64);
	kp.blockDim = dim3(256);
	kp.kernelParams = args1;
	CK(cudaGraphAddKernelNode(&kn, g, &an, 1, &kp));
	CK(cudaGraphAddMemFreeNode(&fn, g, &kn, 1, ptr1));
	did_free("cudaGraphAddMemFreeNode", NS_MEM, u(ptr1));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 3; i++) {
		CK(cudaGraphLaunch(ge, s));
		m.kernels++;
	}
	CK(cudaStreamSynchronize(s));

	/* stream capture of cudaMallocAsync / kernel / cudaFreeAsync (global capture mode) */
	void *gp;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaMallocAsync(&gp, 4 << 20, s));
	touch<<<64, 256, 0, s>>>((unsigned char *)gp, 4 << 20, 12);
	CK(cudaGetLastError());
	CK(cudaFreeAsync(gp, s));
	CK(cudaStreamEndCapture(s, &g2));
	did_alloc("cudaMallocAsync", K_GRAPH, NS_MEM, u(gp), 4 << 20);
	did_free("cudaFreeAsync", NS_MEM, u(gp));
	CK(cudaGraphInstantiate(&ge2, g2, 0));
	for (int i = 0; i < 2; i++) {
		CK(cudaGraphLaunch(ge2, s));
		m.kernels++;
	}
	CK(cudaStreamSynchronize(s));

	/* an allocation node without a free node: the memory outlives the launch and is freed
	 * with cudaFree */
	CK(cudaGraphCreate(&g3, 0));
	ap.bytesize = n3;
	ap.dptr = NULL;
	CK(cudaGraphAddMemAllocNode(&an3, g3, NULL, 0, &ap));
	did_alloc("cudaGraphAddMemAllocNode", K_GRAPH, NS_MEM, u(ap.dptr), n3);
	void *ptr3 = ap.dptr;
	void *args3[] = {&ptr3, &n3, &v};
	kp.kernelParams = args3;
	CK(cudaGraphAddKernelNode(&kn3, g3, &an3, 1, &kp));
	CK(cudaGraphInstantiate(&ge3, g3, 0));
	CK(cudaGraphLaunch(ge3, s));
	m.kernels++;
	CK(cudaStreamSynchronize(s));
	verify(ptr3, n3 - 1, v);
	CK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemCurrent, &reserved));
	info("graph_reserved_after_launches", reserved);
	CK(cudaFree(ptr3));
	did_free("cudaFree", NS_MEM, u(ptr3));

	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphExecDestroy(ge2));
	CK(cudaGraphExecDestroy(ge3));
	CK(cudaGraphDestroy(g));
	CK(cudaGraphDestroy(g2));
	CK(cudaGraphDestroy(g3));
	CK(cudaDeviceSynchronize());
	CK(cudaDeviceGraphMemTrim(dev));
	CK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemCurrent, &reserved));
	info("graph_reserved_after_trim", reserved);
}

static void
failures(void)
{
	struct cudaDeviceProp prop;
	void *x = NULL;

	/* out of memory: twice the device's memory */
	CK(cudaGetDeviceProperties(&prop, dev));
	size_t huge = prop.totalGlobalMem * 2;
	cudaError_t rc = cudaMalloc(&x, huge);
	if (rc == cudaSuccess) {
		note("the huge cudaMalloc succeeded");
		did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(x), huge);
		CK(cudaFree(x));
		did_free("cudaFree", NS_MEM, u(x));
	} else {
		did_fail_alloc("cudaMalloc", K_DEVICE);
		info("oom_request_bytes", huge);
		info("oom_result", (unsigned long long)rc);
	}
	(void)cudaGetLastError();

	/* a free of an address nobody allocated */
	rc = cudaFree((void *)(uintptr_t)0x10);
	if (rc == cudaSuccess) {
		note("cudaFree(0x10) succeeded");
	} else {
		did_fail_free("cudaFree");
		info("bad_free_result", (unsigned long long)rc);
	}
	(void)cudaGetLastError();
}

static void
after_reset(void)
{
	void *a, *b;

	CK(cudaDeviceReset());
	did_reset();
	CK(cudaSetDevice(dev));
	CK(cudaStreamCreate(&s)); /* the old stream died with the context */
	CK(cudaMalloc(&a, 1 << 20));
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(a), 1 << 20);
	CK(cudaMalloc(&b, 512 << 10)); /* leaked, in the new context */
	did_alloc("cudaMalloc", K_DEVICE, NS_MEM, u(b), 512 << 10);
	touch_on(a, 1 << 20, s, 1);
	touch_on(b, 512 << 10, s, 2);
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(a));
	did_free("cudaFree", NS_MEM, u(a));
}

/* Same-process VMM export/import: returns 77 when the device cannot export POSIX fds. */
static int
import_memory(void)
{
	CUdevice cudev;
	int posix_fd_ok = 0;
	size_t g = vmm_granularity();
	CUmemGenericAllocationHandle h, hi;
	CUdeviceptr va;
	int fd = -1;

	CKD(cuDeviceGet(&cudev, dev));
	CKD(cuDeviceGetAttribute(
	    &posix_fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cudev));
	if (!posix_fd_ok) {
		note("device cannot export POSIX file descriptors: import case skipped");
		return 77;
	}
	CUmemAllocationProp prop = vmm_prop(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	CKD(cuMemCreate(&h, 2 * g, &prop, 0));
	did_alloc("cuMemCreate", K_VMM_PHYSICAL, NS_HANDLE, h, 2 * g);
	CKD(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	CUresult rc = cuMemImportFromShareableHandle(&hi, (void *)(uintptr_t)fd,
						     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (rc != CUDA_SUCCESS) {
		did_fail_alloc("cuMemImportFromShareableHandle", K_IMPORTED);
		info("import_result", (unsigned long long)rc);
		note("cuMemImportFromShareableHandle failed in the exporting process");
	} else {
		if (hi == h)
			note("the imported handle equals the exported one");
		did_alloc("cuMemImportFromShareableHandle", K_IMPORTED, NS_HANDLE, hi, 0);
		CKD(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
		did_alloc("cuMemAddressReserve", K_VMM_RESERVE, NS_RESERVE, va, 2 * g);
		CKD(cuMemMap(va, 2 * g, 0, hi, 0));
		did_alloc("cuMemMap", K_IMPORTED, NS_MAPPED, va, 2 * g);
		vmm_access(va, 2 * g);
		touch_on((void *)va, 2 * g, s, 13);
		CK(cudaStreamSynchronize(s));
		verify((void *)va, 2 * g - 1, 13);
		CKD(cuMemUnmap(va, 2 * g));
		did_unmap(va, 2 * g);
		CKD(cuMemRelease(hi));
		did_free("cuMemRelease", NS_HANDLE, hi);
		CKD(cuMemAddressFree(va, 2 * g));
		did_free("cuMemAddressFree", NS_RESERVE, va);
	}
	CKD(cuMemRelease(h));
	did_free("cuMemRelease", NS_HANDLE, h);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode = "all", *expect = NULL;
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc)
			expect_path = expect = argv[++i];
		else if (strcmp(argv[i], "all") == 0 || strcmp(argv[i], "reset") == 0 ||
			 strcmp(argv[i], "import") == 0)
			run_mode = mode = argv[i];
		else {
			fprintf(stderr,
				"usage: static_program [all|reset|import] [--expect FILE]\n");
			return 2;
		}
	}

	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "static_program: no CUDA device\n");
		return 77;
	}
	dev = 0;
	CK(cudaSetDevice(dev));
	CK(cudaFree(NULL)); /* creates the context; not an event */
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	if (strcmp(mode, "import") == 0) {
		status = import_memory();
	} else {
		device_memory();
		host_memory();
		managed_memory();
		pool_memory();
		array_memory();
		vmm_memory();
		graph_memory();
		failures();
		if (strcmp(mode, "reset") == 0)
			after_reset();
	}
	CK(cudaStreamSynchronize(s));
	write_expect(expect, mode);
	return status;
}
