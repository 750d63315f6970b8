/*
 * @brief Fuzz target `summary`: one input is one per-rank summary file (`gpumemtrace
 * summarize`, docs/multi-host.md), read as report, check and diff read summaries
 * (src/analysis/ranks/): next to a well-formed summary of another rank, the input is read twice
 * (a rank given again), the rows settled (the job's world size and time), judged (peak, first
 * failure, imbalance), written as the merged JSON, the per-rank text and the diff against the
 * well-formed one alone; and each summary as a report document through every gate of check.
 * Its corpus: tests/fuzz/corpus/summary/ (summaries of the golden traces, and odd ones).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/gate/check.h"
#include "analysis/gate/suppress.h"
#include "analysis/ranks/ranks.h"
#include "fuzz.h"

/* A summary of rank 0 of a job of 2 ranks: enough for every path of the merge to run. */
static const char good_summary[] =
    "{\"kind\":\"summary\",\"summary_version\":1,\"report_version\":1,\"file\":\"r0.jsonl\","
    "\"host\":\"node0\",\"pid\":100,\"rank\":{\"rank\":0,\"local_rank\":0,\"world_size\":2},"
    "\"devices\":[0],\"start_unix_s\":1796228579.0,\"end_unix_s\":1796228589.0,"
    "\"clock_uncertainty_s\":0.0,\"end_time_s\":10.0,\"coverage\":\"full\",\"complete\":true,"
    "\"dropped\":0,\"events\":10,\"bad_lines\":0,"
    "\"process\":{\"pid\":100,\"host\":\"node0\",\"complete\":true,\"events\":10,"
    "\"peak_held_bytes\":1048576,\"peak_time_s\":1.5,\"peak_unix_s\":1796228580.5,"
    "\"first_failure_time_s\":null,\"first_failure_unix_s\":null},"
    "\"summary\":{\"processes\":1,\"events\":10,\"peak_held_bytes\":1048576,"
    "\"leaked_bytes\":0,\"leaked_allocations\":0,\"failed_allocations\":0},"
    "\"peaks\":[{\"device\":0,\"bytes\":1048576,\"time_s\":1.5,\"unix_s\":1796228580.5,"
    "\"peak_sites\":[{\"process\":0,\"device\":0,\"bytes\":1048576,\"allocations\":1,"
    "\"api\":\"cudaMalloc\",\"stack\":0}]}],"
    "\"nccl\":{\"at_peak_bytes\":0,\"at_exit_bytes\":0},\"leak_sites\":[],\"failed_sites\":[],"
    "\"oom\":[],\"growth_sites\":[],\"tensors\":null,\"timeline\":[],"
    "\"call_stacks\":[{\"id\":0,\"frames\":[{\"function\":\"main\",\"file\":\"t.py\","
    "\"line\":3}]}]}";

static char good_path[64];
static FILE *null_out;

static void
setup(void)
{
	int fd = memfd_create("fuzz-summary-good", 0);

	if (fd < 0 || write(fd, good_summary, sizeof(good_summary) - 1) !=
			  (ssize_t)(sizeof(good_summary) - 1))
		abort();
	snprintf(good_path, sizeof(good_path), "/proc/self/fd/%d", fd);
	null_out = fuzz_devnull();
}

struct ctx {
	struct gmt_ranks *rows;
	struct gmt_check_options *check;
};

/* As report and check take a summary: a row of the table, and the gates on its document. */
static void
take(void *data, const char *input, const json_t *summary)
{
	struct ctx *c = data;
	struct gmt_gates g = {0};
	json_t *doc;

	gmt_ranks_add(c->rows, "fuzz", input, summary, null_out);
	if ((doc = gmt_summary_report_doc(summary))) {
		gmt_check_run(&g, c->check, doc, NULL);
		gmt_gates_free(&g);
		json_decref(doc);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gmt_ranks rows = {0}, base = {0};
	struct gmt_ranks_verdict v;
	struct gmt_suppressions supp = {0};
	struct gmt_dev_limit peak = {.all = true, .bytes = 1};
	struct gmt_check_options check = {.leaked_bytes_set = true,
					  .failed_set = true,
					  .growth_set = true,
					  .peaks = &peak,
					  .npeaks = 1,
					  .tensor_leaks = &peak,
					  .ntensor_leaks = 1,
					  .tensor_growth_set = true,
					  .max_increase = 10.0,
					  .supp = &supp};
	struct ctx c = {&rows, &check};
	size_t bad;
	json_t *j;
	char *text;

	if (!null_out)
		setup();
	const char *input = fuzz_memfd_path(data, size);
	char *const paths[] = {(char *)good_path, (char *)input, (char *)input};
	gmt_ranks_each("fuzz", paths, 3, NULL, null_out, take, &c, &bad);
	gmt_ranks_settle(&rows, "fuzz", null_out);
	if (gmt_ranks_verdict(&rows, &v) == 0)
		gmt_ranks_verdict_free(&v);
	if ((j = gmt_ranks_json(&rows))) {
		if ((text = json_dumps(j, JSON_COMPACT)))
			free(text);
		json_decref(j);
	}
	gmt_ranks_text(null_out, &rows);
	/* diff: the well-formed rank alone against the merge with the input */
	struct ctx cb = {&base, &check};
	gmt_ranks_each("fuzz", paths, 1, NULL, null_out, take, &cb, &bad);
	gmt_ranks_settle(&base, "fuzz", null_out);
	if ((j = gmt_ranks_diff_json(&base, &rows)))
		json_decref(j);
	gmt_ranks_diff_text(null_out, &base, &rows, 0);
	gmt_ranks_free(&base);
	gmt_ranks_free(&rows);
	return 0;
}
