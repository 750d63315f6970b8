/*
 * @brief One process of a session as the reports read it: its trace, the trace's replay and the
 * trace's symbolized stacks, side by side.
 *
 * The model is the replay alone (model/ knows nothing of symbols); the symbols are the session's,
 * built with one symbolizer for every trace it reads. What a writer needs of a process (figures
 * and the names of their stacks) is this view: the reports take an array of them, and the
 * functions that name a stack (report/explain.h: gmt_process_stack(), the caches, the libraries)
 * take one. The trace files that yielded nothing (struct gmt_lost) go beside the processes: no
 * figure has them, every report names them.
 */
#ifndef GMT_SESSION_PROCESS_H
#define GMT_SESSION_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "analysis/symbols/callstack.h"

struct gmt_process {
	struct gmt_trace *trace;
	struct gmt_model *model;       /**< replays trace */
	struct gmt_callstacks *stacks; /**< trace's symbolized stacks; NULL: none */
};

/**
 * An input of the session that yielded nothing: a trace file that is a trace, or empty
 * (GMT_TRACE_LOST: its process ended before its tracer wrote a line, a read error, a header-less
 * remnant), or any input that could not be read though it may be a trace (missing, a format
 * version this reader does not know, a damaged compressed stream, a named directory without
 * traces, out of memory): a process in none of the figures, which every report names beside its
 * processes (and check's complete-traces fails on). A file that is evidently another program's
 * (a .jsonl beside the traces that holds no trace line) is not one: only said on stderr.
 */
struct gmt_lost_trace {
	char *file; /**< the path, as given (or joined to the directory given) */
	char *why;  /**< the reader's words for it ("empty file, not a trace") */
};

/** The lost traces of a session, in the order read; the reports take it (NULL: none). */
struct gmt_lost {
	struct gmt_lost_trace *v;
	size_t n;
	/** more lost inputs, whose names could not be kept (out of memory): still counted, so
	 * that no report passes over them (gmt_lost_count(), gmt_lost_at()) */
	size_t unnamed;
};

/** How many inputs of @p l yielded nothing, named or not (NULL: none). */
static inline size_t
gmt_lost_count(const struct gmt_lost *l)
{
	return l ? l->n + l->unnamed : 0;
}

/** The @p i th lost input of @p l (i < gmt_lost_count()): its path and reason, as the reports
 * say them; past the named ones, words for one whose name could not be kept. */
static inline void
gmt_lost_at(const struct gmt_lost *l, size_t i, const char **file, const char **why)
{
	if (i < l->n) {
		*file = l->v[i].file;
		*why = l->v[i].why;
	} else {
		*file = "(an input whose name could not be kept)";
		*why = "out of memory";
	}
}

/** The symbolized stack @p id of @p p; NULL for 0, unknown ids, or no stacks. */
static inline const struct gmt_cstack *
gmt_process_stack(const struct gmt_process *p, uint32_t id)
{
	return p->stacks ? gmt_callstacks_get(p->stacks, id) : NULL;
}

#endif
