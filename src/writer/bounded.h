/*
 * @brief The bounded writer (GPUMEMTRACE_BOUNDED=1): a trace whose size grows with time buckets
 * and call sites, not with events (docs/performance.md, "Runs of days (issue 17 item 3)").
 *
 * The writer thread hands every drained event to gmt_bounded_push() instead of writing it. At the
 * end of a bucket (gmt_bounded_cut()) the held events are put in seq order and split into
 * segments at every event the replay's exact answers depend on (markers, failures, resets,
 * readings, the PyTorch layer's segment, OOM and snapshot lines, anything not a plain allocation
 * or free of device, pinned, managed or registered memory, or a block's allocation and frees). In
 * a segment, an allocation freed in the same segment is left out, with its free, unless it was
 * live at a moment that must be replayed exactly: the first moment of the segment's maximum of
 * each (device, kind), or the allocation that decides an earlier failure's class; a PyTorch
 * block, with its free requested and completed, likewise unless live at a tensor peak (the
 * writer replays the block lines through the allocator's rules, alloc/blocks.c). What is left out
 * is counted per call site in `elided` and `elided_blocks` lines (docs/trace-format.md). Why the
 * replay's answers stay the same is in bounded.c's head and docs/design.md, "The bounded trace".
 *
 * Writer-thread only; it allocates. Out of memory, it writes everything it holds (exact, larger).
 */
#ifndef GMT_WRITER_BOUNDED_H
#define GMT_WRITER_BOUNDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/event.h"
#include "format/jsonl.h"

struct gmt_bounded_config {
	uint64_t bucket_ns;  /**< GPUMEMTRACE_BUCKET_MS */
	size_t max_events;   /**< GPUMEMTRACE_BUCKET_EVENTS: a bucket ends early at this many */
	struct gmt_buf *out; /**< where elided lines go */
	/** write one event line (the writer's, with its stack line first) */
	void (*emit)(const struct gmt_event *ev);
	/** write the stack line of @p id if it is not in the file yet */
	void (*stack)(uint32_t id);
};

/** What the bounded writer did, for the trailer (docs/trace-format.md, "trailer"). */
struct gmt_bounded_stats {
	uint64_t elided;  /**< event lines left out (allocations and their frees) */
	uint64_t late;	  /**< events that reached the writer after a later bucket was cut */
	uint64_t buckets; /**< buckets cut */
	uint64_t lost;	  /**< pairs left out but not counted (the writer ran out of memory) */
};

/** Set up (writer thread); false out of memory (the writer then writes every event). */
bool gmt_bounded_init(const struct gmt_bounded_config *cfg);

/** Hold @p ev until its bucket ends (out of memory: the bucket is cut, or @p ev written at once).
 */
void gmt_bounded_push(const struct gmt_event *ev);

/** Whether the current bucket should end now: its time is up or it holds too many events. */
bool gmt_bounded_due(uint64_t now_ns);

/**
 * End the bucket: write what it keeps and its elided lines. Events newer than a seq still missing
 * (a free whose line is not drained yet) wait for the next bucket unless @p force (the end, a
 * module change, a dlclose) or the hole is older than the grace time. Returns the seq up to which
 * everything is written or counted (the seq a snapshot line written next may carry).
 */
uint64_t gmt_bounded_cut(uint64_t now_ns, bool force);

const struct gmt_bounded_stats *gmt_bounded_stats(void);
void gmt_bounded_fini(void);

#endif
