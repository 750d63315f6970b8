/*
 * @brief Stack capture and lock-free interning (see stacks.h).
 *
 * The table: open addressing over a fixed array of slots (mapped once), each slot claimed with a
 * compare-and-swap and published with a release store once its payload (frames, Python frames) is
 * copied into the arena (a bump allocator over one mapping). Nothing is ever removed. A thread that
 * meets a slot another thread is still writing waits for it (a few hundred nanoseconds: a memcpy),
 * so that one stack gets one id; only if the writer stays away for SPIN_LIMIT rounds (preempted)
 * does it move on, and then one stack gets two ids: a line more in the trace, never a wrong answer.
 * When the table or the arena is full, events carry stack 0 and the overflow is counted (trailer,
 * report).
 */
#define _GNU_SOURCE
#include "capture/stacks.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/capture.h"
#include "capture/selfprof.h"
#include "gmt-config.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/options.h"

#if GMT_HAVE_LIBUNWIND
#	define UNW_LOCAL_ONLY
#	include <libunwind.h> /* types and constants only: the library itself is loaded at run time */
#endif
#if GMT_HAVE_PYSTACK
#	include "capture/pystack.h"
#endif

#define TABLE_SLOTS (1u << 16)	/* distinct stacks per process */
#define ARENA_BYTES (64u << 20) /* their frames: ~64 KiB per 100 stacks of 64 frames */
#define MAX_NATIVE 256		/* frames unwound, tracer's own included */
#define MAX_PY 128
/* Frames unwound above the caller's, at most: ours, CUPTI's (callbacks), the bridge's and
 * c10's record_trace (the PyTorch layer). A stack whose kept frames the cap could have cut is
 * unwound again whole. */
#define TOP_MARGIN 32
#define SPIN_LIMIT (1u << 16) /* rounds waiting for a slot another thread writes */

enum { SLOT_EMPTY, SLOT_WRITING, SLOT_READY };

struct slot {
	_Atomic uint32_t state;
	uint32_t id;
	uint64_t hash;
	uint32_t offset; /* into the arena, 8-byte units */
	uint16_t nframes, npy;
	uint8_t pystate;
};

static struct {
	bool native, python;
	unsigned depth;
	struct slot *slots;
	uint64_t *arena;
	_Atomic uint32_t arena_used; /* 8-byte units */
	_Atomic uint32_t next_id;
	_Atomic(struct slot *) by_id[TABLE_SLOTS + 1];
	_Atomic uint64_t overflow;
	uintptr_t self_lo, self_hi; /* our own code: never part of a stack */
	_Atomic bool ready;
	_Atomic bool off; /* set up, with stacks off: capture returns at once */
	bool interpreter; /* GPUMEMTRACE_INTERPRETER_FRAMES: unwind past the eval function */
	int (*backtrace)(void **buf, int size); /* libunwind's unw_backtrace */
} st;

_Atomic bool gmt_stacks_none;

/* Where this thread's innermost eval-function frame was in the last unwind that met one (raw
 * position): the next unwind of a Python thread asks for that many frames and eval_margin more
 * (0: MARGIN_START). The margin adapts to how much that position varies on this thread: an
 * unwind that had to start again whole (the frame lay deeper) widens it to cover that depth
 * and MARGIN_SLACK more; MARGIN_CALM unwinds in a row that unwound frames past the eval frame
 * narrow it by one, down to 1 on a thread whose allocations come from one depth. Each frame
 * past the eval frame costs an unwind step for nothing (6-13 ns, docs/performance.md). */
static __thread uint16_t eval_hint __attribute__((tls_model("initial-exec")));
static __thread uint8_t eval_margin __attribute__((tls_model("initial-exec")));
static __thread uint8_t eval_calm __attribute__((tls_model("initial-exec")));
#define MARGIN_START 8
#define MARGIN_SLACK 4
#define MARGIN_MAX 32
#define MARGIN_CALM 64

// --- setup
// -----------------------------------------------------------------------------------------

struct range_query {
	uintptr_t addr, lo, hi;
};

/* The executable segments' span of the object containing q->addr. */
static int
find_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct range_query *q = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	bool mine = false;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (q->addr >= a && q->addr < b)
			mine = true;
		if (ph->p_flags & PF_X) {
			lo = a < lo ? a : lo;
			hi = b > hi ? b : hi;
		}
	}
	if (!mine)
		return 0;
	q->lo = lo;
	q->hi = hi;
	return 1;
}

static void
code_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	struct range_query q = {.addr = (uintptr_t)addr};
	*lo = *hi = 0;
	if (dl_iterate_phdr(find_range, &q)) {
		*lo = q.lo;
		*hi = q.hi;
	}
}

static void *
map_zeroed(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * libunwind is opened RTLD_LOCAL at run time rather than linked: a missing library then costs the
 * native stacks, not the whole preload, and its exported backtrace() (it defines one) never
 * replaces glibc's in the application. The copy in the loader path first, then one next to us.
 */
static bool
load_unwinder(void)
{
#if GMT_HAVE_LIBUNWIND
	Dl_info self;
	char path[4096];
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	if (!h && dladdr((void *)&load_unwinder, &self) && self.dli_fname) {
		const char *slash = strrchr(self.dli_fname, '/');
		int dir = slash ? (int)(slash - self.dli_fname) : 0;
		snprintf(path, sizeof(path), "%.*s%slibunwind.so.8", dir, self.dli_fname,
			 slash ? "/" : "");
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h)
		return false;
	__typeof__(&unw_set_caching_policy) policy = dlsym(h, "_ULx86_64_set_caching_policy");
	__typeof__(&unw_set_cache_size) cache_size = dlsym(h, "_ULx86_64_set_cache_size");
	unw_addr_space_t *space = dlsym(h, "_ULx86_64_local_addr_space");
	*(void **)&st.backtrace = dlsym(h, "unw_backtrace");
	if (!st.backtrace)
		return false;
	if (policy && space)
		policy(*space, UNW_CACHE_PER_THREAD);
	if (cache_size && space)
		cache_size(*space, 1024, 0);
	return true;
#else
	return false;
#endif
}

void
gmt_stacks_setup(void)
{
	static _Atomic int once;
	const struct gmt_options *opts = gmt_tracer_options();
	int expected = 0;

	if (!atomic_compare_exchange_strong(&once, &expected, 1))
		return;
	const char *mode = opts->stacks;
	if (strcmp(mode, "all") && strcmp(mode, "native") && strcmp(mode, "python") &&
	    strcmp(mode, "none")) {
		char shown[GMT_LOG_VALUE_MAX];
		gmt_warn(GMT_OPTION_PREFIX "STACKS: invalid value %s (expected all, native, "
					   "python or none); using all",
			 gmt_log_value(shown, mode));
		mode = "all";
	}
	st.native = !strcmp(mode, "all") || !strcmp(mode, "native");
	st.python = !strcmp(mode, "all") || !strcmp(mode, "python");
	st.depth = (unsigned)opts->stack_depth;
	st.interpreter = opts->interpreter_frames;
#if !GMT_HAVE_LIBUNWIND
	st.native = false;
#endif
#if !GMT_HAVE_PYSTACK
	st.python = false;
#endif
	if (!st.native && !st.python) {
		atomic_store_explicit(&st.off, true, memory_order_relaxed);
		atomic_store_explicit(&gmt_stacks_none, true, memory_order_relaxed);
		return;
	}
	st.slots = map_zeroed(TABLE_SLOTS * sizeof(struct slot));
	st.arena = map_zeroed(ARENA_BYTES);
	if (!st.slots || !st.arena) {
		gmt_warn("cannot map the stack table; events are recorded without stacks");
		st.native = st.python = false;
		atomic_store_explicit(&st.off, true, memory_order_relaxed);
		atomic_store_explicit(&gmt_stacks_none, true, memory_order_relaxed);
		return;
	}
	code_range((const void *)&gmt_stacks_setup, &st.self_lo, &st.self_hi);
	if (st.native && !load_unwinder()) {
		gmt_warn(
		    "libunwind.so.8 cannot be loaded: events are recorded without native stacks");
		st.native = false;
	}
	atomic_store_explicit(&st.ready, true, memory_order_release);
}

bool
gmt_stacks_native(void)
{
	return st.native;
}

bool
gmt_stacks_python(void)
{
	return st.python;
}

unsigned
gmt_stacks_depth(void)
{
	return st.depth;
}

bool
gmt_stacks_interpreter(void)
{
	return st.native && (st.interpreter || !st.python);
}

int
gmt_stacks_watch_python(void)
{
#if GMT_HAVE_PYSTACK
	if (!gmt_tracer_options()->enable)
		return -1;
	gmt_stacks_setup(); /* usually still to come: at the first CUDA call */
	return st.python ? gmt_py_watch_code() : -1;
#else
	return -1;
#endif
}

uint64_t
gmt_stacks_overflow(void)
{
	return atomic_load_explicit(&st.overflow, memory_order_relaxed);
}

// --- capture
// ---------------------------------------------------------------------------------------

/* The range of the library whose frames are CUDA machinery above the caller (libcupti for
 * callbacks), found once. */
static void
skip_range(const void *lib, uintptr_t *lo, uintptr_t *hi)
{
	static _Atomic uintptr_t cached_lo, cached_hi;
	static const void *_Atomic cached_for;

	if (atomic_load_explicit(&cached_for, memory_order_acquire) != lib) {
		uintptr_t a, b;
		code_range(lib, &a, &b);
		atomic_store_explicit(&cached_lo, a, memory_order_relaxed);
		atomic_store_explicit(&cached_hi, b, memory_order_relaxed);
		atomic_store_explicit(&cached_for, lib, memory_order_release);
	}
	*lo = atomic_load_explicit(&cached_lo, memory_order_relaxed);
	*hi = atomic_load_explicit(&cached_hi, memory_order_relaxed);
}

/* How many frames at the top of @p buf are ours (and the skipped library's). */
static int
top_frames(void *const *buf, int n, const void *skip_lib)
{
	uintptr_t lo = 0, hi = 0;
	int first = 0;

	if (skip_lib)
		skip_range(skip_lib, &lo, &hi);
	while (first < n) {
		uintptr_t ip = (uintptr_t)buf[first];
		bool ours = ip >= st.self_lo && ip < st.self_hi;
		bool skipped = skip_lib && ip >= lo && ip < hi;
		if (!ours && !skipped)
			break;
		first++;
	}
	return first;
}

/* The code range of the interpreter's eval function, when Python stacks are on and it is known. */
static bool
eval_range(uintptr_t *lo, uintptr_t *hi)
{
#if GMT_HAVE_PYSTACK
	return gmt_py_eval_range(lo, hi);
#else
	(void)lo;
	(void)hi;
	return false;
#endif
}

/* The first frame at or after @p from that lies in the eval function, or -1. */
static int
find_eval(void *const *buf, int from, int n, uintptr_t lo, uintptr_t hi)
{
	for (int i = from; i < n; i++) {
		uintptr_t ip = (uintptr_t)buf[i];
		if (ip > lo && ip <= hi) /* a return address: the call is just before it */
			return i;
	}
	return -1;
}

/*
 * Unwind, drop the frames at the top that are ours (and the skipped library's), keep at most
 * st.depth. Unwinding costs per frame (6 ns on libunwind's fast trace, tens of ns when it falls
 * back to its DWARF walk: docs/performance.md), so it asks libunwind for no more frames than can
 * be kept: the depth plus TOP_MARGIN, again in full only when the
 * top took more than the margin. @p python: the thread's Python frames were captured; then the
 * native stack ends at the innermost frame of the interpreter's eval function (kept: the
 * analysis puts the Python frames there, docs/trace-format.md), because the Python frames stand
 * for the interpreter's own frames below it, which are often most of a deep stack. The frames
 * libunwind is asked for then start at where that frame was last time.
 */
static int
native_frames(uint64_t *out, const void *skip_lib, bool python)
{
#if GMT_HAVE_LIBUNWIND
	void *buf[MAX_NATIVE];
	int cap = (int)st.depth + TOP_MARGIN, n, first, ev, k = 0, end;
	uintptr_t lo = 0, hi = 0;
	bool cut = python && !st.interpreter && eval_range(&lo, &hi);

	if (cap > MAX_NATIVE)
		cap = MAX_NATIVE;
	int margin = eval_margin ? eval_margin : MARGIN_START, hint = eval_hint;
	bool hinted = cut && hint && hint + margin < cap, again = false;
	int ask = hinted ? hint + margin : cap, first_ask = ask;
	for (;;) {
		uint64_t t0 = gmt_prof_begin();
		n = st.backtrace(buf, ask);
		gmt_prof_end(GMT_PROF_STACK_UNWIND, t0);
		first = top_frames(buf, n, skip_lib);
		ev = cut ? find_eval(buf, first, n, lo, hi) : -1;
		if (ev >= 0 || n < ask || n - first >= (int)st.depth || ask >= MAX_NATIVE)
			break; /* the eval frame, the whole stack, or all that can be kept */
		ask = ask < cap ? cap : MAX_NATIVE;
		again = true;
	}
	if (hinted && ev >= 0) {
		if (again) { /* deeper than the margin covered */
			int need = ev - hint + 1 + MARGIN_SLACK;
			margin = need > margin ? need : margin;
			eval_margin = (uint8_t)(margin < MARGIN_MAX ? margin : MARGIN_MAX);
			eval_calm = 0;
		} else if (ev < first_ask - 1 && margin > 1 && ++eval_calm >= MARGIN_CALM) {
			eval_margin = (uint8_t)(margin - 1);
			eval_calm = 0;
		}
	}
	if (ev >= 0 && ev < UINT16_MAX)
		eval_hint = (uint16_t)ev;
	end = ev >= 0 ? ev + 1 : n;
	for (int i = first; i < end && k < (int)st.depth; i++)
		out[k++] = (uint64_t)(uintptr_t)buf[i];
	return k;
#else
	(void)out;
	(void)skip_lib;
	(void)python;
	return 0;
#endif
}

static int
python_frames(struct gmt_stack_py *out, uint8_t *pystate)
{
	*pystate = GMT_PYSTATE_UNKNOWN;
#if GMT_HAVE_PYSTACK
	struct gmt_pyframe frames[MAX_PY];
	int n = gmt_py_walk(frames, MAX_PY);

	if (n == GMT_PY_NO_THREAD)
		*pystate = GMT_PYSTATE_NONE;
	if (n < 0)
		return 0; /* or GMT_PY_UNAVAILABLE: not Python (yet), or a refused version */
	if (n == 0)
		*pystate = GMT_PYSTATE_EMPTY;
	for (int i = 0; i < n; i++)
		out[i] = (struct gmt_stack_py){
		    .code_id = frames[i].code_id,
		    .offset_entry = frames[i].instr_offset << 1 | (frames[i].entry ? 1u : 0u),
		};
	return n;
#else
	(void)out;
	return 0;
#endif
}

/*
 * The table's hash of a stack. Each frame is multiplied on its own (its position folded in) and
 * the products summed: no chain from frame to frame, so the multiplies of a deep stack overlap
 * (a splitmix64 round per frame chained them: ~12 cycles a frame, most of the capture's own time
 * on a 60-frame stack, docs/performance.md); the final gmt_mix64() spreads the sum. A collision
 * costs a comparison (same_stack()), never a wrong id.
 */
static uint64_t
stack_hash(
    const uint64_t *frames, int nframes, const struct gmt_stack_py *py, int npy, uint8_t pystate)
{
	uint64_t h = ((uint64_t)nframes << 32) ^ ((uint64_t)npy << 8) ^ pystate;
	uint64_t pos = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < nframes; i++, pos += 0x9e3779b97f4a7c15ull)
		h += (frames[i] ^ pos) * 0xbf58476d1ce4e5b9ull;
	for (int i = 0; i < npy; i++, pos += 0x9e3779b97f4a7c15ull)
		h += (((uint64_t)py[i].code_id << 32 | py[i].offset_entry) ^ pos) *
		     0x94d049bb133111ebull;
	h = gmt_mix64(h);
	return h ? h : 1;
}

static bool
same_stack(const struct slot *s,
	   const uint64_t *frames,
	   int nframes,
	   const struct gmt_stack_py *py,
	   int npy,
	   uint8_t pystate)
{
	if (s->nframes != nframes || s->npy != npy || s->pystate != pystate)
		return false;
	const uint64_t *a = st.arena + s->offset;
	return !memcmp(a, frames, (size_t)nframes * sizeof(*frames)) &&
	       !memcmp(a + nframes, py, (size_t)npy * sizeof(*py));
}

/* Claim arena room for the payload; false when the arena is full. */
static bool
store_payload(
    struct slot *s, const uint64_t *frames, int nframes, const struct gmt_stack_py *py, int npy)
{
	uint32_t units = (uint32_t)nframes + (uint32_t)(npy * sizeof(*py) + 7) / 8;
	uint32_t at = atomic_fetch_add_explicit(&st.arena_used, units, memory_order_relaxed);
	if ((uint64_t)at + units > ARENA_BYTES / 8)
		return false;
	memcpy(st.arena + at, frames, (size_t)nframes * sizeof(*frames));
	memcpy(st.arena + at + nframes, py, (size_t)npy * sizeof(*py));
	s->offset = at;
	return true;
}

/* Mark a claimed slot finished. A slot whose payload did not fit matches nothing (hash 0). */
static void
publish(struct slot *s)
{
	atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
}

/* The slot's state once no other thread is writing it, or SLOT_WRITING after SPIN_LIMIT rounds. */
static uint32_t
settled_state(struct slot *s)
{
	uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
	for (uint32_t spin = 0; state == SLOT_WRITING && spin < SPIN_LIMIT; spin++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		state = atomic_load_explicit(&s->state, memory_order_acquire);
	}
	return state;
}

static uint32_t
intern(const uint64_t *frames, int nframes, const struct gmt_stack_py *py, int npy, uint8_t pystate)
{
	uint64_t h = stack_hash(frames, nframes, py, npy, pystate);

	for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
		struct slot *s = &st.slots[(h + i) & (TABLE_SLOTS - 1)];
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if (state == SLOT_EMPTY) {
			uint32_t expected = SLOT_EMPTY;
			if (atomic_compare_exchange_strong(&s->state, &expected, SLOT_WRITING)) {
				s->hash = h;
				s->nframes = (uint16_t)nframes;
				s->npy = (uint16_t)npy;
				s->pystate = pystate;
				uint32_t id = 0;
				if (store_payload(s, frames, nframes, py, npy))
					id = atomic_fetch_add_explicit(&st.next_id, 1,
								       memory_order_relaxed) +
					     1;
				if (id == 0 || id > TABLE_SLOTS) {
					s->nframes = s->npy = 0;
					s->hash = 0;
					publish(s);
					break;
				}
				s->id = id;
				publish(s);
				atomic_store_explicit(&st.by_id[id], s, memory_order_release);
				return id;
			}
			state = expected; /* another thread claimed it first */
		}
		if (state == SLOT_WRITING)
			state = settled_state(s);
		if (state == SLOT_READY && s->hash == h &&
		    same_stack(s, frames, nframes, py, npy, pystate))
			return s->id;
	}
	atomic_fetch_add_explicit(&st.overflow, 1, memory_order_relaxed);
	return 0;
}

/* The capture itself: its frames' arrays are kilobytes of stack, which the compiler probes page
 * by page on entry (-fstack-clash-protection); gmt_stack_capture() comes here only with stacks
 * on, so a process with GPUMEMTRACE_STACKS=none does not pay that at each allocation. */
static __attribute__((noinline)) uint32_t
capture(const void *skip_lib)
{
	uint64_t frames[MAX_NATIVE];
	struct gmt_stack_py py[MAX_PY];
	int nframes = 0, npy = 0;
	uint8_t pystate = GMT_PYSTATE_UNKNOWN;

	uint64_t t0 = gmt_prof_begin();
	if (st.python)
		npy = python_frames(py, &pystate);
	gmt_prof_end(GMT_PROF_STACK_PYTHON, t0);
	if (st.native)
		nframes = native_frames(frames, skip_lib, npy > 0);
	if (nframes == 0 && npy == 0 && pystate == GMT_PYSTATE_UNKNOWN)
		return 0;
	t0 = gmt_prof_begin();
	uint32_t id = intern(frames, nframes, py, npy, pystate);
	gmt_prof_end(GMT_PROF_STACK_INTERN, t0);
	return id;
}

uint32_t
gmt_stack_capture(const void *skip_lib)
{
	if (!atomic_load_explicit(&st.ready, memory_order_acquire)) {
		if (atomic_load_explicit(&st.off, memory_order_relaxed))
			return 0;   /* not a second setup per event (it takes a compare-and-swap) */
		gmt_stacks_setup(); /* the process's first event comes before the tracer starts */
		if (!atomic_load_explicit(&st.ready, memory_order_acquire))
			return 0;
	}
	if (!st.python && !st.native)
		return 0;
	return capture(skip_lib);
}

bool
gmt_stack_get(uint32_t id, struct gmt_stack_view *out)
{
	if (id == 0 || id > TABLE_SLOTS)
		return false;
	struct slot *s = atomic_load_explicit(&st.by_id[id], memory_order_acquire);
	if (!s || atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
		return false;
	const uint64_t *a = st.arena + s->offset;
	*out = (struct gmt_stack_view){
	    .id = id,
	    .nframes = s->nframes,
	    .npy = s->npy,
	    .pystate = s->pystate,
	    .frames = a,
	    .py = (const struct gmt_stack_py *)(a + s->nframes),
	};
	return true;
}
