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

#include "analysis/model/growth.h"
#include "format/torch_entry.h"
#include "util/sat.h"

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

	/* expandable segments show in their own lines (segment_map, segment_state) */
	if (t)
		t->trace = trace;
	if (t && !(t->blk = gmt_blk_new(false))) {
		free(t);
		return NULL;
	}
	if (t && trace && trace->bounded)
		gmt_blk_expect_gaps(t->blk);
	return t;
}

void
gmt_tensors_free(struct gmt_tensors *t)
{
	if (!t)
		return;
	gmt_blk_free(t->blk);
	free(t->held);
	for (size_t i = 0; i < t->ndevices; i++) {
		free(t->devices[i].frag);
		free(t->devices[i].buckets);
	}
	for (size_t i = 0; i < t->nooms; i++) {
		free(t->ooms[i].segs);
		free(t->ooms[i].seg_blocks);
	}
	free(t->devices);
	free(t->sites);
	free(t->ooms);
	free(t->lives);
	free(t->live);
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

// --- block lifetimes (tensors.h: gmt_tlife) -----------------------------------------------------

/* A live block: when it was allocated, for its lifetime when it is freed. */
struct gmt_tlive {
	uint64_t ptr, ts, seq, bytes;
	uint32_t stack;
	int32_t device;
	bool used;
};

static size_t
live_hash(uint64_t ptr, int32_t device)
{
	return (size_t)(((ptr >> 9) ^ (uint64_t)(uint32_t)device << 40) * 0x9e3779b97f4a7c15ull >>
			20);
}

static bool
live_grow(struct gmt_tensors *t)
{
	size_t cap = t->live_cap ? t->live_cap * 2 : 1024;
	struct gmt_tlive *nl = calloc(cap, sizeof(*nl));

	if (!nl)
		return false;
	for (size_t i = 0; i < t->live_cap; i++) {
		if (!t->live[i].used)
			continue;
		size_t h = live_hash(t->live[i].ptr, t->live[i].device) & (cap - 1);
		while (nl[h].used)
			h = (h + 1) & (cap - 1);
		nl[h] = t->live[i];
	}
	free(t->live);
	t->live = nl;
	t->live_cap = cap;
	return true;
}

static void
live_put(struct gmt_tensors *t, const struct gmt_tlive *b)
{
	if ((t->nlive + 1) * 2 > t->live_cap && !live_grow(t)) {
		t->error = -ENOMEM;
		return;
	}
	size_t mask = t->live_cap - 1, h = live_hash(b->ptr, b->device) & mask;
	for (; t->live[h].used; h = (h + 1) & mask)
		if (t->live[h].ptr == b->ptr && t->live[h].device == b->device)
			break; /* a block the trace never freed: the new one replaces it */
	if (!t->live[h].used)
		t->nlive++;
	t->live[h] = *b;
	t->live[h].used = true;
}

/* Takes the live block at @p ptr out of the table into *@p out; false when there is none. */
static bool
live_take(struct gmt_tensors *t, uint64_t ptr, int32_t device, struct gmt_tlive *out)
{
	if (!t->live_cap)
		return false;
	size_t mask = t->live_cap - 1, h = live_hash(ptr, device) & mask;
	for (; t->live[h].used; h = (h + 1) & mask)
		if (t->live[h].ptr == ptr && t->live[h].device == device)
			break;
	if (!t->live[h].used)
		return false;
	*out = t->live[h];
	t->live[h].used = false;
	t->nlive--;
	/* linear probing's deletion: move up the entries of the run that hashed before the hole */
	for (size_t hole = h, k = (h + 1) & mask; t->live[k].used; k = (k + 1) & mask) {
		size_t home = live_hash(t->live[k].ptr, t->live[k].device) & mask;
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			t->live[hole] = t->live[k];
			t->live[k].used = false;
			hole = k;
		}
	}
	return true;
}

/* a goes before b in the heap (kept last: the smaller, of equal ones the later) */
static bool
life_less(const struct gmt_tlife *a, const struct gmt_tlife *b)
{
	return a->bytes != b->bytes ? a->bytes < b->bytes : a->alloc_seq > b->alloc_seq;
}

static void
life_sift_down(struct gmt_tlife *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && life_less(&h[l], &h[m]))
			m = l;
		if (r < n && life_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct gmt_tlife x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

/* A finished lifetime: kept when it is among the GMT_TLIFE_MAX largest. */
static void
life_offer(struct gmt_tensors *t, const struct gmt_tlife *l)
{
	t->lives_seen++;
	if (!t->lives && !(t->lives = malloc(GMT_TLIFE_MAX * sizeof(*t->lives)))) {
		t->error = -ENOMEM;
		return;
	}
	if (t->nlives < GMT_TLIFE_MAX) {
		size_t i = t->nlives++;
		t->lives[i] = *l;
		while (i && life_less(&t->lives[i], &t->lives[(i - 1) / 2])) {
			struct gmt_tlife x = t->lives[i];
			t->lives[i] = t->lives[(i - 1) / 2];
			t->lives[(i - 1) / 2] = x;
			i = (i - 1) / 2;
		}
	} else if (life_less(&t->lives[0], l)) {
		t->lives[0] = *l;
		life_sift_down(t->lives, t->nlives, 0);
	}
}

/* The bucket of @p ts on device @p d; when @p ts is past the last, the buckets of every device
 * are merged in pairs (the higher moment of each pair stays) until it fits. */
static struct gmt_tbucket *
bucket_of(struct gmt_tensors *t, struct gmt_tdevice *d, uint64_t ts)
{
	if (!t->bucket_ns) {
		t->bucket_origin = ts;
		t->bucket_ns = 1024;
	}
	if (ts < t->bucket_origin)
		ts = t->bucket_origin; /* lines out of time order: the first bucket */
	while ((ts - t->bucket_origin) / t->bucket_ns >= GMT_TBUCKETS) {
		for (size_t i = 0; i < t->ndevices; i++) {
			struct gmt_tbucket *b = t->devices[i].buckets;
			if (!b)
				continue;
			for (size_t k = 0; k < GMT_TBUCKETS / 2; k++) {
				const struct gmt_tbucket *x = &b[2 * k], *y = &b[2 * k + 1];
				b[k] =
				    !y->set || (x->set && x->allocated >= y->allocated) ? *x : *y;
			}
			memset(&b[GMT_TBUCKETS / 2], 0, GMT_TBUCKETS / 2 * sizeof(*b));
		}
		t->bucket_ns *= 2;
	}
	if (!d->buckets && !(d->buckets = calloc(GMT_TBUCKETS, sizeof(*d->buckets)))) {
		t->error = -ENOMEM;
		return NULL;
	}
	return &d->buckets[(ts - t->bucket_origin) / t->bucket_ns];
}

static void
bucket_point(struct gmt_tensors *t,
	     struct gmt_tdevice *d,
	     const struct gmt_trace_event *ev,
	     uint64_t allocated,
	     uint64_t reserved,
	     uint64_t held)
{
	struct gmt_tbucket *b = bucket_of(t, d, ev->ts);

	if (b && (!b->set || allocated > b->allocated))
		*b = (struct gmt_tbucket){.ts = ev->ts,
					  .seq = ev->seq,
					  .allocated = allocated,
					  .reserved = reserved,
					  .held = held,
					  .set = true};
}

static int
cmp_life_bytes(const void *pa, const void *pb)
{
	const struct gmt_tlife *a = pa, *b = pb;

	return life_less(a, b) ? 1 : life_less(b, a) ? -1 : 0;
}

/* The end: blocks still live are lifetimes without an end; the kept ones largest first. */
static void
lives_finish(struct gmt_tensors *t)
{
	for (size_t i = 0; i < t->live_cap && !t->error; i++) {
		const struct gmt_tlive *b = &t->live[i];
		if (b->used)
			life_offer(t, &(struct gmt_tlife){.alloc_ts = b->ts,
							  .alloc_seq = b->seq,
							  .bytes = b->bytes,
							  .stack = b->stack,
							  .device = b->device});
	}
	free(t->live);
	t->live = NULL;
	t->live_cap = t->nlive = 0;
	if (t->nlives > 1)
		qsort(t->lives, t->nlives, sizeof(*t->lives), cmp_life_bytes);
}

static const struct gmt_tlive *
live_find(const struct gmt_tensors *t, uint64_t ptr, int32_t device)
{
	if (!t->live_cap)
		return NULL;
	size_t mask = t->live_cap - 1, h = live_hash(ptr, device) & mask;
	for (; t->live[h].used; h = (h + 1) & mask)
		if (t->live[h].ptr == ptr && t->live[h].device == device)
			return &t->live[h];
	return NULL;
}

static int
cmp_held(const void *pa, const void *pb)
{
	const struct gmt_theld *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->holder < b->holder ? -1 : a->holder > b->holder;
}

void
gmt_tensors_holders(struct gmt_tensors *t)
{
	const struct gmt_trace_holder *holders = t->trace ? t->trace->holders : NULL;
	size_t n = t->trace ? t->trace->nholders : 0;
	uint64_t *bytes, *blocks;

	if (t->holders_done)
		return;
	t->holders_done = true;
	if (t->error || !n || !t->nsites)
		return;
	if (!(t->held = calloc(n, sizeof(*t->held)))) {
		t->error = -ENOMEM;
		return;
	}
	bytes = calloc(t->nsites, sizeof(*bytes));
	blocks = calloc(t->nsites, sizeof(*blocks));
	if (!bytes || !blocks) {
		free(bytes);
		free(blocks);
		t->error = -ENOMEM;
		return;
	}
	size_t nsites = t->nsites;
	for (size_t h = 0; h < n && !t->error; h++) {
		const struct gmt_trace_holder *hd = &holders[h];
		for (size_t k = 0; k < hd->nptrs; k++) {
			const struct gmt_tlive *b = live_find(t, hd->ptrs[k], hd->devices[k]);
			struct gmt_tsite *s = b ? site_of(t, b->stack, b->device) : NULL;
			size_t i = s ? (size_t)(s - t->sites) : nsites;
			if (i < nsites) { /* the walk lists each block once per holder */
				bytes[i] += b->bytes;
				blocks[i]++;
			}
		}
		struct gmt_theld hd_total = {.holder = (uint32_t)h};
		uint64_t top = 0;
		for (size_t i = 0; i < nsites; i++) {
			struct gmt_tsite *s = &t->sites[i];
			hd_total.bytes = gmt_sat_add(hd_total.bytes, bytes[i]);
			hd_total.blocks += blocks[i];
			if (bytes[i] > top) {
				top = bytes[i];
				hd_total.stack = s->stack;
				hd_total.device = s->device;
			}
			if (bytes[i] > s->held_bytes) {
				s->held_by = (uint32_t)h + 1;
				s->held_bytes = bytes[i] < s->live ? bytes[i] : s->live;
				s->held_blocks = blocks[i];
			}
			bytes[i] = blocks[i] = 0;
		}
		if (hd_total.bytes)
			t->held[t->nheld++] = hd_total;
	}
	free(bytes);
	free(blocks);
	if (t->nheld > 1)
		qsort(t->held, t->nheld, sizeof(*t->held), cmp_held);
}

// --- OOMs ---------------------------------------------------------------------------------------

static int
cmp_seg_size(const void *pa, const void *pb)
{
	const struct gmt_blk_segview *a = pa, *b = pb;

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int
cmp_seg_start(const void *pa, const void *pb)
{
	const struct gmt_blk_segview *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* The segments of the OOM's device, with their blocks, into @p o (bounded: tensors.h). */
static void
oom_segments(struct gmt_tensors *t, struct gmt_toom *o)
{
	size_t nseg = gmt_blk_segments(t->blk, NULL, 0), nblk = gmt_blk_blocks(t->blk, NULL, 0);
	struct gmt_blk_segview *sv = nseg ? malloc(nseg * sizeof(*sv)) : NULL;
	struct gmt_blk_view *bv = nblk ? malloc(nblk * sizeof(*bv)) : NULL;
	size_t n = 0;

	if ((nseg && !sv) || (nblk && !bv))
		goto nomem;
	nseg = gmt_blk_segments(t->blk, sv, nseg);
	nblk = gmt_blk_blocks(t->blk, bv, nblk);
	for (size_t i = 0; i < nseg; i++)
		if (sv[i].device == o->device)
			sv[n++] = sv[i];
	o->nsegments_all = n;
	if (n > GMT_TOOM_SEGMENTS) {
		qsort(sv, n, sizeof(*sv), cmp_seg_size);
		n = GMT_TOOM_SEGMENTS;
	}
	if (n > 1)
		qsort(sv, n, sizeof(*sv), cmp_seg_start);
	o->segs = n ? calloc(n, sizeof(*o->segs)) : NULL;
	o->seg_blocks = n ? calloc(n * GMT_TOOM_SEG_BLOCKS, sizeof(*o->seg_blocks)) : NULL;
	if (n && (!o->segs || !o->seg_blocks))
		goto nomem;
	size_t nb = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_blk_segview *v = &sv[i];
		struct gmt_toom_seg *g = &o->segs[i];
		*g = (struct gmt_toom_seg){.start = v->start,
					   .size = v->size,
					   .stream = v->stream,
					   .nblocks = v->nblocks,
					   .first = nb,
					   .large = v->large,
					   .expandable = v->expandable};
		for (size_t k = v->first; k < v->first + v->nblocks && k < nblk; k++) {
			const struct gmt_blk_view *b = &bv[k];
			*(b->state == GMT_BLK_ALLOCATED ? &g->allocated
			  : b->state == GMT_BLK_PENDING ? &g->pending
							: &g->free) += b->size;
			if (g->nlisted == GMT_TOOM_SEG_BLOCKS)
				continue;
			o->seg_blocks[nb++] = (struct gmt_toom_block){.offset = b->ptr - v->start,
								      .size = b->size,
								      .stack = b->stack,
								      .state = (uint8_t)b->state};
			g->nlisted++;
		}
	}
	o->nsegs = n;
	free(sv);
	free(bv);
	return;
nomem:
	free(sv);
	free(bv);
	free(o->segs);
	free(o->seg_blocks);
	o->segs = NULL;
	o->seg_blocks = NULL;
	t->error = -ENOMEM;
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
	if (t->nooms <= GMT_TOOM_SNAPSHOTS)
		oom_segments(t, o);
	frag_point(t, d, ev->ts, ev->seq);
}

/*
 * An elided_blocks line (a bounded trace, format/elided.h): blocks of one site allocated and freed
 * within one bucket, left out of the file with their frees. None was live at a moment the report
 * shows (the writer keeps those, writer/bounded.c), so only the counts take them: the site's and
 * the device's block allocations, the site's bytes, the lifetimes in all (the timeline's
 * blocks_all). Not a block line (block_events counts what the file holds).
 */
static void
elided_blocks(struct gmt_tensors *t, const struct gmt_trace_event *ev)
{
	struct gmt_tdevice *d;
	struct gmt_tsite *s;

	if (ev->device < 0 || ev->device >= GMT_BLK_MAX_DEVICES ||
	    !(d = device_of(t, ev->device)) || !(s = site_of(t, ev->stack, ev->device)))
		return;
	s->allocations += ev->offset;
	s->allocated_bytes = gmt_sat_add(s->allocated_bytes, ev->size);
	d->allocations += ev->offset;
	t->lives_seen += ev->offset;
}

void
gmt_tensors_event(struct gmt_tensors *t, const struct gmt_trace_event *ev, uint64_t held)
{
	if (t->error)
		return;
	if (!t->holders_done && t->trace && t->trace->nholders && ev->seq > t->trace->holders_seq)
		gmt_tensors_holders(t);
	if (ev->op == GMT_OP_ELIDED) {
		elided_blocks(t, ev);
		return;
	}
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
	if (ev->kind == GMT_TORCH_FREE_REQUESTED && (ev->flags & GMT_EV_IN_GC) && bsize) {
		struct gmt_tsite *gs = site_of(t, bstack, ev->device);
		if (gs) {
			gs->gc_freed += bsize;
			gs->gc_freed_blocks++;
		}
	}
	int rc = gmt_blk_apply(t->blk, &be);
	if (rc == -ENOMEM) {
		t->error = rc;
		return;
	}
	gmt_blk_running(t->blk, ev->device, &after, &req, &reserved);
	if (after < before && freeing && bsize) { /* the block's tensor let go of it */
		struct gmt_tsite *s = site_of(t, bstack, ev->device);
		struct gmt_tlive b;
		if (live_take(t, ev->ptr, ev->device, &b))
			life_offer(t, &(struct gmt_tlife){.alloc_ts = b.ts,
							  .alloc_seq = b.seq,
							  .free_ts = ev->ts,
							  .free_seq = ev->seq,
							  .bytes = b.bytes,
							  .stack = b.stack,
							  .device = b.device});
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
			s->allocated_bytes = gmt_sat_add(s->allocated_bytes, after - before);
			if (s->live > s->max_live)
				s->max_live = s->live;
		}
		d->allocations++;
		live_put(t, &(struct gmt_tlive){.ptr = ev->ptr,
						.ts = ev->ts,
						.seq = ev->seq,
						.bytes = after - before,
						.stack = stack,
						.device = ev->device});
	}
	bucket_point(t, d, ev, after, reserved, held);
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

/* @p v, the site's live bytes at sample @p index (of its kind: marks, steps, range ends or
 * snapshots). */
static void
sample(struct gmt_tgrowth *g, uint64_t v, uint32_t index)
{
	if (!g->born && v)
		g->born = index + 1;
	if (!g->sampled) {
		g->sampled = true;
		/* a site made after the first sample had nothing at the earlier ones (as at the
		 * CUDA level): its bytes now are a rise from 0 */
		g->first = index ? 0 : v;
		g->last = g->first;
		if (!index)
			return;
	}
	if (v > g->last) {
		g->rises++;
		g->rises_live += g->last > 0; /* not the site's making */
	} else if (v < g->last)
		g->falls++;
	g->last = v;
}

/* Snapshots come once a second whatever the program does: a short run's two or three say little
 * (as at the CUDA level, growth.h). */
#define TSNAP_MIN GMT_GROWTH_SNAPSHOTS_LEAST

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
	/* an automatic step stands for a mark (the last mark's figures, the marks kept) while
	 * the user has put none */
	bool step = mark && mk->auto_step;
	bool as_mark = mark && (!step || t->marks_seen == 0);
	for (size_t i = 0; i < t->nsites; i++) {
		struct gmt_tsite *s = &t->sites[i];
		sample(step   ? &s->at_steps
		       : mark ? &s->growth
			      : &s->at_range_ends,
		       s->live,
		       step   ? t->steps_seen
		       : mark ? t->marks_seen
			      : t->range_samples);
		if (as_mark) {
			s->mark_live = s->live;
			s->mark_requested = s->live_requested;
		}
	}
	if (step)
		t->steps_seen++;
	else if (mark)
		t->marks_seen++;
	else
		t->range_samples++;
	for (size_t i = 0; as_mark && i < t->ndevices && !t->error; i++)
		mark_point(t, &t->devices[i], mk);
}

void
gmt_tensors_snapshot(struct gmt_tensors *t)
{
	if (t->error)
		return;
	for (size_t i = 0; i < t->nsites; i++)
		sample(&t->sites[i].at_snapshots, t->sites[i].live, t->snapshot_samples);
	t->snapshot_samples++;
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
	if (!t->error)
		lives_finish(t);
	t->end_ts = last_ts;
	t->inconsistent = gmt_blk_inconsistent(t->blk) + t->bad_device;
	/* the samples, in gmt_growth_basis's order of precedence */
	t->basis = t->marks_seen >= 2		      ? GMT_BASIS_MARKS
		   : t->steps_seen >= 2		      ? GMT_BASIS_AUTO_STEPS
		   : t->range_samples >= 2	      ? GMT_BASIS_RANGE_ENDS
		   : t->snapshot_samples >= TSNAP_MIN ? GMT_BASIS_SNAPSHOTS
						      : GMT_BASIS_MARKS;
	t->sample_marks = t->basis == GMT_BASIS_MARKS || t->basis == GMT_BASIS_AUTO_STEPS;
	t->samples = t->basis == GMT_BASIS_MARKS	? t->marks_seen
		     : t->basis == GMT_BASIS_AUTO_STEPS ? t->steps_seen
		     : t->basis == GMT_BASIS_RANGE_ENDS ? t->range_samples
							: t->snapshot_samples;
	for (size_t i = 0; i < t->nsites && t->basis != GMT_BASIS_MARKS; i++) {
		struct gmt_tsite *s = &t->sites[i];
		s->growth = t->basis == GMT_BASIS_AUTO_STEPS   ? s->at_steps
			    : t->basis == GMT_BASIS_RANGE_ENDS ? s->at_range_ends
							       : s->at_snapshots;
	}
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
	uint32_t least = t->basis == GMT_BASIS_SNAPSHOTS ? TSNAP_MIN : 2;
	if (t->samples < least || !g->sampled || g->last <= first || !intervals ||
	    g->rises * 2 < intervals)
		return false;
	/* automatic samples (the tracer's steps, snapshots): growth.h's rule besides */
	if (t->basis == GMT_BASIS_AUTO_STEPS || t->basis == GMT_BASIS_SNAPSHOTS)
		return gmt_growth_auto_grows(t->samples, g->born, g->rises_live, g->falls,
					     t->basis == GMT_BASIS_SNAPSHOTS
						 ? GMT_GROWTH_SNAPSHOTS_LEAST
						 : GMT_GROWTH_AUTO_STEPS_LEAST);
	return true;
}
