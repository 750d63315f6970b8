/*
 * @brief The interface between the PyTorch bridge (python/gpumemtrace/torch_bridge.cpp, compiled on
 * the user's machine against the torch at hand) and the tracer (src/capture/torch.c): one C struct
 * per allocator event, and the block vocabulary (actions, flags) of the trace's block lines.
 *
 * One definition for every side: the tracer, the writer, the reader and the analyzer include it
 * here, in the format's room; meson installs it beside the bridge's source in the Python package
 * (meson.build), which compiles the bridge with it (python/gpumemtrace/_torch.py finds it there,
 * or here in a source tree). The struct only grows at its end; `size` says how much of it the
 * bridge filled, `abi` is bumped when a field changes meaning.
 */
#ifndef GMT_TORCH_ENTRY_H
#define GMT_TORCH_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define GMT_TORCH_ABI 1

/* TraceEntry::Action of c10's caching allocator, and the bridge's own state records (backfill). */
enum gmt_torch_action {
	GMT_TORCH_ALLOC = 1,	  /* a block handed out; size = the requested (unrounded) bytes */
	GMT_TORCH_FREE_REQUESTED, /* the tensor let go of it; the block may wait for its streams */
	GMT_TORCH_FREE_COMPLETED, /* the block is free in the cache (maybe later, another thread) */
	GMT_TORCH_SEGMENT_ALLOC,  /* the cache took memory from CUDA (cudaMalloc) */
	GMT_TORCH_SEGMENT_FREE,	  /* ... gave it back (cudaFree: empty_cache, an OOM retry) */
	GMT_TORCH_SEGMENT_MAP,	  /* expandable segments: a range mapped (cuMemMap) */
	GMT_TORCH_SEGMENT_UNMAP,  /* ... unmapped */
	GMT_TORCH_SNAPSHOT,	  /* torch.cuda.memory_snapshot() was called; size = active bytes */
	GMT_TORCH_OOM, /* the allocator is about to raise OutOfMemoryError; ptr = free bytes */
	GMT_TORCH_STATE_SEGMENT, /* backfill: a segment that existed when the bridge attached */
	GMT_TORCH_STATE_BLOCK,	 /* backfill: a block of such a segment (flags: GMT_TORCH_F_*) */
	GMT_TORCH_ACTION_COUNT,
};

enum gmt_torch_flag {
	GMT_TORCH_F_ALLOCATED = 1u << 0, /* STATE_BLOCK: handed out (else free in the cache) */
	GMT_TORCH_F_ACTIVE =
	    1u << 1, /* STATE_BLOCK: allocated, or freed and awaiting its streams */
	GMT_TORCH_F_EXPANDABLE = 1u << 2, /* STATE_SEGMENT: an expandable segment */
	GMT_TORCH_F_LARGE = 1u << 3,	  /* STATE_SEGMENT: of the large pool (else small) */
	GMT_TORCH_F_HAS_DEVICE = 1u << 4, /* device is known (every entry of torch >= 2.4) */
	GMT_TORCH_F_HAS_POOL = 1u << 5,	  /* pool_id is known */
};

struct gmt_torch_entry {
	uint32_t size;	 /* sizeof(struct gmt_torch_entry) as the bridge knows it */
	uint32_t abi;	 /* GMT_TORCH_ABI */
	uint32_t action; /* enum gmt_torch_action */
	uint32_t flags;	 /* enum gmt_torch_flag */
	int32_t device;
	uint32_t reserved;
	uint64_t addr;	/* block or segment address; OOM: the device's free bytes */
	uint64_t bytes; /* ALLOC: requested bytes; segments: their size; STATE_BLOCK: block size */
	uint64_t requested; /* STATE_BLOCK: the requested bytes of an allocated block, else 0 */
	uint64_t stream;    /* cudaStream_t */
	uint64_t
	    pool_id[2];	  /* MempoolId_t: {0,0} the default pools; CUDA graphs, MemPool otherwise */
	const char *meta; /* user metadata (torch.cuda.memory._set_memory_metadata), not owned */
	uint32_t meta_len;
};

/* The tracer's entry point, resolved by the bridge from the tracer library. Safe to call from
 * inside the allocator's lock: no allocation, no lock, no GIL. Returns 0 (recorded or ignored). */
typedef int (*gmt_torch_record_fn)(const struct gmt_torch_entry *entry);

/* Exported by libgpumemtrace.so. gmt_torch_record: an allocator event (any thread, inside the
 * allocator's lock). gmt_torch_layer: the layer's status, from Python (a "torch" line: torch's
 * version, allocator backend, PYTORCH_CUDA_ALLOC_CONF, the layer's status, why). */
int gmt_torch_record(const struct gmt_torch_entry *entry);
void gmt_torch_layer(const char *version,
		     const char *backend,
		     const char *alloc_conf,
		     const char *status,
		     const char *detail);

#endif
