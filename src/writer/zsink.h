/*
 * @brief The writer's zstd compression (GPUMEMTRACE_COMPRESS=zstd): each flush of the writer's
 * buffer becomes one complete zstd frame, so a file cut by a killed process holds every frame
 * written before the cut, each readable on its own (util/zread.h reads them; so does `zstd -d`,
 * which stops at the cut). libzstd.so.1 is loaded at run time (util/zstd_api.h). Writer thread
 * only (it allocates).
 */
#ifndef GMT_WRITER_ZSINK_H
#define GMT_WRITER_ZSINK_H

#include <stdbool.h>
#include <stddef.h>

#include "util/zstd_api.h"

struct gmt_zsink {
	struct gmt_zstd z;
	void *cctx;
	char *frame; /* the last frame made */
	size_t frame_cap;
	int level;
};

/**
 * Load libzstd and prepare a context at compression @p level (clamped to the library's range),
 * each frame with its content checksum. False with the reason in @p why; @p close gives a
 * refused library back (NULL: left loaded).
 */
bool
gmt_zsink_init(struct gmt_zsink *s, int level, int (*close)(void *), char *why, size_t why_len);

/**
 * One frame of @p src (@p len bytes) into s->frame; returns its length, 0 with @p why on a
 * failure (out of memory, a library error).
 */
size_t gmt_zsink_frame(struct gmt_zsink *s, const void *src, size_t len, char *why, size_t why_len);

/**
 * One frame of @p src (@p len bytes) stored, not compressed (a single raw block, no checksum),
 * into s->frame; returns its length (@p len + 12), 0 out of memory. Its length depends on @p len
 * alone, and more bytes make a longer frame: the trailer's frame, written again over itself with
 * larger counts (writer.c), always covers the one before. Needs no libzstd.
 */
size_t gmt_zsink_raw_frame(struct gmt_zsink *s, const void *src, size_t len);

/** Free the context and the frame buffer (the library stays loaded). */
void gmt_zsink_free(struct gmt_zsink *s);

#endif
