/*
 * @brief `gpumemtrace check`: its options, the gates' results (gate/check.h) printed, and the
 * JUnit XML file. Exit status: 0 every gate passed, 1 a gate failed, 2 usage error, 3 nothing
 * readable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/gate/check.h"
#include "analysis/gate/suppress.h"
#include "analysis/ranks/ranks.h"
#include "analysis/report/keys.h"
#include "analysis/report/report.h"
#include "analysis/report/summary.h"
#include "analysis/report/units.h"
#include "cli.h"
#include "gmt-config.h"
#include "util/outfile.h"

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace check [OPTIONS] TRACE|DIR|REPORT.json...\n"
	    "\n"
	    "Gate a CI job on GPU memory: fail when the traces leak, hold too much device memory\n"
	    "at their peak, grow across markers, fail allocations, or got worse than a baseline;\n"
	    "with PyTorch's block lines, also on tensors still referenced, growing tensor sites\n"
	    "and the cache's fragmentation.\n"
	    "Every check also has the gate complete-traces: it fails when a process did not exit\n"
	    "normally, a trace had lines that could not be read, a trace file yielded nothing\n"
	    "(empty), or it dropped events, since the other figures are then not the whole story\n"
	    "(--allow-incomplete, --allow-drops).\n"
	    "TRACE is a trace file or a directory of them; a JSON report written by\n"
	    "'gpumemtrace report --format json' may be given instead (alone): its lost_traces\n"
	    "(trace files that yielded nothing) are judged as the traces would be.\n"
	    "Over many ranks: given summaries ('gpumemtrace summarize'; *.summary.json, or\n"
	    "directories of them, mixed with traces or not), every gate is judged on each\n"
	    "rank on its own; a gate fails when a rank fails it, naming the failing ranks\n"
	    "(docs/multi-host.md). --baseline is not for summaries.\n"
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
	    "  --max-tensor-leak [DEV=]N  bytes of PyTorch tensors still referenced at the end\n"
	    "                           of the trace, per process and device (tensors: live\n"
	    "                           blocks, not the cache's free memory); repeatable\n"
	    "  --max-tensor-growth N    any tensor call site whose live block bytes grew by\n"
	    "                           more than N across markers (tensors.growth[])\n"
	    "  --max-fragmentation [DEV=]F  the cache's fragmentation at its worst, per\n"
	    "                           process and device: 1 - largest free block /\n"
	    "                           reserved-unallocated bytes, F from 0 to 1 (or 30%%)\n"
	    "                           The three tensor gates need the PyTorch layer's block\n"
	    "                           lines; without them they are skipped, saying so\n"
	    "  --baseline FILE|DIR      traces or a JSON report of a known-good run: fail when "
	    "the\n"
	    "                           peak held (per process and device), the leaked bytes or\n"
	    "                           PyTorch's peak allocated (per process, with block lines\n"
	    "                           on both sides) grew by more than --max-increase percent\n"
	    "\n"
	    "Options:\n"
	    "  --max-increase PCT       allowed increase over the baseline (default 10)\n"
	    "  --suppressions FILE      leak:, peak: and growth: patterns taking known call sites\n"
	    "                           out of the gates, tensor sites too (repeatable; see\n"
	    "                           docs/ci.md)\n"
	    "  --count-cached           count memory a caching allocator (PyTorch's, CuPy's,\n"
	    "                           JAX/XLA's) holds at exit as leaked; by default it is\n"
	    "                           not: they never free their cache at exit\n"
	    "  --count-libraries        count what CUDA libraries (cuBLAS, cuDNN, NCCL, cuFFT,\n"
	    "                           cuSPARSE, cuSOLVER, cuRAND) hold for their handles at\n"
	    "                           exit as leaked; by default it is not, as in the report\n"
	    "                           (--no-default-suppressions: the same, its old name)\n"
	    "  --allow-incomplete       let a process that did not exit normally (killed or\n"
	    "                           crashed: no trailer), a trace with unreadable\n"
	    "                           lines (damaged, longer than 64 MiB) or an empty trace\n"
	    "                           file pass; by default the complete-traces gate fails,\n"
	    "                           as their leaks are unknown\n"
	    "  --allow-drops            let a trace with dropped events pass; by default the\n"
	    "                           complete-traces gate fails, as its figures are not exact\n"
	    "  --junit FILE             also write a JUnit XML file, one testcase per gate\n"
	    "  -q, --quiet              print only the failed gates and the last line\n"
	    "  -h, --help               show this help\n"
	    "  -V, --version            show the version\n"
	    "\n"
	    "N is bytes, or a number with K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or\n"
	    "KB, MB, GB, TB (powers of 1000): 512MiB, 20GiB, 1.5G.\n"
	    "\n"
	    "Exit status: 0 every gate passed, 1 a gate failed, 2 usage error (or a bad\n"
	    "suppression file), 3 no trace could be read.\n");
}

// --- Options ------------------------------------------------------------------------------

struct options {
	struct gmt_check_options check; /* the gates and how they judge (gate/check.h) */
	const char *baseline;
	const char *junit;
	const char **supp_paths; /* the --suppressions files, not to be written over */
	size_t nsupp_paths;
	bool quiet;
	struct gmt_suppressions supp;
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

/* A fraction 0..1 (or a percentage, "30%"); -1 after naming the option and the value. */
static int
fraction_arg(const char *opt, const char *value, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (end != value && *end == '%') {
		end++;
		v /= 100.0;
	}
	if (end == value || *end || errno || !isfinite(v) || v < 0 || v > 1) {
		fprintf(stderr,
			"gpumemtrace check: --%s: invalid fraction '%s' (a number from 0 to 1, or "
			"a percentage: 0.3, 30%%)\n",
			opt, gmt_esc(value));
		return -1;
	}
	*out = v;
	return 0;
}

/* `--OPT [DEV=]N` (bytes) or, with @p fraction, `--OPT [DEV=]F`, appended to *@p v. */
static int
dev_arg(const char *opt, const char *value, bool fraction, struct gmt_dev_limit **v, size_t *n)
{
	struct gmt_dev_limit lim = {.all = true};
	const char *eq = strchr(value, '=');
	const char *size = value;

	if (eq) {
		char *end;

		errno = 0;
		lim.device = strtol(value, &end, 10);
		if (end == value || end != eq || errno || lim.device < -1) {
			char *dev = strndup(value, (size_t)(eq - value));

			fprintf(stderr,
				"gpumemtrace check: --%s: invalid device '%s' in '%s' "
				"(a device number, then '=')\n",
				opt, gmt_esc(dev ? dev : "?"), gmt_esc(value));
			free(dev);
			return -1;
		}
		lim.all = false;
		size = eq + 1;
	}
	if (fraction ? fraction_arg(opt, size, &lim.fraction) != 0
		     : size_arg(opt, size, &lim.bytes) != 0)
		return -1;
	struct gmt_dev_limit *nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv) {
		fprintf(stderr, "gpumemtrace check: out of memory\n");
		return -1;
	}
	*v = nv;
	nv[(*n)++] = lim;
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
	OPT_COUNT_LIBRARIES,
	OPT_ALLOW_INCOMPLETE,
	OPT_ALLOW_DROPS,
	OPT_TENSOR_LEAK,
	OPT_TENSOR_GROWTH,
	OPT_FRAG,
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
	    {"max-tensor-leak", required_argument, NULL, OPT_TENSOR_LEAK},
	    {"max-tensor-growth", required_argument, NULL, OPT_TENSOR_GROWTH},
	    {"max-fragmentation", required_argument, NULL, OPT_FRAG},
	    {"baseline", required_argument, NULL, OPT_BASELINE},
	    {"max-increase", required_argument, NULL, OPT_INCREASE},
	    {"suppressions", required_argument, NULL, OPT_SUPP},
	    {"junit", required_argument, NULL, OPT_JUNIT},
	    {"count-cached", no_argument, NULL, OPT_COUNT_CACHED},
	    {"count-libraries", no_argument, NULL, OPT_COUNT_LIBRARIES},
	    {"no-default-suppressions", no_argument, NULL, OPT_COUNT_LIBRARIES},
	    {"allow-incomplete", no_argument, NULL, OPT_ALLOW_INCOMPLETE},
	    {"allow-drops", no_argument, NULL, OPT_ALLOW_DROPS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int c, bad = 0;

	opterr = 0;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "qhV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LEAKED_BYTES:
			o->check.leaked_bytes_set = true;
			bad = size_arg("max-leaked-bytes", optarg, &o->check.max_leaked_bytes);
			break;
		case OPT_LEAKED_ALLOCS:
			o->check.leaked_allocs_set = true;
			bad = size_arg("max-leaked-allocs", optarg, &o->check.max_leaked_allocs);
			break;
		case OPT_PEAK:
			bad = dev_arg("max-peak-bytes", optarg, false, &o->check.peaks,
				      &o->check.npeaks);
			break;
		case OPT_TENSOR_LEAK:
			bad = dev_arg("max-tensor-leak", optarg, false, &o->check.tensor_leaks,
				      &o->check.ntensor_leaks);
			break;
		case OPT_TENSOR_GROWTH:
			o->check.tensor_growth_set = true;
			bad = size_arg("max-tensor-growth", optarg, &o->check.max_tensor_growth);
			break;
		case OPT_FRAG:
			bad = dev_arg("max-fragmentation", optarg, true, &o->check.frags,
				      &o->check.nfrags);
			break;
		case OPT_GROWTH:
			o->check.growth_set = true;
			bad = size_arg("max-growth-bytes", optarg, &o->check.max_growth);
			break;
		case OPT_FAILED:
			o->check.failed_set = true;
			bad = size_arg("max-failed", optarg, &o->check.max_failed);
			break;
		case OPT_BASELINE: o->baseline = optarg; break;
		case OPT_INCREASE: bad = percent_arg(optarg, &o->check.max_increase); break;
		case OPT_SUPP: {
			const char **p =
			    realloc(o->supp_paths, (o->nsupp_paths + 1) * sizeof(*o->supp_paths));

			if (!p) {
				fprintf(stderr, "gpumemtrace check: out of memory\n");
				return GMT_EXIT_UNREADABLE;
			}
			o->supp_paths = p;
			p[o->nsupp_paths++] = optarg;
			if ((bad = gmt_suppressions_load(&o->supp, optarg, stderr)) != 0)
				return bad == -ENOMEM ? GMT_EXIT_UNREADABLE : GMT_EXIT_USAGE;
			break;
		}
		case OPT_JUNIT: o->junit = optarg; break;
		case OPT_COUNT_CACHED: o->check.count_cached = true; break;
		case OPT_COUNT_LIBRARIES: o->check.count_libraries = true; break;
		case OPT_ALLOW_INCOMPLETE: o->check.allow_incomplete = true; break;
		case OPT_ALLOW_DROPS: o->check.allow_drops = true; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("check", argv); return gmt_usage_hint("check");
		}
	}
	if (bad)
		return gmt_usage_hint("check");
	if (!o->check.leaked_bytes_set && !o->check.leaked_allocs_set && !o->check.npeaks &&
	    !o->check.growth_set && !o->check.failed_set && !o->check.ntensor_leaks &&
	    !o->check.tensor_growth_set && !o->check.nfrags && !o->baseline) {
		fprintf(stderr, "gpumemtrace check: no gate given (--max-leaked-bytes, "
				"--max-leaked-allocs, --max-peak-bytes, --max-growth-bytes, "
				"--max-failed, --max-tensor-leak, --max-tensor-growth, "
				"--max-fragmentation or --baseline)\n");
		return gmt_usage_hint("check");
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace check: no trace given\n");
		return gmt_usage_hint("check");
	}
	return -1;
}

// --- Output -------------------------------------------------------------------------------

static void
print_gates(const struct gmt_gates *g, bool quiet)
{
	for (size_t i = 0; i < g->n; i++) {
		if (!g->v[i].failed && quiet)
			continue;
		printf("%s %s\n",
		       g->v[i].failed	 ? "FAIL"
		       : g->v[i].skipped ? "SKIP"
					 : "PASS",
		       gmt_esc(g->v[i].text));
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

/* When and where the check ran, for the JUnit file's testsuite. */
struct run_facts {
	struct timespec start; /* CLOCK_MONOTONIC at the start */
	time_t started;	       /* wall clock at the start */
};

/*
 * This machine's name for `hostname` (a non-empty token without white space, as the strict Ant
 * schema wants): gethostname(), its non-printable and space characters as '?', "localhost" when
 * it has none.
 */
static void
host_name(char *buf, size_t size)
{
	if (gethostname(buf, size) != 0 || !buf[0]) {
		snprintf(buf, size, "localhost");
		return;
	}
	buf[size - 1] = '\0';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c == 0x7f)
			*c = '?';
}

/*
 * The JUnit XML file: one testsuite, one testcase per gate. It validates against the strict Ant
 * JUnit schema and Jenkins' (tests/check/schemas): the suite has name, tests, failures, errors,
 * time, timestamp (UTC, no zone, as Ant writes it), hostname, package and id; properties, the
 * testcases, system-out and system-err in that order; every testcase classname, name and time.
 * The strict Ant schema knows no "skipped": a skipped gate is a testcase without a failure, and
 * system-out says it was skipped and why (as the gates' output does). Returns 0, or -1
 * (reported).
 */
static int
write_junit(const char *path,
	    const struct gmt_gates *g,
	    size_t failed,
	    size_t skipped,
	    const struct run_facts *run)
{
	struct gmt_outfile file;
	char host[256], stamp[32], why[GMT_OUTFILE_WHY];
	struct timespec now;
	struct tm tm;
	double secs;
	FILE *f;

	if (gmt_outfile_open(&file, path, why) != 0) { /* never through a planted link */
		fprintf(stderr, "gpumemtrace check: cannot write %s: %s\n", gmt_esc(path), why);
		return -1;
	}
	f = file.f;
	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = (double)(now.tv_sec - run->start.tv_sec) +
	       (double)(now.tv_nsec - run->start.tv_nsec) / 1e9;
	if (!gmtime_r(&run->started, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(stamp, sizeof(stamp), "1970-01-01T00:00:00");
	host_name(host, sizeof(host));
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
	fprintf(f,
		"  <testsuite name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
		"errors=\"0\" time=\"%.3f\" timestamp=\"%s\" hostname=\"",
		g->n, failed, secs > 0 ? secs : 0.0, stamp);
	xml_text(f, host);
	fprintf(f, "\" package=\"gpumemtrace\" id=\"0\">\n");
	fprintf(f,
		"    <properties>\n"
		"      <property name=\"gpumemtrace.version\" value=\"%s\"/>\n"
		"      <property name=\"gpumemtrace.skipped\" value=\"%zu\"/>\n"
		"    </properties>\n",
		GMT_VERSION, skipped);
	for (size_t i = 0; i < g->n; i++) {
		/* the gates are judged together from the report once it is read: the suite's time
		 * is the check's, each gate's 0 */
		fprintf(f, "    <testcase classname=\"gpumemtrace.check\" name=\"");
		xml_text(f, g->v[i].name);
		if (!g->v[i].failed) {
			fprintf(f, "\" time=\"0\"/>\n");
			continue;
		}
		fprintf(f, "\" time=\"0\">\n      <failure type=\"gate\" message=\"");
		xml_text(f, g->v[i].text);
		fprintf(f, "\">");
		xml_text(f, g->v[i].text);
		fprintf(f, "\n");
		xml_text(f, g->v[i].details);
		fprintf(f, "</failure>\n    </testcase>\n");
	}
	fprintf(f, "    <system-out>");
	xml_text(f, g->notes);
	for (size_t i = 0; i < g->n; i++) {
		if (!g->v[i].skipped)
			continue;
		fprintf(f, "SKIP ");
		xml_text(f, g->v[i].text);
		fprintf(f, "\n");
	}
	fprintf(f, "</system-out>\n    <system-err></system-err>\n  </testsuite>\n</testsuites>\n");
	if (gmt_outfile_close(&file, why) != 0) {
		fprintf(stderr, "gpumemtrace check: cannot write %s: %s\n", gmt_esc(path), why);
		return -1;
	}
	return 0;
}

// --- Over many ranks: each rank's summary judged on its own --------------------------------

/* One gate over the ranks: how many judged it, failed or skipped it, and who failed. */
struct rank_gate {
	char *name;
	size_t judged, failed, skipped;
	char *names;   /* the failing ranks, ", "-separated (at most RANKS_NAMED) */
	FILE *details; /* each failing rank's line and its violations */
	char *dbuf;
	size_t dlen;
	bool notes;
	bool oom;
};

/* Failing ranks named in a gate's line; the rest are counted. */
#define RANKS_NAMED 20

/* One rank's gates, kept until the ranks of another job are known (gmt_ranks_settle()). */
struct rank_result {
	char *input;
	char who[192];
	bool lost; /* of a trace that yielded nothing: complete-traces alone judges it */
	struct gmt_gates g;
};

struct rank_check {
	struct options *o;
	struct rank_gate **v;
	size_t n;
	size_t ranks;
	struct gmt_ranks rows; /* the ranks judged: one rank given twice is judged once */
	struct rank_result *res;
	size_t nres;
	size_t lost; /* of ranks, those whose trace yielded nothing (not among rows) */
	FILE *notes; /* each rank's notes, under its name */
	char *nbuf;
	size_t nlen;
	bool oom;
};

static struct rank_gate *
rank_gate(struct rank_check *rc, const char *name)
{
	struct rank_gate **v, *a;

	for (size_t i = 0; i < rc->n; i++)
		if (strcmp(rc->v[i]->name, name) == 0)
			return rc->v[i];
	if (!(v = realloc(rc->v, (rc->n + 1) * sizeof(*v))))
		return NULL;
	rc->v = v;
	/* its own allocation: the memstream keeps the address of dbuf and dlen */
	if (!(a = calloc(1, sizeof(*a))))
		return NULL;
	if (!(a->name = strdup(name)) || !(a->details = open_memstream(&a->dbuf, &a->dlen))) {
		free(a->name);
		free(a);
		return NULL;
	}
	rc->v[rc->n++] = a;
	return a;
}

/* @p text with each line indented by @p indent to @p f. */
static void
indented(FILE *f, const char *text, const char *indent)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		fprintf(f, "%s%.*s\n", indent, (int)len, p);
		p += len + (nl != NULL);
	}
}

/*
 * Judge a rank's summary as it is read (the summary is not kept), and keep the verdict: whether
 * the rank counts is known once every input was read (another job's ranks are left out, as
 * `report` leaves them out). The summary of a trace that yielded nothing has no figure to merge
 * (not a row): its rank is missing, which complete-traces says.
 */
static void
check_rank(void *data, const char *input, const json_t *summary)
{
	struct rank_check *rc = data;
	struct rank_result *res, *v;
	json_t *doc;
	bool lost = gmt_summary_is_lost(summary);
	int added = lost ? 0 : gmt_ranks_add(&rc->rows, "check", input, summary, stderr);

	if (added == -1) /* a rank again: said */
		return;
	if (added != 0 || !(v = realloc(rc->res, (rc->nres + 1) * sizeof(*v)))) {
		rc->oom = true;
		return;
	}
	rc->res = v;
	res = &rc->res[rc->nres];
	*res = (struct rank_result){.input = strdup(input), .lost = lost};
	if (!res->input) {
		rc->oom = true;
		return;
	}
	rc->nres++;
	if (lost) {
		const char *file = json_string_value(json_object_get(summary, GMT_RK_FILE));
		snprintf(res->who, sizeof(res->who), "the %s %s",
			 file && gmt_summary_file_is(file) ? "summary" : "trace",
			 file ? gmt_esc(file) : "?");
	} else {
		gmt_summary_who(summary, res->who, sizeof(res->who));
	}
	doc = gmt_summary_report_doc(summary); /* only now: a rank again was left out above */
	if (!doc || gmt_check_run(&res->g, &rc->o->check, doc, NULL) != 0) {
		fprintf(stderr, "gpumemtrace check: %s: out of memory\n", gmt_esc(input));
		rc->oom = true;
	}
	json_decref(doc);
}

/* Whether @p input is a rank of the job (still a row once the rows are settled). */
static bool
rank_kept(const struct rank_check *rc, const char *input)
{
	for (size_t i = 0; i < rc->rows.n; i++)
		if (rc->rows.v[i].input && strcmp(rc->rows.v[i].input, input) == 0)
			return true;
	return false;
}

/* A kept rank's gates into the gates over the ranks. */
static void
count_rank(struct rank_check *rc, const struct rank_result *res)
{
	const struct gmt_gates g = res->g;
	const char *who = res->who, *input = res->input;

	rc->ranks++;
	rc->lost += res->lost;
	if (g.notes)
		for (const char *p = g.notes; *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);

			fprintf(rc->notes, "%s: %.*s\n", who, (int)len, p);
			p += len + (nl != NULL);
		}
	for (size_t i = 0; i < g.n; i++) {
		const struct gmt_gate *x = &g.v[i];
		struct rank_gate *a;

		if (res->lost && strcmp(x->name, "complete-traces") != 0)
			continue; /* the other gates have nothing of it to judge */
		if (!(a = rank_gate(rc, x->name))) {
			rc->oom = true;
			break;
		}
		a->judged++;
		a->oom |= x->oom;
		if (x->skipped)
			a->skipped++;
		if (!x->failed)
			continue;
		if (a->failed++ < RANKS_NAMED) {
			size_t len = a->names ? strlen(a->names) : 0;
			char *nn = realloc(a->names, len + strlen(who) + 3);

			if (nn) {
				snprintf(nn + len, strlen(who) + 3, "%s%s", len ? ", " : "", who);
				a->names = nn;
			}
		}
		fprintf(a->details, "  %s (%s): %s\n", who, gmt_esc(input), gmt_esc(x->text));
		indented(a->details, x->details, "  ");
	}
}

/*
 * The gates over @p paths' ranks (summaries, traces, directories of either) into @p out: each
 * gate judged on each rank, failed when a rank failed it, its line naming the failing ranks,
 * its details each failing rank's own. Returns GMT_EXIT_OK or the exit status (said).
 */
static int
check_ranks(struct options *o, char *const *paths, size_t n, struct gmt_gates *out)
{
	struct rank_check rc = {.o = o};
	struct gmt_session_options so;
	size_t bad = 0, good;
	int status = GMT_EXIT_OK;

	gmt_cli_session_options(&so);
	o->check.stacks = NULL; /* each summary holds the frames of its rows */
	if (!(rc.notes = open_memstream(&rc.nbuf, &rc.nlen))) {
		fprintf(stderr, "gpumemtrace check: out of memory\n");
		return GMT_EXIT_UNREADABLE;
	}
	good = gmt_ranks_each("check", paths, n, &so, stderr, check_rank, &rc, &bad);
	/* the ranks of another job said and left out, as by `report` over the same inputs */
	gmt_ranks_settle(&rc.rows, "check", stderr);
	for (size_t i = 0; i < rc.nres; i++) {
		if (!rc.oom && (rc.res[i].lost || rank_kept(&rc, rc.res[i].input)))
			count_rank(&rc, &rc.res[i]);
		gmt_gates_free(&rc.res[i].g);
		free(rc.res[i].input);
	}
	free(rc.res);
	fclose(rc.notes);
	*out = (struct gmt_gates){0};
	if (good == 0 || rc.ranks == rc.lost) {
		fprintf(stderr, "gpumemtrace check: no readable summary or trace");
		if (rc.lost)
			fprintf(stderr, " (%zu %s nothing)", rc.lost,
				rc.lost == 1 ? "trace yielded" : "traces yielded");
		fprintf(stderr, "\n");
		status = GMT_EXIT_UNREADABLE;
	} else if (rc.oom || !(out->v = calloc(rc.n ? rc.n : 1, sizeof(*out->v)))) {
		fprintf(stderr, "gpumemtrace check: out of memory\n");
		status = GMT_EXIT_UNREADABLE;
	}
	for (size_t i = 0; i < rc.n; i++) {
		struct rank_gate *a = rc.v[i];
		struct gmt_gate *g;
		char *text = NULL;

		fclose(a->details);
		if (status != GMT_EXIT_OK) {
			free(a->dbuf);
			free(a->name);
			free(a->names);
			free(a);
			continue;
		}
		g = &out->v[out->n++];
		g->name = a->name;
		g->failed = a->failed > 0;
		g->skipped = !g->failed && a->skipped == a->judged;
		g->oom = a->oom;
		if (g->failed) {
			if (asprintf(&text, "%s: %zu of %zu ranks fail: %s%s", a->name, a->failed,
				     rc.ranks, a->names ? a->names : "",
				     a->failed > RANKS_NAMED ? " and more" : "") < 0)
				text = NULL;
			g->details = a->dbuf;
		} else {
			if (asprintf(&text, "%s: %s (%zu of %zu ranks have it)", a->name,
				     g->skipped ? "skipped on every rank" : "passes on every rank",
				     a->judged, rc.ranks) < 0)
				text = NULL;
			free(a->dbuf);
		}
		g->text = text ? text : strdup(a->name);
		free(a->names);
		free(a);
	}
	if (status == GMT_EXIT_OK && rc.nlen)
		out->notes = rc.nbuf;
	else
		free(rc.nbuf);
	free(rc.v);
	bad += rc.rows.left_out;
	if (status == GMT_EXIT_OK && bad)
		fprintf(stderr,
			"gpumemtrace check: %zu inputs left out (said above); %zu ranks judged\n",
			bad, rc.ranks);
	gmt_ranks_free(&rc.rows);
	return status;
}

// --- The command --------------------------------------------------------------------------

/* Whether --junit names one of the inputs (a trace, the baseline, a suppression file). */
static bool
junit_is_input(const struct options *o, char *const *paths, size_t n)
{
	char **all = calloc(n + 1 + o->nsupp_paths, sizeof(*all));
	size_t k = 0;
	bool hit;

	if (!all) {
		fprintf(stderr, "gpumemtrace check: out of memory\n");
		return true;
	}
	for (size_t i = 0; i < n; i++)
		all[k++] = paths[i];
	if (o->baseline)
		all[k++] = (char *)o->baseline;
	for (size_t i = 0; i < o->nsupp_paths; i++)
		all[k++] = (char *)o->supp_paths[i];
	hit = gmt_cli_output_is_input("check", "--junit", o->junit, all, k);
	free(all);
	return hit;
}

int
gmt_cmd_check(int argc, char **argv)
{
	struct options o = {.check.max_increase = 10.0};
	struct run_facts run = {.started = time(NULL)};
	struct gmt_gates gates = {0};
	struct gmt_report_input in = {0};
	json_t *base = NULL;
	size_t failed = 0, skipped = 0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &run.start);
	rc = parse_options(&o, argc, argv);
	if (rc >= 0)
		goto out;
	if (o.junit && junit_is_input(&o, argv + optind, (size_t)(argc - optind))) {
		rc = GMT_EXIT_USAGE;
		goto out;
	}
	if (gmt_ranks_have_summary(argv + optind, (size_t)(argc - optind))) {
		if (o.baseline) {
			fprintf(stderr, "gpumemtrace check: --baseline is for a report or traces, "
					"not summaries (each rank is judged on its own)\n");
			rc = gmt_usage_hint("check");
			goto out;
		}
		o.check.supp = &o.supp;
		rc = check_ranks(&o, argv + optind, (size_t)(argc - optind), &gates);
		if (rc != GMT_EXIT_OK)
			goto out;
		goto judged;
	}
	/* the traces' frames are built per stack when a suppression looks at them */
	rc = gmt_report_input_load(&in, "check", argv + optind, (size_t)(argc - optind));
	if (rc != GMT_EXIT_OK)
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

	o.check.supp = &o.supp;
	o.check.stacks = &in.stacks;
	if (gmt_check_run(&gates, &o.check, in.doc, base) != 0) {
		fprintf(stderr, "gpumemtrace check: out of memory\n");
		rc = GMT_EXIT_UNREADABLE;
		goto out;
	}
judged:
	failed = gmt_gates_failed(&gates);
	if (gates.notes && !o.quiet)
		fputs(gates.notes, stdout);
	print_gates(&gates, o.quiet);
	if (!o.quiet)
		print_suppressions(&o.supp);
	skipped = gmt_gates_skipped(&gates);
	if (failed)
		printf("gpumemtrace check: FAIL: %zu of %zu gates", failed, gates.n);
	else
		printf("gpumemtrace check: PASS (%zu gates", gates.n);
	if (skipped)
		printf("%s%zu skipped", failed ? " (" : ", ", skipped);
	printf("%s\n", failed ? (skipped ? ")" : "") : ")");
	rc = failed ? GMT_EXIT_GATE : GMT_EXIT_OK;
	if (o.junit && write_junit(o.junit, &gates, failed, skipped, &run) != 0)
		rc = GMT_EXIT_USAGE;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gpumemtrace check: cannot write standard output: %s\n",
			strerror(errno));
		rc = GMT_EXIT_USAGE;
	}
out:
	gmt_gates_free(&gates);
	gmt_report_input_free(&in);
	json_decref(base);
	gmt_suppressions_free(&o.supp);
	free(o.supp_paths);
	free(o.check.peaks);
	free(o.check.tensor_leaks);
	free(o.check.frags);
	return rc;
}
