/*
 * @brief Replay of one trace: pairing, live bytes, peaks, leaks, failed allocations.
 *
 * The rules are those of docs/trace-format.md: events apply in seq order; a free takes its kind
 * and size from the allocation at the same address; a failed call (result != 0) changes nothing,
 * and a failed allocation is kept for the report with what the device said about its memory; a
 * device reset releases every live allocation of that device except stream-ordered pool memory.
 */
#define _GNU_SOURCE /* qsort_r */
#include "analysis/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

static void *
xrealloc(void *p, size_t n, size_t size)
{
	void *q = NULL;

	if (!size || n <= SIZE_MAX / size)
		q = realloc(p, n * size > 0 ? n * size : 1);
	if (!q) {
		fprintf(stderr, "gpumemtrace: out of memory\n");
		exit(3);
	}
	return q;
}

// --- live allocations: an open-addressing table keyed by address ------------------------------
//
// Linear probing with backward-shift deletion, so there are no tombstones and a long trace of
// alloc/free pairs never degrades the table. Address 0 marks an empty slot: a successful
// allocation never returns it (a zero-byte cudaMalloc does, and is not tracked).

struct live {
	uint64_t ptr;
	uint64_t size;
	uint32_t stack;
	int32_t device;
	uint16_t api;
	uint8_t kind;
};

struct live_map {
	struct live *slots;
	size_t mask; /* capacity - 1, capacity a power of two */
	size_t count;
};

static size_t
live_hash(uint64_t ptr)
{
	return (size_t)gmt_mix64(ptr);
}

static struct live *
live_find(struct live_map *m, uint64_t ptr)
{
	for (size_t i = live_hash(ptr) & m->mask;; i = (i + 1) & m->mask) {
		if (m->slots[i].ptr == ptr)
			return &m->slots[i];
		if (m->slots[i].ptr == 0)
			return NULL;
	}
}

static void live_insert(struct live_map *m, const struct live *l);

static void
live_grow(struct live_map *m)
{
	struct live *old = m->slots;
	size_t oldcap = m->mask + 1;

	m->slots = calloc(oldcap * 2, sizeof(*m->slots));
	if (!m->slots) {
		fprintf(stderr, "gpumemtrace: out of memory\n");
		exit(3);
	}
	m->mask = oldcap * 2 - 1;
	m->count = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].ptr)
			live_insert(m, &old[i]);
	free(old);
}

/* Precondition: l->ptr is not in the table. */
static void
live_insert(struct live_map *m, const struct live *l)
{
	size_t i;

	if ((m->count + 1) * 4 > (m->mask + 1) * 3)
		live_grow(m);
	for (i = live_hash(l->ptr) & m->mask; m->slots[i].ptr; i = (i + 1) & m->mask)
		;
	m->slots[i] = *l;
	m->count++;
}

static void
live_remove(struct live_map *m, struct live *slot)
{
	size_t i = (size_t)(slot - m->slots);
	size_t j = i;

	/* Backward shift: move later entries of the probe run into the hole if that is allowed. */
	for (;;) {
		size_t home;

		j = (j + 1) & m->mask;
		if (m->slots[j].ptr == 0)
			break;
		home = live_hash(m->slots[j].ptr) & m->mask;
		/* Entry j may fill hole i only if its home is not in the cyclic range (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].ptr = 0;
	m->count--;
}

// --- replay -----------------------------------------------------------------------------------

struct replay {
	struct gmt_model *m;
	struct live_map live;
	size_t devcap;
	size_t tlcap;
	size_t failcap;
};

static struct gmt_device_stats *
device_get(struct replay *r, int32_t device)
{
	struct gmt_model *m = r->m;
	size_t i;

	for (i = 0; i < m->ndevices && m->devices[i].device < device; i++)
		;
	if (i < m->ndevices && m->devices[i].device == device)
		return &m->devices[i];
	if (m->ndevices == r->devcap) {
		r->devcap = r->devcap ? r->devcap * 2 : 4;
		m->devices = xrealloc(m->devices, r->devcap, sizeof(*m->devices));
	}
	memmove(&m->devices[i + 1], &m->devices[i], (m->ndevices - i) * sizeof(*m->devices));
	memset(&m->devices[i], 0, sizeof(m->devices[i]));
	m->devices[i].device = device;
	m->ndevices++;
	return &m->devices[i];
}

static void
timeline_add(struct replay *r,
	     const struct gmt_trace_event *ev,
	     int32_t device,
	     uint8_t kind,
	     uint64_t bytes)
{
	struct gmt_model *m = r->m;

	if (m->ntimeline == r->tlcap) {
		r->tlcap = r->tlcap ? r->tlcap * 2 : 256;
		m->timeline = xrealloc(m->timeline, r->tlcap, sizeof(*m->timeline));
	}
	m->timeline[m->ntimeline++] = (struct gmt_live_point){
	    .seq = ev->seq,
	    .ts = ev->ts,
	    .bytes = bytes,
	    .device = device,
	    .kind = kind,
	};
}

static void
account_alloc(struct replay *r, const struct gmt_trace_event *ev, const struct live *l)
{
	struct gmt_device_stats *d = device_get(r, l->device);
	uint8_t k = l->kind;

	d->live[k] += l->size;
	d->live_allocs[k]++;
	d->live_total += l->size;
	d->allocations++;
	/* Strictly greater: a peak is the first moment the maximum was reached. */
	if (d->live[k] > d->kind_peak[k].bytes)
		d->kind_peak[k] = (struct gmt_peak){d->live[k], ev->ts, ev->seq};
	if (d->live_total > d->peak.bytes) {
		d->peak = (struct gmt_peak){d->live_total, ev->ts, ev->seq};
		memcpy(d->peak_by_kind, d->live, sizeof(d->live));
	}
	timeline_add(r, ev, l->device, k, d->live[k]);
}

static void
account_release(struct replay *r, const struct gmt_trace_event *ev, const struct live *l)
{
	struct gmt_device_stats *d = device_get(r, l->device);
	uint8_t k = l->kind;

	d->live[k] -= l->size;
	d->live_allocs[k]--;
	d->live_total -= l->size;
	timeline_add(r, ev, l->device, k, d->live[k]);
}

static void
replay_alloc(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_model *m = r->m;
	struct live l = {
	    .ptr = ev->ptr,
	    .size = ev->size,
	    .stack = ev->stack,
	    .device = ev->device,
	    .api = ev->api,
	    .kind = ev->kind,
	};
	struct live *old;

	if (ev->result != 0) {
		if (m->nfailed == r->failcap) {
			r->failcap = r->failcap ? r->failcap * 2 : 8;
			m->failed = xrealloc(m->failed, r->failcap, sizeof(*m->failed));
		}
		m->failed[m->nfailed++] = ev;
		return;
	}
	/* cudaMalloc(&p, 0) succeeds with p == NULL: nothing was allocated. */
	if (ev->ptr == 0)
		return;
	old = live_find(&r->live, ev->ptr);
	if (old) {
		/*
		 * The address is handed out again while we still think it is live: its free was
		 * lost (dropped events) or made through an API the trace does not cover. The new
		 * allocation is the truth; the old one is released here.
		 */
		m->reused_addresses++;
		account_release(r, ev, old);
		live_remove(&r->live, old);
	}
	live_insert(&r->live, &l);
	m->allocations++;
	account_alloc(r, ev, &l);
}

static void
replay_free(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_model *m = r->m;
	struct live *l;

	if (ev->result != 0) {
		m->failed_frees++;
		return;
	}
	/* cudaFree(NULL) frees nothing (not recorded by the tracer, tolerated here). */
	if (ev->ptr == 0)
		return;
	l = live_find(&r->live, ev->ptr);
	if (!l) {
		/* Allocated before tracing, through an uncovered path, or its event dropped. */
		m->unmatched_frees++;
		return;
	}
	m->frees++;
	account_release(r, ev, l);
	live_remove(&r->live, l);
}

static void
replay_reset(struct replay *r, const struct gmt_trace_event *ev)
{
	struct live_map *lm = &r->live;
	struct live *keep;
	size_t nkeep = 0, cap = lm->mask + 1;

	if (ev->result != 0)
		return;
	r->m->resets++;
	/*
	 * cudaDeviceReset frees everything of the device but stream-ordered pool memory. Rebuild
	 * the table from the survivors: resets are rare and this keeps removal out of a scan.
	 */
	keep = xrealloc(NULL, lm->count ? lm->count : 1, sizeof(*keep));
	for (size_t i = 0; i < cap; i++) {
		struct live *l = &lm->slots[i];

		if (!l->ptr)
			continue;
		if (l->device == ev->device && l->kind != GMT_KIND_POOL)
			account_release(r, ev, l);
		else
			keep[nkeep++] = *l;
	}
	memset(lm->slots, 0, cap * sizeof(*lm->slots));
	lm->count = 0;
	for (size_t i = 0; i < nkeep; i++)
		live_insert(lm, &keep[i]);
	free(keep);
}

// --- leaks: what is live at the end, by call site ---------------------------------------------

static int
cmp_live_site(const void *pa, const void *pb)
{
	const struct live *a = pa, *b = pb;

	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	if (a->api != b->api)
		return a->api < b->api ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

/* Largest first; the rest of the key only makes the order the same on every run. */
static int
cmp_leak(const void *pa, const void *pb, void *trace)
{
	const struct gmt_leak *a = pa, *b = pb;
	const struct gmt_trace *t = trace;
	int c;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->allocations != b->allocations)
		return a->allocations > b->allocations ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	c = strcmp(gmt_trace_string(t, a->api), gmt_trace_string(t, b->api));
	return c ? c : (int)a->kind - (int)b->kind;
}

static void
collect_leaks(struct replay *r)
{
	struct gmt_model *m = r->m;
	struct live *all;
	size_t n = 0;

	if (r->live.count == 0)
		return;
	all = xrealloc(NULL, r->live.count, sizeof(*all));
	for (size_t i = 0; i <= r->live.mask; i++)
		if (r->live.slots[i].ptr)
			all[n++] = r->live.slots[i];
	qsort(all, n, sizeof(*all), cmp_live_site);
	m->leaks = xrealloc(NULL, n, sizeof(*m->leaks));
	for (size_t i = 0; i < n; i++) {
		struct gmt_leak *g = m->nleaks ? &m->leaks[m->nleaks - 1] : NULL;

		if (!g || cmp_live_site(&all[i - 1], &all[i]) != 0) {
			g = &m->leaks[m->nleaks++];
			*g = (struct gmt_leak){
			    .stack = all[i].stack, .api = all[i].api, .kind = all[i].kind};
		}
		g->bytes += all[i].size;
		g->allocations++;
		m->live_end_bytes += all[i].size;
		m->live_end_allocations++;
	}
	free(all);
	qsort_r(m->leaks, m->nleaks, sizeof(*m->leaks), cmp_leak, (void *)m->trace);
}

struct gmt_model *
gmt_model_build(const struct gmt_trace *trace)
{
	struct replay r = {0};
	struct gmt_model *m;

	m = calloc(1, sizeof(*m));
	r.live.slots = calloc(64, sizeof(*r.live.slots));
	if (!m || !r.live.slots) {
		free(m);
		free(r.live.slots);
		errno = ENOMEM;
		return NULL;
	}
	r.live.mask = 63;
	r.m = m;
	m->trace = trace;

	for (size_t i = 0; i < trace->nevents; i++) {
		const struct gmt_trace_event *ev = &trace->events[i];

		switch (ev->op) {
		case GMT_OP_ALLOC: replay_alloc(&r, ev); break;
		case GMT_OP_FREE: replay_free(&r, ev); break;
		case GMT_OP_RESET: replay_reset(&r, ev); break;
		default: break;
		}
	}
	collect_leaks(&r);
	free(r.live.slots);
	return m;
}

void
gmt_model_free(struct gmt_model *m)
{
	if (!m)
		return;
	free(m->devices);
	free(m->leaks);
	free(m->failed);
	free(m->timeline);
	free(m);
}

uint64_t
gmt_model_events(const struct gmt_model *m)
{
	return m->trace->nevents + m->trace->nmarkers;
}

void
gmt_model_totals(struct gmt_model *const *models, size_t n, struct gmt_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->processes = n;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = models[i];
		const struct gmt_trace *tr = m->trace;

		t->events += gmt_model_events(m);
		t->dropped += tr->dropped;
		t->bad_lines += tr->bad_lines;
		t->failed += m->nfailed;
		t->unmatched_frees += m->unmatched_frees;
		t->failed_frees += m->failed_frees;
		t->reused_addresses += m->reused_addresses;
		if (tr->complete) {
			t->leaked_bytes += m->live_end_bytes;
			t->leaked_allocations += m->live_end_allocations;
			t->leak_sites += m->nleaks;
		} else {
			t->died++;
			t->live_at_end_bytes += m->live_end_bytes;
			t->live_at_end_allocations += m->live_end_allocations;
			t->live_at_end_sites += m->nleaks;
		}
		for (size_t d = 0; d < m->ndevices; d++) {
			if (m->devices[d].peak.bytes > t->peak_bytes) {
				t->peak_bytes = m->devices[d].peak.bytes;
				t->peak_model = m;
				t->peak_device = &m->devices[d];
			}
		}
	}
}
