/*
 * @brief `gpumemtrace report --format csv -o DIR`: one CSV file per record type, for SQL
 * (docs/sql.md has the columns and queries for DuckDB and SQLite).
 *
 * Allocations are paired with what ended them by a second replay of the stored events with the
 * model's on_live hook, so a row is live at the end exactly when the report counts it in leaks[]
 * (frees by address or handle, unmapped ranges, resets, released handles, a reused address).
 * Block lines are paired here (alloc, free_requested, free_completed by address): the tensor
 * level's own replay keeps no per-block rows.
 *
 * Every file is RFC 4180: a header line, CRLF line ends, a field in double quotes (a quote
 * doubled) when it holds a comma, a quote or a line break. Strings from the trace are first
 * escaped as for a terminal (util/esc.h: control bytes, invalid UTF-8 and bidi controls as \ooo),
 * so no field carries a raw control character; the only line breaks inside a field are those
 * that separate the frames of sites.csv's stack_text. An empty field is a value not known or not
 * applicable (NULL in DuckDB's read_csv).
 */
#define _GNU_SOURCE
#include "analysis/report/report_formats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/model/livemap.h"
#include "analysis/model/tkinds.h"
#include "analysis/report/explain.h"
#include "analysis/report/frames.h"
#include "analysis/report/nomem.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/outfile.h"

/* One output file. */
struct csv {
	FILE *f;
	struct gmt_outfile out; /* f, written beside the table's name, renamed to it at the end */
	char *path;		/* DIR/NAME, for messages */
	bool first;		/* no field written yet on this line */
};

static void
field_raw(struct csv *c, const char *s)
{
	if (!c->first)
		fputc(',', c->f);
	c->first = false;
	if (!s || !*s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, c->f);
		return;
	}
	fputc('"', c->f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', c->f);
		fputc(*s, c->f);
	}
	fputc('"', c->f);
}

/* A string of the trace: escaped for a terminal, then quoted as RFC 4180 asks. */
static void
field_str(struct csv *c, const char *s)
{
	field_raw(c, s ? gmt_esc(s) : NULL);
}

static void
field_u64(struct csv *c, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	field_raw(c, b);
}

static void
field_i64(struct csv *c, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRId64, v);
	field_raw(c, b);
}

static void
field_hex(struct csv *c, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	field_raw(c, b);
}

/* Seconds from the trace's start, to the nanosecond. */
static void
field_time(struct csv *c, const struct gmt_trace *t, uint64_t ts)
{
	char b[40];
	uint64_t d = ts >= t->start_ts ? ts - t->start_ts : 0;

	snprintf(b, sizeof(b), "%" PRIu64 ".%09" PRIu64, d / 1000000000u, d % 1000000000u);
	field_raw(c, b);
}

static void
field_none(struct csv *c)
{
	field_raw(c, NULL);
}

static void
end_line(struct csv *c)
{
	fputs("\r\n", c->f);
	c->first = true;
}

/* Table @p name in the directory @p dirfd (@p dir, for messages); a link there is refused. */
static int
csv_open(
    struct csv *c, int dirfd, const char *dir, const char *name, const char *header, FILE *diag)
{
	char why[GMT_OUTFILE_WHY];

	c->path = NULL;
	c->first = true;
	if (asprintf(&c->path, "%s/%s", dir, name) < 0) {
		c->path = NULL;
		return -ENOMEM;
	}
	if (gmt_outfile_openat(&c->out, dirfd, name, why) != 0) {
		fprintf(diag, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(c->path), why);
		return -EIO;
	}
	c->f = c->out.f;
	fputs(header, c->f);
	fputs("\r\n", c->f);
	return 0;
}

/* The table finished (@p keep: renamed to its name) or dropped (its name left as it was). */
static int
csv_close(struct csv *c, bool keep, FILE *diag)
{
	char why[GMT_OUTFILE_WHY];
	int err = 0;

	if (c->f && !keep) {
		gmt_outfile_abort(&c->out);
	} else if (c->f && gmt_outfile_close(&c->out, why) != 0) {
		fprintf(diag, "gpumemtrace report: cannot write %s: %s\n", gmt_esc(c->path), why);
		err = -EIO;
	}
	c->f = NULL;
	free(c->path);
	c->path = NULL;
	return err;
}

/* The call site of stack @p id as the text report names it; empty when none is known. */
static void
field_site(struct csv *c, const struct gmt_process *p, uint32_t id)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, id);
	const struct gmt_cframe *f = gmt_cstack_site(cs);
	char buf[4096];

	if (!f) {
		field_none(c);
		return;
	}
	gmt_cframe_text(f, buf, sizeof(buf));
	field_str(c, buf);
}

static void
field_api(struct csv *c, const struct gmt_trace *t, uint16_t idx)
{
	field_str(c, idx == GMT_TRACE_NO_STRING ? NULL : gmt_trace_string(t, idx));
}

// --- processes.csv ------------------------------------------------------------------------------

static void
processes(struct csv *c, const struct gmt_process *procs, size_t n)
{
	for (size_t p = 0; p < n; p++) {
		const struct gmt_trace *t = procs[p].model->trace;
		char *argv = NULL;
		size_t len = 0;
		FILE *a = open_memstream(&argv, &len);

		for (size_t i = 0; a && i < t->argc; i++)
			fprintf(a, "%s%s", i ? " " : "", t->argv[i]);
		if (a)
			fclose(a);
		field_u64(c, p);
		field_str(c, t->path);
		if (t->pid >= 0)
			field_i64(c, t->pid);
		else
			field_none(c);
		field_str(c, t->host);
		if (t->has_rank && t->rank >= 0)
			field_i64(c, t->rank);
		else
			field_none(c);
		field_str(c, a ? argv : NULL);
		field_u64(c, t->start_ts);
		field_u64(c, t->start_unix_ns);
		field_u64(c, t->last_ts);
		field_time(c, t, t->last_ts);
		field_raw(c, t->complete ? "true" : "false");
		field_u64(c, t->dropped);
		field_str(c, t->coverage);
		field_str(c, t->have_torch ? t->torch_version : NULL);
		end_line(c);
		free(argv);
	}
}

// --- lost_traces.csv: the trace files that yielded nothing -------------------------------------

static void
lost_traces(struct csv *c, const struct gmt_lost *lost)
{
	const char *file, *why;

	for (size_t i = 0; i < gmt_lost_count(lost); i++) {
		gmt_lost_at(lost, i, &file, &why);
		field_str(c, file);
		field_str(c, why);
		end_line(c);
	}
}

// --- allocations.csv: the replay's allocations and what ended them ------------------------------

struct arow {
	uint64_t seq, ts, ptr, size, requested;
	uint64_t end_seq, end_ts;
	uint32_t stack;
	int32_t device;
	uint16_t api, driver, end_api;
	uint8_t kind, end_op;
	bool ended, has_requested;
};

struct apair {
	struct arow *v;
	size_t n, cap;
	bool oom;
};

static void
on_live(void *ctx, const struct gmt_live *l, const struct gmt_trace_event *ev, bool added)
{
	struct apair *a = ctx;
	size_t lo = 0, hi;

	if (added) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 1024;
			struct arow *v = gmt_realloc_array(a->v, cap, sizeof(*v));

			if (!v) {
				a->oom = true;
				return;
			}
			a->v = v;
			a->cap = cap;
		}
		a->v[a->n++] = (struct arow){
		    .seq = l->seq,
		    .ts = l->ts,
		    .ptr = l->key,
		    .size = l->size,
		    .requested = ev->requested,
		    .has_requested = (ev->flags & GMT_EV_HAS_REQUESTED) != 0,
		    .stack = l->stack,
		    .device = l->device,
		    .api = l->api,
		    .driver = l->driver,
		    .kind = l->kind,
		};
		return;
	}
	/* rows are added in seq order (the replay's): the one that ends is found by its seq */
	hi = a->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[mid].seq < l->seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < a->n && a->v[lo].seq == l->seq && !a->v[lo].ended) {
		struct arow *r = &a->v[lo];

		r->ended = true;
		r->end_seq = ev->seq;
		r->end_ts = ev->ts;
		r->end_api = ev->api;
		r->end_op = ev->op;
		r->kind = l->kind; /* a mapping of an imported handle became imported on the way */
	}
}

static const char *
end_name(uint8_t op)
{
	switch (op) {
	case GMT_OP_FREE: return "free";
	case GMT_OP_RESET: return "reset";
	case GMT_OP_ALLOC: return "reused"; /* its address was handed out again: free not seen */
	default: return "other";
	}
}

static int
allocations(struct csv *c, size_t p, const struct gmt_process *proc)
{
	const struct gmt_model *m0 = proc->model;
	const struct gmt_trace *t = m0->trace;
	struct apair a = {0};
	struct gmt_model *m = gmt_model_new(t, NULL);
	int err;

	if (!m)
		return -ENOMEM;
	m->on_live = on_live;
	m->live_ctx = &a;
	for (size_t i = 0; i < t->nevents; i++)
		gmt_model_event(m, &t->events[i]);
	err = gmt_model_finish(m);
	gmt_model_free(m);
	if (err || a.oom) {
		free(a.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a.n; i++) {
		const struct arow *r = &a.v[i];

		field_u64(c, p);
		field_u64(c, r->seq);
		field_u64(c, r->ts);
		field_time(c, t, r->ts);
		if (r->ended) {
			field_u64(c, r->end_seq);
			field_u64(c, r->end_ts);
			field_time(c, t, r->end_ts);
			field_raw(c, end_name(r->end_op));
			field_api(c, t, r->end_api);
		} else {
			for (int k = 0; k < 5; k++)
				field_none(c);
		}
		field_i64(c, r->device);
		field_raw(c, gmt_kind_str((enum gmt_tkind)r->kind));
		field_raw(c, gmt_kind_counted((enum gmt_tkind)r->kind) ? "true" : "false");
		field_api(c, t, r->api);
		field_api(c, t, r->driver);
		field_u64(c, r->size);
		if (r->has_requested)
			field_u64(c, r->requested);
		else
			field_none(c);
		field_hex(c, r->ptr);
		field_u64(c, r->stack);
		field_site(c, proc, r->stack);
		/* who keeps it when it is live at the end: the report's one rule (explain.h) */
		switch (gmt_process_holder(proc, r->stack, r->kind)) {
		case GMT_HOLDER_CACHE: field_raw(c, "cache"); break;
		case GMT_HOLDER_LIBRARY: field_raw(c, "library"); break;
		case GMT_HOLDER_PROGRAM: field_raw(c, "program"); break;
		}
		end_line(c);
	}
	free(a.v);
	return 0;
}

// --- failures.csv, readings.csv, markers.csv ----------------------------------------------------

static void
failures(struct csv *c, size_t p, const struct gmt_process *proc)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_trace *t = m->trace;
	size_t k = 0;

	/* the CUDA-level failures and the caching allocator's OOMs, in seq order */
	for (size_t i = 0; i <= t->nevents; i++) {
		const struct gmt_trace_event *b = i < t->nevents ? &t->events[i] : NULL;

		while (k < m->nfailed && (!b || m->failed[k]->seq < b->seq)) {
			const struct gmt_trace_event *ev = m->failed[k];

			field_u64(c, p);
			field_u64(c, ev->seq);
			field_u64(c, ev->ts);
			field_time(c, t, ev->ts);
			field_raw(c, "cuda");
			field_i64(c, ev->device);
			field_raw(c, gmt_kind_str((enum gmt_tkind)ev->kind));
			field_api(c, t, ev->api);
			field_api(c, t, ev->driver);
			field_u64(c, ev->size);
			field_i64(c, ev->result);
			if (ev->flags & GMT_EV_HAS_MEMINFO) {
				field_u64(c, ev->free_bytes);
				field_u64(c, ev->total_bytes);
			} else {
				field_none(c);
				field_none(c);
			}
			field_raw(c, gmt_fail_class_name(gmt_model_fail_class(m, k)));
			field_u64(c, ev->stack);
			field_site(c, proc, ev->stack);
			end_line(c);
			k++;
		}
		if (!b || b->op != GMT_OP_BLOCK || b->kind != GMT_TORCH_OOM)
			continue;
		field_u64(c, p);
		field_u64(c, b->seq);
		field_u64(c, b->ts);
		field_time(c, t, b->ts);
		field_raw(c, "torch");
		field_i64(c, b->device);
		field_none(c);
		field_none(c);
		field_none(c);
		field_u64(c, b->size);
		field_none(c);
		field_u64(c, b->free_bytes); /* device_free: what CUDA said */
		field_none(c);
		field_none(c);
		field_u64(c, b->stack);
		field_site(c, proc, b->stack);
		end_line(c);
	}
}

static void
readings(struct csv *c, size_t p, const struct gmt_trace *t)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct gmt_trace_event *ev = &t->events[i];

		if (ev->op != GMT_OP_USAGE)
			continue;
		field_u64(c, p);
		field_u64(c, ev->seq);
		field_u64(c, ev->ts);
		field_time(c, t, ev->ts);
		field_i64(c, ev->device);
		field_raw(c, gmt_kind_str((enum gmt_tkind)ev->kind));
		if (ev->ptr)
			field_hex(c, ev->ptr);
		else
			field_none(c);
		field_u64(c, ev->size);
		end_line(c);
	}
}

static void
markers(struct csv *c, size_t p, const struct gmt_trace *t)
{
	for (size_t i = 0; i < t->nmarkers; i++) {
		const struct gmt_trace_marker *mk = &t->markers[i];

		field_u64(c, p);
		field_u64(c, mk->seq);
		field_u64(c, mk->ts);
		field_time(c, t, mk->ts);
		field_i64(c, mk->tid);
		field_str(c, mk->label);
		field_raw(c, mk->range == GMT_RANGE_PUSH  ? "push"
			     : mk->range == GMT_RANGE_POP ? "pop"
							  : NULL);
		if (mk->range != GMT_RANGE_NONE)
			field_u64(c, mk->depth);
		else
			field_none(c);
		end_line(c);
	}
}

// --- blocks.csv and segments.csv: the PyTorch layer, paired by address -------------------------

struct brow {
	const struct gmt_trace_event *start;
	const struct gmt_trace_event *mid; /* blocks: free_requested */
	const struct gmt_trace_event *end; /* free_completed, segment_free, segment_unmap */
};

struct bset {
	struct brow *v;
	size_t n, cap;
	struct gmt_livemap live; /* address -> row index + 1 (in `size`) */
};

static int
bset_start(struct bset *s, const struct gmt_trace_event *ev)
{
	struct gmt_live *old = gmt_livemap_find(&s->live, ev->ptr);
	struct gmt_live l = {.key = ev->ptr, .size = s->n};

	if (!ev->ptr)
		return 0;
	if (old)
		gmt_livemap_remove(&s->live, old); /* its end was not seen: the row stays open */
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct brow *v = gmt_realloc_array(s->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct brow){.start = ev};
	return gmt_livemap_insert(&s->live, &l);
}

/* The row open at @p ev's address; @p close: the event ends it. */
static void
bset_mark(struct bset *s, const struct gmt_trace_event *ev, bool close)
{
	struct gmt_live *l = gmt_livemap_find(&s->live, ev->ptr);

	if (!l || !ev->ptr)
		return;
	if (close) {
		s->v[l->size].end = ev;
		gmt_livemap_remove(&s->live, l);
	} else if (!s->v[l->size].mid) {
		s->v[l->size].mid = ev;
	}
}

static void
field_when(struct csv *c, const struct gmt_trace *t, const struct gmt_trace_event *ev)
{
	if (ev) {
		field_u64(c, ev->seq);
		field_u64(c, ev->ts);
		field_time(c, t, ev->ts);
	} else {
		field_none(c);
		field_none(c);
		field_none(c);
	}
}

static void
field_pool(struct csv *c, const struct gmt_trace_event *ev)
{
	char b[48];

	snprintf(b, sizeof(b), "[%" PRIu64 ",%" PRIu64 "]", ev->offset, ev->context);
	field_raw(c, b);
}

static int
torch_tables(struct csv *blocks, struct csv *segments, size_t p, const struct gmt_process *proc)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_trace *t = m->trace;
	struct bset b = {0}, s = {0};
	int err = 0;

	if (!t->nblocks)
		return 0;
	if (gmt_livemap_init(&b.live) || gmt_livemap_init(&s.live)) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->nevents && !err; i++) {
		const struct gmt_trace_event *ev = &t->events[i];

		if (ev->op != GMT_OP_BLOCK)
			continue;
		switch (ev->kind) {
		case GMT_TORCH_ALLOC: err = bset_start(&b, ev); break;
		case GMT_TORCH_STATE_BLOCK:
			if (ev->result & GMT_TORCH_F_ALLOCATED)
				err = bset_start(&b, ev);
			break;
		case GMT_TORCH_FREE_REQUESTED: bset_mark(&b, ev, false); break;
		case GMT_TORCH_FREE_COMPLETED: bset_mark(&b, ev, true); break;
		case GMT_TORCH_SEGMENT_ALLOC:
		case GMT_TORCH_SEGMENT_MAP:
		case GMT_TORCH_STATE_SEGMENT: err = bset_start(&s, ev); break;
		case GMT_TORCH_SEGMENT_FREE:
		case GMT_TORCH_SEGMENT_UNMAP: bset_mark(&s, ev, true); break;
		default: break;
		}
	}
	if (err)
		goto out;
	for (size_t i = 0; i < b.n; i++) {
		const struct brow *r = &b.v[i];
		const struct gmt_trace_event *ev = r->start;
		bool state = ev->kind == GMT_TORCH_STATE_BLOCK;

		field_u64(blocks, p);
		field_when(blocks, t, ev);
		/* a backfilled block's free_requested may have come before the layer attached */
		field_when(blocks, t, r->mid ? r->mid : r->end);
		field_when(blocks, t, r->end);
		field_raw(blocks, state ? "backfill" : "alloc");
		field_i64(blocks, ev->device);
		field_hex(blocks, ev->ptr);
		field_u64(blocks, state ? ev->requested : ev->size);
		if (state)
			field_u64(blocks, ev->size);
		else
			field_none(blocks);
		field_hex(blocks, ev->handle);
		field_pool(blocks, ev);
		field_u64(blocks, ev->stack);
		field_site(blocks, proc, ev->stack);
		end_line(blocks);
	}
	for (size_t i = 0; i < s.n; i++) {
		const struct brow *r = &s.v[i];
		const struct gmt_trace_event *ev = r->start;

		field_u64(segments, p);
		field_when(segments, t, ev);
		field_when(segments, t, r->end);
		field_raw(segments, ev->kind == GMT_TORCH_SEGMENT_MAP	  ? "map"
				    : ev->kind == GMT_TORCH_STATE_SEGMENT ? "backfill"
									  : "segment");
		field_i64(segments, ev->device);
		field_hex(segments, ev->ptr);
		field_u64(segments, ev->size);
		field_hex(segments, ev->handle);
		field_pool(segments, ev);
		end_line(segments);
	}
out:
	free(b.v);
	free(s.v);
	gmt_livemap_fini(&b.live);
	gmt_livemap_fini(&s.live);
	return err;
}

// --- sites.csv: every stack of every trace ------------------------------------------------------

static void
sites(struct csv *c, size_t p, const struct gmt_process *proc)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_trace *t = m->trace;
	char buf[4096];

	for (size_t i = 0; i < t->nstacks; i++) {
		const struct gmt_cstack *cs = gmt_process_stack(proc, t->stacks[i].id);
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		bool any = false;

		/* the frames the text report shows, innermost first, one a line */
		for (uint32_t k = 0; f && cs && k < cs->nframes; k++) {
			const struct gmt_cframe *fr = gmt_cstack_frame(cs, k);

			if (fr->hidden)
				continue;
			gmt_cframe_text(fr, buf, sizeof(buf));
			fprintf(f, "%s%s", any ? "\n" : "", gmt_esc(buf));
			any = true;
		}
		if (f)
			fclose(f);
		field_u64(c, p);
		field_u64(c, t->stacks[i].id);
		field_site(c, proc, t->stacks[i].id);
		field_raw(c, f ? text : NULL); /* escaped frame by frame above */
		field_raw(c, cs && cs->pystate == GMT_PYSTATE_EMPTY  ? "empty"
			     : cs && cs->pystate == GMT_PYSTATE_NONE ? "none"
								     : NULL);
		end_line(c);
		free(text);
	}
}

// --- the files ----------------------------------------------------------------------------------

enum table { T_PROC, T_ALLOC, T_FAIL, T_READ, T_MARK, T_BLOCK, T_SEG, T_SITE, T_LOST, T_COUNT };

static const char *const names[T_COUNT] = {
    "processes.csv", "allocations.csv", "failures.csv", "readings.csv",	   "markers.csv",
    "blocks.csv",    "segments.csv",	"sites.csv",	"lost_traces.csv",
};

/* The columns of each file (docs/sql.md documents them; keep the two in step). */
static const char *const headers[T_COUNT] = {
    "process,path,pid,host,rank,argv,start_ts,start_unix_ns,end_ts,end_time_s,complete,dropped,"
    "coverage,torch_version",
    "process,alloc_seq,alloc_ts,alloc_time_s,free_seq,free_ts,free_time_s,end,free_api,device,"
    "kind,counted,api,driver,granted_bytes,requested_bytes,ptr,stack,site,holder",
    "process,seq,ts,time_s,layer,device,kind,api,driver,requested_bytes,result,free_bytes,"
    "total_bytes,class,stack,site",
    "process,seq,ts,time_s,device,kind,pool,reading_bytes",
    "process,seq,ts,time_s,tid,label,range,depth",
    "process,alloc_seq,alloc_ts,alloc_time_s,free_requested_seq,free_requested_ts,"
    "free_requested_time_s,free_completed_seq,free_completed_ts,free_completed_time_s,origin,"
    "device,ptr,requested_bytes,block_bytes,stream,pool,stack,site",
    "process,start_seq,start_ts,start_time_s,end_seq,end_ts,end_time_s,what,device,ptr,bytes,"
    "stream,pool",
    "process,stack,site,stack_text,pystate",
    "path,reason",
};

int
gmt_report_csv(const char *dir,
	       const struct gmt_process *procs,
	       size_t n,
	       const struct gmt_lost *lost,
	       FILE *diag)
{
	struct csv c[T_COUNT] = {0};
	int err = 0, dirfd;

	gmt_report_start();
	for (size_t p = 0; p < n; p++)
		if (!procs[p].model->trace->events && procs[p].model->trace->nevents)
			return -EINVAL; /* a streamed read: the caller reads stored */
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(diag, "gpumemtrace report: cannot create %s: %s\n", gmt_esc(dir),
			strerror(errno));
		return -EIO;
	}
	/* the tables go into this directory, whatever is renamed meanwhile */
	if ((dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(diag, "gpumemtrace report: cannot write into %s: %s\n", gmt_esc(dir),
			strerror(errno));
		return -EIO;
	}
	for (int k = 0; k < T_COUNT && !err; k++)
		err = csv_open(&c[k], dirfd, dir, names[k], headers[k], diag);
	if (!err) {
		processes(&c[T_PROC], procs, n);
		lost_traces(&c[T_LOST], lost);
	}
	for (size_t p = 0; p < n && !err; p++) {
		const struct gmt_model *m = procs[p].model;

		err = allocations(&c[T_ALLOC], p, &procs[p]);
		if (err)
			break;
		failures(&c[T_FAIL], p, &procs[p]);
		readings(&c[T_READ], p, m->trace);
		markers(&c[T_MARK], p, m->trace);
		err = torch_tables(&c[T_BLOCK], &c[T_SEG], p, &procs[p]);
		if (!err)
			sites(&c[T_SITE], p, &procs[p]);
	}
	/* all the tables or none: a failed export leaves the ones there as they were */
	for (int k = 0; k < T_COUNT; k++) {
		int e = csv_close(&c[k], !err, diag);

		if (!err)
			err = e;
	}
	close(dirfd);
	if (!err && gmt_report_failed(procs, n))
		err = -ENOMEM;
	return err;
}
