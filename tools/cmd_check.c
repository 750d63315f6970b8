/*
 * @brief `gpumemtrace check`: CI gates over the JSON report of traces (or of a saved report):
 * leaked bytes and allocations, peak device memory held, growth across markers, failed
 * allocations, and the increase over a baseline; with suppressions and a JUnit XML file.
 *
 * Every gate reads the keys of docs/report-json.md, so the check states the same facts as
 * `report --format json`. Exit status: 0 every gate passed, 1 a gate failed, 2 usage error,
 * 3 nothing readable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gate/suppress.h"
#include "analysis/report/report.h"
#include "analysis/report/units.h"
#include "cli.h"
#include "util/xalloc.h"

/* Sites listed under a failed peak gate (the largest holders); the rest are summed. */
#define CHECK_MAX_SITES 5

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace check [OPTIONS] TRACE|DIR|REPORT.json...\n"
	    "\n"
	    "Gate a CI job on GPU memory: fail when the traces leak, hold too much device memory\n"
	    "at their peak, grow across markers, fail allocations, or got worse than a baseline.\n"
	    "Every check also has the gate complete-traces: it fails when a process did not exit\n"
	    "normally or a trace dropped events, since the other figures are then not the whole\n"
	    "story (--allow-incomplete, --allow-drops).\n"
	    "TRACE is a trace file or a directory of them; a JSON report written by\n"
	    "'gpumemtrace report --format json' may be given instead (alone).\n"
	    "\n"
	    "Gates (at least one):\n"
	    "  --max-leaked-bytes N     bytes of counted kinds never freed by processes that\n"
	    "                           exited normally (summary.leaked_bytes)\n"
	    "  --max-leaked-allocs N    allocations never freed (summary.leaked_allocations)\n"
	    "  --max-peak-bytes [DEV=]N device memory held at the peak, per process and device\n"
	    "                           (peaks[].bytes); DEV= for one device, else every device;\n"
	    "                           repeatable\n"
	    "  --max-growth-bytes N     any call site whose live bytes grew by more than N\n"
	    "                           across markers or snapshots (growth[])\n"
	    "  --max-failed N           failed allocations (summary.failed_allocations; not\n"
	    "                           capability probes or failures the allocator's retry\n"
	    "                           recovered: docs/ci.md)\n"
	    "  --baseline FILE|DIR      traces or a JSON report of a known-good run: fail when "
	    "the\n"
	    "                           peak held (per process and device) or the leaked bytes\n"
	    "                           grew by more than --max-increase percent\n"
	    "\n"
	    "Options:\n"
	    "  --max-increase PCT       allowed increase over the baseline (default 10)\n"
	    "  --suppressions FILE      leak:, peak: and growth: patterns taking known call sites\n"
	    "                           out of the gates (repeatable; see docs/ci.md)\n"
	    "  --count-cached           count memory a caching allocator (PyTorch's, CuPy's,\n"
	    "                           JAX/XLA's) holds at exit as leaked; by default it is\n"
	    "                           not: they never free their cache at exit\n"
	    "  --no-default-suppressions  also count what NVIDIA's libraries (cuBLAS, cuDNN,\n"
	    "                           NCCL, cuFFT, cuSPARSE, cuSOLVER, cuRAND) keep until\n"
	    "                           exit\n"
	    "  --allow-incomplete       let a process that did not exit normally (killed,\n"
	    "                           crashed, _exit: no trailer) pass; by default the\n"
	    "                           complete-traces gate fails, as its leaks are unknown\n"
	    "  --allow-drops            let a trace with dropped events pass; by default the\n"
	    "                           complete-traces gate fails, as its figures are not exact\n"
	    "  --junit FILE             also write a JUnit XML file, one testcase per gate\n"
	    "  -q, --quiet              print only the failed gates and the last line\n"
	    "  -h, --help               show this help\n"
	    "\n"
	    "N is bytes, or a number with K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or\n"
	    "KB, MB, GB, TB (powers of 1000): 512MiB, 20GiB, 1.5G.\n"
	    "\n"
	    "Exit status: 0 every gate passed, 1 a gate failed, 2 usage error (or a bad\n"
	    "suppression file), 3 no trace could be read.\n");
}

// --- Gates and their output ---------------------------------------------------------------

/* One gate: a JUnit testcase, one PASS/FAIL line and, when it failed, its violations. */
struct gate {
	char *name; /* "max-peak-bytes device 0" */
	bool failed;
	char *text;    /* the result, one line */
	char *details; /* violation lines, each indented and ending in '\n'; NULL when none */
	bool notes;    /* print the details when it passed too */
};

struct gates {
	struct gate *v;
	size_t n;
};

static void
oom(void)
{
	fprintf(stderr, "gpumemtrace check: out of memory\n");
	exit(GMT_EXIT_UNREADABLE);
}

/* Append printf output to the heap string *@p s (NULL: empty). */
static void __attribute__((format(printf, 2, 3))) append(char **s, const char *fmt, ...)
{
	size_t have = *s ? strlen(*s) : 0;
	char *add;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&add, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	*s = gmt_xrealloc(*s, have + (size_t)n + 1, 1);
	memcpy(*s + have, add, (size_t)n + 1);
	free(add);
}

static struct gate *__attribute__((format(printf, 2, 3)))
gate_add(struct gates *g, const char *fmt, ...)
{
	struct gate *gate;
	va_list ap;

	g->v = gmt_xrealloc(g->v, g->n + 1, sizeof(*g->v));
	gate = &g->v[g->n++];
	*gate = (struct gate){0};
	va_start(ap, fmt);
	if (vasprintf(&gate->name, fmt, ap) < 0)
		oom();
	va_end(ap);
	return gate;
}

static void
gates_free(struct gates *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].name);
		free(g->v[i].text);
		free(g->v[i].details);
	}
	free(g->v);
}

// --- Options ------------------------------------------------------------------------------

struct peak_limit {
	bool all; /* no DEV=: every device */
	long device;
	uint64_t bytes;
};

struct options {
	bool leaked_bytes_set, leaked_allocs_set, growth_set, failed_set;
	uint64_t max_leaked_bytes, max_leaked_allocs, max_growth, max_failed;
	struct peak_limit *peaks;
	size_t npeaks;
	const char *baseline;
	double max_increase;
	const char *junit;
	bool quiet;
	bool count_cached;    /* --count-cached: caching allocators' memory live at exit leaks too */
	bool allow_incomplete; /* --allow-incomplete: a process that did not exit normally passes */
	bool allow_drops;      /* --allow-drops: a trace that dropped events passes */
	bool no_default_supp; /* --no-default-suppressions */
	struct gmt_suppressions supp;
};

/*
 * What NVIDIA's libraries allocate for their own handles and workspaces and keep until the
 * process exits (cuBLAS, cuDNN, NCCL, ...): live at exit, but not the program's leak, and not
 * something it can free. Like the default suppressions of LeakSanitizer and Valgrind; listed
 * with the other suppressions when used, and off with --no-default-suppressions.
 */
static const char *const default_suppressions[] = {
    "leak:libcublas", "leak:libcudnn",	   "leak:libnccl",  "leak:libcufft",
    "leak:libcusparse", "leak:libcusolver", "leak:libcurand",
};

/* A size option's value; -1 after naming the option and the value. */
static int
size_arg(const char *opt, const char *value, uint64_t *out)
{
	if (gmt_parse_bytes(value, out) == 0)
		return 0;
	fprintf(stderr,
		"gpumemtrace check: --%s: invalid size '%s' (bytes, or a number with K, M, G, T, "
		"KiB, MiB, GiB, TiB, KB, MB, GB or TB)\n",
		opt, gmt_esc(value));
	return -1;
}

/* `--max-peak-bytes [DEV=]N`. */
static int
peak_arg(struct options *o, const char *value)
{
	struct peak_limit lim = {.all = true};
	const char *eq = strchr(value, '=');
	const char *size = value;

	if (eq) {
		char *end;

		errno = 0;
		lim.device = strtol(value, &end, 10);
		if (end == value || end != eq || errno || lim.device < -1) {
			char *dev = strndup(value, (size_t)(eq - value));

			fprintf(
			    stderr,
			    "gpumemtrace check: --max-peak-bytes: invalid device '%s' in '%s' "
			    "(a device number, then '=')\n",
			    gmt_esc(dev ? dev : "?"), gmt_esc(value));
			free(dev);
			return -1;
		}
		lim.all = false;
		size = eq + 1;
	}
	if (size_arg("max-peak-bytes", size, &lim.bytes) != 0)
		return -1;
	o->peaks = gmt_xrealloc(o->peaks, o->npeaks + 1, sizeof(*o->peaks));
	o->peaks[o->npeaks++] = lim;
	return 0;
}

static int
percent_arg(const char *value, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (end != value && *end == '%')
		end++;
	if (end == value || *end || errno || !isfinite(v) || v < 0) {
		fprintf(stderr,
			"gpumemtrace check: --max-increase: invalid percentage '%s' (a number "
			">= 0, e.g. 10 or 2.5)\n",
			gmt_esc(value));
		return -1;
	}
	*out = v;
	return 0;
}

enum {
	OPT_LEAKED_BYTES = 256,
	OPT_LEAKED_ALLOCS,
	OPT_PEAK,
	OPT_GROWTH,
	OPT_FAILED,
	OPT_BASELINE,
	OPT_INCREASE,
	OPT_SUPP,
	OPT_JUNIT,
	OPT_COUNT_CACHED,
	OPT_NO_DEFAULT_SUPP,
	OPT_ALLOW_INCOMPLETE,
	OPT_ALLOW_DROPS,
};

/* Returns -1 to go on, else the exit status. */
static int
parse_options(struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"max-leaked-bytes", required_argument, NULL, OPT_LEAKED_BYTES},
	    {"max-leaked-allocs", required_argument, NULL, OPT_LEAKED_ALLOCS},
	    {"max-peak-bytes", required_argument, NULL, OPT_PEAK},
	    {"max-growth-bytes", required_argument, NULL, OPT_GROWTH},
	    {"max-failed", required_argument, NULL, OPT_FAILED},
	    {"baseline", required_argument, NULL, OPT_BASELINE},
	    {"max-increase", required_argument, NULL, OPT_INCREASE},
	    {"suppressions", required_argument, NULL, OPT_SUPP},
	    {"junit", required_argument, NULL, OPT_JUNIT},
	    {"count-cached", no_argument, NULL, OPT_COUNT_CACHED},
	    {"no-default-suppressions", no_argument, NULL, OPT_NO_DEFAULT_SUPP},
	    {"allow-incomplete", no_argument, NULL, OPT_ALLOW_INCOMPLETE},
	    {"allow-drops", no_argument, NULL, OPT_ALLOW_DROPS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, bad = 0;

	opterr = 0;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LEAKED_BYTES:
			o->leaked_bytes_set = true;
			bad = size_arg("max-leaked-bytes", optarg, &o->max_leaked_bytes);
			break;
		case OPT_LEAKED_ALLOCS:
			o->leaked_allocs_set = true;
			bad = size_arg("max-leaked-allocs", optarg, &o->max_leaked_allocs);
			break;
		case OPT_PEAK: bad = peak_arg(o, optarg); break;
		case OPT_GROWTH:
			o->growth_set = true;
			bad = size_arg("max-growth-bytes", optarg, &o->max_growth);
			break;
		case OPT_FAILED:
			o->failed_set = true;
			bad = size_arg("max-failed", optarg, &o->max_failed);
			break;
		case OPT_BASELINE: o->baseline = optarg; break;
		case OPT_INCREASE: bad = percent_arg(optarg, &o->max_increase); break;
		case OPT_SUPP:
			if (gmt_suppressions_load(&o->supp, optarg, stderr) != 0)
				return GMT_EXIT_USAGE;
			break;
		case OPT_JUNIT: o->junit = optarg; break;
		case OPT_COUNT_CACHED: o->count_cached = true; break;
		case OPT_NO_DEFAULT_SUPP: o->no_default_supp = true; break;
		case OPT_ALLOW_INCOMPLETE: o->allow_incomplete = true; break;
		case OPT_ALLOW_DROPS: o->allow_drops = true; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		default: gmt_bad_option("check", argv); return gmt_usage_hint("check");
		}
	}
	if (bad)
		return gmt_usage_hint("check");
	for (size_t i = 0; !o->no_default_supp && i < sizeof(default_suppressions) /
							  sizeof(default_suppressions[0]); i++)
		gmt_suppressions_add(&o->supp, default_suppressions[i], "built-in",
				     (unsigned)i + 1, stderr);
	if (!o->leaked_bytes_set && !o->leaked_allocs_set && !o->npeaks && !o->growth_set &&
	    !o->failed_set && !o->baseline) {
		fprintf(stderr, "gpumemtrace check: no gate given (--max-leaked-bytes, "
				"--max-leaked-allocs, --max-peak-bytes, --max-growth-bytes, "
				"--max-failed or --baseline)\n");
		return gmt_usage_hint("check");
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace check: no trace given\n");
		return gmt_usage_hint("check");
	}
	return -1;
}

// --- Reading the report -------------------------------------------------------------------

static const char *
str_key(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The symbolized stack (`call_stacks[].call_stack`) of (@p process, @p stack), or NULL. */
static const json_t *
call_stack_of(const json_t *doc, json_int_t process, json_int_t stack)
{
	const json_t *cs;
	size_t i;

	json_array_foreach(json_object_get(doc, "call_stacks"), i, cs)
	{
		if (json_integer_value(json_object_get(cs, "process")) == process &&
		    json_integer_value(json_object_get(cs, "stack")) == stack)
			return json_object_get(cs, "call_stack");
	}
	return NULL;
}

/* What suppressions leave of one site group (`leak_sites[]`, `peak_sites[]`). */
struct kept {
	uint64_t bytes, allocations;
};

/*
 * Split one site group's stacks between the suppressions of @p type and what is kept. Each
 * suppressed stack adds to its suppression's counters when @p count (the baseline's report is
 * matched without counting). With @p cached, the stacks of a caching allocator (`cached`) are
 * set apart there, neither kept nor suppressed. Returns what is kept.
 */
static struct kept
suppress_group(const json_t *doc,
	       const json_t *group,
	       enum gmt_supp_type type,
	       struct gmt_suppressions *supp,
	       bool count,
	       struct kept *cached)
{
	const json_t *stacks = json_object_get(group, "stacks");
	json_int_t process = json_integer_value(json_object_get(group, "process"));
	struct kept k = {gmt_json_u64(group, "bytes"), gmt_json_u64(group, "allocations")};
	const json_t *st;
	size_t i;

	if (supp->n == 0 && !cached)
		return k;
	json_array_foreach(stacks, i, st)
	{
		uint64_t bytes = gmt_json_u64(st, "bytes"),
			 allocs = gmt_json_u64(st, "allocations");
		if (cached && json_is_true(json_object_get(st, "cached"))) {
			/* a caching allocator's memory: not a leak unless --count-cached */
			k.bytes -= bytes < k.bytes ? bytes : k.bytes;
			k.allocations -= allocs < k.allocations ? allocs : k.allocations;
			cached->bytes += bytes;
			cached->allocations += allocs;
			continue;
		}
		const json_t *cs =
		    call_stack_of(doc, process, json_integer_value(json_object_get(st, "stack")));
		struct gmt_suppression *s =
		    gmt_suppressions_match(supp, type, cs, json_object_get(group, "site"),
					   str_key(group, "api"), str_key(group, "driver"));

		if (!s)
			continue;
		k.bytes -= bytes < k.bytes ? bytes : k.bytes;
		k.allocations -= allocs < k.allocations ? allocs : k.allocations;
		if (count) {
			s->hits++;
			s->bytes += bytes;
			s->allocations += allocs;
		}
	}
	return k;
}

/*
 * The leaks that count (docs/report-json.md: at_exit and counted, and not `cached` unless
 * --count-cached), suppressions applied.
 */
struct leak_view {
	struct kept total, taken; /* taken: by suppressions */
	struct kept cached;	  /* a caching allocator's memory live at exit: not counted */
	struct kept *sites;	  /* per leak_sites[] entry; zero for the ones that do not count */
	size_t nsites;
};

static struct leak_view
leak_view(const json_t *doc, struct gmt_suppressions *supp, bool count, bool count_cached)
{
	const json_t *summary = json_object_get(doc, "summary");
	const json_t *sites = json_object_get(doc, "leak_sites");
	struct leak_view v = {
	    .total = {gmt_json_u64(summary, "leaked_bytes"),
		      gmt_json_u64(summary, "leaked_allocations")},
	    .nsites = json_array_size(sites),
	};
	const json_t *g;
	size_t i;

	if (count_cached) {
		/* summary.leaked_* leave the caches out; counted, they come back in */
		v.total.bytes += gmt_json_u64(summary, "cached_at_exit_bytes");
		v.total.allocations += gmt_json_u64(summary, "cached_at_exit_allocations");
	}
	v.sites = gmt_xrealloc(NULL, v.nsites + 1, sizeof(*v.sites));
	json_array_foreach(sites, i, g)
	{
		struct kept before = v.cached;

		v.sites[i] = (struct kept){0};
		if (!json_is_true(json_object_get(g, "at_exit")) ||
		    !json_is_true(json_object_get(g, "counted")))
			continue;
		v.sites[i] = suppress_group(doc, g, GMT_SUPP_LEAK, supp, count,
					    count_cached ? NULL : &v.cached);
		v.taken.bytes +=
		    gmt_json_u64(g, "bytes") - v.sites[i].bytes - (v.cached.bytes - before.bytes);
		v.taken.allocations += gmt_json_u64(g, "allocations") - v.sites[i].allocations -
				       (v.cached.allocations - before.allocations);
	}
	v.total.bytes -= v.taken.bytes < v.total.bytes ? v.taken.bytes : v.total.bytes;
	v.total.allocations -=
	    v.taken.allocations < v.total.allocations ? v.taken.allocations : v.total.allocations;
	return v;
}

/* ", PyTorch 3.5 GiB" per caching allocator of summary.cached_at_exit that held something. */
static void
cached_by_allocator(char **out, const json_t *doc)
{
	static const struct {
		const char *key, *label;
	} names[] = {{"pytorch", "PyTorch"}, {"cupy", "CuPy"}, {"xla", "JAX/XLA"}};
	const json_t *by = json_object_get(json_object_get(doc, "summary"), "cached_at_exit");
	const char *sep = ": ";
	char b[GMT_SIZE_TEXT];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t bytes = gmt_json_u64(json_object_get(by, names[i].key), "bytes");

		if (!bytes)
			continue;
		append(out, "%s%s %s", sep, names[i].label, gmt_size_text(bytes, b));
		sep = ", ";
	}
}

/* "pid 4242" or "process 1" for a message. */
static const char *
who(const json_t *entry, char *buf, size_t size)
{
	const json_t *pid = json_object_get(entry, "pid");

	if (json_is_integer(pid))
		snprintf(buf, size, "process %lld (pid %lld)",
			 (long long)json_integer_value(json_object_get(entry, "process")),
			 (long long)json_integer_value(pid));
	else
		snprintf(buf, size, "process %lld",
			 (long long)json_integer_value(json_object_get(entry, "process")));
	return buf;
}

/* One violation line of a site group: @p lead (what and how much), the call, kind, site, process.
 */
static void
site_line(char **out, const json_t *g, const char *lead)
{
	char site[512], proc[64];
	const char *api = str_key(g, "api"), *driver = str_key(g, "driver");
	const char *kind = str_key(g, "kind");

	/* the names are the trace's: escaped for the terminal (esc.h) */
	append(out, "    %s: %s%s%s%s %s at %s, %s\n", lead, api ? gmt_esc(api) : "?",
	       driver ? " (" : "", driver ? gmt_esc(driver) : "", driver ? ")" : "",
	       kind ? gmt_esc(kind) : "?",
	       gmt_esc(gmt_site_text(json_object_get(g, "site"), site, sizeof(site))),
	       who(g, proc, sizeof(proc)));
}

/* "2.0 MiB (2097152 bytes) in 2 allocations WHAT" into @p buf. */
static const char *
amount(char *buf, size_t size, uint64_t bytes, uint64_t allocs, const char *what)
{
	char b[GMT_SIZE_TEXT];

	snprintf(buf, size, "%s in %" PRIu64 " allocation%s%s", gmt_size_text(bytes, b), allocs,
		 allocs == 1 ? "" : "s", what);
	return buf;
}

// --- The gates ----------------------------------------------------------------------------

static void
gate_result(
    struct gate *gate, bool failed, const char *what, uint64_t value, uint64_t limit, bool sizes)
{
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT];

	gate->failed = failed;
	if (sizes)
		append(&gate->text, "%s: %s %s %s limit %s", gate->name, what,
		       gmt_size_text(value, v), failed ? ">" : "<=", gmt_size_text(limit, l));
	else
		append(&gate->text, "%s: %s %" PRIu64 " %s limit %" PRIu64, gate->name, what, value,
		       failed ? ">" : "<=", limit);
}

/* The sites behind the leak gates, largest first (leak_sites[] is sorted so already). */
static void
leak_details(struct gate *gate, const json_t *doc, const struct leak_view *lv)
{
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, "leak_sites"), i, g)
	{
		char lead[128];

		if (!lv->sites[i].bytes && !lv->sites[i].allocations)
			continue;
		site_line(&gate->details, g,
			  amount(lead, sizeof(lead), lv->sites[i].bytes, lv->sites[i].allocations,
				 " never freed"));
	}
}

/*
 * What makes a leak figure less than the truth: processes that did not exit normally have no
 * leaks at exit (what was live when they stopped is not counted: their leaks are unknown), and
 * dropped events may have lost allocations or frees.
 */
static void
leak_caveats(char **text, const json_t *doc)
{
	const json_t *summary = json_object_get(doc, "summary");
	uint64_t died = gmt_json_u64(summary, "incomplete_processes");
	uint64_t dropped = gmt_json_u64(summary, "dropped");
	char t[GMT_SIZE_TEXT];

	if (died)
		append(text,
		       " (a lower bound: %" PRIu64 " process%s did not exit normally, %s leaks "
		       "unknown; %s live when %s trace%s ended)",
		       died, died == 1 ? "" : "es", died == 1 ? "its" : "their",
		       gmt_size_text(gmt_json_u64(summary, "live_at_end_bytes"), t),
		       died == 1 ? "its" : "their", died == 1 ? "" : "s");
	if (dropped)
		append(text, " (not exact: %" PRIu64 " event%s dropped)", dropped,
		       dropped == 1 ? "" : "s");
}

static void
leak_gates(struct gates *gates,
	   const struct options *o,
	   const json_t *doc,
	   const struct leak_view *lv)
{
	char t[GMT_SIZE_TEXT];

	if (o->leaked_bytes_set) {
		struct gate *g = gate_add(gates, "max-leaked-bytes");

		gate_result(g, lv->total.bytes > o->max_leaked_bytes, "leaked", lv->total.bytes,
			    o->max_leaked_bytes, true);
		if (lv->taken.bytes)
			append(&g->text, " (%s suppressed)", gmt_size_text(lv->taken.bytes, t));
		if (lv->cached.bytes) {
			append(&g->text, " (%s held by a caching allocator at exit, not counted",
			       gmt_size_text(lv->cached.bytes, t));
			cached_by_allocator(&g->text, doc);
			append(&g->text, "; --count-cached counts it)");
		}
		leak_caveats(&g->text, doc);
		if (g->failed)
			leak_details(g, doc, lv);
	}
	if (o->leaked_allocs_set) {
		struct gate *g = gate_add(gates, "max-leaked-allocs");

		gate_result(g, lv->total.allocations > o->max_leaked_allocs, "leaked allocations",
			    lv->total.allocations, o->max_leaked_allocs, false);
		if (lv->taken.allocations)
			append(&g->text, " (%" PRIu64 " suppressed)", lv->taken.allocations);
		if (lv->cached.allocations)
			append(&g->text, " (%" PRIu64 " held by a caching allocator, not counted)",
			       lv->cached.allocations);
		leak_caveats(&g->text, doc);
		if (g->failed)
			leak_details(g, doc, lv);
	}
}

/* The limit of --max-peak-bytes for @p device: the last DEV= for it, else the last plain one. */
static const struct peak_limit *
peak_limit_for(const struct options *o, long device)
{
	const struct peak_limit *all = NULL, *one = NULL;

	for (size_t i = 0; i < o->npeaks; i++) {
		if (o->peaks[i].all)
			all = &o->peaks[i];
		else if (o->peaks[i].device == device)
			one = &o->peaks[i];
	}
	return one ? one : all;
}

/*
 * The peak of one (process, device) with peak suppressions applied: peaks[].bytes less the
 * bytes of suppressed stacks live at that peak (peak_sites[]). Appends the kept sites, largest
 * first, to *@p details when it is not NULL.
 */
static uint64_t
peak_kept(const json_t *doc,
	  const json_t *peak,
	  struct gmt_suppressions *supp,
	  uint64_t *taken,
	  char **details)
{
	json_int_t process = json_integer_value(json_object_get(peak, "process"));
	json_int_t device = json_integer_value(json_object_get(peak, "device"));
	uint64_t bytes = gmt_json_u64(peak, "bytes"), rest = 0;
	size_t i, shown = 0, more = 0;
	const json_t *g;

	*taken = 0;
	json_array_foreach(json_object_get(doc, "peak_sites"), i, g)
	{
		struct kept k;

		if (json_integer_value(json_object_get(g, "process")) != process ||
		    json_integer_value(json_object_get(g, "device")) != device)
			continue;
		k = suppress_group(doc, g, GMT_SUPP_PEAK, supp, details == NULL, NULL);
		*taken += gmt_json_u64(g, "bytes") - k.bytes;
		if (!details || !k.bytes)
			continue;
		if (shown++ < CHECK_MAX_SITES) {
			char lead[128];

			site_line(details, g,
				  amount(lead, sizeof(lead), k.bytes, k.allocations,
					 " live at the peak"));
		} else {
			more++;
			rest += k.bytes;
		}
	}
	if (more) {
		char r[GMT_SIZE_TEXT];

		append(details, "    %s in %zu more site%s\n", gmt_size_text(rest, r), more,
		       more == 1 ? "" : "s");
	}
	return bytes - (*taken < bytes ? *taken : bytes);
}

/* The devices any peaks[] entry or DEV= limit names, sorted, without duplicates. */
static size_t
peak_devices(const struct options *o, const json_t *doc, long **out)
{
	long *v = NULL;
	size_t n = 0, i;
	const json_t *p;

	json_array_foreach(json_object_get(doc, "peaks"), i, p)
	{
		v = gmt_xrealloc(v, n + 1, sizeof(*v));
		v[n++] = (long)json_integer_value(json_object_get(p, "device"));
	}
	for (i = 0; i < o->npeaks; i++) {
		if (o->peaks[i].all)
			continue;
		v = gmt_xrealloc(v, n + 1, sizeof(*v));
		v[n++] = o->peaks[i].device;
	}
	/* Insertion sort, then squeeze out repeats: a handful of devices. */
	for (i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			long t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	size_t m = 0;
	for (i = 0; i < n; i++)
		if (m == 0 || v[m - 1] != v[i])
			v[m++] = v[i];
	*out = v;
	return m;
}

/* One gate per device: every process's peak on it against the device's limit. */
static void
peak_gate(struct gates *gates,
	  struct options *o,
	  const json_t *doc,
	  long device,
	  const struct peak_limit *lim)
{
	struct gmt_suppressions *supp = &o->supp;
	struct gate *gate = gate_add(gates, "max-peak-bytes device %ld", device);
	uint64_t worst = 0, worst_taken = 0;
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT], proc[64];
	const json_t *p;
	size_t i, nproc = 0;

	json_array_foreach(json_object_get(doc, "peaks"), i, p)
	{
		uint64_t taken, held;

		if (json_integer_value(json_object_get(p, "device")) != device)
			continue;
		nproc++;
		held = peak_kept(doc, p, supp, &taken, NULL);
		if (held > worst || nproc == 1) {
			worst = held;
			worst_taken = taken;
		}
		if (held <= lim->bytes)
			continue;
		gate->failed = true;
		append(&gate->details, "  %s held %s on device %ld at %.6f s, %s over the limit\n",
		       who(p, proc, sizeof(proc)), gmt_size_text(held, v), device,
		       json_number_value(json_object_get(p, "time_s")),
		       gmt_size_text(held - lim->bytes, l));
		(void)peak_kept(doc, p, supp, &taken, &gate->details);
	}
	if (nproc == 0) {
		append(&gate->text, "%s: no process used the device (limit %s)", gate->name,
		       gmt_size_text(lim->bytes, l));
		return;
	}
	append(&gate->text, "%s: peak held %s %s limit %s", gate->name, gmt_size_text(worst, v),
	       gate->failed ? ">" : "<=", gmt_size_text(lim->bytes, l));
	if (nproc > 1)
		append(&gate->text, " (largest of %zu processes)", nproc);
	if (worst_taken)
		append(&gate->text, " (%s suppressed)", gmt_size_text(worst_taken, v));
}

static void
peak_gates(struct gates *gates, struct options *o, const json_t *doc)
{
	long *devices;
	size_t n;

	if (o->npeaks == 0)
		return;
	n = peak_devices(o, doc, &devices);
	for (size_t i = 0; i < n; i++) {
		const struct peak_limit *lim = peak_limit_for(o, devices[i]);

		if (lim)
			peak_gate(gates, o, doc, devices[i], lim);
	}
	free(devices);
}

/*
 * One growing call site against the limit: `growth_sites[]` entries (the stacks of one line
 * together; a suppressed stack's growth is taken out of its site's), or, in a report written
 * before them, `growth[]` entries (one stack each). Returns what is left of its growth.
 */
static uint64_t
growth_kept(const json_t *doc, const json_t *e, struct gmt_suppressions *supp, uint64_t *taken)
{
	json_int_t process = json_integer_value(json_object_get(e, "process"));
	const json_t *stacks = json_object_get(e, "stacks"), *st;
	uint64_t kept = 0;
	size_t i;

	if (!json_is_array(stacks)) /* growth[]: the entry is its stack */
		stacks = json_pack("[O]", e);
	else
		json_incref((json_t *)stacks);
	json_array_foreach(stacks, i, st)
	{
		uint64_t grew = gmt_json_u64(st, "growth_bytes");
		const json_t *cs =
		    call_stack_of(doc, process, json_integer_value(json_object_get(st, "stack")));
		struct gmt_suppression *s =
		    gmt_suppressions_match(supp, GMT_SUPP_GROWTH, cs, json_object_get(e, "site"),
					   str_key(e, "api"), str_key(e, "driver"));

		if (s) {
			s->hits++;
			s->bytes += grew;
			*taken += grew;
		} else {
			kept += grew;
		}
	}
	json_decref((json_t *)stacks);
	return kept;
}

static void
growth_gate(struct gates *gates, struct options *o, const json_t *doc)
{
	const json_t *growth = json_object_get(doc, "growth_sites");
	struct gate *gate;
	uint64_t largest = 0, taken = 0;
	size_t i, over = 0;
	const json_t *e;
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT], site[512], proc[64];

	if (!o->growth_set)
		return;
	if (!growth)
		growth = json_object_get(doc, "growth");
	gate = gate_add(gates, "max-growth-bytes");
	json_array_foreach(growth, i, e)
	{
		uint64_t grew = growth_kept(doc, e, &o->supp, &taken);
		const char *first = str_key(e, "first_label"), *last = str_key(e, "last_label");
		const json_t *stacks = json_object_get(e, "stacks");
		uint64_t lo = gmt_json_u64(e, json_object_get(e, "min_rises") ? "min_rises" : "rises");
		uint64_t hi = gmt_json_u64(e, json_object_get(e, "max_rises") ? "max_rises" : "rises");

		if (grew > largest)
			largest = grew;
		if (grew <= o->max_growth)
			continue;
		over++;
		append(&gate->details, "    grew %s (%s -> ", gmt_size_text(grew, v),
		       gmt_size_text(gmt_json_u64(e, "first_bytes"), l));
		append(&gate->details, "%s) over %" PRIu64 " %s",
		       gmt_size_text(gmt_json_u64(e, "last_bytes"), v), gmt_json_u64(e, "samples"),
		       str_key(e, "basis") ? str_key(e, "basis") : "samples");
		if (first && last)
			append(&gate->details, " '%s' to '%s'", gmt_esc(first), gmt_esc(last));
		if (lo == hi)
			append(&gate->details, ", rose %" PRIu64 " times", hi);
		else
			append(&gate->details, ", rose %" PRIu64 "-%" PRIu64 " times", lo, hi);
		if (json_array_size(stacks) > 1)
			append(&gate->details, " (%zu stacks)", json_array_size(stacks));
		else /* one stack: its falls too */
			append(&gate->details, ", fell %" PRIu64,
			       gmt_json_u64(stacks ? json_array_get(stacks, 0) : e, "falls"));
		append(&gate->details, ": %s %s at %s, %s\n",
		       str_key(e, "api") ? gmt_esc(str_key(e, "api")) : "?",
		       str_key(e, "kind") ? gmt_esc(str_key(e, "kind")) : "?",
		       gmt_esc(gmt_site_text(json_object_get(e, "site"), site, sizeof(site))),
		       who(e, proc, sizeof(proc)));
	}
	gate->failed = over > 0;
	if (!growth)
		append(&gate->text, "%s: the report has no growth[] analysis: nothing to gate",
		       gate->name);
	else if (over)
		append(&gate->text, "%s: %zu call site%s grew by more than %s", gate->name, over,
		       over == 1 ? "" : "s", gmt_size_text(o->max_growth, l));
	else
		append(&gate->text, "%s: largest growth %s <= limit %s", gate->name,
		       gmt_size_text(largest, v), gmt_size_text(o->max_growth, l));
	if (taken)
		append(&gate->text, " (%s suppressed)", gmt_size_text(taken, v));
}

static void
failed_gate(struct gates *gates, const struct options *o, const json_t *doc)
{
	const json_t *summary = json_object_get(doc, "summary");
	uint64_t failed = gmt_json_u64(summary, "failed_allocations");
	uint64_t probes = gmt_json_u64(summary, "probe_failures");
	uint64_t recovered = gmt_json_u64(summary, "recovered_failures");
	struct gate *gate;
	const json_t *g;
	size_t i;

	if (!o->failed_set)
		return;
	gate = gate_add(gates, "max-failed");
	gate_result(gate, failed > o->max_failed, "failed allocations", failed, o->max_failed,
		    false);
	if (probes || recovered)
		append(&gate->text,
		       " (not counted: %" PRIu64 " capability probe%s, %" PRIu64
		       " recovered by the allocator's retry)",
		       probes, probes == 1 ? "" : "s", recovered);
	if (!gate->failed)
		return;
	json_array_foreach(json_object_get(doc, "failed_sites"), i, g)
	{
		char lead[128], b[GMT_SIZE_TEXT];
		uint64_t n = gmt_json_u64(g, "failures");

		snprintf(lead, sizeof(lead),
			 "%" PRIu64 " failed call%s requesting %s on device %lld", n,
			 n == 1 ? "" : "s", gmt_size_text(gmt_json_u64(g, "bytes"), b),
			 (long long)json_integer_value(json_object_get(g, "device")));
		site_line(&gate->details, g, lead);
	}
}

/* The counted live bytes of @p process at the end of its trace (leak_sites[]). */
static uint64_t
live_at_end_of(const json_t *doc, json_int_t process)
{
	uint64_t bytes = 0;
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, "leak_sites"), i, g)
	{
		if (json_integer_value(json_object_get(g, "process")) == process &&
		    json_is_true(json_object_get(g, "counted")))
			bytes += gmt_json_u64(g, "bytes");
	}
	return bytes;
}

/*
 * complete-traces, always there: every process exited normally (its trace has a trailer) and no
 * trace dropped events. Otherwise the other gates judge part of the story: a crashed process
 * has no leaks at exit, a dropped free looks like a leak and a dropped allocation hides one.
 * Each offending file is named with its reason; --allow-incomplete and --allow-drops relax it.
 */
static void
integrity_gate(struct gates *gates, const struct options *o, const json_t *doc)
{
	const json_t *procs = json_object_get(doc, "processes"), *p;
	struct gate *gate = gate_add(gates, "complete-traces");
	size_t i, died = 0, dropping = 0;
	uint64_t dropped = 0;
	char b[GMT_SIZE_TEXT], who_buf[64];

	json_array_foreach(procs, i, p)
	{
		const char *file = str_key(p, "file");
		const json_t *pid = json_object_get(p, "pid");
		const json_t *end = json_object_get(p, "end_time_s");
		uint64_t drops = gmt_json_u64(p, "dropped");

		if (json_is_integer(pid))
			snprintf(who_buf, sizeof(who_buf), "pid %lld",
				 (long long)json_integer_value(pid));
		else
			snprintf(who_buf, sizeof(who_buf), "process %zu", i);
		if (json_is_false(json_object_get(p, "complete"))) {
			died++;
			append(&gate->details,
			       "    %s (%s): did not exit normally (no trailer: killed, crashed or "
			       "_exit)",
			       file ? file : "?", who_buf);
			if (json_is_number(end))
				append(&gate->details, "; its trace ends at %.3f s",
				       json_number_value(end));
			append(&gate->details, " with %s live: its leaks are unknown%s\n",
			       gmt_size_text(live_at_end_of(doc, (json_int_t)i), b),
			       o->allow_incomplete ? " (allowed: --allow-incomplete)" : "");
		}
		if (drops) {
			dropping++;
			dropped += drops;
			append(&gate->details,
			       "    %s (%s): %" PRIu64
			       " event%s dropped (the tracer's ring buffer was "
			       "full: GPUMEMTRACE_RING_SLOTS): its figures are not exact%s\n",
			       file ? file : "?", who_buf, drops, drops == 1 ? "" : "s",
			       o->allow_drops ? " (allowed: --allow-drops)" : "");
		}
	}
	gate->failed = (died && !o->allow_incomplete) || (dropping && !o->allow_drops);
	if (!died && !dropping) {
		append(&gate->text, "%s: %zu process%s exited normally, no event dropped",
		       gate->name, json_array_size(procs), json_array_size(procs) == 1 ? "" : "es");
		return;
	}
	append(&gate->text, "%s:", gate->name);
	if (died)
		append(&gate->text, " %zu of %zu process%s did not exit normally%s", died,
		       json_array_size(procs), json_array_size(procs) == 1 ? "" : "es",
		       o->allow_incomplete ? " (allowed)" : "");
	if (dropping)
		append(&gate->text, "%s %zu trace%s dropped %" PRIu64 " event%s%s", died ? ";" : "",
		       dropping, dropping == 1 ? "" : "s", dropped, dropped == 1 ? "" : "s",
		       o->allow_drops ? " (allowed)" : "");
	if (gate->failed)
		append(&gate->text, ": the other gates saw part of the story (--allow-incomplete, "
				    "--allow-drops)");
	gate->notes = true; /* allowed, it still names the files */
}

// --- Baseline -----------------------------------------------------------------------------

/* Compare one figure with the baseline's. */
static void
increase_gate(
    struct gates *gates, const struct options *o, const char *name, uint64_t before, uint64_t after)
{
	struct gate *gate = gate_add(gates, "%s", name);
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT];
	double pct = before ? ((double)after - (double)before) * 100.0 / (double)before : 0.0;

	gate->failed = after > before && (before == 0 || pct > o->max_increase);
	append(&gate->text, "%s: %s -> %s", name, gmt_size_text(before, b),
	       gmt_size_text(after, a));
	if (before)
		append(&gate->text, ", %+.1f%%", pct);
	else if (after)
		append(&gate->text, ", up from nothing");
	append(&gate->text, " (limit +%g%%)", o->max_increase);
}

static const json_t *
peak_entry(const json_t *doc, json_int_t process, json_int_t device)
{
	const json_t *p;
	size_t i;

	json_array_foreach(json_object_get(doc, "peaks"), i, p)
	{
		if (json_integer_value(json_object_get(p, "process")) == process &&
		    json_integer_value(json_object_get(p, "device")) == device)
			return p;
	}
	return NULL;
}

/*
 * The baseline's figures against the new ones, as the report states them: peaks[].bytes of the
 * same process index and device, and summary.leaked_bytes (suppressions are not applied here: a
 * known leak counts on both sides, so only its increase shows).
 */
static void
baseline_gates(struct gates *gates, const struct options *o, const json_t *doc, const json_t *base)
{
	const json_t *p;
	size_t i;

	json_array_foreach(json_object_get(doc, "peaks"), i, p)
	{
		json_int_t proc = json_integer_value(json_object_get(p, "process"));
		json_int_t dev = json_integer_value(json_object_get(p, "device"));
		const json_t *bp = peak_entry(base, proc, dev);
		char name[96];

		if (!bp) {
			if (!o->quiet)
				printf(
				    "note: process %lld device %lld has no peak in the baseline\n",
				    (long long)proc, (long long)dev);
			continue;
		}
		snprintf(name, sizeof(name), "baseline peak process %lld device %lld",
			 (long long)proc, (long long)dev);
		increase_gate(gates, o, name, gmt_json_u64(bp, "bytes"), gmt_json_u64(p, "bytes"));
	}
	increase_gate(gates, o, "baseline leaked-bytes",
		      gmt_json_u64(json_object_get(base, "summary"), "leaked_bytes"),
		      gmt_json_u64(json_object_get(doc, "summary"), "leaked_bytes"));
}

// --- Output -------------------------------------------------------------------------------

static void
print_gates(const struct gates *g, bool quiet)
{
	for (size_t i = 0; i < g->n; i++) {
		if (!g->v[i].failed && quiet)
			continue;
		printf("%s %s\n", g->v[i].failed ? "FAIL" : "PASS", gmt_esc(g->v[i].text));
		if ((g->v[i].failed || g->v[i].notes) && g->v[i].details)
			fputs(g->v[i].details, stdout);
	}
}

static void
print_suppressions(const struct gmt_suppressions *s)
{
	bool used = false, unused = false;
	char b[GMT_SIZE_TEXT];

	for (size_t i = 0; i < s->n; i++) {
		const struct gmt_suppression *x = &s->v[i];

		if (!x->hits)
			continue;
		if (!used)
			printf("Suppressions used:\n  hits  bytes  suppression\n");
		used = true;
		printf("  %4" PRIu64 "  %s  %s:%s (%s:%u)\n", x->hits, gmt_size_text(x->bytes, b),
		       gmt_supp_type_name(x->type), gmt_esc(x->pattern), gmt_esc(x->file), x->line);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct gmt_suppression *x = &s->v[i];

		if (x->hits || strcmp(x->file, "built-in") == 0)
			continue;
		if (!unused)
			printf("Suppressions never matched:\n");
		unused = true;
		printf("  %s:%s (%s:%u)\n", gmt_supp_type_name(x->type), gmt_esc(x->pattern),
		       gmt_esc(x->file), x->line);
	}
}

/* @p s with XML's special characters escaped; control characters XML 1.0 forbids become '?'. */
static void
xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				fputc('?', f);
			else
				fputc(c, f);
		}
	}
}

/* The JUnit XML file: one testsuite, one testcase per gate. Returns 0, or -1 (reported). */
static int
write_junit(const char *path, const struct gates *g, size_t failed)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "gpumemtrace check: cannot write %s: %s\n", gmt_esc(path),
			strerror(errno));
		return -1;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\">\n", g->n,
		failed);
	fprintf(f,
		"  <testsuite name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
		"errors=\"0\" skipped=\"0\">\n",
		g->n, failed);
	for (size_t i = 0; i < g->n; i++) {
		fprintf(f, "    <testcase classname=\"gpumemtrace.check\" name=\"");
		xml_text(f, g->v[i].name);
		if (!g->v[i].failed) {
			fprintf(f, "\"/>\n");
			continue;
		}
		fprintf(f, "\">\n      <failure type=\"gate\" message=\"");
		xml_text(f, g->v[i].text);
		fprintf(f, "\">");
		xml_text(f, g->v[i].text);
		fprintf(f, "\n");
		xml_text(f, g->v[i].details);
		fprintf(f, "</failure>\n    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "gpumemtrace check: cannot write %s: %s\n", gmt_esc(path),
			strerror(errno));
		return -1;
	}
	return 0;
}

// --- The command --------------------------------------------------------------------------

/* Evaluate every gate on @p doc (and @p base when a baseline was given). */
static void
run_gates(struct gates *gates, struct options *o, const json_t *doc, const json_t *base)
{
	struct leak_view lv = leak_view(doc, &o->supp, true, o->count_cached);

	integrity_gate(gates, o, doc);
	leak_gates(gates, o, doc, &lv);
	free(lv.sites);
	peak_gates(gates, o, doc);
	growth_gate(gates, o, doc);
	failed_gate(gates, o, doc);
	if (base)
		baseline_gates(gates, o, doc, base);
}

int
gmt_cmd_check(int argc, char **argv)
{
	struct options o = {.max_increase = 10.0};
	struct gates gates = {0};
	json_t *doc = NULL, *base = NULL;
	size_t failed = 0;
	int rc;

	rc = parse_options(&o, argc, argv);
	if (rc >= 0)
		goto out;
	doc = gmt_report_doc_load("check", argv + optind, (size_t)(argc - optind), &rc);
	if (!doc)
		goto out;
	if (o.baseline) {
		char *paths[] = {(char *)o.baseline};

		base = gmt_report_doc_load("check", paths, 1, &rc);
		if (!base) {
			fprintf(stderr, "gpumemtrace check: cannot read the baseline %s\n",
				gmt_esc(o.baseline));
			goto out;
		}
	}

	run_gates(&gates, &o, doc, base);
	for (size_t i = 0; i < gates.n; i++)
		failed += gates.v[i].failed;
	print_gates(&gates, o.quiet);
	if (!o.quiet)
		print_suppressions(&o.supp);
	if (failed)
		printf("gpumemtrace check: FAIL: %zu of %zu gates\n", failed, gates.n);
	else
		printf("gpumemtrace check: PASS (%zu gates)\n", gates.n);
	rc = failed ? GMT_EXIT_GATE : GMT_EXIT_OK;
	if (o.junit && write_junit(o.junit, &gates, failed) != 0)
		rc = GMT_EXIT_USAGE;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumemtrace check: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
out:
	gates_free(&gates);
	json_decref(doc);
	json_decref(base);
	gmt_suppressions_free(&o.supp);
	free(o.peaks);
	return rc;
}
