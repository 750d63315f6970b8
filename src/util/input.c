/*
 * @brief Opening what the offline tools are given to read (input.h).
 */
#include "util/input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *
file_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a plain file";
}

static int
open_input(const char *path, bool pipe_ok, bool *is_pipe, char why[GMT_INPUT_WHY])
{
	struct stat st;
	int fd, flags, err;

	/*
	 * A FIFO that is not to be read is not opened at all: an open, even one that does not
	 * wait, lets a writer waiting for a reader go on, which then writes into a pipe that
	 * closes under it (its bytes lost, SIGPIPE), where a later open meant to read it
	 * (`check`'s look for a JSON report, then the trace's own) waits for a writer that has
	 * gone. Opening a FIFO for reading waits for a writer, forever when there is none (a FIFO
	 * left in a trace directory, a modules line naming one): O_NONBLOCK returns at once (the
	 * FIFO put in the path's place since the stat), and the type is known before anything is
	 * read. O_NOCTTY: a terminal never becomes ours.
	 */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !(pipe_ok && S_ISFIFO(st.st_mode)) &&
	    !S_ISDIR(st.st_mode)) {
		snprintf(why, GMT_INPUT_WHY, "not a regular file (%s)", file_type(st.st_mode));
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = errno;
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(err));
		errno = err;
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		err = errno;
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(err));
		goto err_close;
	}
	*is_pipe = pipe_ok && S_ISFIFO(st.st_mode);
	if (!S_ISREG(st.st_mode) && !*is_pipe) {
		err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		snprintf(why, GMT_INPUT_WHY, "not a regular file (%s)", file_type(st.st_mode));
		goto err_close;
	}
	if (*is_pipe) {
		/* A FIFO the user named waits for its writer, as `cat FIFO` does (read now, it
		 * would end at once). Not by opening it again: a writer that came for this open
		 * may have written and gone, and its bytes go with the last descriptor. A FIFO
		 * that never had a writer polls as not readable (Linux, POSIX leaves it open),
		 * one whose writer wrote or left as readable or hung up; a pipe (/dev/fd/N of
		 * `<(...)`) has its writer already. */
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		while (poll(&pfd, 1, -1) < 0) {
			if (errno != EINTR) {
				err = errno;
				snprintf(why, GMT_INPUT_WHY, "%s", strerror(err));
				goto err_close;
			}
		}
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		err = errno;
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(err));
		goto err_close;
	}
	return fd;
err_close:
	close(fd);
	errno = err;
	return -1;
}

int
gmt_input_open(const char *path, char why[GMT_INPUT_WHY])
{
	bool is_pipe;

	return open_input(path, false, &is_pipe, why);
}

int
gmt_input_open_pipe(const char *path, bool *is_pipe, char why[GMT_INPUT_WHY])
{
	return open_input(path, true, is_pipe, why);
}

FILE *
gmt_input_fopen(const char *path, char why[GMT_INPUT_WHY])
{
	int fd = gmt_input_open(path, why), err;
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f) {
		err = errno;
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(err));
		close(fd);
		errno = err;
	}
	return f;
}
