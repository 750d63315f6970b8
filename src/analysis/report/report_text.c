/*
 * @brief The text report (`gpumemtrace report`, the default format) and `run`'s summary lines.
 *
 * Written for a person reading a terminal: the first lines say how much was read and what the
 * traces could see (coverage), the next lines answer "how much device memory at most, what was
 * never freed, what failed", and anything that makes those answers incomplete (dropped events, a
 * process that died, unreadable lines) is said before the numbers it affects. Sizes are binary
 * units; the JSON report has the exact bytes. The device sections are in report_devices.c.
 */
#include "analysis/report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report/frames.h"
#include "analysis/report/nomem.h"
#include "analysis/report/report_tensors.h"
#include "analysis/report/report_text.h"
#include "analysis/report/sites.h"
#include "analysis/report/textfmt.h"
#include "analysis/report/units.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/sat.h"

#define TEXT_CALLERS 5 /* callers shown under a site reached from several */

static void
print_died(FILE *out, const struct gmt_trace *t)
{
	char cmd[80];

	gmt_report_command(t, cmd, sizeof(cmd));
	if (t->pid >= 0)
		fprintf(out, "process %lld (%s)", t->pid, cmd);
	else
		fprintf(out, "the process of %s", gmt_esc(t->path));
	if (t->ended_by[0])
		fprintf(out,
			" was ended by %s at %.3f s (the trace is whole up to it); live "
			"allocations at that point are reported, not leaks at exit\n",
			t->ended_by, gmt_trace_time_s(t, t->last_ts));
	else if (t->cut_by_disk) /* the reader's note on stderr says why it thinks so */
		fprintf(out,
			": the trace was cut short at %.3f s, most likely by a full disk (the "
			"process may have run on untraced); live allocations at that point are "
			"reported, not leaks at exit\n",
			gmt_trace_time_s(t, t->last_ts));
	else
		fprintf(out,
			" did not exit normally: the trace ends at %.3f s; live allocations at "
			"that point are reported, not leaks at exit\n",
			gmt_trace_time_s(t, t->last_ts));
}

static void
print_process_row(FILE *out, const struct gmt_process *p)
{
	const struct gmt_model *m = p->model;
	const struct gmt_trace *t = m->trace;
	const struct gmt_device_stats *top = NULL;
	char cmd[64], pid[64], b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];

	gmt_report_command(t, cmd, sizeof(cmd));
	gmt_text_process_name(t, pid, sizeof(pid));
	for (size_t d = 0; d < m->ndevices; d++)
		if (!top || m->devices[d].peak.bytes > top->peak.bytes)
			top = &m->devices[d];
	fprintf(out, "  pid %s", pid);
	if (t->has_rank && t->rank >= 0)
		fprintf(out, " rank %lld", t->rank);
	fprintf(out, ": %" PRIu64 " events", gmt_model_events(m));
	if (t->dropped)
		fprintf(out, ", %" PRIu64 " dropped", t->dropped);
	if (top && top->peak.bytes)
		fprintf(out, ", peak %s held on device %d", gmt_format_bytes(top->peak.bytes, b1),
			top->device);
	else
		fprintf(out, ", no device memory held");
	if (t->complete) {
		struct gmt_cached c[GMT_CACHE_COUNT];

		gmt_process_cached_at_end(p, c);
		fprintf(out, ", leaked %s at exit",
			gmt_format_bytes(m->live_end_bytes - c[GMT_CACHE_NONE].bytes, b2));
		if (c[GMT_CACHE_NONE].allocations)
			fprintf(out, " (%s more held by caching allocators)",
				gmt_format_bytes(c[GMT_CACHE_NONE].bytes, b2));
	} else if (t->ended_by[0])
		fprintf(out, ", ended by %s at %.3f s with %s live", t->ended_by,
			gmt_trace_time_s(t, t->last_ts), gmt_format_bytes(m->live_end_bytes, b2));
	else
		fprintf(out, ", died at %.3f s with %s live", gmt_trace_time_s(t, t->last_ts),
			gmt_format_bytes(m->live_end_bytes, b2));
	if (m->nfailed_counted)
		fprintf(out, ", %zu failed %s", m->nfailed_counted,
			gmt_text_plural(m->nfailed_counted, "allocation", "allocations"));
	fprintf(out, "  [%s]\n", cmd);
}

/* Bounded traces (GPUMEMTRACE_BOUNDED=1): what they left out, and what that changes. */
static void
print_bounded(FILE *out, const struct gmt_process *procs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct gmt_trace *t = procs[i].model->trace;
		char pid[64];

		if (!t->bounded)
			continue;
		gmt_text_process_name(t, pid, sizeof(pid));
		char blocks[64] = "";
		if (t->elided_blocks)
			snprintf(blocks, sizeof(blocks), " (and %" PRIu64 " PyTorch blocks)",
				 t->elided_blocks);
		fprintf(
		    out,
		    "bounded trace%s%s (GPUMEMTRACE_BOUNDED=1): %" PRIu64
		    " allocations%s made and freed within a bucket were left out and counted per "
		    "site (buckets of %" PRIu64 " ms); peaks, leaks, growth, OOM forensics and "
		    "allocation counts are exact, the timeline shows only what was written\n",
		    n > 1 ? " of pid " : "", n > 1 ? pid : "", t->elided_allocations, blocks,
		    t->bucket_ms);
		if (t->bounded_late)
			fprintf(out,
				"  note: %" PRIu64
				" events reached the writer after their bucket was "
				"cut: the peaks may not be exact\n",
				t->bounded_late);
	}
}

// --- coverage: what the traces could see --------------------------------------------------------

static bool
same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* "full (CUPTI): ..." and, when CUPTI was not used, why: one or two lines. */
static void
print_coverage_of(FILE *out, const struct gmt_trace *t)
{
	if (!t->coverage)
		fprintf(out, "unknown (the trace has no header saying it)\n");
	else if (strcmp(t->coverage, "full") == 0)
		fprintf(out, "full (CUPTI): runtime and driver API calls of the program and of "
			     "every library, static cudart and VMM included\n");
	else if (strcmp(t->coverage, "runtime API only") == 0)
		fprintf(out,
			"runtime API only (LD_PRELOAD of the shared libcudart): not seen are the "
			"driver API (cuMemAlloc, cuMemCreate/cuMemMap as used by PyTorch's "
			"expandable segments and NCCL) and programs or libraries that link cudart "
			"statically (nvcc's default, cuBLAS, cuDNN, NCCL)\n");
	else
		fprintf(out, "%s\n", gmt_esc(t->coverage));
	if (t->coverage_reason)
		fprintf(out, "  why not CUPTI: %s\n", gmt_esc(t->coverage_reason));
}

static void
print_coverage(FILE *out, const struct gmt_process *procs, size_t n)
{
	bool same = true;
	char pid[64];

	for (size_t i = 1; i < n; i++) {
		const struct gmt_trace *a = procs[0].model->trace, *b = procs[i].model->trace;

		if (!same_str(a->coverage, b->coverage) ||
		    !same_str(a->coverage_reason, b->coverage_reason))
			same = false;
	}
	if (same) {
		fprintf(out, "coverage: ");
		print_coverage_of(out, procs[0].model->trace);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		gmt_text_process_name(procs[i].model->trace, pid, sizeof(pid));
		fprintf(out, "coverage of pid %s: ", pid);
		print_coverage_of(out, procs[i].model->trace);
	}
}

// --- call sites ---------------------------------------------------------------------------------

/* The process, when the report has several: ", pid 4242". */
static void
process_suffix(const struct gmt_site *g, bool several, char *buf, size_t max)
{
	char pid[64];

	buf[0] = '\0';
	if (several) {
		gmt_text_process_name(g->p->model->trace, pid, sizeof(pid));
		snprintf(buf, max, ", pid %s", pid);
	}
}

/*
 * Where a group's allocations come from: "at train.py:42 in step (stack 3)", with the stack ids
 * (or their number) and, for several processes, the pid.
 */
static void
print_where(FILE *out, const struct gmt_site *g, bool several, const char *extra)
{
	char frame[512], proc[96];
	const struct gmt_site_stack *s0 = &g->stacks[0];

	process_suffix(g, several, proc, sizeof(proc));
	if (!g->frame) {
		if (g->nstacks == 1 && s0->stack)
			fprintf(out,
				"at an unknown call site (stack %" PRIu32 " not in the trace%s%s)",
				s0->stack, extra, proc);
		else if (g->nstacks == 1)
			fprintf(out, "at an unknown call site (no stack%s%s)", extra, proc);
		else
			fprintf(out, "at an unknown call site (no stack or not in the trace%s%s)",
				extra, proc);
		return;
	}
	gmt_cframe_text(g->frame, frame, sizeof(frame));
	fprintf(out, "at %s", gmt_esc(frame));
	if (g->cs && g->cs->pystate == GMT_PYSTATE_EMPTY)
		fprintf(out, " %s", GMT_PYSTATE_EMPTY_LABEL);
	if (g->nstacks == 1)
		fprintf(out, " (stack %" PRIu32 "%s%s)", s0->stack, extra, proc);
	else
		fprintf(out, " (%zu stacks%s%s)", g->nstacks, extra, proc);
}

/* One symbolized stack, outermost frame first, the call last, one line each. */
static void
print_stack_frames(FILE *out,
		   const struct gmt_site *g,
		   const struct gmt_cstack *cs,
		   const char *indent)
{
	char frame[1024], call[160];
	bool first = true;

	if (cs->pystate == GMT_PYSTATE_EMPTY) {
		fprintf(out, "%s%s\n", indent, GMT_PYSTATE_EMPTY_LABEL);
		first = false;
	}
	for (uint32_t i = cs->nframes; i-- > 0;) {
		const struct gmt_cframe *f = gmt_cstack_frame(cs, i);

		if (f->hidden)
			continue;
		gmt_cframe_text(f, frame, sizeof(frame));
		fprintf(out, "%s%s%s%s\n", indent, first ? "" : "→ ", gmt_esc(frame),
			f->inlined ? " (inlined)" : "");
		first = false;
	}
	gmt_report_call(g->p->model->trace, g->api, g->driver, call, sizeof(call));
	fprintf(out, "%s%s%s\n", indent, first ? "" : "→ ", call);
}

/*
 * `--stack full`: the group's stacks, largest first, those that read the same (return addresses
 * on one line, differing only in hidden frames) merged; a heading per stack only when there are
 * several.
 */
static void
print_group_stacks(FILE *out, const struct gmt_site *g, const char *what_one, const char *what_many)
{
	struct gmt_site_stack *shown = calloc(g->nstacks ? g->nstacks : 1, sizeof(*shown));
	size_t nshown = 0;
	char b[GMT_BYTES_BUF];

	if (!shown) {
		gmt_nomem();
		return;
	}
	for (size_t i = 0; i < g->nstacks; i++) {
		size_t k;

		if (!g->stacks[i].cs)
			continue;
		for (k = 0; k < nshown; k++)
			if (gmt_cstack_equal(shown[k].cs, g->stacks[i].cs))
				break;
		if (k == nshown)
			shown[nshown++] = g->stacks[i];
		else {
			shown[k].bytes = gmt_sat_add(shown[k].bytes, g->stacks[i].bytes);
			shown[k].count += g->stacks[i].count;
		}
	}
	for (size_t k = 0; k < nshown && k < GMT_REPORT_MAX_STACKS; k++) {
		if (nshown > 1)
			fprintf(out, "      %s in %" PRIu64 " %s (stack %" PRIu32 "):\n",
				gmt_format_bytes(shown[k].bytes, b), shown[k].count,
				gmt_text_plural(shown[k].count, what_one, what_many),
				shown[k].stack);
		print_stack_frames(out, g, shown[k].cs, nshown > 1 ? "        " : "      ");
	}
	if (nshown > GMT_REPORT_MAX_STACKS)
		fprintf(out, "      ... and %zu more stacks (see --format json)\n",
			nshown - GMT_REPORT_MAX_STACKS);
	free(shown);
}

/* A site reached from several callers (an allocation helper): each caller with its share, so the
 * leak at one line is told from the weights at another. */
static void
print_callers(FILE *out, const struct gmt_site *g)
{
	struct gmt_site_caller c[TEXT_CALLERS];
	size_t n = gmt_site_callers(g, c, TEXT_CALLERS);
	char b[GMT_BYTES_BUF], frame[512];

	if (n < 2)
		return;
	for (size_t i = 0; i < n && i < TEXT_CALLERS; i++) {
		if (c[i].frame)
			gmt_cframe_text(c[i].frame, frame, sizeof(frame));
		fprintf(out, "      from %s: %s in %" PRIu64 " %s\n",
			c[i].frame ? gmt_esc(frame) : "(no caller in the stack)",
			gmt_format_bytes(c[i].bytes, b), c[i].count,
			gmt_text_plural(c[i].count, "allocation", "allocations"));
	}
	if (n > TEXT_CALLERS)
		fprintf(out, "      ... %zu more callers (see --format json)\n", n - TEXT_CALLERS);
}

static void
print_site_row(FILE *out,
	       const struct gmt_site *g,
	       bool several,
	       const char *extra,
	       const struct gmt_report_options *opt)
{
	char b[GMT_BYTES_BUF], call[160];

	gmt_report_call(g->p->model->trace, g->api, g->driver, call, sizeof(call));
	fprintf(out, "  %s  %" PRIu64 " %s  %s  %s  ", gmt_format_bytes(g->bytes, b), g->count,
		gmt_text_plural(g->count, "allocation", "allocations"), call,
		gmt_kind_str((enum gmt_tkind)g->kind));
	print_where(out, g, several, extra);
	fprintf(out, "\n");
	print_callers(out, g);
	if (opt->stacks == GMT_STACKS_FULL)
		print_group_stacks(out, g, "allocation", "allocations");
}

// --- live at the end: leaks, or the state of a process that died --------------------------------

/* Which part of a group of counted kinds a list shows (who holds it: explain.c). */
enum live_part {
	PART_ALL,     /**< every stack */
	PART_OWN,     /**< the stacks of no holding cache and no library: the program's own */
	PART_CACHED,  /**< the stacks of a caching allocator that keeps its memory */
	PART_LIBRARY, /**< the stacks of a CUDA library's handles */
};

static bool
in_part(const struct gmt_site *g, uint32_t stack, enum live_part part)
{
	static const enum gmt_holder holder[] = {
	    [PART_OWN] = GMT_HOLDER_PROGRAM,
	    [PART_CACHED] = GMT_HOLDER_CACHE,
	    [PART_LIBRARY] = GMT_HOLDER_LIBRARY,
	};

	return part == PART_ALL || gmt_process_holder(g->p, stack, g->kind) == holder[part];
}

/*
 * @p g with only the stacks of @p part, into @p view (its stacks in @p buf, room for g->nstacks):
 * false when none is left. A call site reached through a cache and through another path (rare)
 * is listed in both lists, each with its own bytes.
 */
static bool
group_part(const struct gmt_site *g,
	   enum live_part part,
	   struct gmt_site *view,
	   struct gmt_site_stack *buf)
{
	*view = *g;
	if (part == PART_ALL)
		return true;
	view->stacks = buf;
	view->nstacks = 0;
	view->bytes = view->count = 0;
	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gmt_site_stack *st = &g->stacks[i];

		if (!in_part(g, st->stack, part))
			continue;
		buf[view->nstacks++] = *st;
		view->bytes = gmt_sat_add(view->bytes, st->bytes);
		view->count += st->count;
	}
	return view->nstacks > 0;
}

/* A group's part (group_part()) and where the group was in its list. */
struct part_row {
	struct gmt_site view;
	size_t index;
};

/* Largest part first; equal ones in the order of their groups. */
static int
cmp_part_row(const void *pa, const void *pb)
{
	const struct part_row *a = pa, *b = pb;

	if (a->view.bytes != b->view.bytes)
		return a->view.bytes > b->view.bytes ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * The sites of the processes whose trace is (or is not) @p complete, of counted kinds (the
 * @p part of them) or of the others, largest first. Returns how many there were.
 */
static size_t
print_sites(FILE *out,
	    const struct gmt_sites *sites,
	    size_t n,
	    bool complete,
	    bool counted,
	    enum live_part part,
	    const struct gmt_report_options *opt)
{
	struct part_row *rows = gmt_realloc_array(NULL, sites->n, sizeof(*rows));
	size_t nrows = 0;
	uint64_t rest_bytes = 0;
	char b[GMT_BYTES_BUF];

	if (!rows) {
		gmt_nomem();
		return 0;
	}
	for (size_t i = 0; i < sites->n; i++) {
		const struct gmt_site *g = &sites->v[i];
		struct gmt_site_stack *buf;

		if (g->p->model->trace->complete != complete ||
		    gmt_kind_counted((enum gmt_tkind)g->kind) != counted)
			continue;
		if (!(buf = gmt_realloc_array(NULL, g->nstacks, sizeof(*buf)))) {
			gmt_nomem();
			break;
		}
		if (!group_part(g, counted ? part : PART_ALL, &rows[nrows].view, buf)) {
			free(buf);
			continue;
		}
		if (rows[nrows].view.stacks != buf)
			free(buf); /* the whole group: its own stacks are shown */
		rows[nrows++].index = i;
	}
	if (nrows > 1)
		qsort(rows, nrows, sizeof(*rows), cmp_part_row);
	for (size_t i = 0; i < nrows; i++) {
		if (i == 0 && !counted)
			fprintf(out,
				"%s, not counted as memory (address space, views, other processes' "
				"memory, host memory locked in place):\n",
				complete ? "also not freed at exit"
					 : "also live when the trace ends");
		if (i < GMT_REPORT_MAX_ROWS)
			print_site_row(out, &rows[i].view, n > 1, "", opt);
		else
			rest_bytes = gmt_sat_add(rest_bytes, rows[i].view.bytes);
		if (rows[i].view.stacks != sites->v[rows[i].index].stacks)
			free(rows[i].view.stacks);
	}
	if (nrows > GMT_REPORT_MAX_ROWS)
		fprintf(out, "  ... and %zu more call sites with %s (see --format json)\n",
			nrows - GMT_REPORT_MAX_ROWS, gmt_format_bytes(rest_bytes, b));
	free(rows);
	return nrows;
}

/* Call-site groups of counted kinds, the @p part of them, in processes whose trace is (or is
 * not) @p complete. */
static size_t
count_sites(const struct gmt_sites *sites, bool complete, enum live_part part)
{
	size_t k = 0;

	for (size_t i = 0; i < sites->n; i++) {
		const struct gmt_site *g = &sites->v[i];
		bool want = part == PART_ALL;

		if (g->p->model->trace->complete != complete ||
		    !gmt_kind_counted((enum gmt_tkind)g->kind))
			continue;
		for (size_t s = 0; !want && s < g->nstacks; s++)
			want = in_part(g, g->stacks[s].stack, part);
		k += want;
	}
	return k;
}

/* Whether a process whose trace is (or is not) @p complete left anything live, of any kind. */
static bool
any_live(const struct gmt_process *procs, size_t n, bool complete)
{
	for (size_t i = 0; i < n; i++)
		if (procs[i].model->trace->complete == complete && procs[i].model->nleaks)
			return true;
	return false;
}

/*
 * What is live at exit but not a leak, by holder: "held by caching allocators at exit ...: 3.5
 * GiB in 130 allocations from 2 call sites (PyTorch 3.5 GiB)", or by CUDA libraries for their
 * handles, and their sites; nothing when they held nothing. @p held: per holder, [0] the sum.
 */
static void
print_held_apart(FILE *out,
		 const struct gmt_sites *sites,
		 size_t n,
		 enum live_part part,
		 const char *what,
		 const struct gmt_cached *held,
		 int nheld,
		 const char *(*label)(int h),
		 const struct gmt_report_options *opt)
{
	size_t nsites = count_sites(sites, true, part);
	const char *sep = " (";
	char b[GMT_BYTES_BUF];

	if (!held[0].allocations)
		return;
	fprintf(out, "%s: %s in %" PRIu64 " %s from %zu call %s", what,
		gmt_format_bytes(held[0].bytes, b), held[0].allocations,
		gmt_text_plural(held[0].allocations, "allocation", "allocations"), nsites,
		gmt_text_plural(nsites, "site", "sites"));
	for (int h = 1; h < nheld; h++) {
		if (!held[h].allocations)
			continue;
		fprintf(out, "%s%s %s", sep, label(h), gmt_format_bytes(held[h].bytes, b));
		sep = ", ";
	}
	fprintf(out, ")\n");
	print_sites(out, sites, n, true, true, part, opt);
}

static const char *
cache_label(int h)
{
	return gmt_cache_label((enum gmt_cache)h);
}

static const char *
library_label(int h)
{
	return gmt_library_label((enum gmt_library)h);
}

static void
print_leaks(FILE *out,
	    const struct gmt_process *procs,
	    size_t n,
	    const struct gmt_totals *tot,
	    const struct gmt_report_options *opt)
{
	char b[GMT_BYTES_BUF];
	struct gmt_sites sites;
	size_t nitems, nsites;
	struct gmt_site_item *items = gmt_sites_leak_items(procs, n, &nitems);

	gmt_sites_group(items, nitems, GMT_GROUP_BY_BYTES, &sites);
	if (tot->processes > tot->died) {
		nsites = count_sites(&sites, true, PART_OWN);
		if (tot->leak_sites == 0 && !any_live(procs, n, true))
			fprintf(out, "leaked at exit: nothing (every allocation was freed)\n");
		else if (tot->leak_sites == 0 && (tot->cached[GMT_CACHE_NONE].allocations ||
						  tot->library[GMT_LIB_NONE].allocations))
			fprintf(out, "leaked at exit: nothing of the program's own\n");
		else if (tot->leak_sites == 0)
			fprintf(out, "leaked at exit: no memory\n");
		else
			fprintf(
			    out, "leaked at exit: %s in %" PRIu64 " %s from %zu call %s\n",
			    gmt_format_bytes(tot->leaked_bytes, b), tot->leaked_allocations,
			    gmt_text_plural(tot->leaked_allocations, "allocation", "allocations"),
			    nsites, gmt_text_plural(nsites, "site", "sites"));
		print_sites(out, &sites, n, true, true, PART_OWN, opt);
		print_held_apart(out, &sites, n, PART_CACHED,
				 "held by caching allocators at exit (their cache, kept until the "
				 "process ends: not leaks; check --count-cached counts them)",
				 tot->cached, GMT_CACHE_COUNT, cache_label, opt);
		print_held_apart(
		    out, &sites, n, PART_LIBRARY,
		    "held by CUDA libraries for their handles at exit (workspaces kept "
		    "while a handle lives: not leaks; check --count-libraries counts "
		    "them)",
		    tot->library, GMT_LIB_COUNT, library_label, opt);
		print_sites(out, &sites, n, true, false, PART_ALL, opt);
	}
	if (tot->died) {
		nsites = count_sites(&sites, false, PART_ALL);
		if (tot->live_at_end_sites == 0 && !any_live(procs, n, false))
			fprintf(out, "live when the trace ends: nothing\n");
		else if (tot->live_at_end_sites == 0)
			fprintf(out, "live when the trace ends: no memory\n");
		else
			fprintf(out,
				"live when the trace ends (process died, not leaks): %s in %" PRIu64
				" %s from %zu call %s\n",
				gmt_format_bytes(tot->live_at_end_bytes, b),
				tot->live_at_end_allocations,
				gmt_text_plural(tot->live_at_end_allocations, "allocation",
						"allocations"),
				nsites, gmt_text_plural(nsites, "site", "sites"));
		print_sites(out, &sites, n, false, true, PART_ALL, opt);
		print_sites(out, &sites, n, false, false, PART_ALL, opt);
	}
	gmt_sites_free(&sites);
	free(items);
}

// --- who held the memory at the peak ------------------------------------------------------------

/*
 * The allocations live at each device's peak, by call site. Left out when no stack of them is
 * known: a list of "unknown call site" lines would say nothing the peak line did not.
 */
static void
print_peak_sites(FILE *out,
		 const struct gmt_process *procs,
		 size_t n,
		 const struct gmt_report_options *opt)
{
	struct gmt_sites sites;
	size_t nitems, ndev = 0, rows = 0;
	struct gmt_site_item *items = gmt_sites_peak_items(procs, n, &nitems);
	bool known = false;
	uint64_t rest = 0;
	char b[GMT_BYTES_BUF], extra[64];

	gmt_sites_group(items, nitems, GMT_GROUP_BY_BYTES, &sites);
	for (size_t i = 0; i < sites.n; i++)
		known |= sites.v[i].frame != NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t d = 0; d < procs[i].model->ndevices; d++)
			ndev += procs[i].model->devices[d].npeak_sites != 0;
	if (known) {
		fprintf(out, "held at the peak, by call site:\n");
		for (size_t i = 0; i < sites.n; i++) {
			if (rows++ >= GMT_REPORT_MAX_ROWS) {
				rest += sites.v[i].bytes;
				continue;
			}
			extra[0] = '\0';
			if (ndev > 1)
				snprintf(extra, sizeof(extra), ", device %d", sites.v[i].device);
			print_site_row(out, &sites.v[i], n > 1, extra, opt);
		}
		if (rows > GMT_REPORT_MAX_ROWS)
			fprintf(out, "  ... and %zu more call sites with %s (see --format json)\n",
				rows - GMT_REPORT_MAX_ROWS, gmt_format_bytes(rest, b));
	}
	gmt_sites_free(&sites);
	free(items);
}

// --- failed allocations -------------------------------------------------------------------------

static void
print_failed_one(
    FILE *out, const struct gmt_model *m, const struct gmt_trace_event *ev, bool when, bool several)
{
	const struct gmt_trace *t = m->trace;
	char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF], pid[64], call[160];

	gmt_report_call(t, ev->api, ev->driver, call, sizeof(call));
	fprintf(out, "%s %s on device %d", call, gmt_format_bytes(ev->size, b1), ev->device);
	if (when)
		fprintf(out, " at %.3f s (seq %" PRIu64 ")", gmt_trace_time_s(t, ev->ts), ev->seq);
	if (several) {
		gmt_text_process_name(t, pid, sizeof(pid));
		fprintf(out, " in pid %s", pid);
	}
	if (ev->flags & GMT_EV_HAS_MEMINFO)
		fprintf(out, ": %s free of %s", gmt_format_bytes(ev->free_bytes, b2),
			gmt_format_bytes(ev->total_bytes, b3));
	/* out of memory goes without saying: any other code is worth showing */
	if (ev->result != GMT_CUDA_OUT_OF_MEMORY)
		fprintf(out, " (error %d)", ev->result);
}

/* The failed events of group @p g, in seq order, at most @p max of them; returns how many. */
static size_t
print_failed_events(
    FILE *out, const struct gmt_site *g, size_t max, bool several, const char *indent)
{
	const struct gmt_model *m = g->p->model;
	size_t shown = 0;

	for (size_t k = 0; k < m->nfailed && shown < max; k++) {
		const struct gmt_trace_event *ev = m->failed[k];
		bool in = false;

		if (ev->api != g->api || ev->driver != g->driver || ev->kind != g->kind ||
		    ev->device != g->device || gmt_model_fail_class(m, k) != GMT_FAIL_COUNTED)
			continue;
		for (size_t s = 0; s < g->nstacks && !in; s++)
			in = g->stacks[s].stack == ev->stack;
		if (!in)
			continue;
		fprintf(out, "%s", indent);
		print_failed_one(out, m, ev, true, several);
		fprintf(out, "\n");
		shown++;
	}
	return shown;
}

/*
 * Keep of @p items (one per failed allocation, each model's in its order of m->failed, as
 * gmt_sites_failed_items() lists them) those that count; returns how many. A failure's class is
 * found by its place, not its seq: a trace may repeat a seq, and then the seq names only the
 * first of them (a fuzzed trace counted 1 failure and kept none: the text report crashed).
 */
static size_t
counted_failures(struct gmt_site_item *items, size_t n)
{
	size_t k = 0, at = 0;

	for (size_t i = 0; i < n; i++, at++) {
		if (i > 0 && items[i].p != items[i - 1].p)
			at = 0;
		if (gmt_model_fail_class(items[i].p->model, at) == GMT_FAIL_COUNTED)
			items[k++] = items[i];
	}
	return k;
}

/* "not counted as failed allocations: ..." for probes and recovered failures, one line each. */
static void
print_uncounted_failures(FILE *out, const struct gmt_process *procs, size_t n)
{
	size_t shown = 0, total = 0;

	for (size_t i = 0; i < n; i++)
		total += procs[i].model->nprobes + procs[i].model->nrecovered;
	if (!total)
		return;
	fprintf(out,
		"not counted as failed allocations (the library went on; see \"why allocations "
		"failed\"):\n");
	for (size_t i = 0; i < n; i++) {
		const struct gmt_model *m = procs[i].model;

		for (size_t k = 0; k < m->nfailed && shown < GMT_REPORT_MAX_ROWS; k++) {
			enum gmt_fail_class c = gmt_model_fail_class(m, k);

			if (c == GMT_FAIL_COUNTED)
				continue;
			fprintf(out, "  %s: ",
				c == GMT_FAIL_PROBE ? "capability probe" : "recovered by a retry");
			print_failed_one(out, m, m->failed[k], true, n > 1);
			fprintf(out, "\n");
			shown++;
		}
	}
	if (total > shown)
		fprintf(out, "  ... and %zu more (see --format json)\n", total - shown);
}

static void
print_failed(FILE *out,
	     const struct gmt_process *procs,
	     size_t n,
	     size_t total,
	     const struct gmt_report_options *opt)
{
	struct gmt_sites sites;
	size_t nitems, shown = 0;
	struct gmt_site_item *items;

	print_uncounted_failures(out, procs, n);
	if (total == 0)
		return;
	items = gmt_sites_failed_items(procs, n, &nitems);
	nitems = counted_failures(items, nitems);
	gmt_sites_group(items, nitems, GMT_GROUP_BY_SEQ, &sites);
	if (total == 1) {
		for (size_t i = 0; i < n; i++) {
			size_t first = gmt_model_first_counted_failure(procs[i].model);

			if (first != SIZE_MAX) {
				fprintf(out, "failed allocations: 1 (");
				print_failed_one(out, procs[i].model, procs[i].model->failed[first],
						 false, n > 1);
				fprintf(out, ")");
			}
		}
		if (sites.v[0].frame) {
			fprintf(out, " ");
			print_where(out, &sites.v[0], false, "");
		}
		fprintf(out, "\n");
		if (opt->stacks == GMT_STACKS_FULL && sites.v[0].frame)
			print_group_stacks(out, &sites.v[0], "failure", "failures");
	} else if (sites.n == 1 && !sites.v[0].frame) {
		/* No call site to group by: the failures, in order. */
		fprintf(out, "failed allocations: %zu\n", total);
		shown = print_failed_events(out, &sites.v[0], GMT_REPORT_MAX_ROWS, n > 1, "  ");
	} else {
		fprintf(out, "failed allocations: %zu, from %zu call %s\n", total, sites.n,
			gmt_text_plural(sites.n, "site", "sites"));
		for (size_t i = 0; i < sites.n && shown < GMT_REPORT_MAX_ROWS; i++) {
			fprintf(out, "  ");
			print_where(out, &sites.v[i], false, "");
			fprintf(out, ":\n");
			if (opt->stacks == GMT_STACKS_FULL)
				print_group_stacks(out, &sites.v[i], "failure", "failures");
			shown += print_failed_events(out, &sites.v[i], GMT_REPORT_MAX_ROWS - shown,
						     n > 1, "    ");
		}
	}
	if (total > 1 && total > shown)
		fprintf(out, "  ... and %zu more (see --format json)\n", total - shown);
	gmt_sites_free(&sites);
	free(items);
}

// --- the report ---------------------------------------------------------------------------------

/* The drops, after @p prefix (@p why: the report's long form); only reservation readings leave
 * every allocation and free there. */
static void
print_dropped(FILE *out, const char *prefix, const struct gmt_totals *tot, bool why)
{
	uint64_t readings = tot->dropped_readings;

	if (!tot->dropped)
		return;
	if (readings == tot->dropped) {
		fprintf(out,
			"%swarning: %" PRIu64 " reservation %s dropped%s: every allocation and "
			"free is there, the pools' reserved bytes may lag\n",
			prefix, readings, gmt_text_plural(readings, "reading was", "readings were"),
			why ? " by the tracer (its ring buffer was full)" : "");
		return;
	}
	fprintf(out, "%swarning: %" PRIu64 " %s dropped%s", prefix, tot->dropped,
		gmt_text_plural(tot->dropped, "event was", "events were"),
		why ? " by the tracer (its ring buffer was full)" : "");
	if (readings)
		fprintf(out, " (%" PRIu64 " of them reservation %s)", readings,
			gmt_text_plural(readings, "reading", "readings"));
	fprintf(out, ": the numbers%s are incomplete\n", why ? " below" : "");
}

/* The trace files that yielded nothing, in the words of run's summary: processes that none of
 * the figures has (check's complete-traces fails on them). */
static void
print_lost(FILE *out, const struct gmt_lost *lost)
{
	size_t n = gmt_lost_count(lost);
	const char *file, *why;

	if (!n)
		return;
	fprintf(out, "warning: %zu trace %s yielded nothing: %s in none of the figures below\n", n,
		gmt_text_plural(n, "file", "files"),
		gmt_text_plural(n, "its process is", "their processes are"));
	for (size_t i = 0; i < n; i++) {
		gmt_lost_at(lost, i, &file, &why);
		fprintf(out, "  %s: %s\n", gmt_esc(file), gmt_esc(why));
	}
}

static void
print_warnings(FILE *out, const struct gmt_process *procs, size_t n, const struct gmt_totals *tot)
{
	print_dropped(out, "", tot, true);
	if (tot->bad_lines)
		fprintf(out,
			"warning: %" PRIu64 " unreadable trace %s skipped (see the messages on "
			"stderr)\n",
			tot->bad_lines, gmt_text_plural(tot->bad_lines, "line was", "lines were"));
	for (size_t i = 0; i < n; i++)
		if (!procs[i].model->trace->complete)
			print_died(out, procs[i].model->trace);
}

static void
print_anomalies(FILE *out, const struct gmt_totals *tot)
{
	if (tot->unmatched_frees)
		fprintf(out,
			"unmatched frees: %" PRIu64 " (of memory this trace never saw allocated: "
			"before tracing began, or through an API it does not cover)\n",
			tot->unmatched_frees);
	if (tot->failed_frees)
		fprintf(out, "failed frees: %" PRIu64 " (they changed nothing)\n",
			tot->failed_frees);
	if (tot->reused_addresses)
		fprintf(
		    out,
		    "reused addresses: %" PRIu64 " (allocations at an address that was still live: "
		    "its free was not seen, so the earlier allocation is counted as freed there)\n",
		    tot->reused_addresses);
	if (tot->unmatched_retains)
		fprintf(out,
			"unmatched retains: %" PRIu64
			" (references to a VMM handle this trace never "
			"saw created)\n",
			tot->unmatched_retains);
}

int
gmt_report_text(FILE *out,
		const struct gmt_process *procs,
		size_t n,
		const struct gmt_lost *lost,
		const struct gmt_report_options *opt)
{
	static const struct gmt_report_options defaults = {.stacks = GMT_STACKS_SITE};
	struct gmt_totals tot;

	if (!opt)
		opt = &defaults;
	gmt_report_start();
	gmt_report_totals(procs, n, &tot);
	fprintf(out, "gpumemtrace report: %zu %s, %" PRIu64 " events, %" PRIu64 " dropped\n", n,
		gmt_text_plural(n, "process", "processes"), tot.events, tot.dropped);
	print_lost(out, lost);
	if (n)
		print_coverage(out, procs, n);
	print_bounded(out, procs, n);
	print_warnings(out, procs, n, &tot);
	if (n > 1) {
		fprintf(out, "processes:\n");
		for (size_t i = 0; i < n; i++)
			print_process_row(out, &procs[i]);
	}
	gmt_text_range(out, procs, n);
	gmt_text_oom(out, procs, n);
	gmt_text_devices(out, procs, n);
	print_peak_sites(out, procs, n, opt);
	gmt_text_tensors(out, procs, n, opt ? opt->categories : NULL);
	gmt_text_growth(out, procs, n);
	gmt_text_ledger(out, procs, n);
	print_leaks(out, procs, n, &tot, opt);
	print_failed(out, procs, n, tot.failed, opt);
	gmt_text_churn(out, procs, n);
	gmt_text_fragmentation(out, procs, n);
	print_anomalies(out, &tot);
	gmt_text_kinds(out, procs, n);
	if (gmt_report_failed(procs, n))
		return -ENOMEM;
	return ferror(out) ? -EIO : 0;
}

int
gmt_report_summary(FILE *out, const char *prefix, const struct gmt_process *procs, size_t n)
{
	struct gmt_totals tot;
	char b[GMT_BYTES_BUF];

	gmt_report_start();
	gmt_report_totals(procs, n, &tot);
	fprintf(out, "%s%zu %s, %" PRIu64 " events, %" PRIu64 " dropped", prefix, n,
		gmt_text_plural(n, "process", "processes"), tot.events, tot.dropped);
	if (tot.died) {
		/* which signal, when the tracer could end the trace first (one is named) */
		const char *by = NULL;
		size_t nby = 0;
		for (size_t i = 0; i < n; i++)
			if (procs[i].model->trace->ended_by[0] && nby++ == 0)
				by = procs[i].model->trace->ended_by;
		fprintf(out, ", %zu did not exit normally", tot.died);
		if (nby == 1 && tot.died == 1)
			fprintf(out, " (ended by %s)", by);
		else if (nby)
			fprintf(out, " (%zu ended by a signal, e.g. %s)", nby, by);
	}
	fprintf(out, "\n");
	if (tot.peak_device)
		fprintf(out, "%speak %s device memory held on device %d", prefix,
			gmt_format_bytes(tot.peak_bytes, b), tot.peak_device->device);
	else
		fprintf(out, "%sno device memory was held", prefix);
	if (tot.processes > tot.died)
		fprintf(out, "; leaked at exit %s in %" PRIu64 " %s",
			gmt_format_bytes(tot.leaked_bytes, b), tot.leaked_allocations,
			gmt_text_plural(tot.leaked_allocations, "allocation", "allocations"));
	if (tot.cached[GMT_CACHE_NONE].allocations || tot.library[GMT_LIB_NONE].allocations) {
		const char *sep = " (and ";

		if (tot.cached[GMT_CACHE_NONE].allocations) {
			fprintf(out, "%s%s held by caching allocators", sep,
				gmt_format_bytes(tot.cached[GMT_CACHE_NONE].bytes, b));
			sep = ", ";
		}
		if (tot.library[GMT_LIB_NONE].allocations)
			fprintf(out, "%s%s by CUDA libraries for their handles", sep,
				gmt_format_bytes(tot.library[GMT_LIB_NONE].bytes, b));
		fprintf(out, ", not leaks)");
	}
	if (tot.died)
		fprintf(out, "; %s live when the trace ends",
			gmt_format_bytes(tot.live_at_end_bytes, b));
	fprintf(out, "; %zu failed %s", tot.failed,
		gmt_text_plural(tot.failed, "allocation", "allocations"));
	if (tot.tensor_ooms)
		fprintf(out, " and %" PRIu64 " PyTorch out-of-memory %s with no failed CUDA call",
			tot.tensor_ooms, gmt_text_plural(tot.tensor_ooms, "error", "errors"));
	if (tot.probes || tot.recovered)
		fprintf(out, " (not counted: %zu probe%s, %zu recovered)", tot.probes,
			tot.probes == 1 ? "" : "s", tot.recovered);
	fprintf(out, "\n");
	for (size_t i = 0; i < n; i++) {
		size_t first = gmt_model_first_counted_failure(procs[i].model);

		if (first != SIZE_MAX) {
			char text[2048];

			gmt_oom_explain(&procs[i], &procs[i].model->oom[first], text, sizeof(text));
			fprintf(out, "%sfirst failure: %s\n", prefix, gmt_esc(text));
			break;
		}
	}
	size_t growing = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < procs[i].model->nsites; k++)
			growing += gmt_site_grows(procs[i].model, &procs[i].model->sites[k]);
	if (growing)
		fprintf(out, "%s%zu call %s kept growing (gpumemtrace report: \"growing\")\n",
			prefix, growing, gmt_text_plural(growing, "site", "sites"));
	gmt_text_tensors_summary(out, prefix, procs, n);
	print_dropped(out, prefix, &tot, false);
	if (gmt_report_failed(procs, n))
		return -ENOMEM;
	return ferror(out) ? -EIO : 0;
}
