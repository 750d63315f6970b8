/*
 * @brief One zstd frame per flush (see zsink.h).
 */
#include "writer/zsink.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
gmt_zsink_init(struct gmt_zsink *s, int level, int (*close)(void *), char *why, size_t why_len)
{
	memset(s, 0, sizeof(*s));
	if (!gmt_zstd_load(&s->z, close, why, why_len))
		return false;
	if (level < s->z.minCLevel())
		level = s->z.minCLevel();
	if (level > s->z.maxCLevel())
		level = s->z.maxCLevel();
	s->level = level;
	s->cctx = s->z.createCCtx();
	if (!s->cctx) {
		snprintf(why, why_len, "ZSTD_createCCtx failed (out of memory)");
		return false;
	}
	size_t rc = s->z.CCtx_setParameter(s->cctx, GMT_ZSTD_C_COMPRESSION_LEVEL, level);
	if (!s->z.isError(rc)) /* a checksum per frame: a reader tells a damaged frame */
		rc = s->z.CCtx_setParameter(s->cctx, GMT_ZSTD_C_CHECKSUM_FLAG, 1);
	if (s->z.isError(rc)) {
		snprintf(why, why_len, "ZSTD_CCtx_setParameter: %s", s->z.getErrorName(rc));
		gmt_zsink_free(s);
		return false;
	}
	return true;
}

size_t
gmt_zsink_frame(struct gmt_zsink *s, const void *src, size_t len, char *why, size_t why_len)
{
	size_t need = s->z.compressBound(len);

	if (need > s->frame_cap) {
		char *p = realloc(s->frame, need);
		if (!p) {
			snprintf(why, why_len, "out of memory for a %zu-byte zstd frame", need);
			return 0;
		}
		s->frame = p;
		s->frame_cap = need;
	}
	/* compress2 ends the frame: one flush, one frame a reader can decode on its own */
	size_t n = s->z.compress2(s->cctx, s->frame, s->frame_cap, src, len);
	if (s->z.isError(n)) {
		snprintf(why, why_len, "ZSTD_compress2: %s", s->z.getErrorName(n));
		return 0;
	}
	return n;
}

size_t
gmt_zsink_raw_frame(struct gmt_zsink *s, const void *src, size_t len)
{
	/* RFC 8878: magic; frame header descriptor 0xa0 (single segment, a 4-byte content size,
	 * no checksum, no dictionary); the content size; one block header (last block, raw, its
	 * size in bits 3..23); the bytes. */
	size_t need = 4 + 1 + 4 + 3 + len;
	unsigned char *f;

	if (len >= (1u << 17)) /* a raw block holds at most 128 KiB */
		return 0;
	if (need > s->frame_cap) {
		char *p = realloc(s->frame, need);
		if (!p)
			return 0;
		s->frame = p;
		s->frame_cap = need;
	}
	f = (unsigned char *)s->frame;
	const uint32_t magic = 0xfd2fb528u, block = 1u | ((uint32_t)len << 3);
	for (int i = 0; i < 4; i++)
		f[i] = (unsigned char)(magic >> (8 * i));
	f[4] = 0xa0;
	for (int i = 0; i < 4; i++)
		f[5 + i] = (unsigned char)((uint32_t)len >> (8 * i));
	for (int i = 0; i < 3; i++)
		f[9 + i] = (unsigned char)(block >> (8 * i));
	memcpy(f + 12, src, len);
	return need;
}

void
gmt_zsink_free(struct gmt_zsink *s)
{
	if (s->cctx)
		s->z.freeCCtx(s->cctx);
	free(s->frame);
	s->cctx = NULL;
	s->frame = NULL;
	s->frame_cap = 0;
}
