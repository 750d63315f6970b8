/*
 * @brief The bounded writer (see bounded.h).
 *
 * One cut, in seq order over the held events:
 *
 *   segment    a run of plain allocations and frees of the elidable kinds (device, pinned,
 *              managed, registered) and of the PyTorch layer's block allocations, frees
 *              requested and frees completed. Every other event ends the segment before it and
 *              is written as it is: markers, failed allocations, resets, readings, the other
 *              block lines (segments, OOMs, backfill, snapshots), torch lines, and every event
 *              of the other kinds (pool, array, VMM, graph, imported), whose lines the replay
 *              needs whole. So inside a segment, what a device holds (model/kinds.c,
 *              gmt_kind_held()) changes only with its device-kind bytes.
 *   pair       an allocation of the segment and the free, in the same segment, that ends it
 *              (paired as the writer's live table pairs them, in seq order).
 *   mark       for each (device, elidable kind) changed in the segment: the first event at which
 *              its live bytes reach the segment's maximum, when that is higher than any before
 *              (always for device memory on a device that also holds pool, array, VMM or graph
 *              memory: its held bytes may peak with a lower device maximum), moved on to the last
 *              event before the next event that is not an allocation (the replay takes a peak's
 *              live set just before the next event that may lower it, model.c flush_peaks());
 *              and the moments the analyzer takes a new peak's address layout (1% above the
 *              last one, model.c capture_peak()), on devices whose held bytes are their device
 *              bytes.
 *   elided     a pair that no mark falls in (mark >= alloc and mark < free), whose allocation
 *              does not decide an earlier failure's class (model/failures.c: the next attempt on
 *              the device after an out-of-memory, the next success of a refused call). Neither
 *              line is written; the pair counts in its site's `elided` line of the bucket.
 *
 * The tensor level, the same way: the writer replays the block lines through the allocator's
 * rules (alloc/blocks.c, the analyzer's own) to know each device's allocated bytes as the full
 * trace has them (a block's real size is the allocator's, not the request). A block triple (its
 * allocation, free requested, free completed, all in the segment) is left out when no mark falls
 * in it (alloc <= mark < completed); its marks: the first event at which a device's allocated
 * bytes reach the segment's maximum when that is higher than any before (the CUDA-level held
 * bytes the analyzer notes at a tensor peak are then the full trace's), and that moved on to the
 * last event before the analyzer takes the peak's live set and cache figures (model/tensors.c
 * take_peak(): before a block free, a segment's release or an OOM of that device). A free
 * requested while Python's collector ran keeps its triple (the report's freed_by_gc). Marks of
 * either level keep the pairs of both. The analyzer's allocator then sees a block placed inside
 * a free block where a left-out one was (gmt_blk_expect_gaps()): the blocks' real sizes, the
 * splits and merges after each left-out triple's completion are the full trace's, so the
 * tensor section's peak and its live set, live at exit, growth at marks and automatic steps,
 * OOM forensics and fragmentation (all at cuts or marks) are the full trace's. A left-out triple
 * counts in its site's (stack, device) `elided_blocks` line of the bucket (format/elided.h): its
 * block, and the bytes the device's allocated bytes rose by when it was made (the allocator's
 * rounded size, from the writer's replay), so the block allocations per device and site and the
 * blocks in all (the timeline's blocks_all) are the full trace's too. Not kept: the html
 * timeline's blocks and its per-bucket highest moments (drawn from what the file holds), and
 * block_events (the block lines the file holds).
 *
 * The replay of what is written holds, at every moment, a subset of what the full trace holds
 * (only whole pairs are left out), so it is never above it; at every mark and at every cut it
 * holds the same allocations. The first moment of any maximum over the whole run is the first
 * maximum of its segment and higher than anything before, so it is a mark: the replayed peaks are
 * the same bytes, at the same event, with the same live set (sites, counts, layout); markers,
 * failures and the end are cuts, so growth, OOM forensics and leaks at exit see what the full
 * trace shows.
 */
#include "writer/bounded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/blocks.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/hash.h"
#include "writer/tables.h"

/* A missing seq (a free stamped before its real call, whose line is still on its way) holds the
 * events after it back this long at most; then the bucket is cut without it (counted as late
 * when it comes). */
#define GRACE_NS (250ULL * 1000000ULL)
#define PENDING_MAX 32 /* failures waiting for the allocation that decides their class */
#define CUDA_OUT_OF_MEMORY 2
#define CUDA_NOT_PERMITTED 800
#define CUDA_NOT_SUPPORTED 801
#define NDEV (GMT_MAX_DEVICES + 1)
#define NEK 4 /* elidable kinds */

enum { F_FORCED = 1, F_ELIDED = 2, F_MARK = 4, F_CUT = 8 };

struct pend {
	uint64_t key;
	uint32_t idx; /* UINT32_MAX: removed (the slot stays taken for probing) */
	uint32_t gen;
};

struct site {
	struct gmt_elided_site s;
	uint64_t size_allocs[GMT_ELIDED_BINS], size_bytes[GMT_ELIDED_BINS];
	uint64_t lifetimes[GMT_ELIDED_BINS];
};

static struct {
	struct gmt_bounded_config cfg;
	bool ready;
	bool no_elide; /* out of memory, or too many failures pending: write everything */
	struct gmt_event *held;
	size_t n, cap;
	struct gmt_live_table truth; /* every processed event, in seq order */
	uint64_t next_seq;	     /* every seq below it is processed (or was given up on) */
	uint64_t last_alloc_seq;     /* the last successful allocation processed (written: see
					segment_finish()) */
	uint64_t bucket_start;
	/* scratch of one cut, by index into held */
	int32_t *pair;
	uint64_t *aseq; /* a free's: the seq of the allocation it ends, 0 none */
	uint8_t *flag;
	uint32_t *cnt;
	uint64_t *bbytes; /* a block allocation's: its real size (what allocated bytes rose by) */
	size_t scratch_cap;
	/* allocations of the segment not freed yet, by address */
	struct pend *pend;
	size_t pend_cap, pend_used;
	uint32_t gen;
	/* the segment's maximum per (device, elidable kind) */
	uint64_t seg_max[NDEV][NEK];
	int64_t seg_arg[NDEV][NEK];
	uint32_t seg_gen[NDEV][NEK];
	uint16_t touched[NDEV * NEK];
	size_t ntouched;
	/* the highest live bytes so far per (device, elidable kind), as the full trace has them */
	uint64_t all_max[NDEV][NEK];
	/* a device had events of the other kinds that make up held memory (pool, array, VMM,
	 * graph, readings): its held bytes are then not its device bytes alone; any: a device
	 * unknown */
	bool other_held[NDEV], other_held_any;
	/* the analyzer's peak layout (model.c capture_peak()): taken at the first event after a
	 * new peak that may lower what the device holds, again only when the peak grew by more
	 * than 1% since; the writer keeps those moments too, where it knows held bytes (devices
	 * without other_held) */
	uint64_t run_high[NDEV], gaps_bytes[NDEV];
	bool gaps_valid[NDEV], peak_pending[NDEV];
	size_t npending;
	/* the bucket's elided pairs, per site */
	struct site *sites;
	size_t nsites, sites_cap;
	uint32_t *site_index;
	size_t site_index_cap;
	/* failures whose class an allocation still decides */
	int32_t oom_dev[PENDING_MAX];
	size_t noom;
	uint16_t probe_api[PENDING_MAX], probe_driver[PENDING_MAX];
	size_t nprobe;
	/* the tensor level (block lines): the allocator's state as the full trace has it (its
	 * blocks' real sizes), the segment's maximum of allocated bytes per device, the highest so
	 * far, and per held index the FREE_REQUESTED of an allocation (-1 none) */
	struct gmt_blk_model *blk;
	bool blk_failed;
	uint64_t t_seg_max[NDEV], t_all_max[NDEV];
	int64_t t_seg_arg[NDEV];
	uint32_t t_seg_gen[NDEV];
	uint16_t t_touched[NDEV];
	size_t nt_touched;
	int32_t *breq;
	struct gmt_bounded_stats st;
} b;

static int
ekind(uint8_t kind)
{
	switch (kind) {
	case GMT_KIND_DEVICE: return 0;
	case GMT_KIND_PINNED: return 1;
	case GMT_KIND_MANAGED: return 2;
	case GMT_KIND_REGISTERED: return 3;
	default: return -1;
	}
}

static size_t
dev_index(int32_t device)
{
	return (device >= 0 && device < GMT_MAX_DEVICES) ? (size_t)device + 1 : 0;
}

bool
gmt_bounded_init(const struct gmt_bounded_config *cfg)
{
	memset(&b, 0, sizeof(b));
	b.cfg = *cfg;
	b.next_seq = 1;
	b.gen = 1;
	b.ready = true;
	return true;
}

const struct gmt_bounded_stats *
gmt_bounded_stats(void)
{
	return &b.st;
}

bool
gmt_bounded_due(uint64_t now_ns)
{
	if (!b.bucket_start)
		b.bucket_start = now_ns;
	return b.n >= b.cfg.max_events || (b.n && now_ns - b.bucket_start >= b.cfg.bucket_ns);
}

// --- pending allocations ------------------------------------------------------------------------

static bool
pend_grow(void)
{
	size_t cap = b.pend_cap ? b.pend_cap * 2 : 4096;
	struct pend *p = calloc(cap, sizeof(*p));
	if (!p)
		return false;
	size_t used = 0;
	for (size_t i = 0; i < b.pend_cap; i++) {
		const struct pend *o = &b.pend[i];
		if (o->gen != b.gen || o->idx == UINT32_MAX)
			continue;
		size_t j = gmt_mix64(o->key) & (cap - 1);
		while (p[j].gen == b.gen)
			j = (j + 1) & (cap - 1);
		p[j] = *o;
		used++;
	}
	free(b.pend);
	b.pend = p;
	b.pend_cap = cap;
	b.pend_used = used;
	return true;
}

static struct pend *
pend_find(uint64_t key)
{
	if (!b.pend_cap)
		return NULL;
	for (size_t j = gmt_mix64(key) & (b.pend_cap - 1);; j = (j + 1) & (b.pend_cap - 1)) {
		struct pend *e = &b.pend[j];
		if (e->gen != b.gen)
			return NULL;
		if (e->key == key && e->idx != UINT32_MAX)
			return e;
	}
}

static bool
pend_put(uint64_t key, uint32_t idx)
{
	if ((b.pend_used + 1) * 2 > b.pend_cap && !pend_grow())
		return false;
	/* a slot of the same key is taken again, removed or not (an older allocation there whose
	 * free was not seen stays unpaired: written), so an address reused a thousand times in a
	 * segment costs one slot, not a chain of a thousand */
	size_t j = gmt_mix64(key) & (b.pend_cap - 1);
	for (; b.pend[j].gen == b.gen; j = (j + 1) & (b.pend_cap - 1)) {
		if (b.pend[j].key == key) {
			b.pend[j].idx = idx;
			return true;
		}
	}
	b.pend[j] = (struct pend){key, idx, b.gen};
	b.pend_used++;
	return true;
}

/* A new segment: every pending allocation and every maximum is forgotten at once. */
static void
new_segment(void)
{
	if (++b.gen == 0) { /* wrapped: stale slots could look current */
		if (b.pend)
			memset(b.pend, 0, b.pend_cap * sizeof(*b.pend));
		memset(b.seg_gen, 0, sizeof(b.seg_gen));
		memset(b.t_seg_gen, 0, sizeof(b.t_seg_gen));
		b.gen = 1;
	}
	b.pend_used = 0;
	b.ntouched = 0;
	b.nt_touched = 0;
}

// --- elided sites -------------------------------------------------------------------------------

static uint64_t
site_hash(const struct gmt_event *a)
{
	return gmt_mix64(((uint64_t)a->stack << 32) ^ ((uint64_t)a->api << 16) ^ a->driver ^
			 ((uint64_t)a->kind << 56) ^ ((uint64_t)(uint32_t)a->device << 40));
}

static bool
site_same(const struct gmt_elided_site *s, const struct gmt_event *a)
{
	return s->stack == a->stack && s->api == a->api && s->driver == a->driver &&
	       s->kind == a->kind && s->device == a->device;
}

static bool
site_reindex(size_t cap)
{
	uint32_t *ix = malloc(cap * sizeof(*ix));
	if (!ix)
		return false;
	memset(ix, 0xff, cap * sizeof(*ix));
	for (size_t i = 0; i < b.nsites; i++) {
		struct gmt_event a = {.stack = b.sites[i].s.stack,
				      .api = b.sites[i].s.api,
				      .driver = b.sites[i].s.driver,
				      .kind = b.sites[i].s.kind,
				      .device = b.sites[i].s.device};
		size_t j = site_hash(&a) & (cap - 1);
		while (ix[j] != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		ix[j] = (uint32_t)i;
	}
	free(b.site_index);
	b.site_index = ix;
	b.site_index_cap = cap;
	return true;
}

static void
site_add(struct site *st,
	 const struct gmt_event *a,
	 const struct gmt_event *f,
	 uint64_t bytes,
	 bool temp)
{
	struct gmt_elided_site *s = &st->s;
	unsigned sb = gmt_log2_bin(bytes);
	unsigned lb = gmt_log2_bin(f->ts_ns > a->ts_ns ? f->ts_ns - a->ts_ns : 0);

	s->allocations++;
	s->bytes += bytes;
	s->temporaries += temp;
	s->temporary_bytes += temp ? bytes : 0;
	st->size_allocs[sb]++;
	st->size_bytes[sb] += bytes;
	st->lifetimes[lb]++;
	if (f->seq > s->seq) {
		s->seq = f->seq;
		s->ts = f->ts_ns;
	}
}

/* Count the pair (@p a, @p f) of @p bytes in its site's line of this bucket (@p temp: a
 * temporary, freed before any other allocation was made); false out of memory. A block's
 * allocation and its free completed count in the site (stack, device) of kind NONE: the bucket's
 * elided_blocks line of that site. */
static bool
site_count(const struct gmt_event *a, const struct gmt_event *f, uint64_t bytes, bool temp)
{
	struct gmt_event key;

	if (a->op == GMT_OP_BLOCK) { /* the CUDA-level fields of a block line mean nothing here */
		key = (struct gmt_event){.stack = a->stack, .device = a->device, .ts_ns = a->ts_ns};
		a = &key;
	}
	if ((b.nsites + 1) * 2 > b.site_index_cap &&
	    !site_reindex(b.site_index_cap ? b.site_index_cap * 2 : 256))
		return false;
	size_t j = site_hash(a) & (b.site_index_cap - 1);
	for (; b.site_index[j] != UINT32_MAX; j = (j + 1) & (b.site_index_cap - 1)) {
		struct site *st = &b.sites[b.site_index[j]];
		if (site_same(&st->s, a)) {
			site_add(st, a, f, bytes, temp);
			return true;
		}
	}
	if (b.nsites == b.sites_cap) {
		size_t cap = b.sites_cap ? b.sites_cap * 2 : 64;
		struct site *p = realloc(b.sites, cap * sizeof(*p));
		if (!p)
			return false;
		b.sites = p;
		b.sites_cap = cap;
	}
	struct site *st = &b.sites[b.nsites];
	memset(st, 0, sizeof(*st));
	st->s = (struct gmt_elided_site){
	    .stack = a->stack,
	    .api = a->api,
	    .driver = a->driver,
	    .kind = a->kind,
	    .device = a->device,
	    .size_allocs = st->size_allocs,
	    .size_bytes = st->size_bytes,
	    .lifetimes = st->lifetimes,
	};
	site_add(st, a, f, bytes, temp);
	b.site_index[j] = (uint32_t)b.nsites++;
	return true;
}

/* The bucket's elided lines (each after its stack line), in order of first use. */
static void
sites_write(void)
{
	for (size_t i = 0; i < b.nsites; i++) {
		struct site *st = &b.sites[i];
		if (st->s.stack && b.cfg.stack)
			b.cfg.stack(st->s.stack);
		/* the arrays moved with the sites when they grew */
		st->s.size_allocs = st->size_allocs;
		st->s.size_bytes = st->size_bytes;
		st->s.lifetimes = st->lifetimes;
		if (st->s.kind == GMT_KIND_NONE)
			gmt_jsonl_elided_blocks(b.cfg.out, &st->s);
		else
			gmt_jsonl_elided(b.cfg.out, &st->s);
	}
	b.nsites = 0;
	if (b.site_index)
		memset(b.site_index, 0xff, b.site_index_cap * sizeof(*b.site_index));
}

// --- failures whose class is not decided yet ----------------------------------------------------

/* Before allocation @p ev is applied: does it decide a pending failure (then it must be written)?
 * Mirrors gmt_failures_note(): an out-of-memory is decided by the next attempt on its device, a
 * refused call by the next success of the same call. */
static bool
decides_failure(const struct gmt_event *ev)
{
	bool decides = false;
	size_t keep = 0;

	for (size_t i = 0; i < b.noom; i++) {
		if (b.oom_dev[i] == ev->device)
			decides = true;
		else
			b.oom_dev[keep++] = b.oom_dev[i];
	}
	b.noom = keep;
	if (ev->result == 0) {
		keep = 0;
		for (size_t i = 0; i < b.nprobe; i++) {
			if (b.probe_api[i] == ev->api && b.probe_driver[i] == ev->driver) {
				decides = true;
				continue;
			}
			b.probe_api[keep] = b.probe_api[i];
			b.probe_driver[keep++] = b.probe_driver[i];
		}
		b.nprobe = keep;
	}
	return decides;
}

static void
note_failure(const struct gmt_event *ev)
{
	if (ev->result == CUDA_OUT_OF_MEMORY) {
		for (size_t i = 0; i < b.noom; i++)
			if (b.oom_dev[i] == ev->device)
				return;
		if (b.noom == PENDING_MAX) {
			b.no_elide = true;
			return;
		}
		b.oom_dev[b.noom++] = ev->device;
	} else if (ev->result == CUDA_NOT_PERMITTED || ev->result == CUDA_NOT_SUPPORTED) {
		for (size_t i = 0; i < b.nprobe; i++)
			if (b.probe_api[i] == ev->api && b.probe_driver[i] == ev->driver)
				return;
		if (b.nprobe == PENDING_MAX) {
			b.no_elide = true;
			return;
		}
		b.probe_api[b.nprobe] = ev->api;
		b.probe_driver[b.nprobe++] = ev->driver;
	}
}

// --- the tensor level ---------------------------------------------------------------------------

/* A block line's key among the segment's pending allocations: apart from every CUDA address
 * (user-space addresses leave the top bits clear). */
static uint64_t
block_key(const struct gmt_event *ev)
{
	return (1ULL << 63) | ((uint64_t)(uint8_t)ev->device << 52) |
	       (ev->ptr & ((1ULL << 52) - 1));
}

/* Apply a block line to the allocator's replay as the analyzer will read the line
 * (format/jsonl.c writes, model/tensors.c reads: the fields a line carries for its action); the
 * device's allocated bytes (memory_allocated()) before and after it. */
static void
blk_apply(const struct gmt_event *ev, uint64_t *before, uint64_t *after)
{
	unsigned a = ev->torch_action;
	uint32_t f = ev->cuda_flags;
	uint64_t req, res;

	*before = *after = 0;
	if (b.blk_failed)
		return;
	if (!b.blk && !(b.blk = gmt_blk_new(false))) {
		b.blk_failed = b.no_elide = true;
		return;
	}
	struct gmt_blk_event be = {
	    .action = a,
	    .seq = ev->seq,
	    .ts_ns = ev->ts_ns,
	    .device = ev->device,
	    .ptr = a == GMT_TORCH_OOM || a == GMT_TORCH_SNAPSHOT ? 0 : ev->ptr,
	    .size = ev->size,
	    .requested = a == GMT_TORCH_STATE_BLOCK ? ev->requested : 0,
	    .stream = ev->stream,
	    .pool = {f & GMT_TORCH_F_HAS_POOL ? ev->pool : 0,
		     f & GMT_TORCH_F_HAS_POOL ? ev->pool2 : 0},
	    .stack = ev->stack,
	    .allocated = a == GMT_TORCH_STATE_BLOCK && (f & GMT_TORCH_F_ALLOCATED),
	    .active = a == GMT_TORCH_STATE_BLOCK && (f & GMT_TORCH_F_ACTIVE),
	    .expandable = a == GMT_TORCH_STATE_SEGMENT && (f & GMT_TORCH_F_EXPANDABLE),
	    .large = a == GMT_TORCH_STATE_SEGMENT && (f & GMT_TORCH_F_LARGE),
	};
	gmt_blk_running(b.blk, ev->device, before, &req, &res);
	if (gmt_blk_apply(b.blk, &be) == -ENOMEM) {
		b.blk_failed = b.no_elide = true; /* from now on everything is written */
		return;
	}
	gmt_blk_running(b.blk, ev->device, after, &req, &res);
}

/* Whether the analyzer takes device @p d's pending tensor peak (model/tensors.c take_peak())
 * before it applies @p ev: a block line of that device that may lower what it holds. */
static bool
takes_tensor_peak(const struct gmt_event *ev, size_t d)
{
	if (ev->op != GMT_OP_BLOCK || dev_index(ev->device) != d)
		return false;
	switch (ev->torch_action) {
	case GMT_TORCH_FREE_REQUESTED:
	case GMT_TORCH_FREE_COMPLETED:
	case GMT_TORCH_SEGMENT_FREE:
	case GMT_TORCH_SEGMENT_UNMAP:
	case GMT_TORCH_OOM: return true;
	default: return false;
	}
}

// --- the cut ------------------------------------------------------------------------------------

static int
by_seq(const void *x, const void *y)
{
	uint64_t a = ((const struct gmt_event *)x)->seq, c = ((const struct gmt_event *)y)->seq;
	return (a > c) - (a < c);
}

static bool
scratch_reserve(size_t n)
{
	if (n <= b.scratch_cap)
		return true;
	size_t cap = b.scratch_cap ? b.scratch_cap : 4096;
	while (cap < n)
		cap *= 2;
	int32_t *pair = realloc(b.pair, cap * sizeof(*pair));
	if (pair)
		b.pair = pair;
	uint64_t *aseq = realloc(b.aseq, cap * sizeof(*aseq));
	if (aseq)
		b.aseq = aseq;
	uint8_t *flag = realloc(b.flag, cap);
	if (flag)
		b.flag = flag;
	uint32_t *cnt = realloc(b.cnt, (cap + 1) * sizeof(*cnt));
	if (cnt)
		b.cnt = cnt;
	int32_t *breq = realloc(b.breq, cap * sizeof(*breq));
	if (breq)
		b.breq = breq;
	uint64_t *bbytes = realloc(b.bbytes, cap * sizeof(*bbytes));
	if (bbytes)
		b.bbytes = bbytes;
	if (!pair || !aseq || !flag || !cnt || !breq || !bbytes)
		return false;
	b.scratch_cap = cap;
	return true;
}

static bool
made(const struct gmt_event *ev)
{
	return ev->op == GMT_OP_ALLOC && ev->result == 0 && ev->ptr;
}

/* Keep pair member @p i and its partner. */
static void
keep(size_t i)
{
	b.flag[i] &= (uint8_t)~F_ELIDED;
	if (b.pair[i] >= 0)
		b.flag[b.pair[i]] &= (uint8_t)~F_ELIDED;
}

/*
 * Decide and write the segment held[s, e): the marks, which pairs are left out, then what must
 * be kept for the replay's temporaries (model.c: a free whose allocation was the last one made
 * before it): the last allocation of the segment (so that at every cut the replay's last
 * allocation is the full trace's), and, for a written free, the last allocation before it when
 * that was left out and the replay would otherwise see the free's own allocation as the last.
 */
static void
segment_finish(size_t s, size_t e)
{
	for (size_t t = 0; t < b.ntouched; t++) {
		size_t d = b.touched[t] / NEK, k = b.touched[t] % NEK;
		int64_t arg = b.seg_arg[d][k];
		if (arg < 0)
			continue;
		/* a maximum no higher than one before is not a peak of the run; but while a device
		 * holds other kinds of memory too, its held bytes may peak here anyway */
		bool higher = b.seg_max[d][k] > b.all_max[d][k];
		if (higher)
			b.all_max[d][k] = b.seg_max[d][k];
		if (!higher && !(k == 0 && (b.other_held[d] || b.other_held_any)))
			continue;
		size_t m = (size_t)arg;
		/* block lines do not go through the CUDA-level replay: they lower nothing there */
		while (m + 1 < e &&
		       (b.held[m + 1].op == GMT_OP_ALLOC || b.held[m + 1].op == GMT_OP_BLOCK))
			m++;
		b.flag[m] |= F_MARK;
	}
	/* the tensor level's peaks: the moment a device's allocated bytes first reach a maximum
	 * higher than any before (the CUDA-level held bytes the analyzer notes there), and the
	 * last event before the analyzer takes that peak's live set and cache figures */
	for (size_t t = 0; t < b.nt_touched; t++) {
		size_t d = b.t_touched[t];
		int64_t arg = b.t_seg_arg[d];
		if (arg < 0 || b.t_seg_max[d] <= b.t_all_max[d])
			continue;
		b.t_all_max[d] = b.t_seg_max[d];
		size_t m = (size_t)arg;
		b.flag[m] |= F_MARK;
		while (m + 1 < e && !takes_tensor_peak(&b.held[m + 1], d))
			m++;
		b.flag[m] |= F_MARK;
	}
	/* cnt[i - s]: marks at indices below i */
	b.cnt[0] = 0;
	for (size_t i = s; i < e; i++)
		b.cnt[i - s + 1] = b.cnt[i - s] + !!(b.flag[i] & F_MARK);
	for (size_t i = s; i < e && !b.no_elide; i++) {
		const struct gmt_event *ev = &b.held[i];
		if (ev->op == GMT_OP_BLOCK && b.pair[i] > (int32_t)i && !(b.flag[i] & F_FORCED)) {
			/* a block's allocation, its free requested and completed, no mark between
			 */
			size_t f = (size_t)b.pair[i];
			if (b.cnt[f - s] - b.cnt[i - s])
				continue;
			b.flag[i] |= F_ELIDED;
			b.flag[b.breq[i]] |= F_ELIDED;
			b.flag[f] |= F_ELIDED;
			continue;
		}
		if (ev->op != GMT_OP_ALLOC || b.pair[i] < 0 || (b.flag[i] & F_FORCED))
			continue;
		size_t f = (size_t)b.pair[i];
		/* marks at i .. f - 1: the allocation was live there */
		if (b.cnt[f - s] - b.cnt[i - s])
			continue;
		b.flag[i] |= F_ELIDED;
		b.flag[f] |= F_ELIDED;
	}
	for (size_t i = e; i-- > s;) {
		if (made(&b.held[i])) {
			keep(i);
			break;
		}
	}
	for (bool changed = true; changed;) {
		uint64_t last = b.last_alloc_seq, last_written = last;
		size_t last_i = SIZE_MAX;
		changed = false;
		for (size_t i = s; i < e; i++) {
			const struct gmt_event *ev = &b.held[i];
			if (made(ev)) {
				last = ev->seq;
				last_i = i;
				if (!(b.flag[i] & F_ELIDED))
					last_written = last;
			} else if (ev->op == GMT_OP_FREE && !(b.flag[i] & F_ELIDED) && b.aseq[i] &&
				   last != b.aseq[i] && last_written == b.aseq[i] &&
				   last_i != SIZE_MAX) {
				keep(last_i); /* left out, so the last allocation written was its
						 own */
				last_written = last;
				changed = true;
			}
		}
	}
	uint64_t last = b.last_alloc_seq;
	for (size_t i = s; i < e; i++) {
		const struct gmt_event *ev = &b.held[i];
		if (made(ev))
			last = ev->seq;
		if (!(b.flag[i] & F_ELIDED)) {
			b.cfg.emit(ev);
			continue;
		}
		b.st.elided++;
		if (ev->op == GMT_OP_BLOCK && ev->torch_action == GMT_TORCH_FREE_COMPLETED) {
			size_t ai = (size_t)b.pair[i];
			if (!site_count(&b.held[ai], ev, b.bbytes[ai], false)) {
				b.no_elide = true;
				b.st.lost++;
			}
			continue;
		}
		if (ev->op != GMT_OP_FREE)
			continue;
		const struct gmt_event *a = &b.held[b.pair[i]];
		if (!site_count(a, ev, a->size, last == a->seq)) {
			b.no_elide = true; /* out of memory: the counts of this pair are lost */
			b.st.lost++;
		}
	}
	b.last_alloc_seq = last;
	new_segment();
}

/* After a cut event is applied: the highest bytes it left, and whether it is memory of the
 * other kinds held memory counts (then that device's held peak needs every segment's maximum). */
static void
note_cut(const struct gmt_event *ev)
{
	int k = ekind(ev->kind);
	size_t d = dev_index(ev->device);

	if (k >= 0 && b.truth.bytes[d][ev->kind] > b.all_max[d][k])
		b.all_max[d][k] = b.truth.bytes[d][ev->kind];
	switch (ev->op) {
	case GMT_OP_ALLOC:
	case GMT_OP_FREE:
	case GMT_OP_RETAIN:
	case GMT_OP_USAGE:
		if (ev->result != 0 || (k >= 0 && ev->op == GMT_OP_ALLOC))
			break;
		if (ev->device < 0 || ev->device >= GMT_MAX_DEVICES)
			b.other_held_any = true;
		else
			b.other_held[d] = true;
		break;
	default: break;
	}
}

/* Before event @p i (of the segment from @p s) is applied: the analyzer takes a pending peak's
 * layout before an event that may lower what a device holds; where it would take it, the moment
 * before @p i is kept (marked). */
static void
peaks_before(size_t i, size_t s, bool seg)
{
	const struct gmt_event *ev = &b.held[i];

	if (!b.npending)
		return;
	/* model.c replay_event(): frees, resets, retains and readings; markers and block lines
	 * do not go through it */
	switch (ev->op) {
	case GMT_OP_FREE:
	case GMT_OP_RESET:
	case GMT_OP_RETAIN:
	case GMT_OP_USAGE: break;
	case GMT_OP_ALLOC:
		if (ev->result == 0 && ev->ptr && gmt_live_peek_alloc(&b.truth, ev))
			break; /* a reused address: the older allocation ends */
		return;
	default: return;
	}
	for (size_t d = 0; d < NDEV && b.npending; d++) {
		if (!b.peak_pending[d])
			continue;
		b.peak_pending[d] = false;
		b.npending--;
		if (b.gaps_valid[d] && b.run_high[d] <= b.gaps_bytes[d] + b.gaps_bytes[d] / 100)
			continue;
		b.gaps_valid[d] = true;
		b.gaps_bytes[d] = b.run_high[d];
		if (seg && i > s)
			b.flag[i - 1] |=
			    F_MARK; /* at a cut (i == s) every live allocation is kept */
	}
}

/* After an event is applied: a new peak of a device whose held bytes are its device bytes. */
static void
peaks_after(const struct gmt_event *ev, int32_t device)
{
	size_t d = dev_index(device);
	uint64_t v = b.truth.bytes[d][GMT_KIND_DEVICE];

	if (v <= b.run_high[d])
		return;
	b.run_high[d] = v;
	if (!b.other_held[d] && !b.other_held_any && !b.peak_pending[d]) {
		b.peak_pending[d] = true;
		b.npending++;
	}
	(void)ev;
}

/*
 * Block line @p i of the segment from @p s: applied to the allocator's replay; an allocation,
 * its free requested and its free completed are paired (pair[] from the allocation to the
 * completion and back, breq[] to the request), the device's allocated bytes followed for the
 * segment's maximum. Any other action (segments, an OOM, backfill, a snapshot) is a cut: F_CUT.
 * A free requested while Python's collector ran is never left out (the report's freed_by_gc).
 */
static void
process_block(size_t i, size_t s, bool seg)
{
	const struct gmt_event *ev = &b.held[i];
	unsigned a = ev->torch_action;
	uint64_t before, after;
	size_t d = dev_index(ev->device);

	(void)s;
	blk_apply(ev, &before, &after);
	if (!seg)
		return;
	b.pair[i] = -1;
	b.breq[i] = -1;
	if (b.blk_failed || ev->device < 0 || ev->device >= GMT_MAX_DEVICES ||
	    (a != GMT_TORCH_ALLOC && a != GMT_TORCH_FREE_REQUESTED &&
	     a != GMT_TORCH_FREE_COMPLETED)) {
		b.flag[i] |= F_CUT;
		if (after > b.t_all_max[d])
			b.t_all_max[d] = after;
		return;
	}
	if (a == GMT_TORCH_ALLOC) {
		b.bbytes[i] = after > before ? after - before : 0;
		if (!pend_put(block_key(ev), (uint32_t)i))
			b.flag[i] |= F_FORCED;
	} else {
		struct pend *pe = pend_find(block_key(ev));
		const struct gmt_event *al = pe ? &b.held[pe->idx] : NULL;
		if (al && al->op == GMT_OP_BLOCK && al->torch_action == GMT_TORCH_ALLOC) {
			if (a == GMT_TORCH_FREE_REQUESTED && b.breq[pe->idx] < 0) {
				b.breq[pe->idx] = (int32_t)i;
				if (ev->flags & GMT_EV_IN_GC)
					b.flag[pe->idx] |= F_FORCED;
			} else if (a == GMT_TORCH_FREE_COMPLETED && b.breq[pe->idx] >= 0) {
				b.pair[pe->idx] = (int32_t)i;
				b.pair[i] = (int32_t)pe->idx;
				pe->idx = UINT32_MAX;
			}
		}
	}
	if (b.t_seg_gen[d] != b.gen) {
		b.t_seg_gen[d] = b.gen;
		b.t_seg_max[d] = before; /* at the segment's start: the cut before holds it */
		b.t_seg_arg[d] = -1;
		b.t_touched[b.nt_touched++] = (uint16_t)d;
	}
	if (after > b.t_seg_max[d]) {
		b.t_seg_max[d] = after;
		b.t_seg_arg[d] = (int64_t)i;
	}
}

/* Process held[0, p) (in seq order). */
static void
process(size_t p)
{
	/* without scratch every event is a cut of its own: everything is written */
	bool seg = scratch_reserve(p);
	size_t s = 0;

	new_segment();
	for (size_t i = 0; i < p; i++) {
		struct gmt_event *ev = &b.held[i];
		int32_t partner = -1, device = ev->device;
		int k = -1;
		uint8_t tk = ev->kind; /* the kind whose bytes change */

		if (seg) {
			b.pair[i] = -1;
			b.aseq[i] = 0;
			b.flag[i] = 0;
		}
		peaks_before(i, s, seg);
		if (ev->op == GMT_OP_BLOCK) {
			process_block(i, s, seg);
			if (!seg || b.blk_failed || b.flag[i] & F_CUT) {
				if (seg)
					segment_finish(s, i);
				b.cfg.emit(ev);
				s = i + 1;
			}
			continue;
		}
		if (!seg)
			goto cut;
		if (ev->op == GMT_OP_ALLOC && ev->result == 0 && ev->ptr && !ev->requested &&
		    (k = ekind(ev->kind)) >= 0) {
			if (decides_failure(ev) || !pend_put(ev->ptr, (uint32_t)i))
				b.flag[i] |= F_FORCED;
		} else if (ev->op == GMT_OP_FREE) {
			const struct gmt_live_entry *le = gmt_live_peek_free(&b.truth, ev);
			if (!le || (k = ekind(le->kind)) < 0)
				goto cut;
			/* what was freed, not what the call implies (cudaFree of managed memory) */
			device = le->device;
			tk = le->kind;
			b.aseq[i] = le->seq;
			struct pend *pe = pend_find(ev->ptr);
			if (pe && b.held[pe->idx].seq == le->seq) {
				partner = (int32_t)pe->idx;
				pe->idx = UINT32_MAX;
				b.pair[partner] = (int32_t)i;
				b.pair[i] = partner;
			}
		} else {
			goto cut;
		}
		size_t d = dev_index(device);
		uint64_t before = b.truth.bytes[d][tk];
		if (!gmt_live_apply(&b.truth, ev))
			b.no_elide = true;
		peaks_after(ev, device);
		uint64_t after = b.truth.bytes[d][tk];
		if (b.seg_gen[d][k] != b.gen) {
			b.seg_gen[d][k] = b.gen;
			b.seg_max[d][k] =
			    before; /* at the segment's start: the cut before holds it */
			b.seg_arg[d][k] = -1;
			b.touched[b.ntouched++] = (uint16_t)(d * NEK + (size_t)k);
		}
		if (after > b.seg_max[d][k]) {
			b.seg_max[d][k] = after;
			b.seg_arg[d][k] = (int64_t)i;
		}
		continue;
	cut:
		if (seg)
			segment_finish(s, i);
		if (ev->op == GMT_OP_ALLOC) {
			(void)decides_failure(ev);
			if (ev->result != 0)
				note_failure(ev);
		}
		if (made(ev))
			b.last_alloc_seq = ev->seq;
		if (!gmt_live_apply(&b.truth, ev))
			b.no_elide = true;
		peaks_after(ev, ev->device);
		note_cut(ev);
		b.cfg.emit(ev);
		s = i + 1;
	}
	if (seg)
		segment_finish(s, p);
}

uint64_t
gmt_bounded_cut(uint64_t now_ns, bool force)
{
	size_t p = 0;
	uint64_t expect = b.next_seq;

	b.bucket_start = now_ns;
	/* a full bucket does not wait for a missing seq: under drops (holes that never fill) the
	 * writer must not hold more and more */
	if (b.n >= b.cfg.max_events)
		force = true;
	/* the writer drains sorted batches: the held events are mostly in order already */
	size_t unsorted = 0;
	for (size_t i = 1; i < b.n && !unsorted; i++)
		unsorted = b.held[i].seq < b.held[i - 1].seq;
	if (unsorted)
		qsort(b.held, b.n, sizeof(*b.held), by_seq);
	for (; p < b.n; p++) {
		uint64_t seq = b.held[p].seq;
		if (seq > expect && !force && now_ns - b.held[p].ts_ns < GRACE_NS &&
		    b.held[p].ts_ns <= now_ns)
			break; /* a hole, young: what follows it waits */
		if (seq < b.next_seq)
			b.st.late++;
		if (seq >= expect)
			expect = seq + 1;
	}
	if (p) {
		process(p);
		sites_write();
		b.st.buckets++;
		memmove(b.held, b.held + p, (b.n - p) * sizeof(*b.held));
		b.n -= p;
	}
	b.next_seq = expect;
	return expect - 1;
}

void
gmt_bounded_push(const struct gmt_event *ev)
{
	if (b.n == b.cap) {
		size_t cap = b.cap ? b.cap * 2 : 4096;
		struct gmt_event *p = realloc(b.held, cap * sizeof(*p));
		if (!p) {
			(void)gmt_bounded_cut(ev->ts_ns, true);
			if (b.n == b.cap) { /* nothing was held: write it now */
				(void)gmt_live_apply(&b.truth, ev);
				b.cfg.emit(ev);
				if (ev->seq >= b.next_seq)
					b.next_seq = ev->seq + 1;
				return;
			}
		} else {
			b.held = p;
			b.cap = cap;
		}
	}
	b.held[b.n++] = *ev;
}

void
gmt_bounded_fini(void)
{
	free(b.held);
	free(b.pair);
	free(b.aseq);
	free(b.flag);
	free(b.cnt);
	free(b.pend);
	free(b.sites);
	free(b.site_index);
	free(b.breq);
	free(b.bbytes);
	gmt_blk_free(b.blk);
	gmt_live_free(&b.truth);
	memset(&b, 0, sizeof(b));
}
