/*
 * @brief A file descriptor the tracer keeps open inside the application, guarded against the
 * application closing it.
 *
 * A program may close descriptors it did not open (a daemon's closefrom(3), a loop over
 * range(3, 1024)) and then open files of its own, which take the lowest free numbers. The tracer
 * must then neither write its trace into the program's file nor close it. So the descriptor is
 * moved high (past the numbers a program's open() hands out first), its file is remembered by
 * device and inode, and every use first checks that the number still names that file.
 */
#ifndef GMT_UTIL_FDGUARD_H
#define GMT_UTIL_FDGUARD_H

#include <stdbool.h>
#include <sys/types.h>

struct gmt_fd_guard {
	int fd; /**< -1: none (never opened, given up, or released) */
	dev_t dev;
	ino_t ino;
};

#define GMT_FD_GUARD_NONE ((struct gmt_fd_guard){.fd = -1})

/**
 * Take @p fd into @p g: moved to a high number (close-on-exec) when one is free, its file
 * remembered. Returns the descriptor now used (@p fd itself when it could not be moved), or -1
 * when @p fd cannot be read with fstat (then it is closed). No allocation.
 */
int gmt_fd_guard_take(struct gmt_fd_guard *g, int fd);

/** Whether @p g's number still names the file it was taken with (one fstat). */
bool gmt_fd_guard_ours(const struct gmt_fd_guard *g);

/**
 * The file again after the program closed (or replaced) the number: @p path opened with
 * @p flags (O_NOFOLLOW and O_CLOEXEC added) and taken only if it is the same file, by device and
 * inode. The old number is left alone (it is the program's now). Returns the new descriptor, or
 * -1 (errno set; ESTALE: @p path names another file now) and @p g holds no descriptor then;
 * it keeps the file's identity either way.
 */
int gmt_fd_guard_reopen(struct gmt_fd_guard *g, const char *path, int flags);

/** Close @p g's descriptor if it is still ours (never the program's), and forget it. */
void gmt_fd_guard_release(struct gmt_fd_guard *g);

/** Forget @p g's descriptor without closing it (it is the program's now). */
void gmt_fd_guard_drop(struct gmt_fd_guard *g);

#endif
