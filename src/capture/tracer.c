/*
 * @brief Tracer lifecycle: constructor, lazy start at the first event, fork, exit; and gmt_emit().
 *
 * The library is inherited by every child of a traced program (compilers, launchers, data-loader
 * workers), so the constructor only reads the options: no thread, no file, no CUDA. The first
 * event of a process maps the ring and starts the writer; a process that never touches GPU memory
 * leaves no trace file.
 */
#define _GNU_SOURCE
#include "capture/capture.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include "capture/cupti.h"
#include "capture/instance.h"
#include "capture/pyhook.h"
#include "capture/stacks.h"
#include "gmt-config.h"
#if GMT_HAVE_PYSTACK
#include "capture/pystack.h"
#endif
#include "util/devices.h"
#include "include/gpumemtrace.h"
#include "ring/ring.h"
#include "util/log.h"
#include "util/options.h"
#include "writer/writer.h"

_Atomic int gmt_state = GMT_STATE_UNINIT;
__thread unsigned gmt_depth __attribute__((tls_model("initial-exec")));

static __thread int32_t cached_tid __attribute__((tls_model("initial-exec")));

static struct gmt_options opts;
static _Atomic bool opts_loaded;
static struct gmt_ring ring;
static void *ring_mem;
static size_t ring_mem_bytes;
static _Atomic uint64_t next_seq;
static _Atomic uint64_t dropped;
static int forked_from;
static uint64_t start_ts; /* library load, or fork for a child */
static bool atfork_registered;

static const char *const capture_interpose[] = {"interpose", NULL};
static const char *const capture_cupti[] = {"cupti", NULL};

// --- small facts --------------------------------------------------------------------------------

int32_t
gmt_tid(void)
{
	if (!cached_tid)
		cached_tid = (int32_t)syscall(SYS_gettid);
	return cached_tid;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void
gmt_stamp(struct gmt_event *ev)
{
	ev->seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed) + 1;
	ev->ts_ns = mono_ns();
	ev->tid = gmt_tid();
}

static void
load_options(void)
{
	if (atomic_load_explicit(&opts_loaded, memory_order_acquire))
		return;
	gmt_options_load(&opts, (gmt_getenv_fn)getenv, gmt_options_secure());
	atomic_store_explicit(&opts_loaded, true, memory_order_release);
}

const struct gmt_options *
gmt_tracer_options(void)
{
	load_options();
	return &opts;
}

// --- start, fork, stop --------------------------------------------------------------------------

static void
on_writer_failure(void)
{
	atomic_store(&gmt_state, GMT_STATE_DISABLED);
}

static void
writer_thread_init(void)
{
	gmt_depth = 1; /* nothing the writer does is traced */
}

static void
atfork_child(void)
{
	int st = atomic_load(&gmt_state);

	cached_tid = 0;
	if (st == GMT_STATE_RUNNING || st == GMT_STATE_STARTING) {
		/* The parent's writer thread is not in this process: start afresh, under our own pid,
		 * into our own file, at our first event. The parent's file stays the parent's. */
		gmt_writer_forget_after_fork();
		/* the ring must start zero-filled (ring.h): take fresh pages at the next start */
		if (ring_mem) {
			munmap(ring_mem, ring_mem_bytes);
			ring_mem = NULL;
		}
		forked_from = (int)getppid();
		start_ts = mono_ns();
		atomic_store(&dropped, 0);
		atomic_store(&gmt_state, GMT_STATE_UNINIT);
	}
}

#if GMT_HAVE_PYSTACK
static bool
python_code_next(struct gmt_pycode_view *out)
{
	return gmt_py_next_code(out);
}

static bool
python_code_get(uint32_t id, struct gmt_pycode_view *out)
{
	return gmt_py_code(id, out);
}

static const char *
python_version(void)
{
	return gmt_stacks_python() ? gmt_py_version() : NULL;
}
#else
static bool
python_code_get(uint32_t id, struct gmt_pycode_view *out)
{
	(void)id;
	(void)out;
	return false;
}

static bool
python_code_next(struct gmt_pycode_view *out)
{
	(void)out;
	return false;
}

static const char *
python_version(void)
{
	return NULL;
}
#endif

static void
tracer_start(void)
{
	load_options();
	gmt_stacks_setup();
	size_t nslots = opts.ring_slots;

	if (!ring_mem) {
		ring_mem_bytes = gmt_ring_bytes(nslots);
		/* mmap, not malloc: we are inside the application's call and must not touch its heap */
		void *mem = mmap(NULL, ring_mem_bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem == MAP_FAILED) {
			gmt_warn("cannot map the event ring (%zu bytes): %s; this process runs on untraced",
				 ring_mem_bytes, strerror(errno));
			atomic_store(&gmt_state, GMT_STATE_DISABLED);
			return;
		}
		ring_mem = mem;
	}
	gmt_ring_init(&ring, ring_mem, nslots);

	if (!atfork_registered) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_registered = true;
	}

	/* Coverage is decided before the header is written: CUPTI is normally started by now (at
	 * cuInit or by the first interposed call); a marker before any CUDA call starts it here. */
	bool cupti = gmt_cupti_records();
	struct gmt_writer_config cfg = {
		.opts = &opts,
		.ring = &ring,
		.dropped = &dropped,
		.forked_from = forked_from,
		.start_ts = start_ts,
		.coverage = cupti ? "full" : "runtime API only",
		.coverage_reason = gmt_cupti_reason(),
		.capture = cupti ? capture_cupti : capture_interpose,
		.device_busid = gmt_device_busid,
		.stacks_native = gmt_stacks_native(),
		.stacks_depth = gmt_stacks_depth(),
		.stack_get = gmt_stack_get,
		.pycode_next = python_code_next,
		.pycode_get = python_code_get,
		.python_version = python_version,
		.on_failure = on_writer_failure,
		.thread_init = writer_thread_init,
		.private_file = gmt_options_secure(),
	};
	int rc = gmt_writer_start(&cfg);
	if (rc < 0) {
		gmt_warn("cannot start the trace writer thread: %s; this process runs on untraced",
			 strerror(-rc));
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	atomic_store_explicit(&gmt_state, GMT_STATE_RUNNING, memory_order_release);
}

/* Returns true when events can be pushed. The first caller starts the tracer; threads that race
 * with it wait for at most ~10 ms (start takes microseconds), then count their event as dropped. */
static bool
ensure_running(void)
{
	int st = atomic_load_explicit(&gmt_state, memory_order_acquire);
	if (st == GMT_STATE_RUNNING)
		return true;
	if (st == GMT_STATE_UNINIT) {
		int expected = GMT_STATE_UNINIT;
		if (atomic_compare_exchange_strong(&gmt_state, &expected, GMT_STATE_STARTING)) {
			tracer_start();
			return atomic_load(&gmt_state) == GMT_STATE_RUNNING;
		}
	}
	for (int i = 0; i < 10000; i++) {
		st = atomic_load_explicit(&gmt_state, memory_order_acquire);
		if (st != GMT_STATE_STARTING)
			break;
		if (i < 100) {
			sched_yield();
		} else {
			struct timespec ts = {0, 1000};
			nanosleep(&ts, NULL);
		}
	}
	return st == GMT_STATE_RUNNING;
}

bool
gmt_emit(struct gmt_event *ev)
{
	if (!ensure_running()) {
		if (atomic_load_explicit(&gmt_state, memory_order_relaxed) != GMT_STATE_DISABLED)
			atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return false;
	}
	if (!gmt_ring_push(&ring, ev)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return false;
	}
	return true;
}

/* Under LD_PRELOAD, have the driver call InitializeInjection at cuInit, so CUPTI also sees
 * programs with a static cudart, and starts only in processes that use CUDA. Never overwrite the
 * variable: Nsight and other tools inject the same way. */
static void
arm_injection(void)
{
	Dl_info self;
	const char *current = getenv("CUDA_INJECTION64_PATH");

	if (!dladdr((void *)&arm_injection, &self) || !self.dli_fname || !self.dli_fname[0])
		return;
	if (!current || !current[0]) {
		setenv("CUDA_INJECTION64_PATH", self.dli_fname, 0);
		return;
	}
	const char *base = strrchr(current, '/');
	if (strcmp(base ? base + 1 : current, "libgpumemtrace.so") != 0) {
		char shown[GMT_LOG_VALUE_MAX];
		gmt_warn("CUDA_INJECTION64_PATH is already set (%s): CUDA will not inject gpumemtrace; "
			 "programs with a static cudart are not traced",
			 gmt_log_value(shown, current));
	}
}

/* GPUMEMTRACE_ENABLE as the options will read it; before they are read (another copy of the
 * tracer may be the one to read and warn about them). */
static bool
enabled_by_env(void)
{
	const char *v = getenv(GMT_OPTION_PREFIX "ENABLE");
	bool on = true;

	return !v || !gmt_parse_bool(v, &on) || on;
}

__attribute__((constructor)) static void
gmt_init(void)
{
	start_ts = mono_ns();
	/* One tracer per process: a second copy of the library stays inert (one line says so),
	 * before it reads, warns about or acts on anything. */
	if (gmt_instance_defer(!enabled_by_env())) {
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	load_options();
	gmt_options_check_names(environ);
	if (opts.help)
		gmt_options_print_help(2, &opts);
	if (!opts.enable) {
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	gmt_pyhook_setup(&opts);
	if (opts.cupti)
		arm_injection();
}

__attribute__((destructor)) static void
gmt_fini(void)
{
	int expected = GMT_STATE_RUNNING;
	if (!atomic_compare_exchange_strong(&gmt_state, &expected, GMT_STATE_STOPPED))
		return;
	gmt_depth++; /* our own teardown is not traced */
	gmt_writer_stop(2000);
	gmt_depth--;
}

// --- public API (include/gpumemtrace.h) ----------------------------------------------------------
//
// Markers go through the ring like events: no allocation, no I/O, no lock on the caller's thread.

/*
 * This thread's open ranges (gmt_range_push() without its gmt_range_pop() yet). Only the count:
 * a pop is written with the depth it closes and the thread, and the reader pairs it with its
 * push. Labels are not kept here on purpose: this library has initial-exec TLS (gmt_depth), so
 * when the CUDA driver dlopen()s it (CUDA_INJECTION64_PATH) all of its TLS must fit in glibc's
 * static TLS surplus, a few hundred bytes.
 */
static __thread uint32_t range_depth;

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
emit_marker(const char *label, enum gmt_range range, uint32_t depth)
{
	struct gmt_event ev = {
	    .op = GMT_OP_MARKER,
	    .device = -1,
	    .range = (uint8_t)range,
	    .range_depth = depth,
	};

	if (!gmt_hook_enter())
		goto out;
	copy_label(ev.label, label);
	gmt_stamp(&ev);
	gmt_emit(&ev);
out:
	gmt_hook_leave();
}

void
gmt_api_mark(const char *label)
{
	emit_marker(label, GMT_RANGE_NONE, 0);
}

/* The depth is kept even while tracing is off (disabled, not started): a range opened then and
 * closed while tracing still pops at the right depth. */
void
gmt_api_range_push(const char *label)
{
	uint32_t depth = range_depth < UINT32_MAX ? range_depth + 1 : range_depth;

	range_depth = depth;
	emit_marker(label, GMT_RANGE_PUSH, depth);
}

void
gmt_api_range_pop(void)
{
	uint32_t depth = range_depth;

	/* A pop with no open range is the caller's bug: recorded as depth 0. */
	emit_marker(NULL, GMT_RANGE_POP, depth);
	if (depth)
		range_depth = depth - 1;
}

/* The exported names. In a copy of the tracer that defers to another one (instance.h) they go
 * to that copy, whose ranges and ring these are. */
GMT_EXPORT void
gmt_mark(const char *label)
{
	const struct gmt_instance *f = gmt_instance_forward();

	if (__builtin_expect(f != NULL, 0)) {
		if (f->mark)
			f->mark(label);
		return;
	}
	gmt_api_mark(label);
}

GMT_EXPORT void
gmt_range_push(const char *label)
{
	const struct gmt_instance *f = gmt_instance_forward();

	if (__builtin_expect(f != NULL, 0)) {
		if (f->range_push)
			f->range_push(label);
		return;
	}
	gmt_api_range_push(label);
}

GMT_EXPORT void
gmt_range_pop(void)
{
	const struct gmt_instance *f = gmt_instance_forward();

	if (__builtin_expect(f != NULL, 0)) {
		if (f->range_pop)
			f->range_pop();
		return;
	}
	gmt_api_range_pop();
}
