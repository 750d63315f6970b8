/*
 * @brief gmt-zcat FILE: a trace file's bytes on stdout through the trace reader's module
 * (src/util/zread.h): decompressed when it is zstd, as they are when plain. The reader's verdict
 * on stderr: "zread: frames N" and, when the stream ended early, "zread: PROBLEM". Exit 0, or 1
 * when the file is corrupt or cannot be read (a cut last frame is 0: what a killed writer
 * leaves), 3 when it cannot be opened. For the preload suite's compression scenarios.
 */
#include <stdio.h>

#include "util/zread.h"

int
main(int argc, char **argv)
{
	char why[256], buf[65536];
	struct gmt_zread *z;
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: gmt-zcat FILE\n");
		return 2;
	}
	FILE *raw = fopen(argv[1], "rb");
	if (!raw) {
		perror(argv[1]);
		return 3;
	}
	FILE *f = gmt_zread_open(raw, &z, why, sizeof(why));
	if (!f) {
		fprintf(stderr, "%s: %s\n", argv[1], why);
		fclose(raw);
		return 3;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fprintf(stderr, "zread: %s, frames %llu\n", gmt_zread_compressed(z) ? "zstd" : "plain",
		gmt_zread_frames(z));
	const char *problem = gmt_zread_problem(z);
	int rc = problem && !gmt_zread_truncated(z) ? 1 : 0;
	if (problem)
		fprintf(stderr, "zread: %s\n", problem);
	fclose(f);
	return rc;
}
