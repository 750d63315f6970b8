/*
 * @brief What the replay's facts mean: caching allocators, growing sites, lifetimes, and why an
 * allocation failed, in words (model.h, docs/report-json.md "Analyses").
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

#include "analysis/model.h"
#include "analysis/units.h"
#include "analysis/xalloc.h"

#define CUDA_ERROR_MEMORY_ALLOCATION 2 /* cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY */

const char *
gmt_cache_name(enum gmt_cache c)
{
	switch (c) {
	case GMT_CACHE_PYTORCH: return "pytorch";
	case GMT_CACHE_CUDA_POOL: return "cuda_pool";
	case GMT_CACHE_NONE: break;
	}
	return NULL;
}

/* Whether @p path's file name starts with @p prefix (libc10_cuda.so, a versioned name). */
static bool
module_is(const char *path, const char *prefix)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	return base && strncmp(base, prefix, strlen(prefix)) == 0;
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

enum gmt_cache
gmt_model_cache(const struct gmt_model *m, uint32_t stack, uint8_t kind)
{
	const struct gmt_cstack *cs = gmt_model_stack(m, stack);

	for (uint32_t i = 0; cs && i < cs->nframes; i++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, i);

		if (f->kind != GMT_CF_NATIVE)
			continue;
		if (module_is(f->module, "libc10_cuda"))
			return GMT_CACHE_PYTORCH;
		if (kind == GMT_TK_PINNED && is_host_cache(f))
			return GMT_CACHE_PYTORCH;
	}
	return kind == GMT_TK_POOL ? GMT_CACHE_CUDA_POOL : GMT_CACHE_NONE;
}

const struct gmt_growth *
gmt_site_growth(const struct gmt_model *m, const struct gmt_site_stats *s)
{
	return m->marker_samples >= 2 ? &s->at_markers : &s->at_snapshots;
}

/* Snapshots come once a second whatever the program does: a short run's two or three say little
 * (a site filled once rose in 1 of 2 intervals). Markers are placed by the user, two will do. */
#define MIN_SNAPSHOT_SAMPLES 4

bool
gmt_site_grows(const struct gmt_model *m, const struct gmt_site_stats *s)
{
	bool markers = m->marker_samples >= 2;
	uint32_t samples = markers ? m->marker_samples : m->snapshot_samples;
	const struct gmt_growth *g = gmt_site_growth(m, s);

	if (samples < (markers ? 2 : MIN_SNAPSHOT_SAMPLES) || g->last <= g->first)
		return false;
	return 2u * g->rises >= samples - 1;
}

static int
cmp_site_ref(const void *pa, const void *pb)
{
	const struct gmt_site_ref *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key > b->key ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->st < b->st ? -1 : a->st > b->st;
}

struct gmt_site_ref *
gmt_sites_ranked(struct gmt_model *const *models, size_t n, enum gmt_site_order order,
		 size_t *count)
{
	struct gmt_site_ref *v = NULL;
	size_t nv = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = models[i];

		for (size_t k = 0; k < m->nsites; k++) {
			const struct gmt_site_stats *st = &m->sites[k];
			uint64_t key;

			if (order == GMT_SITES_GROWING) {
				const struct gmt_growth *g = gmt_site_growth(m, st);

				if (!gmt_site_grows(m, st))
					continue;
				key = g->last - g->first;
			} else {
				if (!st->allocations)
					continue;
				key = st->allocations;
			}
			if (nv == cap) {
				cap = cap ? cap * 2 : 16;
				v = gmt_xrealloc(v, cap, sizeof(*v));
			}
			v[nv++] = (struct gmt_site_ref){i, m, st, key};
		}
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_site_ref);
	*count = nv;
	return v;
}

uint64_t
gmt_site_median_lifetime(const struct gmt_site_stats *s)
{
	uint64_t total = 0, seen = 0;

	for (int b = 0; b < GMT_LIFETIME_BUCKETS; b++)
		total += s->lifetime[b];
	if (!total)
		return 0;
	for (int b = 0; b < GMT_LIFETIME_BUCKETS; b++) {
		seen += s->lifetime[b];
		if (2 * seen >= total)
			/* the bucket's middle, [2^b, 2^(b+1)): 1.5 x 2^b */
			return b == 0 ? 1 : (3ull << b) / 2;
	}
	return 0;
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
	case GMT_OOM_UNKNOWN: break;
	}
	return "unknown";
}

uint64_t
gmt_oom_cache_bytes(const struct gmt_model *m, const struct gmt_oom *o)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < o->nsites; i++) {
		const struct gmt_site_stats *st = &m->sites[o->sites[i].site];

		if (gmt_model_cache(m, st->stack, st->kind) != GMT_CACHE_NONE)
			bytes += o->sites[i].bytes;
	}
	return bytes;
}

/* "at train.py:42 in step" for the site holding the most, or "" without a known frame. */
static void
top_site_text(const struct gmt_model *m, const struct gmt_oom *o, char *buf, size_t size)
{
	const struct gmt_cstack *cs;
	const struct gmt_cframe *f;
	char b[GMT_BYTES_BUF];

	buf[0] = '\0';
	if (!o->nsites)
		return;
	cs = gmt_model_stack(m, m->sites[o->sites[0].site].stack);
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

enum gmt_oom_cause
gmt_oom_explain(const struct gmt_model *m, const struct gmt_oom *o, char *buf, size_t size)
{
	const struct gmt_trace_event *ev = o->ev;
	bool meminfo = ev->flags & GMT_TEV_MEMINFO;
	uint64_t cache = gmt_oom_cache_bytes(m, o);
	uint64_t used = meminfo && ev->total_bytes > ev->free_bytes ? ev->total_bytes - ev->free_bytes
								    : 0;
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
	top_site_text(m, o, top, sizeof(top));

	if (ev->result != CUDA_ERROR_MEMORY_ALLOCATION) {
		snprintf(buf, size,
			 "Not an out-of-memory failure: the call returned error %d for %s (a refused "
			 "request or an unsupported call, not a lack of memory).",
			 ev->result, req);
		return GMT_OOM_NOT_OUT_OF_MEMORY;
	}
	if (meminfo && ev->total_bytes && ev->size > ev->total_bytes) {
		snprintf(buf, size,
			 "The request alone is larger than the device: needed %s, the device has %s "
			 "in total.",
			 req, tot);
		return GMT_OOM_LARGER_THAN_DEVICE;
	}
	if (meminfo && ev->free_bytes >= ev->size) {
		snprintf(buf, size,
			 "Fragmented: needed %s and %s was free on the device right after the failure, "
			 "but not in one piece it could use (largest hole between this process's live "
			 "allocations: %s; the driver maps pages, so that is a hint only).%s",
			 req, fr, gap, top);
		return GMT_OOM_FRAGMENTED;
	}
	if (!meminfo) {
		snprintf(buf, size,
			 "Needed %s; this process held %s on the device (%s of it in a caching "
			 "allocator). The tracer could not ask the device how much was free, so the "
			 "cause cannot be told.%s",
			 req, held, c, top);
		return GMT_OOM_UNKNOWN;
	}
	if (outside * 2 > used) {
		snprintf(buf, size,
			 "Memory held outside this process's allocations: needed %s with %s free of "
			 "%s; %s in use is not tracked by any allocation of this process (other "
			 "processes, the CUDA context, libraries' own allocations), against %s held "
			 "by it.%s",
			 req, fr, tot, out, held, top);
		return GMT_OOM_HELD_OUTSIDE;
	}
	if (cache * 2 > o->held) {
		cause = GMT_OOM_HELD_BY_CACHE;
		snprintf(buf, size,
			 "Held by a caching allocator: needed %s with %s free of %s; this process "
			 "held %s, %s of it allocated by a caching allocator (PyTorch's, or a CUDA "
			 "memory pool).%s The CUDA-level view cannot see inside the cache: how much "
			 "of it is free blocks kept for reuse rather than live tensors, and whether "
			 "its free blocks were too small or split. torch.cuda.memory_summary() or "
			 "torch.cuda.memory_snapshot() at the failure tells; "
			 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True often helps when it is "
			 "fragmentation inside the cache.",
			 req, fr, tot, held, c, top);
		return cause;
	}
	snprintf(buf, size,
		 "Held by this process: needed %s with %s free of %s; this process held %s in "
		 "%llu live allocations.%s",
		 req, fr, tot, held, (unsigned long long)o->live_allocations, top);
	return GMT_OOM_HELD_BY_PROCESS;
}
