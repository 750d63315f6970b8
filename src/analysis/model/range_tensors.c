/*
 * @brief The PyTorch blocks a time range leaves live (range_tensors.h).
 */
#include "analysis/model/range_tensors.h"

#include <errno.h>
#include <stdlib.h>

#include "alloc/blocks.h"
#include "analysis/model/model.h"
#include "analysis/model/tensors.h"
#include "util/sat.h"

static int
cmp_bytes(const void *a, const void *b)
{
	const struct gmt_range_tensor *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int
gmt_range_tensors_take(struct gmt_model *m)
{
	struct gmt_blk_view *v;
	size_t n, nout = 0, cap = 0;

	if (m->range_tensors_taken)
		return 0;
	m->range_tensors_taken = true;
	if (!m->tensors || !m->tensors->blk || !m->range_from.found)
		return 0;
	n = gmt_blk_blocks(m->tensors->blk, NULL, 0);
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = gmt_blk_blocks(m->tensors->blk, v, n);
	struct gmt_range_tensor *out = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_blk_view *b = &v[i];
		size_t j;

		if (b->state != GMT_BLK_ALLOCATED || b->seq < m->range_from.seq)
			continue;
		for (j = 0; j < nout; j++) /* few sites leave blocks: a scan */
			if (out[j].stack == b->stack && out[j].device == b->device)
				break;
		if (j == nout) {
			if (nout == cap) {
				cap = cap ? 2 * cap : 8;
				struct gmt_range_tensor *no = realloc(out, cap * sizeof(*no));
				if (!no) {
					free(out);
					free(v);
					return -ENOMEM;
				}
				out = no;
			}
			out[nout++] =
			    (struct gmt_range_tensor){.stack = b->stack, .device = b->device};
		}
		out[j].bytes = gmt_sat_add(out[j].bytes, b->size);
		out[j].requested += b->requested;
		out[j].blocks++;
	}
	free(v);
	if (nout > 1)
		qsort(out, nout, sizeof(*out), cmp_bytes);
	m->range_tensors = out;
	m->nrange_tensors = nout;
	return 0;
}
