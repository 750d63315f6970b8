/*
 * @brief A PyTorch memory snapshot pickle read as a trace of block events (see snapshot.h).
 */
#define _GNU_SOURCE
#include "analysis/reader/snapshot.h"
#include "analysis/reader/pickle.h"
#include "format/kinds.h"
#include "torch_entry.h"
#include "util/esc.h"
#include "util/hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Entries named as not what torch writes; then a count. */
#define MAX_DIAG 20

#define KMIN 512u
#define SMALL_SEGMENT (2u << 20) /* torch's kSmallBuffer: every small-pool segment */

enum { FREE = 0, ALLOCATED, PENDING };

/* A segment of the rewound cache (for expandable segments: a run of mapped memory). */
struct rseg {
	uint64_t addr, size, stream, pool[2];
	int32_t device;
	bool large, expandable;
};

/* A live block of the rewound cache; free blocks are the gaps between them. */
struct rblk {
	uint64_t addr, size, requested;
	uint32_t stack;
	uint8_t state; /* ALLOCATED or PENDING */
};

/* One entry of device_traces, in time order once sorted. */
struct rent {
	const struct gmt_pk *e;
	int64_t time_us;
	int32_t device;
	uint32_t index; /* within its device's list: the order of equal times */
	uint8_t action;
	uint16_t api; /* a CUDA-level allocation (see foreign()): its API's string index + 1 */
	uint64_t addr, size, stream;
	uint32_t stack;
	/* filled while rewinding: what the segment of a segment_alloc was */
	uint64_t pool[2];
	bool large;
};

struct conv {
	struct gmt_trace *t;
	FILE *diag;
	char *epath;
	size_t shown, bad;
	bool nomem;
	/* interned strings and stacks: open addressing, index + 1, 0 empty */
	const char **strs;
	size_t nstrs, strmask;
	uint32_t *stackhash;
	size_t stackmask;
	struct rseg *segs;
	size_t nsegs, capsegs;
	struct rblk *blks; /* sorted by addr */
	size_t nblks, capblks;
	struct gmt_trace_event *ev;
	size_t nev, capev;
	uint64_t mismatched; /* entries that do not fit the end state when rewound */
};

static void __attribute__((format(printf, 2, 3))) bad(struct conv *c, const char *fmt, ...)
{
	va_list ap;

	c->bad++;
	if (c->shown >= MAX_DIAG)
		return;
	c->shown++;
	fprintf(c->diag, "%s: ", c->epath);
	va_start(ap, fmt);
	vfprintf(c->diag, fmt, ap);
	va_end(ap);
	fputc('\n', c->diag);
}

static bool
grow(struct conv *c, void *pp, size_t *cap, size_t n, size_t size)
{
	void **p = pp;
	size_t nc = *cap ? *cap * 2 : 16;

	if (n < *cap)
		return true;
	void *np = realloc(*p, nc * size);
	if (!np) {
		c->nomem = true;
		return false;
	}
	*p = np;
	*cap = nc;
	return true;
}

// --- strings and stacks ------------------------------------------------------------------------

static uint64_t
str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* @p s kept once in the trace's memory; NULL for NULL (and out of memory, said in c->nomem). */
static const char *
intern(struct conv *c, const char *s)
{
	if (!s || c->nomem)
		return NULL;
	if (c->nstrs * 2 >= c->strmask) {
		size_t nm = c->strmask ? c->strmask * 2 + 1 : 255;
		const char **ns = calloc(nm + 1, sizeof(*ns));
		if (!ns) {
			c->nomem = true;
			return NULL;
		}
		for (size_t i = 0; c->strs && i <= c->strmask; i++) {
			if (!c->strs[i])
				continue;
			size_t k = str_hash(c->strs[i]) & nm;
			while (ns[k])
				k = (k + 1) & nm;
			ns[k] = c->strs[i];
		}
		free(c->strs);
		c->strs = ns;
		c->strmask = nm;
	}
	size_t k = str_hash(s) & c->strmask;
	for (; c->strs[k]; k = (k + 1) & c->strmask)
		if (strcmp(c->strs[k], s) == 0)
			return c->strs[k];
	size_t len = strlen(s);
	char *copy = gmt_trace_mem(c->t, len + 1);
	if (!copy) {
		c->nomem = true;
		return NULL;
	}
	memcpy(copy, s, len + 1);
	c->strs[k] = copy;
	c->nstrs++;
	return copy;
}

static uint64_t
frames_hash(const struct gmt_trace_textframe *f, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uintptr_t)f[i].file) * 0x100000001b3ull;
		h = (h ^ (uintptr_t)f[i].function) * 0x100000001b3ull;
		h = (h ^ f[i].line) * 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

static bool
same_frames(const struct gmt_trace_stack *st, const struct gmt_trace_textframe *f, size_t n)
{
	if (st->ntext != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (st->text[i].file != f[i].file || st->text[i].function != f[i].function ||
		    st->text[i].line != f[i].line)
			return false;
	return true;
}

/* Insert stack @p idx of the trace into the hash (grown as needed). */
static bool
stack_hash_put(struct conv *c, size_t idx)
{
	struct gmt_trace *t = c->t;

	if (t->nstacks * 2 >= c->stackmask) {
		size_t nm = c->stackmask ? c->stackmask * 2 + 1 : 255;
		uint32_t *nh = calloc(nm + 1, sizeof(*nh));
		if (!nh) {
			c->nomem = true;
			return false;
		}
		free(c->stackhash);
		c->stackhash = nh;
		c->stackmask = nm;
		for (size_t i = 0; i < t->nstacks; i++) {
			size_t k = frames_hash(t->stacks[i].text, t->stacks[i].ntext) & nm;
			while (nh[k])
				k = (k + 1) & nm;
			nh[k] = (uint32_t)i + 1;
		}
		return true; /* idx was among them */
	}
	size_t k = frames_hash(t->stacks[idx].text, t->stacks[idx].ntext) & c->stackmask;
	while (c->stackhash[k])
		k = (k + 1) & c->stackmask;
	c->stackhash[k] = (uint32_t)idx + 1;
	return true;
}

/* The stack id of an entry's or a block's "frames" (innermost first, as torch lists them); 0
 * when it has none. Equal frame lists share one stack. */
static uint32_t
stack_of(struct conv *c, const struct gmt_pk *frames, size_t skip, const char *where)
{
	struct gmt_trace *t = c->t;
	size_t n = 0;
	struct gmt_pk *const *items = gmt_pk_items(frames, &n);
	struct gmt_trace_textframe *f;

	if (skip <= n) {
		items += skip;
		n -= skip;
	}

	if (!frames)
		return 0;
	if (!items && frames->type != GMT_PK_LIST && frames->type != GMT_PK_TUPLE) {
		bad(c, "%s: \"frames\" is not a list: no stack", where);
		return 0;
	}
	if (n == 0 || c->nomem)
		return 0;
	if (n > GMT_TRACE_MAX_FRAMES)
		n = GMT_TRACE_MAX_FRAMES;
	if (!(f = malloc(n * sizeof(*f)))) {
		c->nomem = true;
		return 0;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_pk *fr = items[i];
		if (!fr || fr->type != GMT_PK_DICT)
			continue;
		int64_t line = gmt_pk_int(gmt_pk_get(fr, "line"), 0);
		f[k].file = intern(c, gmt_pk_str(gmt_pk_get(fr, "filename")));
		f[k].function = intern(c, gmt_pk_str(gmt_pk_get(fr, "name")));
		f[k].line = line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
		k++;
	}
	if (c->nomem || k == 0) {
		free(f);
		return 0;
	}
	if (c->stackhash) {
		size_t h = frames_hash(f, k) & c->stackmask;
		for (; c->stackhash[h]; h = (h + 1) & c->stackmask) {
			const struct gmt_trace_stack *st = &t->stacks[c->stackhash[h] - 1];
			if (same_frames(st, f, k)) {
				free(f);
				return st->id;
			}
		}
	}
	struct gmt_trace_textframe *kept = gmt_trace_mem(t, k * sizeof(*kept));
	if (kept && (t->nstacks & (t->nstacks - 1)) == 0) { /* 0, 1, 2, 4...: full */
		size_t cap = t->nstacks ? t->nstacks * 2 : 16;
		struct gmt_trace_stack *ns = realloc(t->stacks, cap * sizeof(*ns));
		if (ns)
			t->stacks = ns;
		else
			kept = NULL;
	}
	if (!kept) {
		c->nomem = true;
		free(f);
		return 0;
	}
	memcpy(kept, f, k * sizeof(*kept));
	free(f);
	struct gmt_trace_stack *st = &t->stacks[t->nstacks];
	*st = (struct gmt_trace_stack){
	    .id = (uint32_t)t->nstacks + 1,
	    .modset = -1,
	    .text = kept,
	    .ntext = (uint32_t)k,
	    .cut = (uint32_t)(n - k),
	};
	t->nstacks++;
	if (!stack_hash_put(c, t->nstacks - 1))
		return 0;
	return st->id;
}

// --- the cache, rewound --------------------------------------------------------------------------

static size_t
blk_find(const struct conv *c, uint64_t addr, bool *found)
{
	size_t lo = 0, hi = c->nblks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->blks[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < c->nblks && c->blks[lo].addr == addr;
	return lo;
}

static void
blk_put(struct conv *c, struct rblk b)
{
	bool found;
	size_t at = blk_find(c, b.addr, &found);

	if (found) {
		c->blks[at] = b;
		return;
	}
	if (!grow(c, &c->blks, &c->capblks, c->nblks, sizeof(*c->blks)))
		return;
	memmove(&c->blks[at + 1], &c->blks[at], (c->nblks - at) * sizeof(*c->blks));
	c->blks[at] = b;
	c->nblks++;
}

static void
blk_del(struct conv *c, size_t at)
{
	memmove(&c->blks[at], &c->blks[at + 1], (c->nblks - at - 1) * sizeof(*c->blks));
	c->nblks--;
}

static struct rseg *
seg_put(struct conv *c, struct rseg s)
{
	if (!grow(c, &c->segs, &c->capsegs, c->nsegs, sizeof(*c->segs)))
		return NULL;
	c->segs[c->nsegs] = s;
	return &c->segs[c->nsegs++];
}

static struct rseg *
seg_at(struct conv *c, uint64_t addr)
{
	for (size_t i = 0; i < c->nsegs; i++)
		if (addr - c->segs[i].addr < c->segs[i].size)
			return &c->segs[i];
	return NULL;
}

static void
seg_del(struct conv *c, struct rseg *s)
{
	*s = c->segs[--c->nsegs];
}

/* Take [lo, hi) out of the mapped runs (a segment_map, rewound). */
static void
unmap_range(struct conv *c, struct rent *e)
{
	uint64_t lo = e->addr, hi = e->addr + e->size;

	while (lo < hi) {
		struct rseg *s = seg_at(c, lo);
		if (!s) {
			c->mismatched++;
			return;
		}
		uint64_t end = s->addr + s->size, piece = hi < end ? hi : end;
		e->pool[0] = s->pool[0];
		e->pool[1] = s->pool[1];
		e->large = s->large;
		if (lo > s->addr && piece < end) {
			struct rseg tail = *s;
			tail.addr = piece;
			tail.size = end - piece;
			s->size = lo - s->addr;
			seg_put(c, tail);
		} else if (lo > s->addr) {
			s->size = lo - s->addr;
		} else if (piece < end) {
			s->addr = piece;
			s->size = end - piece;
		} else {
			seg_del(c, s);
		}
		lo = piece;
	}
}

/* Put [addr, addr + size) back as mapped (a segment_unmap, rewound), joining the runs around. */
static void
map_range(struct conv *c, const struct rent *e)
{
	struct rseg n = {.addr = e->addr,
			 .size = e->size,
			 .stream = e->stream,
			 .device = e->device,
			 .large = true,
			 .expandable = true};

	for (size_t i = 0; i < c->nsegs;) {
		struct rseg *s = &c->segs[i];
		if (s->expandable && s->device == n.device && s->stream == n.stream &&
		    (s->addr + s->size == n.addr || n.addr + n.size == s->addr)) {
			if (s->addr < n.addr)
				n.addr = s->addr;
			n.size += s->size;
			n.pool[0] = s->pool[0];
			n.pool[1] = s->pool[1];
			seg_del(c, s);
			continue;
		}
		i++;
	}
	seg_put(c, n);
}

/* Undo entry @p e on the cache: the cache as it was just before it. */
static void
rewind_entry(struct conv *c, struct rent *e)
{
	bool found;
	size_t at = blk_find(c, e->addr, &found);
	struct rseg *s;
	uint64_t rounded = e->size < KMIN ? KMIN : (e->size + KMIN - 1) / KMIN * KMIN;

	switch (e->action) {
	case GMT_TORCH_ALLOC:
		if (found)
			blk_del(c, at);
		else
			c->mismatched++;
		break;
	case GMT_TORCH_FREE_REQUESTED:
		if (found && c->blks[at].state == PENDING)
			c->blks[at].state = ALLOCATED;
		else /* a block pending at the end, or freed at once: the entries disagree */
			c->mismatched++;
		if (!found)
			blk_put(c, (struct rblk){e->addr, rounded, e->size, 0, ALLOCATED});
		break;
	case GMT_TORCH_FREE_COMPLETED:
		if (found) {
			c->mismatched++;
			c->blks[at].state = PENDING;
		} else {
			/* A block of a history cut short: its size is the rounding of what was
			 * asked (torch's free entries carry the requested bytes). */
			blk_put(c, (struct rblk){e->addr, rounded, e->size, 0, PENDING});
		}
		break;
	case GMT_TORCH_SEGMENT_ALLOC:
		if (!(s = seg_at(c, e->addr)) || s->addr != e->addr) {
			c->mismatched++;
			e->large = e->size != SMALL_SEGMENT;
			break;
		}
		e->pool[0] = s->pool[0];
		e->pool[1] = s->pool[1];
		e->large = s->large;
		seg_del(c, s);
		while ((at = blk_find(c, e->addr, &found)) < c->nblks &&
		       c->blks[at].addr - e->addr < e->size) {
			c->mismatched++; /* live blocks in memory not yet taken from CUDA */
			blk_del(c, at);
		}
		break;
	case GMT_TORCH_SEGMENT_FREE:
		seg_put(c, (struct rseg){.addr = e->addr,
					 .size = e->size,
					 .stream = e->stream,
					 .device = e->device,
					 .large = e->size != SMALL_SEGMENT});
		break;
	case GMT_TORCH_SEGMENT_MAP: unmap_range(c, e); break;
	case GMT_TORCH_SEGMENT_UNMAP: map_range(c, e); break;
	default: break; /* snapshot, oom: the cache as it was */
	}
}

// --- reading the pickle --------------------------------------------------------------------------

static bool
get_u64(const struct gmt_pk *d, const char *key, uint64_t *out)
{
	const struct gmt_pk *v = gmt_pk_get(d, key);

	if (!v || (v->type != GMT_PK_INT && v->type != GMT_PK_BOOL))
		return false;
	*out = (uint64_t)gmt_pk_int(v, 0);
	return true;
}

/* The end state: `segments` with their blocks. */
static void
read_segments(struct conv *c, const struct gmt_pk *segs)
{
	size_t n = 0;
	struct gmt_pk *const *items = gmt_pk_items(segs, &n);
	char where[96];

	for (size_t i = 0; i < n && !c->nomem; i++) {
		const struct gmt_pk *sg = items[i];
		struct rseg s = {0};
		uint64_t dev = 0;

		snprintf(where, sizeof(where), "segments[%zu]", i);
		if (sg->type != GMT_PK_DICT || !get_u64(sg, "address", &s.addr) ||
		    !get_u64(sg, "total_size", &s.size)) {
			bad(c,
			    "%s: not a segment (a dict with integer \"address\" and "
			    "\"total_size\"): skipped",
			    where);
			continue;
		}
		get_u64(sg, "stream", &s.stream);
		s.device = get_u64(sg, "device", &dev) && dev < INT32_MAX ? (int32_t)dev : 0;
		const char *type = gmt_pk_str(gmt_pk_get(sg, "segment_type"));
		s.large = type ? strcmp(type, "large") == 0 : s.size != SMALL_SEGMENT;
		s.expandable = gmt_pk_int(gmt_pk_get(sg, "is_expandable"), 0) != 0;
		size_t np = 0;
		struct gmt_pk *const *pool = gmt_pk_items(gmt_pk_get(sg, "segment_pool_id"), &np);
		if (np == 2) {
			s.pool[0] = (uint64_t)gmt_pk_int(pool[0], 0);
			s.pool[1] = (uint64_t)gmt_pk_int(pool[1], 0);
		}
		if (!seg_put(c, s))
			return;
		size_t nb = 0;
		struct gmt_pk *const *blocks = gmt_pk_items(gmt_pk_get(sg, "blocks"), &nb);
		for (size_t k = 0; k < nb && !c->nomem; k++) {
			const struct gmt_pk *b = blocks[k];
			struct rblk rb = {0};
			const char *state = gmt_pk_str(gmt_pk_get(b, "state"));

			snprintf(where, sizeof(where), "segments[%zu].blocks[%zu]", i, k);
			if (b->type != GMT_PK_DICT || !get_u64(b, "address", &rb.addr) ||
			    !get_u64(b, "size", &rb.size) || !state) {
				bad(c,
				    "%s: not a block (a dict with integer \"address\", \"size\" "
				    "and a \"state\"): skipped",
				    where);
				continue;
			}
			if (strcmp(state, "active_allocated") == 0)
				rb.state = ALLOCATED;
			else if (strcmp(state, "active_pending_free") == 0)
				rb.state = PENDING;
			else if (strcmp(state, "inactive") == 0)
				continue;
			else {
				bad(c, "%s: unknown state \"%s\": taken as free", where,
				    gmt_esc(state));
				continue;
			}
			if (rb.addr - s.addr >= s.size || rb.size > s.addr + s.size - rb.addr) {
				bad(c, "%s: outside its segment: skipped", where);
				continue;
			}
			get_u64(b, "requested_size", &rb.requested);
			rb.stack = stack_of(c, gmt_pk_get(b, "frames"), 0, where);
			blk_put(c, rb);
		}
	}
}

/* The trace's string index of API name @p name (few: a linear search), or -1. */
static int
api_index(struct conv *c, const char *name)
{
	struct gmt_trace *t = c->t;

	for (size_t i = 0; i < t->nstrings; i++)
		if (strcmp(t->strings[i], name) == 0)
			return (int)i;
	if (t->nstrings >= GMT_TRACE_NO_STRING - 1)
		return -1;
	char **ns = realloc(t->strings, (t->nstrings + 1) * sizeof(*ns));
	if (!ns || !(ns[t->nstrings] = strdup(name))) {
		if (ns)
			t->strings = ns;
		c->nomem = true;
		return -1;
	}
	t->strings = ns;
	return (int)t->nstrings++;
}

/*
 * Our own export (report --format pytorch-snapshot) puts the memory that was not PyTorch's cache
 * (cuBLAS workspaces, NCCL buffers, the program's own cudaMalloc) in the timeline as entries whose
 * first frame is "[not PyTorch's] API": read back, they are CUDA-level allocations again, not
 * blocks of the cache.
 */
static void
foreign(struct conv *c, struct rent *r, const struct gmt_pk *frames)
{
	static const char tag[] = "[not PyTorch's] ";
	size_t n = 0;
	struct gmt_pk *const *items = gmt_pk_items(frames, &n);
	const char *name = n ? gmt_pk_str(gmt_pk_get(items[0], "name")) : NULL;

	if (!name || strncmp(name, tag, sizeof(tag) - 1) != 0 || !name[sizeof(tag) - 1])
		return;
	if (r->action != GMT_TORCH_ALLOC && r->action != GMT_TORCH_FREE_REQUESTED &&
	    r->action != GMT_TORCH_FREE_COMPLETED)
		return;
	int i = api_index(c, name + sizeof(tag) - 1);
	if (i >= 0)
		r->api = (uint16_t)(i + 1);
}

static int
cmp_rent(const void *pa, const void *pb)
{
	const struct rent *a = pa, *b = pb;

	if (a->time_us != b->time_us)
		return a->time_us < b->time_us ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Every entry of device_traces, sorted by time; NULL with *n 0 when there are none. */
static struct rent *
read_entries(struct conv *c, const struct gmt_pk *traces, size_t *count)
{
	size_t nd = 0, n = 0, cap = 0;
	struct gmt_pk *const *devs = gmt_pk_items(traces, &nd);
	struct rent *v = NULL;
	char where[64];

	*count = 0;
	if (traces && !devs && traces->type != GMT_PK_LIST) {
		bad(c, "\"device_traces\" is not a list: no history read");
		return NULL;
	}
	for (size_t d = 0; d < nd && d < INT32_MAX && !c->nomem; d++) {
		size_t ne = 0;
		struct gmt_pk *const *es = gmt_pk_items(devs[d], &ne);
		for (size_t i = 0; i < ne && !c->nomem; i++) {
			const struct gmt_pk *e = es[i];
			const char *action = gmt_pk_str(gmt_pk_get(e, "action"));
			struct rent r = {.e = e, .device = (int32_t)d, .index = (uint32_t)i};
			uint64_t tu = 0;

			snprintf(where, sizeof(where), "device_traces[%zu][%zu]", d, i);
			if (e->type != GMT_PK_DICT || !action) {
				bad(c, "%s: not a trace entry (a dict with an \"action\"): skipped",
				    where);
				continue;
			}
			r.action = (uint8_t)gmt_torch_action_from_name(action);
			if (!r.action || r.action == GMT_TORCH_STATE_SEGMENT ||
			    r.action == GMT_TORCH_STATE_BLOCK) {
				bad(c, "%s: unknown action \"%s\": skipped", where,
				    gmt_esc(action));
				continue;
			}
			/* an OOM's free bytes: "device_free" in torch's, "addr" in older ones */
			bool addr =
			    (r.action == GMT_TORCH_OOM && get_u64(e, "device_free", &r.addr)) ||
			    get_u64(e, "addr", &r.addr);
			if (!addr || !get_u64(e, "size", &r.size)) {
				bad(c, "%s: no integer \"addr\" and \"size\": skipped", where);
				continue;
			}
			get_u64(e, "stream", &r.stream);
			get_u64(e, "time_us", &tu);
			r.time_us = (int64_t)tu;
			foreign(c, &r, gmt_pk_get(e, "frames"));
			r.stack = stack_of(c, gmt_pk_get(e, "frames"), r.api ? 1 : 0, where);
			if (!grow(c, &v, &cap, n, sizeof(*v)))
				break;
			v[n++] = r;
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_rent);
	*count = n;
	return v;
}

static struct gmt_trace_event *
push(struct conv *c, uint8_t action, int32_t device, uint64_t ts)
{
	if (!grow(c, &c->ev, &c->capev, c->nev, sizeof(*c->ev)))
		return NULL;
	struct gmt_trace_event *ev = &c->ev[c->nev++];
	*ev = (struct gmt_trace_event){
	    .seq = c->nev,
	    .ts = ts,
	    .line = (uint32_t)c->nev,
	    .device = device,
	    .api = GMT_TRACE_NO_STRING,
	    .driver = GMT_TRACE_NO_STRING,
	    .op = GMT_OP_BLOCK,
	    .kind = action,
	};
	c->t->nblocks++;
	return ev;
}

/* A CUDA-level allocation of our export (foreign()): its alloc and its free_completed. */
static void
cuda_event(struct conv *c, const struct rent *r, uint64_t ts)
{
	if (r->action == GMT_TORCH_FREE_REQUESTED)
		return; /* a cudaFree is one event: the export wrote it twice */
	if (!grow(c, &c->ev, &c->capev, c->nev, sizeof(*c->ev)))
		return;
	struct gmt_trace_event *ev = &c->ev[c->nev++];
	*ev = (struct gmt_trace_event){
	    .seq = c->nev,
	    .ts = ts,
	    .ptr = r->addr,
	    .size = r->action == GMT_TORCH_ALLOC ? r->size : 0,
	    .stack = r->stack,
	    .line = (uint32_t)c->nev,
	    .device = r->device,
	    .api = (uint16_t)(r->api - 1),
	    .driver = GMT_TRACE_NO_STRING,
	    .op = r->action == GMT_TORCH_ALLOC ? GMT_OP_ALLOC : GMT_OP_FREE,
	    .kind = GMT_TK_DEVICE,
	};
}

static int
cmp_rseg(const void *pa, const void *pb)
{
	const struct rseg *a = pa, *b = pb;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The rewound cache as segment_state and block_state events (free blocks fill the gaps). */
static void
backfill(struct conv *c)
{
	if (c->nsegs > 1)
		qsort(c->segs, c->nsegs, sizeof(*c->segs), cmp_rseg);
	size_t b = 0;
	for (size_t i = 0; i < c->nsegs && !c->nomem; i++) {
		const struct rseg *s = &c->segs[i];
		struct gmt_trace_event *ev = push(c, GMT_TORCH_STATE_SEGMENT, s->device, 0);
		if (!ev)
			return;
		ev->ptr = s->addr;
		ev->size = s->size;
		ev->handle = s->stream;
		ev->offset = s->pool[0];
		ev->context = s->pool[1];
		ev->result = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_HAS_POOL |
			     (s->large ? GMT_TORCH_F_LARGE : 0) |
			     (s->expandable ? GMT_TORCH_F_EXPANDABLE : 0);
		uint64_t at = s->addr, end = s->addr + s->size;
		for (; b < c->nblks && c->blks[b].addr < s->addr; b++)
			c->mismatched++; /* a live block in no segment */
		for (; b <= c->nblks && at < end; b++) {
			const struct rblk *k =
			    b < c->nblks && c->blks[b].addr < end ? &c->blks[b] : NULL;
			uint64_t gap_end = k ? k->addr : end;
			if (gap_end > at) {
				if (!(ev = push(c, GMT_TORCH_STATE_BLOCK, s->device, 0)))
					return;
				ev->ptr = at;
				ev->size = gap_end - at;
				ev->handle = s->stream;
				ev->result = GMT_TORCH_F_HAS_DEVICE;
			}
			if (!k)
				break;
			if (!(ev = push(c, GMT_TORCH_STATE_BLOCK, s->device, 0)))
				return;
			ev->ptr = k->addr;
			ev->size = k->size;
			ev->requested = k->state == ALLOCATED ? k->requested : 0;
			ev->handle = s->stream;
			ev->stack = k->stack;
			ev->result = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_ACTIVE |
				     (k->state == ALLOCATED ? GMT_TORCH_F_ALLOCATED : 0);
			at = k->addr + k->size;
		}
	}
	if (b < c->nblks)
		c->mismatched += c->nblks - b; /* live blocks above every segment */
}

static char *
dup_or_null(struct conv *c, const char *s)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		c->nomem = true;
	return d;
}

/* The snapshot @p root (a dict, checked) into the trace. */
static void
convert(struct conv *c, const struct gmt_pk *root)
{
	struct gmt_trace *t = c->t;
	const struct gmt_pk *settings = gmt_pk_get(root, "allocator_settings");
	size_t n = 0;
	struct rent *es;
	int64_t t0 = 0;

	read_segments(c, gmt_pk_get(root, "segments"));
	es = read_entries(c, gmt_pk_get(root, "device_traces"), &n);
	if (c->nomem) {
		free(es);
		return;
	}
	for (size_t i = n; i-- > 0;)
		if (!es[i].api)
			rewind_entry(c, &es[i]);
	backfill(c);
	if (n)
		t0 = es[0].time_us;
	for (size_t i = 0; i < n && !c->nomem; i++) {
		const struct rent *r = &es[i];
		uint64_t ts = (uint64_t)(r->time_us - t0) * 1000;
		if (r->api) {
			cuda_event(c, r, ts);
			continue;
		}
		struct gmt_trace_event *ev = push(c, r->action, r->device, ts);
		if (!ev)
			break;
		ev->size = r->size;
		ev->handle = r->stream;
		ev->stack = r->stack;
		ev->result = GMT_TORCH_F_HAS_DEVICE;
		if (r->action == GMT_TORCH_OOM) {
			ev->free_bytes = r->addr; /* torch's OOM entry: the device's free bytes */
		} else {
			ev->ptr = r->addr;
		}
		if (r->action == GMT_TORCH_SEGMENT_ALLOC || r->action == GMT_TORCH_SEGMENT_MAP) {
			ev->offset = r->pool[0];
			ev->context = r->pool[1];
			ev->result |= GMT_TORCH_F_HAS_POOL | (r->large ? GMT_TORCH_F_LARGE : 0);
		}
	}
	free(es);

	/* the header: no process, the time of the first entry as its start */
	t->have_header = true;
	t->version = GMT_FORMAT_VERSION;
	t->start_ts = 0;
	t->start_unix_ns = (uint64_t)t0 * 1000;
	t->last_ts = c->nev ? c->ev[c->nev - 1].ts : 0;
	t->have_ts = true;
	t->complete = true;
	t->trailer_events = c->nev;
	t->lines = c->nev;
	t->coverage = dup_or_null(c, "PyTorch snapshot: the caching allocator's blocks only, no "
				     "CUDA-level events");
	/* the torch line */
	const char *conf = gmt_pk_str(gmt_pk_get(settings, "PYTORCH_CUDA_ALLOC_CONF"));
	char detail[256];
	snprintf(detail, sizeof(detail),
		 "read from a PyTorch memory snapshot: %zu trace entries, %zu segments at the end; "
		 "the cache before the first entry rewound from the end",
		 n, c->nsegs);
	t->have_torch = true;
	t->torch_backend = dup_or_null(c, "native");
	t->torch_alloc_conf = dup_or_null(c, conf ? conf : "");
	t->torch_layer = dup_or_null(c, "blocks");
	t->torch_detail = dup_or_null(c, detail);
	if (c->mismatched)
		fprintf(c->diag,
			"%s: note: %" PRIu64 " trace entries do not fit the snapshot's segments "
			"(read as torch wrote them; the cache before them is a best guess)\n",
			c->epath, c->mismatched);
}

/* Why @p root is not a snapshot, or NULL when it is one. */
static const char *
not_snapshot(const struct gmt_pk *root)
{
	static const char *const names[] = {
	    [GMT_PK_NONE] = "None",	[GMT_PK_BOOL] = "a bool",   [GMT_PK_INT] = "an int",
	    [GMT_PK_BIGINT] = "an int", [GMT_PK_FLOAT] = "a float", [GMT_PK_STR] = "a str",
	    [GMT_PK_BYTES] = "bytes",	[GMT_PK_LIST] = "a list",   [GMT_PK_TUPLE] = "a tuple",
	    [GMT_PK_DICT] = "a dict",
	};
	static char why[96];
	const struct gmt_pk *segs;

	if (root->type != GMT_PK_DICT) {
		snprintf(why, sizeof(why), "the pickle holds %s, not a dict with \"segments\"",
			 names[root->type]);
		return why;
	}
	segs = gmt_pk_get(root, "segments");
	if (!segs || segs->type != GMT_PK_LIST)
		return "the pickle's dict has no \"segments\" list";
	return NULL;
}

enum gmt_trace_status
gmt_snapshot_read(FILE *f,
		  const char *path,
		  FILE *diag,
		  const struct gmt_trace_sink *sink,
		  struct gmt_trace **out)
{
	struct conv c = {.diag = diag};
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;
	struct gmt_pk_doc *doc = NULL;
	char err[256];
	int rc;

	*out = NULL;
	if (!(c.epath = strdup(gmt_esc(path))))
		goto nomem;
	do {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 1 << 16;
			uint8_t *nb = realloc(buf, nc);
			if (!nb)
				goto nomem;
			buf = nb;
			cap = nc;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		fprintf(diag, "%s: read error: %s\n", c.epath, strerror(errno ? errno : EIO));
		goto unreadable;
	}
	if (len == 0) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: empty file\n", c.epath);
		goto unreadable;
	}
	if (buf[0] != 0x80) {
		fprintf(diag,
			"%s: not a PyTorch memory snapshot: not a pickle of protocol 2 or later "
			"(first byte 0x%02x, not 0x80)\n",
			c.epath, buf[0]);
		goto unreadable;
	}
	rc = gmt_pk_parse(buf, len, &doc, err, sizeof(err));
	free(buf);
	buf = NULL;
	if (rc == -ENOMEM)
		goto nomem;
	if (rc) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: %s\n", c.epath, gmt_esc(err));
		goto unreadable;
	}
	const char *why = not_snapshot(gmt_pk_root(doc));
	if (why) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: %s\n", c.epath, why);
		goto unreadable;
	}
	if (!(c.t = calloc(1, sizeof(*c.t))) || !(c.t->path = strdup(path)))
		goto nomem;
	c.t->from_snapshot = true;
	c.t->pid = c.t->ppid = c.t->forked_from = -1;
	c.t->rank = c.t->local_rank = c.t->world_size = -1;
	convert(&c, gmt_pk_root(doc));
	gmt_pk_free(doc);
	doc = NULL;
	if (c.nomem)
		goto nomem;
	if (c.shown < c.bad)
		fprintf(diag, "%s: %zu more entries not as torch writes them, not shown\n", c.epath,
			c.bad - c.shown);
	c.t->bad_lines = c.bad;
	c.t->nevents = c.nev;
	if (sink) {
		for (size_t i = 0; i < c.nev; i++)
			sink->event(sink->ctx, c.t, &c.ev[i]);
		free(c.ev);
	} else {
		c.t->events = c.ev;
	}
	c.ev = NULL;
	*out = c.t;
	c.t = NULL;
	rc = GMT_TRACE_OK;
	goto done;

nomem:
	fprintf(diag, "%s: out of memory\n", c.epath ? c.epath : gmt_esc(path));
unreadable:
	rc = GMT_TRACE_UNREADABLE;
done:
	free(buf);
	gmt_pk_free(doc);
	gmt_trace_free(c.t);
	free(c.ev);
	free(c.segs);
	free(c.blks);
	free(c.strs);
	free(c.stackhash);
	free(c.epath);
	return (enum gmt_trace_status)rc;
}
