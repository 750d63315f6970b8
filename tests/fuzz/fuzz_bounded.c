/*
 * @brief Fuzz target `bounded`: one input is the body of a bounded trace (GPUMEMTRACE_BOUNDED=1:
 * `elided` lines among events, format/elided.h; a trailer with its "elided" and "late" counts),
 * after a header that says the trace is bounded. Read stored and streamed, replayed, and through
 * the JSON and text reports, which say what a bounded trace left out. Its corpus:
 * tests/fuzz/corpus/bounded/.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include <jansson.h>

#include "analysis/model/model.h"
#include "analysis/report/report.h"
#include "analysis/session/session.h"
#include "fuzz.h"

static const char header[] =
    "{\"type\":\"header\",\"format\":\"gpumemtrace\",\"version\":1,\"tracer\":\"0.1.0\",\"pid\":7,"
    "\"ppid\":1,\"host\":\"h\",\"argv\":[\"python3\",\"t.py\"],\"start_ts\":1000,"
    "\"start_unix_ns\":1,\"rank\":null,\"coverage\":\"full\",\"capture\":[\"cupti\"],"
    "\"options\":{\"ring_slots\":1024,\"flush_ms\":100,\"snapshot_ms\":1000,\"bounded\":true,"
    "\"bucket_ms\":5},\"stacks\":{\"native\":true,\"python\":\"3.12\",\"depth\":64}}\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_memfile(3, (const void *[]){header, data, "\n"},
					(size_t[]){sizeof(header) - 1, size, 1});
	struct gmt_session_options so = GMT_SESSION_OPTIONS_INIT;
	struct gmt_session s;

	for (int stored = 0; stored < 2; stored++) {
		so.stored = stored;
		gmt_session_init(&s, &so, fuzz_devnull());
		if (gmt_session_add_file(&s, path) == 0) {
			json_decref(gmt_report_json_doc(s.procs, 1, NULL));
			if (stored)
				gmt_report_text(fuzz_devnull(), s.procs, 1, NULL, NULL);
		}
		gmt_session_free(&s);
	}
	return 0;
}
