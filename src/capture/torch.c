/*
 * @brief The PyTorch layer's entry points: block events from c10's caching allocator (through the
 * bridge, python/gpumemtrace/torch_bridge.cpp) and the layer's status (from the Python side,
 * python/gpumemtrace/_torch.py), into the same ring as the CUDA-level events.
 *
 * gmt_torch_record() runs inside torch's allocator, its per-device recursive mutex held and
 * sometimes the GIL: the rules of capture.h hold (no allocation, no lock, no Python). A block
 * handed out gets the allocating thread's stack (native and Python); frees and segment events
 * need none (the analysis pairs them with their allocation).
 *
 * gmt_torch_layer() is called from Python, outside any CUDA call: it may allocate. Its strings
 * travel to the writer with the event and are freed there.
 *
 * The exported names are in api.c, with the other public entry points: they come here, or go to
 * the copy of the tracer that traces the process.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "capture/torch.h"

#include "capture/capture.h"
#include "capture/selfprof.h"
#include "capture/stacks.h"
#include "format/torch_entry.h"

static void
copy_meta(char *dst, const char *meta, size_t len)
{
	size_t n = len < GMT_LABEL_MAX - 1 ? len : GMT_LABEL_MAX - 1;

	if (n < len) /* a cut never splits a UTF-8 character */
		while (n > 0 && ((unsigned char)meta[n] & 0xc0) == 0x80)
			n--;
	memcpy(dst, meta, n);
	dst[n] = '\0';
}

/* Python's cyclic garbage collector is running on this thread (gc.callbacks, _torch.py): the
 * tensors it frees were kept alive by reference cycles. One byte of initial-exec TLS (api.c says
 * why that must stay small). */
static __thread uint8_t in_gc __attribute__((tls_model("initial-exec")));

void
gmt_api_torch_gc(int collecting)
{
	in_gc = collecting != 0;
}

int
gmt_api_torch_record(const struct gmt_torch_entry *e)
{
	if (!e || e->abi != GMT_TORCH_ABI ||
	    e->size < offsetof(struct gmt_torch_entry, meta_len) + sizeof(e->meta_len) ||
	    !e->action || e->action >= GMT_TORCH_ACTION_COUNT)
		return 0;
	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		return 0;
	}
	uint64_t t0 = gmt_prof_begin();
	/* the allocating thread's stack: an allocation, and the OOM (what asked for it) */
	uint32_t stack = 0;
	if (e->action == GMT_TORCH_ALLOC || e->action == GMT_TORCH_OOM) {
		uint64_t ts0 = gmt_prof_begin();
		stack = gmt_stack_capture(NULL);
		gmt_prof_end(GMT_PROF_TORCH_STACK, ts0);
	}
	/* Written straight into its ring slot (no event on the stack to zero and copy: most of a
	 * free's cost, docs/performance.md), after the stack: a slot is claimed for as long as
	 * its fields take. Stamped first, so that the seq's locked increment comes before the
	 * stores into the slot, not waiting for them. */
	uint64_t pos;
	struct gmt_event *ev = gmt_emit_claim(&pos);
	if (ev) {
		uint64_t seq, ts;
		int32_t tid;
		gmt_stamp_values(&seq, &ts, &tid);
		gmt_event_clear(ev);
		ev->seq = seq;
		ev->ts_ns = ts;
		ev->tid = tid;
		ev->op = GMT_OP_BLOCK;
		ev->torch_action = (uint8_t)e->action;
		ev->device = (e->flags & GMT_TORCH_F_HAS_DEVICE) ? e->device : -1;
		ev->size = e->bytes;
		ev->requested = e->requested;
		ev->stream = e->stream;
		ev->pool = e->pool_id[0];
		ev->pool2 = e->pool_id[1];
		ev->cuda_flags = e->flags;
		ev->stack = stack;
		if (in_gc && e->action == GMT_TORCH_FREE_REQUESTED)
			ev->flags |= GMT_EV_IN_GC;
		if (e->action == GMT_TORCH_OOM) {
			ev->free_bytes = e->addr; /* torch puts the device's free bytes there */
			ev->flags |= GMT_EV_HAS_MEMINFO;
		} else {
			ev->ptr = e->addr;
		}
		if (e->meta && e->meta_len)
			copy_meta(ev->label, e->meta, e->meta_len);
		gmt_emit_commit(pos);
	}
	gmt_prof_end(GMT_PROF_TORCH_RECORD, t0);
	gmt_hook_leave();
	return 0;
}

static char *
dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* An event of @p op that owns @p l (its strings) into the ring; the writer frees it once written,
 * or here when it never gets there. From Python, outside any CUDA call. */
static void
emit_owned(enum gmt_op op, struct gmt_torch_layer *l)
{
	struct gmt_event ev = {.op = (uint8_t)op, .device = -1, .layer = l};

	if (!gmt_hook_enter()) {
		gmt_hook_leave();
		gmt_torch_layer_free(l);
		return;
	}
	gmt_stamp(&ev);
	if (!gmt_emit(&ev))
		gmt_torch_layer_free(l); /* not in the ring: nobody else will free it */
	gmt_hook_leave();
}

/*
 * Is @p json one JSON array on one line, balanced, its strings closed, nothing after it? The
 * writer copies it into the trace as it is: a caller's bad text must not break the line.
 */
static bool
json_array_text(const char *json)
{
	int depth = 0;
	bool str = false;
	const char *p = json;

	if (*p != '[')
		return false;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20)
			return false;
		if (str) {
			if (c == '\\' && p[1])
				p++;
			else if (c == '"')
				str = false;
			continue;
		}
		if (c == '"')
			str = true;
		else if (c == '[' || c == '{')
			depth++;
		else if ((c == ']' || c == '}') && --depth == 0)
			return p[1] == '\0';
		else if (depth < 0)
			return false;
	}
	return false;
}

void
gmt_api_torch_holders(const char *json)
{
	struct gmt_torch_layer *l;

	if (!json || !json_array_text(json) || !(l = calloc(1, sizeof(*l))))
		return;
	if (!(l->holders = strdup(json))) {
		free(l);
		return;
	}
	emit_owned(GMT_OP_HOLDERS, l);
}

void
gmt_api_torch_layer(const char *version,
		    const char *backend,
		    const char *alloc_conf,
		    const char *status,
		    const char *detail)
{
	struct gmt_torch_layer *l = calloc(1, sizeof(*l));

	if (!l)
		return;
	l->version = dup_or_null(version);
	l->backend = dup_or_null(backend);
	l->alloc_conf = dup_or_null(alloc_conf);
	l->status = dup_or_null(status);
	l->detail = dup_or_null(detail);
	emit_owned(GMT_OP_LAYER, l);
}
