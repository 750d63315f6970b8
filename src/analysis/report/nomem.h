/*
 * @brief Out of memory in report code.
 *
 * A report is built from lists (site groups, rows, the ranked sites) before it is printed. A list
 * that cannot get its memory is left empty and marks the report being made as failed, the way
 * errno marks a call: the helpers that build lists need no failure path of their own, and every
 * report entry point (report.h, report_formats.h) starts clean and ends with -1 (NULL for a
 * document) when the mark is set, so the CLI says "out of memory" (exit status 3) instead of
 * printing a short report. One mark per thread.
 */
#ifndef GMT_REPORT_NOMEM_H
#define GMT_REPORT_NOMEM_H

#include <stdbool.h>
#include <stddef.h>

struct gmt_process;

extern _Thread_local bool gmt_report_nomem;

/** A report starts: no mark. */
static inline void
gmt_report_start(void)
{
	gmt_report_nomem = false;
}

/**
 * Whether the report being made over @p procs lost something for lack of memory: the mark, or
 * a stack of theirs that could not be built or symbolized (gmt_callstacks_error()).
 */
bool gmt_report_failed(const struct gmt_process *procs, size_t n);

/** Mark the report being made as failed for lack of memory; NULL, for `return gmt_nomem()`. */
static inline void *
gmt_nomem(void)
{
	gmt_report_nomem = true;
	return 0;
}

#endif
