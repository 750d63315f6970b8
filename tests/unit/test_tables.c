/*
 * Writer tables: live accounting per device and kind (alloc, free, failed calls, reset keeping
 * pool allocations).
 */
#include <string.h>

#include "check.h"
#include "writer/tables.h"

static struct gmt_event
ev_alloc(uint64_t ptr, uint64_t size, int dev, enum gmt_kind kind)
{
	return (struct gmt_event){
	    .op = GMT_OP_ALLOC, .ptr = ptr, .size = size, .device = dev, .kind = kind};
}

/*
 * Events reach the table out of seq order: a free takes its seq before the real call and is
 * pushed after it returns, so another thread's allocation of the same address (a larger seq)
 * can be drained in an earlier batch. The late free must not end that allocation.
 */
static void
out_of_order(void)
{
	struct gmt_live_table t = {0};
	struct gmt_event e;

	/* A: alloc p (1); A: free p takes seq 2; B: alloc p (3) drained first; then A's free */
	e = ev_alloc(0x1000, 512, 0, GMT_KIND_DEVICE);
	e.seq = 1;
	CHECK(gmt_live_apply(&t, &e));
	e = ev_alloc(0x1000, 1024, 0, GMT_KIND_DEVICE);
	e.seq = 3;
	CHECK(gmt_live_apply(&t, &e));
	e = (struct gmt_event){.op = GMT_OP_FREE, .ptr = 0x1000, .seq = 2};
	CHECK(gmt_live_apply(&t, &e));
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 1);
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_DEVICE], 1024);
	/* its own free, in order, ends it */
	e = (struct gmt_event){.op = GMT_OP_FREE, .ptr = 0x1000, .seq = 4};
	CHECK(gmt_live_apply(&t, &e));
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 0);

	/* the older allocation of an address arriving after the newer one: the newer stays */
	e = ev_alloc(0x2000, 2048, 0, GMT_KIND_DEVICE);
	e.seq = 12;
	CHECK(gmt_live_apply(&t, &e));
	e = ev_alloc(0x2000, 512, 0, GMT_KIND_DEVICE);
	e.seq = 10;
	CHECK(gmt_live_apply(&t, &e));
	e = (struct gmt_event){.op = GMT_OP_FREE, .ptr = 0x2000, .seq = 11};
	CHECK(gmt_live_apply(&t, &e));
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 1);
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_DEVICE], 2048);

	/* a reset ends what was allocated before it, not an allocation drained before it */
	e = ev_alloc(0x3000, 4096, 0, GMT_KIND_DEVICE);
	e.seq = 22;
	CHECK(gmt_live_apply(&t, &e));
	e = (struct gmt_event){.op = GMT_OP_RESET, .device = 0, .seq = 21};
	CHECK(gmt_live_apply(&t, &e));
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 1);
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_DEVICE], 4096);

	/* an unmap of a range spares a mapping made at its address after it */
	e = ev_alloc(0x40000, 1 << 16, 0, GMT_KIND_VMM_MAPPED);
	e.seq = 30;
	CHECK(gmt_live_apply(&t, &e));
	e = ev_alloc(0x40000, 1 << 17, 0, GMT_KIND_VMM_MAPPED);
	e.seq = 32;
	CHECK(gmt_live_apply(&t, &e)); /* replaces the first: its unmap comes late */
	e = (struct gmt_event){.op = GMT_OP_FREE,
			       .kind = GMT_KIND_VMM_MAPPED,
			       .ptr = 0x40000,
			       .size = 1 << 16,
			       .seq = 31};
	CHECK(gmt_live_apply(&t, &e));
	CHECK_EQ_U64(t.count[1][GMT_KIND_VMM_MAPPED], 1);
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_VMM_MAPPED], 1 << 17);
	gmt_live_free(&t);
}

int
main(void)
{
	struct gmt_live_table t = {0};
	struct gmt_live_total rows[16];
	struct gmt_event e;

	/* many allocations force growth and rehash */
	for (uint64_t i = 1; i <= 5000; i++) {
		e = ev_alloc(i * 512, 512, 0, GMT_KIND_DEVICE);
		CHECK(gmt_live_apply(&t, &e));
	}
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_DEVICE], 5000 * 512);
	for (uint64_t i = 1; i <= 5000; i += 2) {
		e = (struct gmt_event){.op = GMT_OP_FREE, .ptr = i * 512};
		CHECK(gmt_live_apply(&t, &e));
	}
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 2500);

	/* a failed free and a failed allocation change nothing */
	e = (struct gmt_event){.op = GMT_OP_FREE, .ptr = 2 * 512, .result = 1};
	gmt_live_apply(&t, &e);
	e = ev_alloc(0, 1 << 30, 0, GMT_KIND_DEVICE);
	e.result = 2;
	gmt_live_apply(&t, &e);
	CHECK_EQ_U64(t.count[1][GMT_KIND_DEVICE], 2500);

	/* other kinds and devices */
	e = ev_alloc(0x900000, 4096, 0, GMT_KIND_PINNED);
	gmt_live_apply(&t, &e);
	e = ev_alloc(0x910000, 1 << 20, 0, GMT_KIND_POOL);
	gmt_live_apply(&t, &e);
	e = ev_alloc(0x920000, 777, 1, GMT_KIND_MANAGED);
	gmt_live_apply(&t, &e);
	CHECK_EQ_U64(gmt_live_totals(&t, rows, 16), 4);

	/* reset of device 0: everything but the pool allocation goes */
	e = (struct gmt_event){.op = GMT_OP_RESET, .device = 0};
	gmt_live_apply(&t, &e);
	size_t n = gmt_live_totals(&t, rows, 16);
	CHECK_EQ_U64(n, 2);
	CHECK(rows[0].device == 0 && rows[0].kind == GMT_KIND_POOL && rows[0].bytes == 1 << 20);
	CHECK(rows[1].device == 1 && rows[1].kind == GMT_KIND_MANAGED && rows[1].bytes == 777);
	/* the table still works after the reset's tombstones */
	e = ev_alloc(512, 1024, 0, GMT_KIND_DEVICE);
	gmt_live_apply(&t, &e);
	CHECK_EQ_U64(t.bytes[1][GMT_KIND_DEVICE], 1024);
	gmt_live_free(&t);

	out_of_order();
	printf("tables: ok\n");
	return 0;
}
