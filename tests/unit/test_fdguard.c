/*
 * The tracer's kept descriptors (util/fdguard.h): moved high, recognised by their file, never
 * closed or used once the program has given their number to a file of its own, and opened again
 * only when the path still names the same file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util/fdguard.h"

static void
read_all(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

int
main(void)
{
	char dir[] = "/tmp/gmt-fdguard-XXXXXX", trace[64], mine[64], buf[256];
	struct gmt_fd_guard g;
	struct rlimit rl;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	snprintf(mine, sizeof(mine), "%s/mine", dir);
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);

	/* taken: moved above the numbers open() hands out first, close-on-exec, the same file */
	int fd = open(trace, O_WRONLY | O_CREAT | O_APPEND, 0600);
	CHECK(fd >= 0 && fd < 16);
	int kept = gmt_fd_guard_take(&g, fd);
	CHECK(kept == g.fd && kept >= 0);
	if (rl.rlim_cur >= 1024)
		CHECK(kept >= 768);
	CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF); /* the low number is free again */
	CHECK(fcntl(kept, F_GETFD) == FD_CLOEXEC);
	CHECK(gmt_fd_guard_ours(&g));
	CHECK(write(kept, "a\n", 2) == 2);

	/* the program closes it and its own file takes the number */
	close(kept);
	CHECK(!gmt_fd_guard_ours(&g));
	int own = open(mine, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(own >= 0 && dup2(own, kept) == kept);
	CHECK(!gmt_fd_guard_ours(&g));
	struct gmt_fd_guard copy = g;
	gmt_fd_guard_release(&copy); /* not ours: not closed */
	CHECK(copy.fd == -1 && fcntl(kept, F_GETFD) >= 0);

	/* opened again by its path: the same file, appended to */
	int again = gmt_fd_guard_reopen(&g, trace, O_WRONLY | O_APPEND);
	CHECK(again >= 0 && again == g.fd && again != kept && gmt_fd_guard_ours(&g));
	CHECK(write(again, "b\n", 2) == 2);
	read_all(trace, buf, sizeof(buf));
	CHECK(strcmp(buf, "a\nb\n") == 0);
	read_all(mine, buf, sizeof(buf));
	CHECK(buf[0] == '\0'); /* nothing of the trace in the program's file */

	/* the path names another file now: not taken (ESTALE), the guard holds nothing */
	gmt_fd_guard_release(&g);
	CHECK(fcntl(again, F_GETFD) < 0);
	char moved[80];
	snprintf(moved, sizeof(moved), "%s.moved", trace);
	CHECK(rename(trace, moved) == 0); /* still there: its inode is not handed out again */
	int other = open(trace, O_WRONLY | O_CREAT, 0600);
	CHECK(other >= 0);
	close(other);
	errno = 0;
	CHECK(gmt_fd_guard_reopen(&g, trace, O_WRONLY | O_APPEND) == -1 && errno == ESTALE);
	CHECK(g.fd == -1 && !gmt_fd_guard_ours(&g));
	/* and not through a link planted at the name */
	CHECK(unlink(trace) == 0 && symlink(mine, trace) == 0);
	CHECK(gmt_fd_guard_reopen(&g, trace, O_WRONLY | O_APPEND) == -1 && errno == ELOOP);

	/* a descriptor that is none is refused */
	CHECK(gmt_fd_guard_take(&g, -1) == -1 && g.fd == -1);

	close(own);
	close(kept);
	unlink(trace);
	unlink(moved);
	unlink(mine);
	rmdir(dir);
	printf("fdguard: ok\n");
	return 0;
}
