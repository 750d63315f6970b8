/*
 * @brief Bounded MPSC ring (see ring.h for the protocol).
 */
#include "ring/ring.h"

#include <string.h>

size_t
gmt_ring_bytes(size_t nslots)
{
	return nslots * sizeof(struct gmt_ring_slot);
}

void
gmt_ring_init(struct gmt_ring *ring, void *mem, size_t nslots)
{
	ring->slots = mem;
	ring->mask = nslots - 1;
	atomic_store_explicit(&ring->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->tail_seen, 0, memory_order_relaxed);
	/* Zero-filled slots already say "nothing committed": nothing to write. */
	atomic_store_explicit(&ring->head, 0, memory_order_release);
}

struct gmt_event *
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

void
gmt_ring_commit(struct gmt_ring *ring, uint64_t pos)
{
	/* Release: the event's bytes are visible before the consumer sees the slot as committed. */
	atomic_store_explicit(&ring->slots[pos & ring->mask].turn, pos + 1, memory_order_release);
}

bool
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

bool
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

bool
gmt_ring_pop(struct gmt_ring *ring, struct gmt_event *out)
{
	uint64_t pos = atomic_load_explicit(&ring->tail, memory_order_relaxed); /* ours alone */
	struct gmt_ring_slot *slot = &ring->slots[pos & ring->mask];

	/* Acquire pairs with the producer's release: the event's bytes are complete. */
	if (atomic_load_explicit(&slot->turn, memory_order_acquire) != pos + 1)
		return false; /* empty, or the producer of pos has not committed yet */
	if (slot->ev.flags & GMT_EV_CORE_ONLY) {
		/* the rest of the slot is an older event's: the core's event has zeros there */
		memcpy(out, &slot->ev, GMT_EVENT_CORE_BYTES);
		memset((char *)out + GMT_EVENT_CORE_BYTES, 0, sizeof(*out) - GMT_EVENT_CORE_BYTES);
		out->flags &= ~(uint32_t)GMT_EV_CORE_ONLY;
	} else {
		memcpy(out, &slot->ev, sizeof(*out));
	}
	/* Release: we are done reading the slot before a producer of pos + nslots may write it. */
	atomic_store_explicit(&ring->tail, pos + 1, memory_order_release);
	return true;
}

uint64_t
gmt_ring_pending(struct gmt_ring *ring)
{
	return atomic_load_explicit(&ring->head, memory_order_relaxed) -
	       atomic_load_explicit(&ring->tail, memory_order_relaxed);
}
