/*
 * @brief The tensor level of the replay (tensors.h).
 *
 * Per block line: the cache's replay (blocks.c) is applied, the site of the block gains or loses
 * its real bytes, and the device's memory_allocated() is compared with its peak. As in the
 * CUDA-level replay, a new peak only marks the device; the sites' bytes are copied when the next
 * line lowers the figure (or at the end), so a run of allocations costs one copy, not one each.
 * Figures that walk the blocks (free pieces, the largest free block) are computed at peaks,
 * markers, OOMs and the end only.
 */
#include "analysis/model/tensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch_entry.h"

static struct gmt_tdevice *
device_of(struct gmt_tensors *t, int32_t device)
{
	size_t lo = 0, hi = t->ndevices;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->devices[mid].device < device)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->ndevices && t->devices[lo].device == device)
		return &t->devices[lo];
	struct gmt_tdevice *nd = realloc(t->devices, (t->ndevices + 1) * sizeof(*nd));
	if (!nd) {
		t->error = -ENOMEM;
		return NULL;
	}
	t->devices = nd;
	memmove(&nd[lo + 1], &nd[lo], (t->ndevices - lo) * sizeof(*nd));
	nd[lo] = (struct gmt_tdevice){.device = device};
	t->ndevices++;
	return &nd[lo];
}

const struct gmt_tdevice *
gmt_tensors_device(const struct gmt_tensors *t, int32_t device)
{
	for (size_t i = 0; i < t->ndevices; i++)
		if (t->devices[i].device == device)
			return &t->devices[i];
	return NULL;
}

static size_t
site_hash(uint32_t stack, int32_t device)
{
	uint64_t h = ((uint64_t)stack << 8 ^ (uint32_t)device) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20);
}

static bool
index_grow(struct gmt_tensors *t)
{
	size_t cap = t->site_index_cap ? t->site_index_cap * 2 : 256;
	uint32_t *ix = calloc(cap, sizeof(*ix));

	if (!ix)
		return false;
	for (size_t i = 0; i < t->nsites; i++) {
		size_t h = site_hash(t->sites[i].stack, t->sites[i].device) & (cap - 1);
		while (ix[h])
			h = (h + 1) & (cap - 1);
		ix[h] = (uint32_t)i + 1;
	}
	free(t->site_index);
	t->site_index = ix;
	t->site_index_cap = cap;
	return true;
}

static struct gmt_tsite *
site_of(struct gmt_tensors *t, uint32_t stack, int32_t device)
{
	if ((t->nsites + 1) * 2 > t->site_index_cap && !index_grow(t)) {
		t->error = -ENOMEM;
		return NULL;
	}
	size_t mask = t->site_index_cap - 1, h = site_hash(stack, device) & mask;
	for (; t->site_index[h]; h = (h + 1) & mask) {
		struct gmt_tsite *s = &t->sites[t->site_index[h] - 1];
		if (s->stack == stack && s->device == device)
			return s;
	}
	if (t->nsites == t->sites_cap) {
		size_t cap = t->sites_cap ? t->sites_cap * 2 : 64;
		struct gmt_tsite *ns = realloc(t->sites, cap * sizeof(*ns));
		if (!ns) {
			t->error = -ENOMEM;
			return NULL;
		}
		t->sites = ns;
		t->sites_cap = cap;
	}
	t->sites[t->nsites] = (struct gmt_tsite){.stack = stack, .device = device};
	t->site_index[h] = (uint32_t)++t->nsites;
	return &t->sites[t->nsites - 1];
}

struct gmt_tensors *
gmt_tensors_new(const struct gmt_trace *trace)
{
	struct gmt_tensors *t = calloc(1, sizeof(*t));

	(void)trace; /* expandable segments show in their own lines (segment_map, segment_state) */
	if (t && !(t->blk = gmt_blk_new(false))) {
		free(t);
		return NULL;
	}
	return t;
}

void
gmt_tensors_free(struct gmt_tensors *t)
{
	if (!t)
		return;
	gmt_blk_free(t->blk);
	for (size_t i = 0; i < t->ndevices; i++)
		free(t->devices[i].frag);
	free(t->devices);
	free(t->sites);
	free(t->ooms);
	free(t->marks);
	free(t->site_index);
	free(t);
}

static void
cache_now(const struct gmt_tensors *t, int32_t device, struct gmt_tcache *c)
{
	struct gmt_blk_totals bt;

	gmt_blk_totals(t->blk, device, &bt);
	*c = (struct gmt_tcache){
	    .allocated = bt.allocated_bytes,
	    .requested = bt.requested_bytes,
	    .reserved = bt.reserved_bytes,
	    .segments = bt.segments,
	    .blocks = bt.allocations,
	    .free_pieces = bt.free_pieces,
	    .largest_free = bt.largest_free,
	    .inactive_split = bt.inactive_split_bytes,
	};
}

/* The device's peak: its sites' bytes and the cache as they are now. */
static void
take_peak(struct gmt_tensors *t, struct gmt_tdevice *d)
{
	if (!d->pending)
		return;
	d->pending = false;
	for (size_t i = 0; i < t->nsites; i++) {
		struct gmt_tsite *s = &t->sites[i];
		if (s->device == d->device) {
			s->at_peak = s->live;
			s->at_peak_blocks = s->live_blocks;
		}
	}
	cache_now(t, d->device, &d->at_peak);
}

/* A point of the fragmentation series; when full, every other point goes (the higher of each
 * pair stays, so the worst moments are kept). */
static void
frag_point_of(struct gmt_tensors *t,
	      struct gmt_tdevice *d,
	      uint64_t ts,
	      uint64_t seq,
	      const struct gmt_tcache *cp)
{
	struct gmt_tcache c = *cp;
	/* reserved but unallocated, as torch's OOM message counts it (blocks whose free waits for
	 * their streams included) */
	uint64_t free_bytes = c.reserved - c.allocated;
	struct gmt_tfrag p = {
	    .ts = ts, .seq = seq, .reserved = c.reserved, .largest_free = c.largest_free};

	p.free = free_bytes;
	p.permille = free_bytes && c.largest_free <= free_bytes
			 ? (uint32_t)(1000 - c.largest_free * 1000 / free_bytes)
			 : 0;
	if (p.permille > d->max_frag_permille)
		d->max_frag_permille = p.permille;
	if (d->nfrag == GMT_TFRAG_MAX) {
		size_t k = 0;
		for (size_t i = 0; i + 1 < d->nfrag; i += 2)
			d->frag[k++] = d->frag[i].permille >= d->frag[i + 1].permille
					   ? d->frag[i]
					   : d->frag[i + 1];
		d->nfrag = k;
	}
	if (d->nfrag == d->frag_cap) {
		size_t cap = d->frag_cap ? d->frag_cap * 2 : 64;
		struct gmt_tfrag *nf = realloc(d->frag, cap * sizeof(*nf));
		if (!nf) {
			t->error = -ENOMEM;
			return;
		}
		d->frag = nf;
		d->frag_cap = cap;
	}
	d->frag[d->nfrag++] = p;
}

static void
frag_point(struct gmt_tensors *t, struct gmt_tdevice *d, uint64_t ts, uint64_t seq)
{
	struct gmt_tcache c;

	cache_now(t, d->device, &c);
	frag_point_of(t, d, ts, seq, &c);
}

/* A mark: each device's cache, kept for the report, and a point of its fragmentation series. */
static void
mark_point(struct gmt_tensors *t, struct gmt_tdevice *d, const struct gmt_trace_marker *mk)
{
	struct gmt_tcache c;

	cache_now(t, d->device, &c);
	frag_point_of(t, d, mk->ts, mk->seq, &c);
	if (t->nmarks >= GMT_TMARKS_MAX)
		return;
	struct gmt_tmark *nm = realloc(t->marks, (t->nmarks + 1) * sizeof(*nm));
	if (!nm) {
		t->error = -ENOMEM;
		return;
	}
	t->marks = nm;
	struct gmt_tmark *k = &nm[t->nmarks++];
	*k = (struct gmt_tmark){.seq = mk->seq, .ts = mk->ts, .device = d->device, .cache = c};
	snprintf(k->label, sizeof(k->label), "%s", mk->label ? mk->label : "");
}

static void
record_oom(struct gmt_tensors *t,
	   struct gmt_tdevice *d,
	   const struct gmt_trace_event *ev,
	   uint64_t held)
{
	struct gmt_toom *no = realloc(t->ooms, (t->nooms + 1) * sizeof(*no));

	if (!no) {
		t->error = -ENOMEM;
		return;
	}
	t->ooms = no;
	struct gmt_toom *o = &no[t->nooms++];
	*o = (struct gmt_toom){
	    .seq = ev->seq,
	    .ts = ev->ts,
	    .device = ev->device,
	    .stack = ev->stack,
	    .requested = ev->size,
	    .rounded = gmt_blk_round(ev->size),
	    .device_free = ev->free_bytes,
	    .stream = ev->handle,
	    .pool = {ev->offset, ev->context},
	    .held = held,
	    .prev_seq = d->last_seq,
	};
	cache_now(t, ev->device, &o->cache);
	gmt_blk_free_in(t->blk, ev->device, ev->handle, o->pool, &o->pool_free, &o->pool_pieces,
			&o->pool_largest_free);
	frag_point(t, d, ev->ts, ev->seq);
}

void
gmt_tensors_event(struct gmt_tensors *t, const struct gmt_trace_event *ev, uint64_t held)
{
	if (t->error)
		return;
	if (ev->device < 0 || ev->device >= GMT_BLK_MAX_DEVICES) { /* no CUDA ordinal: damaged */
		t->lines++;
		t->bad_device++;
		return;
	}
	struct gmt_tdevice *d = device_of(t, ev->device);
	if (!d)
		return;
	uint32_t flags = (uint32_t)ev->result;
	struct gmt_blk_event be = {
	    .action = ev->kind,
	    .seq = ev->seq,
	    .ts_ns = ev->ts,
	    .device = ev->device,
	    .ptr = ev->ptr,
	    .size = ev->size,
	    .requested = ev->requested,
	    .stream = ev->handle,
	    .pool = {ev->offset, ev->context},
	    .stack = ev->stack,
	    .allocated = flags & GMT_TORCH_F_ALLOCATED,
	    .active = flags & GMT_TORCH_F_ACTIVE,
	    .expandable = flags & GMT_TORCH_F_EXPANDABLE,
	    .large = flags & GMT_TORCH_F_LARGE,
	};
	uint64_t before, after, req, reserved, bsize = 0, breq = 0;
	uint32_t bstack = 0;

	t->lines++;
	if (ev->kind == GMT_TORCH_OOM) {
		take_peak(t, d);
		record_oom(t, d, ev, held);
		d->last_seq = ev->seq;
		return;
	}
	d->last_seq = ev->seq;
	gmt_blk_running(t->blk, ev->device, &before, &req, &reserved);
	bool freeing = ev->kind == GMT_TORCH_FREE_REQUESTED || ev->kind == GMT_TORCH_FREE_COMPLETED;
	if (freeing) {
		bstack = gmt_blk_stack_of(t->blk, ev->ptr, &bsize, &breq);
		take_peak(t, d); /* the figure may drop: the peak's state is now */
	} else if (ev->kind == GMT_TORCH_SEGMENT_FREE || ev->kind == GMT_TORCH_SEGMENT_UNMAP) {
		take_peak(t, d);
	}
	int rc = gmt_blk_apply(t->blk, &be);
	if (rc == -ENOMEM) {
		t->error = rc;
		return;
	}
	gmt_blk_running(t->blk, ev->device, &after, &req, &reserved);
	if (after < before && freeing && bsize) { /* the block's tensor let go of it */
		struct gmt_tsite *s = site_of(t, bstack, ev->device);
		if (s) {
			s->live -= s->live >= bsize ? bsize : s->live;
			s->live_blocks -= s->live_blocks ? 1 : 0;
			s->live_requested -= s->live_requested >= breq ? breq : s->live_requested;
		}
	} else if (after > before &&
		   (ev->kind == GMT_TORCH_ALLOC || ev->kind == GMT_TORCH_STATE_BLOCK)) {
		uint32_t stack = gmt_blk_stack_of(t->blk, ev->ptr, &bsize, &breq);
		struct gmt_tsite *s = site_of(t, stack, ev->device);
		if (s) {
			s->live += after - before;
			s->live_blocks++;
			s->live_requested += breq;
			s->allocations++;
			s->allocated_bytes += after - before;
			if (s->live > s->max_live)
				s->max_live = s->live;
		}
		d->allocations++;
	}
	if (reserved > d->max_reserved)
		d->max_reserved = reserved;
	if (after > d->peak) {
		d->peak = after;
		d->peak_ts = ev->ts;
		d->peak_seq = ev->seq;
		d->held_at_peak = held;
		d->pending = true;
		snprintf(d->peak_phase, sizeof(d->peak_phase), "%s",
			 t->nphase && t->nphase <= 8 ? t->phase[t->nphase - 1] : "");
	}
}

static void
sample(struct gmt_tgrowth *g, uint64_t v)
{
	if (!g->sampled) {
		g->first = g->last = v;
		g->sampled = true;
		return;
	}
	if (v > g->last)
		g->rises++;
	else if (v < g->last)
		g->falls++;
	g->last = v;
}

void
gmt_tensors_marker(struct gmt_tensors *t, const struct gmt_trace_marker *mk)
{
	if (t->error)
		return;
	bool mark = mk->range == GMT_RANGE_NONE;
	bool range_end = mk->range == GMT_RANGE_POP && mk->depth == 1;

	if (mk->range == GMT_RANGE_PUSH && mk->depth >= 1) {
		if (mk->depth <= 8)
			snprintf(t->phase[mk->depth - 1], sizeof(t->phase[0]), "%s",
				 mk->label ? mk->label : "");
		t->nphase = mk->depth;
	} else if (mk->range == GMT_RANGE_POP && mk->depth >= 1) {
		t->nphase = mk->depth - 1;
	}

	if (!mark && !range_end)
		return;
	for (size_t i = 0; i < t->nsites; i++) {
		struct gmt_tsite *s = &t->sites[i];
		sample(mark ? &s->growth : &s->at_range_ends, s->live);
		if (mark) {
			s->mark_live = s->live;
			s->mark_requested = s->live_requested;
		}
	}
	if (mark) {
		t->marks_seen++;
		for (size_t i = 0; i < t->ndevices && !t->error; i++)
			mark_point(t, &t->devices[i], mk);
	} else {
		t->range_samples++;
	}
}

int
gmt_tensors_finish(struct gmt_tensors *t, uint64_t last_ts)
{
	for (size_t i = 0; i < t->ndevices && !t->error; i++) {
		struct gmt_tdevice *d = &t->devices[i];
		take_peak(t, d);
		cache_now(t, d->device, &d->end);
		frag_point(t, d, last_ts, UINT64_MAX);
	}
	t->inconsistent = gmt_blk_inconsistent(t->blk) + t->bad_device;
	t->sample_marks = t->marks_seen >= 2 || t->range_samples < 2;
	t->samples = t->sample_marks ? t->marks_seen : t->range_samples;
	if (!t->sample_marks)
		for (size_t i = 0; i < t->nsites; i++)
			t->sites[i].growth = t->sites[i].at_range_ends;
	free(t->site_index);
	t->site_index = NULL;
	t->site_index_cap = 0;
	return t->error;
}

bool
gmt_tsite_grows(const struct gmt_tensors *t, const struct gmt_tsite *s)
{
	const struct gmt_tgrowth *g = &s->growth;
	uint32_t intervals = t->samples ? t->samples - 1 : 0;

	/* a site first seen after the first sample started from nothing */
	uint64_t first = g->sampled ? g->first : 0;
	return t->samples >= 2 && g->sampled && g->last > first && intervals &&
	       g->rises * 2 >= intervals;
}
