/*
 * @brief A PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes, or
 * torch.cuda.memory._snapshot() pickled) read as the trace the PyTorch layer would have written
 * of the same moments: `gpumemtrace report|check|diff snapshot.pickle` (docs/report-formats.md,
 * "Reading PyTorch snapshots").
 *
 * What it becomes: a made-up header (no process: the trace is `from_snapshot`), a `torch` line
 * from allocator_settings, and block events of op GMT_OP_BLOCK in time order: first the state of
 * the cache before the first entry of device_traces (segment_state and block_state events), then
 * every entry. The snapshot has that state only at its end (`segments`), so it is rewound from
 * the end through the entries, newest first: what a history that began after the cache filled or
 * that max_entries cut holds is then the cache as it was, and a full history rewinds to an empty
 * cache. Replaying the events forward ends at the snapshot's own segments (the tests check it
 * against torch's figures). Frames stay text (struct gmt_trace_textframe).
 */
#ifndef GMT_READER_SNAPSHOT_H
#define GMT_READER_SNAPSHOT_H

#include <stdio.h>

#include "analysis/reader/trace.h"

/**
 * Read the snapshot on @p f (already open, at its first byte; @p path names it in messages) as
 * gmt_trace_read_sink() reads a trace: with @p sink the events go to it and are not kept. A file
 * that is no snapshot is "PATH: not a PyTorch memory snapshot: why" on @p diag and
 * GMT_TRACE_UNREADABLE, the reason (quoting nothing of the file) in @p why unless NULL, empty
 * for a file that is no snapshot (not a lost input); entries that are not as torch writes them
 * are said and skipped.
 */
enum gmt_trace_status gmt_snapshot_read(FILE *f,
					const char *path,
					FILE *diag,
					const struct gmt_trace_sink *sink,
					struct gmt_trace **out,
					char why[GMT_TRACE_WHY]);

#endif
