/*
 * @brief The reader's items into a model (reader/trace.h's gmt_trace_sink): replayed on the
 * reader's thread, or on a thread of their own while the reader goes on.
 *
 * The replay is half of what one trace's reader does in order on its calling thread, the part
 * that bounds a trace read on many cores (reader/pipeline.c). Threaded, the feed takes the
 * events and markers in batches and replays them on its thread, in the order they came; at the
 * reader's sync (before it changes what the model reads of the trace: strings, readings,
 * markers, holders) it waits until the replay has caught up, so the model sees the trace as it
 * would have on the reader's thread, and the report is the same bytes.
 */
#ifndef GMT_ANALYSIS_SESSION_FEED_H
#define GMT_ANALYSIS_SESSION_FEED_H

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"

#include <stdbool.h>

struct gmt_feed;

/**
 * A feed into a model made at the first item (gmt_model_new(@p range)); @p threaded: replayed
 * on a thread of its own (not with a range in seconds: its start follows the reader). NULL out
 * of memory.
 */
struct gmt_feed *gmt_feed_new(const struct gmt_range_opt *range, bool threaded);

/** The sink the reader hands the items to. */
struct gmt_trace_sink gmt_feed_sink(struct gmt_feed *f);

/**
 * After the read: every item replayed, the thread joined. The model (NULL: no item came, or
 * out of memory: *@p oom), which the caller then owns; the feed is freed.
 */
struct gmt_model *gmt_feed_end(struct gmt_feed *f, bool *oom);

#endif
