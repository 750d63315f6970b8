/*
 * The zstd trace reader (src/util/zread.h) on files made by the writer's compressor
 * (src/writer/zsink.c, one frame per flush): a file of frames reads back as the concatenation of
 * what was flushed; a file cut anywhere in its last frame (a killed writer) reads at least every
 * line of the frames before it, nothing that was not written, and says "truncated"; bytes that
 * are not zstd after a frame end the stream there with "corrupt at byte N"; a plain file comes
 * back as the very same stream, rewound. Every case is read twice, on the reading thread and with
 * decoder threads (gmt_zread_parallel()) in odd read sizes, with the same result. Skipped (77)
 * without libzstd.so.1.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/zread.h"
#include "writer/zsink.h"

#define FRAMES 5

/* Read @p f to its end, @p step bytes a fread() at most (0: as much as there is room for). */
static char *
read_steps(FILE *f, size_t *len, size_t step)
{
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	do {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			CHECK(buf);
		}
		size_t want = step && step < cap - n ? step : cap - n;
		got = fread(buf + n, 1, want, f);
		n += got;
	} while (got);
	*len = n;
	return buf;
}

static char *
read_all(FILE *f, size_t *len)
{
	return read_steps(f, len, 0);
}

/* A file of these bytes, opened for reading at offset 0. */
static FILE *
file_of(const char *bytes, size_t len)
{
	FILE *f = tmpfile();
	CHECK(f);
	CHECK(fwrite(bytes, 1, len, f) == len);
	CHECK(fflush(f) == 0);
	rewind(f);
	return f;
}

/* Read @p len bytes of @p bytes through the reader, its frames decoded on @p threads threads
 * (0: on the reading thread), read @p step bytes at a time: its output and problem. */
static char *
through_with(const char *bytes,
	     size_t len,
	     unsigned threads,
	     size_t step,
	     size_t *out_len,
	     char *problem,
	     size_t problem_len,
	     int *truncated,
	     unsigned long long *frames)
{
	char why[256];
	struct gmt_zread *z;
	FILE *raw = file_of(bytes, len);
	FILE *f = gmt_zread_open(raw, &z, why, sizeof(why));

	if (!f) {
		fprintf(stderr, "gmt_zread_open: %s\n", why);
		exit(1);
	}
	if (threads && z) /* (a damaged magic number: a plain file) */
		CHECK(gmt_zread_parallel(z, threads) == threads);
	char *out = read_steps(f, out_len, step);
	const char *p = gmt_zread_problem(z);
	snprintf(problem, problem_len, "%s", p ? p : "");
	*truncated = gmt_zread_truncated(z);
	*frames = gmt_zread_frames(z);
	CHECK(fclose(f) == 0);
	return out;
}

/*
 * The same through the reader on the reading thread, and again with 3 decoder threads read in
 * odd steps: both must give the same bytes, problem, frame count and truncation (what comes out
 * of a damaged frame does not depend on who decodes it, nor on the reads).
 */
static char *
through(const char *bytes,
	size_t len,
	size_t *out_len,
	char *problem,
	size_t problem_len,
	int *truncated,
	unsigned long long *frames)
{
	char problem2[256];
	int truncated2;
	unsigned long long frames2;
	size_t out_len2;
	char *out =
	    through_with(bytes, len, 0, 0, out_len, problem, problem_len, truncated, frames);
	char *out2 = through_with(bytes, len, 3, 1237, &out_len2, problem2, sizeof(problem2),
				  &truncated2, &frames2);

	CHECK_EQ_U64(out_len2, *out_len);
	CHECK(memcmp(out, out2, *out_len) == 0);
	CHECK(strcmp(problem, problem2) == 0);
	CHECK(truncated2 == *truncated);
	CHECK_EQ_U64(frames2, *frames);
	free(out2);
	return out;
}

int
main(void)
{
	struct gmt_zsink zs;
	char why[256], problem[256];
	static char plain[FRAMES][40000];
	size_t plain_len[FRAMES], total = 0, boundary[FRAMES + 1] = {0};
	char *file = NULL;
	size_t file_len = 0, out_len;
	int truncated;
	unsigned long long frames;

	if (!gmt_zsink_init(&zs, 1, NULL, why, sizeof(why))) {
		printf("no usable libzstd.so.1 (%s): skipped\n", why);
		return SKIP_TEST;
	}
	/* five flushes of trace-like lines, as the writer makes them */
	char *all = malloc(FRAMES * sizeof(plain[0]));
	CHECK(all);
	for (int f = 0, seq = 1; f < FRAMES; f++) {
		size_t n = 0;
		while (n < sizeof(plain[f]) - 200)
			n += (size_t)snprintf(plain[f] + n, sizeof(plain[f]) - n,
					      "{\"type\":\"event\",\"seq\":%d,\"op\":\"alloc\","
					      "\"ptr\":\"0x%x\",\"size\":%d}\n",
					      seq, 0x1000 * seq, seq * 512 % 9973),
			    seq++;
		plain_len[f] = n;
		memcpy(all + total, plain[f], n);
		total += n;
		size_t z = gmt_zsink_frame(&zs, plain[f], n, why, sizeof(why));
		CHECK(z > 0);
		file = realloc(file, file_len + z);
		CHECK(file);
		memcpy(file + file_len, zs.frame, z);
		file_len += z;
		boundary[f + 1] = file_len;
	}
	CHECK(memcmp(file, "\x28\xb5\x2f\xfd", 4) == 0);

	/* the whole file: every flush, in order, five frames, no problem */
	char *out =
	    through(file, file_len, &out_len, problem, sizeof(problem), &truncated, &frames);
	CHECK_EQ_U64(out_len, total);
	CHECK(memcmp(out, all, total) == 0);
	CHECK_EQ_U64(frames, FRAMES);
	CHECK(problem[0] == '\0' && !truncated);
	free(out);

	/* cut anywhere inside the last frame (a killed writer): the frames before it are read,
	 * nothing more than was written, and the reader says the file was cut */
	size_t before = total - plain_len[FRAMES - 1];
	for (size_t cut = boundary[FRAMES - 1] + 1; cut < file_len; cut += 7) {
		out = through(file, cut, &out_len, problem, sizeof(problem), &truncated, &frames);
		CHECK(out_len >= before && out_len <= total);
		CHECK(memcmp(out, all, out_len) == 0);
		CHECK_EQ_U64(frames, FRAMES - 1);
		CHECK(truncated);
		CHECK(strncmp(problem, "truncated", 9) == 0);
		free(out);
	}
	/* cut exactly after a frame: a clean end */
	out = through(file, boundary[3], &out_len, problem, sizeof(problem), &truncated, &frames);
	CHECK_EQ_U64(out_len, plain_len[0] + plain_len[1] + plain_len[2]);
	CHECK(problem[0] == '\0' && !truncated && frames == 3);
	free(out);

	/* not zstd after the second frame: the two frames, then "corrupt at byte N" */
	char *bad = malloc(file_len);
	CHECK(bad);
	memcpy(bad, file, file_len);
	memset(bad + boundary[2], 'x', 16);
	out = through(bad, file_len, &out_len, problem, sizeof(problem), &truncated, &frames);
	CHECK_EQ_U64(out_len, plain_len[0] + plain_len[1]);
	CHECK(memcmp(out, all, out_len) == 0);
	char want[64];
	snprintf(want, sizeof(want), "corrupt at byte %zu:", boundary[2]);
	CHECK(strncmp(problem, want, strlen(want)) == 0 && !truncated);
	free(out);
	/* a damaged byte inside a frame: its checksum (or its structure) fails, earlier frames
	 * stand */
	memcpy(bad, file, file_len);
	bad[boundary[1] + (boundary[2] - boundary[1]) / 2] ^= 0x55;
	out = through(bad, file_len, &out_len, problem, sizeof(problem), &truncated, &frames);
	CHECK(out_len >= plain_len[0] && out_len < total);
	CHECK(memcmp(out, all, plain_len[0]) == 0);
	CHECK(strncmp(problem, "corrupt at byte", 15) == 0);
	free(out);
	/* a damaged byte anywhere: through() holds both ways of decoding to the same result */
	for (size_t at = 0; at < file_len; at += 53) {
		memcpy(bad, file, file_len);
		bad[at] ^= 0xa5;
		out =
		    through(bad, file_len, &out_len, problem, sizeof(problem), &truncated, &frames);
		CHECK(out_len <= total + 65536);
		free(out);
	}
	free(bad);

	/* frames larger than a slot keeps (4 MiB) between small ones, twice over: the same bytes,
	 * both ways, each frame read once */
	{
		size_t big = (5u << 20) + 123, nbig = 0, zlen = 0;
		char *text = malloc(big), *zfile = NULL, *want_all = malloc(4 * (big + 100));
		CHECK(text && want_all);
		for (size_t i = 0; i < big; i++)
			text[i] = (char)('a' + (i * 7 + i / 4096) % 26);
		for (int f = 0; f < 4; f++) {
			const char *part = f % 2 ? "{\"small\":1}\n" : text;
			size_t plen = f % 2 ? strlen(part) : big;
			size_t z = gmt_zsink_frame(&zs, part, plen, why, sizeof(why));
			CHECK(z > 0);
			zfile = realloc(zfile, zlen + z);
			CHECK(zfile);
			memcpy(zfile + zlen, zs.frame, z);
			zlen += z;
			memcpy(want_all + nbig, part, plen);
			nbig += plen;
		}
		out = through(zfile, zlen, &out_len, problem, sizeof(problem), &truncated, &frames);
		CHECK_EQ_U64(out_len, nbig);
		CHECK(memcmp(out, want_all, nbig) == 0);
		CHECK(problem[0] == '\0' && !truncated && frames == 4);
		free(out);
		free(zfile);
		free(text);
		free(want_all);
	}

	/* a plain file is handed back as it is, rewound */
	{
		struct gmt_zread *z = (struct gmt_zread *)1;
		FILE *raw = file_of(plain[0], plain_len[0]);
		FILE *f = gmt_zread_open(raw, &z, why, sizeof(why));
		CHECK(f == raw && z == NULL && !gmt_zread_compressed(z));
		out = read_all(f, &out_len);
		CHECK_EQ_U64(out_len, plain_len[0]);
		CHECK(memcmp(out, plain[0], out_len) == 0);
		CHECK(gmt_zread_raw_fd(z, f) == fileno(f));
		free(out);
		fclose(f);
		/* shorter than the magic number: plain too */
		raw = file_of("{}", 2);
		f = gmt_zread_open(raw, &z, why, sizeof(why));
		CHECK(f == raw && z == NULL);
		fclose(f);
	}
	gmt_zsink_free(&zs);
	free(file);
	free(all);
	printf("zread: ok\n");
	return 0;
}
