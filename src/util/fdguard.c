/*
 * @brief A descriptor kept inside the application, guarded against the application closing it
 * (see fdguard.h).
 */
#define _GNU_SOURCE
#include "util/fdguard.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The lowest number a kept descriptor moves to: under the soft limit, above what programs
 * usually hold (open() hands out the lowest free number), and not so high that the kernel grows
 * the process's descriptor table for it (a container's limit may be 2^20). */
static int
floor_fd(void)
{
	struct rlimit rl;
	rlim_t lim = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim)
		lim = rl.rlim_cur;
	/* 1024 -> 768, 256 -> 192; a limit under 16 leaves the number where it is */
	return lim < 16 ? -1 : (int)(lim - lim / 4);
}

/* @p fd moved to a high number (close-on-exec); @p fd itself when none is free. */
static int
move_high(int fd)
{
	int lo = floor_fd();

	if (lo < 0 || fd >= lo)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, lo);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

int
gmt_fd_guard_take(struct gmt_fd_guard *g, int fd)
{
	struct stat st;

	g->fd = -1;
	if (fd < 0)
		return -1;
	fd = move_high(fd);
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*g = (struct gmt_fd_guard){.fd = fd, .dev = st.st_dev, .ino = st.st_ino};
	return fd;
}

bool
gmt_fd_guard_ours(const struct gmt_fd_guard *g)
{
	struct stat st;

	return g->fd >= 0 && fstat(g->fd, &st) == 0 && st.st_dev == g->dev && st.st_ino == g->ino;
}

int
gmt_fd_guard_reopen(struct gmt_fd_guard *g, const char *path, int flags)
{
	struct stat st;
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);

	g->fd = -1; /* the old number is the program's now */
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_dev != g->dev || st.st_ino != g->ino) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	g->fd = move_high(fd);
	return g->fd;
}

void
gmt_fd_guard_release(struct gmt_fd_guard *g)
{
	if (gmt_fd_guard_ours(g))
		close(g->fd);
	g->fd = -1;
}

void
gmt_fd_guard_drop(struct gmt_fd_guard *g)
{
	g->fd = -1;
}
