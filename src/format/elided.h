/*
 * @brief The names of the bounded trace's own keys (docs/trace-format.md, "elided",
 * "elided_blocks", and the header's and trailer's bounded keys): one definition for the writer
 * (format/jsonl.c) and the reader (analysis/reader/lines.c). The other keys of an elided line are
 * an event's (seq, ts, device, kind, api, driver, stack), with the same meanings.
 */
#ifndef GMT_FORMAT_ELIDED_H
#define GMT_FORMAT_ELIDED_H

#include <stdint.h>

/** line type: allocations of one call site left out of one bucket, with their frees */
#define GMT_ELIDED_TYPE "elided"
/** elided: how many allocations (each with its free: twice as many event lines) */
#define GMT_ELIDED_ALLOCATIONS "allocations"
/** elided: their granted bytes in all */
#define GMT_ELIDED_BYTES "bytes"
/** elided: of them, freed before any other allocation of the process was made */
#define GMT_ELIDED_TEMPORARIES "temporaries"
#define GMT_ELIDED_TEMPORARY_BYTES "temporary_bytes"
/** elided: [[b, allocations, bytes], ...]: allocations of 2^b <= size < 2^(b+1) bytes (b 0: also 0)
 */
#define GMT_ELIDED_SIZES "sizes"
/** elided: [[b, frees], ...]: lifetimes of 2^b <= ns < 2^(b+1) (b 0: also 0) */
#define GMT_ELIDED_LIFETIMES "lifetimes"
/**
 * The bin of @p v in the sizes and lifetimes histograms: b with 2^b <= v < 2^(b+1), 0 for 0. One
 * rule for the bounded writer's elided lines and the analyzer's own histograms (model.c), which
 * must agree for a bounded trace's histograms to equal the full trace's.
 */
static inline unsigned
gmt_log2_bin(uint64_t v)
{
	return v ? 63u - (unsigned)__builtin_clzll(v) : 0;
}

/**
 * line type: the PyTorch layer's blocks of one call site (stack, device) left out of one bucket,
 * each with its free requested and free completed (three block lines). Its keys: seq and ts (of
 * the last free completed left out), device, stack, GMT_ELIDED_ALLOCATIONS (blocks) and
 * GMT_ELIDED_BYTES (their sizes as the allocator rounded them: what memory_allocated() counted).
 */
#define GMT_ELIDED_BLOCKS_TYPE "elided_blocks"

/** header options: true in a bounded trace (absent otherwise) */
#define GMT_OPT_BOUNDED "bounded"
/** header options: GPUMEMTRACE_BUCKET_MS of a bounded trace */
#define GMT_OPT_BUCKET_MS "bucket_ms"
/** trailer: event lines left out (the trailer's `events` counts the lines written) */
#define GMT_TRAILER_ELIDED "elided"
/** trailer: events that reached the writer after a later bucket was cut (exactness not assured) */
#define GMT_TRAILER_LATE "late"
/** trailer: buckets cut */
#define GMT_TRAILER_BUCKETS "buckets"
/** trailer (any trace): of `dropped`, the `usage` readings (absent when none) */
#define GMT_TRAILER_DROPPED_READINGS "dropped_readings"

#endif
