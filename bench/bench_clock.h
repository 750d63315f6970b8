/*
 * @brief What the benchmark programs share that needs no CUDA: the clock and the comparison
 * for a median (bench_util.h adds a CUDA-call check and number parsing on top).
 */
#ifndef GMT_BENCH_CLOCK_H
#define GMT_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* qsort()'s comparison of doubles, ascending. */
static inline int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#endif
