/*
 * @brief The tensor level in the reports (the trace's block lines, model/tensors.h): the text
 * section "PyTorch tensors" and the JSON report's "tensors" object of a process
 * (docs/report-json.md).
 *
 * A tensor's call site is the innermost Python frame outside torch's own files (the line of the
 * user's code that made it), else the stack's call-site frame; the next two such frames outward
 * are its callers, so a helper called from three lines shows as three sites, each with the line
 * that called it. Sites with the same site and callers are one row.
 */
#include "analysis/report/report_tensors.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model/range_tensors.h"
#include "analysis/report/categories.h"
#include "analysis/report/explain.h"
#include "analysis/report/frames.h"
#include "analysis/report/jvalues.h"
#include "analysis/report/keys.h"
#include "analysis/report/nomem.h"
#include "analysis/report/textfmt.h"
#include "analysis/report/units.h"
#include "util/esc.h"

#define TEXT_TENSOR_SITES 10
#define TEXT_TENSOR_GROWTH 10
#define CALLERS 2

/* A Python frame of torch itself (or of this tool): not where the user's code made a tensor. */
static bool
library_frame(const struct gmt_cframe *f)
{
	if (f->kind != GMT_CF_PYTHON)
		return true;
	const char *file = f->file ? f->file : "";
	return strstr(file, "-packages/torch/") || strstr(file, "/torch/nn/") ||
	       strstr(file, "/torch/optim/") || strstr(file, "/torch/autograd/") ||
	       strstr(file, "/torch/_") || strstr(file, "gpumemtrace/__init__.py") ||
	       strstr(file, "gpumemtrace/_") || strncmp(file, "<frozen", 7) == 0;
}

struct tsite_name {
	char site[384];
	char callers[CALLERS][384];
	int ncallers;
	/* the innermost frame of the user's own files (gmt_python_library_file()), when the site
	 * is not one: the line of the program that led to a library's tensor ("" when none) */
	char user[384];
};

/* The user's line that made a tensor of stack @p id, and its callers. */
static void
tensor_site(const struct gmt_model *m, uint32_t id, struct tsite_name *n)
{
	const struct gmt_cstack *cs = gmt_model_stack(m, id);
	uint32_t i = 0;

	memset(n, 0, sizeof(*n));
	if (cs)
		for (; i < cs->nframes; i++) {
			const struct gmt_cframe *f = gmt_cstack_frame(cs, i);
			if (f->kind == GMT_CF_PYTHON && !library_frame(f))
				break;
		}
	if (!cs || i == cs->nframes) {
		const struct gmt_cframe *f = gmt_cstack_site(cs);
		if (!f) {
			snprintf(n->site, sizeof(n->site),
				 id ? "an unknown call site (stack %" PRIu32 ")"
				    : "no stack recorded (blocks from before the layer "
				      "attached, or snapshot entries without frames)",
				 id);
			return;
		}
		gmt_cframe_text(f, n->site, sizeof(n->site));
		if (cs->pystate == GMT_PYSTATE_EMPTY) {
			size_t len = strlen(n->site);
			snprintf(n->site + len, sizeof(n->site) - len, " %s",
				 GMT_PYSTATE_EMPTY_LABEL);
		}
		return;
	}
	gmt_cframe_text(gmt_cstack_frame(cs, i), n->site, sizeof(n->site));
	for (uint32_t k = i + 1; k < cs->nframes && n->ncallers < CALLERS; k++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, k);
		if (f->kind == GMT_CF_PYTHON && !library_frame(f))
			gmt_cframe_text(f, n->callers[n->ncallers++], sizeof(n->callers[0]));
	}
	if (!gmt_python_library_file(gmt_cstack_frame(cs, i)->file))
		return; /* the site is the user's own line */
	for (uint32_t k = i + 1; k < cs->nframes; k++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, k);
		if (f->kind == GMT_CF_PYTHON && !library_frame(f) &&
		    !gmt_python_library_file(f->file)) {
			gmt_cframe_text(f, n->user, sizeof(n->user));
			return;
		}
	}
}

/* One row: the sites with one name. */
struct trow {
	struct tsite_name name;
	int32_t device;
	uint64_t bytes, blocks, requested;
	uint64_t first, last;
	uint32_t rises;
	uint32_t stack; /* the first */
	enum gmt_category cat;
	uint32_t
	    held_by; /* the holder that keeps the most of one of its sites (trace holders + 1) */
	uint64_t held_bytes, held_blocks;
};

enum tview { AT_PEAK, AT_EXIT, GROWING, GC_FREED };

static int
cmp_row(const void *pa, const void *pb)
{
	const struct trow *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return strcmp(a->name.site, b->name.site);
}

static bool
same_name(const struct tsite_name *a, const struct tsite_name *b)
{
	if (strcmp(a->site, b->site) || a->ncallers != b->ncallers || strcmp(a->user, b->user))
		return false;
	for (int i = 0; i < a->ncallers; i++)
		if (strcmp(a->callers[i], b->callers[i]))
			return false;
	return true;
}

/* The category of the tensors of stack @p id (categories.h's rules over its frames). */
static enum gmt_category
category_of(const struct gmt_model *m, const struct gmt_cat_rules *rules, uint32_t id)
{
	const struct gmt_cstack *cs = gmt_model_stack(m, id);
	struct gmt_cat_frame f[256];
	size_t n = 0;

	if (!cs || !rules)
		return GMT_CAT_OTHER;
	for (uint32_t i = 0; i < cs->nframes && n < 256; i++) {
		const struct gmt_cframe *c = gmt_cstack_frame(cs, i);
		f[n++] = (struct gmt_cat_frame){.python = c->kind == GMT_CF_PYTHON,
						.function = c->function,
						.file = c->file,
						.module = c->module};
	}
	return gmt_cat_of(rules, f, n, cs->pystate == GMT_PYSTATE_EMPTY);
}

/*
 * The rows of one view of @p m's tensors, largest first: a new array (free()), *@p n rows; NULL
 * when there are none (or out of memory: the report is marked failed).
 */
static struct trow *
rows_of(const struct gmt_model *m, enum tview view, const struct gmt_cat_rules *rules, size_t *n)
{
	const struct gmt_tensors *t = m->tensors;
	struct trow *rows = NULL;
	size_t nrows = 0;

	*n = 0;
	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		uint64_t bytes = view == AT_PEAK    ? s->at_peak
				 : view == GC_FREED ? s->gc_freed
						    : s->live;
		uint64_t blocks = view == AT_PEAK    ? s->at_peak_blocks
				  : view == GC_FREED ? s->gc_freed_blocks
						     : s->live_blocks;

		if (view == GROWING && !gmt_tsite_grows(t, s))
			continue;
		if (view != GROWING && !bytes)
			continue;
		struct trow r = {.device = s->device, .stack = s->stack};
		tensor_site(m, s->stack, &r.name);
		size_t k = 0;
		for (; k < nrows; k++)
			if (rows[k].device == s->device && same_name(&rows[k].name, &r.name))
				break;
		if (k == nrows) {
			struct trow *nr = realloc(rows, (nrows + 1) * sizeof(*nr));
			if (!nr) {
				free(rows);
				return gmt_nomem();
			}
			rows = nr;
			r.cat = category_of(m, rules, s->stack);
			rows[nrows++] = r;
		}
		struct trow *row = &rows[k];
		row->bytes += view == GROWING ? s->growth.last - s->growth.first : bytes;
		row->blocks += blocks;
		row->requested += view == AT_EXIT ? s->live_requested : 0;
		row->first += s->growth.first;
		row->last += s->growth.last;
		if (s->growth.rises > row->rises)
			row->rises = s->growth.rises;
		if (view != GC_FREED && s->held_bytes > row->held_bytes) {
			row->held_by = s->held_by;
			row->held_bytes = s->held_bytes;
			row->held_blocks = s->held_blocks;
		}
	}
	if (nrows > 1)
		qsort(rows, nrows, sizeof(*rows), cmp_row);
	*n = nrows;
	return rows;
}

static void
print_name(FILE *out, const struct tsite_name *n, const char *indent)
{
	fprintf(out, "%s", gmt_esc(n->site));
	for (int i = 0; i < n->ncallers; i++)
		fprintf(out, "\n%s%s %s", indent, i ? "  <-" : "called from",
			gmt_esc(n->callers[i]));
	if (n->user[0])
		fprintf(out, "\n%sfrom your code at %s", indent, gmt_esc(n->user));
	fprintf(out, "\n");
}

/*
 * PyTorch refused the request by its own limit (c10's per-process memory fraction: a new segment
 * is not asked of CUDA when the reserved bytes and it would pass the limit): no cudaMalloc of the
 * device failed before the OOM, and CUDA said more than the request was free.
 */
static bool
oom_by_limit(const struct gmt_toom *o)
{
	return !o->cuda_failure && o->device_free >= o->rounded && o->device_free > 0;
}

/* What would have helped an OOM, in PyTorch's settings, and why (text and JSON share these). */
static size_t
oom_help(const struct gmt_trace *tr, const struct gmt_toom *o, const char *help[4])
{
	size_t n = 0;
	uint64_t unalloc = o->cache.reserved - o->cache.allocated;
	bool expandable =
	    tr->torch_alloc_conf && strstr(tr->torch_alloc_conf, "expandable_segments:True");

	if (unalloc >= o->rounded && o->pool_largest_free < o->rounded) {
		if (!expandable)
			help[n++] =
			    "expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF): free memory of "
			    "the cache lies in pieces too small for the request; expandable "
			    "segments grow one segment instead of splitting many";
		help[n++] =
		    "max_split_size_mb (PYTORCH_CUDA_ALLOC_CONF): blocks this large would not "
		    "be split, so large free pieces stay whole for large requests";
		help[n++] = "garbage_collection_threshold (PYTORCH_CUDA_ALLOC_CONF): free cached "
			    "segments before the limit is reached";
	} else if (unalloc >= o->rounded) {
		help[n++] =
		    "torch.cuda.empty_cache() before the step: the cache's free segments of "
		    "other streams or pools hold the memory";
	}
	if (o->device_free && o->rounded > o->device_free + o->cache.reserved) {
		help[n++] =
		    "a smaller request: it is more than the device's free memory and all of "
		    "the cache together (a shape or a unit wrong?)";
		return n;
	}
	if (unalloc < o->rounded && oom_by_limit(o))
		help[n++] = "a higher limit, or none: torch.cuda.set_per_process_memory_fraction() "
			    "(PyTorch's own limit refused the request while the device had the "
			    "memory free)";
	help[n++] = "a smaller peak of live tensors: the sites at the peak above";
	return n;
}

static const char *
oom_cause(const struct gmt_toom *o)
{
	uint64_t unalloc = o->cache.reserved - o->cache.allocated;

	if (o->device_free && o->rounded > o->device_free + o->cache.reserved)
		return "too_large"; /* more than free memory and all of the cache together */
	if (unalloc >= o->rounded && o->pool_largest_free < o->rounded)
		return "fragmentation";
	if (unalloc >= o->rounded)
		return "cached_elsewhere";
	if (oom_by_limit(o))
		return "allocator_limit";
	return "live_tensors";
}

/*
 * The device memory outside the cache at a device's tensor peak: the CUDA-level held bytes less
 * the cache's segments, which are CUDA-level allocations too in a trace. A PyTorch snapshot read
 * as a trace has no segment allocations: what it holds at the CUDA level (our export's memory
 * not PyTorch's) is all outside the cache.
 */
static uint64_t
not_pytorch(const struct gmt_trace *tr, const struct gmt_tdevice *d)
{
	if (tr->coverage && strncmp(tr->coverage, "PyTorch snapshot", 16) == 0)
		return d->held_at_peak;
	return d->held_at_peak > d->at_peak.reserved ? d->held_at_peak - d->at_peak.reserved : 0;
}

/*
 * The part of a device's tensor peak that stays across steps: per site, what was live at the peak
 * and still at the last mark (min of the two); the rest of the peak comes and goes within a step.
 * Meaningful with two marks or more.
 */
static uint64_t
static_at_peak(const struct gmt_tensors *t, const struct gmt_tdevice *d)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		if (s->device == d->device)
			sum += s->at_peak < s->mark_live ? s->at_peak : s->mark_live;
	}
	return sum;
}

// --- text ---------------------------------------------------------------------------------------

/* The Python object that keeps a row's tensors at the end (a trace's holders line), or NULL. */
static const struct gmt_trace_holder *
row_holder(const struct gmt_model *m, const struct trow *r)
{
	const struct gmt_trace *tr = m->trace;

	return r->held_by && r->held_by <= tr->nholders ? &tr->holders[r->held_by - 1] : NULL;
}

/* "kept by the autograd graphs of 12 tensors in losses (a list in __main__): 5.6 GiB" */
static void
print_held(FILE *out, const struct gmt_model *m, const struct trow *r, const char *indent)
{
	const struct gmt_trace_holder *h = row_holder(m, r);
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
	  const struct trow *rows,
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
text_range_leaks(FILE *out, const struct gmt_model *m, const struct gmt_cat_rules *rules)
{
	uint64_t bytes = 0, blocks = 0, ws = 0, wsblocks = 0;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	if (!m->range.from.set && !m->range.to.set)
		return;
	for (size_t i = 0; i < m->nrange_tensors; i++) {
		const struct gmt_range_tensor *r = &m->range_tensors[i];
		bool workspace = category_of(m, rules, r->stack) == GMT_CAT_WORKSPACE;
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
		struct tsite_name nm;
		if (category_of(m, rules, r->stack) == GMT_CAT_WORKSPACE)
			continue;
		tensor_site(m, r->stack, &nm);
		fprintf(out, "    %10s  %5" PRIu64 " %s  device %d  ",
			gmt_format_bytes(r->bytes, b1), r->blocks,
			gmt_text_plural(r->blocks, "tensor ", "tensors"), r->device);
		print_name(out, &nm, "                                ");
		shown++;
	}
}

static void
text_process(FILE *out, const struct gmt_model *m, const struct gmt_cat_rules *rules)
{
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
		uint64_t not_torch = not_pytorch(tr, d);
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
		uint64_t stat = static_at_peak(t, d);
		fprintf(
		    out,
		    "  device %d's peak: %s stays across steps (live then and at the last marker), "
		    "%s comes and goes within a step%s%s%s\n",
		    d->device, gmt_format_bytes(stat, b1), gmt_format_bytes(d->peak - stat, b2),
		    d->peak_phase[0] ? "; reached in range \"" : "",
		    d->peak_phase[0] ? gmt_esc(d->peak_phase) : "", d->peak_phase[0] ? "\"" : "");
	}
	struct trow *rows = rows_of(m, AT_PEAK, rules, &n);
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
	rows = rows_of(m, AT_EXIT, rules, &n);
	if (n) {
		fprintf(out, "  tensors still live at exit by call site:\n");
		text_rows(out, m, rows, n, false, true);
	}
	free(rows);
	text_range_leaks(out, m, rules);
	if (t->nheld) {
		fprintf(out, "  what kept tensors alive at the end of the run (the program's own "
			     "objects, walked at exit):\n");
		for (size_t i = 0; i < t->nheld && i < TEXT_TENSOR_SITES; i++) {
			const struct gmt_theld *h = &t->held[i];
			const struct gmt_trace_holder *th = &tr->holders[h->holder];
			struct tsite_name nm;
			tensor_site(m, h->stack, &nm);
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
	rows = rows_of(m, GC_FREED, rules, &n);
	if (n) {
		fprintf(out, "  kept alive by reference cycles: freed only when Python's cycle "
			     "collector ran (gc), by call site:\n");
		text_rows(out, m, rows, n, false, false);
	}
	free(rows);
	rows = rows_of(m, GROWING, rules, &n);
	if (n) {
		fprintf(out,
			"  growing: %zu tensor %s whose live bytes rise across %" PRIu32
			" %s (inside "
			"the cache: no new segment needed to show it):\n",
			n, gmt_text_plural(n, "site", "sites"), t->samples,
			t->basis == GMT_BASIS_MARKS	   ? "markers"
			: t->basis == GMT_BASIS_AUTO_STEPS ? "automatic steps (optimizer)"
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
		size_t nh = oom_help(tr, o, help);
		uint64_t unalloc = o->cache.reserved - o->cache.allocated;
		struct tsite_name nm;

		tensor_site(m, o->stack, &nm);
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
		const char *cause = oom_cause(o);
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
gmt_text_tensors(FILE *out, struct gmt_model *const *models, size_t n)
{
	struct gmt_cat_rules *rules = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!models[i]->tensors)
			continue;
		if (!rules && !(rules = gmt_cat_report_rules())) {
			gmt_nomem();
			return;
		}
		if (n > 1) {
			char pid[64];
			gmt_text_process_name(models[i]->trace, pid, sizeof(pid));
			fprintf(out, "process %s: ", pid);
		}
		text_process(out, models[i], rules);
	}
	gmt_cat_free(rules);
}

void
gmt_text_tensors_summary(FILE *out, const char *prefix, struct gmt_model *const *models, size_t n)
{
	uint64_t peak = 0, live = 0, blocks = 0, cached = 0, growing = 0, ooms = 0;
	bool any = false;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];

	for (size_t i = 0; i < n; i++) {
		const struct gmt_tensors *t = models[i]->tensors;
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

// --- JSON ---------------------------------------------------------------------------------------

static json_t *
jname(const struct tsite_name *n, json_t *o)
{
	json_t *callers = json_array();

	json_object_set_new(o, GMT_RK_SITE, json_string(n->site));
	for (int i = 0; i < n->ncallers; i++)
		json_array_append_new(callers, json_string(n->callers[i]));
	json_object_set_new(o, GMT_RK_CALLERS, callers);
	json_object_set_new(o, "user_line", n->user[0] ? json_string(n->user) : json_null());
	return o;
}

static json_t *
jcache_figures(const struct gmt_tcache *c)
{
	json_t *o = json_object();

	json_object_set_new(o, GMT_RK_ALLOCATED, jint(c->allocated));
	json_object_set_new(o, "requested", jint(c->requested));
	json_object_set_new(o, GMT_RK_RESERVED, jint(c->reserved));
	json_object_set_new(o, GMT_RK_RESERVED_UNALLOCATED, jint(c->reserved - c->allocated));
	json_object_set_new(o, "segments", jint(c->segments));
	json_object_set_new(o, "blocks", jint(c->blocks));
	json_object_set_new(o, "free_blocks", jint(c->free_pieces));
	json_object_set_new(o, GMT_RK_LARGEST_FREE, jint(c->largest_free));
	json_object_set_new(o, "inactive_split", jint(c->inactive_split));
	return o;
}

/* held_by: the Python object that keeps the row's tensors at the end, or null */
static json_t *
jheld(const struct gmt_model *m, const struct trow *r)
{
	const struct gmt_trace_holder *h = row_holder(m, r);
	json_t *o;

	if (!h)
		return json_null();
	o = json_object();
	json_object_set_new(o, "holder", json_string(h->what));
	json_object_set_new(o, "kind", json_string(h->graph ? "graph" : "kept"));
	json_object_set_new(o, "roots", jint(h->roots));
	json_object_set_new(o, GMT_RK_BYTES, jint(r->held_bytes));
	json_object_set_new(o, GMT_RK_TENSORS, jint(r->held_blocks));
	return o;
}

/* With a range: the blocks made in it and live at its end, per stack and device
 * (model/range_tensors.h), each with its category: a library's workspace is told apart here as
 * in every other view, and the pytest plugin reads its tests' tensor leaks from this. */
static json_t *
jrange_leaks(const struct gmt_model *m, const struct gmt_cat_rules *rules)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->nrange_tensors; i++) {
		const struct gmt_range_tensor *r = &m->range_tensors[i];
		struct tsite_name nm;
		tensor_site(m, r->stack, &nm);
		json_t *o = jname(&nm, json_object());
		json_object_set_new(o, GMT_RK_STACK, jint(r->stack));
		json_object_set_new(o, GMT_RK_DEVICE, json_integer(r->device));
		json_object_set_new(o, GMT_RK_BYTES, jint(r->bytes));
		json_object_set_new(o, "requested", jint(r->requested));
		json_object_set_new(o, GMT_RK_TENSORS, jint(r->blocks));
		json_object_set_new(
		    o, GMT_RK_CATEGORY,
		    json_string(gmt_category_name(category_of(m, rules, r->stack))));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *
jrows(const struct gmt_model *m, enum tview view, const struct gmt_cat_rules *rules)
{
	size_t n;
	struct trow *rows = rows_of(m, view, rules, &n);
	json_t *a = json_array();
	const struct gmt_tensors *t = m->tensors;

	for (size_t i = 0; i < n; i++) {
		json_t *o = jname(&rows[i].name, json_object());
		json_object_set_new(o, GMT_RK_DEVICE, json_integer(rows[i].device));
		json_object_set_new(o, GMT_RK_STACK, jint(rows[i].stack));
		if (view == AT_EXIT || view == GROWING)
			json_object_set_new(o, "held_by", jheld(m, &rows[i]));
		if (view == GROWING) {
			json_object_set_new(o, GMT_RK_FIRST, jint(rows[i].first));
			json_object_set_new(o, GMT_RK_LAST, jint(rows[i].last));
			json_object_set_new(
			    o, GMT_RK_PER_STEP,
			    jint(t->samples > 1 ? (rows[i].last - rows[i].first) / (t->samples - 1)
						: 0));
			json_object_set_new(o, GMT_RK_RISES, jint(rows[i].rises));
			json_object_set_new(o, GMT_RK_INTERVALS,
					    jint(t->samples ? t->samples - 1 : 0));
		} else {
			json_object_set_new(o, GMT_RK_BYTES, jint(rows[i].bytes));
			json_object_set_new(o, GMT_RK_TENSORS, jint(rows[i].blocks));
			if (view == AT_EXIT)
				json_object_set_new(o, "requested", jint(rows[i].requested));
			json_object_set_new(o, GMT_RK_CATEGORY,
					    json_string(gmt_category_name(rows[i].cat)));
		}
		json_array_append_new(a, o);
	}
	free(rows);
	return a;
}

static json_t *
jcategories(const struct gmt_model *m, const struct gmt_cat_rules *rules)
{
	const struct gmt_tensors *t = m->tensors;
	uint64_t peak[GMT_CAT_COUNT] = {0}, end[GMT_CAT_COUNT] = {0}, req[GMT_CAT_COUNT] = {0};
	uint64_t mark[GMT_CAT_COUNT] = {0}, mreq[GMT_CAT_COUNT] = {0};
	json_t *a = json_array();

	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		if (!s->at_peak && !s->live && !s->mark_live)
			continue;
		enum gmt_category c = category_of(m, rules, s->stack);
		peak[c] += s->at_peak;
		end[c] += s->live;
		req[c] += s->live_requested;
		mark[c] += s->mark_live;
		mreq[c] += s->mark_requested;
	}
	for (int c = 0; c < GMT_CAT_COUNT; c++) {
		json_t *o = json_object();
		json_object_set_new(o, GMT_RK_CATEGORY,
				    json_string(gmt_category_name((enum gmt_category)c)));
		json_object_set_new(o, "bytes_at_peak", jint(peak[c]));
		json_object_set_new(o, "live_end", jint(end[c]));
		json_object_set_new(o, "requested_end", jint(req[c]));
		json_object_set_new(o, "at_last_mark", jint(mark[c]));
		json_object_set_new(o, "requested_at_last_mark", jint(mreq[c]));
		json_array_append_new(a, o);
	}
	return a;
}

uint32_t *
gmt_tensors_row_stacks(const struct gmt_model *m, size_t *n)
{
	static const enum tview views[] = {AT_PEAK, AT_EXIT, GROWING};
	uint32_t *v = NULL;
	size_t nv = 0;

	*n = 0;
	if (!m->tensors)
		return NULL;
	for (size_t k = 0; k < sizeof(views) / sizeof(views[0]); k++) {
		size_t nr;
		struct trow *rows = rows_of(m, views[k], NULL, &nr); /* no categories needed */
		uint32_t *nvv = nr ? realloc(v, (nv + nr) * sizeof(*v)) : v;

		if (nr && !nvv) {
			free(rows);
			free(v);
			return gmt_nomem();
		}
		v = nvv;
		for (size_t i = 0; i < nr; i++)
			if (rows[i].stack)
				v[nv++] = rows[i].stack;
		free(rows);
	}
	*n = nv;
	return v;
}

/* The sites of the timeline's blocks and the OOMs' blocks: one entry per stack. */
struct jsites {
	json_t *table;
	uint32_t *stacks;
	size_t n;
};

static json_t *
jsite_ref(const struct gmt_model *m,
	  const struct gmt_cat_rules *rules,
	  struct jsites *js,
	  uint32_t stack)
{
	for (size_t i = 0; i < js->n; i++)
		if (js->stacks[i] == stack)
			return jint(i);
	uint32_t *ns = realloc(js->stacks, (js->n + 1) * sizeof(*ns));
	if (!ns)
		return gmt_nomem();
	js->stacks = ns;
	ns[js->n] = stack;
	struct tsite_name nm;
	tensor_site(m, stack, &nm);
	json_t *o = jname(&nm, json_object());
	json_object_set_new(o, GMT_RK_STACK, jint(stack));
	json_object_set_new(o, "category",
			    json_string(gmt_category_name(category_of(m, rules, stack))));
	json_array_append_new(js->table, o);
	return jint(js->n++);
}

/* Bytes of the listed blocks of @p device live just after line @p seq. */
static uint64_t
listed_live(const struct gmt_tensors *t, int32_t device, uint64_t seq)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->nlives; i++) {
		const struct gmt_tlife *l = &t->lives[i];
		if (l->device == device && l->alloc_seq <= seq &&
		    (!l->free_seq || l->free_seq > seq))
			sum += l->bytes;
	}
	return sum;
}

/* tensors.timeline: the listed lifetimes and, per device, the buckets' moments. */
static json_t *
jtimeline(const struct gmt_model *m, const struct gmt_cat_rules *rules, struct jsites *js)
{
	const struct gmt_tensors *t = m->tensors;
	const struct gmt_trace *tr = m->trace;
	json_t *o = json_object(), *blocks = json_array(), *devs = json_array();

	for (size_t i = 0; i < t->nlives; i++) {
		const struct gmt_tlife *l = &t->lives[i];
		json_t *b = json_array();
		json_array_append_new(b, jtime(tr, l->alloc_ts));
		json_array_append_new(b, l->free_seq ? jtime(tr, l->free_ts) : json_null());
		json_array_append_new(b, jint(l->bytes));
		json_array_append_new(b, jsite_ref(m, rules, js, l->stack));
		json_array_append_new(b, json_integer(l->device));
		json_array_append_new(blocks, b);
	}
	for (size_t i = 0; i < t->ndevices; i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		json_t *dj = json_object(), *pts = json_array();
		for (size_t k = 0; d->buckets && k < GMT_TBUCKETS; k++) {
			const struct gmt_tbucket *b = &d->buckets[k];
			if (!b->set)
				continue;
			uint64_t listed = listed_live(t, d->device, b->seq);
			json_t *p = json_array();
			json_array_append_new(p, jtime(tr, b->ts));
			json_array_append_new(p, jint(b->allocated));
			json_array_append_new(
			    p, jint(b->allocated > listed ? b->allocated - listed : 0));
			json_array_append_new(p, jint(b->reserved - b->allocated));
			json_array_append_new(
			    p, jint(b->held > b->reserved ? b->held - b->reserved : 0));
			json_array_append_new(pts, p);
		}
		/* the end: what the cache keeps after the last bucket's highest moment */
		uint64_t listed = listed_live(t, d->device, UINT64_MAX), outside = 0;
		json_t *last = json_array_get(pts, json_array_size(pts) - 1), *p = json_array();
		if (last)
			outside = (uint64_t)json_integer_value(json_array_get(last, 4));
		json_array_append_new(p, jtime(tr, t->end_ts));
		json_array_append_new(p, jint(d->end.allocated));
		json_array_append_new(
		    p, jint(d->end.allocated > listed ? d->end.allocated - listed : 0));
		json_array_append_new(p, jint(d->end.reserved - d->end.allocated));
		json_array_append_new(p, jint(outside));
		json_array_append_new(pts, p);
		json_object_set_new(dj, GMT_RK_DEVICE, json_integer(d->device));
		json_object_set_new(dj, "points", pts);
		json_array_append_new(devs, dj);
	}
	json_object_set_new(o, "blocks", blocks);
	json_object_set_new(o, "blocks_all", jint(t->lives_seen));
	json_object_set_new(o, "bucket_s", json_real((double)t->bucket_ns / 1e9));
	json_object_set_new(o, "devices", devs);
	return o;
}

/* tensors.ooms[].segments: the allocator's state at the OOM. */
static json_t *
joom_segments(const struct gmt_model *m,
	      const struct gmt_cat_rules *rules,
	      struct jsites *js,
	      const struct gmt_toom *x)
{
	static const char *const states[] = {"free", "allocated", "pending"};
	json_t *a = json_array();

	for (size_t i = 0; i < x->nsegs; i++) {
		const struct gmt_toom_seg *g = &x->segs[i];
		json_t *sj = json_object(), *bl = json_array();
		json_object_set_new(sj, "address", jhex(g->start));
		json_object_set_new(sj, GMT_RK_SIZE, jint(g->size));
		json_object_set_new(sj, "stream", jhex(g->stream));
		json_object_set_new(sj, "pool", json_string(g->large ? "large" : "small"));
		json_object_set_new(sj, "expandable", json_boolean(g->expandable));
		json_object_set_new(sj, "allocated", jint(g->allocated));
		json_object_set_new(sj, "pending", jint(g->pending));
		json_object_set_new(sj, "free", jint(g->free));
		json_object_set_new(sj, "blocks_all", jint(g->nblocks));
		for (size_t k = 0; k < g->nlisted; k++) {
			const struct gmt_toom_block *b = &x->seg_blocks[g->first + k];
			json_t *bj = json_array();
			json_array_append_new(bj, jint(b->offset));
			json_array_append_new(bj, jint(b->size));
			json_array_append_new(bj, json_string(states[b->state < 3 ? b->state : 0]));
			json_array_append_new(bj, b->state == GMT_BLK_FREE
						      ? json_null()
						      : jsite_ref(m, rules, js, b->stack));
			json_array_append_new(bl, bj);
		}
		json_object_set_new(sj, "blocks", bl);
		json_array_append_new(a, sj);
	}
	return a;
}

json_t *
gmt_json_tensors(const struct gmt_model *m)
{
	const struct gmt_tensors *t = m->tensors;
	const struct gmt_trace *tr = m->trace;
	struct gmt_cat_rules *rules;
	json_t *o, *torch, *devs, *ooms;
	uint64_t peak = 0;
	struct jsites js = {.table = json_array()};

	if (!t)
		return NULL;
	if (!(rules = gmt_cat_report_rules()))
		return gmt_nomem();
	o = json_object();
	torch = json_object();
	json_object_set_new(torch, "version",
			    tr->torch_version ? json_string(tr->torch_version) : json_null());
	json_object_set_new(torch, "backend",
			    tr->torch_backend ? json_string(tr->torch_backend) : json_null());
	json_object_set_new(torch, "alloc_conf",
			    tr->torch_alloc_conf ? json_string(tr->torch_alloc_conf) : json_null());
	json_object_set_new(torch, "layer",
			    tr->torch_layer ? json_string(tr->torch_layer) : json_null());
	json_object_set_new(o, "torch", torch);
	json_object_set_new(o, "block_events", jint(t->lines));
	json_object_set_new(o, "inconsistent", jint(t->inconsistent));
	devs = json_array();
	for (size_t i = 0; i < t->ndevices; i++) {
		const struct gmt_tdevice *d = &t->devices[i];
		json_t *dj = json_object(), *pk = json_object(), *fr = json_object(),
		       *series = json_array();
		uint64_t not_torch = not_pytorch(tr, d);

		peak += d->peak;
		json_object_set_new(dj, GMT_RK_DEVICE, json_integer(d->device));
		json_object_set_new(pk, GMT_RK_ALLOCATED, jint(d->peak));
		json_object_set_new(pk, GMT_RK_TIME_S, jtime(tr, d->peak_ts));
		json_object_set_new(pk, GMT_RK_CACHE, jcache_figures(&d->at_peak));
		json_object_set_new(pk, "not_pytorch", jint(not_torch));
		json_object_set_new(pk, "phase",
				    d->peak_phase[0] ? json_string(d->peak_phase) : json_null());
		uint64_t stat = static_at_peak(t, d);
		json_object_set_new(pk, "static",
				    (t->marks_seen >= 2 || t->steps_seen >= 2) ? jint(stat)
									       : json_null());
		json_object_set_new(pk, "dynamic",
				    (t->marks_seen >= 2 || t->steps_seen >= 2)
					? jint(d->peak - stat)
					: json_null());
		json_object_set_new(pk, "held", jint(d->at_peak.reserved + not_torch));
		json_object_set_new(dj, "peak", pk);
		json_object_set_new(dj, GMT_RK_END, jcache_figures(&d->end));
		json_object_set_new(dj, "max_reserved", jint(d->max_reserved));
		json_object_set_new(dj, "allocations", jint(d->allocations));
		json_object_set_new(fr, GMT_RK_MAX, json_real(d->max_frag_permille / 1000.0));
		json_object_set_new(
		    fr, GMT_RK_END,
		    json_real(d->nfrag ? d->frag[d->nfrag - 1].permille / 1000.0 : 0));
		for (size_t k = 0; k < d->nfrag; k++) {
			json_t *p = json_array();
			json_array_append_new(p, jtime(tr, d->frag[k].ts));
			json_array_append_new(p, json_real(d->frag[k].permille / 1000.0));
			json_array_append_new(p, jint(d->frag[k].free));
			json_array_append_new(p, jint(d->frag[k].largest_free));
			json_array_append_new(series, p);
		}
		json_object_set_new(fr, GMT_RK_SERIES, series);
		json_object_set_new(dj, GMT_RK_FRAGMENTATION, fr);
		json_array_append_new(devs, dj);
	}
	json_object_set_new(o, GMT_RK_DEVICES, devs);
	json_t *pk = json_object();
	json_object_set_new(pk, GMT_RK_ALLOCATED, jint(peak));
	json_object_set_new(o, "peak", pk);
	json_object_set_new(o, GMT_RK_PEAK_SITES, jrows(m, AT_PEAK, rules));
	json_object_set_new(o, GMT_RK_LIVE_AT_EXIT, jrows(m, AT_EXIT, rules));
	json_object_set_new(o, GMT_RK_GROWTH, jrows(m, GROWING, rules));
	json_object_set_new(o, "freed_by_gc", jrows(m, GC_FREED, rules));
	json_t *held = json_array();
	for (size_t i = 0; i < t->nheld; i++) {
		const struct gmt_theld *h = &t->held[i];
		const struct gmt_trace_holder *th = &tr->holders[h->holder];
		struct tsite_name nm;
		tensor_site(m, h->stack, &nm);
		json_t *hj = json_object();
		json_object_set_new(hj, "holder", json_string(th->what));
		json_object_set_new(hj, "kind", json_string(th->graph ? "graph" : "kept"));
		json_object_set_new(hj, "roots", jint(th->roots));
		json_object_set_new(hj, GMT_RK_BYTES, jint(h->bytes));
		json_object_set_new(hj, GMT_RK_TENSORS, jint(h->blocks));
		json_object_set_new(hj, GMT_RK_DEVICE, json_integer(h->device));
		json_object_set_new(hj, "made_at", jname(&nm, json_object()));
		json_array_append_new(held, hj);
	}
	json_object_set_new(o, "held_at_end", held);
	if (m->range.from.set || m->range.to.set)
		json_object_set_new(o, GMT_RK_LEAKED_IN_RANGE, jrange_leaks(m, rules));
	json_object_set_new(o, GMT_RK_GROWTH_SAMPLES, jint(t->samples));
	json_object_set_new(o, "growth_basis", json_string(gmt_growth_basis_name(t->basis)));
	json_object_set_new(o, "categories", jcategories(m, rules));
	ooms = json_array();
	for (size_t i = 0; i < t->nooms; i++) {
		const struct gmt_toom *x = &t->ooms[i];
		json_t *oj = json_object(), *pool = json_array(), *help = json_array();
		const char *h[4];
		size_t nh = oom_help(tr, x, h);
		struct tsite_name nm;

		tensor_site(m, x->stack, &nm);
		jname(&nm, oj);
		json_object_set_new(oj, GMT_RK_TIME_S, jtime(tr, x->ts));
		json_object_set_new(oj, GMT_RK_DEVICE, json_integer(x->device));
		json_object_set_new(oj, "requested", jint(x->requested));
		json_object_set_new(oj, "rounded", jint(x->rounded));
		json_object_set_new(oj, GMT_RK_ALLOCATED, jint(x->cache.allocated));
		json_object_set_new(oj, GMT_RK_RESERVED, jint(x->cache.reserved));
		json_object_set_new(oj, GMT_RK_RESERVED_UNALLOCATED,
				    jint(x->cache.reserved - x->cache.allocated));
		json_object_set_new(oj, "free_blocks", jint(x->cache.free_pieces));
		json_object_set_new(oj, GMT_RK_LARGEST_FREE, jint(x->cache.largest_free));
		json_object_set_new(oj, "stream", jhex(x->stream));
		json_array_append_new(pool, jint(x->pool[0]));
		json_array_append_new(pool, jint(x->pool[1]));
		json_object_set_new(oj, "pool", pool);
		json_object_set_new(oj, "pool_free", jint(x->pool_free));
		json_object_set_new(oj, "pool_free_blocks", jint(x->pool_pieces));
		json_object_set_new(oj, "pool_largest_free", jint(x->pool_largest_free));
		json_object_set_new(oj, "device_free", jint(x->device_free));
		json_object_set_new(oj, "held", jint(x->held));
		json_object_set_new(oj, "cause", json_string(oom_cause(x)));
		if (!strcmp(oom_cause(x), "allocator_limit")) {
			/* c10 refused a new segment: reserved <= limit < reserved + segment */
			json_object_set_new(oj, "limit_at_least", jint(x->cache.reserved));
			json_object_set_new(oj, "limit_below",
					    jint(x->cache.reserved + x->rounded));
		}
		for (size_t k = 0; k < nh; k++)
			json_array_append_new(help, json_string(h[k]));
		json_object_set_new(oj, "would_help", help);
		json_object_set_new(oj, "segments_all", jint(x->nsegments_all));
		json_object_set_new(oj, "segments", joom_segments(m, rules, &js, x));
		json_array_append_new(ooms, oj);
	}
	json_object_set_new(o, "ooms", ooms);
	json_t *marks = json_array();
	for (size_t i = 0; i < t->nmarks; i++) {
		json_t *mj = jcache_figures(&t->marks[i].cache);
		json_object_set_new(mj, GMT_RK_LABEL, json_string(t->marks[i].label));
		json_object_set_new(mj, GMT_RK_SEQ, jint(t->marks[i].seq));
		json_object_set_new(mj, GMT_RK_TIME_S, jtime(tr, t->marks[i].ts));
		json_object_set_new(mj, GMT_RK_DEVICE, json_integer(t->marks[i].device));
		json_array_append_new(marks, mj);
	}
	json_object_set_new(o, "at_markers", marks);
	json_object_set_new(o, "timeline", jtimeline(m, rules, &js));
	json_object_set_new(o, "block_sites", js.table);
	free(js.stacks);
	gmt_cat_free(rules);
	return o;
}
