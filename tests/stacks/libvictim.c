/*
 * @brief libvictim.so: known call sites of cudaMalloc, for the call-stack tests.
 *
 * Built with -O0 -g. Every allocating call shares its source line with the __LINE__ it records
 * and carries a `SITE:<name>` marker, which make_trace.py reads to know the line without running
 * anything. pick_and_alloc() is always inlined, so its call site is an inlined frame.
 */
#include <cuda_runtime_api.h>

#include "victim_sites.h"

/* A call and the __LINE__ it records (and its SITE: marker) share one line. */
/* clang-format off */

void *
lib_alloc_weights(size_t n, struct victim_site *s)
{
	void *p = NULL;

	victim_site_set(s, __func__, __FILE__, __LINE__, cudaMalloc(&p, n) == cudaSuccess); /* SITE:weights */
	return p;
}

void *
lib_alloc_grads(size_t n, struct victim_site *s)
{
	void *p = NULL;

	victim_site_set(s, __func__, __FILE__, __LINE__, cudaMalloc(&p, n) == cudaSuccess); /* SITE:grads */
	return p;
}

static inline __attribute__((always_inline)) void *
pick_and_alloc(size_t n, struct victim_site *s)
{
	void *p = NULL;

	victim_site_set(s, "pick_and_alloc", __FILE__, __LINE__, cudaMalloc(&p, n) == cudaSuccess); /* SITE:inlined */
	return p;
}

void *
lib_alloc_inlined(size_t n, struct victim_site *s, struct victim_site *caller)
{
	void *p;

	p = pick_and_alloc(n, s); victim_site_set(caller, __func__, __FILE__, __LINE__, 1); /* SITE:inline-call */
	return p;
}

/* Asks for more than the (simulated) device has: a failed allocation with a known site. */
void *
lib_alloc_huge(size_t n, struct victim_site *s)
{
	void *p = NULL;

	victim_site_set(s, __func__, __FILE__, __LINE__, cudaMalloc(&p, n) == cudaSuccess); /* SITE:huge */
	return p;
}
/* clang-format on */
