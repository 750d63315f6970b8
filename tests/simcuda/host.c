/* SPDX-License-Identifier: MIT */
/**
 * @file host.c
 * @brief Page-locked host memory of the simulated driver (TEST DOUBLE): cuMemAllocHost,
 *        cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister.
 *
 * Pinned blocks are real page-aligned host memory (mmap) and registered ranges are the
 * caller's memory; neither is device capacity. Both are kept in one table under host_lock, each
 * entry remembering the device current when it was made: a reset of that device drops them, as
 * the context that pinned them dies.
 */
#include "simcuda-internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct sim_host_block {
	void *ptr;
	size_t size;
	size_t map_len; /* 0: a registered range, not ours to unmap */
	unsigned int flags;
	int device;
};

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_host_block *host;
static size_t n_host;
static size_t host_cap;

/* Append an entry; host_lock held. Returns 0 or -1 (no memory for the table). */
static int
sim_host_insert(void *ptr, size_t size, size_t map_len, unsigned int flags)
{
	if (n_host == host_cap) {
		size_t ncap = host_cap ? host_cap * 2 : 64;
		void *t = realloc(host, ncap * sizeof(*host));

		if (!t)
			return -1;
		host = t;
		host_cap = ncap;
	}
	host[n_host++] = (struct sim_host_block){ptr, size, map_len, flags, sim_current_ordinal()};
	return 0;
}

/* Drop entry i (unmapping a pinned block); host_lock held. The order does not matter. */
static void
sim_host_remove(size_t i)
{
	if (host[i].map_len)
		munmap(host[i].ptr, host[i].map_len);
	host[i] = host[--n_host];
}

/* Remove the entry that starts at ptr and is pinned (or registered); 0 or -1 when none. */
static int
sim_host_take(void *ptr, int registered)
{
	size_t i;
	int rc = -1;

	pthread_mutex_lock(&host_lock);
	for (i = 0; i < n_host; i++) {
		if (host[i].ptr == ptr && (host[i].map_len == 0) == registered) {
			sim_host_remove(i);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&host_lock);
	return rc;
}

void
sim_host_reset(int device)
{
	size_t i;

	pthread_mutex_lock(&host_lock);
	for (i = n_host; i-- > 0;)
		if (host[i].device == device)
			sim_host_remove(i);
	pthread_mutex_unlock(&host_lock);
}

static CUresult
sim_host_alloc(void **pp, size_t size, unsigned int flags)
{
	const unsigned int known =
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len;
	void *p;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pp || size == 0 || (flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	*pp = NULL;
	if (size > SIZE_MAX - page)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_ctx_use(sim_current_ordinal());
	sim_delay();
	/* Real host memory, page-aligned like pinned memory, and never device capacity. */
	len = (size + page - 1) & ~(page - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&host_lock);
	if (sim_host_insert(p, size, len, flags) < 0) {
		munmap(p, len);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*pp = p;
	}
	pthread_mutex_unlock(&host_lock);
	return rc;
}

CUresult
sim_do_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return sim_host_alloc(pp, bytesize, 0);
}

CUresult
sim_do_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	return sim_host_alloc(pp, bytesize, Flags);
}

/* Only blocks from the pinned table; NULL is a no-op. */
CUresult
sim_do_cuMemFreeHost(void *p)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS || !p)
		return rc;
	sim_delay();
	return sim_host_take(p, 0) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Whether [p, p + size) overlaps a pinned block or a registered range; host_lock held. */
static int
sim_host_overlaps(uintptr_t p, size_t size)
{
	size_t i;

	for (i = 0; i < n_host; i++) {
		uintptr_t b = (uintptr_t)host[i].ptr;

		if (p < b + host[i].size && b < p + size)
			return 1;
	}
	return 0;
}

CUresult
sim_do_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!p || bytesize == 0 || (Flags & ~known) || (uintptr_t)p > UINTPTR_MAX - bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	sim_ctx_use(sim_current_ordinal());
	pthread_mutex_lock(&host_lock);
	if (sim_host_overlaps((uintptr_t)p, bytesize)) {
		rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	} else if (sim_host_insert(p, bytesize, 0, Flags) < 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host_lock);
	return rc;
}

/* p must be the base address given to cuMemHostRegister. */
CUresult
sim_do_cuMemHostUnregister(void *p)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_host_take(p, 1) == 0 ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
