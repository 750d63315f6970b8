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
#ifndef GMT_ANALYSIS_TRACE_H
#define GMT_ANALYSIS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/kinds.h"
#include "format/event.h" /* GMT_FORMAT_VERSION only: kinds and ops are the analyzer's own */

/** What an event line does (its "op"). */
enum gmt_top {
	GMT_TOP_NONE = 0,
	GMT_TOP_ALLOC,
	GMT_TOP_FREE,
	GMT_TOP_RESET,
	GMT_TOP_RETAIN, /**< a VMM handle gained a reference: no memory */
	GMT_TOP_USAGE,	/**< a reading of a reservation counter (pool_reserve, graph_reserve) */
};

/** Per-event flags of the reader (not the tracer's enum gmt_event_flag). */
enum gmt_trace_event_flag {
	GMT_TEV_MEMINFO = 1u << 0, /**< free_bytes/total_bytes were present (failed allocation) */
	GMT_TEV_SIZE = 1u << 1,	   /**< a free named a range size (cuMemUnmap, cuMemAddressFree) */
};

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
				  free: the range (GMT_TEV_SIZE) */
	uint64_t handle;     /**< "handle" key: cuMemMap's handle, an external memory object, a
				  retain's address; 0 absent */
	uint64_t offset;     /**< cuMemMap offset into the handle */
	uint64_t context;    /**< CUPTI contextUid, 0 when absent (interposition) */
	uint64_t free_bytes; /**< failed allocations with GMT_TEV_MEMINFO */
	uint64_t total_bytes;
	uint32_t stack;	 /**< id of a stack line, 0 = none */
	uint32_t line;	 /**< line number in the file, for messages and a stable sort */
	int32_t device;	 /**< -1 unknown */
	int32_t result;	 /**< cudaError_t / CUresult, 0 = success */
	uint16_t api;	 /**< index into the trace's strings */
	uint16_t driver; /**< the driver call under a runtime call, or GMT_TRACE_NO_STRING */
	uint8_t op;	 /**< enum gmt_top */
	uint8_t kind;	 /**< enum gmt_tkind; NONE on reset, as called on free */
	uint8_t flags;	 /**< enum gmt_trace_event_flag */
};

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
};

struct gmt_trace_marker {
	uint64_t seq;
	uint64_t ts;
	uint32_t line;
	char *label;
};

struct gmt_trace_stack {
	uint32_t id;
	uint32_t nframes;
	uint64_t *frames; /**< innermost first */
};

/** Result of gmt_trace_read(). */
enum gmt_trace_status {
	GMT_TRACE_OK = 0,
	GMT_TRACE_UNREADABLE, /**< cannot open, unknown format/version, or nothing usable in it */
};

struct gmt_trace {
	char *path; /**< as given, used in every message */

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
	bool complete;		 /**< a trailer was read: the process exited normally */
	uint64_t trailer_events; /**< valid when complete */
	uint64_t dropped;	 /**< trailer "dropped", else the largest snapshot "dropped" */
	uint64_t last_ts;	 /**< largest ts of any line: where the trace ends */
	bool have_ts;

	struct gmt_trace_event *events; /**< sorted by seq once read */
	size_t nevents;
	struct gmt_trace_marker *markers; /**< sorted by seq */
	size_t nmarkers;
	struct gmt_trace_stack *stacks; /**< sorted by id */
	size_t nstacks;
	char **strings; /**< interned API names */
	size_t nstrings;
	struct gmt_trace_nvml *nvml; /**< every NVML reading, in file order (snapshot order) */
	size_t nnvml;

	size_t lines;	  /**< lines read, the torn one included */
	size_t bad_lines; /**< lines reported and skipped */
	bool torn;	  /**< the last line had no '\n' and was ignored */
	size_t snapshots;
};

/**
 * Read the trace at @p path. Messages about the file (bad lines, a torn end, why the file is
 * unreadable) go to @p diag, one per line, prefixed with the path; at most a few dozen bad lines
 * are shown per file, then a count.
 *
 * On GMT_TRACE_OK, *@p out is a new trace (gmt_trace_free()). On GMT_TRACE_UNREADABLE, *@p out is
 * NULL and @p diag says why.
 */
enum gmt_trace_status gmt_trace_read(const char *path, FILE *diag, struct gmt_trace **out);

void gmt_trace_free(struct gmt_trace *trace);

/** The interned string @p idx (an event's api). */
const char *gmt_trace_string(const struct gmt_trace *trace, uint16_t idx);

/** The stack line with @p id, NULL for 0 or an id the file never defined. */
const struct gmt_trace_stack *gmt_trace_stack(const struct gmt_trace *trace, uint32_t id);

/** Seconds from the trace's start to @p ts (negative if @p ts is earlier). */
double gmt_trace_time_s(const struct gmt_trace *trace, uint64_t ts);

/** The interned string of an event's driver call, NULL when it has none. */
const char *gmt_trace_driver(const struct gmt_trace *trace, uint16_t idx);

#endif
