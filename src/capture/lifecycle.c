/*
 * @brief Tracer lifecycle: constructor, the start at the first event, fork, exit, and the wiring
 * of the writer thread (the one file of the capture side that knows the writer).
 *
 * The library is inherited by every child of a traced program (compilers, launchers, data-loader
 * workers), so the constructor only reads the options: no thread, no file, no CUDA. The first
 * event of a process (core.c) maps the ring and starts the writer here; a process that never
 * touches GPU memory leaves no trace file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "capture/api.h"
#include "capture/capture.h"
#include "capture/cupti.h"
#include "capture/dlclose.h"
#include "capture/pyhook.h"
#include "capture/runtimes.h"
#include "capture/selfprof.h"
#include "capture/stacks.h"
#include "gmt-config.h"
#if GMT_HAVE_PYSTACK
#	include "capture/pystack.h"
#endif
#include "ring/ring.h"
#include "util/clock.h"
#include "util/devices.h"
#include "util/log.h"
#include "util/options.h"
#include "writer/writer.h"

static void *ring_mem;
static size_t ring_mem_bytes;
static int forked_from;
static _Atomic int traced_pid; /* the process whose writer runs (a vfork child is not it) */
static uint64_t start_ts;      /* library load, or fork for a child */
static bool atfork_registered;

static const char *const capture_interpose[] = {"interpose", NULL};
static const char *const capture_cupti[] = {"cupti", NULL};

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

/* The writer stays after the trailer (writer.c, "the calls after it"), past this library's
 * destructor: the library must never be unmapped under it. RTLD_NODELETE keeps it loaded until
 * the process ends (a dlclose of a dlopen()ed tracer then unloads nothing; its destructor runs at
 * exit). Writer thread, at its start. */
static bool
pin_library(void)
{
	Dl_info self;

	if (!dladdr((void *)&pin_library, &self) || !self.dli_fname || !self.dli_fname[0])
		return false;
	return dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
}

static void
atfork_child(void)
{
	int st = atomic_load(&gmt_state);

	gmt_core_after_fork();
	if (st == GMT_STATE_RUNNING || st == GMT_STATE_STARTING) {
		/* The parent's writer thread is not in this process: start afresh, under our own
		 * pid, into our own file, at our first event. The parent's file stays the parent's.
		 */
		gmt_writer_forget_after_fork();
		/* the ring must start zero-filled (ring.h): take fresh pages at the next start */
		if (ring_mem) {
			munmap(ring_mem, ring_mem_bytes);
			ring_mem = NULL;
		}
		forked_from = (int)getppid();
		start_ts = gmt_clock_mono_ns();
		atomic_store(gmt_core_dropped(), 0);
		atomic_store(gmt_core_dropped_readings(), 0);
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

/* The header's "cuda": the runtimes in the process, newest first (runs on the writer thread). */
static size_t
cuda_runtimes(const char **out, size_t max)
{
	unsigned seen = gmt_cudart_seen();
	size_t n = 0;

	for (int rt = 0; rt < GMT_CUDART_COUNT && n < max; rt++)
		if (seen & (1u << rt))
			out[n++] = gmt_cudart_sonames[rt];
	return n;
}

void
gmt_tracer_start(void)
{
	const struct gmt_options *opts = gmt_tracer_options();
	struct gmt_ring *ring = gmt_core_ring();

	gmt_stacks_setup();
	size_t nslots = opts->ring_slots;

	if (!ring_mem) {
		ring_mem_bytes = gmt_ring_bytes(nslots);
		/* mmap, not malloc: we are inside the application's call and must not touch its
		 * heap */
		void *mem = mmap(NULL, ring_mem_bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem == MAP_FAILED) {
			gmt_warn("cannot map the event ring (%zu bytes): %s; this process runs on "
				 "untraced",
				 ring_mem_bytes, strerror(errno));
			atomic_store(&gmt_state, GMT_STATE_DISABLED);
			return;
		}
		ring_mem = mem;
	}
	gmt_ring_init(ring, ring_mem, nslots);

	if (!atfork_registered) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_registered = true;
	}

	/* Coverage is decided before the header is written: CUPTI is normally started by now (at
	 * cuInit or by the first interposed call); a marker before any CUDA call starts it here. */
	bool cupti = gmt_cupti_start(); /* decided already: one load */
	struct gmt_writer_config cfg = {
	    .opts = opts,
	    .ring = ring,
	    .dropped = gmt_core_dropped(),
	    .dropped_readings = gmt_core_dropped_readings(),
	    .forked_from = forked_from,
	    .start_ts = start_ts,
	    .coverage = cupti ? "full" : "runtime API only",
	    .coverage_reason = gmt_cupti_reason(),
	    .capture = cupti ? capture_cupti : capture_interpose,
	    .cuda_runtime = cuda_runtimes,
	    .cupti = gmt_cupti_opened,
	    .device_busid = gmt_device_busid,
	    .stacks_native = gmt_stacks_native(),
	    .stacks_depth = gmt_stacks_depth(),
	    .stacks_interpreter = gmt_stacks_interpreter(),
	    .stack_get = gmt_stack_get,
	    .pycode_next = python_code_next,
	    .pycode_get = python_code_get,
	    .python_version = python_version,
	    .on_failure = on_writer_failure,
	    .dlclose = gmt_real_dlclose,
	    .thread_init = writer_thread_init,
	    .tick = gmt_cupti_tick,
	    .pin = pin_library,
	    .private_file = gmt_options_secure(),
	};
	atomic_store(&traced_pid, (int)getpid());
	/* before the writer: a program may die of a signal right after its first calls */
	gmt_ends_signals();
	int rc = gmt_writer_start(&cfg);
	if (rc < 0) {
		gmt_warn("cannot start the trace writer thread: %s; this process runs on untraced",
			 strerror(-rc));
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	atomic_store_explicit(&gmt_state, GMT_STATE_RUNNING, memory_order_release);
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
	/* any copy of the tracer: libgpumemtrace.so, .so.0, .so.0.1.0 (installed, versioned) */
	if (strncmp(base ? base + 1 : current, "libgpumemtrace.so", 17) != 0) {
		char shown[GMT_LOG_VALUE_MAX];
		gmt_warn(
		    "CUDA_INJECTION64_PATH is already set (%s): CUDA will not inject gpumemtrace; "
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
	start_ts = gmt_clock_mono_ns();
	gmt_ends_setup(); /* whatever follows: the wrappers are there in every copy, any state */
	/* One tracer per process: a second copy of the library stays inert (one line says so),
	 * before it reads, warns about or acts on anything. */
	if (gmt_api_defer(!enabled_by_env())) {
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	const struct gmt_options *opts = gmt_tracer_options();
	gmt_options_check_names(environ);
	if (opts->help)
		gmt_options_print_help(2, opts);
	if (!opts->enable) {
		atomic_store(&gmt_state, GMT_STATE_DISABLED);
		return;
	}
	gmt_pyhook_setup(opts);
	gmt_prof_setup(opts->self_profile);
	if (opts->cupti)
		arm_injection();
}

/* The trace's end: everything written, then the trailer with @p reason. False when the tracer
 * was not running (or another end came first). */
static bool
end_trace(const char *reason)
{
	int expected = GMT_STATE_RUNNING;
	if (!atomic_compare_exchange_strong(&gmt_state, &expected, GMT_STATE_STOPPED))
		return false;
	gmt_depth++; /* our own teardown is not traced */
	/* as long as the writer works (a bounded trace's last bucket is written only now), at most
	 * 2 s without progress and 5 minutes in all */
	gmt_writer_stop(reason, 2000, 300000);
	gmt_prof_write();
	gmt_depth--;
	return true;
}

__attribute__((destructor)) static void
gmt_fini(void)
{
	end_trace("exit");
}

bool
gmt_tracer_end_on_signal(const char *name)
{
	if ((int)getpid() != atomic_load(&traced_pid))
		return false;
	int expected = GMT_STATE_RUNNING;
	if (!atomic_compare_exchange_strong(&gmt_state, &expected, GMT_STATE_STOPPED))
		return false;
	gmt_depth++;
	/* 500 ms without progress, 5 s in all: a scheduler's SIGKILL follows its SIGTERM after a
	 * grace period (SLURM, Kubernetes: 30 s by default) */
	bool done = gmt_writer_stop(name, 500, 5000);
	gmt_depth--;
	return done;
}

bool
gmt_tracer_bench_writer(bool run)
{
	return gmt_writer_bench_hold(!run);
}

bool
gmt_tracer_end_early(const char *reason)
{
	/* not from inside our own calls, and not in a vfork child: it shares this memory and this
	 * writer, which are its parent's (Python's subprocess execs from one) */
	if (gmt_depth != 0 || (int)getpid() != atomic_load(&traced_pid))
		return false;
	return end_trace(reason);
}

// --- dlclose ----------------------------------------------------------------------------------
//
// Before a library can be unloaded, the writer writes the stacks captured so far and a modules
// line that still lists it, so that frames in it stay resolvable offline (heaptrack and memray
// watch dlclose for the same reason). Exported as dlclose@@GLIBC_2.34 (the version script), the
// version programs built against glibc 2.34 or later call. The wait is bounded (100 ms) and only
// happens while the tracer runs with native stacks; it never happens inside a CUDA call.

GMT_EXPORT int
dlclose(void *handle)
{
	if (gmt_depth == 0 && gmt_stacks_native() &&
	    atomic_load_explicit(&gmt_state, memory_order_acquire) == GMT_STATE_RUNNING) {
		uint64_t ticket = gmt_writer_request_modules();
		for (int i = 0; i < 1000 && !gmt_writer_modules_done(ticket); i++) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	return gmt_real_dlclose(handle);
}
