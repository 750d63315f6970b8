/*
 * @brief Serialization of trace records to JSON Lines (docs/trace-format.md).
 *
 * Used by the writer thread only (it allocates: the buffer grows). Hand-written rather than
 * jansson: one record is a few snprintf-like appends into a reused buffer, no tree of objects.
 */
#ifndef GMT_FORMAT_JSONL_H
#define GMT_FORMAT_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/event.h"
#include "format/stack.h"

/** A growable byte buffer. Zero-initialize; gmt_buf_free() releases. */
struct gmt_buf {
	char *data;
	size_t len;
	size_t cap;
	bool oom; /**< an allocation failed: content is truncated, the caller drops the record */
};

void gmt_buf_free(struct gmt_buf *b);
void gmt_buf_reset(struct gmt_buf *b);
void gmt_buf_append(struct gmt_buf *b, const char *s, size_t n);
void gmt_buf_puts(struct gmt_buf *b, const char *s);
void gmt_buf_printf(struct gmt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Append @p s as a JSON string literal (quotes and escapes included); invalid UTF-8 bytes become
 * U+FFFD. */
void gmt_buf_json_string(struct gmt_buf *b, const char *s, size_t n);
void gmt_buf_hex(struct gmt_buf *b, uint64_t v); /* "0x..." with quotes */

struct gmt_rank_info {
	bool has_rank, has_local_rank, has_world_size;
	long rank, local_rank, world_size;
};

struct gmt_header_info {
	const char *tracer_version;
	int pid, ppid;
	int forked_from; /**< 0 = not a traced fork child */
	const char *host;
	const char *cmdline; /**< NUL-separated argv as in /proc/self/cmdline */
	size_t cmdline_len;
	uint64_t start_ts, start_unix_ns;
	struct gmt_rank_info rank;
	const char *coverage;
	const char *coverage_reason; /**< NULL, or why CUPTI was not used */
	const char *const *capture;  /**< NULL-terminated */
	/** the CUDA runtimes loaded (sonames), NULL-terminated; NULL: none known */
	const char *const *cuda_runtime;
	const char *cupti; /**< the CUPTI subscribed with, NULL when none */
	uint64_t ring_slots, flush_ms, snapshot_ms;
	bool stacks_native;
	const char *stacks_python; /**< CPython minor version whose frames are captured, or NULL */
	unsigned stacks_depth;
	bool stacks_interpreter; /**< native stacks go on below the innermost eval frame */
	bool bounded;		 /**< GPUMEMTRACE_BOUNDED=1 (format/elided.h) */
	uint64_t bucket_ms;	 /**< its GPUMEMTRACE_BUCKET_MS */
};

/** An elided line (bounded traces, format/elided.h): a site's allocations left out of a bucket. */
struct gmt_elided_site {
	uint64_t seq, ts; /**< of the last free left out */
	uint32_t stack;
	uint16_t api, driver; /**< enum gmt_api */
	uint8_t kind;	      /**< enum gmt_kind; NONE: PyTorch blocks (an elided_blocks line) */
	int32_t device;
	uint64_t allocations, bytes;
	uint64_t temporaries, temporary_bytes; /**< freed before any other allocation was made */
	/** by log2 bucket (GMT_ELIDED_BINS): allocations and bytes by size, frees by lifetime (ns);
	 * NULL: none */
	const uint64_t *size_allocs, *size_bytes, *lifetimes;
};

#define GMT_ELIDED_BINS 64

/** Per device and kind totals for snapshot records. */
struct gmt_live_total {
	int device;
	enum gmt_kind kind;
	uint64_t bytes;
	uint64_t allocations;
};

/** One NVML reading of a device (snapshot records). */
struct gmt_nvml_reading {
	int device;	      /**< CUDA ordinal */
	unsigned index;	      /**< NVML index of the same GPU */
	uint64_t total, used; /**< device memory */
	bool has_process_used;
	uint64_t process_used; /**< this process's GPU memory */
	/** how process_used was found when not by getpid() (docs/trace-format.md, snapshot):
	 * "nspid", "only_process", "device_used"; NULL: by pid, or no figure */
	const char *process_used_from;
	/** NVML's pids are not this process's (a PID namespace: a container) */
	bool pid_namespace;
};

void gmt_jsonl_header(struct gmt_buf *b, const struct gmt_header_info *h);
void gmt_jsonl_stack(struct gmt_buf *b, const struct gmt_stack_view *st);
void gmt_jsonl_pycode(struct gmt_buf *b, const struct gmt_pycode_view *c);
void gmt_jsonl_pyinfo(struct gmt_buf *b, const char *version);
/** A modules line, written as begin, one entry per object, end. */
void gmt_jsonl_modules_begin(struct gmt_buf *b, uint64_t seq);
void gmt_jsonl_modules_entry(struct gmt_buf *b, const struct gmt_module_view *m, size_t index);
void gmt_jsonl_modules_end(struct gmt_buf *b);
/** An event or a marker line. */
void gmt_jsonl_event(struct gmt_buf *b, const struct gmt_event *ev, uint32_t stack_id);
void gmt_jsonl_snapshot(struct gmt_buf *b,
			uint64_t ts,
			uint64_t seq,
			uint64_t events,
			uint64_t dropped,
			const struct gmt_live_total *live,
			size_t n_live,
			const struct gmt_nvml_reading *nvml,
			size_t n_nvml);
void gmt_jsonl_elided(struct gmt_buf *b, const struct gmt_elided_site *s);
/** An elided_blocks line (format/elided.h): of @p s, the PyTorch blocks left out of a bucket (its
 * seq, ts, stack, device, allocations and bytes; the rest is the CUDA level's). */
void gmt_jsonl_elided_blocks(struct gmt_buf *b, const struct gmt_elided_site *s);
/** The trailer of a bounded trace: the plain one's keys and the bounded writer's counts. */
void gmt_jsonl_trailer_bounded(struct gmt_buf *b,
			       uint64_t ts,
			       uint64_t events,
			       uint64_t dropped,
			       uint64_t dropped_readings,
			       const char *reason,
			       uint64_t elided,
			       uint64_t late,
			       uint64_t buckets);
/** The trailer: lines written, events dropped (@p dropped_readings of them `usage` readings). */
void gmt_jsonl_trailer(struct gmt_buf *b,
		       uint64_t ts,
		       uint64_t events,
		       uint64_t dropped,
		       uint64_t dropped_readings,
		       const char *reason);

#endif
