/*
 * @brief Grouping by call site: leaks, the allocations live at a peak, failed allocations, growth
 * and churn.
 *
 * The model groups by stack id (one row per distinct raw stack); people think in call sites.
 * A site group merges the rows of one process whose stacks have the same call-site frame
 * (callstack.h: the innermost frame of the user's code), the same call (api, driver) and kind,
 * and for peaks the same device. Each group keeps its stacks, largest first, for `--stack full`
 * and the JSON report.
 */
#ifndef GMT_REPORT_SITES_H
#define GMT_REPORT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/report/explain.h"

/** Which call sites gmt_sites_ranked() lists, and by what. */
enum gmt_site_order {
	GMT_SITES_GROWING, /**< the sites that grow (gmt_site_grows()), by growth in bytes */
	GMT_SITES_BUSIEST, /**< the sites that allocated, by allocations */
};

/** One call site of one process, as gmt_sites_ranked() lists it. */
struct gmt_site_ref {
	size_t proc;		     /**< index of the process among those given */
	const struct gmt_process *p; /**< = &procs[proc] */
	const struct gmt_site_stats *st;
	uint64_t key; /**< what they are ranked by */
};

/**
 * The sites of @p procs that @p order selects, largest key first (then by model, then by what
 * the site is: its stack id, device, kind and API names, so that the order does not depend on the
 * order of the trace's lines). A new array (free()), *@p count entries.
 */
struct gmt_site_ref *gmt_sites_ranked(const struct gmt_process *procs,
				      size_t n,
				      enum gmt_site_order order,
				      size_t *count);

/** One input row: a (stack, call, kind) with its bytes and count. */
struct gmt_site_item {
	size_t proc;		     /**< index of the process among the report's */
	const struct gmt_process *p; /**< = &procs[proc] */
	uint32_t stack;
	uint16_t api, driver;
	uint8_t kind;
	int32_t device; /**< peaks: the device; else ignored (0) */
	uint64_t bytes;
	uint64_t count;
	uint64_t seq;			 /**< failed: the event's seq (groups keep the first) */
	const struct gmt_site_stats *st; /**< growth, churn: the row of the model's site table */
};

/** One stack of a group. */
struct gmt_site_stack {
	uint32_t stack;
	const struct gmt_cstack *cs; /**< NULL when the stack is unknown (0, or not in the trace) */
	uint64_t bytes;
	uint64_t count;
	const struct gmt_site_stats *st; /**< growth, churn: its row of the site table */
};

struct gmt_site {
	size_t proc;
	const struct gmt_process *p;	/**< = &procs[proc] */
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

/** How gmt_sites_group() orders the groups. */
enum gmt_group_order {
	GMT_GROUP_BY_BYTES, /**< largest `bytes` first */
	GMT_GROUP_BY_SEQ, /**< by process, then first seq (failed allocations, as they happened) */
	GMT_GROUP_BY_COUNT, /**< largest `count` first */
};

/**
 * Group @p items (@p n of them) by call site into @p out, in @p order; ties by process, then
 * call site, call and kind, so the order is the same on every run.
 */
void gmt_sites_group(const struct gmt_site_item *items,
		     size_t n,
		     enum gmt_group_order order,
		     struct gmt_sites *out);

void gmt_sites_free(struct gmt_sites *s);

/** Every leak row of @p procs (all processes) as site items. */
struct gmt_site_item *
gmt_sites_leak_items(const struct gmt_process *procs, size_t n, size_t *nitems);

/** The allocations live at each device's peak, of every process, as site items. */
struct gmt_site_item *
gmt_sites_peak_items(const struct gmt_process *procs, size_t n, size_t *nitems);

/** Every failed allocation (one item per event), of every process, as site items. */
struct gmt_site_item *
gmt_sites_failed_items(const struct gmt_process *procs, size_t n, size_t *nitems);

/**
 * Rows of the procs' site tables as site items, each with its row (`st`): with
 * GMT_SITES_GROWING the sites that grow (`bytes` their growth), with GMT_SITES_BUSIEST the sites
 * that allocated (`bytes` allocated, `count` allocations). Group them to merge the stacks of one
 * call site.
 */
struct gmt_site_item *gmt_sites_stat_items(const struct gmt_process *procs,
					   size_t n,
					   enum gmt_site_order order,
					   size_t *nitems);

/**
 * The growth of a group of growing sites: `first` and `last` summed over its stacks; its rises
 * and falls are per stack and do not add up, so *@p min_rises and *@p max_rises give their range
 * (`rises`/`falls` of the result are those of the stack that grew most).
 */
struct gmt_growth
gmt_site_group_growth(const struct gmt_site *g, uint32_t *min_rises, uint32_t *max_rises);

/** One caller of a group's call site, with what went through it. */
struct gmt_site_caller {
	const struct gmt_cframe *frame; /**< NULL: the site had no caller in the stack */
	uint64_t bytes, count;
};

/**
 * The callers of a group's call site (a user's allocation helper called from many lines): per
 * stack, the frame that called the site's function (the next frame outward of the site's kind,
 * Python or native, not left out of stacks), merged by frame, largest first (ties: first seen).
 * Fills at most @p max into @p out and returns how many distinct callers there are (the text
 * and JSON show the same ones; heaptrack shows a site's callers the same way).
 */
size_t gmt_site_callers(const struct gmt_site *g, struct gmt_site_caller *out, size_t max);

/** The traffic of a group of sites: counts and lifetime histograms of its stacks summed. */
struct gmt_site_stats gmt_site_group_traffic(const struct gmt_site *g);

#endif
