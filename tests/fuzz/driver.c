/*
 * @brief main() of a fuzz target built without libFuzzer (gcc, or clang without -Dfuzz=true):
 * runs LLVMFuzzerTestOneInput() once on every file named on the command line and on every
 * regular file of every directory named there (in name order), in this one process, as
 * libFuzzer's `-runs=0` would. meson test runs it on the target's corpus
 * (tests/fuzz/corpus/<name>/), so every build, and the ASan+UBSan stage of scripts/test, replays
 * the corpus and its reproducers.
 *
 *   fuzz_trace FILE|DIR...        exit 0 when every input ran (a crash ends the process)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fuzz.h"

static const char *self;

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto err;
	/* exactly n bytes, as libFuzzer hands them: ASan sees a read past the input */
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto err;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
err:
	fprintf(stderr, "%s: %s: %s\n", self, path, strerror(errno ? errno : EIO));
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

/* Every regular file of @p dir, in name order; the count replayed, or -1. */
static long
replay_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);
	long done = 0;

	if (!d) {
		fprintf(stderr, "%s: %s: %s\n", self, dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!(names = realloc(names, (n + 1) * sizeof(*names))) ||
		    asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	if (n)
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
	struct timespec t0, t1;
	long total = 0;

	self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", self);
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		long n;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s: %s\n", self, argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_file(argv[i]) ? -1 : 1);
		if (n < 0)
			return 1;
		total += n;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (total == 0) {
		fprintf(stderr, "%s: no input replayed\n", self);
		return 1;
	}
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%s: %ld inputs replayed without a crash in %.2f s (%.0f/s)\n", self, total, s,
	       s > 0 ? (double)total / s : 0.0);
	return 0;
}
