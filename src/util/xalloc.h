/*
 * @brief Allocation for the offline tools: out of memory is fatal (exit 3, "unreadable input":
 * the trace could not be processed), so callers need no failure paths.
 */
#ifndef GMT_UTIL_XALLOC_H
#define GMT_UTIL_XALLOC_H

#include <stddef.h>

/** realloc(p, n * size) that checks the multiplication and exits on failure; never NULL. */
void *gmt_xrealloc(void *p, size_t n, size_t size);

#endif
