/*
 * @brief `gpumemtrace diff`: what changed between two runs' JSON reports, per call site (bytes
 * live at the peak, bytes leaked) and in total (peak held, leaked, failed allocations).
 *
 * Sites are matched across runs by their call site (function, file and line, or module and
 * offset), the allocating call and the memory kind, summed over processes and devices: process
 * indices and stack ids mean nothing across two runs. An address alone (a frame in no module)
 * is kept as the site's text: two runs rarely share it, which is the honest answer.
 *
 * When either run has the tensor level (processes[].tensors: the PyTorch layer's blocks), the
 * same for it: PyTorch's peak of memory_allocated() and the blocks live at exit in total, and per
 * tensor site (its site and two callers, as the report's rows) the bytes at the peak and at exit.
 */
#ifndef GMT_GATE_DIFF_H
#define GMT_GATE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/** One figure in both runs. */
struct gmt_change {
	int64_t before, after;
};

/** |after - before|. */
uint64_t gmt_change_abs(const struct gmt_change *c);

/** One call site of either run. */
struct gmt_diff_site {
	char *key; /**< site text, api, kind: what matches across runs */
	json_t
	    *frame; /**< the call-site frame of the first run that had it (a reference), or NULL */
	char *api, *kind;
	struct gmt_change peak, leaked;
};

/** The totals compared, in the order they are shown. */
enum gmt_diff_total {
	GMT_DIFF_PEAK_HELD = 0, /**< summary.peak_held_bytes */
	GMT_DIFF_LEAKED,	/**< summary.leaked_bytes */
	GMT_DIFF_FAILED,	/**< summary.failed_allocations (a count, not bytes) */
	GMT_DIFF_NTOTALS,
};

/** The total's key in summary{} (and in diff's JSON `totals`). */
const char *gmt_diff_total_key(enum gmt_diff_total k);

/** The tensor level's totals, in the order they are shown. */
enum gmt_diff_tensor_total {
	GMT_DIFF_T_PEAK = 0, /**< the sum over processes of tensors.peak.allocated */
	GMT_DIFF_T_LIVE_END, /**< the sum of tensors.live_at_exit[].bytes */
	GMT_DIFF_NTENSOR,
};

/** The tensor total's key in diff's JSON `tensors.totals`. */
const char *gmt_diff_tensor_key(enum gmt_diff_tensor_total k);

/** One tensor site of either run (processes[].tensors.peak_sites[] / live_at_exit[] rows). */
struct gmt_diff_tsite {
	char *site;    /**< the row's site text */
	char *callers; /**< its callers' texts, joined by " <- " ("" for none): what matches */
	json_t *callers_json; /**< the callers array of the first run that had it (a reference) */
	struct gmt_change peak, live_end;
};

struct gmt_diff {
	struct gmt_change totals[GMT_DIFF_NTOTALS];
	bool tensors; /**< either run has a tensor level: the fields below mean something */
	struct gmt_change tensor_totals[GMT_DIFF_NTENSOR];
	struct gmt_diff_tsite *tv; /**< largest change first, then by site and callers */
	size_t tn, tchanged;
	struct gmt_diff_site *v; /**< largest change first (the larger of peak and leaked), then
				      by key: the same order on every run */
	size_t n;
	size_t changed; /**< v[0 .. changed) changed, the rest did not */
};

/**
 * Compare @p base with @p next into @p out (gmt_diff_free() it, whatever the result): their
 * peak_sites[] and the leaks summary.leaked_bytes counts (leak_sites[] at exit, counted, less
 * what a caching allocator held). Returns 0, or -ENOMEM.
 */
int gmt_diff_run(struct gmt_diff *out, const json_t *base, const json_t *next);

void gmt_diff_free(struct gmt_diff *d);

#endif
