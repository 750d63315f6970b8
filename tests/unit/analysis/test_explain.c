/*
 * @brief Why an allocation failed (src/analysis/report/explain.c): which cause is picked for
 * which situation on the device, in the order the causes are tried (explain.c's list), and that
 * the words name the figures. Each trace holds one failure after what the process held.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/report/explain.h"
#include "analysis/session/session.h"
#include "check.h"
#include "tracetext.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)

/* PyTorch's caching allocator: frames in libc10_cuda (stack 1), the program's own (stack 2). */
static void
modules(struct tt *t)
{
	static const uint64_t torch[] = {0x7f0000001000, 0x555500001000}, own[] = {0x555500002000};

	tt_line(t, "{'type':'modules','seq':0,'modules':["
		   "{'path':'/nonexistent/gmt-unit/python3','base':'0x555500000000','build_id':'',"
		   "'segments':[[0,1048576]]},"
		   "{'path':'/nonexistent/gmt-unit/libc10_cuda.so','base':'0x7f0000000000',"
		   "'build_id':'','segments':[[0,1048576]]}]}");
	tt_stack(t, 1, torch, 2);
	tt_stack(t, 2, own, 1);
}

/*
 * A failed allocation of @p size at @p seq with @p result; @p free_bytes < 0: the tracer could
 * not ask the device (no free/total figures).
 */
static void
failure(struct tt *t,
	uint64_t seq,
	const char *api,
	uint64_t size,
	int result,
	long long free_bytes,
	uint64_t total)
{
	char meminfo[128] = "";

	if (free_bytes >= 0)
		snprintf(meminfo, sizeof(meminfo), ",'free_bytes':%lld,'total_bytes':%llu",
			 free_bytes, (unsigned long long)total);
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'alloc','api':'%s',"
		"'kind':'device','device':0,'ptr':'0x0','size':%llu,'result':%d%s,'stack':2}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, api,
		(unsigned long long)size, result, meminfo);
}

struct verdict {
	enum gmt_oom_cause cause;
	enum gmt_fail_class fclass;
	char text[2048];
};

/* The explanation of the trace's only failure. */
static struct verdict
explain(const struct tt *t)
{
	struct gmt_session s;
	struct verdict v;
	const struct gmt_model *m;

	tt_session(&s, t);
	m = s.procs[0].model;
	CHECK_EQ_U64(m->nfailed, 1);
	v.fclass = gmt_model_fail_class(m, 0);
	v.cause = gmt_oom_explain(&s.procs[0], &m->oom[0], v.text, sizeof(v.text));
	gmt_session_free(&s);
	return v;
}

#define CHECK_CAUSE(v, want)                                                                       \
	do {                                                                                       \
		if ((v).cause != (want)) {                                                         \
			fprintf(stderr, "%s:%d: cause %s, want %s: %s\n", __FILE__, __LINE__,      \
				gmt_oom_cause_name((v).cause), gmt_oom_cause_name(want),           \
				(v).text);                                                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_SAYS(v, part)                                                                        \
	do {                                                                                       \
		if (!strstr((v).text, part)) {                                                     \
			fprintf(stderr, "%s:%d: \"%s\" not in: %s\n", __FILE__, __LINE__, part,    \
				(v).text);                                                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* A trace in which the process holds @p own of its own and @p cached through PyTorch. */
static void
holding(struct tt *t, uint64_t own, uint64_t cached)
{
	tt_init(t, 30);
	modules(t);
	if (own)
		tt_alloc(t, 1, "cudaMalloc", "device", 0, 0x10000000, own, 2);
	if (cached)
		tt_alloc(t, 2, "cudaMalloc", "device", 0, 0x20000000, cached, 1);
}

/* The causes, one situation each, on an 80 GiB device. */
static void
causes(void)
{
	struct tt t;
	struct verdict v;

	/* not a lack of memory: another error */
	holding(&t, 1 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 1 * GiB, 1, 10 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_NOT_OUT_OF_MEMORY);
	CHECK_EQ_U64(v.fclass, GMT_FAIL_COUNTED);
	CHECK_SAYS(v, "error 1 for 1.0 GiB");
	tt_fini(&t);

	/* the request alone exceeds the device, even with most of it free */
	holding(&t, 1 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 100 * GiB, 2, 79 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_LARGER_THAN_DEVICE);
	CHECK_SAYS(v, "needed 100.0 GiB, the device has 80.0 GiB");
	tt_fini(&t);

	/* enough was free right after the failure: fragmented, whatever else holds memory */
	holding(&t, 40 * GiB, 30 * GiB);
	failure(&t, 3, "cudaMalloc", 2 * GiB, 2, 2 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_FRAGMENTED);
	tt_fini(&t);

	/* no figures from the device: it cannot be told */
	holding(&t, 40 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 2 * GiB, 2, -1, 0);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_UNKNOWN);
	CHECK_SAYS(v, "this process held 40.0 GiB");
	tt_fini(&t);

	/* 79 GiB used, 10 of them this process's: most is held outside it */
	holding(&t, 10 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 2 * GiB, 2, 1 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_HELD_OUTSIDE);
	CHECK_SAYS(v, "69.0 GiB in use is not tracked");
	tt_fini(&t);

	/* the process holds most of it, and most of that is PyTorch's cache */
	holding(&t, 20 * GiB, 50 * GiB);
	failure(&t, 3, "cudaMalloc", 10 * GiB, 2, 9 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_HELD_BY_CACHE);
	CHECK_SAYS(v, "this process held 70.0 GiB, 50.0 GiB of it allocated by a caching "
		      "allocator (PyTorch's)");
	tt_fini(&t);

	/* half the held memory in the cache is not most of it: the process's own */
	holding(&t, 35 * GiB, 35 * GiB);
	failure(&t, 3, "cudaMalloc", 10 * GiB, 2, 9 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_HELD_BY_PROCESS);
	CHECK_SAYS(v, "this process held 70.0 GiB in 2 live allocations");
	tt_fini(&t);

	/* a CUDA pool's allocations count as a caching allocator's too */
	holding(&t, 10 * GiB, 0);
	tt_alloc(&t, 2, "cudaMallocAsync", "pool", 0, 0x30000000, 60 * GiB, 2);
	failure(&t, 3, "cudaMalloc", 10 * GiB, 2, 9 * GiB, 80 * GiB);
	v = explain(&t);
	CHECK_CAUSE(v, GMT_OOM_HELD_BY_CACHE);
	CHECK_SAYS(v, "(a CUDA memory pool)");
	tt_fini(&t);
}

/* A failure the library went past is classed before its cause: probe, or recovered. */
static void
classes(void)
{
	struct tt t;
	struct verdict v;

	/* not supported, then the same call succeeds: a capability probe */
	holding(&t, 1 * GiB, 0);
	failure(&t, 3, "cuMemCreate", 2 * MiB, 801, 10 * GiB, 80 * GiB);
	tt_line(&t, "{'type':'event','seq':4,'ts':4000,'tid':1,'op':'alloc','api':'cuMemCreate',"
		    "'kind':'vmm_physical','device':0,'ptr':'0x77','size':2097152,'result':0}");
	v = explain(&t);
	CHECK_EQ_U64(v.fclass, GMT_FAIL_PROBE);
	CHECK_CAUSE(v, GMT_OOM_PROBE);
	CHECK_SAYS(v, "error 801 (not supported)");
	tt_fini(&t);

	/* out of memory, then the same call and size succeeds at once: recovered, cause kept */
	holding(&t, 70 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 8 * GiB, 2, 7 * GiB, 80 * GiB);
	tt_alloc(&t, 4, "cudaMalloc", "device", 0, 0x40000000, 8 * GiB, 2);
	v = explain(&t);
	CHECK_EQ_U64(v.fclass, GMT_FAIL_RECOVERED);
	CHECK_CAUSE(v, GMT_OOM_HELD_BY_PROCESS);
	CHECK_SAYS(v, "The allocator retried at once and got the memory");
	tt_fini(&t);

	/* another size next: the program's failure */
	holding(&t, 70 * GiB, 0);
	failure(&t, 3, "cudaMalloc", 8 * GiB, 2, 7 * GiB, 80 * GiB);
	tt_alloc(&t, 4, "cudaMalloc", "device", 0, 0x40000000, 4 * GiB, 2);
	v = explain(&t);
	CHECK_EQ_U64(v.fclass, GMT_FAIL_COUNTED);
	CHECK(!strstr(v.text, "retried"));
	tt_fini(&t);
}

int
main(void)
{
	causes();
	classes();
	return 0;
}
