/*
 * @brief The tensor level in the text and JSON reports (report_tensors_text.c,
 * report_tensors_json.c; their rows tensor_rows.h; model/tensors.h).
 */
#ifndef GMT_REPORT_TENSORS_H
#define GMT_REPORT_TENSORS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/model/model.h"
#include "analysis/report/categories.h"
#include "analysis/session/process.h"

/** The "PyTorch tensors" section of the text report, for the procs that have block lines;
 * @p rules: the categories' (report --categories), NULL for the built-in ones. */
void gmt_text_tensors(FILE *out,
		      const struct gmt_process *procs,
		      size_t n,
		      const struct gmt_cat_rules *rules);

/** `run`'s summary line of the tensor level: the peak in tensors, what is live and cached at exit,
 * growing tensor sites, OOMs. Nothing without block lines. */
void
gmt_text_tensors_summary(FILE *out, const char *prefix, const struct gmt_process *procs, size_t n);

/**
 * The stacks the "tensors" object of @p m names (its rows' `stack`: peak_sites[],
 * live_at_exit[], growth[]), so that call_stacks[] has their frames (check's suppressions match
 * them): a new array (free()) of *@p n ids, NULL when none (or out of memory: the report is
 * marked failed).
 */
uint32_t *gmt_tensors_row_stacks(const struct gmt_process *p, size_t *n);

/** The "tensors" object of a process in the JSON report; NULL when @p m has no block lines.
 * @p rules as gmt_text_tensors()'s. */
json_t *gmt_json_tensors(const struct gmt_process *p, const struct gmt_cat_rules *rules);

#endif
