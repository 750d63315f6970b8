/*
 * @brief Opening the files the offline tools read (traces, suppressions, reports, the modules
 * a trace names): regular files only, so that a FIFO, a device or a socket never blocks or
 * never ends a read.
 */
#ifndef GMT_UTIL_INPUT_H
#define GMT_UTIL_INPUT_H

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

/** gmt_input_open() as a stdio stream; NULL with @p why set. */
FILE *gmt_input_fopen(const char *path, char why[GMT_INPUT_WHY]);

#endif
