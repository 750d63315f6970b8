/*
 * @brief Call-site groups of leaks, peaks and failed allocations (sites.h).
 */
#define _GNU_SOURCE /* qsort_r */
#include "analysis/report/sites.h"
#include "analysis/report/nomem.h"
#include "util/alloc.h"
#include "util/sat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Thread_local bool gmt_report_nomem; /* nomem.h */

bool
gmt_report_failed(const struct gmt_process *procs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (gmt_callstacks_error(procs[i].stacks))
			return true;
	return gmt_report_nomem;
}

/* An item with its call site looked up once. */
struct keyed {
	const struct gmt_site_item *it;
	const struct gmt_cstack *cs;
	const struct gmt_cframe *site;
};

static int
cmp_frame_or_null(const struct gmt_cframe *a, const struct gmt_cframe *b)
{
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	return gmt_cframe_cmp(a, b);
}

/* Same group: process, device, call, kind, site. */
static int
cmp_group_key(const struct keyed *a, const struct keyed *b)
{
	if (a->it->proc != b->it->proc)
		return a->it->proc < b->it->proc ? -1 : 1;
	if (a->it->device != b->it->device)
		return a->it->device < b->it->device ? -1 : 1;
	if (a->it->api != b->it->api)
		return a->it->api < b->it->api ? -1 : 1;
	if (a->it->driver != b->it->driver)
		return a->it->driver < b->it->driver ? -1 : 1;
	if (a->it->kind != b->it->kind)
		return a->it->kind < b->it->kind ? -1 : 1;
	return cmp_frame_or_null(a->site, b->site);
}

static int
cmp_keyed(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	int c = cmp_group_key(a, b);

	if (c)
		return c;
	if (a->it->stack != b->it->stack)
		return a->it->stack < b->it->stack ? -1 : 1;
	return a->it->seq < b->it->seq ? -1 : a->it->seq > b->it->seq;
}

static int
cmp_site_stack(const void *pa, const void *pb)
{
	const struct gmt_site_stack *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int
cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int
cmp_site(const void *pa, const void *pb, void *arg)
{
	const struct gmt_site *a = pa, *b = pb;
	const enum gmt_group_order *order = arg;
	const struct gmt_trace *ta = a->p->model->trace, *tb = b->p->model->trace;
	int c;

	if (*order == GMT_GROUP_BY_COUNT && a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (*order == GMT_GROUP_BY_SEQ) {
		if (a->proc != b->proc)
			return a->proc < b->proc ? -1 : 1;
		if (a->first_seq != b->first_seq)
			return a->first_seq < b->first_seq ? -1 : 1;
	}
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if ((c = cmp_frame_or_null(a->frame, b->frame)))
		return c;
	if ((c = strcmp(gmt_trace_string(ta, a->api), gmt_trace_string(tb, b->api))))
		return c;
	if ((c = cmp_str(gmt_trace_driver(ta, a->driver), gmt_trace_driver(tb, b->driver))))
		return c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->stacks[0].stack < b->stacks[0].stack ? -1
						       : a->stacks[0].stack > b->stacks[0].stack;
}

/* The group of keyed items k[0 .. n); false out of memory. */
static bool
make_group(const struct keyed *k, size_t n, struct gmt_site *g)
{
	const struct gmt_site_item *it = k[0].it;

	memset(g, 0, sizeof(*g));
	g->proc = it->proc;
	g->p = it->p;
	g->frame = k[0].site;
	g->api = it->api;
	g->driver = it->driver;
	g->kind = it->kind;
	g->device = it->device;
	g->first_seq = UINT64_MAX;
	if (!(g->stacks = gmt_realloc_array(NULL, n, sizeof(*g->stacks))))
		return false;
	for (size_t i = 0; i < n; i++) {
		struct gmt_site_stack *s = g->nstacks ? &g->stacks[g->nstacks - 1] : NULL;

		/* Items are sorted by stack within the group: equal ids are adjacent. */
		if (!s || s->stack != k[i].it->stack) {
			s = &g->stacks[g->nstacks++];
			*s = (struct gmt_site_stack){
			    .stack = k[i].it->stack, .cs = k[i].cs, .st = k[i].it->st};
		}
		s->bytes = gmt_sat_add(s->bytes, k[i].it->bytes);
		s->count += k[i].it->count;
		g->bytes = gmt_sat_add(g->bytes, k[i].it->bytes);
		g->count += k[i].it->count;
		if (k[i].it->seq < g->first_seq)
			g->first_seq = k[i].it->seq;
	}
	qsort(g->stacks, g->nstacks, sizeof(*g->stacks), cmp_site_stack);
	for (size_t i = 0; i < g->nstacks && !g->cs; i++)
		g->cs = g->stacks[i].cs;
	return true;
}

void
gmt_sites_group(const struct gmt_site_item *items,
		size_t n,
		enum gmt_group_order order,
		struct gmt_sites *out)
{
	struct keyed *k;
	size_t start = 0;

	out->v = NULL;
	out->n = 0;
	if (n == 0)
		return;
	k = gmt_realloc_array(NULL, n, sizeof(*k));
	out->v = gmt_realloc_array(NULL, n, sizeof(*out->v));
	if (!k || !out->v)
		goto err_nomem;
	for (size_t i = 0; i < n; i++) {
		k[i].it = &items[i];
		k[i].cs = gmt_process_stack(items[i].p, items[i].stack);
		k[i].site = gmt_cstack_site(k[i].cs);
	}
	qsort(k, n, sizeof(*k), cmp_keyed);
	for (size_t i = 1; i <= n; i++) {
		if (i < n && cmp_group_key(&k[start], &k[i]) == 0)
			continue;
		if (!make_group(&k[start], i - start, &out->v[out->n]))
			goto err_nomem;
		out->n++;
		start = i;
	}
	free(k);
	qsort_r(out->v, out->n, sizeof(*out->v), cmp_site, &order);
	return;

err_nomem: /* no groups rather than some */
	free(k);
	gmt_sites_free(out);
	gmt_nomem();
}

void
gmt_sites_free(struct gmt_sites *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].stacks);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* Room for one more item at v[*n], counted; false out of memory. */
static bool
items_push(struct gmt_site_item **v, size_t *n, size_t *cap)
{
	if (gmt_grow(v, cap, *n + 1, sizeof(**v), 64) != 0)
		return false;
	(*n)++;
	return true;
}

static bool
push_leak(struct gmt_site_item **v,
	  size_t *n,
	  size_t *cap,
	  size_t proc,
	  const struct gmt_process *p,
	  const struct gmt_leak *l,
	  int32_t device)
{
	if (!items_push(v, n, cap))
		return false;
	(*v)[*n - 1] = (struct gmt_site_item){
	    .proc = proc,
	    .p = p,
	    .stack = l->stack,
	    .api = l->api,
	    .driver = l->driver,
	    .kind = l->kind,
	    .device = device,
	    .bytes = l->bytes,
	    .count = l->allocations,
	};
	return true;
}

/* The rows of (stack, call, kind) of every model: its leaks, or the allocations live at each
 * device's peak (@p at_peak). */
static struct gmt_site_item *
leak_rows(const struct gmt_process *procs, size_t n, bool at_peak, size_t *nitems)
{
	struct gmt_site_item *v = NULL;
	size_t cap = 0;

	*nitems = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

		if (!at_peak) {
			for (size_t k = 0; k < m->nleaks; k++)
				if (!push_leak(&v, nitems, &cap, i, &procs[i], &m->leaks[k], 0))
					goto err_nomem;
			continue;
		}
		for (size_t d = 0; d < m->ndevices; d++) {
			const struct gmt_device_stats *dev = &m->devices[d];

			for (size_t k = 0; k < dev->npeak_sites; k++)
				if (!push_leak(&v, nitems, &cap, i, &procs[i], &dev->peak_sites[k],
					       dev->device))
					goto err_nomem;
		}
	}
	return v;

err_nomem:
	free(v);
	*nitems = 0;
	return gmt_nomem();
}

struct gmt_site_item *
gmt_sites_leak_items(const struct gmt_process *procs, size_t n, size_t *nitems)
{
	return leak_rows(procs, n, false, nitems);
}

struct gmt_site_item *
gmt_sites_peak_items(const struct gmt_process *procs, size_t n, size_t *nitems)
{
	return leak_rows(procs, n, true, nitems);
}

struct gmt_site_item *
gmt_sites_failed_items(const struct gmt_process *procs, size_t n, size_t *nitems)
{
	struct gmt_site_item *v = NULL;
	size_t cap = 0;

	*nitems = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < procs[i].model->nfailed; k++) {
			const struct gmt_trace_event *ev = procs[i].model->failed[k];

			if (!items_push(&v, nitems, &cap)) {
				free(v);
				*nitems = 0;
				return gmt_nomem();
			}
			v[*nitems - 1] = (struct gmt_site_item){
			    .proc = i,
			    .p = &procs[i],
			    .stack = ev->stack,
			    .api = ev->api,
			    .driver = ev->driver,
			    .kind = ev->kind,
			    .device = ev->device,
			    .bytes = ev->size,
			    .count = 1,
			    .seq = ev->seq,
			};
		}
	}
	return v;
}

struct gmt_site_item *
gmt_sites_stat_items(const struct gmt_process *procs,
		     size_t n,
		     enum gmt_site_order order,
		     size_t *nitems)
{
	size_t nref, cap = 0;
	struct gmt_site_ref *ref = gmt_sites_ranked(procs, n, order, &nref);
	struct gmt_site_item *v = NULL;

	*nitems = 0;
	for (size_t i = 0; i < nref; i++) {
		const struct gmt_site_stats *st = ref[i].st;

		if (!items_push(&v, nitems, &cap)) {
			free(v);
			free(ref);
			*nitems = 0;
			return gmt_nomem();
		}
		v[*nitems - 1] = (struct gmt_site_item){
		    .proc = ref[i].proc,
		    .p = ref[i].p,
		    .stack = st->stack,
		    .api = st->api,
		    .driver = st->driver,
		    .kind = st->kind,
		    .device = st->device,
		    .bytes = order == GMT_SITES_GROWING ? ref[i].key : st->allocated_bytes,
		    .count = order == GMT_SITES_GROWING ? 1 : st->allocations,
		    .st = st,
		};
	}
	free(ref);
	return v;
}

struct gmt_growth
gmt_site_group_growth(const struct gmt_site *g, uint32_t *min_rises, uint32_t *max_rises)
{
	struct gmt_growth sum = {0};

	*min_rises = UINT32_MAX;
	*max_rises = 0;
	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gmt_growth *s = gmt_site_growth(g->p->model, g->stacks[i].st);

		sum.first += s->first;
		sum.last += s->last;
		if (i == 0) { /* stacks are largest first */
			sum.rises = s->rises;
			sum.falls = s->falls;
		}
		if (s->rises < *min_rises)
			*min_rises = s->rises;
		if (s->rises > *max_rises)
			*max_rises = s->rises;
	}
	if (!g->nstacks)
		*min_rises = 0;
	return sum;
}

struct gmt_site_stats
gmt_site_group_traffic(const struct gmt_site *g)
{
	struct gmt_site_stats sum = {0};

	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gmt_site_stats *s = g->stacks[i].st;

		sum.allocations += s->allocations;
		sum.allocated_bytes = gmt_sat_add(sum.allocated_bytes, s->allocated_bytes);
		sum.frees += s->frees;
		sum.temporaries += s->temporaries;
		sum.temporary_bytes = gmt_sat_add(sum.temporary_bytes, s->temporary_bytes);
		for (int b = 0; b < GMT_LIFETIME_BUCKETS; b++)
			sum.lifetime[b] += s->lifetime[b];
	}
	return sum;
}

// --- ranking one model's site table --------------------------------------------------------

static int
cmp_site_ref(const void *pa, const void *pb)
{
	const struct gmt_site_ref *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key > b->key ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	/* ties by what the site is, not by when the trace first showed it (a bounded trace's
	 * elided lines come at their bucket's end): the tracer's stack id, device, kind, names */
	const struct gmt_site_stats *x = a->st, *y = b->st;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	int c = strcmp(gmt_trace_string(a->p->model->trace, x->api),
		       gmt_trace_string(b->p->model->trace, y->api));
	if (!c)
		c = strcmp(gmt_trace_string(a->p->model->trace, x->driver),
			   gmt_trace_string(b->p->model->trace, y->driver));
	if (c)
		return c;
	return x < y ? -1 : x > y;
}

struct gmt_site_ref *
gmt_sites_ranked(const struct gmt_process *procs,
		 size_t n,
		 enum gmt_site_order order,
		 size_t *count)
{
	struct gmt_site_ref *v = NULL;
	size_t nv = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

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
			if (gmt_grow(&v, &cap, nv + 1, sizeof(*v), 16) != 0) {
				free(v);
				*count = 0;
				return gmt_nomem();
			}
			v[nv++] = (struct gmt_site_ref){i, &procs[i], st, key};
		}
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_site_ref);
	*count = nv;
	return v;
}

/* The frame that called @p cs's call site: the next frame outward of the site's kind that
 * stacks show; NULL when there is none. */
static const struct gmt_cframe *
caller_of(const struct gmt_cstack *cs)
{
	const struct gmt_cframe *site = gmt_cstack_site(cs);

	if (!site)
		return NULL;
	for (uint32_t i = (uint32_t)cs->site + 1; i < cs->nframes; i++) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, i);
		if (!f->hidden && f->kind == site->kind)
			return f;
	}
	return NULL;
}

size_t
gmt_site_callers(const struct gmt_site *g, struct gmt_site_caller *out, size_t max)
{
	struct gmt_site_caller *all = calloc(g->nstacks ? g->nstacks : 1, sizeof(*all));
	size_t n = 0;

	if (!all)
		return 0;
	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gmt_site_stack *st = &g->stacks[i];
		const struct gmt_cframe *f = st->cs ? caller_of(st->cs) : NULL;
		size_t k = 0;
		while (k < n && !gmt_cframe_same_site(all[k].frame, f))
			k++;
		if (k == n)
			all[n++] = (struct gmt_site_caller){.frame = f};
		all[k].bytes = gmt_sat_add(all[k].bytes, st->bytes);
		all[k].count += st->count;
	}
	/* largest first, ties in the order first seen: a stable insertion sort (few callers) */
	for (size_t i = 1; i < n; i++) {
		struct gmt_site_caller c = all[i];
		size_t k = i;
		while (k > 0 && all[k - 1].bytes < c.bytes) {
			all[k] = all[k - 1];
			k--;
		}
		all[k] = c;
	}
	memcpy(out, all, (n < max ? n : max) * sizeof(*out));
	free(all);
	return n;
}
