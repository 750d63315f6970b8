/*
 * @brief libzstd found at run time (see zstd_api.h).
 */
#define _GNU_SOURCE
#include "util/zstd_api.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Where the headers are installed, the declarations of zstd_api.h are checked against them. */
#if defined(__has_include)
#	if __has_include(<zstd.h>)
#		include <zstd.h>
_Static_assert(ZSTD_c_compressionLevel == GMT_ZSTD_C_COMPRESSION_LEVEL, "ZSTD_c_compressionLevel");
_Static_assert(ZSTD_c_checksumFlag == GMT_ZSTD_C_CHECKSUM_FLAG, "ZSTD_c_checksumFlag");
_Static_assert(ZSTD_MAGICNUMBER == 0xFD2FB528u, "ZSTD_MAGICNUMBER");
_Static_assert(ZSTD_CONTENTSIZE_UNKNOWN == GMT_ZSTD_CONTENTSIZE_UNKNOWN,
	       "ZSTD_CONTENTSIZE_UNKNOWN");
_Static_assert(ZSTD_CONTENTSIZE_ERROR == GMT_ZSTD_CONTENTSIZE_ERROR, "ZSTD_CONTENTSIZE_ERROR");
_Static_assert(sizeof(ZSTD_inBuffer) == sizeof(struct gmt_zstd_in) &&
		   offsetof(ZSTD_inBuffer, src) == offsetof(struct gmt_zstd_in, src) &&
		   offsetof(ZSTD_inBuffer, size) == offsetof(struct gmt_zstd_in, size) &&
		   offsetof(ZSTD_inBuffer, pos) == offsetof(struct gmt_zstd_in, pos),
	       "ZSTD_inBuffer");
_Static_assert(sizeof(ZSTD_outBuffer) == sizeof(struct gmt_zstd_out) &&
		   offsetof(ZSTD_outBuffer, dst) == offsetof(struct gmt_zstd_out, dst) &&
		   offsetof(ZSTD_outBuffer, size) == offsetof(struct gmt_zstd_out, size) &&
		   offsetof(ZSTD_outBuffer, pos) == offsetof(struct gmt_zstd_out, pos),
	       "ZSTD_outBuffer");
#	endif
#endif

#define ZSTD_MIN_VERSION 10400 /* ZSTD_compress2 and ZSTD_CCtx_setParameter became stable */

bool
gmt_zstd_load(struct gmt_zstd *z, int (*close)(void *), char *why, size_t why_len)
{
	const char *missing = NULL;

	memset(z, 0, sizeof(*z));
	z->handle = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!z->handle) {
		const char *err = dlerror();
		snprintf(why, why_len, "libzstd.so.1 cannot be loaded (%s)",
			 err ? err : "not found");
		return false;
	}
#define SYM(field)                                                                                 \
	do {                                                                                       \
		*(void **)&z->field = dlsym(z->handle, "ZSTD_" #field);                            \
		if (!z->field && !missing)                                                         \
			missing = "ZSTD_" #field;                                                  \
	} while (0)
	SYM(versionNumber);
	SYM(isError);
	SYM(getErrorName);
	SYM(minCLevel);
	SYM(maxCLevel);
	SYM(compressBound);
	SYM(createCCtx);
	SYM(freeCCtx);
	SYM(CCtx_setParameter);
	SYM(compress2);
	SYM(createDCtx);
	SYM(freeDCtx);
	SYM(decompressStream);
	SYM(DStreamInSize);
	SYM(DStreamOutSize);
	SYM(findFrameCompressedSize);
	SYM(getFrameContentSize);
#undef SYM
	if (missing)
		snprintf(why, why_len, "the libzstd.so.1 found has no %s", missing);
	else if (z->versionNumber() < ZSTD_MIN_VERSION)
		snprintf(why, why_len, "libzstd.so.1 is version %u.%u.%u, older than 1.4.0",
			 z->versionNumber() / 10000, z->versionNumber() / 100 % 100,
			 z->versionNumber() % 100);
	else
		return true;
	if (close)
		close(z->handle);
	memset(z, 0, sizeof(*z));
	return false;
}
