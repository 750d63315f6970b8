/*
 * @brief Failed allocations the application never saw: the replay's hooks that class each
 * failure as it goes (model.c calls them), and the classes as the reports read them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "analysis/model/model.h"
#include "util/alloc.h"

/*
 * The rule (docs/ci.md, "Failed allocations that do not count"). A failed allocation is the
 * application's unless the trace shows the library went past it:
 *
 *   probe      the call was refused as not permitted or not supported (800, 801: the same codes
 *              in the runtime and the driver), never for lack of memory, and the same call
 *              succeeded later in the process. PyTorch's expandable segments start with a
 *              cuMemCreate of a fabric handle that returns 800 where the system has no fabric,
 *              then allocate with another handle type.
 *   recovered  out of memory (2), and the very next allocation attempt on the same device was
 *              the same call for the same size and succeeded: the allocator freed memory and
 *              retried (PyTorch frees its cached blocks and calls cudaMalloc again). Frees in
 *              between are expected; any other attempt in between, or a failed retry, leaves
 *              it counted, so a real OOM (retried and failed again) counts both times.
 *
 * Anything else, and a candidate the trace ends before deciding, counts.
 */
const char *
gmt_fail_class_name(enum gmt_fail_class c)
{
	switch (c) {
	case GMT_FAIL_PROBE: return "probe";
	case GMT_FAIL_RECOVERED: return "recovered";
	case GMT_FAIL_COUNTED:
	case GMT_FAIL_PENDING_RETRY:
	case GMT_FAIL_PENDING_PROBE: break;
	}
	return "failure";
}

enum gmt_fail_class
gmt_model_fail_class(const struct gmt_model *m, size_t k)
{
	enum gmt_fail_class c = k < m->nfailed && m->failed_class
				    ? (enum gmt_fail_class)m->failed_class[k]
				    : GMT_FAIL_COUNTED;

	return c == GMT_FAIL_PROBE || c == GMT_FAIL_RECOVERED ? c : GMT_FAIL_COUNTED;
}

size_t
gmt_model_failure_at(const struct gmt_model *m, uint64_t seq)
{
	size_t lo = 0, hi = m->nfailed;

	/* failed[] is in seq order */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->failed_events[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nfailed && m->failed_events[lo].seq == seq ? lo : SIZE_MAX;
}

size_t
gmt_model_first_counted_failure(const struct gmt_model *m)
{
	for (size_t k = 0; k < m->nfailed; k++)
		if (gmt_model_fail_class(m, k) == GMT_FAIL_COUNTED)
			return k;
	return SIZE_MAX;
}

int
gmt_failures_add(struct gmt_model *m, size_t k)
{
	const struct gmt_trace_event *f = &m->failed_events[k];
	uint8_t c = GMT_FAIL_COUNTED;

	if (f->result == GMT_CUDA_OUT_OF_MEMORY)
		c = GMT_FAIL_PENDING_RETRY;
	else if (f->result == GMT_CUDA_NOT_PERMITTED || f->result == GMT_CUDA_NOT_SUPPORTED)
		c = GMT_FAIL_PENDING_PROBE;
	m->failed_class[k] = c;
	if (c == GMT_FAIL_COUNTED)
		return 0;
	if (gmt_grow(&m->fail_pending, &m->fail_pending_cap, m->nfail_pending + 1,
		     sizeof(*m->fail_pending), 8) != 0)
		return -ENOMEM;
	m->fail_pending[m->nfail_pending++] = k;
	return 0;
}

void
gmt_failures_note(struct gmt_model *m, const struct gmt_trace_event *ev)
{
	size_t keep = 0;

	for (size_t i = 0; i < m->nfail_pending; i++) {
		size_t k = m->fail_pending[i];
		const struct gmt_trace_event *f = &m->failed_events[k];
		bool ok = ev->result == 0 && ev->api == f->api && ev->driver == f->driver;

		if (m->failed_class[k] == GMT_FAIL_PENDING_RETRY) {
			if (ev->device != f->device) {
				m->fail_pending[keep++] = k;
				continue;
			}
			m->failed_class[k] =
			    ok && ev->size == f->size ? GMT_FAIL_RECOVERED : GMT_FAIL_COUNTED;
		} else if (ok) {
			m->failed_class[k] = GMT_FAIL_PROBE;
		} else {
			m->fail_pending[keep++] = k;
		}
	}
	m->nfail_pending = keep;
}

void
gmt_failures_finish(struct gmt_model *m)
{
	m->nfailed_counted = m->nprobes = m->nrecovered = 0;
	for (size_t k = 0; k < m->nfailed; k++) {
		uint8_t *c = &m->failed_class[k];

		if (*c == GMT_FAIL_PENDING_RETRY || *c == GMT_FAIL_PENDING_PROBE)
			*c = GMT_FAIL_COUNTED;
		m->nprobes += *c == GMT_FAIL_PROBE;
		m->nrecovered += *c == GMT_FAIL_RECOVERED;
		m->nfailed_counted += *c == GMT_FAIL_COUNTED;
	}
	free(m->fail_pending);
	m->fail_pending = NULL;
	m->nfail_pending = m->fail_pending_cap = 0;
}
