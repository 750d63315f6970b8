/*
 * @brief The summary of one trace: its JSON report document, cut to a bounded size (summary.h).
 */
#define _GNU_SOURCE
#include "analysis/report/summary.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/report/explain.h"
#include "analysis/report/jvalues.h"
#include "analysis/report/keys.h"
#include "analysis/report/nomem.h"
#include "analysis/report/report.h"
#include "util/sat.h"

/* The stacks the kept rows name, in the order first named, at most GMT_SUMMARY_STACKS. */
struct stack_set {
	uint32_t ids[GMT_SUMMARY_STACKS];
	size_t first[GMT_SUMMARY_STACKS]; /* the frame kept first: the call site's, else 0 */
	size_t n;
};

/* Stack @p id wanted, from its frame @p site on (the row's `site.index`; not an integer: 0). */
static void
want_stack(struct stack_set *s, const json_t *id, const json_t *site)
{
	json_int_t v, f = json_integer_value(site);

	if (!json_is_integer(id) || (v = json_integer_value(id)) <= 0 || v > UINT32_MAX)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == (uint32_t)v)
			return;
	if (s->n < GMT_SUMMARY_STACKS) {
		s->first[s->n] = f > 0 ? (size_t)f : 0;
		s->ids[s->n++] = (uint32_t)v;
	}
}

/* The first @p max entries of the array @p a (shared with it); [] when @p a is not an array. */
static json_t *
head(const json_t *a, size_t max)
{
	json_t *o = json_array();

	for (size_t i = 0; o && i < json_array_size(a) && i < max; i++)
		json_array_append(o, json_array_get(a, i));
	return o;
}

/* Whether a key is present whose value is an array (a list the report has). */
static json_t *
list(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_array(v) ? v : NULL;
}

/*
 * A site row as the summary keeps it: its callers and stacks cut to their first (largest) few,
 * the stack it names (its largest, or its own `stack`) wanted in call_stacks[].
 */
static json_t *
cut_row(const json_t *row, struct stack_set *ss)
{
	json_t *r = json_copy((json_t *)row), *v;

	if (!r)
		return NULL;
	if ((v = list(r, GMT_RK_CALLERS)))
		json_object_set_new(r, GMT_RK_CALLERS, head(v, GMT_SUMMARY_ROW_STACKS));
	if ((v = list(r, GMT_RK_STACKS))) { /* the site is the largest stack's frame */
		want_stack(ss, json_object_get(json_array_get(v, 0), GMT_RK_STACK),
			   json_object_get(json_object_get(r, GMT_RK_SITE), "index"));
		json_object_set_new(r, GMT_RK_STACKS, head(v, GMT_SUMMARY_ROW_STACKS));
	}
	want_stack(ss, json_object_get(r, GMT_RK_STACK), NULL);
	return r;
}

/*
 * @p key of @p dst: the first GMT_SUMMARY_TOP rows of @p src[key] (cut_row()), only those of
 * @p device when @p by_device; @p all_key: how many rows the report had (of that device).
 */
static void
put_rows(json_t *dst,
	 const json_t *src,
	 const char *key,
	 const char *all_key,
	 bool by_device,
	 json_int_t device,
	 struct stack_set *ss)
{
	json_t *rows = json_array(), *from = list(src, key), *row;
	size_t i, all = 0;

	json_array_foreach(from, i, row)
	{
		if (by_device && json_integer_value(json_object_get(row, GMT_RK_DEVICE)) != device)
			continue;
		if (all++ < GMT_SUMMARY_TOP)
			json_array_append_new(rows, cut_row(row, ss));
	}
	json_object_set_new(dst, key, rows);
	json_object_set_new(dst, all_key, jint(all));
}

/* Wall-clock seconds of @p ts as the report computes them (processes[].peak_unix_s). */
static json_t *
unix_s(const struct gmt_trace *t, uint64_t ts)
{
	if (!t->start_unix_ns)
		return json_null();
	return json_real(round(((double)t->start_unix_ns + (double)(ts - t->start_ts)) / 1e3) /
			 1e6);
}

/* Wall clock of @p time_s (seconds from the trace's start, a JSON number), or null. */
static json_t *
unix_of_time(const struct gmt_trace *t, const json_t *time_s)
{
	if (!t->start_unix_ns || !json_is_number(time_s))
		return json_null();
	return json_real(round((double)t->start_unix_ns / 1e3 + json_number_value(time_s) * 1e6) /
			 1e6);
}

static const struct gmt_device_stats *
device_stats(const struct gmt_model *m, json_int_t device)
{
	for (size_t d = 0; d < m->ndevices; d++)
		if (m->devices[d].device == device)
			return &m->devices[d];
	return NULL;
}

/* Bytes live at @p d's peak in stacks of NCCL (gmt_process_library(), the leak rule's). */
static uint64_t
nccl_at_peak(const struct gmt_process *p, const struct gmt_device_stats *d)
{
	uint64_t bytes = 0;

	for (size_t i = 0; d && d->peak.bytes && i < d->npeak_sites; i++)
		if (gmt_process_library(p, d->peak_sites[i].stack, d->peak_sites[i].kind) ==
		    GMT_LIB_NCCL)
			bytes = gmt_sat_add(bytes, d->peak_sites[i].bytes);
	return bytes;
}

static void
copy_key(json_t *dst, const json_t *src, const char *key)
{
	json_t *v = json_object_get(src, key);

	json_object_set(dst, key, v ? v : json_null());
}

/* peaks[]: per device the peak, its wall clock, NCCL's part and the top sites then. */
static json_t *
summary_peaks(const struct gmt_process *proc,
	      const json_t *doc,
	      struct stack_set *ss,
	      uint64_t *nccl)
{
	const struct gmt_model *m = proc->model;
	static const char *const keys[] = {
	    GMT_RK_DEVICE,
	    GMT_RK_BYTES,
	    GMT_RK_TIME_S,
	    GMT_RK_SEQ,
	    GMT_RK_HELD_TERMS,
	    GMT_RK_BY_KIND,
	    GMT_RK_HELD_AT_END_BYTES,
	    GMT_RK_ALLOCATIONS,
	};
	json_t *out = json_array(), *p;
	size_t i;

	*nccl = 0;
	json_array_foreach(list(doc, GMT_RK_PEAKS), i, p)
	{
		json_int_t dev = json_integer_value(json_object_get(p, GMT_RK_DEVICE));
		const struct gmt_device_stats *d = device_stats(m, dev);
		json_t *o = json_object();
		uint64_t nb = nccl_at_peak(proc, d);

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			copy_key(o, p, keys[k]);
		json_object_set_new(o, GMT_SK_UNIX_S,
				    d && d->peak.bytes ? unix_s(m->trace, d->peak.ts)
						       : json_null());
		json_object_set_new(o, GMT_SK_NCCL_BYTES, jint(nb));
		*nccl += nb;
		put_rows(o, doc, GMT_RK_PEAK_SITES, GMT_SK_PEAK_SITES_ALL, true, dev, ss);
		json_array_append_new(out, o);
	}
	return out;
}

/* NCCL's memory on its own: at the peaks, left at exit (the report's rule), allocated. */
static json_t *
summary_nccl(const struct gmt_process *p, const json_t *doc, uint64_t at_peak)
{
	const struct gmt_model *m = p->model;
	const json_t *lib = json_object_get(
	    json_object_get(json_object_get(doc, GMT_RK_SUMMARY), GMT_RK_LIBRARY_AT_EXIT),
	    gmt_library_name(GMT_LIB_NCCL));
	uint64_t allocated = 0, allocations = 0;
	json_t *o = json_object();

	for (size_t i = 0; i < m->nsites; i++) {
		const struct gmt_site_stats *s = &m->sites[i];

		if (s->allocations && gmt_process_library(p, s->stack, s->kind) == GMT_LIB_NCCL) {
			allocated += s->allocated_bytes;
			allocations += s->allocations;
		}
	}
	json_object_set_new(o, GMT_SK_AT_PEAK_BYTES, jint(at_peak));
	json_object_set(o, GMT_SK_AT_EXIT_BYTES, json_object_get(lib, GMT_RK_BYTES));
	json_object_set(o, GMT_SK_AT_EXIT_ALLOCATIONS, json_object_get(lib, GMT_RK_ALLOCATIONS));
	json_object_set_new(o, GMT_SK_ALLOCATED_BYTES, jint(allocated));
	json_object_set_new(o, GMT_RK_ALLOCATIONS, jint(allocations));
	return o;
}

/*
 * At most GMT_SUMMARY_TIMELINE_POINTS of @p points ([time_s, bytes], in time order): equal time
 * buckets over the series, each keeping its highest point (the first of equals), and the last
 * point, so the peak and the end are always there.
 */
static json_t *
downsample(const json_t *points)
{
	size_t n = json_array_size(points), buckets = GMT_SUMMARY_TIMELINE_POINTS - 1;
	json_t *out, *best = NULL;
	double t0, t1, width;
	size_t cur = SIZE_MAX;

	if (n <= GMT_SUMMARY_TIMELINE_POINTS)
		return head(points, n);
	out = json_array();
	t0 = json_number_value(json_array_get(json_array_get(points, 0), 0));
	t1 = json_number_value(json_array_get(json_array_get(points, n - 1), 0));
	width = (t1 - t0) / (double)buckets;
	for (size_t i = 0; i + 1 < n; i++) {
		json_t *p = json_array_get(points, i);
		double t = json_number_value(json_array_get(p, 0));
		size_t b = width > 0 ? (size_t)((t - t0) / width) : 0;

		if (b >= buckets)
			b = buckets - 1;
		if (b != cur) {
			if (best)
				json_array_append(out, best);
			cur = b;
			best = p;
		} else if (json_integer_value(json_array_get(p, 1)) >
			   json_integer_value(json_array_get(best, 1))) {
			best = p;
		}
	}
	if (best)
		json_array_append(out, best);
	json_array_append(out, json_array_get(points, n - 1));
	return out;
}

static json_t *
summary_timeline(const json_t *doc)
{
	json_t *out = json_array(), *s;
	size_t i;

	json_array_foreach(list(doc, GMT_RK_TIMELINE), i, s)
	{
		const char *kind = json_string_value(json_object_get(s, GMT_RK_KIND));
		json_t *points = json_object_get(s, GMT_RK_POINTS), *o;

		if (!kind || strcmp(kind, GMT_RK_HELD) != 0)
			continue;
		o = json_object();
		copy_key(o, s, GMT_RK_DEVICE);
		copy_key(o, s, GMT_RK_EXACT);
		json_object_set_new(o, GMT_RK_POINTS, downsample(points));
		json_object_set_new(o, GMT_SK_POINTS_ALL, jint(json_array_size(points)));
		json_array_append_new(out, o);
	}
	return out;
}

/* oom[] (or tensors.ooms[]): the first few, without what is long (top sites, segments). */
static void
put_ooms(json_t *dst, const json_t *src, const char *key, const char *all_key)
{
	json_t *rows = json_array(), *from = list(src, key), *row;
	size_t i;

	json_array_foreach(from, i, row)
	{
		json_t *r;

		if (i >= GMT_SUMMARY_TOP)
			break;
		r = json_copy(row);
		if (json_is_array(json_object_get(r, GMT_RK_TOP_SITES)))
			json_object_set_new(
			    r, GMT_RK_TOP_SITES,
			    head(json_object_get(r, GMT_RK_TOP_SITES), GMT_SUMMARY_ROW_STACKS));
		json_object_del(r, GMT_RK_SEGMENTS);
		json_object_del(r, "segments_all");
		json_array_append_new(rows, r);
	}
	json_object_set_new(dst, key, rows);
	json_object_set_new(dst, all_key, jint(json_array_size(from)));
}

/* processes[].tensors without its long lists (at_markers, the block timeline, segments). */
static json_t *
summary_tensors(const json_t *t, struct stack_set *ss)
{
	static const char *const keys[] = {
	    GMT_RK_TORCH,      GMT_RK_BLOCK_EVENTS,   "inconsistent", GMT_RK_PEAK,
	    GMT_RK_CATEGORIES, GMT_RK_GROWTH_SAMPLES, "growth_basis"};
	json_t *o, *devices, *d;
	size_t i;

	if (!json_is_object(t))
		return json_null();
	o = json_object();
	devices = json_array();
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		copy_key(o, t, keys[k]);
	json_array_foreach(list(t, GMT_RK_DEVICES), i, d)
	{
		json_t *c = json_copy(d), *f = json_object_get(d, GMT_RK_FRAGMENTATION);

		if (json_is_object(f)) {
			json_t *fo = json_object();
			copy_key(fo, f, GMT_RK_MAX);
			copy_key(fo, f, GMT_RK_END);
			json_object_set_new(c, GMT_RK_FRAGMENTATION, fo);
		}
		json_array_append_new(devices, c);
	}
	json_object_set_new(o, GMT_RK_DEVICES, devices);
	put_rows(o, t, GMT_RK_PEAK_SITES, GMT_SK_PEAK_SITES_ALL, false, 0, ss);
	put_rows(o, t, GMT_RK_LIVE_AT_EXIT, GMT_SK_LIVE_AT_EXIT_ALL, false, 0, ss);
	put_rows(o, t, GMT_RK_GROWTH, GMT_SK_GROWTH_ALL, false, 0, ss);
	put_rows(o, t, GMT_RK_HELD_AT_END, GMT_SK_HELD_AT_END_ALL, false, 0, ss);
	put_ooms(o, t, GMT_RK_OOMS, GMT_SK_OOMS_ALL);
	return o;
}

/*
 * call_stacks[]: the wanted stacks from their call-site frame outward (the frames inside the
 * libraries between the call and the site left out), visible frames only, at most
 * GMT_SUMMARY_FRAMES, without their raw `address` (`module` + `offset` say where).
 */
static json_t *
summary_stacks(const struct gmt_process *procs, size_t n, size_t proc, const struct stack_set *ss)
{
	json_t *out = json_array();

	for (size_t i = 0; i < ss->n; i++) {
		json_t *frames = gmt_report_json_call_stack(procs, n, proc, ss->ids[i]);
		json_t *o = json_object(), *kept = json_array(), *f;
		size_t k, first = ss->first[i] < json_array_size(frames) ? ss->first[i] : 0;

		json_array_foreach(frames, k, f)
		{
			json_t *c;

			if (k < first || json_is_true(json_object_get(f, GMT_RK_HIDDEN)))
				continue;
			if (json_array_size(kept) == GMT_SUMMARY_FRAMES)
				break;
			if ((c = json_copy(f))) {
				json_object_del(c, GMT_RK_ADDRESS);
				json_object_del(c, GMT_RK_HIDDEN);
				json_array_append_new(kept, c);
			}
		}
		json_object_set_new(o, GMT_RK_STACK, jint(ss->ids[i]));
		json_object_set_new(o, "known", json_boolean(frames != NULL));
		json_object_set_new(o, GMT_SK_FIRST_FRAME, jint(first));
		json_object_set_new(o, GMT_SK_FRAMES_ALL, jint(json_array_size(frames)));
		json_object_set_new(o, GMT_RK_CALL_STACK, kept);
		json_decref(frames);
		json_array_append_new(out, o);
	}
	return out;
}

json_t *
gmt_summary_doc(const struct gmt_process *procs, size_t n, size_t proc, const struct gmt_lost *lost)
{
	const struct gmt_model *m;
	const struct gmt_trace *t;
	json_t *doc, *s, *p, *proc_copy, *devices, *pk;
	struct stack_set ss = {.n = 0};
	uint64_t nccl = 0;
	size_t i;

	if (proc >= n)
		return NULL;
	m = procs[proc].model;
	t = m->trace;
	if (!(doc = gmt_report_json_doc_frameless(procs + proc, 1, lost)))
		return NULL;
	p = json_array_get(json_object_get(doc, GMT_RK_PROCESSES), 0);
	s = json_object();

	/* what the file is */
	json_object_set_new(s, GMT_RK_KIND, json_string(GMT_SK_KIND_SUMMARY));
	json_object_set_new(s, GMT_SK_SUMMARY_VERSION, json_integer(GMT_SUMMARY_VERSION));
	copy_key(s, doc, GMT_RK_REPORT_VERSION);

	/* the header's facts */
	copy_key(s, p, GMT_RK_FILE);
	copy_key(s, p, GMT_RK_HOST);
	copy_key(s, p, GMT_RK_PID);
	copy_key(s, p, GMT_RK_RANK);
	devices = json_array();
	json_array_foreach(list(doc, GMT_RK_PEAKS), i, pk)
	    json_array_append(devices, json_object_get(pk, GMT_RK_DEVICE));
	json_object_set_new(s, GMT_RK_DEVICES, devices);
	json_object_set_new(s, GMT_SK_START_UNIX_S,
			    t->start_unix_ns ? unix_s(t, t->start_ts) : json_null());
	json_object_set_new(s, GMT_SK_END_UNIX_S,
			    unix_of_time(t, json_object_get(p, GMT_RK_END_TIME_S)));
	json_object_set_new(s, GMT_SK_CLOCK_UNCERTAINTY_S,
			    json_real(GMT_SUMMARY_CLOCK_UNCERTAINTY_S));
	copy_key(s, p, GMT_RK_END_TIME_S);
	copy_key(s, p, GMT_RK_COVERAGE);
	copy_key(s, p, GMT_RK_COMPLETE);
	copy_key(s, p, GMT_RK_DROPPED);
	copy_key(s, p, GMT_RK_DROPPED_READINGS);
	copy_key(s, p, GMT_RK_EVENTS);
	copy_key(s, p, GMT_RK_BAD_LINES);
	copy_key(s, doc, GMT_RK_LOST_TRACES);

	/* processes[0] whole but its unbounded lists; the report's summary whole (fixed keys) */
	proc_copy = json_copy(p);
	json_object_set_new(proc_copy, GMT_SK_MARKER_COUNT,
			    jint(json_array_size(json_object_get(p, GMT_RK_MARKERS))));
	json_object_del(proc_copy, GMT_RK_MARKERS);
	json_object_del(proc_copy, GMT_RK_TENSORS);
	json_object_set_new(s, GMT_SK_PROCESS, proc_copy);
	copy_key(s, doc, GMT_RK_SUMMARY);

	json_object_set_new(s, GMT_RK_PEAKS, summary_peaks(&procs[proc], doc, &ss, &nccl));
	json_object_set_new(s, GMT_SK_NCCL, summary_nccl(&procs[proc], doc, nccl));
	put_rows(s, doc, GMT_RK_LEAK_SITES, GMT_SK_LEAK_SITES_ALL, false, 0, &ss);
	put_rows(s, doc, GMT_RK_FAILED_SITES, GMT_SK_FAILED_SITES_ALL, false, 0, &ss);
	put_ooms(s, doc, GMT_RK_OOM, GMT_SK_OOM_ALL);
	put_rows(s, doc, GMT_RK_GROWTH_SITES, GMT_SK_GROWTH_SITES_ALL, false, 0, &ss);
	json_object_set_new(s, GMT_RK_TENSORS,
			    summary_tensors(json_object_get(p, GMT_RK_TENSORS), &ss));
	json_object_set_new(s, GMT_RK_TIMELINE, summary_timeline(doc));
	json_object_set_new(s, GMT_RK_CALL_STACKS, summary_stacks(procs, n, proc, &ss));

	json_decref(doc);
	return s;
}

json_t *
gmt_summary_lost_doc(const struct gmt_lost *lost)
{
	json_t *s, *a;

	if (!gmt_lost_count(lost))
		return NULL;
	gmt_report_start();
	s = json_object();
	a = gmt_report_json_lost(lost);
	if (!s || !a || gmt_report_nomem) {
		json_decref(s);
		json_decref(a);
		return NULL;
	}
	json_object_set_new(s, GMT_RK_KIND, json_string(GMT_SK_KIND_SUMMARY));
	json_object_set_new(s, GMT_SK_SUMMARY_VERSION, json_integer(GMT_SUMMARY_VERSION));
	json_object_set_new(s, GMT_RK_REPORT_VERSION, json_integer(GMT_REPORT_JSON_VERSION));
	copy_key(s, json_array_get(a, 0), GMT_RK_FILE);
	json_object_set_new(s, GMT_RK_LOST_TRACES, a);
	return s;
}

bool
gmt_summary_is_lost(const json_t *s)
{
	return !json_object_get(s, GMT_SK_PROCESS) &&
	       json_array_size(json_object_get(s, GMT_RK_LOST_TRACES)) > 0;
}
