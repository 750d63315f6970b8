/*
 * @brief The gates (src/analysis/gate/): check's thresholds on leaks, peaks, growth and
 * failures, the complete-traces gate, suppressions and the baseline, and diff's changes per call
 * site, each on the JSON report of a trace written in the test (the path of `gpumemtrace check`
 * and `diff` without the CLI).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/gate/check.h"
#include "analysis/gate/diff.h"
#include "analysis/report/report.h"
#include "analysis/session/session.h"
#include "check.h"
#include "tracetext.h"

#define MiB (1024 * 1024ULL)

/*
 * One process on device 0: leaks 3 MiB at 0xa100 (cudaMalloc) and 1 MiB at 0xb100
 * (cudaMallocPitch); its peak, 8 MiB, includes 4 MiB at 0xc100 freed before the end; the live
 * bytes at 0xa100 rise after each of three markers (0, 1, 3 MiB); one failed allocation. @p
 * extra_leak adds to the leak at 0xa100 (a second run); @p complete: the trailer.
 */
static json_t *
report(uint64_t extra_leak, bool complete)
{
	static const uint64_t a[] = {0xa100}, b[] = {0xb100}, c[] = {0xc100};
	struct gmt_session s;
	struct tt t;
	json_t *doc;

	tt_init(&t, 40);
	tt_stack(&t, 1, a, 1);
	tt_stack(&t, 2, b, 1);
	tt_stack(&t, 3, c, 1);
	tt_mark(&t, 1, "step 1");
	tt_alloc(&t, 2, "cudaMalloc", "device", 0, 0x10000000, 1 * MiB, 1);
	tt_mark(&t, 3, "step 2");
	tt_alloc(&t, 4, "cudaMalloc", "device", 0, 0x20000000, 2 * MiB + extra_leak, 1);
	tt_mark(&t, 5, "step 3");
	tt_alloc(&t, 6, "cudaMallocPitch", "device", 0, 0x30000000, 1 * MiB, 2);
	tt_alloc(&t, 7, "cudaMalloc", "device", 0, 0x40000000, 4 * MiB, 3);
	tt_free(&t, 8, "cudaFree", "device", 0, 0x40000000);
	tt_line(&t,
		"{'type':'event','seq':9,'ts':9000,'op':'alloc','api':'cudaMalloc','kind':'device',"
		"'device':0,'ptr':'0x0','size':1073741824,'result':2,'stack':3}");
	if (complete)
		tt_trailer(&t, 10000, 9);
	tt_session(&s, &t);
	CHECK((doc = gmt_report_json_doc(s.procs, s.n, &s.lost)));
	gmt_session_free(&s);
	tt_fini(&t);
	return doc;
}

static struct gmt_suppressions no_supp;

static struct gmt_check_options
options(void)
{
	return (struct gmt_check_options){.supp = &no_supp};
}

/* The gate named @p name of @p g; exits when there is none. */
static const struct gmt_gate *
gate(const struct gmt_gates *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->v[i].name, name) == 0)
			return &g->v[i];
	fprintf(stderr, "no gate \"%s\"; there are:", name);
	for (size_t i = 0; i < g->n; i++)
		fprintf(stderr, " \"%s\"", g->v[i].name);
	fprintf(stderr, "\n");
	exit(1);
}

#define CHECK_TEXT(gt, want)                                                                       \
	do {                                                                                       \
		if (strcmp((gt)->text, want) != 0) {                                               \
			fprintf(stderr, "%s:%d: gate says \"%s\", want \"%s\"\n", __FILE__,        \
				__LINE__, (gt)->text, want);                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_DETAILS(gt, part)                                                                    \
	do {                                                                                       \
		if (!(gt)->details || !strstr((gt)->details, part)) {                              \
			fprintf(stderr, "%s:%d: \"%s\" not in the details: %s\n", __FILE__,        \
				__LINE__, part, (gt)->details ? (gt)->details : "(none)");         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void
run(struct gmt_gates *g, const struct gmt_check_options *o, const json_t *doc, const json_t *base)
{
	CHECK(gmt_check_run(g, o, doc, base) == 0);
	if (getenv("GMT_TEST_VERBOSE"))
		for (size_t i = 0; i < g->n; i++)
			fprintf(stderr, "[%s] %d %s\n%s", g->v[i].name, g->v[i].failed,
				g->v[i].text, g->v[i].details ? g->v[i].details : "");
}

/* Each threshold passes at the figure and fails one byte (or one) below it. */
static void
thresholds(void)
{
	json_t *doc = report(0, true);
	struct gmt_check_options o = options();
	struct gmt_dev_limit peaks[2];
	struct gmt_gates g;

	/* complete-traces alone when nothing is asked */
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(g.n, 1);
	CHECK(!gate(&g, "complete-traces")->failed);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	gmt_gates_free(&g);

	o.leaked_bytes_set = o.leaked_allocs_set = o.failed_set = o.growth_set = true;
	o.max_leaked_bytes = 4 * MiB;
	o.max_leaked_allocs = 3;
	o.max_failed = 1;
	o.max_growth = 3 * MiB;
	peaks[0] = (struct gmt_dev_limit){.all = true, .bytes = 8 * MiB};
	o.peaks = peaks;
	o.npeaks = 1;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(g.n, 6);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	CHECK(!gate(&g, "max-leaked-bytes")->failed);
	CHECK(!gate(&g, "max-peak-bytes device 0")->failed);
	CHECK(!gate(&g, "max-growth-bytes")->failed);
	CHECK_TEXT(gate(&g, "max-growth-bytes"),
		   "max-growth-bytes: largest growth 3.0 MiB (3145728 bytes) <= limit 3.0 MiB "
		   "(3145728 bytes)");
	gmt_gates_free(&g);

	o.max_leaked_bytes = 4 * MiB - 1;
	o.max_leaked_allocs = 2;
	o.max_failed = 0;
	o.max_growth = 3 * MiB - 1;
	peaks[0].bytes = 8 * MiB - 1;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(gmt_gates_failed(&g), 5);
	CHECK(gate(&g, "max-leaked-bytes")->failed);
	CHECK_DETAILS(gate(&g, "max-leaked-bytes"), "3.0 MiB");
	CHECK_DETAILS(gate(&g, "max-leaked-bytes"), "cudaMallocPitch");
	CHECK(gate(&g, "max-leaked-allocs")->failed);
	CHECK(gate(&g, "max-peak-bytes device 0")->failed);
	CHECK(gate(&g, "max-failed")->failed);
	CHECK(gate(&g, "max-growth-bytes")->failed);
	CHECK_DETAILS(
	    gate(&g, "max-growth-bytes"),
	    "grew 3.0 MiB (3145728 bytes) (0 B -> 3.0 MiB (3145728 bytes)) over 3 markers "
	    "'step 1' to 'step 3', rose 2 times, fell 0: cudaMalloc device at 0xa100");
	CHECK(!gate(&g, "complete-traces")->failed);
	gmt_gates_free(&g);

	/* a device's own limit wins over the limit for every device */
	peaks[1] = (struct gmt_dev_limit){.device = 0, .bytes = 16 * MiB};
	o.npeaks = 2;
	run(&g, &o, doc, NULL);
	CHECK(!gate(&g, "max-peak-bytes device 0")->failed);
	gmt_gates_free(&g);
	json_decref(doc);
}

/* A suppression takes its entries out of the gate and counts what it took. */
static void
suppressions(void)
{
	json_t *doc = report(0, true);
	struct gmt_check_options o = options();
	struct gmt_suppressions supp = {0};
	struct gmt_gates g;

	CHECK(gmt_suppressions_add(&supp, "leak:cudaMallocPitch", "unit", 1, stderr) == 0);
	CHECK(gmt_suppressions_add(&supp, "growth:cudaMalloc$", "unit", 2, stderr) == 0);
	o.supp = &supp;
	o.leaked_bytes_set = o.growth_set = true;
	o.max_leaked_bytes = 3 * MiB;
	o.max_growth = 0;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	CHECK_EQ_U64(supp.v[0].hits, 1);
	CHECK_EQ_U64(supp.v[0].bytes, 1 * MiB);
	CHECK_EQ_U64(supp.v[0].allocations, 1);
	CHECK_EQ_U64(supp.v[1].bytes, 3 * MiB);
	gmt_gates_free(&g);

	/* without them the same limits fail */
	o.supp = &no_supp;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(gmt_gates_failed(&g), 2);
	gmt_gates_free(&g);
	gmt_suppressions_free(&supp);
	json_decref(doc);
}

/* A process that did not exit normally fails complete-traces, unless allowed. */
static void
incomplete(void)
{
	json_t *doc = report(0, false);
	struct gmt_check_options o = options();
	struct gmt_gates g;

	run(&g, &o, doc, NULL);
	CHECK(gate(&g, "complete-traces")->failed);
	gmt_gates_free(&g);
	o.allow_incomplete = true;
	run(&g, &o, doc, NULL);
	CHECK(!gate(&g, "complete-traces")->failed);
	gmt_gates_free(&g);
	json_decref(doc);
}

/* The baseline: an increase over the allowed percent fails, one within it passes. */
static void
baseline(void)
{
	json_t *base = report(0, true), *next = report(1 * MiB, true);
	struct gmt_check_options o = options();
	struct gmt_gates g;

	o.max_increase = 25;
	run(&g, &o, next, base);
	/* leaked 4 -> 5 MiB (+25%, at the limit); the peak 8 -> 9 MiB (+12.5%) */
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	CHECK_TEXT(gate(&g, "baseline leaked-bytes"),
		   "baseline leaked-bytes: 4.0 MiB (4194304 bytes) -> 5.0 MiB (5242880 bytes), "
		   "+25.0% (limit +25%)");
	CHECK_TEXT(gate(&g, "baseline peak process 0 device 0"),
		   "baseline peak process 0 device 0: 8.0 MiB (8388608 bytes) -> 9.0 MiB "
		   "(9437184 bytes), +12.5% (limit +25%)");
	gmt_gates_free(&g);
	o.max_increase = 20;
	run(&g, &o, next, base);
	CHECK_EQ_U64(gmt_gates_failed(&g), 1);
	CHECK(gate(&g, "baseline leaked-bytes")->failed);
	gmt_gates_free(&g);
	/* a decrease never fails */
	o.max_increase = 0;
	run(&g, &o, base, next);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	gmt_gates_free(&g);
	json_decref(base);
	json_decref(next);
}

/* diff: the totals and the sites that changed, largest change first, then those that did not. */
static void
diff(void)
{
	json_t *base = report(0, true), *next = report(3 * MiB, true);
	struct gmt_diff d;

	CHECK(gmt_diff_run(&d, base, next) == 0);
	CHECK_EQ_U64(d.totals[GMT_DIFF_PEAK_HELD].before, 8 * MiB);
	CHECK_EQ_U64(d.totals[GMT_DIFF_PEAK_HELD].after, 11 * MiB);
	CHECK_EQ_U64(d.totals[GMT_DIFF_LEAKED].before, 4 * MiB);
	CHECK_EQ_U64(d.totals[GMT_DIFF_LEAKED].after, 7 * MiB);
	CHECK_EQ_U64(d.totals[GMT_DIFF_FAILED].before, 1);
	CHECK_EQ_U64(d.totals[GMT_DIFF_FAILED].after, 1);
	CHECK_EQ_U64(d.n, 3);
	CHECK_EQ_U64(d.changed, 1);
	CHECK(strcmp(d.v[0].api, "cudaMalloc") == 0);
	CHECK_EQ_U64(d.v[0].leaked.before, 3 * MiB);
	CHECK_EQ_U64(d.v[0].leaked.after, 6 * MiB);
	CHECK_EQ_U64(gmt_change_abs(&d.v[0].peak), 3 * MiB);
	/* unchanged, by key (site, call, kind): 0xb100's cudaMallocPitch, then 0xc100's 4 MiB,
	 * live at the peak only */
	CHECK(strcmp(d.v[1].api, "cudaMallocPitch") == 0);
	CHECK_EQ_U64(d.v[1].leaked.before, 1 * MiB);
	CHECK_EQ_U64(d.v[1].leaked.after, 1 * MiB);
	CHECK(strcmp(d.v[2].api, "cudaMalloc") == 0);
	CHECK_EQ_U64(d.v[2].peak.after, 4 * MiB);
	CHECK_EQ_U64(d.v[2].leaked.after, 0);
	gmt_diff_free(&d);

	/* the other way round: the same change, downwards */
	CHECK(gmt_diff_run(&d, next, base) == 0);
	CHECK_EQ_U64(d.changed, 1);
	CHECK_EQ_U64(d.v[0].leaked.after, 3 * MiB);
	gmt_diff_free(&d);
	json_decref(base);
	json_decref(next);
}

/*
 * The tensor level: one process whose PyTorch cache has one 20 MiB segment on device 0. Stack 1
 * (0xa100) keeps 1 MiB a step over four steps (markers "step 0".."step 3": live 1 -> 4 MiB,
 * growth 3 MiB, blocks 0..3 MiB); stack 2 (0xb100) is a 3 MiB temporary at 10 MiB each step;
 * then stack 3 (0xc100) takes 1 MiB blocks at 6..13 MiB and frees every other one, and a marker
 * "end": the free memory is 4..6, 8, 10, 12 and 14..19 MiB (12 MiB, the largest piece 6 MiB):
 * fragmentation 1 - 6/12 = 0.5. Live at the end: 4 MiB (stack 1) + 4 MiB (stack 3); cached but
 * free: 12 MiB.
 */
static json_t *
tensor_report(bool with_blocks)
{
	static const uint64_t a[] = {0xa100}, b[] = {0xb100}, c[] = {0xc100};
	const uint64_t seg = 0x7f0000000000ULL;
	struct gmt_session s;
	uint64_t seq = 1;
	struct tt t;
	json_t *doc;

#define BLOCK(action, ptr, size, stack)                                                            \
	tt_line(&t,                                                                                \
		"{'type':'block','seq':%" PRIu64 ",'ts':%" PRIu64 ",'tid':1,'action':'" action     \
		"','device':0,'ptr':'0x%" PRIx64 "','size':%" PRIu64                               \
		",'stream':'0x0','pool':[0,0],'stack':%d}",                                        \
		seq, seq * 1000, (uint64_t)(ptr), (uint64_t)(size), stack),                        \
	    seq++
	tt_init(&t, 40);
	tt_stack(&t, 1, a, 1);
	tt_stack(&t, 2, b, 1);
	tt_stack(&t, 3, c, 1);
	tt_line(&t,
		"{'type':'torch','seq':%" PRIu64 ",'ts':%" PRIu64
		",'version':'2.11.0','backend':'native','alloc_conf':'','layer':'blocks'}",
		seq, seq * 1000);
	seq++;
	tt_alloc(&t, seq++, "cudaMalloc", "device", 0, seg, 20 * MiB, 1);
	if (with_blocks) {
		BLOCK("segment_alloc", seg, 20 * MiB, 0);
		for (int step = 0; step < 4; step++) {
			char label[16];

			BLOCK("alloc", seg + (uint64_t)step * MiB, MiB, 1);
			BLOCK("alloc", seg + 10 * MiB, 3 * MiB, 2);
			BLOCK("free_requested", seg + 10 * MiB, 3 * MiB, 0);
			BLOCK("free_completed", seg + 10 * MiB, 3 * MiB, 0);
			snprintf(label, sizeof(label), "step %d", step);
			tt_mark(&t, seq++, label);
		}
		for (int i = 0; i < 8; i++)
			BLOCK("alloc", seg + (uint64_t)(6 + i) * MiB, MiB, 3);
		for (int i = 0; i < 8; i += 2) {
			BLOCK("free_requested", seg + (uint64_t)(6 + i) * MiB, MiB, 0);
			BLOCK("free_completed", seg + (uint64_t)(6 + i) * MiB, MiB, 0);
		}
	}
	tt_mark(&t, seq++, "end");
	tt_trailer(&t, seq * 1000, seq);
#undef BLOCK
	tt_session(&s, &t);
	CHECK((doc = gmt_report_json_doc(s.procs, s.n, &s.lost)));
	gmt_session_free(&s);
	tt_fini(&t);
	return doc;
}

/* The tensor gates pass at the figure and fail one below it; suppressions take tensor sites. */
static void
tensor_gates(void)
{
	json_t *doc = tensor_report(true);
	struct gmt_check_options o = options();
	struct gmt_dev_limit leak = {.all = true, .bytes = 8 * MiB},
			     frag = {.all = true, .fraction = 0.5};
	struct gmt_suppressions supp = {0};
	struct gmt_gates g;

	o.tensor_leaks = &leak;
	o.ntensor_leaks = 1;
	o.frags = &frag;
	o.nfrags = 1;
	o.tensor_growth_set = true;
	o.max_tensor_growth = 3 * MiB;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(g.n, 4);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	CHECK_EQ_U64(gmt_gates_skipped(&g), 0);
	CHECK_TEXT(gate(&g, "max-tensor-leak device 0"),
		   "max-tensor-leak device 0: tensors still referenced at the end 8.0 MiB (8388608 "
		   "bytes) <= limit 8.0 MiB (8388608 bytes) (12.0 MiB (12582912 bytes) cached but "
		   "free at the end, not counted: empty_cache() returns it)");
	CHECK_TEXT(gate(&g, "max-tensor-growth"),
		   "max-tensor-growth: largest growth of a tensor site 3.0 MiB (3145728 bytes) <= "
		   "limit 3.0 MiB (3145728 bytes)");
	CHECK_TEXT(gate(&g, "max-fragmentation device 0"),
		   "max-fragmentation device 0: fragmentation of the cache at most 0.500 <= limit "
		   "0.500 (1 - largest free block / reserved-unallocated bytes)");
	gmt_gates_free(&g);

	leak.bytes = 8 * MiB - 1;
	o.max_tensor_growth = 3 * MiB - 1;
	frag.fraction = 0.499;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(gmt_gates_failed(&g), 3);
	CHECK_DETAILS(gate(&g, "max-tensor-leak device 0"),
		      "4.0 MiB (4194304 bytes) in 4 tensors still referenced: 0xa100");
	CHECK_DETAILS(gate(&g, "max-tensor-leak device 0"),
		      "4.0 MiB (4194304 bytes) in 4 tensors still referenced: 0xc100");
	CHECK_DETAILS(gate(&g, "max-tensor-growth"),
		      "grew 3.0 MiB (3145728 bytes) (1.0 MiB (1048576 bytes) -> 4.0 MiB (4194304 "
		      "bytes) over 5 samples");
	CHECK_DETAILS(gate(&g, "max-fragmentation device 0"),
		      "0.500 at 0.000040 s on device 0 (12.0 MiB (12582912 bytes) reserved but "
		      "unallocated, the largest free block 6.0 MiB (6291456 bytes))");
	gmt_gates_free(&g);

	/* a leak: suppression takes the site 0xc100, growth: the growing one */
	CHECK(gmt_suppressions_add(&supp, "leak:0xc100", "unit", 1, stderr) == 0);
	CHECK(gmt_suppressions_add(&supp, "growth:0xa1*", "unit", 2, stderr) == 0);
	o.supp = &supp;
	leak.bytes = 4 * MiB;
	o.max_tensor_growth = 0;
	run(&g, &o, doc, NULL);
	CHECK(!gate(&g, "max-tensor-leak device 0")->failed);
	CHECK(!gate(&g, "max-tensor-growth")->failed);
	CHECK_EQ_U64(supp.v[0].hits, 1);
	CHECK_EQ_U64(supp.v[0].bytes, 4 * MiB);
	CHECK_EQ_U64(supp.v[0].allocations, 4);
	CHECK_EQ_U64(supp.v[1].bytes, 3 * MiB);
	gmt_gates_free(&g);
	gmt_suppressions_free(&supp);
	o.supp = &no_supp;

	/* a device's own limit wins; a device no process used passes, saying so */
	struct gmt_dev_limit two[2] = {{.all = true, .bytes = 0}, {.device = 0, .bytes = 8 * MiB}};
	struct gmt_dev_limit other = {.device = 3, .fraction = 0};
	o.tensor_leaks = two;
	o.ntensor_leaks = 2;
	o.frags = &other;
	o.tensor_growth_set = false;
	run(&g, &o, doc, NULL);
	CHECK(!gate(&g, "max-tensor-leak device 0")->failed);
	CHECK(!gate(&g, "max-fragmentation device 3")->failed);
	CHECK_TEXT(gate(&g, "max-fragmentation device 3"),
		   "max-fragmentation device 3: no process used the device at the tensor level "
		   "(limit 0.000)");
	gmt_gates_free(&g);
	json_decref(doc);

	/* no block lines: each tensor gate is skipped, saying why, and fails nothing */
	doc = tensor_report(false);
	o.tensor_leaks = &leak;
	o.ntensor_leaks = 1;
	o.frags = &frag;
	o.tensor_growth_set = true;
	run(&g, &o, doc, NULL);
	CHECK_EQ_U64(g.n, 4);
	CHECK_EQ_U64(gmt_gates_failed(&g), 0);
	CHECK_EQ_U64(gmt_gates_skipped(&g), 3);
	CHECK_TEXT(gate(&g, "max-tensor-leak"),
		   "max-tensor-leak: skipped: no tensor level (no block lines)");
	CHECK(gate(&g, "max-tensor-growth")->skipped);
	CHECK(gate(&g, "max-fragmentation")->skipped);
	gmt_gates_free(&g);
	json_decref(doc);
}

int
main(void)
{
	thresholds();
	suppressions();
	incomplete();
	baseline();
	diff();
	tensor_gates();
	return 0;
}
