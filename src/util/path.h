/*
 * @brief File names, as the offline tools take them apart and put them together.
 */
#ifndef GMT_UTIL_PATH_H
#define GMT_UTIL_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/** The file name of @p path (after its last '/'), @p path itself without one; NULL for NULL. */
static inline const char *
gmt_path_base(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/** "DIR/NAME", without doubling a trailing slash: a new string (free()), NULL out of memory. */
char *gmt_path_join(const char *dir, const char *name);

/**
 * The names of the entries of @p dir that @p keep says yes to, sorted bytewise, into *@p names (a
 * new array of new strings: free each, then it; NULL when none): their count, or -errno.
 */
int gmt_dir_names(const char *dir, bool (*keep)(const char *name), char ***names);

/** How many threads the offline tools use: GMT_JOBS (the tests' switch), else the CPUs this
 * process may run on, at most 16, at least 1. */
unsigned gmt_jobs(void);

#endif
