/*
 * @brief The tensor level's rows, shared by its text (report_tensors_text.c) and JSON
 * (report_tensors_json.c) writers: a tensor's call site and callers, the rows of each view
 * (at the peak, at exit, growing, freed by the collector), their categories and holders, and
 * what an OOM's figures say (tensor_rows.c). Internal to the report room.
 *
 * A tensor's call site is the innermost Python frame outside torch's own files (the line of the
 * user's code that made it), else the stack's call-site frame; the next two such frames outward
 * are its callers, so a helper called from three lines shows as three sites, each with the line
 * that called it. Sites with the same site and callers are one row.
 */
#ifndef GMT_REPORT_TENSOR_ROWS_H
#define GMT_REPORT_TENSOR_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/model/model.h"
#include "analysis/model/tensors.h"
#include "analysis/report/categories.h"
#include "analysis/session/process.h"

#define GMT_TROW_CALLERS 2

struct gmt_tsite_name {
	char site[384];
	char callers[GMT_TROW_CALLERS][384];
	int ncallers;
	/* the innermost frame of the user's own files (gmt_python_library_file()), when the site
	 * is not one: the line of the program that led to a library's tensor ("" when none) */
	char user[384];
};

/* One row: the sites with one name. */
struct gmt_trow {
	struct gmt_tsite_name name;
	int32_t device;
	uint64_t bytes, blocks, requested;
	uint64_t first, last;
	uint32_t rises;
	uint32_t stack; /* the first */
	enum gmt_category cat;
	uint32_t
	    held_by; /* the holder that keeps the most of one of its sites (trace holders + 1) */
	uint64_t held_bytes, held_blocks;
};

enum gmt_tview { GMT_TVIEW_AT_PEAK, GMT_TVIEW_AT_EXIT, GMT_TVIEW_GROWING, GMT_TVIEW_GC_FREED };

/** The user's line that made a tensor of stack @p id, and its callers. */
void gmt_trow_site(const struct gmt_process *p, uint32_t id, struct gmt_tsite_name *n);

/** The category of the tensors of stack @p id (categories.h's rules over its frames). */
enum gmt_category
gmt_trow_category(const struct gmt_process *p, const struct gmt_cat_rules *rules, uint32_t id);

/**
 * The rows of one view of @p m's tensors, largest first: a new array (free()), *@p n rows; NULL
 * when there are none (or out of memory: the report is marked failed). @p rules may be NULL (no
 * categories needed).
 */
struct gmt_trow *gmt_trow_rows(const struct gmt_process *p,
			       enum gmt_tview view,
			       const struct gmt_cat_rules *rules,
			       size_t *n);

/** The Python object that keeps a row's tensors at the end (a trace's holders line), or NULL. */
const struct gmt_trace_holder *gmt_trow_holder(const struct gmt_model *m, const struct gmt_trow *r);

/** What would have helped an OOM, in PyTorch's settings, and why: up to 4 lines into @p help. */
size_t gmt_trow_oom_help(const struct gmt_trace *tr, const struct gmt_toom *o, const char *help[4]);

/** The OOM's cause as the JSON names it. */
const char *gmt_trow_oom_cause(const struct gmt_toom *o);

/**
 * The device memory outside the cache at a device's tensor peak: the CUDA-level held bytes less
 * the cache's segments, which are CUDA-level allocations too in a trace. A PyTorch snapshot read
 * as a trace has no segment allocations: what it holds at the CUDA level (our export's memory
 * not PyTorch's) is all outside the cache.
 */
uint64_t gmt_trow_not_pytorch(const struct gmt_trace *tr, const struct gmt_tdevice *d);

/**
 * The part of a device's tensor peak that stays across steps: per site, what was live at the peak
 * and still at the last mark (min of the two); the rest of the peak comes and goes within a step.
 * Meaningful with two marks or more.
 */
uint64_t gmt_trow_static_at_peak(const struct gmt_tensors *t, const struct gmt_tdevice *d);

#endif
