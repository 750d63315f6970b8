/*
 * @brief Opening the files the offline tools read (traces, suppressions, reports, the modules
 * a trace names): regular files only, so that a FIFO, a device or a socket never blocks or
 * never ends a read.
 */
#ifndef GMT_UTIL_INPUT_H
#define GMT_UTIL_INPUT_H

#include <stdbool.h>
#include <stdio.h>

/** Big enough for the reason gmt_input_open() gives. */
#define GMT_INPUT_WHY 160

/**
 * Open @p path to read, only when it is a regular file (after symlinks): a FIFO would block the
 * open until a writer comes, and a FIFO, device or socket may never end. The open itself does
 * not block (O_NONBLOCK, cleared once the file is known to be regular). Returns the descriptor
 * (O_CLOEXEC), or -1 with errno set and the reason in @p why: strerror()'s, or "not a regular
 * file (a FIFO)".
 */
int gmt_input_open(const char *path, char why[GMT_INPUT_WHY]);

/**
 * gmt_input_open(), but a FIFO or a pipe is opened too (for a path the user named, as
 * `report <(zstdcat t.jsonl.zst)` names /dev/fd/63). A named FIFO's open waits for its writer,
 * as `cat FIFO` does. *@p is_pipe says which it was. Never for a file found in a directory or
 * named inside a trace, where a FIFO may hold the read for good.
 */
int gmt_input_open_pipe(const char *path, bool *is_pipe, char why[GMT_INPUT_WHY]);

/** gmt_input_open() as a stdio stream; NULL with @p why set. */
FILE *gmt_input_fopen(const char *path, char why[GMT_INPUT_WHY]);

#endif
