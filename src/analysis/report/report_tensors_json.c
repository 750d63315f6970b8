/*
 * @brief The tensor level in the JSON report: a process's "tensors" object (docs/report-json.md;
 * report_tensors.h; the rows are tensor_rows.h's).
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
#include "analysis/report/tensor_rows.h"
#include "analysis/report/units.h"

// --- JSON ---------------------------------------------------------------------------------------

static json_t *
jname(const struct gmt_tsite_name *n, json_t *o)
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
jheld(const struct gmt_model *m, const struct gmt_trow *r)
{
	const struct gmt_trace_holder *h = gmt_trow_holder(m, r);
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
jrange_leaks(const struct gmt_process *p, const struct gmt_cat_rules *rules)
{
	const struct gmt_model *m = p->model;
	json_t *a = json_array();

	for (size_t i = 0; i < m->nrange_tensors; i++) {
		const struct gmt_range_tensor *r = &m->range_tensors[i];
		struct gmt_tsite_name nm;
		gmt_trow_site(p, r->stack, &nm);
		json_t *o = jname(&nm, json_object());
		json_object_set_new(o, GMT_RK_STACK, jint(r->stack));
		json_object_set_new(o, GMT_RK_DEVICE, json_integer(r->device));
		json_object_set_new(o, GMT_RK_BYTES, jint(r->bytes));
		json_object_set_new(o, "requested", jint(r->requested));
		json_object_set_new(o, GMT_RK_TENSORS, jint(r->blocks));
		json_object_set_new(
		    o, GMT_RK_CATEGORY,
		    json_string(gmt_category_name(gmt_trow_category(p, rules, r->stack))));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *
jrows(const struct gmt_process *p, enum gmt_tview view, const struct gmt_cat_rules *rules)
{
	const struct gmt_model *m = p->model;
	size_t n;
	struct gmt_trow *rows = gmt_trow_rows(p, view, rules, &n);
	json_t *a = json_array();
	const struct gmt_tensors *t = m->tensors;

	for (size_t i = 0; i < n; i++) {
		json_t *o = jname(&rows[i].name, json_object());
		json_object_set_new(o, GMT_RK_DEVICE, json_integer(rows[i].device));
		json_object_set_new(o, GMT_RK_STACK, jint(rows[i].stack));
		if (view == GMT_TVIEW_AT_EXIT || view == GMT_TVIEW_GROWING)
			json_object_set_new(o, "held_by", jheld(m, &rows[i]));
		if (view == GMT_TVIEW_GROWING) {
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
			if (view == GMT_TVIEW_AT_EXIT)
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
jcategories(const struct gmt_process *p, const struct gmt_cat_rules *rules)
{
	const struct gmt_model *m = p->model;
	const struct gmt_tensors *t = m->tensors;
	uint64_t peak[GMT_CAT_COUNT] = {0}, end[GMT_CAT_COUNT] = {0}, req[GMT_CAT_COUNT] = {0};
	uint64_t mark[GMT_CAT_COUNT] = {0}, mreq[GMT_CAT_COUNT] = {0};
	json_t *a = json_array();

	for (size_t i = 0; i < t->nsites; i++) {
		const struct gmt_tsite *s = &t->sites[i];
		if (!s->at_peak && !s->live && !s->mark_live)
			continue;
		enum gmt_category c = gmt_trow_category(p, rules, s->stack);
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
gmt_tensors_row_stacks(const struct gmt_process *p, size_t *n)
{
	const struct gmt_model *m = p->model;
	static const enum gmt_tview views[] = {GMT_TVIEW_AT_PEAK, GMT_TVIEW_AT_EXIT,
					       GMT_TVIEW_GROWING};
	uint32_t *v = NULL;
	size_t nv = 0;

	*n = 0;
	if (!m->tensors)
		return NULL;
	for (size_t k = 0; k < sizeof(views) / sizeof(views[0]); k++) {
		size_t nr;
		struct gmt_trow *rows =
		    gmt_trow_rows(p, views[k], NULL, &nr); /* no categories needed */
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
jsite_ref(const struct gmt_process *p,
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
	struct gmt_tsite_name nm;
	gmt_trow_site(p, stack, &nm);
	json_t *o = jname(&nm, json_object());
	json_object_set_new(o, GMT_RK_STACK, jint(stack));
	json_object_set_new(o, "category",
			    json_string(gmt_category_name(gmt_trow_category(p, rules, stack))));
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
jtimeline(const struct gmt_process *proc, const struct gmt_cat_rules *rules, struct jsites *js)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_tensors *t = m->tensors;
	const struct gmt_trace *tr = m->trace;
	json_t *o = json_object(), *blocks = json_array(), *devs = json_array();

	for (size_t i = 0; i < t->nlives; i++) {
		const struct gmt_tlife *l = &t->lives[i];
		json_t *b = json_array();
		json_array_append_new(b, jtime(tr, l->alloc_ts));
		json_array_append_new(b, l->free_seq ? jtime(tr, l->free_ts) : json_null());
		json_array_append_new(b, jint(l->bytes));
		json_array_append_new(b, jsite_ref(proc, rules, js, l->stack));
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
joom_segments(const struct gmt_process *p,
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
						      : jsite_ref(p, rules, js, b->stack));
			json_array_append_new(bl, bj);
		}
		json_object_set_new(sj, "blocks", bl);
		json_array_append_new(a, sj);
	}
	return a;
}

json_t *
gmt_json_tensors(const struct gmt_process *proc, const struct gmt_cat_rules *chosen)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_tensors *t = m->tensors;
	const struct gmt_trace *tr = m->trace;
	struct gmt_cat_rules *builtin = NULL;
	const struct gmt_cat_rules *rules = chosen;
	json_t *o, *torch, *devs, *ooms;
	uint64_t peak = 0;
	struct jsites js = {.table = json_array()};

	if (!t)
		return NULL;
	if (!rules && !(rules = builtin = gmt_cat_builtin()))
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
		uint64_t not_torch = gmt_trow_not_pytorch(tr, d);

		peak += d->peak;
		json_object_set_new(dj, GMT_RK_DEVICE, json_integer(d->device));
		json_object_set_new(pk, GMT_RK_ALLOCATED, jint(d->peak));
		json_object_set_new(pk, GMT_RK_TIME_S, jtime(tr, d->peak_ts));
		json_object_set_new(pk, GMT_RK_CACHE, jcache_figures(&d->at_peak));
		json_object_set_new(pk, "not_pytorch", jint(not_torch));
		json_object_set_new(pk, "phase",
				    d->peak_phase[0] ? json_string(d->peak_phase) : json_null());
		uint64_t stat = gmt_trow_static_at_peak(t, d);
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
	json_object_set_new(o, GMT_RK_PEAK_SITES, jrows(proc, GMT_TVIEW_AT_PEAK, rules));
	json_object_set_new(o, GMT_RK_LIVE_AT_EXIT, jrows(proc, GMT_TVIEW_AT_EXIT, rules));
	json_object_set_new(o, GMT_RK_GROWTH, jrows(proc, GMT_TVIEW_GROWING, rules));
	json_object_set_new(o, "freed_by_gc", jrows(proc, GMT_TVIEW_GC_FREED, rules));
	json_t *held = json_array();
	for (size_t i = 0; i < t->nheld; i++) {
		const struct gmt_theld *h = &t->held[i];
		const struct gmt_trace_holder *th = &tr->holders[h->holder];
		struct gmt_tsite_name nm;
		gmt_trow_site(proc, h->stack, &nm);
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
		json_object_set_new(o, GMT_RK_LEAKED_IN_RANGE, jrange_leaks(proc, rules));
	json_object_set_new(o, GMT_RK_GROWTH_SAMPLES, jint(t->samples));
	json_object_set_new(o, "growth_basis", json_string(gmt_growth_basis_name(t->basis)));
	json_object_set_new(o, "categories", jcategories(proc, rules));
	ooms = json_array();
	for (size_t i = 0; i < t->nooms; i++) {
		const struct gmt_toom *x = &t->ooms[i];
		json_t *oj = json_object(), *pool = json_array(), *help = json_array();
		const char *h[4];
		size_t nh = gmt_trow_oom_help(tr, x, h);
		struct gmt_tsite_name nm;

		gmt_trow_site(proc, x->stack, &nm);
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
		json_object_set_new(oj, "cause", json_string(gmt_trow_oom_cause(x)));
		if (!strcmp(gmt_trow_oom_cause(x), "allocator_limit")) {
			/* c10 refused a new segment: reserved <= limit < reserved + segment */
			json_object_set_new(oj, "limit_at_least", jint(x->cache.reserved));
			json_object_set_new(oj, "limit_below",
					    jint(x->cache.reserved + x->rounded));
		}
		for (size_t k = 0; k < nh; k++)
			json_array_append_new(help, json_string(h[k]));
		json_object_set_new(oj, "would_help", help);
		json_object_set_new(oj, "segments_all", jint(x->nsegments_all));
		json_object_set_new(oj, "segments", joom_segments(proc, rules, &js, x));
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
	json_object_set_new(o, "timeline", jtimeline(proc, rules, &js));
	json_object_set_new(o, "block_sites", js.table);
	free(js.stacks);
	gmt_cat_free(builtin);
	return o;
}
