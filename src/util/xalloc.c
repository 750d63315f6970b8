/*
 * @brief Allocation for the offline tools (see xalloc.h).
 */
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void *
gmt_xrealloc(void *p, size_t n, size_t size)
{
	void *q = NULL;

	if (!size || n <= SIZE_MAX / size)
		q = realloc(p, n * size > 0 ? n * size : 1);
	if (!q) {
		fprintf(stderr, "gpumemtrace: out of memory\n");
		exit(3);
	}
	return q;
}
