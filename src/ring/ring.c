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
	ring->tail = 0;
	/* Zero-filled slots already say "free for the first lap": nothing to write. */
	atomic_store_explicit(&ring->head, 0, memory_order_release);
}

bool
gmt_ring_push(struct gmt_ring *ring, const struct gmt_event *ev)
{
	uint64_t pos = atomic_load_explicit(&ring->head, memory_order_relaxed);
	struct gmt_ring_slot *slot;

	for (;;) {
		slot = &ring->slots[pos & ring->mask];
		/* Acquire pairs with the consumer's release in pop: the slot's old event has been
		 * copied out before we overwrite it. */
		uint64_t turn = atomic_load_explicit(&slot->turn, memory_order_acquire) + (pos & ring->mask);
		int64_t diff = (int64_t)(turn - pos);
		if (diff == 0) {
			/* Relaxed is enough: the slot's turn, not head, publishes the event. */
			if (atomic_compare_exchange_weak_explicit(&ring->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			/* pos was reloaded by the failed CAS */
		} else if (diff < 0) {
			/* The slot still holds the event of pos - nslots: the ring is full. */
			return false;
		} else {
			/* Another producer took pos; catch up. */
			pos = atomic_load_explicit(&ring->head, memory_order_relaxed);
		}
	}
	memcpy(&slot->ev, ev, sizeof(*ev));
	/* Release: the event's bytes are visible before the consumer sees the slot as committed. */
	atomic_store_explicit(&slot->turn, pos + 1 - (pos & ring->mask), memory_order_release);
	return true;
}

bool
gmt_ring_pop(struct gmt_ring *ring, struct gmt_event *out)
{
	uint64_t pos = ring->tail;
	struct gmt_ring_slot *slot = &ring->slots[pos & ring->mask];

	/* Acquire pairs with the producer's release: the event's bytes are complete. */
	uint64_t index = pos & ring->mask;
	if (atomic_load_explicit(&slot->turn, memory_order_acquire) + index != pos + 1)
		return false; /* empty, or the producer of pos has not committed yet */
	memcpy(out, &slot->ev, sizeof(*out));
	/* Release: we are done reading before a producer of pos + nslots may write. */
	atomic_store_explicit(&slot->turn, pos + ring->mask + 1 - index, memory_order_release);
	ring->tail = pos + 1;
	return true;
}

uint64_t
gmt_ring_pending(struct gmt_ring *ring)
{
	return atomic_load_explicit(&ring->head, memory_order_relaxed) - ring->tail;
}
