/*
 * @brief libvictim_other.so: loaded by victim_dlopen after libvictim.so was unloaded, possibly at
 * the same address; its frames and the earlier library's must each resolve in their own file.
 */
#include <cuda_runtime_api.h>

#include "victim_sites.h"

/* A call and the __LINE__ it records (and its SITE: marker) share one line. */
/* clang-format off */

void *
other_alloc(size_t n, struct victim_site *s)
{
	void *p = NULL;

	victim_site_set(s, __func__, __FILE__, __LINE__, cudaMalloc(&p, n) == cudaSuccess); /* SITE:other */
	return p;
}
/* clang-format on */
