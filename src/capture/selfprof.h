/*
 * @brief The tracer timing itself (GPUMEMTRACE_SELF_PROFILE=FILE): the time spent in each part
 * of its work inside the application's calls, summed per part, written to FILE at exit as one
 * JSON object (bench/run_self_profile.py reads it, docs/performance.md). For the real driver,
 * where a query the simulated runtime answers in a function call is a driver call: it says where
 * the nanoseconds above the CUPTI floor go, in one run on the GPU host.
 *
 * Off (the default), each probe is one predicted branch on a flag read once. On, a probe reads
 * the time-stamp counter (x86-64; CLOCK_MONOTONIC elsewhere) and adds to the calling thread's own
 * slot of a static table: no allocation, no lock, no system call inside the application's call.
 * Threads past the table's size are not counted (said in the file). Parts nest (a callback's
 * total includes its inner parts); each part is inclusive of the probes inside it, whose own cost
 * the file gives as `probe_ns` per probe pair, measured at exit.
 */
#ifndef GMT_CAPTURE_SELFPROF_H
#define GMT_CAPTURE_SELFPROF_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__x86_64__)
#	include <x86intrin.h>
#endif

/* Each part: its name in the file. The callback parts are CUPTI's callback sites, whole. */
#define GMT_PROF_PARTS(X)                                                                          \
	X(CB_RUNTIME_ENTER, "cupti_runtime_enter")                                                 \
	X(CB_RUNTIME_EXIT, "cupti_runtime_exit")                                                   \
	X(CB_DRIVER_ENTER, "cupti_driver_enter")                                                   \
	X(CB_DRIVER_EXIT, "cupti_driver_exit")                                                     \
	X(CB_RESOURCE, "cupti_resource")                                                           \
	X(CONTEXT, "context_device")                                                               \
	X(PARAMS, "params")                                                                        \
	X(MEMINFO, "meminfo")                                                                      \
	X(STACK, "stack")                                                                          \
	X(STAMP, "stamp")                                                                          \
	X(EMIT, "emit")                                                                            \
	X(POOL, "pool_reading")                                                                    \
	X(TORCH_RECORD, "torch_record")                                                            \
	X(TORCH_STACK, "torch_stack")                                                              \
	X(WRAP_RECORD, "wrap_record")                                                              \
	X(DEVICE, "device_query")                                                                  \
	X(EXIT_PREP, "exit_prep")                                                                  \
	X(WRAP_ENTER, "wrap_enter")                                                                \
	X(STACK_PYTHON, "stack_python")                                                            \
	X(STACK_UNWIND, "stack_unwind")                                                            \
	X(STACK_INTERN, "stack_intern")

enum gmt_prof_part {
#define GMT_PROF_ENUM(id, name) GMT_PROF_##id,
	GMT_PROF_PARTS(GMT_PROF_ENUM)
#undef GMT_PROF_ENUM
	    GMT_PROF_COUNT
};

/** Set once at the tracer's setup (gmt_prof_setup()), before any probe can run. */
extern bool gmt_prof_on;

/** Read GPUMEMTRACE_SELF_PROFILE (the constructor). */
void gmt_prof_setup(const char *path);
/** Write the file (the destructor, after the writer stopped); nothing when off. */
void gmt_prof_write(void);

void gmt_prof_add_slow(enum gmt_prof_part part, uint64_t ticks);

static inline uint64_t
gmt_prof_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
#endif
}

/** The start of a part: 0 when off. */
static inline uint64_t
gmt_prof_begin(void)
{
	return __builtin_expect(gmt_prof_on, 0) ? gmt_prof_ticks() : 0;
}

/** The end of a part begun at @p t0. */
static inline void
gmt_prof_end(enum gmt_prof_part part, uint64_t t0)
{
	if (__builtin_expect(gmt_prof_on, 0))
		gmt_prof_add_slow(part, gmt_prof_ticks() - t0);
}

/*
 * The same where the caller read gmt_prof_on once (@p on): the paths every recorded call takes
 * are written once with `bool prof` and made twice, with the constant false (where each check
 * folds away: ~48 instructions an event on the CUPTI path) and true, the flag read where they
 * start.
 */
static inline uint64_t
gmt_prof_begin_if(bool on)
{
	return on ? gmt_prof_ticks() : 0;
}

static inline void
gmt_prof_end_if(bool on, enum gmt_prof_part part, uint64_t t0)
{
	if (on)
		gmt_prof_add_slow(part, gmt_prof_ticks() - t0);
}

#endif
