/*
 * @brief Fuzz target `compressed`: one input is one zstd- or gzip-compressed trace file
 * (`.jsonl.zst`, `.jsonl.gz`): the reader's input layer (reader/trace_input.c: gzip members one
 * after the other through zlib, zstd frames through util/zread) and what it hands the line reader,
 * up to a replayed model. An input that starts with neither format's magic number is not read
 * (the trace target fuzzes plain files), so the fuzzer keeps to compressed ones. Its corpus:
 * tests/fuzz/corpus/compressed/.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "fuzz.h"
#include "util/zstd_api.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gmt_trace *t = NULL;

	if (!(size >= 4 && memcmp(data, GMT_ZSTD_MAGIC, 4) == 0) &&
	    !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b))
		return 0;
	gmt_trace_read(fuzz_memfd_path(data, size), fuzz_devnull(), NULL, &t);
	if (t)
		gmt_model_free(gmt_model_build(t));
	gmt_trace_free(t);
	return 0;
}
