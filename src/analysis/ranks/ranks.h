/*
 * @brief Many ranks, one answer: summaries (report/summary.h) read back, traces summarized on
 * the way, merged into a per-rank table and the verdicts over it (docs/multi-host.md).
 *
 * Every input becomes a summary document first: a summary file is read (its version and shape
 * checked), a trace is read in a session of its own and summarized in memory, then freed. The
 * table keeps a row of fixed size per rank, taken from the summary by the keys the summary's
 * writer defines (report/keys.h): the merge over summaries and over the traces they came from
 * see the same figures, and memory is one summary plus the rows, whatever the number of ranks.
 *
 * The verdicts: the rank that peaked highest; the rank whose first failure came first by wall
 * clock, claimed only when the gap to the next exceeds the clocks' stated uncertainty (zero
 * between ranks of one host: one clock); the imbalance (max / mean of the ranks' peaks, the
 * ranks past mean + 2 standard deviations named); NCCL's bytes per rank.
 */
#ifndef GMT_RANKS_H
#define GMT_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analysis/session/session.h"

/** Summary @p s's name for people, as gmt_rank_name()'s, into @p buf. Returns @p buf. */
const char *gmt_summary_who(const json_t *s, char *buf, size_t size);

/** The merged document's schema version, its "ranks_version" key. */
#define GMT_RANKS_VERSION 1
/** A summary file's name: NAME.summary.json beside NAME.jsonl. */
#define GMT_SUMMARY_SUFFIX ".summary.json"

/** One rank's figures: a few hundred bytes, whatever its trace's length. */
struct gmt_rank_row {
	char *input; /**< the file read: the summary, or the trace summarized here */
	char *file;  /**< the trace the figures are of (the summary's "file") */
	char *host;  /**< NULL unknown */
	long long pid, rank, local_rank, world_size;	   /**< -1 unknown */
	uint64_t peak_bytes;				   /**< the largest peak of any device */
	long long peak_device;				   /**< -1: no peak */
	double peak_time_s, peak_unix_s;		   /**< NAN unknown */
	double first_failure_time_s, first_failure_unix_s; /**< NAN: no failure that counts */
	uint64_t failed;				   /**< failed allocations */
	uint64_t leaked_bytes, leaked_allocations;	   /**< the report's leak verdict */
	uint64_t cached_bytes, library_bytes; /**< caches' and libraries' memory at exit */
	uint64_t nccl_at_peak, nccl_at_exit, nccl_allocated;
	double start_unix_s, end_unix_s; /**< NAN unknown */
	double clock_uncertainty_s;
	bool complete;
	uint64_t dropped;
};

/** The table: rows in the order added until gmt_ranks_settle() sorts them by rank. */
struct gmt_ranks {
	struct gmt_rank_row *v;
	size_t n, cap;
	size_t left_out; /**< inputs said and not merged (bad, a rank again, another job) */
	/** of those, the summaries of traces that yielded nothing (gmt_summary_is_lost()): their
	 * lost_traces[] entries, {file, reason}, for the outputs to name; NULL: none */
	json_t *lost;
};

/** Who to look at first (gmt_ranks_verdict()). */
struct gmt_ranks_verdict {
	size_t peak;		/**< row of the highest peak; SIZE_MAX: none peaked */
	size_t first_failure;	/**< row failing first; SIZE_MAX: none failed, or undecided */
	size_t second_failure;	/**< the next by wall clock; SIZE_MAX: none */
	size_t failing;		/**< rows with a failure that counts */
	bool failure_undecided; /**< two failed within the clocks' uncertainty, or no wall clock */
	bool failure_no_clock;	/**< undecided since a failing row has no wall clock */
	double failure_gap_s, failure_uncertainty_s;
	double mean, sd, max_over_mean; /**< of the rows' peaks (0 when none peaked) */
	size_t *outliers;		/**< rows past mean + 2 sd, by rank (free() it) */
	size_t noutliers;
	size_t complete;
	uint64_t nccl_at_peak, nccl_at_exit;
};

/** Whether @p path names a summary: its name ends in GMT_SUMMARY_SUFFIX or it says so. */
bool gmt_summary_file_is(const char *path);

/** Whether any of @p paths is a summary or a directory holding one. */
bool gmt_ranks_have_summary(char *const *paths, size_t n);

/** Called with each input as a summary (borrowed: it is freed after the call). */
typedef void (*gmt_rank_fn)(void *data, const char *input, const json_t *summary);

/**
 * Each of @p paths as a summary, to @p fn: summary files read and checked, traces (and the
 * traces of a directory whose summary is not beside them) summarized here one at a time. A bad
 * input is one line on @p diag naming it (and `cmd`), the rest go on. Traces are read with
 * @p so. Returns how many reached
 * @p fn; *@p bad counts the inputs said and left out.
 */
size_t gmt_ranks_each(const char *cmd,
		      char *const *paths,
		      size_t n,
		      const struct gmt_session_options *so,
		      FILE *diag,
		      gmt_rank_fn fn,
		      void *data,
		      size_t *bad);

/**
 * The summary @p s (of @p input) as a row of @p r. A rank already there (the same RANK and world
 * size, in a run of overlapping times) is said on @p diag (both files named) and left out; the
 * same RANK of another job or run is kept for gmt_ranks_settle() to judge. The summary of a trace
 * that yielded nothing (gmt_summary_is_lost(): no figure) is said, naming the trace and why, and
 * left out. Returns 0, -1 left out, -ENOMEM.
 */
int
gmt_ranks_add(struct gmt_ranks *r, const char *cmd, const char *input, const json_t *s, FILE *diag);

/**
 * Done adding: the ranks of another job (another world size than most, or a run that ended
 * before most ranks started or started after they ended) said on @p diag and left out; the
 * rows sorted by rank (then host, pid), and of one rank still in two rows the first kept.
 */
void gmt_ranks_settle(struct gmt_ranks *r, const char *cmd, FILE *diag);

/** The verdicts over the settled rows (gmt_ranks_verdict_free() it). 0, or -ENOMEM. */
int gmt_ranks_verdict(const struct gmt_ranks *r, struct gmt_ranks_verdict *v);
void gmt_ranks_verdict_free(struct gmt_ranks_verdict *v);

/** A row's name for people: "rank 3", else "pid 123 on HOST" (escaped, one of 4 buffers). */
const char *gmt_rank_name(const struct gmt_rank_row *row);

/** Summary @p s's name for people, as gmt_rank_name()'s, into @p buf. Returns @p buf. */
const char *gmt_summary_who(const json_t *s, char *buf, size_t size);

/** The merged document ("kind": "ranks", docs/multi-host.md); NULL out of memory. */
json_t *gmt_ranks_json(const struct gmt_ranks *r);

/** The per-rank report for people. 0, or -EIO. */
int gmt_ranks_text(FILE *out, const struct gmt_ranks *r);

/** DIR/ranks.csv: one line per rank (docs/sql.md). 0, or -errno after a message on @p diag. */
int gmt_ranks_csv(const char *dir, const struct gmt_ranks *r, FILE *diag);

void gmt_ranks_free(struct gmt_ranks *r);

/**
 * `diff` over ranks: the settled tables @p base and @p next matched by RANK (rankless rows and
 * ranks of one run only listed alone), largest change first. JSON: NULL out of memory.
 */
/** The traces that yielded nothing among the inputs (r->lost): a new array, [] when none. */
json_t *gmt_ranks_lost_json(const struct gmt_ranks *r);

/** r->lost as text: a warning line (after "@p role: ", when not NULL) and each file with its
 * reason below it; nothing when none. */
void gmt_ranks_lost_text(FILE *out, const struct gmt_ranks *r, const char *role);

json_t *gmt_ranks_diff_json(const struct gmt_ranks *base, const struct gmt_ranks *next);
/** The same for people, the @p top ranks that changed most (0: all). 0, -ENOMEM or -EIO. */
int gmt_ranks_diff_text(FILE *out,
			const struct gmt_ranks *base,
			const struct gmt_ranks *next,
			size_t top);

/**
 * The summary @p s as a JSON report document of one process (docs/report-json.md): what it
 * kept under the report's keys, its call_stacks[] as the report's, for the gates (check) to
 * judge one rank; of a trace that yielded nothing (gmt_summary_is_lost()), no process and its
 * lost_traces[]. NULL out of memory.
 */
json_t *gmt_summary_report_doc(const json_t *s);

#endif
