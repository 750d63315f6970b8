/*
 * @brief The NVML ledger: what NVML says a device holds for this process, against what the trace
 * accounts for, at the readings that matter (the last one, and the one nearest the peak).
 *
 * The difference is memory no allocation call reports: the CUDA context, loaded modules, the
 * internal memory of NVIDIA libraries, and allocations made before tracing began. When NVML has no
 * per-process figure (no permission, MIG, ...) the device's used memory is the basis, and the
 * difference then also holds other processes' memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/model/model.h"

static uint64_t
time_distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static struct gmt_ledger_row
row_of(const struct gmt_ledger_point *p, bool last)
{
	const struct gmt_trace_nvml *n = p->nvml;
	struct gmt_ledger_row row = {.p = p, .last = last, .per_process = n->has_process_used};

	row.nvml_bytes = n->has_process_used ? n->process_used : n->used;
	/* clamped: a broken trace's sizes past 2^63 must not flip the sign */
	uint64_t gap =
	    row.nvml_bytes >= p->held ? row.nvml_bytes - p->held : p->held - row.nvml_bytes;
	int64_t mag = gap > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)gap;
	row.untracked = row.nvml_bytes >= p->held ? mag : -mag;
	return row;
}

/* The last reading of @p device, and the one nearest its held peak (NULL without a peak). */
static void
pick(const struct gmt_model *m,
     int32_t device,
     const struct gmt_ledger_point **last,
     const struct gmt_ledger_point **near)
{
	const struct gmt_device_stats *d = NULL;
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].device == device)
			d = &m->devices[i];
	*last = *near = NULL;
	for (size_t i = 0; i < m->nledger; i++) {
		const struct gmt_ledger_point *p = &m->ledger[i];

		if (p->nvml->device != device)
			continue;
		*last = p;
		/* On a tie the later reading wins: it follows the event that made the peak. */
		if (d && d->peak.bytes && time_distance(p->nvml->ts, d->peak.ts) <= best) {
			best = time_distance(p->nvml->ts, d->peak.ts);
			*near = p;
		}
	}
}

/* The distinct devices of the readings, into @p out (at most @p max; there are few). */
static size_t
reading_devices(const struct gmt_model *m, int32_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nledger; i++) {
		size_t j;

		for (j = 0; j < n && out[j] != m->ledger[i].nvml->device; j++)
			;
		if (j == n && n < max)
			out[n++] = m->ledger[i].nvml->device;
	}
	return n;
}

static int
cmp_row(const void *pa, const void *pb)
{
	const struct gmt_ledger_row *a = pa, *b = pb;

	if (a->p->nvml->device != b->p->nvml->device)
		return a->p->nvml->device < b->p->nvml->device ? -1 : 1;
	return (int)b->last - (int)a->last;
}

/* More GPUs than any node has; readings of further devices are left out of the ledger. */
#define LEDGER_MAX_DEVICES 64

struct gmt_ledger_row *
gmt_ledger_rows(const struct gmt_model *m, size_t *n)
{
	int32_t devices[LEDGER_MAX_DEVICES];
	size_t ndev = reading_devices(m, devices, LEDGER_MAX_DEVICES);
	struct gmt_ledger_row *rows;

	*n = 0;
	if (ndev == 0)
		return NULL;
	rows = calloc(2 * ndev, sizeof(*rows));
	if (!rows) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < ndev; i++) {
		const struct gmt_ledger_point *last, *near;

		pick(m, devices[i], &last, &near);
		rows[*n] = row_of(last, true);
		rows[(*n)++].nearest_to_peak = near == last;
		if (near && near != last) {
			rows[*n] = row_of(near, false);
			rows[(*n)++].nearest_to_peak = true;
		}
	}
	qsort(rows, *n, sizeof(*rows), cmp_row);
	return rows;
}
