/*
 * @brief Allocation for the offline tools (alloc.h).
 */
#include "util/alloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *
gmt_realloc_array(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return realloc(p, n * size > 0 ? n * size : 1);
}

int
gmt_grow(void *pp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : 2 * c;
	q = gmt_realloc_array(*(void **)pp, c, size);
	if (!q)
		return -ENOMEM;
	*(void **)pp = q;
	*cap = c;
	return 0;
}
