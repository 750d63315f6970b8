/*
 * @brief The JSON Lines read of a trace: the file line by line (here, or pipelined: pipeline.c)
 * into dispatch.c, then what the whole file says (reader_int.h).
 */
#define _GNU_SOURCE
#include "analysis/reader/flatjson.h"
#include "analysis/reader/reorder.h"
#include "analysis/reader/trace.h"
#include "analysis/reader/trace_input.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"

#include "analysis/reader/reader_int.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

// --- reading ----------------------------------------------------------------------------------

/* Bytes free (for unprivileged writers) below which a file system counts as full. */
#define DISK_FULL_BYTES (1u << 20)

/*
 * A trace without a trailer: did a full disk cut it? The writer stops at ENOSPC (its warning
 * went to the program's stderr, long gone), and the process may well have exited normally.
 * Two signs, either is enough: the file ends in the middle of a line exactly at a block
 * boundary (a write cut short where the blocks ran out; a process killed in a write ends
 * there one time in thousands), or the file system holding it is full now.
 */
static void
disk_check(struct reader *r, int fd)
{
	struct gmt_trace *t = r->t;
	struct statvfs vfs;
	struct stat st;
	long long unit;

	if (fstat(fd, &st) != 0)
		return;
	unit = st.st_blksize > 0 && st.st_blksize < 4096 ? st.st_blksize : 4096;
	if (t->torn && st.st_size > 0 && st.st_size % unit == 0) {
		t->cut_by_disk = true;
		fprintf(r->diag,
			"%s: note: no trailer, and the file ends in the middle of a line at a "
			"%lld-byte block boundary: most likely the disk (or a quota) was full and "
			"the tracer stopped writing; the program may have run on untraced\n",
			r->epath, unit);
	} else if (fstatvfs(fd, &vfs) == 0 && vfs.f_blocks > 0 && !(vfs.f_flag & ST_RDONLY) &&
		   (unsigned long long)vfs.f_bavail * vfs.f_frsize < DISK_FULL_BYTES) {
		/* (a read-only file system, squashfs or ISO 9660, says 0 free: it was not written)
		 */
		t->cut_by_disk = true;
		fprintf(
		    r->diag,
		    "%s: note: no trailer, and the file system holding it is full (%llu KiB "
		    "free): most likely the tracer stopped writing when the disk filled up; the "
		    "program may have run on untraced\n",
		    r->epath, (unsigned long long)vfs.f_bavail * vfs.f_frsize / 1024);
	}
}

/* The JSON Lines read of @p in (open.c opened it and told it is no pickle; closed here). */
enum gmt_trace_status
rd_read_jsonl(struct gmt_trace_input *inp,
	      const char *path,
	      FILE *diag,
	      const struct gmt_read_options *opt,
	      const struct gmt_trace_sink *sink,
	      struct gmt_trace **out,
	      char why[GMT_TRACE_WHY])
{
	struct gmt_trace *t;
	struct reader r = {.diag = diag, .sink = sink};
	struct gmt_trace_line line;
	int n;
	struct gmt_trace_input in = *inp;
	const char *cut_why;
	FILE *f = in.f;
	int read_errno = 0;

	*out = NULL;
	r.no_fast = opt->slow;
	gmt_reorder_init(&r.window, GMT_TRACE_REORDER_WINDOW, rd_window_deliver, &r);
	t = calloc(1, sizeof(*t));
	if (!t) {
		gmt_trace_input_close(&in);
		gmt_reorder_fini(&r.window);
		fprintf(diag, "%s: out of memory\n", gmt_esc(path));
		if (why)
			snprintf(why, GMT_TRACE_WHY, "out of memory");
		return GMT_TRACE_UNREADABLE;
	}
	r.t = t;
	t->path = strdup(path);
	r.epath = strdup(gmt_esc(path));
	if (!t->path || !r.epath) {
		gmt_trace_input_close(&in);
		fprintf(diag, "%s: out of memory\n", gmt_esc(path));
		if (why)
			snprintf(why, GMT_TRACE_WHY, "out of memory");
		free(r.epath);
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	t->pid = t->ppid = t->forked_from = -1;
	t->rank = t->local_rank = t->world_size = -1;

	r.progress = opt->progress;
	r.in = &in;
	if (r.progress)
		r.progress->begin(r.progress->ctx, path, gmt_trace_input_size(&in));

	bool early = false; /* the read stopped before the input's end (pipelined reads only) */
	if (rd_pipeline_wanted(opt)) {
		struct rd_pipeline_end e = rd_read_pipelined(&r, &in, opt);

		n = e.n;
		errno = e.err;
		early = e.early;
	} else {
		errno = 0;
		while ((n = gmt_trace_input_line(&in, &line, GMT_TRACE_MAX_LINE)) > 0) {
			rd_progress_step(&r, t->lines + 1);
			if (!rd_take_line(&r, &line, NULL))
				break;
			errno = 0;
		}
	}
	if (!early && (n < 0 || ferror(f)))
		read_errno = errno ? errno : EIO;
	if (r.progress)
		r.progress->end(r.progress->ctx);
	/*
	 * A compressed stream ends early without an error of its own: what was decoded has been
	 * read, as a plain file is read up to its torn line. Unless the read stopped before it
	 * (a refused or foreign file), the reason is said once, with the file's byte.
	 */
	switch (gmt_trace_input_end(&in, &cut_why)) {
	case GMT_TRACE_INPUT_END_NONE: break;
	case GMT_TRACE_INPUT_END_READ_ERROR:
		/* (a pipelined read that stopped early may have read past where it stopped: what
		 * it found there is not said, as a read stopping there would not have seen it) */
		if (!read_errno && !early) { /* as a plain file's read error: unreadable */
			char why_c[GMT_TRACE_WHY];
			snprintf(why_c, sizeof(why_c), "%s compressed trace: %s",
				 gmt_trace_input_kind_name(in.kind), cut_why);
			rd_refuse(&r, 0, why_c);
		}
		break;
	case GMT_TRACE_INPUT_END_TRUNCATED:
		if (r.refused || r.nomem || (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD))
			break;
		fprintf(diag, "%s: note: %s compressed trace %s: read up to there\n", r.epath,
			gmt_trace_input_kind_name(in.kind), cut_why);
		break;
	case GMT_TRACE_INPUT_END_CORRUPT:
		if (r.refused || r.nomem || (!r.trace_line_seen && r.lead > GMT_TRACE_MAX_LEAD))
			break;
		fprintf(diag, "%s: %s compressed trace %s: read as far as it is good\n", r.epath,
			gmt_trace_input_kind_name(in.kind), cut_why);
		break;
	}
	if (!t->complete && !t->ended_by[0] && !read_errno && !r.refused && r.trace_line_seen &&
	    gmt_trace_input_fd(&in) >= 0)
		disk_check(&r, gmt_trace_input_fd(&in));
	gmt_trace_input_close(&in);

	if (!r.refused && !r.nomem)
		gmt_reorder_drain(&r.window);
	gmt_reorder_fini(&r.window);
	rd_sink_sync(&r); /* the sink is done with the trace before the read's end changes it */
	free(r.open);
	free(r.modhash);
	free(r.scratch);
	free(r.addrhash);
	free(r.stack_addrs);
	free(r.stack_py);
	if (r.nomem)
		rd_refuse(&r, 0, "out of memory");
	if (!r.refused) {
		rd_settle_stacks(&r);
		rd_settle_pycodes(&r);
	}
	if (t->late_events) /* one line whatever the cap: it says how far to trust the order */
		fprintf(
		    diag,
		    "%s:%zu: note: %" PRIu64 " line%s applied late, the first with seq %" PRIu64
		    ": a seq that repeats, one that came after %d waiting lines gave up on it, or "
		    "a snapshot behind the events before it (the counts stay right; the order at "
		    "%s may not)\n",
		    r.epath, r.first_late_line, t->late_events, t->late_events == 1 ? "" : "s",
		    r.first_late_seq, GMT_TRACE_REORDER_WINDOW,
		    t->late_events == 1 ? "that moment" : "those moments");
	if (r.shown < t->bad_lines)
		fprintf(diag, "%s: %zu more bad lines not shown\n", r.epath,
			t->bad_lines - r.shown);
	/* refused, and what it was is a trace of ours (or nothing): why, as said */
	char lost[GMT_TRACE_WHY] = "";
	if (read_errno) {
		snprintf(lost, sizeof(lost), "read error: %s", strerror(read_errno));
	} else if (!r.refused && !r.trace_line_seen && t->lines > 0) {
		/* nothing of it is quoted: it may be any file this user can read */
		/* another program's file: refused without a reason kept (not a lost trace) */
		if (r.lead > GMT_TRACE_MAX_LEAD)
			fprintf(diag,
				"%s: not a gpumemtrace trace (none of its first %d lines is a JSON "
				"object with a \"type\" of the format)\n",
				r.epath, GMT_TRACE_MAX_LEAD + 1);
		else
			fprintf(diag,
				"%s: not a gpumemtrace trace (no line is a JSON object with a "
				"\"type\" of the format)\n",
				r.epath);
		r.refused = true;
	} else if (!r.refused && !t->have_header && r.content == 0) {
		/* call stacks, modules and Python code alone describe nothing that happened */
		snprintf(lost, sizeof(lost), "%s",
			 t->lines == 0	 ? "empty file, not a trace"
			 : r.usable == 0 ? "no header and no usable line, not a trace"
					 : "no header and no event, marker, snapshot or trailer "
					   "line, not a trace");
	}
	if (lost[0]) {
		fprintf(diag, "%s: %s\n", r.epath, lost);
		if (why)
			snprintf(why, GMT_TRACE_WHY, "%s", lost);
		r.refused = true;
	}
	if (r.refused) {
		if (!lost[0] && why) /* why a trace was refused (none: another program's file) */
			snprintf(why, GMT_TRACE_WHY, "%s", r.refuse_why);
		free(r.epath);
		gmt_trace_free(t);
		return lost[0] ? GMT_TRACE_LOST : GMT_TRACE_UNREADABLE;
	}
	if (!t->have_header) {
		fprintf(diag, "%s: note: no header line; read as format version %d\n", r.epath,
			GMT_FORMAT_VERSION);
		t->version = GMT_FORMAT_VERSION;
		t->start_ts = r.have_min_ts ? r.min_ts : 0;
	} else if (!r.have_start_ts && r.have_min_ts) {
		t->start_ts = r.min_ts;
	}
	if (!t->have_ts) /* nothing after the header: the trace ends where it starts */
		t->last_ts = t->start_ts;
	if (t->have_header && r.content == 0)
		fprintf(diag,
			"%s: note: nothing after the header (no event, marker, snapshot or "
			"trailer): the process %s\n",
			r.epath,
			t->cut_by_disk
			    ? "could not write more (the disk was full)"
			    : "stopped before its first GPU memory call was written, or is "
			      "still running");

	/* The writer emits lines in drain order; what happened is the seq order. */
	if (t->events && t->nevents > 1) /* streamed traces keep no events */
		qsort(t->events, t->nevents, sizeof(*t->events), rd_cmp_event);
	if (t->nmarkers > 1)
		qsort(t->markers, t->nmarkers, sizeof(*t->markers), rd_cmp_marker);
	rd_name_pops(&r);
	if (r.nomem) {
		fprintf(diag, "%s: out of memory\n", r.epath);
		if (why)
			snprintf(why, GMT_TRACE_WHY, "out of memory");
		free(r.epath);
		gmt_trace_free(t);
		return GMT_TRACE_UNREADABLE;
	}
	free(r.epath);
	*out = t;
	return GMT_TRACE_OK;
}
