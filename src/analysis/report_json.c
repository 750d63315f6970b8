/*
 * @brief The JSON report (`gpumemtrace report --format json`), schema in docs/report-json.md.
 *
 * Machines read this, so: every count and size is an exact JSON integer, every key is present in
 * every document (null when a value is unknown), lists have a documented order, and keys are
 * written in a fixed order so two reports of the same traces are byte-identical.
 */
#include "analysis/report.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

static json_t *
jint(uint64_t v)
{
	/* Sizes never come near 2^63; clamp rather than wrap if a broken trace says otherwise. */
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *
jtime(const struct gmt_trace *t, uint64_t ts)
{
	/* Microseconds are plenty, and rounding keeps the printed value short and stable. */
	return json_real(round(gmt_trace_time_s(t, ts) * 1e6) / 1e6);
}

static json_t *
jstr_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
jll_or_null(long long v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *
jhex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

static json_t *
frames_json(const struct gmt_trace *t, uint32_t stack)
{
	const struct gmt_trace_stack *st = gmt_trace_stack(t, stack);
	json_t *a = json_array();

	for (uint32_t i = 0; st && i < st->nframes; i++)
		json_array_append_new(a, jhex(st->frames[i]));
	return a;
}

static json_t *
process_json(const struct gmt_model *m)
{
	const struct gmt_trace *t = m->trace;
	json_t *p = json_object(), *argv = json_array(), *markers = json_array(), *rank;
	json_t *capture = json_array();

	json_object_set_new(p, "file", json_string(t->path));
	json_object_set_new(p, "pid", jll_or_null(t->pid));
	json_object_set_new(p, "ppid", jll_or_null(t->ppid));
	json_object_set_new(p, "host", jstr_or_null(t->host));
	for (size_t i = 0; i < t->argc; i++)
		json_array_append_new(argv, json_string(t->argv[i]));
	json_object_set_new(p, "argv", argv);
	if (t->has_rank) {
		rank = json_object();
		json_object_set_new(rank, "rank", jll_or_null(t->rank));
		json_object_set_new(rank, "local_rank", jll_or_null(t->local_rank));
		json_object_set_new(rank, "world_size", jll_or_null(t->world_size));
	} else {
		rank = json_null();
	}
	json_object_set_new(p, "rank", rank);
	json_object_set_new(p, "forked_from", jll_or_null(t->forked_from));
	json_object_set_new(p, "tracer", jstr_or_null(t->tracer));
	json_object_set_new(p, "coverage", jstr_or_null(t->coverage));
	json_object_set_new(p, "coverage_reason", jstr_or_null(t->coverage_reason));
	for (size_t i = 0; i < t->ncapture; i++)
		json_array_append_new(capture, json_string(t->capture[i]));
	json_object_set_new(p, "capture", capture);
	json_object_set_new(p, "complete", json_boolean(t->complete));
	json_object_set_new(p, "events", jint(gmt_model_events(m)));
	json_object_set_new(p, "dropped", jint(t->dropped));
	json_object_set_new(p, "end_time_s", t->have_ts ? jtime(t, t->last_ts) : json_null());
	json_object_set_new(p, "allocations", jint(m->allocations));
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

		json_object_set_new(mk, "seq", jint(t->markers[i].seq));
		json_object_set_new(mk, "time_s", jtime(t, t->markers[i].ts));
		json_object_set_new(mk, "label", json_string(t->markers[i].label));
		json_array_append_new(markers, mk);
	}
	json_object_set_new(p, "markers", markers);
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
	json_object_set_new(o, "peak_time_s", peaked ? jtime(t, ks->peak.ts) : json_null());
	json_object_set_new(o, "peak_seq", peaked ? jint(ks->peak.seq) : json_null());
	json_object_set_new(o, "live_bytes", jint(ks->live));
	json_object_set_new(o, "live_allocations", jint(ks->live_allocs));
	json_object_set_new(o, "allocations", jint(ks->allocations));
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
	json_object_set_new(o, "time_s", jtime(t, ks->peak.ts));
	json_object_set_new(o, "seq", jint(ks->peak.seq));
	json_object_set_new(o, "reserve_bytes", jint(ks->peak.bytes));
	json_object_set_new(o, "pool_live_bytes", jint(d->pool_live_at_reserve_peak));
	json_object_set_new(
	    o, "slack_bytes",
	    json_integer((json_int_t)(ks->peak.bytes - d->pool_live_at_reserve_peak)));
	return o;
}

static json_t *
peak_json(size_t proc, const struct gmt_model *m, const struct gmt_device_stats *d)
{
	const struct gmt_trace *t = m->trace;
	json_t *p = json_object(), *kinds = json_object();
	bool peaked = d->peak.bytes != 0;

	json_object_set_new(p, "process", jint(proc));
	json_object_set_new(p, "pid", jll_or_null(t->pid));
	json_object_set_new(p, "device", json_integer(d->device));
	json_object_set_new(p, "bytes", jint(d->peak.bytes));
	json_object_set_new(p, "time_s", peaked ? jtime(t, d->peak.ts) : json_null());
	json_object_set_new(p, "seq", peaked ? jint(d->peak.seq) : json_null());
	json_object_set_new(p, "held_terms", held_terms_json(d->peak_by_kind));
	json_object_set_new(p, "by_kind", kinds_by_value(d->peak_by_kind));
	json_object_set_new(p, "held_at_end_bytes", jint(d->held));
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		json_object_set_new(kinds, gmt_kind_str((enum gmt_tkind)k),
				    kind_stats_json(t, &d->kinds[k]));
	json_object_set_new(p, "kinds", kinds);
	json_object_set_new(p, "pool_slack", pool_slack_json(t, d));
	json_object_set_new(p, "allocations", jint(d->allocations));
	return p;
}

static json_t *
jdriver(const struct gmt_trace *t, uint16_t driver)
{
	return jstr_or_null(gmt_trace_driver(t, driver));
}

static json_t *
leak_json(size_t proc, const struct gmt_model *m, const struct gmt_leak *l)
{
	const struct gmt_trace *t = m->trace;
	json_t *o = json_object();

	json_object_set_new(o, "process", jint(proc));
	json_object_set_new(o, "pid", jll_or_null(t->pid));
	json_object_set_new(o, "at_exit", json_boolean(t->complete));
	json_object_set_new(o, "bytes", jint(l->bytes));
	json_object_set_new(o, "allocations", jint(l->allocations));
	json_object_set_new(o, "api", json_string(gmt_trace_string(t, l->api)));
	json_object_set_new(o, "driver", jdriver(t, l->driver));
	json_object_set_new(o, "kind", json_string(gmt_kind_str((enum gmt_tkind)l->kind)));
	json_object_set_new(o, "counted", json_boolean(gmt_kind_counted((enum gmt_tkind)l->kind)));
	json_object_set_new(o, "stack", jint(l->stack));
	json_object_set_new(o, "frames", frames_json(t, l->stack));
	return o;
}

static json_t *
failed_json(size_t proc, const struct gmt_model *m, const struct gmt_trace_event *ev)
{
	const struct gmt_trace *t = m->trace;
	json_t *o = json_object();
	bool mi = ev->flags & GMT_TEV_MEMINFO;

	json_object_set_new(o, "process", jint(proc));
	json_object_set_new(o, "pid", jll_or_null(t->pid));
	json_object_set_new(o, "seq", jint(ev->seq));
	json_object_set_new(o, "time_s", jtime(t, ev->ts));
	json_object_set_new(o, "api", json_string(gmt_trace_string(t, ev->api)));
	json_object_set_new(o, "driver", jdriver(t, ev->driver));
	json_object_set_new(o, "kind", json_string(gmt_kind_str((enum gmt_tkind)ev->kind)));
	json_object_set_new(o, "device", json_integer(ev->device));
	json_object_set_new(o, "size", jint(ev->size));
	json_object_set_new(o, "result", json_integer(ev->result));
	json_object_set_new(o, "free_bytes", mi ? jint(ev->free_bytes) : json_null());
	json_object_set_new(o, "total_bytes", mi ? jint(ev->total_bytes) : json_null());
	json_object_set_new(o, "stack", jint(ev->stack));
	json_object_set_new(o, "frames", frames_json(t, ev->stack));
	return o;
}

static json_t *
ledger_json(size_t proc, const struct gmt_model *m, const struct gmt_ledger_row *row)
{
	const struct gmt_trace *t = m->trace;
	const struct gmt_trace_nvml *nv = row->p->nvml;
	json_t *o = json_object();

	json_object_set_new(o, "process", jint(proc));
	json_object_set_new(o, "pid", jll_or_null(t->pid));
	json_object_set_new(o, "device", json_integer(nv->device));
	json_object_set_new(o, "reading", json_string(row->last ? "last" : "near_peak"));
	json_object_set_new(o, "nearest_to_peak", json_boolean(row->nearest_to_peak));
	json_object_set_new(o, "time_s", jtime(t, nv->ts));
	json_object_set_new(o, "seq", nv->has_seq ? jint(nv->seq) : json_null());
	json_object_set_new(o, "nvml_index",
			    nv->index >= 0 ? json_integer(nv->index) : json_null());
	json_object_set_new(o, "total_bytes", jint(nv->total));
	json_object_set_new(o, "used_bytes", jint(nv->used));
	json_object_set_new(o, "process_used_bytes",
			    nv->has_process_used ? jint(nv->process_used) : json_null());
	json_object_set_new(o, "basis", json_string(row->per_process ? "process_used" : "used"));
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
	struct gmt_ledger_row *rows = gmt_ledger_rows(m, &n);

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

		json_object_set_new(o, "kind", json_string(gmt_kind_str((enum gmt_tkind)k)));
		json_object_set_new(o, "meaning", json_string(gmt_kind_meaning((enum gmt_tkind)k)));
		json_object_set_new(o, "held", json_boolean(gmt_kind_in_held((enum gmt_tkind)k)));
		json_object_set_new(o, "counted",
				    json_boolean(gmt_kind_counted((enum gmt_tkind)k)));
		json_array_append_new(a, o);
	}
	return a;
}

/* Leaks of all processes, largest first; ties keep process order, then each model's order. */
static json_t *
leaks_json(struct gmt_model *const *models, size_t n)
{
	json_t *a = json_array();
	size_t *next = calloc(n ? n : 1, sizeof(*next));

	if (!next)
		return a;
	for (;;) {
		size_t best = n;

		for (size_t i = 0; i < n; i++) {
			if (next[i] >= models[i]->nleaks)
				continue;
			if (best == n ||
			    models[i]->leaks[next[i]].bytes > models[best]->leaks[next[best]].bytes)
				best = i;
		}
		if (best == n)
			break;
		json_array_append_new(
		    a, leak_json(best, models[best], &models[best]->leaks[next[best]]));
		next[best]++;
	}
	free(next);
	return a;
}

int
gmt_report_json(FILE *out, struct gmt_model *const *models, size_t n)
{
	struct gmt_totals tot;
	json_t *root = json_object(), *s = json_object();
	json_t *procs = json_array(), *peaks = json_array(), *failed = json_array();
	json_t *ledger = json_array();
	int rc;

	gmt_model_totals(models, n, &tot);
	json_object_set_new(root, "report_version", json_integer(GMT_REPORT_JSON_VERSION));

	json_object_set_new(s, "processes", jint(tot.processes));
	json_object_set_new(s, "incomplete_processes", jint(tot.died));
	json_object_set_new(s, "events", jint(tot.events));
	json_object_set_new(s, "dropped", jint(tot.dropped));
	json_object_set_new(s, "bad_lines", jint(tot.bad_lines));
	json_object_set_new(s, "peak_held_bytes", jint(tot.peak_bytes));
	json_object_set_new(s, "leaked_bytes", jint(tot.leaked_bytes));
	json_object_set_new(s, "leaked_allocations", jint(tot.leaked_allocations));
	json_object_set_new(s, "leak_sites", jint(tot.leak_sites));
	json_object_set_new(s, "live_at_end_bytes", jint(tot.live_at_end_bytes));
	json_object_set_new(s, "live_at_end_allocations", jint(tot.live_at_end_allocations));
	json_object_set_new(s, "failed_allocations", jint(tot.failed));
	json_object_set_new(s, "unmatched_frees", jint(tot.unmatched_frees));
	json_object_set_new(s, "failed_frees", jint(tot.failed_frees));
	json_object_set_new(s, "reused_addresses", jint(tot.reused_addresses));
	json_object_set_new(s, "unmatched_retains", jint(tot.unmatched_retains));
	json_object_set_new(root, "summary", s);

	for (size_t i = 0; i < n; i++) {
		json_array_append_new(procs, process_json(models[i]));
		for (size_t d = 0; d < models[i]->ndevices; d++)
			if (gmt_device_active(&models[i]->devices[d]))
				json_array_append_new(
				    peaks, peak_json(i, models[i], &models[i]->devices[d]));
		for (size_t k = 0; k < models[i]->nfailed; k++)
			json_array_append_new(failed,
					      failed_json(i, models[i], models[i]->failed[k]));
		ledger_append(ledger, i, models[i]);
	}
	json_object_set_new(root, "processes", procs);
	json_object_set_new(root, "peaks", peaks);
	json_object_set_new(root, "leaks", leaks_json(models, n));
	json_object_set_new(root, "failed", failed);
	json_object_set_new(root, "ledger", ledger);
	json_object_set_new(root, "kinds", kinds_json());

	/* Key order is insertion order (jansson >= 2.8), so the layout above is the output's. */
	rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	if (rc == 0 && fputc('\n', out) == EOF)
		rc = -1;
	json_decref(root);
	return rc ? -1 : 0;
}
