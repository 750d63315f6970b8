/*
 * @brief Fuzz target `compressed`: one input is one zstd- or gzip-compressed trace file
 * (`.jsonl.zst`, `.jsonl.gz`): the reader's input layer (reader/trace_input.c: gzip members one
 * after the other through zlib, zstd frames through util/zread) and what it hands the line reader,
 * up to a replayed model. An input that starts with neither format's magic number is not read
 * (the trace target fuzzes plain files), so the fuzzer keeps to compressed ones. Its corpus:
 * tests/fuzz/corpus/compressed/. A zstd input is first read twice by util/zread.c itself, its
 * frames decoded on the reading thread and on decoder threads, which must agree byte for byte.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "fuzz.h"
#include "util/zread.h"
#include "util/zstd_api.h"

struct zout {
	char *bytes;
	size_t len;
	char problem[256];
	unsigned long long frames;
	bool truncated, opened;
};

/* The decompressed stream of @p path, its frames decoded on @p threads threads (0: on this one),
 * read @p step bytes at a time. */
static void
zread_all(const char *path, unsigned threads, size_t step, struct zout *o)
{
	char why[256], buf[4096];
	struct gmt_zread *z;
	FILE *raw = fopen(path, "rb"), *f;
	size_t n;

	memset(o, 0, sizeof(*o));
	if (!raw)
		abort();
	if (!(f = gmt_zread_open(raw, &z, why, sizeof(why)))) {
		fclose(raw);
		return;
	}
	o->opened = true;
	if (threads)
		gmt_zread_parallel(z, threads);
	while ((n = fread(buf, 1, step < sizeof(buf) ? step : sizeof(buf), f)) > 0) {
		if (!(o->bytes = realloc(o->bytes, o->len + n)))
			abort();
		memcpy(o->bytes + o->len, buf, n);
		o->len += n;
	}
	const char *p = gmt_zread_problem(z);
	snprintf(o->problem, sizeof(o->problem), "%s", p ? p : "");
	o->frames = gmt_zread_frames(z);
	o->truncated = gmt_zread_truncated(z);
	fclose(f);
}

/* A zstd file reads the same whoever decodes its frames (util/zread.c): the same bytes, problem,
 * frame count and truncation on the reading thread and on two decoder threads, whatever the reads'
 * sizes. */
static void
same_both_ways(const char *path)
{
	struct zout a, b;

	zread_all(path, 0, 4096, &a);
	zread_all(path, 2, 777, &b);
	if (a.opened != b.opened || a.len != b.len || (a.len && memcmp(a.bytes, b.bytes, a.len)) ||
	    strcmp(a.problem, b.problem) != 0 || a.frames != b.frames ||
	    a.truncated != b.truncated) {
		fprintf(stderr,
			"fuzz_compressed: decoded on the reading thread: %zu bytes, %llu frames, "
			"\"%s\"; on decoder threads: %zu bytes, %llu frames, \"%s\"\n",
			a.len, a.frames, a.problem, b.len, b.frames, b.problem);
		abort();
	}
	free(a.bytes);
	free(b.bytes);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gmt_trace *t = NULL;

	if (!(size >= 4 && memcmp(data, GMT_ZSTD_MAGIC, 4) == 0) &&
	    !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b))
		return 0;
	const char *path = fuzz_memfd_path(data, size);
	if (data[0] != 0x1f)
		same_both_ways(path);
	gmt_trace_read(path, fuzz_devnull(), NULL, &t);
	if (t)
		gmt_model_free(gmt_model_build(t));
	gmt_trace_free(t);
	return 0;
}
