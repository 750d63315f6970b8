/*
 * @brief `gpumemtrace live`'s view: traces followed while their writers append to them, and one
 * frame of text made of them (tools/live_view.c); the terminal loop is tools/cmd_live.c.
 *
 * Each refresh looks at every trace (a file, or each trace in a directory: new ones are picked
 * up) and reads again, whole, only those whose size or modification time changed since the last
 * look: the reader (reader/read.c) already ends a read at a torn last line and at a zstd frame
 * cut in the middle, which is what a file being written looks like, and the next refresh reads
 * the rest. Reading is read-only and never locks the file: the traced job does not notice.
 */
#ifndef GMT_TOOLS_LIVE_H
#define GMT_TOOLS_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct gmt_live_view;

struct gmt_live_options {
	size_t top;	 /**< call sites listed (now, and grown since the step) */
	bool exact;	 /**< sizes as exact byte counts (--bytes), for scripts and tests */
	bool symbolize;	 /**< call sites symbolized; else the raw site (API and first frame) */
	unsigned width;	 /**< cut lines to this many columns; 0: no limit */
	unsigned height; /**< at most this many lines; 0: no limit */
	bool hint;	 /**< the title says how to quit (an interactive terminal) */
};

/** A view of @p path (a trace file or a directory of them); NULL out of memory. */
struct gmt_live_view *gmt_live_new(const char *path, const struct gmt_live_options *opt);
void gmt_live_free(struct gmt_live_view *v);

/**
 * Look at the traces again (reading those that changed). Returns 0, or -1 with errno when @p
 * path itself cannot be read (gone, not a file or directory); the next frame says so too.
 */
int gmt_live_refresh(struct gmt_live_view *v);

/** Traces read so far with something in them. */
size_t gmt_live_traces(const struct gmt_live_view *v);

/** One frame of text, lines ending in '\n', escaped for a terminal; @p opt may change widths. */
void gmt_live_frame(struct gmt_live_view *v, FILE *out, const struct gmt_live_options *opt);

#endif
