/*
 * @brief The JSON report (`gpumemtrace report --format json`), schema in docs/report-json.md.
 *
 * Machines read this, so: every count and size is an exact JSON integer, every key is present in
 * every document (null when a value is unknown), lists have a documented order, and keys are
 * written in a fixed order so two reports of the same traces are byte-identical.
 */
#include "analysis/report/jvalues.h"
#include "analysis/report/keys.h"
#include "analysis/report/nomem.h"
#include "analysis/report/report.h"
#include "analysis/report/report_tensors.h"
#include "analysis/report/sites.h"
#include "util/alloc.h"
#include "util/esc.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *
jstr_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The caching allocator behind allocations at @p stack (docs/report-json.md, "cache"). */
static json_t *
jcache(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	const char *c = gmt_cache_name(gmt_process_cache(p, stack, kind));

	return c ? json_string(c) : json_null();
}

/* The CUDA library whose handles hold allocations at @p stack (docs/report-json.md, "library"). */
static json_t *
jlibrary(const struct gmt_process *p, uint32_t stack, uint8_t kind)
{
	const char *l = gmt_library_name(gmt_process_library(p, stack, kind));

	return l ? json_string(l) : json_null();
}

static json_t *
jll_or_null(long long v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *
frames_json(const struct gmt_trace *t, uint32_t stack)
{
	const struct gmt_trace_stack *st = gmt_trace_stack(t, stack);
	json_t *a = json_array();

	for (uint32_t i = 0; st && i < st->nframes; i++)
		json_array_append_new(a, jhex(gmt_trace_frame(t, st, i)));
	return a;
}

// --- call stacks --------------------------------------------------------------------------------

static const char *
status_key(const struct gmt_cframe *f)
{
	if (f->kind == GMT_CF_PYTHON)
		return f->status == GMT_SYM_OK ? "ok" : "no_pycode";
	switch ((enum gmt_sym_status)f->status) {
	case GMT_SYM_OK: return "ok";
	case GMT_SYM_NO_SYMBOL: return "no_symbol";
	case GMT_SYM_NO_MODULE: return "no_module";
	case GMT_SYM_NO_FILE: return "file_missing";
	case GMT_SYM_MISMATCH: return "build_id_mismatch";
	case GMT_SYM_NO_FILE_ID: return "no_file";
	}
	return "no_symbol";
}

/* A member whose key is a literal of ours (ASCII, its length known): no strlen(), no UTF-8 check
 * of the key (a report sets ten per frame of every stack it writes). */
#define KEY_SET(o, lit, v) json_object_setn_new_nocheck((o), (lit), sizeof(lit) - 1, (v))

static json_t *
frame_json(const struct gmt_cframe *f)
{
	json_t *o = json_object();
	bool native = f->kind == GMT_CF_NATIVE;

	KEY_SET(o, GMT_RK_KIND,
		native ? json_stringn_nocheck("native", 6) : json_stringn_nocheck("python", 6));
	KEY_SET(o, GMT_RK_FUNCTION, jstr_or_null(f->function));
	KEY_SET(o, GMT_RK_FILE, jstr_or_null(f->file));
	KEY_SET(o, GMT_RK_LINE, f->line ? json_integer(f->line) : json_null());
	KEY_SET(o, GMT_RK_MODULE, jstr_or_null(f->module));
	KEY_SET(o, GMT_RK_OFFSET, native && f->module ? jhex(f->offset) : json_null());
	KEY_SET(o, GMT_RK_ADDRESS, native ? jhex(f->address) : json_null());
	KEY_SET(o, "inlined", json_boolean(f->inlined));
	KEY_SET(o, "status", json_string_nocheck(status_key(f)));
	KEY_SET(o, "hidden", json_boolean(f->hidden));
	return o;
}

/*
 * The frame objects of one process's call stacks, by frame id (struct gmt_cstack): the stacks of
 * a program share most of their frames, and each distinct frame is one object in the document.
 */
struct frame_memo {
	json_t **o;
	size_t n;
};

static void
frame_memo_clear(struct frame_memo *fm)
{
	for (size_t i = 0; i < fm->n; i++)
		json_decref(fm->o[i]);
	free(fm->o);
	*fm = (struct frame_memo){0};
}

/* @p fm NULL: objects of its own (a stack written and freed on its own) */
static json_t *
call_stack_json(const struct gmt_cstack *cs, struct frame_memo *fm)
{
	json_t *a = json_array();

	for (uint32_t i = 0; cs && i < cs->nframes; i++) {
		uint32_t id = cs->frame_ids[i];

		if (!fm) {
			json_array_append_new(a, frame_json(gmt_cstack_frame(cs, i)));
			continue;
		}
		if (id >= fm->n) {
			size_t n = fm->n * 2 > (size_t)id + 1 ? fm->n * 2 : (size_t)id + 1;
			json_t **o = gmt_realloc_array(fm->o, n, sizeof(*fm->o));

			if (!o) {
				gmt_nomem();
				break;
			}
			fm->o = o;
			memset(fm->o + fm->n, 0, (n - fm->n) * sizeof(*fm->o));
			fm->n = n;
		}
		if (!fm->o[id])
			fm->o[id] = frame_json(gmt_cstack_frame(cs, i));
		json_array_append(a, fm->o[id]);
	}
	return a;
}

static json_t *
site_json(const struct gmt_cstack *cs)
{
	json_t *o;

	if (!cs || cs->site < 0)
		return json_null();
	o = frame_json(gmt_cstack_site(cs));
	json_object_set_new(o, "index", json_integer(cs->site));
	return o;
}

static json_t *
pystate_json(const struct gmt_cstack *cs)
{
	if (cs && cs->pystate == GMT_PYSTATE_EMPTY)
		return json_string("empty");
	if (cs && cs->pystate == GMT_PYSTATE_NONE)
		return json_string("none");
	return json_null();
}

static json_t *
placement_json(const struct gmt_cstack *cs)
{
	if (!cs || !cs->npython)
		return json_null();
	return json_string(cs->python_outermost ? "outermost" : "spliced");
}

/* site, pystate, python_placement of stack @p id, added to @p o (the frames: call_stacks[]). */
static void
stack_keys(json_t *o, const struct gmt_process *p, uint32_t id)
{
	const struct gmt_cstack *cs = gmt_process_stack(p, id);

	json_object_set_new(o, GMT_RK_SITE, site_json(cs));
	json_object_set_new(o, "pystate", pystate_json(cs));
	json_object_set_new(o, "python_placement", placement_json(cs));
}

/* A (process, stack) that some entry of the report names. */
struct stack_ref {
	size_t proc;
	uint32_t stack;
};

static int
cmp_stack_ref(const void *pa, const void *pb)
{
	const struct stack_ref *a = pa, *b = pb;

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void
refs_add(
    struct stack_ref **v, size_t *n, size_t *cap, const struct gmt_site_item *items, size_t nitems)
{
	for (size_t i = 0; i < nitems; i++) {
		if (!items[i].stack)
			continue;
		if (gmt_grow(v, cap, *n + 1, sizeof(**v), 64) != 0) {
			gmt_nomem();
			return;
		}
		(*v)[(*n)++] = (struct stack_ref){items[i].proc, items[i].stack};
	}
}

/*
 * Every stack the report names (leaks, failures, the peaks' allocations, the tensor level's
 * rows), once, by process then id: entries refer to them by (process, stack), so a stack shared
 * by several lists is written once.
 */
static struct stack_ref *
call_stack_refs(const struct gmt_process *procs, size_t n, size_t *nrefs)
{
	struct stack_ref *v = NULL;
	size_t nv = 0, cap = 0, nitems, k = 0;
	struct gmt_site_item *items;

	items = gmt_sites_leak_items(procs, n, &nitems);
	refs_add(&v, &nv, &cap, items, nitems);
	free(items);
	items = gmt_sites_peak_items(procs, n, &nitems);
	refs_add(&v, &nv, &cap, items, nitems);
	free(items);
	items = gmt_sites_failed_items(procs, n, &nitems);
	refs_add(&v, &nv, &cap, items, nitems);
	free(items);
	items = gmt_sites_stat_items(procs, n, GMT_SITES_GROWING, &nitems);
	refs_add(&v, &nv, &cap, items, nitems);
	free(items);
	for (size_t p = 0; p < n; p++) { /* the tensor level's rows (tensor_rows.c) */
		size_t nt;
		uint32_t *st = gmt_tensors_row_stacks(&procs[p], &nt);

		for (size_t i = 0; i < nt; i++) {
			if (gmt_grow(&v, &cap, nv + 1, sizeof(*v), 64) != 0) {
				gmt_nomem();
				break;
			}
			v[nv++] = (struct stack_ref){p, st[i]};
		}
		free(st);
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_stack_ref);
	for (size_t i = 0; i < nv; i++)
		if (!k || cmp_stack_ref(&v[k - 1], &v[i]) != 0)
			v[k++] = v[i];
	*nrefs = k;
	return v;
}

/* One entry of call_stacks[]; @p fm NULL: frame objects of its own, shared with no other. */
static json_t *
call_stack_entry(const struct gmt_process *procs,
		 const struct stack_ref *ref,
		 struct frame_memo *fm)
{
	const struct gmt_cstack *cs = gmt_process_stack(&procs[ref->proc], ref->stack);
	json_t *o = json_object();

	KEY_SET(o, GMT_RK_PROCESS, jint(ref->proc));
	KEY_SET(o, GMT_RK_STACK, jint(ref->stack));
	KEY_SET(o, "known", json_boolean(cs != NULL));
	KEY_SET(o, "site_index", cs && cs->site >= 0 ? json_integer(cs->site) : json_null());
	KEY_SET(o, "pystate", pystate_json(cs));
	KEY_SET(o, "python_placement", placement_json(cs));
	KEY_SET(o, GMT_RK_CALL_STACK, call_stack_json(cs, fm));
	return o;
}

static json_t *
call_stacks_json(const struct gmt_process *procs, size_t n)
{
	struct frame_memo fm = {0};
	size_t nv;
	struct stack_ref *v = call_stack_refs(procs, n, &nv);
	json_t *a = json_array();

	for (size_t i = 0; i < nv; i++) {
		if (i && v[i].proc != v[i - 1].proc)
			frame_memo_clear(&fm); /* frame ids are a process's own */
		json_array_append_new(a, call_stack_entry(procs, &v[i], &fm));
	}
	frame_memo_clear(&fm);
	free(v);
	return a;
}

static json_t *
stack_capture_json(const struct gmt_trace *t)
{
	json_t *o;

	if (!t->have_stacks_info && !t->python)
		return json_null();
	o = json_object();
	json_object_set_new(o, "native",
			    t->have_stacks_info ? json_boolean(t->stacks_native) : json_null());
	json_object_set_new(o, "python", jstr_or_null(t->python));
	json_object_set_new(o, GMT_RK_DEPTH,
			    t->have_stacks_info && t->stacks_depth ? json_integer(t->stacks_depth)
								   : json_null());
	return o;
}

/* Wall-clock seconds of @p ts, from the header's start_unix_ns; null without it. */
static json_t *
junix(const struct gmt_trace *t, uint64_t ts)
{
	if (!t->start_unix_ns)
		return json_null();
	return json_real(round(((double)t->start_unix_ns + (double)(ts - t->start_ts)) / 1e3) /
			 1e6);
}

/* The process's largest peak of held memory (any device), or NULL. */
static const struct gmt_device_stats *
process_peak(const struct gmt_model *m)
{
	const struct gmt_device_stats *best = NULL;

	for (size_t d = 0; d < m->ndevices; d++)
		if (m->devices[d].peak.bytes &&
		    (!best || m->devices[d].peak.bytes > best->peak.bytes))
			best = &m->devices[d];
	return best;
}

/* processes[]: the figures that compare ranks (docs/report-json.md, "Per-process figures"). */
static void
process_peak_keys(json_t *p, const struct gmt_model *m)
{
	const struct gmt_trace *t = m->trace;
	const struct gmt_device_stats *d = process_peak(m);

	json_object_set_new(p, GMT_RK_PEAK_HELD_BYTES, jint(d ? d->peak.bytes : 0));
	json_object_set_new(p, GMT_RK_PEAK_TIME_S, d ? jtime(t, d->peak.ts) : json_null());
	json_object_set_new(p, GMT_RK_PEAK_UNIX_S, d ? junix(t, d->peak.ts) : json_null());
	size_t first = gmt_model_first_counted_failure(m);

	json_object_set_new(p, "first_failure_time_s",
			    first != SIZE_MAX ? jtime(t, m->failed[first]->ts) : json_null());
	json_object_set_new(p, "first_failure_unix_s",
			    first != SIZE_MAX ? junix(t, m->failed[first]->ts) : json_null());
}

static json_t *
process_json(const struct gmt_process *proc, const struct gmt_cat_rules *categories)
{
	const struct gmt_model *m = proc->model;
	const struct gmt_trace *t = m->trace;
	json_t *p = json_object(), *argv = json_array(), *markers = json_array(), *rank;
	json_t *capture = json_array();
	char *file = gmt_utf8_lossy(t->path); /* a name is bytes, JSON text is UTF-8 */

	json_object_set_new(p, GMT_RK_FILE, json_string(file));
	free(file);
	json_object_set_new(p, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(p, "ppid", jll_or_null(t->ppid));
	json_object_set_new(p, "host", jstr_or_null(t->host));
	for (size_t i = 0; i < t->argc; i++)
		json_array_append_new(argv, json_string(t->argv[i]));
	json_object_set_new(p, GMT_RK_ARGV, argv);
	if (t->has_rank) {
		rank = json_object();
		json_object_set_new(rank, GMT_RK_RANK, jll_or_null(t->rank));
		json_object_set_new(rank, "local_rank", jll_or_null(t->local_rank));
		json_object_set_new(rank, "world_size", jll_or_null(t->world_size));
	} else {
		rank = json_null();
	}
	json_object_set_new(p, GMT_RK_RANK, rank);
	json_object_set_new(p, "forked_from", jll_or_null(t->forked_from));
	json_object_set_new(p, "tracer", jstr_or_null(t->tracer));
	json_object_set_new(p, "coverage", jstr_or_null(t->coverage));
	json_object_set_new(p, "coverage_reason", jstr_or_null(t->coverage_reason));
	for (size_t i = 0; i < t->ncapture; i++)
		json_array_append_new(capture, json_string(t->capture[i]));
	json_object_set_new(p, "capture", capture);
	json_object_set_new(p, GMT_RK_COMPLETE, json_boolean(t->complete));
	json_object_set_new(p, GMT_RK_ENDED_BY,
			    t->ended_by[0] ? json_string(t->ended_by) : json_null());
	json_object_set_new(p, "events", jint(gmt_model_events(m)));
	json_object_set_new(p, GMT_RK_DROPPED, jint(t->dropped));
	json_object_set_new(p, GMT_RK_DROPPED_READINGS, jint(t->dropped_readings));
	if (t->bounded) { /* only in a bounded trace (docs/report-json.md) */
		json_t *bo = json_object();
		json_object_set_new(bo, "bucket_ms", jint(t->bucket_ms));
		json_object_set_new(bo, "elided_events", jint(t->trailer_elided));
		json_object_set_new(bo, "elided_allocations", jint(t->elided_allocations));
		json_object_set_new(bo, "elided_blocks", jint(t->elided_blocks));
		json_object_set_new(bo, "elided_lines", jint(t->elided_lines));
		json_object_set_new(bo, "late_events", jint(t->bounded_late));
		json_object_set_new(p, "bounded", bo);
	}
	json_object_set_new(p, GMT_RK_END_TIME_S, t->have_ts ? jtime(t, t->last_ts) : json_null());
	json_object_set_new(p, GMT_RK_ALLOCATIONS, jint(m->allocations));
	json_object_set_new(p, "frees", jint(m->frees));
	json_object_set_new(p, "unmatched_frees", jint(m->unmatched_frees));
	json_object_set_new(p, "failed_frees", jint(m->failed_frees));
	json_object_set_new(p, "resets", jint(m->resets));
	json_object_set_new(p, "reused_addresses", jint(m->reused_addresses));
	json_object_set_new(p, "retains", jint(m->retains));
	json_object_set_new(p, "unmatched_retains", jint(m->unmatched_retains));
	json_object_set_new(p, "readings", jint(m->readings));
	json_object_set_new(p, "bad_lines", jint(t->bad_lines));
	json_object_set_new(p, "torn_last_line", json_boolean(t->torn));
	for (size_t i = 0; i < t->nmarkers; i++) {
		json_t *mk = json_object();

		json_object_set_new(mk, GMT_RK_SEQ, jint(t->markers[i].seq));
		json_object_set_new(mk, GMT_RK_TIME_S, jtime(t, t->markers[i].ts));
		json_object_set_new(mk, GMT_RK_LABEL, json_string(t->markers[i].label));
		json_object_set_new(mk, GMT_RK_TID,
				    t->markers[i].tid ? json_integer(t->markers[i].tid)
						      : json_null());
		if (t->markers[i].range != GMT_RANGE_NONE) {
			json_object_set_new(
			    mk, GMT_RK_RANGE,
			    json_string(t->markers[i].range == GMT_RANGE_PUSH ? "push" : "pop"));
			json_object_set_new(mk, GMT_RK_DEPTH, json_integer(t->markers[i].depth));
		}
		json_array_append_new(markers, mk);
	}
	json_object_set_new(p, GMT_RK_MARKERS, markers);
	json_object_set_new(p, "stack_capture", stack_capture_json(t));
	json_object_set_new(p, "modules_lines", jint(t->nmodsets));
	process_peak_keys(p, m);
	if (m->tensors)
		json_object_set_new(p, GMT_RK_TENSORS, gmt_json_tensors(proc, categories));
	return p;
}

static json_t *
kinds_by_value(const uint64_t by_kind[GMT_TK_COUNT])
{
	json_t *o = json_object();

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		json_object_set_new(o, gmt_kind_str((enum gmt_tkind)k), jint(by_kind[k]));
	return o;
}

static json_t *
held_terms_json(const uint64_t by_kind[GMT_TK_COUNT])
{
	json_t *a = json_array();

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		if (gmt_kind_held_term((enum gmt_tkind)k, by_kind))
			json_array_append_new(a, json_string(gmt_kind_str((enum gmt_tkind)k)));
	return a;
}

static json_t *
kind_stats_json(const struct gmt_trace *t, const struct gmt_kind_stats *ks)
{
	json_t *o = json_object();
	bool peaked = ks->peak.bytes != 0;

	json_object_set_new(o, "peak_bytes", jint(ks->peak.bytes));
	json_object_set_new(o, "peak_allocations", jint(ks->peak_allocs));
	json_object_set_new(o, GMT_RK_PEAK_TIME_S, peaked ? jtime(t, ks->peak.ts) : json_null());
	json_object_set_new(o, "peak_seq", peaked ? jint(ks->peak.seq) : json_null());
	json_object_set_new(o, "live_bytes", jint(ks->live));
	json_object_set_new(o, "live_allocations", jint(ks->live_allocs));
	json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(ks->allocations));
	return o;
}

static json_t *
pool_slack_json(const struct gmt_trace *t, const struct gmt_device_stats *d)
{
	const struct gmt_kind_stats *ks = &d->kinds[GMT_TK_POOL_RESERVE];
	json_t *o;

	if (!ks->peak.bytes)
		return json_null();
	o = json_object();
	json_object_set_new(o, GMT_RK_TIME_S, jtime(t, ks->peak.ts));
	json_object_set_new(o, GMT_RK_SEQ, jint(ks->peak.seq));
	json_object_set_new(o, "reserve_bytes", jint(ks->peak.bytes));
	json_object_set_new(o, "pool_live_bytes", jint(d->pool_live_at_reserve_peak));
	json_object_set_new(o, "slack_bytes", jdiff(ks->peak.bytes, d->pool_live_at_reserve_peak));
	return o;
}

static json_t *
peak_json(size_t proc, const struct gmt_model *m, const struct gmt_device_stats *d)
{
	const struct gmt_trace *t = m->trace;
	json_t *p = json_object(), *kinds = json_object();
	bool peaked = d->peak.bytes != 0;

	json_object_set_new(p, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(p, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(p, GMT_RK_DEVICE, json_integer(d->device));
	json_object_set_new(p, GMT_RK_BYTES, jint(d->peak.bytes));
	json_object_set_new(p, GMT_RK_TIME_S, peaked ? jtime(t, d->peak.ts) : json_null());
	json_object_set_new(p, GMT_RK_SEQ, peaked ? jint(d->peak.seq) : json_null());
	json_object_set_new(p, "held_terms", held_terms_json(d->peak_by_kind));
	json_object_set_new(p, "by_kind", kinds_by_value(d->peak_by_kind));
	json_object_set_new(p, "held_at_end_bytes", jint(d->held));
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		json_object_set_new(kinds, gmt_kind_str((enum gmt_tkind)k),
				    kind_stats_json(t, &d->kinds[k]));
	json_object_set_new(p, "kinds", kinds);
	json_object_set_new(p, "pool_slack", pool_slack_json(t, d));
	json_object_set_new(p, GMT_RK_ALLOCATIONS, jint(d->allocations));
	return p;
}

static json_t *
jdriver(const struct gmt_trace *t, uint16_t driver)
{
	return jstr_or_null(gmt_trace_driver(t, driver));
}

static json_t *
leak_json(size_t proc, const struct gmt_process *p, const struct gmt_leak *l)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *t = m->trace;
	json_t *o = json_object();

	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(o, GMT_RK_AT_EXIT, json_boolean(t->complete));
	json_object_set_new(o, GMT_RK_BYTES, jint(l->bytes));
	json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(l->allocations));
	json_object_set_new(o, GMT_RK_API, json_string(gmt_trace_string(t, l->api)));
	json_object_set_new(o, GMT_RK_DRIVER, jdriver(t, l->driver));
	json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)l->kind)));
	json_object_set_new(o, GMT_RK_COUNTED,
			    json_boolean(gmt_kind_counted((enum gmt_tkind)l->kind)));
	json_object_set_new(o, GMT_RK_STACK, jint(l->stack));
	json_object_set_new(o, "frames", frames_json(t, l->stack));
	stack_keys(o, p, l->stack);
	json_object_set_new(o, GMT_RK_CACHE, jcache(p, l->stack, l->kind));
	json_object_set_new(o, GMT_RK_CACHED,
			    json_boolean(gmt_process_cached(p, l->stack, l->kind)));
	json_object_set_new(o, GMT_RK_LIBRARY, jlibrary(p, l->stack, l->kind));
	return o;
}

/* failed[].class, oom[].class: "failure", "probe" or "recovered" (explain.c has the rule). */
static json_t *
jfail_class(const struct gmt_model *m, const struct gmt_trace_event *ev)
{
	return json_string(
	    gmt_fail_class_name(gmt_model_fail_class(m, gmt_model_failure_at(m, ev->seq))));
}

static json_t *
failed_json(size_t proc, const struct gmt_process *p, const struct gmt_trace_event *ev, bool frames)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *t = m->trace;
	json_t *o = json_object();
	bool mi = ev->flags & GMT_EV_HAS_MEMINFO;

	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(o, GMT_RK_SEQ, jint(ev->seq));
	json_object_set_new(o, GMT_RK_TIME_S, jtime(t, ev->ts));
	json_object_set_new(o, GMT_RK_API, json_string(gmt_trace_string(t, ev->api)));
	json_object_set_new(o, GMT_RK_DRIVER, jdriver(t, ev->driver));
	json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)ev->kind)));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(ev->device));
	json_object_set_new(o, GMT_RK_SIZE, jint(ev->size));
	json_object_set_new(o, GMT_RK_RESULT, json_integer(ev->result));
	json_object_set_new(o, "free_bytes", mi ? jint(ev->free_bytes) : json_null());
	json_object_set_new(o, GMT_RK_TOTAL_BYTES, mi ? jint(ev->total_bytes) : json_null());
	json_object_set_new(o, GMT_RK_STACK, jint(ev->stack));
	if (frames)
		json_object_set_new(o, "frames", frames_json(t, ev->stack));
	stack_keys(o, p, ev->stack);
	json_object_set_new(o, GMT_RK_CLASS, jfail_class(m, ev));
	return o;
}

static json_t *
ledger_json(size_t proc, const struct gmt_model *m, const struct gmt_ledger_row *row)
{
	const struct gmt_trace *t = m->trace;
	const struct gmt_trace_nvml *nv = row->p->nvml;
	json_t *o = json_object();

	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(nv->device));
	json_object_set_new(o, "reading", json_string(row->last ? "last" : "near_peak"));
	json_object_set_new(o, "nearest_to_peak", json_boolean(row->nearest_to_peak));
	json_object_set_new(o, GMT_RK_TIME_S, jtime(t, nv->ts));
	json_object_set_new(o, GMT_RK_SEQ, nv->has_seq ? jint(nv->seq) : json_null());
	json_object_set_new(o, "nvml_index",
			    nv->index >= 0 ? json_integer(nv->index) : json_null());
	json_object_set_new(o, GMT_RK_TOTAL_BYTES, jint(nv->total));
	json_object_set_new(o, "used_bytes", jint(nv->used));
	json_object_set_new(o, "process_used_bytes",
			    nv->has_process_used ? jint(nv->process_used) : json_null());
	json_object_set_new(o, GMT_RK_BASIS,
			    json_string(row->per_process ? "process_used" : "used"));
	static const char *const from[] = {"pid", "nspid", "only_process", "device_used"};
	json_object_set_new(o, "process_used_from",
			    nv->has_process_used ? json_string(from[nv->used_from & 3])
						 : json_null());
	json_object_set_new(o, "pid_namespace", json_boolean(nv->pid_namespace));
	json_object_set_new(o, "nvml_bytes", jint(row->nvml_bytes));
	json_object_set_new(o, "tracked_bytes", jint(row->p->held));
	json_object_set_new(o, "tracked_terms", held_terms_json(row->p->by_kind));
	json_object_set_new(o, "tracked_by_kind", kinds_by_value(row->p->by_kind));
	json_object_set_new(o, "untracked_bytes", json_integer((json_int_t)row->untracked));
	return o;
}

static void
ledger_append(json_t *a, size_t proc, const struct gmt_model *m)
{
	size_t n;
	struct gmt_ledger_row *rows = (errno = 0, gmt_ledger_rows(m, &n));

	if (!rows && errno == ENOMEM)
		gmt_nomem();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, ledger_json(proc, m, &rows[i]));
	free(rows);
}

static json_t *
kinds_json(void)
{
	json_t *a = json_array();

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) {
		json_t *o = json_object();

		json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)k)));
		json_object_set_new(o, "meaning", json_string(gmt_kind_meaning((enum gmt_tkind)k)));
		json_object_set_new(o, "held", json_boolean(gmt_kind_in_held((enum gmt_tkind)k)));
		json_object_set_new(o, GMT_RK_COUNTED,
				    json_boolean(gmt_kind_counted((enum gmt_tkind)k)));
		json_array_append_new(a, o);
	}
	return a;
}

/* Leaks of all processes, largest first; ties keep process order, then each model's order. */
static json_t *
leaks_json(const struct gmt_process *procs, size_t n)
{
	json_t *a = json_array();
	size_t *next = calloc(n ? n : 1, sizeof(*next));

	if (!next)
		return a;
	for (;;) {
		size_t best = n;

		for (size_t i = 0; i < n; i++) {
			if (next[i] >= procs[i].model->nleaks)
				continue;
			if (best == n || procs[i].model->leaks[next[i]].bytes >
					     procs[best].model->leaks[next[best]].bytes)
				best = i;
		}
		if (best == n)
			break;
		json_array_append_new(
		    a, leak_json(best, &procs[best], &procs[best].model->leaks[next[best]]));
		next[best]++;
	}
	free(next);
	return a;
}

// --- call-site groups ---------------------------------------------------------------------------

enum site_list { SITES_LEAK, SITES_PEAK, SITES_FAILED };

/* failed_sites[]: the failed allocations that count (not probes, not recovered ones). */
static struct gmt_site_item *
counted_failed_items(const struct gmt_process *procs, size_t n, size_t *nitems)
{
	struct gmt_site_item *items = gmt_sites_failed_items(procs, n, nitems);
	size_t k = 0;

	for (size_t i = 0; i < *nitems; i++) {
		const struct gmt_model *m = items[i].p->model;

		if (gmt_model_fail_class(m, gmt_model_failure_at(m, items[i].seq)) ==
		    GMT_FAIL_COUNTED)
			items[k++] = items[i];
	}
	*nitems = k;
	return items;
}

static json_t *
site_stacks_json(const struct gmt_site *g, enum site_list which)
{
	json_t *a = json_array();

	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gmt_site_stack *st = &g->stacks[i];
		json_t *o = json_object();

		json_object_set_new(o, GMT_RK_STACK, jint(st->stack));
		json_object_set_new(o, GMT_RK_BYTES, jint(st->bytes));
		json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(st->count));
		json_object_set_new(o, GMT_RK_CACHE, jcache(g->p, st->stack, g->kind));
		if (which == SITES_LEAK) {
			json_object_set_new(
			    o, GMT_RK_CACHED,
			    json_boolean(gmt_process_cached(g->p, st->stack, g->kind)));
			json_object_set_new(o, GMT_RK_LIBRARY, jlibrary(g->p, st->stack, g->kind));
		}
		json_array_append_new(a, o);
	}
	return a;
}

/* leak_sites[]: the group's bytes and allocations in stacks of a holding cache, and of a CUDA
 * library's handles. */
static void
site_cached_json(json_t *o, const struct gmt_site *g)
{
	uint64_t bytes[3] = {0}, allocs[3] = {0};

	for (size_t i = 0; i < g->nstacks; i++) {
		enum gmt_holder h = gmt_process_holder(g->p, g->stacks[i].stack, g->kind);

		bytes[h] += g->stacks[i].bytes;
		allocs[h] += g->stacks[i].count;
	}
	json_object_set_new(o, GMT_RK_CACHED_BYTES, jint(bytes[GMT_HOLDER_CACHE]));
	json_object_set_new(o, GMT_RK_CACHED_ALLOCATIONS, jint(allocs[GMT_HOLDER_CACHE]));
	json_object_set_new(o, GMT_RK_LIBRARY_BYTES, jint(bytes[GMT_HOLDER_LIBRARY]));
	json_object_set_new(o, GMT_RK_LIBRARY_ALLOCATIONS, jint(allocs[GMT_HOLDER_LIBRARY]));
}

#define JSON_CALLERS 16

/* callers[]: who called the site's function, with their share (gmt_site_callers()) */
static json_t *
site_callers_json(const struct gmt_site *g)
{
	struct gmt_site_caller c[JSON_CALLERS];
	size_t n = gmt_site_callers(g, c, JSON_CALLERS);
	json_t *a = json_array();

	for (size_t i = 0; i < n && i < JSON_CALLERS; i++) {
		json_t *o = json_object();
		json_object_set_new(o, GMT_RK_SITE,
				    c[i].frame ? frame_json(c[i].frame) : json_null());
		json_object_set_new(o, GMT_RK_BYTES, jint(c[i].bytes));
		json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(c[i].count));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *
site_group_json(const struct gmt_site *g, enum site_list which)
{
	const struct gmt_trace *t = g->p->model->trace;
	json_t *o = json_object();

	json_object_set_new(o, GMT_RK_PROCESS, jint(g->proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	if (which == SITES_LEAK)
		json_object_set_new(o, GMT_RK_AT_EXIT, json_boolean(t->complete));
	if (which != SITES_LEAK)
		json_object_set_new(o, GMT_RK_DEVICE, json_integer(g->device));
	json_object_set_new(o, GMT_RK_BYTES, jint(g->bytes));
	json_object_set_new(o, which == SITES_FAILED ? GMT_RK_FAILURES : GMT_RK_ALLOCATIONS,
			    jint(g->count));
	if (which == SITES_FAILED)
		json_object_set_new(o, "first_seq", jint(g->first_seq));
	json_object_set_new(o, GMT_RK_API, json_string(gmt_trace_string(t, g->api)));
	json_object_set_new(o, GMT_RK_DRIVER, jdriver(t, g->driver));
	json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)g->kind)));
	if (which == SITES_LEAK)
		json_object_set_new(o, GMT_RK_COUNTED,
				    json_boolean(gmt_kind_counted((enum gmt_tkind)g->kind)));
	json_object_set_new(o, GMT_RK_SITE, site_json(g->cs));
	if (which != SITES_FAILED)
		json_object_set_new(o, GMT_RK_CACHE,
				    g->nstacks ? jcache(g->p, g->stacks[0].stack, g->kind)
					       : json_null());
	if (which == SITES_LEAK)
		site_cached_json(o, g);
	json_object_set_new(o, GMT_RK_CALLERS, site_callers_json(g));
	json_object_set_new(o, GMT_RK_STACKS, site_stacks_json(g, which));
	return o;
}

static json_t *
site_list_json(const struct gmt_process *procs, size_t n, enum site_list which)
{
	struct gmt_site_item *items;
	struct gmt_sites sites;
	size_t nitems;
	json_t *a = json_array();

	if (which == SITES_LEAK)
		items = gmt_sites_leak_items(procs, n, &nitems);
	else if (which == SITES_PEAK)
		items = gmt_sites_peak_items(procs, n, &nitems);
	else
		items = counted_failed_items(procs, n, &nitems);
	gmt_sites_group(items, nitems,
			which == SITES_FAILED ? GMT_GROUP_BY_SEQ : GMT_GROUP_BY_BYTES, &sites);
	for (size_t i = 0; i < sites.n; i++)
		json_array_append_new(a, site_group_json(&sites.v[i], which));
	gmt_sites_free(&sites);
	free(items);
	return a;
}

// --- analyses: range, timeline, OOM forensics, growth, churn, fragmentation ---------------------

#define CHURN_MAX_SITES 50
#define OOM_TOP_SITES 10

static json_t *
range_bound_json(const struct gmt_range_bound *b,
		 const struct gmt_range_point *p,
		 const struct gmt_model *m)
{
	json_t *o;

	if (!b->set)
		return json_null();
	o = json_object();
	json_object_set_new(o, "spec", json_string(b->spec ? b->spec : ""));
	json_object_set_new(o, GMT_RK_TIME_S, p->found ? jtime(m->trace, p->ts) : json_null());
	json_object_set_new(o, GMT_RK_SEQ,
			    p->found && p->seq != UINT64_MAX ? jint(p->seq) : json_null());
	json_object_set_new(o, "marker", jstr_or_null(b->label));
	return o;
}

/* `range`: where --from/--to landed; by the first process (each trace has its own times). */
static json_t *
range_json(const struct gmt_process *procs, size_t n)
{
	json_t *o;

	if (n == 0 || (!procs[0].model->range.from.set && !procs[0].model->range.to.set))
		return json_null();
	o = json_object();
	json_object_set_new(o, "from",
			    range_bound_json(&procs[0].model->range.from,
					     &procs[0].model->range_from, procs[0].model));
	json_object_set_new(
	    o, "to",
	    range_bound_json(&procs[0].model->range.to, &procs[0].model->range_to, procs[0].model));
	return o;
}

static json_t *
series_json(size_t proc, const struct gmt_model *m, const struct gmt_series *s)
{
	json_t *o = json_object(), *pts = json_array();

	for (size_t i = 0; i < s->n; i++) {
		json_t *pt = json_array();

		json_array_append_new(pt, jtime(m->trace, s->points[i].ts));
		json_array_append_new(pt, jint(s->points[i].bytes));
		json_array_append_new(pts, pt);
	}
	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(m->trace->pid));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(s->device));
	json_object_set_new(
	    o, GMT_RK_KIND,
	    json_string(s->kind == GMT_TK_COUNT ? "held" : gmt_kind_str((enum gmt_tkind)s->kind)));
	json_object_set_new(o, GMT_RK_POINTS, pts);
	json_object_set_new(o, "exact", json_boolean(s->exact));
	return o;
}

/* By process, device, then held and the kinds in their order. */
static json_t *
timeline_json(const struct gmt_process *procs, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

		for (size_t d = 0; d < m->ndevices; d++) {
			/* held first (kind GMT_TK_COUNT), then every kind */
			for (int o = 0; o < GMT_TK_COUNT; o++) {
				int k = o == 0 ? GMT_TK_COUNT : o;

				for (size_t j = 0; j < m->nseries; j++) {
					const struct gmt_series *s = &m->series[j];

					if (s->device == m->devices[d].device && s->kind == k &&
					    s->n)
						json_array_append_new(a, series_json(i, m, s));
				}
			}
		}
	}
	return a;
}

/* The keys that name a site of the model's site table. */
static void
site_keys(json_t *o, size_t proc, const struct gmt_process *p, const struct gmt_site_stats *st)
{
	const struct gmt_model *m = p->model;

	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(m->trace->pid));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(st->device));
	json_object_set_new(o, GMT_RK_API, json_string(gmt_trace_string(m->trace, st->api)));
	json_object_set_new(o, GMT_RK_DRIVER, jdriver(m->trace, st->driver));
	json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)st->kind)));
	json_object_set_new(o, GMT_RK_SITE, site_json(gmt_process_stack(p, st->stack)));
	json_object_set_new(o, GMT_RK_STACK, jint(st->stack));
	json_object_set_new(o, GMT_RK_CACHE, jcache(p, st->stack, st->kind));
}

static json_t *
oom_json(size_t proc, const struct gmt_process *p, const struct gmt_oom *o)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *t = m->trace;
	const struct gmt_trace_event *ev = o->ev;
	bool meminfo = ev->flags & GMT_EV_HAS_MEMINFO;
	json_t *j = json_object(), *top = json_array(), *nv;
	char text[2048];
	enum gmt_oom_cause cause = gmt_oom_explain(p, o, text, sizeof(text));

	json_object_set_new(j, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(j, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(j, GMT_RK_SEQ, jint(ev->seq));
	json_object_set_new(j, GMT_RK_TIME_S, jtime(t, ev->ts));
	json_object_set_new(j, GMT_RK_DEVICE, json_integer(ev->device));
	json_object_set_new(j, GMT_RK_API, json_string(gmt_trace_string(t, ev->api)));
	json_object_set_new(j, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)ev->kind)));
	json_object_set_new(j, GMT_RK_SIZE, jint(ev->size));
	json_object_set_new(j, GMT_RK_RESULT, json_integer(ev->result));
	json_object_set_new(j, "free_bytes", meminfo ? jint(ev->free_bytes) : json_null());
	json_object_set_new(j, GMT_RK_TOTAL_BYTES, meminfo ? jint(ev->total_bytes) : json_null());
	json_object_set_new(j, GMT_RK_CLASS, jfail_class(m, ev));
	json_object_set_new(j, "held_bytes", jint(o->held));
	json_object_set_new(j, "by_kind", kinds_by_value(o->by_kind));
	json_object_set_new(j, "live_allocations", jint(o->live_allocations));
	json_object_set_new(j, "cache_bytes", jint(gmt_oom_cache_bytes(p, o)));
	json_object_set_new(j, "pool_slack_bytes",
			    o->has_pool_slack ? json_integer(o->pool_slack) : json_null());
	if (o->nvml) {
		nv = json_object();
		json_object_set_new(nv, GMT_RK_TIME_S, jtime(t, o->nvml->ts));
		json_object_set_new(nv, "used_bytes", jint(o->nvml->used));
		json_object_set_new(nv, GMT_RK_TOTAL_BYTES, jint(o->nvml->total));
		json_object_set_new(nv, "process_used_bytes",
				    o->nvml->has_process_used ? jint(o->nvml->process_used)
							      : json_null());
	} else {
		nv = json_null();
	}
	json_object_set_new(j, "nvml", nv);
	if (meminfo && ev->total_bytes >= ev->free_bytes) {
		json_object_set_new(j, "untracked_bytes",
				    jdiff(ev->total_bytes - ev->free_bytes, o->held));
	} else {
		json_object_set_new(j, "untracked_bytes", json_null());
	}
	json_object_set_new(j, "largest_gap_bytes",
			    o->gaps.valid ? jint(o->gaps.largest_gap) : json_null());
	json_object_set_new(j, "cause", json_string(gmt_oom_cause_name(cause)));
	json_object_set_new(j, "explanation", json_string(text));
	for (size_t i = 0; i < o->nsites && i < OOM_TOP_SITES; i++) {
		const struct gmt_site_stats *st = &m->sites[o->sites[i].site];
		json_t *s = json_object();

		json_object_set_new(s, GMT_RK_SITE, site_json(gmt_process_stack(p, st->stack)));
		json_object_set_new(s, GMT_RK_API, json_string(gmt_trace_string(t, st->api)));
		json_object_set_new(s, GMT_RK_DRIVER, jdriver(t, st->driver));
		json_object_set_new(s, GMT_RK_KIND,
				    json_string(gmt_kind_str((enum gmt_tkind)st->kind)));
		json_object_set_new(s, GMT_RK_BYTES, jint(o->sites[i].bytes));
		json_object_set_new(s, GMT_RK_ALLOCATIONS, jint(o->sites[i].allocations));
		json_object_set_new(s, GMT_RK_CACHE, jcache(p, st->stack, st->kind));
		json_object_set_new(s, GMT_RK_STACK, jint(st->stack));
		json_array_append_new(top, s);
	}
	json_object_set_new(j, "top_sites", top);
	return j;
}

/* growth[] and growth_sites[]: what the samples were. */
static void
sampling_keys(json_t *o, const struct gmt_model *m)
{
	bool markers = m->marker_samples >= 2;

	json_object_set_new(
	    o, GMT_RK_BASIS,
	    json_string(markers ? gmt_growth_basis_name(m->growth_basis) : "snapshots"));
	json_object_set_new(o, GMT_RK_SAMPLES,
			    jint(markers ? m->marker_samples : m->snapshot_samples));
}

/* ... the bytes at the first and last sample, and the difference. */
static void
growth_bytes_keys(json_t *o, const struct gmt_growth *g)
{
	json_object_set_new(o, GMT_RK_FIRST_BYTES, jint(g->first));
	json_object_set_new(o, GMT_RK_LAST_BYTES, jint(g->last));
	json_object_set_new(o, GMT_RK_GROWTH_BYTES, jint(g->last - g->first));
}

/* ... and how often the bytes rose and fell between samples. */
static void
growth_keys(json_t *o, const struct gmt_growth *g)
{
	growth_bytes_keys(o, g);
	json_object_set_new(o, GMT_RK_RISES, jint(g->rises));
	json_object_set_new(o, GMT_RK_FALLS, jint(g->falls));
}

/* ... the labels of the first and last marker (null for snapshots). */
static void
label_keys(json_t *o, const struct gmt_model *m)
{
	bool markers = m->marker_samples >= 2;

	json_object_set_new(o, GMT_RK_FIRST_LABEL,
			    markers ? jstr_or_null(m->first_marker) : json_null());
	json_object_set_new(o, GMT_RK_LAST_LABEL,
			    markers ? jstr_or_null(m->last_marker) : json_null());
}

/* churn[] and churn_sites[]: allocation traffic. */
static void
traffic_keys(json_t *o, const struct gmt_site_stats *st)
{
	json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(st->allocations));
	json_object_set_new(o, "allocated_bytes", jint(st->allocated_bytes));
	json_object_set_new(o, "frees", jint(st->frees));
	json_object_set_new(o, "temporaries", jint(st->temporaries));
	json_object_set_new(o, "temporary_bytes", jint(st->temporary_bytes));
	json_object_set_new(o, "median_lifetime_s",
			    st->frees ? json_real((double)gmt_site_median_lifetime(st) / 1e9)
				      : json_null());
}

static json_t *
growth_json(const struct gmt_process *procs, size_t n)
{
	size_t nv;
	struct gmt_site_ref *v = gmt_sites_ranked(procs, n, GMT_SITES_GROWING, &nv);
	json_t *a = json_array();

	for (size_t i = 0; i < nv; i++) {
		const struct gmt_model *m = v[i].p->model;
		const struct gmt_growth *g = gmt_site_growth(m, v[i].st);
		json_t *o = json_object();

		site_keys(o, v[i].proc, v[i].p, v[i].st);
		sampling_keys(o, m);
		growth_keys(o, g);
		label_keys(o, m);
		json_array_append_new(a, o);
	}
	free(v);
	return a;
}

/*
 * churn[] and churn_sites[] list by process, then in @p count entries' order, at most
 * CHURN_MAX_SITES per process: the indices of the entries shown, into @p order (@p count of
 * room), whose processes @p proc_of gives. Returns how many.
 */
static size_t
churn_order(const size_t *proc_of, size_t count, size_t nproc, size_t *order)
{
	size_t m = 0;

	for (size_t i = 0; i < nproc; i++)
		for (size_t k = 0, shown = 0; k < count && shown < CHURN_MAX_SITES; k++)
			if (proc_of[k] == i) {
				order[m++] = k;
				shown++;
			}
	return m;
}

static json_t *
churn_json(const struct gmt_process *procs, size_t n)
{
	size_t nv;
	struct gmt_site_ref *v = gmt_sites_ranked(procs, n, GMT_SITES_BUSIEST, &nv);
	size_t *proc_of = gmt_realloc_array(NULL, nv, sizeof(*proc_of));
	size_t *order = gmt_realloc_array(NULL, nv, sizeof(*order));
	json_t *a = json_array();

	if (!proc_of || !order) {
		gmt_nomem(); /* none listed: the report says out of memory */
		nv = 0;
	}
	for (size_t k = 0; k < nv; k++)
		proc_of[k] = v[k].proc;
	for (size_t i = 0, m = churn_order(proc_of, nv, n, order); i < m; i++) {
		const struct gmt_site_ref *r = &v[order[i]];
		json_t *o = json_object();

		site_keys(o, r->proc, r->p, r->st);
		traffic_keys(o, r->st);
		json_array_append_new(a, o);
	}
	free(order);
	free(proc_of);
	free(v);
	return a;
}

/* The keys that name a call-site group of growth_sites[] and churn_sites[]. */
static void
group_keys(json_t *o, const struct gmt_site *g)
{
	const struct gmt_trace *t = g->p->model->trace;

	json_object_set_new(o, GMT_RK_PROCESS, jint(g->proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(g->device));
	json_object_set_new(o, GMT_RK_API, json_string(gmt_trace_string(t, g->api)));
	json_object_set_new(o, GMT_RK_DRIVER, jdriver(t, g->driver));
	json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)g->kind)));
	json_object_set_new(o, GMT_RK_SITE, site_json(g->cs));
	json_object_set_new(o, GMT_RK_CACHE, jcache(g->p, g->stacks[0].stack, g->kind));
}

/* The site tables' rows that @p order selects, merged by call site, in @p by's order. */
static void
stat_groups(const struct gmt_process *procs,
	    size_t n,
	    enum gmt_site_order order,
	    enum gmt_group_order by,
	    struct gmt_sites *out)
{
	size_t nitems;
	struct gmt_site_item *items = gmt_sites_stat_items(procs, n, order, &nitems);

	gmt_sites_group(items, nitems, by, out);
	free(items);
}

/* growth[] merged by call site: the stacks of one line grow together. */
static json_t *
growth_sites_json(const struct gmt_process *procs, size_t n)
{
	struct gmt_sites sites;
	json_t *a = json_array();

	stat_groups(procs, n, GMT_SITES_GROWING, GMT_GROUP_BY_BYTES, &sites);
	for (size_t i = 0; i < sites.n; i++) {
		const struct gmt_site *g = &sites.v[i];
		const struct gmt_model *m = g->p->model;
		uint32_t min_rises, max_rises;
		struct gmt_growth sum = gmt_site_group_growth(g, &min_rises, &max_rises);
		json_t *o = json_object(), *stacks = json_array();

		group_keys(o, g);
		sampling_keys(o, m);
		growth_bytes_keys(o, &sum);
		json_object_set_new(o, GMT_RK_MIN_RISES, jint(min_rises));
		json_object_set_new(o, GMT_RK_MAX_RISES, jint(max_rises));
		label_keys(o, m);
		for (size_t k = 0; k < g->nstacks; k++) {
			const struct gmt_growth *sg = gmt_site_growth(m, g->stacks[k].st);
			json_t *e = json_object();

			json_object_set_new(e, GMT_RK_STACK, jint(g->stacks[k].stack));
			growth_keys(e, sg);
			json_array_append_new(stacks, e);
		}
		json_object_set_new(o, GMT_RK_STACKS, stacks);
		json_array_append_new(a, o);
	}
	gmt_sites_free(&sites);
	return a;
}

/* churn[] merged by call site, most allocations first, at most CHURN_MAX_SITES per process. */
static json_t *
churn_sites_json(const struct gmt_process *procs, size_t n)
{
	struct gmt_sites sites;
	size_t *proc_of, *order;
	json_t *a = json_array();

	stat_groups(procs, n, GMT_SITES_BUSIEST, GMT_GROUP_BY_COUNT, &sites);
	proc_of = gmt_realloc_array(NULL, sites.n, sizeof(*proc_of));
	order = gmt_realloc_array(NULL, sites.n, sizeof(*order));
	if (!proc_of || !order) {
		gmt_nomem();
		gmt_sites_free(&sites); /* none listed: the report says out of memory */
	}
	for (size_t k = 0; k < sites.n; k++)
		proc_of[k] = sites.v[k].proc;
	for (size_t i = 0, m = churn_order(proc_of, sites.n, n, order); i < m; i++) {
		const struct gmt_site *g = &sites.v[order[i]];
		struct gmt_site_stats sum = gmt_site_group_traffic(g);
		json_t *o = json_object(), *stacks = json_array();

		group_keys(o, g);
		traffic_keys(o, &sum);
		for (size_t k = 0; k < g->nstacks; k++)
			json_array_append_new(stacks, jint(g->stacks[k].stack));
		json_object_set_new(o, GMT_RK_STACKS, stacks);
		json_array_append_new(a, o);
	}
	free(order);
	free(proc_of);
	gmt_sites_free(&sites);
	return a;
}

static json_t *
size_histogram_json(const struct gmt_device_stats *d)
{
	json_t *a = json_array();

	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) {
		json_t *buckets = json_array(), *o;

		for (int b = 0; b < GMT_SIZE_BUCKETS; b++) {
			const struct gmt_size_bucket *sb = &d->sizes[k][b];
			json_t *e;

			if (!sb->allocations)
				continue;
			e = json_object();
			json_object_set_new(e, "min_bytes", jint(b ? 1ull << b : 0));
			json_object_set_new(e, "max_bytes",
					    jint(b < 63 ? 1ull << (b + 1) : UINT64_MAX));
			json_object_set_new(e, GMT_RK_ALLOCATIONS, jint(sb->allocations));
			json_object_set_new(e, GMT_RK_BYTES, jint(sb->bytes));
			json_array_append_new(buckets, e);
		}
		if (!json_array_size(buckets)) {
			json_decref(buckets);
			continue;
		}
		o = json_object();
		json_object_set_new(o, GMT_RK_KIND, json_string(gmt_kind_str((enum gmt_tkind)k)));
		json_object_set_new(o, "buckets", buckets);
		json_array_append_new(a, o);
	}
	return a;
}

/* One layout; @p kind names its kind first (the per-kind list), NULL for the sum. */
static json_t *
gaps_json(const struct gmt_gaps *g, const char *kind)
{
	json_t *o;

	if (!g->valid)
		return json_null();
	o = json_object();
	if (kind)
		json_object_set_new(o, GMT_RK_KIND, json_string(kind));
	json_object_set_new(o, "live_allocations", jint(g->live_allocations));
	json_object_set_new(o, "span_bytes", jint(g->span));
	json_object_set_new(o, "address_ranges", jint(g->ranges));
	json_object_set_new(o, "gap_bytes", jint(g->gap_bytes));
	json_object_set_new(o, "largest_gap_bytes", jint(g->largest_gap));
	json_object_set_new(o, "gaps", jint(g->gaps));
	return o;
}

static json_t *
fragmentation_one(size_t proc, const struct gmt_model *m, const struct gmt_device_stats *d)
{
	const struct gmt_trace *t = m->trace;
	json_t *o = json_object(), *pool = json_null(), *vmm = json_null(), *req = json_null();
	json_t *by_kind;
	const struct gmt_kind_stats *k = d->kinds;

	json_object_set_new(o, GMT_RK_PROCESS, jint(proc));
	json_object_set_new(o, GMT_RK_PID, jll_or_null(t->pid));
	json_object_set_new(o, GMT_RK_DEVICE, json_integer(d->device));
	json_object_set_new(o, "size_histogram", size_histogram_json(d));
	if (d->pool_read) {
		pool = json_object();
		uint64_t rp = k[GMT_TK_POOL_RESERVE].peak.bytes, lp = d->pool_live_at_reserve_peak;
		json_object_set_new(pool, "reserve_peak_bytes", jint(rp));
		json_object_set_new(pool, "live_at_reserve_peak_bytes", jint(lp));
		json_object_set_new(pool, "slack_at_reserve_peak_bytes", jdiff(rp, lp));
		json_object_set_new(pool, "max_slack_bytes", jint(d->max_pool_slack));
		json_object_set_new(pool, "max_slack_time_s",
				    d->max_pool_slack ? jtime(t, d->max_pool_slack_ts)
						      : json_null());
	}
	json_object_set_new(o, "pool", pool);
	if (k[GMT_TK_VMM_RESERVE].peak.bytes || k[GMT_TK_VMM_MAPPED].peak.bytes ||
	    k[GMT_TK_VMM_PHYSICAL].peak.bytes) {
		vmm = json_object();
		json_object_set_new(vmm, "reserved_peak_bytes",
				    jint(k[GMT_TK_VMM_RESERVE].peak.bytes));
		json_object_set_new(vmm, "mapped_peak_bytes",
				    jint(k[GMT_TK_VMM_MAPPED].peak.bytes));
		json_object_set_new(vmm, "physical_peak_bytes",
				    jint(k[GMT_TK_VMM_PHYSICAL].peak.bytes));
		json_object_set_new(vmm, "mapped_at_end_bytes", jint(k[GMT_TK_VMM_MAPPED].live));
		json_object_set_new(vmm, "reserved_at_end_bytes", jint(k[GMT_TK_VMM_RESERVE].live));
	}
	json_object_set_new(o, "vmm", vmm);
	if (d->requested_allocs) {
		req = json_object();
		json_object_set_new(req, GMT_RK_ALLOCATIONS, jint(d->requested_allocs));
		json_object_set_new(req, "requested_bytes", jint(d->requested_bytes));
		json_object_set_new(req, "granted_bytes", jint(d->requested_granted));
	}
	json_object_set_new(o, "requested_vs_granted", req);
	json_object_set_new(o, "gaps_at_peak", gaps_json(&d->peak_gaps, NULL));
	by_kind = json_array();
	for (int kind = 0; kind < GMT_TK_COUNT; kind++)
		if (d->peak_gaps_kind[kind].valid)
			json_array_append_new(by_kind,
					      gaps_json(&d->peak_gaps_kind[kind],
							gmt_kind_str((enum gmt_tkind)kind)));
	json_object_set_new(o, "gaps_at_peak_by_kind", by_kind);
	return o;
}

static json_t *
fragmentation_json(const struct gmt_process *procs, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		for (size_t d = 0; d < procs[i].model->ndevices; d++)
			if (procs[i].model->devices[d].allocations)
				json_array_append_new(
				    a, fragmentation_one(i, procs[i].model,
							 &procs[i].model->devices[d]));
	return a;
}

/* summary.cached_at_exit: one key per caching allocator that keeps its memory, always all. */
static json_t *
cached_at_exit_json(const struct gmt_totals *tot)
{
	json_t *o = json_object();

	for (int c = GMT_CACHE_NONE + 1; c < GMT_CACHE_COUNT; c++) {
		json_t *e;

		if (!gmt_cache_holds((enum gmt_cache)c))
			continue;
		e = json_object();
		json_object_set_new(e, GMT_RK_BYTES, jint(tot->cached[c].bytes));
		json_object_set_new(e, GMT_RK_ALLOCATIONS, jint(tot->cached[c].allocations));
		json_object_set_new(o, gmt_cache_name((enum gmt_cache)c), e);
	}
	return o;
}

/* summary.library_at_exit: one key per CUDA library, always all. */
static json_t *
library_at_exit_json(const struct gmt_totals *tot)
{
	json_t *o = json_object();

	for (int l = GMT_LIB_NONE + 1; l < GMT_LIB_COUNT; l++) {
		json_t *e = json_object();

		json_object_set_new(e, GMT_RK_BYTES, jint(tot->library[l].bytes));
		json_object_set_new(e, GMT_RK_ALLOCATIONS, jint(tot->library[l].allocations));
		json_object_set_new(o, gmt_library_name((enum gmt_library)l), e);
	}
	return o;
}

/* summary.peak_process and first_failure_process: which rank to look at first. */
static void
summary_processes(json_t *s, const struct gmt_process *procs, size_t n)
{
	json_t *peak = json_null(), *first = json_null();
	uint64_t best = 0;
	double first_at = 0;
	bool unix_all = true;

	for (size_t i = 0; i < n; i++)
		if (procs[i].model->nfailed_counted && !procs[i].model->trace->start_unix_ns)
			unix_all = false;
	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;
		const struct gmt_device_stats *d = process_peak(m);

		if (d && d->peak.bytes > best) {
			best = d->peak.bytes;
			json_decref(peak);
			peak = jint(i);
		}
		if (m->nfailed_counted) {
			/* the first failure that counts: a probe at start on every rank says
			 * nothing */
			const struct gmt_trace *t = m->trace;
			uint64_t ts = m->failed[gmt_model_first_counted_failure(m)]->ts;
			double at = unix_all ? (double)t->start_unix_ns + (double)(ts - t->start_ts)
					     : gmt_trace_time_s(t, ts);

			if (json_is_null(first) || at < first_at) {
				json_decref(first);
				first = jint(i);
				first_at = at;
			}
		}
	}
	json_object_set_new(s, "peak_process", peak);
	json_object_set_new(s, "first_failure_process", first);
}

/* A gate fails on them (check's complete-traces): an entry that could not be written marks the
 * report out of memory rather than leave it out. */
json_t *
gmt_report_json_lost(const struct gmt_lost *lost)
{
	json_t *a = json_array();

	if (!a)
		return gmt_nomem();
	for (size_t i = 0; i < gmt_lost_count(lost); i++) {
		const char *f, *w;
		gmt_lost_at(lost, i, &f, &w);
		json_t *o = json_object();
		char *file = gmt_utf8_lossy(f), *why = gmt_utf8_lossy(w);

		bool ok = o && file && why &&
			  json_object_set_new(o, GMT_RK_FILE, json_string(file)) == 0 &&
			  json_object_set_new(o, GMT_RK_REASON, json_string(why)) == 0;

		if (ok)
			ok = json_array_append_new(a, o) == 0; /* (o is taken either way) */
		else
			json_decref(o);
		if (!ok)
			gmt_nomem();
		free(file);
		free(why);
	}
	return a;
}

/* What of the document report_doc() builds. */
enum {
	DOC_CALL_STACKS = 1 << 0, /* call_stacks[]; else left empty (the writer streams it) */
	/* leaks[] (an entry per stack, with its raw frames and site) and failed[]'s frames */
	DOC_RAW_FRAMES = 1 << 1,
	DOC_WHOLE = DOC_CALL_STACKS | DOC_RAW_FRAMES,
};

/* The document, with what @p what asks for (DOC_*). */
static json_t *
report_doc(const struct gmt_process *procs,
	   size_t n,
	   const struct gmt_lost *lost,
	   unsigned what,
	   const struct gmt_cat_rules *categories)
{
	bool frames = what & DOC_RAW_FRAMES;

	struct gmt_totals tot;
	json_t *root = json_object(), *s = json_object();
	json_t *jprocs = json_array(), *peaks = json_array(), *failed = json_array();
	json_t *ledger = json_array();

	gmt_report_totals(procs, n, &tot);
	json_object_set_new(root, GMT_RK_REPORT_VERSION, json_integer(GMT_REPORT_JSON_VERSION));

	json_object_set_new(s, GMT_RK_PROCESSES, jint(tot.processes));
	json_object_set_new(s, GMT_RK_INCOMPLETE_PROCESSES, jint(tot.died));
	json_object_set_new(s, "events", jint(tot.events));
	json_object_set_new(s, GMT_RK_DROPPED, jint(tot.dropped));
	json_object_set_new(s, GMT_RK_DROPPED_READINGS, jint(tot.dropped_readings));
	json_object_set_new(s, "bad_lines", jint(tot.bad_lines));
	json_object_set_new(s, GMT_RK_PEAK_HELD_BYTES, jint(tot.peak_bytes));
	json_object_set_new(s, GMT_RK_LEAKED_BYTES, jint(tot.leaked_bytes));
	json_object_set_new(s, GMT_RK_LEAKED_ALLOCATIONS, jint(tot.leaked_allocations));
	json_object_set_new(s, GMT_RK_LEAK_SITES, jint(tot.leak_sites));
	json_object_set_new(s, GMT_RK_CACHED_AT_EXIT_BYTES, jint(tot.cached[GMT_CACHE_NONE].bytes));
	json_object_set_new(s, GMT_RK_CACHED_AT_EXIT_ALLOCATIONS,
			    jint(tot.cached[GMT_CACHE_NONE].allocations));
	json_object_set_new(s, GMT_RK_CACHED_AT_EXIT, cached_at_exit_json(&tot));
	json_object_set_new(s, GMT_RK_LIBRARY_AT_EXIT_BYTES, jint(tot.library[GMT_LIB_NONE].bytes));
	json_object_set_new(s, GMT_RK_LIBRARY_AT_EXIT_ALLOCATIONS,
			    jint(tot.library[GMT_LIB_NONE].allocations));
	json_object_set_new(s, GMT_RK_LIBRARY_AT_EXIT, library_at_exit_json(&tot));
	json_object_set_new(s, GMT_RK_LIVE_AT_END_BYTES, jint(tot.live_at_end_bytes));
	json_object_set_new(s, "live_at_end_allocations", jint(tot.live_at_end_allocations));
	json_object_set_new(s, GMT_RK_FAILED_ALLOCATIONS, jint(tot.failed));
	bool tensors = false;
	for (size_t i = 0; i < n; i++)
		tensors |= procs[i].model->tensors != NULL;
	if (tensors)
		json_object_set_new(s, GMT_RK_TENSOR_OOM_ERRORS, jint(tot.tensor_ooms));
	json_object_set_new(s, GMT_RK_PROBE_FAILURES, jint(tot.probes));
	json_object_set_new(s, GMT_RK_RECOVERED_FAILURES, jint(tot.recovered));
	json_object_set_new(s, "unmatched_frees", jint(tot.unmatched_frees));
	json_object_set_new(s, "failed_frees", jint(tot.failed_frees));
	json_object_set_new(s, "reused_addresses", jint(tot.reused_addresses));
	json_object_set_new(s, "unmatched_retains", jint(tot.unmatched_retains));
	summary_processes(s, procs, n);
	json_object_set_new(root, GMT_RK_SUMMARY, s);

	for (size_t i = 0; i < n; i++) {
		json_array_append_new(jprocs, process_json(&procs[i], categories));
		for (size_t d = 0; d < procs[i].model->ndevices; d++)
			if (gmt_device_active(&procs[i].model->devices[d]))
				json_array_append_new(
				    peaks,
				    peak_json(i, procs[i].model, &procs[i].model->devices[d]));
		for (size_t k = 0; k < procs[i].model->nfailed; k++)
			json_array_append_new(
			    failed, failed_json(i, &procs[i], procs[i].model->failed[k], frames));
		ledger_append(ledger, i, procs[i].model);
	}
	json_object_set_new(root, GMT_RK_PROCESSES, jprocs);
	json_object_set_new(root, GMT_RK_LOST_TRACES, gmt_report_json_lost(lost));
	json_object_set_new(root, GMT_RK_PEAKS, peaks);
	json_object_set_new(root, GMT_RK_LEAKS, frames ? leaks_json(procs, n) : json_array());
	json_object_set_new(root, GMT_RK_FAILED, failed);
	json_object_set_new(root, "ledger", ledger);
	json_object_set_new(root, "kinds", kinds_json());
	json_object_set_new(root, GMT_RK_LEAK_SITES, site_list_json(procs, n, SITES_LEAK));
	json_object_set_new(root, GMT_RK_PEAK_SITES, site_list_json(procs, n, SITES_PEAK));
	json_object_set_new(root, GMT_RK_FAILED_SITES, site_list_json(procs, n, SITES_FAILED));
	json_object_set_new(root, GMT_RK_CALL_STACKS,
			    what & DOC_CALL_STACKS ? call_stacks_json(procs, n) : json_array());
	json_object_set_new(root, GMT_RK_RANGE, range_json(procs, n));
	json_object_set_new(root, GMT_RK_TIMELINE, timeline_json(procs, n));
	json_t *oom = json_array();
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < procs[i].model->nfailed; k++)
			json_array_append_new(oom, oom_json(i, &procs[i], &procs[i].model->oom[k]));
	json_object_set_new(root, GMT_RK_OOM, oom);
	json_object_set_new(root, GMT_RK_GROWTH, growth_json(procs, n));
	json_object_set_new(root, "churn", churn_json(procs, n));
	json_object_set_new(root, GMT_RK_GROWTH_SITES, growth_sites_json(procs, n));
	json_object_set_new(root, "churn_sites", churn_sites_json(procs, n));
	json_object_set_new(root, "fragmentation", fragmentation_json(procs, n));
	return root;
}

static json_t *
report_json_doc(const struct gmt_process *procs,
		size_t n,
		const struct gmt_lost *lost,
		unsigned what)
{
	json_t *doc;

	gmt_report_start();
	doc = report_doc(procs, n, lost, what, NULL);
	if (gmt_report_failed(procs, n)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *
gmt_report_json_doc(const struct gmt_process *procs, size_t n, const struct gmt_lost *lost)
{
	return report_json_doc(procs, n, lost, DOC_WHOLE);
}

json_t *
gmt_report_json_doc_frameless(const struct gmt_process *procs,
			      size_t n,
			      const struct gmt_lost *lost)
{
	return report_json_doc(procs, n, lost, 0);
}

json_t *
gmt_report_json_call_stack(const struct gmt_process *procs, size_t n, size_t proc, uint32_t stack)
{
	const struct gmt_cstack *cs;

	if (proc >= n || !stack || !(cs = gmt_process_stack(&procs[proc], stack)))
		return NULL;
	return call_stack_json(cs, NULL);
}

// --- writing ------------------------------------------------------------------------------------
//
// call_stacks[] is most of a large report (every frame of every stack named, as an object), so
// the writer builds it one entry at a time and writes the rest of the document around it, byte
// for byte as json_dump_callback() writes the whole document: a value dumped on its own at depth
// 0 is the nested value once each of its line breaks is followed by the indent of its depth
// (JSON strings hold no raw line break).

#define STREAM_BUF (64u * 1024)

struct stream {
	json_dump_callback_t cb;
	void *data;
	size_t flags;
	char pad[2][2 * JSON_MAX_INDENT + 2]; /* "\n" and the indent of depth 1 and 2 */
	const char *sep;		      /* between a key and its value */
	const char *comma;		      /* between two members (no indent) */
	const char *reindent;		      /* put_value(): what follows each line break */
	size_t nreindent;
	int rc;
	size_t n; /* jansson hands over a few bytes at a time: they go on in pieces of buf */
	char buf[STREAM_BUF];
};

static void
flush(struct stream *st)
{
	if (st->n && !st->rc && st->cb(st->buf, st->n, st->data) != 0)
		st->rc = -1;
	st->n = 0;
}

static void
emit(struct stream *st, const char *p, size_t size)
{
	if (st->n + size > sizeof(st->buf))
		flush(st);
	if (size > sizeof(st->buf)) {
		if (!st->rc && st->cb(p, size, st->data) != 0)
			st->rc = -1;
		return;
	}
	memcpy(st->buf + st->n, p, size);
	st->n += size;
}

static void
put(struct stream *st, const char *str)
{
	emit(st, str, strlen(str));
}

static int
reindent_piece(const char *buf, size_t size, void *data)
{
	struct stream *st = data;
	const char *end = buf + size, *nl;

	while ((nl = memchr(buf, '\n', (size_t)(end - buf)))) {
		emit(st, buf, (size_t)(nl + 1 - buf));
		emit(st, st->reindent, st->nreindent);
		buf = nl + 1;
	}
	emit(st, buf, (size_t)(end - buf));
	return st->rc;
}

/* @p v written at depth @p depth (1 or 2). */
static void
put_value(struct stream *st, const json_t *v, int depth)
{
	st->reindent = st->pad[depth - 1] + 1;
	st->nreindent = strlen(st->reindent);
	if (!st->rc && json_dump_callback(v, reindent_piece, st, st->flags | JSON_ENCODE_ANY) != 0)
		st->rc = -1;
}

/* Before member @p i of a container whose members are at depth @p depth. */
static void
put_member_start(struct stream *st, size_t i, int depth)
{
	bool indent = (st->flags & JSON_MAX_INDENT) != 0;

	if (i)
		put(st, indent ? "," : st->comma);
	if (indent)
		put(st, st->pad[depth - 1]);
}

static void
put_call_stacks(struct stream *st, const struct gmt_process *procs, size_t n)
{
	size_t nv;
	struct stack_ref *v = call_stack_refs(procs, n, &nv);

	put(st, "[");
	for (size_t i = 0; i < nv && !st->rc; i++) {
		json_t *o = call_stack_entry(procs, &v[i], NULL);

		put_member_start(st, i, 2);
		put_value(st, o, 2);
		json_decref(o);
	}
	if (nv && (st->flags & JSON_MAX_INDENT))
		put(st, st->pad[0]);
	put(st, "]");
	free(v);
}

int
gmt_report_json_stream(const struct gmt_process *procs,
		       size_t n,
		       const struct gmt_lost *lost,
		       const struct gmt_cat_rules *categories,
		       size_t flags,
		       json_dump_callback_t cb,
		       void *data)
{
	struct stream *st = malloc(sizeof(*st));
	size_t width = flags & JSON_MAX_INDENT, i = 0;
	json_t *root, *v;
	const char *key;
	int rc;

	gmt_report_start();
	if (!st)
		return -ENOMEM;
	root = report_doc(procs, n, lost, DOC_RAW_FRAMES, categories);
	*st = (struct stream){.cb = cb, .data = data, .flags = flags};
	for (int d = 0; d < 2; d++) {
		st->pad[d][0] = '\n';
		memset(st->pad[d] + 1, ' ', width * (size_t)(d + 1));
		st->pad[d][1 + width * (size_t)(d + 1)] = '\0';
	}
	st->sep = flags & JSON_COMPACT ? ":" : ": ";
	st->comma = flags & JSON_COMPACT ? "," : ", ";
	put(st, "{");
	json_object_foreach(root, key, v)
	{
		put_member_start(st, i++, 1);
		put(st, "\"");
		put(st, key); /* the document's own keys: nothing to escape */
		put(st, "\"");
		put(st, st->sep);
		if (strcmp(key, "call_stacks") == 0)
			put_call_stacks(st, procs, n);
		else
			put_value(st, v, 1);
	}
	if (i && width)
		put(st, "\n");
	put(st, "}");
	flush(st);
	json_decref(root);
	rc = st->rc;
	free(st);
	if (gmt_report_failed(procs, n))
		return -ENOMEM;
	return rc ? -EIO : 0;
}

static int
file_piece(const char *buf, size_t size, void *data)
{
	return fwrite(buf, 1, size, data) == size ? 0 : -1;
}

int
gmt_report_json(FILE *out,
		const struct gmt_process *procs,
		size_t n,
		const struct gmt_lost *lost,
		const struct gmt_cat_rules *categories)
{
	int rc;

	/* Key order is insertion order (jansson >= 2.8), so the layout above is the output's. */
	rc = gmt_report_json_stream(procs, n, lost, categories,
				    JSON_INDENT(2) | JSON_REAL_PRECISION(15), file_piece, out);
	if (rc == 0 && fputc('\n', out) == EOF)
		rc = -EIO;
	return rc;
}
