/*
 * @brief Fuzz target `line`: one input is one line of a trace (or a few: the reader takes each
 * '\n' as the end of one), after a header and a modules line, read through both line parsers of
 * the reader: the fast path (flat scanners, no jansson) and jansson's (GMT_TRACE_SLOW). Both must
 * give the same events, markers and stacks (tests/analysis/fast_path.py checks the same on the
 * reports): a difference aborts, naming the input's first difference. Then the model replays
 * the trace. Its corpus: tests/fuzz/corpus/line/.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model/model.h"
#include "analysis/reader/trace.h"
#include "fuzz.h"

static const char prefix[] =
    "{\"type\":\"header\",\"format\":\"gpumemtrace\",\"version\":1,\"tracer\":\"0.1.0\",\"pid\":7,"
    "\"ppid\":1,\"host\":\"h\",\"argv\":[\"python3\",\"t.py\"],\"start_ts\":1000,"
    "\"start_unix_ns\":1,\"rank\":null,\"coverage\":\"full\",\"capture\":[\"cupti\"],"
    "\"options\":{\"ring_slots\":1024,\"flush_ms\":100,\"snapshot_ms\":1000},"
    "\"stacks\":{\"native\":true,\"python\":\"3.12\",\"depth\":64}}\n"
    "{\"type\":\"modules\",\"seq\":0,\"modules\":[{\"path\":\"/nonexistent/fuzz/python3\","
    "\"base\":\"0x555500000000\",\"build_id\":\"00\",\"segments\":[[0,65536]]}]}\n";

static struct gmt_trace *
read_trace(const char *path, bool slow)
{
	struct gmt_read_options opt = GMT_READ_OPTIONS_INIT;
	struct gmt_trace *t = NULL;

	opt.slow = slow;
	gmt_trace_read(path, fuzz_devnull(), &opt, &t);
	return t;
}

static void __attribute__((noreturn)) differ(const char *what, size_t i)
{
	fprintf(stderr, "fuzz_line: the fast path and jansson read the line differently: %s %zu\n",
		what, i);
	abort();
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* What both parsers must agree on: every event, marker and stack (the model reads no more). */
static void
compare(const struct gmt_trace *a, const struct gmt_trace *b)
{
	if (!a != !b)
		differ("trace readable", 0);
	if (!a)
		return;
	if (a->nevents != b->nevents)
		differ("events", a->nevents);
	for (size_t i = 0; i < a->nevents; i++) {
		const struct gmt_trace_event x = a->events[i], y = b->events[i];

		/* names by their text: the interned indices follow the order names were met */
		if (!same_str(gmt_trace_string(a, x.api), gmt_trace_string(b, y.api)) ||
		    !same_str(gmt_trace_driver(a, x.driver), gmt_trace_driver(b, y.driver)))
			differ("event names", i);
		/* field by field: the struct's padding is nobody's */
		if (x.seq != y.seq || x.ts != y.ts || x.ptr != y.ptr || x.size != y.size ||
		    x.handle != y.handle || x.offset != y.offset || x.context != y.context ||
		    x.free_bytes != y.free_bytes || x.total_bytes != y.total_bytes ||
		    x.requested != y.requested || x.stack != y.stack || x.line != y.line ||
		    x.device != y.device || x.result != y.result || x.op != y.op ||
		    x.kind != y.kind || x.flags != y.flags)
			differ("event", i);
	}
	if (a->nmarkers != b->nmarkers)
		differ("markers", a->nmarkers);
	for (size_t i = 0; i < a->nmarkers; i++)
		if (a->markers[i].seq != b->markers[i].seq ||
		    !same_str(a->markers[i].label, b->markers[i].label))
			differ("marker", i);
	if (a->nstacks != b->nstacks)
		differ("stacks", a->nstacks);
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct gmt_trace_stack *x = &a->stacks[i], *y = &b->stacks[i];

		if (x->id != y->id || x->nframes != y->nframes || x->npy != y->npy ||
		    x->cut != y->cut || x->pystate != y->pystate)
			differ("stack", i);
		for (uint32_t k = 0; k < x->nframes; k++)
			if (gmt_trace_frame(a, x, k) != gmt_trace_frame(b, y, k))
				differ("stack frame", i);
		for (uint32_t k = 0; k < x->npy; k++)
			if (x->py[k].code != y->py[k].code || x->py[k].offset != y->py[k].offset ||
			    x->py[k].entry != y->py[k].entry)
				differ("stack python frame", i);
	}
	if (a->bad_lines != b->bad_lines)
		differ("bad lines", a->bad_lines);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_memfile(3, (const void *[]){prefix, data, "\n"},
					(size_t[]){sizeof(prefix) - 1, size, 1});
	struct gmt_trace *fast = read_trace(path, false), *slow = read_trace(path, true);

	compare(fast, slow);
	if (fast)
		gmt_model_free(gmt_model_build(fast));
	gmt_trace_free(fast);
	gmt_trace_free(slow);
	return 0;
}
