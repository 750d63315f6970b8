/*
 * The reader's handling of the names an event line gives (src/analysis/reader/lines.c).
 *
 * The hash that places a name in the reader's intern cache (rd_name_hash_n(), reader_int.h)
 * reads a name eight bytes at a time: it must depend on the name's bytes alone, never on a byte
 * past them, and rd_name_key() of the NUL-terminated name must be the same (its length above it);
 * the cache's compare (gmt_same_bytes()) must see every byte.
 *
 * Every event line names its op and kind, and the reader keeps what each name was read as, by
 * its length and first byte, to skip gmt_op_from_name() and gmt_kind_parse() the next time. A
 * name read from there must be the same bytes: a trace that names every kind, each next to
 * names of the same length and first byte that are no kind (and ops next to ones that are no
 * op), in both orders and again, must read as the two functions say, line by line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/reader/reader_int.h"
#include "analysis/reader/trace.h"
#include "check.h"
#include "format/event.h"
#include "format/kinds.h"
#include "tracetext.h"

static void
name_hash(void)
{
	static const char chars[] = "cudaMallocAsync_v2cuMemFreeHost0123456789";
	char a[64], b[80];

	for (size_t n = 0; n <= 40; n++) {
		for (size_t off = 0; off < 8; off++) {
			/* the same n bytes, at other alignments, followed by other bytes */
			memset(a, 'A', sizeof(a));
			memset(b, 'z', sizeof(b));
			memcpy(a, chars, n);
			memcpy(b + off, chars, n);
			uint32_t h = rd_name_hash_n(a, n);
			CHECK(rd_name_hash_n(b + off, n) == h);
			a[n] = '\0';
			CHECK(rd_name_key(a) == ((uint64_t)n << 32 | h));
			CHECK(gmt_same_bytes(a, b + off, n));
			/* any byte of the n changed: another hash (for these names; 32 bits), and
			 * not the same name */
			for (size_t i = 0; i < n; i++) {
				b[off + i] ^= 0x20;
				CHECK(rd_name_hash_n(b + off, n) != h);
				CHECK(!gmt_same_bytes(a, b + off, n));
				b[off + i] ^= 0x20;
			}
		}
	}
}

#define MAX_LINES 512

static char names[MAX_LINES][32]; /* the kind of each seq */
static char ops[MAX_LINES][32];	  /* the op of each seq */

/* A free event of seq @p seq naming @p op and @p kind (a free may name any kind it frees). */
static void
line(struct tt *t, uint64_t seq, const char *op, const char *kind)
{
	CHECK(seq < MAX_LINES);
	snprintf(names[seq], sizeof(names[seq]), "%s", kind);
	snprintf(ops[seq], sizeof(ops[seq]), "%s", op);
	tt_line(t,
		"{'type':'event','seq':%llu,'ts':%llu,'tid':1,'op':'%s','api':'cudaFree',"
		"'kind':'%s','device':0,'ptr':'0x%llx','result':0,'stack':0}",
		(unsigned long long)seq, (unsigned long long)seq, op, kind,
		(unsigned long long)(0x1000 + seq));
}

static void
ops_and_kinds(void)
{
	struct tt t;
	uint64_t seq = 1;
	size_t good = 0;

	tt_init(&t, 4242);
	for (int round = 0; round < 2; round++) {
		for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) {
			char near[32];
			const char *name = gmt_kind_str((enum gmt_tkind)k);
			size_t n = strlen(name);

			/* the same length and first byte, another last byte, then a middle one */
			snprintf(near, sizeof(near), "%s", name);
			near[n - 1] = near[n - 1] == 'x' ? 'y' : 'x';
			if (round == 0) {
				line(&t, seq++, "free", name);
				line(&t, seq++, "free", near);
			} else {
				line(&t, seq++, "free", near);
				line(&t, seq++, "free", name);
			}
			near[n - 1] = name[n - 1];
			near[n / 2] = near[n / 2] == 'x' ? 'y' : 'x';
			line(&t, seq++, "free", near);
			line(&t, seq++, "free", name);
		}
		/* ops: free and the like of it that are none, both ways round */
		line(&t, seq++, "free", "device");
		line(&t, seq++, "frex", "device");
		line(&t, seq++, "fre", "device");
		line(&t, seq++, "free", "device");
		line(&t, seq++, "fxee", "device");
		line(&t, seq++, "free", "device");
	}
	tt_trailer(&t, seq, seq - 1);

	struct gmt_trace *tr = tt_read(&t);
	for (uint64_t s = 1; s < seq; s++) {
		enum gmt_op op = gmt_op_from_name(ops[s]);
		enum gmt_tkind k = gmt_kind_parse(names[s]);
		/* what a free may be: a free of a kind the format has, none of a reading */
		bool valid = op == GMT_OP_FREE && k != GMT_TK_NONE && !gmt_kind_is_reading(k);
		const struct gmt_trace_event *ev = NULL;

		for (size_t i = 0; i < tr->nevents; i++)
			if (tr->events[i].seq == s)
				ev = &tr->events[i];
		if (!valid != !ev) {
			fprintf(stderr, "seq %llu: op '%s' kind '%s' read %s\n",
				(unsigned long long)s, ops[s], names[s],
				ev ? "as an event" : "as a bad line");
			CHECK(0);
		}
		if (ev) {
			CHECK(ev->op == GMT_OP_FREE);
			CHECK(ev->kind == (uint8_t)k);
			good++;
		}
	}
	CHECK(tr->nevents == good);
	CHECK(tr->bad_lines == (size_t)(seq - 1) - good);
	gmt_trace_free(tr);
	tt_fini(&t);
}

int
main(void)
{
	name_hash();
	ops_and_kinds();
	puts("analysis-reader-names: ok");
	return 0;
}
