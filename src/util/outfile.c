/*
 * @brief Output files that nothing planted at their name is written through (outfile.h).
 */
#define _GNU_SOURCE
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Temporary names tried before giving up (each one taken already: someone plays games). */
#define TMP_TRIES 64

static int
fail(char why[GMT_OUTFILE_WHY], int err, const char *text)
{
	snprintf(why, GMT_OUTFILE_WHY, "%s", text ? text : strerror(err));
	errno = err;
	return -1;
}

static const char *
special_type(mode_t mode)
{
	if (S_ISBLK(mode))
		return "not a regular file (a block device)";
	if (S_ISSOCK(mode))
		return "not a regular file (a socket)";
	return "not a regular file";
}

static void
release(struct gmt_outfile *o)
{
	if (o->own_dirfd)
		close(o->dirfd);
	free(o->name);
	free(o->tmp);
	*o = (struct gmt_outfile){.dirfd = -1};
}

/*
 * A new file of its own in o->dirfd: O_EXCL | O_NOFOLLOW create it or fail, whatever is at the
 * name already. Created with @p mode (the umask applies), then given exactly @p mode when
 * @p exact (the permission bits of the file it will replace).
 */
static int
open_tmp(struct gmt_outfile *o, mode_t mode, bool exact, char why[GMT_OUTFILE_WHY])
{
	char name[48];
	int fd, err;

	for (unsigned i = 0; i < TMP_TRIES; i++) {
		uint64_t r;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^
			    (i + 1) * 0x9e3779b97f4a7c15ULL;
		snprintf(name, sizeof(name), ".gpumemtrace-%016llx.tmp", (unsigned long long)r);
		fd = openat(o->dirfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return fail(why, errno, NULL);
	}
	if (fd < 0)
		return fail(why, EEXIST, "no temporary name free beside it");
	if ((exact && fchmod(fd, mode) != 0) || !(o->tmp = strdup(name))) {
		err = errno;
		unlinkat(o->dirfd, name, 0);
		close(fd);
		return fail(why, err, NULL);
	}
	return fd;
}

/* gmt_outfile_openat(); with @p own, @p dirfd is closed with the file (or on failure). */
static int
open_at(struct gmt_outfile *o, int dirfd, bool own, const char *name, char why[GMT_OUTFILE_WHY])
{
	struct stat st;
	mode_t mode = 0666;
	bool exists = false;
	int fd;

	*o = (struct gmt_outfile){.dirfd = dirfd, .own_dirfd = own};
	if (!*name) {
		fail(why, ENOENT, NULL);
		goto err;
	}
	if (!(o->name = strdup(name))) {
		fail(why, ENOMEM, NULL);
		goto err;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		exists = true;
		if (S_ISLNK(st.st_mode)) {
			fail(why, ELOOP,
			     "a symbolic link: not written through it (remove it, or name the file "
			     "it points to)");
			goto err;
		}
		if (S_ISDIR(st.st_mode)) {
			fail(why, EISDIR, "a directory");
			goto err;
		}
		if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
			/* a pipe or a device is what the user asked to write into (-o /dev/null) */
			fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
			if (fd < 0) {
				fail(why, errno, NULL);
				goto err;
			}
			goto stream;
		}
		if (!S_ISREG(st.st_mode)) {
			fail(why, EINVAL, special_type(st.st_mode));
			goto err;
		}
		mode = st.st_mode & 0777;
	} else if (errno != ENOENT) {
		fail(why, errno, NULL);
		goto err;
	}
	if ((fd = open_tmp(o, mode, exists, why)) < 0)
		goto err;
stream:
	if (!(o->f = fdopen(fd, "w"))) {
		int e = errno;

		close(fd);
		if (o->tmp)
			unlinkat(dirfd, o->tmp, 0);
		fail(why, e, NULL);
		goto err;
	}
	return 0;
err:
	fd = errno;
	release(o);
	errno = fd;
	return -1;
}

int
gmt_outfile_openat(struct gmt_outfile *o, int dirfd, const char *name, char why[GMT_OUTFILE_WHY])
{
	return open_at(o, dirfd, false, name, why);
}

int
gmt_outfile_open(struct gmt_outfile *o, const char *path, char why[GMT_OUTFILE_WHY])
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int dirfd;

	if (!slash)
		return open_at(o, AT_FDCWD, false, path, why);
	if (!slash[1]) { /* "out/": a directory's name */
		*o = (struct gmt_outfile){.dirfd = -1};
		return fail(why, EISDIR, "a directory");
	}
	dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!dir) {
		*o = (struct gmt_outfile){.dirfd = -1};
		return fail(why, ENOMEM, NULL);
	}
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dirfd < 0) {
		*o = (struct gmt_outfile){.dirfd = -1};
		return fail(why, errno, NULL);
	}
	return open_at(o, dirfd, true, slash + 1, why);
}

int
gmt_outfile_close(struct gmt_outfile *o, char why[GMT_OUTFILE_WHY])
{
	int err = 0;

	if (!o->f) {
		release(o);
		return 0;
	}
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		err = errno ? errno : EIO;
	if (fclose(o->f) != 0 && !err)
		err = errno ? errno : EIO;
	o->f = NULL;
	/* rename() replaces whatever is at the name now, a link planted since too, never follows */
	if (!err && o->tmp && renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0)
		err = errno;
	if (err && o->tmp)
		unlinkat(o->dirfd, o->tmp, 0);
	release(o);
	if (err)
		return fail(why, err, NULL);
	return 0;
}

void
gmt_outfile_abort(struct gmt_outfile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlinkat(o->dirfd, o->tmp, 0);
	release(o);
}
