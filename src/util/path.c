/*
 * @brief File names (path.h).
 */
#define _GNU_SOURCE
#include "util/path.h"

#include <stdio.h>

char *
gmt_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *p;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	return asprintf(&p, "%.*s/%s", (int)dl, dir, name) < 0 ? NULL : p;
}
