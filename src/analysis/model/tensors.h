/*
 * @brief The tensor level: PyTorch's caching allocator replayed from a trace's block lines
 * (blocks.h), and what the report says of it: the peak of tensor memory per device with the live
 * blocks grouped by call site, beside the cache's free memory and the memory that is not
 * PyTorch's; blocks live at exit (still referenced) vs memory merely cached; sites whose live
 * block bytes rise across markers (inside a cache that absorbs the growth); each OOM in PyTorch's
 * terms (what was allocated, reserved but unallocated, in how many pieces, the largest free block
 * of the request's stream and pool); a fragmentation figure over time.
 *
 * The CUDA-level replay (model.c) still owns the segments as allocations (a block line's segment
 * events are the same memory as the cudaMalloc it records: they are not counted twice); this
 * layer only reads the device's held bytes from it, to put the three figures side by side.
 */
#ifndef GMT_MODEL_TENSORS_H
#define GMT_MODEL_TENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/blocks.h"
#include "analysis/reader/trace.h"

/** One call site (stack) of tensor allocations on one device. */
struct gmt_tsite {
	uint32_t stack; /**< 0: no stack */
	int32_t device;
	uint64_t live, live_blocks; /**< now (at the end once finished): the blocks' real sizes */
	uint64_t live_requested;
	uint64_t allocations, allocated_bytes;
	uint64_t at_peak, at_peak_blocks; /**< at its device's tensor peak */
	uint64_t max_live;
	uint64_t mark_live, mark_requested; /**< at the last mark (gmt_mark) */
	/** blocks freed by Python's cyclic collector (block lines "gc"): kept alive by cycles */
	uint64_t gc_freed, gc_freed_blocks;
	/** the Python object that keeps most of its blocks live at the end (trace holders + 1; 0:
	 * none known), and how much of it (gmt_tensors_holders()) */
	uint32_t held_by;
	uint64_t held_bytes, held_blocks;
	/* live bytes at the growth samples: at the user's marks, at automatic steps, at ends of
	 * outermost ranges and at snapshots; gmt_tensors_finish() leaves the chosen
	 * (gmt_growth_basis's order) in `growth` */
	struct gmt_tgrowth {
		uint64_t first, last;
		uint32_t rises, falls;
		/** 1 + the first sample at which it held bytes (0: none); of the rises, those
		 * from a sample at which it held bytes */
		uint32_t born, rises_live;
		bool sampled; /**< first is set */
	} growth, at_range_ends, at_steps, at_snapshots;
};

/**
 * Where growth samples came from (the CUDA level's `at_markers`, `marker_samples`; the tensor
 * level's `growth`, `samples`), in order of
 * precedence: the user's marks, the tracer's automatic step marks (PyTorch's optimizer steps),
 * the ends of the user's outermost ranges; with fewer than two of each, the periodic snapshots.
 */
enum gmt_growth_basis {
	GMT_BASIS_MARKS = 0,
	GMT_BASIS_AUTO_STEPS,
	GMT_BASIS_RANGE_ENDS,
	GMT_BASIS_SNAPSHOTS,
};

/** "markers", "auto_steps", "range_ends", "snapshots" (the JSON's growth `basis`). */
const char *gmt_growth_basis_name(enum gmt_growth_basis b);

/** Figures of the cache at one moment (torch's memory_stats names). */
struct gmt_tcache {
	uint64_t allocated, requested, reserved, segments;
	uint64_t blocks; /**< live blocks (allocation.all.current) */
	uint64_t free_pieces, largest_free, inactive_split;
};

/** The allocator was about to raise OutOfMemoryError (a block line "oom"). */
struct gmt_toom {
	uint64_t seq, ts;
	int32_t device;
	uint32_t stack;
	uint64_t requested, rounded; /**< the request, and what the allocator needed for it */
	uint64_t device_free;	     /**< what CUDA said was free on the device */
	uint64_t stream, pool[2];
	struct gmt_tcache cache;	 /**< the device's cache then */
	uint64_t pool_largest_free;	 /**< of the request's stream and pool */
	uint64_t pool_free, pool_pieces; /**< free bytes and pieces in that stream and pool */
	uint64_t held;			 /**< CUDA-level device memory the process held then */
	uint64_t prev_seq;		 /**< the device's block line before it (0: none) */
	bool cuda_failure; /**< a counted CUDA-level failed allocation of its device came between
				prev_seq and it (the cudaMalloc the allocator tried): the same error
			    */
	/* the device's segments then, for the report's allocator-state view: at most
	 * GMT_TOOM_SEGMENTS (the largest, in address order), each with at most
	 * GMT_TOOM_SEG_BLOCKS of its blocks (in address order); nsegments_all: how many it had */
	struct gmt_toom_seg *segs;
	struct gmt_toom_block *seg_blocks;
	size_t nsegs, nsegments_all;
};

/** A segment of the device at an OOM (gmt_toom.segs). */
struct gmt_toom_seg {
	uint64_t start, size, stream;
	uint64_t allocated, pending, free; /**< bytes of its blocks in each state */
	uint64_t nblocks;		   /**< its blocks (those listed: the first ones) */
	size_t first, nlisted;		   /**< its listed blocks in gmt_toom.seg_blocks */
	bool large, expandable;
};

/** A block of such a segment. */
struct gmt_toom_block {
	uint64_t offset, size; /**< from the segment's start */
	uint32_t stack;
	uint8_t state; /**< GMT_BLK_FREE, _ALLOCATED, _PENDING */
};

#define GMT_TOOM_SEGMENTS 128
#define GMT_TOOM_SNAPSHOTS 16 /* OOMs with their segments (the first ones) */
#define GMT_TOOM_SEG_BLOCKS 64

/** One moment of the fragmentation series (gmt_tdevice.frag). */
struct gmt_tfrag {
	uint64_t ts, seq;
	uint64_t reserved, free, largest_free;
	uint32_t
	    permille; /**< 1000 x (1 - largest free block / free bytes of the cache), 0 none free */
};

#define GMT_TFRAG_MAX 4096

/*
 * Block lifetimes for the report's timeline (a stacked chart of live tensors, as PyTorch's
 * memory_viz draws it), bounded however long the trace: the GMT_TLIFE_MAX largest blocks (ties:
 * the earlier), and per time bucket the moment memory_allocated() was highest in it, with the
 * cache's and the device's figures then. The rest of the blocks are what that moment's figure
 * holds beyond the listed ones (the report's "other" band).
 */
struct gmt_tlife {
	uint64_t alloc_ts, alloc_seq;
	uint64_t free_ts, free_seq; /**< free_seq 0: live at the end */
	uint64_t bytes;		    /**< the block's real (rounded) size */
	uint32_t stack;
	int32_t device;
};

#define GMT_TLIFE_MAX 512

/** The moment memory_allocated() was highest in a time bucket (set: the bucket saw a line). */
struct gmt_tbucket {
	uint64_t ts, seq, allocated, reserved, held;
	bool set;
};

#define GMT_TBUCKETS 256

/** The cache of one device at a mark (gmt_mark), as torch's memory_stats() would say then. */
struct gmt_tmark {
	uint64_t seq, ts;
	int32_t device;
	char label[64];
	struct gmt_tcache cache;
};

/** Marks kept (the first ones; a trace with more says so: nmarks_seen). */
#define GMT_TMARKS_MAX 65536

struct gmt_tdevice {
	int32_t device;
	uint64_t peak, peak_ts, peak_seq; /**< of memory_allocated(), first reached */
	struct gmt_tcache at_peak;	  /**< the cache at the peak */
	uint64_t held_at_peak;		  /**< CUDA-level held bytes at that moment */
	char peak_phase[64]; /**< the innermost range open then (gmt_range_push), "" none */
	uint64_t max_reserved;
	struct gmt_tcache end;	/**< at the end of the trace */
	uint64_t allocations;	/**< block allocations */
	struct gmt_tfrag *frag; /**< sampled at markers, OOMs and the end; bounded */
	size_t nfrag, frag_cap;
	uint32_t max_frag_permille;
	struct gmt_tbucket *buckets; /**< GMT_TBUCKETS, from gmt_tensors.bucket_origin */
	bool pending;		     /**< replay only: the peak rose, its sites are not taken yet */
	uint64_t last_seq;	     /**< replay only: its last block line */
};

struct gmt_tensors {
	struct gmt_blk_model *blk;
	struct gmt_tdevice *devices; /**< sorted by device */
	size_t ndevices;
	struct gmt_tsite *sites; /**< in order of first use */
	size_t nsites, sites_cap;
	struct gmt_toom *ooms;
	size_t nooms;
	struct gmt_tmark *marks; /**< per mark and device, in order */
	size_t nmarks;
	struct gmt_tlife
	    *lives; /**< a min-heap (smallest first) until finished, then largest first */
	size_t nlives;
	uint64_t lives_seen;		   /**< block lifetimes in all */
	uint64_t bucket_origin, bucket_ns; /**< bucket k: from origin + k * bucket_ns */
	uint64_t end_ts;		   /**< the end of the trace (gmt_tensors_finish()) */
	uint64_t lines;			   /**< block lines applied */
	uint64_t inconsistent; /**< of them, lines that did not fit the replayed state (bad_device
				  included) */
	uint64_t bad_device;   /**< of them, lines whose device is no CUDA ordinal (0..63) */
	uint64_t ooms_alone;   /**< OOMs with no CUDA-level failure behind them (the allocator's own
				  limit: set_per_process_memory_fraction, a snapshot): failures too */
	uint32_t samples;      /**< growth samples taken (of the chosen kind) */
	uint32_t range_samples;	   /**< replay only: ends of outermost ranges seen */
	uint32_t steps_seen;	   /**< automatic step marks seen */
	uint32_t snapshot_samples; /**< replay only: snapshots seen */
	bool sample_marks; /**< samples are the user's marks or the automatic steps (`basis`) */
	enum gmt_growth_basis basis; /**< what the samples are */
	struct gmt_theld *held;	     /**< per holder that kept anything live, most bytes first */
	size_t nheld;
	const struct gmt_trace *trace;
	bool holders_done;
	/* replay only */
	uint32_t *site_index; /**< open addressing: (stack, device) -> site + 1 */
	size_t site_index_cap;
	uint32_t marks_seen;
	char phase[8][64]; /**< open ranges by depth (of any thread: a phase is the program's) */
	uint32_t nphase;
	struct gmt_tlive *live; /**< open addressing: the live blocks' starts */
	size_t nlive, live_cap;
	int error; /**< -ENOMEM: stopped */
};

/**
 * Which Python object (the trace's "holders" line) keeps each site's blocks live, as the replay
 * stands at the holders line (the end of the run, before the interpreter's teardown freed
 * them): each site gets the holder that keeps most of its bytes, and each holder its totals
 * (gmt_tensors.held). Done once: the replay calls it when it passes the line, finish otherwise.
 */
void gmt_tensors_holders(struct gmt_tensors *t);

/** What one holder kept live at the holders line. */
struct gmt_theld {
	uint32_t holder;	/**< index in the trace's holders */
	uint64_t bytes, blocks; /**< of its blocks that were live */
	uint32_t stack;		/**< the site that made most of them ... */
	int32_t device;		/**< ... on this device */
};

/** A growth sample at a periodic snapshot (the model's, the last resort without marks). */
void gmt_tensors_snapshot(struct gmt_tensors *t);

/** A tensor layer for @p trace (its torch line says whether segments are expandable). */
struct gmt_tensors *gmt_tensors_new(const struct gmt_trace *trace);
void gmt_tensors_free(struct gmt_tensors *t);

/** Apply a block event (op GMT_OP_BLOCK, or an elided_blocks line: op GMT_OP_ELIDED of kind
 * GMT_TK_NONE); @p held: the device's CUDA-level held bytes now. */
void gmt_tensors_event(struct gmt_tensors *t, const struct gmt_trace_event *ev, uint64_t held);

/** A marker line: growth samples and a fragmentation point. */
void gmt_tensors_marker(struct gmt_tensors *t, const struct gmt_trace_marker *mk);

/** The end of the trace (@p last_ts); 0 or -ENOMEM. */
int gmt_tensors_finish(struct gmt_tensors *t, uint64_t last_ts);

/** Whether a site grew (the CUDA-level rule: ends higher, rose in at least half the intervals,
 * two samples or more). */
bool gmt_tsite_grows(const struct gmt_tensors *t, const struct gmt_tsite *s);

/** The device entry of @p device, NULL when none. */
const struct gmt_tdevice *gmt_tensors_device(const struct gmt_tensors *t, int32_t device);

#endif
