/*
 * @brief Fuzz target `trace`: one input is one whole trace file, run through everything
 * `gpumemtrace report` does with it (read stored and streamed, replay, symbolize, and every
 * format: JSON, HTML, Perfetto, text, folded, the run summary, the PyTorch snapshot export, a
 * --from/--to range). Its corpus: tests/fuzz/corpus/trace/ (fuzz.h says how it is built).
 *
 * The input reaches the reader as a file path, as in the CLI (fuzz_memfd_path()). Kept small on
 * purpose: when the analysis API changes, only report() needs adapting.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include <jansson.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "analysis/report/report.h"
#include "analysis/report/report_formats.h"
#include "analysis/session/session.h"
#include "analysis/symbols/callstack.h"
#include "analysis/symbols/symbolize.h"
#include "fuzz.h"

/*
 * The reports besides the JSON document, each on its own: under libFuzzer (GMT_FUZZING) one of
 * them per input, picked by a hash of the input (reproducible, and mutations spread over all of
 * them: the HTML report alone costs three times the read of a small trace); in the corpus replay,
 * all of them for every input.
 */
enum { R_HTML, R_PERFETTO, R_TEXT, R_FOLDED, R_SNAPSHOT, R_RANGE, R_NONE, NREPORTS };

static void
report(int which, struct gmt_session *s)
{
	FILE *devnull = fuzz_devnull();
	struct gmt_process *p = &s->procs[0], ranged;
	struct gmt_range_opt range = {0};

	switch (which) {
	case R_HTML: gmt_report_html(devnull, p, 1, NULL, NULL); break;
	case R_PERFETTO: gmt_report_perfetto(devnull, p, 1); break;
	case R_TEXT:
		gmt_report_text(devnull, p, 1, NULL,
				&(struct gmt_report_options){.stacks = GMT_STACKS_FULL});
		gmt_report_text(devnull, p, 1, NULL,
				&(struct gmt_report_options){.stacks = GMT_STACKS_SITE});
		break;
	case R_FOLDED:
		gmt_report_folded(devnull, p, 1, GMT_FOLD_PEAK);
		gmt_report_folded(devnull, p, 1, GMT_FOLD_LEAKED);
		gmt_report_folded(devnull, p, 1, GMT_FOLD_ALLOCATED);
		gmt_report_summary(devnull, "", p, 1);
		break;
	case R_SNAPSHOT: gmt_report_pytorch_snapshot(devnull, p, 1, devnull); break;
	case R_RANGE:
		/* report --from 0.001 --to <the first marker's label, when there is one> */
		range.from =
		    (struct gmt_range_bound){.set = true, .seconds = 0.001, .spec = "0.001"};
		if (p->trace->nmarkers)
			range.to = (struct gmt_range_bound){.set = true,
							    .label = p->trace->markers[0].label,
							    .spec = p->trace->markers[0].label};
		ranged = *p; /* the same trace and stacks, another replay */
		if ((ranged.model = gmt_model_build_range(p->trace, &range))) {
			json_decref(gmt_report_json_doc(&ranged, 1, NULL));
			gmt_report_text(devnull, &ranged, 1, NULL, NULL);
			gmt_model_free(ranged.model);
		}
		break;
	}
}

/* FNV-1a of the input: which report it goes through under libFuzzer. */
static unsigned
input_hash(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	return h;
}

/* The read paths of `gpumemtrace report` on one file (session/session.c, tools/cmd_report.c). */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_memfd_path(data, size);
	struct gmt_session_options so = GMT_SESSION_OPTIONS_INIT;
	struct gmt_session s;

	/* the streamed path of the CLI: events through the reorder window into a model */
	gmt_session_init(&s, &so, fuzz_devnull());
	gmt_session_add_file(&s, path);
	gmt_session_free(&s);

	/* stored: the whole trace, then its replay, the JSON document and the other reports */
	so.stored = true;
	gmt_session_init(&s, &so, fuzz_devnull());
	if (gmt_session_add_file(&s, path) == 0) {
		json_decref(gmt_report_json_doc(s.procs, 1, NULL));
#ifdef GMT_FUZZING
		report((int)(input_hash(data, size) % NREPORTS), &s);
#else
		(void)input_hash;
		for (int which = 0; which < NREPORTS; which++)
			report(which, &s);
#endif
	}
	gmt_session_free(&s);
	return 0;
}
