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

uint64_t
gmt_change_abs(const struct gmt_change *c)
{
	return c->after >= c->before ? (uint64_t)(c->after - c->before)
				     : (uint64_t)(c->before - c->after);
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
		*(after ? &x->peak.after : &x->peak.before) += (int64_t)gmt_json_u64(e, "bytes");
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
		*(after ? &x->leaked.after : &x->leaked.before) +=
		    (int64_t)(gmt_json_u64(e, GMT_RK_BYTES) - gmt_json_u64(e, GMT_RK_CACHED_BYTES));
	}
	return 0;
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
	if (add_run(d, base, false) != 0 || add_run(d, next, true) != 0)
		return -ENOMEM;
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
	*d = (struct gmt_diff){0};
}
