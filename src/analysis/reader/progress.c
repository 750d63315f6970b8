/*
 * @brief The progress line on a terminal (progress.h).
 */
#define _GNU_SOURCE
#include "analysis/reader/flatjson.h"
#include "analysis/reader/input.h"
#include "analysis/reader/reorder.h"
#include "analysis/reader/trace.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"

#include "analysis/reader/progress.h"
#include "analysis/reader/reader_int.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct progress
rd_progress_start(const struct gmt_trace_input *in, FILE *diag, const struct gmt_read_options *opt)
{
	struct progress p = {.in = in, .diag = diag};

	/* against the file's own bytes: a compressed file's, as its stream consumes them */
	p.on = isatty(fileno(diag));
	p.size = p.on ? gmt_trace_input_size(in) : 0;
	p.start = p.last = now_s();
	p.every = opt->progress_every_s >= 0 ? opt->progress_every_s : 1.0;
	return p;
}

void
rd_progress_show(struct progress *p, const char *path, size_t lines)
{
	double t;
	long long at;

	if (!p->on || (t = now_s()) - p->last < p->every)
		return;
	p->last = t;
	at = gmt_trace_input_offset(p->in);
	fprintf(p->diag, "\rgpumemtrace: reading %s: %zu lines", path, lines);
	if (p->size > 0 && at >= 0)
		fprintf(p->diag, ", %.0f%% (%.0f MB/s)", 100.0 * (double)at / (double)p->size,
			(double)at / 1e6 / (t - p->start));
	fflush(p->diag);
	p->shown = true;
}

void
rd_progress_end(struct progress *p)
{
	if (p->shown) /* erase the line: what follows starts clean */
		fprintf(p->diag, "\r\033[K");
}
