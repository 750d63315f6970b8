/*
 * @brief The text report's analyses: why allocations failed, sites that keep growing, churn and
 * temporaries, fragmentation, and the time range (report_text.h).
 *
 * Each section is a few lines, the answer first; docs/report-json.md has every figure in full.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/frames.h"
#include "analysis/report/report.h"
#include "analysis/report/report_text.h"
#include "analysis/report/sites.h"
#include "analysis/report/textfmt.h"
#include "analysis/report/units.h"
#include "util/esc.h"

#define TEXT_OOM_MAX 3
#define TEXT_GROWTH_MAX 5
#define TEXT_CHURN_MAX 5

/* "train.py:42 in step", "step [libfoo.so]", "libfoo.so+0x1234", or "an unknown call site". */
static void
site_text(const struct gmt_process *p, uint32_t stack, char *buf, size_t size)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, stack);
	const struct gmt_cframe *f = gmt_cstack_site(cs);

	if (!f) {
		snprintf(buf, size, "an unknown call site (stack %" PRIu32 ")", stack);
		return;
	}
	gmt_cframe_text(f, buf, size);
	if (cs->pystate == GMT_PYSTATE_EMPTY) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, " %s", GMT_PYSTATE_EMPTY_LABEL);
	}
}

static void
process_note(const struct gmt_model *m, size_t n, char *buf, size_t size)
{
	char pid[64];

	buf[0] = '\0';
	if (n > 1) {
		gmt_text_process_name(m->trace, pid, sizeof(pid));
		snprintf(buf, size, " in pid %s", pid);
	}
}

void
gmt_text_range(FILE *out, const struct gmt_process *procs, size_t n)
{
	const struct gmt_model *m = n ? procs[0].model : NULL;

	if (!m || (!m->range.from.set && !m->range.to.set))
		return;
	fprintf(out, "range: from %s to %s",
		m->range.from.set ? gmt_esc(m->range.from.spec) : "the start",
		m->range.to.set ? gmt_esc(m->range.to.spec) : "the end");
	if (m->range.from.set && !m->range_from.found)
		fprintf(out, " (the start was not found in the trace: nothing is counted)");
	else if (m->range.from.set)
		fprintf(out, " (%.3f s", gmt_trace_time_s(m->trace, m->range_from.ts));
	if (m->range.from.set && m->range_from.found)
		fprintf(out, m->range.to.set && m->range_to.found ? " to %.3f s)" : ")",
			gmt_trace_time_s(m->trace, m->range_to.ts));
	fprintf(out, "; allocations live at its start are the starting state, not leaks\n");
}

void
gmt_text_oom(FILE *out, const struct gmt_process *procs, size_t n)
{
	size_t shown = 0, total = 0, probes = 0, recovered = 0;

	for (size_t i = 0; i < n; i++) {
		total += procs[i].model->nfailed;
		probes += procs[i].model->nprobes;
		recovered += procs[i].model->nrecovered;
	}
	if (!total)
		return;
	fprintf(out, "why allocations failed (%zu %s", total,
		gmt_text_plural(total, "failure", "failures"));
	if (probes || recovered) {
		fprintf(out, "; not counted: ");
		if (probes)
			fprintf(out, "%zu capability %s%s", probes,
				gmt_text_plural(probes, "probe", "probes"), recovered ? ", " : "");
		if (recovered)
			fprintf(out, "%zu recovered by the allocator's retry", recovered);
	}
	fprintf(out, "):\n");
	for (size_t i = 0; i < n && shown < TEXT_OOM_MAX; i++) {
		const struct gmt_model *m = procs[i].model;

		for (size_t k = 0; k < m->nfailed && shown < TEXT_OOM_MAX; k++, shown++) {
			const struct gmt_oom *o = &m->oom[k];
			char text[2048], call[160], b[GMT_BYTES_BUF], proc[96];
			enum gmt_oom_cause cause =
			    gmt_oom_explain(&procs[i], o, text, sizeof(text));

			gmt_report_call(m->trace, o->ev->api, o->ev->driver, call, sizeof(call));
			process_note(m, n, proc, sizeof(proc));
			enum gmt_fail_class fc = gmt_model_fail_class(m, k);

			fprintf(out, "  %s %s on device %d at %.3f s%s [%s%s]:\n    %s\n", call,
				gmt_format_bytes(o->ev->size, b), o->ev->device,
				gmt_trace_time_s(m->trace, o->ev->ts), proc,
				gmt_oom_cause_name(cause),
				fc == GMT_FAIL_RECOVERED ? ", recovered" : "", gmt_esc(text));
		}
	}
	if (total > shown)
		fprintf(out, "  ... %zu more (report --format json: oom[])\n", total - shown);
}

/* The stacks of a call-site group: "" for one, " (2 stacks)" for more. */
static void
stacks_note(const struct gmt_site *g, char *buf, size_t size)
{
	buf[0] = '\0';
	if (g->nstacks > 1)
		snprintf(buf, size, ", %zu stacks", g->nstacks);
}

void
gmt_text_growth(FILE *out, const struct gmt_process *procs, size_t n)
{
	size_t nitems;
	struct gmt_site_item *items = gmt_sites_stat_items(procs, n, GMT_SITES_GROWING, &nitems);
	struct gmt_sites sites;

	gmt_sites_group(items, nitems, GMT_GROUP_BY_BYTES, &sites);
	if (sites.n)
		fprintf(out,
			"growing: %zu call %s whose live bytes keep rising (a reference kept "
			"every iteration?):\n",
			sites.n, gmt_text_plural(sites.n, "site", "sites"));
	for (size_t i = 0; i < sites.n && i < TEXT_GROWTH_MAX; i++) {
		const struct gmt_site *g = &sites.v[i];
		const struct gmt_model *m = g->p->model;
		bool markers = m->marker_samples >= 2;
		uint32_t samples = markers ? m->marker_samples : m->snapshot_samples;
		uint32_t lo, hi;
		struct gmt_growth sum = gmt_site_group_growth(g, &lo, &hi);
		char site[512], b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF], proc[96];
		char rises[32], stacks[32];

		site_text(g->p, g->stacks[0].stack, site, sizeof(site));
		process_note(m, n, proc, sizeof(proc));
		stacks_note(g, stacks, sizeof(stacks));
		if (lo == hi)
			snprintf(rises, sizeof(rises), "%" PRIu32, hi);
		else
			snprintf(rises, sizeof(rises), "%" PRIu32 "-%" PRIu32, lo, hi);
		fprintf(out,
			"  +%s (%s -> %s, rose in %s of %" PRIu32 " intervals between %s%s)"
			" at %s%s\n",
			gmt_format_bytes(sum.last - sum.first, b1), gmt_format_bytes(sum.first, b2),
			gmt_format_bytes(sum.last, b3), rises, samples - 1,
			!markers				  ? "snapshots"
			: m->growth_basis == GMT_BASIS_AUTO_STEPS ? gmt_text_auto_steps(m->trace)
			: m->growth_basis == GMT_BASIS_RANGE_ENDS ? "ends of outermost ranges"
								  : "markers",
			stacks, gmt_esc(site), proc);
	}
	if (sites.n > TEXT_GROWTH_MAX)
		fprintf(out, "  ... %zu more (report --format json: growth_sites[])\n",
			sites.n - TEXT_GROWTH_MAX);
	gmt_sites_free(&sites);
	free(items);
}

void
gmt_text_churn(FILE *out, const struct gmt_process *procs, size_t n)
{
	size_t nitems, shown = 0;
	struct gmt_site_item *items = gmt_sites_stat_items(procs, n, GMT_SITES_BUSIEST, &nitems);
	struct gmt_sites sites;

	gmt_sites_group(items, nitems, GMT_GROUP_BY_COUNT, &sites);
	/* a site that allocated once is not churn */
	for (size_t i = 0; i < sites.n && shown < TEXT_CHURN_MAX && sites.v[i].count >= 2;
	     i++, shown++) {
		const struct gmt_site *g = &sites.v[i];
		struct gmt_site_stats sum = gmt_site_group_traffic(g);
		char site[512], b[GMT_BYTES_BUF], proc[96], stacks[32];

		if (shown == 0)
			fprintf(out,
				"churn (call sites by allocations; temporaries: freed before the "
				"next allocation):\n");
		site_text(g->p, g->stacks[0].stack, site, sizeof(site));
		process_note(g->p->model, n, proc, sizeof(proc));
		stacks_note(g, stacks, sizeof(stacks));
		fprintf(out, "  %" PRIu64 " allocations (%s), %" PRIu64 " temporaries",
			sum.allocations, gmt_format_bytes(sum.allocated_bytes, b), sum.temporaries);
		if (sum.frees)
			fprintf(out, ", median lifetime %.3g s",
				(double)gmt_site_median_lifetime(&sum) / 1e9);
		fprintf(out, "%s at %s%s\n", stacks, gmt_esc(site), proc);
	}
	gmt_sites_free(&sites);
	free(items);
}

/* " 5 live device allocations span 12.0 MiB with 2.0 MiB in 3 holes (largest 1.0 MiB);" */
static void
gaps_text(FILE *out, const struct gmt_gaps *g)
{
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];

	fprintf(out, " %" PRIu64 " live %s %s span %s", g->live_allocations,
		gmt_kind_str((enum gmt_tkind)g->kind),
		gmt_text_plural(g->live_allocations, "allocation", "allocations"),
		gmt_format_bytes(g->span, b1));
	if (g->ranges > 1)
		fprintf(out, " in %" PRIu64 " address ranges", g->ranges);
	fprintf(out, " with %s in %" PRIu64 " %s (largest %s)", gmt_format_bytes(g->gap_bytes, b2),
		g->gaps, gmt_text_plural(g->gaps, "hole", "holes"),
		gmt_format_bytes(g->largest_gap, b3));
}

void
gmt_text_fragmentation(FILE *out, const struct gmt_process *procs, size_t n)
{
	bool header = false;

	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

		for (size_t k = 0; k < m->ndevices; k++) {
			const struct gmt_device_stats *d = &m->devices[k];
			const struct gmt_gaps *g = &d->peak_gaps;
			char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], proc[96];

			if (!(g->valid && g->gaps) && !d->max_pool_slack && !d->requested_allocs)
				continue;
			if (!header)
				fprintf(out, "fragmentation:\n");
			header = true;
			process_note(m, n, proc, sizeof(proc));
			fprintf(out, "  device %d%s:", d->device, proc);
			/* the parts separated by "; ", the line ending with the last */
			const char *sep = "";
			/* Each kind's addresses on their own: a span across kinds means nothing. */
			if (g->valid && g->gaps) {
				fprintf(out, " at the peak");
				for (int kind = 0; kind < GMT_TK_COUNT; kind++)
					if (d->peak_gaps_kind[kind].valid &&
					    d->peak_gaps_kind[kind].gaps) {
						fputs(sep, out);
						gaps_text(out, &d->peak_gaps_kind[kind]);
						sep = ";";
					}
			}
			if (d->max_pool_slack) {
				fprintf(
				    out,
				    "%s pools held up to %s more than their live allocations at "
				    "%.3f s",
				    sep, gmt_format_bytes(d->max_pool_slack, b1),
				    gmt_trace_time_s(m->trace, d->max_pool_slack_ts));
				sep = ";";
			}
			if (d->requested_allocs)
				fprintf(out, "%s pitched allocations asked %s, got %s", sep,
					gmt_format_bytes(d->requested_bytes, b1),
					gmt_format_bytes(d->requested_granted, b2));
			fprintf(out, "\n");
		}
	}
}
