/*
 * @brief The trace reader: one trace file (docs/trace-format.md, version 1) in compact memory.
 *
 * The reader is the analyzer's side of the format contract. It reads a JSON Lines file line by
 * line, validates each line against the keys its type requires, and keeps what the analysis needs
 * in plain structs (no jansson objects survive a line). Bad lines are reported as
 * `FILE:LINE: what is wrong` and skipped; everything else is used, because a trace of a crashed
 * job is exactly the one a user most needs to read.
 *
 * Nothing here draws conclusions (pairing, peaks, leaks): that is model.c.
 */
#ifndef GMT_READER_TRACE_H
#define GMT_READER_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/event.h" /* the format's version, ops, flags, ranges */
#include "format/kinds.h" /* kinds by rank, read by name */
#include "format/stack.h" /* pystate */
#include "util/input.h"

struct gmt_trace_block;

/** CUDA results the analysis tells apart: the same codes in the runtime and the driver API. */
#define GMT_CUDA_OUT_OF_MEMORY 2   /**< cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY */
#define GMT_CUDA_NOT_PERMITTED 800 /**< cudaErrorNotPermitted, CUDA_ERROR_NOT_PERMITTED */
#define GMT_CUDA_NOT_SUPPORTED 801 /**< cudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED */

/** An event's `driver` when the line had none (never a valid string index). */
#define GMT_TRACE_NO_STRING UINT16_MAX

/**
 * One `event` line in 96 bytes: a trace of ten million events fits in about a gigabyte.
 * `api` and `driver` index the trace's interned names (gmt_trace_string()), so an API name this
 * reader does not know (a newer tracer) is still reported by name.
 */
struct gmt_trace_event {
	uint64_t seq;
	uint64_t ts; /**< CLOCK_MONOTONIC ns, the file's clock */
	/**
	 * alloc/free: the address, or the handle for handle kinds (vmm_physical, array, an imported
	 * handle); retain: the handle; usage of pool_reserve: the pool; 0 on reset
	 */
	uint64_t ptr;
	uint64_t size;	     /**< alloc: granted, or requested when result != 0; usage: the reading;
				  free: the range (GMT_EV_HAS_RANGE) */
	uint64_t handle;     /**< "handle" key: cuMemMap's handle, an external memory object, a
				  retain's address; 0 absent */
	uint64_t offset;     /**< cuMemMap offset into the handle */
	uint64_t context;    /**< CUPTI contextUid, 0 when absent (interposition) */
	uint64_t free_bytes; /**< failed allocations with GMT_EV_HAS_MEMINFO */
	uint64_t total_bytes;
	uint64_t
	    requested;	 /**< pitched allocations with GMT_EV_HAS_REQUESTED: width x height asked */
	uint32_t stack;	 /**< id of a stack line, 0 = none */
	uint32_t line;	 /**< line number in the file, for messages and a stable sort */
	int32_t device;	 /**< -1 unknown */
	int32_t result;	 /**< cudaError_t / CUresult, 0 = success */
	uint16_t api;	 /**< index into the trace's strings */
	uint16_t driver; /**< the driver call under a runtime call, or GMT_TRACE_NO_STRING */
	uint8_t op;    /**< enum gmt_op: ALLOC, FREE, RESET, RETAIN or USAGE; BLOCK: a block line */
	uint8_t kind;  /**< enum gmt_tkind; NONE on reset, as called on free */
	uint8_t flags; /**< enum gmt_event_flag: HAS_MEMINFO, HAS_RANGE, HAS_REQUESTED, IN_GC */
};

/*
 * A `block` line (the PyTorch layer: an event of torch's caching allocator) is an event of op
 * GMT_OP_BLOCK, in the same seq order as the CUDA-level events: `kind` is its enum
 * gmt_torch_action (torch_entry.h), `ptr` and `size` the line's, `requested` a backfilled
 * block's, `handle` the stream, `offset` and `context` the two halves of the pool id,
 * `free_bytes` an OOM's device_free, `result` the line's flags (enum gmt_torch_flag: allocated,
 * active, expandable, large), `stack` the allocating thread's stack; api and driver are
 * GMT_TRACE_NO_STRING.
 */

/** One entry of an elided line's `sizes` (lifetime false) or `lifetimes` (true). */
struct gmt_trace_elided_bin {
	bool lifetime;
	uint8_t bucket; /**< log2 of the size in bytes, or of the lifetime in ns */
	uint64_t count; /**< allocations, or frees */
	uint64_t bytes; /**< sizes only */
};

/*
 * An `elided` line (a bounded trace: allocations of one call site left out of one bucket, with
 * their frees) is an event of op GMT_OP_ELIDED: `size` the bytes, `offset` the allocations,
 * `free_bytes` and `total_bytes` the temporaries and their bytes, `handle` the first of its
 * `requested` entries in the trace's elided_bins; `kind`, `device`, `api`, `driver` and `stack`
 * the site's; `seq` and `ts` the last free's. An `elided_blocks` line (PyTorch blocks of one site
 * left out of one bucket, each with its free requested and completed) is an event of op
 * GMT_OP_ELIDED and kind GMT_TK_NONE: `offset` the blocks, `size` their (rounded) bytes, `device`
 * and `stack` the site's, `seq` and `ts` the last free completed's; api and driver are
 * GMT_TRACE_NO_STRING.
 */

/** One device's NVML reading in a snapshot line (its "nvml" array). */
struct gmt_trace_nvml {
	uint64_t ts;  /**< the snapshot's */
	uint64_t seq; /**< the snapshot's: the reading follows the events up to this seq */
	uint64_t total;
	uint64_t used;
	uint64_t process_used; /**< valid with has_process_used */
	uint32_t line;	       /**< the snapshot's line: readings of one snapshot share it */
	int32_t device;	       /**< CUDA ordinal, as events use */
	int32_t index;	       /**< NVML's index of the same GPU, -1 unknown */
	bool has_seq;	       /**< without it, the reading follows the events up to its ts */
	bool has_process_used; /**< false: NVML gave no per-process figure (null) */
	bool pid_namespace;    /**< NVML's pids are not the process's (a container) */
	uint8_t used_from;     /**< enum gmt_nvml_from: how process_used was found */
};

/** How a reading's process_used was found (the snapshot's "process_used_from"). */
enum gmt_nvml_from {
	GMT_NVML_FROM_PID = 0,	    /**< NVML's entry of the process's pid */
	GMT_NVML_FROM_NSPID,	    /**< of its pid in the outer PID namespace (NSpid) */
	GMT_NVML_FROM_ONLY_PROCESS, /**< the device's only process, taken as this one */
	GMT_NVML_FROM_DEVICE_USED,  /**< the device's used memory (alone, no per-process figure) */
};

struct gmt_trace_marker {
	uint64_t seq;
	uint64_t ts;
	int64_t tid;
	uint32_t line;
	uint32_t
	    depth;     /**< ranges: nesting level, 1 = outermost; a pop names the depth it closes */
	uint8_t range; /**< enum gmt_range: a point (gmt_mark), or one end of a range */
	bool auto_step; /**< "auto":"step": a step boundary the tracer found (gmt_step_mark) */
	/** a pop's label is its push's (same thread and depth), filled in after reading */
	char *label;
};

/** One entry of a "holders" line: a Python object that keeps blocks alive, and those blocks. */
struct gmt_trace_holder {
	char *what;	  /**< "losses (a list in __main__)" */
	bool graph;	  /**< kind "graph": the autograd graphs of tensors it holds keep them */
	uint32_t roots;	  /**< tensors it holds (the graphs' roots, or the tensors kept) */
	uint64_t *ptrs;	  /**< the blocks' addresses ... */
	int32_t *devices; /**< ... and devices */
	size_t nptrs;
};

/** One Python frame of a stack line's "py" array. */
struct gmt_trace_pyframe {
	uint32_t code;	 /**< id of a pycode line */
	uint32_t offset; /**< byte offset of the instruction in co_code */
	bool entry;	 /**< the innermost Python frame of one call of the eval function */
};

/**
 * The most native frames, and the most Python frames, kept of one stack line: four times what the
 * tracer writes (GPUMEMTRACE_STACK_DEPTH is at most 256, Python frames at most 128), so that a
 * line of a million frames costs what its first frames do. The rest is counted in `cut`.
 */
#define GMT_TRACE_MAX_FRAMES 1024
#define GMT_TRACE_MAX_PYFRAMES 512

/**
 * One frame given as text, not as an address or a code object: the frames of a PyTorch memory
 * snapshot (reader/snapshot.c), which has them as (filename, line, name). The strings live in the
 * trace's memory; symbols/callstack.c makes a Python frame of a `.py` file, else a native one.
 */
struct gmt_trace_textframe {
	const char *file;     /**< NULL unknown */
	const char *function; /**< NULL unknown */
	uint32_t line;	      /**< 0 unknown */
};

/**
 * One `stack` line. The native frames are indices into the trace's `addresses` (each distinct
 * return address is stored once per trace: stacks of one program share most of their frames);
 * gmt_trace_frame() gives the address.
 */
struct gmt_trace_stack {
	uint32_t id;
	uint32_t nframes;
	uint32_t npy;
	int32_t modset; /**< the latest modules line before this one, -1 none */
	uint32_t line;
	uint32_t cut;		/**< frames of the line not kept (native and Python) */
	const uint32_t *frames; /**< native frames, innermost first: indices, see above */
	const struct gmt_trace_pyframe *py; /**< Python frames, innermost first (NULL when none) */
	/** frames as text, innermost first (a snapshot's stack: no native or Python frames then) */
	const struct gmt_trace_textframe *text;
	uint32_t ntext;
	uint8_t pystate; /**< enum gmt_pystate: absent, "none" or "empty" */
};

/**
 * One loaded object of a `modules` line. Identical entries of successive lines (the same file
 * at the same base) are stored once and shared by the module sets.
 */
struct gmt_trace_module {
	char *path;	/**< as the tracer saw it ("[vdso]" for the vDSO); valid UTF-8 */
	char *file;	/**< the path's bytes when they are not UTF-8 ("path_hex"), else NULL:
			     what to open; `path` then shows U+FFFD for the stray bytes */
	char *build_id; /**< lowercase hex of NT_GNU_BUILD_ID, "" when the object has none */
	uint64_t base;	/**< load bias: ELF virtual address = address - base */
	uint64_t (*segments)[2]; /**< [p_vaddr, p_memsz] of each PT_LOAD, relative to base */
	uint32_t nsegments;
};

/** One `modules` line: every object loaded at that moment. */
struct gmt_trace_modset {
	uint64_t seq; /**< the last event seq written before it */
	uint32_t line;
	uint32_t nmods;
	uint32_t *mods; /**< indices into gmt_trace.modules */
};

/** One `pycode` line: a Python code object. */
struct gmt_trace_pycode {
	uint32_t id;
	uint32_t line;
	int firstlineno;
	char *file;	/**< co_filename, NULL when the tracer could not read it */
	char *name;	/**< co_name, may be NULL */
	char *qualname; /**< co_qualname (= name on 3.10), may be NULL */
	char *python;	/**< "3.12": the rules of its line table; NULL: the trace's version */
	uint8_t *linetable;
	size_t nlinetable;
};

/** Result of gmt_trace_read(). */
enum gmt_trace_status {
	GMT_TRACE_OK = 0,
	GMT_TRACE_UNREADABLE, /**< cannot open, unknown format/version, or not a trace at all */
	/** a trace of this format, or an empty file, that yielded nothing (empty: its process
	 * ended before its tracer wrote a line; a read error; a header-less remnant): a process
	 * whose story is lost, where UNREADABLE is a file that is no trace (check's
	 * complete-traces fails for these, not for those) */
	GMT_TRACE_LOST,
};

struct gmt_trace {
	char *path; /**< as given, used in every message */
	/**
	 * read from a PyTorch memory snapshot pickle, not a trace (reader/snapshot.c): no process,
	 * no CUDA-level events, the header made up; reports name it "PyTorch snapshot FILE"
	 */
	bool from_snapshot;

	/* header (have_header false: none was read; the fields keep their "unknown" values) */
	bool have_header;
	int version;
	long long pid;	       /**< -1 unknown */
	long long ppid;	       /**< -1 unknown */
	long long forked_from; /**< -1 when null or absent */
	char *host;	       /**< NULL unknown */
	char **argv;	       /**< argc strings */
	size_t argc;
	char *tracer;	       /**< version of the library that wrote the file */
	char *coverage;	       /**< "full", "runtime API only", ...; NULL unknown */
	char *coverage_reason; /**< why CUPTI was not used; NULL when none was given */
	char **capture;	       /**< header "capture": "cupti", "interpose" */
	size_t ncapture;
	uint64_t start_ts; /**< time origin of the report; first ts seen when no header */
	uint64_t start_unix_ns;
	bool has_rank;				/**< header "rank" was an object */
	long long rank, local_rank, world_size; /**< -1 when null */

	/* end of the file */
	bool complete; /**< a trailer was read: the process exited normally */
	/** the trailer's reason was a signal's name ("SIGTERM", "SIGABRT"): the process was ended
	 * by it, not complete, but the trace is whole up to it; "" none */
	char ended_by[16];
	bool cut_by_disk;	 /**< no trailer, and the file looks cut short by a full disk (it
				      ends mid-line at a block boundary, or its file system is full):
				      the process may have run on, untraced */
	uint64_t trailer_events; /**< valid when complete */
	/* bounded traces (GPUMEMTRACE_BOUNDED=1, format/elided.h) */
	bool bounded;	       /**< header options.bounded */
	uint64_t bucket_ms;    /**< header options.bucket_ms */
	uint64_t elided_lines; /**< elided and elided_blocks lines read (events of op GMT_OP_ELIDED,
				  in nevents) */
	uint64_t elided_allocations; /**< CUDA-level allocations they count (each with its free) */
	uint64_t elided_blocks;	     /**< PyTorch blocks they count (each with its two frees) */
	uint64_t trailer_elided;     /**< trailer "elided": event lines left out */
	uint64_t bounded_late;	     /**< trailer "late": events the writer got after their cut */
	struct gmt_trace_elided_bin
	    *elided_bins; /**< the elided lines' histograms, in file order */
	size_t nelided_bins;
	uint64_t dropped; /**< trailer "dropped", else the largest snapshot "dropped" */
	/** of them, the trailer's "dropped_readings": `usage` readings, not calls (0 without) */
	uint64_t dropped_readings;
	uint64_t last_ts; /**< largest ts of any line: where the trace ends */
	bool have_ts;

	struct gmt_trace_event *events; /**< sorted by seq once read */
	size_t nevents;
	uint64_t late_events; /**< streaming: lines applied after a later one (see the sink) */
	struct gmt_trace_marker *markers; /**< sorted by seq */
	size_t nmarkers;
	struct gmt_trace_stack *stacks; /**< sorted by id */
	size_t nstacks;
	uint64_t *addresses; /**< every distinct native return address of the stacks */
	size_t naddresses;
	struct gmt_trace_block *stack_mem; /**< where the stacks' frame lists are */
	char **strings;			   /**< interned API names */
	struct {
		uint64_t
		    key; /**< the name's rd_name_key_n(), its length that of strings[index1 - 1] */
		uint16_t index1; /**< string index + 1, 0: empty */
	} string_cache[256];	 /**< reading only: by the name's hash */
	size_t nstrings;
	struct gmt_trace_nvml *nvml; /**< every NVML reading, in file order (snapshot order) */
	size_t nnvml;

	/* call stacks (docs/trace-format.md, "modules", "stack", "pycode") */
	bool have_stacks_info; /**< the header had a "stacks" object */
	bool stacks_native;    /**< native stacks were captured */
	uint32_t stacks_depth; /**< most native frames per stack, 0 unknown */
	char *python;	       /**< CPython version whose frames were captured (last pyinfo, else
				    the header's stacks.python); NULL: none */
	struct gmt_trace_module *modules; /**< every distinct module entry */
	size_t nmodules;
	struct gmt_trace_modset *modsets; /**< modules lines, in file order */
	size_t nmodsets;
	struct gmt_trace_pycode *pycodes; /**< sorted by id */
	size_t npycodes;

	/* the PyTorch layer ("torch" line; have_torch false: none): strings NULL when absent */
	bool have_torch;
	char *torch_version, *torch_backend, *torch_alloc_conf, *torch_layer, *torch_detail;
	/* what kept the live tensors at the end (the last "holders" line; the PyTorch layer's walk
	 * of the program's objects) */
	struct gmt_trace_holder *holders;
	size_t nholders;
	uint64_t holders_seq; /**< the holders line's seq: the walk saw the blocks live before it */
	size_t nblocks;	      /**< block lines read (they are events of op GMT_OP_BLOCK, counted in
				 nevents) */

	size_t lines;	  /**< lines read, the torn one included */
	size_t bad_lines; /**< lines reported and skipped */
	bool torn;	  /**< the last line had no '\n' and was ignored */
	size_t snapshots;
};

/**
 * What a read shows while it goes (the command line's progress line, tools/progress.c): begin
 * with the file's size in bytes (-1 unknown), then every GMT_READ_PROGRESS_LINES lines the lines
 * read so far and the bytes of the file consumed (a compressed file's own; -1 unknown), then end.
 * Called on the thread that called the read; the reader itself draws nothing.
 */
struct gmt_read_progress {
	void (*begin)(void *ctx, const char *path, long long size);
	void (*step)(void *ctx, size_t lines, long long at);
	void (*end)(void *ctx);
	void *ctx;
};

#define GMT_READ_PROGRESS_LINES 16384

/**
 * From this many jobs, one trace's calling thread is also spared the lines' cutting (a filler
 * thread, reader/pipeline.c) and the model's replay (session/feed.h): with fewer cores the extra
 * threads only add their hand-overs (measured on 2 cores: 5-9% more wall time).
 */
#define GMT_READ_HELPER_JOBS 3

/** How a trace is read; NULL options are GMT_READ_OPTIONS_INIT. */
struct gmt_read_options {
	bool slow; /**< every line through jansson, no fast path (the tests compare both) */
	const struct gmt_read_progress *progress; /**< NULL: none */
	/**
	 * threads that read one trace: 0 or 1, the calling thread alone; N, the calling thread
	 * and N - 1 workers that parse its event lines ahead, in chunks, while the calling thread
	 * takes every line in its order (what is read, said and delivered is the same at every N)
	 */
	unsigned jobs;
	/** lines per chunk of a read with jobs > 1; 0: the default (the tests make it small) */
	unsigned chunk_lines;
	/** a path the user named: a FIFO or pipe there (`report <(zstdcat t.zst)`) is read as
	 * standard input is; false for the files found in a directory (a FIFO may never end) */
	bool pipe_ok;
};

#define GMT_READ_OPTIONS_INIT                                                                      \
	{                                                                                          \
		.slow = false, .progress = NULL, .jobs = 1, .chunk_lines = 0, .pipe_ok = false     \
	}

/** Room for the reason a trace yielded nothing (gmt_trace_read_sink()'s @p why). */
#define GMT_TRACE_WHY 256

/**
 * Read the trace at @p path. Messages about the file (bad lines, a torn end, why the file is
 * unreadable) go to @p diag, one per line, prefixed with the path; at most a few dozen bad lines
 * are shown per file, then a count.
 *
 * On GMT_TRACE_OK, *@p out is a new trace (gmt_trace_free()). On GMT_TRACE_UNREADABLE or
 * GMT_TRACE_LOST,
 * *@p out is NULL and @p diag says why.
 */
enum gmt_trace_status gmt_trace_read(const char *path,
				     FILE *diag,
				     const struct gmt_read_options *opt,
				     struct gmt_trace **out);

/**
 * Where gmt_trace_read_sink() delivers the events and markers, in seq order, as it reads; @p t
 * is the trace being read (its header, strings and readings so far). The pointers are valid for
 * the length of the call.
 */
struct gmt_trace_sink {
	void (*event)(void *ctx, const struct gmt_trace *t, const struct gmt_trace_event *ev);
	void (*marker)(void *ctx, const struct gmt_trace *t, const struct gmt_trace_marker *mk);
	void *ctx;
	/**
	 * NULL, or called before the reader changes what the callbacks may have read of @p t
	 * besides the item they were handed (its strings, readings, holders, elided bins) and
	 * before the read ends: a sink that works on items after the call (on a thread of its
	 * own) must be done with every item it got before it returns; it then reads @p t as it
	 * was when each item was handed over. The markers array grows without a sync: such a sink
	 * keeps a copy of the marker (its label stays where it is until the trace is freed). Not
	 * for a sink with a time range in seconds (start_ts follows the reader).
	 */
	void (*sync)(void *ctx);
};

/** Lines that may wait for a missing seq before the reader gives up on it and goes on. */
#define GMT_TRACE_REORDER_WINDOW 65536

/**
 * Read @p path as gmt_trace_read() does, but hand every event and marker to @p sink instead of
 * keeping the events: memory stays bounded by the reorder window, whatever the trace's length
 * (`events` stays NULL; `nevents` counts them). The writer emits lines in drain order, not seq
 * order; the tracer's seqs are consecutive, so a line goes to the sink as soon as every smaller
 * seq has, and only lines that come before their predecessors wait. A seq that never comes (a
 * stamp without a line, a dropped event) holds the others back until GMT_TRACE_REORDER_WINDOW
 * wait. A line that sorts before one already delivered (a repeated seq, one later than the
 * window, a snapshot behind the events before it) is applied late: counted in `late_events`
 * and noted once on @p diag. On GMT_TRACE_UNREADABLE what the sink got is void.
 *
 * On GMT_TRACE_LOST, @p why (unless NULL) holds the reader's reason, the words it said on
 * @p diag after the path ("empty file, not a trace"): what the session keeps of the file. On
 * GMT_TRACE_UNREADABLE it holds why a file that may be a trace could not be read ("cannot open:
 * ...", "trace format version 2 is not supported ...", "out of memory"), and is empty for a
 * file that is evidently another program's (not a gpumemtrace trace, not a snapshot): the
 * session keeps the former among the lost inputs.
 */
enum gmt_trace_status gmt_trace_read_sink(const char *path,
					  FILE *diag,
					  const struct gmt_read_options *opt,
					  const struct gmt_trace_sink *sink,
					  struct gmt_trace **out,
					  char why[GMT_TRACE_WHY]);

void gmt_trace_free(struct gmt_trace *trace);

/** The interned string @p idx (an event's api). */
const char *gmt_trace_string(const struct gmt_trace *trace, uint16_t idx);

/** The stack line with @p id, NULL for 0 or an id the file never defined. */
const struct gmt_trace_stack *gmt_trace_stack(const struct gmt_trace *trace, uint32_t id);

/** The return address of native frame @p i of @p st, a stack of @p trace. */
static inline uint64_t
gmt_trace_frame(const struct gmt_trace *trace, const struct gmt_trace_stack *st, uint32_t i)
{
	return trace->addresses[st->frames[i]];
}

/** The pycode line with @p id, NULL when the file never defined it. */
const struct gmt_trace_pycode *gmt_trace_pycode(const struct gmt_trace *trace, uint32_t id);

/** Seconds from the trace's start to @p ts (negative if @p ts is earlier). */
double gmt_trace_time_s(const struct gmt_trace *trace, uint64_t ts);

/** The interned string of an event's driver call, NULL when it has none. */
const char *gmt_trace_driver(const struct gmt_trace *trace, uint16_t idx);

/** For the trace's readers (read.c, snapshot.c): @p size bytes in @p t's own memory (freed with
 * it); NULL out of memory. */
void *gmt_trace_mem(struct gmt_trace *t, size_t size);

#endif
