/*
 * @brief Writing the files the offline tools are asked to write (`report -o FILE`, the tables of
 * `report --format csv -o DIR`, `check --junit FILE`) so that nothing planted at the name is
 * written through.
 *
 * The output is written to a new file of its own in the same directory (a temporary name,
 * created with O_EXCL | O_NOFOLLOW: never an existing file or a link) and renamed over the name
 * once complete. A symbolic link at the name is refused, naming it: in a directory another user
 * can write (a shared /tmp/report, a CI workspace), a link planted at `sites.csv` or
 * `report.html` would otherwise have the tool overwrite the file it points to, with the tool's
 * rights. A regular file at the name is replaced whole (a hard link to it keeps the old
 * contents), and keeps its permission bits; a failed write leaves it as it was. A FIFO or a
 * character device at the name (`-o /dev/null`, a pipe a reader waits on) is written in place.
 */
#ifndef GMT_UTIL_OUTFILE_H
#define GMT_UTIL_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

/** Big enough for the reason gmt_outfile_open() and gmt_outfile_close() give. */
#define GMT_OUTFILE_WHY 160

struct gmt_outfile {
	FILE *f;	/**< what to write to */
	int dirfd;	/**< the directory the file is in */
	bool own_dirfd; /**< opened by gmt_outfile_open(): closed with the file */
	char *name;	/**< the file's name in dirfd */
	char *tmp;	/**< the temporary name in dirfd; NULL: written in place (FIFO, device) */
};

/**
 * Open @p path to be written (see above). Returns 0, or -1 with errno set and the reason in
 * @p why: strerror()'s, or "a symbolic link: not written through it (...)", "a directory", "not
 * a regular file (a block device)".
 */
int gmt_outfile_open(struct gmt_outfile *o, const char *path, char why[GMT_OUTFILE_WHY]);

/** gmt_outfile_open() of @p name in the directory @p dirfd (the caller's, left open). */
int
gmt_outfile_openat(struct gmt_outfile *o, int dirfd, const char *name, char why[GMT_OUTFILE_WHY]);

/**
 * Finish the file: flushed, closed, and renamed to its name. 0, or -1 with the reason in
 * @p why (a write error, a full disk): the name is then left as it was, the temporary file
 * removed. @p o is released either way.
 */
int gmt_outfile_close(struct gmt_outfile *o, char why[GMT_OUTFILE_WHY]);

/** Give up on the file: the name is left as it was, the temporary file removed. */
void gmt_outfile_abort(struct gmt_outfile *o);

#endif
