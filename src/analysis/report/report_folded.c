/*
 * @brief Folded stacks (`gpumemtrace report --format folded`): the input of flamegraph.pl,
 * inferno-flamegraph and speedscope.
 *
 * One line per distinct stack, `outer;...;inner WEIGHT`, the weight in bytes. The frames are the
 * symbolized stack as the text report shows it (Python spliced in, CUDA-internal frames at the
 * innermost end and interpreter glue left out), then the allocating call, and the driver call
 * under it when the trace names one. A stack of a thread with Python but no Python frames starts
 * with GMT_PYSTATE_EMPTY_LABEL. A ';' inside a name is written \073. Lines are sorted, so two
 * reports of the same traces are identical.
 */
#define _GNU_SOURCE
#include "analysis/report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/frames.h"
#include "analysis/report/nomem.h"
#include "analysis/report/sites.h"
#include "util/alloc.h"
#include "util/esc.h"

struct folded {
	char *stack;
	uint64_t weight;
};

struct fold_set {
	struct folded *v;
	size_t n, cap;
};

/* A growing string. */
struct sbuf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void
sb_add(struct sbuf *b, const char *str)
{
	size_t len = strlen(str);

	if (b->n + len + 1 > b->cap) {
		char *p = gmt_realloc_array(b->s, (b->n + len + 1) * 2, 1);

		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = (b->n + len + 1) * 2;
	}
	memcpy(b->s + b->n, str, len + 1);
	b->n += len;
}

/* One frame after the ones before it, escaped as the text report escapes names (gmt_esc()). A
 * ';' in its name (a path, a forged trace's API name) would split it in two for every
 * flame-graph tool, which has no escape for it: it is written as ls -b writes an escaped byte,
 * \073, as the names' other escapes are. */
static void
sb_frame(struct sbuf *b, const char *frame)
{
	if (b->n)
		sb_add(b, ";");
	frame = gmt_esc(frame);
	for (const char *semi; (semi = strchr(frame, ';')) != NULL; frame = semi + 1) {
		char part[256];
		size_t n = (size_t)(semi - frame);

		while (n > 0) { /* the part before it, in pieces that fit */
			size_t k = n < sizeof(part) - 1 ? n : sizeof(part) - 1;
			memcpy(part, frame, k);
			part[k] = '\0';
			sb_add(b, part);
			frame += k;
			n -= k;
		}
		sb_add(b, "\\073");
	}
	sb_add(b, frame);
}

/* The folded line of one (stack, call) of @p m. */
static char *
fold_stack(const struct gmt_process *p, uint32_t stack, uint16_t api, uint16_t driver)
{
	const struct gmt_model *m = p->model;
	const struct gmt_cstack *cs = gmt_process_stack(p, stack);
	const char *drv = gmt_trace_driver(m->trace, driver);
	struct sbuf b = {0};
	char frame[1024];

	if (!cs) {
		if (stack)
			snprintf(frame, sizeof(frame), "[stack %" PRIu32 " not in the trace]",
				 stack);
		else
			snprintf(frame, sizeof(frame), "[no stack]");
		sb_frame(&b, frame);
	} else {
		if (cs->pystate == GMT_PYSTATE_EMPTY)
			sb_frame(&b, GMT_PYSTATE_EMPTY_LABEL);
		for (uint32_t i = cs->nframes; i-- > 0;) {
			const struct gmt_cframe *f = gmt_cstack_frame(cs, i);

			if (f->hidden)
				continue;
			gmt_cframe_folded(f, frame, sizeof(frame));
			sb_frame(&b, frame);
		}
	}
	sb_frame(&b, gmt_trace_string(m->trace, api));
	if (drv)
		sb_frame(&b, drv);
	if (b.oom) {
		free(b.s);
		return gmt_nomem();
	}
	return b.s;
}

static void
fold_add(struct fold_set *f,
	 const struct gmt_process *p,
	 uint32_t stack,
	 uint16_t api,
	 uint16_t driver,
	 uint64_t weight)
{
	char *line;

	if (!weight)
		return;
	if (gmt_grow(&f->v, &f->cap, f->n + 1, sizeof(*f->v), 256) != 0) {
		gmt_nomem();
		return;
	}
	if ((line = fold_stack(p, stack, api, driver)))
		f->v[f->n++] = (struct folded){line, weight};
}

static int
cmp_folded(const void *pa, const void *pb)
{
	const struct folded *a = pa, *b = pb;

	return strcmp(a->stack, b->stack);
}

/* Allocated bytes of counted kinds, per (stack, call), summed over the whole trace. */
struct alloc_key {
	uint32_t stack;
	uint16_t api, driver;
	uint64_t bytes;
};

static int
cmp_alloc_key(const void *pa, const void *pb)
{
	const struct alloc_key *a = pa, *b = pb;

	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	if (a->api != b->api)
		return a->api < b->api ? -1 : 1;
	return a->driver < b->driver ? -1 : a->driver > b->driver;
}

/* Bytes allocated per (stack, call), counted kinds, from the model's site table. */
static void
fold_allocated(struct fold_set *f, const struct gmt_process *p)
{
	const struct gmt_model *m = p->model;
	struct alloc_key *k = gmt_realloc_array(NULL, m->nsites + 1, sizeof(*k));
	size_t n = 0;

	if (!k) {
		gmt_nomem();
		return;
	}
	for (size_t i = 0; i < m->nsites; i++) {
		const struct gmt_site_stats *st = &m->sites[i];

		if (!st->allocated_bytes || !gmt_kind_counted((enum gmt_tkind)st->kind))
			continue;
		k[n++] = (struct alloc_key){st->stack, st->api, st->driver, st->allocated_bytes};
	}
	qsort(k, n, sizeof(*k), cmp_alloc_key);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t sum = 0;

		for (; j < n && cmp_alloc_key(&k[i], &k[j]) == 0; j++)
			sum += k[j].bytes;
		fold_add(f, p, k[i].stack, k[i].api, k[i].driver, sum);
		i = j;
	}
	free(k);
}

int
gmt_report_folded(FILE *out, const struct gmt_process *procs, size_t n, enum gmt_fold_weight weight)
{
	struct fold_set f = {0};
	struct gmt_site_item *items = NULL;
	size_t nitems = 0;
	int rc = 0;

	gmt_report_start();
	if (weight == GMT_FOLD_PEAK)
		items = gmt_sites_peak_items(procs, n, &nitems);
	else if (weight == GMT_FOLD_LEAKED)
		items = gmt_sites_leak_items(procs, n, &nitems);
	for (size_t i = 0; i < nitems; i++) {
		if (weight == GMT_FOLD_LEAKED && !gmt_kind_counted((enum gmt_tkind)items[i].kind))
			continue;
		fold_add(&f, items[i].p, items[i].stack, items[i].api, items[i].driver,
			 items[i].bytes);
	}
	free(items);
	if (weight == GMT_FOLD_ALLOCATED)
		for (size_t i = 0; i < n; i++)
			fold_allocated(&f, &procs[i]);

	if (gmt_report_failed(procs, n)) {
		rc = -ENOMEM; /* nothing rather than a flame graph with stacks missing */
		goto out;
	}
	if (f.n > 1)
		qsort(f.v, f.n, sizeof(*f.v), cmp_folded);
	for (size_t i = 0; i < f.n;) {
		size_t j = i;
		uint64_t sum = 0;

		for (; j < f.n && strcmp(f.v[i].stack, f.v[j].stack) == 0; j++)
			sum += f.v[j].weight;
		/* one stack a line: a newline or ESC in a name must not break it (esc.h) */
		fprintf(out, "%s %" PRIu64 "\n", f.v[i].stack, sum); /* escaped frame by frame */
		i = j;
	}
	rc = ferror(out) ? -EIO : 0;
out:
	for (size_t i = 0; i < f.n; i++)
		free(f.v[i].stack);
	free(f.v);
	return rc;
}
