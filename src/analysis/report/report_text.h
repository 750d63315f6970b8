/*
 * @brief Internal to the text report: the sections about devices (peaks by kind, pool slack, the
 * NVML ledger, the kinds legend) in report_devices.c, and the analyses in report_text_analyses.c:
 * report_text.c calls them; their words are textfmt.h's.
 */
#ifndef GMT_REPORT_REPORT_TEXT_H
#define GMT_REPORT_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/model/model.h"
#include "analysis/session/process.h"

/** The peak of device memory held on every device, each with its kinds' peaks and ends. */
void gmt_text_devices(FILE *out, const struct gmt_process *procs, size_t n);

/** NVML against tracked device memory, per device (nothing when no trace has a reading). */
void gmt_text_ledger(FILE *out, const struct gmt_process *procs, size_t n);

/** One line per kind that appears in the traces: what its bytes are. */
void gmt_text_kinds(FILE *out, const struct gmt_process *procs, size_t n);

/* report_text_analyses.c */

/** The --from/--to range the report covers (nothing for the whole trace). */
void gmt_text_range(FILE *out, const struct gmt_process *procs, size_t n);

/** Why allocations failed: cause and explanation of the first few (nothing without failures). */
void gmt_text_oom(FILE *out, const struct gmt_process *procs, size_t n);

/** Call sites whose live bytes keep rising across markers or snapshots. */
void gmt_text_growth(FILE *out, const struct gmt_process *procs, size_t n);

/** The call sites with the most allocations, with temporaries and lifetimes. */
void gmt_text_churn(FILE *out, const struct gmt_process *procs, size_t n);

/** Address-space holes at the peak, pool slack, requested against granted sizes. */
void gmt_text_fragmentation(FILE *out, const struct gmt_process *procs, size_t n);

#endif
