/*
 * @brief A bounded, lock-free multi-producer / single-consumer queue of events.
 *
 * Application threads push events from inside their CUDA calls; the writer thread pops them.
 * Per-slot sequence numbers after D. Vyukov's bounded queue, reduced to one consumer, and with
 * the consumer writing nothing into the slots:
 *
 *   - Producers are lock-free: a push claims a position with one compare-and-swap on `head` and
 *     never waits for another thread. When the ring is full it fails at once (the caller counts
 *     a drop); the application never blocks on the tracer. A push copies an event into its
 *     slot; gmt_ring_claim() and gmt_ring_commit() let the caller write it there in place (the
 *     PyTorch layer's block events).
 *   - The consumer is wait-free: it reads the slot at `tail` and sees whether it is committed.
 *   - A slot's `turn` is pos + 1 once the producer of position pos has written it (a release
 *     store after the event's bytes). Zero-filled memory is an empty ring: no slot's turn is
 *     pos + 1 for any pos of its lap, so fresh anonymous memory needs no initialisation pass, and
 *     a ring only costs the memory that traffic has actually touched.
 *   - Fullness comes from `tail`, which the consumer publishes after each pop, not from the
 *     slot: a producer would otherwise load a slot's turn that the consumer wrote a lap ago, a
 *     cache line in the writer's core, and wait for it inside the application's call. Producers
 *     keep the tail they last read in `tail_seen` (their own cache line) and read `tail` again
 *     only when that view says the ring is full, about once per lap; they only store into
 *     slots, which does not stall them.
 *
 * The caller owns the memory (gmt_ring_bytes()), so the tracer can mmap it: no malloc in a hook.
 * Positions are 64-bit and run free; they are only compared by difference.
 */
#ifndef GMT_RING_RING_H
#define GMT_RING_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/event.h"

#define GMT_CACHELINE 64

struct gmt_ring_slot {
	_Atomic uint64_t turn; /* pos + 1 once the event of position pos is in it */
	struct gmt_event ev;
};

struct gmt_ring {
	_Alignas(GMT_CACHELINE) _Atomic uint64_t head;	    /* next position producers claim */
	_Alignas(GMT_CACHELINE) _Atomic uint64_t tail_seen; /* producers' last view of tail */
	_Alignas(GMT_CACHELINE) _Atomic uint64_t tail;	    /* next position the consumer reads */
	_Alignas(GMT_CACHELINE) uint64_t mask;
	struct gmt_ring_slot *slots;
};

/** Bytes of slot storage for @p nslots slots (a power of two). */
size_t gmt_ring_bytes(size_t nslots);

/**
 * Initialize over caller-owned, suitably aligned, ZERO-FILLED @p mem of gmt_ring_bytes(nslots)
 * (fresh anonymous mmap memory is). pre: nslots is a power of 2. Touches none of @p mem.
 */
void gmt_ring_init(struct gmt_ring *ring, void *mem, size_t nslots);

/** Copy @p ev into the ring. Lock-free; returns false at once when the ring is full. */
static inline bool gmt_ring_push(struct gmt_ring *ring, const struct gmt_event *ev);

/**
 * gmt_ring_push() of @p ev's core alone (GMT_EVENT_CORE_BYTES, format/event.h): for an event
 * whose other bytes are zero, which the consumer's copy gets back (gmt_ring_pop()). The slot
 * is marked GMT_EV_CORE_ONLY; @p ev's bytes past the core are not read.
 */
static inline bool gmt_ring_push_core(struct gmt_ring *ring, const struct gmt_event *ev);

/**
 * Claim the next position for an event the caller writes in place (no copy): returns its slot's
 * event, which still holds an old event's bytes (the caller writes every byte of it), and the
 * position in @p pos; NULL at once when the ring is full. Lock-free, as push. The consumer stops
 * at a claimed slot until gmt_ring_commit(): fill it and commit straight away. A claim also
 * prefetches the next position's slot (a lap cold), for the next event's stores.
 */
static inline struct gmt_event *gmt_ring_claim(struct gmt_ring *ring, uint64_t *pos);

/** Publish the event of position @p pos (from gmt_ring_claim()) to the consumer. */
static inline void gmt_ring_commit(struct gmt_ring *ring, uint64_t pos);

/** Take the oldest committed event into @p out. Single consumer only; false when none is ready. */
bool gmt_ring_pop(struct gmt_ring *ring, struct gmt_event *out);

/** Events claimed but not yet popped (approximate while producers run). */
uint64_t gmt_ring_pending(struct gmt_ring *ring);

// --- the producer's side, inline: it runs in every recorded call ---------------------------------

static inline struct gmt_event *
gmt_ring_claim(struct gmt_ring *ring, uint64_t *pos_out)
{
	uint64_t nslots = ring->mask + 1;
	uint64_t pos = atomic_load_explicit(&ring->head, memory_order_relaxed);

	for (;;) {
		/* Acquire pairs with the release of whoever stored tail_seen (below), and through
		 * it with the consumer's release of tail: the old events of slots before tail have
		 * been copied out before we overwrite them. */
		uint64_t tail = atomic_load_explicit(&ring->tail_seen, memory_order_acquire);
		if (pos - tail >= nslots) {
			/* Our view says full: look at the consumer's tail itself (once per lap). */
			tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
			if (pos - tail >= nslots)
				return NULL; /* the slot still holds the event of pos - nslots */
			/* Release: a producer that acquires this view also sees the copies out. A
			 * racing producer may store an older tail: a view only ever lags, never
			 * leads. */
			atomic_store_explicit(&ring->tail_seen, tail, memory_order_release);
		}
		/* Relaxed is enough: the slot's turn, not head, publishes the event. */
		if (atomic_compare_exchange_weak_explicit(
			&ring->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed))
			break;
		/* pos was reloaded by the failed CAS */
	}
	/* The next position's slot, for the next event: a lap ago the consumer read it, and it
	 * has likely left every cache since. Its stores would miss, and the next locked
	 * instruction (a claim, the seq's increment) waits for them; a prefetch now overlaps
	 * that with what the caller does until then (docs/performance.md). */
	const char *next = (const char *)&ring->slots[(pos + 1) & ring->mask];
#pragma GCC unroll 8 /* a constant count: five prefetches, no loop */
	for (size_t off = 0; off < sizeof(struct gmt_ring_slot) + GMT_CACHELINE - 1;
	     off += GMT_CACHELINE)
		__builtin_prefetch(next + off, 1, 3);
	*pos_out = pos;
	return &ring->slots[pos & ring->mask].ev;
}

static inline void
gmt_ring_commit(struct gmt_ring *ring, uint64_t pos)
{
	/* Release: the event's bytes are visible before the consumer sees the slot as committed. */
	atomic_store_explicit(&ring->slots[pos & ring->mask].turn, pos + 1, memory_order_release);
}

static inline bool
gmt_ring_push(struct gmt_ring *ring, const struct gmt_event *ev)
{
	uint64_t pos;
	struct gmt_event *slot = gmt_ring_claim(ring, &pos);

	if (!slot)
		return false;
	memcpy(slot, ev, sizeof(*ev));
	gmt_ring_commit(ring, pos);
	return true;
}

static inline bool
gmt_ring_push_core(struct gmt_ring *ring, const struct gmt_event *ev)
{
	uint64_t pos;
	struct gmt_event *slot = gmt_ring_claim(ring, &pos);

	if (!slot)
		return false;
	memcpy(slot, ev, GMT_EVENT_CORE_BYTES);
	slot->flags = ev->flags | GMT_EV_CORE_ONLY; /* a store: no load of the slot's line */
	gmt_ring_commit(ring, pos);
	return true;
}

#endif
