/*
 * @brief gmt_pyline() on hand-built line tables of both formats (no interpreter needed), and
 * gmt_unhex().
 */
#include "analysis/symbols/pyline.h"
#include "check.h"
#include "util/hex.h"

/* 3.10 (PEP 626): (offset delta, line delta) pairs from firstlineno 10. */
static void
test_pep626(void)
{
	/* [0,6) +1 -> 11; empty range +2 (line 13); [6,10) no line; [10,12) -3 -> 10 */
	static const uint8_t t[] = {6, 1, 0, 2, 4, 0x80, 2, (uint8_t)-3};
	static const int want[] = {11, 11, 11, -1, -1, 10, -1};

	for (uint32_t off = 0; off < 14; off += 2)
		CHECK_EQ_U64(gmt_pyline("3.10", t, sizeof(t), 10, off), want[off / 2]);
	CHECK(gmt_pyline("3.10", t, 0, 10, 0) == -1);
}

/* 3.11+ (PEP 657): one entry per run of code units, from firstlineno 5. */
static void
test_pep657(void)
{
	static const uint8_t t[] = {
	    0x80 | 13 << 3 | 1, 0x04,			      /* no columns, 2 units, +2 -> 7 */
	    0x80 | 15 << 3 | 0,				      /* no location, 1 unit */
	    0x80 | 11 << 3 | 0, 0x01, 0x05,		      /* one line +1 -> 8 */
	    0x80 | 14 << 3 | 2, 0x07, 0x00, 0x01, 0x02,	      /* long form, 3 units, -3 -> 5 */
	    0x80 | 3 << 3 | 0,	0x11,			      /* short form: same line */
	    0x80 | 14 << 3 | 0, 0x48, 0x03, 0x00, 0x01, 0x01, /* long, +100 (2-byte varint) */
	};
	static const int want[] = {7, 7, -1, 8, 5, 5, 5, 5, 105, -1};

	static const char *const versions[] = {"3.11", "3.12", "3.13"};

	for (size_t v = 0; v < 3; v++)
		for (uint32_t off = 0; off < 20; off += 2)
			CHECK(gmt_pyline(versions[v], t, sizeof(t), 5, off) == want[off / 2]);
	CHECK(gmt_pyline("3.12", t, sizeof(t), 5, 1) == 7); /* odd offsets: the unit's line */
	static const uint8_t bad[] = {0x05};		    /* no entry start bit */
	CHECK(gmt_pyline("3.12", bad, sizeof(bad), 1, 0) == -1);
	CHECK(gmt_pyline("3.9", t, sizeof(t), 5, 0) == -1);
	CHECK(gmt_pyline("3.14", t, sizeof(t), 5, 0) == -1);
	CHECK(gmt_pyline("3.1", t, sizeof(t), 5, 0) == -1);
	CHECK(gmt_pyline(NULL, t, sizeof(t), 5, 0) == -1);
	CHECK(gmt_pyline("3.12.1", t, sizeof(t), 5, 0) == 7);
}

static void
test_unhex(void)
{
	uint8_t out[4];

	CHECK(gmt_unhex("80aBFf", 6, out, sizeof(out)) == 3);
	CHECK(out[0] == 0x80 && out[1] == 0xab && out[2] == 0xff);
	CHECK(gmt_unhex("", 0, out, sizeof(out)) == 0);
	CHECK(gmt_unhex("801", 3, out, sizeof(out)) == -1);
	CHECK(gmt_unhex("8g", 2, out, sizeof(out)) == -1);
	CHECK(gmt_unhex("0011223344", 10, out, sizeof(out)) == -1);
}

int
main(void)
{
	test_pep626();
	test_pep657();
	test_unhex();
	return 0;
}
