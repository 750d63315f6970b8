/*
 * @brief The reorder window (src/analysis/reader/reorder.c): lines out of seq order within the
 * window come out sorted, a missing seq holds the others back until the window is full, lines
 * that sort before one already delivered go on at once marked late, and the end of the file
 * drains what waits.
 */
#include <string.h>

#include "analysis/reader/reorder.h"
#include "check.h"

#define MAX_OUT 256

struct got {
	uint64_t seq;
	uint32_t line;
	bool marker;
	bool late;
};

static struct got out[MAX_OUT];
static size_t nout, nlate;

static void
deliver(void *ctx, const struct gmt_reorder_item *item, bool late)
{
	(void)ctx;
	CHECK(nout < MAX_OUT);
	/* the item is the one pushed: its event travels with it */
	if (!item->marker)
		CHECK_EQ_U64(item->ev.seq, item->seq);
	out[nout++] = (struct got){item->seq, item->line, item->marker != 0, late};
	nlate += late;
}

static void
start(struct gmt_reorder *w, size_t window)
{
	nout = nlate = 0;
	gmt_reorder_init(w, window, deliver, NULL);
}

/* An event line @p line with @p seq. */
static void
push(struct gmt_reorder *w, uint64_t seq, uint32_t line)
{
	struct gmt_reorder_item it = {.seq = seq, .line = line};

	it.ev.seq = seq;
	it.ev.line = line;
	CHECK(gmt_reorder_push(w, &it) == 0);
}

/* Marker number @p index (of the trace's markers) at @p seq, line @p line. */
static void
push_marker(struct gmt_reorder *w, uint64_t seq, uint32_t line, uint32_t index)
{
	struct gmt_reorder_item it = {.seq = seq, .line = line, .marker = index + 1};

	CHECK(gmt_reorder_push(w, &it) == 0);
}

/* The seqs delivered so far, "1 2 3", late ones with a '!'. */
static const char *
seqs(void)
{
	static char buf[2048];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nout && len + 24 < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%llu%s%s", i ? " " : "",
					(unsigned long long)out[i].seq, out[i].marker ? "m" : "",
					out[i].late ? "!" : "");
	return buf;
}

#define CHECK_SEQS(want)                                                                           \
	do {                                                                                       \
		if (strcmp(seqs(), want) != 0) {                                                   \
			fprintf(stderr, "%s:%d: delivered \"%s\", want \"%s\"\n", __FILE__,        \
				__LINE__, seqs(), want);                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Lines in seq order go on at once: nothing waits, nothing is late. */
static void
in_order(void)
{
	struct gmt_reorder w;

	start(&w, 8);
	for (uint64_t s = 1; s <= 5; s++) {
		push(&w, s, (uint32_t)s + 1);
		CHECK_EQ_U64(nout, s);
	}
	CHECK_SEQS("1 2 3 4 5");
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_drain(&w);
	CHECK_EQ_U64(nout, 5);
	gmt_reorder_fini(&w);
}

/* Drain order (3 2 5 1 4, as two threads commit) comes out sorted as soon as the gap closes. */
static void
out_of_order(void)
{
	struct gmt_reorder w;

	start(&w, 8);
	push(&w, 3, 2);
	push(&w, 2, 3);
	push(&w, 5, 4);
	CHECK_EQ_U64(nout, 0); /* all wait for seq 1 */
	push(&w, 1, 5);
	CHECK_SEQS("1 2 3"); /* 5 waits for 4 */
	push(&w, 4, 6);
	CHECK_SEQS("1 2 3 4 5");
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_fini(&w);
}

/* Of one seq, events before markers, then by line: the order of sorting a stored trace. */
static void
ties(void)
{
	struct gmt_reorder w;

	start(&w, 8);
	push(&w, 2, 9);
	push_marker(&w, 2, 3, 0);
	push(&w, 2, 7);
	push(&w, 1, 10);
	CHECK_SEQS("1 2 2 2m");
	CHECK_EQ_U64(out[1].line, 7);
	CHECK_EQ_U64(out[2].line, 9);
	CHECK_EQ_U64(out[3].line, 3);
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_fini(&w);
}

/*
 * A seq that never comes (1) holds the others back until `window` lines wait; then the smallest
 * goes and the flow resumes after it. The missing line, when it comes after all, is late.
 */
static void
window_full(void)
{
	struct gmt_reorder w;

	start(&w, 4);
	push(&w, 2, 2);
	push(&w, 3, 3);
	push(&w, 4, 4);
	CHECK_EQ_U64(nout, 0); /* three wait: below the window */
	push(&w, 5, 5);	       /* the fourth: the window is full */
	CHECK_SEQS("2 3 4 5");
	push(&w, 6, 6); /* in order again after the given-up seq */
	CHECK_SEQS("2 3 4 5 6");
	push(&w, 1, 7); /* too late: applied after its successors */
	CHECK_SEQS("2 3 4 5 6 1!");
	CHECK_EQ_U64(nlate, 1);
	gmt_reorder_fini(&w);
}

/* Only the smallest goes when the window fills: the others still wait for their gap. */
static void
window_full_gaps(void)
{
	struct gmt_reorder w;

	start(&w, 3);
	push(&w, 2, 1);
	push(&w, 5, 2);
	push(&w, 7, 3); /* full: 2 goes (1 given up); 5 and 7 wait for 3, 4 and 6 */
	CHECK_SEQS("2");
	push(&w, 3, 4);
	CHECK_SEQS("2 3");
	push(&w, 4, 5);
	CHECK_SEQS("2 3 4 5");
	gmt_reorder_drain(&w); /* the end of the file: 7 goes without 6 */
	CHECK_SEQS("2 3 4 5 7");
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_fini(&w);
}

/*
 * A repeated seq after its first line goes on at once, not late (it sorts after it by line); one
 * that sorts before what was delivered is late, and every such line is counted.
 */
static void
repeats_and_late(void)
{
	struct gmt_reorder w;

	start(&w, 8);
	push(&w, 1, 1);
	push(&w, 2, 2);
	push(&w, 2, 3);
	CHECK_SEQS("1 2 2");
	CHECK_EQ_U64(nlate, 0);
	push(&w, 1, 4);
	push(&w, 2, 1); /* seq 2 again, from an earlier line */
	CHECK_SEQS("1 2 2 1! 2!");
	CHECK_EQ_U64(nlate, 2);
	push(&w, 3, 6); /* the flow goes on from the last line delivered in order */
	CHECK_SEQS("1 2 2 1! 2! 3");
	CHECK_EQ_U64(nlate, 2);
	gmt_reorder_fini(&w);
}

/* A window of one: nothing can wait, every line out of order goes at once. */
static void
window_one(void)
{
	struct gmt_reorder w;

	start(&w, 1);
	push(&w, 3, 1);
	CHECK_SEQS("3");
	push(&w, 2, 2);
	CHECK_SEQS("3 2!");
	push(&w, 4, 3);
	CHECK_SEQS("3 2! 4");
	CHECK_EQ_U64(nlate, 1);
	gmt_reorder_fini(&w);
}

/* Many lines in reverse blocks within the window: every one delivered once, sorted. */
static void
blocks(void)
{
	struct gmt_reorder w;
	uint32_t line = 0;

	start(&w, 64);
	for (uint64_t b = 0; b < 4; b++)
		for (uint64_t s = 50; s >= 1; s--)
			push(&w, b * 50 + s, ++line);
	gmt_reorder_drain(&w);
	CHECK_EQ_U64(nout, 200);
	for (size_t i = 0; i < nout; i++)
		CHECK_EQ_U64(out[i].seq, i + 1);
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_fini(&w);
}

/*
 * Lines drained thread by thread, each thread's in seq order, from more threads than the window
 * keeps runs: the runs take some threads, the heap the rest, and a thread's run empties and is
 * taken by another's lines. Every line comes out once, sorted.
 */
static void
threads(void)
{
	const uint64_t nthreads = GMT_REORDER_RUNS + 2;
	struct gmt_reorder w;
	uint32_t line = 0;

	start(&w, 64);
	for (uint64_t b = 0; b < 4; b++)
		for (uint64_t t = 0; t < nthreads; t++)
			for (uint64_t s = b * 60 + 1 + t; s <= b * 60 + 60; s += nthreads)
				push(&w, s, ++line);
	gmt_reorder_drain(&w);
	CHECK_EQ_U64(nout, 240);
	for (size_t i = 0; i < nout; i++)
		CHECK_EQ_U64(out[i].seq, i + 1);
	CHECK_EQ_U64(nlate, 0);
	gmt_reorder_fini(&w);
}

int
main(void)
{
	in_order();
	out_of_order();
	ties();
	window_full();
	window_full_gaps();
	repeats_and_late();
	window_one();
	blocks();
	threads();
	return 0;
}
