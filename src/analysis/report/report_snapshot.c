/*
 * @brief `report --format pytorch-snapshot`: a PyTorch memory snapshot (the pickle that
 * torch.cuda.memory._dump_snapshot() writes) made from a trace, for PyTorch's memory_viz and the
 * tools built on its pickles.
 *
 * What it holds (the keys torch 2.11 writes; docs/report-formats.md):
 *  - `segments`: the cache at the end of the trace, replayed from the block lines
 *    (model/blocks.c), each with its blocks (state active_allocated, active_pending_free or
 *    inactive) and the allocating stack of each live block;
 *  - `device_traces`: per device, every block line as a trace entry (alloc, free_requested,
 *    free_completed, segment_alloc/free/map/unmap, oom, snapshot) with its stack as frames
 *    (Python and native, innermost first), and, what torch cannot show, every CUDA-level
 *    allocation that PyTorch's cache did not make (cuBLAS workspaces, NCCL buffers, other
 *    libraries, the program's own cudaMalloc) as an alloc and its free, their first frame naming
 *    the API: `[not PyTorch's] cudaMalloc`;
 *  - `allocator_settings` with PYTORCH_CUDA_ALLOC_CONF as the trace's torch line had it.
 * Times are microseconds since the epoch, as torch's.
 */
#include "analysis/report/report_formats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/reader/pickle.h"
#include "analysis/report/explain.h"
#include "analysis/report/nomem.h"
#include "format/torch_entry.h"

static void
str_kv(struct gmt_pkw *w, const char *k, const char *v)
{
	gmt_pkw_str(w, k);
	gmt_pkw_str(w, v);
}

static void
int_kv(struct gmt_pkw *w, const char *k, int64_t v)
{
	gmt_pkw_str(w, k);
	gmt_pkw_int(w, v);
}

/* The frames of stack @p id, innermost first; @p api (or NULL): a first frame naming the call. */
static void
frames(struct gmt_pkw *w, const struct gmt_process *p, uint32_t id, const char *api)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, id);
	char name[256];

	gmt_pkw_str(w, "frames");
	gmt_pkw_list_begin(w);
	if (api) {
		snprintf(name, sizeof(name), "[not PyTorch's] %s", api);
		gmt_pkw_dict_begin(w);
		str_kv(w, "name", name);
		str_kv(w, "filename", "??");
		int_kv(w, "line", 0);
		gmt_pkw_dict_end(w);
	}
	for (uint32_t i = 0; cs && i < cs->nframes; i++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, i);
		if (f->hidden)
			continue;
		gmt_pkw_dict_begin(w);
		if (f->function) {
			str_kv(w, "name", f->function);
		} else {
			snprintf(name, sizeof(name), "0x%" PRIx64, f->offset);
			str_kv(w, "name", name);
		}
		str_kv(w, "filename", f->file ? f->file : f->module ? f->module : "??");
		int_kv(w, "line", f->line);
		gmt_pkw_dict_end(w);
	}
	gmt_pkw_list_end(w);
}

static int64_t
time_us(const struct gmt_trace *t, uint64_t ts)
{
	/* in unsigned arithmetic: a broken trace's clocks must not overflow a signed sum */
	int64_t ns = (int64_t)(t->start_unix_ns + (ts - t->start_ts));
	return ns / 1000;
}

static void
entry(struct gmt_pkw *w,
      const struct gmt_process *p,
      const char *action,
      uint64_t addr,
      uint64_t size,
      uint64_t stream,
      uint64_t ts,
      uint32_t stack,
      const char *api)
{
	const struct gmt_model *m = p->model;

	gmt_pkw_dict_begin(w);
	str_kv(w, "action", action);
	/* torch's snapshot names an OOM's free bytes device_free (memory_viz reads that key), every
	 * other entry's address addr */
	int_kv(w, strcmp(action, "oom") == 0 ? "device_free" : "addr", (int64_t)addr);
	int_kv(w, "size", (int64_t)size);
	int_kv(w, "stream", (int64_t)stream);
	int_kv(w, "time_us", time_us(m->trace, ts));
	str_kv(w, "compile_context", "N/A");
	str_kv(w, "user_metadata", "");
	if (strcmp(action, "snapshot") != 0) /* torch's snapshot entries carry no frames */
		frames(w, p, stack, api);
	gmt_pkw_dict_end(w);
}

/* One live CUDA-level allocation the cache did not make, waiting for its free. */
struct ext {
	uint64_t ptr, size;
	int32_t device;
	uint16_t api;
};

static bool
foreign(const struct gmt_process *p, const struct gmt_trace_event *ev)
{
	if (ev->kind != GMT_TK_DEVICE && ev->kind != GMT_TK_POOL && ev->kind != GMT_TK_MANAGED)
		return false;
	return gmt_process_cache(p, ev->stack, ev->kind) != GMT_CACHE_PYTORCH;
}

static void
device_trace(struct gmt_pkw *w, const struct gmt_process *p, int32_t device)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *t = m->trace;
	struct ext *live = NULL;
	size_t nlive = 0;

	gmt_pkw_list_begin(w);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct gmt_trace_event *ev = &t->events[i];

		if (ev->op == GMT_OP_BLOCK) {
			if (ev->device != device || ev->kind == GMT_TORCH_STATE_SEGMENT ||
			    ev->kind == GMT_TORCH_STATE_BLOCK)
				continue;
			uint64_t addr = ev->kind == GMT_TORCH_OOM ? ev->free_bytes : ev->ptr;
			entry(w, p, gmt_torch_action_name(ev->kind), addr, ev->size, ev->handle,
			      ev->ts, ev->stack, NULL);
		} else if (ev->op == GMT_OP_ALLOC && ev->result == 0 && ev->device == device &&
			   foreign(p, ev)) {
			struct ext *nl = realloc(live, (nlive + 1) * sizeof(*nl));
			if (!nl) {
				gmt_nomem();
				break;
			}
			live = nl;
			live[nlive++] = (struct ext){ev->ptr, ev->size, ev->device, ev->api};
			const char *api = gmt_trace_string(t, ev->api);
			entry(w, p, "alloc", ev->ptr, ev->size, 0, ev->ts, ev->stack, api);
		} else if (ev->op == GMT_OP_FREE && ev->result == 0) {
			for (size_t k = nlive; k-- > 0;) {
				if (live[k].ptr != ev->ptr || live[k].device != device)
					continue;
				const char *api = gmt_trace_string(t, ev->api);
				entry(w, p, "free_requested", live[k].ptr, live[k].size, 0, ev->ts,
				      ev->stack, api);
				entry(w, p, "free_completed", live[k].ptr, live[k].size, 0, ev->ts,
				      ev->stack, api);
				live[k] = live[--nlive];
				break;
			}
		}
	}
	free(live);
	gmt_pkw_list_end(w);
}

static const char *
block_state(const struct gmt_blk_view *b)
{
	switch (b->state) {
	case GMT_BLK_ALLOCATED: return "active_allocated";
	case GMT_BLK_PENDING: return "active_pending_free";
	default: return "inactive";
	}
}

static void
segments(struct gmt_pkw *w, const struct gmt_process *p)
{
	const struct gmt_model *m = p->model;
	const struct gmt_blk_model *blk = m->tensors ? m->tensors->blk : NULL;
	size_t ns = blk ? gmt_blk_segments(blk, NULL, 0) : 0,
	       nb = blk ? gmt_blk_blocks(blk, NULL, 0) : 0;
	struct gmt_blk_segview *sv = ns ? calloc(ns, sizeof(*sv)) : NULL;
	struct gmt_blk_view *bv = nb ? calloc(nb, sizeof(*bv)) : NULL;

	gmt_pkw_list_begin(w);
	if ((ns && !sv) || (nb && !bv)) {
		gmt_nomem();
		ns = 0;
	}
	if (ns) {
		gmt_blk_segments(blk, sv, ns);
		gmt_blk_blocks(blk, bv, nb);
	}
	for (size_t i = 0; i < ns; i++) {
		const struct gmt_blk_segview *s = &sv[i];
		uint64_t allocated = 0, active = 0, requested = 0;

		for (size_t k = s->first; k < s->first + s->nblocks && k < nb; k++) {
			if (bv[k].state == GMT_BLK_ALLOCATED) {
				allocated += bv[k].size;
				requested += bv[k].requested;
			}
			if (bv[k].state != GMT_BLK_FREE)
				active += bv[k].size;
		}
		gmt_pkw_dict_begin(w);
		int_kv(w, "device", s->device);
		int_kv(w, "address", (int64_t)s->start);
		int_kv(w, "total_size", (int64_t)s->size);
		int_kv(w, "allocated_size", (int64_t)allocated);
		int_kv(w, "active_size", (int64_t)active);
		int_kv(w, "requested_size", (int64_t)requested);
		int_kv(w, "stream", (int64_t)s->stream);
		str_kv(w, "segment_type", s->large ? "large" : "small");
		gmt_pkw_str(w, "segment_pool_id");
		gmt_pkw_int(w, (int64_t)s->pool[0]);
		gmt_pkw_int(w, (int64_t)s->pool[1]);
		gmt_pkw_tuple2(w);
		gmt_pkw_str(w, "is_expandable");
		gmt_pkw_bool(w, s->expandable);
		gmt_pkw_str(w, "frames");
		gmt_pkw_list_begin(w);
		gmt_pkw_list_end(w);
		gmt_pkw_str(w, "blocks");
		gmt_pkw_list_begin(w);
		for (size_t k = s->first; k < s->first + s->nblocks && k < nb; k++) {
			gmt_pkw_dict_begin(w);
			int_kv(w, "address", (int64_t)bv[k].ptr);
			int_kv(w, "size", (int64_t)bv[k].size);
			int_kv(w, "requested_size", (int64_t)bv[k].requested);
			str_kv(w, "state", block_state(&bv[k]));
			frames(w, p, bv[k].state == GMT_BLK_FREE ? 0 : bv[k].stack, NULL);
			gmt_pkw_dict_end(w);
		}
		gmt_pkw_list_end(w);
		gmt_pkw_dict_end(w);
	}
	gmt_pkw_list_end(w);
	free(sv);
	free(bv);
}

int
gmt_report_pytorch_snapshot(FILE *out, const struct gmt_process *procs, size_t n, FILE *diag)
{
	const struct gmt_process *p = NULL;
	const struct gmt_model *m;
	struct gmt_pkw w;
	int32_t max_device = -1;

	gmt_report_start();
	for (size_t i = 0; i < n && !p; i++)
		if (procs[i].model->tensors)
			p = &procs[i];
	if (n > 1)
		fprintf(diag, "gpumemtrace report: a snapshot is of one process: %s (of %zu)\n",
			(p ? p : &procs[0])->model->trace->path, n);
	if (!p && n)
		p = &procs[0];
	if (!p)
		return -EINVAL;
	m = p->model;
	if (!m->trace->events && m->trace->nevents)
		return -EINVAL; /* a streamed read: the caller reads stored (session option) */
	for (size_t i = 0; i < m->trace->nevents; i++)
		if (m->trace->events[i].device > max_device && m->trace->events[i].device < 64)
			max_device = m->trace->events[i].device;
	gmt_pkw_begin(&w);
	gmt_pkw_dict_begin(&w);
	gmt_pkw_str(&w, "segments");
	segments(&w, p);
	gmt_pkw_str(&w, "device_traces");
	gmt_pkw_list_begin(&w);
	for (int32_t d = 0; d <= max_device; d++)
		device_trace(&w, p, d);
	gmt_pkw_list_end(&w);
	gmt_pkw_str(&w, "allocator_settings");
	gmt_pkw_dict_begin(&w);
	str_kv(&w, "PYTORCH_CUDA_ALLOC_CONF",
	       m->trace->torch_alloc_conf ? m->trace->torch_alloc_conf : "");
	gmt_pkw_str(&w, "expandable_segments");
	gmt_pkw_bool(&w, m->trace->torch_alloc_conf &&
			     strstr(m->trace->torch_alloc_conf, "expandable_segments:True"));
	gmt_pkw_dict_end(&w);
	gmt_pkw_str(&w, "external_annotations");
	gmt_pkw_list_begin(&w);
	gmt_pkw_list_end(&w);
	gmt_pkw_dict_end(&w);
	gmt_pkw_end(&w);
	if (w.failed || gmt_report_failed(procs, n)) {
		gmt_pkw_free(&w);
		return -ENOMEM;
	}
	size_t len = w.len, wrote = fwrite(w.buf, 1, len, out);
	gmt_pkw_free(&w);
	return wrote == len && !ferror(out) ? 0 : -EIO;
}
