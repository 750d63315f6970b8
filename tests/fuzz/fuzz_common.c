/*
 * @brief The fuzz targets' shared helpers (fuzz.h).
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static FILE *devnull;
static int memfd = -1;
static char memfd_path[64];

FILE *
fuzz_devnull(void)
{
	if (!devnull && !(devnull = fopen("/dev/null", "w"))) {
		fprintf(stderr, "fuzz: /dev/null: %s\n", strerror(errno));
		abort();
	}
	return devnull;
}

const char *
fuzz_memfile(size_t parts, const void *const *data, const size_t *size)
{
	off_t at = 0;

	if (memfd < 0) {
		memfd = memfd_create("gmt-fuzz-input", MFD_CLOEXEC);
		if (memfd < 0) {
			fprintf(stderr, "fuzz: memfd_create: %s\n", strerror(errno));
			abort();
		}
		snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	}
	if (ftruncate(memfd, 0) != 0)
		goto err;
	for (size_t i = 0; i < parts; i++) {
		if (size[i] && pwrite(memfd, data[i], size[i], at) != (ssize_t)size[i])
			goto err;
		at += (off_t)size[i];
	}
	return memfd_path;
err:
	fprintf(stderr, "fuzz: writing the memfd: %s\n", strerror(errno));
	abort();
}

const char *
fuzz_memfd_path(const uint8_t *data, size_t size)
{
	return fuzz_memfile(1, (const void *[]){data}, (size_t[]){size});
}
