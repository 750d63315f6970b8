/*
 * @brief What the replay's facts mean: caching allocators, and why an allocation failed, in words
 * (explain.h, docs/report-json.md "Analyses").
 *
 * The OOM causes are tested in this order, the first that holds wins:
 *
 *   not_out_of_memory    the result is not an out-of-memory error (a probe refused, a bad value)
 *   larger_than_device   the request alone exceeds the device's total memory
 *   fragmented           cudaMemGetInfo said enough was free right after the failure
 *   held_outside         most of the used memory is not this process's tracked allocations
 *   held_by_cache        a caching allocator's allocations are most of what this process holds
 *   held_by_process      this process's own allocations fill the device
 *   unknown              none of the above can be told (no free/total figures)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/explain.h"
#include "analysis/report/units.h"
#include "util/alloc.h"
#include "util/path.h"
#include "util/sat.h"

// --- caching allocators -------------------------------------------------------------------------

const char *
gmt_cache_name(enum gmt_cache c)
{
	switch (c) {
	case GMT_CACHE_PYTORCH: return "pytorch";
	case GMT_CACHE_CUDA_POOL: return "cuda_pool";
	case GMT_CACHE_CUPY: return "cupy";
	case GMT_CACHE_XLA: return "xla";
	case GMT_CACHE_NONE:
	case GMT_CACHE_COUNT: break;
	}
	return NULL;
}

const char *
gmt_cache_label(enum gmt_cache c)
{
	switch (c) {
	case GMT_CACHE_PYTORCH: return "PyTorch";
	case GMT_CACHE_CUDA_POOL: return "a CUDA memory pool";
	case GMT_CACHE_CUPY: return "CuPy";
	case GMT_CACHE_XLA: return "JAX/XLA";
	case GMT_CACHE_NONE:
	case GMT_CACHE_COUNT: break;
	}
	return "";
}

bool
gmt_cache_holds(enum gmt_cache c)
{
	return c == GMT_CACHE_PYTORCH || c == GMT_CACHE_CUPY || c == GMT_CACHE_XLA;
}

/* Whether @p path's file name starts with @p prefix (libc10_cuda.so, a versioned name). */
static bool
module_is(const char *path, const char *prefix)
{
	const char *base = gmt_path_base(path);

	return base && strncmp(base, prefix, strlen(prefix)) == 0;
}

static bool
has(const char *s, const char *part)
{
	return s && strstr(s, part);
}

/*
 * PyTorch's pinned host memory cache (CachingHostAllocator, in libtorch_cuda: tensor.item(),
 * pin_memory(), non_blocking copies) keeps its blocks as the device cache does. Told by the
 * function's name; a frame of libtorch_cuda without a name is taken for it too (the library
 * allocates pinned memory nowhere else).
 */
static bool
is_host_cache(const struct gmt_cframe *f)
{
	return module_is(f->module, "libtorch_cuda") &&
	       (!f->function || strstr(f->function, "HostAllocator"));
}

/*
 * CuPy's pools are Cython (cupy/cuda/memory.pyx, pinned_memory.pyx), compiled into extension
 * modules `cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so` and `pinned_memory.cpython-...so`:
 * no Python frame runs in them, so only native frames tell. Cython names its C functions after
 * the class and method (`__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__malloc`), so a
 * pool's frames carry `MemoryPool` (MemoryPool, SingleDeviceMemoryPool, PinnedMemoryPool) or
 * `MemoryAsyncPool`. Without the pool (cupy.cuda.set_allocator(None)) the same module allocates
 * through `_malloc` and `Memory.__init__`, which name no pool.
 */
static bool
is_cupy_module(const char *path)
{
	return has(path, "cupy/cuda/memory.") || has(path, "cupy/cuda/pinned_memory.");
}

static bool
is_cupy_pool_function(const char *fn)
{
	return has(fn, "MemoryPool") || has(fn, "MemoryAsyncPool");
}

/*
 * XLA's GPU allocator (JAX's default: it preallocates 75% of the device at start) is
 * tsl::BFCAllocator over a stream_executor sub-allocator that calls cuMemAlloc; with
 * XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async it is se::GpuCudaMallocAsyncAllocator, and with
 * `platform` no cache at all (stream_executor allocates and frees each buffer). The code is in
 * jax_plugins/xla_cuda12|13/xla_cuda_plugin.so (the CUDA plugin), jaxlib's xla_extension.so
 * before it, or pjrt_c_api_gpu_plugin.so when built from source; TensorFlow shares the allocator
 * (libtensorflow_framework), and its named frames are recognised too.
 */
static bool
is_xla_module(const char *path)
{
	return module_is(path, "xla_cuda_plugin") || module_is(path, "xla_extension") ||
	       module_is(path, "pjrt_c_api_gpu_plugin") || has(path, "/jax_plugins/") ||
	       has(path, "/jaxlib/");
}

static bool
is_xla_cache_function(const char *fn)
{
	return has(fn, "BFCAllocator") || has(fn, "GpuCudaMallocAsyncAllocator");
}

/* What the frames of one stack say about CuPy or XLA, gathered over the whole stack. */
struct framework_frames {
	bool named, unnamed, cache;
};

static void
framework_frame(struct framework_frames *fw, const struct gmt_cframe *f, bool cache_fn)
{
	if (f->function)
		fw->named = true;
	else
		fw->unnamed = true;
	fw->cache |= cache_fn;
}

/*
 * A framework's module whose frames all lack a name (its symbols stripped, as wheels often
 * ship) cannot say which of its allocators ran: it is taken for the default one, the cache.
 * Once any frame of the module has a name, only a cache's name counts.
 */
static bool
framework_cached(const struct framework_frames *fw)
{
	return fw->cache || (fw->unnamed && !fw->named);
}

/*
 * What a stack's frames say about who holds its memory, found once per stack and kept in its
 * gmt_cstack_memo(): the rules below read every native frame's module and function names, and
 * a report asks again for each OOM's sites, each leak and each site (a trace with hundreds of
 * OOMs asked tens of millions of times).
 */
enum {
	FR_KNOWN = 1,	   /* the facts below are found */
	FR_C10 = 2,	   /* a frame of libc10_cuda: PyTorch's device cache */
	FR_HOST_CACHE = 4, /* a frame of PyTorch's pinned host cache (is_host_cache()) */
	FR_CUPY = 8,	   /* CuPy's frames say its pool (framework_cached()) */
	FR_XLA = 16,	   /* XLA's frames say its allocator */
	FR_LIB_SHIFT = 5,  /* above: the innermost frame's CUDA library (enum gmt_library) */
};
_Static_assert(GMT_LIB_COUNT <= 8, "a library fits the memo's three top bits");

static unsigned
stack_facts(const struct gmt_process *p, uint32_t stack)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, stack);
	struct framework_frames cupy = {0}, xla = {0};
	enum gmt_library lib = GMT_LIB_NONE;
	unsigned facts = FR_KNOWN;
	uint8_t *memo;

	if (!cs)
		return facts;
	memo = gmt_cstack_memo(cs);
	if (*memo)
		return *memo;
	for (uint32_t i = 0; i < cs->nframes; i++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, i);

		if (f->kind != GMT_CF_NATIVE)
			continue;
		if (module_is(f->module, "libc10_cuda"))
			facts |= FR_C10;
		if (is_host_cache(f))
			facts |= FR_HOST_CACHE;
		if (is_cupy_module(f->module))
			framework_frame(&cupy, f, is_cupy_pool_function(f->function));
		if (is_xla_cache_function(f->function))
			xla.cache = true;
		else if (is_xla_module(f->module))
			framework_frame(&xla, f, false);
		if (!lib)
			lib = gmt_library_of_module(f->module);
	}
	if (framework_cached(&cupy))
		facts |= FR_CUPY;
	if (framework_cached(&xla))
		facts |= FR_XLA;
	facts |= (unsigned)lib << FR_LIB_SHIFT;
	*memo = (uint8_t)facts;
	return facts;
}

/*
 * A frame of libc10_cuda (or, for pinned memory, of the host cache) makes it PyTorch's, whatever
 * else the stack holds; then CuPy's pool, then XLA's allocator.
 */
enum gmt_cache
gmt_process_cache(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	unsigned facts = stack_facts(p, stack);

	if ((facts & FR_C10) || (kind == GMT_TK_PINNED && (facts & FR_HOST_CACHE)))
		return GMT_CACHE_PYTORCH;
	if (facts & FR_CUPY)
		return GMT_CACHE_CUPY;
	if (facts & FR_XLA)
		return GMT_CACHE_XLA;
	return kind == GMT_TK_POOL ? GMT_CACHE_CUDA_POOL : GMT_CACHE_NONE;
}

bool
gmt_process_cached(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	return gmt_cache_holds(gmt_process_cache(p, stack, kind));
}

/*
 * What the holder @p who names (an index of @p out, 0: none) had live at the end of @p p,
 * counted kinds only, per holder, out[0] the sum: the caches' and the libraries' at once.
 */
static void
held_at_end(const struct gmt_process *p,
	    struct gmt_cached *out,
	    int n,
	    int (*who)(const struct gmt_process *p, const struct gmt_leak *l))
{
	memset(out, 0, (size_t)n * sizeof(*out));
	if (!p->stacks)
		return;
	for (size_t i = 0; i < p->model->nleaks; i++) {
		const struct gmt_leak *l = &p->model->leaks[i];
		int h;

		if (!gmt_kind_counted((enum gmt_tkind)l->kind) || !(h = who(p, l)))
			continue;
		for (int k = 0; k < 2; k++) {
			struct gmt_cached *o = &out[k ? 0 : h];

			o->bytes = gmt_sat_add(o->bytes, l->bytes);
			o->allocations += l->allocations;
			o->entries++;
		}
	}
}

static int
holding_cache(const struct gmt_process *p, const struct gmt_leak *l)
{
	enum gmt_cache c = gmt_process_cache(p, l->stack, l->kind);

	return gmt_cache_holds(c) ? (int)c : 0;
}

void
gmt_process_cached_at_end(const struct gmt_process *p, struct gmt_cached out[GMT_CACHE_COUNT])
{
	held_at_end(p, out, GMT_CACHE_COUNT, holding_cache);
}

// --- CUDA libraries' handles ---------------------------------------------------------------------

/* The libraries, by the prefix of their modules' file names (versioned: libcublasLt.so.13). */
static const struct {
	const char *name, *label, *module;
} libraries[GMT_LIB_COUNT] = {
    [GMT_LIB_CUBLAS] = {"cublas", "cuBLAS", "libcublas"},
    [GMT_LIB_CUDNN] = {"cudnn", "cuDNN", "libcudnn"},
    [GMT_LIB_NCCL] = {"nccl", "NCCL", "libnccl"},
    [GMT_LIB_CUFFT] = {"cufft", "cuFFT", "libcufft"},
    [GMT_LIB_CUSPARSE] = {"cusparse", "cuSPARSE", "libcusparse"},
    [GMT_LIB_CUSOLVER] = {"cusolver", "cuSOLVER", "libcusolver"},
    [GMT_LIB_CURAND] = {"curand", "cuRAND", "libcurand"},
};

const char *
gmt_library_name(enum gmt_library l)
{
	return l > GMT_LIB_NONE && l < GMT_LIB_COUNT ? libraries[l].name : NULL;
}

const char *
gmt_library_label(enum gmt_library l)
{
	return l > GMT_LIB_NONE && l < GMT_LIB_COUNT ? libraries[l].label : "";
}

enum gmt_library
gmt_library_of_module(const char *path)
{
	for (int l = GMT_LIB_NONE + 1; path && l < GMT_LIB_COUNT; l++)
		if (module_is(path, libraries[l].module))
			return (enum gmt_library)l;
	return GMT_LIB_NONE;
}

enum gmt_library
gmt_process_library(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	if (gmt_process_cached(p, stack, kind))
		return GMT_LIB_NONE;
	return (enum gmt_library)(stack_facts(p, stack) >> FR_LIB_SHIFT);
}

enum gmt_holder
gmt_process_holder(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	if (gmt_process_cached(p, stack, kind))
		return GMT_HOLDER_CACHE;
	return gmt_process_library(p, stack, kind) ? GMT_HOLDER_LIBRARY : GMT_HOLDER_PROGRAM;
}

static int
holding_library(const struct gmt_process *p, const struct gmt_leak *l)
{
	return (int)gmt_process_library(p, l->stack, l->kind);
}

void
gmt_process_library_at_end(const struct gmt_process *p, struct gmt_cached out[GMT_LIB_COUNT])
{
	held_at_end(p, out, GMT_LIB_COUNT, holding_library);
}

const char *
gmt_oom_cause_name(enum gmt_oom_cause c)
{
	switch (c) {
	case GMT_OOM_LARGER_THAN_DEVICE: return "larger_than_device";
	case GMT_OOM_HELD_BY_CACHE: return "held_by_cache";
	case GMT_OOM_HELD_BY_PROCESS: return "held_by_process";
	case GMT_OOM_HELD_OUTSIDE: return "held_outside";
	case GMT_OOM_FRAGMENTED: return "fragmented";
	case GMT_OOM_NOT_OUT_OF_MEMORY: return "not_out_of_memory";
	case GMT_OOM_PROBE: return "probe";
	case GMT_OOM_UNKNOWN: break;
	}
	return "unknown";
}

uint64_t
gmt_oom_cache_bytes(const struct gmt_process *p, const struct gmt_oom *o)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < o->nsites; i++) {
		const struct gmt_site_stats *st = &p->model->sites[o->sites[i].site];

		if (gmt_process_cache(p, st->stack, st->kind) != GMT_CACHE_NONE)
			bytes = gmt_sat_add(bytes, o->sites[i].bytes);
	}
	return bytes;
}

/* The caching allocator that made the most of @p o's held memory (GMT_CACHE_NONE: none). */
static enum gmt_cache
oom_main_cache(const struct gmt_process *p, const struct gmt_oom *o)
{
	uint64_t bytes[GMT_CACHE_COUNT] = {0};
	enum gmt_cache best = GMT_CACHE_NONE;

	for (size_t i = 0; i < o->nsites; i++) {
		const struct gmt_site_stats *st = &p->model->sites[o->sites[i].site];

		bytes[gmt_process_cache(p, st->stack, st->kind)] += o->sites[i].bytes;
	}
	for (int c = GMT_CACHE_NONE + 1; c < GMT_CACHE_COUNT; c++)
		if (bytes[c] > bytes[best] || (best == GMT_CACHE_NONE && bytes[c]))
			best = (enum gmt_cache)c;
	return best;
}

static const char *
cache_whose(enum gmt_cache c)
{
	switch (c) {
	case GMT_CACHE_CUPY: return "CuPy's memory pool";
	case GMT_CACHE_XLA:
		return "JAX/XLA's BFC allocator, which takes 75% of the device at start";
	case GMT_CACHE_CUDA_POOL: return "a CUDA memory pool";
	case GMT_CACHE_PYTORCH:
	case GMT_CACHE_NONE:
	case GMT_CACHE_COUNT: break;
	}
	return "PyTorch's";
}

/* What tells, from inside the process, and what helps: per allocator. */
static const char *
cache_advice(enum gmt_cache c)
{
	switch (c) {
	case GMT_CACHE_CUPY:
		return "cupy.get_default_memory_pool().used_bytes() and total_bytes() at the "
		       "failure "
		       "tell; free_all_blocks() gives its free blocks back to CUDA.";
	case GMT_CACHE_XLA:
		return "jax.devices()[0].memory_stats() at the failure tells; "
		       "XLA_PYTHON_CLIENT_MEM_FRACTION or XLA_PYTHON_CLIENT_PREALLOCATE=false "
		       "change "
		       "how much it takes (other libraries in the process need the rest).";
	case GMT_CACHE_CUDA_POOL:
		return "The pool's release threshold (cudaMemPoolAttrReleaseThreshold) or "
		       "cudaMemPoolTrimTo gives its free memory back to CUDA.";
	case GMT_CACHE_PYTORCH:
	case GMT_CACHE_NONE:
	case GMT_CACHE_COUNT: break;
	}
	return "torch.cuda.memory_summary() or torch.cuda.memory_snapshot() at the failure tells; "
	       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True often helps when it is "
	       "fragmentation inside the cache.";
}

/* "at train.py:42 in step" for the site holding the most, or "" without a known frame. */
static void
top_site_text(const struct gmt_process *p, const struct gmt_oom *o, char *buf, size_t size)
{
	const struct gmt_cstack *cs;
	const struct gmt_cframe *f;
	char b[GMT_BYTES_BUF];

	buf[0] = '\0';
	if (!o->nsites)
		return;
	cs = gmt_process_stack(p, p->model->sites[o->sites[0].site].stack);
	f = gmt_cstack_site(cs);
	if (!f)
		return;
	if (f->file && f->line)
		snprintf(buf, size, " The largest holder is %s at %s:%u%s%s.",
			 gmt_format_bytes(o->sites[0].bytes, b), f->file, f->line,
			 f->function ? " in " : "", f->function ? f->function : "");
	else if (f->function)
		snprintf(buf, size, " The largest holder is %s in %s.",
			 gmt_format_bytes(o->sites[0].bytes, b), f->function);
}

static enum gmt_oom_cause
explain_cause(const struct gmt_process *p,
	      const struct gmt_oom *o,
	      enum gmt_fail_class fclass,
	      char *buf,
	      size_t size)
{
	const struct gmt_trace_event *ev = o->ev;
	bool meminfo = ev->flags & GMT_EV_HAS_MEMINFO;
	uint64_t cache = gmt_oom_cache_bytes(p, o);
	uint64_t used =
	    meminfo && ev->total_bytes > ev->free_bytes ? ev->total_bytes - ev->free_bytes : 0;
	uint64_t outside = used > o->held ? used - o->held : 0;
	char req[GMT_BYTES_BUF], fr[GMT_BYTES_BUF], tot[GMT_BYTES_BUF], held[GMT_BYTES_BUF];
	char c[GMT_BYTES_BUF], out[GMT_BYTES_BUF], gap[GMT_BYTES_BUF], top[512];
	enum gmt_oom_cause cause;

	gmt_format_bytes(ev->size, req);
	gmt_format_bytes(ev->free_bytes, fr);
	gmt_format_bytes(ev->total_bytes, tot);
	gmt_format_bytes(o->held, held);
	gmt_format_bytes(cache, c);
	gmt_format_bytes(outside, out);
	gmt_format_bytes(o->gaps.largest_gap, gap);
	top_site_text(p, o, top, sizeof(top));

	if (fclass == GMT_FAIL_PROBE) {
		snprintf(
		    buf, size,
		    "A capability probe, not a failed allocation: the call returned error %d "
		    "(%s) for %s, and the same call succeeded later, so the library asked for "
		    "something this system does not offer and went on without it (PyTorch's "
		    "expandable segments first ask for a fabric-shareable handle). Not counted as "
		    "a failed allocation.",
		    ev->result,
		    ev->result == GMT_CUDA_NOT_PERMITTED ? "not permitted" : "not supported", req);
		return GMT_OOM_PROBE;
	}
	if (ev->result != GMT_CUDA_OUT_OF_MEMORY) {
		snprintf(
		    buf, size,
		    "Not an out-of-memory failure: the call returned error %d for %s (a refused "
		    "request or an unsupported call, not a lack of memory).",
		    ev->result, req);
		return GMT_OOM_NOT_OUT_OF_MEMORY;
	}
	if (meminfo && ev->total_bytes && ev->size > ev->total_bytes) {
		snprintf(
		    buf, size,
		    "The request alone is larger than the device: needed %s, the device has %s "
		    "in total.",
		    req, tot);
		return GMT_OOM_LARGER_THAN_DEVICE;
	}
	if (meminfo && ev->free_bytes >= ev->size) {
		snprintf(
		    buf, size,
		    "Fragmented: needed %s and %s was free on the device right after the failure, "
		    "but not in one piece it could use (largest hole between this process's live "
		    "allocations: %s; the driver maps pages, so that is a hint only).%s",
		    req, fr, gap, top);
		return GMT_OOM_FRAGMENTED;
	}
	if (!meminfo) {
		snprintf(
		    buf, size,
		    "Needed %s; this process held %s on the device (%s of it in a caching "
		    "allocator). The tracer could not ask the device how much was free, so the "
		    "cause cannot be told.%s",
		    req, held, c, top);
		return GMT_OOM_UNKNOWN;
	}
	if (outside * 2 > used) {
		snprintf(
		    buf, size,
		    "Memory held outside this process's allocations: needed %s with %s free of "
		    "%s; %s in use is not tracked by any allocation of this process (other "
		    "processes, the CUDA context, libraries' own allocations), against %s held "
		    "by it.%s",
		    req, fr, tot, out, held, top);
		return GMT_OOM_HELD_OUTSIDE;
	}
	if (cache * 2 > o->held) {
		enum gmt_cache which = oom_main_cache(p, o);

		cause = GMT_OOM_HELD_BY_CACHE;
		snprintf(
		    buf, size,
		    "Held by a caching allocator: needed %s with %s free of %s; this process "
		    "held %s, %s of it allocated by a caching allocator (%s).%s The CUDA-level "
		    "view cannot see inside the cache: how much of it is free blocks kept for "
		    "reuse rather than live %s, and whether its free blocks were too small or "
		    "split. %s",
		    req, fr, tot, held, c, cache_whose(which), top,
		    which == GMT_CACHE_CUPY || which == GMT_CACHE_XLA ? "arrays" : "tensors",
		    cache_advice(which));
		return cause;
	}
	snprintf(buf, size,
		 "Held by this process: needed %s with %s free of %s; this process held %s in "
		 "%llu live allocations.%s",
		 req, fr, tot, held, (unsigned long long)o->live_allocations, top);
	return GMT_OOM_HELD_BY_PROCESS;
}

enum gmt_oom_cause
gmt_oom_explain(const struct gmt_process *p, const struct gmt_oom *o, char *buf, size_t size)
{
	const struct gmt_model *m = p->model;
	size_t k = o >= m->oom && o < m->oom + m->nfailed ? (size_t)(o - m->oom) : SIZE_MAX;
	enum gmt_fail_class fclass = gmt_model_fail_class(m, k);
	enum gmt_oom_cause cause = explain_cause(p, o, fclass, buf, size);
	size_t len = strlen(buf);

	if (fclass == GMT_FAIL_RECOVERED && len < size)
		snprintf(
		    buf + len, size - len,
		    " The allocator retried at once and got the memory (PyTorch frees its cached "
		    "blocks and tries again): the program never saw this failure, and it is not "
		    "counted as a failed allocation.");
	return cause;
}
