/*
 * @brief The reorder window (reorder.h): a min-heap for the keys that come out of order, FIFO
 * runs beside it for the keys that come in order among themselves.
 */
#include "analysis/reader/reorder.h"
#include "util/alloc.h"

#include <errno.h>
#include <stdlib.h>

/* The heap orders small keys; the items wait in slots (a heap of whole events moves too much). */
struct reorder_key {
	uint64_t seq;
	uint32_t line;
	uint32_t slot; /* into slots; the top bit: a marker */
};

#define KEY_MARKER 0x80000000u

static bool
key_before(const struct reorder_key *a, const struct reorder_key *b)
{
	if (a->seq != b->seq)
		return a->seq < b->seq;
	if ((a->slot & KEY_MARKER) != (b->slot & KEY_MARKER))
		return !(a->slot & KEY_MARKER); /* events before markers of the same seq */
	return a->line < b->line;
}

void
gmt_reorder_init(struct gmt_reorder *w,
		 size_t window,
		 void (*deliver)(void *ctx, const struct gmt_reorder_item *item, bool late),
		 void *ctx)
{
	*w = (struct gmt_reorder){.window = window, .deliver = deliver, .ctx = ctx};
}

/* Hand @p item (whose key is @p k) on; a key that sorts before one already delivered is late. */
static void
deliver(struct gmt_reorder *w, const struct reorder_key *k, const struct gmt_reorder_item *item)
{
	struct reorder_key last = {w->last_seq, w->last_line, w->last_marker ? KEY_MARKER : 0};
	bool late = w->delivered_any && key_before(k, &last);

	if (!late) {
		w->last_seq = k->seq;
		w->last_line = k->line;
		w->last_marker = k->slot & KEY_MARKER;
		w->delivered_any = true;
	}
	w->deliver(w->ctx, item, late);
}

/* Take the smallest key off the heap. */
static struct reorder_key
heap_pop(struct gmt_reorder *w)
{
	struct reorder_key top = w->heap[0], last = w->heap[--w->nheap];
	size_t i = 0, n = w->nheap;

	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l + 1 < n && key_before(&w->heap[l + 1], &w->heap[l]) ? l + 1 : l;
		if (!key_before(&w->heap[m], &last))
			break;
		w->heap[i] = w->heap[m];
		i = m;
	}
	if (n)
		w->heap[i] = last;
	return top;
}

/*
 * The smallest waiting key: the heap's top or a run's head (each run is sorted); NULL if none.
 * *@p run: the run it heads, NULL for the heap's.
 */
static const struct reorder_key *
window_min(const struct gmt_reorder *w, const struct gmt_reorder_run **run)
{
	const struct reorder_key *min = w->nheap ? &w->heap[0] : NULL;

	*run = NULL;
	for (size_t i = 0; i < GMT_REORDER_RUNS; i++) {
		const struct gmt_reorder_run *r = &w->runs[i];

		if (r->n && (!min || key_before(&r->keys[r->head], min))) {
			min = &r->keys[r->head];
			*run = r;
		}
	}
	return min;
}

/* Deliver the smallest waiting key, the head of @p run or the heap's top (NULL); its slot goes
 * back to the free list. */
static void
deliver_from(struct gmt_reorder *w, const struct gmt_reorder_run *run)
{
	struct reorder_key k;
	uint32_t slot;

	if (run) {
		struct gmt_reorder_run *r = &w->runs[run - w->runs];

		k = r->keys[r->head];
		/* a compare, not a division by the ring's size, per key */
		if (++r->head == w->window + 1)
			r->head = 0;
		r->n--;
		w->nrun--;
	} else {
		k = heap_pop(w);
	}
	slot = k.slot & ~KEY_MARKER;
	deliver(w, &k, &w->slots[slot]);
	w->free_slots[w->nfree++] = slot;
}

static void
deliver_min(struct gmt_reorder *w)
{
	const struct gmt_reorder_run *run;

	window_min(w, &run);
	deliver_from(w, run);
}

/* May a key with @p seq go now? Yes when every smaller seq has gone (the tracer's seqs are
 * consecutive), and for a repeat or a late one, which would wait for nothing. */
static bool
may_go(const struct gmt_reorder *w, uint64_t seq)
{
	return seq <= (w->delivered_any ? w->last_seq : 0) + 1;
}

/* Deliver the waiting keys that may go now. */
static void
flow(struct gmt_reorder *w)
{
	const struct gmt_reorder_run *run;
	const struct reorder_key *k;

	/* nothing waits: the usual case, an item in order after one in order */
	if (!w->nheap && !w->nrun)
		return;
	while ((k = window_min(w, &run)) && may_go(w, k->seq))
		deliver_from(w, run);
}

static int
window_alloc(struct gmt_reorder *w)
{
	if (!(w->heap = gmt_realloc_array(NULL, w->window + 1, sizeof(*w->heap)))) {
		gmt_reorder_fini(w);
		return -ENOMEM;
	}
	return 0;
}

/* A free slot for a waiting item: one given back, else one never used, the slots grown (doubled,
 * up to window + 1) when all are; -ENOMEM when they cannot grow. */
static int
slot_take(struct gmt_reorder *w, uint32_t *slot)
{
	if (w->nfree) {
		*slot = w->free_slots[--w->nfree];
		return 0;
	}
	if (w->nslots == w->slots_cap) {
		size_t n = w->slots_cap ? w->slots_cap * 2 : 256;
		struct gmt_reorder_item *slots;
		uint32_t *free_slots;

		if (n > w->window + 1)
			n = w->window + 1;
		if (!(slots = gmt_realloc_array(w->slots, n, sizeof(*w->slots))))
			return -ENOMEM;
		w->slots = slots;
		if (!(free_slots = gmt_realloc_array(w->free_slots, n, sizeof(*w->free_slots))))
			return -ENOMEM;
		w->free_slots = free_slots;
		w->slots_cap = n;
	}
	*slot = (uint32_t)w->nslots++;
	return 0;
}

/* The @p i-th key of @p r from its head (i <= r->n): head + i wraps at most once. */
static struct reorder_key *
run_at(const struct gmt_reorder *w, const struct gmt_reorder_run *r, size_t i)
{
	size_t j = r->head + i;

	return &r->keys[j <= w->window ? j : j - (w->window + 1)];
}

/*
 * The run @p key may join: of those whose last key is not after it, the one whose last key is
 * the largest (so each thread's lines keep to a run of their own), else an empty run; NULL when
 * none may (or an empty run's ring cannot be had: the heap takes the key).
 */
static struct gmt_reorder_run *
run_for(struct gmt_reorder *w, const struct reorder_key *key)
{
	struct gmt_reorder_run *best = NULL, *empty = NULL;
	const struct reorder_key *best_last = NULL;

	for (size_t i = 0; i < GMT_REORDER_RUNS; i++) {
		struct gmt_reorder_run *r = &w->runs[i];
		const struct reorder_key *last;

		if (!r->n) {
			if (!empty)
				empty = r;
			continue;
		}
		last = run_at(w, r, r->n - 1);
		if (!key_before(key, last) && (!best || key_before(best_last, last))) {
			best = r;
			best_last = last;
		}
	}
	if (best)
		return best;
	if (empty && !empty->keys)
		empty->keys = gmt_realloc_array(NULL, w->window + 1, sizeof(*empty->keys));
	return empty && empty->keys ? empty : NULL;
}

/*
 * A waiting key not smaller than the last one of a run joins that run in O(1) (lines of one
 * thread come in seq order, and the writer drains a few threads' runs in turn); the others go
 * through the heap. When `window` keys wait, the smallest goes.
 */
int
gmt_reorder_push(struct gmt_reorder *w, const struct gmt_reorder_item *item)
{
	struct reorder_key key = {item->seq, item->line, item->marker ? KEY_MARKER : 0};
	struct gmt_reorder_run *run;
	size_t i;

	if (may_go(w, item->seq)) {
		deliver(w, &key, item);
		flow(w);
		return 0;
	}
	uint32_t slot;

	if ((!w->heap && window_alloc(w) != 0) || slot_take(w, &slot) != 0)
		return -ENOMEM;
	key.slot |= slot;
	w->slots[slot] = *item;
	if ((run = run_for(w, &key))) {
		*run_at(w, run, run->n) = key;
		run->n++;
		w->nrun++;
	} else {
		for (i = w->nheap++; i > 0 && key_before(&key, &w->heap[(i - 1) / 2]);
		     i = (i - 1) / 2)
			w->heap[i] = w->heap[(i - 1) / 2];
		w->heap[i] = key;
	}
	if (w->nheap + w->nrun >= w->window) {
		deliver_min(w);
		flow(w);
	}
	return 0;
}

void
gmt_reorder_drain(struct gmt_reorder *w)
{
	while (w->nheap || w->nrun)
		deliver_min(w);
}

void
gmt_reorder_fini(struct gmt_reorder *w)
{
	free(w->heap);
	for (size_t i = 0; i < GMT_REORDER_RUNS; i++) {
		free(w->runs[i].keys);
		w->runs[i] = (struct gmt_reorder_run){0};
	}
	free(w->slots);
	free(w->free_slots);
	w->heap = NULL;
	w->slots = NULL;
	w->free_slots = NULL;
	w->nheap = w->nrun = w->nfree = w->nslots = w->slots_cap = 0;
}
