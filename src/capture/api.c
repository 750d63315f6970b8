/*
 * @brief The public entry points (api.h): markers, InitializeInjection, the PyTorch layer's
 * gmt_torch_record/gmt_torch_layer, and this copy's gmt_tracer_instance. Each goes to this copy's
 * work, or, in a copy that defers to another one (instance.h), to that copy's, whose ranges and
 * ring these are.
 *
 * Markers go through the ring like events: no allocation, no I/O, no lock on the caller's thread.
 */
#define _GNU_SOURCE
#include "capture/api.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/cupti.h"
#include "capture/instance.h"
#include "capture/stacks.h"
#include "capture/torch.h"
#include "format/torch_entry.h"
#include "include/gpumemtrace.h"

/*
 * This thread's open ranges (gmt_range_push() without its gmt_range_pop() yet). Only the count:
 * a pop is written with the depth it closes and the thread, and the reader pairs it with its
 * push. Labels are not kept here on purpose: this library has initial-exec TLS (gmt_depth), so
 * when the CUDA driver dlopen()s it (CUDA_INJECTION64_PATH) all of its TLS must fit in glibc's
 * static TLS surplus, a few hundred bytes.
 */
static __thread uint32_t range_depth __attribute__((tls_model("initial-exec")));

/* @p label truncated to GMT_LABEL_MAX - 1 bytes, "" for NULL, into @p dst. A cut never splits a
 * UTF-8 character: the character the limit falls into is left out whole. */
static void
copy_label(char *dst, const char *label)
{
	size_t n = label ? strnlen(label, GMT_LABEL_MAX - 1) : 0;

	if (n == GMT_LABEL_MAX - 1 && label[n] != '\0') {
		while (n > 0 && ((unsigned char)label[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, label ? label : "", n);
	dst[n] = '\0';
}

static void
emit_marker(const char *label, enum gmt_range range, uint32_t depth, uint32_t flags)
{
	struct gmt_event ev = {
	    .op = GMT_OP_MARKER,
	    .device = -1,
	    .range = (uint8_t)range,
	    .range_depth = depth,
	    .flags = flags,
	};

	if (!gmt_hook_enter())
		goto out;
	copy_label(ev.label, label);
	gmt_stamp(&ev);
	gmt_emit(&ev);
out:
	gmt_hook_leave();
}

static void
mark(const char *label)
{
	emit_marker(label, GMT_RANGE_NONE, 0, 0);
}

/* A step boundary the tracer found itself (the PyTorch layer's optimizer hook, _torch.py): a
 * point marker flagged as automatic, so that a user's own marks keep precedence. */
static void
step_mark(const char *label)
{
	emit_marker(label, GMT_RANGE_NONE, 0, GMT_EV_AUTO_STEP);
}

/* The depth is kept even while tracing is off (disabled, not started): a range opened then and
 * closed while tracing still pops at the right depth. */
static void
range_push(const char *label)
{
	uint32_t depth = range_depth < UINT32_MAX ? range_depth + 1 : range_depth;

	range_depth = depth;
	emit_marker(label, GMT_RANGE_PUSH, depth, 0);
}

static void
range_pop(void)
{
	uint32_t depth = range_depth;

	/* A pop with no open range is the caller's bug: recorded as depth 0. */
	emit_marker(NULL, GMT_RANGE_POP, depth, 0);
	if (depth)
		range_depth = depth - 1;
}

static int
no_watch(void)
{
	return -1;
}

/* This copy's instance under a hidden name: a reference to an exported symbol from inside the
 * library may bind to another copy's (the first in the global scope), this one cannot. The
 * entry points are the internal ones for the same reason. */
static struct gmt_instance self_instance = {
    .magic = GMT_INSTANCE_MAGIC,
    .size = sizeof(struct gmt_instance),
    .mark = mark,
    .range_push = range_push,
    .range_pop = range_pop,
    .initialize_injection = gmt_cupti_inject,
    .torch_record = gmt_api_torch_record,
    .torch_layer = gmt_api_torch_layer,
    .py_watch = gmt_stacks_watch_python,
    .step_mark = step_mark,
    .torch_gc = gmt_api_torch_gc,
    .torch_holders = gmt_api_torch_holders,
};
extern struct gmt_instance gmt_tracer_instance
    __attribute__((alias("self_instance"), visibility("default")));

/* Where the exported names go: this copy's entry points until the constructor finds another
 * copy tracing the process, then that copy's (`forward`: an older copy may lack some, those do
 * nothing here). */
static struct gmt_instance forward;
static const struct gmt_instance *to = &self_instance;

static void
ignore_label(const char *label)
{
	(void)label;
}

static void
ignore(void)
{
}

static int
injected(void)
{
	return 1; /* what InitializeInjection returns whatever happens: cuInit goes on */
}

static void
ignore_gc(int collecting)
{
	(void)collecting;
}

static int
ignore_entry(const struct gmt_torch_entry *entry)
{
	(void)entry;
	return 0;
}

static void
ignore_layer(const char *version,
	     const char *backend,
	     const char *alloc_conf,
	     const char *status,
	     const char *detail)
{
	(void)version;
	(void)backend;
	(void)alloc_conf;
	(void)status;
	(void)detail;
}

/* An entry point appended to struct gmt_instance after @p other was built is not there. */
#define HAS(other, field) ((other)->size > offsetof(struct gmt_instance, field) && (other)->field)

bool
gmt_api_defer(bool quiet)
{
	const struct gmt_instance *other = gmt_instance_other(&self_instance, quiet);

	if (!other)
		return false;
	forward = (struct gmt_instance){
	    .magic = GMT_INSTANCE_MAGIC,
	    .size = sizeof(struct gmt_instance),
	    .mark = other->mark ? other->mark : ignore_label,
	    .range_push = other->range_push ? other->range_push : ignore_label,
	    .range_pop = other->range_pop ? other->range_pop : ignore,
	    .initialize_injection =
		other->initialize_injection ? other->initialize_injection : injected,
	    .torch_record = HAS(other, torch_record) ? other->torch_record : ignore_entry,
	    .torch_layer = HAS(other, torch_layer) ? other->torch_layer : ignore_layer,
	    .py_watch = HAS(other, py_watch) ? other->py_watch : no_watch,
	    .step_mark = HAS(other, step_mark) ? other->step_mark : ignore_label,
	    .torch_gc = HAS(other, torch_gc) ? other->torch_gc : ignore_gc,
	    .torch_holders = HAS(other, torch_holders) ? other->torch_holders : ignore_label,
	};
	to = &forward;
	return true;
}

GMT_EXPORT void
gmt_mark(const char *label)
{
	to->mark(label);
}

GMT_EXPORT void
gmt_range_push(const char *label)
{
	to->range_push(label);
}

GMT_EXPORT void
gmt_range_pop(void)
{
	to->range_pop();
}

/* From Python (the PyTorch layer's optimizer step hook, _torch.py): an automatic step mark. */
GMT_EXPORT void
gmt_step_mark(const char *label)
{
	to->step_mark(label);
}

/* From Python's gc.callbacks (_torch.py), with the GIL: the cyclic collector runs (1) or not. */
GMT_EXPORT void
gmt_torch_gc(int collecting)
{
	to->torch_gc(collecting);
}

/* From the PyTorch layer at the end of the run (_torch.py): what keeps the live tensors. */
GMT_EXPORT void
gmt_torch_holders(const char *json)
{
	to->torch_holders(json);
}

/* Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library. The driver
 * may load another copy than the one tracing the process (a second build named by the
 * variable): that copy defers and hands the call on. */
GMT_EXPORT int
InitializeInjection(void)
{
	return to->initialize_injection();
}

/* The PyTorch layer (capture/torch.c, python/gpumemtrace/torch_bridge.cpp, _torch.py). */
GMT_EXPORT int
gmt_torch_record(const struct gmt_torch_entry *entry)
{
	return to->torch_record(entry);
}

GMT_EXPORT void
gmt_torch_layer(const char *version,
		const char *backend,
		const char *alloc_conf,
		const char *status,
		const char *detail)
{
	to->torch_layer(version, backend, alloc_conf, status, detail);
}

/*
 * For benchmarks (bench/hook_overhead --in-process): while @p on, the calling thread's CUDA calls
 * are not recorded, as the tracer's own calls are not (gmt_depth): the wrappers forward at once
 * and CUPTI's callbacks return at once. A loop timed paused and then recording, in one process,
 * gives what recording costs above an empty callback on the same ids, free of the host's
 * process-to-process spread (docs/performance.md). Nests; this copy of the tracer only. Not for
 * programs: what a paused thread frees is then freed nowhere in the trace.
 */
GMT_EXPORT void
gmt_bench_pause(int on)
{
	if (on)
		gmt_depth++;
	else if (gmt_depth > 0)
		gmt_depth--;
}

/*
 * For benchmarks, with gmt_bench_pause(): CUPTI's callbacks of the tracer's subscription off
 * (@p on 0) for the whole process, or on again (1). Paused with the callbacks off, a CUDA call
 * costs what it costs with no CUPTI subscriber (the wrappers forward at once), so a loop timed
 * off, paused and recording in one process gives the empty callback's own cost and the tracer's
 * against no tracer, free of the host's process-to-process spread (bench/hook_overhead
 * --in-process, bench/run_torch_async_inprocess.py). Returns the callback ids changed, -1 when
 * this tracer holds no CUPTI subscription. Not for programs: what happens while off is not in
 * the trace. Call it between CUDA calls, from one thread.
 */
GMT_EXPORT int
gmt_bench_cupti(int on)
{
	return gmt_cupti_bench_enable(on != 0);
}

/*
 * For benchmarks, with gmt_bench_pause() and gmt_bench_cupti(): the writer thread held (@p on 0:
 * it drains nothing, the ring fills) or draining again (1: returns once the ring is empty), so a
 * loop timed recording with the writer held and recording with it working, in one process, shows
 * what the writer's work beside the program costs the program (its CPU, its caches, the ring's
 * lines). Returns 1, or 0 when the ring was not emptied in 5 s. Keep a held stretch under the
 * ring's size (GPUMEMTRACE_RING_SLOTS): past it, events are dropped. A dlclose while held waits
 * out its barrier's bound (100 ms, lifecycle.c): the writer does not serve it. Not for programs.
 */
GMT_EXPORT int
gmt_bench_writer(int on)
{
	return gmt_tracer_bench_writer(on != 0) ? 1 : 0;
}

/* From Python with the GIL held (python/gpumemtrace/_site/sitecustomize.py): the code watcher
 * that lets the Python walk look code objects up by address (capture/pystack.h). */
GMT_EXPORT int
gmt_py_watch(void)
{
	return to->py_watch();
}
