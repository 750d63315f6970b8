/*
 * @brief Replay of one trace: pairing, live bytes, peaks, leaks, failed allocations.
 *
 * The rules are those of docs/trace-format.md, summed up in docs/design.md ("Analysis
 * semantics"): events apply in seq order; a failed call (result != 0) changes nothing, and a
 * failed allocation is kept for the report; a free takes its kind and size from what it pairs
 * with, looked up in the table of its address space:
 *
 *   ptrs      addresses of allocations freed by their start address (device, pinned,
 *             registered, managed, pool, graph, imported buffers and IPC mappings)
 *   maps      cuMemMap ranges by virtual address; cuMemUnmap removes every one in its range
 *   reserves  cuMemAddressReserve ranges by virtual address
 *   handles   cuMemCreate and cuMemImportFromShareableHandle handles, reference counted
 *   arrays    CUDA array handles
 *
 * A reservation and the first mapping inside it share an address, and a handle is just a number
 * that may equal some device pointer: one table per space keeps them apart.
 */
#define _GNU_SOURCE /* qsort_r */
#include "analysis/model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model/livemap.h"
#include "analysis/model/range_tensors.h"
#include "format/elided.h"
#include "util/alloc.h"
#include "util/sat.h"

// --- calls with a meaning of their own ----------------------------------------------------------
//
// Most events are understood by op and kind. A few calls decide the address space or act on
// several objects; they are recognised by name (the api, or the driver call under it).

enum role {
	ROLE_NONE = 0,
	ROLE_MAP,	    /* cuMemMap: a mapping of a handle */
	ROLE_UNMAP,	    /* cuMemUnmap: every mapping in a range */
	ROLE_RELEASE,	    /* cuMemRelease: a handle reference */
	ROLE_IMPORT_HANDLE, /* cuMemImportFromShareableHandle: ptr is a handle */
	ROLE_DESTROY_EXT,   /* cu/cudaDestroyExternalMemory: the object's mapped buffers */
};

static enum role
role_of_name(const char *name)
{
	static const struct {
		const char *name;
		enum role role;
	} roles[] = {
	    {"cuMemMap", ROLE_MAP},
	    {"cuMemUnmap", ROLE_UNMAP},
	    {"cuMemRelease", ROLE_RELEASE},
	    {"cuMemImportFromShareableHandle", ROLE_IMPORT_HANDLE},
	    {"cuDestroyExternalMemory", ROLE_DESTROY_EXT},
	    {"cudaDestroyExternalMemory", ROLE_DESTROY_EXT},
	};

	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(name, roles[i].name) == 0)
			return roles[i].role;
	return ROLE_NONE;
}

// --- replay state -------------------------------------------------------------------------------

/* The latest pool_reserve reading of one pool. */
struct pool_reading {
	int32_t device;
	uint64_t pool;
	uint64_t bytes;
};

enum phase {
	PHASE_BEFORE, /* before --from: replayed for the state, not counted */
	PHASE_INSIDE,
	PHASE_AFTER, /* past --to: nothing more is applied */
};

/* A live allocation's address range, as gaps_of() lays them out. */
struct span {
	uint64_t key, size;
};

struct replay {
	struct gmt_model *m;
	struct gmt_livemap ptrs, maps, reserves, handles, arrays;
	uint8_t *roles; /* per trace string */
	struct pool_reading *pools;
	size_t npools, poolcap;
	size_t devcap, failcap, sitecap, ledgercap;
	size_t nroles;
	size_t next_nvml;	     /* first NVML reading not yet captured */
	uint32_t last_snapshot_line; /* the snapshot last sampled for growth */
	uint32_t range_end_samples;  /* outermost range pops sampled (at_range_ends) */
	const char *first_range_end, *last_range_end;
	uint32_t step_samples; /* automatic step marks sampled (at_steps) */
	const char *first_step, *last_step;
	uint64_t last_alloc_seq; /* the latest successful allocation: temporaries */
	uint64_t before_seq;	 /* the latest item before the range (--from) */
	uint32_t *site_index;	 /* open addressing over m->sites, UINT32_MAX empty */
	size_t site_mask;
	struct span *spans; /* gaps_of()'s scratch: twice spans_cap */
	size_t spans_cap;
	enum phase phase;
	bool bounds_pending; /* a range's bounds in seconds are not placed yet */
};

/* Out of memory: the replay stops here (every later event is ignored) and says so at the end. */
static bool
nomem(struct replay *r)
{
	r->m->error = -ENOMEM;
	return false;
}

static enum role
event_role(struct replay *r, const struct gmt_trace_event *ev)
{
	const struct gmt_trace *t = r->m->trace;

	if (r->nroles < t->nstrings) { /* names the reader met since */
		uint8_t *roles = gmt_realloc_array(r->roles, t->nstrings, sizeof(*r->roles));

		if (!roles) {
			nomem(r);
			return ROLE_NONE;
		}
		r->roles = roles;
		for (size_t i = r->nroles; i < t->nstrings; i++)
			r->roles[i] = (uint8_t)role_of_name(t->strings[i]);
		r->nroles = t->nstrings;
	}

	if (ev->api < t->nstrings && r->roles[ev->api] != ROLE_NONE)
		return (enum role)r->roles[ev->api];
	if (ev->driver < t->nstrings)
		return (enum role)r->roles[ev->driver];
	return ROLE_NONE;
}

static struct gmt_device_stats *
device_find(const struct gmt_model *m, int32_t device)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].device == device)
			return &m->devices[i];
	return NULL;
}

static struct gmt_device_stats *
device_get(struct replay *r, int32_t device)
{
	struct gmt_model *m = r->m;
	size_t i;

	for (i = 0; i < m->ndevices && m->devices[i].device < device; i++)
		;
	if (i < m->ndevices && m->devices[i].device == device)
		return &m->devices[i];
	if (gmt_grow(&m->devices, &r->devcap, m->ndevices + 1, sizeof(*m->devices), 4) != 0) {
		nomem(r);
		return NULL;
	}
	memmove(&m->devices[i + 1], &m->devices[i], (m->ndevices - i) * sizeof(*m->devices));
	memset(&m->devices[i], 0, sizeof(m->devices[i]));
	m->devices[i].device = device;
	m->ndevices++;
	return &m->devices[i];
}

// --- call sites ---------------------------------------------------------------------------------

static uint64_t
site_hash(uint32_t stack, uint16_t api, uint16_t driver, uint8_t kind, int32_t device)
{
	uint64_t h = ((uint64_t)stack << 32) ^ ((uint64_t)api << 16) ^ driver;
	h ^= ((uint64_t)kind << 56) ^ ((uint64_t)(uint32_t)device << 40);
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static bool
site_rehash(struct replay *r)
{
	struct gmt_model *m = r->m;
	size_t cap = r->site_mask ? (r->site_mask + 1) * 2 : 256;
	uint32_t *index = gmt_realloc_array(NULL, cap, sizeof(*r->site_index));

	if (!index)
		return nomem(r);
	free(r->site_index);
	r->site_index = index;
	memset(r->site_index, 0xff, cap * sizeof(*r->site_index));
	r->site_mask = cap - 1;
	for (size_t i = 0; i < m->nsites; i++) {
		const struct gmt_site_stats *st = &m->sites[i];
		size_t j =
		    site_hash(st->stack, st->api, st->driver, st->kind, st->device) & r->site_mask;

		while (r->site_index[j] != UINT32_MAX)
			j = (j + 1) & r->site_mask;
		r->site_index[j] = (uint32_t)i;
	}
	return true;
}

/* The site of a new allocation, made on first use; UINT32_MAX out of memory. */
static uint32_t
site_of(struct replay *r, const struct gmt_live *l)
{
	struct gmt_model *m = r->m;
	size_t j;

	if ((m->nsites + 1) * 2 > r->site_mask + 1 && !site_rehash(r))
		return UINT32_MAX;
	j = site_hash(l->stack, l->api, l->driver, l->kind, l->device) & r->site_mask;
	for (; r->site_index[j] != UINT32_MAX; j = (j + 1) & r->site_mask) {
		const struct gmt_site_stats *st = &m->sites[r->site_index[j]];

		if (st->stack == l->stack && st->api == l->api && st->driver == l->driver &&
		    st->kind == l->kind && st->device == l->device)
			return r->site_index[j];
	}
	if (gmt_grow(&m->sites, &r->sitecap, m->nsites + 1, sizeof(*m->sites), 64) != 0) {
		nomem(r);
		return UINT32_MAX;
	}
	memset(&m->sites[m->nsites], 0, sizeof(m->sites[0]));
	m->sites[m->nsites] = (struct gmt_site_stats){
	    .stack = l->stack,
	    .api = l->api,
	    .driver = l->driver,
	    .kind = l->kind,
	    .device = l->device,
	};
	r->site_index[j] = (uint32_t)m->nsites;
	return (uint32_t)m->nsites++;
}

enum sample {
	SAMPLE_MARK,
	SAMPLE_RANGE_END,
	SAMPLE_SNAPSHOT,
	SAMPLE_STEP,
};

/* One growth sample of every site: at a mark, the end of an outermost range, or a snapshot. */
static void
growth_sample(struct replay *r, enum sample which)
{
	struct gmt_model *m = r->m;
	uint32_t *count = which == SAMPLE_MARK	      ? &m->marker_samples
			  : which == SAMPLE_RANGE_END ? &r->range_end_samples
			  : which == SAMPLE_STEP      ? &r->step_samples
						      : &m->snapshot_samples;

	for (size_t i = 0; i < m->nsites; i++) {
		struct gmt_site_stats *st = &m->sites[i];
		struct gmt_growth *g = which == SAMPLE_MARK	   ? &st->at_markers
				       : which == SAMPLE_RANGE_END ? &st->at_range_ends
				       : which == SAMPLE_STEP	   ? &st->at_steps
								   : &st->at_snapshots;

		if (*count == 0)
			g->first = st->live;
		else if (st->live > g->last) {
			g->rises++;
			g->rises_live += g->last > 0; /* not the site's making */
		} else if (st->live < g->last)
			g->falls++;
		if (!g->born && st->live)
			g->born = *count + 1;
		g->last = st->live;
	}
	(*count)++;
}

// --- accounting ---------------------------------------------------------------------------------

#define SERIES_BUCKETS (GMT_SERIES_MAX_POINTS / 4)

/* The bucket of a point @p x ns after the series' first, of @p span ns in all. */
static uint64_t
series_bucket(uint64_t x, uint64_t span)
{
	return (uint64_t)((__uint128_t)x * SERIES_BUCKETS / span);
}

_Static_assert((SERIES_BUCKETS & (SERIES_BUCKETS - 1)) == 0, "series_bucket_start() shifts");

/* The first x whose bucket is @p b (up to SERIES_BUCKETS): ceil(b * span / SERIES_BUCKETS), a
 * shift, where series_bucket() is a 128-bit division (a library call) per point. */
static uint64_t
series_bucket_start(uint64_t b, uint64_t span)
{
	return (uint64_t)(((__uint128_t)b * span + SERIES_BUCKETS - 1) / SERIES_BUCKETS);
}

/*
 * Bucket a series' points into GMT_SERIES_MAX_POINTS / 4 equal time buckets, each keeping its
 * first, lowest, highest and last point in time order. Bucketing bucketed points again keeps
 * them: a peak survives every round.
 */
static void
series_compress(struct gmt_series *s)
{
	uint64_t t0 = s->points[0].ts, span = s->points[s->n - 1].ts - t0 + 1;
	size_t out = 0;

	for (size_t i = 0; i < s->n;) {
		uint64_t b = series_bucket(s->points[i].ts - t0, span);
		/* bucket b is exactly [first, first + width): compares, not a division a point */
		uint64_t first = b < SERIES_BUCKETS ? series_bucket_start(b, span) : 0;
		uint64_t width = b < SERIES_BUCKETS ? series_bucket_start(b + 1, span) - first : 0;
		size_t end = i + 1, lo = i, hi = i;

		for (; end < s->n; end++) {
			const struct gmt_point *p = &s->points[end];
			uint64_t x = p->ts - t0;

			/* outside the span (before the first point, after the last): divide */
			if (x - first >= width && (x < span || series_bucket(x, span) != b))
				break;
			if (p->bytes < s->points[lo].bytes)
				lo = end;
			if (p->bytes > s->points[hi].bytes)
				hi = end;
		}
		size_t pick[4] = {i, lo < hi ? lo : hi, lo < hi ? hi : lo, end - 1};
		for (int k = 0; k < 4; k++)
			if (k == 0 || pick[k] != pick[k - 1])
				s->points[out++] = s->points[pick[k]];
		i = end;
	}
	s->n = out;
	s->exact = false;
}

static void
series_add(struct replay *r, struct gmt_device_stats *d, uint8_t kind, uint64_t ts, uint64_t bytes)
{
	struct gmt_model *m = r->m;
	struct gmt_series *s;

	/* the device remembers its series: twice an event, a scan of every series cost more */
	if (d->series[kind]) {
		s = &m->series[d->series[kind] - 1];
	} else {
		struct gmt_series *v = gmt_realloc_array(m->series, m->nseries + 1, sizeof(*v));

		if (!v) {
			nomem(r);
			return;
		}
		m->series = v;
		s = &m->series[m->nseries++];
		*s = (struct gmt_series){.device = d->device, .kind = kind, .exact = true};
		d->series[kind] = (uint32_t)m->nseries;
	}
	/* twice the limit before compressing: each round halves the points at least */
	if (s->n == 2 * GMT_SERIES_MAX_POINTS)
		series_compress(s);
	/* gmt_grow() only when full: a call a point otherwise, for a few regrowths a series */
	if (s->n == s->cap &&
	    gmt_grow(&s->points, &s->cap, s->n + 1, sizeof(*s->points), 64) != 0) {
		nomem(r);
		return;
	}
	s->points[s->n++] = (struct gmt_point){ts, bytes};
}

static void
timeline_add(struct replay *r,
	     const struct gmt_trace_event *ev,
	     struct gmt_device_stats *d,
	     uint8_t kind,
	     uint64_t bytes)
{
	series_add(r, d, kind, ev->ts, bytes);
}

static void
held_timeline_add(struct replay *r,
		  const struct gmt_trace_event *ev,
		  struct gmt_device_stats *d,
		  uint64_t bytes)
{
	series_add(r, d, GMT_TK_COUNT, ev->ts, bytes);
}

/* After (device, kind) changed: its own peak (the first moment of its maximum), the timeline. */
static void
kind_changed(struct replay *r,
	     const struct gmt_trace_event *ev,
	     struct gmt_device_stats *d,
	     uint8_t k)
{
	struct gmt_kind_stats *ks = &d->kinds[k];

	if (ks->live > ks->peak.bytes) {
		ks->peak = (struct gmt_peak){ks->live, ev->ts, ev->seq};
		ks->peak_allocs = ks->live_allocs;
		if (k == GMT_TK_POOL_RESERVE)
			d->pool_live_at_reserve_peak = d->kinds[GMT_TK_POOL].live;
	}
	if (k == GMT_TK_POOL_RESERVE && ks->live)
		d->pool_read = true;
	if ((k == GMT_TK_POOL || k == GMT_TK_POOL_RESERVE) && d->pool_read &&
	    d->kinds[GMT_TK_POOL_RESERVE].live > d->kinds[GMT_TK_POOL].live) {
		uint64_t slack = d->kinds[GMT_TK_POOL_RESERVE].live - d->kinds[GMT_TK_POOL].live;

		if (slack > d->max_pool_slack) {
			d->max_pool_slack = slack;
			d->max_pool_slack_ts = ev->ts;
		}
	}
	d->dirty = true;
	timeline_add(r, ev, d, k, ks->live);
}

static void
account_add(struct replay *r, const struct gmt_trace_event *ev, const struct gmt_live *l)
{
	struct gmt_device_stats *d = device_get(r, l->device);
	struct gmt_site_stats *st = &r->m->sites[l->site];
	struct gmt_size_bucket *b;

	if (!d)
		return;
	b = &d->sizes[l->kind][gmt_log2_bin(l->size)];
	d->kinds[l->kind].live = gmt_sat_add(d->kinds[l->kind].live, l->size);
	d->kinds[l->kind].live_allocs++;
	d->kinds[l->kind].allocations++;
	d->allocations++;
	b->allocations++;
	b->bytes = gmt_sat_add(b->bytes, l->size);
	st->live = gmt_sat_add(st->live, l->size);
	st->live_allocs++;
	st->allocations++;
	st->allocated_bytes = gmt_sat_add(st->allocated_bytes, l->size);
	if (ev->flags & GMT_EV_HAS_REQUESTED) {
		d->requested_allocs++;
		d->requested_bytes = gmt_sat_add(d->requested_bytes, ev->requested);
		d->requested_granted += ev->size;
	}
	r->last_alloc_seq = ev->seq;
	kind_changed(r, ev, d, l->kind);
	if (r->m->on_live)
		r->m->on_live(r->m->live_ctx, l, ev, true);
}

static void
account_sub(struct replay *r, const struct gmt_trace_event *ev, const struct gmt_live *l)
{
	struct gmt_device_stats *d = device_get(r, l->device);
	struct gmt_site_stats *st = &r->m->sites[l->site];

	if (!d)
		return;
	d->kinds[l->kind].live = gmt_sat_sub(d->kinds[l->kind].live, l->size);
	d->kinds[l->kind].live_allocs--;
	st->live = gmt_sat_sub(st->live, l->size);
	st->live_allocs--;
	/* allocations made before the range started are its starting state, not its traffic */
	if (r->phase == PHASE_INSIDE && l->seq >= r->m->range_from.seq) {
		st->frees++;
		st->lifetime[gmt_log2_bin(ev->ts > l->ts ? ev->ts - l->ts : 0)]++;
		if (l->seq == r->last_alloc_seq) {
			st->temporaries++;
			st->temporary_bytes = gmt_sat_add(st->temporary_bytes, l->size);
		}
	}
	kind_changed(r, ev, d, l->kind);
	if (r->m->on_live)
		r->m->on_live(r->m->live_ctx, l, ev, false);
}

/* The held total and its peak, for every device the event changed. */
static void
settle(struct replay *r, const struct gmt_trace_event *ev)
{
	for (size_t i = 0; i < r->m->ndevices; i++) {
		struct gmt_device_stats *d = &r->m->devices[i];
		uint64_t by_kind[GMT_TK_COUNT];

		if (!d->dirty)
			continue;
		d->dirty = false;
		for (int k = 0; k < GMT_TK_COUNT; k++)
			by_kind[k] = d->kinds[k].live;
		uint64_t held = gmt_kind_held(by_kind);
		if (held != d->held)
			held_timeline_add(r, ev, d, held);
		d->held = held;
		/* Strictly greater: a peak is the first moment the maximum was reached. */
		if (d->held > d->peak.bytes) {
			d->peak = (struct gmt_peak){d->held, ev->ts, ev->seq};
			d->peak_pending = true;
			memcpy(d->peak_by_kind, by_kind, sizeof(by_kind));
		}
	}
}

// --- handles and mappings -----------------------------------------------------------------------

/* A handle with no reference and no mapping is gone: its memory is released. */
static void
handle_settle(struct replay *r, const struct gmt_trace_event *ev, struct gmt_live *h)
{
	if (h->refs == 0 && h->maps == 0) {
		account_sub(r, ev, h);
		gmt_livemap_remove(&r->handles, h);
	}
}

/* A mapping that left the maps table: its bytes, and its handle's mapping count. */
static void
mapping_gone(struct replay *r, const struct gmt_trace_event *ev, const struct gmt_live *map)
{
	struct gmt_live *h;

	account_sub(r, ev, map);
	h = gmt_livemap_find(&r->handles, map->handle);
	if (h && h->maps) {
		h->maps--;
		handle_settle(r, ev, h);
	}
}

/* A new mapping: count it on its handle; a mapping of an imported handle is imported memory. */
static void
mapping_attach(struct replay *r, struct gmt_live *map)
{
	struct gmt_live *h = gmt_livemap_find(&r->handles, map->handle);

	if (!h)
		return;
	h->maps++;
	if (h->kind == GMT_TK_IMPORTED)
		map->kind = GMT_TK_IMPORTED;
}

/* Remove one entry of @p table, with what leaving means for its kind. */
static void
entry_drop(struct replay *r,
	   const struct gmt_trace_event *ev,
	   struct gmt_livemap *table,
	   struct gmt_live *l)
{
	struct gmt_live copy = *l;

	gmt_livemap_remove(table, l);
	if (table == &r->maps)
		mapping_gone(r, ev, &copy);
	else
		account_sub(r, ev, &copy);
}

struct range {
	uint64_t begin, end;
};

static bool
in_range(const struct gmt_live *l, const void *ctx)
{
	const struct range *rg = ctx;

	return l->key >= rg->begin && l->key < rg->end;
}

/*
 * cuMemUnmap(ptr, size): every mapping that starts inside [ptr, ptr + size). The usual case is a
 * run of whole mappings from ptr on, found one lookup each; anything else takes one scan.
 */
static size_t
unmap_range(struct replay *r, const struct gmt_trace_event *ev)
{
	struct range rg = {ev->ptr, ev->ptr + ((ev->flags & GMT_EV_HAS_RANGE) ? ev->size : 1)};
	struct gmt_live *l, *rest;
	size_t n = 0, nrest;

	if (rg.end < rg.begin)
		rg.end = UINT64_MAX;
	while (rg.begin < rg.end && (l = gmt_livemap_find(&r->maps, rg.begin))) {
		uint64_t size = l->size;

		entry_drop(r, ev, &r->maps, l);
		n++;
		if (size == 0 || rg.begin + size < rg.begin)
			break;
		rg.begin += size;
	}
	if (rg.begin >= rg.end)
		return n;
	if (gmt_livemap_take(&r->maps, in_range, &rg, &rest, &nrest) != 0)
		return nomem(r), n;
	for (size_t i = 0; i < nrest; i++)
		mapping_gone(r, ev, &rest[i]);
	free(rest);
	return n + nrest;
}

// --- one function per op ------------------------------------------------------------------------

static void flush_peaks(struct replay *r);

static struct gmt_livemap *
alloc_table(struct replay *r, const struct gmt_trace_event *ev)
{
	enum role role = event_role(r, ev);

	if (role == ROLE_IMPORT_HANDLE || ev->kind == GMT_TK_VMM_PHYSICAL)
		return &r->handles;
	if (role == ROLE_MAP || ev->kind == GMT_TK_VMM_MAPPED)
		return &r->maps;
	if (ev->kind == GMT_TK_VMM_RESERVE)
		return &r->reserves;
	if (ev->kind == GMT_TK_ARRAY)
		return &r->arrays;
	return &r->ptrs;
}

/* Whether @p l is part of device memory held on @p device (kinds that are allocations). */
static bool
held_on(const struct gmt_live *l, const void *ctx)
{
	const int32_t *device = ctx;

	return l->device == *device && gmt_kind_in_held((enum gmt_tkind)l->kind) &&
	       !gmt_kind_is_reading((enum gmt_tkind)l->kind);
}

#define SEPARATE_RANGE (1ull << 30) /* a hole this large is another address range */

/*
 * Sort @p n spans by address (their keys are distinct: one table's), @p tmp as large: a radix
 * sort by the bytes in which the keys differ (addresses of one device share their high bytes),
 * a few passes where a comparison sort took most of gaps_of()'s time. Returns where the sorted
 * spans are: @p a or @p tmp.
 */
static struct span *
sort_spans(struct span *a, struct span *tmp, size_t n)
{
	uint64_t differ = 0;

	for (size_t i = 1; i < n; i++)
		differ |= a[i].key ^ a[0].key;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = {0}, at = 0;

		if (!((differ >> shift) & 0xff))
			continue;
		for (size_t i = 0; i < n; i++)
			count[(a[i].key >> shift) & 0xff]++;
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(a[i].key >> shift) & 0xff]++] = a[i];
		struct span *t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}

/* The layout of @p n live allocations of kind @p kind, sorted by address. */
static struct gmt_gaps
layout(const struct span *l, size_t n, uint8_t kind)
{
	struct gmt_gaps g = {.valid = true, .kind = kind, .live_allocations = n, .ranges = 1};
	uint64_t lo = l[0].key, end = l[0].key + l[0].size;

	for (size_t i = 1; i < n; i++) {
		if (l[i].key > end && l[i].key - end >= SEPARATE_RANGE) {
			g.span += end - lo;
			g.ranges++;
			lo = l[i].key;
		} else if (l[i].key > end) {
			uint64_t hole = l[i].key - end;

			g.gap_bytes = gmt_sat_add(g.gap_bytes, hole);
			g.gaps++;
			if (hole > g.largest_gap)
				g.largest_gap = hole;
		}
		if (l[i].key + l[i].size > end)
			end = l[i].key + l[i].size;
	}
	g.span += end - lo;
	return g;
}

/*
 * The layout of the live allocations by address (ptrs table) held on @p device: per kind into
 * @p by_kind (when not NULL), the sum over kinds returned.
 */
static struct gmt_gaps
gaps_of(struct replay *r, int32_t device, struct gmt_gaps by_kind[GMT_TK_COUNT])
{
	struct gmt_gaps sum = {0};
	size_t at[GMT_TK_COUNT + 1] = {0}, n = 0;
	const struct gmt_livemap *map = &r->ptrs;

	if (by_kind)
		memset(by_kind, 0, GMT_TK_COUNT * sizeof(*by_kind));
	/* each kind's allocations laid out on their own: grouped by kind, each group by address */
	for (size_t i = 0; map->count && i <= map->mask; i++) {
		const struct gmt_live *l = &map->slots[i];

		if (l->key && l->kind < GMT_TK_COUNT && held_on(l, &device))
			at[l->kind + 1]++;
	}
	for (int k = 0; k < GMT_TK_COUNT; k++)
		at[k + 1] += at[k];
	n = at[GMT_TK_COUNT];
	if (!n)
		return sum;
	if (n > r->spans_cap) {
		struct span *sp = gmt_realloc_array(r->spans, 2 * n, sizeof(*sp));

		if (!sp) {
			nomem(r);
			return sum;
		}
		r->spans = sp;
		r->spans_cap = n;
	}
	size_t fill[GMT_TK_COUNT];
	memcpy(fill, at, sizeof(fill));
	for (size_t i = 0; i <= map->mask; i++) {
		const struct gmt_live *l = &map->slots[i];

		if (l->key && l->kind < GMT_TK_COUNT && held_on(l, &device))
			r->spans[fill[l->kind]++] = (struct span){l->key, l->size};
	}
	for (int kind = 0; kind < GMT_TK_COUNT; kind++) {
		size_t lo = at[kind], cnt = at[kind + 1] - lo;
		struct gmt_gaps g;

		if (!cnt)
			continue;
		g = layout(sort_spans(r->spans + lo, r->spans + n + lo, cnt), cnt, (uint8_t)kind);
		if (by_kind)
			by_kind[kind] = g;
		sum.valid = true;
		sum.live_allocations += g.live_allocations;
		sum.span += g.span;
		sum.ranges += g.ranges;
		sum.gap_bytes = gmt_sat_add(sum.gap_bytes, g.gap_bytes);
		sum.gaps += g.gaps;
		if (g.largest_gap > sum.largest_gap)
			sum.largest_gap = g.largest_gap;
	}
	return sum;
}

static int
cmp_oom_site(const void *pa, const void *pb)
{
	const struct gmt_oom_site *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->site < b->site ? -1 : a->site > b->site;
}

/* What the replay holds on the failing call's device, for the OOM explanation. */
static void
oom_snapshot(struct replay *r, const struct gmt_trace_event *ev, struct gmt_oom *o)
{
	struct gmt_model *m = r->m;
	const struct gmt_device_stats *d = device_find(m, ev->device);

	memset(o, 0, sizeof(*o));
	o->nvml_index = SIZE_MAX;
	for (size_t i = m->nledger; i-- > 0;) {
		if (m->trace->nvml[m->ledger[i].nvml_index].device == ev->device) {
			o->nvml_index = m->ledger[i].nvml_index;
			break;
		}
	}
	if (!d)
		return;
	for (int k = 0; k < GMT_TK_COUNT; k++) {
		o->by_kind[k] = d->kinds[k].live;
		if (gmt_kind_in_held((enum gmt_tkind)k) && !gmt_kind_is_reading((enum gmt_tkind)k))
			o->live_allocations += d->kinds[k].live_allocs;
	}
	o->held = gmt_kind_held(o->by_kind);
	if (d->pool_read) {
		o->has_pool_slack = true;
		o->pool_slack =
		    (int64_t)(d->kinds[GMT_TK_POOL_RESERVE].live - d->kinds[GMT_TK_POOL].live);
	}
	o->gaps = gaps_of(r, ev->device, NULL);
	for (size_t i = 0; i < m->nsites; i++) {
		const struct gmt_site_stats *st = &m->sites[i];

		if (st->device != ev->device || !st->live ||
		    !gmt_kind_in_held((enum gmt_tkind)st->kind))
			continue;
		struct gmt_oom_site *v = gmt_realloc_array(o->sites, o->nsites + 1, sizeof(*v));

		if (!v) {
			nomem(r);
			break;
		}
		o->sites = v;
		o->sites[o->nsites++] =
		    (struct gmt_oom_site){(uint32_t)i, st->live, st->live_allocs};
	}
	if (o->nsites > 1)
		qsort(o->sites, o->nsites, sizeof(*o->sites), cmp_oom_site);
}

static void
record_failed(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_model *m = r->m;

	if (r->phase != PHASE_INSIDE)
		return;
	if (m->nfailed == r->failcap) {
		/* four arrays of one length: the capacity moves when all four have it */
		size_t c = r->failcap, cap = r->failcap ? r->failcap * 2 : 8;

		if (gmt_grow(&m->failed, &c, cap, sizeof(*m->failed), 8) != 0 ||
		    (c = r->failcap,
		     gmt_grow(&m->failed_events, &c, cap, sizeof(*m->failed_events), 8) != 0) ||
		    (c = r->failcap, gmt_grow(&m->oom, &c, cap, sizeof(*m->oom), 8) != 0) ||
		    (c = r->failcap,
		     gmt_grow(&m->failed_class, &c, cap, sizeof(*m->failed_class), 8) != 0)) {
			nomem(r);
			return;
		}
		r->failcap = cap;
	}
	/* the event is the reader's for the length of the call: a copy (pointers set at finish) */
	oom_snapshot(r, ev, &m->oom[m->nfailed]);
	m->failed_events[m->nfailed] = *ev;
	m->failed[m->nfailed++] = NULL;
	if (gmt_failures_add(m, m->nfailed - 1) != 0)
		nomem(r);
}

static void
replay_alloc(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_livemap *table = alloc_table(r, ev);
	struct gmt_live l = {
	    .key = ev->ptr,
	    .size = ev->size,
	    .handle = ev->handle,
	    .context = ev->context,
	    .stack = ev->stack,
	    .refs = table == &r->handles ? 1 : 0,
	    .device = ev->device,
	    .api = ev->api,
	    .driver = ev->driver,
	    .kind = ev->kind,
	    .seq = ev->seq,
	    .ts = ev->ts,
	};
	struct gmt_live *old;

	/* whether earlier failures were probes or retried (explain.c) */
	gmt_failures_note(r->m, ev);
	if (ev->result != 0) {
		record_failed(r, ev);
		return;
	}
	/* cudaMalloc(&p, 0) succeeds with p == NULL: nothing was allocated. */
	if (ev->ptr == 0)
		return;
	old = gmt_livemap_find(table, ev->ptr);
	if (old) {
		/*
		 * The address (or handle) is handed out again while we still think it is live: its
		 * free was lost (dropped events) or made through an API the trace does not cover.
		 * The new allocation is the truth; the old one is released here.
		 */
		r->m->reused_addresses++;
		flush_peaks(r);
		entry_drop(r, ev, table, old);
	}
	if (table == &r->maps)
		mapping_attach(r, &l);
	if ((l.site = site_of(r, &l)) == UINT32_MAX)
		return;
	if (gmt_livemap_insert(table, &l) != 0) {
		nomem(r);
		return;
	}
	r->m->allocations++;
	account_add(r, ev, &l);
}

static struct gmt_livemap *
free_table(struct replay *r, const struct gmt_trace_event *ev, enum role role)
{
	if (role == ROLE_RELEASE || ev->kind == GMT_TK_VMM_PHYSICAL)
		return &r->handles;
	if (ev->kind == GMT_TK_VMM_RESERVE)
		return &r->reserves;
	if (ev->kind == GMT_TK_ARRAY)
		return &r->arrays;
	return &r->ptrs;
}

struct ext_key {
	uint64_t object;
};

static bool
of_external(const struct gmt_live *l, const void *ctx)
{
	const struct ext_key *k = ctx;

	return l->kind == GMT_TK_IMPORTED && l->handle == k->object;
}

/*
 * cuDestroyExternalMemory: the buffers mapped from that object go with it. Destroying an object
 * with no buffer left is normal (they were freed first), so it is never "unmatched".
 */
static void
destroy_external(struct replay *r, const struct gmt_trace_event *ev)
{
	struct ext_key k = {ev->handle ? ev->handle : ev->ptr};
	struct gmt_live *gone;
	size_t n;

	if (k.object == 0)
		return;
	if (gmt_livemap_take(&r->ptrs, of_external, &k, &gone, &n) != 0) {
		nomem(r);
		return;
	}
	for (size_t i = 0; i < n; i++)
		account_sub(r, ev, &gone[i]);
	free(gone);
	if (n)
		r->m->frees++;
}

static void
release_handle(struct replay *r, const struct gmt_trace_event *ev, struct gmt_live *h)
{
	/* A handle already released and only kept alive by its mappings cannot be released again.
	 */
	if (h->refs == 0) {
		r->m->unmatched_frees++;
		return;
	}
	r->m->frees++;
	h->refs--;
	handle_settle(r, ev, h);
}

static void
replay_free(struct replay *r, const struct gmt_trace_event *ev)
{
	enum role role = event_role(r, ev);
	struct gmt_livemap *table;
	struct gmt_live *l;

	if (ev->result != 0) {
		r->m->failed_frees++;
		return;
	}
	if (role == ROLE_DESTROY_EXT) {
		destroy_external(r, ev);
		return;
	}
	/* cudaFree(NULL) frees nothing (not recorded by the tracer, tolerated here). */
	if (ev->ptr == 0)
		return;
	if (role == ROLE_UNMAP || ev->kind == GMT_TK_VMM_MAPPED) {
		if (unmap_range(r, ev))
			r->m->frees++;
		else
			r->m->unmatched_frees++;
		return;
	}
	table = free_table(r, ev, role);
	l = gmt_livemap_find(table, ev->ptr);
	if (!l) {
		/* Allocated before tracing, through an uncovered path, or its event dropped. */
		r->m->unmatched_frees++;
		return;
	}
	if (table == &r->handles) {
		release_handle(r, ev, l);
		return;
	}
	r->m->frees++;
	entry_drop(r, ev, table, l);
}

static void
replay_retain(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_live *h;

	if (ev->result != 0)
		return;
	h = gmt_livemap_find(&r->handles, ev->ptr);
	if (!h) {
		r->m->unmatched_retains++;
		return;
	}
	h->refs++;
	r->m->retains++;
}

/* Set a reading kind of one device to @p bytes held by @p holders (pools, or the graph pool). */
static void
reading_set(struct replay *r,
	    const struct gmt_trace_event *ev,
	    uint8_t kind,
	    uint64_t bytes,
	    uint64_t holders)
{
	struct gmt_device_stats *d = device_get(r, ev->device);

	if (!d)
		return;
	d->kinds[kind].live = bytes;
	d->kinds[kind].live_allocs = holders;
	kind_changed(r, ev, d, kind);
}

/* The latest reading of the pool, then the sum over the device's pools. */
static void
pool_reading(struct replay *r, const struct gmt_trace_event *ev)
{
	uint64_t sum = 0, holders = 0;
	size_t i;

	for (i = 0; i < r->npools; i++)
		if (r->pools[i].device == ev->device && r->pools[i].pool == ev->ptr)
			break;
	if (i == r->npools) {
		if (gmt_grow(&r->pools, &r->poolcap, r->npools + 1, sizeof(*r->pools), 4) != 0) {
			nomem(r);
			return;
		}
		r->pools[r->npools++] = (struct pool_reading){ev->device, ev->ptr, 0};
	}
	r->pools[i].bytes = ev->size;
	for (i = 0; i < r->npools; i++) {
		if (r->pools[i].device != ev->device)
			continue;
		sum += r->pools[i].bytes;
		holders += r->pools[i].bytes != 0;
	}
	reading_set(r, ev, GMT_TK_POOL_RESERVE, sum, holders);
}

static void
replay_usage(struct replay *r, const struct gmt_trace_event *ev)
{
	if (ev->result != 0)
		return;
	r->m->readings++;
	if (ev->kind == GMT_TK_POOL_RESERVE)
		pool_reading(r, ev);
	else
		reading_set(r, ev, GMT_TK_GRAPH_RESERVE, ev->size, ev->size != 0);
}

struct reset_key {
	int32_t device;
	uint64_t context;
};

/*
 * A reset with a context releases that context's allocations and, on the same device, those
 * whose context is unknown; without a context, everything of the device. Only the kinds a
 * context owns: pool, VMM and graph memory, and the readings, survive it.
 */
static bool
reset_matches(const struct gmt_live *l, const void *ctx)
{
	const struct reset_key *k = ctx;

	if (!gmt_kind_reset_frees((enum gmt_tkind)l->kind))
		return false;
	if (k->context && l->context)
		return l->context == k->context;
	return l->device == k->device;
}

static void
replay_reset(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_livemap *tables[] = {&r->maps, &r->ptrs, &r->arrays, &r->handles};
	struct reset_key k = {ev->device, ev->context};

	if (ev->result != 0)
		return;
	r->m->resets++;
	/* Mappings first: an imported mapping going away updates its handle, which goes next. */
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		size_t n;
		struct gmt_live *gone;

		if (gmt_livemap_take(tables[t], reset_matches, &k, &gone, &n) != 0) {
			nomem(r);
			return;
		}
		for (size_t i = 0; i < n; i++) {
			if (tables[t] == &r->maps)
				mapping_gone(r, ev, &gone[i]);
			else
				account_sub(r, ev, &gone[i]);
		}
		free(gone);
	}
}

// --- the NVML ledger: what was tracked at each reading ------------------------------------------

/* Whether reading @p n was taken before event @p ev (snapshot seq: events up to it are in). */
static bool
reading_before(const struct gmt_trace_nvml *n, const struct gmt_trace_event *ev)
{
	return n->has_seq ? n->seq < ev->seq : n->ts < ev->ts;
}

static void
capture_reading(struct replay *r, const struct gmt_trace_nvml *n)
{
	struct gmt_model *m = r->m;
	struct gmt_ledger_point *p;

	if (gmt_grow(&m->ledger, &r->ledgercap, m->nledger + 1, sizeof(*m->ledger), 16) != 0) {
		nomem(r);
		return;
	}
	p = &m->ledger[m->nledger++];
	const struct gmt_device_stats *d = device_find(r->m, n->device);

	memset(p, 0, sizeof(*p));
	p->nvml_index = (size_t)(n - m->trace->nvml);
	if (!d)
		return;
	for (int k = 0; k < GMT_TK_COUNT; k++)
		p->by_kind[k] = d->kinds[k].live;
	p->held = gmt_kind_held(p->by_kind);
}

// --- leaks: what is live at the end, by call site -----------------------------------------------

static int
cmp_live_site(const void *pa, const void *pb)
{
	const struct gmt_live *a = pa, *b = pb;

	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	if (a->api != b->api)
		return a->api < b->api ? -1 : 1;
	if (a->driver != b->driver)
		return a->driver < b->driver ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

/* Largest first; the rest of the key only makes the order the same on every run. */
static int
cmp_leak(const void *pa, const void *pb, void *trace)
{
	const struct gmt_leak *a = pa, *b = pb;
	const struct gmt_trace *t = trace;
	const char *da, *db;
	int c;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->allocations != b->allocations)
		return a->allocations > b->allocations ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	c = strcmp(gmt_trace_string(t, a->api), gmt_trace_string(t, b->api));
	if (c)
		return c;
	da = gmt_trace_driver(t, a->driver);
	db = gmt_trace_driver(t, b->driver);
	c = strcmp(da ? da : "", db ? db : "");
	return c ? c : (int)a->kind - (int)b->kind;
}

/* Every live entry of every table, in one array. */
static struct gmt_live *
all_live(struct replay *r, size_t *n)
{
	struct gmt_livemap *tables[] = {&r->ptrs, &r->maps, &r->reserves, &r->handles, &r->arrays};
	struct gmt_live *all = NULL;

	*n = 0;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		size_t k;
		struct gmt_live *part, *v;

		if (gmt_livemap_all(tables[t], &part, &k) != 0) {
			nomem(r);
			break;
		}
		if (!k)
			continue;
		if (!(v = gmt_realloc_array(all, *n + k, sizeof(*all)))) {
			free(part);
			nomem(r);
			break;
		}
		all = v;
		memcpy(all + *n, part, k * sizeof(*part));
		*n += k;
		free(part);
	}
	return all;
}

static void
collect_leaks(struct replay *r)
{
	struct gmt_model *m = r->m;
	size_t n;
	struct gmt_live *all = all_live(r, &n);

	if (n == 0)
		return;
	if (m->range.from.set && !m->range_from.found) { /* the range never started */
		free(all);
		return;
	}
	if (m->range.from.set) {
		/* in a range, leaks are what was allocated inside it */
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (all[i].seq >= m->range_from.seq)
				all[k++] = all[i];
		n = k;
		if (n == 0) {
			free(all);
			return;
		}
	}
	qsort(all, n, sizeof(*all), cmp_live_site);
	if (!(m->leaks = gmt_realloc_array(NULL, n, sizeof(*m->leaks)))) {
		free(all);
		nomem(r);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct gmt_leak *g = m->nleaks ? &m->leaks[m->nleaks - 1] : NULL;
		bool counted = gmt_kind_counted((enum gmt_tkind)all[i].kind);

		if (!g || cmp_live_site(&all[i - 1], &all[i]) != 0) {
			g = &m->leaks[m->nleaks++];
			*g = (struct gmt_leak){.stack = all[i].stack,
					       .api = all[i].api,
					       .driver = all[i].driver,
					       .kind = all[i].kind};
			m->live_end_sites += counted;
		}
		g->bytes = gmt_sat_add(g->bytes, all[i].size);
		g->allocations++;
		if (counted) {
			m->live_end_bytes = gmt_sat_add(m->live_end_bytes, all[i].size);
			m->live_end_allocations++;
		}
	}
	free(all);
	qsort_r(m->leaks, m->nleaks, sizeof(*m->leaks), cmp_leak, (void *)m->trace);
}

// --- what was live at each device's peak --------------------------------------------------------

/*
 * Who holds the memory at @p d's peak: the live bytes per call site of the held kinds, from the
 * site table (no second pass over the events). Taken when something is about to lower what the
 * device holds after a new peak, so the live set is the peak's. The address layout costs a sort
 * of the live allocations: it is taken again only when the peak grew by more than 1% since.
 */
static void
capture_peak(struct replay *r, struct gmt_device_stats *d)
{
	const struct gmt_model *m = r->m;
	size_t n = 0;

	for (size_t i = 0; i < m->nsites; i++) {
		const struct gmt_site_stats *st = &m->sites[i];

		if (st->device != d->device || !st->live_allocs ||
		    !gmt_kind_in_held((enum gmt_tkind)st->kind) ||
		    gmt_kind_is_reading((enum gmt_tkind)st->kind))
			continue;
		if (gmt_grow(&d->peak_sites, &d->peak_sites_cap, n + 1, sizeof(*d->peak_sites),
			     64) != 0) {
			nomem(r);
			break;
		}
		d->peak_sites[n++] = (struct gmt_leak){.stack = st->stack,
						       .api = st->api,
						       .driver = st->driver,
						       .kind = st->kind,
						       .bytes = st->live,
						       .allocations = st->live_allocs};
	}
	d->npeak_sites = n; /* sorted once, when the replay is done */
	if (!d->peak_gaps.valid || d->peak.bytes > d->peak_gaps_bytes + d->peak_gaps_bytes / 100) {
		d->peak_gaps = gaps_of(r, d->device, d->peak_gaps_kind);
		d->peak_gaps_bytes = d->peak.bytes;
	}
	d->peak_pending = false;
}

/* Take every pending peak's live set: the next event may lower what a device holds. */
static void
flush_peaks(struct replay *r)
{
	for (size_t i = 0; i < r->m->ndevices; i++)
		if (r->m->devices[i].peak_pending)
			capture_peak(r, &r->m->devices[i]);
}

// --- the model ----------------------------------------------------------------------------------

static void
replay_init(struct replay *r, struct gmt_model *m)
{
	const struct gmt_trace *t = m->trace;

	r->m = m;
	r->phase = PHASE_INSIDE;
	if (gmt_livemap_init(&r->ptrs) != 0 || gmt_livemap_init(&r->maps) != 0 ||
	    gmt_livemap_init(&r->reserves) != 0 || gmt_livemap_init(&r->handles) != 0 ||
	    gmt_livemap_init(&r->arrays) != 0)
		nomem(r);
	(void)t;
}

static void
replay_fini(struct replay *r)
{
	gmt_livemap_fini(&r->ptrs);
	gmt_livemap_fini(&r->maps);
	gmt_livemap_fini(&r->reserves);
	gmt_livemap_fini(&r->handles);
	gmt_livemap_fini(&r->arrays);
	free(r->roles);
	free(r->pools);
	free(r->site_index);
	free(r->spans);
}

/*
 * An elided line of a bounded trace: allocations of one site made and freed within one bucket,
 * left out of the file (docs/trace-format.md, "elided"). They never held memory at a moment the
 * report shows exactly (the writer keeps those), so only the traffic counts take them: the
 * allocations, frees and bytes of the site, its device and kind, the temporaries, the size and
 * lifetime histograms.
 */
static void
replay_elided(struct replay *r, const struct gmt_trace_event *ev)
{
	struct gmt_live l = {.stack = ev->stack,
			     .api = ev->api,
			     .driver = ev->driver,
			     .kind = ev->kind,
			     .device = ev->device};
	struct gmt_device_stats *d;
	uint32_t site;

	if (r->phase != PHASE_INSIDE || !(d = device_get(r, ev->device)) ||
	    (site = site_of(r, &l)) == UINT32_MAX)
		return;
	struct gmt_site_stats *st = &r->m->sites[site];
	st->allocations += ev->offset;
	st->allocated_bytes = gmt_sat_add(st->allocated_bytes, ev->size);
	st->frees += ev->offset;
	st->temporaries += ev->free_bytes;
	st->temporary_bytes = gmt_sat_add(st->temporary_bytes, ev->total_bytes);
	for (uint64_t i = 0; i < ev->requested && ev->handle + i < r->m->trace->nelided_bins; i++) {
		const struct gmt_trace_elided_bin *bin = &r->m->trace->elided_bins[ev->handle + i];
		if (bin->lifetime) {
			st->lifetime[bin->bucket] += (uint32_t)bin->count;
		} else {
			d->sizes[ev->kind][bin->bucket].allocations += bin->count;
			d->sizes[ev->kind][bin->bucket].bytes =
			    gmt_sat_add(d->sizes[ev->kind][bin->bucket].bytes, bin->bytes);
		}
	}
	d->kinds[ev->kind].allocations += ev->offset;
	d->allocations += ev->offset;
	r->m->allocations += ev->offset;
	r->m->frees += ev->offset;
}

static void
replay_event(struct replay *r, const struct gmt_trace_event *ev)
{
	if (ev->op == GMT_OP_ELIDED) { /* changes nothing live: no peak is taken before it */
		replay_elided(r, ev);
		return;
	}
	/* an allocation only raises what a device holds (a reused address takes care of itself) */
	if (ev->op != GMT_OP_ALLOC)
		flush_peaks(r);
	switch (ev->op) {
	case GMT_OP_ALLOC: replay_alloc(r, ev); break;
	case GMT_OP_FREE: replay_free(r, ev); break;
	case GMT_OP_RESET: replay_reset(r, ev); break;
	case GMT_OP_RETAIN: replay_retain(r, ev); break;
	case GMT_OP_USAGE: replay_usage(r, ev); break;
	default: break;
	}
	settle(r, ev);
}

// --- time ranges (report --from/--to) -----------------------------------------------------------

/* Where a bound in seconds lands in @p t: its time from the trace's start (seq unknown). */
static struct gmt_range_point
range_at_seconds(const struct gmt_trace *t, const struct gmt_range_bound *b)
{
	/* --from 1e30 (or inf) is after any trace's end: the sum saturates, never wraps to a time
	 * inside the trace (and a double past 2^64 is not cast: undefined) */
	double ns = b->seconds * 1e9 + 0.5;
	uint64_t off = ns < 18446744073709549568.0 ? (uint64_t)ns : UINT64_MAX;

	return (struct gmt_range_point){
	    .found = true,
	    .seq = UINT64_MAX, /* the first event at or after ts */
	    .ts = off > UINT64_MAX - t->start_ts ? UINT64_MAX : t->start_ts + off,
	};
}

/* The range starts: what is live now is the starting state; counting starts from zero. */
static void
range_enter(struct replay *r, uint64_t seq, uint64_t ts)
{
	struct gmt_model *m = r->m;

	r->phase = PHASE_INSIDE;
	m->range_from.seq = seq;
	m->range_from.ts = ts;
	m->allocations = m->frees = m->unmatched_frees = m->failed_frees = 0;
	m->resets = m->reused_addresses = m->retains = m->unmatched_retains = m->readings = 0;
	for (size_t i = 0; i < m->nseries; i++) {
		m->series[i].n = 0;
		m->series[i].exact = true;
	}
	for (size_t i = 0; i < m->ndevices; i++) {
		struct gmt_device_stats *d = &m->devices[i];
		struct gmt_trace_event at = {.seq = seq, .ts = ts};

		for (int k = 0; k < GMT_TK_COUNT; k++) {
			struct gmt_kind_stats *ks = &d->kinds[k];

			ks->peak = (struct gmt_peak){ks->live, ts, seq};
			ks->peak_allocs = ks->live_allocs;
			ks->allocations = 0;
			if (ks->live)
				timeline_add(r, &at, d, (uint8_t)k, ks->live);
		}
		d->peak = (struct gmt_peak){d->held, ts, seq};
		d->peak_pending = d->held != 0;
		for (int k = 0; k < GMT_TK_COUNT; k++)
			d->peak_by_kind[k] = d->kinds[k].live;
		d->allocations = 0;
		memset(d->sizes, 0, sizeof(d->sizes));
		d->max_pool_slack = 0;
		d->requested_allocs = d->requested_bytes = d->requested_granted = 0;
		if (d->held)
			held_timeline_add(r, &at, d, d->held);
	}
	for (size_t i = 0; i < m->nsites; i++) {
		struct gmt_site_stats *st = &m->sites[i];

		st->allocations = st->allocated_bytes = st->frees = 0;
		st->temporaries = st->temporary_bytes = 0;
		memset(st->lifetime, 0, sizeof(st->lifetime));
		memset(&st->at_markers, 0, sizeof(st->at_markers));
		memset(&st->at_snapshots, 0, sizeof(st->at_snapshots));
		memset(&st->at_range_ends, 0, sizeof(st->at_range_ends));
		memset(&st->at_steps, 0, sizeof(st->at_steps));
	}
	m->marker_samples = m->snapshot_samples = r->range_end_samples = r->step_samples = 0;
}

// --- the model ----------------------------------------------------------------------------------

/* Readings before @p ev (all when NULL), each new snapshot sampled for growth inside the range. */
static void
readings_until(struct replay *r, const struct gmt_trace_event *ev)
{
	const struct gmt_trace *t = r->m->trace;

	while (r->next_nvml < t->nnvml && (!ev || reading_before(&t->nvml[r->next_nvml], ev))) {
		const struct gmt_trace_nvml *n = &t->nvml[r->next_nvml++];

		capture_reading(r, n);
		if (r->phase == PHASE_INSIDE && n->line != r->last_snapshot_line) {
			r->last_snapshot_line = n->line;
			growth_sample(r, SAMPLE_SNAPSHOT);
			if (r->m->tensors)
				gmt_tensors_snapshot(r->m->tensors);
		}
	}
}

/*
 * Growth is sampled at marks. Range pushes and pops are not samples: docs/markers.md's pattern,
 * a mark per step with ranges inside it, would otherwise cut each step into several intervals of
 * which a leak rises in one, and "rose in at least half of them" would never hold. A trace with
 * ranges but (almost) no marks is sampled where its outermost ranges end, one per iteration of a
 * `with range("step")` loop; gmt_model_finish() picks those samples then.
 */
static void
marker_seen(struct replay *r, const struct gmt_trace_marker *mk)
{
	struct gmt_model *m = r->m;

	if (r->phase != PHASE_INSIDE)
		return;
	if (mk->range == GMT_RANGE_NONE && mk->auto_step) {
		if (!r->step_samples)
			r->first_step = mk->label;
		r->last_step = mk->label;
		growth_sample(r, SAMPLE_STEP);
	} else if (mk->range == GMT_RANGE_NONE) {
		if (!m->marker_samples)
			m->first_marker = mk->label;
		m->last_marker = mk->label;
		growth_sample(r, SAMPLE_MARK);
	} else if (mk->range == GMT_RANGE_POP && mk->depth == 1) {
		if (!r->range_end_samples)
			r->first_range_end = mk->label;
		r->last_range_end = mk->label;
		growth_sample(r, SAMPLE_RANGE_END);
	}
}

const char *
gmt_growth_basis_name(enum gmt_growth_basis b)
{
	switch (b) {
	case GMT_BASIS_MARKS: return "markers";
	case GMT_BASIS_AUTO_STEPS: return "auto_steps";
	case GMT_BASIS_RANGE_ENDS: return "range_ends";
	case GMT_BASIS_SNAPSHOTS: break;
	}
	return "snapshots";
}

/*
 * The samples growth is judged on (enum gmt_growth_basis): the user's marks when there are two;
 * else the automatic steps; else the outermost ranges' ends; else the snapshots.
 */
static void
growth_basis(struct replay *r)
{
	struct gmt_model *m = r->m;
	bool steps = r->step_samples >= 2;

	if (m->marker_samples >= 2) {
		m->growth_basis = GMT_BASIS_MARKS;
		return;
	}
	if (!steps && r->range_end_samples < 2) {
		m->growth_basis = GMT_BASIS_SNAPSHOTS;
		return;
	}
	for (size_t i = 0; i < m->nsites; i++)
		m->sites[i].at_markers = steps ? m->sites[i].at_steps : m->sites[i].at_range_ends;
	m->marker_samples = steps ? r->step_samples : r->range_end_samples;
	m->first_marker = steps ? r->first_step : r->first_range_end;
	m->last_marker = steps ? r->last_step : r->last_range_end;
	m->growth_basis = steps ? GMT_BASIS_AUTO_STEPS : GMT_BASIS_RANGE_ENDS;
}

struct gmt_model *
gmt_model_new(const struct gmt_trace *trace, const struct gmt_range_opt *range)
{
	struct gmt_model *m = calloc(1, sizeof(*m));
	struct replay *r = calloc(1, sizeof(*r));

	if (!m || !r) {
		free(m);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	m->trace = trace;
	m->replay = r;
	if (range)
		m->range = *range;
	replay_init(r, m);
	if (m->error) {
		gmt_model_free(m);
		errno = ENOMEM;
		return NULL;
	}
	if (m->range.from.set)
		r->phase = PHASE_BEFORE;
	r->bounds_pending = true; /* in seconds: from the trace's start, known by the first item */
	return m;
}

/*
 * The range's edges at an item (event or marker) with @p seq and @p ts: enter it, or leave it.
 * False when the item is outside the range (before it, or after its end).
 */
static bool
range_step(struct replay *r, uint64_t seq, uint64_t ts, const struct gmt_trace_marker *mk)
{
	struct gmt_model *m = r->m;
	const struct gmt_range_bound *from = &m->range.from, *to = &m->range.to;

	if (r->bounds_pending) {
		/* a trace without a header starts at its earliest time: by now, the reader's */
		r->bounds_pending = false;
		if (from->set && !from->label)
			m->range_from = range_at_seconds(m->trace, from);
		else if (!from->set && to->set && !to->label)
			m->range_to = range_at_seconds(m->trace, to);
	}
	if (r->phase == PHASE_AFTER)
		return false;
	if (r->phase == PHASE_BEFORE) {
		bool enter = from->label ? mk && strcmp(mk->label, from->label) == 0
					 : ts >= m->range_from.ts;
		if (!enter) {
			r->before_seq = seq;
			return false;
		}
		m->range_from.found = true;
		range_enter(r, seq, ts);
		if (to->set && !to->label)
			m->range_to = range_at_seconds(m->trace, to);
		return true; /* the marker that opens the range does not also close it */
	}
	if (to->set) {
		bool leave =
		    to->label ? mk && strcmp(mk->label, to->label) == 0 : ts > m->range_to.ts;
		if (leave) {
			m->range_to = (struct gmt_range_point){true, seq, ts};
			r->phase = PHASE_AFTER;
			if (gmt_range_tensors_take(m) != 0)
				m->error = -ENOMEM;
			return false;
		}
	}
	return true;
}

void
gmt_model_event(struct gmt_model *m, const struct gmt_trace_event *ev)
{
	struct replay *r = m->replay;

	if (m->error)
		return;
	/* the tensor level, the whole trace whatever the range: block lines and the blocks a
	 * bounded trace left out (elided_blocks: no CUDA kind) */
	if (ev->op == GMT_OP_BLOCK || (ev->op == GMT_OP_ELIDED && ev->kind == GMT_TK_NONE)) {
		if (!m->tensors && !(m->tensors = gmt_tensors_new(m->trace))) {
			m->error = -ENOMEM;
			return;
		}
		const struct gmt_device_stats *d = device_find(m, ev->device);
		gmt_tensors_event(m->tensors, ev, d ? d->held : 0);
		return;
	}
	if (!range_step(r, ev->seq, ev->ts, NULL)) {
		if (r->phase == PHASE_BEFORE) {
			/* before the range: the state, not the counts */
			readings_until(r, ev);
			replay_event(r, ev);
		}
		return;
	}
	readings_until(r, ev);
	replay_event(r, ev);
}

void
gmt_model_marker(struct gmt_model *m, const struct gmt_trace_marker *mk)
{
	if (!m->error && m->tensors)
		gmt_tensors_marker(m->tensors, mk);
	if (!m->error && range_step(m->replay, mk->seq, mk->ts, mk))
		marker_seen(m->replay, mk);
}

/* An array of @p n elements that has room for more, cut to @p n; false when it stays as it was
 * (empty, or the allocator would not: the room is only slack). */
static bool
shrink(void *pp, size_t n, size_t size)
{
	void *q = n ? gmt_realloc_array(*(void **)pp, n, size) : NULL;

	if (q)
		*(void **)pp = q;
	return q != NULL;
}

/* Which tensor-level OOMs the CUDA-level failures already count (the cudaMalloc the allocator
 * tried and lost, between its previous block line and the OOM); the others are failures too. */
static void
match_tensor_ooms(struct gmt_model *m)
{
	struct gmt_tensors *t = m->tensors;

	t->ooms_alone = 0;
	for (size_t i = 0; i < t->nooms; i++) {
		struct gmt_toom *o = &t->ooms[i];

		o->cuda_failure = false;
		for (size_t k = 0; k < m->nfailed && !o->cuda_failure; k++) {
			const struct gmt_trace_event *f = m->failed[k];
			o->cuda_failure = gmt_model_fail_class(m, k) == GMT_FAIL_COUNTED &&
					  f->device == o->device && f->seq > o->prev_seq &&
					  f->seq < o->seq;
		}
		t->ooms_alone += !o->cuda_failure;
	}
}

int
gmt_model_finish(struct gmt_model *m)
{
	struct replay *r = m->replay;
	const struct gmt_trace *t = m->trace;

	if (!r || m->error)
		return m->error;
	if (r->phase != PHASE_AFTER)
		readings_until(r, NULL);
	if (r->phase == PHASE_BEFORE) {
		/* the range starts after the trace's last event: it holds what was live at the end
		 * and counts nothing (no allocation, no leak, the peak the state it starts with),
		 * not the whole trace's figures */
		range_enter(r, r->before_seq, t->last_ts);
		m->range_from.found = false;
		r->phase = PHASE_AFTER;
	}
	flush_peaks(r);
	if (r->phase == PHASE_INSIDE && (m->range.from.set || m->range.to.set) &&
	    gmt_range_tensors_take(m) != 0)
		m->error = -ENOMEM;
	if (m->tensors)
		gmt_tensors_holders(m->tensors);
	if (m->tensors && gmt_tensors_finish(m->tensors, t->last_ts) != 0)
		m->error = -ENOMEM;
	for (size_t i = 0; i < m->ndevices; i++) {
		struct gmt_device_stats *d = &m->devices[i];

		if (d->npeak_sites > 1)
			qsort_r(d->peak_sites, d->npeak_sites, sizeof(*d->peak_sites), cmp_leak,
				(void *)t);
	}
	if (r->phase == PHASE_INSIDE || r->phase == PHASE_AFTER)
		collect_leaks(r);
	growth_basis(r);
	gmt_failures_finish(m);
	replay_fini(r);
	free(r);
	m->replay = NULL;
	for (size_t i = 0; i < m->nseries; i++)
		if (m->series[i].n > GMT_SERIES_MAX_POINTS)
			series_compress(&m->series[i]);
	if (m->error)
		return m->error;
	/* The lists doubled as they grew; every model of a directory is kept: no slack. */
	shrink(&m->devices, m->ndevices, sizeof(*m->devices));
	shrink(&m->sites, m->nsites, sizeof(*m->sites));
	for (size_t i = 0; i < m->ndevices; i++) {
		struct gmt_device_stats *d = &m->devices[i];

		if (shrink(&d->peak_sites, d->npeak_sites, sizeof(*d->peak_sites)))
			d->peak_sites_cap = d->npeak_sites;
	}
	for (size_t i = 0; i < m->nseries; i++) {
		struct gmt_series *se = &m->series[i];

		if (shrink(&se->points, se->n, sizeof(*se->points)))
			se->cap = se->n;
	}
	/* what pointed into arrays that grew while reading points at their final place now */
	for (size_t i = 0; i < m->nledger; i++)
		m->ledger[i].nvml = &t->nvml[m->ledger[i].nvml_index];
	for (size_t i = 0; i < m->nfailed; i++) {
		m->failed[i] = &m->failed_events[i];
		m->oom[i].ev = &m->failed_events[i];
		m->oom[i].nvml =
		    m->oom[i].nvml_index != SIZE_MAX ? &t->nvml[m->oom[i].nvml_index] : NULL;
	}
	if (m->tensors)
		match_tensor_ooms(m);
	return 0;
}

struct gmt_model *
gmt_model_build_range(const struct gmt_trace *trace, const struct gmt_range_opt *range)
{
	struct gmt_model *m = gmt_model_new(trace, range);
	size_t mi = 0, ei = 0;

	if (!m)
		return NULL;
	/* events and markers in one seq order */
	while (ei < trace->nevents || mi < trace->nmarkers) {
		if (mi < trace->nmarkers &&
		    (ei == trace->nevents || trace->markers[mi].seq < trace->events[ei].seq))
			gmt_model_marker(m, &trace->markers[mi++]);
		else
			gmt_model_event(m, &trace->events[ei++]);
	}
	if (gmt_model_finish(m) != 0) {
		gmt_model_free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

struct gmt_model *
gmt_model_build(const struct gmt_trace *trace)
{
	return gmt_model_build_range(trace, NULL);
}

void
gmt_model_free(struct gmt_model *m)
{
	if (!m)
		return;
	for (size_t d = 0; d < m->ndevices; d++)
		free(m->devices[d].peak_sites);
	for (size_t i = 0; i < m->nfailed; i++)
		free(m->oom[i].sites);
	free(m->oom);
	free(m->sites);
	for (size_t i = 0; i < m->nseries; i++)
		free(m->series[i].points);
	free(m->series);
	free(m->devices);
	free(m->leaks);
	free(m->failed);
	free(m->failed_events);
	free(m->failed_class);
	free(m->fail_pending);
	if (m->replay) {
		replay_fini(m->replay);
		free(m->replay);
	}
	free(m->ledger);
	free(m->range_tensors);
	gmt_tensors_free(m->tensors);
	free(m);
}

bool
gmt_device_active(const struct gmt_device_stats *d)
{
	if (d->allocations)
		return true;
	for (int k = 0; k < GMT_TK_COUNT; k++)
		if (d->kinds[k].peak.bytes)
			return true;
	return false;
}

uint64_t
gmt_model_events(const struct gmt_model *m)
{
	/* block lines are events; elided lines (bounded traces) count what is not in the file */
	return m->trace->nevents - m->trace->elided_lines + m->trace->nmarkers;
}
