/*
 * @brief The analysis model: one trace's events replayed in seq order.
 *
 * Replaying gives what the tracer deliberately does not compute in the target process: frees
 * paired with their allocations by address, live bytes per (device, kind) over time, the peak of
 * each device and the moment it happened, what is still live at the end grouped by call site, and
 * the failed allocations. Several traces (one per process) are several models; gmt_model_totals()
 * sums them for the report.
 */
#ifndef GMT_ANALYSIS_MODEL_H
#define GMT_ANALYSIS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

/** The largest value of a live-bytes series and when it was first reached. */
struct gmt_peak {
	uint64_t bytes;
	uint64_t ts;
	uint64_t seq;
};

/** One device of one process. Pinned host memory counts on the device current at the call. */
struct gmt_device_stats {
	int32_t device;
	uint64_t live[GMT_KIND_COUNT]; /**< at the end of the trace */
	uint64_t live_allocs[GMT_KIND_COUNT];
	uint64_t live_total;
	struct gmt_peak peak;			   /**< of live_total (all kinds together) */
	uint64_t peak_by_kind[GMT_KIND_COUNT];	   /**< live per kind at the moment of `peak` */
	struct gmt_peak kind_peak[GMT_KIND_COUNT]; /**< each kind's own peak, independently */
	uint64_t allocations;			   /**< successful allocations */
};

/** Allocations still live at the end of a trace, grouped by call site (stack, api). */
struct gmt_leak {
	uint32_t stack;
	uint16_t api; /**< trace string index */
	uint8_t kind;
	uint64_t bytes;
	uint64_t allocations;
};

/** One change of live bytes: after event `seq`, (device, kind) holds `bytes`. */
struct gmt_live_point {
	uint64_t seq;
	uint64_t ts;
	uint64_t bytes;
	int32_t device;
	uint8_t kind;
};

struct gmt_model {
	const struct gmt_trace *trace;

	struct gmt_device_stats *devices; /**< sorted by device number */
	size_t ndevices;

	struct gmt_leak *leaks; /**< largest first */
	size_t nleaks;
	uint64_t live_end_bytes; /**< sum over leaks */
	uint64_t live_end_allocations;

	const struct gmt_trace_event **failed; /**< failed allocations, in seq order */
	size_t nfailed;

	struct gmt_live_point *timeline; /**< every change of live bytes, in seq order */
	size_t ntimeline;

	uint64_t allocations;	  /**< successful */
	uint64_t frees;		  /**< successful and paired */
	uint64_t unmatched_frees; /**< successful frees of an address with no live allocation */
	uint64_t failed_frees;	  /**< result != 0: changed nothing */
	uint64_t resets;
	uint64_t reused_addresses; /**< an allocation at a live address: its free was never seen */
};

/** Replay @p trace. The model points into the trace, which must outlive it. */
struct gmt_model *gmt_model_build(const struct gmt_trace *trace);

void gmt_model_free(struct gmt_model *model);

/** Sums over several processes, as the report's first lines state them. */
struct gmt_totals {
	size_t processes;
	size_t died;	 /**< traces without a trailer */
	uint64_t events; /**< event and marker lines used */
	uint64_t dropped;
	uint64_t bad_lines;
	/* the largest single (process, device) peak; peak_model NULL when nothing was allocated */
	const struct gmt_model *peak_model;
	const struct gmt_device_stats *peak_device;
	uint64_t peak_bytes;
	/* live at the end of processes that exited normally: leaks */
	uint64_t leaked_bytes;
	uint64_t leaked_allocations;
	size_t leak_sites;
	/* live at the end of processes that died: not leaks, the state when they stopped */
	uint64_t live_at_end_bytes;
	uint64_t live_at_end_allocations;
	size_t live_at_end_sites;
	size_t failed;
	uint64_t unmatched_frees;
	uint64_t failed_frees;
	uint64_t reused_addresses;
};

void gmt_model_totals(struct gmt_model *const *models, size_t n, struct gmt_totals *out);

/** Events the trace holds: event and marker lines (comparable to the trailer's "events"). */
uint64_t gmt_model_events(const struct gmt_model *model);

#endif
