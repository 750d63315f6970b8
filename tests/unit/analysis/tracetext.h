/*
 * @brief Small traces written in the test, read through the library as the CLI reads them.
 *
 * A test builds its trace line by line (tt_line() takes JSON with ' for ", the other helpers
 * write the usual event lines), then reads it through the session (reader, reorder window,
 * model, symbolized stacks) or the reader alone. The files go to a temporary directory that is
 * removed at exit.
 */
#ifndef GMT_TESTS_UNIT_ANALYSIS_TRACETEXT_H
#define GMT_TESTS_UNIT_ANALYSIS_TRACETEXT_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "analysis/reader/trace.h"

struct gmt_session;

/** A trace being written: its lines so far. */
struct tt {
	char *text;
	size_t len, cap;
};

/** A new trace with its header line (pid @p pid, start_ts 0). */
void tt_init(struct tt *t, long pid);
void tt_fini(struct tt *t);

/** Append one line: printf @p fmt, every ' written as " (the JSON of a test stays readable). */
void tt_line(struct tt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** An `alloc` event at ts = seq µs, result 0; @p stack 0: none. */
void tt_alloc(struct tt *t,
	      uint64_t seq,
	      const char *api,
	      const char *kind,
	      int device,
	      uint64_t ptr,
	      uint64_t size,
	      uint32_t stack);
/** A `free` event at ts = seq µs, result 0. */
void
tt_free(struct tt *t, uint64_t seq, const char *api, const char *kind, int device, uint64_t ptr);
/** A `stack` line of native frames (@p n return addresses). */
void tt_stack(struct tt *t, uint32_t id, const uint64_t *frames, size_t n);
/** A `marker` line (a point) at ts = seq µs. */
void tt_mark(struct tt *t, uint64_t seq, const char *label);
/** The trailer: the process exited normally, @p events events, none dropped. */
void tt_trailer(struct tt *t, uint64_t ts, uint64_t events);

/** Write the trace to a new file of the temporary directory; its path (free()). */
char *tt_file(const struct tt *t);

/** Read the trace (gmt_trace_read(): stored, sorted); exits 1 when it is unreadable. */
struct gmt_trace *tt_read(const struct tt *t);

/**
 * Session helpers (tracesession.c, which needs the report library): @p s gets the trace (a new
 * session, streamed as the CLI reads), its messages into tt_diag(); exits 1 when the file yields
 * nothing.
 */
void tt_session(struct gmt_session *s, const struct tt *t);

/** Add the trace to @p s, an open session. */
void tt_session_add(struct gmt_session *s, const struct tt *t);

/** Where the reader's messages go: a memory stream tt_diag() reads. */
FILE *tt_diag_stream(void);

/** What the reader and the model said about the inputs since the last call (static). */
const char *tt_diag(void);

#endif
