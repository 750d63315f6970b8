/*
 * @brief What changed between two runs (diff.h).
 */
#define _GNU_SOURCE
#include "analysis/gate/diff.h"
#include "analysis/gate/doc.h"
#include "analysis/report/keys.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const total_keys[GMT_DIFF_NTOTALS] = {
    [GMT_DIFF_PEAK_HELD] = GMT_RK_PEAK_HELD_BYTES,
    [GMT_DIFF_LEAKED] = GMT_RK_LEAKED_BYTES,
    [GMT_DIFF_FAILED] = GMT_RK_FAILED_ALLOCATIONS,
};

const char *
gmt_diff_total_key(enum gmt_diff_total k)
{
	return k < GMT_DIFF_NTOTALS ? total_keys[k] : NULL;
}

static const char *const tensor_keys[GMT_DIFF_NTENSOR] = {
    [GMT_DIFF_T_PEAK] = "peak_allocated",
    [GMT_DIFF_T_LIVE_END] = GMT_RK_LIVE_AT_EXIT,
};

const char *
gmt_diff_tensor_key(enum gmt_diff_tensor_total k)
{
	return k < GMT_DIFF_NTENSOR ? tensor_keys[k] : NULL;
}

uint64_t
gmt_change_abs(const struct gmt_change *c)
{
	return c->after >= c->before ? (uint64_t)(c->after - c->before)
				     : (uint64_t)(c->before - c->after);
}

/*
 * *@p to += @p v, held at INT64_MAX: a report's figures are at most that (a damaged trace's sizes
 * make them so), and two of them must not wrap into a negative change.
 */
static void
add_bytes(int64_t *to, uint64_t v)
{
	*to = v > (uint64_t)(INT64_MAX - *to) ? INT64_MAX : *to + (int64_t)v;
}

/* The site of @p entry in @p d, added when new; NULL out of memory. */
static struct gmt_diff_site *
site_for(struct gmt_diff *d, const json_t *entry)
{
	const char *api = json_string_value(json_object_get(entry, GMT_RK_API));
	const char *kind = json_string_value(json_object_get(entry, GMT_RK_KIND));
	json_t *frame = json_object_get(entry, GMT_RK_SITE);
	struct gmt_diff_site *v, *x;
	char text[768], *key;

	gmt_site_text(frame, text, sizeof(text));
	if (asprintf(&key, "%s\t%s\t%s", text, api ? api : "", kind ? kind : "") < 0)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].key, key) == 0) {
			free(key);
			return &d->v[i];
		}
	v = realloc(d->v, (d->n + 1) * sizeof(*v));
	if (!v) {
		free(key);
		return NULL;
	}
	d->v = v;
	x = &v[d->n];
	*x = (struct gmt_diff_site){
	    .key = key,
	    .api = strdup(api ? api : ""),
	    .kind = strdup(kind ? kind : ""),
	};
	if (!x->api || !x->kind) {
		free(x->api);
		free(x->kind);
		free(key);
		return NULL;
	}
	x->frame = json_is_object(frame) ? json_incref(frame) : NULL;
	d->n++;
	return x;
}

/* Add @p doc's peak_sites[] and counted leak_sites[] to @p d, as the before or the after. */
static int
add_run(struct gmt_diff *d, const json_t *doc, bool after)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(doc, GMT_RK_PEAK_SITES), i, e)
	{
		struct gmt_diff_site *x = site_for(d, e);

		if (!x)
			return -ENOMEM;
		add_bytes(after ? &x->peak.after : &x->peak.before, gmt_json_u64(e, "bytes"));
	}
	json_array_foreach(json_object_get(doc, GMT_RK_LEAK_SITES), i, e)
	{
		struct gmt_diff_site *x;

		/* The leaks summary.leaked_bytes counts (docs/report-json.md): not what a caching
		 * allocator held */
		if (!json_is_true(json_object_get(e, GMT_RK_AT_EXIT)) ||
		    !json_is_true(json_object_get(e, GMT_RK_COUNTED)) ||
		    gmt_json_u64(e, GMT_RK_CACHED_BYTES) >= gmt_json_u64(e, GMT_RK_BYTES))
			continue;
		if (!(x = site_for(d, e)))
			return -ENOMEM;
		add_bytes(after ? &x->leaked.after : &x->leaked.before,
			  gmt_json_u64(e, GMT_RK_BYTES) - gmt_json_u64(e, GMT_RK_CACHED_BYTES));
	}
	return 0;
}

// --- the tensor level -----------------------------------------------------------------------

/* The tensor site of @p row in @p d, added when new; NULL out of memory. */
static struct gmt_diff_tsite *
tsite_for(struct gmt_diff *d, const json_t *row)
{
	const char *site = json_string_value(json_object_get(row, GMT_RK_SITE));
	const json_t *callers = json_object_get(row, GMT_RK_CALLERS), *c;
	char *joined = strdup(""), *site_copy;
	size_t i;

	json_array_foreach(callers, i, c)
	{
		char *next;
		const char *text = json_string_value(c);
		if (!joined ||
		    asprintf(&next, "%s%s%s", joined, i ? " <- " : "", text ? text : "?") < 0) {
			free(joined);
			return NULL;
		}
		free(joined);
		joined = next;
	}
	if (!joined)
		return NULL;
	if (!site)
		site = "?";
	for (size_t k = 0; k < d->tn; k++)
		if (strcmp(d->tv[k].site, site) == 0 && strcmp(d->tv[k].callers, joined) == 0) {
			free(joined);
			return &d->tv[k];
		}
	struct gmt_diff_tsite *v = realloc(d->tv, (d->tn + 1) * sizeof(*v));
	if (!v || !(site_copy = strdup(site))) {
		if (v)
			d->tv = v;
		free(joined);
		return NULL;
	}
	d->tv = v;
	v[d->tn] = (struct gmt_diff_tsite){
	    .site = site_copy,
	    .callers = joined,
	    .callers_json = json_is_array(callers) ? json_incref((json_t *)callers) : json_array(),
	};
	return &v[d->tn++];
}

/* Add @p doc's tensor level (every process's) to @p d, as the before or the after. */
static int
add_tensors(struct gmt_diff *d, const json_t *doc, bool after)
{
	const json_t *proc, *row;
	size_t i, j;

	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, proc)
	{
		const json_t *t = json_object_get(proc, GMT_RK_TENSORS);
		if (!json_is_object(t))
			continue;
		d->tensors = true;
		uint64_t peak = gmt_json_u64(json_object_get(t, GMT_RK_PEAK), GMT_RK_ALLOCATED);
		struct gmt_change *tp = &d->tensor_totals[GMT_DIFF_T_PEAK];
		add_bytes(after ? &tp->after : &tp->before, peak);
		json_array_foreach(json_object_get(t, GMT_RK_PEAK_SITES), j, row)
		{
			struct gmt_diff_tsite *x = tsite_for(d, row);
			if (!x)
				return -ENOMEM;
			add_bytes(after ? &x->peak.after : &x->peak.before,
				  gmt_json_u64(row, GMT_RK_BYTES));
		}
		json_array_foreach(json_object_get(t, GMT_RK_LIVE_AT_EXIT), j, row)
		{
			struct gmt_diff_tsite *x = tsite_for(d, row);
			if (!x)
				return -ENOMEM;
			uint64_t b = gmt_json_u64(row, GMT_RK_BYTES);
			struct gmt_change *te = &d->tensor_totals[GMT_DIFF_T_LIVE_END];
			add_bytes(after ? &x->live_end.after : &x->live_end.before, b);
			add_bytes(after ? &te->after : &te->before, b);
		}
	}
	return 0;
}

static uint64_t
tweight(const struct gmt_diff_tsite *s)
{
	uint64_t p = gmt_change_abs(&s->peak), l = gmt_change_abs(&s->live_end);

	return p > l ? p : l;
}

static int
cmp_tsite(const void *a, const void *b)
{
	const struct gmt_diff_tsite *x = a, *y = b;
	uint64_t wx = tweight(x), wy = tweight(y);
	int c;

	if (wx != wy)
		return wx > wy ? -1 : 1;
	if ((c = strcmp(x->site, y->site)) != 0)
		return c;
	return strcmp(x->callers, y->callers);
}

/* The larger of a site's two changes: what orders the list. */
static uint64_t
weight(const struct gmt_diff_site *s)
{
	uint64_t p = gmt_change_abs(&s->peak), l = gmt_change_abs(&s->leaked);

	return p > l ? p : l;
}

/* Largest change first; equal changes by key, so the output never depends on qsort. */
static int
cmp_site(const void *a, const void *b)
{
	const struct gmt_diff_site *x = a, *y = b;
	uint64_t wx = weight(x), wy = weight(y);

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(x->key, y->key);
}

int
gmt_diff_run(struct gmt_diff *d, const json_t *base, const json_t *next)
{
	*d = (struct gmt_diff){0};
	for (size_t k = 0; k < GMT_DIFF_NTOTALS; k++)
		d->totals[k] = (struct gmt_change){
		    (int64_t)gmt_json_u64(json_object_get(base, GMT_RK_SUMMARY), total_keys[k]),
		    (int64_t)gmt_json_u64(json_object_get(next, GMT_RK_SUMMARY), total_keys[k]),
		};
	if (add_run(d, base, false) != 0 || add_run(d, next, true) != 0 ||
	    add_tensors(d, base, false) != 0 || add_tensors(d, next, true) != 0)
		return -ENOMEM;
	if (d->tn > 1)
		qsort(d->tv, d->tn, sizeof(*d->tv), cmp_tsite);
	while (d->tchanged < d->tn && tweight(&d->tv[d->tchanged]) > 0)
		d->tchanged++;
	if (d->n > 1) /* qsort() of NULL is undefined, even for 0 elements */
		qsort(d->v, d->n, sizeof(*d->v), cmp_site);
	while (d->changed < d->n && weight(&d->v[d->changed]) > 0)
		d->changed++;
	return 0;
}

void
gmt_diff_free(struct gmt_diff *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].key);
		free(d->v[i].api);
		free(d->v[i].kind);
		json_decref(d->v[i].frame);
	}
	free(d->v);
	for (size_t i = 0; i < d->tn; i++) {
		free(d->tv[i].site);
		free(d->tv[i].callers);
		json_decref(d->tv[i].callers_json);
	}
	free(d->tv);
	*d = (struct gmt_diff){0};
}
