/*
 * @brief The summary of one trace (`gpumemtrace summarize`): the JSON report of that trace, cut
 * to a bounded size, plus `kind: "summary"` (docs/report-formats.md, "Summary files").
 *
 * Every figure a summary holds is taken from the JSON report document of the same trace
 * (gmt_report_json_doc_frameless()) or, for the few the report does not state (NCCL's bytes
 * at each device's peak, each device's peak in wall-clock time), from the same model by the
 * report's own rules (gmt_process_library(), the report's wall-clock formula): a summary and
 * `report --format json` on its trace never disagree. Lists are cut to their first entries (the
 * report's order: largest first), each with how many the report had (`..._all`); the held-bytes
 * timeline is downsampled; call stacks are kept for the rows kept, their visible frames only.
 * What stays is bounded by the constants below, whatever the trace's length.
 */
#ifndef GMT_REPORT_SUMMARY_H
#define GMT_REPORT_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/model/model.h"
#include "analysis/session/process.h"

/** The summary's schema version, its "summary_version" key. */
#define GMT_SUMMARY_VERSION 1

/** Rows kept of each list of sites, failures and OOMs. */
#define GMT_SUMMARY_TOP 10
/** Of each site row, the stacks and callers kept (largest first). */
#define GMT_SUMMARY_ROW_STACKS 3
/** Points of each device's held-bytes timeline. */
#define GMT_SUMMARY_TIMELINE_POINTS 256
/** Call stacks kept (one per kept row, the row's largest), and visible frames of each. */
#define GMT_SUMMARY_STACKS 32
#define GMT_SUMMARY_FRAMES 16

/**
 * The uncertainty of a summary's wall clock (its "clock_uncertainty_s") unless `summarize
 * --clock-uncertainty` states another: NTP keeps hosts' clocks within milliseconds.
 */
#define GMT_SUMMARY_CLOCK_UNCERTAINTY_S 0.01

typedef struct json_t json_t;

/**
 * The summary of process @p proc of @p procs (json_decref() it), with the trace files of
 * @p lost (NULL: none) that yielded nothing among the inputs of its rank ("lost_traces", as
 * the report's). NULL out of memory. The caller adds what the analysis does not know (the
 * program's version: "summarized_by").
 */
json_t *gmt_summary_doc(const struct gmt_process *procs,
			size_t n,
			size_t proc,
			const struct gmt_lost *lost);

/**
 * The summary of a rank whose trace yielded nothing (@p lost: its file and the reader's
 * reason): "kind", "summary_version", "report_version", "file" (the first of @p lost) and
 * "lost_traces", no process and no figure, so that a merge or a check over the summaries knows
 * the rank is missing. NULL when @p lost is empty, or out of memory.
 */
json_t *gmt_summary_lost_doc(const struct gmt_lost *lost);

/** Whether summary @p s is one of gmt_summary_lost_doc(): no process, a lost trace. */
bool gmt_summary_is_lost(const json_t *s);

#endif
