/*
 * @brief Fuzz target of the trace reader: one input is one trace file, run through everything
 * `gpumemtrace report` does with it (read, replay, symbolize, and every format: JSON, HTML,
 * Perfetto, text, folded).
 *
 * Built two ways:
 *  - with -DGMT_FUZZING and clang's -fsanitize=fuzzer (scripts/fuzz): LLVMFuzzerTestOneInput is
 *    libFuzzer's entry point;
 *  - without (meson test fuzz-corpus): a main() that replays every file of the directories (or
 *    files) on its command line, so every ordinary build re-runs the corpus and its reproducers.
 *
 * The input reaches the reader as a file path, as in the CLI: a memfd, named /proc/self/fd/N.
 * Kept small on purpose: when the analysis API changes, only one_trace() needs adapting.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "analysis/report/report.h"
#include "analysis/report/report_formats.h"
#include "analysis/report/session.h"
#include "analysis/symbols/callstack.h"
#include "analysis/symbols/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;
static int memfd = -1;
static char memfd_path[64];

static int
setup(void)
{
	if (memfd >= 0)
		return 0;
	devnull = fopen("/dev/null", "w");
	memfd = memfd_create("gmt-fuzz-trace", MFD_CLOEXEC);
	if (!devnull || memfd < 0) {
		fprintf(stderr, "fuzz_trace: setup failed: %s\n", strerror(errno));
		return -1;
	}
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

/* The read paths of `gpumemtrace report` on one file (report/session.c, tools/cmd_report.c). */
static void
one_trace(const char *path)
{
	struct gmt_session_options so = GMT_SESSION_OPTIONS_INIT;
	struct gmt_session s;
	struct gmt_model *m;

	/* stored: the whole trace, then its replay, through every report */
	so.stored = true;
	gmt_session_init(&s, &so, devnull);
	if (gmt_session_add_file(&s, path) != 0) {
		gmt_session_free(&s);
		return;
	}
	m = s.models[0];
	json_decref(gmt_report_json_doc(&m, 1));
	gmt_report_html(devnull, &m, 1);
	gmt_report_perfetto(devnull, &m, 1);
	gmt_report_text(devnull, &m, 1, &(struct gmt_report_options){.stacks = GMT_STACKS_FULL});
	gmt_report_text(devnull, &m, 1, &(struct gmt_report_options){.stacks = GMT_STACKS_SITE});
	gmt_report_folded(devnull, &m, 1, GMT_FOLD_PEAK);
	gmt_report_folded(devnull, &m, 1, GMT_FOLD_LEAKED);
	gmt_report_folded(devnull, &m, 1, GMT_FOLD_ALLOCATED);
	gmt_report_summary(devnull, "", &m, 1);
	gmt_report_pytorch_snapshot(devnull, &m, 1, devnull);

	/* report --from 0.001 --to <the first marker's label, when there is one> */
	so.range.from = (struct gmt_range_bound){.set = true, .seconds = 0.001, .spec = "0.001"};
	if (s.traces[0]->nmarkers)
		so.range.to = (struct gmt_range_bound){.set = true,
						       .label = s.traces[0]->markers[0].label,
						       .spec = s.traces[0]->markers[0].label};
	m = gmt_model_build_range(s.traces[0], &so.range);
	if (m) {
		m->stacks = s.stacks[0];
		json_decref(gmt_report_json_doc(&m, 1));
		gmt_report_text(devnull, &m, 1, NULL);
		gmt_model_free(m);
	}
	gmt_session_free(&s);

	/* the streamed path of the CLI: events through the reorder window into a model */
	so = (struct gmt_session_options)GMT_SESSION_OPTIONS_INIT;
	gmt_session_init(&s, &so, devnull);
	if (gmt_session_add_file(&s, path) == 0)
		json_decref(gmt_report_json_doc(s.models, 1));
	gmt_session_free(&s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (setup() != 0)
		abort();
	if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	one_trace(memfd_path);
	return 0;
}

#ifndef GMT_FUZZING
// --- corpus replay (no libFuzzer) ---------------------------------------------------------------

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto err;
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto err;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
err:
	fprintf(stderr, "fuzz_trace: %s: %s\n", path, strerror(errno));
	free(buf);
	if (f)
		fclose(f);
	return -1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of @p dir, in name order; returns the count replayed or -1. */
static int
replay_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);
	int done = 0;

	if (!d) {
		fprintf(stderr, "fuzz_trace: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (!names || asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(names[i]) != 0)
				done = -1;
			else if (done >= 0)
				done++;
		}
		free(names[i]);
	}
	free(names);
	return done;
}

int
main(int argc, char **argv)
{
	int total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "fuzz_trace: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_file(argv[i]) ? -1 : 1);
		if (n < 0)
			return 1;
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "fuzz_trace: no input replayed\n");
		return 1;
	}
	printf("fuzz_trace: %d inputs replayed without a crash\n", total);
	if (devnull)
		fclose(devnull);
	if (memfd >= 0)
		close(memfd);
	return 0;
}
#endif
