/*
 * @brief Benchmark: what the writer's zstd mode (GPUMEMTRACE_COMPRESS=zstd) makes of a trace, at
 * each compression level: a plain trace is cut into frames as the writer cuts its flushes (a frame
 * when the buffer reaches --chunk bytes, or when a line's `ts` is --flush-ms past the frame's
 * first), each frame compressed with the writer's own code (src/writer/zsink.c), and timed.
 *
 *   zstd_frames [--levels -5,-1,1,3] [--chunk BYTES] [--flush-ms MS] [--repeat R] [--write FILE]
 *               TRACE...
 *
 * For each trace and level, one JSON line on stdout: the trace's bytes and events (event,
 * marker and block lines), the frames, the compressed bytes, bytes per event (compressed, and
 * of the plain file), and the compression's speed on this thread (MB/s of plain input, events/s):
 * the best of R passes (the writer compresses on its own thread, so this is its added cost).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writer/zsink.h"

struct frame {
	size_t off, len;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		fprintf(stderr, "zstd_frames: %s: %s\n", path, strerror(errno));
		exit(3);
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			if (!buf) {
				fprintf(stderr, "zstd_frames: out of memory\n");
				exit(3);
			}
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The `ts` of a line, 0 when it has none. */
static uint64_t
line_ts(const char *line, size_t len)
{
	const char *p = memmem(line, len, "\"ts\":", 5);
	return p ? strtoull(p + 5, NULL, 10) : 0;
}

static bool
is_event(const char *line, size_t len)
{
	return memmem(line, len < 40 ? len : 40, "\"type\":\"event\"", 14) ||
	       memmem(line, len < 40 ? len : 40, "\"type\":\"marker\"", 15) ||
	       memmem(line, len < 40 ? len : 40, "\"type\":\"block\"", 14);
}

int
main(int argc, char **argv)
{
	int levels[32], nlevels = 0;
	size_t chunk = 64 * 1024;
	uint64_t flush_ns = 100 * 1000000ULL;
	int repeat = 3, first = 1;
	const char *write_to = NULL;
	char why[256];

	for (; first < argc && argv[first][0] == '-' && argv[first][1] == '-'; first += 2) {
		if (first + 1 >= argc)
			break;
		const char *v = argv[first + 1];
		if (!strcmp(argv[first], "--levels")) {
			for (char *s = strdup(v), *t = strtok(s, ","); t && nlevels < 32;
			     t = strtok(NULL, ","))
				levels[nlevels++] = atoi(t);
		} else if (!strcmp(argv[first], "--chunk")) {
			chunk = strtoull(v, NULL, 10);
		} else if (!strcmp(argv[first], "--flush-ms")) {
			flush_ns = strtoull(v, NULL, 10) * 1000000ULL;
		} else if (!strcmp(argv[first], "--repeat")) {
			repeat = atoi(v);
		} else if (!strcmp(argv[first], "--write")) {
			write_to = v;
		} else {
			break;
		}
	}
	if (first >= argc || chunk == 0 || repeat < 1) {
		fprintf(stderr, "usage: zstd_frames [--levels L,L] [--chunk BYTES] [--flush-ms MS] "
				"[--repeat R] [--write FILE] TRACE...\n");
		return 2;
	}
	if (!nlevels)
		levels[nlevels++] = 1;

	for (int a = first; a < argc; a++) {
		size_t len, nframes = 0, cap = 1024, events = 0;
		char *data = slurp(argv[a], &len);
		struct frame *frames = malloc(cap * sizeof(*frames));
		size_t start = 0;
		uint64_t frame_ts = 0;

		/* the writer's cuts: at a line's end once the buffer holds chunk bytes, or when a
		 * line comes flush_ms after the frame's first timestamp */
		for (size_t i = 0; i < len;) {
			char *nl = memchr(data + i, '\n', len - i);
			size_t end = nl ? (size_t)(nl - data) + 1 : len;
			uint64_t ts = line_ts(data + i, end - i);
			events += is_event(data + i, end - i);
			if (ts && !frame_ts)
				frame_ts = ts;
			bool cut = end - start >= chunk ||
				   (ts && frame_ts && ts - frame_ts >= flush_ns) || end == len;
			if (cut) {
				if (nframes == cap)
					frames = realloc(frames, (cap *= 2) * sizeof(*frames));
				frames[nframes++] = (struct frame){start, end - start};
				start = end;
				frame_ts = 0;
			}
			i = end;
		}
		for (int l = 0; l < nlevels; l++) {
			struct gmt_zsink zs;
			uint64_t best = UINT64_MAX;
			size_t out = 0;

			if (!gmt_zsink_init(&zs, levels[l], NULL, why, sizeof(why))) {
				fprintf(stderr, "zstd_frames: %s\n", why);
				return 1;
			}
			/* --write: the frames of the first trace at the first level, as a file
			 * (what the writer would have made of it) */
			FILE *wf = NULL;
			if (write_to && a == first && l == 0 && !(wf = fopen(write_to, "wb"))) {
				fprintf(stderr, "zstd_frames: %s: %s\n", write_to, strerror(errno));
				return 3;
			}
			for (int r = 0; r < repeat; r++) {
				uint64_t t0 = now_ns();
				out = 0;
				for (size_t f = 0; f < nframes; f++) {
					size_t n = gmt_zsink_frame(&zs, data + frames[f].off,
								   frames[f].len, why, sizeof(why));
					if (!n) {
						fprintf(stderr, "zstd_frames: %s\n", why);
						return 1;
					}
					out += n;
					if (wf && r == 0 && fwrite(zs.frame, 1, n, wf) != n) {
						fprintf(stderr, "zstd_frames: %s: write failed\n",
							write_to);
						return 3;
					}
				}
				uint64_t dt = now_ns() - t0;
				if (wf && r == 0 && fclose(wf) != 0) {
					fprintf(stderr, "zstd_frames: %s: write failed\n",
						write_to);
					return 3;
				}
				if (r == 0)
					wf = NULL;
				best = dt < best ? dt : best;
			}
			double secs = (double)best / 1e9;
			printf("{\"trace\":\"%s\",\"level\":%d,\"chunk\":%zu,\"flush_ms\":%llu,"
			       "\"bytes\":%zu,\"events\":%zu,\"frames\":%zu,\"compressed\":%zu,"
			       "\"ratio\":%.2f,\"plain_bytes_per_event\":%.1f,\"bytes_per_event\":%"
			       ".2f,"
			       "\"compress_mb_s\":%.1f,\"compress_events_s\":%.0f}\n",
			       argv[a], zs.level, chunk,
			       (unsigned long long)(flush_ns / 1000000ULL), len, events, nframes,
			       out, (double)len / (double)out,
			       events ? (double)len / (double)events : 0.0,
			       events ? (double)out / (double)events : 0.0,
			       (double)len / 1e6 / secs, (double)events / secs);
			fflush(stdout);
			gmt_zsink_free(&zs);
		}
		free(frames);
		free(data);
	}
	return 0;
}
