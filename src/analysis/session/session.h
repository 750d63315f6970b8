/*
 * @brief A session: the traces a report is made of, each read, replayed and given its
 * symbolized stacks, one per process.
 *
 * The path of an event to a report starts here: a trace file is read line by line
 * (reader/open.c, read.c), its events go through the reorder window (reader/reorder.c) straight
 * into the model's replay (model/model.c) as they are read, and once the file is done the trace's
 * stacks (symbols/callstack.c) are made to sit beside the model, built on first use with one
 * symbolizer for every trace of the session (a library shared by several processes is read once).
 * The reports take the session's processes (process.h: trace, model, stacks; `procs`, `n`), and
 * beside them the traces that yielded nothing (`lost`).
 */
#ifndef GMT_SESSION_SESSION_H
#define GMT_SESSION_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "analysis/session/process.h"
#include "analysis/symbols/callstack.h"
#include "analysis/symbols/symbolize.h"

struct gmt_session_options {
	struct gmt_range_opt range; /**< report --from/--to: what each model replays; unset: all */
	bool stored;		    /**< read each trace whole, then replay it (the tests compare
					 both); else its events stream into the model */
	struct gmt_read_options read; /**< how each trace is read */
	/**
	 * seconds between updates of a directory's progress line (shown when diag is a
	 * terminal); negative: the default, 1 s; 0: at every look at the clock (the tests use it)
	 */
	double progress_every_s;
};

#define GMT_SESSION_OPTIONS_INIT                                                                   \
	{                                                                                          \
		.read = GMT_READ_OPTIONS_INIT, .progress_every_s = -1                              \
	}

struct gmt_session {
	struct gmt_session_options opt;
	FILE *diag;		   /**< where messages about the inputs go */
	struct gmt_process *procs; /**< one per trace read, in the order they were added */
	size_t n;
	size_t unreadable; /**< paths that yielded nothing (each one reported on diag) */
	/** of those, the inputs that may be traces (process.h: empty, unreadable, missing, of
	 * another format version, out of memory), each with the reader's reason, for the reports
	 * to name: not another program's files */
	struct gmt_lost lost;
	struct gmt_symbolizer *sym; /**< shared by every trace's stacks; made with the first */
};

/** An empty session; @p opt NULL: GMT_SESSION_OPTIONS_INIT. Messages go to @p diag. */
void gmt_session_init(struct gmt_session *s, const struct gmt_session_options *opt, FILE *diag);

/**
 * Read one trace file and add it (no directory expansion). Returns 0, or -1 when it yielded
 * nothing (said on diag, counted in `unreadable`).
 */
int gmt_session_add_file(struct gmt_session *s, const char *path);

/**
 * Add @p path: a trace file (or a PyTorch snapshot), or a directory (every trace in it, in name
 * order: gmt_trace_files()). Returns 0
 * when something of it was added, else -1 (said on diag).
 */
int gmt_session_add_path(struct gmt_session *s, const char *path);

void gmt_session_free(struct gmt_session *s);

/** Whether a marker of the session's traces has @p label. */
bool gmt_session_has_label(const struct gmt_session *s, const char *label);

/**
 * The trace names in @p dir (`*.jsonl`, `*.jsonl.zst`, `*.jsonl.gz`, and PyTorch snapshots
 * `*.pickle`), sorted bytewise (the
 * order of a report must not depend on the locale). Returns the count, or -errno. Free each
 * name and the array.
 */
int gmt_trace_files(const char *dir, char ***names);

#endif
