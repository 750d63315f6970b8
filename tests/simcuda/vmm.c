/* SPDX-License-Identifier: MIT */
/**
 * @file vmm.c
 * @brief Virtual memory management of the simulated driver (TEST DOUBLE): cuMemAddressReserve,
 *        cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease and friends.
 *
 * The model keeps what a memory profiler must tell apart:
 *  - a reservation is address space only: an mmap(PROT_NONE, MAP_NORESERVE) of the size asked,
 *    aligned to 2 MiB by default; it uses no device capacity;
 *  - a handle (cuMemCreate) is physical memory without an address: a block of the device heap
 *    (so cudaMemGetInfo counts it as used) that no user pointer names;
 *  - a mapping binds the start of a handle to a granularity-aligned range inside a reservation
 *    (offset must be 0, as the driver documents). cuMemSetAccess with READWRITE makes the range
 *    readable and writable (mprotect), so cudaMemset/cudaMemcpy work on it; each mapping has
 *    its own pages, two mappings of one handle do not share memory.
 *  - a handle is referenced by cuMemCreate and each cuMemRetainAllocationHandle (dropped by
 *    cuMemRelease) and by each mapping (dropped by cuMemUnmap); its memory goes back to the
 *    device when both counts reach zero. A handle whose references are all released is dead
 *    for every call but cuMemUnmap of its mappings.
 * Granularity is 2 MiB for every device. All state is under vmm.lock; device capacity is taken
 * and returned (sim_phys_alloc/free) with that lock not held.
 */
#include "simcuda-internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sim_vmm_handle {
	int device;
	size_t size;
	uintptr_t phys; /* the device heap block behind it */
	unsigned refs;	/* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
	unsigned maps;	/* mappings that use it */
	struct sim_vmm_handle *next;
};

struct sim_vmm_map {
	uintptr_t addr;
	size_t size;
	struct sim_vmm_handle *handle;
	int writable; /* cuMemSetAccess gave READWRITE */
};

struct sim_vmm_reservation {
	uintptr_t base;
	size_t size;
	struct sim_vmm_map *maps; /* sorted by addr, never overlapping */
	size_t n_maps;
	size_t maps_cap;
	struct sim_vmm_reservation *next;
};

static struct {
	pthread_mutex_t lock;
	struct sim_vmm_reservation *reservations;
	struct sim_vmm_handle *handles;
} vmm = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static int
sim_aligned(uintptr_t v)
{
	return (v & (SIM_GRANULARITY - 1)) == 0;
}

// --- lookups (vmm.lock held) --------------------------------------------------------------

/* A live handle (some reference not yet released), or NULL. */
static struct sim_vmm_handle *
sim_handle_find(CUmemGenericAllocationHandle value)
{
	struct sim_vmm_handle *h;

	for (h = vmm.handles; h; h = h->next)
		if ((CUmemGenericAllocationHandle)(uintptr_t)h == value && h->refs > 0)
			return h;
	return NULL;
}

/* The reservation that holds all of [p, p + size), or NULL. */
static struct sim_vmm_reservation *
sim_reservation_find(uintptr_t p, size_t size)
{
	struct sim_vmm_reservation *r;

	for (r = vmm.reservations; r; r = r->next)
		if (p >= r->base && p - r->base <= r->size && size <= r->size - (p - r->base))
			return r;
	return NULL;
}

/* The index of the mapping of r that holds p, or -1. */
static long
sim_map_find(const struct sim_vmm_reservation *r, uintptr_t p)
{
	size_t i;

	for (i = 0; i < r->n_maps; i++)
		if (p >= r->maps[i].addr && p - r->maps[i].addr < r->maps[i].size)
			return (long)i;
	return -1;
}

/* The mapping that holds p in any reservation, or NULL. */
static struct sim_vmm_map *
sim_map_at(uintptr_t p)
{
	struct sim_vmm_reservation *r = sim_reservation_find(p, 1);
	long i = r ? sim_map_find(r, p) : -1;

	return i < 0 ? NULL : &r->maps[i];
}

/*
 * The mappings [*first, *last] that exactly tile [p, p + size): the first starts at p, each
 * next one starts where the previous ends, the last ends at p + size. Returns 0, or -1.
 */
static int
sim_map_span(
    const struct sim_vmm_reservation *r, uintptr_t p, size_t size, size_t *first, size_t *last)
{
	long i = sim_map_find(r, p);
	uintptr_t end = p + size;
	size_t j;

	if (i < 0 || r->maps[i].addr != p)
		return -1;
	for (j = (size_t)i; j < r->n_maps; j++) {
		uintptr_t map_end = r->maps[j].addr + r->maps[j].size;

		if (j > (size_t)i && r->maps[j].addr != r->maps[j - 1].addr + r->maps[j - 1].size)
			return -1; /* a gap */
		if (map_end == end) {
			*first = (size_t)i;
			*last = j;
			return 0;
		}
		if (map_end > end)
			return -1; /* the range ends inside a mapping */
	}
	return -1;
}

// --- driver calls -------------------------------------------------------------------------

/* What cuMemCreate and cuMemGetAllocationGranularity accept: pinned device memory. */
static CUresult
sim_check_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id < 0 || prop->location.id >= sim_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuMemGetAllocationGranularity(size_t *granularity,
				     const CUmemAllocationProp *prop,
				     CUmemAllocationGranularity_flags option)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_check_prop(prop);
	if (rc == CUDA_SUCCESS)
		*granularity = SIM_GRANULARITY;
	return rc;
}

/* mmap size bytes of address space aligned to align; 0 when the system has none left. */
static uintptr_t
sim_reserve_va(size_t size, size_t align)
{
	size_t len = size + align;
	uintptr_t p, base;
	void *m;

	if (len < size)
		return 0;
	m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	p = (uintptr_t)m;
	base = (p + align - 1) & ~(uintptr_t)(align - 1);
	if (base > p)
		munmap(m, base - p);
	if (p + len > base + size)
		munmap((void *)(base + size), p + len - (base + size));
	return base;
}

CUresult
sim_do_cuMemAddressReserve(
    CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t align = alignment ? alignment : SIM_GRANULARITY;
	struct sim_vmm_reservation *r;
	CUresult rc = sim_drv_ready();

	(void)addr; /* a hint, as in CUDA: the simulation takes whatever mmap gives */
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ptr || size == 0 || size % page || (align & (align - 1)) || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (align < page)
		align = page;
	r = calloc(1, sizeof(*r));
	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r->base = sim_reserve_va(size, align);
	if (!r->base) {
		free(r);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->size = size;
	pthread_mutex_lock(&vmm.lock);
	r->next = vmm.reservations;
	vmm.reservations = r;
	pthread_mutex_unlock(&vmm.lock);
	*ptr = (CUdeviceptr)r->base;
	return CUDA_SUCCESS;
}

/* The reservation must be given back whole, and (in the simulation) with nothing mapped. */
CUresult
sim_do_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct sim_vmm_reservation **pp, *r = NULL;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&vmm.lock);
	for (pp = &vmm.reservations; *pp; pp = &(*pp)->next) {
		if ((*pp)->base == (uintptr_t)ptr && (*pp)->size == size && (*pp)->n_maps == 0) {
			r = *pp;
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&vmm.lock);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)r->base, r->size);
	free(r->maps);
	free(r);
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuMemCreate(CUmemGenericAllocationHandle *handle,
		   size_t size,
		   const CUmemAllocationProp *prop,
		   unsigned long long flags)
{
	struct sim_vmm_handle *h;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle || size == 0 || !sim_aligned(size) || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_check_prop(prop);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* Fabric handles need an IMEX channel; like a machine without one, refuse them. */
	if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
		return CUDA_ERROR_NOT_PERMITTED;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_delay();
	if (sim_phys_alloc(prop->location.id, size, &h->phys) < 0) {
		free(h);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->device = prop->location.id;
	h->size = size;
	h->refs = 1;
	pthread_mutex_lock(&vmm.lock);
	h->next = vmm.handles;
	vmm.handles = h;
	pthread_mutex_unlock(&vmm.lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

/* Unlink h if nothing references it any more; vmm.lock held. Returns h to be freed, or NULL. */
static struct sim_vmm_handle *
sim_handle_unlink_if_dead(struct sim_vmm_handle *h)
{
	struct sim_vmm_handle **pp;

	if (h->refs || h->maps)
		return NULL;
	for (pp = &vmm.handles; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			return h;
		}
	}
	return NULL;
}

/* Give a dead handle's memory back to its device; vmm.lock not held. */
static void
sim_handle_free(struct sim_vmm_handle *h)
{
	while (h) {
		struct sim_vmm_handle *next = h->next;

		sim_phys_free(h->device, h->phys);
		free(h);
		h = next;
	}
}

CUresult
sim_do_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct sim_vmm_handle *h, *dead = NULL;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&vmm.lock);
	h = sim_handle_find(handle);
	if (h) {
		h->refs--;
		dead = sim_handle_unlink_if_dead(h);
	}
	pthread_mutex_unlock(&vmm.lock);
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	if (dead)
		dead->next = NULL;
	sim_handle_free(dead);
	return CUDA_SUCCESS;
}

/* Insert a mapping into r, keeping the order; vmm.lock held. Returns 0 or -1. */
static int
sim_map_insert(struct sim_vmm_reservation *r, const struct sim_vmm_map *m)
{
	size_t i = 0;

	if (r->n_maps == r->maps_cap) {
		size_t ncap = r->maps_cap ? r->maps_cap * 2 : 8;
		void *p = realloc(r->maps, ncap * sizeof(*r->maps));

		if (!p)
			return -1;
		r->maps = p;
		r->maps_cap = ncap;
	}
	while (i < r->n_maps && r->maps[i].addr < m->addr)
		i++;
	memmove(&r->maps[i + 1], &r->maps[i], (r->n_maps - i) * sizeof(*r->maps));
	r->maps[i] = *m;
	r->n_maps++;
	return 0;
}

/* Whether [p, p + size) touches a mapping of r; vmm.lock held. */
static int
sim_map_overlaps(const struct sim_vmm_reservation *r, uintptr_t p, size_t size)
{
	size_t i;

	for (i = 0; i < r->n_maps; i++)
		if (p < r->maps[i].addr + r->maps[i].size && r->maps[i].addr < p + size)
			return 1;
	return 0;
}

CUresult
sim_do_cuMemMap(CUdeviceptr ptr,
		size_t size,
		size_t offset,
		CUmemGenericAllocationHandle handle,
		unsigned long long flags)
{
	struct sim_vmm_map m = {.addr = (uintptr_t)ptr, .size = size};
	struct sim_vmm_reservation *r;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (size == 0 || !sim_aligned(m.addr) || !sim_aligned(size) || offset != 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm.lock);
	m.handle = sim_handle_find(handle);
	r = sim_reservation_find(m.addr, size);
	if (m.handle && r && size <= m.handle->size && !sim_map_overlaps(r, m.addr, size)) {
		if (sim_map_insert(r, &m) < 0) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			m.handle->maps++;
			rc = CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&vmm.lock);
	return rc;
}

/* Remove mappings [first, last] of r, collecting handles that died; vmm.lock held. */
static void
sim_map_remove(struct sim_vmm_reservation *r,
	       size_t first,
	       size_t last,
	       struct sim_vmm_handle **dead)
{
	size_t i;

	for (i = first; i <= last; i++) {
		struct sim_vmm_map *m = &r->maps[i];
		struct sim_vmm_handle *h;

		mprotect((void *)m->addr, m->size, PROT_NONE);
		madvise((void *)m->addr, m->size, MADV_DONTNEED);
		m->handle->maps--;
		h = sim_handle_unlink_if_dead(m->handle);
		if (h) {
			h->next = *dead;
			*dead = h;
		}
	}
	memmove(&r->maps[first], &r->maps[last + 1], (r->n_maps - last - 1) * sizeof(*r->maps));
	r->n_maps -= last - first + 1;
}

/* The range must be exactly the mappings it covers (one or several, without gaps). */
CUresult
sim_do_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct sim_vmm_handle *dead = NULL;
	struct sim_vmm_reservation *r;
	size_t first, last;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm.lock);
	r = sim_reservation_find((uintptr_t)ptr, size);
	if (r && sim_map_span(r, (uintptr_t)ptr, size, &first, &last) == 0) {
		sim_map_remove(r, first, last, &dead);
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&vmm.lock);
	sim_handle_free(dead);
	return rc;
}

/* The protection a set of access descriptors asks for; -1 for a bad descriptor. */
static int
sim_access_prot(const CUmemAccessDesc *desc, size_t count)
{
	int prot = PROT_NONE;
	size_t i;

	for (i = 0; i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    desc[i].location.id < 0 || desc[i].location.id >= sim_device_count())
			return -1;
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			prot = PROT_READ | PROT_WRITE;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
			prot = PROT_READ;
		else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
			 desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ)
			return -1;
	}
	return prot;
}

/* The range must be fully mapped: one or several mappings without gaps. */
CUresult
sim_do_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	struct sim_vmm_reservation *r;
	size_t first, last, i;
	int prot;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	prot = desc && count ? sim_access_prot(desc, count) : -1;
	if (prot < 0 || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm.lock);
	r = sim_reservation_find((uintptr_t)ptr, size);
	if (r && sim_map_span(r, (uintptr_t)ptr, size, &first, &last) == 0) {
		for (i = first; i <= last; i++) {
			mprotect((void *)r->maps[i].addr, r->maps[i].size, prot);
			r->maps[i].writable = prot == (PROT_READ | PROT_WRITE);
		}
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&vmm.lock);
	return rc;
}

CUresult
sim_do_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	struct sim_vmm_map *m;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm.lock);
	m = sim_map_at((uintptr_t)addr);
	if (m) {
		m->handle->refs++;
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)m->handle;
	}
	pthread_mutex_unlock(&vmm.lock);
	return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// --- for device.c -------------------------------------------------------------------------

int
sim_vmm_check_range(uintptr_t p, size_t count)
{
	struct sim_vmm_map *m;
	int rc;

	pthread_mutex_lock(&vmm.lock);
	m = sim_map_at(p);
	rc = m && m->writable && count <= m->size - (p - m->addr) ? 0 : -1;
	pthread_mutex_unlock(&vmm.lock);
	return rc;
}

int
sim_vmm_address_range(uintptr_t p, uintptr_t *base, size_t *size)
{
	struct sim_vmm_map *m;

	pthread_mutex_lock(&vmm.lock);
	m = sim_map_at(p);
	if (m) {
		*base = m->addr;
		*size = m->size;
	}
	pthread_mutex_unlock(&vmm.lock);
	return m ? 0 : -1;
}
