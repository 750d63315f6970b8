/*
 * @brief `gpumemtrace diff`: what changed between two runs' JSON reports, per call site (bytes
 * live at the peak, bytes leaked) and in total (peak held, leaked, failed allocations).
 *
 * Sites are matched across runs by their call site (function, file and line, or module and
 * offset), the allocating call and the memory kind, summed over processes and devices: process
 * indices and stack ids mean nothing across two runs. An address alone (a frame in no module)
 * is kept as the site's text: two runs rarely share it, which is the honest answer.
 */
#ifndef GMT_GATE_DIFF_H
#define GMT_GATE_DIFF_H

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

struct gmt_diff {
	struct gmt_change totals[GMT_DIFF_NTOTALS];
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
