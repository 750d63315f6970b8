/*
 * @brief `gpumemtrace report`: read traces, print the text, JSON, folded, HTML or Perfetto
 * report, a PyTorch snapshot, or CSV tables for SQL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/ranks/ranks.h"
#include "analysis/report/categories.h"
#include "analysis/report/report.h"
#include "analysis/report/report_formats.h"
#include "cli.h"
#include "util/outfile.h"

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace report [--format text|json|folded|html|perfetto|\n"
	    "                          pytorch-snapshot|csv] [--categories FILE]\n"
	    "                          [--stack site|full]\n"
	    "                          [--weight peak|leaked|allocated] [--from WHEN]\n"
	    "                          [--to WHEN] [--ranks] [-o FILE] TRACE...\n"
	    "\n"
	    "Report the device memory held at its peak (with every memory kind on its own),\n"
	    "who held it, leaks, failed allocations and, where the trace has NVML readings, what\n"
	    "no allocation call accounts for, from trace files.\n"
	    "TRACE is a trace file or a directory (every *.jsonl.zst, *.jsonl, *.jsonl.gz and\n"
	    "PyTorch snapshot *.pickle in it, one per process).\n"
	    "\n"
	    "Over many ranks: given summaries ('gpumemtrace summarize'; *.summary.json, or\n"
	    "a directory of them, mixed with traces or not), or with --ranks, the report is\n"
	    "the per-rank one: a row per rank (peak, when, first failure, leaks, NCCL's\n"
	    "bytes), the rank that peaked highest, the one that failed first by wall clock\n"
	    "(only where the gap exceeds the clocks' stated uncertainty), the imbalance\n"
	    "(max/mean of the peaks, ranks past mean + 2 sd named); text, json or csv\n"
	    "(-o DIR: DIR/ranks.csv). A trace whose summary is beside it in a directory is\n"
	    "read from its summary. See docs/multi-host.md.\n"
	    "\n"
	    "Options:\n"
	    "  -f, --format FMT  text (default: for people), json (stable keys, see\n"
	    "                    docs/report-json.md), folded (one line per stack, for\n"
	    "                    flamegraph.pl, inferno or speedscope), html (one\n"
	    "                    self-contained page: summary, timeline, top sites, flame\n"
	    "                    graph, leaks, failures; opens offline in a browser) or\n"
	    "                    perfetto (Chrome trace-event JSON: open it in\n"
	    "                    ui.perfetto.dev or chrome://tracing); see\n"
	    "                    docs/report-formats.md; pytorch-snapshot (the pickle\n"
	    "                    torch.cuda.memory._dump_snapshot() writes, from the\n"
	    "                    trace's block lines, with the memory PyTorch's cache\n"
	    "                    did not allocate: open it in pytorch.org/memory_viz)\n"
	    "                    or csv (-o DIR: one CSV file per record type in DIR,\n"
	    "                    allocations paired with their frees, for DuckDB or\n"
	    "                    SQLite: docs/sql.md)\n"
	    "  -s, --stack VIEW  text: site (default) groups allocations by call site, the\n"
	    "                    innermost frame of your code; full also prints each group's\n"
	    "                    whole stack, outermost frame first\n"
	    "  -w, --weight W    folded: peak (default; bytes live at each device's peak),\n"
	    "                    leaked (bytes live at the end) or allocated (bytes allocated\n"
	    "                    over the whole run)\n"
	    "      --from WHEN   report only from WHEN on: seconds from the trace's start\n"
	    "                    (2.5) or the label of a marker (its first occurrence);\n"
	    "                    what is live then is the starting state, not a leak\n"
	    "      --to WHEN     ... and up to WHEN (seconds, or the first marker with that\n"
	    "                    label after --from)\n"
	    "      --categories FILE\n"
	    "                    the tensor level's categories (parameter, gradient, ...)\n"
	    "                    from the rules in FILE, before the built-in ones unless it\n"
	    "                    says no-builtin (docs/categories.md)\n"
	    "  -o, --output FILE write the report to FILE instead of standard output (csv:\n"
	    "                    the directory to write the tables into); never one of the\n"
	    "                    inputs\n"
	    "      --ranks       the per-rank report, traces summarized here\n"
	    "  -h, --help        show this help\n"
	    "  -V, --version     show the version\n"
	    "\n"
	    "Call stacks are symbolized from the files the trace names (build-id checked; a\n"
	    "missing or different file shows its frames as module+offset). A call site is the\n"
	    "innermost Python frame, else the innermost native frame outside the CUDA runtime,\n"
	    "driver and CUPTI, gpumemtrace, libc/libstdc++/ld.so and PyTorch's CUDA allocator\n"
	    "libraries (libc10_cuda, libtorch_cuda).\n"
	    "\n"
	    "Problems in a trace (unreadable lines, a torn last line) are reported on standard\n"
	    "error as FILE:LINE: MESSAGE; the rest of the trace is used. A trace file that\n"
	    "yielded nothing (empty) is named in the report itself (json: lost_traces).\n"
	    "\n"
	    "Exit status: 0 report written, 2 usage error (or the output file cannot be\n"
	    "written, or a --from/--to label no marker has), 3 no trace (or summary) could\n"
	    "be read. A bad summary (another version, truncated, not a summary, a rank\n"
	    "given twice, a rank of another job) is named on standard error and left out.\n");
}

enum format {
	FORMAT_TEXT,
	FORMAT_JSON,
	FORMAT_FOLDED,
	FORMAT_HTML,
	FORMAT_PERFETTO,
	FORMAT_SNAPSHOT,
	FORMAT_CSV,
};

#define LABELS_SHOWN 10

/*
 * A --from/--to marker label that no trace has: reported with the labels there are, since a
 * report of "nothing in the range" would look like an answer. False after the message.
 */
static bool
label_exists(const struct gmt_session *in, const char *option, const struct gmt_range_bound *b)
{
	const char *seen[LABELS_SHOWN];
	size_t nseen = 0, more = 0;

	if (!b->set || !b->label || gmt_session_has_label(in, b->label))
		return true;
	for (size_t i = 0; i < in->n; i++) {
		for (size_t k = 0; k < in->procs[i].trace->nmarkers; k++) {
			const char *l = in->procs[i].trace->markers[k].label;
			size_t j;

			for (j = 0; l && j < nseen && strcmp(seen[j], l) != 0; j++)
				;
			if (!l || j < nseen)
				continue;
			if (nseen < LABELS_SHOWN)
				seen[nseen++] = l;
			else
				more++; /* only "and more": the rest are not told apart */
		}
	}
	fprintf(stderr, "gpumemtrace report: %s '%s': no marker has this label in ", option,
		gmt_esc(b->label));
	if (in->n == 1)
		fprintf(stderr, "%s", gmt_esc(in->procs[0].trace->path));
	else
		fprintf(stderr, "the %zu traces", in->n);
	if (nseen == 0) {
		fprintf(stderr, " (%s no markers; seconds work too: %s 2.5)\n",
			in->n == 1 ? "it has" : "they have", option);
		return false;
	}
	fprintf(stderr, "; the labels there are:");
	for (size_t j = 0; j < nseen; j++)
		fprintf(stderr, "%s '%s'", j ? "," : "", gmt_esc(seen[j]));
	if (more)
		fprintf(stderr, " and more");
	fprintf(stderr, "\n");
	return false;
}

/* The option's value among @p names (NULL-terminated): its index, or -1 (reported). */
static int
choice(const char *opt, const char *value, const char *const *names, const char *expected)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	fprintf(stderr, "gpumemtrace report: unknown %s '%s' (%s)\n", opt, gmt_esc(value),
		expected);
	return -1;
}

static void
add_rank(void *data, const char *input, const json_t *summary)
{
	struct gmt_ranks *r = data;

	if (gmt_ranks_add(r, "report", input, summary, stderr) == -ENOMEM)
		fprintf(stderr, "gpumemtrace report: %s: out of memory; left out\n",
			gmt_esc(input));
}

/* The per-rank report of @p paths (summaries, traces, directories of either). */
static int
report_ranks(char *const *paths,
	     size_t n,
	     const struct gmt_session_options *so,
	     enum format format,
	     const char *output)
{
	struct gmt_ranks r = {0};
	struct gmt_outfile file = {.dirfd = -1};
	char why[GMT_OUTFILE_WHY];
	FILE *out = stdout;
	int err = 0, rc = GMT_EXIT_OK;

	size_t bad = 0;

	gmt_ranks_each("report", paths, n, so, stderr, add_rank, &r, &bad);
	r.left_out += bad; /* said, each one */
	gmt_ranks_settle(&r, "report", stderr);
	if (r.n == 0) {
		fprintf(stderr, "gpumemtrace report: no readable summary or trace\n");
		gmt_ranks_free(&r);
		return GMT_EXIT_UNREADABLE;
	}
	if (format == FORMAT_CSV) {
		err = gmt_ranks_csv(output, &r, stderr);
		gmt_ranks_free(&r);
		return err ? GMT_EXIT_USAGE : GMT_EXIT_OK;
	}
	if (output) {
		if (gmt_outfile_open(&file, output, why) != 0) {
			fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
				gmt_esc(output), why);
			gmt_ranks_free(&r);
			return GMT_EXIT_USAGE;
		}
		out = file.f;
	}
	if (format == FORMAT_JSON) {
		json_t *doc = gmt_ranks_json(&r);

		if (!doc)
			err = -ENOMEM;
		else if (json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0 ||
			 fputc('\n', out) == EOF)
			err = -EIO;
		json_decref(doc);
	} else {
		err = gmt_ranks_text(out, &r);
	}
	gmt_ranks_free(&r);
	if (err == -ENOMEM) {
		fprintf(stderr, "gpumemtrace report: out of memory\n");
		rc = GMT_EXIT_UNREADABLE;
	} else if (err) {
		fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
			output ? gmt_esc(output) : "standard output",
			strerror(errno ? errno : EIO));
		rc = GMT_EXIT_USAGE;
	}
	if (output) {
		if (rc != GMT_EXIT_OK)
			gmt_outfile_abort(&file);
		else if (gmt_outfile_close(&file, why) != 0) {
			fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
				gmt_esc(output), why);
			rc = GMT_EXIT_USAGE;
		}
	} else if (rc == GMT_EXIT_OK && (ferror(out) | fflush(out))) {
		fprintf(stderr, "gpumemtrace report: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
	return rc;
}

/* The command; @p cats: the --categories rules it loaded (freed by gmt_cmd_report()). */
static int
report_main(int argc, char **argv, struct gmt_cat_rules **cats)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"stack", required_argument, NULL, 's'},
	    {"weight", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {"from", required_argument, NULL, 'F'},
	    {"to", required_argument, NULL, 'T'},
	    {"categories", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"ranks", no_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {
	    "text", "json", "folded", "html", "perfetto", "pytorch-snapshot", "csv", NULL};
	static const char *const views[] = {"site", "full", NULL};
	static const char *const weights[] = {"peak", "leaked", "allocated", NULL};
	struct gmt_report_options opt = {.stacks = GMT_STACKS_SITE};
	struct gmt_session_options so;
	struct gmt_session in;
	const char *output = NULL;
	enum format format = FORMAT_TEXT;
	int weight = -1;
	bool ranks = false;
	FILE *out = stdout;
	struct gmt_outfile file = {.dirfd = -1};
	char owhy[GMT_OUTFILE_WHY];
	int c, k, err, rc = GMT_EXIT_OK;

	gmt_cli_session_options(&so);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:s:w:o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if ((k = choice("format", optarg, formats,
					"text, json, folded, html, perfetto, pytorch-snapshot or "
					"csv")) < 0)
				return gmt_usage_hint("report");
			format = (enum format)k;
			break;
		case 's':
			if ((k = choice("stack view", optarg, views, "site or full")) < 0)
				return gmt_usage_hint("report");
			opt.stacks = (enum gmt_stack_display)k;
			break;
		case 'w':
			if ((weight = choice("weight", optarg, weights,
					     "peak, leaked or allocated")) < 0)
				return gmt_usage_hint("report");
			break;
		case 'o': output = optarg; break;
		case 'C': {
			char why[512] = "out of memory";
			gmt_cat_free(*cats);
			if (!(*cats = gmt_cat_load(optarg, why, sizeof(why)))) {
				fprintf(stderr, "gpumemtrace report: --categories: %s\n",
					gmt_esc(why));
				return gmt_usage_hint("report");
			}
			opt.categories = *cats;
			break;
		}
		case 'F':
			if (!gmt_parse_range_bound("--from", optarg, &so.range.from))
				return gmt_usage_hint("report");
			break;
		case 'T':
			if (!gmt_parse_range_bound("--to", optarg, &so.range.to))
				return gmt_usage_hint("report");
			break;
		case 'R': ranks = true; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("report", argv); return gmt_usage_hint("report");
		}
	}
	if (weight >= 0 && format != FORMAT_FOLDED) {
		fprintf(stderr, "gpumemtrace report: --weight is for --format folded\n");
		return gmt_usage_hint("report");
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace report: no trace given\n");
		return gmt_usage_hint("report");
	}
	if (format != FORMAT_CSV &&
	    gmt_cli_output_is_input("report", "-o", output, argv + optind, (size_t)(argc - optind)))
		return GMT_EXIT_USAGE;

	if (ranks || gmt_ranks_have_summary(argv + optind, (size_t)(argc - optind))) {
		if (format != FORMAT_TEXT && format != FORMAT_JSON && format != FORMAT_CSV) {
			fprintf(stderr,
				"gpumemtrace report: the per-rank report (over summaries, or "
				"--ranks) is text, json or csv; --format %s needs the traces "
				"themselves\n",
				formats[format]);
			return gmt_usage_hint("report");
		}
		if (so.range.from.set || so.range.to.set || opt.stacks != GMT_STACKS_SITE) {
			fprintf(stderr, "gpumemtrace report: --from, --to and --stack are not for "
					"the per-rank report (a summary is of the whole run)\n");
			return gmt_usage_hint("report");
		}
		if (format == FORMAT_CSV && !output) {
			fprintf(stderr, "gpumemtrace report: --format csv writes a directory of "
					"tables: give -o DIR\n");
			return gmt_usage_hint("report");
		}
		return report_ranks(argv + optind, (size_t)(argc - optind), &so, format, output);
	}
	if (format == FORMAT_SNAPSHOT) {
		if (!output && isatty(STDOUT_FILENO)) {
			fprintf(stderr,
				"gpumemtrace report: a pytorch-snapshot is a binary pickle: "
				"give -o FILE (or redirect the output)\n");
			return gmt_usage_hint("report");
		}
		so.stored = true; /* the snapshot walks the events again */
	}
	if (format == FORMAT_CSV) {
		if (!output) {
			fprintf(stderr, "gpumemtrace report: --format csv writes a directory of "
					"tables: give -o DIR\n");
			return gmt_usage_hint("report");
		}
		if (so.range.from.set || so.range.to.set) {
			fprintf(stderr, "gpumemtrace report: --format csv exports the whole trace "
					"(--from/--to: filter on time_s or seq in SQL)\n");
			return gmt_usage_hint("report");
		}
		so.stored = true; /* allocations are paired by a second replay of the events */
	}
	gmt_session_init(&in, &so, stderr);
	for (int i = optind; i < argc; i++)
		gmt_session_add_path(&in, argv[i]);
	if (in.n == 0) {
		fprintf(stderr, "gpumemtrace report: no readable trace\n");
		gmt_session_free(&in);
		return GMT_EXIT_UNREADABLE;
	}
	if (!label_exists(&in, "--from", &so.range.from) ||
	    !label_exists(&in, "--to", &so.range.to)) {
		gmt_session_free(&in);
		return GMT_EXIT_USAGE;
	}

	/* Opened only now, so a failed read never leaves an empty report file behind. */
	if (format == FORMAT_CSV) {
		err = gmt_report_csv(output, in.procs, in.n, &in.lost, stderr);
		gmt_session_free(&in);
		if (err == -ENOMEM) {
			fprintf(stderr, "gpumemtrace report: out of memory\n");
			return GMT_EXIT_UNREADABLE;
		}
		return err ? GMT_EXIT_USAGE : GMT_EXIT_OK; /* not written: said */
	}
	if (output) { /* written beside, renamed at the end: never through a planted link */
		if (gmt_outfile_open(&file, output, owhy) != 0) {
			fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
				gmt_esc(output), owhy);
			gmt_session_free(&in);
			return GMT_EXIT_USAGE;
		}
		out = file.f;
	}
	if (format == FORMAT_JSON)
		err = gmt_report_json(out, in.procs, in.n, &in.lost, opt.categories);
	else if (format == FORMAT_HTML)
		err = gmt_report_html(out, in.procs, in.n, &in.lost, opt.categories);
	else if (format == FORMAT_PERFETTO)
		err = gmt_report_perfetto(out, in.procs, in.n);
	else if (format == FORMAT_SNAPSHOT)
		err = gmt_report_pytorch_snapshot(out, in.procs, in.n, stderr);
	else if (format == FORMAT_FOLDED)
		err = gmt_report_folded(out, in.procs, in.n,
					weight < 0 ? GMT_FOLD_PEAK : (enum gmt_fold_weight)weight);
	else
		err = gmt_report_text(out, in.procs, in.n, &in.lost, &opt);
	if (err == -ENOMEM) {
		fprintf(stderr, "gpumemtrace report: out of memory\n");
		rc = GMT_EXIT_UNREADABLE;
	} else if (err) {
		rc = GMT_EXIT_USAGE; /* not written: said below */
	}
	if (output && rc != GMT_EXIT_OK) {
		if (err != -ENOMEM && ferror(file.f))
			fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n",
				gmt_esc(output), strerror(errno ? errno : EIO));
		gmt_outfile_abort(&file); /* what was there stays, not half a report */
	} else if (output && gmt_outfile_close(&file, owhy) != 0) {
		fprintf(stderr, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(output), owhy);
		rc = GMT_EXIT_USAGE;
	} else if (!output && (ferror(out) | fflush(out))) {
		fprintf(stderr, "gpumemtrace report: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
	gmt_session_free(&in);
	return rc;
}

int
gmt_cmd_report(int argc, char **argv)
{
	struct gmt_cat_rules *cats = NULL;
	int rc = report_main(argc, argv, &cats);

	gmt_cat_free(cats);
	return rc;
}
