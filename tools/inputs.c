/*
 * @brief What the subcommands share about their inputs: how the session reads them (the tests'
 * switches from the environment), and --from/--to.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "util/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
gmt_cli_session_options(struct gmt_session_options *o)
{
	const char *v;

	*o = (struct gmt_session_options)GMT_SESSION_OPTIONS_INIT;
	/* The tests' switches (docs/testing.md): every line through jansson (GMT_TRACE_SLOW=1),
	 * each trace read whole and then replayed (GMT_TRACE_STORED=1), the progress line at
	 * every look at the clock on a small trace (GMT_PROGRESS_INTERVAL_S=0). */
	v = getenv("GMT_TRACE_SLOW");
	o->read.slow = v && strcmp(v, "1") == 0;
	v = getenv("GMT_TRACE_STORED");
	o->stored = v && strcmp(v, "1") == 0;
	o->read.jobs = gmt_jobs(); /* threads that read one trace (util/path.h) */
	/* a test's switch too: chunks of a few lines, so that a small trace has many */
	v = getenv("GMT_READ_CHUNK_LINES");
	if (v && *v) {
		long k = strtol(v, NULL, 10);

		if (k > 0 && k <= 1 << 20)
			o->read.chunk_lines = (unsigned)k;
	}
	v = getenv("GMT_PROGRESS_INTERVAL_S");
	if (v && *v) {
		char *end;
		double x = strtod(v, &end);

		if (*end == '\0' && x >= 0)
			o->progress_every_s = x;
	}
	o->read.progress = gmt_cli_progress(o->progress_every_s);
}

bool
gmt_parse_range_bound(const char *option, const char *value, struct gmt_range_bound *b)
{
	char *end;
	double s;

	if (!value || !*value) {
		fprintf(stderr,
			"gpumemtrace: %s needs seconds or a marker label, not an empty "
			"value\n",
			option);
		return false;
	}
	*b = (struct gmt_range_bound){.set = true, .spec = value};
	errno = 0;
	s = strtod(value, &end);
	if (end != value && errno == 0 && s >= 0 && (*end == '\0' || strcmp(end, "s") == 0))
		b->seconds = s;
	else
		b->label = value;
	return true;
}
