/*
 * @brief What the replay's facts mean for a person: which caching allocator made an allocation
 * (told from its symbolized stack) and why an allocation failed, in words (explain.c).
 *
 * What is told from a stack takes the process (session/process.h: the model and its trace's
 * symbolized stacks side by side), not the model: the replay knows nothing of symbols.
 */
#ifndef GMT_REPORT_EXPLAIN_H
#define GMT_REPORT_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/model/model.h"
#include "analysis/session/process.h"
#include "analysis/symbols/callstack.h"

/**
 * Which known caching allocator made an allocation (docs/report-json.md, "cache"), told from the
 * native frames of its stack (explain.c lists the patterns).
 */
enum gmt_cache {
	GMT_CACHE_NONE = 0,
	GMT_CACHE_PYTORCH,   /**< PyTorch's CUDA caching allocator (libc10_cuda), its host cache */
	GMT_CACHE_CUDA_POOL, /**< a stream-ordered allocation (kind pool) of no known framework */
	GMT_CACHE_CUPY,	     /**< CuPy's memory pools (cupy/cuda/memory, pinned_memory) */
	GMT_CACHE_XLA,	     /**< XLA's BFC allocator (JAX; TensorFlow shares it) */
	GMT_CACHE_COUNT,
};

/** "pytorch", "cuda_pool", "cupy", "xla", or NULL. */
const char *gmt_cache_name(enum gmt_cache c);

/** For people: "PyTorch", "a CUDA memory pool", "CuPy", "JAX/XLA", or "". */
const char *gmt_cache_label(enum gmt_cache c);

/**
 * Whether @p c keeps the memory it got from CUDA for the life of the process, so that what it
 * holds at exit is its cache, not the program's leak: PyTorch, CuPy and XLA. A live allocation
 * of a CUDA pool is not: the program never freed it (the pool's own keep is pool_reserve).
 */
bool gmt_cache_holds(enum gmt_cache c);

/** The caching allocator behind allocations of @p kind at stack @p stack of @p p. */
enum gmt_cache gmt_process_cache(const struct gmt_process *p, uint32_t stack, uint8_t kind);

/** Whether allocations of @p kind at @p stack are a holding cache's (gmt_cache_holds()). */
bool gmt_process_cached(const struct gmt_process *p, uint32_t stack, uint8_t kind);

/** Memory a caching allocator held at the end of a trace. */
struct gmt_cached {
	uint64_t bytes, allocations;
	size_t entries; /**< `leaks` rows (stack, call, kind) */
};

/**
 * What the holding caches had live at the end of @p p, counted kinds only, per allocator
 * (out[GMT_CACHE_NONE] is the sum over all of them). Without symbolized stacks: nothing.
 */
void gmt_process_cached_at_end(const struct gmt_process *p, struct gmt_cached out[GMT_CACHE_COUNT]);

/**
 * A CUDA library that allocates for its handles (workspaces, plans, communicators) and keeps it
 * for the handle's life, usually the process's: live at exit, but not the program's leak, nor
 * anything it can free short of destroying a handle it may never see (PyTorch keeps its cuBLAS
 * and cuDNN handles). Told from the native frames of the allocation's stack: the innermost frame
 * in one of these libraries' modules (explain.c holds the table: the one place of the rule, read
 * by the text and JSON reports, `run`'s summary, html through the JSON, `check`, the pytest plugin
 * through the JSON).
 */
enum gmt_library {
	GMT_LIB_NONE = 0,
	GMT_LIB_CUBLAS,	  /**< libcublas, libcublasLt */
	GMT_LIB_CUDNN,	  /**< libcudnn and its sub-libraries (libcudnn_engines_*, ...) */
	GMT_LIB_NCCL,	  /**< libnccl */
	GMT_LIB_CUFFT,	  /**< libcufft */
	GMT_LIB_CUSPARSE, /**< libcusparse, libcusparseLt */
	GMT_LIB_CUSOLVER, /**< libcusolver */
	GMT_LIB_CURAND,	  /**< libcurand */
	GMT_LIB_COUNT,
};

/** "cublas", "cudnn", ... (JSON), or NULL for GMT_LIB_NONE. */
const char *gmt_library_name(enum gmt_library l);

/** For people: "cuBLAS", "cuDNN", "NCCL", ..., or "". */
const char *gmt_library_label(enum gmt_library l);

/** The library whose module @p path is (a file name starting libcublas, ...), or GMT_LIB_NONE. */
enum gmt_library gmt_library_of_module(const char *path);

/** The library whose handles hold allocations made at @p stack of @p p (not a cache's). */
enum gmt_library gmt_process_library(const struct gmt_process *p, uint32_t stack, uint8_t kind);

/** Who keeps an allocation that is live at exit: the one verdict on "leaked". */
enum gmt_holder {
	GMT_HOLDER_PROGRAM = 0, /**< the program's own: a leak */
	GMT_HOLDER_CACHE,   /**< a caching allocator that keeps its memory (gmt_cache_holds()) */
	GMT_HOLDER_LIBRARY, /**< a CUDA library's handles (gmt_process_library()) */
};

/** The holder of allocations of @p kind at @p stack of @p p; a cache before a library. */
enum gmt_holder gmt_process_holder(const struct gmt_process *p, uint32_t stack, uint8_t kind);

/**
 * What the CUDA libraries' handles had live at the end of @p p, counted kinds only, per library
 * (out[GMT_LIB_NONE] is the sum). Without symbolized stacks: nothing.
 */
void gmt_process_library_at_end(const struct gmt_process *p, struct gmt_cached out[GMT_LIB_COUNT]);

/** Why an allocation failed (docs/report-json.md, "oom[]"). */
enum gmt_oom_cause {
	GMT_OOM_UNKNOWN = 0,
	GMT_OOM_LARGER_THAN_DEVICE,
	GMT_OOM_HELD_BY_CACHE,
	GMT_OOM_HELD_BY_PROCESS,
	GMT_OOM_HELD_OUTSIDE,
	GMT_OOM_FRAGMENTED,
	GMT_OOM_NOT_OUT_OF_MEMORY,
	GMT_OOM_PROBE, /**< a capability probe (GMT_FAIL_PROBE), not a lack of memory */
};

const char *gmt_oom_cause_name(enum gmt_oom_cause c);

/** Bytes of @p o's held memory in allocations made by a known caching allocator. */
uint64_t gmt_oom_cache_bytes(const struct gmt_process *p, const struct gmt_oom *o);

/**
 * The cause of failure @p o and, into @p buf, a plain-language explanation (answer first, sizes
 * and the top site named, what the CUDA-level view cannot see).
 */
enum gmt_oom_cause
gmt_oom_explain(const struct gmt_process *p, const struct gmt_oom *o, char *buf, size_t size);

#endif
