/* SPDX-License-Identifier: MIT */
/**
 * @file device.c
 * @brief The simulated devices: initialisation, device heaps, memory pools, streams, and the
 *        driver calls over them (sim_do_cu*).
 *
 * This is a TEST DOUBLE: no GPU code runs and "device memory" is host memory. Each simulated
 * device owns one anonymous mapping of SIMCUDA_MEM_BYTES (MAP_NORESERVE, so pages are committed
 * only when a test touches them) and a struct sim_heap that places allocations inside it. The
 * pointers are therefore unique in the process, never collide with malloc'd memory, and can be
 * read and written by cudaMemset/cudaMemcpy.
 *
 * Ownership and locking:
 *  - struct sim_device: its heap, its pools and their chunks, under dev->lock (one per device, so
 *    threads on different devices never contend);
 *  - streams: sim.stream_lock. Streams are handles that remember a device and, while capturing,
 *    a graph;
 *  - pinned and registered host memory: host.c.
 * No function takes two of these locks at once, so there is no lock order to get wrong, and no
 * callback is ever fired with one held (the few that fire from here do so between locks).
 *
 * The sim_do_cu* functions have the driver's semantics and error codes; driver.c wraps them in
 * their CUPTI callbacks, runtime.c maps the runtime calls onto them.
 */
#include "heap.h"
#include "simcuda-internal.h"
#include "simcuda.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SIM_VERSION 13000 /* what cuDriverGetVersion and cudaDriverGetVersion report */
#define SIM_DEFAULT_MEM_BYTES ((size_t)1 << 30)
#define SIM_DISCARD_MIN ((size_t)2 << 20) /* give pages back to the kernel from this size up */

/* Kinds of blocks in a device heap; pool sub-allocations live in the chunk heaps. */
enum sim_kind {
	SIM_KIND_DEVICE = 1, /* cuMemAlloc */
	SIM_KIND_PITCH,	     /* cuMemAllocPitch */
	SIM_KIND_MANAGED,    /* cuMemAllocManaged */
	SIM_KIND_POOL_CHUNK, /* a pool's reservation; owner is the struct sim_pool_chunk */
	SIM_KIND_POOL_BLOCK, /* inside a chunk heap: cuMemAllocAsync, cuMemAllocFromPoolAsync */
	SIM_KIND_PHYS,	     /* held by the driver: VMM physical memory, the graph pool */
};

struct sim_pool;

/* A piece of device heap reserved by a pool; the pool sub-allocates inside it first-fit. */
struct sim_pool_chunk {
	struct sim_heap heap;
	struct sim_pool *pool;
};

struct sim_pool {
	int device;
	int is_default; /* the device's default pool: cannot be destroyed */
	/*
	 * cuMemPoolDestroy on a pool with live blocks returns at once and frees the pool when its
	 * last block goes, as CUDA documents. Until then the handle is dead (lookups skip it) but
	 * frees of its blocks still work.
	 */
	int destroyed;
	struct sim_pool_chunk **chunks;
	size_t n_chunks;
	size_t chunks_cap;
	size_t reserved; /* bytes of device heap held by the chunks */
	size_t used;	 /* bytes handed out from the chunks (rounded) */
	size_t reserved_high;
	size_t used_high;
	uint64_t release_threshold; /* stored for the attribute; trimming is explicit */
	struct sim_pool *next;	    /* the device's list of pools */
};

struct sim_device {
	pthread_mutex_t lock;
	int ordinal;
	void *map;
	size_t map_len;
	int touchable; /* the mapping is readable and writable (see sim_device_init) */
	struct sim_heap heap;
	struct sim_pool *default_pool;
	struct sim_pool *pools; /* every pool of the device, the default one included */
	atomic_uint retains;	/* cuDevicePrimaryCtxRetain minus Release */
};

struct sim_stream {
	int device;
	unsigned int flags;
	struct sim_graph *capture; /* the graph a stream capture records into, or NULL */
	struct sim_stream *next;
};

static struct {
	pthread_once_t once;
	atomic_int inited;	/* sim_init has run */
	cudaError_t init_error; /* returned by every device call when initialisation failed */
	int n_devices;
	size_t mem_bytes;
	uint64_t delay_ns;
	uint64_t query_ns;	 /* SIMCUDA_QUERY_NS: what a driver query costs */
	const char *query_stats; /* SIMCUDA_QUERY_STATS: where the count goes at exit */
	int verbose;
	struct sim_device *devices;

	pthread_mutex_t stream_lock;
	struct sim_stream *streams;
} sim = {
    .once = PTHREAD_ONCE_INIT,
    .stream_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Per thread, as in CUDA: the current device. */
static _Thread_local int sim_current_device;

// --- initialisation -----------------------------------------------------------------------

/* Parse "1073741824", "512M", "80G", "64k". Returns 0, or -1 for anything else or overflow. */
static int
sim_parse_size(const char *s, size_t *out)
{
	static const char suffixes[] = "kKmMgGtT";
	unsigned long long v;
	unsigned shift = 0;
	const char *suffix;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end != '\0') {
		suffix = strchr(suffixes, *end);
		if (!suffix)
			return -1;
		shift = 10 * (unsigned)(1 + (suffix - suffixes) / 2);
		end++;
	}
	if (*end != '\0' || (shift && v > (SIZE_MAX >> shift)) || v > SIZE_MAX)
		return -1;
	*out = (size_t)v << shift;
	return 0;
}

static int
sim_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* One line on stderr without stdio buffering, so it is not lost if the host process _exits. */
void
sim_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "simcuda[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return; /* nowhere left to report it */
}

/*
 * A driver query (a pool's attribute, the memory info, an address range, a device's bus id: what
 * a tracer asks inside the application's call) on a real driver is a call into the driver, a few
 * hundred nanoseconds on the H200 (docs/performance.md: the CUPTI path 350 ns above its floor
 * there, 90 on this double), not the function call it is
 * here: SIMCUDA_QUERY_NS spins that long, for benchmarks to see it. The runtime's
 * cudaGetDevice is one too (runtime.c); libcuda's cuCtxGetCurrent and cuCtxGetDevice, a
 * thread-local read in the real driver (8-10 ns on the H100 host), are not. Every one is counted,
 * and SIMCUDA_QUERY_STATS=FILE gets "queries N" at exit, so a test can bound how many a tracer
 * makes.
 */
static _Atomic unsigned long long sim_queries;

static void
sim_query_stats(void)
{
	FILE *f = sim.query_stats ? fopen(sim.query_stats, "w") : NULL;

	if (f) {
		fprintf(f, "queries %llu\n", (unsigned long long)atomic_load(&sim_queries));
		fclose(f);
	}
}

static void
sim_read_env(void)
{
	const char *s;
	unsigned long long v;

	sim.n_devices = 1;
	s = getenv("SIMCUDA_DEVICES");
	if (s) {
		if (sim_parse_uint(s, SIM_MAX_DEVICES, &v) == 0)
			sim.n_devices = (int)v;
		else
			sim_warn("ignoring SIMCUDA_DEVICES='%s': not an integer in 0..%d; using 1",
				 s, SIM_MAX_DEVICES);
	}

	sim.mem_bytes = SIM_DEFAULT_MEM_BYTES;
	s = getenv("SIMCUDA_MEM_BYTES");
	if (s) {
		size_t bytes;

		if (sim_parse_size(s, &bytes) == 0 && bytes >= SIM_HEAP_ALIGN)
			sim.mem_bytes = bytes & ~(SIM_HEAP_ALIGN - 1);
		else
			sim_warn(
			    "ignoring SIMCUDA_MEM_BYTES='%s': not a size of at least 512 bytes "
			    "(e.g. 1073741824, 512M, 80G); using 1G",
			    s);
	}

	sim.delay_ns = 0;
	s = getenv("SIMCUDA_ALLOC_DELAY_NS");
	if (s) {
		if (sim_parse_uint(s, 10ull * 1000 * 1000 * 1000, &v) == 0)
			sim.delay_ns = v;
		else
			sim_warn(
			    "ignoring SIMCUDA_ALLOC_DELAY_NS='%s': not an integer of at most 1e10; "
			    "using 0",
			    s);
	}

	sim.query_ns = 0;
	s = getenv("SIMCUDA_QUERY_NS");
	if (s) {
		if (sim_parse_uint(s, 1000ull * 1000 * 1000, &v) == 0)
			sim.query_ns = v;
		else
			sim_warn("ignoring SIMCUDA_QUERY_NS='%s': not an integer of at most 1e9; "
				 "using 0",
				 s);
	}
	sim.query_stats = getenv("SIMCUDA_QUERY_STATS");
	if (sim.query_stats)
		atexit(sim_query_stats);

	s = getenv("SIMCUDA_VERBOSE");
	sim.verbose = s && strcmp(s, "1") == 0;
}

static struct sim_pool *
sim_pool_new(int device, int is_default)
{
	struct sim_pool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	pool->device = device;
	pool->is_default = is_default;
	return pool;
}

static int
sim_device_init(struct sim_device *dev, int ordinal)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (sim.mem_bytes + (size_t)page - 1) & ~((size_t)page - 1);

	dev->ordinal = ordinal;
	pthread_mutex_init(&dev->lock, NULL);

	/*
	 * Readable and writable but NORESERVE: the whole capacity is address space only, and a page
	 * costs memory once a test writes it. Where the kernel refuses that (strict overcommit and
	 * a large SIMCUDA_MEM_BYTES), fall back to reserving address space alone: allocation still
	 * works, only cudaMemset/cudaMemcpy on device memory report cudaErrorNotSupported.
	 */
	dev->map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	dev->touchable = dev->map != MAP_FAILED;
	if (dev->map == MAP_FAILED) {
		dev->map =
		    mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (dev->map == MAP_FAILED) {
			sim_warn("device %d: cannot reserve %zu bytes of address space: %s",
				 ordinal, len, strerror(errno));
			return -ENOMEM;
		}
		sim_warn("device %d: %zu bytes mapped without access; cudaMemset/cudaMemcpy on "
			 "device memory are not supported",
			 ordinal, len);
	}
	dev->map_len = len;

	if (sim_heap_init(&dev->heap, (uintptr_t)dev->map, sim.mem_bytes) < 0)
		return -ENOMEM;
	dev->default_pool = sim_pool_new(ordinal, 1);
	if (!dev->default_pool)
		return -ENOMEM;
	dev->pools = dev->default_pool;
	return 0;
}

static void
sim_init(void)
{
	int i;

	sim_read_env();
	if (sim.n_devices > 0) {
		sim.devices = calloc((size_t)sim.n_devices, sizeof(*sim.devices));
		if (!sim.devices)
			sim.init_error = cudaErrorInitializationError;
	}
	for (i = 0; sim.devices && i < sim.n_devices; i++) {
		if (sim_device_init(&sim.devices[i], i) < 0) {
			sim.init_error = cudaErrorInitializationError;
			break;
		}
	}
	for (i = 0; sim.verbose && sim.init_error == cudaSuccess && i < sim.n_devices; i++)
		sim_warn("test double of " SIMCUDA_CUDART_SONAME
			 " (no GPU): device %d: %zu bytes at "
			 "0x%" PRIxPTR "-0x%" PRIxPTR ", alloc delay %" PRIu64 " ns",
			 i, sim.mem_bytes, sim.devices[i].heap.base,
			 sim.devices[i].heap.base + sim.devices[i].heap.capacity, sim.delay_ns);
	atomic_store_explicit(&sim.inited, 1, memory_order_release);
}

static cudaError_t
sim_init_result(void)
{
	if (sim.init_error != cudaSuccess)
		return sim.init_error;
	if (sim.n_devices == 0)
		return cudaErrorNoDevice;
	return cudaSuccess;
}

/* Initialise on first use (never from a constructor), then start (see callbacks.c). */
cudaError_t
sim_ready(void)
{
	cudaError_t err;

	pthread_once(&sim.once, sim_init);
	err = sim_init_result();
	sim_start(err == cudaSuccess);
	return err;
}

CUresult
sim_drv_ready(void)
{
	if (!atomic_load_explicit(&sim.inited, memory_order_acquire))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (sim_ready() != cudaSuccess)
		return CUDA_ERROR_NOT_INITIALIZED; /* like a driver whose cuInit failed */
	return CUDA_SUCCESS;
}

int
sim_device_count(void)
{
	return sim.n_devices;
}

int
sim_current_ordinal(void)
{
	return sim_current_device;
}

void
sim_set_current(int device)
{
	sim_current_device = device;
}

// --- helpers ------------------------------------------------------------------------------

/*
 * Spin for SIMCUDA_ALLOC_DELAY_NS, outside any lock, so that a benchmark sees allocation cost
 * of the order of a real device's (a cudaMalloc/cudaFree pair is ~80 us on an H200). A spin and
 * not a sleep: the real call burns CPU in the driver, and a sleep would round up to the timer
 * slack.
 */
void
sim_delay(void)
{
	struct timespec t0, t;
	uint64_t elapsed;

	if (sim.delay_ns == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
		elapsed = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u +
			  (uint64_t)(t.tv_nsec - t0.tv_nsec);
	} while (elapsed < sim.delay_ns);
}

void
sim_query(void)
{
	struct timespec t0, t;

	/* no initialisation here: a query before cuInit must still fail as it does */
	atomic_fetch_add_explicit(&sim_queries, 1, memory_order_relaxed);
	if (sim.query_ns == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u +
		     (uint64_t)(t.tv_nsec - t0.tv_nsec) <
		 sim.query_ns);
}

static int
sim_valid_device(int device)
{
	return device >= 0 && device < sim.n_devices;
}

static struct sim_device *
sim_current(void)
{
	return &sim.devices[sim_current_device];
}

/* The device whose window holds p, or NULL. The windows never change after init. */
static struct sim_device *
sim_device_of(uintptr_t p)
{
	int i;

	for (i = 0; i < sim.n_devices; i++)
		if (sim_heap_contains(&sim.devices[i].heap, p))
			return &sim.devices[i];
	return NULL;
}

/* Blocks that user pointers name: what cuMemFree frees and a reset clears. */
static int
sim_user_kind(unsigned kind)
{
	return kind == SIM_KIND_DEVICE || kind == SIM_KIND_PITCH || kind == SIM_KIND_MANAGED;
}

/*
 * Hand the pages of a freed range back to the kernel, so a long test that fills and frees big
 * buffers does not keep them resident. Called under dev->lock: once the lock is dropped another
 * thread may be given the range and write to it, and a late MADV_DONTNEED would zero its data.
 */
static void
sim_discard(struct sim_device *dev, uintptr_t addr, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (addr + page - 1) & ~(page - 1);
	uintptr_t hi = (addr + size) & ~(page - 1);

	if (!dev->touchable || size < SIM_DISCARD_MIN || hi <= lo)
		return;
	madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

int
sim_phys_alloc(int device, size_t size, uintptr_t *addr)
{
	struct sim_device *dev = &sim.devices[device];
	int rc;

	pthread_mutex_lock(&dev->lock);
	rc = sim_heap_alloc(&dev->heap, size, SIM_KIND_PHYS, NULL, addr);
	pthread_mutex_unlock(&dev->lock);
	return rc < 0 ? -1 : 0;
}

void
sim_phys_free(int device, uintptr_t addr)
{
	struct sim_device *dev = &sim.devices[device];

	pthread_mutex_lock(&dev->lock);
	sim_heap_free(&dev->heap, addr, NULL);
	pthread_mutex_unlock(&dev->lock);
}

// --- pools --------------------------------------------------------------------------------

static void
sim_pool_account(struct sim_pool *pool)
{
	if (pool->reserved > pool->reserved_high)
		pool->reserved_high = pool->reserved;
	if (pool->used > pool->used_high)
		pool->used_high = pool->used;
}

/* Give chunk number i back to the device heap. dev->lock held; the chunk must be empty. */
static void
sim_pool_release_chunk(struct sim_device *dev, struct sim_pool *pool, size_t i)
{
	struct sim_pool_chunk *chunk = pool->chunks[i];

	sim_discard(dev, chunk->heap.base, chunk->heap.capacity);
	sim_heap_free(&dev->heap, chunk->heap.base, NULL);
	pool->reserved -= chunk->heap.capacity;
	sim_heap_fini(&chunk->heap);
	free(chunk);
	memmove(&pool->chunks[i], &pool->chunks[i + 1],
		(pool->n_chunks - i - 1) * sizeof(*pool->chunks));
	pool->n_chunks--;
}

/* Release empty chunks, newest first, while the pool holds more than keep bytes. */
static void
sim_pool_trim(struct sim_device *dev, struct sim_pool *pool, size_t keep)
{
	size_t i = pool->n_chunks;

	while (i-- > 0 && pool->reserved > keep)
		if (pool->chunks[i]->heap.used == 0)
			sim_pool_release_chunk(dev, pool, i);
}

/* Unlink and free a pool that has no chunks left. dev->lock held. */
static void
sim_pool_free(struct sim_device *dev, struct sim_pool *pool)
{
	struct sim_pool **pp;

	for (pp = &dev->pools; *pp; pp = &(*pp)->next) {
		if (*pp == pool) {
			*pp = pool->next;
			break;
		}
	}
	free(pool->chunks);
	free(pool);
}

/* Reserve a new chunk of chunk_size bytes for the pool. dev->lock held. Returns 0 or -ENOMEM. */
static int
sim_pool_grow(struct sim_device *dev, struct sim_pool *pool, size_t chunk_size)
{
	struct sim_pool_chunk *chunk;
	uintptr_t base;

	if (pool->n_chunks == pool->chunks_cap) {
		size_t ncap = pool->chunks_cap ? pool->chunks_cap * 2 : 8;
		void *p = realloc(pool->chunks, ncap * sizeof(*pool->chunks));

		if (!p)
			return -ENOMEM;
		pool->chunks = p;
		pool->chunks_cap = ncap;
	}
	chunk = calloc(1, sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	if (sim_heap_alloc(&dev->heap, chunk_size, SIM_KIND_POOL_CHUNK, chunk, &base) < 0)
		goto err_free_chunk;
	if (sim_heap_init(&chunk->heap, base, chunk_size) < 0)
		goto err_release;
	chunk->pool = pool;
	pool->chunks[pool->n_chunks++] = chunk;
	pool->reserved += chunk_size;
	return 0;

err_release:
	sim_heap_free(&dev->heap, base, NULL);
err_free_chunk:
	free(chunk);
	return -ENOMEM;
}

/*
 * Sub-allocate size bytes from the pool, first-fit over its chunks in reservation order; when
 * none has room, reserve a new chunk of max(2 MiB, size rounded up to 2 MiB) from the device
 * heap. dev->lock held. Returns 0 or -ENOMEM (the device heap could not grow the pool).
 */
static int
sim_pool_alloc(struct sim_device *dev, struct sim_pool *pool, size_t size, uintptr_t *addr)
{
	size_t i;

	for (i = 0; i < pool->n_chunks; i++) {
		if (sim_heap_alloc(&pool->chunks[i]->heap, size, SIM_KIND_POOL_BLOCK, NULL, addr) ==
		    0)
			goto found;
	}
	if (size > SIZE_MAX - SIM_GRANULARITY ||
	    sim_pool_grow(dev, pool, (size + SIM_GRANULARITY - 1) & ~(SIM_GRANULARITY - 1)) < 0)
		return -ENOMEM;
	i = pool->n_chunks - 1;
	if (sim_heap_alloc(&pool->chunks[i]->heap, size, SIM_KIND_POOL_BLOCK, NULL, addr) < 0) {
		/* Cannot happen for a fresh chunk of at least size bytes; leave nothing behind. */
		sim_pool_release_chunk(dev, pool, i);
		return -ENOMEM;
	}
found:
	pool->used += sim_heap_find(&pool->chunks[i]->heap, *addr)->size;
	sim_pool_account(pool);
	return 0;
}

/*
 * Find a live pool by handle and return its device with dev->lock held, or NULL. Handles are
 * checked against the pool lists rather than trusted, so a stale or made-up handle is an
 * error and not a crash.
 */
static struct sim_device *
sim_pool_lock(CUmemoryPool handle, struct sim_pool **out)
{
	int i;

	for (i = 0; i < sim.n_devices; i++) {
		struct sim_device *dev = &sim.devices[i];
		struct sim_pool *pool;

		pthread_mutex_lock(&dev->lock);
		for (pool = dev->pools; pool; pool = pool->next) {
			if (pool == (struct sim_pool *)handle && !pool->destroyed) {
				*out = pool;
				return dev;
			}
		}
		pthread_mutex_unlock(&dev->lock);
	}
	return NULL;
}

// --- streams ------------------------------------------------------------------------------

/* The special handles 0, legacy and per-thread: the current device, never capturing. */
static int
sim_stream_special(CUstream stream)
{
	return stream == NULL || stream == (CUstream)cudaStreamLegacy ||
	       stream == (CUstream)cudaStreamPerThread;
}

/* A created stream, or NULL. sim.stream_lock held. */
static struct sim_stream *
sim_stream_find(CUstream stream)
{
	struct sim_stream *s;

	for (s = sim.streams; s; s = s->next)
		if (s == (struct sim_stream *)stream)
			return s;
	return NULL;
}

CUresult
sim_stream_lookup(CUstream stream, int *device, struct sim_graph **capture)
{
	struct sim_stream *s;
	CUresult rc = CUDA_ERROR_INVALID_HANDLE;

	if (capture)
		*capture = NULL;
	if (sim_stream_special(stream)) {
		*device = sim_current_device;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&sim.stream_lock);
	s = sim_stream_find(stream);
	if (s) {
		*device = s->device;
		if (capture)
			*capture = s->capture;
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim.stream_lock);
	return rc;
}

CUresult
sim_stream_set_capture(CUstream stream, struct sim_graph *graph)
{
	struct sim_stream *s;
	CUresult rc = CUDA_ERROR_INVALID_HANDLE;

	if (sim_stream_special(stream))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&sim.stream_lock);
	s = sim_stream_find(stream);
	if (s && graph && s->capture) {
		rc = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
	} else if (s && !graph && !s->capture) {
		rc = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
	} else if (s) {
		s->capture = graph;
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim.stream_lock);
	return rc;
}

cudaError_t
sim_stream_create(cudaStream_t *out, unsigned int flags)
{
	struct sim_stream *s;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!out || (flags & ~(unsigned int)cudaStreamNonBlocking))
		return cudaErrorInvalidValue;
	s = calloc(1, sizeof(*s));
	if (!s)
		return cudaErrorMemoryAllocation;
	sim_ctx_use(sim_current_device);
	s->device = sim_current_device;
	s->flags = flags;
	pthread_mutex_lock(&sim.stream_lock);
	s->next = sim.streams;
	sim.streams = s;
	pthread_mutex_unlock(&sim.stream_lock);
	*out = (cudaStream_t)s;
	return cudaSuccess;
}

/* Remove the streams of one device (device < 0: one stream, by handle). */
static int
sim_stream_remove(cudaStream_t handle, int device)
{
	struct sim_stream **pp, *s;
	int removed = 0;

	pthread_mutex_lock(&sim.stream_lock);
	pp = &sim.streams;
	while ((s = *pp) != NULL) {
		if ((device < 0 && s == (struct sim_stream *)handle) ||
		    (device >= 0 && s->device == device)) {
			*pp = s->next;
			free(s);
			removed++;
		} else {
			pp = &s->next;
		}
	}
	pthread_mutex_unlock(&sim.stream_lock);
	return removed;
}

cudaError_t
sim_stream_destroy(cudaStream_t stream)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (sim_stream_remove(stream, -1) == 0)
		return cudaErrorInvalidResourceHandle;
	return cudaSuccess;
}

cudaError_t
sim_stream_sync(cudaStream_t stream)
{
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	/* Nothing is ever queued, so a valid stream is always idle. */
	return (cudaError_t)sim_stream_lookup(stream, &device, NULL);
}

// --- device memory ------------------------------------------------------------------------

/* cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged: a block of the current device's heap. */
static CUresult
sim_alloc(CUdeviceptr *dptr, size_t size, unsigned kind)
{
	struct sim_device *dev;
	uintptr_t addr;
	int rc;

	*dptr = 0;
	sim_ctx_use(sim_current_device);
	sim_delay();
	dev = sim_current();
	pthread_mutex_lock(&dev->lock);
	rc = sim_heap_alloc(&dev->heap, size, kind, NULL, &addr);
	pthread_mutex_unlock(&dev->lock);
	if (rc < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = (CUdeviceptr)addr;
	return CUDA_SUCCESS;
}

/* Return a pool block to its pool; a destroyed pool melts away with its last block. */
static CUresult
sim_free_pool_block(struct sim_device *dev, const struct sim_block *chunk_blk, uintptr_t p)
{
	struct sim_pool_chunk *chunk = chunk_blk->owner;
	struct sim_pool *pool = chunk->pool;
	struct sim_block freed;

	if (sim_heap_free(&chunk->heap, p, &freed) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	pool->used -= freed.size;
	if (pool->destroyed) {
		sim_pool_trim(dev, pool, 0);
		if (pool->n_chunks == 0)
			sim_pool_free(dev, pool);
	}
	return CUDA_SUCCESS;
}

/*
 * Free any device-heap pointer: a cuMemAlloc/Pitch/Managed block, or a pool block (cuMemFree
 * may free stream-ordered memory, and cuMemFreeAsync ordinary memory), or graph memory. Anything
 * else, including an interior pointer and a second free, is CUDA_ERROR_INVALID_VALUE and
 * changes nothing.
 */
static CUresult
sim_free(CUdeviceptr dptr)
{
	struct sim_device *dev;
	const struct sim_block *blk;
	struct sim_block freed;
	uintptr_t p = (uintptr_t)dptr;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (!dptr)
		return CUDA_SUCCESS;
	dev = sim_device_of(p);
	if (!dev)
		return sim_graph_free_ptr(dptr, &rc) ? rc : CUDA_ERROR_INVALID_VALUE;
	sim_delay();
	pthread_mutex_lock(&dev->lock);
	blk = sim_heap_find_containing(&dev->heap, p);
	if (blk && blk->kind == SIM_KIND_POOL_CHUNK) {
		rc = sim_free_pool_block(dev, blk, p);
	} else if (blk && blk->addr == p && sim_user_kind(blk->kind) &&
		   sim_heap_free(&dev->heap, p, &freed) == 0) {
		sim_discard(dev, freed.addr, freed.size);
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

CUresult
sim_do_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_alloc(dptr, bytesize, SIM_KIND_DEVICE);
}

/* The pitch is the width rounded up to the heap granularity (512 B). */
CUresult
sim_do_cuMemAllocPitch_v2(CUdeviceptr *dptr,
			  size_t *pPitch,
			  size_t WidthInBytes,
			  size_t Height,
			  unsigned int ElementSizeBytes)
{
	size_t pitch = sim_heap_round(WidthInBytes);
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = 0;
	if (!pitch || pitch > SIZE_MAX / Height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_alloc(dptr, pitch * Height, SIM_KIND_PITCH);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
	return rc;
}

CUresult
sim_do_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	/* CU_MEM_ATTACH_HOST is accepted: the model keeps managed memory in the device heap. */
	if (!dptr || bytesize == 0 ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	return sim_alloc(dptr, bytesize, SIM_KIND_MANAGED);
}

CUresult
sim_do_cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	sim_ctx_use(sim_current_device);
	return sim_free(dptr);
}

/* A pool block is reported as itself, not as its chunk. dev->lock held. */
static const struct sim_block *
sim_user_block(struct sim_device *dev, uintptr_t p)
{
	const struct sim_block *blk = sim_heap_find_containing(&dev->heap, p);

	if (blk && blk->kind == SIM_KIND_POOL_CHUNK)
		return sim_heap_find_containing(&((struct sim_pool_chunk *)blk->owner)->heap, p);
	return blk && sim_user_kind(blk->kind) ? blk : NULL;
}

CUresult
sim_do_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct sim_device *dev;
	const struct sim_block *blk;
	uintptr_t base = 0;
	size_t size = 0;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	dev = sim_device_of((uintptr_t)dptr);
	if (dev) {
		rc = CUDA_ERROR_NOT_FOUND;
		pthread_mutex_lock(&dev->lock);
		blk = sim_user_block(dev, (uintptr_t)dptr);
		if (blk) {
			base = blk->addr;
			size = blk->size;
			rc = CUDA_SUCCESS;
		}
		pthread_mutex_unlock(&dev->lock);
	} else if (sim_vmm_address_range((uintptr_t)dptr, &base, &size) < 0) {
		rc = CUDA_ERROR_NOT_FOUND;
	}
	if (rc == CUDA_SUCCESS && pbase)
		*pbase = (CUdeviceptr)base;
	if (rc == CUDA_SUCCESS && psize)
		*psize = size;
	return rc;
}

CUresult
sim_do_cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
	struct sim_device *dev;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!free_bytes || !total_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	sim_ctx_use(sim_current_device);
	dev = sim_current();
	pthread_mutex_lock(&dev->lock);
	*free_bytes = dev->heap.capacity - dev->heap.used;
	*total_bytes = dev->heap.capacity;
	pthread_mutex_unlock(&dev->lock);
	return CUDA_SUCCESS;
}

// --- stream-ordered allocation ------------------------------------------------------------

/* dev->lock is held on entry (sim_pool_lock or the caller) and released here. */
static CUresult
sim_pool_malloc(CUdeviceptr *out, size_t size, struct sim_device *dev, struct sim_pool *pool)
{
	uintptr_t addr;
	int rc;

	rc = sim_pool_alloc(dev, pool, size, &addr);
	pthread_mutex_unlock(&dev->lock);
	if (rc < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUdeviceptr)addr;
	return CUDA_SUCCESS;
}

/*
 * cuMemAllocAsync and cuMemAllocFromPoolAsync (handle NULL: the default pool of the stream's
 * device). On a capturing stream the allocation becomes a graph node instead.
 */
static CUresult
sim_malloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool handle, CUstream stream)
{
	struct sim_graph *capture;
	struct sim_device *dev;
	struct sim_pool *pool;
	int device;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = 0;
	rc = sim_stream_lookup(stream, &device, &capture);
	if (rc != CUDA_SUCCESS)
		return rc;
	sim_ctx_use(device);
	if (capture)
		return sim_graph_capture_alloc(capture, device, size, dptr);
	sim_delay();
	if (!handle) {
		dev = &sim.devices[device];
		pthread_mutex_lock(&dev->lock);
		return sim_pool_malloc(dptr, size, dev, dev->default_pool);
	}
	dev = sim_pool_lock(handle, &pool);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_pool_malloc(dptr, size, dev, pool);
}

static CUresult
sim_free_async(CUdeviceptr dptr, CUstream stream)
{
	struct sim_graph *capture;
	int device;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_stream_lookup(stream, &device, &capture);
	if (rc != CUDA_SUCCESS)
		return rc;
	sim_ctx_use(device);
	if (capture && dptr)
		return sim_graph_capture_free(capture, dptr);
	/* The simulation has no queue: the free takes effect at once, as if the stream were idle */
	return sim_free(dptr);
}

CUresult
sim_do_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return sim_malloc_async(dptr, bytesize, NULL, hStream);
}

CUresult
sim_do_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return sim_malloc_async(dptr, bytesize, NULL, hStream);
}

CUresult
sim_do_cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
			       size_t bytesize,
			       CUmemoryPool pool,
			       CUstream hStream)
{
	return pool ? sim_malloc_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE;
}

CUresult
sim_do_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
				    size_t bytesize,
				    CUmemoryPool pool,
				    CUstream hStream)
{
	return pool ? sim_malloc_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE;
}

CUresult
sim_do_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return sim_free_async(dptr, hStream);
}

CUresult
sim_do_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return sim_free_async(dptr, hStream);
}

// --- pools as the driver sees them --------------------------------------------------------

static CUresult
sim_device_pool(CUmemoryPool *out, CUdevice dev)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	/* Fixed at init and never freed, so no lock is needed to read it. */
	*out = (CUmemoryPool)sim.devices[dev].default_pool;
	return CUDA_SUCCESS;
}

/* cuDeviceSetMemPool is not simulated: the current pool is always the default one. */
CUresult
sim_do_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return sim_device_pool(pool, dev);
}

CUresult
sim_do_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	return sim_device_pool(pool_out, dev);
}

CUresult
sim_do_cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!out || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_valid_device(props->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	pool = sim_pool_new(props->location.id, 0);
	if (!pool)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_ctx_use(pool->device);
	dev = &sim.devices[pool->device];
	pthread_mutex_lock(&dev->lock);
	pool->next = dev->pools;
	dev->pools = pool;
	pthread_mutex_unlock(&dev->lock);
	*out = (CUmemoryPool)pool;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuMemPoolDestroy(CUmemoryPool handle)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	dev = sim_pool_lock(handle, &pool);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (pool->is_default) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		sim_pool_trim(dev, pool, 0);
		if (pool->n_chunks == 0)
			sim_pool_free(dev, pool);
		else
			pool->destroyed = 1; /* freed by sim_free when its last block comes back */
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

CUresult
sim_do_cuMemPoolTrimTo(CUmemoryPool handle, size_t minBytesToKeep)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	dev = sim_pool_lock(handle, &pool);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	sim_pool_trim(dev, pool, minBytesToKeep);
	pthread_mutex_unlock(&dev->lock);
	return CUDA_SUCCESS;
}

/* One attribute of a pool; dev->lock held. */
static CUresult
sim_pool_get(const struct sim_pool *pool, CUmemPool_attribute attr, void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = 1;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = pool->release_threshold;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(cuuint64_t *)value = pool->reserved;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = pool->reserved_high;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = pool->used;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = pool->used_high;
		return CUDA_SUCCESS;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

/* Set one attribute of a pool; dev->lock held. */
static CUresult
sim_pool_set(struct sim_pool *pool, CUmemPool_attribute attr, const void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		return CUDA_SUCCESS; /* reuse policy has no meaning without a queue */
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		/* Stored and reported, but the simulation only trims on cuMemPoolTrimTo. */
		pool->release_threshold = *(const cuuint64_t *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		/* As in CUDA, the only value a high-water mark accepts is 0: reset to current. */
		if (*(const cuuint64_t *)value != 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
			pool->reserved_high = pool->reserved;
		else
			pool->used_high = pool->used;
		return CUDA_SUCCESS;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult
sim_pool_attr(CUmemoryPool handle, CUmemPool_attribute attr, void *value, int set)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	dev = sim_pool_lock(handle, &pool);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	rc = set ? sim_pool_set(pool, attr, value) : sim_pool_get(pool, attr, value);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

CUresult
sim_do_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	return sim_pool_attr(pool, attr, value, 1);
}

CUresult
sim_do_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	return sim_pool_attr(pool, attr, value, 0);
}

// --- memset and memcpy (runtime only) -----------------------------------------------------

/*
 * Check that [p, p + count) lies inside one live device allocation (a pool block counts, the
 * free part of a pool chunk does not) of a device whose memory can be touched, or inside one
 * VMM mapping with read-write access.
 */
static cudaError_t
sim_check_device_range(const void *ptr, size_t count)
{
	uintptr_t p = (uintptr_t)ptr;
	struct sim_device *dev = sim_device_of(p);
	const struct sim_block *blk;
	cudaError_t err = cudaErrorInvalidValue;

	if (!dev)
		return sim_vmm_check_range(p, count) == 0 ? cudaSuccess : cudaErrorInvalidValue;
	if (!dev->touchable)
		return cudaErrorNotSupported;
	pthread_mutex_lock(&dev->lock);
	blk = sim_user_block(dev, p);
	if (blk && count <= blk->size - (p - blk->addr))
		err = cudaSuccess;
	pthread_mutex_unlock(&dev->lock);
	return err;
}

static int
sim_is_device_side(const void *p)
{
	return sim_device_of((uintptr_t)p) != NULL || sim_vmm_check_range((uintptr_t)p, 1) == 0;
}

cudaError_t
sim_memset(void *ptr, int value, size_t count, cudaStream_t stream)
{
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	err = (cudaError_t)sim_stream_lookup(stream, &device, NULL);
	if (err != cudaSuccess)
		return err;
	if (count == 0)
		return cudaSuccess;
	err = sim_check_device_range(ptr, count);
	if (err != cudaSuccess)
		return err;
	memset(ptr, value, count);
	return cudaSuccess;
}

/* Which sides of a copy are device memory; -1 for a kind that is no direction. */
static int
sim_copy_sides(
    const void *dst, const void *src, enum cudaMemcpyKind kind, int *dst_dev, int *src_dev)
{
	*dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	*src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
	if (kind == cudaMemcpyDefault) {
		/* Unified addressing: the pointer says where it lives. */
		*dst_dev = sim_is_device_side(dst);
		*src_dev = sim_is_device_side(src);
	}
	return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault ? 0 : -1;
}

cudaError_t
sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	int device, dst_dev, src_dev;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	err = (cudaError_t)sim_stream_lookup(stream, &device, NULL);
	if (err != cudaSuccess)
		return err;
	if (sim_copy_sides(dst, src, kind, &dst_dev, &src_dev) < 0)
		return cudaErrorInvalidMemcpyDirection;
	if (count == 0)
		return cudaSuccess;
	if (dst_dev && (err = sim_check_device_range(dst, count)) != cudaSuccess)
		return err;
	if (src_dev && (err = sim_check_device_range(src, count)) != cudaSuccess)
		return err;
	if (!dst || !src)
		return cudaErrorInvalidValue;
	memmove(dst, src, count);
	return cudaSuccess;
}

// --- initialisation, devices and contexts as the driver sees them -------------------------

CUresult
sim_do_cuInit(unsigned int Flags)
{
	cudaError_t err;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_ready();
	if (err == cudaErrorNoDevice)
		return CUDA_ERROR_NO_DEVICE;
	return err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult
sim_do_cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = SIM_VERSION;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_valid_device(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuDeviceGetCount(int *count)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = sim.n_devices;
	return CUDA_SUCCESS;
}

/* Fake but stable bus ids: device d is on bus d + 1. */
CUresult
sim_do_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", (unsigned)dev + 1);
	return CUDA_SUCCESS;
}

/*
 * The simulated thread is always bound to the primary context of its current device, so the
 * device of the current context is the current device; while that context does not exist the
 * thread has none, and the driver then says CUDA_ERROR_INVALID_CONTEXT.
 */
CUresult
sim_do_cuCtxGetDevice(CUdevice *device)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_ctx_uid(sim_current_device))
		return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: no current context */
	*device = sim_current_device;
	return CUDA_SUCCESS;
}

/* The current device's context, or NULL while it does not exist. */
CUresult
sim_do_cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = sim_ctx_uid(sim_current_device) ? sim_ctx_handle(sim_current_device) : NULL;
	return CUDA_SUCCESS;
}

/* Binding a context makes its device current; NULL changes nothing in this model. */
CUresult
sim_do_cuCtxSetCurrent(CUcontext ctx)
{
	int device = sim_ctx_device(ctx);
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctx)
		return CUDA_SUCCESS;
	if (device < 0 || !sim_valid_device(device) || sim_ctx_uid(device) == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	sim_current_device = device;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	sim_ctx_use(dev);
	atomic_fetch_add(&sim.devices[dev].retains, 1);
	*pctx = sim_ctx_handle(dev);
	return CUDA_SUCCESS;
}

/* Counts only: the runtime holds the primary context for the life of the process. */
CUresult
sim_do_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	unsigned n;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	n = atomic_load(&sim.devices[dev].retains);
	do {
		if (n == 0)
			return CUDA_ERROR_INVALID_CONTEXT;
	} while (!atomic_compare_exchange_weak(&sim.devices[dev].retains, &n, n - 1));
	return CUDA_SUCCESS;
}

/* Free every user block of the device heap (pool chunks and driver memory stay). */
static void
sim_reset_heap(struct sim_device *dev)
{
	size_t i;

	pthread_mutex_lock(&dev->lock);
	/* Backwards, so that removing block i leaves the indices still to visit in place. */
	for (i = dev->heap.n_blocks; i-- > 0;) {
		struct sim_block blk = dev->heap.blocks[i];

		if (!sim_user_kind(blk.kind))
			continue;
		sim_heap_free(&dev->heap, blk.addr, NULL);
		sim_discard(dev, blk.addr, blk.size);
	}
	pthread_mutex_unlock(&dev->lock);
}

/*
 * Destroy the device's context: CONTEXT_DESTROY_STARTING first (the subscriber may still query
 * the context), then free everything cuMemAlloc, cuMemAllocPitch and cuMemAllocManaged placed
 * there, the pinned and registered host memory of the device, and its streams. Pools and their
 * blocks survive (CUDA documents that a reset does not destroy cudaMallocAsync /
 * cudaMallocFromPoolAsync memory), and so do VMM and graph memory.
 */
CUresult
sim_do_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	sim_ctx_destroy_starting(dev);
	sim_reset_heap(&sim.devices[dev]);
	sim_host_reset(dev);
	sim_stream_remove(NULL, dev);
	sim_ctx_destroyed(dev);
	return CUDA_SUCCESS;
}

// --- test helpers (version SIMCUDA_1) -----------------------------------------------------

int
simcuda_is_simulated(void)
{
	return 1;
}

int
simcuda_device_range(int device, uintptr_t *base, size_t *capacity)
{
	if (sim_ready() != cudaSuccess || !sim_valid_device(device))
		return -1;
	*base = sim.devices[device].heap.base;
	*capacity = sim.devices[device].heap.capacity;
	return 0;
}

/* The chunks of a pool against the device heap; adds its reservation to *reserved_total. */
static int
sim_check_pool(struct sim_device *dev, const struct sim_pool *pool, size_t *reserved_total)
{
	size_t i, reserved = 0, used = 0;
	int rc = 0;

	for (i = 0; i < pool->n_chunks && rc == 0; i++) {
		const struct sim_heap *h = &pool->chunks[i]->heap;
		const struct sim_block *b = sim_heap_find(&dev->heap, h->base);

		rc = sim_heap_check(h);
		if (rc == 0 && (!b || b->kind != SIM_KIND_POOL_CHUNK ||
				b->owner != pool->chunks[i] || b->size != h->capacity))
			rc = 10; /* a chunk that the device heap does not know as such */
		reserved += h->capacity;
		used += h->used;
	}
	if (rc == 0 && (reserved != pool->reserved || used != pool->used))
		rc = 11; /* pool accounting off */
	*reserved_total += reserved;
	return rc;
}

int
simcuda_check(int device)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	size_t i, reserved_total = 0, chunk_bytes = 0;
	int rc;

	if (sim_ready() != cudaSuccess || !sim_valid_device(device))
		return -1;
	dev = &sim.devices[device];
	pthread_mutex_lock(&dev->lock);
	rc = sim_heap_check(&dev->heap);
	for (pool = dev->pools; pool && rc == 0; pool = pool->next)
		rc = sim_check_pool(dev, pool, &reserved_total);
	for (i = 0; rc == 0 && i < dev->heap.n_blocks; i++)
		if (dev->heap.blocks[i].kind == SIM_KIND_POOL_CHUNK)
			chunk_bytes += dev->heap.blocks[i].size;
	if (rc == 0 && chunk_bytes != reserved_total)
		rc = 12; /* a chunk that no pool owns */
	pthread_mutex_unlock(&dev->lock);
	return rc;
}
