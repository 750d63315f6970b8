/*
 * @brief File names, as the offline tools take them apart and put them together.
 */
#ifndef GMT_UTIL_PATH_H
#define GMT_UTIL_PATH_H

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

#endif
