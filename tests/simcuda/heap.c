/* SPDX-License-Identifier: MIT */
/**
 * @file heap.c
 * @brief First-fit address-range allocator behind every simulated device and pool chunk.
 *
 * Both the free list and the block table are sorted arrays. Allocation walks the free list
 * from the lowest address (first fit) and carves the block off the front of the extent it
 * picks; free binary-searches the block table, then inserts the range back into the free list
 * and merges it with the extents on either side. Each operation is O(n) in the number of
 * extents because of the memmove, which is fine for a test double: the tests hold at most a
 * few thousand blocks, and a sorted array keeps first-fit and the invariants easy to see.
 */
#include "heap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t
sim_heap_round(size_t size)
{
	if (size > SIZE_MAX - (SIM_HEAP_ALIGN - 1))
		return 0;
	return (size + SIM_HEAP_ALIGN - 1) & ~(SIM_HEAP_ALIGN - 1);
}

/* Grow *array (of elem-sized items, *cap of them) so that one more item fits. */
static int
grow(void **array, size_t *cap, size_t count, size_t elem)
{
	size_t ncap;
	void *p;

	if (count < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*array, ncap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = ncap;
	return 0;
}

int
sim_heap_init(struct sim_heap *heap, uintptr_t base, size_t capacity)
{
	memset(heap, 0, sizeof(*heap));
	capacity &= ~(SIM_HEAP_ALIGN - 1);
	if (capacity == 0 || (base & (SIM_HEAP_ALIGN - 1)) != 0 || base + capacity < base)
		return -EINVAL;
	heap->base = base;
	heap->capacity = capacity;
	if (grow((void **)&heap->free_list, &heap->free_cap, 0, sizeof(*heap->free_list)) < 0)
		return -ENOMEM;
	heap->free_list[0].addr = base;
	heap->free_list[0].size = capacity;
	heap->n_free = 1;
	return 0;
}

void
sim_heap_fini(struct sim_heap *heap)
{
	free(heap->free_list);
	free(heap->blocks);
	memset(heap, 0, sizeof(*heap));
}

/* Index of the first block with addr >= key (n_blocks if none). */
static size_t
block_lower_bound(const struct sim_heap *heap, uintptr_t key)
{
	size_t lo = 0, hi = heap->n_blocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (heap->blocks[mid].addr < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first free extent with addr >= key (n_free if none). */
static size_t
extent_lower_bound(const struct sim_heap *heap, uintptr_t key)
{
	size_t lo = 0, hi = heap->n_free;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (heap->free_list[mid].addr < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
sim_heap_alloc(struct sim_heap *heap, size_t size, unsigned kind, void *owner, uintptr_t *addr)
{
	size_t rounded = sim_heap_round(size);
	size_t i, at;
	struct sim_extent *ext;
	struct sim_block *blk;

	if (size == 0)
		return -EINVAL;
	if (rounded == 0 || rounded > heap->capacity - heap->used)
		return -ENOMEM;

	for (i = 0; i < heap->n_free; i++)
		if (heap->free_list[i].size >= rounded)
			break;
	if (i == heap->n_free)
		return -ENOMEM;

	/* Grow the block table before touching the free list, so a failure leaves no trace. */
	if (grow((void **)&heap->blocks, &heap->blocks_cap, heap->n_blocks, sizeof(*heap->blocks)) <
	    0)
		return -ENOMEM;

	ext = &heap->free_list[i];
	*addr = ext->addr;
	ext->addr += rounded;
	ext->size -= rounded;
	if (ext->size == 0) {
		memmove(ext, ext + 1, (heap->n_free - i - 1) * sizeof(*ext));
		heap->n_free--;
	}

	at = block_lower_bound(heap, *addr);
	blk = &heap->blocks[at];
	memmove(blk + 1, blk, (heap->n_blocks - at) * sizeof(*blk));
	blk->addr = *addr;
	blk->size = rounded;
	blk->kind = kind;
	blk->owner = owner;
	heap->n_blocks++;
	heap->used += rounded;
	return 0;
}

int
sim_heap_free(struct sim_heap *heap, uintptr_t addr, struct sim_block *out)
{
	size_t at = block_lower_bound(heap, addr);
	struct sim_block blk;
	size_t i;
	int merge_prev, merge_next;

	if (at == heap->n_blocks || heap->blocks[at].addr != addr)
		return -EINVAL;
	blk = heap->blocks[at];

	i = extent_lower_bound(heap, blk.addr);
	merge_prev = i > 0 && heap->free_list[i - 1].addr + heap->free_list[i - 1].size == blk.addr;
	merge_next = i < heap->n_free && blk.addr + blk.size == heap->free_list[i].addr;

	/*
	 * Only a free that touches no free extent adds an entry; reserve it first so a failed
	 * realloc leaves the heap exactly as it was.
	 */
	if (!merge_prev && !merge_next &&
	    grow((void **)&heap->free_list, &heap->free_cap, heap->n_free,
		 sizeof(*heap->free_list)) < 0)
		return -ENOMEM;

	if (merge_prev && merge_next) {
		heap->free_list[i - 1].size += blk.size + heap->free_list[i].size;
		memmove(&heap->free_list[i], &heap->free_list[i + 1],
			(heap->n_free - i - 1) * sizeof(*heap->free_list));
		heap->n_free--;
	} else if (merge_prev) {
		heap->free_list[i - 1].size += blk.size;
	} else if (merge_next) {
		heap->free_list[i].addr = blk.addr;
		heap->free_list[i].size += blk.size;
	} else {
		memmove(&heap->free_list[i + 1], &heap->free_list[i],
			(heap->n_free - i) * sizeof(*heap->free_list));
		heap->free_list[i].addr = blk.addr;
		heap->free_list[i].size = blk.size;
		heap->n_free++;
	}

	memmove(&heap->blocks[at], &heap->blocks[at + 1],
		(heap->n_blocks - at - 1) * sizeof(*heap->blocks));
	heap->n_blocks--;
	heap->used -= blk.size;
	if (out)
		*out = blk;
	return 0;
}

const struct sim_block *
sim_heap_find(const struct sim_heap *heap, uintptr_t addr)
{
	size_t at = block_lower_bound(heap, addr);

	if (at == heap->n_blocks || heap->blocks[at].addr != addr)
		return NULL;
	return &heap->blocks[at];
}

const struct sim_block *
sim_heap_find_containing(const struct sim_heap *heap, uintptr_t addr)
{
	/* The candidate is the last block starting at or before addr. */
	size_t at = block_lower_bound(heap, addr + 1);
	const struct sim_block *blk;

	if (at == 0)
		return NULL;
	blk = &heap->blocks[at - 1];
	return addr - blk->addr < blk->size ? blk : NULL;
}

int
sim_heap_contains(const struct sim_heap *heap, uintptr_t addr)
{
	return addr >= heap->base && addr - heap->base < heap->capacity;
}

size_t
sim_heap_largest_free(const struct sim_heap *heap)
{
	size_t best = 0, i;

	for (i = 0; i < heap->n_free; i++)
		if (heap->free_list[i].size > best)
			best = heap->free_list[i].size;
	return best;
}

int
sim_heap_check(const struct sim_heap *heap)
{
	size_t i, free_total = 0, used_total = 0;
	size_t bi = 0, fi = 0;
	uintptr_t cursor = heap->base;

	for (i = 0; i < heap->n_free; i++) {
		const struct sim_extent *e = &heap->free_list[i];

		if (e->size == 0 || (e->addr & (SIM_HEAP_ALIGN - 1)) ||
		    (e->size & (SIM_HEAP_ALIGN - 1)))
			return 1;
		if (i > 0 && heap->free_list[i - 1].addr + heap->free_list[i - 1].size >= e->addr)
			return 2; /* unsorted, overlapping, or touching (not coalesced) */
		free_total += e->size;
	}
	for (i = 0; i < heap->n_blocks; i++) {
		const struct sim_block *b = &heap->blocks[i];

		if (b->size == 0 || (b->addr & (SIM_HEAP_ALIGN - 1)) ||
		    (b->size & (SIM_HEAP_ALIGN - 1)))
			return 3;
		if (i > 0 && heap->blocks[i - 1].addr + heap->blocks[i - 1].size > b->addr)
			return 4;
		used_total += b->size;
	}
	if (used_total != heap->used || used_total + free_total != heap->capacity)
		return 5;

	/* Blocks and extents together must tile the range with no gap and no overlap. */
	while (bi < heap->n_blocks || fi < heap->n_free) {
		if (bi < heap->n_blocks && heap->blocks[bi].addr == cursor) {
			cursor += heap->blocks[bi++].size;
		} else if (fi < heap->n_free && heap->free_list[fi].addr == cursor) {
			cursor += heap->free_list[fi++].size;
		} else {
			return 6;
		}
	}
	return cursor == heap->base + heap->capacity ? 0 : 6;
}
