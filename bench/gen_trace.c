/*
 * @brief Benchmark input: writes a large, valid, realistic trace (docs/trace-format.md, version 1)
 * for timing the analyzer (bench/run_report_throughput.py). No CUDA, no tracer: a generator.
 *
 *   gen_trace [--events N] [--seed S] [--live N] [--stacks N] [--threads T]
 *             [--depth D] [--distinct] [--frame-pool P] [--rank R --world-size W]
 *             [--start-unix-ns T] [--tick-ns N] [--size-percent P] [--fail-every N]
 *             [--fail-at SEQ] [--kill-at SEQ] -o FILE
 *
 * The trace looks like a PyTorch process traced through CUPTI: a header, a modules line, pycode
 * lines, --stacks distinct stacks (native frames of the CUDA libraries, PyTorch and the
 * interpreter, with Python frames of a training script and of torch's modules), then N event and
 * marker lines (the trailer's `events`) from T threads:
 *
 * - alloc/free pairs of three kinds: device (cudaMalloc/cudaFree), pool (cudaMallocAsync, with
 *   pool_reserve `usage` readings whenever the pool's reservation changes) and pinned
 *   (cudaHostAlloc). Each thread frees what it allocated, mostly the newest first (temporaries),
 *   sometimes an older one. At most --live allocations are live at once (the live set hovers
 *   between half and all of it), so an analyzer's memory should depend on --live and --stacks,
 *   never on N;
 * - addresses are reused: a freed address goes back on a free list and the next allocation of
 *   that kind usually takes it (as caching allocators and the driver do);
 * - a failed cudaMalloc (result 2, free_bytes/total_bytes) every ~50000 events;
 * - a marker every --marker-every events (the main thread), a snapshot with live totals and an
 *   NVML reading every --snapshot-every events;
 * - lines in drain order, not seq order: the true order (seq) is cut into blocks of 1 to 4096
 *   events, and each block is written thread by thread (each thread's lines in seq order), the
 *   way the writer drains per-thread runs. The disorder is bounded by the block size;
 * - some allocations are still live at the end (leaks), and the trailer closes the file.
 *
 * --depth D gives every stack exactly D native frames (the extra ones in libtorch_cuda, the deep
 * C++ middle of a real stack; a large D is a deep recursion) instead of about 20, and --distinct
 * gives each allocation the next stack id in turn instead of the skewed draw, so a trace of at
 * least 2 x --stacks events names every stack: the input for an analyzer's memory per distinct
 * stack (bench/run_stack_memory.py). --frame-pool P draws each module's frames from P return
 * addresses, as a real program's stacks share their code; without it nearly every frame of
 * every stack is an address of its own.
 *
 * The ranks of a job (bench/run_ranks.py): --rank R --world-size W give the header a rank
 * (local rank R % 8, host "nodeR/8", pid 10000 + R), --start-unix-ns its wall clock, --tick-ns
 * the time between events (default 1297 ns), --size-percent scales every size (a rank that peaks
 * higher), --fail-every N a failed cudaMalloc every ~N events (0: none; default 50000),
 * --fail-at SEQ one at event SEQ (a rank that fails first), --kill-at SEQ ends the file at event
 * SEQ in the middle of a line, without a trailer (a rank killed mid-run).
 *
 * Module paths are under /nonexistent/gmt-bench/, so a symbolizer finds no file (the cost measured
 * is the reader's and the replay's, not DWARF's). The output is a function of the options only:
 * the same seed gives the same bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64
#define MAX_BLOCK 4096		  /* the most events of one drain block */
#define SLOT_BYTES (256ULL << 20) /* address stride: sizes stay below it, so nothing overlaps */
#define PY_LINES 64		  /* lines of each code object's line table */
#define N_PYCODES 48
#define START_TS 183245000000ULL
#define TOTAL_BYTES 150754820096ULL /* an H200 as NVML reads it */
#define POOL_HANDLE 0x55d0c3a0ULL
#define POOL_GRAIN (32ULL << 20) /* the pool reserves in steps of this */
#define FAIL_EVERY 50000

enum kind {
	K_DEVICE,
	K_POOL,
	K_PINNED,
	N_KINDS,
};

static const char *const kind_name[N_KINDS] = {"device", "pool", "pinned"};
static const char *const alloc_api[N_KINDS][2] = {
    {"cudaMalloc", "cuMemAlloc_v2"},
    {"cudaMallocAsync", "cuMemAllocAsync"},
    {"cudaHostAlloc", "cuMemHostAlloc"},
};
static const char *const free_api[N_KINDS][2] = {
    {"cudaFree", "cuMemFree_v2"},
    {"cudaFreeAsync", "cuMemFreeAsync"},
    {"cudaFreeHost", "cuMemFreeHost"},
};
/* each kind's addresses: SLOT_BYTES apart, so up to 65536 live allocations never overlap */
static const uint64_t kind_base[N_KINDS] = {0x600000000000ULL, 0x500000000000ULL,
					    0x200000000000ULL};

struct options {
	uint64_t events;
	uint64_t seed;
	uint32_t live;
	uint32_t stacks;
	uint32_t threads;
	uint32_t depth;	     /* native frames per stack; 0: the realistic mix (about 20) */
	bool distinct;	     /* stack ids in turn, not the skewed draw */
	uint32_t frame_pool; /* return addresses per module; 0: a new one for most frames */
	uint64_t marker_every;
	uint64_t snapshot_every;
	const char *out;
	long long rank, world_size; /* -1: "rank": null */
	uint64_t start_unix_ns;
	uint64_t size_percent;
	uint64_t fail_every; /* 0: no failures drawn */
	uint64_t fail_at;    /* 0: none; else a failure at this event */
	uint64_t kill_at;    /* 0: the file ends with its trailer */
};

/* --tick-ns: the time between two events */
static uint64_t tick_ns = 1297;

/* One line of the true order, waiting in the drain block. */
struct rec {
	uint64_t seq;
	uint64_t size;
	uint64_t ptr;
	uint32_t thread;
	uint32_t stack;
	uint8_t type; /* 'a' alloc, 'f' free, 'u' usage, 'x' failed alloc, 'm' marker */
	uint8_t kind;
};

/* A live allocation: its slot index is its address. */
struct alloc {
	uint64_t size;
	uint32_t stack;
	uint8_t kind;
};

struct thread {
	int tid;
	uint32_t *live; /* slot indices, oldest first */
	uint32_t nlive;
};

struct kind_slots {
	uint32_t *free; /* a LIFO of freed slots: the newest freed address is reused first */
	uint32_t nfree;
	uint32_t next; /* slots never used yet start here */
};

struct gen {
	struct options o;
	uint64_t rng;
	FILE *f;
	char *buf; /* the line being built */
	size_t len;
	struct thread th[MAX_THREADS];
	struct kind_slots slots[N_KINDS];
	struct alloc *allocs[N_KINDS]; /* by slot */
	uint32_t nlive;
	uint64_t pool_live, pool_reserve;
	uint64_t seq;
	struct rec block[MAX_BLOCK];
	uint32_t nblock, block_goal;
	bool *stack_written;
	uint32_t next_stack; /* --distinct: the last stack id given */
	bool pycode_written[N_PYCODES];
	/* the writer's view: totals of what was written so far (drain order) */
	uint64_t written, written_since_snapshot, max_seq_written;
	uint64_t w_bytes[N_KINDS], w_allocs[N_KINDS];
};

// --- random numbers and output ---------------------------------------------------------------

static uint64_t
rnd(struct gen *g)
{
	/* splitmix64: fast, and the same sequence on every machine */
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t
below(struct gen *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

static void
put(struct gen *g, const char *s)
{
	size_t n = strlen(s);
	memcpy(g->buf + g->len, s, n);
	g->len += n;
}

static void
put_u64(struct gen *g, uint64_t v)
{
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i)
		g->buf[g->len++] = tmp[--i];
}

static void
put_hex(struct gen *g, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int i = 0;
	do {
		tmp[i++] = digits[v & 15];
		v >>= 4;
	} while (v);
	g->buf[g->len++] = '"';
	g->buf[g->len++] = '0';
	g->buf[g->len++] = 'x';
	while (i)
		g->buf[g->len++] = tmp[--i];
	g->buf[g->len++] = '"';
}

/* Writes the line built in g->buf (the caller's text must end in "}\n"). */
static void
flush_line(struct gen *g)
{
	if (fwrite(g->buf, 1, g->len, g->f) != g->len) {
		fprintf(stderr, "gen_trace: write %s: %s\n", g->o.out, strerror(errno));
		exit(1);
	}
	g->len = 0;
}

// --- the fixed lines: header, modules, pycode, stacks ----------------------------------------

struct module {
	const char *path;
	uint64_t base;
	uint64_t size;
};

/* The process's modules; frames are drawn from them, innermost first in this order. */
static const struct module modules[] = {
    {"/nonexistent/gmt-bench/lib/libcudart.so.13", 0x7f1100000000ULL, 0x9a000},
    {"/nonexistent/gmt-bench/lib/libcuda.so.1", 0x7f1200000000ULL, 0x3400000},
    {"/nonexistent/gmt-bench/torch/lib/libc10_cuda.so", 0x7f1300000000ULL, 0x120000},
    {"/nonexistent/gmt-bench/torch/lib/libtorch_cuda.so", 0x7f1400000000ULL, 0x40000000},
    {"/nonexistent/gmt-bench/torch/lib/libtorch_python.so", 0x7f1500000000ULL, 0x2000000},
    {"/nonexistent/gmt-bench/bin/python3.12", 0x555555554000ULL, 0x700000},
    {"/nonexistent/gmt-bench/lib/libc.so.6", 0x7f1600000000ULL, 0x1c0000},
};
#define N_MODULES (sizeof(modules) / sizeof(modules[0]))
#define MOD_PYTHON 5

static const char *const py_files[] = {
    "/home/user/project/train.py",
    "/home/user/project/model.py",
    "/home/user/project/data.py",
    "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
    "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py",
    "/usr/lib/python3/dist-packages/torch/nn/functional.py",
    "/usr/lib/python3/dist-packages/torch/optim/adamw.py",
    "/usr/lib/python3/dist-packages/torch/_tensor.py",
};
#define N_PY_FILES (sizeof(py_files) / sizeof(py_files[0]))

static void
write_header(struct gen *g)
{
	if (g->o.rank < 0) {
		put(g, "{\"type\":\"header\",\"format\":\"gpumemtrace\",\"version\":1,"
		       "\"tracer\":\"0.2.0\",\"pid\":4242,\"ppid\":4200,\"host\":\"bench\",");
	} else {
		put(g, "{\"type\":\"header\",\"format\":\"gpumemtrace\",\"version\":1,"
		       "\"tracer\":\"0.2.0\",\"pid\":");
		put_u64(g, 10000 + (uint64_t)g->o.rank);
		put(g, ",\"ppid\":4200,\"host\":\"node");
		put_u64(g, (uint64_t)g->o.rank / 8);
		put(g, "\",");
	}
	put(g, "\"argv\":[\"python3\",\"train.py\"],\"start_ts\":");
	put_u64(g, START_TS);
	put(g, ",\"start_unix_ns\":");
	put_u64(g, g->o.start_unix_ns);
	if (g->o.rank < 0) {
		put(g, ",\"rank\":null");
	} else {
		put(g, ",\"rank\":{\"rank\":");
		put_u64(g, (uint64_t)g->o.rank);
		put(g, ",\"local_rank\":");
		put_u64(g, (uint64_t)g->o.rank % 8);
		put(g, ",\"world_size\":");
		put_u64(g, (uint64_t)g->o.world_size);
		put(g, "}");
	}
	put(g, ",\"forked_from\":null,"
	       "\"coverage\":\"full\",\"coverage_reason\":null,\"capture\":[\"cupti\"],"
	       "\"options\":{\"ring_slots\":65536,\"flush_ms\":100,\"snapshot_ms\":1000},"
	       "\"stacks\":{\"native\":true,\"python\":\"3.12\",\"depth\":64}}\n");
	flush_line(g);
	put(g, "{\"type\":\"modules\",\"seq\":0,\"modules\":[");
	for (size_t i = 0; i < N_MODULES; i++) {
		put(g, i ? ",{\"path\":\"" : "{\"path\":\"");
		put(g, modules[i].path);
		put(g, "\",\"base\":");
		put_hex(g, modules[i].base);
		put(g, ",\"build_id\":\"\",\"segments\":[[0,");
		put_u64(g, modules[i].size);
		put(g, "]]}");
	}
	put(g, "]}\n");
	flush_line(g);
}

/*
 * A code object of PY_LINES lines whose line table (3.12, PEP 657) gives line firstlineno + k to
 * the 16 bytes of code from offset 16k: entries of code 13 ("no columns"), 8 code units each.
 */
static void
write_pycode(struct gen *g, uint32_t id)
{
	put(g, "{\"type\":\"pycode\",\"id\":");
	put_u64(g, id);
	put(g, ",\"file\":\"");
	put(g, py_files[id % N_PY_FILES]);
	put(g, "\",\"name\":\"fn");
	put_u64(g, id);
	put(g, "\",\"qualname\":\"Mod.fn");
	put_u64(g, id);
	put(g, "\",\"firstlineno\":");
	put_u64(g, 10 + 97 * id % 1900);
	put(g, ",\"python\":\"3.12\",\"linetable\":\"ef00");
	for (int k = 1; k < PY_LINES; k++)
		put(g, "ef02");
	put(g, "\"}\n");
	flush_line(g);
}

/*
 * An address inside module m, derived from (stack, frame) so that it is the same every time;
 * with --frame-pool, one of that many return addresses of the module.
 */
static uint64_t
frame_addr(const struct gen *g, uint32_t stack, uint32_t i, size_t m)
{
	uint64_t h = (uint64_t)stack * 0x9e3779b97f4a7c15ULL + i * 0xc2b2ae3d27d4eb4fULL;
	h ^= h >> 29;
	if (g->o.frame_pool) {
		h = (h % g->o.frame_pool + 1) * 0xff51afd7ed558ccdULL ^ m;
		h ^= h >> 33;
	}
	return modules[m].base + (h % modules[m].size);
}

/*
 * Stack @p id: about 20 native frames (runtime, driver, PyTorch's allocator and ops, the
 * interpreter's eval loop, libc) and 3-10 Python frames. Everything is a function of id, so the
 * same stack is written wherever it is named first.
 */
static void
write_stack(struct gen *g, uint32_t id)
{
	uint64_t saved = g->rng;
	g->rng = 0x5eed0000ULL + id * 7919ULL;
	uint32_t npy = 3 + (uint32_t)below(g, 8);
	uint32_t code[16];

	for (uint32_t i = 0; i < npy; i++) {
		code[i] = (uint32_t)below(g, N_PYCODES) + 1;
		if (!g->pycode_written[code[i] - 1]) {
			g->pycode_written[code[i] - 1] = true;
			write_pycode(g, code[i]);
		}
	}
	put(g, "{\"type\":\"stack\",\"id\":");
	put_u64(g, id);
	put(g, ",\"frames\":[");
	/* per module, how many frames, innermost first: cudart, cuda, c10_cuda, torch_cuda,
	 * torch_python, python (eval frames), libc (one statement each: a fixed draw order) */
	static const uint32_t fixed[N_MODULES] = {2, 2, 2, 3, 2, 4, 2};
	static const uint32_t extra[N_MODULES] = {0, 3, 3, 6, 3, 6, 0};
	uint32_t per[N_MODULES];
	uint32_t total = 0;
	for (size_t m = 0; m < N_MODULES; m++) {
		per[m] = fixed[m] + (uint32_t)below(g, extra[m]);
		total += per[m];
	}
	/* --depth: libtorch_cuda takes the difference; a shallow stack loses its outermost frames
	 */
	for (size_t m = N_MODULES; g->o.depth && total > g->o.depth && m-- > 0;) {
		uint32_t cut = per[m] < total - g->o.depth ? per[m] : total - g->o.depth;
		per[m] -= cut;
		total -= cut;
	}
	if (g->o.depth > total)
		per[3] += g->o.depth - total;
	uint32_t n = 0;
	for (size_t m = 0; m < N_MODULES; m++) {
		for (uint32_t k = 0; k < per[m]; k++, n++) {
			if (n)
				put(g, ",");
			put_hex(g, frame_addr(g, id, n, m));
		}
	}
	put(g, "],\"py\":[");
	for (uint32_t i = 0; i < npy; i++) {
		put(g, i ? ",[" : "[");
		put_u64(g, code[i]);
		put(g, ",");
		put_u64(g, 16 * below(g, PY_LINES));
		/* the outermost frame, and one in the middle, were entered from C */
		put(g, i == npy - 1 || i == npy / 2 ? ",1]" : ",0]");
	}
	put(g, "]}\n");
	flush_line(g);
	g->rng = saved;
}

// --- drain order ------------------------------------------------------------------------------

static void
write_snapshot(struct gen *g, uint64_t ts)
{
	put(g, "{\"type\":\"snapshot\",\"ts\":");
	put_u64(g, ts);
	put(g, ",\"seq\":");
	put_u64(g, g->max_seq_written);
	put(g, ",\"events\":");
	put_u64(g, g->written);
	put(g, ",\"dropped\":0,\"live\":[");
	bool first = true;
	uint64_t device_bytes = 0;
	for (int k = 0; k < N_KINDS; k++) {
		if (!g->w_allocs[k])
			continue;
		put(g, first ? "{\"device\":0,\"kind\":\"" : ",{\"device\":0,\"kind\":\"");
		first = false;
		put(g, kind_name[k]);
		put(g, "\",\"bytes\":");
		put_u64(g, g->w_bytes[k]);
		put(g, ",\"allocations\":");
		put_u64(g, g->w_allocs[k]);
		put(g, "}");
		if (k != K_PINNED)
			device_bytes += g->w_bytes[k];
	}
	/* NVML sees the context and libraries too: about 600 MiB more than the allocations */
	uint64_t used = device_bytes + (600ULL << 20);
	put(g, "],\"nvml\":[{\"device\":0,\"index\":0,\"total\":");
	put_u64(g, TOTAL_BYTES);
	put(g, ",\"used\":");
	put_u64(g, used + (256ULL << 20));
	put(g, ",\"process_used\":");
	put_u64(g, used);
	put(g, "}]}\n");
	flush_line(g);
	g->written_since_snapshot = 0;
}

static uint64_t
ts_of(uint64_t seq)
{
	/* ts is taken with seq: monotonic in it, ~1.3 us apart */
	return START_TS + 5000000ULL + seq * tick_ns + (seq * 2654435761ULL) % 300;
}

static void
write_event(struct gen *g, const struct rec *r)
{
	if (r->stack && !g->stack_written[r->stack]) {
		g->stack_written[r->stack] = true;
		write_stack(g, r->stack);
	}
	if (r->type == 'm') {
		put(g, "{\"type\":\"marker\",\"seq\":");
		put_u64(g, r->seq);
		put(g, ",\"ts\":");
		put_u64(g, ts_of(r->seq));
		put(g, ",\"tid\":");
		put_u64(g, (uint64_t)g->th[0].tid);
		put(g, ",\"label\":\"step ");
		put_u64(g, r->size);
		put(g, "\"}\n");
		flush_line(g);
		return;
	}
	bool is_free = r->type == 'f';
	const char *const *api = is_free ? free_api[r->kind] : alloc_api[r->kind];
	put(g, "{\"type\":\"event\",\"seq\":");
	put_u64(g, r->seq);
	put(g, ",\"ts\":");
	put_u64(g, ts_of(r->seq));
	put(g, ",\"tid\":");
	put_u64(g, (uint64_t)g->th[r->thread].tid);
	put(g, r->type == 'u' ? ",\"op\":\"usage\",\"api\":\""
	       : is_free      ? ",\"op\":\"free\",\"api\":\""
			      : ",\"op\":\"alloc\",\"api\":\"");
	put(g, api[0]);
	put(g, "\",\"driver\":\"");
	put(g, api[1]);
	put(g, "\",\"kind\":\"");
	put(g, r->type == 'u' ? "pool_reserve" : kind_name[r->kind]);
	put(g, "\",\"device\":0,\"context\":1");
	if (r->type != 'u') {
		put(g, ",\"stream\":");
		put_hex(g, r->kind == K_POOL ? 0x5a0000001000ULL + 0x100ULL * r->thread : 0);
		put(g, ",\"ptr\":");
		put_hex(g, r->ptr);
	}
	if (!is_free) {
		put(g, ",\"size\":");
		put_u64(g, r->size);
	}
	if (r->kind == K_PINNED && r->type == 'a')
		put(g, ",\"flags\":0");
	if (r->kind == K_POOL) {
		put(g, ",\"pool\":");
		put_hex(g, POOL_HANDLE);
	}
	put(g, r->type == 'x' ? ",\"result\":2" : ",\"result\":0");
	if (r->type == 'x') {
		put(g, ",\"free_bytes\":");
		put_u64(g, 3221225472ULL + r->seq % 1000 * 4096);
		put(g, ",\"total_bytes\":");
		put_u64(g, TOTAL_BYTES);
	}
	put(g, ",\"stack\":");
	put_u64(g, r->stack);
	put(g, "}\n");
	flush_line(g);

	/* the writer's running totals, for snapshots (each thread frees its own allocations, so an
	 * allocation's line is always written before its free's) */
	if (r->type == 'a') {
		g->w_bytes[r->kind] += r->size;
		g->w_allocs[r->kind]++;
	} else if (r->type == 'f') {
		g->w_bytes[r->kind] -= r->size;
		g->w_allocs[r->kind]--;
	}
}

/* Writes the block thread by thread, starting at a varying thread, each thread's lines in order. */
static void
drain_block(struct gen *g)
{
	uint32_t first = (uint32_t)below(g, g->o.threads);

	for (uint32_t t = 0; t < g->o.threads; t++) {
		uint32_t th = (first + t) % g->o.threads;
		for (uint32_t i = 0; i < g->nblock; i++) {
			const struct rec *r = &g->block[i];
			if (r->thread != th)
				continue;
			write_event(g, r);
			g->written++;
			g->written_since_snapshot++;
			if (r->seq > g->max_seq_written)
				g->max_seq_written = r->seq;
		}
	}
	g->nblock = 0;
	g->block_goal = 1 + (uint32_t)below(g, MAX_BLOCK);
	if (g->written_since_snapshot >= g->o.snapshot_every)
		write_snapshot(g, ts_of(g->max_seq_written) + 777);
}

static void
emit(struct gen *g, struct rec r)
{
	r.seq = ++g->seq;
	g->block[g->nblock++] = r;
	if (g->nblock >= g->block_goal)
		drain_block(g);
}

// --- the workload -----------------------------------------------------------------------------

/* A size: mostly small and medium tensors, some large; log-uniform within each class. */
static uint64_t
draw_size(struct gen *g, int kind)
{
	uint64_t r = below(g, 100), lo, hi;
	if (kind == K_PINNED) {
		lo = 4096;
		hi = 4ULL << 20;
	} else if (r < 60) {
		lo = 512;
		hi = 1ULL << 20;
	} else if (r < 95) {
		lo = 1ULL << 20;
		hi = 32ULL << 20;
	} else {
		lo = 32ULL << 20;
		hi = 200ULL << 20;
	}
	/* log-uniform: a power-of-two octave, then uniform within it, rounded to 512 bytes */
	int lo_bits = 63 - __builtin_clzll(lo), hi_bits = 63 - __builtin_clzll(hi);
	int bits = lo_bits + (int)below(g, (uint64_t)(hi_bits - lo_bits));
	uint64_t size = (1ULL << bits) + below(g, 1ULL << bits);
	size = size * g->o.size_percent / 100;
	return (size + 511) & ~511ULL;
}

/* A stack id in 1..stacks, skewed: a few sites make most allocations, as in real programs. */
static uint32_t
draw_stack(struct gen *g, int kind)
{
	uint32_t n = g->o.stacks;
	uint64_t r = below(g, 1000);
	uint32_t s;
	if (g->o.distinct)
		return g->next_stack++ % n + 1;
	if (r < 700)
		s = (uint32_t)below(g, n < 16 ? n : 16);
	else if (r < 950)
		s = (uint32_t)below(g, n < 64 ? n : 64);
	else
		s = (uint32_t)below(g, n);
	/* each kind has its own sites: stacks of pool and pinned calls end elsewhere */
	s = (s * 3 + (uint32_t)kind) % n;
	return s + 1;
}

static uint32_t
take_slot(struct gen *g, int kind)
{
	struct kind_slots *ks = &g->slots[kind];
	if (ks->nfree && below(g, 10) < 9)
		return ks->free[--ks->nfree];
	if (ks->next < g->o.live)
		return ks->next++;
	return ks->free[--ks->nfree];
}

/* A pool_reserve reading when the pool's reservation changes (it grows by POOL_GRAIN steps). */
static void
pool_reading(struct gen *g, uint32_t thread, bool trim)
{
	uint64_t need = (g->pool_live + POOL_GRAIN - 1) / POOL_GRAIN * POOL_GRAIN;
	if (g->seq >= g->o.events)
		return; /* no room left: the trailer's count is exact */
	if (need > g->pool_reserve || (trim && need < g->pool_reserve)) {
		g->pool_reserve = need;
		emit(g, (struct rec){.type = 'u', .kind = K_POOL, .thread = thread, .size = need});
	}
}

static void
do_alloc(struct gen *g, uint32_t t)
{
	uint64_t r = below(g, 100);
	int kind = r < 78 ? K_DEVICE : r < 94 ? K_POOL : K_PINNED;
	uint32_t slot = take_slot(g, kind);
	struct alloc *a = &g->allocs[kind][slot];

	a->size = draw_size(g, kind);
	a->stack = draw_stack(g, kind);
	a->kind = (uint8_t)kind;
	struct thread *th = &g->th[t];
	th->live[th->nlive++] = (uint32_t)kind << 28 | slot;
	g->nlive++;
	emit(g, (struct rec){.type = 'a',
			     .kind = (uint8_t)kind,
			     .thread = t,
			     .size = a->size,
			     .ptr = kind_base[kind] + slot * SLOT_BYTES,
			     .stack = a->stack});
	if (kind == K_POOL) {
		g->pool_live += a->size;
		pool_reading(g, t, false);
	}
}

static void
do_free(struct gen *g, uint32_t t)
{
	struct thread *th = &g->th[t];
	/* mostly the newest (a temporary), sometimes any other */
	uint32_t i = below(g, 10) < 7 ? th->nlive - 1 : (uint32_t)below(g, th->nlive);
	uint32_t v = th->live[i];
	th->live[i] = th->live[--th->nlive];
	int kind = (int)(v >> 28);
	uint32_t slot = v & 0x0fffffff;
	struct alloc *a = &g->allocs[kind][slot];

	g->nlive--;
	g->slots[kind].free[g->slots[kind].nfree++] = slot;
	emit(g, (struct rec){.type = 'f',
			     .kind = (uint8_t)kind,
			     .thread = t,
			     .size = a->size,
			     .ptr = kind_base[kind] + slot * SLOT_BYTES});
	if (kind == K_POOL)
		g->pool_live -= a->size;
}

static void
do_failure(struct gen *g, uint32_t t)
{
	emit(g, (struct rec){.type = 'x',
			     .kind = K_DEVICE,
			     .thread = t,
			     .size = (8ULL << 30) + below(g, 64) * (256ULL << 20),
			     .stack = draw_stack(g, K_DEVICE)});
}

/* One step of thread t: an allocation or a free, the live set kept between live/2 and live. */
static void
step(struct gen *g, uint32_t t)
{
	struct thread *th = &g->th[t];
	uint32_t max = g->o.live;
	bool alloc;

	if (g->nlive >= max)
		alloc = false;
	else if (!th->nlive)
		alloc = true;
	else
		alloc = below(g, 100) < (g->nlive < max / 2	   ? 60u
					 : g->nlive < max * 9 / 10 ? 50u
								   : 40u);
	if (alloc)
		do_alloc(g, t);
	else
		do_free(g, t);
}

static void
generate(struct gen *g)
{
	uint64_t markers = 0, next_marker = 0;

	/* The events that are not pairs (markers, failures, readings) count towards --events too.
	 */
	while (g->seq < g->o.events) {
		if (g->seq >= next_marker) {
			next_marker += g->o.marker_every;
			emit(g, (struct rec){.type = 'm', .thread = 0, .size = markers++});
			pool_reading(g, 0, true); /* an iteration ends: the pool trims */
			continue;
		}
		if (g->o.kill_at && g->seq >= g->o.kill_at) {
			/* killed: what was drained is there, the last line half written */
			drain_block(g);
			put(g, "{\"type\":\"event\",\"seq\":");
			put_u64(g, g->seq + 1);
			flush_line(g);
			return;
		}
		uint32_t t = (uint32_t)below(g, g->o.threads);
		if (g->o.fail_at && g->seq + 1 == g->o.fail_at)
			do_failure(g, t);
		else if (below(g, g->o.fail_every ? g->o.fail_every : FAIL_EVERY) == 0 &&
			 g->o.fail_every)
			do_failure(g, t);
		else
			step(g, t);
	}
	drain_block(g);
	write_snapshot(g, ts_of(g->seq) + 50000); /* the writer's last one, before the trailer */
	put(g, "{\"type\":\"trailer\",\"ts\":");
	put_u64(g, ts_of(g->seq) + 100000);
	put(g, ",\"events\":");
	put_u64(g, g->written);
	put(g, ",\"dropped\":0,\"reason\":\"exit\"}\n");
	flush_line(g);
}

// --- options ----------------------------------------------------------------------------------

static uint64_t
parse_num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s ? s : "", &end, 10);
	if (!s || errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "gen_trace: %s wants a number in [%llu, %llu], not '%s'\n", opt,
			(unsigned long long)min, (unsigned long long)max, s ? s : "");
		exit(2);
	}
	return v;
}

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gen_trace [--events N] [--seed S] [--live N] [--stacks N] [--threads T]\n"
	    "                 [--marker-every K] [--snapshot-every M] [--depth D] [--distinct]\n"
	    "                 [--frame-pool P] [--rank R --world-size W] [--start-unix-ns T]\n"
	    "                 [--tick-ns N] [--size-percent P] [--fail-every N] [--fail-at SEQ]\n"
	    "                 [--kill-at SEQ] -o FILE\n"
	    "Writes a valid gpumemtrace trace of N event and marker lines (default 1000000),\n"
	    "at most --live allocations live at once (10000), --stacks distinct stacks (300),\n"
	    "T threads (4), a marker every K events (10000) and a snapshot every M (100000).\n"
	    "--depth: D native frames in every stack (default: about 20, varying);\n"
	    "--distinct: each allocation takes the next stack id in turn;\n"
	    "--frame-pool: each module's frames are drawn from P return addresses.\n"
	    "A rank of a job: --rank/--world-size (header), --start-unix-ns, --tick-ns\n"
	    "(1297), --size-percent (100), --fail-every (50000; 0: none), --fail-at (one\n"
	    "failure there), --kill-at (the file ends there mid-line, no trailer).\n"
	    "The same options give the same file.\n");
}

static void
parse(struct options *o, int argc, char **argv)
{
	*o = (struct options){.events = 1000000,
			      .seed = 1,
			      .live = 10000,
			      .stacks = 300,
			      .threads = 4,
			      .marker_every = 10000,
			      .snapshot_every = 100000,
			      .rank = -1,
			      .world_size = 1,
			      .start_unix_ns = 1796228579123000000ULL,
			      .size_percent = 100,
			      .fail_every = FAIL_EVERY};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(a, "--distinct") == 0) {
			o->distinct = true;
			continue;
		}
		i++;
		if (strcmp(a, "--events") == 0)
			o->events = parse_num(a, v, 1, 1ULL << 40);
		else if (strcmp(a, "--seed") == 0)
			o->seed = parse_num(a, v, 0, UINT64_MAX);
		else if (strcmp(a, "--live") == 0)
			o->live = (uint32_t)parse_num(a, v, 2, 65536);
		else if (strcmp(a, "--stacks") == 0)
			o->stacks = (uint32_t)parse_num(a, v, 1, 1u << 20);
		else if (strcmp(a, "--threads") == 0)
			o->threads = (uint32_t)parse_num(a, v, 1, MAX_THREADS);
		else if (strcmp(a, "--frame-pool") == 0)
			o->frame_pool = (uint32_t)parse_num(a, v, 1, UINT32_MAX);
		else if (strcmp(a, "--depth") == 0)
			o->depth = (uint32_t)parse_num(a, v, 1, 1u << 24);
		else if (strcmp(a, "--marker-every") == 0)
			o->marker_every = parse_num(a, v, 1, UINT64_MAX);
		else if (strcmp(a, "--snapshot-every") == 0)
			o->snapshot_every = parse_num(a, v, 1, UINT64_MAX);
		else if (strcmp(a, "--rank") == 0)
			o->rank = (long long)parse_num(a, v, 0, 1u << 24);
		else if (strcmp(a, "--world-size") == 0)
			o->world_size = (long long)parse_num(a, v, 1, 1u << 24);
		else if (strcmp(a, "--start-unix-ns") == 0)
			o->start_unix_ns = parse_num(a, v, 1, UINT64_MAX);
		else if (strcmp(a, "--tick-ns") == 0)
			tick_ns = parse_num(a, v, 1, 1000000000ULL);
		else if (strcmp(a, "--size-percent") == 0)
			o->size_percent = parse_num(a, v, 1, 100000);
		else if (strcmp(a, "--fail-every") == 0)
			o->fail_every = parse_num(a, v, 0, UINT64_MAX);
		else if (strcmp(a, "--fail-at") == 0)
			o->fail_at = parse_num(a, v, 1, UINT64_MAX);
		else if (strcmp(a, "--kill-at") == 0)
			o->kill_at = parse_num(a, v, 1, UINT64_MAX);
		else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
			o->out = v;
		else {
			fprintf(stderr, "gen_trace: unknown option: %s\n", a);
			usage(stderr);
			exit(2);
		}
	}
	if (!o->out) {
		usage(stderr);
		exit(2);
	}
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "gen_trace: out of memory\n");
		exit(1);
	}
	return p;
}

int
main(int argc, char **argv)
{
	static struct gen g;

	parse(&g.o, argc, argv);
	g.rng = g.o.seed;
	g.f = fopen(g.o.out, "w");
	if (!g.f) {
		fprintf(stderr, "gen_trace: %s: %s\n", g.o.out, strerror(errno));
		return 1;
	}
	setvbuf(g.f, NULL, _IOFBF, 1 << 20);
	/* the longest line is a stack's: up to 21 bytes per native frame */
	g.buf = xcalloc(1, 64 * 1024 + (size_t)g.o.depth * 24);
	g.stack_written = xcalloc(g.o.stacks + 1, sizeof(bool));
	for (int k = 0; k < N_KINDS; k++) {
		g.allocs[k] = xcalloc(g.o.live, sizeof(struct alloc));
		g.slots[k].free = xcalloc(g.o.live, sizeof(uint32_t));
	}
	for (uint32_t t = 0; t < g.o.threads; t++) {
		g.th[t].tid = 4242 + (int)t * 7;
		g.th[t].live = xcalloc(g.o.live, sizeof(uint32_t));
	}
	g.block_goal = 1 + (uint32_t)below(&g, MAX_BLOCK);
	write_header(&g);
	generate(&g);
	if (fclose(g.f) != 0) {
		fprintf(stderr, "gen_trace: %s: %s\n", g.o.out, strerror(errno));
		return 1;
	}
	return 0;
}
