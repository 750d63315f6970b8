/*
 * @brief Where the native unwind of PyTorch's allocator stacks spends its time (bench tool, not
 * part of the tracer): an allocator trace tracker of its own, attached through the bridge
 * (python/gpumemtrace/torch_bridge.cpp) in place of the tracer's gmt_torch_record, so that it
 * runs exactly where the tracer's stack capture runs, on the real deep stack.
 *
 * Per block allocation (the first PROBE_MAX): the time of libunwind's unw_backtrace (its fast
 * trace, or its slow DWARF walk of the whole stack when the fast trace gives up at a frame it
 * cannot describe) and of a plain unw_step loop (the slow walk). For the first JUMP_MAX, where
 * the cost jumps: unw_backtrace asked for k frames for k = 1, 2, ... (the fast trace stops at k,
 * so up to the frame it gives up at the cost grows by a few ns a frame, past it by the whole
 * slow walk); the frames around the jump are counted by module and symbol (dladdr() in the
 * report). libunwind does not export the fast trace alone. run_unwind_probe.py prints
 * gmt_probe_report()'s JSON.
 *
 * Inside the allocator's lock: nothing here allocates or takes a lock (static tables; dladdr()
 * of a stop frame is deferred to the report).
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/torch_entry.h"

#define PROBE_MAX 4096
#define MAX_FRAMES 256
#define STOPS 64
#define JUMP_MAX 128

struct sample {
	uint32_t frames, backtrace_ns, step_ns;
	int32_t jump; /* frames asked for where the cost jumped; -1 none */
};

static struct sample samples[PROBE_MAX];
static _Atomic uint32_t nsamples;
static struct {
	uintptr_t ip;
	uint32_t count, at;
} stops[STOPS];
static _Atomic uint64_t calls;

static uint64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void
count_stop(uintptr_t ip, uint32_t at)
{
	for (int i = 0; i < STOPS; i++) {
		if (stops[i].ip == ip) {
			stops[i].count++;
			return;
		}
		if (stops[i].ip == 0) {
			stops[i].ip = ip;
			stops[i].at = at;
			stops[i].count = 1;
			return;
		}
	}
}

__attribute__((visibility("default"))) int gmt_probe_record(const struct gmt_torch_entry *e);
__attribute__((visibility("default"))) int gmt_probe_report(char *out, int cap);
__attribute__((visibility("default"))) int gmt_probe_floor(const struct gmt_torch_entry *e);
__attribute__((visibility("default"))) int gmt_probe_floor_setup(void);
__attribute__((visibility("default"))) int gmt_probe_floor_stats(char *out, int cap);

/* The least time of 3 unw_backtrace()s asked for @p k frames. */
static uint64_t
cost(void **buf, int k)
{
	uint64_t best = UINT64_MAX;
	for (int r = 0; r < 3; r++) {
		uint64_t t0 = now_ns();
		unw_backtrace(buf, k);
		uint64_t t = now_ns() - t0;
		best = t < best ? t : best;
	}
	return best;
}

int
gmt_probe_record(const struct gmt_torch_entry *e)
{
	void *full[MAX_FRAMES], *buf[MAX_FRAMES];
	unw_context_t uc;
	unw_cursor_t cur;

	atomic_fetch_add(&calls, 1);
	if (!e || e->action != GMT_TORCH_ALLOC)
		return 0;
	uint32_t i = atomic_fetch_add(&nsamples, 1);
	if (i >= PROBE_MAX)
		return 0;
	struct sample *s = &samples[i];
	unw_backtrace(full, MAX_FRAMES); /* warm */
	uint64_t t0 = now_ns();
	int n = unw_backtrace(full, MAX_FRAMES);
	uint64_t t1 = now_ns();
	int ns = 0;
	unw_getcontext(&uc);
	if (unw_init_local(&cur, &uc) == 0)
		while (ns < MAX_FRAMES && unw_step(&cur) > 0)
			ns++;
	uint64_t t2 = now_ns();
	*s = (struct sample){.frames = (uint32_t)n,
			     .backtrace_ns = (uint32_t)(t1 - t0),
			     .step_ns = (uint32_t)(t2 - t1),
			     .jump = -1};
	if (i < JUMP_MAX) {
		uint64_t prev = cost(buf, 1);
		for (int k = 2; k <= n; k++) {
			uint64_t c = cost(buf, k);
			if (c > 2 * prev + 150) {
				s->jump = k;
				count_stop((uintptr_t)full[k - 1], (uint32_t)(k - 1));
				break;
			}
			prev = c;
		}
	}
	return 0;
}

/*
 * The native stack's floor for run_torch_block_ab.py's "unwind" state: per block allocation
 * (and OOM) what the tracer's native stacks cannot do without, libunwind's unw_backtrace asked
 * for exactly the frames up to the innermost frame of the interpreter's eval function (where
 * the tracer's native stack ends when it has the Python frames: src/capture/stacks.c), with
 * libunwind's per-thread cache as the tracer sets it; no Python walk, no interning, no event.
 * The frame count is learned per thread (a whole unwind when the eval frame is not where it
 * was), so this is below the tracer's own unwind, which asks a margin more.
 */
static uintptr_t eval_lo, eval_hi;
static _Atomic int floor_ready;
static __thread int floor_hint;
static _Atomic uint64_t floor_calls, floor_whole, floor_frames; /* what the floor did */

static void
floor_setup(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (fn && dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size &&
	    info.dli_saddr == fn) {
		eval_lo = (uintptr_t)fn;
		eval_hi = (uintptr_t)fn + sym->st_size;
	}
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	unw_set_cache_size(unw_local_addr_space, 1024, 0);
	atomic_store(&floor_ready, 1);
}

static int
eval_at(void *const *buf, int n)
{
	for (int i = 0; i < n; i++) {
		uintptr_t ip = (uintptr_t)buf[i];
		if (ip > eval_lo && ip <= eval_hi)
			return i;
	}
	return -1;
}

int
gmt_probe_floor(const struct gmt_torch_entry *e)
{
	void *buf[MAX_FRAMES];

	if (!e || (e->action != GMT_TORCH_ALLOC && e->action != GMT_TORCH_OOM))
		return 0;
	if (!atomic_load_explicit(&floor_ready, memory_order_acquire))
		return 0; /* gmt_probe_floor_setup() not called: no floor to measure */
	int hint = floor_hint;
	atomic_fetch_add_explicit(&floor_calls, 1, memory_order_relaxed);
	if (hint > 0) {
		int n = unw_backtrace(buf, hint + 1);
		if (n == hint + 1 && eval_at(buf + hint, 1) == 0) {
			atomic_fetch_add_explicit(&floor_frames, (uint64_t)n, memory_order_relaxed);
			return 0;
		}
	}
	int n = unw_backtrace(buf, MAX_FRAMES);
	int at = eval_lo ? eval_at(buf, n) : -1;
	floor_hint = at > 0 ? at : 0;
	atomic_fetch_add_explicit(&floor_whole, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&floor_frames, (uint64_t)n, memory_order_relaxed);
	return 0;
}

/* What the floor did: its unwinds, how many were whole (the eval frame not where it was, or
 * unknown), frames per unwind; whether the eval function is known. */
int
gmt_probe_floor_stats(char *out, int cap)
{
	uint64_t n = atomic_load(&floor_calls), whole = atomic_load(&floor_whole);
	return snprintf(out, (size_t)cap,
			"{\"unwinds\": %llu, \"whole\": %llu, \"frames_per_unwind\": %.1f, "
			"\"eval_known\": %s}",
			(unsigned long long)n, (unsigned long long)whole,
			n ? (double)atomic_load(&floor_frames) / (double)n : 0.0,
			eval_lo ? "true" : "false");
}

/* Before the floor is attached (outside the allocator's lock: dlsym, libunwind's settings). */
int
gmt_probe_floor_setup(void)
{
	floor_setup();
	return eval_lo != 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint32_t
median(uint32_t *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	return n ? v[n / 2] : 0;
}

/* JSON: counts, medians, the frames where the fast trace gave up. */
int
gmt_probe_report(char *out, int cap)
{
	uint32_t n = atomic_load(&nsamples);
	if (n > PROBE_MAX)
		n = PROBE_MAX;
	uint32_t *v = calloc(n ? n : 1, sizeof(*v)), jumped = 0,
		 probed = n < JUMP_MAX ? n : JUMP_MAX;
	uint32_t med[3];
	if (!v)
		return -1;
	for (int k = 0; k < 3; k++) {
		for (uint32_t i = 0; i < n; i++) {
			const struct sample *s = &samples[i];
			v[i] = k == 0 ? s->frames : k == 1 ? s->backtrace_ns : s->step_ns;
		}
		med[k] = median(v, n);
	}
	for (uint32_t i = 0; i < probed; i++)
		jumped += samples[i].jump >= 0;
	free(v);
	int len = snprintf(out, (size_t)cap,
			   "{\"calls\":%llu,\"allocations\":%u,\"frames\":%u,"
			   "\"unw_backtrace_ns\":%u,\"unw_step_loop_ns\":%u,\"searched\":%u,"
			   "\"cost_jumped\":%u,\"jump_at\":[",
			   (unsigned long long)atomic_load(&calls), n, med[0], med[1], med[2],
			   probed, jumped);
	for (int i = 0; i < STOPS && stops[i].ip && len < cap; i++) {
		Dl_info info = {0};
		dladdr((void *)(stops[i].ip - 1), &info);
		const char *mod = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
		len +=
		    snprintf(out + len, (size_t)(cap - len),
			     "%s{\"count\":%u,\"frame\":%u,\"module\":\"%s\",\"symbol\":\"%.120s\","
			     "\"offset\":\"0x%lx\"}",
			     i ? "," : "", stops[i].count, stops[i].at, mod ? mod + 1 : "?",
			     info.dli_sname ? info.dli_sname : "?",
			     (unsigned long)(stops[i].ip - (uintptr_t)info.dli_fbase));
	}
	if (len < cap)
		len += snprintf(out + len, (size_t)(cap - len), "]}");
	return len < cap ? len : -1;
}
