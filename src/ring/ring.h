/*
 * @brief A bounded, lock-free multi-producer / single-consumer queue of events.
 *
 * Application threads push events from inside their CUDA calls; the writer thread pops them.
 * The design is the bounded queue of D. Vyukov (per-slot sequence numbers), reduced to one
 * consumer:
 *
 *   - Producers are lock-free: a push claims a slot with one compare-and-swap on `head` and never
 *     waits for another thread. When the ring is full it fails at once (the caller counts a drop);
 *     the application never blocks on the tracer.
 *   - The consumer is wait-free: it reads the slot at `tail` and sees whether it is committed.
 *   - A slot's `turn` says whose it is: turn == pos means free for the producer of position pos,
 *     turn == pos + 1 means it holds the event of position pos, ready for the consumer.
 *     The slot stores turn minus its own index, so a zero-filled slot is "free for the first
 *     lap" (turn == index): fresh anonymous memory needs no initialisation pass, and a ring
 *     only costs the memory that traffic has actually touched.
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

#include "format/event.h"

#define GMT_CACHELINE 64

struct gmt_ring_slot {
	_Atomic uint64_t turn; /* stored as turn - slot index (see above) */
	struct gmt_event ev;
};

struct gmt_ring {
	_Alignas(GMT_CACHELINE) _Atomic uint64_t head; /* next position producers claim */
	_Alignas(GMT_CACHELINE) uint64_t tail;         /* next position the consumer reads (consumer-owned) */
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
bool gmt_ring_push(struct gmt_ring *ring, const struct gmt_event *ev);

/** Take the oldest committed event into @p out. Single consumer only; false when none is ready. */
bool gmt_ring_pop(struct gmt_ring *ring, struct gmt_event *out);

/** Events claimed but not yet popped (approximate while producers run). */
uint64_t gmt_ring_pending(struct gmt_ring *ring);

#endif
