/*
 * @brief Opening a trace (trace.h: gmt_trace_read(), gmt_trace_read_sink()): the input opened
 * (trace_input.c: plain, zstd, gzip, standard input), told what it is, and handed to its reader: a
 * PyTorch memory snapshot pickle to snapshot.c, anything else to the JSON Lines read (read.c).
 * Neither reader calls the other, or this.
 */
#include "analysis/reader/reader_int.h"
#include "analysis/reader/snapshot.h"
#include "analysis/reader/trace.h"
#include "analysis/reader/trace_input.h"
#include "util/esc.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum gmt_trace_status
gmt_trace_read(const char *path,
	       FILE *diag,
	       const struct gmt_read_options *opt,
	       struct gmt_trace **out)
{
	return gmt_trace_read_sink(path, diag, opt, NULL, out, NULL);
}

enum gmt_trace_status
gmt_trace_read_sink(const char *path,
		    FILE *diag,
		    const struct gmt_read_options *opt,
		    const struct gmt_trace_sink *sink,
		    struct gmt_trace **out,
		    char why[GMT_TRACE_WHY])
{
	static const struct gmt_read_options defaults = GMT_READ_OPTIONS_INIT;
	struct gmt_trace_input in;
	char owhy[GMT_TRACE_INPUT_WHY];

	*out = NULL;
	if (!opt)
		opt = &defaults;
	if (gmt_trace_input_open(&in, path, opt->pipe_ok, owhy) != 0) {
		fprintf(diag, "%s: cannot open: %s\n", gmt_esc(path), gmt_esc(owhy));
		/* missing or unreadable, it may be a trace (kept as a lost one); a FIFO, device or
		 * socket where a trace file was looked for is none: said, no reason kept */
		struct stat st;
		if (why && !(stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
			snprintf(why, GMT_TRACE_WHY, "cannot open: %.*s",
				 (int)(GMT_TRACE_WHY - sizeof("cannot open: ")), owhy);
		return GMT_TRACE_UNREADABLE;
	}
	/* A pickle (protocol 2 and later start with PROTO, 0x80) is a PyTorch memory snapshot, or
	 * nothing we read: never a trace, whose first byte is '{'. */
	int first = getc(in.f);
	if (first != EOF)
		ungetc(first, in.f);
	size_t plen = strlen(path);
	if (first == 0x80 || (plen > 7 && strcmp(path + plen - 7, ".pickle") == 0)) {
		enum gmt_trace_status rc = gmt_snapshot_read(in.f, path, diag, sink, out, why);
		gmt_trace_input_close(&in);
		return rc;
	}
	return rd_read_jsonl(&in, path, diag, opt, sink, out, why);
}
