/*
 * @brief The tensor level's rows (tensor_rows.h).
 */
#include "analysis/report/tensor_rows.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/explain.h"
#include "analysis/report/frames.h"
#include "analysis/report/nomem.h"
#include "analysis/report/units.h"
#include "util/esc.h"
#include "util/sat.h"

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

/* The user's line that made a tensor of stack @p id, and its callers. */
void
gmt_trow_site(const struct gmt_process *p, uint32_t id, struct gmt_tsite_name *n)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, id);
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
	for (uint32_t k = i + 1; k < cs->nframes && n->ncallers < GMT_TROW_CALLERS; k++) {
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

static int
cmp_row(const void *pa, const void *pb)
{
	const struct gmt_trow *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return strcmp(a->name.site, b->name.site);
}

static bool
same_name(const struct gmt_tsite_name *a, const struct gmt_tsite_name *b)
{
	if (strcmp(a->site, b->site) || a->ncallers != b->ncallers || strcmp(a->user, b->user))
		return false;
	for (int i = 0; i < a->ncallers; i++)
		if (strcmp(a->callers[i], b->callers[i]))
			return false;
	return true;
}

/* The category of the tensors of stack @p id (categories.h's rules over its frames). */
enum gmt_category
gmt_trow_category(const struct gmt_process *p, const struct gmt_cat_rules *rules, uint32_t id)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, id);
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
struct gmt_trow *
gmt_trow_rows(const struct gmt_process *p,
	      enum gmt_tview view,
	      const struct gmt_cat_rules *rules,
	      size_t *n)
{
	const struct gmt_model *m = p->model;
	const struct gmt_tensors *t = m->tensors;
	struct gmt_trow *rows = NULL;
	size_t nrows = 0;

	*n = 0;
	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		uint64_t bytes = view == GMT_TVIEW_AT_PEAK    ? s->at_peak
				 : view == GMT_TVIEW_GC_FREED ? s->gc_freed
							      : s->live;
		uint64_t blocks = view == GMT_TVIEW_AT_PEAK    ? s->at_peak_blocks
				  : view == GMT_TVIEW_GC_FREED ? s->gc_freed_blocks
							       : s->live_blocks;

		if (view == GMT_TVIEW_GROWING && !gmt_tsite_grows(t, s))
			continue;
		if (view != GMT_TVIEW_GROWING && !bytes)
			continue;
		struct gmt_trow r = {.device = s->device, .stack = s->stack};
		gmt_trow_site(p, s->stack, &r.name);
		size_t k = 0;
		for (; k < nrows; k++)
			if (rows[k].device == s->device && same_name(&rows[k].name, &r.name))
				break;
		if (k == nrows) {
			struct gmt_trow *nr = realloc(rows, (nrows + 1) * sizeof(*nr));
			if (!nr) {
				free(rows);
				return gmt_nomem();
			}
			rows = nr;
			r.cat = gmt_trow_category(p, rules, s->stack);
			rows[nrows++] = r;
		}
		struct gmt_trow *row = &rows[k];
		row->bytes = gmt_sat_add(row->bytes, view == GMT_TVIEW_GROWING
							 ? s->growth.last - s->growth.first
							 : bytes);
		row->blocks += blocks;
		row->requested += view == GMT_TVIEW_AT_EXIT ? s->live_requested : 0;
		row->first += s->growth.first;
		row->last += s->growth.last;
		if (s->growth.rises > row->rises)
			row->rises = s->growth.rises;
		if (view != GMT_TVIEW_GC_FREED && s->held_bytes > row->held_bytes) {
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
size_t
gmt_trow_oom_help(const struct gmt_trace *tr, const struct gmt_toom *o, const char *help[4])
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

const char *
gmt_trow_oom_cause(const struct gmt_toom *o)
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
uint64_t
gmt_trow_not_pytorch(const struct gmt_trace *tr, const struct gmt_tdevice *d)
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
uint64_t
gmt_trow_static_at_peak(const struct gmt_tensors *t, const struct gmt_tdevice *d)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		if (s->device == d->device)
			sum += s->at_peak < s->mark_live ? s->at_peak : s->mark_live;
	}
	return sum;
}

/* The Python object that keeps a row's tensors at the end (a trace's holders line), or NULL. */
const struct gmt_trace_holder *
gmt_trow_holder(const struct gmt_model *m, const struct gmt_trow *r)
{
	const struct gmt_trace *tr = m->trace;

	return r->held_by && r->held_by <= tr->nholders ? &tr->holders[r->held_by - 1] : NULL;
}
