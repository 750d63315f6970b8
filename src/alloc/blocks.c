/*
 * @brief PyTorch's caching allocator replayed from block lines (see blocks.h).
 *
 * Segments are kept sorted by address, each with its blocks sorted by address: a segment has
 * at most a few thousand blocks (512-byte blocks of a 2 MiB small segment), so inserting into or
 * removing from its array is cheap, and a block is found by two binary searches. The running
 * figures (allocated, requested, active, reserved) are kept per device as lines are applied; the
 * free-block figures (inactive split, largest free) are computed when asked (at markers, OOMs and
 * the end: rarely).
 */
#include "alloc/blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/torch_entry.h"

#define KMIN 512u
#define KSMALL (1u << 20)

enum state { FREE = GMT_BLK_FREE, ALLOCATED = GMT_BLK_ALLOCATED, PENDING = GMT_BLK_PENDING };

struct blk {
	uint64_t addr, size, requested, seq;
	uint32_t stack;
	uint8_t state;
};

struct seg {
	uint64_t start, size, stream;
	uint64_t pool[2];
	int32_t device;
	bool large, expandable, orphan; /* orphan: made up for a block outside every segment */
	struct blk *b;
	size_t n, cap;
};

struct dev_totals {
	uint64_t allocated, requested, allocations, active, reserved, segments;
};

struct gmt_blk_model {
	bool expandable;
	bool gaps; /* blocks left out (a bounded trace): one placed inside a free block fits */
	struct seg *s;
	size_t n, cap;
	struct dev_totals t[GMT_BLK_MAX_DEVICES + 1]; /* [0]: unknown device */
	uint64_t inconsistent;
};

static struct dev_totals *
dt(struct gmt_blk_model *m, int32_t device)
{
	return &m->t[device >= 0 && device < GMT_BLK_MAX_DEVICES ? device + 1 : 0];
}

uint64_t
gmt_blk_round(uint64_t requested)
{
	return requested < KMIN ? KMIN : (requested + KMIN - 1) / KMIN * KMIN;
}

struct gmt_blk_model *
gmt_blk_new(bool expandable)
{
	struct gmt_blk_model *m = calloc(1, sizeof(*m));
	if (m)
		m->expandable = expandable;
	return m;
}

void
gmt_blk_expect_gaps(struct gmt_blk_model *m)
{
	m->gaps = true;
}

void
gmt_blk_free(struct gmt_blk_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->s[i].b);
	free(m->s);
	free(m);
}

uint64_t
gmt_blk_inconsistent(const struct gmt_blk_model *m)
{
	return m->inconsistent;
}

// --- finding ------------------------------------------------------------------------------------

/* The index of the last segment starting at or below @p addr, or (size_t)-1. */
static size_t
seg_floor(const struct gmt_blk_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->s[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : (size_t)-1;
}

static struct seg *
seg_of(struct gmt_blk_model *m, uint64_t addr)
{
	size_t i = seg_floor(m, addr);
	if (i == (size_t)-1)
		return NULL;
	struct seg *s = &m->s[i];
	return addr - s->start < s->size ? s : NULL;
}

/* The index of the block of @p s containing @p addr, or (size_t)-1. */
static size_t
blk_of(const struct seg *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->b[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return (size_t)-1;
	const struct blk *b = &s->b[lo - 1];
	return addr - b->addr < b->size ? lo - 1 : (size_t)-1;
}

// --- editing ------------------------------------------------------------------------------------

static int
blk_insert(struct seg *s, size_t at, struct blk b)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		struct blk *nb = realloc(s->b, cap * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		s->b = nb;
		s->cap = cap;
	}
	memmove(&s->b[at + 1], &s->b[at], (s->n - at) * sizeof(*s->b));
	s->b[at] = b;
	s->n++;
	return 0;
}

static void
blk_remove(struct seg *s, size_t at)
{
	memmove(&s->b[at], &s->b[at + 1], (s->n - at - 1) * sizeof(*s->b));
	s->n--;
}

/* Merge the free block at @p i with free neighbours that touch it. */
static void
merge(struct seg *s, size_t i)
{
	if (i + 1 < s->n && s->b[i + 1].state == FREE &&
	    s->b[i].addr + s->b[i].size == s->b[i + 1].addr) {
		s->b[i].size += s->b[i + 1].size;
		blk_remove(s, i + 1);
	}
	if (i > 0 && s->b[i - 1].state == FREE &&
	    s->b[i - 1].addr + s->b[i - 1].size == s->b[i].addr) {
		s->b[i - 1].size += s->b[i].size;
		blk_remove(s, i);
	}
}

static struct seg *
seg_insert(struct gmt_blk_model *m, const struct gmt_blk_event *e, uint64_t size)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct seg *ns = realloc(m->s, cap * sizeof(*ns));
		if (!ns)
			return NULL;
		m->s = ns;
		m->cap = cap;
	}
	size_t at = seg_floor(m, e->ptr) + 1; /* after the last one starting at or below */
	memmove(&m->s[at + 1], &m->s[at], (m->n - at) * sizeof(*m->s));
	m->n++;
	struct seg *s = &m->s[at];
	*s = (struct seg){
	    .start = e->ptr,
	    .size = size,
	    .stream = e->stream,
	    .pool = {e->pool[0], e->pool[1]},
	    .device = e->device,
	    .large = e->large,
	    .expandable = e->expandable || m->expandable,
	};
	struct dev_totals *t = dt(m, e->device);
	t->reserved += size;
	t->segments++;
	return s;
}

/* Take the live blocks of segment @p s off the figures (a segment freed under them). */
static void
drop_blocks(struct gmt_blk_model *m, struct seg *s)
{
	struct dev_totals *t = dt(m, s->device);
	for (size_t i = 0; i < s->n; i++) {
		if (s->b[i].state == ALLOCATED) {
			t->allocated -= s->b[i].size;
			t->requested -= s->b[i].requested;
			t->allocations--;
			m->inconsistent++;
		}
		if (s->b[i].state != FREE)
			t->active -= s->b[i].size;
	}
}

static void
seg_remove(struct gmt_blk_model *m, struct seg *s)
{
	struct dev_totals *t = dt(m, s->device);
	drop_blocks(m, s);
	if (!s->orphan) {
		t->reserved -= s->size;
		t->segments--;
	}
	free(s->b);
	size_t at = (size_t)(s - m->s);
	memmove(&m->s[at], &m->s[at + 1], (m->n - at - 1) * sizeof(*m->s));
	m->n--;
}

// --- the actions --------------------------------------------------------------------------------

static int
segment_alloc(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	int rc = 0;
	/* memory handed out again: segments the trace missed the end of (any that overlap) */
	for (;;) {
		size_t i = seg_floor(m, e->ptr + e->size - 1);
		if (i == (size_t)-1 || m->s[i].start + m->s[i].size <= e->ptr)
			break;
		seg_remove(m, &m->s[i]);
		rc = -EINVAL;
		m->inconsistent++;
	}
	struct seg *s = seg_insert(m, e, e->size);
	if (!s)
		return -ENOMEM;
	if (e->action != GMT_TORCH_STATE_SEGMENT &&
	    blk_insert(s, 0, (struct blk){e->ptr, e->size, 0, e->seq, 0, FREE}))
		return -ENOMEM;
	return rc;
}

/* The segment ending exactly at @p addr with @p e's device, stream and pool, or NULL. */
static struct seg *
run_before(struct gmt_blk_model *m, const struct gmt_blk_event *e, uint64_t addr)
{
	struct seg *s = addr ? seg_of(m, addr - 1) : NULL;

	if (!s || s->start + s->size != addr || s->pool[0] != e->pool[0] ||
	    s->pool[1] != e->pool[1] || s->stream != e->stream || s->device != e->device)
		return NULL;
	return s;
}

/*
 * Expandable segments: a mapped range extends the run of mapped memory it touches (the same
 * device, stream and pool), and joins the run that starts where it ends; else it is a run of its
 * own. A run is what memory_snapshot() lists as a segment.
 */
static int
segment_map(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	struct seg *s = run_before(m, e, e->ptr);

	if (!s) {
		struct gmt_blk_event x = *e;
		x.expandable = true;
		int rc = segment_alloc(m, &x);
		if (rc == -ENOMEM)
			return rc;
		s = seg_of(m, e->ptr);
		if (!s)
			return -EINVAL;
	} else {
		s->size += e->size;
		dt(m, s->device)->reserved += e->size;
		if (blk_insert(s, s->n, (struct blk){e->ptr, e->size, 0, e->seq, 0, FREE}))
			return -ENOMEM;
		merge(s, s->n - 1);
	}
	/* the run that starts right after it joins it */
	size_t at = (size_t)(s - m->s);
	if (at + 1 < m->n) {
		struct seg *next = &m->s[at + 1];
		if (next->start == s->start + s->size && next->device == s->device &&
		    next->stream == s->stream && next->pool[0] == s->pool[0] &&
		    next->pool[1] == s->pool[1] && !next->orphan && !s->orphan) {
			size_t join = s->n;
			for (size_t k = 0; k < next->n; k++)
				if (blk_insert(s, s->n, next->b[k]))
					return -ENOMEM;
			s->size += next->size;
			free(next->b);
			memmove(next, next + 1, (m->n - at - 2) * sizeof(*m->s));
			m->n--;
			dt(m, s->device)->segments--;
			if (join < s->n && s->b[join].state == FREE)
				merge(s, join);
		}
	}
	return 0;
}

/* Remove @p s's blocks in [lo, hi) (free ones: unmapping live memory is counted). */
static int
cut_blocks(struct gmt_blk_model *m, struct seg *s, uint64_t lo, uint64_t hi)
{
	int rc = 0;

	for (size_t i = 0; i < s->n;) {
		struct blk *b = &s->b[i];
		uint64_t blo = b->addr, bhi = b->addr + b->size;

		if (bhi <= lo || blo >= hi) {
			i++;
			continue;
		}
		if (b->state != FREE) {
			rc = -EINVAL;
			m->inconsistent++;
		}
		if (blo < lo && bhi > hi) { /* the range inside one block: split around it */
			struct blk tail = *b;
			tail.addr = hi;
			tail.size = bhi - hi;
			b->size = lo - blo;
			if (blk_insert(s, i + 1, tail))
				return -ENOMEM;
			break;
		}
		if (blo < lo) {
			b->size = lo - blo;
			i++;
		} else if (bhi > hi) {
			b->size = bhi - hi;
			b->addr = hi;
			i++;
		} else {
			blk_remove(s, i);
		}
	}
	return rc;
}

/*
 * Expandable segments: an unmapped range leaves the run's memory before it and after it as two
 * runs (one, or none, when it was at an end). A range over several runs is cut from each.
 */
static int
segment_unmap(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	uint64_t lo = e->ptr, hi = e->ptr + e->size;
	int rc = 0;

	while (lo < hi) {
		struct seg *s = seg_of(m, lo);
		if (!s) {
			m->inconsistent++;
			return -EINVAL;
		}
		uint64_t end = s->start + s->size, piece = hi < end ? hi : end;
		int err = cut_blocks(m, s, lo, piece);
		if (err == -ENOMEM)
			return err;
		if (err)
			rc = err;
		dt(m, s->device)->reserved -= piece - lo;
		if (lo > s->start &&
		    piece < end) { /* a hole in the middle: the rest is a new run */
			struct seg tail = *s;
			size_t at = (size_t)(s - m->s), k = 0;

			while (k < s->n && s->b[k].addr < piece)
				k++;
			tail.start = piece;
			tail.size = end - piece;
			tail.n = tail.cap = s->n - k;
			tail.b = malloc((tail.n ? tail.n : 1) * sizeof(*tail.b));
			if (!tail.b)
				return -ENOMEM;
			if (tail.n)
				memcpy(tail.b, s->b + k, tail.n * sizeof(*tail.b));
			s->n = k;
			s->size = lo - s->start;
			if (m->n == m->cap) {
				size_t cap = m->cap * 2;
				struct seg *ns = realloc(m->s, cap * sizeof(*ns));
				if (!ns) {
					free(tail.b);
					return -ENOMEM;
				}
				m->s = ns;
				m->cap = cap;
			}
			memmove(&m->s[at + 2], &m->s[at + 1], (m->n - at - 1) * sizeof(*m->s));
			m->s[at + 1] = tail;
			m->n++;
			dt(m, tail.device)->segments++;
		} else if (lo == s->start && piece < end) { /* at its start: the run begins later */
			s->start = piece;
			s->size = end - piece;
		} else if (lo > s->start) { /* at its end */
			s->size = lo - s->start;
		} else { /* all of it */
			s->size = 0;
			seg_remove(m, s);
		}
		lo = piece;
	}
	return rc;
}

static int
block_state(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	struct seg *s = seg_of(m, e->ptr);
	if (!s) {
		m->inconsistent++;
		return -EINVAL;
	}
	size_t at = s->n;
	while (at > 0 && s->b[at - 1].addr > e->ptr)
		at--;
	/* inside its segment, overlapping no block listed before it */
	if (e->size == 0 || e->ptr + e->size > s->start + s->size ||
	    (at > 0 && s->b[at - 1].addr + s->b[at - 1].size > e->ptr) ||
	    (at < s->n && s->b[at].addr < e->ptr + e->size)) {
		m->inconsistent++;
		return -EINVAL;
	}
	uint8_t st = e->allocated ? ALLOCATED : e->active ? PENDING : FREE;
	if (blk_insert(
		s, at,
		(struct blk){e->ptr, e->size, e->allocated ? e->requested : 0, e->seq, 0, st}))
		return -ENOMEM;
	struct dev_totals *t = dt(m, s->device);
	if (st == ALLOCATED) {
		t->allocated += e->size;
		t->requested += e->requested;
		t->allocations++;
	}
	if (st != FREE)
		t->active += e->size;
	return 0;
}

static int
alloc(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	uint64_t r = gmt_blk_round(e->size);
	int rc = 0;
	struct seg *s = seg_of(m, e->ptr);
	if (!s) { /* outside every segment: a made-up one, reserving nothing */
		struct gmt_blk_event x = *e;
		m->inconsistent++;
		rc = -EINVAL;
		if (!(s = seg_insert(m, &x, r)))
			return -ENOMEM;
		s->orphan = true;
		struct dev_totals *t = dt(m, e->device);
		t->reserved -= r;
		t->segments--;
		if (blk_insert(s, 0, (struct blk){e->ptr, r, 0, e->seq, 0, FREE}))
			return -ENOMEM;
	}
	size_t i = blk_of(s, e->ptr);
	if (i == (size_t)-1 || s->b[i].state != FREE) {
		/* a block the trace says is in use, or a hole in the segment's blocks */
		m->inconsistent++;
		return -EINVAL;
	}
	if (s->b[i].addr != e->ptr) { /* not at a free block's start: split there */
		struct blk tail = s->b[i];
		tail.addr = e->ptr;
		tail.size = s->b[i].addr + s->b[i].size - e->ptr;
		s->b[i].size = e->ptr - s->b[i].addr;
		if (blk_insert(s, i + 1, tail))
			return -ENOMEM;
		i++;
		if (!m->gaps) {
			m->inconsistent++;
			rc = -EINVAL;
		}
	}
	struct blk *b = &s->b[i];
	if (b->size < r) {
		r = b->size; /* smaller than the rounding says: the trace knows better */
		m->inconsistent++;
		rc = -EINVAL;
	}
	uint64_t rest = b->size - r;
	bool small_rules = r <= KSMALL || s->expandable;
	bool split = small_rules ? rest >= KMIN : rest > KSMALL;
	if (split) {
		struct blk tail = {b->addr + r, rest, 0, e->seq, 0, FREE};
		b->size = r;
		if (blk_insert(s, i + 1, tail))
			return -ENOMEM;
		b = &s->b[i];
	}
	b->state = ALLOCATED;
	b->requested = e->size;
	b->seq = e->seq;
	b->stack = e->stack;
	struct dev_totals *t = dt(m, s->device);
	t->allocated += b->size;
	t->requested += b->requested;
	t->allocations++;
	t->active += b->size;
	return rc;
}

static struct blk *
live_block(struct gmt_blk_model *m, uint64_t ptr, struct seg **sp, size_t *ip)
{
	struct seg *s = seg_of(m, ptr);
	size_t i = s ? blk_of(s, ptr) : (size_t)-1;
	if (i == (size_t)-1 || s->b[i].addr != ptr || s->b[i].state == FREE)
		return NULL;
	*sp = s;
	*ip = i;
	return &s->b[i];
}

static int
free_requested(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	struct seg *s;
	size_t i;
	struct blk *b = live_block(m, e->ptr, &s, &i);
	if (!b || b->state != ALLOCATED) {
		m->inconsistent++;
		return -EINVAL;
	}
	struct dev_totals *t = dt(m, s->device);
	t->allocated -= b->size;
	t->requested -= b->requested;
	t->allocations--;
	b->state = PENDING;
	return 0;
}

static int
free_completed(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	struct seg *s;
	size_t i;
	int rc = 0;
	struct blk *b = live_block(m, e->ptr, &s, &i);
	if (!b) {
		m->inconsistent++;
		return -EINVAL;
	}
	struct dev_totals *t = dt(m, s->device);
	if (b->state == ALLOCATED) { /* its request was not in the trace */
		t->allocated -= b->size;
		t->requested -= b->requested;
		t->allocations--;
		m->inconsistent++;
		rc = -EINVAL;
	}
	t->active -= b->size;
	b->state = FREE;
	b->requested = 0;
	b->stack = 0;
	merge(s, i);
	if (s->orphan && s->n == 1 && s->b[0].state == FREE)
		seg_remove(m, s);
	return rc;
}

int
gmt_blk_apply(struct gmt_blk_model *m, const struct gmt_blk_event *e)
{
	struct seg *s;

	/* a range that wraps around the address space, an empty segment or block, a request no
	 * rounding can hold: no allocator made it (a damaged trace) */
	bool ranged = e->action != GMT_TORCH_OOM && e->action != GMT_TORCH_SNAPSHOT &&
		      e->action != GMT_TORCH_FREE_REQUESTED &&
		      e->action != GMT_TORCH_FREE_COMPLETED && e->action != GMT_TORCH_SEGMENT_FREE;
	uint64_t span = e->action == GMT_TORCH_ALLOC ? e->size + KMIN : e->size;
	if (ranged && (span < e->size || e->ptr > UINT64_MAX - span ||
		       (e->size == 0 && e->action != GMT_TORCH_ALLOC))) {
		m->inconsistent++;
		return -EINVAL;
	}
	switch (e->action) {
	case GMT_TORCH_SEGMENT_ALLOC:
	case GMT_TORCH_STATE_SEGMENT: return segment_alloc(m, e);
	case GMT_TORCH_SEGMENT_FREE:
		if (!(s = seg_of(m, e->ptr)) || s->start != e->ptr) {
			m->inconsistent++;
			return -EINVAL;
		}
		seg_remove(m, s);
		return 0;
	case GMT_TORCH_SEGMENT_MAP: return segment_map(m, e);
	case GMT_TORCH_SEGMENT_UNMAP: return segment_unmap(m, e);
	case GMT_TORCH_STATE_BLOCK: return block_state(m, e);
	case GMT_TORCH_ALLOC: return alloc(m, e);
	case GMT_TORCH_FREE_REQUESTED: return free_requested(m, e);
	case GMT_TORCH_FREE_COMPLETED: return free_completed(m, e);
	default: /* snapshot, oom: no change */ return 0;
	}
}

// --- figures ------------------------------------------------------------------------------------

void
gmt_blk_totals(const struct gmt_blk_model *m, int32_t device, struct gmt_blk_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t d = 0; d <= GMT_BLK_MAX_DEVICES; d++) {
		if (device >= 0 && d != (size_t)device + 1)
			continue;
		const struct dev_totals *t = &m->t[d];
		out->allocated_bytes += t->allocated;
		out->requested_bytes += t->requested;
		out->allocations += t->allocations;
		out->active_bytes += t->active;
		out->reserved_bytes += t->reserved;
		out->segments += t->segments;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct seg *s = &m->s[i];
		if ((device >= 0 && s->device != device) || s->orphan)
			continue;
		bool used = false;
		for (size_t k = 0; k < s->n && !used; k++)
			used = s->b[k].state != FREE;
		for (size_t k = 0; k < s->n; k++) {
			if (s->b[k].state != FREE)
				continue;
			out->free_pieces++;
			if (s->b[k].size > out->largest_free)
				out->largest_free = s->b[k].size;
			if (used)
				out->inactive_split_bytes += s->b[k].size;
		}
	}
}

uint64_t
gmt_blk_size_of(const struct gmt_blk_model *m, uint64_t ptr)
{
	struct seg *s;
	size_t i;
	const struct blk *b = live_block((struct gmt_blk_model *)m, ptr, &s, &i);
	return b ? b->size : 0;
}

size_t
gmt_blk_blocks(const struct gmt_blk_model *m, struct gmt_blk_view *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct seg *s = &m->s[i];
		for (size_t k = 0; k < s->n; k++, n++) {
			if (n >= max)
				continue;
			const struct blk *b = &s->b[k];
			out[n] = (struct gmt_blk_view){
			    .ptr = b->addr,
			    .size = b->size,
			    .requested = b->requested,
			    .seq = b->seq,
			    .stream = s->stream,
			    .segment = s->start,
			    .pool = {s->pool[0], s->pool[1]},
			    .stack = b->stack,
			    .device = s->device,
			    .state = b->state,
			};
		}
	}
	return n;
}

void
gmt_blk_free_in(const struct gmt_blk_model *m,
		int32_t device,
		uint64_t stream,
		const uint64_t pool[2],
		uint64_t *free_bytes,
		uint64_t *pieces,
		uint64_t *largest)
{
	*free_bytes = *pieces = *largest = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct seg *s = &m->s[i];

		if (s->orphan || s->device != device || s->stream != stream ||
		    s->pool[0] != pool[0] || s->pool[1] != pool[1])
			continue;
		for (size_t k = 0; k < s->n; k++) {
			if (s->b[k].state != FREE)
				continue;
			*free_bytes += s->b[k].size;
			(*pieces)++;
			if (s->b[k].size > *largest)
				*largest = s->b[k].size;
		}
	}
}

uint32_t
gmt_blk_stack_of(const struct gmt_blk_model *m, uint64_t ptr, uint64_t *size, uint64_t *requested)
{
	struct seg *s;
	size_t i;
	const struct blk *b = live_block((struct gmt_blk_model *)m, ptr, &s, &i);

	*size = b ? b->size : 0;
	*requested = b ? b->requested : 0;
	return b ? b->stack : 0;
}

void
gmt_blk_running(const struct gmt_blk_model *m,
		int32_t device,
		uint64_t *allocated,
		uint64_t *requested,
		uint64_t *reserved)
{
	const struct dev_totals *t = dt((struct gmt_blk_model *)m, device);

	*allocated = t->allocated;
	*requested = t->requested;
	*reserved = t->reserved;
}

size_t
gmt_blk_segments(const struct gmt_blk_model *m, struct gmt_blk_segview *out, size_t max)
{
	size_t n = 0, first = 0;

	for (size_t i = 0; i < m->n; i++, n++) {
		const struct seg *s = &m->s[i];

		if (n < max)
			out[n] = (struct gmt_blk_segview){
			    .start = s->start,
			    .size = s->size,
			    .stream = s->stream,
			    .pool = {s->pool[0], s->pool[1]},
			    .device = s->device,
			    .large = s->large || s->size > (2u << 20),
			    .expandable = s->expandable,
			    .first = first,
			    .nblocks = s->n,
			};
		first += s->n;
	}
	return n;
}
