/*
 * The bounded writer (src/writer/bounded.c) on synthetic events: which pairs it leaves out,
 * what it must keep (a segment's maximum, what lies across a marker, what decides a failure's
 * class), seq order and holes, an address reused within a bucket, and its elided lines; the
 * PyTorch layer's block lines and their elided_blocks lines.
 * tests/bounded compares whole reports; this checks the rules one by one (and runs under ASan).
 */
#include <string.h>

#include "check.h"
#include "format/elided.h"
#include "format/jsonl.h"
#include "format/torch_entry.h"
#include "writer/bounded.h"

#define MAXW 4096
static struct gmt_event written[MAXW];
static size_t nwritten;
static struct gmt_buf out;

static void
emit(const struct gmt_event *ev)
{
	CHECK(nwritten < MAXW);
	written[nwritten++] = *ev;
}

static uint64_t seq;

/* A new writer: seqs start at 1 again, as in a new process. */
static void
start(void)
{
	struct gmt_bounded_config cfg = {
	    .bucket_ns = 1000000000ULL, .max_events = 1u << 16, .out = &out, .emit = emit};
	gmt_bounded_fini();
	CHECK(gmt_bounded_init(&cfg));
	nwritten = 0;
	gmt_buf_reset(&out);
	seq = 0;
}
static const uint64_t T0 = 1000000000000ULL;

static struct gmt_event
ev(enum gmt_op op, uint64_t ptr, uint64_t size)
{
	seq++;
	return (struct gmt_event){.seq = seq,
				  .ts_ns = T0 + seq,
				  .op = (uint8_t)op,
				  .ptr = ptr,
				  .size = op == GMT_OP_ALLOC ? size : 0,
				  .kind = GMT_KIND_DEVICE,
				  .api = op == GMT_OP_ALLOC ? GMT_API_cudaMalloc : GMT_API_cudaFree,
				  .stack = 7};
}

static void
push(enum gmt_op op, uint64_t ptr, uint64_t size)
{
	struct gmt_event e = ev(op, ptr, size);
	gmt_bounded_push(&e);
}

static bool
was_written(uint64_t s)
{
	for (size_t i = 0; i < nwritten; i++)
		if (written[i].seq == s)
			return true;
	return false;
}

/* The elided lines written so far, as a C string (the buffer has no terminator of its own). */
static const char *
text(void)
{
	gmt_buf_append(&out, "", 1);
	out.len--;
	return out.data;
}

static size_t
count(const char *needle)
{
	size_t n = 0;
	for (const char *p = text(); p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* 100 pairs one after another: the first reaches the segment's maximum and the last is the
 * segment's last allocation (the replay's temporaries need it); the 98 others go. */
static void
plain_churn(void)
{
	start();
	uint64_t first = seq + 1;
	for (int i = 0; i < 100; i++) {
		push(GMT_OP_ALLOC, 0x1000 + (uint64_t)i * 0x100, 4096);
		push(GMT_OP_FREE, 0x1000 + (uint64_t)i * 0x100, 0);
	}
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK_EQ_U64(nwritten, 4);
	CHECK(was_written(first) && was_written(first + 1));
	CHECK(was_written(seq - 1) && was_written(seq));
	CHECK_EQ_U64(gmt_bounded_stats()->elided, 196);
	CHECK_EQ_U64(count("\"type\":\"elided\""), 1);
	CHECK(strstr(text(), "\"allocations\":98,\"bytes\":401408,\"temporaries\":98"));
	CHECK(strstr(text(), "\"sizes\":[[12,98,401408]]"));
	/* written lines in seq order */
	for (size_t i = 1; i < nwritten; i++)
		CHECK(written[i].seq > written[i - 1].seq);
}

/* A rising then falling ramp: everything live at the maximum is kept, with its frees. */
static void
ramp(void)
{
	start();
	uint64_t a[10];
	for (int i = 0; i < 10; i++) {
		a[i] = seq + 1;
		push(GMT_OP_ALLOC, 0x10000 + (uint64_t)i * 0x1000, 1000 + (uint64_t)i);
	}
	for (int i = 0; i < 10; i++)
		push(GMT_OP_FREE, 0x10000 + (uint64_t)i * 0x1000, 0);
	/* a smaller pair later: below the maximum, left out */
	uint64_t small = seq + 1;
	push(GMT_OP_ALLOC, 0x90000, 10);
	push(GMT_OP_FREE, 0x90000, 0);
	push(GMT_OP_ALLOC, 0x91000, 10); /* the last allocation: kept */
	push(GMT_OP_FREE, 0x91000, 0);
	gmt_bounded_cut(T0 + seq + 1, true);
	for (int i = 0; i < 10; i++)
		CHECK(was_written(a[i]));
	CHECK_EQ_U64(nwritten, 22);
	CHECK(!was_written(small) && !was_written(small + 1));
}

/* A marker is a cut: a pair around it is kept, pairs on either side may go. */
static void
marker_cut(void)
{
	start();
	push(GMT_OP_ALLOC, 0x1000, 4096); /* 1: the maximum of segment 1, kept */
	push(GMT_OP_FREE, 0x1000, 0);
	push(GMT_OP_ALLOC, 0x2000, 100); /* 3: left out */
	push(GMT_OP_FREE, 0x2000, 0);
	uint64_t across = seq + 1;
	push(GMT_OP_ALLOC, 0x3000, 50); /* live at the marker */
	struct gmt_event m = ev(GMT_OP_MARKER, 0, 0);
	m.kind = 0;
	gmt_bounded_push(&m);
	push(GMT_OP_FREE, 0x3000, 0);
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK(was_written(across) && was_written(m.seq) && was_written(m.seq + 1));
	CHECK_EQ_U64(gmt_bounded_stats()->elided, 2);
}

/* An out-of-memory failure: the next attempt on the device decides its class, so it is kept
 * even below the segment's maximum. */
static void
failure_decider(void)
{
	start();
	push(GMT_OP_ALLOC, 0x1000, 1 << 20);
	push(GMT_OP_FREE, 0x1000, 0);
	struct gmt_event f = ev(GMT_OP_ALLOC, 0, 1ULL << 40);
	f.result = 2;
	gmt_bounded_push(&f);
	uint64_t retry = seq + 1;
	push(GMT_OP_ALLOC, 0x2000, 16); /* decides the failure: kept */
	push(GMT_OP_FREE, 0x2000, 0);
	uint64_t big = seq + 1;
	push(GMT_OP_ALLOC, 0x3000, 2 << 20); /* a new peak: kept */
	push(GMT_OP_FREE, 0x3000, 0);
	uint64_t later = seq + 1;
	push(GMT_OP_ALLOC, 0x4000, 8); /* neither: left out */
	push(GMT_OP_FREE, 0x4000, 0);
	push(GMT_OP_ALLOC, 0x5000, 8); /* the last allocation: kept */
	push(GMT_OP_FREE, 0x5000, 0);
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK(was_written(f.seq) && was_written(retry) && was_written(retry + 1));
	CHECK(was_written(big) && was_written(big + 1));
	CHECK(!was_written(later) && !was_written(later + 1));
}

/* Seq holes: what follows a missing seq waits for it (for a while); a late line is counted. */
static void
holes(void)
{
	start();
	uint64_t base = seq;
	struct gmt_event e[6];
	for (int i = 0; i < 6; i++)
		e[i] =
		    ev(i % 2 ? GMT_OP_FREE : GMT_OP_ALLOC, 0x1000 + (uint64_t)(i / 2) * 0x100, 64);
	/* everything before base was cut already; 3 (the second alloc) is missing for now */
	gmt_bounded_push(&e[0]);
	gmt_bounded_push(&e[1]);
	gmt_bounded_push(&e[3]);
	gmt_bounded_push(&e[4]);
	gmt_bounded_push(&e[5]);
	uint64_t upto = gmt_bounded_cut(T0 + seq, false); /* the hole is young */
	CHECK_EQ_U64(upto, base + 2);
	gmt_bounded_push(&e[2]);
	upto = gmt_bounded_cut(T0 + seq, false);
	CHECK_EQ_U64(upto, base + 6);
	CHECK_EQ_U64(gmt_bounded_stats()->late, 0);
	/* a hole older than the grace time is given up on; its line, when it comes, is late */
	struct gmt_event g[3] = {ev(GMT_OP_ALLOC, 0x5000, 8), ev(GMT_OP_FREE, 0x5000, 0),
				 ev(GMT_OP_ALLOC, 0x6000, 8)};
	gmt_bounded_push(&g[0]);
	gmt_bounded_push(&g[2]);
	upto = gmt_bounded_cut(g[2].ts_ns + 1000000000ULL, false);
	CHECK_EQ_U64(upto, g[2].seq);
	gmt_bounded_push(&g[1]);
	gmt_bounded_cut(g[2].ts_ns + 1000000000ULL, true);
	CHECK_EQ_U64(gmt_bounded_stats()->late, 1);
	CHECK(was_written(g[0].seq) && was_written(g[1].seq)); /* written across the cut */
}

/* An address handed out again within a bucket pairs each free with its own allocation. */
static void
reuse(void)
{
	start();
	push(GMT_OP_ALLOC, 0x1000, 4096); /* the maximum: kept */
	push(GMT_OP_FREE, 0x1000, 0);
	push(GMT_OP_ALLOC, 0x1000, 100);
	push(GMT_OP_FREE, 0x1000, 0);
	push(GMT_OP_ALLOC, 0x1000, 200);
	push(GMT_OP_FREE, 0x1000, 0);
	push(GMT_OP_ALLOC, 0x2000, 8); /* the last allocation: kept */
	push(GMT_OP_FREE, 0x2000, 0);
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK_EQ_U64(nwritten, 4);
	CHECK(strstr(text(), "\"allocations\":2,\"bytes\":300"));
	/* a free that arrives before its allocation's line (drain order) is sorted into place */
	start();
	struct gmt_event a = ev(GMT_OP_ALLOC, 0x7000, 4096), f = ev(GMT_OP_FREE, 0x7000, 0);
	struct gmt_event a2 = ev(GMT_OP_ALLOC, 0x8000, 64), f2 = ev(GMT_OP_FREE, 0x8000, 0);
	struct gmt_event a3 = ev(GMT_OP_ALLOC, 0x9000, 64), f3 = ev(GMT_OP_FREE, 0x9000, 0);
	gmt_bounded_push(&f2);
	gmt_bounded_push(&a2);
	gmt_bounded_push(&f);
	gmt_bounded_push(&a);
	gmt_bounded_push(&a3);
	gmt_bounded_push(&f3);
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK_EQ_U64(nwritten, 4);
	CHECK(written[0].seq == a.seq && written[1].seq == f.seq);
	CHECK(!was_written(a2.seq) && !was_written(f2.seq));
}

/* Pool allocations are never left out (the report's pool slack needs them), and they cut. */
static void
pool_kept(void)
{
	start();
	for (int i = 0; i < 10; i++) {
		struct gmt_event e = ev(GMT_OP_ALLOC, 0x1000, 64);
		e.kind = GMT_KIND_POOL;
		gmt_bounded_push(&e);
		e = ev(GMT_OP_FREE, 0x1000, 0);
		e.kind = GMT_KIND_POOL;
		gmt_bounded_push(&e);
	}
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK_EQ_U64(nwritten, 20);
	CHECK_EQ_U64(gmt_bounded_stats()->elided, 0);
}

/* A PyTorch block line of @p action (torch_entry.h) on device 0, from @p stack. */
static void
push_block(unsigned action, uint64_t ptr, uint64_t size, uint32_t stack)
{
	seq++;
	struct gmt_event e = {.seq = seq,
			      .ts_ns = T0 + seq,
			      .op = GMT_OP_BLOCK,
			      .torch_action = (uint8_t)action,
			      .device = 0,
			      .ptr = ptr,
			      .size = size,
			      .cuda_flags = GMT_TORCH_F_HAS_DEVICE,
			      .stack = stack};
	gmt_bounded_push(&e);
}

static void
push_triple(uint64_t ptr, uint64_t size, uint32_t stack)
{
	push_block(GMT_TORCH_ALLOC, ptr, size, stack);
	push_block(GMT_TORCH_FREE_REQUESTED, ptr, 0, stack);
	push_block(GMT_TORCH_FREE_COMPLETED, ptr, 0, stack);
}

/* The tensor level: in a 2 MiB segment, 60 blocks allocated and freed one after another from two
 * sites (one of them in the middle of each other's place). The first reaches the device's
 * allocated maximum: kept, all three lines, with the segment's line; the 59 others are left out
 * and counted per site (stack, device) in elided_blocks lines: their blocks and the bytes the
 * allocator rounded them to (1000 -> 1024, 3000 -> 3072), as memory_allocated() counted them. */
static void
block_churn(void)
{
	start();
	uint64_t seg = 0x7f0000000000ULL;
	push_block(GMT_TORCH_SEGMENT_ALLOC, seg, 2u << 20, 0);
	uint64_t first = seq + 1;
	push_triple(seg, 3000, 5);
	for (int i = 0; i < 29; i++)
		push_triple(seg, 3000, 5);
	for (int i = 0; i < 30; i++)
		push_triple(seg, 1000, 6);
	gmt_bounded_cut(T0 + seq + 1, true);
	CHECK_EQ_U64(nwritten, 4);
	CHECK(was_written(1) && was_written(first) && was_written(first + 1) &&
	      was_written(first + 2));
	CHECK_EQ_U64(gmt_bounded_stats()->elided, 59 * 3);
	CHECK_EQ_U64(count("\"type\":\"" GMT_ELIDED_BLOCKS_TYPE "\""), 2);
	CHECK_EQ_U64(count("\"type\":\"" GMT_ELIDED_TYPE "\""), 0);
	CHECK(strstr(text(), "\"device\":0,\"allocations\":29,\"bytes\":89088,\"stack\":5}"));
	CHECK(strstr(text(), "\"device\":0,\"allocations\":30,\"bytes\":30720,\"stack\":6}"));
	/* each line carries the last free completed it counts */
	char last[64];
	snprintf(last, sizeof(last), "\"seq\":%llu,", (unsigned long long)seq);
	CHECK(strstr(text(), last));
}

int
main(void)
{
	plain_churn();
	ramp();
	marker_cut();
	failure_decider();
	holes();
	reuse();
	pool_kept();
	block_churn();
	gmt_bounded_fini();
	gmt_buf_free(&out);
	return 0;
}
