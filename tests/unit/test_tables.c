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
	return (struct gmt_event){.op = GMT_OP_ALLOC, .ptr = ptr, .size = size, .device = dev, .kind = kind};
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

	printf("tables: ok\n");
	return 0;
}
