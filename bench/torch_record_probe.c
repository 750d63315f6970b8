/*
 * @brief Micro-benchmark of the PyTorch layer's block-event path (bench tool, not part of the
 * tracer): the tracer's exported gmt_torch_record() called as the bridge
 * (python/gpumemtrace/torch_bridge.cpp) calls it for one tensor, ALLOC, FREE_REQUESTED and
 * FREE_COMPLETED of one block, N times in a loop, from under a native stack of a chosen depth.
 * bench/run_torch_record_probe.py calls gmt_probe_run() through ctypes from under a Python stack
 * of a chosen depth, so the tracer captures and interns the same kind of stack it does inside
 * torch: Python frames, then ctypes' and libffi's native frames, then ours.
 *
 *   gmt_probe_tracer()            1 when the process has a gmt_torch_record (dlsym(RTLD_DEFAULT)),
 *                                 else 0: the runs then call a no-op in its place
 *   gmt_probe_run(depth, n, tracer, jitter)
 *                                 ns for n triples (CLOCK_MONOTONIC around the loop), called from
 *                                 @p depth nested native frames; @p tracer 0 calls the no-op (the
 *                                 loop's own cost, in the same process), 1 gmt_torch_record;
 *                                 @p jitter > 0: triple i from depth + 0 .. jitter frames instead,
 *                                 a fixed pseudo-random sequence (allocations from several
 *                                 depths, as a program's come)
 *
 * The entries are what the bridge builds from a TraceEntry of torch >= 2.4 (device, pool id
 * known; stream 0, no metadata): a fresh zero-initialised struct per event, addresses rotating
 * over 64 blocks of a few sizes. Nothing is allocated here; the caller keeps n * 3 below the
 * tracer's ring (GPUMEMTRACE_RING_SLOTS) and pauses between runs so the writer drains it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

#include "format/torch_entry.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int gmt_probe_tracer(void);
EXPORT int64_t gmt_probe_run(int depth, int64_t n, int tracer, int jitter);

static gmt_torch_record_fn record;

/* What a run without a tracer calls: an out-of-line function, as gmt_torch_record is. */
__attribute__((noinline)) static int
no_record(const struct gmt_torch_entry *e)
{
	__asm__ volatile("" : : "r"(e) : "memory");
	return 0;
}

EXPORT int
gmt_probe_tracer(void)
{
	record = (gmt_torch_record_fn)dlsym(RTLD_DEFAULT, "gmt_torch_record");
	return record != NULL;
}

static uint64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One event as the bridge's on_trace() builds it. */
static inline void
emit(gmt_torch_record_fn fn, uint32_t action, uint64_t addr, uint64_t bytes)
{
	struct gmt_torch_entry e = {0};
	e.size = sizeof(e);
	e.abi = GMT_TORCH_ABI;
	e.action = action;
	e.addr = addr;
	e.bytes = bytes;
	e.device = 0;
	e.flags = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_HAS_POOL;
	fn(&e);
}

static void
loop(int64_t from, int64_t to, gmt_torch_record_fn fn)
{
	for (int64_t i = from; i < to; i++) {
		uint64_t addr = 0x7f0000000000ull + (uint64_t)(i & 63) * 0x200000ull;
		uint64_t bytes = 512u << (i & 7);
		emit(fn, GMT_TORCH_ALLOC, addr, bytes);
		emit(fn, GMT_TORCH_FREE_REQUESTED, addr, bytes);
		emit(fn, GMT_TORCH_FREE_COMPLETED, addr, bytes);
	}
}

/* @p depth native frames, then the loop: noinline and work after the call, so that no frame is
 * folded into its caller or turned into a tail call. */
__attribute__((noinline)) static int
dive(int depth, int64_t from, int64_t to, gmt_torch_record_fn fn)
{
	int r = 0;

	if (depth <= 1)
		loop(from, to, fn);
	else
		r = dive(depth - 1, from, to, fn);
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r;
}

EXPORT int64_t
gmt_probe_run(int depth, int64_t n, int tracer, int jitter)
{
	gmt_torch_record_fn fn = tracer && record ? record : no_record;
	uint64_t t0 = now_ns();

	depth = depth < 1 ? 1 : depth;
	if (jitter <= 0)
		dive(depth, 0, n, fn);
	else
		for (int64_t i = 0; i < n; i++)
			dive(depth +
				 (int)(((uint64_t)i * 2654435761u >> 16) % (uint64_t)(jitter + 1)),
			     i, i + 1, fn);
	return (int64_t)(now_ns() - t0);
}
