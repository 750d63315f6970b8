/*
 * @brief Allocation for the offline tools: overflow-checked arrays that leave the old memory as
 * it was when they fail, so the caller can say -ENOMEM and unwind (the CLI decides what out of
 * memory means: exit status 3, "unreadable input").
 */
#ifndef GMT_UTIL_ALLOC_H
#define GMT_UTIL_ALLOC_H

#include <stddef.h>

/**
 * realloc(@p p, @p n * @p size) with the product checked; an empty array still gets memory (a
 * NULL result always means failure). NULL out of memory, @p p untouched.
 */
void *gmt_realloc_array(void *p, size_t n, size_t size);

/**
 * Room for @p need elements of @p size in the array *@p pp, which has room for *@p cap: grown
 * to twice that (at least @p first) while short. Returns 0, or -ENOMEM with *@p pp and *@p cap
 * as they were.
 */
int gmt_grow(void *pp, size_t *cap, size_t need, size_t size, size_t first);

#endif
