/*
 * @brief The text report's device sections: the device memory held at its peak with each kind's
 * own peak and end, the pool slack, the NVML ledger, and the legend of kinds.
 *
 * Kinds are never added up except into "device memory held" (gmt_kind_held()); every other kind
 * is shown on its own row, so a reservation of address space or another process's memory can
 * never inflate a total.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/report/nomem.h"
#include "analysis/report/report.h"
#include "analysis/report/report_text.h"
#include "analysis/report/textfmt.h"
#include "analysis/report/units.h"
#include "util/alloc.h"

static const char *const untracked_causes =
    "CUDA context, loaded modules, NVIDIA libraries' internal memory, or allocations made before "
    "tracing";

// --- peaks, by device and kind ------------------------------------------------------------------

struct dev_row {
	size_t proc;
	const struct gmt_model *m;
	const struct gmt_device_stats *d;
};

static int
cmp_dev_row(const void *pa, const void *pb)
{
	const struct dev_row *a = pa, *b = pb;

	if (a->d->peak.bytes != b->d->peak.bytes)
		return a->d->peak.bytes > b->d->peak.bytes ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->d->device < b->d->device ? -1 : a->d->device > b->d->device;
}

/* The devices where anything happened, largest held peak first: a new array, *@p n rows. */
static struct dev_row *
device_rows(const struct gmt_process *procs, size_t n, size_t *nrows)
{
	struct dev_row *rows = NULL;
	size_t cap = 0;

	*nrows = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t d = 0; d < procs[i].model->ndevices; d++) {
			if (!gmt_device_active(&procs[i].model->devices[d]))
				continue;
			if (gmt_grow(&rows, &cap, *nrows + 1, sizeof(*rows), 8) != 0) {
				free(rows);
				*nrows = 0;
				return gmt_nomem();
			}
			rows[(*nrows)++] =
			    (struct dev_row){i, procs[i].model, &procs[i].model->devices[d]};
		}
	}
	if (*nrows > 1)
		qsort(rows, *nrows, sizeof(*rows), cmp_dev_row);
	return rows;
}

/* "device 3.0 MiB, pool_reserve 1.0 GiB": the terms of a held total. */
static void
print_held_terms(FILE *out, const uint64_t by_kind[GMT_TK_COUNT])
{
	const char *sep = "";
	char b[GMT_BYTES_BUF];

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) {
		if (!gmt_kind_held_term((enum gmt_tkind)k, by_kind))
			continue;
		fprintf(out, "%s%s %s", sep, gmt_kind_str((enum gmt_tkind)k),
			gmt_format_bytes(by_kind[k], b));
		sep = ", ";
	}
}

static void
print_kind_row(FILE *out, const struct gmt_trace *t, const struct gmt_kind_stats *ks, int k)
{
	bool reading = gmt_kind_is_reading((enum gmt_tkind)k);
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	fprintf(out, "    %-14s peak %s", gmt_kind_str((enum gmt_tkind)k),
		gmt_format_bytes(ks->peak.bytes, b1));
	if (!reading)
		fprintf(out, " in %" PRIu64 " %s", ks->peak_allocs,
			gmt_text_plural(ks->peak_allocs, "allocation", "allocations"));
	if (ks->peak.bytes)
		fprintf(out, " at %.3f s", gmt_trace_time_s(t, ks->peak.ts));
	if (!reading && ks->live == 0 && ks->live_allocs == 0)
		fprintf(out, "; none at end");
	else
		fprintf(out, "; at end %s", gmt_format_bytes(ks->live, b2));
	if (!reading && ks->live_allocs)
		fprintf(out, " in %" PRIu64, ks->live_allocs);
	fprintf(out, "\n");
}

/* Slack: what the pools reserved beyond their live allocations, when the reservation peaked. */
static void
print_pool_slack(FILE *out, const struct gmt_device_stats *d)
{
	uint64_t reserve = d->kinds[GMT_TK_POOL_RESERVE].peak.bytes;
	uint64_t live = d->pool_live_at_reserve_peak;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];

	if (!reserve)
		return;
	if (reserve >= live)
		fprintf(
		    out,
		    "    pool slack at the pool_reserve peak: %s reserved beyond the %s of live "
		    "pool allocations\n",
		    gmt_format_bytes(reserve - live, b1), gmt_format_bytes(live, b2));
	else
		fprintf(out,
			"    pool slack at the pool_reserve peak: none; live pool allocations (%s) "
			"exceed the reservations read (%s): some pools were not read\n",
			gmt_format_bytes(live, b2), gmt_format_bytes(reserve, b3));
}

static void
print_device(FILE *out, const struct dev_row *row, bool several)
{
	const struct gmt_device_stats *d = row->d;
	const struct gmt_trace *t = row->m->trace;
	char b[GMT_BYTES_BUF], pid[64];

	if (d->peak.bytes)
		fprintf(out, "peak: %s device memory held on device %d at %.3f s (seq %" PRIu64 ")",
			gmt_format_bytes(d->peak.bytes, b), d->device,
			gmt_trace_time_s(t, d->peak.ts), d->peak.seq);
	else
		fprintf(out, "device %d: no device memory held", d->device);
	if (several) {
		gmt_text_process_name(t, pid, sizeof(pid));
		fprintf(out, " in pid %s", pid);
	}
	if (d->peak.bytes) {
		fprintf(out, "  [");
		print_held_terms(out, d->peak_by_kind);
		fprintf(out, "]");
	}
	fprintf(out, "\n");
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		if (d->kinds[k].allocations || d->kinds[k].peak.bytes)
			print_kind_row(out, t, &d->kinds[k], k);
	print_pool_slack(out, d);
}

void
gmt_text_devices(FILE *out, const struct gmt_process *procs, size_t n)
{
	size_t nrows;
	struct dev_row *rows = device_rows(procs, n, &nrows);

	bool tensors = false;
	for (size_t i = 0; i < n; i++)
		tensors |= procs[i].model->tensors != NULL;
	if (nrows == 0)
		fprintf(out, tensors
				 ? "peak: no CUDA-level allocation in the trace (the tensor level "
				   "is below)\n"
				 : "peak: no GPU memory was allocated\n");
	for (size_t r = 0; r < nrows && r < GMT_REPORT_MAX_ROWS; r++)
		print_device(out, &rows[r], n > 1);
	if (nrows > GMT_REPORT_MAX_ROWS)
		fprintf(out, "  ... and %zu more devices (see --format json)\n",
			nrows - GMT_REPORT_MAX_ROWS);
	free(rows);
}

// --- the NVML ledger ----------------------------------------------------------------------------

static void
print_ledger_title(FILE *out,
		   const struct gmt_model *m,
		   const struct gmt_ledger_row *row,
		   bool several)
{
	char pid[64];

	fprintf(out, "ledger of device %d (%s, at %.3f s", row->p->nvml->device,
		row->last ? "last NVML reading" : "NVML reading nearest the peak",
		gmt_trace_time_s(m->trace, row->p->nvml->ts));
	if (row->last && row->nearest_to_peak)
		fprintf(out, ", also the nearest the peak");
	if (several) {
		gmt_text_process_name(m->trace, pid, sizeof(pid));
		fprintf(out, ", pid %s", pid);
	}
	fprintf(out, "):\n");
}

static void
print_ledger_nvml(FILE *out, const struct gmt_trace_nvml *nv)
{
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF];

	if (nv->has_process_used && nv->used_from == GMT_NVML_FROM_DEVICE_USED)
		fprintf(
		    out,
		    "  NVML: in a PID namespace (a container), NVML names no process as this one "
		    "and gives no per-process figure; the process is alone on the device, so the "
		    "device's %s used of %s is the basis\n",
		    gmt_format_bytes(nv->used, b2), gmt_format_bytes(nv->total, b3));
	else if (nv->has_process_used)
		fprintf(out, "  NVML: this process uses %s%s; the device %s used of %s\n",
			gmt_format_bytes(nv->process_used, b1),
			nv->used_from == GMT_NVML_FROM_ONLY_PROCESS
			    ? " (in a PID namespace: the device's only process, taken as this one)"
			: nv->used_from == GMT_NVML_FROM_NSPID
			    ? " (its pid outside the PID namespace)"
			    : "",
			gmt_format_bytes(nv->used, b2), gmt_format_bytes(nv->total, b3));
	else if (nv->pid_namespace)
		fprintf(
		    out,
		    "  NVML: in a PID namespace (a container), NVML's pids are the host's and none "
		    "is known to be this process's; the device's %s used of %s (other processes "
		    "included) is the basis\n",
		    gmt_format_bytes(nv->used, b2), gmt_format_bytes(nv->total, b3));
	else
		fprintf(out,
			"  NVML: gave no per-process figure; the device's %s used of %s (other "
			"processes included) is the basis\n",
			gmt_format_bytes(nv->used, b2), gmt_format_bytes(nv->total, b3));
}

static void
print_ledger_row(FILE *out,
		 const struct gmt_model *m,
		 const struct gmt_ledger_row *row,
		 bool several)
{
	const struct gmt_ledger_point *p = row->p;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	print_ledger_title(out, m, row, several);
	print_ledger_nvml(out, p->nvml);
	fprintf(out, "  tracked: %s device memory held", gmt_format_bytes(p->held, b1));
	if (p->held) {
		fprintf(out, " (");
		print_held_terms(out, p->by_kind);
		fprintf(out, ")");
	}
	fprintf(out, "\n");
	if (row->untracked >= 0)
		fprintf(out, "  untracked: %s (%s%s)\n",
			gmt_format_bytes((uint64_t)row->untracked, b1), untracked_causes,
			row->per_process ? ""
					 : "; against the device's used memory, also other "
					   "processes' memory");
	else
		fprintf(out,
			"  untracked: none; tracked exceeds NVML's figure by %s (NVML reads at "
			"another moment than the events, or does not count some tracked memory)\n",
			gmt_format_bytes((uint64_t)-row->untracked, b1));
	if (p->by_kind[GMT_TK_MANAGED])
		fprintf(out, "  not in tracked: managed %s (may be resident on this GPU)\n",
			gmt_format_bytes(p->by_kind[GMT_TK_MANAGED], b2));
}

void
gmt_text_ledger(FILE *out, const struct gmt_process *procs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t nrows;
		struct gmt_ledger_row *rows = (errno = 0, gmt_ledger_rows(procs[i].model, &nrows));

		if (!rows && errno == ENOMEM)
			gmt_nomem();
		for (size_t r = 0; r < nrows; r++)
			print_ledger_row(out, procs[i].model, &rows[r], n > 1);
		free(rows);
	}
}

// --- the legend ---------------------------------------------------------------------------------

static bool
kind_appears(const struct gmt_process *procs, size_t n, int k)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t d = 0; d < procs[i].model->ndevices; d++) {
			const struct gmt_kind_stats *ks = &procs[i].model->devices[d].kinds[k];

			if (ks->allocations || ks->peak.bytes)
				return true;
		}
	}
	return false;
}

void
gmt_text_kinds(FILE *out, const struct gmt_process *procs, size_t n)
{
	bool any = false;

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) {
		if (!kind_appears(procs, n, k))
			continue;
		if (!any)
			fprintf(out,
				"kinds (device memory held = device + array + vmm_physical + the "
				"larger of pool and pool_reserve + graph_reserve):\n");
		any = true;
		fprintf(out, "  %-14s %s\n", gmt_kind_str((enum gmt_tkind)k),
			gmt_kind_meaning((enum gmt_tkind)k));
	}
}
