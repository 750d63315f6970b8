/*
 * @brief The in-memory event: what the capture side records and the writer serializes.
 *
 * One `struct gmt_event` is one fact about the application's memory (an allocation, a free, a
 * failed allocation, a device reset, a marker). It is filled on the application's thread inside its
 * CUDA call, copied by value into the ring, and turned into one JSON line by the writer
 * (format/format.c). Fixed size, no pointers to memory the application owns, so it can be copied
 * without synchronisation with anything else. docs/trace-format.md documents the JSON form.
 */
#ifndef GMT_FORMAT_EVENT_H
#define GMT_FORMAT_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Trace format major version (header "version"). Bump when a key is removed or changes meaning. */
#define GMT_FORMAT_VERSION 1

enum gmt_op {
	GMT_OP_NONE = 0, /* 0 stays unassigned: a zeroed slot is never a valid event */
	GMT_OP_ALLOC,
	GMT_OP_FREE,
	GMT_OP_RESET,
	GMT_OP_MARKER,
	GMT_OP_RETAIN,	/* a VMM handle gained a reference: no new memory */
	GMT_OP_USAGE,	/* a reading of a reservation counter (pool_reserve, graph_reserve) */
	GMT_OP_BLOCK,	/* a caching allocator's own event (PyTorch bridge): torch_action says which
			 */
	GMT_OP_LAYER,	/* the PyTorch layer's status (a "torch" line); layer points to its text */
	GMT_OP_ELIDED,	/* the reader's only: an "elided" line of a bounded trace (format/elided.h)
			 */
	GMT_OP_HOLDERS, /* what keeps the live tensors (a "holders" line); layer->holders its JSON
			 */
	GMT_OP_COUNT,
};

enum gmt_kind {
	GMT_KIND_NONE = 0,
#define GMT_KIND(id, name, rank) GMT_KIND_##id,
#include "format/kinds.def"
#undef GMT_KIND
	GMT_KIND_COUNT,
};

enum gmt_api {
	GMT_API_NONE = 0,
#define GMT_API(id, name, op, kind) GMT_API_##id,
#include "format/apis.def"
#undef GMT_API
	GMT_API_COUNT,
};

/**
 * Flags of an event: what it says beyond its op. The writer sets the first four on the events it
 * records; the reader sets HAS_MEMINFO, HAS_RANGE and HAS_REQUESTED on the events it reads, from
 * the keys their lines have.
 */
enum gmt_event_flag {
	GMT_EV_PTSZ = 1u << 0, /**< called through the per-thread-default-stream (_ptsz) entry */
	GMT_EV_HAS_MEMINFO = 1u << 1, /**< free_bytes/total_bytes are valid (failed allocations) */
	GMT_EV_HAS_FLAGS = 1u << 2,   /**< cuda_flags is an argument of the call */
	GMT_EV_HAS_POOL = 1u << 3,    /**< pool is known (from-pool allocations, usage readings) */
	GMT_EV_HAS_RANGE =
	    1u << 4, /**< a free names the size of its range (cuMemUnmap, cuMemAddressFree) */
	GMT_EV_HAS_REQUESTED = 1u << 5, /**< `requested` is valid (pitched allocations) */
	/** a marker the tracer put itself at a step boundary (gmt_step_mark(): PyTorch's
	 * optimizer step), not the user's: "auto":"step" in the trace */
	GMT_EV_AUTO_STEP = 1u << 6,
	/** a block freed while Python's cyclic garbage collector ran on the freeing thread
	 * (gmt_torch_gc(), from gc.callbacks): its tensor was kept alive by a reference cycle;
	 * "gc":true on the block line */
	GMT_EV_IN_GC = 1u << 7,
	/** inside the ring only (gmt_ring_push_core()): the slot holds the event's core, its
	 * bytes before `label`; the consumer zeroes the rest and clears this flag on its copy */
	GMT_EV_CORE_ONLY = 1u << 31,
};

#define GMT_LABEL_MAX 64 /* marker label, NUL included */

/** What a marker is (docs/trace-format.md, "marker"): a point, or one end of a range. */
enum gmt_range {
	GMT_RANGE_NONE = 0, /**< gmt_mark(): a point, no "range" key */
	GMT_RANGE_PUSH,	    /**< gmt_range_push(): a range opens */
	GMT_RANGE_POP,	    /**< gmt_range_pop(): the innermost open range of its thread closes */
};

struct gmt_event {
	uint64_t seq;	    /**< global order; see docs/trace-format.md for when it is taken */
	uint64_t ts_ns;	    /**< CLOCK_MONOTONIC; in the ring, util/clock.h's raw unit */
	uint64_t ptr;	    /**< allocation address, or the pointer freed */
	uint64_t size;	    /**< granted (or requested, when result != 0) bytes */
	uint64_t requested; /**< cudaMallocPitch: width * height, else 0 */
	uint64_t stream;    /**< stream argument, 0 when none */
	uint64_t pool;	    /**< cudaMallocFromPoolAsync pool handle */
	uint64_t free_bytes;
	uint64_t total_bytes;
	uint64_t handle;  /**< VMM handle (cuMemMap), external memory object; 0 when none */
	uint64_t offset;  /**< cuMemMap: offset into the handle */
	uint64_t context; /**< CUPTI contextUid, 0 when unknown (interposition) */
	uint32_t stack;	  /**< interned call stack (capture/stacks.h), 0 = none */
	int32_t tid;
	int32_t device; /**< current device, -1 unknown */
	int32_t result; /**< cudaError_t returned to the application */
	uint32_t cuda_flags;
	uint16_t api; /**< enum gmt_api: what the application called */
	uint16_t
	    driver;	/**< enum gmt_api: the driver call underneath a runtime call, 0 when none */
	uint8_t op;	/**< enum gmt_op */
	uint8_t kind;	/**< enum gmt_kind */
	uint32_t flags; /**< enum gmt_event_flag */
	char label[GMT_LABEL_MAX]; /**< markers only */
	uint32_t range_depth; /**< markers of ranges: nesting level of the range (1 = outermost) */
	uint8_t range;	      /**< markers only: enum gmt_range */
	/* GMT_OP_BLOCK (a "block" line): torch_action is enum gmt_torch_action (torch_entry.h), ptr
	 * the block or segment, size its bytes, requested a state block's requested bytes, stream,
	 * pool and pool2 torch's MempoolId_t, free_bytes the device's free bytes (OOM), cuda_flags
	 * the entry's enum gmt_torch_flag, label the user metadata. GMT_OP_LAYER: layer. */
	uint8_t torch_action;
	uint64_t pool2;
	const struct gmt_torch_layer *layer; /**< owned by the event until the writer wrote it */
};

_Static_assert(sizeof(struct gmt_event) % 8 == 0, "gmt_event_clear() writes whole words");

/*
 * An event's core: its bytes before `label`, all that an allocation, a free or a reset of the
 * CUDA level sets (the rest is for markers, block lines and the layer). Those events are cleared
 * (gmt_event_clear_core()) and copied into the ring (gmt_ring_push_core()) as their core alone:
 * 128 bytes instead of the whole event, two or three cache lines of a ring slot instead of four
 * (docs/performance.md, "Issue 30: the device, the ring's copy").
 */
#define GMT_EVENT_CORE_BYTES offsetof(struct gmt_event, label)
_Static_assert(GMT_EVENT_CORE_BYTES % 16 == 0, "gmt_event_clear_core() writes 16-byte blocks");

/** Zero @p ev's core (GMT_EVENT_CORE_BYTES), padding included; the rest is left as it is. */
static inline void
gmt_event_clear_core(struct gmt_event *ev)
{
	typedef uint64_t gmt_zero16 __attribute__((vector_size(16), aligned(8), may_alias));
	char *p = (char *)ev;

	/* not a loop: GCC keeps it (the empty asm: not a `rep stos`, gmt_event_clear()), eight
	 * stores and their counting, on every event of the CUDA level */
#pragma GCC unroll 8
	for (size_t i = 0; i < GMT_EVENT_CORE_BYTES / 16; i++, p += 16) {
		__asm__("" : "+r"(p));
		*(gmt_zero16 *)(void *)p = (gmt_zero16){0, 0};
	}
}

/**
 * Zero @p ev, padding included, with plain 16-byte stores. GCC expands a `= {0}` or a memset()
 * of this size to `rep stos`, whose start-up (tens of cycles where the CPU has no fast short
 * `rep stos`) was the largest single cost of a block event without stacks (docs/performance.md,
 * "The block-event path in isolation"); a plain loop of stores it turns back into that memset,
 * so the pointer passes through an empty asm at each store.
 */
static inline void
gmt_event_clear(struct gmt_event *ev)
{
	typedef uint64_t gmt_zero16 __attribute__((vector_size(16), aligned(8), may_alias));
	typedef uint64_t gmt_zero8 __attribute__((aligned(8), may_alias));
	char *p = (char *)ev;

	for (size_t i = 0; i < sizeof(*ev) / 16; i++, p += 16) {
		__asm__("" : "+r"(p));
		*(gmt_zero16 *)(void *)p = (gmt_zero16){0, 0};
	}
	if (sizeof(*ev) % 16)
		*(gmt_zero8 *)(void *)p = 0;
}

/** The PyTorch layer's status, handed from Python (gmt_torch_layer) to the writer's "torch" line.
 */
struct gmt_torch_layer {
	char *version, *backend, *alloc_conf, *status, *detail;
	/** GMT_OP_HOLDERS: a JSON array (gmt_torch_holders(), from the layer's own Python) */
	char *holders;
};

const char *gmt_api_name(enum gmt_api api);

/* Each API's op and kind (apis.def), for the inline lookups below: the capture side asks them
 * several times per event, inside the application's call. */
struct gmt_api_facts {
	uint8_t op;   /* enum gmt_op */
	uint8_t kind; /* enum gmt_kind */
};
extern const struct gmt_api_facts gmt_api_facts[GMT_API_COUNT];

static inline enum gmt_op
gmt_api_op(enum gmt_api api)
{
	return (unsigned)api < GMT_API_COUNT ? (enum gmt_op)gmt_api_facts[api].op : GMT_OP_NONE;
}

static inline enum gmt_kind
gmt_api_kind(enum gmt_api api)
{
	return (unsigned)api < GMT_API_COUNT ? (enum gmt_kind)gmt_api_facts[api].kind
					     : GMT_KIND_NONE;
}
const char *gmt_kind_name(enum gmt_kind kind);
const char *gmt_op_name(enum gmt_op op);
/** The op named @p name, GMT_OP_NONE when there is none. */
enum gmt_op gmt_op_from_name(const char *name);
/** Free a layer status and its strings (the writer, once its "torch" line is written). */
void gmt_torch_layer_free(const struct gmt_torch_layer *layer);
/** A block line's "action" for enum gmt_torch_action, and back (0: not an action). */
const char *gmt_torch_action_name(unsigned action);
unsigned gmt_torch_action_from_name(const char *name);

#endif
