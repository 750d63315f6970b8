/*
 * @brief Call-site groups and rankings (src/analysis/report/sites.c): stacks that share their
 * call-site frame are one group, groups come largest first with ties broken the same way on
 * every run, leak rows are what is live at the end and peak rows what was live at each device's
 * peak, and the site tables rank by growth across markers and by allocations.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/report/sites.h"
#include "analysis/session/session.h"
#include "check.h"
#include "tracetext.h"

/* Stacks of bare addresses (no modules line): each frame is its address, the innermost the site. */
static void
stacks(struct tt *t)
{
	static const uint64_t s1[] = {0xa100, 0xb100}, s2[] = {0xa100, 0xc100}, s3[] = {0xd100},
			      s4[] = {0xf100}, s5[] = {0xe100}, s6[] = {0x1100}, s7[] = {0x2200};

	tt_stack(t, 1, s1, 2);
	tt_stack(t, 2, s2, 2);
	tt_stack(t, 3, s3, 1);
	tt_stack(t, 4, s4, 1);
	tt_stack(t, 5, s5, 1);
	tt_stack(t, 6, s6, 1);
	tt_stack(t, 7, s7, 1);
}

/* The call-site address of group @p g. */
static uint64_t
site_of(const struct gmt_site *g)
{
	CHECK(g->frame);
	return g->frame->address;
}

/*
 * Leaks by call site: stacks 1 and 2 share the site 0xa100 and make one group with both stacks,
 * largest first; groups by bytes; equal bytes by count; equal bytes and counts by the site's
 * frame. Peak rows: what was live at the device's peak, of held kinds only.
 */
static void
leaks_and_peaks(void)
{
	struct tt t;
	struct gmt_session s;
	struct gmt_site_item *items;
	struct gmt_sites g;
	size_t n;

	tt_init(&t, 20);
	stacks(&t);
	tt_alloc(&t, 1, "cudaMalloc", "device", 0, 0x1000, 100, 1);
	tt_alloc(&t, 2, "cudaMalloc", "device", 0, 0x2000, 300, 2);
	tt_alloc(&t, 3, "cudaMalloc", "device", 0, 0x3000, 500, 3);
	tt_alloc(&t, 4, "cudaMalloc", "device", 0, 0x4000, 100, 4); /* 4: 200 in 2 */
	tt_alloc(&t, 5, "cudaMalloc", "device", 0, 0x4100, 100, 4);
	tt_alloc(&t, 6, "cudaMalloc", "device", 0, 0x5000, 200, 5); /* 5: 200 in 1 */
	tt_alloc(&t, 7, "cudaMalloc", "device", 0, 0x6000, 50, 7);  /* 7 and 6: 50 in 1 */
	tt_alloc(&t, 8, "cudaMalloc", "device", 0, 0x7000, 50, 6);
	tt_alloc(&t, 9, "cudaMalloc", "device", 0, 0x8000, 4000, 3);	  /* the peak's largest */
	tt_alloc(&t, 10, "cudaMallocHost", "pinned", 0, 0x9000, 9000, 3); /* not held */
	tt_free(&t, 11, "cudaFree", "device", 0, 0x8000);
	tt_trailer(&t, 12000, 11);
	tt_session(&s, &t);

	items = gmt_sites_leak_items(s.procs, s.n, &n);
	CHECK_EQ_U64(n, 8); /* one row per (stack, call, kind) */
	gmt_sites_group(items, n, GMT_GROUP_BY_BYTES, &g);
	CHECK_EQ_U64(g.n, 7);
	CHECK_EQ_U64(g.v[0].kind, GMT_TK_PINNED); /* 9000 */
	CHECK_EQ_U64(g.v[0].bytes, 9000);
	CHECK_EQ_U64(site_of(&g.v[1]), 0xd100);
	CHECK_EQ_U64(g.v[1].bytes, 500);
	CHECK_EQ_U64(site_of(&g.v[2]), 0xa100);
	CHECK_EQ_U64(g.v[2].bytes, 400);
	CHECK_EQ_U64(g.v[2].count, 2);
	CHECK_EQ_U64(g.v[2].nstacks, 2);
	CHECK_EQ_U64(g.v[2].stacks[0].stack, 2); /* 300 before 100 */
	CHECK_EQ_U64(g.v[2].stacks[0].bytes, 300);
	CHECK_EQ_U64(g.v[2].stacks[1].stack, 1);
	CHECK_EQ_U64(g.v[2].first_seq, 0); /* leaks keep no seq */
	/* 200 in 2 before 200 in 1, though its frame sorts after */
	CHECK_EQ_U64(site_of(&g.v[3]), 0xf100);
	CHECK_EQ_U64(g.v[3].count, 2);
	CHECK_EQ_U64(site_of(&g.v[4]), 0xe100);
	CHECK_EQ_U64(site_of(&g.v[5]), 0x1100); /* 50 in 1 each: by frame, whatever came first */
	CHECK_EQ_U64(site_of(&g.v[6]), 0x2200);
	gmt_sites_free(&g);

	/* by count: the two-allocation groups first, then by bytes */
	gmt_sites_group(items, n, GMT_GROUP_BY_COUNT, &g);
	CHECK_EQ_U64(g.n, 7);
	CHECK_EQ_U64(site_of(&g.v[0]), 0xa100);
	CHECK_EQ_U64(site_of(&g.v[1]), 0xf100);
	CHECK_EQ_U64(g.v[2].kind, GMT_TK_PINNED);
	gmt_sites_free(&g);
	free(items);

	/* at the peak (seq 9) the 4000 B were live, and no pinned memory is held */
	items = gmt_sites_peak_items(s.procs, s.n, &n);
	CHECK_EQ_U64(n, 7);
	gmt_sites_group(items, n, GMT_GROUP_BY_BYTES, &g);
	CHECK_EQ_U64(g.n, 6);
	CHECK_EQ_U64(site_of(&g.v[0]), 0xd100);
	CHECK_EQ_U64(g.v[0].bytes, 4500);
	CHECK_EQ_U64(g.v[0].count, 2);
	CHECK_EQ_U64(g.v[0].device, 0);
	CHECK_EQ_U64(site_of(&g.v[1]), 0xa100);
	CHECK_EQ_U64(g.v[1].bytes, 400);
	gmt_sites_free(&g);
	free(items);
	gmt_session_free(&s);
	tt_fini(&t);
}

/* Failed allocations by site, in the order they happened (per process, first seq). */
static void
failed_in_order(void)
{
	struct tt t;
	struct gmt_session s;
	struct gmt_site_item *items;
	struct gmt_sites g;
	size_t n;

	tt_init(&t, 21);
	stacks(&t);
	for (unsigned i = 0; i < 3; i++) /* big failures at 0xd100 after a small one at 0xa100 */
		tt_line(&t,
			"{'type':'event','seq':%u,'ts':%u,'op':'alloc','api':'cudaMalloc',"
			"'kind':'device','device':0,'ptr':'0x0','size':%u,'result':2,'stack':%u}",
			i + 1, (i + 1) * 1000, i ? 1u << 30 : 10u, i ? 3u : 1u);
	tt_session(&s, &t);
	items = gmt_sites_failed_items(s.procs, s.n, &n);
	CHECK_EQ_U64(n, 3);
	gmt_sites_group(items, n, GMT_GROUP_BY_SEQ, &g);
	CHECK_EQ_U64(g.n, 2);
	CHECK_EQ_U64(site_of(&g.v[0]), 0xa100);
	CHECK_EQ_U64(g.v[0].first_seq, 1);
	CHECK_EQ_U64(site_of(&g.v[1]), 0xd100);
	CHECK_EQ_U64(g.v[1].first_seq, 2);
	CHECK_EQ_U64(g.v[1].count, 2);
	CHECK_EQ_U64(g.v[1].bytes, 2ULL << 30);
	gmt_sites_free(&g);
	/* by bytes the big ones come first */
	gmt_sites_group(items, n, GMT_GROUP_BY_BYTES, &g);
	CHECK_EQ_U64(site_of(&g.v[0]), 0xd100);
	gmt_sites_free(&g);
	free(items);
	gmt_session_free(&s);
	tt_fini(&t);
}

/*
 * The site tables ranked: by growth across markers (only the sites that grow), and by
 * allocations over two processes (ties: the first process first).
 */
static void
ranked(void)
{
	struct tt a, b;
	struct gmt_session s;
	struct gmt_site_ref *ref;
	size_t n;

	tt_init(&a, 22);
	stacks(&a);
	tt_alloc(&a, 1, "cudaMalloc", "device", 0, 0x100, 1000, 3); /* flat: not growing */
	tt_alloc(&a, 2, "cudaMalloc", "device", 0, 0x200, 100, 1);
	tt_alloc(&a, 3, "cudaMalloc", "device", 0, 0x300, 50, 4);
	tt_mark(&a, 4, "step 1");
	tt_alloc(&a, 5, "cudaMalloc", "device", 0, 0x400, 100, 1); /* 1: +100 a step */
	tt_alloc(&a, 6, "cudaMalloc", "device", 0, 0x500, 50, 4);  /* 4: +50 a step */
	tt_mark(&a, 7, "step 2");
	tt_alloc(&a, 8, "cudaMalloc", "device", 0, 0x600, 100, 1);
	tt_alloc(&a, 9, "cudaMalloc", "device", 0, 0x700, 50, 4);
	tt_mark(&a, 10, "step 3");
	tt_alloc(&a, 11, "cudaMalloc", "device", 0, 0x800, 100, 1);
	tt_alloc(&a, 12, "cudaMalloc", "device", 0, 0x900, 50, 4);
	tt_mark(&a, 13, "step 4");
	tt_trailer(&a, 14000, 13);

	tt_init(&b, 23);
	stacks(&b);
	for (unsigned i = 0; i < 4; i++) /* as busy as stack 1 of the first */
		tt_alloc(&b, i + 1, "cudaMalloc", "device", 1, 0x100 + i * 0x100, 10, 5);
	tt_trailer(&b, 5000, 4);

	tt_session(&s, &a);
	tt_session_add(&s, &b);
	CHECK_EQ_U64(s.n, 2);
	CHECK_EQ_U64(s.procs[0].model->marker_samples, 4);

	ref = gmt_sites_ranked(s.procs, s.n, GMT_SITES_GROWING, &n);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_U64(ref[0].st->stack, 1);
	CHECK_EQ_U64(ref[0].key, 300); /* 100 at step 1, 400 at step 4 */
	CHECK_EQ_U64(ref[1].st->stack, 4);
	CHECK_EQ_U64(ref[1].key, 150);
	free(ref);

	ref = gmt_sites_ranked(s.procs, s.n, GMT_SITES_BUSIEST, &n);
	CHECK_EQ_U64(n, 4);
	CHECK_EQ_U64(ref[0].proc, 0); /* 4 allocations in both processes: the first first */
	CHECK_EQ_U64(ref[0].st->stack, 1);
	CHECK_EQ_U64(ref[0].key, 4);
	CHECK_EQ_U64(ref[1].proc, 0);
	CHECK_EQ_U64(ref[1].st->stack, 4);
	CHECK_EQ_U64(ref[2].proc, 1);
	CHECK_EQ_U64(ref[2].st->stack, 5);
	CHECK_EQ_U64(ref[2].key, 4);
	CHECK_EQ_U64(ref[3].st->stack, 3);
	CHECK_EQ_U64(ref[3].key, 1);
	free(ref);
	gmt_session_free(&s);
	tt_fini(&a);
	tt_fini(&b);
}

int
main(void)
{
	leaks_and_peaks();
	failed_in_order();
	ranked();
	return 0;
}
