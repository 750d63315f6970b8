/*
 * @brief `gpumemtrace report`: read traces, print the text or JSON report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report.h"
#include "cli.h"

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace report [--format text|json] [-o FILE] TRACE...\n"
	    "\n"
	    "Report the device memory held at its peak (with every memory kind on its own),\n"
	    "leaks, failed allocations and, where the trace has NVML readings, what no\n"
	    "allocation call accounts for, from trace files.\n"
	    "TRACE is a trace file or a directory (every *.jsonl in it, one per process).\n"
	    "\n"
	    "Options:\n"
	    "  -f, --format FMT  text (default: for people) or json (stable keys, see\n"
	    "                    docs/report-json.md)\n"
	    "  -o, --output FILE write the report to FILE instead of standard output\n"
	    "  -h, --help        show this help\n"
	    "\n"
	    "Problems in a trace (unreadable lines, a torn last line) are reported on standard\n"
	    "error as FILE:LINE: MESSAGE; the rest of the trace is used.\n"
	    "\n"
	    "Exit status: 0 report written, 2 usage error (or the output file cannot be\n"
	    "written), 3 no trace could be read.\n");
}

int
gmt_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct gmt_inputs in = {0};
	const char *output = NULL;
	bool json = false;
	FILE *out = stdout;
	int c, rc = GMT_EXIT_OK;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0) {
				json = true;
			} else if (strcmp(optarg, "text") == 0) {
				json = false;
			} else {
				fprintf(stderr,
					"gpumemtrace report: unknown format '%s' (text or json)\n",
					optarg);
				return gmt_usage_hint("report");
			}
			break;
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		default: gmt_bad_option("report", argv); return gmt_usage_hint("report");
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace report: no trace given\n");
		return gmt_usage_hint("report");
	}

	for (int i = optind; i < argc; i++)
		gmt_inputs_add_path(&in, argv[i], stderr);
	if (in.n == 0) {
		fprintf(stderr, "gpumemtrace report: no readable trace\n");
		gmt_inputs_free(&in);
		return GMT_EXIT_UNREADABLE;
	}

	/* Opened only now, so a failed read never leaves an empty report file behind. */
	if (output) {
		out = fopen(output, "w");
		if (!out) {
			fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n", output,
				strerror(errno));
			gmt_inputs_free(&in);
			return GMT_EXIT_USAGE;
		}
	}
	if (json) {
		if (gmt_report_json(out, in.models, in.n) != 0)
			rc = GMT_EXIT_USAGE;
	} else {
		gmt_report_text(out, in.models, in.n);
	}
	if (ferror(out) | (out != stdout ? fclose(out) : fflush(out))) {
		fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
			output ? output : "standard output", strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
	gmt_inputs_free(&in);
	return rc;
}
