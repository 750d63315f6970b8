/*
 * @brief Report formats built from the JSON report document: a self-contained HTML page and a
 * Chrome trace-event file for ui.perfetto.dev (docs/report-formats.md).
 *
 * Both read only gmt_report_json_doc()'s keys (docs/report-json.md), so they state the same facts
 * as `--format json`; a key the document lacks (an older analysis) is treated as absent. The
 * `_doc` variants take a document directly, so tests can feed hand-made ones.
 */
#ifndef GMT_REPORT_REPORT_FORMATS_H
#define GMT_REPORT_REPORT_FORMATS_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/report/report.h"

/**
 * One HTML file that needs no network: the JSON document embedded as data (escaped so that
 * nothing in it can end its script element) and the page's own script renders it as text only.
 * Returns 0, -EIO when it could not be written, or -ENOMEM.
 */
int gmt_report_html(FILE *out,
		    const struct gmt_process *procs,
		    size_t n,
		    const struct gmt_lost *lost,
		    const struct gmt_cat_rules *categories);

/** gmt_report_html() of a ready document (not consumed). */
int gmt_report_html_doc(FILE *out, const json_t *doc);

/**
 * Chrome trace-event JSON ("traceEvents"): a process per trace, counter tracks of live bytes per
 * device and kind, instant events for markers and failed allocations, marker ranges as complete
 * slices on their thread's track. Returns 0, -EIO when it could not be written, or -ENOMEM
 * (nothing written).
 */
int gmt_report_perfetto(FILE *out, const struct gmt_process *procs, size_t n);

/**
 * A PyTorch memory snapshot pickle (report_snapshot.c) of the first of @p procs with block lines
 * (else the first), which must have been read stored (struct gmt_session_options.stored): its
 * events are walked again. 0, -ENOMEM, -EIO, or -EINVAL (a streamed read); @p diag gets a note
 * when several processes were given.
 */
int gmt_report_pytorch_snapshot(FILE *out, const struct gmt_process *procs, size_t n, FILE *diag);

/**
 * One CSV file per record type in directory @p dir (made when missing; its files overwritten):
 * processes, allocations with what ended them, failures, readings, markers, blocks, segments,
 * sites, and the trace files of @p lost (report_csv.c, docs/sql.md). The procs must have been
 * read stored. 0, -ENOMEM, -EIO (said on @p diag, naming the file), or -EINVAL (a streamed
 * read).
 */
int gmt_report_csv(const char *dir,
		   const struct gmt_process *procs,
		   size_t n,
		   const struct gmt_lost *lost,
		   FILE *diag);

/** gmt_report_perfetto() of a ready document (not consumed). */
int gmt_report_perfetto_doc(FILE *out, const json_t *doc);

#endif
