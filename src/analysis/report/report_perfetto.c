/*
 * @brief `gpumemtrace report --format perfetto`: the JSON report as Chrome trace events, for
 * ui.perfetto.dev and chrome://tracing.
 *
 * The JSON Object format ({"traceEvents":[...]}), one event per line. Each traced process is a
 * process (its pid, named by its command line); live bytes per device and kind (`timeline[]`)
 * are counter tracks; markers, failed allocations and device peaks are process-scoped instant
 * events; markers with `"range":"push"|"pop"` become complete slices on their thread's track.
 * Times are microseconds since the earliest process's start when every process's wall-clock
 * start is known, else since each process's own start. The mapping is documented in
 * docs/report-formats.md.
 */
#include "analysis/report/keys.h"
#include "analysis/report/report_formats.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/nomem.h"
#include "analysis/report/units.h"
#include "util/alloc.h"

/* pid given to a process whose trace has none, or whose pid an earlier process already uses
 * (ranks on different hosts): Perfetto would merge the two. */
#define PF_SYNTHETIC_PID 1000000000

/* One process as the trace-event file shows it. */
struct pf_proc {
	json_int_t pid;
	double offset_s; /* added to the process's time_s: aligns processes by wall clock */
	double end_s;	 /* end_time_s, where an unclosed range ends */
};

/* A non-counter event with the key it is sorted by (time, then creation order). */
struct pf_event {
	long long ts;
	size_t order;
	json_t *ev;
};

struct pf_events {
	struct pf_event *v;
	size_t n, cap;
};

static json_t *
obj_get(const json_t *o, const char *key)
{
	return json_is_object(o) ? json_object_get(o, key) : NULL;
}

static int
get_int(const json_t *o, const char *key, json_int_t *v)
{
	json_t *x = obj_get(o, key);

	if (!json_is_integer(x))
		return 0;
	*v = json_integer_value(x);
	return 1;
}

static int
get_num(const json_t *o, const char *key, double *v)
{
	json_t *x = obj_get(o, key);

	if (!json_is_number(x))
		return 0;
	*v = json_number_value(x);
	return 1;
}

static const char *
get_str(const json_t *o, const char *key)
{
	return json_string_value(obj_get(o, key));
}

static long long
pf_ts(const struct pf_proc *p, double time_s)
{
	return llround((p->offset_s + time_s) * 1e6);
}

/* The process's start in wall-clock seconds, when the document says. */
static int
proc_start_unix(const json_t *proc, double *start)
{
	json_int_t ns;
	double peak_unix, peak_t;

	if (get_int(proc, "start_unix_ns", &ns)) {
		*start = (double)ns / 1e9;
		return 1;
	}
	if (get_num(proc, GMT_RK_PEAK_UNIX_S, &peak_unix) &&
	    get_num(proc, GMT_RK_PEAK_TIME_S, &peak_t)) {
		*start = peak_unix - peak_t;
		return 1;
	}
	return 0;
}

/* pids, and offsets that put every process on one clock when all wall-clock starts are known. */
static struct pf_proc *
procs_make(const json_t *procs, size_t n)
{
	struct pf_proc *p = gmt_realloc_array(NULL, n, sizeof(*p));
	double *start = gmt_realloc_array(NULL, n, sizeof(*start));
	double first = 0;
	int aligned = n > 0;

	if (!p || !start) {
		free(p);
		free(start);
		return gmt_nomem();
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *proc = json_array_get(procs, i);
		json_int_t pid;
		int taken = 0;

		if (!get_int(proc, GMT_RK_PID, &pid) || pid <= 0 || pid >= PF_SYNTHETIC_PID)
			pid = 0;
		for (size_t j = 0; j < i && pid; j++)
			taken |= p[j].pid == pid;
		p[i].pid = pid && !taken ? pid : PF_SYNTHETIC_PID + (json_int_t)i;
		p[i].offset_s = 0;
		if (!get_num(proc, GMT_RK_END_TIME_S, &p[i].end_s))
			p[i].end_s = 0;
		aligned &= proc_start_unix(proc, &start[i]);
		if (aligned && (i == 0 || start[i] < first))
			first = start[i];
	}
	for (size_t i = 0; aligned && i < n; i++)
		p[i].offset_s = start[i] - first;
	free(start);
	return p;
}

static void
events_add(struct pf_events *e, long long ts, json_t *ev)
{
	if (gmt_grow(&e->v, &e->cap, e->n + 1, sizeof(*e->v), 64) != 0) {
		json_decref(ev);
		gmt_nomem();
		return;
	}
	e->v[e->n] = (struct pf_event){ts, e->n, ev};
	e->n++;
}

static int
cmp_event(const void *pa, const void *pb)
{
	const struct pf_event *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* An event of process @p p on thread @p tid. */
static json_t *
thread_event_new(
    const struct pf_proc *p, json_int_t tid, const char *ph, const char *name, long long ts)
{
	json_t *ev = json_object();

	json_object_set_new(ev, "ph", json_string(ph));
	json_object_set_new(ev, "name", json_string(name ? name : ""));
	json_object_set_new(ev, "pid", json_integer(p->pid));
	json_object_set_new(ev, "tid", json_integer(tid));
	json_object_set_new(ev, "ts", json_integer(ts));
	return ev;
}

/* An event of process @p p on its main track (tid = pid). */
static json_t *
event_new(const struct pf_proc *p, const char *ph, const char *name, long long ts)
{
	return thread_event_new(p, p->pid, ph, name, ts);
}

static json_t *
instant_new(const struct pf_proc *p, const char *cat, const char *name, long long ts)
{
	json_t *ev = event_new(p, "i", name, ts);

	json_object_set_new(ev, "cat", json_string(cat));
	json_object_set_new(ev, "s", json_string("p"));
	return ev;
}

/* A frame object (docs/report-json.md, "Call stacks") as the folded format writes it. */
static void
frame_text(const json_t *f, char *buf, size_t max)
{
	const char *fn = get_str(f, GMT_RK_FUNCTION), *file = get_str(f, GMT_RK_FILE);
	const char *module = get_str(f, GMT_RK_MODULE), *base;
	json_int_t line = 0;

	get_int(f, GMT_RK_LINE, &line);
	if (!fn && !file) {
		base = module ? strrchr(module, '/') : NULL;
		base = base ? base + 1 : module;
		if (base)
			snprintf(buf, max, "%s+%s", base,
				 get_str(f, GMT_RK_OFFSET) ? get_str(f, GMT_RK_OFFSET) : "?");
		else
			snprintf(buf, max, "%s",
				 get_str(f, GMT_RK_ADDRESS) ? get_str(f, GMT_RK_ADDRESS) : "?");
	} else if (file && line) {
		snprintf(buf, max, "%s (%s:%" JSON_INTEGER_FORMAT ")", fn ? fn : "?", file, line);
	} else if (file) {
		snprintf(buf, max, "%s (%s)", fn ? fn : "?", file);
	} else if (module) {
		base = strrchr(module, '/');
		snprintf(buf, max, "%s [%s]", fn, base ? base + 1 : module);
	} else {
		snprintf(buf, max, "%s", fn);
	}
}

static void
meta_add(json_t *out, const struct pf_proc *p, const char *what, json_t *args)
{
	json_t *ev = event_new(p, "M", what, 0);

	json_object_set_new(ev, "args", args);
	json_array_append_new(out, ev);
}

/* process_name (the command line, and the rank), its sort index, the thread's name. */
static void
process_meta(json_t *out, const struct pf_proc *p, const json_t *proc, size_t index)
{
	const json_t *argv = obj_get(proc, GMT_RK_ARGV);
	const json_t *rank = obj_get(obj_get(proc, GMT_RK_RANK), GMT_RK_RANK);
	size_t cap = 256, len = 0;
	char *name = malloc(cap), *more;
	const json_t *a;
	size_t i;

	if (!name) {
		gmt_nomem();
		return;
	}
	name[0] = '\0';
	json_array_foreach(argv, i, a)
	{
		const char *s = json_string_value(a);
		size_t sl = s ? strlen(s) : 0;

		if (len + sl + 2 > cap) {
			if (!(more = realloc(name, (len + sl + 2) * 2))) {
				free(name);
				gmt_nomem();
				return;
			}
			name = more;
			cap = (len + sl + 2) * 2;
		}
		len += (size_t)snprintf(name + len, cap - len, "%s%s", len ? " " : "", s ? s : "");
	}
	if (!len)
		snprintf(name, cap, "%s",
			 get_str(proc, GMT_RK_FILE) ? get_str(proc, GMT_RK_FILE) : "process");
	if (json_is_integer(rank)) {
		char *ranked = malloc(strlen(name) + 32);

		if (!ranked) {
			free(name);
			gmt_nomem();
			return;
		}
		sprintf(ranked, "%s [rank %" JSON_INTEGER_FORMAT "]", name,
			json_integer_value(rank));
		free(name);
		name = ranked;
	}
	meta_add(out, p, "process_name", json_pack("{s:s}", "name", name));
	meta_add(out, p, "process_sort_index", json_pack("{s:I}", "sort_index", (json_int_t)index));
	meta_add(out, p, "thread_name", json_pack("{s:s}", "name", "markers and failures"));
	free(name);
}

/* One counter track per timeline[] series of process @p index. */
static void
counters_add(json_t *out, const json_t *doc, const struct pf_proc *p, size_t index)
{
	const json_t *series;
	size_t i;

	json_array_foreach(obj_get(doc, GMT_RK_TIMELINE), i, series)
	{
		json_int_t proc = -1, device = -1;
		const char *kind = get_str(series, GMT_RK_KIND);
		const json_t *pt;
		char name[96];
		size_t k;

		if (!get_int(series, GMT_RK_PROCESS, &proc) || proc != (json_int_t)index || !kind)
			continue;
		get_int(series, GMT_RK_DEVICE, &device);
		if (device >= 0)
			snprintf(name, sizeof(name), "GPU %" JSON_INTEGER_FORMAT " %s", device,
				 kind);
		else
			snprintf(name, sizeof(name), "GPU ? %s", kind);
		json_array_foreach(obj_get(series, GMT_RK_POINTS), k, pt)
		{
			json_t *t = json_array_get(pt, 0), *b = json_array_get(pt, 1), *ev;

			if (!json_is_number(t) || !json_is_integer(b))
				continue;
			ev = event_new(p, "C", name, pf_ts(p, json_number_value(t)));
			json_object_set_new(ev, "args",
					    json_pack("{s:I}", "bytes", json_integer_value(b)));
			json_array_append_new(out, ev);
		}
	}
}

/* A range pushed and not popped yet: its X event, whose dur the pop sets. */
struct pf_open {
	json_int_t tid, depth;
	long long ts;
	json_t *ev;
};

/* 1 + the index of the innermost range open on thread @p tid, 0 when none is. */
static size_t
innermost(const struct pf_open *open, size_t n, json_int_t tid)
{
	while (n > 0 && open[n - 1].tid != tid)
		n--;
	return n;
}

static void
range_close(struct pf_open *o, long long ts, const json_int_t *pop_seq)
{
	json_object_set_new(o->ev, "dur", json_integer(ts > o->ts ? ts - o->ts : 0));
	if (pop_seq)
		json_object_set_new(json_object_get(o->ev, "args"), "pop_seq",
				    json_integer(*pop_seq));
}

/* A thread_name for @p tid, once: the ranges of other threads get a track each. */
static void
thread_named(json_t *out, const struct pf_proc *p, json_int_t tid, json_int_t **seen, size_t *n)
{
	char name[48];
	json_t *ev;

	if (tid == p->pid)
		return; /* the main track, named by process_meta() */
	for (size_t i = 0; i < *n; i++)
		if ((*seen)[i] == tid)
			return;
	json_int_t *v = gmt_realloc_array(*seen, *n + 1, sizeof(**seen));

	if (!v) {
		gmt_nomem();
		return;
	}
	*seen = v;
	(*seen)[(*n)++] = tid;
	snprintf(name, sizeof(name), "thread %" JSON_INTEGER_FORMAT, tid);
	ev = thread_event_new(p, tid, "M", "thread_name", 0);
	json_object_set_new(ev, "args", json_pack("{s:s}", "name", name));
	json_array_append_new(out, ev);
}

/*
 * Markers: instants; range push/pop: one complete ("X") slice per range, on the track of the
 * thread that pushed it. Ranges nest per thread (the tracer keeps a depth per thread), so a pop
 * closes its thread's innermost open range; on one shared track two threads' overlapping ranges
 * would nest into each other and take each other's ends. The slice's name is the label alone,
 * the seqs and depth are its args. A pop without its push (before the trace) is left out; an
 * unclosed range ends with the trace.
 */
static void
markers_add(struct pf_events *e, json_t *out, const json_t *proc, const struct pf_proc *p)
{
	const json_t *m;
	struct pf_open *open = NULL;
	json_int_t *named = NULL;
	size_t i, nopen = 0, nnamed = 0;
	long long last = 0;

	json_array_foreach(obj_get(proc, GMT_RK_MARKERS), i, m)
	{
		const char *label = get_str(m, GMT_RK_LABEL), *range = get_str(m, GMT_RK_RANGE);
		json_int_t seq = 0, tid = p->pid, depth = 0;
		double t;

		if (!get_num(m, GMT_RK_TIME_S, &t))
			continue;
		last = pf_ts(p, t);
		get_int(m, GMT_RK_SEQ, &seq);
		get_int(m, GMT_RK_DEPTH, &depth);
		if (!get_int(m, GMT_RK_TID, &tid) || tid <= 0)
			tid = p->pid; /* a report from before markers had their thread */
		if (range && strcmp(range, "push") == 0) {
			json_t *ev = thread_event_new(p, tid, "X", label, last);

			thread_named(out, p, tid, &named, &nnamed);
			json_object_set_new(ev, "cat", json_string("range"));
			json_object_set_new(
			    ev, "args", json_pack("{s:I,s:I}", "push_seq", seq, "depth", depth));
			events_add(e, last, ev);
			struct pf_open *more = gmt_realloc_array(open, nopen + 1, sizeof(*open));

			if (!more) {
				gmt_nomem();
				break;
			}
			open = more;
			open[nopen++] = (struct pf_open){tid, depth, last, ev};
		} else if (range && strcmp(range, "pop") == 0) {
			size_t k = innermost(open, nopen, tid);
			json_int_t closed;

			/* none open on the thread, or only outer ones: pushed before the trace */
			if (!k || (depth && open[k - 1].depth && open[k - 1].depth < depth))
				continue;
			/* A pop of depth d closes its thread's range of depth d, and deeper ones
			 * whose pops are missing; one range when the depths are unknown. */
			do {
				closed = open[k - 1].depth;
				range_close(&open[k - 1], last, &seq);
				memmove(&open[k - 1], &open[k], (nopen - k) * sizeof(*open));
				nopen--;
				k = innermost(open, nopen, tid);
			} while (depth && closed > depth && k && open[k - 1].depth >= depth);
		} else {
			json_t *ev = instant_new(p, "marker", label, last);

			json_object_set_new(ev, "args", json_pack("{s:I}", "seq", seq));
			events_add(e, last, ev);
		}
	}
	if (pf_ts(p, p->end_s) > last)
		last = pf_ts(p, p->end_s);
	for (size_t k = 0; k < nopen; k++)
		range_close(&open[k], last, NULL);
	free(open);
	free(named);
}

/* The oom[] entry of (process, seq), when the document has one. */
static const json_t *
oom_find(const json_t *doc, json_int_t process, json_int_t seq)
{
	const json_t *o;
	size_t i;

	json_array_foreach(obj_get(doc, GMT_RK_OOM), i, o)
	{
		json_int_t op, os;

		if (get_int(o, GMT_RK_PROCESS, &op) && get_int(o, GMT_RK_SEQ, &os) &&
		    op == process && os == seq)
			return o;
	}
	return NULL;
}

static void
copy_key(json_t *dst, const json_t *src, const char *key)
{
	json_t *v = obj_get(src, key);

	if (v && !json_is_null(v))
		json_object_set(dst, key, v);
}

/* One instant per failed allocation: size, call, device, the explanation when oom[] has it. */
static void
failures_add(struct pf_events *e, const json_t *doc, const struct pf_proc *p, size_t index)
{
	const json_t *list = obj_get(doc, GMT_RK_FAILED), *f;
	size_t i;

	if (!json_is_array(list))
		list = obj_get(doc, GMT_RK_OOM);
	json_array_foreach(list, i, f)
	{
		json_int_t proc = -1, seq = 0, size = 0;
		const json_t *oom, *site = obj_get(f, GMT_RK_SITE);
		const char *api = get_str(f, GMT_RK_API);
		char name[160], bytes[GMT_BYTES_BUF], where[1024];
		json_t *ev, *args;
		double t = 0;

		if (!get_int(f, GMT_RK_PROCESS, &proc) || proc != (json_int_t)index)
			continue;
		args = json_object(); /* after the skip: another process's failure leaked one */
		get_int(f, GMT_RK_SEQ, &seq);
		get_int(f, GMT_RK_SIZE, &size);
		get_num(f, GMT_RK_TIME_S, &t);
		oom = oom_find(doc, proc, seq);
		snprintf(name, sizeof(name), "%s failed (%s)", api ? api : "allocation",
			 gmt_format_bytes((uint64_t)size, bytes));
		ev = instant_new(p, "failed", name, pf_ts(p, t));
		json_object_set_new(args, "size", json_integer(size));
		copy_key(args, f, "api");
		copy_key(args, f, "driver");
		copy_key(args, f, GMT_RK_DEVICE);
		copy_key(args, f, GMT_RK_KIND);
		copy_key(args, f, GMT_RK_RESULT);
		json_object_set_new(args, "seq", json_integer(seq));
		copy_key(args, f, "free_bytes");
		copy_key(args, f, GMT_RK_TOTAL_BYTES);
		copy_key(args, oom, "held_bytes");
		copy_key(args, oom, "cause");
		copy_key(args, oom, "explanation");
		if (json_is_object(site)) {
			frame_text(site, where, sizeof(where));
			json_object_set_new(args, "site", json_string(where));
		}
		json_object_set_new(ev, "args", args);
		events_add(e, pf_ts(p, t), ev);
	}
}

/* An instant at each device's peak of held memory. */
static void
peaks_add(struct pf_events *e, const json_t *doc, const struct pf_proc *p, size_t index)
{
	const json_t *pk;
	size_t i;

	json_array_foreach(obj_get(doc, GMT_RK_PEAKS), i, pk)
	{
		json_int_t proc = -1, device = -1, bytes = 0, seq = 0;
		char name[96], b[GMT_BYTES_BUF];
		json_t *ev;
		double t;

		if (!get_int(pk, GMT_RK_PROCESS, &proc) || proc != (json_int_t)index ||
		    !get_int(pk, GMT_RK_BYTES, &bytes) || bytes <= 0 ||
		    !get_num(pk, GMT_RK_TIME_S, &t))
			continue;
		get_int(pk, GMT_RK_DEVICE, &device);
		get_int(pk, GMT_RK_SEQ, &seq);
		snprintf(name, sizeof(name), "peak held GPU %" JSON_INTEGER_FORMAT ": %s", device,
			 gmt_format_bytes((uint64_t)bytes, b));
		ev = instant_new(p, "peak", name, pf_ts(p, t));
		json_object_set_new(
		    ev, "args",
		    json_pack("{s:I,s:I,s:I}", "bytes", bytes, "device", device, "seq", seq));
		events_add(e, pf_ts(p, t), ev);
	}
}

static json_t *
trace_events(const json_t *doc)
{
	const json_t *procs = obj_get(doc, GMT_RK_PROCESSES);
	size_t n = json_array_size(procs);
	struct pf_proc *p = procs_make(procs, n);
	json_t *out = json_array();

	for (size_t i = 0; p && i < n; i++) {
		const json_t *proc = json_array_get(procs, i);
		struct pf_events e = {0};

		process_meta(out, &p[i], proc, i);
		counters_add(out, doc, &p[i], i);
		markers_add(&e, out, proc, &p[i]);
		peaks_add(&e, doc, &p[i], i);
		failures_add(&e, doc, &p[i], i);
		if (e.n)
			qsort(e.v, e.n, sizeof(*e.v), cmp_event);
		for (size_t k = 0; k < e.n; k++)
			json_array_append_new(out, e.v[k].ev);
		free(e.v);
	}
	free(p);
	return out;
}

int
gmt_report_perfetto_doc(FILE *out, const json_t *doc)
{
	json_t *events, *ev;
	size_t i;
	int rc = 0;

	gmt_report_start();
	events = trace_events(doc);
	if (gmt_report_nomem) {
		json_decref(events);
		return -ENOMEM;
	}
	/* One event per line: large traces stay readable and diffable. */
	fputs("{\"traceEvents\":[\n", out);
	json_array_foreach(events, i, ev)
	{
		char *line = json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(15));

		if (!line) {
			rc = -1;
			break;
		}
		fprintf(out, "%s%s\n", line, i + 1 < json_array_size(events) ? "," : "");
		free(line);
	}
	fputs("],\n\"displayTimeUnit\":\"ms\",\n"
	      "\"otherData\":{\"generator\":\"gpumemtrace report --format perfetto\"}}\n",
	      out);
	json_decref(events);
	return rc || ferror(out) ? -EIO : 0;
}

int
gmt_report_perfetto(FILE *out, const struct gmt_process *procs, size_t n)
{
	/* a trace file that yielded nothing has no track to show: the other formats name it */
	json_t *doc = gmt_report_json_doc(procs, n, NULL);
	int rc;

	if (!doc)
		return -ENOMEM;
	rc = gmt_report_perfetto_doc(out, doc);
	json_decref(doc);
	return rc;
}
