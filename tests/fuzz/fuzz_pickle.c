/*
 * @brief Fuzz target `pickle`: one input is one PyTorch memory snapshot pickle
 * (`gpumemtrace report snapshot.pickle`): the pickle codec (reader/pickle.c) and the snapshot's
 * conversion into a trace (reader/snapshot.c), read from memory (fmemopen), then the model's
 * replay, the call stacks, the JSON report and the text report. Its corpus:
 * tests/fuzz/corpus/pickle/.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analysis/model/model.h"
#include "analysis/reader/snapshot.h"
#include "analysis/reader/trace.h"
#include "analysis/report/report.h"
#include "analysis/symbols/callstack.h"
#include "analysis/symbols/symbolize.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *devnull = fuzz_devnull();
	/* fmemopen() wants a buffer of one byte at least: an empty input is an empty file */
	FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
	struct gmt_trace *t = NULL;
	struct gmt_symbolizer *sym;
	struct gmt_model *m;

	if (!f)
		return 0;
	gmt_snapshot_read(f, "fuzz.pickle", devnull, NULL, &t, NULL);
	fclose(f);
	if (!t)
		return 0;
	if ((m = gmt_model_build(t)) && (sym = gmt_symbolizer_new(devnull))) {
		struct gmt_process p = {
		    .trace = t, .model = m, .stacks = gmt_callstacks_new(t, sym)};

		if (p.stacks) {
			json_decref(gmt_report_json_doc(&p, 1, NULL));
			gmt_report_text(devnull, &p, 1, NULL, NULL);
			gmt_callstacks_free(p.stacks);
		}
		gmt_symbolizer_free(sym);
	}
	gmt_model_free(m);
	gmt_trace_free(t);
	return 0;
}
