/*
 * @brief `gpumemtrace diff BASE NEW`: its options, and what changed (gate/diff.h) as text or
 * JSON. BASE and NEW are each a trace, a directory of traces or a JSON report; both are read as
 * the JSON report (docs/report-json.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gate/diff.h"
#include "analysis/ranks/ranks.h"
#include "analysis/report/keys.h"
#include "analysis/report/units.h"
#include "cli.h"

/* Sites listed by default (--top). */
#define DIFF_DEFAULT_TOP 20

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace diff [--format text|json] [--top N] BASE NEW\n"
	    "\n"
	    "Compare two runs: the change in device memory held at the peak, leaked bytes and\n"
	    "failed allocations, and per call site the change in bytes live at the peak and\n"
	    "bytes leaked, largest change first; with PyTorch's blocks in either run, the same\n"
	    "for the tensors (peak allocated, live at exit, per tensor site). BASE and NEW are\n"
	    "each a trace file, a directory of traces, or a JSON report written by\n"
	    "'report --format json'.\n"
	    "When BASE or NEW holds summaries ('gpumemtrace summarize'), the runs are\n"
	    "compared rank by rank, matched by RANK (not pid): each rank's peak, leaked bytes,\n"
	    "failed allocations and NCCL's bytes at the peak, largest change first.\n"
	    "\n"
	    "Options:\n"
	    "  -f, --format FMT  text (default) or json (keys in docs/ci.md)\n"
	    "  -n, --top N       list the N sites that changed most (default %d; 0: all)\n"
	    "  -h, --help        show this help\n"
	    "  -V, --version     show the version\n"
	    "\n"
	    "Exit status: 0 written, 2 usage error, 3 BASE or NEW could not be read.\n",
	    DIFF_DEFAULT_TOP);
}

static const char *const total_names[GMT_DIFF_NTOTALS] = {
    [GMT_DIFF_PEAK_HELD] = "peak held",
    [GMT_DIFF_LEAKED] = "leaked",
    [GMT_DIFF_FAILED] = "failed allocations",
};

// --- Text ---------------------------------------------------------------------------------

/* "+1.0 MiB (+1048576 bytes)", "-512 B", "0 B" */
static const char *
delta_text(const struct gmt_change *c, char *buf, size_t size)
{
	char h[GMT_BYTES_BUF];
	uint64_t d = gmt_change_abs(c);
	char sign = c->after > c->before ? '+' : '-';

	if (d == 0)
		snprintf(buf, size, "0 B");
	else if (d < 1024)
		snprintf(buf, size, "%c%" PRIu64 " B", sign, d);
	else
		snprintf(buf, size, "%c%s (%c%" PRIu64 " bytes)", sign, gmt_format_bytes(d, h),
			 sign, d);
	return buf;
}

/* One total's line: "  NAME  before -> after: delta, percent". */
static void
text_total(FILE *out, const char *name, const struct gmt_change *c)
{
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT], d[96];

	fprintf(out, "  %-20s %s -> %s: %s", name, gmt_size_text((uint64_t)c->before, b),
		gmt_size_text((uint64_t)c->after, a), delta_text(c, d, sizeof(d)));
	if (c->before && c->after != c->before)
		fprintf(out, ", %+.1f%%",
			((double)c->after - (double)c->before) * 100.0 / (double)c->before);
	fprintf(out, "\n");
}

static void
text_totals(FILE *out, const struct gmt_diff *diff)
{
	fprintf(out, "Totals:\n");
	for (size_t k = 0; k < GMT_DIFF_NTOTALS; k++) {
		struct gmt_change c = diff->totals[k];

		if (k == GMT_DIFF_FAILED)
			fprintf(out, "  %-20s %" PRId64 " -> %" PRId64 " (%+" PRId64 ")\n",
				total_names[k], c.before, c.after, c.after - c.before);
		else
			text_total(out, total_names[k], &c);
	}
}

static void
text_change(FILE *out, const char *what, const struct gmt_change *c)
{
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT], d[96];

	fprintf(out, "      %s %s -> %s: %s\n", what, gmt_size_text((uint64_t)c->before, b),
		gmt_size_text((uint64_t)c->after, a), delta_text(c, d, sizeof(d)));
}

static const char *const tensor_names[GMT_DIFF_NTENSOR] = {
    [GMT_DIFF_T_PEAK] = "peak allocated",
    [GMT_DIFF_T_LIVE_END] = "live at exit",
};

/* The tensor level (either run has one): PyTorch's figures, then its sites by change. */
static void
text_tensors(FILE *out, const struct gmt_diff *s, size_t top)
{
	size_t shown = top && top < s->tchanged ? top : s->tchanged;

	fprintf(out, "\nPyTorch tensors (the caching allocator's blocks):\n");
	for (size_t k = 0; k < GMT_DIFF_NTENSOR; k++)
		text_total(out, tensor_names[k], &s->tensor_totals[k]);
	if (s->tchanged == 0) {
		fprintf(out, "No tensor site changed (%zu compared).\n", s->tn);
		return;
	}
	fprintf(out, "Tensor sites by change, largest first (%zu of %zu changed; %zu unchanged):\n",
		shown, s->tchanged, s->tn - s->tchanged);
	for (size_t i = 0; i < shown; i++) {
		const struct gmt_diff_tsite *x = &s->tv[i];

		fprintf(out, "  %s%s%s\n", gmt_esc(x->site), *x->callers ? " <- " : "",
			*x->callers ? gmt_esc(x->callers) : "");
		if (gmt_change_abs(&x->peak) || x->peak.before)
			text_change(out, "at peak", &x->peak);
		if (gmt_change_abs(&x->live_end) || x->live_end.before)
			text_change(out, "at exit", &x->live_end);
	}
}

/* The trace files of @p role's run that yielded nothing (its document's lost_traces[]): their
 * processes are in neither side's figures, as the reports and check say. */
static void
text_lost(FILE *out, const char *role, const json_t *doc)
{
	const json_t *lost = json_object_get(doc, GMT_RK_LOST_TRACES), *l;
	size_t n = json_array_size(lost), i;

	if (n == 0)
		return;
	fprintf(out,
		"warning: %s: %zu trace file%s yielded nothing: %s in none of the figures below\n",
		role, n, n == 1 ? "" : "s", n == 1 ? "its process is" : "their processes are");
	json_array_foreach(lost, i, l)
	{
		const char *file = json_string_value(json_object_get(l, GMT_RK_FILE));
		const char *why = json_string_value(json_object_get(l, GMT_RK_REASON));
		fprintf(out, "  %s: %s\n", file ? gmt_esc(file) : "?", why ? gmt_esc(why) : "?");
	}
}

static void
write_text(FILE *out, const struct gmt_diff *s, size_t top, const json_t *base, const json_t *next)
{
	size_t changed = s->changed, shown = top && top < changed ? top : changed;
	char site[768];

	text_lost(out, "BASE", base);
	text_lost(out, "NEW", next);
	text_totals(out, s);
	if (changed == 0) {
		fprintf(out, "\nNo call site changed (%zu compared).\n", s->n);
		if (s->tensors)
			text_tensors(out, s, top);
		return;
	}
	fprintf(out, "\nCall sites by change, largest first (%zu of %zu changed; %zu unchanged):\n",
		shown, changed, s->n - changed);
	for (size_t i = 0; i < shown; i++) {
		const struct gmt_diff_site *x = &s->v[i];

		fprintf(out, "  %s %s at %s\n", gmt_esc(x->api), gmt_esc(x->kind),
			gmt_esc(gmt_site_text(x->frame, site, sizeof(site))));
		if (gmt_change_abs(&x->peak) || x->peak.before)
			text_change(out, "at peak", &x->peak);
		if (gmt_change_abs(&x->leaked) || x->leaked.before)
			text_change(out, "leaked ", &x->leaked);
	}
	if (s->tensors)
		text_tensors(out, s, top);
}

// --- JSON ---------------------------------------------------------------------------------

static json_t *
change_json(const struct gmt_change *c)
{
	return json_pack("{sIsIsI}", "before", (json_int_t)c->before, "after", (json_int_t)c->after,
			 "delta", (json_int_t)(c->after - c->before));
}

/* The tensor level's part of the JSON: its totals and sites, as the CUDA level's. */
static json_t *
tensors_json(const struct gmt_diff *s, size_t top)
{
	json_t *t = json_object(), *totals = json_object(), *list = json_array();
	size_t shown = top && top < s->tchanged ? top : s->tchanged;

	for (size_t k = 0; k < GMT_DIFF_NTENSOR; k++)
		json_object_set_new(totals, gmt_diff_tensor_key((enum gmt_diff_tensor_total)k),
				    change_json(&s->tensor_totals[k]));
	json_object_set_new(t, "totals", totals);
	json_object_set_new(t, "sites_compared", json_integer((json_int_t)s->tn));
	json_object_set_new(t, "sites_changed", json_integer((json_int_t)s->tchanged));
	for (size_t i = 0; i < shown; i++) {
		const struct gmt_diff_tsite *x = &s->tv[i];

		json_array_append_new(list,
				      json_pack("{sssOsoso}", "site", x->site, "callers",
						x->callers_json, "peak", change_json(&x->peak),
						"live_at_exit", change_json(&x->live_end)));
	}
	json_object_set_new(t, "sites", list);
	return t;
}

/* An input's name in the JSON document: bytes, which JSON wants as UTF-8 (gmt_utf8_lossy()). */
static void
set_path(json_t *doc, const char *key, const char *path)
{
	char *text = gmt_utf8_lossy(path);

	json_object_set_new(doc, key, json_string(text));
	free(text);
}

/* A side's lost_traces[] as its document has it ([] for a document older than the key). */
static json_t *
lost_json(const json_t *doc)
{
	json_t *lost = json_object_get(doc, GMT_RK_LOST_TRACES);

	return json_is_array(lost) ? json_deep_copy(lost) : json_array();
}

static json_t *
diff_json(const char *base_path,
	  const char *next_path,
	  const struct gmt_diff *s,
	  size_t top,
	  const json_t *base,
	  const json_t *next)
{
	json_t *doc = json_object(), *totals = json_object(), *list = json_array();
	size_t changed = s->changed, shown = top && top < changed ? top : changed;
	char text[768];

	json_object_set_new(doc, "diff_version", json_integer(1));
	set_path(doc, "base", base_path);
	set_path(doc, "new", next_path);
	json_object_set_new(doc, "base_lost_traces", lost_json(base));
	json_object_set_new(doc, "new_lost_traces", lost_json(next));
	for (size_t k = 0; k < GMT_DIFF_NTOTALS; k++)
		json_object_set_new(totals, gmt_diff_total_key((enum gmt_diff_total)k),
				    change_json(&s->totals[k]));
	json_object_set_new(doc, "totals", totals);
	json_object_set_new(doc, "sites_compared", json_integer((json_int_t)s->n));
	json_object_set_new(doc, "sites_changed", json_integer((json_int_t)changed));
	for (size_t i = 0; i < shown; i++) {
		const struct gmt_diff_site *x = &s->v[i];

		json_array_append_new(
		    list, json_pack("{sOsssssssoso}", "site", x->frame ? x->frame : json_null(),
				    "site_text", gmt_site_text(x->frame, text, sizeof(text)), "api",
				    x->api, "kind", x->kind, "peak", change_json(&x->peak),
				    "leaked", change_json(&x->leaked)));
	}
	json_object_set_new(doc, "sites", list);
	json_object_set_new(doc, "tensors", s->tensors ? tensors_json(s, top) : json_null());
	return doc;
}

// --- The command --------------------------------------------------------------------------

static int
parse_top(const char *value, size_t *top)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (end == value || *end || errno || value[0] == '-') {
		fprintf(stderr, "gpumemtrace diff: --top: invalid count '%s' (a number >= 0)\n",
			gmt_esc(value));
		return -1;
	}
	*top = (size_t)v;
	return 0;
}

static json_t *
load_one(const char *role, const char *path, int *rc)
{
	char *paths[] = {(char *)path};
	json_t *doc = gmt_report_doc_load("diff", paths, 1, rc);

	if (!doc)
		fprintf(stderr, "gpumemtrace diff: cannot read %s %s\n", role, gmt_esc(path));
	return doc;
}

static void
add_rank(void *data, const char *input, const json_t *summary)
{
	if (gmt_ranks_add(data, "diff", input, summary, stderr) == -ENOMEM)
		fprintf(stderr, "gpumemtrace diff: %s: out of memory; left out\n", gmt_esc(input));
}

/* The table of one run (@p role: BASE or NEW); 0, or the exit status (said). */
static int
ranks_of(const char *role, const char *path, struct gmt_ranks *r)
{
	struct gmt_session_options so;
	char *paths[] = {(char *)path};

	gmt_cli_session_options(&so);
	gmt_ranks_each("diff", paths, 1, &so, stderr, add_rank, r, NULL);
	gmt_ranks_settle(r, "diff", stderr);
	if (r->n == 0) {
		fprintf(stderr, "gpumemtrace diff: no readable summary or trace in %s %s\n", role,
			gmt_esc(path));
		return GMT_EXIT_UNREADABLE;
	}
	return GMT_EXIT_OK;
}

/* diff over ranks: BASE and NEW compared rank by rank. */
static int
diff_ranks(const char *base_path, const char *next_path, bool json, size_t top)
{
	struct gmt_ranks a = {0}, b = {0};
	int rc = ranks_of("BASE", base_path, &a), err = 0;

	if (rc == GMT_EXIT_OK)
		rc = ranks_of("NEW", next_path, &b);
	if (rc == GMT_EXIT_OK && json) {
		json_t *doc = gmt_ranks_diff_json(&a, &b);

		if (doc) {
			set_path(doc, "base", base_path);
			set_path(doc, "new", next_path);
		}
		err = !doc								 ? -ENOMEM
		      : json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0 ? -EIO
											 : 0;
		fputc('\n', stdout);
		json_decref(doc);
	} else if (rc == GMT_EXIT_OK) {
		err = gmt_ranks_diff_text(stdout, &a, &b, top);
	}
	if (err == -ENOMEM) {
		fprintf(stderr, "gpumemtrace diff: out of memory\n");
		rc = GMT_EXIT_UNREADABLE;
	}
	if (rc == GMT_EXIT_OK && (err || fflush(stdout) != 0 || ferror(stdout))) {
		fprintf(stderr, "gpumemtrace diff: cannot write standard output: %s\n",
			strerror(errno ? errno : EIO));
		rc = GMT_EXIT_USAGE;
	}
	gmt_ranks_free(&a);
	gmt_ranks_free(&b);
	return rc;
}

int
gmt_cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"top", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	json_t *base = NULL, *next = NULL;
	struct gmt_diff diff = {0};
	size_t top = DIFF_DEFAULT_TOP;
	bool json = false;
	int c, rc = GMT_EXIT_OK;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				fprintf(stderr,
					"gpumemtrace diff: unknown format '%s' (text or json)\n",
					gmt_esc(optarg));
				return gmt_usage_hint("diff");
			}
			json = strcmp(optarg, "json") == 0;
			break;
		case 'n':
			if (parse_top(optarg, &top) != 0)
				return gmt_usage_hint("diff");
			break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("diff", argv); return gmt_usage_hint("diff");
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "gpumemtrace diff: expected BASE and NEW, got %d argument%s\n",
			argc - optind, argc - optind == 1 ? "" : "s");
		return gmt_usage_hint("diff");
	}
	if (gmt_ranks_have_summary(argv + optind, 2))
		return diff_ranks(argv[optind], argv[optind + 1], json, top);
	if (!(base = load_one("BASE", argv[optind], &rc)) ||
	    !(next = load_one("NEW", argv[optind + 1], &rc)))
		goto out;

	if (gmt_diff_run(&diff, base, next) != 0) {
		fprintf(stderr, "gpumemtrace diff: out of memory\n");
		rc = GMT_EXIT_UNREADABLE;
		goto out;
	}
	if (json) {
		json_t *doc = diff_json(argv[optind], argv[optind + 1], &diff, top, base, next);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0)
			rc = GMT_EXIT_USAGE;
		fputc('\n', stdout);
		json_decref(doc);
	} else {
		write_text(stdout, &diff, top, base, next);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumemtrace diff: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
out:
	gmt_diff_free(&diff);
	json_decref(base);
	json_decref(next);
	return rc;
}
