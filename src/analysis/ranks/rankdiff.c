/*
 * @brief `diff` over many ranks: two tables matched rank by rank, by RANK (ranks.h).
 *
 * A pid means nothing across two runs, a RANK does: rank 3 of the base is compared with rank 3
 * of the new run, whatever their hosts and pids. Ranks without a RANK, and ranks only one run
 * has, are listed on their own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ranks/ranks.h"
#include "analysis/report/units.h"
#include "util/esc.h"

/* The figures compared, each as the table's row has it. */
enum fig { FIG_PEAK, FIG_LEAKED, FIG_FAILED, FIG_NCCL, NFIG };

static const char *const fig_key[NFIG] = {"peak_held_bytes", "leaked_bytes", "failed_allocations",
					  "nccl_at_peak_bytes"};

static uint64_t
fig(const struct gmt_rank_row *r, enum fig f)
{
	switch (f) {
	case FIG_PEAK: return r->peak_bytes;
	case FIG_LEAKED: return r->leaked_bytes;
	case FIG_FAILED: return r->failed;
	default: return r->nccl_at_peak;
	}
}

struct pair {
	const struct gmt_rank_row *a, *b; /* either NULL: only in one run */
	uint64_t weight;		  /* the largest change of its byte figures */
};

static uint64_t
absdiff(uint64_t x, uint64_t y)
{
	return x > y ? x - y : y - x;
}

static int
cmp_pair(const void *p, const void *q)
{
	const struct pair *x = p, *y = q;
	const struct gmt_rank_row *rx = x->a ? x->a : x->b, *ry = y->a ? y->a : y->b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if ((rx->rank < 0) != (ry->rank < 0))
		return rx->rank < 0 ? 1 : -1;
	return (rx->rank > ry->rank) - (rx->rank < ry->rank);
}

/* Each run is one process without a RANK (a single-process job, summarized each time): the two
 * are the same job's one process, compared with each other (its pid differs from run to run, so
 * nothing else could match them). */
static bool
single_processes(const struct gmt_ranks *a, const struct gmt_ranks *b)
{
	return a->n == 1 && b->n == 1 && a->v[0].rank < 0 && b->v[0].rank < 0;
}

/* The pairs of two settled tables (sorted by rank), largest change first. NULL: no memory. */
static struct pair *
pairs_of(const struct gmt_ranks *a, const struct gmt_ranks *b, size_t *n)
{
	struct pair *v = calloc(a->n + b->n + 1, sizeof(*v));
	size_t i = 0, k = 0, m = 0;

	if (!v)
		return NULL;
	if (single_processes(a, b)) {
		v[m++] = (struct pair){&a->v[0], &b->v[0], 0};
		i = k = 1;
	}
	while (i < a->n || k < b->n) {
		const struct gmt_rank_row *x = i < a->n ? &a->v[i] : NULL;
		const struct gmt_rank_row *y = k < b->n ? &b->v[k] : NULL;

		if (x && y && x->rank >= 0 && x->rank == y->rank) {
			v[m++] = (struct pair){x, y, 0};
			i++;
			k++;
		} else if (x && (!y || x->rank < 0 || (y->rank >= 0 && x->rank < y->rank))) {
			v[m++] = (struct pair){x, NULL, 0};
			i++;
		} else {
			v[m++] = (struct pair){NULL, y, 0};
			k++;
		}
	}
	for (size_t j = 0; j < m; j++) {
		uint64_t w = 0;

		for (int f = 0; f < NFIG; f++) {
			uint64_t d =
			    absdiff(v[j].a ? fig(v[j].a, f) : 0, v[j].b ? fig(v[j].b, f) : 0);
			if (f != FIG_FAILED && d > w)
				w = d;
		}
		v[j].weight = w;
	}
	if (m > 1)
		qsort(v, m, sizeof(*v), cmp_pair);
	*n = m;
	return v;
}

static json_t *
side(const struct gmt_rank_row *r)
{
	json_t *o;

	if (!r)
		return json_null();
	o = json_object();
	json_object_set_new(o, "host", r->host ? json_string(r->host) : json_null());
	json_object_set_new(o, "pid", r->pid >= 0 ? json_integer(r->pid) : json_null());
	for (int f = 0; f < NFIG; f++)
		json_object_set_new(o, fig_key[f], json_integer((json_int_t)fig(r, f)));
	return o;
}

json_t *
gmt_ranks_diff_json(const struct gmt_ranks *a, const struct gmt_ranks *b)
{
	size_t n, both = 0;
	struct pair *v = pairs_of(a, b, &n);
	json_t *doc, *rows;

	if (!v)
		return NULL;
	doc = json_object();
	rows = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct gmt_rank_row *r = v[i].a ? v[i].a : v[i].b;
		json_t *o = json_object();

		both += v[i].a && v[i].b;
		json_object_set_new(o, "rank", r->rank >= 0 ? json_integer(r->rank) : json_null());
		json_object_set_new(o, "base", side(v[i].a));
		json_object_set_new(o, "new", side(v[i].b));
		if (v[i].a && v[i].b) {
			json_t *ch = json_object();
			for (int f = 0; f < NFIG; f++)
				json_object_set_new(ch, fig_key[f],
						    json_integer((json_int_t)fig(v[i].b, f) -
								 (json_int_t)fig(v[i].a, f)));
			json_object_set_new(o, "change", ch);
		} else {
			json_object_set_new(o, "change", json_null());
		}
		json_array_append_new(rows, o);
	}
	json_object_set_new(doc, "kind", json_string("ranks"));
	json_object_set_new(doc, "matched_by",
			    json_string(single_processes(a, b) ? "single_process" : "rank"));
	json_object_set_new(doc, "ranks_in_both", json_integer((json_int_t)both));
	json_object_set_new(doc, "ranks_only_in_base", json_integer((json_int_t)(a->n - both)));
	json_object_set_new(doc, "ranks_only_in_new", json_integer((json_int_t)(b->n - both)));
	json_object_set_new(doc, "base_lost_traces", gmt_ranks_lost_json(a));
	json_object_set_new(doc, "new_lost_traces", gmt_ranks_lost_json(b));
	json_object_set_new(doc, "ranks", rows);
	free(v);
	return doc;
}

/* "a -> b (+d)" of one figure, in bytes or (failures) a count. */
static void
change_text(FILE *out, uint64_t x, uint64_t y, bool bytes)
{
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];
	uint64_t d = absdiff(x, y);

	if (!bytes) {
		fprintf(out, "%" PRIu64 " -> %" PRIu64, x, y);
		return;
	}
	fprintf(out, "%s -> %s", gmt_format_bytes(x, b1), gmt_format_bytes(y, b2));
	if (d)
		fprintf(out, " (%c%s)", y > x ? '+' : '-', gmt_format_bytes(d, b3));
}

int
gmt_ranks_diff_text(FILE *out, const struct gmt_ranks *a, const struct gmt_ranks *b, size_t top)
{
	size_t n, both = 0, shown = 0;
	struct pair *v = pairs_of(a, b, &n);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		both += v[i].a && v[i].b;
	if (single_processes(a, b))
		fprintf(out,
			"gpumemtrace diff: each run is one process without a RANK: compared with "
			"each other\n");
	else
		fprintf(
		    out,
		    "gpumemtrace diff: rank by rank (matched by RANK): %zu in both, %zu only in "
		    "BASE, %zu only in NEW\n",
		    both, a->n - both, b->n - both);
	gmt_ranks_lost_text(out, a, "BASE");
	gmt_ranks_lost_text(out, b, "NEW");
	fprintf(out, "Ranks, largest change first%s:\n", top && n > top ? " (--top)" : "");
	for (size_t i = 0; i < n && (!top || shown < top); i++, shown++) {
		const struct gmt_rank_row *r = v[i].a ? v[i].a : v[i].b;

		fprintf(out, "  %s: ", gmt_rank_name(r));
		if (!v[i].a || !v[i].b) {
			char b1[GMT_BYTES_BUF];
			fprintf(out, "only in %s (peak %s)\n", v[i].a ? "BASE" : "NEW",
				gmt_format_bytes(r->peak_bytes, b1));
			continue;
		}
		fprintf(out, "peak ");
		change_text(out, v[i].a->peak_bytes, v[i].b->peak_bytes, true);
		fprintf(out, "; leaked ");
		change_text(out, v[i].a->leaked_bytes, v[i].b->leaked_bytes, true);
		fprintf(out, "; failed ");
		change_text(out, v[i].a->failed, v[i].b->failed, false);
		fprintf(out, "; NCCL at peak ");
		change_text(out, v[i].a->nccl_at_peak, v[i].b->nccl_at_peak, true);
		fprintf(out, "\n");
	}
	if (shown < n)
		fprintf(out, "  ... %zu more ranks (--top 0: all)\n", n - shown);
	free(v);
	return ferror(out) ? -EIO : 0;
}
