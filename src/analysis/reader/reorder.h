/*
 * @brief The reorder window: the lines of a streamed trace handed on in seq order, in bounded
 * memory.
 *
 * The writer emits lines in drain order, not seq order (producers commit out of order); a
 * stored trace is sorted once read, a streamed one goes through here. Items come out in the
 * order of sorting a stored trace: by seq, events before markers of the same seq, then by line.
 * The tracer hands out seqs one by one from 1, so an item whose seq is the next one after the
 * last delivered goes on at once, and so do the waiting items it unblocks; only items that come
 * before their predecessors wait. A seq that never comes (a stamp without a line, a dropped
 * event) holds the others back until `window` items wait; then the smallest goes, and the flow
 * resumes after it. An item that sorts before one already delivered (a repeated seq, one later
 * than the window) goes on at once, marked late.
 */
#ifndef GMT_READER_REORDER_H
#define GMT_READER_REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader/trace.h"

/** One line waiting: an event, or a marker (named by its index, the trace keeps markers). */
struct gmt_reorder_item {
	uint64_t seq;
	uint32_t line;
	uint32_t marker; /**< index into the trace's markers + 1; 0: an event (`ev`) */
	struct gmt_trace_event ev;
};

struct reorder_key;

/** Runs of keys that came in order among themselves: about one per thread the writer drains. */
#define GMT_REORDER_RUNS 4

/** A ring of keys that came in order: sorted, so a FIFO will do (up to window + 1, taken when
 * first needed). */
struct gmt_reorder_run {
	struct reorder_key *keys;
	size_t head, n;
};

struct gmt_reorder {
	size_t window; /**< items that may wait */
	/** Where items go, in order; @p late: it sorts before one already delivered. */
	void (*deliver)(void *ctx, const struct gmt_reorder_item *item, bool late);
	void *ctx;

	/* the window's own */
	struct reorder_key *heap; /* a min-heap of the keys that came out of order */
	size_t nheap;
	struct gmt_reorder_run runs[GMT_REORDER_RUNS];
	size_t nrun;			 /* keys in the runs */
	struct gmt_reorder_item *slots;	 /* the items the keys name: up to window + 1, grown as
					    more wait at once (a short trace needs few) */
	uint32_t *free_slots;		 /* slots given back, as many as `slots` has room for */
	size_t nfree, nslots, slots_cap; /* nslots: slots ever used (the rest never touched) */
	uint64_t last_seq;		 /* of the last item delivered in order */
	uint32_t last_line;
	bool last_marker;
	bool delivered_any;
};

/**
 * A window of @p window items (GMT_TRACE_REORDER_WINDOW for a trace; at least 1, below 2^31)
 * handing items to @p deliver. Its memory is taken at the first item that has to wait.
 */
void gmt_reorder_init(struct gmt_reorder *w,
		      size_t window,
		      void (*deliver)(void *ctx, const struct gmt_reorder_item *item, bool late),
		      void *ctx);

/**
 * Deliver @p item now if it may go, else keep it waiting (a copy). Returns 0, or -ENOMEM when
 * it had to wait and the window's memory could not be had (the item is not kept).
 */
int gmt_reorder_push(struct gmt_reorder *w, const struct gmt_reorder_item *item);

/** Deliver every waiting item, smallest first (the end of the file). */
void gmt_reorder_drain(struct gmt_reorder *w);

/** Free the window's memory (what still waits is dropped). */
void gmt_reorder_fini(struct gmt_reorder *w);

#endif
