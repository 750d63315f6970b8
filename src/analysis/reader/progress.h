/*
 * @brief The progress line on a terminal while the trace reader reads a large file
 * (progress.c): shown on the diagnostics stream when it is a terminal and the read takes long.
 */
#ifndef GMT_READER_PROGRESS_H
#define GMT_READER_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/reader/input.h"
#include "analysis/reader/trace.h"

#define PROGRESS_EVERY ((1u << 14) - 1) /* lines between looks at the clock */

/* A line on @p diag, rewritten in place at most once a second, for traces that take a while. */
struct progress {
	const struct gmt_trace_input *in;
	FILE *diag;
	bool on;
	bool shown;
	double start, last;
	double every; /* seconds between updates */
	long long size;
};

struct progress
rd_progress_start(const struct gmt_trace_input *in, FILE *diag, const struct gmt_read_options *opt);

void rd_progress_show(struct progress *p, const char *path, size_t lines);

void rd_progress_end(struct progress *p);

#endif
