/*
 * @brief The figures the report states first, summed over every process: peak, leaks (less
 * what caching allocators and CUDA libraries' handles keep at exit), failures, and what made the
 * traces incomplete.
 */
#include <string.h>

#include "analysis/report/report.h"
#include "util/sat.h"

static void
add_held(struct gmt_cached *to, const struct gmt_cached *from, int n)
{
	for (int k = 0; k < n; k++) {
		to[k].bytes = gmt_sat_add(to[k].bytes, from[k].bytes);
		to[k].allocations += from[k].allocations;
		to[k].entries += from[k].entries;
	}
}

static void
totals_add(struct gmt_totals *t, const struct gmt_process *p)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *tr = m->trace;

	t->events += gmt_model_events(m);
	t->dropped += tr->dropped;
	t->dropped_readings += tr->dropped_readings;
	t->bad_lines += tr->bad_lines;
	t->failed += m->nfailed_counted;
	if (m->tensors) /* an OOM of PyTorch's cache that no failed CUDA call counts */
		t->tensor_ooms += m->tensors->ooms_alone;
	t->probes += m->nprobes;
	t->recovered += m->nrecovered;
	t->unmatched_frees += m->unmatched_frees;
	t->failed_frees += m->failed_frees;
	t->reused_addresses += m->reused_addresses;
	t->unmatched_retains += m->unmatched_retains;
	if (tr->complete) {
		/* what a caching allocator keeps at exit is its cache, not a leak (explain.c) */
		struct gmt_cached c[GMT_CACHE_COUNT], l[GMT_LIB_COUNT];

		gmt_process_cached_at_end(p, c);
		gmt_process_library_at_end(p, l);
		add_held(t->cached, c, GMT_CACHE_COUNT);
		add_held(t->library, l, GMT_LIB_COUNT);
		/* a held live total (util/sat.h) stays held: it is no smaller than what is kept */
		t->leaked_bytes =
		    gmt_sat_add(t->leaked_bytes,
				gmt_sat_sub(gmt_sat_sub(m->live_end_bytes, c[GMT_CACHE_NONE].bytes),
					    l[GMT_LIB_NONE].bytes));
		t->leaked_allocations += m->live_end_allocations - c[GMT_CACHE_NONE].allocations -
					 l[GMT_LIB_NONE].allocations;
		t->leak_sites +=
		    m->live_end_sites - c[GMT_CACHE_NONE].entries - l[GMT_LIB_NONE].entries;
	} else {
		t->died++;
		t->live_at_end_bytes = gmt_sat_add(t->live_at_end_bytes, m->live_end_bytes);
		t->live_at_end_allocations += m->live_end_allocations;
		t->live_at_end_sites += m->live_end_sites;
	}
}

void
gmt_report_totals(const struct gmt_process *procs, size_t n, struct gmt_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->processes = n;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

		totals_add(t, &procs[i]);
		for (size_t d = 0; d < m->ndevices; d++) {
			if (m->devices[d].peak.bytes > t->peak_bytes) {
				t->peak_bytes = m->devices[d].peak.bytes;
				t->peak_model = m;
				t->peak_device = &m->devices[d];
			}
		}
	}
}
