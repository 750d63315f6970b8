/*
 * @brief Reading a trace file that may be zstd-compressed (`.jsonl.zst`, the tracer's
 * GPUMEMTRACE_COMPRESS=zstd) or plain JSON Lines, through one stdio stream.
 *
 * gmt_zread_open() looks at the first four bytes of an opened file: a plain file is handed back
 * as it is (rewound), a zstd one becomes a FILE * (glibc's fopencookie) that reads its
 * decompressed bytes, so getline() and everything after it stay as they are. The tracer writes one
 * zstd frame per flush; the stream decodes the frames one after the other (a frame of a known
 * size whole, and the next ones on threads of their own with gmt_zread_parallel()). A file cut by
 * a killed writer (or a full disk) ends inside a frame: everything before that frame is read, and
 * as much of the cut frame as its complete blocks hold; then the stream ends and
 * gmt_zread_problem() says so ("truncated"). A frame that cannot be decoded (bytes that are not
 * zstd, a damaged block or checksum) ends the stream after what it gave before the damage, with
 * "corrupt at byte N", N its first byte. libzstd.so.1 is loaded at run time (util/zstd_api.h):
 * without it, a compressed file cannot be opened (a plain one still can), and the reason says so.
 *
 * Not for the tracer (it allocates, and it is the analyzer's); a separate static library.
 *
 * Used by the trace reader's input (src/analysis/reader/trace_input.c), which tells the kinds apart
 * and reports gmt_zread_problem() after the read.
 */
#ifndef GMT_UTIL_ZREAD_H
#define GMT_UTIL_ZREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct gmt_zread;

/**
 * Read @p raw (an opened file at offset 0) as a trace: returns @p raw itself, rewound, when it
 * is not zstd (*@p state = NULL), else a new stream of the decompressed bytes that owns @p raw
 * (fclose() of it closes @p raw and frees *@p state). NULL with the reason in @p why when it is
 * zstd but cannot be read (no libzstd.so.1, out of memory); @p raw is then still the caller's.
 * A file shorter than four bytes is plain.
 */
FILE *gmt_zread_open(FILE *raw, struct gmt_zread **state, char *why, size_t why_len);

/**
 * Decode the frames ahead of the one being read on @p threads threads of their own (named
 * gmt-unzstd, at most 32; joined by fclose()). The stream's bytes, its problem and its frame
 * count stay what they are without them. Call it from the thread that reads the stream, or
 * before any does; once. Returns the threads started (0: the stream is decoded on the reading
 * thread, as before).
 */
unsigned gmt_zread_parallel(struct gmt_zread *state, unsigned threads);

/** Is this stream a decompressed one (@p state from gmt_zread_open, NULL: plain)? */
bool gmt_zread_compressed(const struct gmt_zread *state);

/**
 * Bytes of the file consumed so far, for progress against its size: ftell() of @p f for a plain
 * file (@p state NULL), the compressed bytes read for a zstd one.
 */
long long gmt_zread_raw_offset(const struct gmt_zread *state, FILE *f);

/** The file descriptor of the file itself (fstat, fstatvfs): fileno(@p f) when plain. */
int gmt_zread_raw_fd(const struct gmt_zread *state, FILE *f);

/** Complete zstd frames decoded so far. */
unsigned long long gmt_zread_frames(const struct gmt_zread *state);

/**
 * Why the decompressed stream ended early, NULL when it did not (or plain): "truncated: ..."
 * (the file ends inside a frame), "corrupt at byte N: ..." (not zstd data there), "read error:
 * ..." (the file could not be read).
 */
const char *gmt_zread_problem(const struct gmt_zread *state);

/** True when the problem is a cut frame (a killed writer, a full disk), not corruption. */
bool gmt_zread_truncated(const struct gmt_zread *state);

#endif
