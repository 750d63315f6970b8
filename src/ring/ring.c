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
