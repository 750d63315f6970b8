/*
 * @brief What the `gpumemtrace` subcommands share: exit codes and loading trace inputs.
 */
#ifndef GMT_TOOLS_CLI_H
#define GMT_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analysis/gate/check.h"
#include "analysis/gate/doc.h"
#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "analysis/report/units.h"
#include "analysis/session/session.h"
#include "analysis/symbols/callstack.h"
#include "analysis/symbols/symbolize.h"
#include "util/esc.h"
#include "util/path.h"

/** Exit codes of every subcommand (documented in `gpumemtrace --help`). */
enum gmt_exit {
	GMT_EXIT_OK = 0,
	GMT_EXIT_GATE = 1,	 /**< a `check` gate failed */
	GMT_EXIT_USAGE = 2,	 /**< bad command line, or nothing to run */
	GMT_EXIT_UNREADABLE = 3, /**< no input could be read */
};

/** A session's options for a command: the defaults, and the tests' switches (docs/testing.md). */
void gmt_cli_session_options(struct gmt_session_options *o);

/**
 * The progress line of a trace being read, on standard error when it is a terminal, rewritten
 * every @p every_s seconds (negative: 1 s) (tools/progress.c); for gmt_read_options.progress.
 */
const struct gmt_read_progress *gmt_cli_progress(double every_s);

/**
 * Parse a --from/--to value into @p b: seconds from the trace's start ("2.5", "2.5s") or else a
 * marker label. Returns false (after a message naming @p option) for an empty value.
 */
bool gmt_parse_range_bound(const char *option, const char *value, struct gmt_range_bound *b);

/**
 * Whether the output file @p output would replace one of the @p n inputs (a trace, a report, a
 * baseline, a suppression file), or a trace a directory among them holds: the same file, by
 * device and inode, whatever the names. Says so on stderr naming @p cmd, @p option and both
 * files. The output is written beside and renamed over its name at the end (util/outfile.h),
 * so without this `report -o trace.jsonl trace.jsonl` would read the trace, then lose it.
 */
bool gmt_cli_output_is_input(
    const char *cmd, const char *option, const char *output, char *const *inputs, size_t n);

int gmt_cmd_report(int argc, char **argv);
int gmt_cmd_run(int argc, char **argv);
int gmt_cmd_check(int argc, char **argv);
int gmt_cmd_diff(int argc, char **argv);
int gmt_cmd_summarize(int argc, char **argv);
int gmt_cmd_live(int argc, char **argv);

// --- The JSON report as input (tools/reportdoc.c: check, diff) -----------------------------

/**
 * The JSON report document (docs/report-json.md) of @p paths: one file written by `report
 * --format json` (a file whose first non-space byte is '{' and which is one object with
 * "report_version"), else traces and directories of them, replayed. NULL with *@p rc set after
 * a message naming @p cmd: GMT_EXIT_USAGE (a report given with other inputs),
 * GMT_EXIT_UNREADABLE (nothing readable, or a report version this program does not read).
 * Built from traces, its call_stacks[] is empty (gmt_report_input_load() gives the frames).
 */
json_t *gmt_report_doc_load(const char *cmd, char *const *paths, size_t n, int *rc);

/**
 * What `check` judges: the document of gmt_report_doc_load() and where its stacks' frames come
 * from. Built from traces, the document leaves call_stacks[] out and the session stays open:
 * `stacks` builds one entry's frames from its procs when a suppression wants them, so the
 * check holds what `report` does, not every frame of every stack as JSON objects at once. Read
 * from a report file, the document has its own call_stacks[] (`stacks.get` NULL).
 */
struct gmt_report_input {
	json_t *doc;
	struct gmt_session *session; /**< NULL: a report file */
	struct gmt_stack_source stacks;
};

/** gmt_report_doc_load() into @p in (gmt_report_input_free() it); 0, or the exit status. */
int
gmt_report_input_load(struct gmt_report_input *in, const char *cmd, char *const *paths, size_t n);

void gmt_report_input_free(struct gmt_report_input *in);

/** "Try 'gpumemtrace CMD --help'." after a usage error; returns GMT_EXIT_USAGE. */
int gmt_usage_hint(const char *cmd);
/** `--version` of every command: prints "gpumemtrace VERSION", returns GMT_EXIT_OK. */
int gmt_print_version(void);

/** Report an unknown option after getopt_long() returned '?' (opterr is 0). */
void gmt_bad_option(const char *cmd, char **argv);

#endif
