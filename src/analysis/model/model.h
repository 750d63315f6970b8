/*
 * @brief The analysis model: one trace's events replayed in seq order.
 *
 * Replaying gives what the tracer deliberately does not compute in the target process: frees
 * paired with their allocations by address or handle, live bytes per (device, kind) over time,
 * the device memory each device held at its peak and when, what is still live at the end grouped
 * by call site, the failed allocations, and what was tracked at each NVML reading (the ledger).
 * Several traces (one per process) are several models; report/ sums them (gmt_report_totals()).
 */
#ifndef GMT_MODEL_MODEL_H
#define GMT_MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/model/tensors.h"
#include "analysis/model/tkinds.h"
#include "analysis/reader/trace.h"

struct gmt_live;

/** The largest value of a live-bytes series and when it was first reached. */
struct gmt_peak {
	uint64_t bytes;
	uint64_t ts;
	uint64_t seq;
};

/** One memory kind on one device of one process. */
struct gmt_kind_stats {
	uint64_t live;	      /**< bytes at the end of the trace (readings: the last reading) */
	uint64_t live_allocs; /**< live at the end (pool_reserve: pools holding memory) */
	struct gmt_peak peak; /**< the kind's own peak, independent of the other kinds */
	uint64_t peak_allocs; /**< live allocations at that moment */
	uint64_t allocations; /**< successful allocations of this kind (0 for readings) */
};

struct gmt_leak;

/** Size histogram bucket b: allocations with 2^b <= size < 2^(b+1) (bucket 0 also holds 0). */
struct gmt_size_bucket {
	uint64_t allocations;
	uint64_t bytes;
};

#define GMT_SIZE_BUCKETS 64

/**
 * The address-space layout of a device's live allocations of one kind (ptrs table, kinds held:
 * device, pool): how far they spread and the holes between them. Each kind is laid out on its
 * own (cudaMalloc's and a pool's addresses come from different reservations, terabytes apart),
 * and a gap of 1 GiB or more starts another address range: it is neither a hole nor part of the
 * span. A hint only: the driver maps pages, so a hole is not free memory. The sum over kinds
 * (kind GMT_TK_NONE) adds each field up (largest_gap: the largest).
 */
struct gmt_gaps {
	bool valid;   /**< there were live allocations */
	uint8_t kind; /**< enum gmt_tkind; GMT_TK_NONE for the sum over kinds */
	uint64_t live_allocations;
	uint64_t span;	    /**< per address range, lowest address to the end of the highest
				 allocation, summed over the ranges */
	uint64_t ranges;    /**< address ranges */
	uint64_t gap_bytes; /**< sum of the holes */
	uint64_t largest_gap;
	uint64_t gaps;
};

/**
 * One device of one process. Host memory (pinned, registered) counts on the device current at
 * the call. `held` is gmt_kind_held(): the device memory this process holds.
 */
struct gmt_device_stats {
	int32_t device;
	struct gmt_kind_stats kinds[GMT_TK_COUNT];
	uint64_t held;			     /**< device memory held at the end */
	struct gmt_peak peak;		     /**< of held */
	uint64_t peak_by_kind[GMT_TK_COUNT]; /**< every kind's live bytes at `peak` */
	uint64_t allocations;		     /**< successful allocations of any kind */
	uint64_t pool_live_at_reserve_peak;  /**< live pool bytes when pool_reserve peaked */
	/**
	 * The allocations live at `peak` of the kinds that make up held memory (device, array,
	 * vmm_physical, pool), grouped by call site (stack, api, driver, kind), largest first
	 */
	struct gmt_leak *peak_sites;
	size_t npeak_sites;
	size_t peak_sites_cap;
	struct gmt_gaps peak_gaps; /**< layout of the live allocations at `peak`, all kinds */
	struct gmt_gaps peak_gaps_kind[GMT_TK_COUNT]; /**< the same per kind (valid: some) */
	struct gmt_size_bucket sizes[GMT_TK_COUNT][GMT_SIZE_BUCKETS]; /**< successful allocations */
	bool pool_read;		 /**< some pool_reserve reading was non-zero */
	uint64_t max_pool_slack; /**< largest pool_reserve - live pool bytes, after a reading */
	uint64_t max_pool_slack_ts;
	uint64_t requested_allocs; /**< allocations that said what was asked (pitched) */
	uint64_t requested_bytes;
	uint64_t requested_granted;
	bool dirty;		  /**< replay only: changed by the current event */
	bool peak_pending;	  /**< replay only: `peak` rose; its live set is not taken yet */
	uint64_t peak_gaps_bytes; /**< replay only: the peak `peak_gaps` was taken at */
	/** replay only: per kind (GMT_TK_COUNT: held), 1 + its index in the series; 0: none yet */
	uint32_t series[GMT_TK_COUNT + 1];
};

/** A site's live bytes sampled at markers or snapshots: does it keep growing? */
struct gmt_growth {
	uint64_t first; /**< at the first sample (0: the site had nothing live, or did not exist) */
	uint64_t last;
	uint32_t rises, falls; /**< intervals between samples in which it rose, fell */
	uint32_t born;	       /**< 1 + the first sample at which it held bytes; 0: none yet */
	uint32_t rises_live;   /**< of the rises, those from a sample at which it held bytes */
};

#define GMT_LIFETIME_BUCKETS 64

/**
 * One call site of one device: allocations of one (stack, api, driver, kind) on one device, and
 * their traffic over the trace (or the range).
 */
struct gmt_site_stats {
	uint32_t stack;
	uint16_t api;
	uint16_t driver;
	uint8_t kind;
	int32_t device;
	uint64_t live, live_allocs;
	uint64_t allocations, allocated_bytes;
	uint64_t frees; /**< of those allocations, freed */
	/** freed before any other allocation of the process was made (heaptrack's temporaries) */
	uint64_t temporaries, temporary_bytes;
	/** freed allocations by lifetime: bucket b holds 2^b <= ns < 2^(b+1) */
	uint32_t lifetime[GMT_LIFETIME_BUCKETS];
	struct gmt_growth at_markers, at_snapshots;
	/** replay only: sampled at the pops of outermost ranges, for a trace without marks */
	struct gmt_growth at_range_ends;
	/** replay only: sampled at automatic step marks, for a trace without marks of the user's */
	struct gmt_growth at_steps;
};

/** One failed allocation, with what the replay held on its device at that moment. */
struct gmt_oom_site {
	uint32_t site; /**< index into the model's sites */
	uint64_t bytes, allocations;
};

struct gmt_oom {
	const struct gmt_trace_event *ev;
	uint64_t held; /**< gmt_kind_held() of by_kind */
	uint64_t by_kind[GMT_TK_COUNT];
	uint64_t live_allocations; /**< of the kinds held that are allocations */
	bool has_pool_slack;
	int64_t pool_slack;		   /**< pool_reserve minus live pool bytes */
	const struct gmt_trace_nvml *nvml; /**< the device's latest reading before, or NULL */
	size_t nvml_index;		   /**< of that reading, SIZE_MAX none */
	struct gmt_gaps gaps;	    /**< the layout summed over kinds (largest_gap: of any kind) */
	struct gmt_oom_site *sites; /**< every site holding bytes of held kinds, largest first */
	size_t nsites;
};

/** A bound of `report --from/--to`: seconds from the trace's start, or a marker's label. */
struct gmt_range_bound {
	bool set;
	const char *label; /**< a marker label, or NULL for seconds */
	double seconds;
	const char *spec; /**< as given, for the report */
};

struct gmt_range_opt {
	struct gmt_range_bound from, to;
};

/** Where a range bound landed in one trace. */
struct gmt_range_point {
	bool found; /**< false: the label is not in the trace, or the time is past its end */
	uint64_t seq, ts;
};

/** Allocations still live at the end of a trace, grouped by call site (stack, api, driver). */
struct gmt_leak {
	uint32_t stack;
	uint16_t api;	 /**< trace string index */
	uint16_t driver; /**< trace string index, GMT_TRACE_NO_STRING when none */
	uint8_t kind;
	uint64_t bytes;
	uint64_t allocations;
};

/** A point of a series: from `ts` on, the series' value is `bytes`. */
struct gmt_point {
	uint64_t ts;
	uint64_t bytes;
};

/** Points kept per series; past that, time buckets keep each bucket's first, lowest, highest
 * and last point (so peaks are never lost), and memory stays bounded whatever the trace's length.
 */
#define GMT_SERIES_MAX_POINTS 4096

/** Live bytes of one (device, kind) over time, or held bytes of a device (kind GMT_TK_COUNT). */
struct gmt_series {
	int32_t device;
	uint8_t kind;
	bool exact; /**< every change is in `points` */
	struct gmt_point
	    *points; /**< in time order; at most GMT_SERIES_MAX_POINTS after finishing */
	size_t n, cap;
};

/** One change of live bytes: after event `seq`, (device, kind) holds `bytes`. */
struct gmt_live_point {
	uint64_t seq;
	uint64_t ts;
	uint64_t bytes;
	int32_t device;
	uint8_t kind;
};

/** What the replay tracked on a device at the moment of one NVML reading. */
struct gmt_ledger_point {
	const struct gmt_trace_nvml *nvml; /**< set when the model is finished */
	size_t nvml_index;		   /**< into the trace's nvml[] */
	uint64_t by_kind[GMT_TK_COUNT];
	uint64_t held; /**< gmt_kind_held(by_kind) */
};

struct gmt_model {
	const struct gmt_trace *trace;

	struct gmt_device_stats *devices; /**< sorted by device number */
	size_t ndevices;

	struct gmt_leak *leaks; /**< every kind, largest first */
	size_t nleaks;
	/* live at the end, counted kinds only (gmt_kind_counted()): what a leak total means */
	uint64_t live_end_bytes;
	uint64_t live_end_allocations;
	size_t live_end_sites;

	const struct gmt_trace_event **failed; /**< failed allocations, in seq order */
	size_t nfailed;
	struct gmt_trace_event *failed_events; /**< their copies, which failed[] points to */
	struct gmt_oom *oom;		       /**< oom[i] explains failed[i] */
	uint8_t *failed_class;	    /**< failed_class[i]: enum gmt_fail_class of failed[i] */
	size_t nfailed_counted;	    /**< of failed[], GMT_FAIL_COUNTED: the program's failures */
	size_t nprobes, nrecovered; /**< GMT_FAIL_PROBE, GMT_FAIL_RECOVERED */
	size_t *fail_pending;	    /**< replay only: failures whose class the next events decide */
	size_t nfail_pending, fail_pending_cap;

	/** live bytes over time per (device, kind), and held bytes per device (kind GMT_TK_COUNT)
	 */
	struct gmt_series *series;
	size_t nseries;

	struct gmt_site_stats *sites; /**< every call site of every device, in order of first use */
	size_t nsites;
	/**
	 * markers sampled for growth (inside the range): the marks, not range pushes and pops (a
	 * step's ranges would split its interval); with fewer than two marks, the pops of the
	 * outermost ranges
	 */
	uint32_t marker_samples;
	enum gmt_growth_basis growth_basis;	/**< what marker_samples are (set at finish) */
	uint32_t snapshot_samples;		/**< snapshots sampled for growth */
	const char *first_marker, *last_marker; /**< labels of the first and last sampled marker */

	struct gmt_range_opt range; /**< as asked (both unset: the whole trace) */
	struct gmt_range_point range_from, range_to;

	struct gmt_ledger_point *ledger; /**< one per NVML reading of the trace, in its order */
	size_t nledger;

	uint64_t allocations;	  /**< successful */
	uint64_t frees;		  /**< successful free calls that released something */
	uint64_t unmatched_frees; /**< successful frees of an address or handle nothing holds */
	uint64_t failed_frees;	  /**< result != 0: changed nothing */
	uint64_t resets;
	uint64_t reused_addresses;  /**< an allocation at a live address: its free was never seen */
	uint64_t retains;	    /**< successful retains of a known handle */
	uint64_t unmatched_retains; /**< retains of a handle the trace never saw created */
	uint64_t readings;	    /**< usage readings applied */

	/** the tensor level (the trace's block lines; tensors.h), NULL when it has none */
	struct gmt_tensors *tensors;
	/** with a range: the blocks made in it and live at its end (range_tensors.h) */
	struct gmt_range_tensor *range_tensors;
	size_t nrange_tensors;
	bool range_tensors_taken;
	/**
	 * 0, or -ENOMEM: the replay ran out of memory and stopped there (what it ignored since is
	 * lost: the figures are not the trace's; gmt_model_finish() says so)
	 */
	int error;
	struct replay *replay; /**< the replay's state until gmt_model_finish() */
	/**
	 * NULL, or called with @p live_ctx whenever an allocation becomes live (@p added true: its
	 * entry, the allocating event) and when it stops being live (false: the event that ended
	 * it: a free, an unmap, a reset, a release, or an allocation at its address). Set between
	 * gmt_model_new() and the first event: the CSV export pairs allocations with their ends
	 * exactly as the replay does (report_csv.c). l->seq is the allocation's seq.
	 */
	void (*on_live)(void *live_ctx,
			const struct gmt_live *l,
			const struct gmt_trace_event *ev,
			bool added);
	void *live_ctx;
};

/** Whether anything happened on @p d: an allocation or a non-zero reading. */
bool gmt_device_active(const struct gmt_device_stats *d);

/**
 * The NVML ledger rows of one device: the last reading, and the reading nearest in time to the
 * device's peak of held memory when that is another snapshot.
 */
struct gmt_ledger_row {
	const struct gmt_ledger_point *p;
	bool last;	      /**< the device's last reading (else: the one nearest the peak) */
	bool nearest_to_peak; /**< this reading is the one nearest the held peak */
	bool per_process;     /**< NVML gave process_used; else the device's used is the basis */
	uint64_t nvml_bytes;  /**< process_used, or used */
	int64_t untracked;    /**< nvml_bytes - held (negative: tracked exceeds NVML) */
};

/**
 * The ledger rows of @p m, by device, last reading first: a new array (free()), *@p n rows; NULL
 * when there are none, or out of memory (errno ENOMEM).
 */
struct gmt_ledger_row *gmt_ledger_rows(const struct gmt_model *m, size_t *n);

/** Replay @p trace. The model points into the trace, which must outlive it. NULL out of memory. */
struct gmt_model *gmt_model_build(const struct gmt_trace *trace);

/**
 * A model fed event by event, in seq order, as a trace is read (gmt_trace_read_sink()): new,
 * then every event and marker, then finish. @p trace is the trace being read (the model reads
 * its strings, readings and stacks as they arrive); @p range may be NULL (everything).
 */
struct gmt_model *gmt_model_new(const struct gmt_trace *trace, const struct gmt_range_opt *range);
void gmt_model_event(struct gmt_model *m, const struct gmt_trace_event *ev);
void gmt_model_marker(struct gmt_model *m, const struct gmt_trace_marker *mk);
/** The end of the trace: 0, or m->error (the model is then only for gmt_model_free()). */
int gmt_model_finish(struct gmt_model *m);

/** Replay only what lies in @p range (NULL: everything); see docs/report-json.md, "range". */
struct gmt_model *gmt_model_build_range(const struct gmt_trace *trace,
					const struct gmt_range_opt *range);

/** The growth samples the report uses: at markers when there were two or more, else snapshots. */
const struct gmt_growth *gmt_site_growth(const struct gmt_model *m, const struct gmt_site_stats *s);

/** Whether @p s counts as growing: it ends higher than it started and rose in at least half of
 * the intervals between samples, of which there are enough (2 markers, else 4 snapshots). */
bool gmt_site_grows(const struct gmt_model *m, const struct gmt_site_stats *s);

/** Median lifetime in ns of the freed allocations of @p s, from its histogram; 0 when none. */
uint64_t gmt_site_median_lifetime(const struct gmt_site_stats *s);

/**
 * Whether a failed allocation is the application's (docs/report-json.md, "failed[]", `class`;
 * model/failures.c has the rule). Probes and recovered failures stay in failed[] and oom[], but do
 * not count as failed allocations (summary.failed_allocations, check --max-failed).
 */
enum gmt_fail_class {
	GMT_FAIL_COUNTED = 0, /**< an allocation the program asked for and did not get */
	GMT_FAIL_PROBE,	      /**< a capability refused (not permitted, not supported), the same
				   call succeeding later: the library tried a feature and went on */
	GMT_FAIL_RECOVERED,   /**< out of memory, and the next attempt on the device, the same call
				   and size, succeeded: the library freed memory and retried */
	GMT_FAIL_PENDING_RETRY, /**< replay only: waiting for the next attempt on its device */
	GMT_FAIL_PENDING_PROBE, /**< replay only: waiting for a success of the same call */
};

/** "failure", "probe" or "recovered". */
const char *gmt_fail_class_name(enum gmt_fail_class c);

/** The class of failed[@p k] of @p m. */
enum gmt_fail_class gmt_model_fail_class(const struct gmt_model *m, size_t k);

/** The index in failed[] of the failure with @p seq, or SIZE_MAX. */
size_t gmt_model_failure_at(const struct gmt_model *m, uint64_t seq);

/** The index of @p m's first failure that counts (GMT_FAIL_COUNTED), or SIZE_MAX. */
size_t gmt_model_first_counted_failure(const struct gmt_model *m);

/**
 * Replay hooks (model.c): gmt_failures_note() before each allocation event is applied, which
 * decides the pending failures it answers; gmt_failures_add() when failed[@p k] was recorded;
 * gmt_failures_finish() at the end (what is still pending counts).
 */
void gmt_failures_note(struct gmt_model *m, const struct gmt_trace_event *ev);
int gmt_failures_add(struct gmt_model *m, size_t k); /* 0, or -ENOMEM */
void gmt_failures_finish(struct gmt_model *m);

void gmt_model_free(struct gmt_model *model);

/** Events the trace holds: event and marker lines (comparable to the trailer's "events"). */
uint64_t gmt_model_events(const struct gmt_model *model);

#endif
