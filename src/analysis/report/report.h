/*
 * @brief Reports over one or more replayed traces: text for people, JSON for machines.
 *
 * The text report says first what the traces could see (coverage), then puts the answer (device
 * memory held at the peak, per kind, the NVML ledger, leaks, failed allocations) and says plainly
 * when a trace is incomplete (events dropped, process died, lines unreadable). The JSON report
 * carries the same facts as exact integers under the stable keys documented in docs/report-json.md.
 */
#ifndef GMT_REPORT_REPORT_H
#define GMT_REPORT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/report/explain.h"

/** Version of the JSON report's schema (docs/report-json.md), its "report_version" key. */
#define GMT_REPORT_JSON_VERSION 4

/** Site lines shown in each list of the text report; the rest is summed in one line. */
#define GMT_REPORT_MAX_ROWS 10

/** Stacks listed under each call-site group of the text report (`--stack full`). */
#define GMT_REPORT_MAX_STACKS 5

/** How the text report shows call stacks. */
enum gmt_stack_display {
	GMT_STACKS_SITE = 0, /**< one line per call site (the innermost frame of the user's code) */
	GMT_STACKS_FULL,     /**< and under it the whole symbolized stack(s) of the group */
};

struct gmt_cat_rules;

struct gmt_report_options {
	enum gmt_stack_display stacks;
	/** the tensor level's categories (report --categories, categories.h); NULL: the built-in */
	const struct gmt_cat_rules *categories;
};

/** Sums over several processes, as the report's first lines state them. */
struct gmt_totals {
	size_t processes;
	size_t died;	 /**< traces without a trailer */
	uint64_t events; /**< event and marker lines used */
	uint64_t dropped;
	uint64_t dropped_readings; /**< of dropped: reservation readings, not calls */
	uint64_t bad_lines;
	/* the largest single (process, device) peak; peak_model NULL when nothing was allocated */
	const struct gmt_model *peak_model;
	const struct gmt_device_stats *peak_device;
	uint64_t peak_bytes; /**< device memory held */
	/* live at the end of processes that exited normally, counted kinds, not a holding cache's:
	 * leaks */
	uint64_t leaked_bytes;
	uint64_t leaked_allocations;
	size_t leak_sites;
	/* the rest of it: what caching allocators kept (gmt_cache_holds()), per allocator, and
	 * [GMT_CACHE_NONE] the sum; not leaks unless asked (check --count-cached) */
	struct gmt_cached cached[GMT_CACHE_COUNT];
	/* and what CUDA libraries' handles kept (gmt_process_library()), per library,
	 * [GMT_LIB_NONE] the sum; not leaks unless asked (check --count-libraries) */
	struct gmt_cached library[GMT_LIB_COUNT];
	/* live at the end of processes that died: not leaks, the state when they stopped */
	uint64_t live_at_end_bytes;
	uint64_t live_at_end_allocations;
	size_t live_at_end_sites;
	size_t failed; /**< failed allocations that count (GMT_FAIL_COUNTED) */
	/** PyTorch OOM errors (block lines "oom") with no counted failed CUDA call behind them: the
	 * allocator's own limit (set_per_process_memory_fraction), or a snapshot without CUDA calls
	 */
	uint64_t tensor_ooms;
	size_t probes,
	    recovered; /**< failed allocations that do not (GMT_FAIL_PROBE, _RECOVERED) */
	uint64_t unmatched_frees;
	uint64_t failed_frees;
	uint64_t reused_addresses;
	uint64_t unmatched_retains;
};

void gmt_report_totals(const struct gmt_process *procs, size_t n, struct gmt_totals *out);

/*
 * Every report below returns 0, -EIO when it could not be written, or -ENOMEM when it lost
 * something for lack of memory (report/nomem.h; a document is NULL then). Those that take
 * @p lost name the trace files that yielded nothing (the session's `lost`; NULL: none) beside
 * the processes, whose figures cannot hold them.
 */

/** @p opt may be NULL (the defaults). */
int gmt_report_text(FILE *out,
		    const struct gmt_process *procs,
		    size_t n,
		    const struct gmt_lost *lost,
		    const struct gmt_report_options *opt);

typedef struct json_t json_t;

/**
 * The JSON report as a jansson document (json_decref() it): what `--format json` writes, and
 * what the other consumers of the analysis (html, perfetto, check, diff) read, so every format
 * states the same facts under the keys of docs/report-json.md (report/keys.h). NULL out of
 * memory.
 */
json_t *gmt_report_json_doc(const struct gmt_process *procs, size_t n, const struct gmt_lost *lost);

/**
 * gmt_report_json_doc() without its lists of frames, for the readers of its figures (`check`,
 * `diff`), in a fraction of its memory on a trace of many distinct stacks: call_stacks[] and
 * leaks[] (one entry per leaking stack, with its raw frames) are empty, failed[] has no
 * `frames`; leak_sites[] has the leaks' figures, and gmt_report_json_call_stack() gives an
 * entry's frames when they are wanted. NULL out of memory.
 */
json_t *gmt_report_json_doc_frameless(const struct gmt_process *procs,
				      size_t n,
				      const struct gmt_lost *lost);

/**
 * The frames of stack @p stack of process @p proc as call_stacks[].call_stack holds them, built
 * on their own (json_decref() them); NULL when the process has no such stack (or out of memory).
 */
json_t *
gmt_report_json_call_stack(const struct gmt_process *procs, size_t n, size_t proc, uint32_t stack);

/**
 * The document's lost_traces[]: an entry {file, reason} per trace file of @p lost (NULL: none),
 * in their order; [] when none. Out of memory, the report being made is marked (nomem.h).
 */
json_t *gmt_report_json_lost(const struct gmt_lost *lost);

/** `--format json`: the document written (see above for what it returns); @p categories as
 * struct gmt_report_options's (gmt_report_json_doc() and its variants use the built-in). */
int gmt_report_json(FILE *out,
		    const struct gmt_process *procs,
		    size_t n,
		    const struct gmt_lost *lost,
		    const struct gmt_cat_rules *categories);

/**
 * The bytes json_dump_callback(gmt_report_json_doc(), @p cb, @p data, @p flags) writes, in the
 * memory of the document without its call_stacks[], which is built and written one entry at a
 * time (`--format json` and `html`). Returns 0, -EIO when @p cb failed, or -ENOMEM.
 */
int gmt_report_json_stream(const struct gmt_process *procs,
			   size_t n,
			   const struct gmt_lost *lost,
			   const struct gmt_cat_rules *categories,
			   size_t flags,
			   int (*cb)(const char *buf, size_t size, void *data),
			   void *data);

/** What a folded stack is weighted by (`--weight`). */
enum gmt_fold_weight {
	GMT_FOLD_PEAK = 0, /**< bytes live at each device's peak of held memory */
	GMT_FOLD_LEAKED,   /**< bytes of counted kinds live at the end of the trace */
	GMT_FOLD_ALLOCATED /**< bytes of counted kinds allocated over the whole trace */
};

/**
 * Folded stacks (`report --format folded`), one line per distinct stack: frames outermost first,
 * separated by ';', the allocating call last, then a space and the weight in bytes; stacks are
 * summed over every process. For flamegraph.pl, inferno, speedscope. Out of memory, nothing is
 * written.
 */
int gmt_report_folded(FILE *out,
		      const struct gmt_process *procs,
		      size_t n,
		      enum gmt_fold_weight weight);

/**
 * The few lines `gpumemtrace run` prints after the program ends, each starting with @p prefix:
 * processes, events, peak, leaked, failed, dropped.
 */
int gmt_report_summary(FILE *out, const char *prefix, const struct gmt_process *procs, size_t n);

#endif
