/*
 * @brief PyTorch's caching allocator replayed from a trace's block lines: its segments, the blocks
 * tiling them (rounded and split as the allocator does), and the figures torch itself reports:
 * memory_allocated (the blocks' real sizes, until a free is requested), requested bytes, active,
 * reserved, inactive split, the largest free block, per device.
 *
 * The allocator's rules (torch 2.x, c10/cuda/CUDACachingAllocator.cpp; checked on torch 2.11
 * against its own figures at every marker, tests/gpu/torch_blocks.py): a request is rounded up to a
 * multiple of 512 bytes (at least 512); a block is taken from the start of a free block and split
 * when the rest is at least 512 bytes in the small pool (requests up to 1 MiB) or in expandable
 * segments, more than 1 MiB in the large pool; a completed free merges with free neighbours.
 * Trace lines that do not fit (a block the trace never saw allocated, an address outside every
 * segment: a trace started mid-run without backfill) are applied as best they can and counted.
 */
#ifndef GMT_MODEL_BLOCKS_H
#define GMT_MODEL_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_BLK_MAX_DEVICES 64

/* One block line, as the reader gives it (enum gmt_torch_action of torch_entry.h in action). */
struct gmt_blk_event {
	unsigned action;
	uint64_t seq, ts_ns;
	int32_t device;
	uint64_t ptr, size, requested, stream;
	uint64_t pool[2];
	uint32_t stack;
	bool allocated, active, expandable, large; /* block_state / segment_state */
};

/* What torch's memory_stats() says, replayed (per device, or summed with device -1). */
struct gmt_blk_totals {
	uint64_t allocated_bytes; /* memory_allocated(): live blocks' real sizes */
	uint64_t requested_bytes; /* requested_bytes.all.current */
	uint64_t allocations;	  /* allocation.all.current */
	uint64_t active_bytes;	  /* allocated, or freed and waiting for their streams */
	uint64_t reserved_bytes;  /* memory_reserved(): the segments */
	uint64_t segments;
	uint64_t inactive_split_bytes; /* free blocks of segments that also hold live blocks */
	uint64_t free_pieces;	       /* free blocks in the cache */
	uint64_t largest_free;	       /* the largest of them */
};

/* A block, for reports. */
struct gmt_blk_view {
	uint64_t ptr, size, requested, seq, stream, segment;
	uint64_t pool[2];
	uint32_t stack;
	int32_t device;
	enum { GMT_BLK_FREE, GMT_BLK_ALLOCATED, GMT_BLK_PENDING } state;
};

struct gmt_blk_model;

/** A model for a trace whose allocator uses expandable segments (PYTORCH_CUDA_ALLOC_CONF) or not.
 */
struct gmt_blk_model *gmt_blk_new(bool expandable);
void gmt_blk_free(struct gmt_blk_model *m);

/**
 * The trace leaves blocks out (a bounded trace: a block allocated and freed within one bucket,
 * with no peak, marker or failure between, is not written, src/writer/bounded.c): a block
 * placed inside a free block, not at its start, is where such a one was, and fits.
 */
void gmt_blk_expect_gaps(struct gmt_blk_model *m);

/** Apply one block line. 0, or -EINVAL when it did not fit the state (applied as best it could,
 * counted in gmt_blk_inconsistent()), or -ENOMEM. */
int gmt_blk_apply(struct gmt_blk_model *m, const struct gmt_blk_event *e);

/** Lines that did not fit the replayed state. */
uint64_t gmt_blk_inconsistent(const struct gmt_blk_model *m);

/** The figures now, of @p device (-1: every device). */
void gmt_blk_totals(const struct gmt_blk_model *m, int32_t device, struct gmt_blk_totals *out);

/** The real (rounded, maybe unsplit) size of the live block at @p ptr, 0 when there is none. */
uint64_t gmt_blk_size_of(const struct gmt_blk_model *m, uint64_t ptr);

/** Every block of every segment now, in address order, into @p out (at most @p max); returns how
 * many there are (call with max 0 to count). */
size_t gmt_blk_blocks(const struct gmt_blk_model *m, struct gmt_blk_view *out, size_t max);

/** The running figures of @p device, cheap (no walk over the blocks): memory_allocated(),
 * requested bytes and memory_reserved(). */
void gmt_blk_running(const struct gmt_blk_model *m,
		     int32_t device,
		     uint64_t *allocated,
		     uint64_t *requested,
		     uint64_t *reserved);

/** The free blocks of @p device's segments of @p stream and @p pool (where a request of that
 * stream and pool can be served): their bytes, number and the largest. */
void gmt_blk_free_in(const struct gmt_blk_model *m,
		     int32_t device,
		     uint64_t stream,
		     const uint64_t pool[2],
		     uint64_t *free_bytes,
		     uint64_t *pieces,
		     uint64_t *largest);

/** The stack of the live block at @p ptr (0 when none), its real size in *@p size. */
uint32_t
gmt_blk_stack_of(const struct gmt_blk_model *m, uint64_t ptr, uint64_t *size, uint64_t *requested);

/* A segment, for reports (expandable segments: one run of mapped memory). */
struct gmt_blk_segview {
	uint64_t start, size, stream;
	uint64_t pool[2];
	int32_t device;
	bool large, expandable;
	size_t first, nblocks; /* its blocks in gmt_blk_blocks()' order */
};

/** Every segment now, in address order (as gmt_blk_blocks()), at most @p max; returns how many. */
size_t gmt_blk_segments(const struct gmt_blk_model *m, struct gmt_blk_segview *out, size_t max);

/** The rounding of a request (at least 512 bytes, a multiple of 512). */
uint64_t gmt_blk_round(uint64_t requested);

#endif
