/* SPDX-License-Identifier: MIT */
/**
 * @file heap.h
 * @brief The simulated device heap: a first-fit allocator over one address range.
 *
 * A struct sim_heap hands out sub-ranges of [base, base + capacity). It knows nothing of CUDA
 * and never touches the memory it manages: it only does the bookkeeping, so the same code
 * serves a whole device (whose range the runtime maps) and one chunk of a memory pool (a range
 * inside a device). The caller serializes access; the heap has no lock of its own.
 *
 * The model, chosen to behave like a real device allocator in the ways a memory profiler can see:
 *  - sizes are rounded up to SIM_HEAP_ALIGN and every block starts on a SIM_HEAP_ALIGN boundary;
 *  - placement is first-fit: the lowest-addressed free extent that is large enough;
 *  - a freed block is merged with free neighbours, so fragmentation is real and visible.
 */
#ifndef SIMCUDA_HEAP_H
#define SIMCUDA_HEAP_H

#include <stddef.h>
#include <stdint.h>

/** Allocation granularity and alignment, as the real cudaMalloc uses for small blocks. */
#define SIM_HEAP_ALIGN ((size_t)512)

/** One live allocation. kind and owner are the caller's; the heap only stores them. */
struct sim_block {
	uintptr_t addr;
	size_t size; /**< rounded size: what the block really occupies */
	unsigned kind;
	void *owner;
};

/** A free extent. The free list is sorted by address and never holds two touching extents. */
struct sim_extent {
	uintptr_t addr;
	size_t size;
};

struct sim_heap {
	uintptr_t base;
	size_t capacity; /**< a multiple of SIM_HEAP_ALIGN */
	size_t used;	 /**< sum of the rounded sizes of live blocks */

	struct sim_extent *free_list; /**< sorted by addr */
	size_t n_free;
	size_t free_cap;

	struct sim_block *blocks; /**< live blocks, sorted by addr */
	size_t n_blocks;
	size_t blocks_cap;
};

/**
 * Round size up to the heap granularity. Returns 0 when the rounded size would overflow, so
 * callers treat 0 as "cannot be satisfied" (a zero-byte request never reaches the heap).
 */
size_t sim_heap_round(size_t size);

/**
 * Manage [base, base + capacity). capacity is rounded down to SIM_HEAP_ALIGN; base must be
 * SIM_HEAP_ALIGN-aligned. Returns 0, -EINVAL for a bad range, -ENOMEM when the bookkeeping
 * arrays cannot be allocated.
 */
int sim_heap_init(struct sim_heap *heap, uintptr_t base, size_t capacity);

/** Drop all bookkeeping. Live blocks are forgotten, not reported. */
void sim_heap_fini(struct sim_heap *heap);

/**
 * Place a block of size bytes (rounded up) first-fit. On success stores the address in *addr
 * and returns 0. Returns -ENOMEM when no free extent is large enough (or the bookkeeping cannot
 * grow) and -EINVAL for size 0; the heap is unchanged on failure.
 */
int sim_heap_alloc(struct sim_heap *heap, size_t size, unsigned kind, void *owner, uintptr_t *addr);

/**
 * Free the block that starts exactly at addr, merging it with free neighbours. When out is not
 * NULL the removed block is copied there. Returns 0, or -EINVAL when no block starts at addr
 * (an interior pointer, a double free, a foreign pointer); the heap is unchanged then.
 */
int sim_heap_free(struct sim_heap *heap, uintptr_t addr, struct sim_block *out);

/** The live block that starts exactly at addr, or NULL. */
const struct sim_block *sim_heap_find(const struct sim_heap *heap, uintptr_t addr);

/** The live block whose range [addr, addr + size) holds addr, or NULL. */
const struct sim_block *sim_heap_find_containing(const struct sim_heap *heap, uintptr_t addr);

/** Whether addr lies inside the managed range at all (allocated or not). */
int sim_heap_contains(const struct sim_heap *heap, uintptr_t addr);

/** Size of the largest free extent: the biggest request that can succeed right now. */
size_t sim_heap_largest_free(const struct sim_heap *heap);

/**
 * Check the invariants (sorted, non-overlapping, fully coalesced, used + free == capacity).
 * Returns 0 when they hold, or a small positive number naming the first one broken; meant for
 * tests and debug builds, it walks everything.
 */
int sim_heap_check(const struct sim_heap *heap);

#endif /* SIMCUDA_HEAP_H */
