/*
 * @brief Live-allocation table of the writer thread (see tables.h).
 */
#include "writer/tables.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

// --- live allocations ---------------------------------------------------------------------------

static size_t
dev_index(int32_t device)
{
	return (device >= 0 && device < GMT_MAX_DEVICES) ? (size_t)device + 1 : 0;
}

static bool
live_rehash(struct gmt_live_table *t, size_t cap)
{
	struct gmt_live_entry *e = calloc(cap, sizeof(*e));
	if (!e)
		return false;
	for (size_t i = 0; i < t->cap; i++) {
		struct gmt_live_entry *old = &t->e[i];
		if (!old->ptr || old->tomb)
			continue;
		size_t j = gmt_mix64(old->ptr) & (cap - 1);
		while (e[j].ptr)
			j = (j + 1) & (cap - 1);
		e[j] = *old;
	}
	free(t->e);
	t->e = e;
	t->cap = cap;
	t->tombs = 0;
	return true;
}

static struct gmt_live_entry *
live_find(struct gmt_live_table *t, uint64_t ptr)
{
	if (!t->cap)
		return NULL;
	for (size_t j = gmt_mix64(ptr) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		struct gmt_live_entry *e = &t->e[j];
		if (!e->ptr)
			return NULL;
		if (!e->tomb && e->ptr == ptr)
			return e;
	}
}

static void
live_remove(struct gmt_live_table *t, struct gmt_live_entry *e)
{
	size_t d = dev_index(e->device);
	t->bytes[d][e->kind] -= e->size;
	t->count[d][e->kind]--;
	e->tomb = 1;
	t->used--;
	t->tombs++;
}

/* VMM handles, imported handles and CUDA arrays are handle values, not addresses: they live in
 * their own number space, tagged so that a handle never matches a device pointer. */
#define HANDLE_TAG (1ULL << 63)

static bool
is_handle_space(const struct gmt_event *ev)
{
	return ev->kind == GMT_KIND_VMM_PHYSICAL || ev->kind == GMT_KIND_ARRAY ||
	       ev->api == GMT_API_cuMemImportFromShareableHandle;
}

static uint64_t
live_key(const struct gmt_event *ev)
{
	return is_handle_space(ev) ? ev->ptr ^ HANDLE_TAG : ev->ptr;
}

/* Kinds a context destruction (cudaDeviceReset) does not release (docs/trace-format.md). */
static bool
survives_reset(uint8_t kind)
{
	switch (kind) {
	case GMT_KIND_POOL:
	case GMT_KIND_VMM_RESERVE:
	case GMT_KIND_VMM_PHYSICAL:
	case GMT_KIND_VMM_MAPPED:
	case GMT_KIND_GRAPH: return true;
	default: return false;
	}
}

/*
 * Did @p ev (a free, unmap or reset) happen after allocation @p e? A free takes its seq before
 * the real call and reaches the ring after it returns; in between another thread may be handed
 * the same address, and its allocation (a larger seq) may be drained in an earlier batch. The
 * late free then belongs to the block that allocation replaced. seq 0: order unknown, it ends.
 */
static bool
ends(const struct gmt_live_entry *e, const struct gmt_event *ev)
{
	return !ev->seq || e->seq < ev->seq;
}

/* Remove every entry the predicate selects (resets, range unmaps, external memory). */
static void
live_remove_if(struct gmt_live_table *t,
	       const struct gmt_event *ev,
	       bool (*pred)(const struct gmt_live_entry *, const struct gmt_event *))
{
	for (size_t i = 0; i < t->cap; i++) {
		struct gmt_live_entry *e = &t->e[i];
		if (e->ptr && !e->tomb && ends(e, ev) && pred(e, ev))
			live_remove(t, e);
	}
}

static bool
reset_releases(const struct gmt_live_entry *e, const struct gmt_event *ev)
{
	if (survives_reset(e->kind) || e->device != ev->device)
		return false;
	return !ev->context || !e->context || e->context == ev->context;
}

static bool
in_unmapped_range(const struct gmt_live_entry *e, const struct gmt_event *ev)
{
	return e->kind == GMT_KIND_VMM_MAPPED && e->ptr >= ev->ptr && e->ptr < ev->ptr + ev->size;
}

static bool
of_external_memory(const struct gmt_live_entry *e, const struct gmt_event *ev)
{
	return e->kind == GMT_KIND_IMPORTED && e->handle == ev->handle;
}

static bool
live_insert(struct gmt_live_table *t, const struct gmt_event *ev)
{
	uint64_t key = live_key(ev);
	struct gmt_live_entry *e = live_find(t, key);
	if (e) {
		/* The free of the older block was dropped or comes later (ends()): the newer block
		 * of the two is the one live. */
		if (ev->seq && e->seq > ev->seq)
			return true;
		live_remove(t, e);
	}
	if ((t->used + t->tombs + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		while ((t->used + 1) * 2 > cap)
			cap *= 2;
		if (!live_rehash(t, cap))
			return false;
	}
	size_t j = gmt_mix64(key) & (t->cap - 1);
	while (t->e[j].ptr && !t->e[j].tomb)
		j = (j + 1) & (t->cap - 1);
	if (t->e[j].tomb)
		t->tombs--;
	t->e[j] = (struct gmt_live_entry){.ptr = key,
					  .seq = ev->seq,
					  .size = ev->size,
					  .context = ev->context,
					  .handle = ev->handle,
					  .device = ev->device,
					  .kind = ev->kind};
	t->used++;
	size_t d = dev_index(ev->device);
	t->bytes[d][ev->kind] += ev->size;
	t->count[d][ev->kind]++;
	return true;
}

bool
gmt_live_apply(struct gmt_live_table *t, const struct gmt_event *ev)
{
	if (ev->result != 0)
		return true; /* failed calls change nothing */
	switch (ev->op) {
	case GMT_OP_ALLOC:
		if (!ev->ptr || ev->kind >= GMT_KIND_COUNT)
			return true;
		return live_insert(t, ev);
	case GMT_OP_FREE: {
		if (ev->kind == GMT_KIND_VMM_MAPPED && ev->size) {
			live_remove_if(t, ev, in_unmapped_range);
			return true;
		}
		if (ev->api == GMT_API_cuDestroyExternalMemory ||
		    ev->api == GMT_API_cudaDestroyExternalMemory) {
			live_remove_if(t, ev, of_external_memory);
			return true;
		}
		struct gmt_live_entry *e = live_find(t, live_key(ev));
		if (e && ends(e, ev))
			live_remove(t, e);
		return true;
	}
	case GMT_OP_RESET: live_remove_if(t, ev, reset_releases); return true;
	default: return true;
	}
}

const struct gmt_live_entry *
gmt_live_peek_free(const struct gmt_live_table *t, const struct gmt_event *ev)
{
	if (ev->op != GMT_OP_FREE || ev->result != 0 ||
	    (ev->kind == GMT_KIND_VMM_MAPPED && ev->size) ||
	    ev->api == GMT_API_cuDestroyExternalMemory ||
	    ev->api == GMT_API_cudaDestroyExternalMemory)
		return NULL;
	const struct gmt_live_entry *e = live_find((struct gmt_live_table *)t, live_key(ev));
	return e && ends(e, ev) ? e : NULL;
}

const struct gmt_live_entry *
gmt_live_peek_alloc(const struct gmt_live_table *t, const struct gmt_event *ev)
{
	return live_find((struct gmt_live_table *)t, live_key(ev));
}

size_t
gmt_live_totals(const struct gmt_live_table *t, struct gmt_live_total *out, size_t max)
{
	size_t n = 0;
	for (size_t d = 0; d <= GMT_MAX_DEVICES; d++) {
		for (size_t k = 1; k < GMT_KIND_COUNT; k++) {
			if (!t->count[d][k] || n == max)
				continue;
			out[n++] = (struct gmt_live_total){
			    .device = (int)d - 1,
			    .kind = (enum gmt_kind)k,
			    .bytes = t->bytes[d][k],
			    .allocations = t->count[d][k],
			};
		}
	}
	return n;
}

void
gmt_live_free(struct gmt_live_table *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}
