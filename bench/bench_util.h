/*
 * @brief What the benchmark programs share: a CUDA-call check, the clock (bench_clock.h), number
 * parsing.
 * Define BENCH_PROG (the program's name, for messages) before including.
 */
#ifndef GMT_BENCH_UTIL_H
#define GMT_BENCH_UTIL_H

#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_clock.h"

#ifndef BENCH_PROG
#	error "define BENCH_PROG before including bench_util.h"
#endif

/* A benchmark whose CUDA call failed measured nothing: say which call and stop. */
#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, BENCH_PROG ": %s: %s\n", #call, cudaGetErrorString(rc_));  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* A decimal in [min, max], or a usage error (exit 2) naming the bad value. */
static inline unsigned long
parse_ulong(const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, BENCH_PROG ": bad number '%s' (%lu..%lu)\n", s, min, max);
		exit(2);
	}
	return v;
}

#endif
