/*
 * @brief The few functions of libzstd the tracer's writer and the trace reader use, found at run
 * time: dlopen("libzstd.so.1") and dlsym, as the tracer does libunwind. No header and no link
 * dependency is needed to build or to run without it (a GPU host may have the library and no
 * headers); zstd_api.c checks these declarations against <zstd.h> where it is installed.
 *
 * Only the stable API of zstd >= 1.4.0: ZSTD_compress2 with parameters on a context (one frame
 * per call), ZSTD_decompressStream (frames one after the other, as a file of frames is),
 * ZSTD_findFrameCompressedSize and ZSTD_getFrameContentSize (a file's frames told apart).
 */
#ifndef GMT_UTIL_ZSTD_API_H
#define GMT_UTIL_ZSTD_API_H

#include <stdbool.h>
#include <stddef.h>

/** The first four bytes of a zstd frame (little-endian 0xFD2FB528). */
#define GMT_ZSTD_MAGIC "\x28\xb5\x2f\xfd"

/* ZSTD_cParameter values (zstd.h, stable) */
#define GMT_ZSTD_C_COMPRESSION_LEVEL 100
#define GMT_ZSTD_C_CHECKSUM_FLAG 201

/** ZSTD_inBuffer and ZSTD_outBuffer. */
struct gmt_zstd_in {
	const void *src;
	size_t size;
	size_t pos;
};
struct gmt_zstd_out {
	void *dst;
	size_t size;
	size_t pos;
};

/** The library's entry points (contexts are opaque pointers). */
struct gmt_zstd {
	void *handle;
	unsigned (*versionNumber)(void);
	unsigned (*isError)(size_t code);
	const char *(*getErrorName)(size_t code);
	int (*minCLevel)(void);
	int (*maxCLevel)(void);
	size_t (*compressBound)(size_t src_size);
	void *(*createCCtx)(void);
	size_t (*freeCCtx)(void *cctx);
	size_t (*CCtx_setParameter)(void *cctx, int param, int value);
	size_t (*compress2)(
	    void *cctx, void *dst, size_t dst_cap, const void *src, size_t src_size);
	void *(*createDCtx)(void);
	size_t (*freeDCtx)(void *dctx);
	size_t (*decompressStream)(void *dctx, struct gmt_zstd_out *out, struct gmt_zstd_in *in);
	size_t (*DStreamInSize)(void);
	size_t (*DStreamOutSize)(void);
	/* the trace reader's frames (util/zread.c): where a frame ends, what it decodes to */
	size_t (*findFrameCompressedSize)(const void *src, size_t src_size);
	unsigned long long (*getFrameContentSize)(const void *src, size_t src_size);
};

/** ZSTD_getFrameContentSize(): the size is not in the frame's header / not a valid header. */
#define GMT_ZSTD_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define GMT_ZSTD_CONTENTSIZE_ERROR (0ULL - 2)

/**
 * Load libzstd.so.1 (through the loader's search path, RTLD_LOCAL) and fill @p z. Returns false
 * with the reason in @p why (a library that cannot be loaded, lacks an entry point or is older
 * than 1.4.0). @p close: the dlclose to give back a refused library (the tracer's own dlclose is
 * exported; it passes the real one), or NULL.
 */
bool gmt_zstd_load(struct gmt_zstd *z, int (*close)(void *), char *why, size_t why_len);

#endif
