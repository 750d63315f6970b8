/*
 * @brief File names and directories (path.h).
 */
#define _GNU_SOURCE
#include "util/path.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char *
gmt_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	return asprintf(&p, "%.*s/%s", (int)dl, dir, name) < 0 ? NULL : p;
}

static int
cmp_name(const void *a, const void *b)
{
	/* Bytewise, not strcoll(): the order of a report must not depend on the locale. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
gmt_dir_names(const char *dir, bool (*keep)(const char *name), char ***names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL, **w;
	size_t n = 0;

	*names = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!keep(e->d_name))
			continue;
		if (!(w = realloc(v, (n + 1) * sizeof(*v))) || !(w[n] = strdup(e->d_name))) {
			v = w ? w : v;
			while (n > 0)
				free(v[--n]);
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = w;
		n++;
	}
	closedir(d);
	if (n > 1) /* qsort() of NULL is undefined, even for 0 elements */
		qsort(v, n, sizeof(*v), cmp_name);
	*names = v;
	return n > INT_MAX ? -EOVERFLOW : (int)n;
}

unsigned
gmt_jobs(void)
{
	const char *v = getenv("GMT_JOBS");
	long n = 0;
	cpu_set_t set;

	if (v && *v)
		n = strtol(v, NULL, 10);
	if (n <= 0 && sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 16 ? 16 : n < 1 ? 1 : (unsigned)n;
}
