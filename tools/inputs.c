/*
 * @brief What the subcommands share about their inputs: how the session reads them (the tests'
 * switches from the environment), and --from/--to.
 */
#define _GNU_SOURCE
#include "analysis/reader/trace_input.h"
#include "cli.h"
#include "util/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Whether @p st is the file @p path names (followed, as the reader opens it). */
static bool
same_file(const struct stat *st, const char *path)
{
	struct stat o;

	return stat(path, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

bool
gmt_cli_output_is_input(
    const char *cmd, const char *option, const char *output, char *const *inputs, size_t n)
{
	struct stat out, in;
	const char *hit = NULL;
	char *hit_path = NULL;

	/* a file not there yet, or not a regular file (the writer refuses those), replaces
	 * nothing; the output is renamed over its name at the end, so the link at that name is
	 * what goes: compared by what the name holds now */
	if (!output || lstat(output, &out) != 0 || !S_ISREG(out.st_mode))
		return false;
	for (size_t i = 0; i < n && !hit; i++) {
		if (!inputs[i] || strcmp(inputs[i], GMT_TRACE_STDIN) == 0 ||
		    stat(inputs[i], &in) != 0)
			continue;
		if (S_ISREG(in.st_mode)) {
			if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
				hit = inputs[i];
			continue;
		}
		if (!S_ISDIR(in.st_mode))
			continue;
		char **names = NULL;
		int k = gmt_trace_files(inputs[i], &names);

		for (int j = 0; j < k; j++) {
			char *p = hit ? NULL : gmt_path_join(inputs[i], names[j]);

			if (p && same_file(&out, p)) {
				hit = inputs[i];
				hit_path = p;
			} else {
				free(p);
			}
			free(names[j]);
		}
		free(names);
	}
	if (!hit)
		return false;
	fprintf(stderr, "gpumemtrace %s: %s %s is ", cmd, option, gmt_esc(output));
	if (hit_path)
		fprintf(stderr, "the trace %s of the input directory", gmt_esc(hit_path));
	else
		fprintf(stderr, "the input %s", gmt_esc(hit));
	fprintf(stderr, ": writing there would replace it (name another file)\n");
	free(hit_path);
	return true;
}
