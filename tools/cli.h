/*
 * @brief What the `gpumemtrace` subcommands share: exit codes and loading trace inputs.
 */
#ifndef GMT_TOOLS_CLI_H
#define GMT_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"
#include "analysis/trace.h"

/** Exit codes of every subcommand (documented in `gpumemtrace --help`). */
enum gmt_exit {
	GMT_EXIT_OK = 0,
	GMT_EXIT_GATE = 1,	 /**< a `check` threshold was exceeded (reserved) */
	GMT_EXIT_USAGE = 2,	 /**< bad command line, or nothing to run */
	GMT_EXIT_UNREADABLE = 3, /**< no input could be read */
};

/** The traces given on a command line, read and replayed, one per process. */
struct gmt_inputs {
	struct gmt_trace **traces;
	struct gmt_model **models; /**< models[i] replays traces[i] */
	size_t n;
	size_t unreadable; /**< paths that yielded nothing (each one reported on diag) */
	struct gmt_symbolizer *sym; /**< shared by every model's stacks; made with the first */
};

/**
 * Read @p path, a trace file or a directory (every `*.jsonl` in it, in name order), and append
 * what is readable to @p in. Messages go to @p diag.
 */
void gmt_inputs_add_path(struct gmt_inputs *in, const char *path, FILE *diag);

/**
 * Read one trace file and append it (no directory expansion). Its stacks are symbolized on first
 * use, with one symbolizer for all inputs (a library shared by several processes is read once).
 */
void gmt_inputs_add_file(struct gmt_inputs *in, const char *path, FILE *diag);

void gmt_inputs_free(struct gmt_inputs *in);

/**
 * The `*.jsonl` names in @p dir, sorted bytewise. Returns the count, or -errno. Free each name
 * and the array.
 */
int gmt_list_traces(const char *dir, char ***names);

/** "DIR/NAME" without doubling a trailing slash; exits on out-of-memory. */
char *gmt_path_join(const char *dir, const char *name);

int gmt_cmd_report(int argc, char **argv);
int gmt_cmd_run(int argc, char **argv);

/** "Try 'gpumemtrace CMD --help'." after a usage error; returns GMT_EXIT_USAGE. */
int gmt_usage_hint(const char *cmd);

/** Report an unknown option after getopt_long() returned '?' (opterr is 0). */
void gmt_bad_option(const char *cmd, char **argv);

#endif
