/*
 * @brief The replay (src/analysis/model/): frees paired with their allocations, double and
 * unknown frees, the kinds and what adds up to held memory, resets of a context and of a whole
 * device, handle references (retain, release) and readings (usage). Every scenario runs twice:
 * on the stored trace (gmt_model_build()) and streamed into the model as the CLI reads
 * (gmt_trace_read_sink()), and both must give the same figures.
 */
#include <string.h>

#include "analysis/model/model.h"
#include "check.h"
#include "tracetext.h"

#define MiB (1024 * 1024ULL)

struct run {
	struct gmt_trace *t;
	struct gmt_model *m;
};

struct feed {
	struct gmt_model *m;
};

static void
feed_event(void *ctx, const struct gmt_trace *t, const struct gmt_trace_event *ev)
{
	struct feed *f = ctx;

	if (!f->m)
		CHECK((f->m = gmt_model_new(t, NULL)));
	gmt_model_event(f->m, ev);
}

static void
feed_marker(void *ctx, const struct gmt_trace *t, const struct gmt_trace_marker *mk)
{
	struct feed *f = ctx;

	if (!f->m)
		CHECK((f->m = gmt_model_new(t, NULL)));
	gmt_model_marker(f->m, mk);
}

static struct run
replay(const struct tt *text, bool streamed)
{
	struct run r = {0};
	const char *said;

	if (!streamed) {
		r.t = tt_read(text);
		CHECK((r.m = gmt_model_build(r.t)));
	} else {
		char *path = tt_file(text);
		struct feed f = {0};
		struct gmt_trace_sink sink = {
		    .event = feed_event, .marker = feed_marker, .ctx = &f};

		CHECK(gmt_trace_read_sink(path, tt_diag_stream(), NULL, &sink, &r.t, NULL) ==
		      GMT_TRACE_OK);
		CHECK(f.m);
		CHECK(gmt_model_finish(f.m) == 0);
		r.m = f.m;
		free(path);
	}
	CHECK(r.m->error == 0);
	/* every line of the test is one the reader takes */
	said = tt_diag();
	if (strcmp(said, "") != 0) {
		fprintf(stderr, "the reader said: %s", said);
		exit(1);
	}
	return r;
}

static void
done(struct run *r)
{
	gmt_model_free(r->m);
	gmt_trace_free(r->t);
}

static const struct gmt_device_stats *
device(const struct gmt_model *m, int32_t dev)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].device == dev)
			return &m->devices[i];
	fprintf(stderr, "no device %d in the model\n", dev);
	exit(1);
}

static const struct gmt_kind_stats *
kind(const struct gmt_model *m, int32_t dev, enum gmt_tkind k)
{
	return &device(m, dev)->kinds[k];
}

/* A failed call (@p result) of @p op at @p seq. */
static void
failed(struct tt *t,
       uint64_t seq,
       const char *op,
       const char *api,
       uint64_t ptr,
       uint64_t size,
       int result)
{
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'%s','api':'%s','kind':'device',"
		"'device':0,'ptr':'0x%llx','size':%llu,'result':%d}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, op, api,
		(unsigned long long)ptr, (unsigned long long)size, result);
}

/*
 * Pairing by address: a free ends its allocation; a second free of the same address, a free of
 * an address never allocated and a failed free change nothing (counted apart); an allocation at
 * a live address ends the one before (its free was lost); what is live at the end is the leak.
 */
static void
pairing(bool streamed)
{
	struct tt t;
	struct run r;
	const struct gmt_kind_stats *dev;

	tt_init(&t, 10);
	tt_alloc(&t, 1, "cudaMalloc", "device", 0, 0x1000, 100, 1);
	tt_alloc(&t, 2, "cudaMalloc", "device", 0, 0x2000, 200, 2);
	tt_free(&t, 3, "cudaFree", "device", 0, 0x1000);
	tt_free(&t, 4, "cudaFree", "device", 0, 0x1000); /* double free */
	tt_free(&t, 5, "cudaFree", "device", 0, 0x9000); /* never allocated */
	failed(&t, 6, "free", "cudaFree", 0x2000, 0, 1); /* failed: 0x2000 stays */
	tt_alloc(&t, 7, "cudaMalloc", "device", 0, 0x3000, 400, 1);
	tt_alloc(&t, 8, "cudaMalloc", "device", 0, 0x3000, 50, 3); /* 0x3000 again, never freed */
	tt_alloc(&t, 9, "cudaMalloc", "device", 0, 0, 0, 1);	   /* size 0: nothing */
	failed(&t, 10, "alloc", "cudaMalloc", 0, 1 << 30, 2);	   /* out of memory */
	tt_trailer(&t, 11000, 10);
	r = replay(&t, streamed);

	CHECK_EQ_U64(r.m->allocations, 4);
	CHECK_EQ_U64(r.m->frees, 1);
	CHECK_EQ_U64(r.m->unmatched_frees, 2);
	CHECK_EQ_U64(r.m->failed_frees, 1);
	CHECK_EQ_U64(r.m->reused_addresses, 1);
	CHECK_EQ_U64(r.m->nfailed, 1);
	CHECK_EQ_U64(r.m->failed[0]->seq, 10);
	CHECK_EQ_U64(r.m->nfailed_counted, 1);
	dev = kind(r.m, 0, GMT_TK_DEVICE);
	CHECK_EQ_U64(dev->live, 250); /* 0x2000 and the second 0x3000 */
	CHECK_EQ_U64(dev->live_allocs, 2);
	CHECK_EQ_U64(dev->allocations, 4);
	/* the peak: 0x2000 and the first 0x3000, after seq 7 */
	CHECK_EQ_U64(dev->peak.bytes, 600);
	CHECK_EQ_U64(dev->peak.seq, 7);
	CHECK_EQ_U64(device(r.m, 0)->peak.bytes, 600);
	CHECK_EQ_U64(device(r.m, 0)->held, 250);
	/* leaks, largest first, by stack */
	CHECK_EQ_U64(r.m->nleaks, 2);
	CHECK_EQ_U64(r.m->leaks[0].stack, 2);
	CHECK_EQ_U64(r.m->leaks[0].bytes, 200);
	CHECK_EQ_U64(r.m->leaks[1].stack, 3);
	CHECK_EQ_U64(r.m->leaks[1].bytes, 50);
	CHECK_EQ_U64(r.m->live_end_bytes, 250);
	CHECK_EQ_U64(r.m->live_end_allocations, 2);
	done(&r);
	tt_fini(&t);
}

/*
 * Kinds: each its own live bytes and peak; held = device + array + vmm_physical + the larger of
 * pool and pool_reserve + graph_reserve. Host memory, managed memory and address space are
 * tracked but not held; only the kinds a process allocates add up in the leak total.
 */
static void
kinds(bool streamed)
{
	struct tt t;
	struct run r;
	const struct gmt_device_stats *d;

	tt_init(&t, 11);
	tt_alloc(&t, 1, "cudaMalloc", "device", 0, 0x1000, 1 * MiB, 1);
	tt_alloc(&t, 2, "cudaMallocHost", "pinned", 0, 0x2000, 2 * MiB, 1);
	tt_alloc(&t, 3, "cudaMallocManaged", "managed", 0, 0x3000, 4 * MiB, 1);
	tt_alloc(&t, 4, "cudaHostRegister", "registered", 0, 0x4000, 8 * MiB, 1);
	tt_alloc(&t, 5, "cuMemAddressReserve", "vmm_reserve", 0, 0x1000, 64 * MiB, 1);
	tt_alloc(&t, 6, "cudaMallocAsync", "pool", 0, 0x5000, 3 * MiB, 1);
	/* the pool's reservation: 5 MiB, more than its live allocations (3 MiB) */
	tt_line(&t,
		"{'type':'event','seq':7,'ts':7000,'tid':1,'op':'usage','api':'cudaMallocAsync',"
		"'kind':'pool_reserve','device':0,'pool':'0xabc','size':%llu,'result':0}",
		(unsigned long long)(5 * MiB));
	tt_alloc(&t, 8, "cudaMallocArray", "array", 0, 0x77, 16 * MiB, 1);
	/* the device address 0x1000 is also the reservation's: separate tables, the free ends the
	 * allocation only */
	tt_free(&t, 9, "cudaFree", "device", 0, 0x1000);
	tt_trailer(&t, 10000, 9);
	r = replay(&t, streamed);

	d = device(r.m, 0);
	CHECK_EQ_U64(r.m->allocations, 7);
	CHECK_EQ_U64(r.m->frees, 1);
	CHECK_EQ_U64(r.m->unmatched_frees, 0);
	CHECK_EQ_U64(d->kinds[GMT_TK_DEVICE].live, 0);
	CHECK_EQ_U64(d->kinds[GMT_TK_DEVICE].peak.bytes, 1 * MiB);
	CHECK_EQ_U64(d->kinds[GMT_TK_VMM_RESERVE].live, 64 * MiB);
	CHECK_EQ_U64(d->kinds[GMT_TK_PINNED].live, 2 * MiB);
	CHECK_EQ_U64(d->kinds[GMT_TK_POOL].live, 3 * MiB);
	CHECK_EQ_U64(d->kinds[GMT_TK_POOL_RESERVE].live, 5 * MiB);
	CHECK_EQ_U64(d->kinds[GMT_TK_ARRAY].live, 16 * MiB);
	/* held at the peak (after the array): device 1 + pool_reserve 5 + array 16 */
	CHECK_EQ_U64(d->peak.bytes, 22 * MiB);
	CHECK_EQ_U64(d->peak.seq, 8);
	CHECK_EQ_U64(d->peak_by_kind[GMT_TK_POOL], 3 * MiB);
	CHECK_EQ_U64(d->held, 21 * MiB);
	CHECK_EQ_U64(d->pool_live_at_reserve_peak, 3 * MiB);
	/* counted at exit: pinned 2 + managed 4 + pool 3 + array 16 (not registered, not the
	 * reservation) */
	CHECK_EQ_U64(r.m->live_end_bytes, 25 * MiB);
	CHECK_EQ_U64(r.m->live_end_allocations, 4);
	CHECK_EQ_U64(r.m->nleaks, 6); /* every kind is listed */
	CHECK_EQ_U64(r.m->leaks[0].kind, GMT_TK_VMM_RESERVE);
	done(&r);
	tt_fini(&t);
}

/* A reset event: with @p context 0 none is named (the whole device). */
static void
reset(struct tt *t, uint64_t seq, int device, uint64_t context)
{
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'reset','api':'cudaDeviceReset',"
		"'device':%d,'context':%llu,'result':0}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, device,
		(unsigned long long)context);
}

/* An allocation of @p kind in @p context. */
static void
ctx_alloc(struct tt *t,
	  uint64_t seq,
	  const char *kind,
	  int device,
	  uint64_t context,
	  uint64_t ptr,
	  uint64_t size)
{
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'alloc','api':'cudaMalloc',"
		"'kind':'%s','device':%d,'context':%llu,'ptr':'0x%llx','size':%llu,'result':0}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, kind, device,
		(unsigned long long)context, (unsigned long long)ptr, (unsigned long long)size);
}

/*
 * A reset of a context ends that context's allocations and those of no known context on its
 * device, of the kinds a context owns; pool memory survives, and so do other contexts and
 * other devices. A reset without a context ends the whole device's.
 */
static void
resets(bool streamed)
{
	struct tt t;
	struct run r;

	tt_init(&t, 12);
	ctx_alloc(&t, 1, "device", 0, 1, 0x1000, 100);	/* context 1: ends */
	ctx_alloc(&t, 2, "device", 0, 2, 0x2000, 200);	/* context 2: stays */
	ctx_alloc(&t, 3, "device", 0, 0, 0x3000, 400);	/* no context, device 0: ends */
	ctx_alloc(&t, 4, "pinned", 0, 1, 0x4000, 800);	/* context 1, host memory: ends */
	ctx_alloc(&t, 5, "pool", 0, 1, 0x5000, 1600);	/* a pool's: survives */
	ctx_alloc(&t, 6, "device", 1, 3, 0x6000, 3200); /* device 1: stays */
	ctx_alloc(&t, 7, "device", 1, 4, 0x7000, 6400); /* device 1, context 4 */
	reset(&t, 8, 0, 1);
	tt_free(&t, 9, "cudaFree", "device", 0, 0x1000); /* already ended by the reset */
	r = replay(&t, streamed);
	CHECK_EQ_U64(r.m->resets, 1);
	CHECK_EQ_U64(r.m->unmatched_frees, 1);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_DEVICE)->live, 200);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_PINNED)->live, 0);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_POOL)->live, 1600);
	CHECK_EQ_U64(kind(r.m, 1, GMT_TK_DEVICE)->live, 9600);
	CHECK_EQ_U64(r.m->live_end_bytes, 200 + 1600 + 9600);
	done(&r);

	/* the same, then device 1 reset without a context: both its contexts end */
	reset(&t, 10, 1, 0);
	r = replay(&t, streamed);
	CHECK_EQ_U64(r.m->resets, 2);
	CHECK_EQ_U64(kind(r.m, 1, GMT_TK_DEVICE)->live, 0);
	CHECK_EQ_U64(kind(r.m, 1, GMT_TK_DEVICE)->peak.bytes, 9600);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_DEVICE)->live, 200);
	CHECK_EQ_U64(r.m->live_end_bytes, 200 + 1600);
	CHECK_EQ_U64(r.m->nleaks, 2);
	done(&r);
	tt_fini(&t);
}

/* A VMM handle event (@p op alloc, free or retain) of @p api on handle @p h. */
static void
handle_ev(struct tt *t, uint64_t seq, const char *op, const char *api, uint64_t h, uint64_t size)
{
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'%s','api':'%s',"
		"'kind':'vmm_physical','device':0,'ptr':'0x%llx','size':%llu,'result':0}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, op, api,
		(unsigned long long)h, (unsigned long long)size);
}

/* A usage line: a reading of @p kind (pool_reserve of pool @p pool, or graph_reserve). */
static void
usage(struct tt *t, uint64_t seq, const char *kind, uint64_t pool, uint64_t bytes)
{
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'usage','api':'cudaGraphLaunch',"
		"'kind':'%s','device':0,'pool':'0x%llx','size':%llu,'result':0}",
		(unsigned long long)seq, (unsigned long long)seq * 1000, kind,
		(unsigned long long)pool, (unsigned long long)bytes);
}

/*
 * Handle references: create 1, retain +1, release -1; the physical memory stays until the last
 * reference goes. A retain or release of a handle never created is unmatched. Readings: the
 * latest per pool, summed per device; the graph pool's latest; each with its own peak.
 */
static void
retain_usage(bool streamed)
{
	struct tt t;
	struct run r;

	tt_init(&t, 13);
	handle_ev(&t, 1, "alloc", "cuMemCreate", 0x51, 2 * MiB);
	handle_ev(&t, 2, "retain", "cuMemRetainAllocationHandle", 0x51, 0);
	handle_ev(&t, 3, "free", "cuMemRelease", 0x51, 0);		    /* one reference left */
	handle_ev(&t, 4, "retain", "cuMemRetainAllocationHandle", 0x99, 0); /* unknown */
	usage(&t, 5, "pool_reserve", 0xa, 1000);
	usage(&t, 6, "pool_reserve", 0xb, 500);
	usage(&t, 7, "pool_reserve", 0xa, 200); /* pool a shrinks: 200 + 500 */
	usage(&t, 8, "graph_reserve", 0, 100);
	usage(&t, 9, "graph_reserve", 0, 300);
	usage(&t, 10, "graph_reserve", 0, 0); /* trimmed */
	r = replay(&t, streamed);
	CHECK_EQ_U64(r.m->retains, 1);
	CHECK_EQ_U64(r.m->unmatched_retains, 1);
	CHECK_EQ_U64(r.m->frees, 1);
	CHECK_EQ_U64(r.m->readings, 6);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_VMM_PHYSICAL)->live, 2 * MiB);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_POOL_RESERVE)->live, 700);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_POOL_RESERVE)->live_allocs, 2);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_POOL_RESERVE)->peak.bytes, 1500);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_POOL_RESERVE)->peak.seq, 6);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_GRAPH_RESERVE)->live, 0);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_GRAPH_RESERVE)->peak.bytes, 300);
	/* held at its peak: the handle 2 MiB + both pools' 1500 (seq 6), more than with the graph
	 * pool's 300 and the pools' 700 later (seq 9) */
	CHECK_EQ_U64(device(r.m, 0)->peak.bytes, 2 * MiB + 1500);
	CHECK_EQ_U64(device(r.m, 0)->peak.seq, 6);
	CHECK_EQ_U64(device(r.m, 0)->held, 2 * MiB + 700);
	done(&r);

	/* the last reference goes: the memory with it; one more release matches nothing */
	handle_ev(&t, 11, "free", "cuMemRelease", 0x51, 0);
	handle_ev(&t, 12, "free", "cuMemRelease", 0x51, 0);
	r = replay(&t, streamed);
	CHECK_EQ_U64(r.m->frees, 2);
	CHECK_EQ_U64(r.m->unmatched_frees, 1);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_VMM_PHYSICAL)->live, 0);
	CHECK_EQ_U64(kind(r.m, 0, GMT_TK_VMM_PHYSICAL)->live_allocs, 0);
	done(&r);
	tt_fini(&t);
}

int
main(void)
{
	for (int streamed = 0; streamed < 2; streamed++) {
		pairing(streamed);
		kinds(streamed);
		resets(streamed);
		retain_usage(streamed);
	}
	return 0;
}
