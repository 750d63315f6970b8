/*
 * @brief The text report (`gpumemtrace report`, the default format) and `run`'s summary lines.
 *
 * Written for a person reading a terminal: the first lines say how much was read and what the
 * traces could see (coverage), the next lines answer "how much device memory at most, what was
 * never freed, what failed", and anything that makes those answers incomplete (dropped events, a
 * process that died, unreadable lines) is said before the numbers it affects. Sizes are binary
 * units; the JSON report has the exact bytes. The device sections are in report_devices.c.
 */
#include "analysis/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report_text.h"
#include "analysis/units.h"

const char *
gmt_text_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void
gmt_report_command(const struct gmt_trace *t, char *buf, size_t max)
{
	size_t len = 0;

	buf[0] = '\0';
	if (t->argc == 0) {
		snprintf(buf, max, "unknown command");
		return;
	}
	for (size_t i = 0; i < t->argc; i++) {
		int w = snprintf(buf + len, max - len, "%s%s", i ? " " : "", t->argv[i]);

		if (w < 0 || (size_t)w >= max - len) {
			/* Long command lines (a full torchrun invocation) are cut, visibly. */
			if (max > 4)
				strcpy(buf + max - 4, "...");
			return;
		}
		len += (size_t)w;
	}
}

void
gmt_report_call(const struct gmt_trace *t, uint16_t api, uint16_t driver, char *buf, size_t max)
{
	const char *drv = gmt_trace_driver(t, driver);

	if (drv)
		snprintf(buf, max, "%s → %s", gmt_trace_string(t, api), drv);
	else
		snprintf(buf, max, "%s", gmt_trace_string(t, api));
}

void
gmt_text_process_name(const struct gmt_trace *t, char *buf, size_t max)
{
	if (t->pid >= 0)
		snprintf(buf, max, "%lld", t->pid);
	else
		snprintf(buf, max, "? (%s)", t->path);
}

static void
print_died(FILE *out, const struct gmt_trace *t)
{
	char cmd[80];

	gmt_report_command(t, cmd, sizeof(cmd));
	if (t->pid >= 0)
		fprintf(out, "process %lld (%s)", t->pid, cmd);
	else
		fprintf(out, "the process of %s", t->path);
	fprintf(
	    out,
	    " did not exit normally: the trace ends at %.3f s; live allocations at that point are "
	    "reported, not leaks at exit\n",
	    gmt_trace_time_s(t, t->last_ts));
}

static void
print_process_row(FILE *out, const struct gmt_model *m)
{
	const struct gmt_trace *t = m->trace;
	const struct gmt_device_stats *top = NULL;
	char cmd[64], pid[64], b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	gmt_report_command(t, cmd, sizeof(cmd));
	gmt_text_process_name(t, pid, sizeof(pid));
	for (size_t d = 0; d < m->ndevices; d++)
		if (!top || m->devices[d].peak.bytes > top->peak.bytes)
			top = &m->devices[d];
	fprintf(out, "  pid %s", pid);
	if (t->has_rank && t->rank >= 0)
		fprintf(out, " rank %lld", t->rank);
	fprintf(out, ": %" PRIu64 " events", gmt_model_events(m));
	if (t->dropped)
		fprintf(out, ", %" PRIu64 " dropped", t->dropped);
	if (top && top->peak.bytes)
		fprintf(out, ", peak %s held on device %d", gmt_format_bytes(top->peak.bytes, b1),
			top->device);
	else
		fprintf(out, ", no device memory held");
	if (t->complete)
		fprintf(out, ", leaked %s at exit", gmt_format_bytes(m->live_end_bytes, b2));
	else
		fprintf(out, ", died at %.3f s with %s live", gmt_trace_time_s(t, t->last_ts),
			gmt_format_bytes(m->live_end_bytes, b2));
	if (m->nfailed)
		fprintf(out, ", %zu failed %s", m->nfailed,
			gmt_text_plural(m->nfailed, "allocation", "allocations"));
	fprintf(out, "  [%s]\n", cmd);
}

// --- coverage: what the traces could see --------------------------------------------------------

static bool
same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* "full (CUPTI): ..." and, when CUPTI was not used, why: one or two lines. */
static void
print_coverage_of(FILE *out, const struct gmt_trace *t)
{
	if (!t->coverage)
		fprintf(out, "unknown (the trace has no header saying it)\n");
	else if (strcmp(t->coverage, "full") == 0)
		fprintf(out, "full (CUPTI): runtime and driver API calls of the program and of "
			     "every library, static cudart and VMM included\n");
	else if (strcmp(t->coverage, "runtime API only") == 0)
		fprintf(out,
			"runtime API only (LD_PRELOAD of the shared libcudart): not seen are the "
			"driver API (cuMemAlloc, cuMemCreate/cuMemMap as used by PyTorch's "
			"expandable segments and NCCL) and programs or libraries that link cudart "
			"statically (nvcc's default, cuBLAS, cuDNN, NCCL)\n");
	else
		fprintf(out, "%s\n", t->coverage);
	if (t->coverage_reason)
		fprintf(out, "  why not CUPTI: %s\n", t->coverage_reason);
}

static void
print_coverage(FILE *out, struct gmt_model *const *models, size_t n)
{
	bool same = true;
	char pid[64];

	for (size_t i = 1; i < n; i++) {
		const struct gmt_trace *a = models[0]->trace, *b = models[i]->trace;

		if (!same_str(a->coverage, b->coverage) ||
		    !same_str(a->coverage_reason, b->coverage_reason))
			same = false;
	}
	if (same) {
		fprintf(out, "coverage: ");
		print_coverage_of(out, models[0]->trace);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		gmt_text_process_name(models[i]->trace, pid, sizeof(pid));
		fprintf(out, "coverage of pid %s: ", pid);
		print_coverage_of(out, models[i]->trace);
	}
}

// --- live at the end: leaks, or the state of a process that died --------------------------------

struct site_row {
	size_t proc;
	size_t idx;
	const struct gmt_model *m;
	const struct gmt_leak *l;
};

static int
cmp_site_row(const void *pa, const void *pb)
{
	const struct site_row *a = pa, *b = pb;

	if (a->l->bytes != b->l->bytes)
		return a->l->bytes > b->l->bytes ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void
print_site(FILE *out, const struct site_row *row, bool several)
{
	const struct gmt_trace *t = row->m->trace;
	const struct gmt_leak *l = row->l;
	const struct gmt_trace_stack *st = gmt_trace_stack(t, l->stack);
	char b[GMT_BYTES_BUF], pid[64], call[160];

	gmt_report_call(t, l->api, l->driver, call, sizeof(call));
	fprintf(out, "  %s  %" PRIu64 " %s  %s  %s  ", gmt_format_bytes(l->bytes, b),
		l->allocations, gmt_text_plural(l->allocations, "allocation", "allocations"), call,
		gmt_kind_str((enum gmt_tkind)l->kind));
	if (st && st->nframes)
		fprintf(out, "at 0x%" PRIx64 " (stack %" PRIu32, st->frames[0], l->stack);
	else if (l->stack)
		fprintf(out, "at an unknown call site (stack %" PRIu32 " not in the trace",
			l->stack);
	else
		fprintf(out, "at an unknown call site (no stack");
	if (several) {
		gmt_text_process_name(t, pid, sizeof(pid));
		fprintf(out, ", pid %s", pid);
	}
	fprintf(out, ")\n");
}

/*
 * The sites of the processes whose trace is (or is not) @p complete, of counted kinds (or of the
 * others), largest first. Returns how many there were.
 */
static size_t
print_sites(FILE *out, struct gmt_model *const *models, size_t n, bool complete, bool counted)
{
	struct site_row *rows = NULL;
	size_t nrows = 0, cap = 0;
	uint64_t rest_bytes = 0;
	char b[GMT_BYTES_BUF];

	for (size_t i = 0; i < n; i++) {
		if (models[i]->trace->complete != complete)
			continue;
		for (size_t k = 0; k < models[i]->nleaks; k++) {
			const struct gmt_leak *l = &models[i]->leaks[k];

			if (gmt_kind_counted((enum gmt_tkind)l->kind) != counted)
				continue;
			if (nrows == cap) {
				cap = cap ? cap * 2 : 16;
				rows = realloc(rows, cap * sizeof(*rows));
				if (!rows)
					abort();
			}
			rows[nrows++] = (struct site_row){i, k, models[i], l};
		}
	}
	if (nrows > 1)
		qsort(rows, nrows, sizeof(*rows), cmp_site_row);
	if (nrows && !counted)
		fprintf(out,
			"%s, not counted as memory (address space, views, other processes' "
			"memory, host memory locked in place):\n",
			complete ? "also not freed at exit" : "also live when the trace ends");
	for (size_t r = 0; r < nrows; r++) {
		if (r < GMT_REPORT_MAX_ROWS)
			print_site(out, &rows[r], n > 1);
		else
			rest_bytes += rows[r].l->bytes;
	}
	if (nrows > GMT_REPORT_MAX_ROWS)
		fprintf(out, "  ... and %zu more call sites with %s (see --format json)\n",
			nrows - GMT_REPORT_MAX_ROWS, gmt_format_bytes(rest_bytes, b));
	free(rows);
	return nrows;
}

/* Whether a process whose trace is (or is not) @p complete left anything live, of any kind. */
static bool
any_live(struct gmt_model *const *models, size_t n, bool complete)
{
	for (size_t i = 0; i < n; i++)
		if (models[i]->trace->complete == complete && models[i]->nleaks)
			return true;
	return false;
}

static void
print_leaks(FILE *out, struct gmt_model *const *models, size_t n, const struct gmt_totals *tot)
{
	char b[GMT_BYTES_BUF];

	if (tot->processes > tot->died) {
		if (tot->leak_sites == 0 && !any_live(models, n, true))
			fprintf(out, "leaked at exit: nothing (every allocation was freed)\n");
		else if (tot->leak_sites == 0)
			fprintf(out, "leaked at exit: no memory\n");
		else
			fprintf(
			    out, "leaked at exit: %s in %" PRIu64 " %s from %zu call %s\n",
			    gmt_format_bytes(tot->leaked_bytes, b), tot->leaked_allocations,
			    gmt_text_plural(tot->leaked_allocations, "allocation", "allocations"),
			    tot->leak_sites, gmt_text_plural(tot->leak_sites, "site", "sites"));
		print_sites(out, models, n, true, true);
		print_sites(out, models, n, true, false);
	}
	if (tot->died) {
		if (tot->live_at_end_sites == 0 && !any_live(models, n, false))
			fprintf(out, "live when the trace ends: nothing\n");
		else if (tot->live_at_end_sites == 0)
			fprintf(out, "live when the trace ends: no memory\n");
		else
			fprintf(out,
				"live when the trace ends (process died, not leaks): %s in %" PRIu64
				" %s from %zu call %s\n",
				gmt_format_bytes(tot->live_at_end_bytes, b),
				tot->live_at_end_allocations,
				gmt_text_plural(tot->live_at_end_allocations, "allocation",
						"allocations"),
				tot->live_at_end_sites,
				gmt_text_plural(tot->live_at_end_sites, "site", "sites"));
		print_sites(out, models, n, false, true);
		print_sites(out, models, n, false, false);
	}
}

// --- failed allocations -------------------------------------------------------------------------

static void
print_failed_one(
    FILE *out, const struct gmt_model *m, const struct gmt_trace_event *ev, bool when, bool several)
{
	const struct gmt_trace *t = m->trace;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF], pid[64], call[160];

	gmt_report_call(t, ev->api, ev->driver, call, sizeof(call));
	fprintf(out, "%s %s on device %d", call, gmt_format_bytes(ev->size, b1), ev->device);
	if (when)
		fprintf(out, " at %.3f s (seq %" PRIu64 ")", gmt_trace_time_s(t, ev->ts), ev->seq);
	if (several) {
		gmt_text_process_name(t, pid, sizeof(pid));
		fprintf(out, " in pid %s", pid);
	}
	if (ev->flags & GMT_TEV_MEMINFO)
		fprintf(out, ": %s free of %s", gmt_format_bytes(ev->free_bytes, b2),
			gmt_format_bytes(ev->total_bytes, b3));
	/* 2 is cudaErrorMemoryAllocation (and CUDA_ERROR_OUT_OF_MEMORY): any other code is worth
	 * showing. */
	if (ev->result != 2)
		fprintf(out, " (error %d)", ev->result);
}

static void
print_failed(FILE *out, struct gmt_model *const *models, size_t n, size_t total)
{
	size_t shown = 0;

	if (total == 0)
		return;
	if (total == 1) {
		for (size_t i = 0; i < n; i++) {
			if (models[i]->nfailed) {
				fprintf(out, "failed allocations: 1 (");
				print_failed_one(out, models[i], models[i]->failed[0], false,
						 n > 1);
				fprintf(out, ")\n");
			}
		}
		return;
	}
	fprintf(out, "failed allocations: %zu\n", total);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < models[i]->nfailed && shown < GMT_REPORT_MAX_ROWS; k++) {
			fprintf(out, "  ");
			print_failed_one(out, models[i], models[i]->failed[k], true, n > 1);
			fprintf(out, "\n");
			shown++;
		}
	}
	if (total > shown)
		fprintf(out, "  ... and %zu more (see --format json)\n", total - shown);
}

// --- the report ---------------------------------------------------------------------------------

static void
print_warnings(FILE *out, struct gmt_model *const *models, size_t n, const struct gmt_totals *tot)
{
	if (tot->dropped)
		fprintf(out,
			"warning: %" PRIu64
			" %s dropped by the tracer (its ring buffer was full): the "
			"numbers below are incomplete\n",
			tot->dropped, gmt_text_plural(tot->dropped, "event was", "events were"));
	if (tot->bad_lines)
		fprintf(out,
			"warning: %" PRIu64 " unreadable trace %s skipped (see the messages on "
			"stderr)\n",
			tot->bad_lines, gmt_text_plural(tot->bad_lines, "line was", "lines were"));
	for (size_t i = 0; i < n; i++)
		if (!models[i]->trace->complete)
			print_died(out, models[i]->trace);
}

static void
print_anomalies(FILE *out, const struct gmt_totals *tot)
{
	if (tot->unmatched_frees)
		fprintf(out,
			"unmatched frees: %" PRIu64 " (of memory this trace never saw allocated: "
			"before tracing began, or through an API it does not cover)\n",
			tot->unmatched_frees);
	if (tot->failed_frees)
		fprintf(out, "failed frees: %" PRIu64 " (they changed nothing)\n",
			tot->failed_frees);
	if (tot->reused_addresses)
		fprintf(
		    out,
		    "reused addresses: %" PRIu64 " (allocations at an address that was still live: "
		    "its free was not seen, so the earlier allocation is counted as freed there)\n",
		    tot->reused_addresses);
	if (tot->unmatched_retains)
		fprintf(out,
			"unmatched retains: %" PRIu64
			" (references to a VMM handle this trace never "
			"saw created)\n",
			tot->unmatched_retains);
}

void
gmt_report_text(FILE *out, struct gmt_model *const *models, size_t n)
{
	struct gmt_totals tot;

	gmt_model_totals(models, n, &tot);
	fprintf(out, "gpumemtrace report: %zu %s, %" PRIu64 " events, %" PRIu64 " dropped\n", n,
		gmt_text_plural(n, "process", "processes"), tot.events, tot.dropped);
	if (n)
		print_coverage(out, models, n);
	print_warnings(out, models, n, &tot);
	if (n > 1) {
		fprintf(out, "processes:\n");
		for (size_t i = 0; i < n; i++)
			print_process_row(out, models[i]);
	}
	gmt_text_devices(out, models, n);
	gmt_text_ledger(out, models, n);
	print_leaks(out, models, n, &tot);
	print_failed(out, models, n, tot.failed);
	print_anomalies(out, &tot);
	gmt_text_kinds(out, models, n);
}

void
gmt_report_summary(FILE *out, const char *prefix, struct gmt_model *const *models, size_t n)
{
	struct gmt_totals tot;
	char b[GMT_BYTES_BUF];

	gmt_model_totals(models, n, &tot);
	fprintf(out, "%s%zu %s, %" PRIu64 " events, %" PRIu64 " dropped", prefix, n,
		gmt_text_plural(n, "process", "processes"), tot.events, tot.dropped);
	if (tot.died)
		fprintf(out, ", %zu did not exit normally", tot.died);
	fprintf(out, "\n");
	if (tot.peak_device)
		fprintf(out, "%speak %s device memory held on device %d", prefix,
			gmt_format_bytes(tot.peak_bytes, b), tot.peak_device->device);
	else
		fprintf(out, "%sno device memory was held", prefix);
	if (tot.processes > tot.died)
		fprintf(out, "; leaked at exit %s in %" PRIu64 " %s",
			gmt_format_bytes(tot.leaked_bytes, b), tot.leaked_allocations,
			gmt_text_plural(tot.leaked_allocations, "allocation", "allocations"));
	if (tot.died)
		fprintf(out, "; %s live when the trace ends",
			gmt_format_bytes(tot.live_at_end_bytes, b));
	fprintf(out, "; %zu failed %s\n", tot.failed,
		gmt_text_plural(tot.failed, "allocation", "allocations"));
	if (tot.dropped)
		fprintf(out, "%swarning: %" PRIu64 " %s dropped: the numbers are incomplete\n",
			prefix, tot.dropped,
			gmt_text_plural(tot.dropped, "event was", "events were"));
}
