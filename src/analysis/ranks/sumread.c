/*
 * @brief Inputs as summaries (ranks.h): summary files read back and checked, traces summarized
 * here, directories of either; and a summary as a one-process JSON report for the gates.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/ranks/ranks.h"
#include "analysis/reader/trace_input.h"
#include "analysis/report/keys.h"
#include "analysis/report/report.h"
#include "analysis/report/summary.h"
#include "util/esc.h"
#include "util/path.h"

/* Of a file's first bytes, enough to hold the keys a summary starts with. */
#define SNIFF_BYTES 512

static bool
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Whether the file's first bytes are a JSON object whose "kind" is "summary". */
static bool
says_summary(const char *path)
{
	char buf[SNIFF_BYTES + 1], *p;
	FILE *f = fopen(path, "re");
	size_t got;

	if (!f)
		return false;
	got = fread(buf, 1, SNIFF_BYTES, f);
	fclose(f);
	buf[got] = '\0';
	for (p = buf; isspace((unsigned char)*p); p++)
		;
	if (*p != '{' || !(p = strstr(p, "\"" GMT_RK_KIND "\"")))
		return false;
	p += strlen("\"" GMT_RK_KIND "\"");
	while (isspace((unsigned char)*p) || *p == ':')
		p++;
	return strncmp(p, "\"" GMT_SK_KIND_SUMMARY "\"", strlen(GMT_SK_KIND_SUMMARY) + 2) == 0;
}

bool
gmt_summary_file_is(const char *path)
{
	struct stat st;

	if (has_suffix(gmt_path_base(path), GMT_SUMMARY_SUFFIX))
		return true;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && says_summary(path);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
is_summary_name(const char *name)
{
	return has_suffix(name, GMT_SUMMARY_SUFFIX);
}

/* The summaries' names in @p dir, sorted bytewise; the count or -errno. */
static int
summary_files(const char *dir, char ***names)
{
	return gmt_dir_names(dir, is_summary_name, names);
}

static void
free_names(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool
gmt_ranks_have_summary(char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (is_dir(paths[i])) {
			char **names;
			int k = summary_files(paths[i], &names);

			free_names(names, k > 0 ? k : 0);
			if (k > 0)
				return true;
		} else if (gmt_summary_file_is(paths[i])) {
			return true;
		}
	}
	return false;
}

/* The keys a summary cannot be merged without, and what each must be; the summary of a trace
 * that yielded nothing has none of them but its lost_traces. */
static const char *
missing_key(const json_t *s)
{
	if (gmt_summary_is_lost(s))
		return NULL;
	if (!json_is_object(json_object_get(s, GMT_SK_PROCESS)))
		return GMT_SK_PROCESS;
	if (!json_is_object(json_object_get(s, GMT_RK_SUMMARY)))
		return GMT_RK_SUMMARY;
	if (!json_is_array(json_object_get(s, GMT_RK_PEAKS)))
		return GMT_RK_PEAKS;
	if (!json_is_object(json_object_get(s, GMT_SK_NCCL)))
		return GMT_SK_NCCL;
	return NULL;
}

/* Summary file @p path, checked; NULL after one line on @p diag naming it, the reason in
 * @p lost (words that quote nothing of the file). */
static json_t *
read_summary(const char *cmd, const char *path, FILE *diag, char lost[GMT_TRACE_WHY])
{
	char why[GMT_INPUT_WHY];
	FILE *f = gmt_input_fopen(path, why);
	json_error_t err;
	json_t *s, *v;
	const char *kind, *key;

	if (!f) {
		fprintf(diag, "gpumemtrace %s: %s: %s\n", cmd, gmt_esc(path), why);
		snprintf(lost, GMT_TRACE_WHY, "cannot open: %s", why);
		return NULL;
	}
	s = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
	fclose(f);
	if (!s) {
		fprintf(diag,
			"gpumemtrace %s: %s:%d: not a complete summary (truncated or damaged: "
			"%s); left out\n",
			cmd, gmt_esc(path), err.line, gmt_esc(err.text));
		snprintf(lost, GMT_TRACE_WHY, "not a complete summary (truncated or damaged)");
		return NULL;
	}
	kind = json_string_value(json_object_get(s, GMT_RK_KIND));
	if (!json_is_object(s) || !kind || strcmp(kind, GMT_SK_KIND_SUMMARY) != 0) {
		fprintf(diag,
			"gpumemtrace %s: %s: not a gpumemtrace summary (no \"kind\": \"summary\"; "
			"'gpumemtrace summarize TRACE' writes one); left out\n",
			cmd, gmt_esc(path));
		snprintf(lost, GMT_TRACE_WHY, "not a gpumemtrace summary");
		json_decref(s);
		return NULL;
	}
	v = json_object_get(s, GMT_SK_SUMMARY_VERSION);
	if (!json_is_integer(v) || json_integer_value(v) != GMT_SUMMARY_VERSION) {
		char text[64];

		if (json_is_integer(v))
			snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
		else
			snprintf(text, sizeof(text), "%s", v ? "(not an integer)" : "(none)");
		fprintf(diag,
			"gpumemtrace %s: %s: summary_version %s is not supported (this version "
			"reads %d; summarize the trace again with this version); left out\n",
			cmd, gmt_esc(path), text, GMT_SUMMARY_VERSION);
		snprintf(lost, GMT_TRACE_WHY, "summary_version %s is not supported", text);
		json_decref(s);
		return NULL;
	}
	if ((key = missing_key(s))) {
		fprintf(diag,
			"gpumemtrace %s: %s: not a complete summary (\"%s\" missing or of the "
			"wrong type); left out\n",
			cmd, gmt_esc(path), key);
		snprintf(lost, GMT_TRACE_WHY, "not a complete summary (\"%s\" missing)", key);
		json_decref(s);
		return NULL;
	}
	return s;
}

/*
 * Trace @p path summarized here, as `summarize` would (@p named: as a path the user gave): a
 * trace that yielded nothing or could not be read (lost) is the summary that says so
 * (gmt_summary_lost_doc()). NULL after the reader's message (or ours).
 */
static json_t *
summarize_trace(
    const char *cmd, const char *path, bool named, const struct gmt_session_options *so, FILE *diag)
{
	struct gmt_session s;
	json_t *doc = NULL;

	gmt_session_init(&s, so, diag);
	if ((named ? gmt_session_add_path(&s, path) : gmt_session_add_file(&s, path)) == 0 &&
	    s.n > 0)
		doc = gmt_summary_doc(s.procs, s.n, 0, &s.lost);
	else if (gmt_lost_count(&s.lost) > 0)
		doc = gmt_summary_lost_doc(&s.lost);
	if (!doc && (s.n > 0 || gmt_lost_count(&s.lost) > 0))
		fprintf(diag, "gpumemtrace %s: %s: out of memory\n", cmd, gmt_esc(path));
	gmt_session_free(&s);
	return doc;
}

struct each {
	const char *cmd;
	const struct gmt_session_options *so;
	FILE *diag;
	gmt_rank_fn fn;
	void *data;
	size_t good, bad;
};

/* Summary @p s of @p path to the caller (NULL: said, counted bad). Takes @p s. */
static void
deliver(struct each *e, const char *path, json_t *s)
{
	if (!s) {
		e->bad++;
		return;
	}
	e->fn(e->data, path, s);
	json_decref(s);
	e->good++;
}

/* @p path, an input that yielded nothing (@p why), to the caller as the summary that says so. */
static void
lost_input(struct each *e, const char *path, const char *why)
{
	struct gmt_lost_trace lt = {.file = (char *)path, .why = (char *)why};
	struct gmt_lost lost = {.v = &lt, .n = 1};
	json_t *s = gmt_summary_lost_doc(&lost);

	if (!s)
		fprintf(e->diag, "gpumemtrace %s: %s: out of memory\n", e->cmd, gmt_esc(path));
	deliver(e, path, s);
}

/*
 * One input, named by the user (@p named: read as `report` reads it, a pipe too) or found in a
 * directory, to the caller as a summary. A summary file that cannot be read is a rank whose
 * story is lost: the summary that says so, as for a trace that yielded nothing or could not be
 * read (a gate must not pass over it). A file that is no trace at all is only said.
 */
static void
one(struct each *e, const char *path, bool summary, bool named)
{
	char why[GMT_TRACE_WHY] = "";
	json_t *s = summary ? read_summary(e->cmd, path, e->diag, why)
			    : summarize_trace(e->cmd, path, named, e->so, e->diag);

	if (!s && why[0])
		lost_input(e, path, why);
	else
		deliver(e, path, s);
}

/* Whether the trace @p name has its summary among @p sums (NAME.summary.json). */
static bool
summarized(const char *name, char **sums, int nsums)
{
	static const char *const suffixes[] = {".jsonl.zst", ".jsonl.gz", ".jsonl", ".pickle"};
	size_t len = strlen(name);
	char *want;
	bool found = false;

	if (nsums <= 0) /* bsearch() of NULL is undefined, even for 0 elements */
		return false;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (has_suffix(name, suffixes[i])) {
			len -= strlen(suffixes[i]);
			break;
		}
	if (asprintf(&want, "%.*s%s", (int)len, name, GMT_SUMMARY_SUFFIX) < 0)
		return false;
	found = bsearch(&want, sums, (size_t)nsums, sizeof(*sums), cmp_str) != NULL;
	free(want);
	return found;
}

/*
 * A directory: its summaries, and its traces that have none beside them (a trace and its
 * summary are one rank: the summary is read, the trace is not), in name order.
 */
static void
each_dir(struct each *e, const char *dir)
{
	char **sums = NULL, **traces = NULL;
	int ns = summary_files(dir, &sums), nt = gmt_trace_files(dir, &traces);
	int i = 0, k = 0, used = 0;

	if (ns < 0 || nt < 0) {
		char why[GMT_TRACE_WHY];
		snprintf(why, sizeof(why), "cannot read directory: %s",
			 strerror(-(ns < 0 ? ns : nt)));
		fprintf(e->diag, "gpumemtrace %s: %s: %s\n", e->cmd, gmt_esc(dir), why);
		lost_input(e, dir,
			   why); /* a directory the user named: a gate must not pass it over */
		free_names(sums, ns > 0 ? ns : 0);
		free_names(traces, nt > 0 ? nt : 0);
		return;
	}
	while (i < ns || k < nt) {
		bool sum = k >= nt || (i < ns && strcmp(sums[i], traces[k]) < 0);
		const char *name = sum ? sums[i++] : traces[k++];
		char *p;

		if (!sum && summarized(name, sums, ns))
			continue;
		if (!(p = gmt_path_join(dir, name))) {
			fprintf(e->diag, "gpumemtrace %s: out of memory\n", e->cmd);
			e->bad++;
			continue;
		}
		one(e, p, sum, false);
		free(p);
		used++;
	}
	if (used == 0) {
		static const char none[] =
		    "no summaries (*" GMT_SUMMARY_SUFFIX ") or traces in this directory";
		fprintf(e->diag, "gpumemtrace %s: %s: %s\n", e->cmd, gmt_esc(dir), none);
		lost_input(e, dir, none);
	}
	free_names(sums, ns);
	free_names(traces, nt);
}

size_t
gmt_ranks_each(const char *cmd,
	       char *const *paths,
	       size_t n,
	       const struct gmt_session_options *so,
	       FILE *diag,
	       gmt_rank_fn fn,
	       void *data,
	       size_t *bad)
{
	struct each e = {.cmd = cmd, .so = so, .diag = diag, .fn = fn, .data = data};

	for (size_t i = 0; i < n; i++) {
		if (is_dir(paths[i]))
			each_dir(&e, paths[i]);
		else
			one(&e, paths[i], gmt_summary_file_is(paths[i]), true);
	}
	if (bad)
		*bad = e.bad;
	return e.good;
}

// --- a summary as a report of one process, for the gates ---------------------------------

static void
set_copy(json_t *dst, const json_t *src, const char *key, const char *as)
{
	json_t *v = json_object_get(src, key);

	if (v)
		json_object_set(dst, as ? as : key, v);
}

json_t *
gmt_summary_report_doc(const json_t *s)
{
	json_t *doc = json_object(), *proc, *peaks = json_array(), *sites = json_array();
	json_t *stacks = json_array(), *procs = json_array(), *pk, *c, *t;
	size_t i;

	if (!doc || !peaks || !sites || !stacks || !procs)
		goto oom;
	set_copy(doc, s, GMT_RK_REPORT_VERSION, NULL);
	set_copy(doc, s, GMT_RK_SUMMARY, NULL);
	set_copy(doc, s, GMT_RK_LOST_TRACES, NULL); /* absent: an older summary (check says so) */
	if (!gmt_summary_is_lost(s)) { /* a lost trace's summary: no process, only lost_traces */
		if (!(proc = json_deep_copy(json_object_get(s, GMT_SK_PROCESS))))
			goto oom;
		if (json_is_object(t = json_object_get(s, GMT_RK_TENSORS)))
			json_object_set(proc, GMT_RK_TENSORS, t);
		json_array_append_new(procs, proc);
	}
	json_object_set_new(doc, GMT_RK_PROCESSES, procs);
	procs = NULL;
	json_array_foreach(json_object_get(s, GMT_RK_PEAKS), i, pk)
	{
		json_t *p = json_copy(pk), *row;
		size_t k;

		if (!p)
			goto oom;
		json_object_set_new(p, GMT_RK_PROCESS, json_integer(0));
		json_array_foreach(json_object_get(pk, GMT_RK_PEAK_SITES), k, row)
		    json_array_append(sites, row);
		json_object_del(p, GMT_RK_PEAK_SITES);
		json_object_del(p, GMT_SK_PEAK_SITES_ALL);
		json_array_append_new(peaks, p);
	}
	json_object_set_new(doc, GMT_RK_PEAKS, peaks);
	json_object_set_new(doc, GMT_RK_PEAK_SITES, sites);
	peaks = sites = NULL;
	set_copy(doc, s, GMT_RK_LEAK_SITES, NULL);
	set_copy(doc, s, GMT_RK_FAILED_SITES, NULL);
	set_copy(doc, s, GMT_RK_OOM, NULL);
	set_copy(doc, s, GMT_RK_GROWTH_SITES, NULL);
	set_copy(doc, s, GMT_RK_TIMELINE, NULL);
	json_array_foreach(json_object_get(s, GMT_RK_CALL_STACKS), i, c)
	{
		json_t *o = json_object();

		if (!o)
			goto oom;
		json_object_set_new(o, GMT_RK_PROCESS, json_integer(0));
		set_copy(o, c, GMT_RK_STACK, NULL);
		set_copy(o, c, GMT_RK_CALL_STACK, NULL);
		json_array_append_new(stacks, o);
	}
	json_object_set_new(doc, GMT_RK_CALL_STACKS, stacks);
	return doc;
oom:
	json_decref(doc);
	json_decref(peaks);
	json_decref(sites);
	json_decref(stacks);
	json_decref(procs);
	return NULL;
}
