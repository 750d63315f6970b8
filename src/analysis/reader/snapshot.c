/*
 * @brief A PyTorch memory snapshot pickle read as a trace of block events (see snapshot.h).
 *
 * Bounded by its input: the pickle's tree is a DAG (memo references share parts), so every
 * lookup of the conversion (a dict key compared, an item reached) is counted against a budget of
 * WORK_PER_BYTE per byte of the file, and the parts a snapshot holds once (a segment, a block,
 * an entry, a device's list) are read once however often they are referenced; the frames lists
 * torch itself shares are made into a stack once (the mark of their node). The rewound cache is
 * two ordered maps (blocks and segments by address), so no order of the entries is quadratic,
 * and the entries are read straight into the trace's event array.
 */
#define _GNU_SOURCE
#include "analysis/reader/snapshot.h"
#include "analysis/reader/pickle.h"
#include "format/kinds.h"
#include "format/torch_entry.h"
#include "util/esc.h"
#include "util/hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Entries named as not what torch writes; then a count. */
#define MAX_DIAG 20

/*
 * The work budget (docs/report-formats.md, "Limits"): lookups per byte of the pickle, and a floor
 * for small files. A snapshot torch writes costs about 1 per byte (tests/analysis/
 * test_snapshots.py, case limits); past the budget the file is refused, not read in part.
 */
#define WORK_PER_BYTE 16u
#define WORK_FLOOR (1u << 22)

#define KMIN 512u
#define SMALL_SEGMENT (2u << 20) /* torch's kSmallBuffer: every small-pool segment */

enum { FREE = 0, ALLOCATED, PENDING };

/* Marks on the pickle's containers (gmt_pk_set_mark): the low two bits say which. */
enum {
	MARK_READ = 1,	 /* a segment, block or entry dict, a blocks list: read (value: 0) or a
			    device's entries list (value: the device + 1) */
	MARK_STACK = 2,	 /* a frames list: its stack id is the value */
	MARK_STACK1 = 3, /* the same, its first frame skipped (foreign()) */
};
#define MARK(kind, value) ((uint32_t)(value) << 2 | (kind))
#define MARK_MAX (UINT32_MAX >> 2)

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

/*
 * An ordered map by address (an AVL tree over an array, index 0 the empty tree): find, insert,
 * erase, the nearest key above or below, all O(log n) whatever order the keys come in. Each node
 * has its value (a struct rseg or rblk) at the same index of `vals`.
 */
struct onode {
	uint64_t key;
	uint32_t l, r, h;
};

struct omap {
	struct onode *n;
	unsigned char *vals;
	size_t vsize, len, cap; /* len: nodes in the tree; cap: of the arrays (node 0 unused) */
	uint32_t root, freel, used;
};

struct conv {
	struct gmt_trace *t;
	struct gmt_pk_doc *doc;
	FILE *diag;
	char *epath;
	size_t shown, bad;
	bool nomem, over;
	uint64_t work, budget; /* lookups done, and allowed */
	/* interned strings and stacks: open addressing, index + 1, 0 empty */
	const char **strs;
	size_t nstrs, strmask;
	uint32_t *stackhash;
	size_t stackmask;
	struct omap segs; /* struct rseg by address */
	struct omap blks; /* struct rblk by address */
	/*
	 * The events. While reading: the trace entries, one event each (ts the entry's time_us,
	 * line its index in its device's list, kind its action, api its CUDA API's string index +
	 * 1 or 0, handle the stream, offset/context the pool and GMT_TORCH_F_LARGE in result, both
	 * filled while rewinding); then the backfill ahead of them, and the entries made events in
	 * place.
	 */
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

/* Out of memory or over the budget: stop reading. */
static bool
halted(const struct conv *c)
{
	return c->nomem || c->over;
}

/* @p n more lookups; false past the budget. */
static bool
spend(struct conv *c, uint64_t n)
{
	c->work += n;
	if (c->work > c->budget)
		c->over = true;
	return !c->over;
}

/* dict[key] as gmt_pk_get() finds it, its cost counted (a key compared per item at worst). */
static const struct gmt_pk *
get(struct conv *c, const struct gmt_pk *d, const char *key)
{
	if (!spend(c, 1 + gmt_pk_dict_len(d)))
		return NULL;
	return gmt_pk_get(d, key);
}

/* Items of a list (gmt_pk_items), each counted as reached. */
static struct gmt_pk *const *
items_of(struct conv *c, const struct gmt_pk *v, size_t *n)
{
	struct gmt_pk *const *items = gmt_pk_items(v, n);

	if (!spend(c, 1 + *n)) {
		*n = 0;
		return NULL;
	}
	return items;
}

/* Whether @p v (a container) was read before, through another memo reference; marks it read. */
static bool
seen(struct conv *c, const struct gmt_pk *v)
{
	if (gmt_pk_mark(v))
		return true;
	gmt_pk_set_mark(c->doc, v, MARK(MARK_READ, 0));
	return false;
}

// --- ordered maps ------------------------------------------------------------------------------

static void
omap_init(struct omap *m, size_t vsize)
{
	*m = (struct omap){.vsize = vsize};
}

static void
omap_free(struct omap *m)
{
	free(m->n);
	free(m->vals);
	*m = (struct omap){0};
}

static void *
omap_val(const struct omap *m, uint32_t i)
{
	return m->vals + (size_t)i * m->vsize;
}

static uint32_t
oh(const struct omap *m, uint32_t i)
{
	return i ? m->n[i].h : 0;
}

static void
ofix(struct omap *m, uint32_t i)
{
	uint32_t a = oh(m, m->n[i].l), b = oh(m, m->n[i].r);
	m->n[i].h = (a > b ? a : b) + 1;
}

static uint32_t
orot_right(struct omap *m, uint32_t i)
{
	uint32_t l = m->n[i].l;
	m->n[i].l = m->n[l].r;
	m->n[l].r = i;
	ofix(m, i);
	ofix(m, l);
	return l;
}

static uint32_t
orot_left(struct omap *m, uint32_t i)
{
	uint32_t r = m->n[i].r;
	m->n[i].r = m->n[r].l;
	m->n[r].l = i;
	ofix(m, i);
	ofix(m, r);
	return r;
}

static uint32_t
obalance(struct omap *m, uint32_t i)
{
	ofix(m, i);
	int64_t bf = (int64_t)oh(m, m->n[i].l) - oh(m, m->n[i].r);
	if (bf > 1) {
		if (oh(m, m->n[m->n[i].l].l) < oh(m, m->n[m->n[i].l].r))
			m->n[i].l = orot_left(m, m->n[i].l);
		return orot_right(m, i);
	}
	if (bf < -1) {
		if (oh(m, m->n[m->n[i].r].r) < oh(m, m->n[m->n[i].r].l))
			m->n[i].r = orot_right(m, m->n[i].r);
		return orot_left(m, i);
	}
	return i;
}

/* Node @p x (its key set) into the subtree at @p i; *dup set when the key is there already. */
static uint32_t
oinsert(struct omap *m, uint32_t i, uint32_t x, bool *dup)
{
	if (!i)
		return x;
	if (m->n[x].key == m->n[i].key) {
		*dup = true;
		return i;
	}
	if (m->n[x].key < m->n[i].key)
		m->n[i].l = oinsert(m, m->n[i].l, x, dup);
	else
		m->n[i].r = oinsert(m, m->n[i].r, x, dup);
	return *dup ? i : obalance(m, i);
}

/* The subtree at @p i without its smallest node (put in *min). */
static uint32_t
oerase_min(struct omap *m, uint32_t i, uint32_t *min)
{
	if (!m->n[i].l) {
		*min = i;
		return m->n[i].r;
	}
	m->n[i].l = oerase_min(m, m->n[i].l, min);
	return obalance(m, i);
}

static uint32_t
oerase(struct omap *m, uint32_t i, uint64_t key, uint32_t *gone)
{
	if (!i)
		return 0;
	if (key < m->n[i].key) {
		m->n[i].l = oerase(m, m->n[i].l, key, gone);
	} else if (key > m->n[i].key) {
		m->n[i].r = oerase(m, m->n[i].r, key, gone);
	} else {
		uint32_t l = m->n[i].l, r = m->n[i].r, min;
		*gone = i;
		if (!r)
			return l;
		r = oerase_min(m, r, &min);
		m->n[min].l = l;
		m->n[min].r = r;
		return obalance(m, min);
	}
	return obalance(m, i);
}

/* Insert @p val at @p key: its index, 0 when the key is there already (or out of memory). */
static uint32_t
omap_put(struct conv *c, struct omap *m, uint64_t key, const void *val)
{
	uint32_t x = m->freel;
	bool dup = false;

	if (x) {
		m->freel = m->n[x].l;
	} else {
		if ((size_t)m->used + 1 >= m->cap) {
			size_t nc = m->cap ? m->cap * 2 : 64;
			if (nc > UINT32_MAX) {
				c->nomem = true;
				return 0;
			}
			struct onode *nn = realloc(m->n, nc * sizeof(*nn));
			if (nn)
				m->n = nn;
			unsigned char *nv = nn ? realloc(m->vals, nc * m->vsize) : NULL;
			if (!nv) {
				c->nomem = true;
				return 0;
			}
			m->vals = nv;
			m->cap = nc;
		}
		x = ++m->used;
	}
	m->n[x] = (struct onode){.key = key, .h = 1};
	m->root = oinsert(m, m->root, x, &dup);
	if (dup) {
		m->n[x].l = m->freel;
		m->freel = x;
		return 0;
	}
	memcpy(omap_val(m, x), val, m->vsize);
	m->len++;
	return x;
}

static void
omap_del(struct omap *m, uint64_t key)
{
	uint32_t gone = 0;

	m->root = oerase(m, m->root, key, &gone);
	if (gone) {
		m->n[gone].l = m->freel;
		m->freel = gone;
		m->len--;
	}
}

static uint32_t
omap_find(const struct omap *m, uint64_t key)
{
	uint32_t i = m->root;

	while (i && m->n[i].key != key)
		i = key < m->n[i].key ? m->n[i].l : m->n[i].r;
	return i;
}

/* The node of the smallest key >= @p key (above: > @p key), or 0. */
static uint32_t
omap_ceil(const struct omap *m, uint64_t key, bool above)
{
	uint32_t i = m->root, best = 0;

	while (i) {
		if (m->n[i].key > key || (!above && m->n[i].key == key)) {
			best = i;
			i = m->n[i].l;
		} else {
			i = m->n[i].r;
		}
	}
	return best;
}

/* The node of the largest key <= @p key, or 0. */
static uint32_t
omap_floor(const struct omap *m, uint64_t key)
{
	uint32_t i = m->root, best = 0;

	while (i) {
		if (m->n[i].key <= key) {
			best = i;
			i = m->n[i].r;
		} else {
			i = m->n[i].l;
		}
	}
	return best;
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
 * when it has none. Equal frame lists share one stack; a frames list reached again (torch shares
 * them between the entries and blocks of one traceback) is its stack at once. */
static uint32_t
stack_of(struct conv *c, const struct gmt_pk *frames, size_t skip, const char *where)
{
	struct gmt_trace *t = c->t;
	size_t n = 0;
	struct gmt_pk *const *items;
	struct gmt_trace_textframe *f;
	uint32_t kind = skip ? MARK_STACK1 : MARK_STACK, mark = gmt_pk_mark(frames);

	if (!frames || halted(c))
		return 0;
	if (frames->type != GMT_PK_LIST && frames->type != GMT_PK_TUPLE) {
		bad(c, "%s: \"frames\" is not a list: no stack", where);
		return 0;
	}
	if ((mark & 3) == kind)
		return mark >> 2;
	items = items_of(c, frames, &n);
	if (n && skip <= n) { /* (an empty list has no items: NULL) */
		items += skip;
		n -= skip;
	}
	if (n == 0 || halted(c))
		return 0;
	if (n > GMT_TRACE_MAX_FRAMES)
		n = GMT_TRACE_MAX_FRAMES;
	if (!(f = malloc(n * sizeof(*f)))) {
		c->nomem = true;
		return 0;
	}
	size_t k = 0;
	for (size_t i = 0; i < n && !halted(c); i++) {
		const struct gmt_pk *fr = items[i];
		if (!fr || fr->type != GMT_PK_DICT)
			continue;
		int64_t line = gmt_pk_int(get(c, fr, "line"), 0);
		f[k].file = intern(c, gmt_pk_str(get(c, fr, "filename")));
		f[k].function = intern(c, gmt_pk_str(get(c, fr, "name")));
		f[k].line = line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
		k++;
	}
	if (halted(c) || k == 0) {
		free(f);
		return 0;
	}
	uint32_t id = 0;
	if (c->stackhash) {
		size_t h = frames_hash(f, k) & c->stackmask;
		for (; c->stackhash[h]; h = (h + 1) & c->stackmask) {
			const struct gmt_trace_stack *st = &t->stacks[c->stackhash[h] - 1];
			if (same_frames(st, f, k)) {
				id = st->id;
				break;
			}
		}
	}
	if (!id) {
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
		struct gmt_trace_stack *st = &t->stacks[t->nstacks];
		*st = (struct gmt_trace_stack){
		    .id = (uint32_t)t->nstacks + 1,
		    .modset = -1,
		    .text = kept,
		    .ntext = (uint32_t)k,
		    .cut = (uint32_t)(n - k),
		};
		t->nstacks++;
		if (!stack_hash_put(c, t->nstacks - 1)) {
			free(f);
			return 0;
		}
		id = st->id;
	}
	free(f);
	if (!mark && id <= MARK_MAX)
		gmt_pk_set_mark(c->doc, frames, MARK(kind, id));
	return id;
}

// --- the cache, rewound --------------------------------------------------------------------------

static struct rblk *
blk_at(struct conv *c, uint32_t i)
{
	return i ? omap_val(&c->blks, i) : NULL;
}

static struct rseg *
seg_of(struct conv *c, uint32_t i)
{
	return i ? omap_val(&c->segs, i) : NULL;
}

/* A segment put in the cache; false when one starts at its address already (or out of memory). */
static bool
seg_put(struct conv *c, const struct rseg *s)
{
	return omap_put(c, &c->segs, s->addr, s) != 0;
}

/* The segment holding @p addr, or NULL. */
static struct rseg *
seg_at(struct conv *c, uint64_t addr)
{
	struct rseg *s = seg_of(c, omap_floor(&c->segs, addr));
	return s && addr - s->addr < s->size ? s : NULL;
}

/* Take [lo, hi) out of the mapped runs (a segment_map, rewound). */
static void
unmap_range(struct conv *c, struct gmt_trace_event *e)
{
	uint64_t lo = e->ptr, hi = e->ptr + e->size;

	while (lo < hi && !c->nomem) {
		struct rseg *s = seg_at(c, lo);
		if (!s) {
			c->mismatched++;
			return;
		}
		struct rseg was = *s;
		uint64_t end = was.addr + was.size, piece = hi < end ? hi : end;
		e->offset = was.pool[0];
		e->context = was.pool[1];
		e->result = was.large ? GMT_TORCH_F_LARGE : 0;
		if (lo > was.addr) {
			s->size = lo - was.addr; /* the head stays */
		} else {
			omap_del(&c->segs, was.addr);
		}
		if (piece < end) {
			struct rseg tail = was;
			tail.addr = piece;
			tail.size = end - piece;
			if (!seg_put(c, &tail) && !c->nomem)
				c->mismatched++;
		}
		lo = piece;
	}
}

static bool
joins(const struct rseg *s, const struct rseg *n)
{
	return s && s->expandable && s->device == n->device && s->stream == n->stream;
}

/* Put [addr, addr + size) back as mapped (a segment_unmap, rewound), joining the runs around. */
static void
map_range(struct conv *c, const struct gmt_trace_event *e)
{
	struct rseg n = {.addr = e->ptr,
			 .size = e->size,
			 .stream = e->handle,
			 .device = e->device,
			 .large = true,
			 .expandable = true};
	struct rseg *s = n.addr ? seg_of(c, omap_floor(&c->segs, n.addr - 1)) : NULL;

	if (joins(s, &n) && s->addr + s->size == n.addr) {
		n.addr = s->addr;
		n.size += s->size;
		n.pool[0] = s->pool[0];
		n.pool[1] = s->pool[1];
		omap_del(&c->segs, s->addr);
	}
	s = seg_of(c, omap_find(&c->segs, n.addr + n.size));
	if (joins(s, &n)) {
		n.size += s->size;
		n.pool[0] = s->pool[0];
		n.pool[1] = s->pool[1];
		omap_del(&c->segs, s->addr);
	}
	if (!seg_put(c, &n) && !c->nomem)
		c->mismatched++;
}

/* Undo entry @p e on the cache: the cache as it was just before it. */
static void
rewind_entry(struct conv *c, struct gmt_trace_event *e)
{
	struct rblk *b = blk_at(c, omap_find(&c->blks, e->ptr));
	struct rseg *s;
	uint64_t rounded = e->size < KMIN ? KMIN : (e->size + KMIN - 1) / KMIN * KMIN;

	switch (e->kind) {
	case GMT_TORCH_ALLOC:
		if (b)
			omap_del(&c->blks, e->ptr);
		else
			c->mismatched++;
		break;
	case GMT_TORCH_FREE_REQUESTED:
		if (b && b->state == PENDING) {
			b->state = ALLOCATED;
		} else { /* a block pending at the end, or freed at once: the entries disagree */
			c->mismatched++;
			if (!b)
				omap_put(c, &c->blks, e->ptr,
					 &(struct rblk){e->ptr, rounded, e->size, 0, ALLOCATED});
		}
		break;
	case GMT_TORCH_FREE_COMPLETED:
		if (b) {
			c->mismatched++;
			b->state = PENDING;
		} else {
			/* A block of a history cut short: its size is the rounding of what was
			 * asked (torch's free entries carry the requested bytes). */
			omap_put(c, &c->blks, e->ptr,
				 &(struct rblk){e->ptr, rounded, e->size, 0, PENDING});
		}
		break;
	case GMT_TORCH_SEGMENT_ALLOC:
		if (!(s = seg_at(c, e->ptr)) || s->addr != e->ptr) {
			c->mismatched++;
			e->result = e->size != SMALL_SEGMENT ? GMT_TORCH_F_LARGE : 0;
			break;
		}
		e->offset = s->pool[0];
		e->context = s->pool[1];
		e->result = s->large ? GMT_TORCH_F_LARGE : 0;
		omap_del(&c->segs, e->ptr);
		for (uint32_t i; (i = omap_ceil(&c->blks, e->ptr, false)) &&
				 c->blks.n[i].key - e->ptr < e->size;) {
			c->mismatched++; /* live blocks in memory not yet taken from CUDA */
			omap_del(&c->blks, c->blks.n[i].key);
		}
		break;
	case GMT_TORCH_SEGMENT_FREE:
		if (!seg_put(c, &(struct rseg){.addr = e->ptr,
					       .size = e->size,
					       .stream = e->handle,
					       .device = e->device,
					       .large = e->size != SMALL_SEGMENT}) &&
		    !c->nomem)
			c->mismatched++; /* a segment there already */
		break;
	case GMT_TORCH_SEGMENT_MAP: unmap_range(c, e); break;
	case GMT_TORCH_SEGMENT_UNMAP: map_range(c, e); break;
	default: break; /* snapshot, oom: the cache as it was */
	}
}

// --- reading the pickle --------------------------------------------------------------------------

static bool
get_u64(struct conv *c, const struct gmt_pk *d, const char *key, uint64_t *out)
{
	const struct gmt_pk *v = get(c, d, key);

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
	struct gmt_pk *const *items = items_of(c, segs, &n);
	char where[96];

	for (size_t i = 0; i < n && !halted(c); i++) {
		const struct gmt_pk *sg = items[i];
		struct rseg s = {0};
		uint64_t dev = 0;

		snprintf(where, sizeof(where), "segments[%zu]", i);
		if (sg->type != GMT_PK_DICT || !get_u64(c, sg, "address", &s.addr) ||
		    !get_u64(c, sg, "total_size", &s.size)) {
			if (!halted(c))
				bad(c,
				    "%s: not a segment (a dict with integer \"address\" and "
				    "\"total_size\"): skipped",
				    where);
			continue;
		}
		if (seen(c, sg)) {
			bad(c, "%s: a segment read already (a memo reference to it): skipped",
			    where);
			continue;
		}
		get_u64(c, sg, "stream", &s.stream);
		s.device = get_u64(c, sg, "device", &dev) && dev < INT32_MAX ? (int32_t)dev : 0;
		const char *type = gmt_pk_str(get(c, sg, "segment_type"));
		s.large = type ? strcmp(type, "large") == 0 : s.size != SMALL_SEGMENT;
		s.expandable = gmt_pk_int(get(c, sg, "is_expandable"), 0) != 0;
		size_t np = 0;
		struct gmt_pk *const *pool = gmt_pk_items(get(c, sg, "segment_pool_id"), &np);
		if (np == 2) {
			s.pool[0] = (uint64_t)gmt_pk_int(pool[0], 0);
			s.pool[1] = (uint64_t)gmt_pk_int(pool[1], 0);
		}
		if (!seg_put(c, &s)) {
			if (!c->nomem)
				bad(c, "%s: at the address of another segment: skipped", where);
			continue;
		}
		const struct gmt_pk *bl = get(c, sg, "blocks");
		size_t nb = 0;
		if (gmt_pk_items(bl, &nb) && nb && seen(c, bl)) {
			bad(c,
			    "%s.blocks: the blocks of another segment (a memo reference): skipped",
			    where);
			continue;
		}
		struct gmt_pk *const *blocks = items_of(c, bl, &nb);
		for (size_t k = 0; k < nb && !halted(c); k++) {
			const struct gmt_pk *b = blocks[k];
			struct rblk rb = {0};
			const char *state = gmt_pk_str(get(c, b, "state"));

			snprintf(where, sizeof(where), "segments[%zu].blocks[%zu]", i, k);
			if (b->type != GMT_PK_DICT || !get_u64(c, b, "address", &rb.addr) ||
			    !get_u64(c, b, "size", &rb.size) || !state) {
				if (!halted(c))
					bad(c,
					    "%s: not a block (a dict with integer \"address\", "
					    "\"size\" and a \"state\"): skipped",
					    where);
				continue;
			}
			if (seen(c, b)) {
				bad(c, "%s: a block read already (a memo reference to it): skipped",
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
			get_u64(c, b, "requested_size", &rb.requested);
			rb.stack = stack_of(c, get(c, b, "frames"), 0, where);
			struct rblk *was = blk_at(c, omap_find(&c->blks, rb.addr));
			if (was)
				*was = rb; /* a block listed twice: the last one */
			else
				omap_put(c, &c->blks, rb.addr, &rb);
		}
	}
}

/* The trace's string index of API name @p name (few: a linear search, counted), or -1. */
static int
api_index(struct conv *c, const char *name)
{
	struct gmt_trace *t = c->t;

	if (!spend(c, t->nstrings))
		return -1;
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
foreign(struct conv *c, struct gmt_trace_event *r, const struct gmt_pk *frames)
{
	static const char tag[] = "[not PyTorch's] ";
	size_t n = 0;
	struct gmt_pk *const *items = gmt_pk_items(frames, &n);
	const char *name = n ? gmt_pk_str(get(c, items[0], "name")) : NULL;

	if (!name || strncmp(name, tag, sizeof(tag) - 1) != 0 || !name[sizeof(tag) - 1])
		return;
	if (r->kind != GMT_TORCH_ALLOC && r->kind != GMT_TORCH_FREE_REQUESTED &&
	    r->kind != GMT_TORCH_FREE_COMPLETED)
		return;
	int i = api_index(c, name + sizeof(tag) - 1);
	if (i >= 0)
		r->api = (uint16_t)(i + 1);
}

static int
cmp_entry(const void *pa, const void *pb)
{
	const struct gmt_trace_event *a = pa, *b = pb;
	int64_t ta = (int64_t)a->ts, tb = (int64_t)b->ts;

	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/* Every entry of device_traces into c->ev (see struct conv), sorted by time. */
static void
read_entries(struct conv *c, const struct gmt_pk *traces)
{
	size_t nd = 0, total = 0;
	struct gmt_pk *const *devs = items_of(c, traces, &nd);
	char where[64];

	if (traces && !devs && traces->type != GMT_PK_LIST) {
		bad(c, "\"device_traces\" is not a list: no history read");
		return;
	}
	/* the room: every device's list counted once, however often it is referenced */
	for (size_t d = 0; d < nd && d < MARK_MAX - 1; d++) {
		size_t ne = 0;
		if (gmt_pk_items(devs[d], &ne) && ne && !gmt_pk_mark(devs[d])) {
			gmt_pk_set_mark(c->doc, devs[d], MARK(MARK_READ, d + 1));
			total += ne;
		}
	}
	if (total && !(c->ev = malloc(total * sizeof(*c->ev)))) {
		c->nomem = true;
		return;
	}
	c->capev = total;
	for (size_t d = 0; d < nd && d < MARK_MAX - 1 && !halted(c); d++) {
		size_t ne = 0;
		if (!gmt_pk_items(devs[d], &ne) || !ne)
			continue;
		if (gmt_pk_mark(devs[d]) != MARK(MARK_READ, d + 1)) {
			bad(c,
			    "device_traces[%zu]: the entries of another device (a memo reference): "
			    "skipped",
			    d);
			continue;
		}
		struct gmt_pk *const *es = items_of(c, devs[d], &ne);
		for (size_t i = 0; i < ne && !halted(c) && c->nev < c->capev; i++) {
			const struct gmt_pk *e = es[i];
			const char *action = gmt_pk_str(get(c, e, "action"));
			struct gmt_trace_event r = {.device = (int32_t)d, .line = (uint32_t)i};
			uint64_t addr = 0;

			snprintf(where, sizeof(where), "device_traces[%zu][%zu]", d, i);
			if (halted(c))
				break;
			if (e->type != GMT_PK_DICT || !action) {
				bad(c, "%s: not a trace entry (a dict with an \"action\"): skipped",
				    where);
				continue;
			}
			if (seen(c, e)) {
				bad(c,
				    "%s: an entry read already (a memo reference to it): skipped",
				    where);
				continue;
			}
			r.kind = (uint8_t)gmt_torch_action_from_name(action);
			if (!r.kind || r.kind == GMT_TORCH_STATE_SEGMENT ||
			    r.kind == GMT_TORCH_STATE_BLOCK) {
				bad(c, "%s: unknown action \"%s\": skipped", where,
				    gmt_esc(action));
				continue;
			}
			/* an OOM's free bytes: "device_free" in torch's, "addr" in older ones */
			bool have =
			    (r.kind == GMT_TORCH_OOM && get_u64(c, e, "device_free", &addr)) ||
			    get_u64(c, e, "addr", &addr);
			if (!have || !get_u64(c, e, "size", &r.size)) {
				if (!halted(c))
					bad(c, "%s: no integer \"addr\" and \"size\": skipped",
					    where);
				continue;
			}
			r.ptr = addr;
			get_u64(c, e, "stream", &r.handle);
			get_u64(c, e, "time_us", &r.ts);
			const struct gmt_pk *frames = get(c, e, "frames");
			foreign(c, &r, frames);
			r.stack = stack_of(c, frames, r.api ? 1 : 0, where);
			c->ev[c->nev++] = r;
		}
	}
	if (c->nev > 1 && !halted(c))
		qsort(c->ev, c->nev, sizeof(*c->ev), cmp_entry);
}

/* The rewound cache as segment_state and block_state events (free blocks fill the gaps) from
 * c->ev[*at] on; with @p ev NULL only counted. */
static void
backfill(struct conv *c, struct gmt_trace_event *ev, size_t *at)
{
	uint32_t bi = omap_ceil(&c->blks, 0, false);
	size_t k = *at;

#define PUT(action, dev)                                                                           \
	do {                                                                                       \
		if (ev)                                                                            \
			ev[k] = (struct gmt_trace_event){                                          \
			    .device = (dev),                                                       \
			    .api = GMT_TRACE_NO_STRING,                                            \
			    .driver = GMT_TRACE_NO_STRING,                                         \
			    .op = GMT_OP_BLOCK,                                                    \
			    .kind = (action),                                                      \
			};                                                                         \
		k++;                                                                               \
	} while (0)

	for (uint32_t si = omap_ceil(&c->segs, 0, false); si;
	     si = omap_ceil(&c->segs, c->segs.n[si].key, true)) {
		const struct rseg *s = seg_of(c, si);
		PUT(GMT_TORCH_STATE_SEGMENT, s->device);
		if (ev) {
			ev[k - 1].ptr = s->addr;
			ev[k - 1].size = s->size;
			ev[k - 1].handle = s->stream;
			ev[k - 1].offset = s->pool[0];
			ev[k - 1].context = s->pool[1];
			ev[k - 1].result = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_HAS_POOL |
					   (s->large ? GMT_TORCH_F_LARGE : 0) |
					   (s->expandable ? GMT_TORCH_F_EXPANDABLE : 0);
		}
		uint64_t at_addr = s->addr, end = s->addr + s->size;
		for (; bi && c->blks.n[bi].key < s->addr;
		     bi = omap_ceil(&c->blks, c->blks.n[bi].key, true))
			if (!ev)
				c->mismatched++; /* a live block in no segment */
		while (at_addr < end) {
			const struct rblk *b = bi && c->blks.n[bi].key < end ? blk_at(c, bi) : NULL;
			uint64_t gap_end = b ? b->addr : end;
			if (gap_end > at_addr) {
				PUT(GMT_TORCH_STATE_BLOCK, s->device);
				if (ev) {
					ev[k - 1].ptr = at_addr;
					ev[k - 1].size = gap_end - at_addr;
					ev[k - 1].handle = s->stream;
					ev[k - 1].result = GMT_TORCH_F_HAS_DEVICE;
				}
			}
			if (!b)
				break;
			PUT(GMT_TORCH_STATE_BLOCK, s->device);
			if (ev) {
				ev[k - 1].ptr = b->addr;
				ev[k - 1].size = b->size;
				ev[k - 1].requested = b->state == ALLOCATED ? b->requested : 0;
				ev[k - 1].handle = s->stream;
				ev[k - 1].stack = b->stack;
				ev[k - 1].result =
				    GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_ACTIVE |
				    (b->state == ALLOCATED ? GMT_TORCH_F_ALLOCATED : 0);
			}
			at_addr = b->addr + b->size;
			bi = omap_ceil(&c->blks, b->addr, true);
		}
	}
#undef PUT
	if (!ev)
		for (; bi; bi = omap_ceil(&c->blks, c->blks.n[bi].key, true))
			c->mismatched++; /* live blocks above every segment */
	*at = k;
}

/* Entry @p r (read as struct conv says) as the event it is, at c->ev[c->nev]; false when it is
 * none (the second half of a cudaFree our export wrote twice). */
static bool
entry_event(struct conv *c, const struct gmt_trace_event *r, uint64_t ts)
{
	struct gmt_trace_event ev = {
	    .seq = c->nev + 1,
	    .ts = ts,
	    .line = (uint32_t)(c->nev + 1),
	    .device = r->device,
	    .driver = GMT_TRACE_NO_STRING,
	};

	if (r->api) { /* a CUDA-level allocation of our export (foreign()) */
		if (r->kind == GMT_TORCH_FREE_REQUESTED)
			return false;
		ev.ptr = r->ptr;
		ev.size = r->kind == GMT_TORCH_ALLOC ? r->size : 0;
		ev.stack = r->stack;
		ev.api = (uint16_t)(r->api - 1);
		ev.op = r->kind == GMT_TORCH_ALLOC ? GMT_OP_ALLOC : GMT_OP_FREE;
		ev.kind = GMT_TK_DEVICE;
	} else {
		ev.api = GMT_TRACE_NO_STRING;
		ev.op = GMT_OP_BLOCK;
		ev.kind = r->kind;
		ev.size = r->size;
		ev.handle = r->handle;
		ev.stack = r->stack;
		ev.result = GMT_TORCH_F_HAS_DEVICE;
		if (r->kind == GMT_TORCH_OOM)
			ev.free_bytes = r->ptr; /* torch's OOM entry: the device's free bytes */
		else
			ev.ptr = r->ptr;
		if (r->kind == GMT_TORCH_SEGMENT_ALLOC || r->kind == GMT_TORCH_SEGMENT_MAP) {
			ev.offset = r->offset;
			ev.context = r->context;
			ev.result |= GMT_TORCH_F_HAS_POOL | (r->result & GMT_TORCH_F_LARGE);
		}
		c->t->nblocks++;
	}
	c->ev[c->nev++] = ev;
	return true;
}

static char *
dup_or_null(struct conv *c, const char *s)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		c->nomem = true;
	return d;
}

/* The snapshot @p root (a dict, checked) into the trace; the document is freed as soon as all of
 * it is read. */
static void
convert(struct conv *c, const struct gmt_pk *root)
{
	struct gmt_trace *t = c->t;
	size_t n, nfill = 0;
	int64_t t0 = 0;

	const char *conf =
	    gmt_pk_str(get(c, get(c, root, "allocator_settings"), "PYTORCH_CUDA_ALLOC_CONF"));
	t->torch_alloc_conf = dup_or_null(c, conf ? conf : "");
	read_segments(c, get(c, root, "segments"));
	read_entries(c, get(c, root, "device_traces"));
	gmt_pk_free(c->doc);
	c->doc = NULL;
	if (halted(c))
		return;
	n = c->nev;
	for (size_t i = n; i-- > 0;)
		if (!c->ev[i].api)
			rewind_entry(c, &c->ev[i]);
	if (c->nomem)
		return;
	/* the backfill ahead of the entries: counted, room made, written */
	backfill(c, NULL, &nfill);
	if (nfill) {
		struct gmt_trace_event *ev = realloc(c->ev, (nfill + n) * sizeof(*ev));
		if (!ev) {
			c->nomem = true;
			return;
		}
		memmove(ev + nfill, ev, n * sizeof(*ev));
		c->ev = ev;
		c->capev = nfill + n;
		size_t k = 0;
		backfill(c, ev, &k);
		for (size_t i = 0; i < k; i++) {
			ev[i].seq = ev[i].line = (uint32_t)(i + 1);
			t->nblocks++;
		}
	}
	c->nev = nfill;
	if (n)
		t0 = (int64_t)c->ev[nfill].ts;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_trace_event r = c->ev[nfill + i]; /* at or after c->nev */
		/* in wrapping arithmetic: times that far apart are no snapshot torch writes */
		uint64_t ts = (r.ts - (uint64_t)t0) * 1000;
		entry_event(c, &r, ts);
	}

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
	char detail[256];
	snprintf(detail, sizeof(detail),
		 "read from a PyTorch memory snapshot: %zu trace entries, %zu segments at the end; "
		 "the cache before the first entry rewound from the end",
		 n, c->segs.len);
	t->have_torch = true;
	t->torch_backend = dup_or_null(c, "native");
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
		  struct gmt_trace **out,
		  char why[GMT_TRACE_WHY])
{
	struct conv c = {.diag = diag};
	const char *reason = NULL; /* what the file is refused for, quoting nothing of it */
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;
	struct stat st;
	char err[256];
	int rc;

	*out = NULL;
	omap_init(&c.segs, sizeof(struct rseg));
	omap_init(&c.blks, sizeof(struct rblk));
	if (!(c.epath = strdup(gmt_esc(path))))
		goto nomem;
	/* a file's own size (and a byte to see its end) as the first room: no doubling */
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size < SIZE_MAX / 2)
		cap = (size_t)st.st_size + 1;
	do {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 1 << 16;
			uint8_t *nb = realloc(buf, nc);
			if (!nb)
				goto nomem;
			buf = nb;
			cap = nc;
		} else if (!buf && !(buf = malloc(cap))) {
			goto nomem;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		fprintf(diag, "%s: read error: %s\n", c.epath, strerror(errno ? errno : EIO));
		reason = "read error";
		goto unreadable;
	}
	if (len == 0) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: empty file\n", c.epath);
		reason = "not a PyTorch memory snapshot: empty file";
		goto unreadable;
	}
	if (buf[0] != 0x80) {
		fprintf(diag,
			"%s: not a PyTorch memory snapshot: not a pickle of protocol 2 or later "
			"(first byte 0x%02x, not 0x80)\n",
			c.epath, buf[0]);
		goto unreadable; /* another program's file: no reason kept (not a lost trace) */
	}
	rc = gmt_pk_parse(buf, len, &c.doc, err, sizeof(err));
	free(buf);
	buf = NULL;
	if (rc == -ENOMEM)
		goto nomem;
	if (rc) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: %s\n", c.epath, gmt_esc(err));
		goto unreadable;
	}
	const char *other = not_snapshot(gmt_pk_root(c.doc));
	if (other) {
		fprintf(diag, "%s: not a PyTorch memory snapshot: %s\n", c.epath, other);
		goto unreadable;
	}
	if (!(c.t = calloc(1, sizeof(*c.t))) || !(c.t->path = strdup(path)))
		goto nomem;
	c.t->from_snapshot = true;
	c.t->pid = c.t->ppid = c.t->forked_from = -1;
	c.t->rank = c.t->local_rank = c.t->world_size = -1;
	c.budget = (uint64_t)len * WORK_PER_BYTE + WORK_FLOOR;
	convert(&c, gmt_pk_root(c.doc));
	if (c.over) {
		fprintf(diag,
			"%s: refused: its parts are shared through the pickle's memo so often that "
			"reading it would take more than %" PRIu64
			" lookups (the limit: %u per byte of the file; docs/report-formats.md, "
			"\"Limits\")\n",
			c.epath, c.budget, WORK_PER_BYTE);
		reason = "refused: its pickle's memo is shared too often to read";
		goto unreadable;
	}
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
	reason = "out of memory";
unreadable:
	rc = GMT_TRACE_UNREADABLE;
	if (why) /* no reason: another program's file */
		snprintf(why, GMT_TRACE_WHY, "%s", reason ? reason : "");
done:
	free(buf);
	gmt_pk_free(c.doc);
	gmt_trace_free(c.t);
	free(c.ev);
	omap_free(&c.segs);
	omap_free(&c.blks);
	free(c.strs);
	free(c.stackhash);
	free(c.epath);
	return (enum gmt_trace_status)rc;
}
