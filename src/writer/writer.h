/*
 * @brief The writer thread: drains the ring, writes the trace file.
 *
 * The only tracer thread that allocates or does I/O. It is started by the capture side at the
 * process's first event and stopped at exit (library destructor). It opens the trace file, writes
 * the header, then loops: drain events from the ring, intern their stacks, keep the live table,
 * format JSON lines, write them at least every flush_ms, and a snapshot every snapshot_ms. At stop
 * it drains what is left and writes a last snapshot and the trailer.
 */
#ifndef GMT_WRITER_WRITER_H
#define GMT_WRITER_WRITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/stack.h"
#include "ring/ring.h"
#include "util/options.h"

struct gmt_writer_config {
	const struct gmt_options *opts;
	struct gmt_ring *ring;
	_Atomic uint64_t *dropped;	    /**< drops counted by the producers */
	_Atomic uint64_t *dropped_readings; /**< of those, `usage` readings (NULL: none counted) */
	int forked_from;		    /**< pid of the traced parent, 0 if none */
	uint64_t start_ts;	     /**< CLOCK_MONOTONIC ns when tracing of this process began */
	const char *coverage;	     /**< header "coverage" */
	const char *coverage_reason; /**< header "coverage_reason", NULL when none */
	const char *const *capture;  /**< header "capture", NULL-terminated */
	/** header "cuda": the CUDA runtimes loaded, up to @p max sonames into @p out (asked on the
	 * writer thread, when the header is written); NULL: none known */
	size_t (*cuda_runtime)(const char **out, size_t max);
	const char *(*cupti)(void); /**< header "cuda.cupti": the CUPTI in use, NULL when none */
	/** PCI bus id of a CUDA device, learnt by the capture side (for NVML readings) */
	bool (*device_busid)(int device, char *buf, size_t n);
	bool stacks_native; /**< header "stacks" */
	unsigned stacks_depth;
	bool stacks_interpreter; /**< header stacks.interpreter */
	/** the stack an event names, once published by the capture side */
	bool (*stack_get)(uint32_t id, struct gmt_stack_view *out);
	/** the next Python code object registered since the last call, in id order */
	bool (*pycode_next)(struct gmt_pycode_view *out);
	/** a registered Python code object by id (one a stack names may precede the ordered cursor)
	 */
	bool (*pycode_get)(uint32_t id, struct gmt_pycode_view *out);
	/** the CPython version whose frames are captured, NULL until known or when off */
	const char *(*python_version)(void);
	void (*on_failure)(
	    void); /**< called once if the writer cannot go on (no file, disk full) */
	/** dlclose() for the writer's own handles (NVML): the real one, never the tracer's exported
	 * dlclose; NULL leaves them open */
	int (*dlclose)(void *handle);
	void (*thread_init)(void); /**< run first on the writer thread (marks it as not traced) */
	/** NULL, or run on the writer thread once per loop (every 1-8 ms): the capture side's work
	 * that must happen outside any application call or callback (one load when idle) */
	void (*tick)(void);
	/** keep the writer's code loaded until the process ends (writer thread, at start); true:
	 * the writer stays after the trailer and counts the calls made later into it; NULL: no */
	bool (*pin)(void);
	/** the file is readable by its owner only (a secure-execution process: its stacks and
	 * addresses are not for the less privileged user who started it) */
	bool private_file;
};

/** Start the writer thread. Returns 0 or -errno. */
int gmt_writer_start(const struct gmt_writer_config *cfg);

/**
 * Ask the writer to drain, write the trailer and close (pinned: stay, counting later calls into
 * the trailer), and wait for the trailer as long as the writer works (its
 * threads use CPU time or its bytes reach the file): the wait is as long as what is left to
 * write, not a fixed time. Gives up (one line on stderr; the trace then has no trailer) after
 * @p idle_ms without progress, or @p max_ms in all. Returns true when the trailer was written.
 * @p reason is the trailer's: "exit", or "exec" (the process image is about to be replaced).
 */
bool gmt_writer_stop(const char *reason, unsigned idle_ms, unsigned max_ms);

/** In a fork child: forget the parent's writer (its thread does not exist here) without writing. */
void gmt_writer_forget_after_fork(void);

/**
 * Before a dlclose (capture/lifecycle.c): ask the writer to write every event pushed so far, with
 * their stacks and a modules line, while the library is still loaded. Returns a ticket for
 * gmt_writer_modules_done().
 */
uint64_t gmt_writer_request_modules(void);
bool gmt_writer_modules_done(uint64_t ticket);

/**
 * For benchmarks (gmt_bench_writer(), capture/api.c): @p hold true: the writer drains nothing
 * from now on (the ring fills; past its size, events are dropped and counted), so that a timed
 * stretch shows what the program pays with no writer working beside it; false: it drains again,
 * and this waits (at most 5 s) until the ring is empty. Returns false when it was not emptied.
 */
bool gmt_writer_bench_hold(bool hold);

/** Path of the trace file being written ("" before it is open). */
const char *gmt_writer_path(void);

#endif
