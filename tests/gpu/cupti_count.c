/*
 * @brief Reference counter for the GPU proof: a CUDA injection library that counts GPU memory
 * allocations and frees per memory kind, written independently of libgpumemtrace so that a
 * separate run of the same program gives a second opinion on what the tracer recorded.
 *
 *   CUDA_INJECTION64_PATH=libcupti_count.so GMT_CUPTI_COUNT_OUT=ref.json  prog ...
 *
 * The driver calls InitializeInjection() at cuInit. It subscribes to CUPTI's callback API and
 * counts at the *driver* level, the layer every allocation goes through whatever called it
 * (shared or static cudart, NVIDIA libraries, PyTorch's driver table): each successful
 * cuMemAlloc_v2, cuMemCreate, cuMemMap, ... is one allocation with the bytes of its arguments,
 * each successful free is paired with its allocation by address (by handle for cuMemRelease, by
 * range for cuMemUnmap), as docs/trace-format.md and the issue-3 format spec define the kinds.
 * The only runtime-level callbacks are cudaGraphAddMemAllocNode/FreeNode, counted there (and
 * the driver call under them skipped) because cudart may build graph nodes without a public
 * driver entry point.
 *
 * Decisions that mirror the format spec (so that "reference == trace" is meaningful):
 *   - a cuMemAllocAsync/cuMemAllocFromPoolAsync on a capturing stream is kind "graph";
 *   - cuMemImportFromShareableHandle is kind "imported" (the handle, 0 bytes), and a cuMemMap of
 *     an imported handle is an "imported" mapping rather than "vmm_mapped";
 *   - CONTEXT_DESTROY_STARTING (cudaDeviceReset, cuCtxDestroy) releases the context's device,
 *     pinned, registered, managed, array and imported allocations, not pool/vmm/graph ones;
 *   - cuMemRetainAllocationHandle adds a reference to the handle; a cuMemRelease then drops
 *     that reference instead of ending the handle;
 *   - failed calls change nothing; failed allocations are counted per kind.
 *
 * Optionally (GMT_CUPTI_COUNT_ACTIVITY=1, the default) it also enables the activity kinds
 * MEMORY2 and MEMORY_POOL and sums their records per CUPTI memory kind: information only (VMM
 * ALLOCATION records come at cuMemSetAccess, graph pools at launch, see capture.md §3.4).
 *
 * At exit (atexit, flushing the activity buffers first) it writes one JSON object to
 * $GMT_CUPTI_COUNT_OUT (a file; or, when that is a directory, DIR/cupti_count.<pid>.json):
 *
 *   {"tool":"cupti_count","pid":N,"cupti_version":V,"subscribe":{"result":0,"old_subscriber":null},
 *    "kinds":{"device":{"allocs":..,"alloc_bytes":..,"frees":..,"free_bytes":..,"failed":..,
 *             "reset_frees":..,"reset_bytes":..,"live":..,"live_bytes":..,"peak_bytes":..},...},
 *    "unmatched_frees":N,"failed_frees":N,"duplicate_allocs":N,"contexts_created":N,
 *    "unknown_retains":N,
 *    "resets":[{"seq":S,"context":U,"after_last_alloc_free":false,"released":{"device":[n,bytes]}}],
 *    "last_alloc_free_seq":S,"marks":[{"label":"..","seq":S,"kinds":{...}}],
 *    "calls":{"cuMemAlloc_v2":[ok,failed],...},"activity":{...}}
 *
 * cupti_count_mark(label) (exported; Python reaches it with ctypes.CDLL(<this library's path>))
 * snapshots the per-kind counters, so that a long-running program can be compared with a trace
 * at the same point (a gmt_mark() marker of the same label), not at a racy exit.
 *
 * A test tool, not part of the tracer: it may allocate and lock in callbacks. It never exits
 * or aborts the program; if CUPTI is unavailable it says so in the JSON.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h> /* includes generated_cuda_meta.h and generated_cuda_runtime_api_meta.h (no guards) */

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CC_EXPORT __attribute__((visibility("default")))

int InitializeInjection(void);
void cupti_count_mark(const char *label);

// --- kinds and the live table --------------------------------------------------------------------

enum cc_kind {
	CC_DEVICE,
	CC_PINNED,
	CC_REGISTERED,
	CC_MANAGED,
	CC_POOL,
	CC_ARRAY,
	CC_VMM_RESERVE,
	CC_VMM_PHYSICAL,
	CC_VMM_MAPPED,
	CC_IMPORTED,
	CC_GRAPH,
	CC_KIND_COUNT,
};

static const char *const kind_names[CC_KIND_COUNT] = {
    "device",	   "pinned",	   "registered", "managed",  "pool",  "array",
    "vmm_reserve", "vmm_physical", "vmm_mapped", "imported", "graph",
};

/* What a pointer value names: addresses of memory, VMM handles, mapped VA ranges, VA
 * reservations and array handles are separate namespaces (a mapping and its reservation can
 * start at the same address). */
enum cc_class {
	CLS_MEM,
	CLS_HANDLE,
	CLS_MAPPED,
	CLS_RESERVE,
	CLS_ARRAY,
};

struct cc_counts {
	uint64_t allocs, alloc_bytes, frees, free_bytes, failed;
	uint64_t reset_frees, reset_bytes, live, live_bytes, peak_bytes;
};

struct cc_live {
	uint64_t ptr;
	uint64_t size;
	uint32_t ctx;
	uint32_t refs; /* cuMemRetainAllocationHandle references on a handle */
	uint8_t cls;
	uint8_t kind;
	struct cc_live *next;
};

#define BUCKETS 4096
#define MAX_RESETS 16
#define MAX_MARKS 64
#define LABEL_MAX 64

struct cc_reset {
	uint64_t seq;
	uint32_t ctx;
	uint64_t n[CC_KIND_COUNT], bytes[CC_KIND_COUNT];
};

struct cc_mark {
	char label[LABEL_MAX];
	uint64_t seq;
	struct cc_counts k[CC_KIND_COUNT];
};

struct cc_call {
	const char *name;
	uint64_t ok, failed;
};

static struct {
	pthread_mutex_t lock;
	struct cc_live *bucket[BUCKETS];
	struct cc_counts k[CC_KIND_COUNT];
	uint64_t seq, last_mem_seq;
	uint64_t unmatched_frees, failed_frees, duplicate_allocs, contexts_created, unknown_retains;
	unsigned nresets, nmarks;
	struct cc_reset resets[MAX_RESETS];
	struct cc_mark marks[MAX_MARKS];
	struct cc_call drv_calls[CUPTI_DRIVER_TRACE_CBID_SIZE];
	struct cc_call rt_calls[CUPTI_RUNTIME_TRACE_CBID_SIZE];
} cc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pid_t init_pid;
static int subscribe_result = -1;
static char old_subscriber[128];
static uint32_t cupti_version;
static CUpti_SubscriberHandle subscriber;

typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus *);
static is_capturing_fn is_capturing;

/* Per thread: the entries a free removed at ENTER (put back at EXIT if the call failed), which
 * call removed them, and whether we are inside a runtime graph-node call. */
static __thread struct cc_live *pending;
static __thread bool pending_active, pending_unmatched, pending_ref;
static __thread CUpti_CallbackDomain pending_domain;
static __thread CUpti_CallbackId pending_cbid;
static __thread int rt_graph_depth;
static __thread uint64_t pending_ref_ptr;

static unsigned
bucket_of(uint64_t ptr, int cls)
{
	uint64_t h = (ptr ^ ((uint64_t)cls << 59)) * 0x9e3779b97f4a7c15ULL;
	return (unsigned)(h >> 52) & (BUCKETS - 1);
}

/* Caller holds cc.lock. */
static struct cc_live *
live_find(uint64_t ptr, int cls, bool unlink)
{
	struct cc_live **pp = &cc.bucket[bucket_of(ptr, cls)];

	for (; *pp; pp = &(*pp)->next) {
		struct cc_live *e = *pp;
		if (e->ptr == ptr && e->cls == cls) {
			if (unlink) {
				/* out of the chain: a free's ENTER keeps it as the head of its own
				 * pending list, which must not go on into the bucket's other
				 * entries */
				*pp = e->next;
				e->next = NULL;
			}
			return e;
		}
	}
	return NULL;
}

static void
live_insert(struct cc_live *e)
{
	unsigned b = bucket_of(e->ptr, e->cls);

	e->next = cc.bucket[b];
	cc.bucket[b] = e;
}

static void
count_alloc(int kind, int cls, uint64_t ptr, uint64_t size, uint32_t ctx)
{
	struct cc_live *e = calloc(1, sizeof(*e));

	if (!e)
		return;
	e->ptr = ptr;
	e->size = size;
	e->ctx = ctx;
	e->cls = (uint8_t)cls;
	e->kind = (uint8_t)kind;
	pthread_mutex_lock(&cc.lock);
	struct cc_live *old = live_find(ptr, cls, true);
	if (old) {
		/* the same address allocated twice without a free we saw: count it as freed here */
		cc.duplicate_allocs++;
		cc.k[old->kind].live--;
		cc.k[old->kind].live_bytes -= old->size;
		free(old);
	}
	live_insert(e);
	struct cc_counts *c = &cc.k[kind];
	c->allocs++;
	c->alloc_bytes += size;
	c->live++;
	c->live_bytes += size;
	if (c->live_bytes > c->peak_bytes)
		c->peak_bytes = c->live_bytes;
	cc.last_mem_seq = ++cc.seq;
	pthread_mutex_unlock(&cc.lock);
}

static void
count_failed(int kind)
{
	pthread_mutex_lock(&cc.lock);
	cc.k[kind].failed++;
	pthread_mutex_unlock(&cc.lock);
}

/* ENTER of a free: take the allocation(s) out of the table before the real call runs, so an
 * address reused by another thread right after the free cannot be confused with this one. */
static void
free_enter(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, uint64_t ptr, int cls)
{
	pthread_mutex_lock(&cc.lock);
	struct cc_live *e = live_find(ptr, cls, false);
	/* a cuMemRelease of a retained handle only drops the reference (at EXIT, if it worked) */
	pending_ref = e && cls == CLS_HANDLE && e->refs > 0;
	pending = pending_ref ? NULL : live_find(ptr, cls, true);
	pthread_mutex_unlock(&cc.lock);
	pending_ref_ptr = ptr;
	pending_active = true;
	pending_unmatched = pending == NULL && !pending_ref;
	pending_domain = dom;
	pending_cbid = cbid;
}

/* cuMemUnmap(ptr, size) ends every mapping that starts inside [ptr, ptr + size). */
static void
unmap_enter(CUpti_CallbackId cbid, uint64_t ptr, uint64_t size)
{
	struct cc_live *taken = NULL;

	pthread_mutex_lock(&cc.lock);
	for (unsigned b = 0; b < BUCKETS; b++) {
		struct cc_live **pp = &cc.bucket[b];
		while (*pp) {
			struct cc_live *e = *pp;
			if (e->cls == CLS_MAPPED && e->ptr >= ptr && e->ptr < ptr + size) {
				*pp = e->next;
				e->next = taken;
				taken = e;
			} else {
				pp = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&cc.lock);
	pending = taken;
	pending_active = true;
	pending_unmatched = taken == NULL;
	pending_ref = false;
	pending_domain = CUPTI_CB_DOMAIN_DRIVER_API;
	pending_cbid = cbid;
}

static void
free_exit(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, bool ok)
{
	if (!pending_active || pending_domain != dom || pending_cbid != cbid)
		return;
	pthread_mutex_lock(&cc.lock);
	if (ok && pending_ref) {
		struct cc_live *e = live_find(pending_ref_ptr, CLS_HANDLE, false);
		if (e && e->refs > 0)
			e->refs--;
	} else if (!ok) {
		cc.failed_frees++;
		while (pending) {
			struct cc_live *e = pending;
			pending = e->next;
			live_insert(e);
		}
	} else {
		if (pending_unmatched)
			cc.unmatched_frees++;
		while (pending) {
			struct cc_live *e = pending;
			pending = e->next;
			struct cc_counts *c = &cc.k[e->kind];
			c->frees++;
			c->free_bytes += e->size;
			c->live--;
			c->live_bytes -= e->size;
			free(e);
		}
		cc.last_mem_seq = ++cc.seq;
	}
	pthread_mutex_unlock(&cc.lock);
	pending_active = false;
	pending = NULL;
}

static bool
reset_releases(int kind)
{
	return kind == CC_DEVICE || kind == CC_PINNED || kind == CC_REGISTERED ||
	       kind == CC_MANAGED || kind == CC_ARRAY || kind == CC_IMPORTED;
}

static void
count_reset(uint32_t ctx)
{
	pthread_mutex_lock(&cc.lock);
	struct cc_reset *r = cc.nresets < MAX_RESETS ? &cc.resets[cc.nresets++] : NULL;
	if (r) {
		memset(r, 0, sizeof(*r));
		r->seq = ++cc.seq;
		r->ctx = ctx;
	}
	for (unsigned b = 0; b < BUCKETS; b++) {
		struct cc_live **pp = &cc.bucket[b];
		while (*pp) {
			struct cc_live *e = *pp;
			if (reset_releases(e->kind) && (ctx == 0 || e->ctx == 0 || e->ctx == ctx)) {
				*pp = e->next;
				struct cc_counts *c = &cc.k[e->kind];
				c->reset_frees++;
				c->reset_bytes += e->size;
				c->live--;
				c->live_bytes -= e->size;
				if (r) {
					r->n[e->kind]++;
					r->bytes[e->kind] += e->size;
				}
				free(e);
			} else {
				pp = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&cc.lock);
}

static int
handle_kind(uint64_t handle)
{
	int kind = CC_VMM_MAPPED;

	pthread_mutex_lock(&cc.lock);
	struct cc_live *e = live_find(handle, CLS_HANDLE, false);
	if (e && e->kind == CC_IMPORTED)
		kind = CC_IMPORTED;
	pthread_mutex_unlock(&cc.lock);
	return kind;
}

static bool
capturing(CUstream s, bool ptsz)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (!is_capturing)
		return false;
	if (ptsz && s == NULL)
		s = CU_STREAM_PER_THREAD;
	return is_capturing(s, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static uint64_t
format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8: return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF: return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT: return 4;
	default: return 1;
	}
}

static uint64_t
dim(size_t v)
{
	return v ? v : 1;
}

// --- callbacks -----------------------------------------------------------------------------------

#define DRV(name) CUPTI_DRIVER_TRACE_CBID_##name

static const CUpti_CallbackId driver_ids[] = {
    DRV(cuMemAlloc_v2),
    DRV(cuMemAllocPitch_v2),
    DRV(cuMemFree_v2),
    DRV(cuMemAllocHost_v2),
    DRV(cuMemHostAlloc),
    DRV(cuMemFreeHost),
    DRV(cuMemHostRegister_v2),
    DRV(cuMemHostUnregister),
    DRV(cuMemAllocManaged),
    DRV(cuMemAllocAsync),
    DRV(cuMemAllocAsync_ptsz),
    DRV(cuMemAllocFromPoolAsync),
    DRV(cuMemAllocFromPoolAsync_ptsz),
    DRV(cuMemFreeAsync),
    DRV(cuMemFreeAsync_ptsz),
    DRV(cuArrayCreate_v2),
    DRV(cuArray3DCreate_v2),
    DRV(cuArrayDestroy),
    DRV(cuMemAddressReserve),
    DRV(cuMemAddressFree),
    DRV(cuMemCreate),
    DRV(cuMemRelease),
    DRV(cuMemMap),
    DRV(cuMemUnmap),
    DRV(cuMemImportFromShareableHandle),
    DRV(cuIpcOpenMemHandle_v2),
    DRV(cuIpcCloseMemHandle),
    DRV(cuGraphAddMemAllocNode),
    DRV(cuGraphAddMemFreeNode),
    DRV(cuGraphAddNode),
    DRV(cuGraphAddNode_v2),
    /* counted as calls only (information) */
    DRV(cuMemSetAccess),
    DRV(cuMemRetainAllocationHandle),
    DRV(cuMemPoolCreate),
    DRV(cuMemPoolDestroy),
    DRV(cuMemPoolTrimTo),
    DRV(cuGraphLaunch),
    DRV(cuDeviceGraphMemTrim),
    DRV(cuDevicePrimaryCtxReset_v2),
    DRV(cuCtxDestroy_v2),
};

static const CUpti_CallbackId runtime_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemAllocNode_v11040,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,
};

static void
note_call(struct cc_call *tab, size_t n, CUpti_CallbackId cbid, const char *name, bool ok)
{
	if (cbid >= n)
		return;
	pthread_mutex_lock(&cc.lock);
	tab[cbid].name = name;
	if (ok)
		tab[cbid].ok++;
	else
		tab[cbid].failed++;
	pthread_mutex_unlock(&cc.lock);
}

static void
on_driver_enter(CUpti_CallbackId cbid, const void *prm)
{
	switch (cbid) {
	case DRV(cuMemFree_v2): {
		const cuMemFree_v2_params *p = prm;
		if (p->dptr)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->dptr, CLS_MEM);
		break;
	}
	case DRV(cuMemFreeHost): {
		const cuMemFreeHost_params *p = prm;
		if (p->p)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, (uintptr_t)p->p, CLS_MEM);
		break;
	}
	case DRV(cuMemHostUnregister): {
		const cuMemHostUnregister_params *p = prm;
		free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, (uintptr_t)p->p, CLS_MEM);
		break;
	}
	case DRV(cuMemFreeAsync):
	case DRV(cuMemFreeAsync_ptsz): {
		const cuMemFreeAsync_params *p = prm;
		if (p->dptr)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->dptr, CLS_MEM);
		break;
	}
	case DRV(cuArrayDestroy): {
		const cuArrayDestroy_params *p = prm;
		free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, (uintptr_t)p->hArray, CLS_ARRAY);
		break;
	}
	case DRV(cuMemAddressFree): {
		const cuMemAddressFree_params *p = prm;
		free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->ptr, CLS_RESERVE);
		break;
	}
	case DRV(cuMemRelease): {
		const cuMemRelease_params *p = prm;
		free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->handle, CLS_HANDLE);
		break;
	}
	case DRV(cuMemUnmap): {
		const cuMemUnmap_params *p = prm;
		unmap_enter(cbid, p->ptr, p->size);
		break;
	}
	case DRV(cuIpcCloseMemHandle): {
		const cuIpcCloseMemHandle_params *p = prm;
		free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->dptr, CLS_MEM);
		break;
	}
	case DRV(cuGraphAddMemFreeNode): {
		const cuGraphAddMemFreeNode_params *p = prm;
		if (rt_graph_depth == 0)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->dptr, CLS_MEM);
		break;
	}
	case DRV(cuGraphAddNode): {
		const cuGraphAddNode_params *p = prm;
		if (rt_graph_depth == 0 && p->nodeParams &&
		    p->nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->nodeParams->free.dptr,
				   CLS_MEM);
		break;
	}
	case DRV(cuGraphAddNode_v2): {
		const cuGraphAddNode_v2_params *p = prm;
		if (rt_graph_depth == 0 && p->nodeParams &&
		    p->nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
			free_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, p->nodeParams->free.dptr,
				   CLS_MEM);
		break;
	}
	default: break;
	}
}

static void
on_driver_exit(CUpti_CallbackId cbid, const void *prm, bool ok, uint32_t ctx)
{
	int kind = -1, cls = CLS_MEM;
	uint64_t ptr = 0, size = 0;

	switch (cbid) {
	case DRV(cuMemAlloc_v2): {
		const cuMemAlloc_v2_params *p = prm;
		kind = CC_DEVICE;
		size = p->bytesize;
		ptr = ok ? *p->dptr : 0;
		break;
	}
	case DRV(cuMemAllocPitch_v2): {
		const cuMemAllocPitch_v2_params *p = prm;
		kind = CC_DEVICE;
		size =
		    ok ? (uint64_t)*p->pPitch * p->Height : (uint64_t)p->WidthInBytes * p->Height;
		ptr = ok ? *p->dptr : 0;
		break;
	}
	case DRV(cuMemAllocHost_v2): {
		const cuMemAllocHost_v2_params *p = prm;
		kind = CC_PINNED;
		size = p->bytesize;
		ptr = ok ? (uintptr_t)*p->pp : 0;
		break;
	}
	case DRV(cuMemHostAlloc): {
		const cuMemHostAlloc_params *p = prm;
		kind = CC_PINNED;
		size = p->bytesize;
		ptr = ok ? (uintptr_t)*p->pp : 0;
		break;
	}
	case DRV(cuMemHostRegister_v2): {
		const cuMemHostRegister_v2_params *p = prm;
		kind = CC_REGISTERED;
		size = p->bytesize;
		ptr = (uintptr_t)p->p;
		break;
	}
	case DRV(cuMemAllocManaged): {
		const cuMemAllocManaged_params *p = prm;
		kind = CC_MANAGED;
		size = p->bytesize;
		ptr = ok ? *p->dptr : 0;
		break;
	}
	case DRV(cuMemAllocAsync):
	case DRV(cuMemAllocAsync_ptsz): {
		const cuMemAllocAsync_params *p = prm;
		kind = ok && capturing(p->hStream, cbid == DRV(cuMemAllocAsync_ptsz)) ? CC_GRAPH
										      : CC_POOL;
		size = p->bytesize;
		ptr = ok ? *p->dptr : 0;
		break;
	}
	case DRV(cuMemAllocFromPoolAsync):
	case DRV(cuMemAllocFromPoolAsync_ptsz): {
		const cuMemAllocFromPoolAsync_params *p = prm;
		kind = ok && capturing(p->hStream, cbid == DRV(cuMemAllocFromPoolAsync_ptsz))
			   ? CC_GRAPH
			   : CC_POOL;
		size = p->bytesize;
		ptr = ok ? *p->dptr : 0;
		break;
	}
	case DRV(cuArrayCreate_v2): {
		const cuArrayCreate_v2_params *p = prm;
		const CUDA_ARRAY_DESCRIPTOR *d = p->pAllocateArray;
		kind = CC_ARRAY;
		cls = CLS_ARRAY;
		if (d)
			size = dim(d->Width) * dim(d->Height) * d->NumChannels *
			       format_bytes(d->Format);
		ptr = ok ? (uintptr_t)*p->pHandle : 0;
		break;
	}
	case DRV(cuArray3DCreate_v2): {
		const cuArray3DCreate_v2_params *p = prm;
		const CUDA_ARRAY3D_DESCRIPTOR *d = p->pAllocateArray;
		kind = CC_ARRAY;
		cls = CLS_ARRAY;
		if (d)
			size = dim(d->Width) * dim(d->Height) * dim(d->Depth) * d->NumChannels *
			       format_bytes(d->Format);
		ptr = ok ? (uintptr_t)*p->pHandle : 0;
		break;
	}
	case DRV(cuMemAddressReserve): {
		const cuMemAddressReserve_params *p = prm;
		kind = CC_VMM_RESERVE;
		cls = CLS_RESERVE;
		size = p->size;
		ptr = ok ? *p->ptr : 0;
		break;
	}
	case DRV(cuMemCreate): {
		const cuMemCreate_params *p = prm;
		kind = CC_VMM_PHYSICAL;
		cls = CLS_HANDLE;
		size = p->size;
		ptr = ok ? *p->handle : 0;
		break;
	}
	case DRV(cuMemMap): {
		const cuMemMap_params *p = prm;
		kind = handle_kind(p->handle);
		cls = CLS_MAPPED;
		size = p->size;
		ptr = p->ptr;
		break;
	}
	case DRV(cuMemRetainAllocationHandle): {
		const cuMemRetainAllocationHandle_params *p = prm;
		if (ok) {
			pthread_mutex_lock(&cc.lock);
			struct cc_live *e = live_find(*p->handle, CLS_HANDLE, false);
			if (e)
				e->refs++;
			else
				cc.unknown_retains++;
			pthread_mutex_unlock(&cc.lock);
		}
		return;
	}
	case DRV(cuMemImportFromShareableHandle): {
		const cuMemImportFromShareableHandle_params *p = prm;
		kind = CC_IMPORTED;
		cls = CLS_HANDLE;
		size = 0;
		ptr = ok ? *p->handle : 0;
		break;
	}
	case DRV(cuIpcOpenMemHandle_v2): {
		const cuIpcOpenMemHandle_v2_params *p = prm;
		/* the size would need cuMemGetAddressRange; no proof case uses IPC */
		kind = CC_IMPORTED;
		ptr = ok ? *p->pdptr : 0;
		break;
	}
	case DRV(cuGraphAddMemAllocNode): {
		const cuGraphAddMemAllocNode_params *p = prm;
		if (rt_graph_depth)
			return;
		kind = CC_GRAPH;
		size = p->nodeParams ? p->nodeParams->bytesize : 0;
		ptr = ok && p->nodeParams ? p->nodeParams->dptr : 0;
		break;
	}
	case DRV(cuGraphAddNode):
	case DRV(cuGraphAddNode_v2): {
		const CUgraphNodeParams *np =
		    cbid == DRV(cuGraphAddNode)
			? ((const cuGraphAddNode_params *)prm)->nodeParams
			: ((const cuGraphAddNode_v2_params *)prm)->nodeParams;
		if (rt_graph_depth || !np)
			return;
		if (np->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
			free_exit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, ok);
			return;
		}
		if (np->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			return;
		kind = CC_GRAPH;
		size = np->alloc.bytesize;
		ptr = ok ? np->alloc.dptr : 0;
		break;
	}
	case DRV(cuMemFree_v2):
	case DRV(cuMemFreeHost):
	case DRV(cuMemHostUnregister):
	case DRV(cuMemFreeAsync):
	case DRV(cuMemFreeAsync_ptsz):
	case DRV(cuArrayDestroy):
	case DRV(cuMemAddressFree):
	case DRV(cuMemRelease):
	case DRV(cuMemUnmap):
	case DRV(cuIpcCloseMemHandle):
	case DRV(cuGraphAddMemFreeNode): free_exit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, ok); return;
	default: return;
	}
	if (kind < 0)
		return;
	if (ok)
		count_alloc(kind, cls, ptr, size, ctx);
	else
		count_failed(kind);
}

static void
on_runtime(const CUpti_CallbackData *cb, CUpti_CallbackId cbid)
{
	if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020)
		return; /* the reset is counted from the resource domain; the call only for the
			   table */
	if (cb->callbackSite == CUPTI_API_ENTER) {
		rt_graph_depth++;
		if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040) {
			const cudaGraphAddMemFreeNode_v11040_params *p = cb->functionParams;
			free_enter(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, (uintptr_t)p->dptr, CLS_MEM);
		}
		return;
	}
	rt_graph_depth--;
	bool ok = *(const cudaError_t *)cb->functionReturnValue == cudaSuccess;
	if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040) {
		free_exit(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, ok);
	} else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemAllocNode_v11040) {
		const cudaGraphAddMemAllocNode_v11040_params *p = cb->functionParams;
		uint64_t size = p->nodeParams ? p->nodeParams->bytesize : 0;
		if (ok && p->nodeParams)
			count_alloc(CC_GRAPH, CLS_MEM, (uintptr_t)p->nodeParams->dptr, size,
				    cb->contextUid);
		else if (!ok)
			count_failed(CC_GRAPH);
	}
}

static void
on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	uint32_t uid = 0;

	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
		pthread_mutex_lock(&cc.lock);
		cc.contexts_created++;
		pthread_mutex_unlock(&cc.lock);
	} else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		if (!rd->context || cuptiGetContextId(rd->context, &uid) != CUPTI_SUCCESS)
			uid = 0; /* unknown: release every context's */
		count_reset(uid);
	}
}

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
		on_resource(cbid, data);
		return;
	}
	const CUpti_CallbackData *cb = data;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (cb->callbackSite == CUPTI_API_EXIT)
			note_call(cc.rt_calls, CUPTI_RUNTIME_TRACE_CBID_SIZE, cbid,
				  cb->functionName,
				  *(const cudaError_t *)cb->functionReturnValue == cudaSuccess);
		on_runtime(cb, cbid);
		return;
	}
	if (dom != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		on_driver_enter(cbid, cb->functionParams);
		return;
	}
	bool ok = *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	note_call(cc.drv_calls, CUPTI_DRIVER_TRACE_CBID_SIZE, cbid, cb->functionName, ok);
	on_driver_exit(cbid, cb->functionParams, ok, cb->contextUid);
}

// --- activity records (information only) ---------------------------------------------------------

#define ACT_BUF (1u << 20)
#define MEMKINDS 8

/* The activity entry points are looked up at run time, so that the counter also loads where a
 * CUPTI offers only the callback API (tests/simcuda's double). */
static struct {
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
} actf;

static struct {
	bool enabled;
	uint64_t alloc[MEMKINDS], alloc_bytes[MEMKINDS], release[MEMKINDS], release_bytes[MEMKINDS];
	uint64_t async_allocs, pool_created, pool_destroyed, pool_trimmed, records, dropped;
} act;

static const char *const memkind_names[MEMKINDS] = {
    "unknown", "pageable", "pinned",	    "device",
    "array",   "managed",  "device_static", "managed_static",
};

static void CUPTIAPI
buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, ACT_BUF);
	*size = *buffer ? ACT_BUF : 0;
	*max_records = 0;
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;

	(void)ctx;
	(void)size;
	pthread_mutex_lock(&cc.lock);
	while (valid && actf.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
		act.records++;
		if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
			const CUpti_ActivityMemory4 *m = (const void *)rec;
			unsigned k =
			    (unsigned)m->memoryKind < MEMKINDS ? (unsigned)m->memoryKind : 0;
			if (m->memoryOperationType ==
			    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
				act.alloc[k]++;
				act.alloc_bytes[k] += m->bytes;
				act.async_allocs += m->isAsync != 0;
			} else if (m->memoryOperationType ==
				   CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
				act.release[k]++;
				act.release_bytes[k] += m->bytes;
			}
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
			const CUpti_ActivityMemoryPool3 *p = (const void *)rec;
			switch (p->memoryPoolOperationType) {
			case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
				act.pool_created++;
				break;
			case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
				act.pool_destroyed++;
				break;
			case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
				act.pool_trimmed++;
				break;
			default: break;
			}
		}
	}
	if (actf.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
		act.dropped += dropped;
	pthread_mutex_unlock(&cc.lock);
	free(buffer);
}

static void
activity_start(void)
{
	const char *env = getenv("GMT_CUPTI_COUNT_ACTIVITY");

	if (env && strcmp(env, "0") == 0)
		return;
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return;
	*(void **)&actf.register_callbacks = dlsym(h, "cuptiActivityRegisterCallbacks");
	*(void **)&actf.enable = dlsym(h, "cuptiActivityEnable");
	*(void **)&actf.flush_all = dlsym(h, "cuptiActivityFlushAll");
	*(void **)&actf.next_record = dlsym(h, "cuptiActivityGetNextRecord");
	*(void **)&actf.dropped = dlsym(h, "cuptiActivityGetNumDroppedRecords");
	if (!actf.register_callbacks || !actf.enable || !actf.flush_all || !actf.next_record ||
	    !actf.dropped)
		return;
	if (actf.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
		return;
	act.enabled = actf.enable(CUPTI_ACTIVITY_KIND_MEMORY2) == CUPTI_SUCCESS;
	if (actf.enable(CUPTI_ACTIVITY_KIND_MEMORY_POOL) != CUPTI_SUCCESS)
		act.enabled = false;
}

// --- output --------------------------------------------------------------------------------------

static void
write_kinds(FILE *f, const struct cc_counts *k)
{
	fputc('{', f);
	for (int i = 0; i < CC_KIND_COUNT; i++) {
		const struct cc_counts *c = &k[i];
		fprintf(f,
			"%s\"%s\":{\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
			",\"frees\":%" PRIu64 ",\"free_bytes\":%" PRIu64 ",\"failed\":%" PRIu64
			",\"reset_frees\":%" PRIu64 ",\"reset_bytes\":%" PRIu64 ",\"live\":%" PRIu64
			",\"live_bytes\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 "}",
			i ? "," : "", kind_names[i], c->allocs, c->alloc_bytes, c->frees,
			c->free_bytes, c->failed, c->reset_frees, c->reset_bytes, c->live,
			c->live_bytes, c->peak_bytes);
	}
	fputc('}', f);
}

static void
write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void
write_calls(FILE *f, const struct cc_call *tab, size_t n, bool *first)
{
	for (size_t i = 0; i < n; i++) {
		if (!tab[i].name || (!tab[i].ok && !tab[i].failed))
			continue;
		fputs(*first ? "" : ",", f);
		*first = false;
		write_string(f, tab[i].name);
		fprintf(f, ":[%" PRIu64 ",%" PRIu64 "]", tab[i].ok, tab[i].failed);
	}
}

static void
write_summary(FILE *f)
{
	fprintf(f, "{\"tool\":\"cupti_count\",\"pid\":%d,\"cupti_version\":%u,", (int)getpid(),
		cupti_version);
	fprintf(f, "\"subscribe\":{\"result\":%d,\"old_subscriber\":", subscribe_result);
	if (old_subscriber[0])
		write_string(f, old_subscriber);
	else
		fputs("null", f);
	fputs("},\"kinds\":", f);
	write_kinds(f, cc.k);
	fprintf(f,
		",\"unmatched_frees\":%" PRIu64 ",\"failed_frees\":%" PRIu64
		",\"duplicate_allocs\":%" PRIu64 ",\"contexts_created\":%" PRIu64
		",\"unknown_retains\":%" PRIu64 ",\"last_alloc_free_seq\":%" PRIu64 ",\"resets\":[",
		cc.unmatched_frees, cc.failed_frees, cc.duplicate_allocs, cc.contexts_created,
		cc.unknown_retains, cc.last_mem_seq);
	for (unsigned r = 0; r < cc.nresets; r++) {
		const struct cc_reset *x = &cc.resets[r];
		fprintf(f,
			"%s{\"seq\":%" PRIu64
			",\"context\":%u,\"after_last_alloc_free\":%s,\"released\":{",
			r ? "," : "", x->seq, x->ctx, x->seq > cc.last_mem_seq ? "true" : "false");
		bool first = true;
		for (int k = 0; k < CC_KIND_COUNT; k++) {
			if (!x->n[k])
				continue;
			fprintf(f, "%s\"%s\":[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",",
				kind_names[k], x->n[k], x->bytes[k]);
			first = false;
		}
		fputs("}}", f);
	}
	fputs("],\"marks\":[", f);
	for (unsigned m = 0; m < cc.nmarks; m++) {
		fputs(m ? ",{\"label\":" : "{\"label\":", f);
		write_string(f, cc.marks[m].label);
		fprintf(f, ",\"seq\":%" PRIu64 ",\"kinds\":", cc.marks[m].seq);
		write_kinds(f, cc.marks[m].k);
		fputc('}', f);
	}
	fputs("],\"calls\":{", f);
	bool first = true;
	write_calls(f, cc.drv_calls, CUPTI_DRIVER_TRACE_CBID_SIZE, &first);
	write_calls(f, cc.rt_calls, CUPTI_RUNTIME_TRACE_CBID_SIZE, &first);
	fprintf(f, "},\"activity\":{\"enabled\":%s", act.enabled ? "true" : "false");
	if (act.enabled) {
		fprintf(f,
			",\"records\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"async_allocs\":%" PRIu64
			",\"pool\":{\"created\":%" PRIu64 ",\"destroyed\":%" PRIu64
			",\"trimmed\":%" PRIu64 "},\"memory\":{",
			act.records, act.dropped, act.async_allocs, act.pool_created,
			act.pool_destroyed, act.pool_trimmed);
		first = true;
		for (int k = 0; k < MEMKINDS; k++) {
			if (!act.alloc[k] && !act.release[k])
				continue;
			fprintf(f,
				"%s\"%s\":{\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
				",\"releases\":%" PRIu64 ",\"release_bytes\":%" PRIu64 "}",
				first ? "" : ",", memkind_names[k], act.alloc[k],
				act.alloc_bytes[k], act.release[k], act.release_bytes[k]);
			first = false;
		}
		fputc('}', f);
	}
	fputs("}}\n", f);
}

static void
at_exit(void)
{
	const char *out = getenv("GMT_CUPTI_COUNT_OUT");
	char path[4096];
	struct stat st;

	if (getpid() != init_pid)
		return; /* a fork child: the parent writes */
	if (act.enabled)
		actf.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (!out || !*out) {
		fprintf(stderr, "cupti_count: GMT_CUPTI_COUNT_OUT is not set: nothing written\n");
		return;
	}
	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(path, sizeof(path), "%s/cupti_count.%d.json", out, (int)getpid());
	else
		snprintf(path, sizeof(path), "%s", out);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cupti_count: cannot write %s\n", path);
		return;
	}
	pthread_mutex_lock(&cc.lock);
	write_summary(f);
	pthread_mutex_unlock(&cc.lock);
	fclose(f);
}

// --- entry points --------------------------------------------------------------------------------

CC_EXPORT void
cupti_count_mark(const char *label)
{
	pthread_mutex_lock(&cc.lock);
	if (cc.nmarks < MAX_MARKS) {
		struct cc_mark *m = &cc.marks[cc.nmarks++];
		snprintf(m->label, sizeof(m->label), "%s", label ? label : "");
		m->seq = ++cc.seq;
		memcpy(m->k, cc.k, sizeof(m->k));
	}
	pthread_mutex_unlock(&cc.lock);
}

CC_EXPORT int
InitializeInjection(void)
{
	static bool done;
	CUpti_SubscriberParams sp;

	if (done)
		return 1;
	done = true;
	init_pid = getpid();
	atexit(at_exit);
	cuptiGetVersion(&cupti_version);

	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (cuda)
		*(void **)&is_capturing = dlsym(cuda, "cuStreamIsCapturing");

	memset(&sp, 0, sizeof(sp));
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "gmt-cupti-count";
	sp.oldSubscriberName = old_subscriber;
	sp.oldSubscriberSize = sizeof(old_subscriber);
	subscribe_result = (int)cuptiSubscribe_v2(&subscriber, on_callback, NULL, &sp);
	if (subscribe_result != CUPTI_SUCCESS) {
		fprintf(
		    stderr,
		    "cupti_count: cuptiSubscribe_v2 failed (%d; holder: %s): counting nothing\n",
		    subscribe_result, old_subscriber[0] ? old_subscriber : "unknown");
		return 1;
	}
	old_subscriber[0] = 0;
	for (size_t i = 0; i < sizeof(driver_ids) / sizeof(driver_ids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_ids[i]);
	for (size_t i = 0; i < sizeof(runtime_ids) / sizeof(runtime_ids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids[i]);
	cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
			    CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
			    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	activity_start();
	return 1;
}
