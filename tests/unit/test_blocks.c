/*
 * Unit test of the caching allocator's replay (model/blocks.c): rounding and splitting as torch
 * does them (small pool, large pool, expandable segments), frees requested then completed (the
 * allocated figure drops at the request, active at the completion), merging, inactive split bytes
 * and the largest free block, backfilled state, and lines that do not fit (counted, survived).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc/blocks.h"
#include "format/torch_entry.h"

static int failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static uint64_t seq;

static int
ev(struct gmt_blk_model *m, unsigned action, uint64_t ptr, uint64_t size)
{
	struct gmt_blk_event e = {
	    .action = action, .seq = ++seq, .device = 0, .ptr = ptr, .size = size};
	return gmt_blk_apply(m, &e);
}

static struct gmt_blk_totals
tot(struct gmt_blk_model *m)
{
	struct gmt_blk_totals t;
	gmt_blk_totals(m, -1, &t);
	return t;
}

#define MiB (1ull << 20)
#define SEG 0x7f0000000000ull

static void
small_pool(void)
{
	struct gmt_blk_model *m = gmt_blk_new(false);
	ev(m, GMT_TORCH_SEGMENT_ALLOC, SEG, 2 * MiB);
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG, 1000) == 0, "alloc at the segment's start");
	CHECK(gmt_blk_size_of(m, SEG) == 1024, "1000 bytes round to 1024 (%llu)",
	      (unsigned long long)gmt_blk_size_of(m, SEG));
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG + 1024, 100) == 0, "the next block right after the split");
	CHECK(gmt_blk_size_of(m, SEG + 1024) == 512, "100 bytes round to 512");
	struct gmt_blk_totals t = tot(m);
	CHECK(t.allocated_bytes == 1536 && t.requested_bytes == 1100 && t.allocations == 2,
	      "allocated %llu requested %llu allocations %llu",
	      (unsigned long long)t.allocated_bytes, (unsigned long long)t.requested_bytes,
	      (unsigned long long)t.allocations);
	CHECK(t.reserved_bytes == 2 * MiB && t.segments == 1, "reserved 2 MiB in 1 segment");
	CHECK(t.inactive_split_bytes == 2 * MiB - 1536 && t.largest_free == 2 * MiB - 1536,
	      "the rest of the segment is inactive split (%llu)",
	      (unsigned long long)t.inactive_split_bytes);
	/* a free requested leaves memory_allocated, not the active bytes, until it completes */
	ev(m, GMT_TORCH_FREE_REQUESTED, SEG, 1000);
	t = tot(m);
	CHECK(t.allocated_bytes == 512 && t.active_bytes == 1536,
	      "after the request: allocated %llu active %llu",
	      (unsigned long long)t.allocated_bytes, (unsigned long long)t.active_bytes);
	ev(m, GMT_TORCH_FREE_COMPLETED, SEG, 1000);
	t = tot(m);
	CHECK(t.active_bytes == 512 && t.free_pieces == 2,
	      "completed: active %llu, %llu free pieces", (unsigned long long)t.active_bytes,
	      (unsigned long long)t.free_pieces);
	ev(m, GMT_TORCH_FREE_REQUESTED, SEG + 1024, 100);
	ev(m, GMT_TORCH_FREE_COMPLETED, SEG + 1024, 100);
	t = tot(m);
	CHECK(t.free_pieces == 1 && t.largest_free == 2 * MiB && t.inactive_split_bytes == 0,
	      "all free: merged into one block (%llu pieces)", (unsigned long long)t.free_pieces);
	ev(m, GMT_TORCH_SEGMENT_FREE, SEG, 2 * MiB);
	t = tot(m);
	CHECK(t.reserved_bytes == 0 && t.segments == 0, "segment freed");
	CHECK(gmt_blk_inconsistent(m) == 0, "no line out of place");
	gmt_blk_free(m);
}

static void
large_pool(void)
{
	struct gmt_blk_model *m = gmt_blk_new(false);
	ev(m, GMT_TORCH_SEGMENT_ALLOC, SEG, 20 * MiB);
	ev(m, GMT_TORCH_ALLOC, SEG, 19 * MiB + 100); /* the rest, < 1 MiB, is not split off */
	CHECK(gmt_blk_size_of(m, SEG) == 20 * MiB,
	      "large pool: a rest of 1 MiB or less stays in the block (%llu)",
	      (unsigned long long)gmt_blk_size_of(m, SEG));
	ev(m, GMT_TORCH_FREE_REQUESTED, SEG, 0);
	ev(m, GMT_TORCH_FREE_COMPLETED, SEG, 0);
	ev(m, GMT_TORCH_ALLOC, SEG, 3 * MiB); /* a rest of 17 MiB is split */
	CHECK(gmt_blk_size_of(m, SEG) == 3 * MiB, "large pool: a rest over 1 MiB is split");
	CHECK(tot(m).allocated_bytes == 3 * MiB, "allocated 3 MiB");
	gmt_blk_free(m);

	/* expandable segments split any rest of 512 bytes or more, and grow by mapping */
	m = gmt_blk_new(true);
	ev(m, GMT_TORCH_SEGMENT_MAP, SEG, 20 * MiB);
	ev(m, GMT_TORCH_ALLOC, SEG, 19 * MiB + 100);
	CHECK(gmt_blk_size_of(m, SEG) == 19 * MiB + 512, "expandable: split (%llu)",
	      (unsigned long long)gmt_blk_size_of(m, SEG));
	ev(m, GMT_TORCH_SEGMENT_MAP, SEG + 20 * MiB, 20 * MiB);
	struct gmt_blk_totals t = tot(m);
	CHECK(t.segments == 1 && t.reserved_bytes == 40 * MiB && t.largest_free == 21 * MiB - 512,
	      "a mapping right after extends the segment (%llu segments, largest free %llu)",
	      (unsigned long long)t.segments, (unsigned long long)t.largest_free);
	ev(m, GMT_TORCH_SEGMENT_UNMAP, SEG + 20 * MiB, 20 * MiB);
	t = tot(m);
	CHECK(t.reserved_bytes == 20 * MiB && t.largest_free == MiB - 512,
	      "unmapped again (%llu reserved)", (unsigned long long)t.reserved_bytes);
	CHECK(gmt_blk_inconsistent(m) == 0, "no line out of place");
	gmt_blk_free(m);
}

static void
backfill_and_bad_lines(void)
{
	struct gmt_blk_model *m = gmt_blk_new(false);
	struct gmt_blk_event s = {
	    .action = GMT_TORCH_STATE_SEGMENT, .ptr = SEG, .size = 2 * MiB, .seq = ++seq};
	gmt_blk_apply(m, &s);
	struct gmt_blk_event b1 = {.action = GMT_TORCH_STATE_BLOCK,
				   .ptr = SEG,
				   .size = 4096,
				   .requested = 4000,
				   .allocated = true,
				   .active = true,
				   .seq = ++seq};
	struct gmt_blk_event b2 = {.action = GMT_TORCH_STATE_BLOCK,
				   .ptr = SEG + 4096,
				   .size = 2 * MiB - 4096,
				   .seq = ++seq};
	gmt_blk_apply(m, &b1);
	gmt_blk_apply(m, &b2);
	struct gmt_blk_totals t = tot(m);
	CHECK(t.allocated_bytes == 4096 && t.requested_bytes == 4000 && t.segments == 1,
	      "backfill: a live block of 4096 bytes");
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG + 4096, 512) == 0, "an allocation after the backfill");
	/* lines that do not fit: a free of a block never seen, an alloc inside a live block, an
	 * alloc outside every segment */
	CHECK(ev(m, GMT_TORCH_FREE_REQUESTED, SEG + 100 * MiB, 1) == -EINVAL,
	      "unknown free: refused");
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG + 16, 8) == -EINVAL, "alloc inside a live block: refused");
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG + 500 * MiB, 8) == -EINVAL,
	      "alloc outside every segment: noted");
	t = tot(m);
	CHECK(t.allocations == 3 && t.reserved_bytes == 2 * MiB,
	      "the outside block counted, reserving nothing (%llu allocations, %llu reserved)",
	      (unsigned long long)t.allocations, (unsigned long long)t.reserved_bytes);
	CHECK(gmt_blk_inconsistent(m) == 3, "3 lines out of place (%llu)",
	      (unsigned long long)gmt_blk_inconsistent(m));
	size_t n = gmt_blk_blocks(m, NULL, 0);
	struct gmt_blk_view v[16];
	CHECK(n <= 16 && gmt_blk_blocks(m, v, 16) == n, "%zu blocks listed", n);
	for (size_t i = 1; i < n && i < 16; i++)
		CHECK(v[i - 1].ptr < v[i].ptr, "blocks in address order");
	gmt_blk_free(m);
}

/* Expandable segments as memory_snapshot() lists them: a run of contiguous mapped memory per
 * stream and pool is one segment; an unmap in its middle makes two, a map filling the hole one. */
static void
expandable_runs(void)
{
	struct gmt_blk_model *m = gmt_blk_new(true);
	struct gmt_blk_event e = {.action = GMT_TORCH_SEGMENT_MAP, .ptr = SEG, .size = 20 * MiB};
	e.seq = ++seq;
	gmt_blk_apply(m, &e);
	e.ptr = SEG + 20 * MiB, e.seq = ++seq;
	gmt_blk_apply(m, &e);
	e.ptr = SEG + 40 * MiB, e.seq = ++seq;
	gmt_blk_apply(m, &e);
	struct gmt_blk_totals t = tot(m);
	CHECK(t.segments == 1 && t.reserved_bytes == 60 * MiB && t.largest_free == 60 * MiB,
	      "three adjacent maps: one run of 60 MiB (%llu segments, largest free %llu)",
	      (unsigned long long)t.segments, (unsigned long long)t.largest_free);
	/* another stream's reservation right after it is a segment of its own */
	struct gmt_blk_event o = e;
	o.ptr = SEG + 60 * MiB, o.stream = 0x99, o.seq = ++seq;
	gmt_blk_apply(m, &o);
	CHECK(tot(m).segments == 2, "another stream's map after it: its own segment");
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG, 4 * MiB) == 0, "an allocation at the run's start");
	e.action = GMT_TORCH_SEGMENT_UNMAP, e.ptr = SEG + 20 * MiB, e.size = 20 * MiB,
	e.seq = ++seq;
	CHECK(gmt_blk_apply(m, &e) == 0, "unmap of free memory in the middle");
	t = tot(m);
	CHECK(t.segments == 3 && t.reserved_bytes == 60 * MiB,
	      "a hole in the middle: two runs of stream 0 and stream 0x99's (%llu segments, %llu "
	      "reserved)",
	      (unsigned long long)t.segments, (unsigned long long)t.reserved_bytes);
	CHECK(gmt_blk_size_of(m, SEG) == 4 * MiB, "the block before the hole is still live");
	CHECK(t.largest_free == 20 * MiB, "largest free: the run after the hole (%llu)",
	      (unsigned long long)t.largest_free);
	e.action = GMT_TORCH_SEGMENT_MAP, e.seq = ++seq;
	gmt_blk_apply(m, &e);
	t = tot(m);
	CHECK(t.segments == 2 && t.reserved_bytes == 80 * MiB,
	      "the hole mapped again: one run again (%llu segments)",
	      (unsigned long long)t.segments);
	CHECK(t.largest_free == 56 * MiB && t.free_pieces == 2,
	      "free memory across the joins merges: 56 MiB after the block, stream 0x99's 20 MiB "
	      "(%llu largest, %llu pieces)",
	      (unsigned long long)t.largest_free, (unsigned long long)t.free_pieces);
	gmt_blk_free(m);
}

/* Lines no allocator writes (a damaged trace): refused and counted, the state stays sound. */
static void
damaged_lines(void)
{
	struct gmt_blk_model *m = gmt_blk_new(false);
	ev(m, GMT_TORCH_SEGMENT_ALLOC, SEG + 4 * MiB, 2 * MiB);
	CHECK(ev(m, GMT_TORCH_SEGMENT_ALLOC, SEG, 0) == -EINVAL, "an empty segment: refused");
	CHECK(ev(m, GMT_TORCH_SEGMENT_ALLOC, UINT64_MAX - 100, 2 * MiB) == -EINVAL,
	      "a segment wrapping around the address space: refused");
	CHECK(ev(m, GMT_TORCH_ALLOC, SEG + 4 * MiB, UINT64_MAX - 10) == -EINVAL,
	      "a request no rounding can hold: refused");
	/* a segment over an older one (its free was missed): the older one goes */
	CHECK(ev(m, GMT_TORCH_SEGMENT_ALLOC, SEG, 20 * MiB) == -EINVAL, "a segment over another");
	struct gmt_blk_totals t = tot(m);
	CHECK(t.segments == 1 && t.reserved_bytes == 20 * MiB,
	      "one segment of 20 MiB, not two overlapping (%llu, %llu)",
	      (unsigned long long)t.segments, (unsigned long long)t.reserved_bytes);
	/* backfilled blocks outside their segment or over each other */
	struct gmt_blk_event st = {
	    .action = GMT_TORCH_STATE_SEGMENT, .ptr = SEG + 64 * MiB, .size = 2 * MiB};
	st.seq = ++seq;
	gmt_blk_apply(m, &st);
	struct gmt_blk_event b = {
	    .action = GMT_TORCH_STATE_BLOCK, .ptr = SEG + 64 * MiB, .size = 4 * MiB};
	b.seq = ++seq;
	CHECK(gmt_blk_apply(m, &b) == -EINVAL,
	      "a backfilled block larger than its segment: refused");
	b.size = MiB;
	CHECK(gmt_blk_apply(m, &b) == 0, "a backfilled block inside it");
	b.ptr += 512;
	b.seq = ++seq;
	CHECK(gmt_blk_apply(m, &b) == -EINVAL, "a backfilled block over another: refused");
	CHECK(gmt_blk_blocks(m, NULL, 0) == 2,
	      "the segments' blocks: the 20 MiB one's and the backfilled one");
	gmt_blk_free(m);
}

int
main(void)
{
	small_pool();
	large_pool();
	backfill_and_bad_lines();
	expandable_runs();
	damaged_lines();
	if (failures)
		fprintf(stderr, "%d failed\n", failures);
	return failures ? 1 : 0;
}
