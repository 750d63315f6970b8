/*
 * @brief The per-rank table and its verdicts (ranks.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/ranks/ranks.h"
#include "analysis/report/keys.h"
#include "analysis/report/report.h"
#include "analysis/report/summary.h"
#include "analysis/report/units.h"
#include "util/esc.h"
#include "util/outfile.h"
#include "util/path.h"
#include "util/sat.h"

/* ranks.csv: RFC 4180 as the other tables (report_csv.c, docs/sql.md), lines ending in CRLF */

/* A run whose wall-clock span misses the job's by more than this is another run. */
#define JOB_SLACK_S 1.0

// --- a row from a summary ------------------------------------------------------------------

static long long
ll_or(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static uint64_t
u64_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

/*
 * A number as a summary file states it: written with 15 significant digits (the report's
 * JSON_REAL_PRECISION), so a row of a summary summarized in memory and one read back from its
 * file hold the same double, and what is derived from them (gaps of wall clocks) is the same.
 */
static double
num_or_nan(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	char buf[40];

	if (!json_is_number(v))
		return NAN;
	snprintf(buf, sizeof(buf), "%.15g", json_number_value(v));
	return strtod(buf, NULL);
}

static char *
str_dup(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? strdup(s) : NULL;
}

/* The row of summary @p s; -ENOMEM. */
static int
row_of(struct gmt_rank_row *r, const char *input, const json_t *s)
{
	const json_t *p = json_object_get(s, GMT_SK_PROCESS),
		     *sum = json_object_get(s, GMT_RK_SUMMARY);
	const json_t *rank = json_object_get(s, GMT_RK_RANK),
		     *nccl = json_object_get(s, GMT_SK_NCCL);
	const json_t *pk;
	size_t i;

	*r = (struct gmt_rank_row){0};
	r->input = strdup(input);
	r->file = str_dup(s, GMT_RK_FILE);
	r->host = str_dup(s, GMT_RK_HOST);
	if (!r->input || (json_is_string(json_object_get(s, GMT_RK_FILE)) && !r->file) ||
	    (json_is_string(json_object_get(s, GMT_RK_HOST)) && !r->host)) {
		free(r->input);
		free(r->file);
		free(r->host);
		return -ENOMEM;
	}
	r->pid = ll_or(s, GMT_RK_PID);
	r->rank = ll_or(rank, GMT_RK_RANK);
	r->local_rank = ll_or(rank, GMT_RK_LOCAL_RANK);
	r->world_size = ll_or(rank, GMT_RK_WORLD_SIZE);
	r->peak_bytes = u64_of(p, GMT_RK_PEAK_HELD_BYTES);
	r->peak_time_s = num_or_nan(p, GMT_RK_PEAK_TIME_S);
	r->peak_unix_s = num_or_nan(p, GMT_RK_PEAK_UNIX_S);
	r->peak_device = -1;
	json_array_foreach(json_object_get(s, GMT_RK_PEAKS), i, pk)
	{
		if (r->peak_bytes && u64_of(pk, GMT_RK_BYTES) == r->peak_bytes) {
			r->peak_device = ll_or(pk, GMT_RK_DEVICE);
			break;
		}
	}
	r->first_failure_time_s = num_or_nan(p, GMT_RK_FIRST_FAILURE_TIME_S);
	r->first_failure_unix_s = num_or_nan(p, GMT_RK_FIRST_FAILURE_UNIX_S);
	r->failed = u64_of(sum, GMT_RK_FAILED_ALLOCATIONS);
	r->leaked_bytes = u64_of(sum, GMT_RK_LEAKED_BYTES);
	r->leaked_allocations = u64_of(sum, GMT_RK_LEAKED_ALLOCATIONS);
	r->cached_bytes = u64_of(sum, GMT_RK_CACHED_AT_EXIT_BYTES);
	r->library_bytes = u64_of(sum, GMT_RK_LIBRARY_AT_EXIT_BYTES);
	r->nccl_at_peak = u64_of(nccl, GMT_SK_AT_PEAK_BYTES);
	r->nccl_at_exit = u64_of(nccl, GMT_SK_AT_EXIT_BYTES);
	r->nccl_allocated = u64_of(nccl, GMT_SK_ALLOCATED_BYTES);
	r->start_unix_s = num_or_nan(s, GMT_SK_START_UNIX_S);
	r->end_unix_s = num_or_nan(s, GMT_SK_END_UNIX_S);
	r->clock_uncertainty_s = num_or_nan(s, GMT_SK_CLOCK_UNCERTAINTY_S);
	if (!(r->clock_uncertainty_s >= 0))
		r->clock_uncertainty_s = GMT_SUMMARY_CLOCK_UNCERTAINTY_S;
	r->complete = json_is_true(json_object_get(s, GMT_RK_COMPLETE));
	r->dropped = u64_of(s, GMT_RK_DROPPED);
	return 0;
}

static void
row_free(struct gmt_rank_row *r)
{
	free(r->input);
	free(r->file);
	free(r->host);
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether the runs of two rows overlap in time (with the slack); unknown times: they may. */
static bool
same_time(const struct gmt_rank_row *a, const struct gmt_rank_row *b)
{
	if (isnan(a->start_unix_s) || isnan(a->end_unix_s) || isnan(b->start_unix_s) ||
	    isnan(b->end_unix_s))
		return true;
	return a->start_unix_s <= b->end_unix_s + JOB_SLACK_S &&
	       b->start_unix_s <= a->end_unix_s + JOB_SLACK_S;
}

/*
 * Whether two rows are one rank: the same RANK of a job of the same world size, in runs that
 * overlap (a rank of another job or run is not this rank given again: gmt_ranks_settle() tells
 * which job is the one merged), else (no rank) the same process and start.
 */
static bool
same_rank(const struct gmt_rank_row *a, const struct gmt_rank_row *b)
{
	if (a->rank >= 0 || b->rank >= 0)
		return a->rank == b->rank &&
		       (a->world_size < 0 || b->world_size < 0 || a->world_size == b->world_size) &&
		       same_time(a, b);
	return a->pid == b->pid && same_str(a->host, b->host) &&
	       (a->start_unix_s == b->start_unix_s ||
		(isnan(a->start_unix_s) && isnan(b->start_unix_s)));
}

const char *
gmt_rank_name(const struct gmt_rank_row *row)
{
	static char bufs[4][160];
	static unsigned next;
	char *b = bufs[next++ % 4];

	if (row->rank >= 0)
		snprintf(b, sizeof(bufs[0]), "rank %lld", row->rank);
	else
		snprintf(b, sizeof(bufs[0]), "pid %lld on %s", row->pid,
			 row->host ? gmt_esc(row->host) : "an unknown host");
	return b;
}

const char *
gmt_summary_who(const json_t *s, char *buf, size_t size)
{
	struct gmt_rank_row row = {
	    .rank = ll_or(json_object_get(s, GMT_RK_RANK), GMT_RK_RANK),
	    .pid = ll_or(s, GMT_RK_PID),
	    .host = (char *)json_string_value(json_object_get(s, GMT_RK_HOST)),
	};

	snprintf(buf, size, "%s", gmt_rank_name(&row));
	return buf;
}

int
gmt_ranks_add(struct gmt_ranks *r, const char *cmd, const char *input, const json_t *s, FILE *diag)
{
	struct gmt_rank_row row;

	if (gmt_summary_is_lost(s)) { /* no figure to merge: its rank is missing, said */
		const json_t *l = json_array_get(json_object_get(s, GMT_RK_LOST_TRACES), 0);
		const char *file = json_string_value(json_object_get(l, GMT_RK_FILE));
		const char *why = json_string_value(json_object_get(l, GMT_RK_REASON));

		fprintf(diag,
			"gpumemtrace %s: %s: the %s %s yielded nothing (%s): its rank is in none "
			"of the figures; left out\n",
			cmd, gmt_esc(input),
			file && gmt_summary_file_is(file) ? "summary" : "trace",
			file ? gmt_esc(file) : "?", why ? gmt_esc(why) : "no reason given");
		r->left_out++;
		/* kept for the outputs (out of memory: said above all the same) */
		if (!r->lost)
			r->lost = json_array();
		if (r->lost && json_is_object(l))
			json_array_append_new(r->lost, json_deep_copy(l));
		return -1;
	}
	if (row_of(&row, input, s) != 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		if (!same_rank(&r->v[i], &row))
			continue;
		fprintf(diag, "gpumemtrace %s: %s: %s again (already read from ", cmd,
			gmt_esc(input), gmt_rank_name(&row));
		fprintf(diag, "%s); left out\n", gmt_esc(r->v[i].input));
		row_free(&row);
		r->left_out++;
		return -1;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct gmt_rank_row *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			row_free(&row);
			return -ENOMEM;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = row;
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of the known values of @p get over the rows; NAN when none. */
static double
median(const struct gmt_ranks *r, bool end)
{
	double *v = malloc((r->n + 1) * sizeof(*v)), m = NAN;
	size_t k = 0;

	if (!v)
		return NAN;
	for (size_t i = 0; i < r->n; i++) {
		double x = end ? r->v[i].end_unix_s : r->v[i].start_unix_s;
		if (!isnan(x))
			v[k++] = x;
	}
	if (k) {
		qsort(v, k, sizeof(*v), cmp_double);
		m = v[k / 2];
	}
	free(v);
	return m;
}

static int
cmp_row(const void *a, const void *b)
{
	const struct gmt_rank_row *x = a, *y = b;
	int c;

	/* ranks first, by rank; then the rankless by host and pid */
	if ((x->rank < 0) != (y->rank < 0))
		return x->rank < 0 ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if ((c = strcmp(x->host ? x->host : "", y->host ? y->host : "")) != 0)
		return c;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void
gmt_ranks_settle(struct gmt_ranks *r, const char *cmd, FILE *diag)
{
	long long world = -1;
	size_t most = 0, kept = 0;
	double start, end;

	/* the job's world size: the one most rows state */
	for (size_t i = 0; i < r->n; i++) {
		size_t c = 0;

		if (r->v[i].world_size < 0)
			continue;
		for (size_t k = 0; k < r->n; k++)
			c += r->v[k].world_size == r->v[i].world_size;
		if (c > most || (c == most && r->v[i].world_size < world)) {
			most = c;
			world = r->v[i].world_size;
		}
	}
	start = median(r, false);
	end = median(r, true);
	for (size_t i = 0; i < r->n; i++) {
		struct gmt_rank_row *x = &r->v[i];
		const char *why = NULL;
		char text[160];

		if (x->world_size >= 0 && world >= 0 && x->world_size != world) {
			snprintf(text, sizeof(text),
				 "of a job of world size %lld, not this one's (%lld, %zu ranks)",
				 x->world_size, world, most);
			why = text;
		} else if (!isnan(x->end_unix_s) && !isnan(start) &&
			   x->end_unix_s + JOB_SLACK_S < start) {
			why = "of another run: it ended before most ranks started";
		} else if (!isnan(x->start_unix_s) && !isnan(end) &&
			   x->start_unix_s > end + JOB_SLACK_S) {
			why = "of another run: it started after most ranks ended";
		}
		if (why) {
			fprintf(diag, "gpumemtrace %s: %s: %s %s; left out\n", cmd,
				gmt_esc(x->input), gmt_rank_name(x), why);
			row_free(x);
			r->left_out++;
			continue;
		}
		r->v[kept++] = *x;
	}
	r->n = kept;
	if (r->n > 1)
		qsort(r->v, r->n, sizeof(*r->v), cmp_row);
	/* one rank of the job in two runs both near the job's time (a restarted rank): the first */
	kept = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct gmt_rank_row *x = &r->v[i];

		if (kept && x->rank >= 0 && r->v[kept - 1].rank == x->rank) {
			fprintf(diag, "gpumemtrace %s: %s: %s again (already read from ", cmd,
				gmt_esc(x->input), gmt_rank_name(x));
			fprintf(diag, "%s, a run of other times); left out\n",
				gmt_esc(r->v[kept - 1].input));
			row_free(x);
			r->left_out++;
			continue;
		}
		r->v[kept++] = *x;
	}
	r->n = kept;
}

// --- the verdicts ----------------------------------------------------------------------------

/* The uncertainty of comparing two rows' wall clocks: none on one host (one clock). */
static double
uncertainty(const struct gmt_rank_row *a, const struct gmt_rank_row *b)
{
	if (a->host && b->host && strcmp(a->host, b->host) == 0)
		return 0;
	return a->clock_uncertainty_s + b->clock_uncertainty_s;
}

int
gmt_ranks_verdict(const struct gmt_ranks *r, struct gmt_ranks_verdict *v)
{
	double sum = 0, sq = 0, max = 0;
	size_t unclocked = SIZE_MAX;

	*v = (struct gmt_ranks_verdict){
	    .peak = SIZE_MAX, .first_failure = SIZE_MAX, .second_failure = SIZE_MAX};
	for (size_t i = 0; i < r->n; i++) {
		const struct gmt_rank_row *x = &r->v[i];

		v->complete += x->complete;
		v->nccl_at_peak += x->nccl_at_peak;
		v->nccl_at_exit += x->nccl_at_exit;
		if (x->peak_bytes &&
		    (v->peak == SIZE_MAX || x->peak_bytes > r->v[v->peak].peak_bytes))
			v->peak = i;
		sum += (double)x->peak_bytes;
		if ((double)x->peak_bytes > max)
			max = (double)x->peak_bytes;
		if (isnan(x->first_failure_time_s))
			continue;
		v->failing++;
		if (isnan(x->first_failure_unix_s)) {
			unclocked = i;
			continue;
		}
		if (v->first_failure == SIZE_MAX ||
		    x->first_failure_unix_s < r->v[v->first_failure].first_failure_unix_s) {
			v->second_failure = v->first_failure;
			v->first_failure = i;
		} else if (v->second_failure == SIZE_MAX ||
			   x->first_failure_unix_s < r->v[v->second_failure].first_failure_unix_s) {
			v->second_failure = i;
		}
	}
	if (v->second_failure != SIZE_MAX) {
		const struct gmt_rank_row *a = &r->v[v->first_failure],
					  *b = &r->v[v->second_failure];

		v->failure_gap_s = b->first_failure_unix_s - a->first_failure_unix_s;
		v->failure_uncertainty_s = uncertainty(a, b);
		if (!(v->failure_gap_s > v->failure_uncertainty_s))
			v->failure_undecided = true;
	}
	if (unclocked != SIZE_MAX && v->failing > 1) {
		v->failure_undecided = true; /* it may have failed before any of the others */
		v->failure_no_clock = true;
	} else if (unclocked != SIZE_MAX) { /* the one rank that failed: first, clock or not */
		v->first_failure = unclocked;
	}
	if (r->n && sum > 0) {
		v->mean = sum / (double)r->n;
		for (size_t i = 0; i < r->n; i++) {
			double d = (double)r->v[i].peak_bytes - v->mean;
			sq += d * d;
		}
		v->sd = sqrt(sq / (double)r->n);
		v->max_over_mean = max / v->mean;
		for (size_t i = 0; v->sd > 0 && i < r->n; i++) {
			if ((double)r->v[i].peak_bytes <= v->mean + 2 * v->sd)
				continue;
			size_t *o = realloc(v->outliers, (v->noutliers + 1) * sizeof(*o));
			if (!o)
				return -ENOMEM;
			v->outliers = o;
			o[v->noutliers++] = i;
		}
	}
	return 0;
}

void
gmt_ranks_verdict_free(struct gmt_ranks_verdict *v)
{
	free(v->outliers);
	v->outliers = NULL;
}

void
gmt_ranks_free(struct gmt_ranks *r)
{
	for (size_t i = 0; i < r->n; i++)
		row_free(&r->v[i]);
	free(r->v);
	json_decref(r->lost);
	*r = (struct gmt_ranks){0};
}

// --- JSON ------------------------------------------------------------------------------------

static json_t *
jll(long long v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *
ju64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *
jnum(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *
jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
row_json(const struct gmt_rank_row *x)
{
	json_t *o = json_object();

	json_object_set_new(o, GMT_RK_RANK, jll(x->rank));
	json_object_set_new(o, GMT_RK_LOCAL_RANK, jll(x->local_rank));
	json_object_set_new(o, GMT_RK_WORLD_SIZE, jll(x->world_size));
	json_object_set_new(o, GMT_RK_HOST, jstr(x->host));
	json_object_set_new(o, GMT_RK_PID, jll(x->pid));
	json_object_set_new(o, GMT_RK_FILE, jstr(x->file));
	json_object_set_new(o, GMT_RK_PEAK_HELD_BYTES, ju64(x->peak_bytes));
	json_object_set_new(o, "peak_device", jll(x->peak_device));
	json_object_set_new(o, GMT_RK_PEAK_TIME_S, jnum(x->peak_time_s));
	json_object_set_new(o, GMT_RK_PEAK_UNIX_S, jnum(x->peak_unix_s));
	json_object_set_new(o, GMT_RK_FIRST_FAILURE_TIME_S, jnum(x->first_failure_time_s));
	json_object_set_new(o, GMT_RK_FIRST_FAILURE_UNIX_S, jnum(x->first_failure_unix_s));
	json_object_set_new(o, GMT_RK_FAILED_ALLOCATIONS, ju64(x->failed));
	json_object_set_new(o, GMT_RK_LEAKED_BYTES, ju64(x->leaked_bytes));
	json_object_set_new(o, GMT_RK_LEAKED_ALLOCATIONS, ju64(x->leaked_allocations));
	json_object_set_new(o, GMT_RK_CACHED_AT_EXIT_BYTES, ju64(x->cached_bytes));
	json_object_set_new(o, GMT_RK_LIBRARY_AT_EXIT_BYTES, ju64(x->library_bytes));
	json_object_set_new(o, "nccl_at_peak_bytes", ju64(x->nccl_at_peak));
	json_object_set_new(o, "nccl_at_exit_bytes", ju64(x->nccl_at_exit));
	json_object_set_new(o, "nccl_allocated_bytes", ju64(x->nccl_allocated));
	json_object_set_new(o, GMT_SK_START_UNIX_S, jnum(x->start_unix_s));
	json_object_set_new(o, GMT_SK_END_UNIX_S, jnum(x->end_unix_s));
	json_object_set_new(o, GMT_SK_CLOCK_UNCERTAINTY_S, json_real(x->clock_uncertainty_s));
	json_object_set_new(o, GMT_RK_COMPLETE, json_boolean(x->complete));
	json_object_set_new(o, GMT_RK_DROPPED, ju64(x->dropped));
	return o;
}

/* A row's rank as the document names it: its RANK, else its row index as a string. */
static json_t *
who(const struct gmt_ranks *r, size_t i)
{
	if (i == SIZE_MAX)
		return json_null();
	return r->v[i].rank >= 0 ? json_integer(r->v[i].rank)
				 : json_string(gmt_rank_name(&r->v[i]));
}

json_t *
gmt_ranks_lost_json(const struct gmt_ranks *r)
{
	return r->lost ? json_deep_copy(r->lost) : json_array();
}

void
gmt_ranks_lost_text(FILE *out, const struct gmt_ranks *r, const char *role)
{
	size_t n = json_array_size(r->lost), i;
	const json_t *l;

	if (n == 0)
		return;
	fprintf(out,
		"warning: %s%s%zu trace file%s yielded nothing: %s in none of the figures below\n",
		role ? role : "", role ? ": " : "", n, n == 1 ? "" : "s",
		n == 1 ? "its rank is" : "their ranks are");
	json_array_foreach(r->lost, i, l)
	{
		const char *file = json_string_value(json_object_get(l, GMT_RK_FILE));
		const char *why = json_string_value(json_object_get(l, GMT_RK_REASON));
		fprintf(out, "  %s: %s\n", file ? gmt_esc(file) : "?", why ? gmt_esc(why) : "?");
	}
}

json_t *
gmt_ranks_json(const struct gmt_ranks *r)
{
	struct gmt_ranks_verdict v;
	json_t *doc, *rows, *ff, *imb, *out, *inc;
	uint64_t leaked = 0, failed = 0;

	if (gmt_ranks_verdict(r, &v) != 0)
		return NULL;
	doc = json_object();
	rows = json_array();
	inc = json_array();
	for (size_t i = 0; i < r->n; i++) {
		json_array_append_new(rows, row_json(&r->v[i]));
		leaked = gmt_sat_add(leaked, r->v[i].leaked_bytes);
		failed += r->v[i].failed;
		if (!r->v[i].complete)
			json_array_append_new(inc, who(r, i));
	}
	json_object_set_new(doc, GMT_RK_KIND, json_string("ranks"));
	json_object_set_new(doc, "ranks_version", json_integer(GMT_RANKS_VERSION));
	json_object_set_new(doc, "ranks", ju64(r->n));
	json_object_set_new(doc, "left_out", ju64(r->left_out));
	json_object_set_new(doc, GMT_RK_LOST_TRACES, gmt_ranks_lost_json(r));
	json_object_set_new(doc, "complete", ju64(v.complete));
	json_object_set_new(doc, "incomplete_ranks", inc);
	json_object_set_new(doc, "peak_rank", who(r, v.peak));
	json_object_set_new(doc, GMT_RK_PEAK_HELD_BYTES,
			    ju64(v.peak == SIZE_MAX ? 0 : r->v[v.peak].peak_bytes));
	ff = json_object();
	json_object_set_new(ff, GMT_RK_RANK,
			    v.failure_undecided ? json_null() : who(r, v.first_failure));
	json_object_set_new(ff, "earliest", who(r, v.first_failure));
	json_object_set_new(ff, "next", who(r, v.second_failure));
	json_object_set_new(ff, "decided",
			    json_boolean(v.first_failure != SIZE_MAX && !v.failure_undecided));
	json_object_set_new(
	    ff, "gap_s", v.second_failure != SIZE_MAX ? json_real(v.failure_gap_s) : json_null());
	json_object_set_new(ff, "uncertainty_s",
			    v.second_failure != SIZE_MAX ? json_real(v.failure_uncertainty_s)
							 : json_null());
	json_object_set_new(ff, "failing_ranks", ju64(v.failing));
	json_object_set_new(doc, "first_failure", ff);
	imb = json_object();
	out = json_array();
	for (size_t i = 0; i < v.noutliers; i++)
		json_array_append_new(out, who(r, v.outliers[i]));
	json_object_set_new(imb, "max_over_mean", json_real(v.max_over_mean));
	json_object_set_new(imb, "mean_bytes", json_real(round(v.mean)));
	json_object_set_new(imb, "sd_bytes", json_real(round(v.sd)));
	json_object_set_new(imb, "outliers", out);
	json_object_set_new(doc, "imbalance", imb);
	json_object_set_new(doc, GMT_RK_LEAKED_BYTES, ju64(leaked));
	json_object_set_new(doc, GMT_RK_FAILED_ALLOCATIONS, ju64(failed));
	json_object_set_new(doc, "nccl_at_peak_bytes", ju64(v.nccl_at_peak));
	json_object_set_new(doc, "nccl_at_exit_bytes", ju64(v.nccl_at_exit));
	json_object_set_new(doc, "table", rows);
	gmt_ranks_verdict_free(&v);
	return doc;
}

// --- text ------------------------------------------------------------------------------------

static const char *
secs(double s, char *buf, size_t size)
{
	if (isnan(s))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.3f", s);
	return buf;
}

int
gmt_ranks_text(FILE *out, const struct gmt_ranks *r)
{
	struct gmt_ranks_verdict v;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF], t1[32], t2[32];
	uint64_t leaked = 0;

	if (gmt_ranks_verdict(r, &v) != 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		leaked = gmt_sat_add(leaked, r->v[i].leaked_bytes);
	fprintf(out, "gpumemtrace: %zu ranks, %zu complete", r->n, v.complete);
	if (r->n > v.complete) {
		size_t shown = 0;
		fprintf(out, "; did not exit normally (killed, crashed or ended by a signal):");
		for (size_t i = 0; i < r->n; i++)
			if (!r->v[i].complete && shown++ < 10)
				fprintf(out, "%s %s", shown > 1 ? "," : "",
					gmt_rank_name(&r->v[i]));
		if (r->n - v.complete > 10)
			fprintf(out, " and %zu more", r->n - v.complete - 10);
	}
	if (r->left_out)
		fprintf(out, " (%zu inputs left out: see above)", r->left_out);
	fprintf(out, "\n");
	gmt_ranks_lost_text(out, r, NULL);
	if (v.peak != SIZE_MAX) {
		const struct gmt_rank_row *x = &r->v[v.peak];
		fprintf(out, "Highest peak: %s, %s on device %lld at %s s", gmt_rank_name(x),
			gmt_format_bytes(x->peak_bytes, b1), x->peak_device,
			secs(x->peak_time_s, t1, sizeof(t1)));
		if (x->host)
			fprintf(out, " (host %s, pid %lld)", gmt_esc(x->host), x->pid);
		fprintf(out, "\n");
	} else {
		fprintf(out, "Highest peak: no rank held device memory\n");
	}
	if (v.failing == 0) {
		fprintf(out, "First failure: no rank had a failed allocation that counts\n");
	} else if (!v.failure_undecided) {
		const struct gmt_rank_row *x = &r->v[v.first_failure];
		fprintf(out, "First failure: %s at %s s", gmt_rank_name(x),
			secs(x->first_failure_time_s, t1, sizeof(t1)));
		if (v.second_failure != SIZE_MAX)
			fprintf(out, ", %.3f s before %s (clocks within %.3f s)", v.failure_gap_s,
				gmt_rank_name(&r->v[v.second_failure]), v.failure_uncertainty_s);
		fprintf(out, "; failing ranks: %zu\n", v.failing);
	} else if (v.second_failure != SIZE_MAX && !v.failure_no_clock) {
		fprintf(out,
			"First failure: undecided: %s and %s failed %.3f s apart, within the "
			"clocks' uncertainty (%.3f s); failing ranks: %zu\n",
			gmt_rank_name(&r->v[v.first_failure]),
			gmt_rank_name(&r->v[v.second_failure]), v.failure_gap_s,
			v.failure_uncertainty_s, v.failing);
	} else {
		fprintf(out,
			"First failure: undecided: a failing rank has no wall clock; failing "
			"ranks: %zu\n",
			v.failing);
	}
	if (v.mean > 0) {
		fprintf(out, "Imbalance: max/mean of peaks %.2f (mean %s, sd %s)", v.max_over_mean,
			gmt_format_bytes((uint64_t)v.mean, b1),
			gmt_format_bytes((uint64_t)v.sd, b2));
		if (v.noutliers) {
			fprintf(out, "; past mean + 2 sd:");
			for (size_t i = 0; i < v.noutliers; i++)
				fprintf(out, "%s %s", i ? "," : "",
					gmt_rank_name(&r->v[v.outliers[i]]));
		}
		fprintf(out, "\n");
	}
	fprintf(out,
		"Leaked (the program's own, all ranks): %s; NCCL at the peaks: %s, at exit: %s\n",
		gmt_format_bytes(leaked, b1), gmt_format_bytes(v.nccl_at_peak, b2),
		gmt_format_bytes(v.nccl_at_exit, b3));
	fprintf(out, "\n%8s  %-20s %8s  %12s %10s  %12s  %12s  %12s  %s\n", "RANK", "HOST", "PID",
		"PEAK", "AT_S", "1ST_FAIL_S", "LEAKED", "NCCL@PEAK", "STATUS");
	for (size_t i = 0; i < r->n; i++) {
		const struct gmt_rank_row *x = &r->v[i];
		char rk[24], host[64];

		snprintf(rk, sizeof(rk), x->rank >= 0 ? "%lld" : "-", x->rank);
		gmt_esc_buf(x->host ? x->host : "-", host, sizeof(host));
		fprintf(
		    out, "%8s  %-20.20s %8lld  %12s %10s  %12s  %12s  %12s  %s%s%s\n", rk, host,
		    x->pid, gmt_format_bytes(x->peak_bytes, b1),
		    secs(x->peak_time_s, t1, sizeof(t1)),
		    secs(x->first_failure_time_s, t2, sizeof(t2)),
		    gmt_format_bytes(x->leaked_bytes, b2), gmt_format_bytes(x->nccl_at_peak, b3),
		    x->complete ? "complete" : "INCOMPLETE", i == v.peak ? ", highest peak" : "",
		    i == v.first_failure && !v.failure_undecided ? ", failed first" : "");
	}
	gmt_ranks_verdict_free(&v);
	return ferror(out) ? -EIO : 0;
}

// --- CSV -------------------------------------------------------------------------------------

static void
csv_field(FILE *f, bool first, const char *s)
{
	if (!first)
		fputc(',', f);
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void
csv_ll(FILE *f, long long v)
{
	if (v >= 0)
		fprintf(f, ",%lld", v);
	else
		fputc(',', f);
}

static void
csv_num(FILE *f, double v)
{
	if (isnan(v))
		fputc(',', f);
	else
		fprintf(f, ",%.6f", v);
}

/* Open DIR/@p name for a table (made atomically: gmt_outfile); 0, or -errno (said on @p diag). */
static int
table_open(struct gmt_outfile *file, const char *dir, const char *name, char **path, FILE *diag)
{
	char why[GMT_OUTFILE_WHY];

	if (!(*path = gmt_path_join(dir, name)))
		return -ENOMEM;
	if (gmt_outfile_open(file, *path, why) != 0) {
		fprintf(diag, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(*path), why);
		free(*path);
		*path = NULL;
		return -EIO;
	}
	return 0;
}

/* Finish the table opened by table_open(); 0, or -EIO (said). */
static int
table_close(struct gmt_outfile *file, char *path, FILE *diag)
{
	char why[GMT_OUTFILE_WHY];
	int rc = 0;

	if (ferror(file->f)) {
		fprintf(diag, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(path),
			strerror(errno ? errno : EIO));
		gmt_outfile_abort(file);
		rc = -EIO;
	} else if (gmt_outfile_close(file, why) != 0) {
		fprintf(diag, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(path), why);
		rc = -EIO;
	}
	free(path);
	return rc;
}

int
gmt_ranks_csv(const char *dir, const struct gmt_ranks *r, FILE *diag)
{
	struct gmt_outfile file = {.dirfd = -1};
	char *path;
	size_t i;
	const json_t *l;
	FILE *f;
	int rc;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(diag, "gpumemtrace report: cannot make %s: %s\n", gmt_esc(dir),
			strerror(errno));
		return -errno;
	}
	if ((rc = table_open(&file, dir, "ranks.csv", &path, diag)) != 0)
		return rc;
	f = file.f;
	fputs("rank,local_rank,world_size,host,pid,file,peak_held_bytes,peak_device,peak_time_s,"
	      "peak_unix_s,first_failure_time_s,first_failure_unix_s,failed_allocations,"
	      "leaked_bytes,leaked_allocations,cached_at_exit_bytes,library_at_exit_bytes,"
	      "nccl_at_peak_bytes,nccl_at_exit_bytes,nccl_allocated_bytes,start_unix_s,end_unix_s,"
	      "complete,dropped\r\n",
	      f);
	for (i = 0; i < r->n; i++) {
		const struct gmt_rank_row *x = &r->v[i];

		if (x->rank >= 0)
			fprintf(f, "%lld", x->rank);
		csv_ll(f, x->local_rank);
		csv_ll(f, x->world_size);
		csv_field(f, false, x->host ? gmt_esc(x->host) : NULL);
		csv_ll(f, x->pid);
		csv_field(f, false, x->file ? gmt_esc(x->file) : NULL);
		fprintf(f, ",%" PRIu64, x->peak_bytes);
		csv_ll(f, x->peak_device);
		csv_num(f, x->peak_time_s);
		csv_num(f, x->peak_unix_s);
		csv_num(f, x->first_failure_time_s);
		csv_num(f, x->first_failure_unix_s);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, x->failed,
			x->leaked_bytes, x->leaked_allocations, x->cached_bytes, x->library_bytes);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, x->nccl_at_peak, x->nccl_at_exit,
			x->nccl_allocated);
		csv_num(f, x->start_unix_s);
		csv_num(f, x->end_unix_s);
		fprintf(f, ",%s,%" PRIu64 "\r\n", x->complete ? "true" : "false", x->dropped);
	}
	if ((rc = table_close(&file, path, diag)) != 0)
		return rc;
	/* the traces that yielded nothing, as a report of traces writes them (header alone: none)
	 */
	file = (struct gmt_outfile){.dirfd = -1};
	if ((rc = table_open(&file, dir, "lost_traces.csv", &path, diag)) != 0)
		return rc;
	fputs("path,reason\r\n", file.f);
	json_array_foreach(r->lost, i, l)
	{
		const char *name = json_string_value(json_object_get(l, GMT_RK_FILE));
		const char *why = json_string_value(json_object_get(l, GMT_RK_REASON));

		csv_field(file.f, true, name ? gmt_esc(name) : NULL);
		csv_field(file.f, false, why ? gmt_esc(why) : NULL);
		fputs("\r\n", file.f);
	}
	return table_close(&file, path, diag);
}
