/*
 * @brief `gpumemtrace diff BASE NEW`: what changed between two runs, per call site (bytes live
 * at the peak, bytes leaked) and in total (peak held, leaked, failed allocations).
 *
 * BASE and NEW are each a trace, a directory of traces or a JSON report; both are read as the
 * JSON report (docs/report-json.md). Sites are matched across runs by their call site (function,
 * file and line, or module and offset), the allocating call and the memory kind, summed over
 * processes and devices: process indices and stack ids mean nothing across two runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/units.h"
#include "cli.h"
#include "util/xalloc.h"

/* Sites listed by default (--top). */
#define DIFF_DEFAULT_TOP 20

static void
usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumemtrace diff [--format text|json] [--top N] BASE NEW\n"
		"\n"
		"Compare two runs: the change in device memory held at the peak, leaked bytes and\n"
		"failed allocations, and per call site the change in bytes live at the peak and\n"
		"bytes leaked, largest change first. BASE and NEW are each a trace file, a\n"
		"directory of traces, or a JSON report written by 'report --format json'.\n"
		"\n"
		"Options:\n"
		"  -f, --format FMT  text (default) or json (keys in docs/ci.md)\n"
		"  -n, --top N       list the N sites that changed most (default %d; 0: all)\n"
		"  -h, --help        show this help\n"
		"\n"
		"Exit status: 0 written, 2 usage error, 3 BASE or NEW could not be read.\n",
		DIFF_DEFAULT_TOP);
}

// --- Sites --------------------------------------------------------------------------------

struct change {
	int64_t before, after;
};

/* One call site of either run. */
struct site {
	char *key;     /* site text, api, kind: what matches across runs */
	json_t *frame; /* the call-site frame of the first run that had it (a reference), or NULL */
	char *api, *kind;
	struct change peak, leaked;
};

struct sites {
	struct site *v;
	size_t n;
};

static char *
xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p) {
		fprintf(stderr, "gpumemtrace diff: out of memory\n");
		exit(GMT_EXIT_UNREADABLE);
	}
	return p;
}

/*
 * The identity of a call site across runs. An address alone (a frame in no module) is kept as
 * the site's text: two runs rarely share it, which is the honest answer.
 */
static struct site *
site_for(struct sites *s, const json_t *entry)
{
	const char *api = json_string_value(json_object_get(entry, "api"));
	const char *kind = json_string_value(json_object_get(entry, "kind"));
	json_t *frame = json_object_get(entry, "site");
	char text[768], *key;

	gmt_site_text(frame, text, sizeof(text));
	if (asprintf(&key, "%s\t%s\t%s", text, api ? api : "", kind ? kind : "") < 0) {
		fprintf(stderr, "gpumemtrace diff: out of memory\n");
		exit(GMT_EXIT_UNREADABLE);
	}
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].key, key) == 0) {
			free(key);
			return &s->v[i];
		}
	s->v = gmt_xrealloc(s->v, s->n + 1, sizeof(*s->v));
	s->v[s->n] = (struct site){
	    .key = key,
	    .frame = json_is_object(frame) ? json_incref(frame) : NULL,
	    .api = xstrdup(api),
	    .kind = xstrdup(kind),
	};
	return &s->v[s->n++];
}

/* Add @p doc's peak_sites[] and counted leak_sites[] to @p s, as the before or the after. */
static void
add_run(struct sites *s, const json_t *doc, bool after)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(doc, "peak_sites"), i, e)
	{
		struct site *x = site_for(s, e);

		*(after ? &x->peak.after : &x->peak.before) += (int64_t)gmt_json_u64(e, "bytes");
	}
	json_array_foreach(json_object_get(doc, "leak_sites"), i, e)
	{
		struct site *x;

		/* The leaks summary.leaked_bytes counts (docs/report-json.md): not what a caching
		 * allocator held */
		if (!json_is_true(json_object_get(e, "at_exit")) ||
		    !json_is_true(json_object_get(e, "counted")) ||
		    gmt_json_u64(e, "cached_bytes") >= gmt_json_u64(e, "bytes"))
			continue;
		x = site_for(s, e);
		*(after ? &x->leaked.after : &x->leaked.before) +=
		    (int64_t)(gmt_json_u64(e, "bytes") - gmt_json_u64(e, "cached_bytes"));
	}
}

static uint64_t
abs_delta(const struct change *c)
{
	return c->after >= c->before ? (uint64_t)(c->after - c->before)
				     : (uint64_t)(c->before - c->after);
}

/* The larger of a site's two changes: what orders the list. */
static uint64_t
weight(const struct site *s)
{
	uint64_t p = abs_delta(&s->peak), l = abs_delta(&s->leaked);

	return p > l ? p : l;
}

/* Largest change first; equal changes by key, so the output never depends on qsort. */
static int
cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	uint64_t wx = weight(x), wy = weight(y);

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void
sites_free(struct sites *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].key);
		free(s->v[i].api);
		free(s->v[i].kind);
		json_decref(s->v[i].frame);
	}
	free(s->v);
}

// --- Totals -------------------------------------------------------------------------------

static const char *const total_keys[] = {"peak_held_bytes", "leaked_bytes", "failed_allocations"};
static const char *const total_names[] = {"peak held", "leaked", "failed allocations"};
#define NTOTALS 3

static struct change
total(const json_t *base, const json_t *next, size_t k)
{
	return (struct change){
	    (int64_t)gmt_json_u64(json_object_get(base, "summary"), total_keys[k]),
	    (int64_t)gmt_json_u64(json_object_get(next, "summary"), total_keys[k]),
	};
}

// --- Text ---------------------------------------------------------------------------------

/* "+1.0 MiB (+1048576 bytes)", "-512 B", "0 B" */
static const char *
delta_text(const struct change *c, char *buf, size_t size)
{
	char h[GMT_BYTES_BUF];
	uint64_t d = abs_delta(c);
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

static void
text_totals(FILE *out, const json_t *base, const json_t *next)
{
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT], d[96];

	fprintf(out, "Totals:\n");
	for (size_t k = 0; k < NTOTALS; k++) {
		struct change c = total(base, next, k);

		if (k == 2) {
			fprintf(out, "  %-20s %" PRId64 " -> %" PRId64 " (%+" PRId64 ")\n",
				total_names[k], c.before, c.after, c.after - c.before);
			continue;
		}
		fprintf(out, "  %-20s %s -> %s: %s", total_names[k],
			gmt_size_text((uint64_t)c.before, b), gmt_size_text((uint64_t)c.after, a),
			delta_text(&c, d, sizeof(d)));
		if (c.before && c.after != c.before)
			fprintf(out, ", %+.1f%%",
				((double)c.after - (double)c.before) * 100.0 / (double)c.before);
		fprintf(out, "\n");
	}
}

static void
text_change(FILE *out, const char *what, const struct change *c)
{
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT], d[96];

	fprintf(out, "      %s %s -> %s: %s\n", what, gmt_size_text((uint64_t)c->before, b),
		gmt_size_text((uint64_t)c->after, a), delta_text(c, d, sizeof(d)));
}

static void
write_text(FILE *out,
	   const json_t *base,
	   const json_t *next,
	   const struct sites *s,
	   size_t changed,
	   size_t top)
{
	size_t shown = top && top < changed ? top : changed;
	char site[768];

	text_totals(out, base, next);
	if (changed == 0) {
		fprintf(out, "\nNo call site changed (%zu compared).\n", s->n);
		return;
	}
	fprintf(out, "\nCall sites by change, largest first (%zu of %zu changed; %zu unchanged):\n",
		shown, changed, s->n - changed);
	for (size_t i = 0; i < shown; i++) {
		const struct site *x = &s->v[i];

		fprintf(out, "  %s %s at %s\n", gmt_esc(x->api), gmt_esc(x->kind),
			gmt_esc(gmt_site_text(x->frame, site, sizeof(site))));
		if (abs_delta(&x->peak) || x->peak.before)
			text_change(out, "at peak", &x->peak);
		if (abs_delta(&x->leaked) || x->leaked.before)
			text_change(out, "leaked ", &x->leaked);
	}
}

// --- JSON ---------------------------------------------------------------------------------

static json_t *
change_json(const struct change *c)
{
	return json_pack("{sIsIsI}", "before", (json_int_t)c->before, "after", (json_int_t)c->after,
			 "delta", (json_int_t)(c->after - c->before));
}

static json_t *
diff_json(const char *base_path,
	  const char *next_path,
	  const json_t *base,
	  const json_t *next,
	  const struct sites *s,
	  size_t changed,
	  size_t top)
{
	json_t *doc = json_object(), *totals = json_object(), *list = json_array();
	size_t shown = top && top < changed ? top : changed;
	char text[768];

	json_object_set_new(doc, "diff_version", json_integer(1));
	json_object_set_new(doc, "base", json_string(base_path));
	json_object_set_new(doc, "new", json_string(next_path));
	for (size_t k = 0; k < NTOTALS; k++) {
		struct change c = total(base, next, k);

		json_object_set_new(totals, total_keys[k], change_json(&c));
	}
	json_object_set_new(doc, "totals", totals);
	json_object_set_new(doc, "sites_compared", json_integer((json_int_t)s->n));
	json_object_set_new(doc, "sites_changed", json_integer((json_int_t)changed));
	for (size_t i = 0; i < shown; i++) {
		const struct site *x = &s->v[i];

		json_array_append_new(
		    list, json_pack("{sOsssssssoso}", "site", x->frame ? x->frame : json_null(),
				    "site_text", gmt_site_text(x->frame, text, sizeof(text)), "api",
				    x->api, "kind", x->kind, "peak", change_json(&x->peak),
				    "leaked", change_json(&x->leaked)));
	}
	json_object_set_new(doc, "sites", list);
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

int
gmt_cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"top", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	json_t *base = NULL, *next = NULL;
	struct sites sites = {0};
	size_t top = DIFF_DEFAULT_TOP, changed = 0;
	bool json = false;
	int c, rc = GMT_EXIT_OK;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:n:h", longopts, NULL)) != -1) {
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
		default: gmt_bad_option("diff", argv); return gmt_usage_hint("diff");
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "gpumemtrace diff: expected BASE and NEW, got %d argument%s\n",
			argc - optind, argc - optind == 1 ? "" : "s");
		return gmt_usage_hint("diff");
	}
	if (!(base = load_one("BASE", argv[optind], &rc)) ||
	    !(next = load_one("NEW", argv[optind + 1], &rc)))
		goto out;

	add_run(&sites, base, false);
	add_run(&sites, next, true);
	if (sites.n > 1) /* qsort() of NULL is undefined, even for 0 elements */
		qsort(sites.v, sites.n, sizeof(*sites.v), cmp_site);
	while (changed < sites.n && weight(&sites.v[changed]) > 0)
		changed++;
	if (json) {
		json_t *doc =
		    diff_json(argv[optind], argv[optind + 1], base, next, &sites, changed, top);

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0)
			rc = GMT_EXIT_USAGE;
		fputc('\n', stdout);
		json_decref(doc);
	} else {
		write_text(stdout, base, next, &sites, changed, top);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumemtrace diff: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
out:
	sites_free(&sites);
	json_decref(base);
	json_decref(next);
	return rc;
}
