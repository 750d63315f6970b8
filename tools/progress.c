/*
 * @brief The progress line of a trace being read (cli.h): on standard error when it is a
 * terminal and the read takes a while, rewritten in place at most once a second, erased at the
 * end. The reader tells how far it is (trace.h: struct gmt_read_progress); this draws it.
 */
#define _GNU_SOURCE
#include "cli.h"

#include <time.h>
#include <unistd.h>

struct term_progress {
	FILE *out;
	double every; /* seconds between updates */
	const char *path;
	bool on, shown;
	double start, last;
	long long size;
};

static struct term_progress term;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
term_begin(void *ctx, const char *path, long long size)
{
	struct term_progress *p = ctx;

	p->on = isatty(fileno(p->out));
	p->shown = false;
	p->path = path;
	p->size = size; /* the file's own bytes: a compressed file's, as its stream consumes them */
	p->start = p->last = now_s();
}

static void
term_step(void *ctx, size_t lines, long long at)
{
	struct term_progress *p = ctx;
	double t;

	if (!p->on || (t = now_s()) - p->last < p->every)
		return;
	p->last = t;
	fprintf(p->out, "\rgpumemtrace: reading %s: %zu lines", gmt_esc(p->path), lines);
	if (p->size > 0 && at >= 0)
		fprintf(p->out, ", %.0f%% (%.0f MB/s)", 100.0 * (double)at / (double)p->size,
			(double)at / 1e6 / (t - p->start));
	fflush(p->out);
	p->shown = true;
}

static void
term_end(void *ctx)
{
	struct term_progress *p = ctx;

	if (p->shown) /* erase the line: what follows starts clean */
		fprintf(p->out, "\r\033[K");
	p->shown = p->on = false;
}

const struct gmt_read_progress *
gmt_cli_progress(double every_s)
{
	static const struct gmt_read_progress cb = {term_begin, term_step, term_end, &term};

	term.out = stderr;
	term.every = every_s >= 0 ? every_s : 1.0;
	return &cb;
}
