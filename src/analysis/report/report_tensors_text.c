/*
 * @brief The tensor level in the text report: the section "PyTorch tensors" and `run`'s summary
 * line of it (report_tensors.h; the rows are tensor_rows.h's).
 */
#include "analysis/report/report_tensors.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model/range_tensors.h"
#include "analysis/report/categories.h"
#include "analysis/report/explain.h"
#include "analysis/report/frames.h"
#include "analysis/report/nomem.h"
#include "analysis/report/tensor_rows.h"
#include "analysis/report/textfmt.h"
#include "analysis/report/units.h"
#include "util/esc.h"

#define TEXT_TENSOR_SITES 10
#define TEXT_TENSOR_GROWTH 10

// --- text ---------------------------------------------------------------------------------------

static void
print_name(FILE *out, const struct gmt_tsite_name *n, const char *indent)
{
	fprintf(out, "%s", gmt_esc(n->site));
	for (int i = 0; i < n->ncallers; i++)
		fprintf(out, "\n%s%s %s", indent, i ? "  <-" : "called from",
			gmt_esc(n->callers[i]));
	if (n->user[0])
		fprintf(out, "\n%sfrom your code at %s", indent, gmt_esc(n->user));
	fprintf(out, "\n");
}

/* "kept by the autograd graphs of 12 tensors in losses (a list in __main__): 5.6 GiB" */
static void
print_held(FILE *out, const struct gmt_model *m, const struct gmt_trow *r, const char *indent)
{
	const struct gmt_trace_holder *h = gmt_trow_holder(m, r);
	char b[GMT_BYTES_BUF];

	if (!h)
		return;
	if (h->graph)
		fprintf(out, "%skept alive by the autograd graphs of %" PRIu32 " %s in %s: %s\n",
			indent, h->roots, gmt_text_plural(h->roots, "tensor", "tensors"),
			gmt_esc(h->what), gmt_format_bytes(r->held_bytes, b));
	else
		fprintf(out, "%skept alive by %s: %s\n", indent, gmt_esc(h->what),
			gmt_format_bytes(r->held_bytes, b));
}

static void
text_rows(FILE *out,
	  const struct gmt_model *m,
	  const struct gmt_trow *rows,
	  size_t n,
	  bool categories,
	  bool held)
{
	char b[GMT_BYTES_BUF];

	for (size_t i = 0; i < n && i < TEXT_TENSOR_SITES; i++) {
		fprintf(out, "    %10s  %5" PRIu64 " %s", gmt_format_bytes(rows[i].bytes, b),
			rows[i].blocks, gmt_text_plural(rows[i].blocks, "tensor ", "tensors"));
		if (categories)
			fprintf(out, "  %-15s", gmt_category_name(rows[i].cat));
		fprintf(out, "  ");
		print_name(out, &rows[i].name, "                                  ");
		if (held)
			print_held(out, m, &rows[i], "                                  ");
	}
	if (n > TEXT_TENSOR_SITES)
		fprintf(out, "    ... %zu more sites (report --format json: tensors)\n",
			n - TEXT_TENSOR_SITES);
	(void)m;
}

/* With a range: what it left live at the tensor level (model/range_tensors.h), a library's
 * workspace apart, as the JSON's leaked_in_range and the pytest plugin count it. */
static void
text_range_leaks(FILE *out, const struct gmt_process *p, const struct gmt_cat_rules *rules)
{
	const struct gmt_model *m = p->model;
	uint64_t bytes = 0, blocks = 0, ws = 0, wsblocks = 0;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	if (!m->range.from.set && !m->range.to.set)
		return;
	for (size_t i = 0; i < m->nrange_tensors; i++) {
		const struct gmt_range_tensor *r = &m->range_tensors[i];
		bool workspace = gmt_trow_category(p, rules, r->stack) == GMT_CAT_WORKSPACE;
		*(workspace ? &ws : &bytes) += r->bytes;
		*(workspace ? &wsblocks : &blocks) += r->blocks;
	}
	fprintf(out, "  made in the range and live at its end: %s in %" PRIu64 " %s",
		gmt_format_bytes(bytes, b1), blocks, gmt_text_plural(blocks, "tensor", "tensors"));
	if (wsblocks)
		fprintf(out,
			"; and %s in %" PRIu64 " library %s (not a leak: kept for the "
			"handle's life)",
			gmt_format_bytes(ws, b2), wsblocks,
			gmt_text_plural(wsblocks, "workspace", "workspaces"));
	fprintf(out, "\n");
	for (size_t i = 0, shown = 0; i < m->nrange_tensors && shown < TEXT_TENSOR_SITES; i++) {
		const struct gmt_range_tensor *r = &m->range_tensors[i];
		struct gmt_tsite_name nm;
		if (gmt_trow_category(p, rules, r->stack) == GMT_CAT_WORKSPACE)
			continue;
		gmt_trow_site(p, r->stack, &nm);
		fprintf(out, "    %10s  %5" PRIu64 " %s  device %d  ",
			gmt_format_bytes(r->bytes, b1), r->blocks,
			gmt_text_plural(r->blocks, "tensor ", "tensors"), r->device);
		print_name(out, &nm, "                                ");
		shown++;
	}
}

static void
text_process(FILE *out, const struct gmt_process *p, const struct gmt_cat_rules *rules)
{
	const struct gmt_model *m = p->model;
	const struct gmt_tensors *t = m->tensors;
	const struct gmt_trace *tr = m->trace;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF], b4[GMT_BYTES_BUF];
	char b5[GMT_BYTES_BUF];
	size_t n;

	fprintf(
	    out,
	    "PyTorch tensors (the caching allocator's blocks: torch %s, %s allocator%s%s; %" PRIu64
	    " block events",
	    gmt_esc(tr->torch_version ? tr->torch_version : "?"),
	    gmt_esc(tr->torch_backend ? tr->torch_backend : "?"),
	    tr->torch_alloc_conf && tr->torch_alloc_conf[0] ? ", " : "",
	    tr->torch_alloc_conf ? gmt_esc(tr->torch_alloc_conf) : "", t->lines);
	if (t->inconsistent)
		fprintf(out, ", %" PRIu64 " that did not fit the replayed cache", t->inconsistent);
	fprintf(out, "):\n");
	for (size_t i = 0; i < t->ndevices; i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		uint64_t not_torch = gmt_trow_not_pytorch(tr, d);
		fprintf(out,
			"  device %d: peak %s in tensors at %.3f s (memory_allocated()); the cache "
			"then reserved %s (%s of it free)",
			d->device, gmt_format_bytes(d->peak, b1), gmt_trace_time_s(tr, d->peak_ts),
			gmt_format_bytes(d->at_peak.reserved, b2),
			gmt_format_bytes(d->at_peak.reserved - d->at_peak.allocated, b3));
		if (m->allocations == 0) /* a PyTorch snapshot, or a trace of blocks only */
			fprintf(out,
				"; memory outside the cache is not in this trace (no CUDA-level "
				"events)\n");
		else
			fprintf(
			    out,
			    ", and %s more device memory was not PyTorch's (CUDA-level allocations "
			    "outside the cache: cuBLAS, NCCL, other libraries) = %s held\n",
			    gmt_format_bytes(not_torch, b4),
			    gmt_format_bytes(d->held_at_peak > d->at_peak.reserved
						 ? d->held_at_peak
						 : d->at_peak.reserved,
					     b5));
	}
	for (size_t i = 0; i < t->ndevices && (t->marks_seen >= 2 || t->steps_seen >= 2); i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		uint64_t stat = gmt_trow_static_at_peak(t, d);
		fprintf(
		    out,
		    "  device %d's peak: %s stays across steps (live then and at the last marker), "
		    "%s comes and goes within a step%s%s%s\n",
		    d->device, gmt_format_bytes(stat, b1), gmt_format_bytes(d->peak - stat, b2),
		    d->peak_phase[0] ? "; reached in range \"" : "",
		    d->peak_phase[0] ? gmt_esc(d->peak_phase) : "", d->peak_phase[0] ? "\"" : "");
	}
	struct gmt_trow *rows = gmt_trow_rows(p, GMT_TVIEW_AT_PEAK, rules, &n);
	if (n) {
		fprintf(out, "  tensors at the peak by call site (and category):\n");
		text_rows(out, m, rows, n, true, false);
	}
	free(rows);
	for (size_t i = 0; i < t->ndevices; i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		uint64_t live_blocks = 0;
		for (size_t k = 0; k < t->nsites; k++)
			if (t->sites[k].device == d->device)
				live_blocks += t->sites[k].live_blocks;
		fprintf(out,
			"  at exit on device %d: %s in %" PRIu64 " live %s (still referenced), %s "
			"cached but free (reserved, not allocated: empty_cache() would return it) "
			"in %" PRIu64 " %s\n",
			d->device, gmt_format_bytes(d->end.allocated, b1), live_blocks,
			gmt_text_plural(live_blocks, "tensor", "tensors"),
			gmt_format_bytes(d->end.reserved - d->end.allocated, b2), d->end.segments,
			gmt_text_plural(d->end.segments, "segment", "segments"));
	}
	rows = gmt_trow_rows(p, GMT_TVIEW_AT_EXIT, rules, &n);
	if (n) {
		fprintf(out, "  tensors still live at exit by call site:\n");
		text_rows(out, m, rows, n, false, true);
	}
	free(rows);
	text_range_leaks(out, p, rules);
	if (t->nheld) {
		fprintf(out, "  what kept tensors alive at the end of the run (the program's own "
			     "objects, walked at exit):\n");
		for (size_t i = 0; i < t->nheld && i < TEXT_TENSOR_SITES; i++) {
			const struct gmt_theld *h = &t->held[i];
			const struct gmt_trace_holder *th = &tr->holders[h->holder];
			struct gmt_tsite_name nm;
			gmt_trow_site(p, h->stack, &nm);
			fprintf(out, "    %10s  %5" PRIu64 " %s  ", gmt_format_bytes(h->bytes, b1),
				h->blocks, gmt_text_plural(h->blocks, "tensor ", "tensors"));
			if (th->graph)
				fprintf(out, "the autograd graphs of %" PRIu32 " %s in %s",
					th->roots, gmt_text_plural(th->roots, "tensor", "tensors"),
					gmt_esc(th->what));
			else
				fprintf(out, "%s", gmt_esc(th->what));
			fprintf(out, "\n                              most made at ");
			print_name(out, &nm, "                                ");
		}
	}
	rows = gmt_trow_rows(p, GMT_TVIEW_GC_FREED, rules, &n);
	if (n) {
		fprintf(out, "  kept alive by reference cycles: freed only when Python's cycle "
			     "collector ran (gc), by call site:\n");
		text_rows(out, m, rows, n, false, false);
	}
	free(rows);
	rows = gmt_trow_rows(p, GMT_TVIEW_GROWING, rules, &n);
	if (n) {
		fprintf(out,
			"  growing: %zu tensor %s whose live bytes rise across %" PRIu32
			" %s (inside "
			"the cache: no new segment needed to show it):\n",
			n, gmt_text_plural(n, "site", "sites"), t->samples,
			t->basis == GMT_BASIS_MARKS	   ? "markers"
			: t->basis == GMT_BASIS_AUTO_STEPS ? gmt_text_auto_steps(p->trace)
			: t->basis == GMT_BASIS_RANGE_ENDS ? "range ends"
							   : "snapshots");
		for (size_t i = 0; i < n && i < TEXT_TENSOR_GROWTH; i++) {
			uint64_t per =
			    t->samples > 1 ? (rows[i].last - rows[i].first) / (t->samples - 1) : 0;
			fprintf(out,
				"    +%s (%s -> %s, about +%s a step, rose in %" PRIu32
				" of %" PRIu32 " intervals) at ",
				gmt_format_bytes(rows[i].last - rows[i].first, b1),
				gmt_format_bytes(rows[i].first, b2),
				gmt_format_bytes(rows[i].last, b3), gmt_format_bytes(per, b4),
				rows[i].rises, t->samples - 1);
			print_name(out, &rows[i].name, "      ");
			print_held(out, m, &rows[i], "      ");
		}
	}
	free(rows);
	for (size_t i = 0; i < t->nooms; i++) {
		const struct gmt_toom *o = &t->ooms[i];
		const char *help[4];
		size_t nh = gmt_trow_oom_help(tr, o, help);
		uint64_t unalloc = o->cache.reserved - o->cache.allocated;
		struct gmt_tsite_name nm;

		gmt_trow_site(p, o->stack, &nm);
		fprintf(out, "  out of memory at %.3f s on device %d: asked for %s at %s",
			gmt_trace_time_s(tr, o->ts), o->device, gmt_format_bytes(o->requested, b1),
			gmt_esc(nm.site));
		fprintf(
		    out,
		    "\n    %s allocated by PyTorch, %s reserved by PyTorch but unallocated in "
		    "%" PRIu64 " free %s, the largest %s; of the request's stream and pool: %s "
		    "in %" PRIu64 " %s, the largest %s",
		    gmt_format_bytes(o->cache.allocated, b1), gmt_format_bytes(unalloc, b2),
		    o->cache.free_pieces, gmt_text_plural(o->cache.free_pieces, "block", "blocks"),
		    gmt_format_bytes(o->cache.largest_free, b3), gmt_format_bytes(o->pool_free, b4),
		    o->pool_pieces, gmt_text_plural(o->pool_pieces, "piece", "pieces"),
		    gmt_format_bytes(o->pool_largest_free, b5));
		fprintf(out, "; CUDA said %s free\n", gmt_format_bytes(o->device_free, b2));
		const char *cause = gmt_trow_oom_cause(o);
		fprintf(
		    out, "    why: %s\n",
		    !strcmp(cause, "fragmentation") ? "fragmentation inside the cache: enough "
						      "memory is reserved but unallocated, "
						      "in no piece large enough"
		    : !strcmp(cause, "too_large")
			? "the request alone is more than the device's free memory and all of the "
			  "cache together: no setting makes it fit"
		    : !strcmp(cause, "cached_elsewhere")
			? "the cache's free memory is in other streams' or pools' segments"
		    : !strcmp(cause, "allocator_limit")
			? "PyTorch's own limit, not the device: no cudaMalloc failed and CUDA said "
			  "more than the request was free, but a new segment would have passed the "
			  "process's memory fraction (torch.cuda.set_per_process_memory_fraction)"
			: "live tensors: the cache had not enough free memory, and the device "
			  "none to grow it");
		if (!strcmp(cause, "allocator_limit"))
			fprintf(out,
				"    the limit: at least the %s reserved then, below that plus the "
				"request: between %s and %s\n",
				gmt_format_bytes(o->cache.reserved, b1),
				gmt_format_bytes(o->cache.reserved, b2),
				gmt_format_bytes(o->cache.reserved + o->rounded, b3));
		for (size_t k = 0; k < nh; k++)
			fprintf(out, "    would help: %s\n", help[k]);
	}
	for (size_t i = 0; i < t->ndevices; i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		uint32_t endp = d->nfrag ? d->frag[d->nfrag - 1].permille : 0;
		if (d->max_frag_permille || endp)
			fprintf(
			    out,
			    "  fragmentation of the cache on device %d (1 - largest free block / "
			    "reserved-unallocated bytes): at most %.1f%%, %.1f%% at exit\n",
			    d->device, d->max_frag_permille / 10.0, endp / 10.0);
	}
}

void
gmt_text_tensors(FILE *out,
		 const struct gmt_process *procs,
		 size_t n,
		 const struct gmt_cat_rules *chosen)
{
	struct gmt_cat_rules *builtin = NULL;
	const struct gmt_cat_rules *rules = chosen;

	for (size_t i = 0; i < n; i++) {
		if (!procs[i].model->tensors)
			continue;
		if (!rules && !(rules = builtin = gmt_cat_builtin())) {
			gmt_nomem();
			return;
		}
		if (n > 1) {
			char pid[64];
			gmt_text_process_name(procs[i].model->trace, pid, sizeof(pid));
			fprintf(out, "process %s: ", pid);
		}
		text_process(out, &procs[i], rules);
	}
	gmt_cat_free(builtin);
}

void
gmt_text_tensors_summary(FILE *out, const char *prefix, const struct gmt_process *procs, size_t n)
{
	uint64_t peak = 0, live = 0, blocks = 0, cached = 0, growing = 0, ooms = 0;
	bool any = false;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];

	for (size_t i = 0; i < n; i++) {
		const struct gmt_tensors *t = procs[i].model->tensors;
		if (!t)
			continue;
		any = true;
		for (size_t d = 0; d < t->ndevices; d++) {
			peak += t->devices[d].peak;
			live += t->devices[d].end.allocated;
			cached += t->devices[d].end.reserved - t->devices[d].end.allocated;
		}
		for (size_t k = 0; k < t->nsites; k++) {
			blocks += t->sites[k].live_blocks;
			growing += gmt_tsite_grows(t, &t->sites[k]);
		}
		ooms += t->nooms;
	}
	if (!any)
		return;
	fprintf(out,
		"%sPyTorch tensors: peak %s (memory_allocated()); at exit %s in %" PRIu64
		" live %s, %s cached but free",
		prefix, gmt_format_bytes(peak, b1), gmt_format_bytes(live, b2), blocks,
		gmt_text_plural(blocks, "tensor", "tensors"), gmt_format_bytes(cached, b3));
	if (growing)
		fprintf(out, "; %" PRIu64 " tensor %s growing", growing,
			gmt_text_plural(growing, "site", "sites"));
	if (ooms)
		fprintf(out, "; %" PRIu64 " out-of-memory %s explained", ooms,
			gmt_text_plural(ooms, "error", "errors"));
	fprintf(out, "\n");
}
