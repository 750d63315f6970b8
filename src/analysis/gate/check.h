/*
 * @brief `gpumemtrace check`'s gates over the JSON report (docs/report-json.md): leaked bytes
 * and allocations, peak device memory held, growth across markers, failed allocations, the
 * increase over a baseline, and complete-traces, always there; at the tensor level (PyTorch's
 * blocks, `processes[].tensors`), tensors still referenced at the end, growing tensor sites and
 * the cache's fragmentation. Each gate is a result (its name, whether it failed or was skipped,
 * one line, the violations under it) for the caller to print; the suppressions count what they
 * took.
 */
#ifndef GMT_GATE_CHECK_H
#define GMT_GATE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analysis/gate/suppress.h"

/**
 * A limit for one device (`DEV=`) or for every device: `--max-peak-bytes [DEV=]N`,
 * `--max-tensor-leak [DEV=]N` (@p bytes), `--max-fragmentation [DEV=]F` (@p fraction).
 */
struct gmt_dev_limit {
	bool all; /**< no DEV=: every device */
	long device;
	uint64_t bytes;
	double fraction;
};

/**
 * Where the suppressions find the frames of a stack that the document names by (process,
 * stack): call_stacks[].call_stack. A report read back from a file has them in its
 * call_stacks[]; a document built from traces need not hold every frame of every stack at once
 * (gmt_report_json_doc_frameless()): @p get builds one entry's frames when they are wanted.
 */
struct gmt_stack_source {
	/** call_stacks[].call_stack of (@p process, @p stack), a new reference; NULL: none */
	json_t *(*get)(void *data, json_int_t process, json_int_t stack);
	void *data;
};

/** The gates asked for and how they judge. */
struct gmt_check_options {
	bool leaked_bytes_set, leaked_allocs_set, growth_set, failed_set;
	uint64_t max_leaked_bytes, max_leaked_allocs, max_growth, max_failed;
	struct gmt_dev_limit
	    *peaks; /**< the last DEV= for a device wins, else the last plain one */
	size_t npeaks;
	struct gmt_dev_limit *tensor_leaks; /**< as peaks: blocks live at the end of the trace */
	size_t ntensor_leaks;
	struct gmt_dev_limit *frags; /**< as peaks: the cache's fragmentation (0..1) */
	size_t nfrags;
	bool tensor_growth_set;
	uint64_t max_tensor_growth; /**< a tensor site's live block bytes, first to last sample */
	double max_increase;	    /**< percent over the baseline */
	bool count_cached;	    /**< caching allocators' memory live at exit leaks too */
	bool count_libraries;	    /**< CUDA libraries' handles' memory live at exit leaks too */
	/** a process that did not exit normally, a trace with unreadable lines or a trace file
	 * that yielded nothing (the document's lost_traces[]) passes complete-traces */
	bool allow_incomplete;
	bool allow_drops;	       /**< a trace that dropped events passes complete-traces */
	struct gmt_suppressions *supp; /**< never NULL; their counters count what they took */
	/** the document's stacks; NULL: its own call_stacks[] (the baseline never needs them) */
	const struct gmt_stack_source *stacks;
};

/** One gate: a JUnit testcase, one PASS/FAIL line and, when it failed, its violations. */
struct gmt_gate {
	char *name; /**< "max-peak-bytes device 0" */
	bool failed;
	bool skipped;  /**< it could not judge (a tensor gate without block lines): not failed */
	char *text;    /**< the result, one line (names from the trace escaped, esc.h) */
	char *details; /**< violation lines, each indented and ending in '\n'; NULL when none */
	bool notes;    /**< the details are worth printing when it passed too */
	bool oom;      /**< out of memory: text or details lack what could not be said */
};

struct gmt_gates {
	struct gmt_gate *v; /**< in the order they ran */
	size_t n;
	char *notes; /**< lines about the inputs, not one gate ("note: ..."), NULL when none */
	bool oom;
	struct gmt_gate spare; /**< what a gate said that could not be added */
};

/**
 * Every gate of @p o on @p doc, and the baseline gates against @p base when it is not NULL,
 * into @p out (gmt_gates_free() it, whatever the result). Returns 0, or -ENOMEM when the
 * results are incomplete.
 */
int gmt_check_run(struct gmt_gates *out,
		  const struct gmt_check_options *o,
		  const json_t *doc,
		  const json_t *base);

/** The gates of @p g that failed. */
size_t gmt_gates_failed(const struct gmt_gates *g);

/** The gates of @p g that were skipped. */
size_t gmt_gates_skipped(const struct gmt_gates *g);

void gmt_gates_free(struct gmt_gates *g);

#endif
