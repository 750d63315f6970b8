/*
 * @brief `gpumemtrace check`'s gates (check.h): each reads the keys of docs/report-json.md, so
 * the check states the same facts as `report --format json`.
 */
#define _GNU_SOURCE
#include "analysis/gate/check.h"
#include "analysis/gate/doc.h"
#include "analysis/report/explain.h"
#include "analysis/report/keys.h"
#include "analysis/report/units.h"
#include "util/esc.h"
#include "util/sat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sites listed under a failed peak gate (the largest holders); the rest are summed. */
#define CHECK_MAX_SITES 5

// --- Gates and their text -------------------------------------------------------------------
//
// Out of memory never stops a gate halfway with a crash: what could not be said marks the gate
// (oom), a gate that could not be added is written into a spare one, and gmt_check_run() says
// -ENOMEM at the end.

/* Append printf output to the heap string *@p s (NULL: empty); false out of memory. */
static bool
vappend(char **s, const char *fmt, va_list ap)
{
	size_t have = *s ? strlen(*s) : 0;
	char *add, *p;
	int n = vasprintf(&add, fmt, ap);

	if (n < 0)
		return false;
	p = realloc(*s, have + (size_t)n + 1);
	if (!p) {
		free(add);
		return false;
	}
	memcpy(p + have, add, (size_t)n + 1);
	free(add);
	*s = p;
	return true;
}

/* Add to the gate's result line. */
static void __attribute__((format(printf, 2, 3))) say(struct gmt_gate *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g->oom |= !vappend(&g->text, fmt, ap);
	va_end(ap);
}

/* Add to the gate's violation lines. */
static void __attribute__((format(printf, 2, 3))) detail(struct gmt_gate *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g->oom |= !vappend(&g->details, fmt, ap);
	va_end(ap);
}

/* Add a note line, not about one gate. */
static void __attribute__((format(printf, 2, 3))) note(struct gmt_gates *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g->oom |= !vappend(&g->notes, fmt, ap);
	va_end(ap);
}

/* realloc(*p, n * size); false (and *p untouched) out of memory. */
static bool
grow(struct gmt_gates *g, void **p, size_t n, size_t size)
{
	void *q = n <= SIZE_MAX / size ? realloc(*p, n * size) : NULL;

	if (!q) {
		g->oom = true;
		return false;
	}
	*p = q;
	return true;
}

static struct gmt_gate *__attribute__((format(printf, 2, 3)))
gate_add(struct gmt_gates *g, const char *fmt, ...)
{
	struct gmt_gate *gate = &g->spare;
	va_list ap;

	if (grow(g, (void **)&g->v, g->n + 1, sizeof(*g->v))) {
		gate = &g->v[g->n++];
	} else { /* the spare takes what this gate says, and is thrown away with it */
		free(gate->name);
		free(gate->text);
		free(gate->details);
	}
	*gate = (struct gmt_gate){0};
	va_start(ap, fmt);
	if (vasprintf(&gate->name, fmt, ap) < 0) {
		gate->name = NULL;
		gate->oom = true;
	}
	va_end(ap);
	return gate;
}

void
gmt_gates_free(struct gmt_gates *g)
{
	for (size_t i = 0; i <= g->n; i++) {
		struct gmt_gate *x = i < g->n ? &g->v[i] : &g->spare;

		free(x->name);
		free(x->text);
		free(x->details);
	}
	free(g->v);
	free(g->notes);
	*g = (struct gmt_gates){0};
}

size_t
gmt_gates_failed(const struct gmt_gates *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n; i++)
		n += g->v[i].failed;
	return n;
}

size_t
gmt_gates_skipped(const struct gmt_gates *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n; i++)
		n += g->v[i].skipped;
	return n;
}

// --- Reading the report -------------------------------------------------------------------

static const char *
str_key(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The entry of @p doc's array @p list whose process is @p process and @p key is @p value. */
static const json_t *
entry_of(const json_t *doc, const char *list, json_int_t process, const char *key, json_int_t value)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(doc, list), i, e)
	{
		if (json_integer_value(json_object_get(e, GMT_RK_PROCESS)) == process &&
		    json_integer_value(json_object_get(e, key)) == value)
			return e;
	}
	return NULL;
}

/*
 * The stacks of the document the gates judge, for the suppressions: from the caller's source
 * (gmt_stack_source: built one at a time), else from the document's call_stacks[] through an
 * index by (process, stack) made on the first lookup (a linear search per stack would make a
 * report of many stacks quadratic).
 */
struct stacks {
	const json_t *doc;
	const struct gmt_stack_source *src;
	struct stack_entry {
		json_int_t process, stack;
		size_t pos; /* in call_stacks[]: of two entries of one stack, the first is used */
		json_t *call_stack;
	} * index;
	size_t n;
	bool indexed;
};

static int
cmp_stack_entry(const void *pa, const void *pb)
{
	const struct stack_entry *a = pa, *b = pb;

	if (a->process != b->process)
		return a->process < b->process ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* false out of memory: the lookups then find nothing (the gates' texts say oom elsewhere) */
static bool
stacks_index(struct stacks *sl)
{
	const json_t *list = json_object_get(sl->doc, GMT_RK_CALL_STACKS), *e;
	size_t i, n = json_array_size(list);

	sl->indexed = true;
	if (!n)
		return true;
	if (!(sl->index = calloc(n, sizeof(*sl->index))))
		return false;
	json_array_foreach(list, i, e)
	{
		json_t *cs = json_object_get(e, GMT_RK_CALL_STACK);

		if (!cs)
			continue;
		sl->index[sl->n++] = (struct stack_entry){
		    json_integer_value(json_object_get(e, GMT_RK_PROCESS)),
		    json_integer_value(json_object_get(e, GMT_RK_STACK)), i, cs};
	}
	qsort(sl->index, sl->n, sizeof(*sl->index), cmp_stack_entry);
	size_t k = 0; /* the first entry of each (process, stack) */
	for (i = 0; i < sl->n; i++)
		if (!k || sl->index[k - 1].process != sl->index[i].process ||
		    sl->index[k - 1].stack != sl->index[i].stack)
			sl->index[k++] = sl->index[i];
	sl->n = k;
	return true;
}

/* The symbolized stack (`call_stacks[].call_stack`) of (@p process, @p stack): a new reference
 * (json_decref() it), or NULL. */
static json_t *
call_stack_of(struct stacks *sl, json_int_t process, json_int_t stack)
{
	size_t lo = 0, hi;

	if (sl->src && sl->src->get)
		return sl->src->get(sl->src->data, process, stack);
	if (!sl->indexed && !stacks_index(sl))
		return NULL;
	for (hi = sl->n; lo < hi;) { /* the first entry not before (process, stack) */
		size_t mid = lo + (hi - lo) / 2;
		const struct stack_entry *e = &sl->index[mid];

		if (e->process < process || (e->process == process && e->stack < stack))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sl->n && sl->index[lo].process == process && sl->index[lo].stack == stack)
		return json_incref(sl->index[lo].call_stack);
	return NULL;
}

/* Whether @p supp has a suppression of @p type: without one, no stack need be looked at. */
static bool
supp_of_type(const struct gmt_suppressions *supp, enum gmt_supp_type type)
{
	for (size_t i = 0; i < supp->n; i++)
		if (supp->v[i].type == type)
			return true;
	return false;
}

/*
 * Whether a leak_sites[] stack is held by a CUDA library's handles: the report's `library`
 * (explain.c's rule); a report written before that key told from its frames' modules by the
 * same rule (@p old).
 */
static bool
library_stack(struct stacks *sl, json_int_t process, const json_t *st, bool old)
{
	const json_t *frame;
	json_t *cs;
	bool held = false;
	size_t i;

	if (!old)
		return json_is_string(json_object_get(st, GMT_RK_LIBRARY));
	cs = call_stack_of(sl, process, json_integer_value(json_object_get(st, GMT_RK_STACK)));
	json_array_foreach(cs, i, frame)
	{
		if (gmt_library_of_module(str_key(frame, GMT_RK_MODULE))) {
			held = true;
			break;
		}
	}
	json_decref(cs);
	return held;
}

/* What suppressions leave of one site group (`leak_sites[]`, `peak_sites[]`). */
struct kept {
	uint64_t bytes, allocations;
};

/*
 * Split one site group's stacks between the suppressions of @p type and what is kept. Each
 * suppressed stack adds to its suppression's counters when @p count (the baseline's report is
 * matched without counting). With @p cached, the stacks of a caching allocator (`cached`) are
 * set apart there, neither kept nor suppressed; with @p library, those of a CUDA library's
 * handles (library_stack(), @p old) likewise. Returns what is kept.
 */
static struct kept
suppress_group(struct stacks *sl,
	       const json_t *group,
	       enum gmt_supp_type type,
	       struct gmt_suppressions *supp,
	       bool count,
	       struct kept *cached,
	       struct kept *library,
	       bool old)
{
	const json_t *stacks = json_object_get(group, GMT_RK_STACKS);
	json_int_t process = json_integer_value(json_object_get(group, GMT_RK_PROCESS));
	struct kept k = {gmt_json_u64(group, GMT_RK_BYTES),
			 gmt_json_u64(group, GMT_RK_ALLOCATIONS)};
	const json_t *st;
	size_t i;
	bool typed = supp_of_type(supp, type);

	if (!typed && !cached && !library)
		return k;
	json_array_foreach(stacks, i, st)
	{
		uint64_t bytes = gmt_json_u64(st, GMT_RK_BYTES),
			 allocs = gmt_json_u64(st, GMT_RK_ALLOCATIONS);
		struct kept *apart = NULL;

		if (cached && json_is_true(json_object_get(st, GMT_RK_CACHED)))
			apart = cached; /* a caching allocator's memory: not a leak unless asked */
		else if (library && library_stack(sl, process, st, old))
			apart = library; /* a CUDA library's handles: likewise */
		if (apart) {
			k.bytes -= bytes < k.bytes ? bytes : k.bytes;
			k.allocations -= allocs < k.allocations ? allocs : k.allocations;
			apart->bytes = gmt_sat_add(apart->bytes, bytes);
			apart->allocations += allocs;
			continue;
		}
		if (!typed)
			continue;
		json_t *cs = call_stack_of(sl, process,
					   json_integer_value(json_object_get(st, GMT_RK_STACK)));
		struct gmt_suppression *s = gmt_suppressions_match(
		    supp, type, cs, json_object_get(group, GMT_RK_SITE), str_key(group, GMT_RK_API),
		    str_key(group, GMT_RK_DRIVER));

		json_decref(cs);
		if (!s)
			continue;
		k.bytes -= bytes < k.bytes ? bytes : k.bytes;
		k.allocations -= allocs < k.allocations ? allocs : k.allocations;
		if (count) {
			s->hits++;
			s->bytes = gmt_sat_add(s->bytes, bytes);
			s->allocations += allocs;
		}
	}
	return k;
}

/*
 * The leaks that count (docs/report-json.md: at_exit and counted, and not `cached` unless
 * --count-cached, not `library` unless --count-libraries), suppressions applied.
 */
struct leak_view {
	struct kept total, taken; /* taken: by suppressions */
	struct kept cached;	  /* a caching allocator's memory live at exit: not counted */
	struct kept library;	  /* CUDA libraries' handles' memory live at exit: not counted */
	struct kept *sites;	  /* per leak_sites[] entry; zero for the ones that do not count */
	size_t nsites;
};

static struct leak_view
leak_view(struct stacks *sl,
	  struct gmt_suppressions *supp,
	  bool count,
	  bool count_cached,
	  bool count_libraries)
{
	const json_t *doc = sl->doc;
	const json_t *summary = json_object_get(doc, GMT_RK_SUMMARY);
	const json_t *sites = json_object_get(doc, GMT_RK_LEAK_SITES);
	struct leak_view v = {
	    .total = {gmt_json_u64(summary, GMT_RK_LEAKED_BYTES),
		      gmt_json_u64(summary, GMT_RK_LEAKED_ALLOCATIONS)},
	    .nsites = json_array_size(sites),
	};
	/* a report from before `library`: its leaked_* held the libraries' memory */
	bool old = !json_object_get(summary, GMT_RK_LIBRARY_AT_EXIT_BYTES);
	const json_t *g;
	size_t i;

	if (count_cached) {
		/* summary.leaked_* leave the caches out; counted, they come back in */
		v.total.bytes =
		    gmt_sat_add(v.total.bytes, gmt_json_u64(summary, GMT_RK_CACHED_AT_EXIT_BYTES));
		v.total.allocations += gmt_json_u64(summary, GMT_RK_CACHED_AT_EXIT_ALLOCATIONS);
	}
	if (count_libraries && !old) {
		v.total.bytes =
		    gmt_sat_add(v.total.bytes, gmt_json_u64(summary, GMT_RK_LIBRARY_AT_EXIT_BYTES));
		v.total.allocations += gmt_json_u64(summary, GMT_RK_LIBRARY_AT_EXIT_ALLOCATIONS);
	}
	v.sites = calloc(v.nsites + 1, sizeof(*v.sites));
	if (!v.sites)
		return v; /* out of memory: run_gates() says so */
	json_array_foreach(sites, i, g)
	{
		struct kept before = v.cached, lib_before = v.library;

		v.sites[i] = (struct kept){0};
		if (!json_is_true(json_object_get(g, GMT_RK_AT_EXIT)) ||
		    !json_is_true(json_object_get(g, GMT_RK_COUNTED)))
			continue;
		v.sites[i] = suppress_group(sl, g, GMT_SUPP_LEAK, supp, count,
					    count_cached ? NULL : &v.cached,
					    count_libraries ? NULL : &v.library, old);
		v.taken.bytes += gmt_json_u64(g, GMT_RK_BYTES) - v.sites[i].bytes -
				 (v.cached.bytes - before.bytes) -
				 (v.library.bytes - lib_before.bytes);
		v.taken.allocations += gmt_json_u64(g, GMT_RK_ALLOCATIONS) -
				       v.sites[i].allocations -
				       (v.cached.allocations - before.allocations) -
				       (v.library.allocations - lib_before.allocations);
	}
	if (old) { /* the libraries' memory was in summary.leaked_*: out again */
		v.total.bytes -= v.library.bytes < v.total.bytes ? v.library.bytes : v.total.bytes;
		v.total.allocations -= v.library.allocations < v.total.allocations
					   ? v.library.allocations
					   : v.total.allocations;
	}
	v.total.bytes -= v.taken.bytes < v.total.bytes ? v.taken.bytes : v.total.bytes;
	v.total.allocations -=
	    v.taken.allocations < v.total.allocations ? v.taken.allocations : v.total.allocations;
	return v;
}

/* ", PyTorch 3.5 GiB" per caching allocator of summary.cached_at_exit that held something. */
static void
cached_by_allocator(struct gmt_gate *g, const json_t *doc)
{
	/* the allocators whose memory at exit is their cache (gmt_cache_holds()) */
	static const enum gmt_cache holding[] = {GMT_CACHE_PYTORCH, GMT_CACHE_CUPY, GMT_CACHE_XLA};
	const json_t *by =
	    json_object_get(json_object_get(doc, GMT_RK_SUMMARY), GMT_RK_CACHED_AT_EXIT);
	const char *sep = ": ";
	char b[GMT_SIZE_TEXT];

	for (size_t i = 0; i < sizeof(holding) / sizeof(holding[0]); i++) {
		const json_t *c = json_object_get(by, gmt_cache_name(holding[i]));
		uint64_t bytes = gmt_json_u64(c, GMT_RK_BYTES);

		if (!bytes)
			continue;
		say(g, "%s%s %s", sep, gmt_cache_label(holding[i]), gmt_size_text(bytes, b));
		sep = ", ";
	}
}

/* ", cuBLAS 64.0 MiB" per CUDA library of summary.library_at_exit that held something. */
static void
held_by_library(struct gmt_gate *g, const json_t *doc)
{
	const json_t *by =
	    json_object_get(json_object_get(doc, GMT_RK_SUMMARY), GMT_RK_LIBRARY_AT_EXIT);
	const char *sep = ": ";
	char b[GMT_SIZE_TEXT];

	for (int l = GMT_LIB_NONE + 1; l < GMT_LIB_COUNT; l++) {
		uint64_t bytes = gmt_json_u64(
		    json_object_get(by, gmt_library_name((enum gmt_library)l)), GMT_RK_BYTES);

		if (!bytes)
			continue;
		say(g, "%s%s %s", sep, gmt_library_label((enum gmt_library)l),
		    gmt_size_text(bytes, b));
		sep = ", ";
	}
}

/* "pid 4242" or "process 1" for a message. */
static const char *
who(const json_t *entry, char *buf, size_t size)
{
	const json_t *pid = json_object_get(entry, GMT_RK_PID);

	if (json_is_integer(pid))
		snprintf(buf, size, "process %lld (pid %lld)",
			 (long long)json_integer_value(json_object_get(entry, GMT_RK_PROCESS)),
			 (long long)json_integer_value(pid));
	else
		snprintf(buf, size, "process %lld",
			 (long long)json_integer_value(json_object_get(entry, GMT_RK_PROCESS)));
	return buf;
}

/* One violation line of a site group: @p lead (what and how much), the call, kind, site, process.
 */
static void
site_line(struct gmt_gate *gate, const json_t *g, const char *lead)
{
	char site[512], proc[64];
	const char *api = str_key(g, GMT_RK_API), *driver = str_key(g, GMT_RK_DRIVER);
	const char *kind = str_key(g, GMT_RK_KIND);

	/* the names are the trace's: escaped for the terminal (esc.h) */
	detail(gate, "    %s: %s%s%s%s %s at %s, %s\n", lead, api ? gmt_esc(api) : "?",
	       driver ? " (" : "", driver ? gmt_esc(driver) : "", driver ? ")" : "",
	       kind ? gmt_esc(kind) : "?",
	       gmt_esc(gmt_site_text(json_object_get(g, GMT_RK_SITE), site, sizeof(site))),
	       who(g, proc, sizeof(proc)));
}

/* "2.0 MiB (2097152 bytes) in 2 allocations WHAT" into @p buf. */
static const char *
amount(char *buf, size_t size, uint64_t bytes, uint64_t allocs, const char *what)
{
	char b[GMT_SIZE_TEXT];

	snprintf(buf, size, "%s in %" PRIu64 " allocation%s%s", gmt_size_text(bytes, b), allocs,
		 allocs == 1 ? "" : "s", what);
	return buf;
}

// --- The gates ----------------------------------------------------------------------------

static void
gate_result(struct gmt_gate *gate,
	    bool failed,
	    const char *what,
	    uint64_t value,
	    uint64_t limit,
	    bool sizes)
{
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT];

	gate->failed = failed;
	if (sizes)
		say(gate, "%s: %s %s %s limit %s", gate->name, what, gmt_size_text(value, v),
		    failed ? ">" : "<=", gmt_size_text(limit, l));
	else
		say(gate, "%s: %s %" PRIu64 " %s limit %" PRIu64, gate->name, what, value,
		    failed ? ">" : "<=", limit);
}

/* The sites behind the leak gates, largest first (leak_sites[] is sorted so already). */
static void
leak_details(struct gmt_gate *gate, const json_t *doc, const struct leak_view *lv)
{
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, GMT_RK_LEAK_SITES), i, g)
	{
		char lead[128];

		if (!lv->sites[i].bytes && !lv->sites[i].allocations)
			continue;
		site_line(gate, g,
			  amount(lead, sizeof(lead), lv->sites[i].bytes, lv->sites[i].allocations,
				 " never freed"));
	}
}

/*
 * What makes a leak figure less than the truth: processes that did not exit normally have no
 * leaks at exit (what was live when they stopped is not counted: their leaks are unknown), and
 * dropped events may have lost allocations or frees.
 */
static void
leak_caveats(struct gmt_gate *g, const json_t *doc)
{
	const json_t *summary = json_object_get(doc, GMT_RK_SUMMARY);
	uint64_t died = gmt_json_u64(summary, GMT_RK_INCOMPLETE_PROCESSES);
	/* dropped reservation readings lose no allocation or free: the leaks stay exact */
	uint64_t dropped = gmt_json_u64(summary, GMT_RK_DROPPED);
	uint64_t readings = gmt_json_u64(summary, GMT_RK_DROPPED_READINGS);
	dropped -= readings <= dropped ? readings : 0;
	char t[GMT_SIZE_TEXT];

	if (died)
		say(g,
		    " (a lower bound: %" PRIu64 " process%s did not exit normally, %s leaks "
		    "unknown; %s live when %s trace%s ended)",
		    died, died == 1 ? "" : "es", died == 1 ? "its" : "their",
		    gmt_size_text(gmt_json_u64(summary, GMT_RK_LIVE_AT_END_BYTES), t),
		    died == 1 ? "its" : "their", died == 1 ? "" : "s");
	if (dropped)
		say(g, " (not exact: %" PRIu64 " event%s dropped)", dropped,
		    dropped == 1 ? "" : "s");
}

static void
leak_gates(struct gmt_gates *gates,
	   const struct gmt_check_options *o,
	   const json_t *doc,
	   const struct leak_view *lv)
{
	char t[GMT_SIZE_TEXT];

	if (o->leaked_bytes_set) {
		struct gmt_gate *g = gate_add(gates, "max-leaked-bytes");

		gate_result(g, lv->total.bytes > o->max_leaked_bytes, "leaked", lv->total.bytes,
			    o->max_leaked_bytes, true);
		if (lv->taken.bytes)
			say(g, " (%s suppressed)", gmt_size_text(lv->taken.bytes, t));
		if (lv->cached.bytes) {
			say(g, " (%s held by a caching allocator at exit, not counted",
			    gmt_size_text(lv->cached.bytes, t));
			cached_by_allocator(g, doc);
			say(g, "; --count-cached counts it)");
		}
		if (lv->library.bytes) {
			say(g, " (%s held by CUDA libraries for their handles at exit, not counted",
			    gmt_size_text(lv->library.bytes, t));
			held_by_library(g, doc);
			say(g, "; --count-libraries counts it)");
		}
		leak_caveats(g, doc);
		if (g->failed)
			leak_details(g, doc, lv);
	}
	if (o->leaked_allocs_set) {
		struct gmt_gate *g = gate_add(gates, "max-leaked-allocs");

		gate_result(g, lv->total.allocations > o->max_leaked_allocs, "leaked allocations",
			    lv->total.allocations, o->max_leaked_allocs, false);
		if (lv->taken.allocations)
			say(g, " (%" PRIu64 " suppressed)", lv->taken.allocations);
		if (lv->cached.allocations)
			say(g, " (%" PRIu64 " held by a caching allocator, not counted)",
			    lv->cached.allocations);
		if (lv->library.allocations)
			say(g,
			    " (%" PRIu64 " held by CUDA libraries for their handles, not counted)",
			    lv->library.allocations);
		leak_caveats(g, doc);
		if (g->failed)
			leak_details(g, doc, lv);
	}
}

/* The limit of @p v (@p n of them) for @p device: the last DEV= for it, else the last plain one. */
static const struct gmt_dev_limit *
limit_for(const struct gmt_dev_limit *v, size_t n, long device)
{
	const struct gmt_dev_limit *all = NULL, *one = NULL;

	for (size_t i = 0; i < n; i++) {
		if (v[i].all)
			all = &v[i];
		else if (v[i].device == device)
			one = &v[i];
	}
	return one ? one : all;
}

/*
 * The peak of one (process, device) with peak suppressions applied: peaks[].bytes less the
 * bytes of suppressed stacks live at that peak (peak_sites[]). Appends the kept sites, largest
 * first, to *@p details when it is not NULL.
 */
static uint64_t
peak_kept(struct stacks *sl,
	  const json_t *peak,
	  struct gmt_suppressions *supp,
	  uint64_t *taken,
	  struct gmt_gate *details)
{
	json_int_t process = json_integer_value(json_object_get(peak, GMT_RK_PROCESS));
	json_int_t device = json_integer_value(json_object_get(peak, GMT_RK_DEVICE));
	uint64_t bytes = gmt_json_u64(peak, GMT_RK_BYTES), rest = 0;
	size_t i, shown = 0, more = 0;
	const json_t *g;

	*taken = 0;
	json_array_foreach(json_object_get(sl->doc, GMT_RK_PEAK_SITES), i, g)
	{
		struct kept k;

		if (json_integer_value(json_object_get(g, GMT_RK_PROCESS)) != process ||
		    json_integer_value(json_object_get(g, GMT_RK_DEVICE)) != device)
			continue;
		k = suppress_group(sl, g, GMT_SUPP_PEAK, supp, details == NULL, NULL, NULL, false);
		*taken += gmt_json_u64(g, "bytes") - k.bytes;
		if (!details || !k.bytes)
			continue;
		if (shown++ < CHECK_MAX_SITES) {
			char lead[128];

			site_line(details, g,
				  amount(lead, sizeof(lead), k.bytes, k.allocations,
					 " live at the peak"));
		} else {
			more++;
			rest += k.bytes;
		}
	}
	if (more) {
		char r[GMT_SIZE_TEXT];

		detail(details, "    %s in %zu more site%s\n", gmt_size_text(rest, r), more,
		       more == 1 ? "" : "s");
	}
	return bytes - (*taken < bytes ? *taken : bytes);
}

/* Append @p device to *@p v (*@p n of them); false out of memory. */
static bool
device_add(struct gmt_gates *gates, long **v, size_t *n, long device)
{
	if (!grow(gates, (void **)v, *n + 1, sizeof(**v)))
		return false;
	(*v)[(*n)++] = device;
	return true;
}

/* Sort the @p n devices of @p v and squeeze out repeats; their number. */
static size_t
devices_sorted(long *v, size_t n)
{
	size_t i;

	/* Insertion sort, then squeeze out repeats: a handful of devices. */
	for (i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			long t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	size_t m = 0;
	for (i = 0; i < n; i++)
		if (m == 0 || v[m - 1] != v[i])
			v[m++] = v[i];
	return m;
}

/* The devices of the DEV= limits of @p lim (@p nlim) appended to *@p v; false out of memory. */
static bool
limit_devices(
    struct gmt_gates *gates, const struct gmt_dev_limit *lim, size_t nlim, long **v, size_t *n)
{
	for (size_t i = 0; i < nlim; i++)
		if (!lim[i].all && !device_add(gates, v, n, lim[i].device))
			return false;
	return true;
}

/* The devices any peaks[] entry or DEV= limit names, sorted, without duplicates. */
static size_t
peak_devices(struct gmt_gates *gates,
	     const struct gmt_check_options *o,
	     const json_t *doc,
	     long **out)
{
	long *v = NULL;
	size_t n = 0, i;
	const json_t *p;

	json_array_foreach(json_object_get(doc, GMT_RK_PEAKS), i, p)
	{
		if (!device_add(gates, &v, &n,
				(long)json_integer_value(json_object_get(p, GMT_RK_DEVICE))))
			break;
	}
	limit_devices(gates, o->peaks, o->npeaks, &v, &n);
	*out = v;
	return devices_sorted(v, n);
}

/* One gate per device: every process's peak on it against the device's limit. */
static void
peak_gate(struct gmt_gates *gates,
	  const struct gmt_check_options *o,
	  struct stacks *sl,
	  long device,
	  const struct gmt_dev_limit *lim)
{
	struct gmt_suppressions *supp = o->supp;
	struct gmt_gate *gate = gate_add(gates, "max-peak-bytes device %ld", device);
	uint64_t worst = 0, worst_taken = 0;
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT], proc[64];
	const json_t *p;
	size_t i, nproc = 0;

	json_array_foreach(json_object_get(sl->doc, GMT_RK_PEAKS), i, p)
	{
		uint64_t taken, held;

		if (json_integer_value(json_object_get(p, GMT_RK_DEVICE)) != device)
			continue;
		nproc++;
		held = peak_kept(sl, p, supp, &taken, NULL);
		if (held > worst || nproc == 1) {
			worst = held;
			worst_taken = taken;
		}
		if (held <= lim->bytes)
			continue;
		gate->failed = true;
		detail(gate, "  %s held %s on device %ld at %.6f s, %s over the limit\n",
		       who(p, proc, sizeof(proc)), gmt_size_text(held, v), device,
		       json_number_value(json_object_get(p, GMT_RK_TIME_S)),
		       gmt_size_text(held - lim->bytes, l));
		(void)peak_kept(sl, p, supp, &taken, gate);
	}
	if (nproc == 0) {
		say(gate, "%s: no process used the device (limit %s)", gate->name,
		    gmt_size_text(lim->bytes, l));
		return;
	}
	say(gate, "%s: peak held %s %s limit %s", gate->name, gmt_size_text(worst, v),
	    gate->failed ? ">" : "<=", gmt_size_text(lim->bytes, l));
	if (nproc > 1)
		say(gate, " (largest of %zu processes)", nproc);
	if (worst_taken)
		say(gate, " (%s suppressed)", gmt_size_text(worst_taken, v));
}

static void
peak_gates(struct gmt_gates *gates, const struct gmt_check_options *o, struct stacks *sl)
{
	long *devices;
	size_t n;

	if (o->npeaks == 0)
		return;
	n = peak_devices(gates, o, sl->doc, &devices);
	for (size_t i = 0; i < n; i++) {
		const struct gmt_dev_limit *lim = limit_for(o->peaks, o->npeaks, devices[i]);

		if (lim)
			peak_gate(gates, o, sl, devices[i], lim);
	}
	free(devices);
}

/*
 * One growing call site against the limit: `growth_sites[]` entries (the stacks of one line
 * together; a suppressed stack's growth is taken out of its site's), or, in a report written
 * before them, `growth[]` entries (one stack each). Returns what is left of its growth.
 */
static uint64_t
growth_kept(struct stacks *sl, const json_t *e, struct gmt_suppressions *supp, uint64_t *taken)
{
	json_int_t process = json_integer_value(json_object_get(e, GMT_RK_PROCESS));
	const json_t *stacks = json_object_get(e, GMT_RK_STACKS), *st;
	uint64_t kept = 0;
	size_t i;
	bool typed = supp_of_type(supp, GMT_SUPP_GROWTH);

	if (!json_is_array(stacks)) /* growth[]: the entry is its stack */
		stacks = json_pack("[O]", e);
	else
		json_incref((json_t *)stacks);
	json_array_foreach(stacks, i, st)
	{
		uint64_t grew = gmt_json_u64(st, GMT_RK_GROWTH_BYTES);
		json_t *cs =
		    typed ? call_stack_of(sl, process,
					  json_integer_value(json_object_get(st, GMT_RK_STACK)))
			  : NULL;
		struct gmt_suppression *s =
		    typed
			? gmt_suppressions_match(supp, GMT_SUPP_GROWTH, cs,
						 json_object_get(e, GMT_RK_SITE),
						 str_key(e, GMT_RK_API), str_key(e, GMT_RK_DRIVER))
			: NULL;

		json_decref(cs);

		if (s) {
			s->hits++;
			s->bytes = gmt_sat_add(s->bytes, grew);
			*taken = gmt_sat_add(*taken, grew);
		} else {
			kept = gmt_sat_add(kept, grew);
		}
	}
	json_decref((json_t *)stacks);
	return kept;
}

static void
growth_gate(struct gmt_gates *gates, const struct gmt_check_options *o, struct stacks *sl)
{
	const json_t *doc = sl->doc;
	const json_t *growth = json_object_get(doc, GMT_RK_GROWTH_SITES);
	struct gmt_gate *gate;
	uint64_t largest = 0, taken = 0;
	size_t i, over = 0;
	const json_t *e;
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT], site[512], proc[64];

	if (!o->growth_set)
		return;
	if (!growth)
		growth = json_object_get(doc, GMT_RK_GROWTH);
	gate = gate_add(gates, "max-growth-bytes");
	json_array_foreach(growth, i, e)
	{
		uint64_t grew = growth_kept(sl, e, o->supp, &taken);
		const char *first = str_key(e, GMT_RK_FIRST_LABEL),
			   *last = str_key(e, GMT_RK_LAST_LABEL);
		const json_t *stacks = json_object_get(e, GMT_RK_STACKS);
		uint64_t lo = gmt_json_u64(
		    e, json_object_get(e, GMT_RK_MIN_RISES) ? GMT_RK_MIN_RISES : GMT_RK_RISES);
		uint64_t hi = gmt_json_u64(
		    e, json_object_get(e, GMT_RK_MAX_RISES) ? GMT_RK_MAX_RISES : GMT_RK_RISES);

		if (grew > largest)
			largest = grew;
		if (grew <= o->max_growth)
			continue;
		over++;
		detail(gate, "    grew %s (%s -> ", gmt_size_text(grew, v),
		       gmt_size_text(gmt_json_u64(e, GMT_RK_FIRST_BYTES), l));
		detail(gate, "%s) over %" PRIu64 " %s",
		       gmt_size_text(gmt_json_u64(e, GMT_RK_LAST_BYTES), v),
		       gmt_json_u64(e, GMT_RK_SAMPLES),
		       str_key(e, GMT_RK_BASIS) ? gmt_esc(str_key(e, GMT_RK_BASIS))
						: GMT_RK_SAMPLES);
		if (first && last)
			detail(gate, " '%s' to '%s'", gmt_esc(first), gmt_esc(last));
		if (lo == hi)
			detail(gate, ", rose %" PRIu64 " times", hi);
		else
			detail(gate, ", rose %" PRIu64 "-%" PRIu64 " times", lo, hi);
		if (json_array_size(stacks) > 1)
			detail(gate, " (%zu stacks)", json_array_size(stacks));
		else /* one stack: its falls too */
			detail(gate, ", fell %" PRIu64,
			       gmt_json_u64(stacks ? json_array_get(stacks, 0) : e, GMT_RK_FALLS));
		detail(gate, ": %s %s at %s, %s\n",
		       str_key(e, GMT_RK_API) ? gmt_esc(str_key(e, GMT_RK_API)) : "?",
		       str_key(e, GMT_RK_KIND) ? gmt_esc(str_key(e, GMT_RK_KIND)) : "?",
		       gmt_esc(gmt_site_text(json_object_get(e, GMT_RK_SITE), site, sizeof(site))),
		       who(e, proc, sizeof(proc)));
	}
	gate->failed = over > 0;
	if (!growth)
		say(gate, "%s: the report has no growth[] analysis: nothing to gate", gate->name);
	else if (over)
		say(gate, "%s: %zu call site%s grew by more than %s", gate->name, over,
		    over == 1 ? "" : "s", gmt_size_text(o->max_growth, l));
	else
		say(gate, "%s: largest growth %s <= limit %s", gate->name,
		    gmt_size_text(largest, v), gmt_size_text(o->max_growth, l));
	if (taken)
		say(gate, " (%s suppressed)", gmt_size_text(taken, v));
}

static void
failed_gate(struct gmt_gates *gates, const struct gmt_check_options *o, const json_t *doc)
{
	const json_t *summary = json_object_get(doc, GMT_RK_SUMMARY);
	uint64_t failed = gmt_json_u64(summary, GMT_RK_FAILED_ALLOCATIONS);
	uint64_t probes = gmt_json_u64(summary, GMT_RK_PROBE_FAILURES);
	uint64_t recovered = gmt_json_u64(summary, GMT_RK_RECOVERED_FAILURES);
	struct gmt_gate *gate;
	const json_t *g;
	size_t i;

	if (!o->failed_set)
		return;
	/* PyTorch OOM errors no failed CUDA call counts (the allocator's own limit) fail too */
	uint64_t tensor_ooms = gmt_json_u64(summary, GMT_RK_TENSOR_OOM_ERRORS);
	gate = gate_add(gates, "max-failed");
	gate_result(gate, failed + tensor_ooms > o->max_failed, "failed allocations",
		    failed + tensor_ooms, o->max_failed, false);
	if (tensor_ooms)
		say(gate,
		    " (%" PRIu64 " of them PyTorch out-of-memory error%s with no failed CUDA call: "
		    "the caching allocator's own limit)",
		    tensor_ooms, tensor_ooms == 1 ? "" : "s");
	if (probes || recovered)
		say(gate,
		    " (not counted: %" PRIu64 " capability probe%s, %" PRIu64
		    " recovered by the allocator's retry)",
		    probes, probes == 1 ? "" : "s", recovered);
	if (!gate->failed)
		return;
	json_array_foreach(json_object_get(doc, GMT_RK_FAILED_SITES), i, g)
	{
		char lead[128], b[GMT_SIZE_TEXT];
		uint64_t n = gmt_json_u64(g, GMT_RK_FAILURES);

		snprintf(lead, sizeof(lead),
			 "%" PRIu64 " failed call%s requesting %s on device %lld", n,
			 n == 1 ? "" : "s", gmt_size_text(gmt_json_u64(g, GMT_RK_BYTES), b),
			 (long long)json_integer_value(json_object_get(g, GMT_RK_DEVICE)));
		site_line(gate, g, lead);
	}
}

/* The counted live bytes of @p process at the end of its trace (leak_sites[]). */
static uint64_t
live_at_end_of(const json_t *doc, json_int_t process)
{
	uint64_t bytes = 0;
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, GMT_RK_LEAK_SITES), i, g)
	{
		if (json_integer_value(json_object_get(g, GMT_RK_PROCESS)) == process &&
		    json_is_true(json_object_get(g, GMT_RK_COUNTED)))
			bytes = gmt_sat_add(bytes, gmt_json_u64(g, GMT_RK_BYTES));
	}
	return bytes;
}

/*
 * complete-traces, always there: every process exited normally (its trace has a trailer), every
 * line of its trace was read, and no trace dropped events. Otherwise the other gates judge part
 * of the story: a crashed process has no leaks at exit, a dropped free or a skipped line (not
 * JSON, too long) looks like a leak, and a dropped allocation hides one; a trace file that
 * yielded nothing at all (an empty file beside the others: lost_traces[]) is a process none of
 * the gates sees. Each offending file is named with its reason; --allow-incomplete and
 * --allow-drops relax it. A report without lost_traces[] (older than the key) is judged on what
 * it has, as an absent key is, and the gate says it cannot know of a lost trace.
 */
static void
integrity_gate(struct gmt_gates *gates, const struct gmt_check_options *o, const json_t *doc)
{
	const json_t *procs = json_object_get(doc, GMT_RK_PROCESSES), *p;
	struct gmt_gate *gate = gate_add(gates, "complete-traces");
	size_t i, died = 0, dropping = 0, damaged = 0;
	uint64_t dropped = 0, bad = 0;
	char b[GMT_SIZE_TEXT], who_buf[64];

	json_array_foreach(procs, i, p)
	{
		const char *file = str_key(p, GMT_RK_FILE);
		const json_t *pid = json_object_get(p, GMT_RK_PID);
		const json_t *end = json_object_get(p, GMT_RK_END_TIME_S);
		uint64_t drops = gmt_json_u64(p, GMT_RK_DROPPED);
		uint64_t readings = gmt_json_u64(p, GMT_RK_DROPPED_READINGS);
		readings = readings <= drops ? readings : 0; /* (a JSON report made by hand) */
		uint64_t bad_lines = gmt_json_u64(p, "bad_lines");

		if (json_is_integer(pid))
			snprintf(who_buf, sizeof(who_buf), "pid %lld",
				 (long long)json_integer_value(pid));
		else
			snprintf(who_buf, sizeof(who_buf), "process %zu", i);
		if (json_is_false(json_object_get(p, GMT_RK_COMPLETE))) {
			const char *by = json_string_value(json_object_get(p, GMT_RK_ENDED_BY));
			died++;
			if (by)
				detail(gate, "    %s (%s): did not exit normally (ended by %s)",
				       file ? gmt_esc(file) : "?", who_buf, gmt_esc(by));
			else
				detail(gate,
				       "    %s (%s): did not exit normally (no trailer: killed or "
				       "crashed)",
				       file ? gmt_esc(file) : "?", who_buf);
			if (json_is_number(end))
				detail(gate, "; its trace ends at %.3f s", json_number_value(end));
			detail(gate, " with %s live: its leaks are unknown%s\n",
			       gmt_size_text(live_at_end_of(doc, (json_int_t)i), b),
			       o->allow_incomplete ? " (allowed: --allow-incomplete)" : "");
		}
		if (bad_lines) {
			damaged++;
			bad += bad_lines;
			detail(
			    gate,
			    "    %s (%s): %" PRIu64
			    " line%s could not be read and %s skipped (see the reader's messages): "
			    "what %s held is unknown%s\n",
			    file ? gmt_esc(file) : "?", who_buf, bad_lines,
			    bad_lines == 1 ? "" : "s", bad_lines == 1 ? "was" : "were",
			    bad_lines == 1 ? "it" : "they",
			    o->allow_incomplete ? " (allowed: --allow-incomplete)" : "");
		}
		if (drops) {
			dropping++;
			dropped += drops;
			detail(gate,
			       "    %s (%s): %" PRIu64
			       " event%s dropped (the tracer's ring buffer was "
			       "full: GPUMEMTRACE_RING_SLOTS)",
			       file ? gmt_esc(file) : "?", who_buf, drops, drops == 1 ? "" : "s");
			if (readings == drops)
				detail(gate,
				       ", all of them reservation readings: its allocations "
				       "and frees are all there, not its pools' reserved bytes");
			else if (readings)
				detail(gate,
				       " (%" PRIu64 " of them reservation readings): its figures "
				       "are not exact",
				       readings);
			else
				detail(gate, ": its figures are not exact");
			detail(gate, "%s\n", o->allow_drops ? " (allowed: --allow-drops)" : "");
		}
	}
	const json_t *lost_v = json_object_get(doc, GMT_RK_LOST_TRACES), *l;
	size_t lost = json_array_size(lost_v);
	json_array_foreach(lost_v, i, l)
	{
		const char *file = str_key(l, GMT_RK_FILE), *why = str_key(l, GMT_RK_REASON);

		detail(gate,
		       "    %s: yielded nothing (%s): the process it stands for is in no gate%s\n",
		       file ? gmt_esc(file) : "?", why ? gmt_esc(why) : "no reason given",
		       o->allow_incomplete ? " (allowed: --allow-incomplete)" : "");
	}
	bool unknown = !json_is_array(lost_v); /* an older report or summary */
	if (unknown)
		detail(gate,
		       "    the input has no lost_traces (written before the key): a trace file "
		       "that yielded nothing beside its processes would not be known here\n");
	gate->failed =
	    ((died || damaged || lost) && !o->allow_incomplete) || (dropping && !o->allow_drops);
	if (!died && !dropping && !damaged && !lost) {
		say(gate, "%s: %zu process%s exited normally, no event dropped", gate->name,
		    json_array_size(procs), json_array_size(procs) == 1 ? "" : "es");
		gate->notes = unknown;
		return;
	}
	say(gate, "%s:", gate->name);
	if (died)
		say(gate, " %zu of %zu process%s did not exit normally%s", died,
		    json_array_size(procs), json_array_size(procs) == 1 ? "" : "es",
		    o->allow_incomplete ? " (allowed)" : "");
	if (damaged)
		say(gate, "%s %zu trace%s had %" PRIu64 " unreadable line%s%s", died ? ";" : "",
		    damaged, damaged == 1 ? "" : "s", bad, bad == 1 ? "" : "s",
		    o->allow_incomplete ? " (allowed)" : "");
	if (dropping)
		say(gate, "%s %zu trace%s dropped %" PRIu64 " event%s%s",
		    died || damaged ? ";" : "", dropping, dropping == 1 ? "" : "s", dropped,
		    dropped == 1 ? "" : "s", o->allow_drops ? " (allowed)" : "");
	if (lost)
		say(gate, "%s %zu trace file%s could not be read%s",
		    died || damaged || dropping ? ";" : "", lost, lost == 1 ? "" : "s",
		    o->allow_incomplete ? " (allowed)" : "");
	if (gate->failed)
		say(gate, ": the other gates saw part of the story (--allow-incomplete, "
			  "--allow-drops)");
	gate->notes = true; /* allowed, it still names the files */
}

// --- The tensor level ---------------------------------------------------------------------
//
// PyTorch's caching allocator seen from inside (`processes[].tensors`, from the trace's block
// lines): a tensor still referenced at the end is a leak there, although the CUDA-level gates
// count the cache's segments; growth shows inside the cache before any new segment; and the
// cache's free memory in small pieces is fragmentation. A trace without block lines has no
// tensor level: these gates are skipped, saying so, rather than passing on nothing.

#define TENSOR_SKIP "skipped: no tensor level (no block lines)"

/* "process 1 (pid 4242)" for processes[@p i]. */
static const char *
who_proc(const json_t *p, size_t i, char *buf, size_t size)
{
	const json_t *pid = json_object_get(p, GMT_RK_PID);

	if (json_is_integer(pid))
		snprintf(buf, size, "process %zu (pid %lld)", i,
			 (long long)json_integer_value(pid));
	else
		snprintf(buf, size, "process %zu", i);
	return buf;
}

/* The processes of @p doc with the tensor level, and (*@p without) those without. */
static size_t
tensor_processes(const json_t *doc, size_t *without)
{
	const json_t *p;
	size_t i, n = 0;

	*without = 0;
	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		if (json_is_object(json_object_get(p, GMT_RK_TENSORS)))
			n++;
		else
			(*without)++;
	}
	return n;
}

/* The entry of `tensors.devices[]` of @p tensors for @p device, or NULL. */
static const json_t *
tensor_device(const json_t *tensors, long device)
{
	const json_t *d;
	size_t i;

	json_array_foreach(json_object_get(tensors, GMT_RK_DEVICES), i, d)
	{
		if (json_integer_value(json_object_get(d, GMT_RK_DEVICE)) == device)
			return d;
	}
	return NULL;
}

/* The devices of every process's tensor level and of the DEV= limits, sorted, no repeats. */
static size_t
tensor_devices(struct gmt_gates *gates,
	       const json_t *doc,
	       const struct gmt_dev_limit *lim,
	       size_t nlim,
	       long **out)
{
	long *v = NULL;
	size_t n = 0, i, k;
	const json_t *p, *d;

	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		json_array_foreach(
		    json_object_get(json_object_get(p, GMT_RK_TENSORS), GMT_RK_DEVICES), k, d)
		{
			if (!device_add(
				gates, &v, &n,
				(long)json_integer_value(json_object_get(d, GMT_RK_DEVICE))))
				break;
		}
	}
	limit_devices(gates, lim, nlim, &v, &n);
	*out = v;
	return devices_sorted(v, n);
}

/*
 * The first suppression of @p type that takes the tensor site @p row of process @p process: its
 * pattern found in the row's `site` or `callers` (the user's lines, "file:line in function"), or
 * in the frames of its stack where call_stacks[] has them. Counts nothing.
 */
static struct gmt_suppression *
tensor_supp(struct stacks *sl,
	    size_t process,
	    const json_t *row,
	    enum gmt_supp_type type,
	    struct gmt_suppressions *supp)
{
	struct gmt_suppression *found = NULL;
	json_t *cs = NULL;
	bool looked = false;
	const json_t *c;
	size_t k;

	for (size_t i = 0; i < supp->n; i++) {
		struct gmt_suppression *s = &supp->v[i];
		struct gmt_suppressions one = {.v = s, .n = 1};
		bool hit = false;

		if (s->type != type)
			continue;
		hit = gmt_supp_pattern_match(s->pattern, str_key(row, GMT_RK_SITE));
		json_array_foreach(json_object_get(row, GMT_RK_CALLERS), k, c)
		{
			hit = hit || gmt_supp_pattern_match(s->pattern, json_string_value(c));
		}
		if (!hit && !looked) { /* the frames are built only when the lines did not tell */
			cs = call_stack_of(sl, (json_int_t)process,
					   json_integer_value(json_object_get(row, GMT_RK_STACK)));
			looked = true;
		}
		if (hit || (cs && gmt_suppressions_match(&one, type, cs, NULL, NULL, NULL))) {
			found = s;
			break;
		}
	}
	json_decref(cs);
	return found;
}

/* A tensor site's line: its site and the lines that called it, escaped. */
static void
tensor_site_text(struct gmt_gate *gate, const json_t *row)
{
	const json_t *c;
	size_t k;

	detail(gate, "%s", gmt_esc(str_key(row, GMT_RK_SITE) ? str_key(row, GMT_RK_SITE) : "?"));
	json_array_foreach(json_object_get(row, GMT_RK_CALLERS), k, c)
	    detail(gate, "%s%s", k ? " <- " : ", called from ",
		   gmt_esc(json_string_value(c) ? json_string_value(c) : "?"));
}

/*
 * The bytes of @p process's tensors still referenced at the end of its trace on @p device
 * (`devices[].end.allocated`) less what leak: suppressions take of `live_at_exit[]` (added to
 * *@p taken and to their counters when @p count); each kept site becomes a violation line under
 * @p details when not NULL.
 */
static uint64_t
tensor_leak_kept(struct stacks *sl,
		 size_t process,
		 const json_t *tensors,
		 long device,
		 struct gmt_suppressions *supp,
		 uint64_t *taken,
		 struct gmt_gate *details)
{
	uint64_t live = gmt_json_u64(json_object_get(tensor_device(tensors, device), GMT_RK_END),
				     GMT_RK_ALLOCATED);
	uint64_t rest = 0, took = 0;
	size_t i, shown = 0, more = 0;
	const json_t *r;
	char b[GMT_SIZE_TEXT];

	json_array_foreach(json_object_get(tensors, GMT_RK_LIVE_AT_EXIT), i, r)
	{
		uint64_t bytes = gmt_json_u64(r, GMT_RK_BYTES), n = gmt_json_u64(r, GMT_RK_TENSORS);
		struct gmt_suppression *s;

		if (json_integer_value(json_object_get(r, GMT_RK_DEVICE)) != device)
			continue;
		if ((s = tensor_supp(sl, process, r, GMT_SUPP_LEAK, supp))) {
			took = gmt_sat_add(took, bytes);
			if (!details) {
				s->hits++;
				s->bytes = gmt_sat_add(s->bytes, bytes);
				s->allocations += n;
			}
			continue;
		}
		if (!details)
			continue;
		if (shown++ >= CHECK_MAX_SITES) {
			more++;
			rest += bytes;
			continue;
		}
		detail(details,
		       "    %s in %" PRIu64 " tensor%s still referenced: ", gmt_size_text(bytes, b),
		       n, n == 1 ? "" : "s");
		tensor_site_text(details, r);
		detail(details, "\n");
	}
	if (more)
		detail(details, "    %s in %zu more site%s\n", gmt_size_text(rest, b), more,
		       more == 1 ? "" : "s");
	*taken = took;
	return live - (took < live ? took : live);
}

/* One gate per device: every process's tensors live at the end on it against the limit. */
static void
tensor_leak_gate(struct gmt_gates *gates,
		 const struct gmt_check_options *o,
		 struct stacks *sl,
		 long device,
		 const struct gmt_dev_limit *lim)
{
	const json_t *doc = sl->doc;
	struct gmt_gate *gate = gate_add(gates, "max-tensor-leak device %ld", device);
	uint64_t worst = 0, worst_taken = 0, cached = 0;
	char v[GMT_SIZE_TEXT], l[GMT_SIZE_TEXT], proc[64];
	size_t i, nproc = 0, died = 0;
	const json_t *p;

	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		const json_t *t = json_object_get(p, GMT_RK_TENSORS);
		const json_t *d = tensor_device(t, device);
		uint64_t taken, kept;

		if (!d)
			continue;
		nproc++;
		died += json_is_false(json_object_get(p, GMT_RK_COMPLETE));
		cached += gmt_json_u64(json_object_get(d, GMT_RK_END), GMT_RK_RESERVED_UNALLOCATED);
		kept = tensor_leak_kept(sl, i, t, device, o->supp, &taken, NULL);
		if (kept > worst || nproc == 1) {
			worst = kept;
			worst_taken = taken;
		}
		if (kept <= lim->bytes)
			continue;
		gate->failed = true;
		detail(
		    gate,
		    "  %s: %s in tensors still referenced at the end of its trace on device %ld, "
		    "%s over the limit\n",
		    who_proc(p, i, proc, sizeof(proc)), gmt_size_text(kept, v), device,
		    gmt_size_text(kept - lim->bytes, l));
		(void)tensor_leak_kept(sl, i, t, device, o->supp, &taken, gate);
	}
	if (nproc == 0) {
		say(gate, "%s: no process used the device at the tensor level (limit %s)",
		    gate->name, gmt_size_text(lim->bytes, l));
		return;
	}
	say(gate, "%s: tensors still referenced at the end %s %s limit %s", gate->name,
	    gmt_size_text(worst, v), gate->failed ? ">" : "<=", gmt_size_text(lim->bytes, l));
	if (nproc > 1)
		say(gate, " (largest of %zu processes)", nproc);
	if (worst_taken)
		say(gate, " (%s suppressed)", gmt_size_text(worst_taken, v));
	if (cached)
		say(gate, " (%s cached but free at the end, not counted: empty_cache() returns it)",
		    gmt_size_text(cached, v));
	if (died)
		say(gate,
		    " (%zu process%s did not exit normally: what was live when %s trace%s ended)",
		    died, died == 1 ? "" : "es", died == 1 ? "its" : "their", died == 1 ? "" : "s");
}

static void
tensor_leak_gates(struct gmt_gates *gates, const struct gmt_check_options *o, struct stacks *sl)
{
	const json_t *doc = sl->doc;
	long *devices;
	size_t n;

	if (o->ntensor_leaks == 0)
		return;
	n = tensor_devices(gates, doc, o->tensor_leaks, o->ntensor_leaks, &devices);
	for (size_t i = 0; i < n; i++) {
		const struct gmt_dev_limit *lim =
		    limit_for(o->tensor_leaks, o->ntensor_leaks, devices[i]);

		if (lim)
			tensor_leak_gate(gates, o, sl, devices[i], lim);
	}
	free(devices);
}

/* Growing tensor sites (`tensors.growth[]`, last − first) against one limit. */
static void
tensor_growth_gate(struct gmt_gates *gates, const struct gmt_check_options *o, struct stacks *sl)
{
	const json_t *doc = sl->doc;
	struct gmt_gate *gate;
	uint64_t largest = 0, taken = 0;
	size_t i, k, over = 0;
	const json_t *p, *r;
	char v[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT], b[GMT_SIZE_TEXT], s[GMT_SIZE_TEXT], proc[64];

	if (!o->tensor_growth_set)
		return;
	gate = gate_add(gates, "max-tensor-growth");
	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		const json_t *t = json_object_get(p, GMT_RK_TENSORS);

		json_array_foreach(json_object_get(t, GMT_RK_GROWTH), k, r)
		{
			uint64_t first = gmt_json_u64(r, GMT_RK_FIRST),
				 last = gmt_json_u64(r, GMT_RK_LAST);
			uint64_t grew = last > first ? last - first : 0;
			struct gmt_suppression *sp;

			if ((sp = tensor_supp(sl, i, r, GMT_SUPP_GROWTH, o->supp))) {
				sp->hits++;
				sp->bytes = gmt_sat_add(sp->bytes, grew);
				taken = gmt_sat_add(taken, grew);
				continue;
			}
			if (grew > largest)
				largest = grew;
			if (grew <= o->max_tensor_growth)
				continue;
			over++;
			detail(gate,
			       "    grew %s (%s -> %s over %" PRIu64
			       " samples, about +%s a step, rose "
			       "in %" PRIu64 " of %" PRIu64 " intervals) on device %lld, %s: ",
			       gmt_size_text(grew, v), gmt_size_text(first, a),
			       gmt_size_text(last, b), gmt_json_u64(t, GMT_RK_GROWTH_SAMPLES),
			       gmt_size_text(gmt_json_u64(r, GMT_RK_PER_STEP), s),
			       gmt_json_u64(r, GMT_RK_RISES), gmt_json_u64(r, GMT_RK_INTERVALS),
			       (long long)json_integer_value(json_object_get(r, GMT_RK_DEVICE)),
			       who_proc(p, i, proc, sizeof(proc)));
			tensor_site_text(gate, r);
			detail(gate, "\n");
		}
	}
	gate->failed = over > 0;
	if (over)
		say(gate, "%s: %zu tensor site%s grew by more than %s", gate->name, over,
		    over == 1 ? "" : "s", gmt_size_text(o->max_tensor_growth, v));
	else
		say(gate, "%s: largest growth of a tensor site %s <= limit %s", gate->name,
		    gmt_size_text(largest, v), gmt_size_text(o->max_tensor_growth, a));
	if (taken)
		say(gate, " (%s suppressed)", gmt_size_text(taken, v));
}

/* One gate per device: the highest point of each process's fragmentation series on it. */
static void
frag_gate(struct gmt_gates *gates, const json_t *doc, long device, const struct gmt_dev_limit *lim)
{
	struct gmt_gate *gate = gate_add(gates, "max-fragmentation device %ld", device);
	double worst = 0;
	size_t i, k, nproc = 0;
	const json_t *p, *pt;
	char u[GMT_SIZE_TEXT], f[GMT_SIZE_TEXT], proc[64];

	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		const json_t *fr =
		    json_object_get(tensor_device(json_object_get(p, GMT_RK_TENSORS), device),
				    GMT_RK_FRAGMENTATION);
		double max = json_number_value(json_object_get(fr, GMT_RK_MAX));

		if (!fr)
			continue;
		if (max > worst || nproc == 0)
			worst = max;
		nproc++;
		if (max <= lim->fraction)
			continue;
		gate->failed = true;
		/* the first point at the maximum: when, and how the free memory lay then */
		json_array_foreach(json_object_get(fr, GMT_RK_SERIES), k, pt)
		{
			if (json_number_value(json_array_get(pt, 1)) < max)
				continue;
			detail(
			    gate,
			    "  %s: %.3f at %.6f s on device %ld (%s reserved but unallocated, the "
			    "largest free block %s), over the limit %.3f\n",
			    who_proc(p, i, proc, sizeof(proc)), max,
			    json_number_value(json_array_get(pt, 0)), device,
			    gmt_size_text((uint64_t)json_integer_value(json_array_get(pt, 2)), u),
			    gmt_size_text((uint64_t)json_integer_value(json_array_get(pt, 3)), f),
			    lim->fraction);
			break;
		}
	}
	if (nproc == 0) {
		say(gate, "%s: no process used the device at the tensor level (limit %.3f)",
		    gate->name, lim->fraction);
		return;
	}
	say(gate,
	    "%s: fragmentation of the cache at most %.3f %s limit %.3f (1 - largest free block / "
	    "reserved-unallocated bytes)",
	    gate->name, worst, gate->failed ? ">" : "<=", lim->fraction);
	if (nproc > 1)
		say(gate, " (largest of %zu processes)", nproc);
}

static void
frag_gates(struct gmt_gates *gates, const struct gmt_check_options *o, const json_t *doc)
{
	long *devices;
	size_t n;

	if (o->nfrags == 0)
		return;
	n = tensor_devices(gates, doc, o->frags, o->nfrags, &devices);
	for (size_t i = 0; i < n; i++) {
		const struct gmt_dev_limit *lim = limit_for(o->frags, o->nfrags, devices[i]);

		if (lim)
			frag_gate(gates, doc, devices[i], lim);
	}
	free(devices);
}

/*
 * The tensor gates asked for; each one skipped, saying so, when no process has the tensor
 * level. When some have it, a note names how many do not.
 */
static void
tensor_gates(struct gmt_gates *gates, const struct gmt_check_options *o, struct stacks *sl)
{
	const json_t *doc = sl->doc;
	const char *asked[3] = {o->ntensor_leaks ? "max-tensor-leak" : NULL,
				o->tensor_growth_set ? "max-tensor-growth" : NULL,
				o->nfrags ? "max-fragmentation" : NULL};
	size_t without, with = tensor_processes(doc, &without);

	if (!asked[0] && !asked[1] && !asked[2])
		return;
	if (!with) {
		for (size_t i = 0; i < 3; i++) {
			struct gmt_gate *g;

			if (!asked[i])
				continue;
			g = gate_add(gates, "%s", asked[i]);
			g->skipped = true;
			say(g, "%s: " TENSOR_SKIP, asked[i]);
		}
		return;
	}
	if (without)
		note(gates,
		     "note: %zu of %zu processes have no tensor level (no block lines): the tensor "
		     "gates judge the others\n",
		     without, with + without);
	tensor_leak_gates(gates, o, sl);
	tensor_growth_gate(gates, o, sl);
	frag_gates(gates, o, doc);
}

// --- Baseline -----------------------------------------------------------------------------

/* Compare one figure with the baseline's. */
static void
increase_gate(struct gmt_gates *gates,
	      const struct gmt_check_options *o,
	      const char *name,
	      uint64_t before,
	      uint64_t after)
{
	struct gmt_gate *gate = gate_add(gates, "%s", name);
	char b[GMT_SIZE_TEXT], a[GMT_SIZE_TEXT];
	double pct = before ? ((double)after - (double)before) * 100.0 / (double)before : 0.0;

	gate->failed = after > before && (before == 0 || pct > o->max_increase);
	say(gate, "%s: %s -> %s", name, gmt_size_text(before, b), gmt_size_text(after, a));
	if (before)
		say(gate, ", %+.1f%%", pct);
	else if (after)
		say(gate, ", up from nothing");
	say(gate, " (limit +%g%%)", o->max_increase);
}

/*
 * The baseline's figures against the new ones, as the report states them: peaks[].bytes of the
 * same process index and device, and summary.leaked_bytes (suppressions are not applied here: a
 * known leak counts on both sides, so only its increase shows).
 */
static void
baseline_gates(struct gmt_gates *gates,
	       const struct gmt_check_options *o,
	       const json_t *doc,
	       const json_t *base)
{
	const json_t *p;
	size_t i;

	json_array_foreach(json_object_get(doc, GMT_RK_PEAKS), i, p)
	{
		json_int_t proc = json_integer_value(json_object_get(p, GMT_RK_PROCESS));
		json_int_t dev = json_integer_value(json_object_get(p, GMT_RK_DEVICE));
		const json_t *bp = entry_of(base, GMT_RK_PEAKS, proc, GMT_RK_DEVICE, dev);
		char name[96];

		if (!bp) {
			note(gates, "note: process %lld device %lld has no peak in the baseline\n",
			     (long long)proc, (long long)dev);
			continue;
		}
		snprintf(name, sizeof(name), "baseline peak process %lld device %lld",
			 (long long)proc, (long long)dev);
		increase_gate(gates, o, name, gmt_json_u64(bp, GMT_RK_BYTES),
			      gmt_json_u64(p, GMT_RK_BYTES));
	}
	increase_gate(gates, o, "baseline leaked-bytes",
		      gmt_json_u64(json_object_get(base, GMT_RK_SUMMARY), GMT_RK_LEAKED_BYTES),
		      gmt_json_u64(json_object_get(doc, GMT_RK_SUMMARY), GMT_RK_LEAKED_BYTES));
	/* The tensor level, per process with it: PyTorch's peak of memory_allocated(), which the
	 * cache's segmenting does not move (the peak held above does, with the allocator's settings
	 * and fragmentation) */
	const json_t *bprocs = json_object_get(base, GMT_RK_PROCESSES);
	json_array_foreach(json_object_get(doc, GMT_RK_PROCESSES), i, p)
	{
		const json_t *t = json_object_get(p, GMT_RK_TENSORS);
		const json_t *bt = json_object_get(json_array_get(bprocs, i), GMT_RK_TENSORS);
		char name[96];

		if (!json_is_object(t))
			continue;
		if (!json_is_object(bt)) {
			note(gates, "note: process %zu has no tensor level in the baseline\n", i);
			continue;
		}
		snprintf(name, sizeof(name), "baseline tensor peak process %zu", i);
		increase_gate(gates, o, name,
			      gmt_json_u64(json_object_get(bt, GMT_RK_PEAK), GMT_RK_ALLOCATED),
			      gmt_json_u64(json_object_get(t, GMT_RK_PEAK), GMT_RK_ALLOCATED));
	}
}

int
gmt_check_run(struct gmt_gates *gates,
	      const struct gmt_check_options *o,
	      const json_t *doc,
	      const json_t *base)
{
	struct stacks sl = {.doc = doc, .src = o->stacks};
	struct leak_view lv = leak_view(&sl, o->supp, true, o->count_cached, o->count_libraries);

	*gates = (struct gmt_gates){0};
	if (!lv.sites) {
		free(sl.index);
		return -ENOMEM;
	}

	integrity_gate(gates, o, doc);
	leak_gates(gates, o, doc, &lv);
	free(lv.sites);
	peak_gates(gates, o, &sl);
	growth_gate(gates, o, &sl);
	failed_gate(gates, o, doc);
	tensor_gates(gates, o, &sl);
	free(sl.index);
	if (base)
		baseline_gates(gates, o, doc, base);
	for (size_t i = 0; i < gates->n; i++)
		gates->oom |= gates->v[i].oom;
	return gates->oom ? -ENOMEM : 0;
}
