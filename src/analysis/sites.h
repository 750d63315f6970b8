/*
 * @brief Grouping by call site: leaks, the allocations live at a peak, failed allocations.
 *
 * The model groups by stack id (one row per distinct raw stack); people think in call sites.
 * A site group merges the rows of one process whose stacks have the same call-site frame
 * (callstack.h: the innermost frame of the user's code), the same call (api, driver) and kind,
 * and for peaks the same device. Each group keeps its stacks, largest first, for `--stack full`
 * and the JSON report.
 */
#ifndef GMT_ANALYSIS_SITES_H
#define GMT_ANALYSIS_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/model.h"

/** One input row: a (stack, call, kind) with its bytes and count. */
struct gmt_site_item {
	size_t proc; /**< index of the model among the report's */
	const struct gmt_model *m;
	uint32_t stack;
	uint16_t api, driver;
	uint8_t kind;
	int32_t device; /**< peaks: the device; else ignored (0) */
	uint64_t bytes;
	uint64_t count;
	uint64_t seq; /**< failed: the event's seq (groups keep the first) */
};

/** One stack of a group. */
struct gmt_site_stack {
	uint32_t stack;
	const struct gmt_cstack *cs; /**< NULL when the stack is unknown (0, or not in the trace) */
	uint64_t bytes;
	uint64_t count;
};

struct gmt_site {
	size_t proc;
	const struct gmt_model *m;
	const struct gmt_cframe *frame; /**< the call site; NULL when no stack is known */
	const struct gmt_cstack *cs;	/**< the group's largest known stack, NULL when none */
	uint16_t api, driver;
	uint8_t kind;
	int32_t device;
	uint64_t bytes;
	uint64_t count;
	uint64_t first_seq;
	struct gmt_site_stack *stacks; /**< largest first (then by stack id) */
	size_t nstacks;
};

struct gmt_sites {
	struct gmt_site *v;
	size_t n;
};

/**
 * Group @p items (@p n of them) by call site into @p out, largest `bytes` first; ties by process,
 * then call site, call and kind, so the order is the same on every run. With @p by_seq, groups
 * are ordered by their first seq instead (failed allocations, in the order they happened).
 */
void
gmt_sites_group(const struct gmt_site_item *items, size_t n, bool by_seq, struct gmt_sites *out);

void gmt_sites_free(struct gmt_sites *s);

/** Every leak row of @p models (all processes) as site items. */
struct gmt_site_item *
gmt_sites_leak_items(struct gmt_model *const *models, size_t n, size_t *nitems);

/** The allocations live at each device's peak, of every process, as site items. */
struct gmt_site_item *
gmt_sites_peak_items(struct gmt_model *const *models, size_t n, size_t *nitems);

/** Every failed allocation (one item per event), of every process, as site items. */
struct gmt_site_item *
gmt_sites_failed_items(struct gmt_model *const *models, size_t n, size_t *nitems);

#endif
