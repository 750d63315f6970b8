/* SPDX-License-Identifier: MIT */
/**
 * @file runtime.c
 * @brief The cuda* entry points of the simulated libcudart.so.13 and the state behind them.
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
 *  - pinned host blocks: sim.host_lock;
 *  - streams: sim.stream_lock. Streams are handles that remember a device and nothing more.
 * No function takes two of these locks at once, so there is no lock order to get wrong.
 *
 * Every exported cuda* function is a thin shell over static helpers, and no cuda* function calls
 * another. That matters to the profiler under test: it interposes these symbols, and an internal
 * call through the PLT (cudaMallocHost -> cudaHostAlloc, say) would be seen as a second event.
 *
 * Errors follow the runtime: a failing call stores its code as the calling thread's last error
 * (cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it); a successful
 * call leaves the last error alone.
 */
#include "heap.h"
#include "simcuda-internal.h"
#include "simcuda.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SIM_VERSION 13000 /* what cudaDriverGetVersion and cudaRuntimeGetVersion report */
#define SIM_DEFAULT_MEM_BYTES ((size_t)1 << 30)
#define SIM_MAX_DEVICES 64
#define SIM_POOL_CHUNK ((size_t)2 << 20)   /* pools grow the device heap in 2 MiB steps */
#define SIM_DISCARD_MIN ((size_t)2 << 20) /* give pages back to the kernel from this size up */

/* Kinds of blocks in a device heap; pool sub-allocations live in the chunk heaps. */
enum sim_kind {
	SIM_KIND_DEVICE = 1, /* cudaMalloc */
	SIM_KIND_PITCH,      /* cudaMallocPitch */
	SIM_KIND_MANAGED,    /* cudaMallocManaged */
	SIM_KIND_POOL_CHUNK, /* a pool's reservation; owner is the struct sim_pool_chunk */
	SIM_KIND_POOL_BLOCK, /* inside a chunk heap: cudaMallocAsync, cudaMallocFromPoolAsync */
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
	 * cudaMemPoolDestroy on a pool with live blocks returns at once and frees the pool when its
	 * last block goes, as the real runtime documents. Until then the handle is dead (lookups
	 * skip it) but cudaFree/cudaFreeAsync of its blocks still work.
	 */
	int destroyed;
	struct sim_pool_chunk **chunks;
	size_t n_chunks;
	size_t chunks_cap;
	size_t reserved; /* bytes of device heap held by the chunks */
	size_t used;     /* bytes handed out from the chunks (rounded) */
	size_t reserved_high;
	size_t used_high;
	uint64_t release_threshold; /* stored for cudaMemPoolGetAttribute; trimming is explicit */
	struct sim_pool *next;      /* the device's list of pools */
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
};

struct sim_stream {
	int device;
	unsigned int flags;
	struct sim_stream *next;
};

struct sim_host_block {
	void *ptr;
	size_t size;
	size_t map_len;
	unsigned int flags;
	int device; /* current device at allocation time: cudaDeviceReset frees by it */
};

static struct {
	pthread_once_t once;
	cudaError_t init_error; /* returned by every device call when initialisation failed */
	int n_devices;
	size_t mem_bytes;
	uint64_t delay_ns;
	int verbose;
	struct sim_device *devices;

	pthread_mutex_t stream_lock;
	struct sim_stream *streams;

	pthread_mutex_t host_lock;
	struct sim_host_block *host;
	size_t n_host;
	size_t host_cap;
} sim = {
	.once = PTHREAD_ONCE_INIT,
	.stream_lock = PTHREAD_MUTEX_INITIALIZER,
	.host_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Per thread, as in CUDA: the current device and the last error. */
static _Thread_local int sim_current_device;
static _Thread_local cudaError_t sim_last_error = cudaSuccess;

// --- initialisation -----------------------------------------------------------------------

/* Parse "1073741824", "512M", "80G", "64k". Returns 0, or -1 for anything else or overflow. */
static int
sim_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		return -1;
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
static void
sim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
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
			sim_warn("ignoring SIMCUDA_DEVICES='%s': not an integer in 0..%d; using 1", s,
				 SIM_MAX_DEVICES);
	}

	sim.mem_bytes = SIM_DEFAULT_MEM_BYTES;
	s = getenv("SIMCUDA_MEM_BYTES");
	if (s) {
		size_t bytes;

		if (sim_parse_size(s, &bytes) == 0 && bytes >= SIM_HEAP_ALIGN)
			sim.mem_bytes = bytes & ~(SIM_HEAP_ALIGN - 1);
		else
			sim_warn("ignoring SIMCUDA_MEM_BYTES='%s': not a size of at least 512 bytes "
				 "(e.g. 1073741824, 512M, 80G); using 1G",
				 s);
	}

	sim.delay_ns = 0;
	s = getenv("SIMCUDA_ALLOC_DELAY_NS");
	if (s) {
		if (sim_parse_uint(s, 10ull * 1000 * 1000 * 1000, &v) == 0)
			sim.delay_ns = v;
		else
			sim_warn("ignoring SIMCUDA_ALLOC_DELAY_NS='%s': not an integer of at most 1e10; "
				 "using 0",
				 s);
	}

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
		dev->map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				-1, 0);
		if (dev->map == MAP_FAILED) {
			sim_warn("device %d: cannot reserve %zu bytes of address space: %s", ordinal,
				 len, strerror(errno));
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
	if (sim.n_devices == 0)
		return;
	sim.devices = calloc((size_t)sim.n_devices, sizeof(*sim.devices));
	if (!sim.devices) {
		sim.init_error = cudaErrorInitializationError;
		return;
	}
	for (i = 0; i < sim.n_devices; i++) {
		if (sim_device_init(&sim.devices[i], i) < 0) {
			sim.init_error = cudaErrorInitializationError;
			return;
		}
	}
	if (sim.verbose) {
		for (i = 0; i < sim.n_devices; i++)
			sim_warn("test double of libcudart.so.13 (no GPU): device %d: %zu bytes at "
				 "0x%" PRIxPTR "-0x%" PRIxPTR ", alloc delay %" PRIu64 " ns",
				 i, sim.mem_bytes, sim.devices[i].heap.base,
				 sim.devices[i].heap.base + sim.devices[i].heap.capacity,
				 sim.delay_ns);
	}
}

/* Initialise on first use (never from a constructor) and say whether devices are usable. */
static cudaError_t
sim_ready(void)
{
	pthread_once(&sim.once, sim_init);
	if (sim.init_error != cudaSuccess)
		return sim.init_error;
	if (sim.n_devices == 0)
		return cudaErrorNoDevice;
	return cudaSuccess;
}

// --- helpers ------------------------------------------------------------------------------

/* Record a failure as the thread's last error; success leaves it alone, as in CUDA. */
static cudaError_t
sim_result(cudaError_t err)
{
	if (err != cudaSuccess)
		sim_last_error = err;
	return err;
}

/*
 * Spin for SIMCUDA_ALLOC_DELAY_NS, outside any lock, so that a benchmark sees allocation cost
 * of the order of a real device's (a cudaMalloc/cudaFree pair is ~80 us on an H200). A spin and
 * not a sleep: the real call burns CPU in the driver, and a sleep would round up to the timer
 * slack.
 */
static void
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

static struct sim_device *
sim_current(void)
{
	return &sim.devices[sim_current_device];
}

/* The device whose window holds p, or NULL. The windows never change after init. */
static struct sim_device *
sim_device_of(const void *p)
{
	int i;

	for (i = 0; i < sim.n_devices; i++)
		if (sim_heap_contains(&sim.devices[i].heap, (uintptr_t)p))
			return &sim.devices[i];
	return NULL;
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

/*
 * Sub-allocate size bytes from the pool, first-fit over its chunks in reservation order; when
 * none has room, reserve a new chunk of max(2 MiB, size rounded up to 2 MiB) from the device
 * heap. dev->lock held. Returns 0 or -ENOMEM (the device heap could not grow the pool).
 */
static int
sim_pool_alloc(struct sim_device *dev, struct sim_pool *pool, size_t size, uintptr_t *addr)
{
	struct sim_pool_chunk *chunk;
	size_t i, chunk_size;
	uintptr_t base;

	for (i = 0; i < pool->n_chunks; i++) {
		if (sim_heap_alloc(&pool->chunks[i]->heap, size, SIM_KIND_POOL_BLOCK, NULL, addr) == 0)
			goto found;
	}

	if (size > SIZE_MAX - SIM_POOL_CHUNK)
		return -ENOMEM;
	chunk_size = (size + SIM_POOL_CHUNK - 1) & ~(SIM_POOL_CHUNK - 1);
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
	i = pool->n_chunks - 1;
	if (sim_heap_alloc(&chunk->heap, size, SIM_KIND_POOL_BLOCK, NULL, addr) < 0) {
		/* Cannot happen for a fresh chunk of at least size bytes; leave nothing behind. */
		sim_pool_release_chunk(dev, pool, i);
		return -ENOMEM;
	}
found:
	pool->used += sim_heap_find(&pool->chunks[i]->heap, *addr)->size;
	sim_pool_account(pool);
	return 0;

err_release:
	sim_heap_free(&dev->heap, base, NULL);
err_free_chunk:
	free(chunk);
	return -ENOMEM;
}

/*
 * Find a live pool by handle and return its device with dev->lock held, or NULL. Handles are
 * checked against the pool lists rather than trusted, so a stale or made-up handle is an
 * error and not a crash.
 */
static struct sim_device *
sim_pool_lock(cudaMemPool_t handle, struct sim_pool **out)
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

/* The device a stream belongs to; the special handles 0, legacy and per-thread mean "current". */
static cudaError_t
sim_stream_device(cudaStream_t stream, int *device)
{
	struct sim_stream *s;
	cudaError_t err = cudaErrorInvalidResourceHandle;

	if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
		*device = sim_current_device;
		return cudaSuccess;
	}
	pthread_mutex_lock(&sim.stream_lock);
	for (s = sim.streams; s; s = s->next) {
		if (s == (struct sim_stream *)stream) {
			*device = s->device;
			err = cudaSuccess;
			break;
		}
	}
	pthread_mutex_unlock(&sim.stream_lock);
	return err;
}

static cudaError_t
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

// --- allocation ---------------------------------------------------------------------------

static cudaError_t
sim_device_alloc(void **out, size_t size, unsigned kind)
{
	struct sim_device *dev;
	uintptr_t addr;
	cudaError_t err = sim_ready();
	int rc;

	if (err != cudaSuccess)
		return err;
	if (!out)
		return cudaErrorInvalidValue;
	/* The real runtime answers a zero-byte request with success and a NULL pointer. */
	*out = NULL;
	if (size == 0)
		return cudaSuccess;
	sim_delay();
	dev = sim_current();
	pthread_mutex_lock(&dev->lock);
	rc = sim_heap_alloc(&dev->heap, size, kind, NULL, &addr);
	pthread_mutex_unlock(&dev->lock);
	if (rc < 0)
		return cudaErrorMemoryAllocation;
	*out = (void *)addr;
	return cudaSuccess;
}

/*
 * Free any device-heap pointer: a cudaMalloc/Pitch/Managed block, or a pool block (cudaFree
 * may free stream-ordered memory, and cudaFreeAsync ordinary memory). A pool block goes back
 * to its pool, not to the device heap. Anything else, including an interior pointer and a
 * second free, is cudaErrorInvalidValue and changes nothing.
 */
static cudaError_t
sim_device_free(void *ptr)
{
	struct sim_device *dev;
	const struct sim_block *blk;
	uintptr_t p = (uintptr_t)ptr;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!ptr)
		return cudaSuccess;
	dev = sim_device_of(ptr);
	if (!dev)
		return cudaErrorInvalidValue;
	sim_delay();

	err = cudaErrorInvalidValue;
	pthread_mutex_lock(&dev->lock);
	blk = sim_heap_find_containing(&dev->heap, p);
	if (blk && blk->kind == SIM_KIND_POOL_CHUNK) {
		struct sim_pool_chunk *chunk = blk->owner;
		struct sim_pool *pool = chunk->pool;
		struct sim_block freed;

		if (sim_heap_free(&chunk->heap, p, &freed) == 0) {
			pool->used -= freed.size;
			/* A destroyed pool melts away as its blocks come back. */
			if (pool->destroyed) {
				sim_pool_trim(dev, pool, 0);
				if (pool->n_chunks == 0)
					sim_pool_free(dev, pool);
			}
			err = cudaSuccess;
		}
	} else if (blk && blk->addr == p) {
		struct sim_block freed;

		if (sim_heap_free(&dev->heap, p, &freed) == 0) {
			sim_discard(dev, freed.addr, freed.size);
			err = cudaSuccess;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return err;
}

static cudaError_t
sim_pool_malloc(void **out, size_t size, struct sim_device *dev, struct sim_pool *pool)
{
	uintptr_t addr;
	int rc;

	/* dev->lock is held on entry (sim_pool_lock or the caller) and released here. */
	rc = sim_pool_alloc(dev, pool, size, &addr);
	pthread_mutex_unlock(&dev->lock);
	if (rc < 0)
		return cudaErrorMemoryAllocation;
	*out = (void *)addr;
	return cudaSuccess;
}

static cudaError_t
sim_malloc_async(void **out, size_t size, cudaStream_t stream)
{
	struct sim_device *dev;
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!out)
		return cudaErrorInvalidValue;
	*out = NULL;
	err = sim_stream_device(stream, &device);
	if (err != cudaSuccess)
		return err;
	if (size == 0)
		return cudaSuccess;
	sim_delay();
	dev = &sim.devices[device];
	pthread_mutex_lock(&dev->lock);
	return sim_pool_malloc(out, size, dev, dev->default_pool);
}

static cudaError_t
sim_malloc_from_pool_async(void **out, size_t size, cudaMemPool_t handle, cudaStream_t stream)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!out)
		return cudaErrorInvalidValue;
	*out = NULL;
	err = sim_stream_device(stream, &device);
	if (err != cudaSuccess)
		return err;
	if (size == 0)
		return cudaSuccess;
	sim_delay();
	dev = sim_pool_lock(handle, &pool);
	if (!dev)
		return cudaErrorInvalidValue;
	return sim_pool_malloc(out, size, dev, pool);
}

static cudaError_t
sim_free_async(void *ptr, cudaStream_t stream)
{
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	err = sim_stream_device(stream, &device);
	if (err != cudaSuccess)
		return err;
	/* The simulation has no queue: the free takes effect at once, as if the stream were idle. */
	return sim_device_free(ptr);
}

static cudaError_t
sim_host_alloc(void **out, size_t size, unsigned int flags)
{
	const unsigned int known = cudaHostAllocPortable | cudaHostAllocMapped |
				   cudaHostAllocWriteCombined;
	long page = sysconf(_SC_PAGESIZE);
	struct sim_host_block *b;
	size_t len;
	void *p;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!out || (flags & ~known))
		return cudaErrorInvalidValue;
	*out = NULL;
	if (size == 0)
		return cudaSuccess;
	if (size > SIZE_MAX - (size_t)page)
		return cudaErrorMemoryAllocation;
	sim_delay();
	/* Real host memory, page-aligned like pinned memory, and never device capacity. */
	len = (size + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return cudaErrorMemoryAllocation;

	pthread_mutex_lock(&sim.host_lock);
	if (sim.n_host == sim.host_cap) {
		size_t ncap = sim.host_cap ? sim.host_cap * 2 : 64;
		void *t = realloc(sim.host, ncap * sizeof(*sim.host));

		if (!t) {
			pthread_mutex_unlock(&sim.host_lock);
			munmap(p, len);
			return cudaErrorMemoryAllocation;
		}
		sim.host = t;
		sim.host_cap = ncap;
	}
	b = &sim.host[sim.n_host++];
	b->ptr = p;
	b->size = size;
	b->map_len = len;
	b->flags = flags;
	b->device = sim_current_device;
	pthread_mutex_unlock(&sim.host_lock);
	*out = p;
	return cudaSuccess;
}

/* Unmap pinned block i; sim.host_lock held. Order of the table does not matter. */
static void
sim_host_remove(size_t i)
{
	munmap(sim.host[i].ptr, sim.host[i].map_len);
	sim.host[i] = sim.host[--sim.n_host];
}

static cudaError_t
sim_host_free(void *ptr)
{
	size_t i;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	if (!ptr)
		return cudaSuccess;
	sim_delay();
	err = cudaErrorInvalidValue;
	pthread_mutex_lock(&sim.host_lock);
	for (i = 0; i < sim.n_host; i++) {
		if (sim.host[i].ptr == ptr) {
			sim_host_remove(i);
			err = cudaSuccess;
			break;
		}
	}
	pthread_mutex_unlock(&sim.host_lock);
	return err;
}

/*
 * Check that [p, p + count) lies inside one live device allocation (a pool block counts, the
 * free part of a pool chunk does not) of a device whose memory can be touched.
 */
static cudaError_t
sim_check_device_range(const void *p, size_t count)
{
	struct sim_device *dev = sim_device_of(p);
	const struct sim_block *blk;
	uintptr_t a = (uintptr_t)p;
	cudaError_t err = cudaErrorInvalidValue;

	if (!dev)
		return cudaErrorInvalidValue;
	if (!dev->touchable)
		return cudaErrorNotSupported;
	pthread_mutex_lock(&dev->lock);
	blk = sim_heap_find_containing(&dev->heap, a);
	if (blk && blk->kind == SIM_KIND_POOL_CHUNK)
		blk = sim_heap_find_containing(&((struct sim_pool_chunk *)blk->owner)->heap, a);
	if (blk && count <= blk->size - (a - blk->addr))
		err = cudaSuccess;
	pthread_mutex_unlock(&dev->lock);
	return err;
}

static cudaError_t
sim_memset(void *ptr, int value, size_t count, cudaStream_t stream)
{
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	err = sim_stream_device(stream, &device);
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

static cudaError_t
sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
	   cudaStream_t stream)
{
	int device, dst_dev = 0, src_dev = 0;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	err = sim_stream_device(stream, &device);
	if (err != cudaSuccess)
		return err;
	switch (kind) {
	case cudaMemcpyHostToHost:
		break;
	case cudaMemcpyHostToDevice:
		dst_dev = 1;
		break;
	case cudaMemcpyDeviceToHost:
		src_dev = 1;
		break;
	case cudaMemcpyDeviceToDevice:
		dst_dev = src_dev = 1;
		break;
	case cudaMemcpyDefault:
		/* Unified addressing: the pointer says where it lives. */
		dst_dev = sim_device_of(dst) != NULL;
		src_dev = sim_device_of(src) != NULL;
		break;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
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

// --- the runtime API: memory --------------------------------------------------------------

cudaError_t CUDARTAPI
cudaMalloc(void **devPtr, size_t size)
{
	return sim_result(sim_device_alloc(devPtr, size, SIM_KIND_DEVICE));
}

cudaError_t CUDARTAPI
cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	/* cudaMemAttachHost is accepted: the simple model keeps managed memory in the device heap. */
	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
		return sim_result(cudaErrorInvalidValue);
	return sim_result(sim_device_alloc(devPtr, size, SIM_KIND_MANAGED));
}

cudaError_t CUDARTAPI
cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t p = sim_heap_round(width);
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!devPtr || !pitch)
		return sim_result(cudaErrorInvalidValue);
	if ((width && !p) || (height && p > SIZE_MAX / height)) {
		*devPtr = NULL;
		return sim_result(cudaErrorMemoryAllocation);
	}
	*pitch = p;
	return sim_result(sim_device_alloc(devPtr, p * height, SIM_KIND_PITCH));
}

cudaError_t CUDARTAPI
cudaFree(void *devPtr)
{
	return sim_result(sim_device_free(devPtr));
}

cudaError_t CUDARTAPI
cudaMallocHost(void **ptr, size_t size)
{
	return sim_result(sim_host_alloc(ptr, size, cudaHostAllocDefault));
}

cudaError_t CUDARTAPI
cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	return sim_result(sim_host_alloc(pHost, size, flags));
}

cudaError_t CUDARTAPI
cudaFreeHost(void *ptr)
{
	return sim_result(sim_host_free(ptr));
}

cudaError_t CUDARTAPI
cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return sim_result(sim_malloc_async(devPtr, size, hStream));
}

cudaError_t CUDARTAPI
cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	return sim_result(sim_malloc_async(devPtr, size, hStream));
}

cudaError_t CUDARTAPI
cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	return sim_result(sim_free_async(devPtr, hStream));
}

cudaError_t CUDARTAPI
cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	return sim_result(sim_free_async(devPtr, hStream));
}

cudaError_t CUDARTAPI
cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	return sim_result(sim_malloc_from_pool_async(ptr, size, memPool, stream));
}

cudaError_t CUDARTAPI
cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	return sim_result(sim_malloc_from_pool_async(ptr, size, memPool, stream));
}

cudaError_t CUDARTAPI
cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
	struct sim_device *dev;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!free_bytes || !total_bytes)
		return sim_result(cudaErrorInvalidValue);
	dev = sim_current();
	pthread_mutex_lock(&dev->lock);
	*free_bytes = dev->heap.capacity - dev->heap.used;
	*total_bytes = dev->heap.capacity;
	pthread_mutex_unlock(&dev->lock);
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaMemset(void *devPtr, int value, size_t count)
{
	return sim_result(sim_memset(devPtr, value, count, NULL));
}

cudaError_t CUDARTAPI
cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return sim_result(sim_memset(devPtr, value, count, NULL));
}

cudaError_t CUDARTAPI
cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return sim_result(sim_memset(devPtr, value, count, stream));
}

cudaError_t CUDARTAPI
cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return sim_result(sim_memset(devPtr, value, count, stream));
}

cudaError_t CUDARTAPI
cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return sim_result(sim_memcpy(dst, src, count, kind, NULL));
}

cudaError_t CUDARTAPI
cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return sim_result(sim_memcpy(dst, src, count, kind, NULL));
}

cudaError_t CUDARTAPI
cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
		cudaStream_t stream)
{
	return sim_result(sim_memcpy(dst, src, count, kind, stream));
}

cudaError_t CUDARTAPI
cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
		     cudaStream_t stream)
{
	return sim_result(sim_memcpy(dst, src, count, kind, stream));
}

// --- the runtime API: memory pools --------------------------------------------------------

cudaError_t CUDARTAPI
cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!memPool)
		return sim_result(cudaErrorInvalidValue);
	if (device < 0 || device >= sim.n_devices)
		return sim_result(cudaErrorInvalidDevice);
	/* Fixed at init and never freed, so no lock is needed to read it. */
	*memPool = (cudaMemPool_t)sim.devices[device].default_pool;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!memPool || !poolProps || poolProps->allocType != cudaMemAllocationTypePinned ||
	    poolProps->location.type != cudaMemLocationTypeDevice)
		return sim_result(cudaErrorInvalidValue);
	if (poolProps->location.id < 0 || poolProps->location.id >= sim.n_devices)
		return sim_result(cudaErrorInvalidDevice);
	pool = sim_pool_new(poolProps->location.id, 0);
	if (!pool)
		return sim_result(cudaErrorMemoryAllocation);
	dev = &sim.devices[pool->device];
	pthread_mutex_lock(&dev->lock);
	pool->next = dev->pools;
	dev->pools = pool;
	pthread_mutex_unlock(&dev->lock);
	*memPool = (cudaMemPool_t)pool;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	dev = sim_pool_lock(memPool, &pool);
	if (!dev)
		return sim_result(cudaErrorInvalidValue);
	if (pool->is_default) {
		pthread_mutex_unlock(&dev->lock);
		return sim_result(cudaErrorInvalidValue);
	}
	sim_pool_trim(dev, pool, 0);
	if (pool->n_chunks == 0)
		sim_pool_free(dev, pool);
	else
		pool->destroyed = 1; /* freed by sim_device_free when its last block comes back */
	pthread_mutex_unlock(&dev->lock);
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	dev = sim_pool_lock(memPool, &pool);
	if (!dev)
		return sim_result(cudaErrorInvalidValue);
	sim_pool_trim(dev, pool, minBytesToKeep);
	pthread_mutex_unlock(&dev->lock);
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!value)
		return sim_result(cudaErrorInvalidValue);
	dev = sim_pool_lock(memPool, &pool);
	if (!dev)
		return sim_result(cudaErrorInvalidValue);
	switch (attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		*(int *)value = 1;
		break;
	case cudaMemPoolAttrReleaseThreshold:
		*(uint64_t *)value = pool->release_threshold;
		break;
	case cudaMemPoolAttrReservedMemCurrent:
		*(uint64_t *)value = pool->reserved;
		break;
	case cudaMemPoolAttrReservedMemHigh:
		*(uint64_t *)value = pool->reserved_high;
		break;
	case cudaMemPoolAttrUsedMemCurrent:
		*(uint64_t *)value = pool->used;
		break;
	case cudaMemPoolAttrUsedMemHigh:
		*(uint64_t *)value = pool->used_high;
		break;
	default:
		err = cudaErrorInvalidValue;
		break;
	}
	pthread_mutex_unlock(&dev->lock);
	return sim_result(err);
}

cudaError_t CUDARTAPI
cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!value)
		return sim_result(cudaErrorInvalidValue);
	dev = sim_pool_lock(memPool, &pool);
	if (!dev)
		return sim_result(cudaErrorInvalidValue);
	switch (attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		break; /* reuse policy has no meaning without a queue */
	case cudaMemPoolAttrReleaseThreshold:
		/* Stored and reported, but the simulation only trims on cudaMemPoolTrimTo. */
		pool->release_threshold = *(uint64_t *)value;
		break;
	case cudaMemPoolAttrReservedMemHigh:
	case cudaMemPoolAttrUsedMemHigh:
		/* As in CUDA, the only value a high-water mark accepts is 0: reset to current. */
		if (*(uint64_t *)value != 0) {
			err = cudaErrorInvalidValue;
		} else if (attr == cudaMemPoolAttrReservedMemHigh) {
			pool->reserved_high = pool->reserved;
		} else {
			pool->used_high = pool->used;
		}
		break;
	default:
		err = cudaErrorInvalidValue;
		break;
	}
	pthread_mutex_unlock(&dev->lock);
	return sim_result(err);
}

// --- the runtime API: devices -------------------------------------------------------------

cudaError_t CUDARTAPI
cudaGetDeviceCount(int *count)
{
	cudaError_t err;

	if (!count)
		return sim_result(cudaErrorInvalidValue);
	*count = 0;
	err = sim_ready();
	if (err != cudaSuccess)
		return sim_result(err);
	*count = sim.n_devices;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaGetDevice(int *device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (!device)
		return sim_result(cudaErrorInvalidValue);
	*device = sim_current_device;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaSetDevice(int device)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (device < 0 || device >= sim.n_devices)
		return sim_result(cudaErrorInvalidDevice);
	sim_current_device = device;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaDeviceSynchronize(void)
{
	return sim_result(sim_ready());
}

/*
 * Free, on the current device, everything cudaMalloc, cudaMallocPitch and cudaMallocManaged
 * placed there and every pinned host block allocated while it was current, and destroy its
 * streams. Pools and their blocks survive: CUDA documents that cudaDeviceReset does not
 * destroy cudaMallocAsync / cudaMallocFromPoolAsync memory.
 */
cudaError_t CUDARTAPI
cudaDeviceReset(void)
{
	struct sim_device *dev;
	size_t i;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	dev = sim_current();

	pthread_mutex_lock(&dev->lock);
	/* Backwards, so that removing block i leaves the indices still to visit in place. */
	for (i = dev->heap.n_blocks; i-- > 0;) {
		struct sim_block blk = dev->heap.blocks[i];

		if (blk.kind == SIM_KIND_POOL_CHUNK)
			continue;
		sim_heap_free(&dev->heap, blk.addr, NULL);
		sim_discard(dev, blk.addr, blk.size);
	}
	pthread_mutex_unlock(&dev->lock);

	pthread_mutex_lock(&sim.host_lock);
	for (i = sim.n_host; i-- > 0;)
		if (sim.host[i].device == dev->ordinal)
			sim_host_remove(i);
	pthread_mutex_unlock(&sim.host_lock);

	sim_stream_remove(NULL, dev->ordinal);
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return sim_result(cudaErrorInvalidValue);
	*driverVersion = SIM_VERSION;
	return cudaSuccess;
}

cudaError_t CUDARTAPI
cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return sim_result(cudaErrorInvalidValue);
	*runtimeVersion = SIM_VERSION;
	return cudaSuccess;
}

// --- the runtime API: streams -------------------------------------------------------------

cudaError_t CUDARTAPI
cudaStreamCreate(cudaStream_t *pStream)
{
	return sim_result(sim_stream_create(pStream, cudaStreamDefault));
}

cudaError_t CUDARTAPI
cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return sim_result(sim_stream_create(pStream, flags));
}

cudaError_t CUDARTAPI
cudaStreamDestroy(cudaStream_t stream)
{
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return sim_result(err);
	if (sim_stream_remove(stream, -1) == 0)
		return sim_result(cudaErrorInvalidResourceHandle);
	return cudaSuccess;
}

static cudaError_t
sim_stream_sync(cudaStream_t stream)
{
	int device;
	cudaError_t err = sim_ready();

	if (err != cudaSuccess)
		return err;
	/* Nothing is ever queued, so a valid stream is always idle. */
	return sim_stream_device(stream, &device);
}

cudaError_t CUDARTAPI
cudaStreamSynchronize(cudaStream_t stream)
{
	return sim_result(sim_stream_sync(stream));
}

cudaError_t CUDARTAPI
cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return sim_result(sim_stream_sync(stream));
}

// --- the runtime API: errors --------------------------------------------------------------

cudaError_t CUDARTAPI
cudaGetLastError(void)
{
	cudaError_t err = sim_last_error;

	sim_last_error = cudaSuccess;
	return err;
}

cudaError_t CUDARTAPI
cudaPeekAtLastError(void)
{
	return sim_last_error;
}

const char *CUDARTAPI
cudaGetErrorName(cudaError_t error)
{
	return sim_error_name(error);
}

const char *CUDARTAPI
cudaGetErrorString(cudaError_t error)
{
	return sim_error_string(error);
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
	if (sim_ready() != cudaSuccess || device < 0 || device >= sim.n_devices)
		return -1;
	*base = sim.devices[device].heap.base;
	*capacity = sim.devices[device].heap.capacity;
	return 0;
}

int
simcuda_check(int device)
{
	struct sim_device *dev;
	struct sim_pool *pool;
	size_t reserved_total = 0;
	int rc;

	if (sim_ready() != cudaSuccess || device < 0 || device >= sim.n_devices)
		return -1;
	dev = &sim.devices[device];
	pthread_mutex_lock(&dev->lock);
	rc = sim_heap_check(&dev->heap);
	for (pool = dev->pools; pool && rc == 0; pool = pool->next) {
		size_t i, reserved = 0, used = 0;

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
		reserved_total += reserved;
	}
	if (rc == 0) {
		size_t i, chunk_bytes = 0;

		for (i = 0; i < dev->heap.n_blocks; i++)
			if (dev->heap.blocks[i].kind == SIM_KIND_POOL_CHUNK)
				chunk_bytes += dev->heap.blocks[i].size;
		if (chunk_bytes != reserved_total)
			rc = 12; /* a chunk that no pool owns */
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}
