/*
 * @brief The writer thread (see writer.h).
 */
#define _GNU_SOURCE
#include "writer/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "format/jsonl.h"
#include "gmt-config.h"
#include "util/clock.h"
#include "util/fdguard.h"
#include "util/log.h"
#include "writer/bounded.h"
#include "writer/modules.h"
#include "writer/nvml.h"
#include "writer/tables.h"
#include "writer/zsink.h"

#define WRITE_CHUNK (64 * 1024) /* write when this much is buffered, even before flush_ms */
#define BATCH_MAX 4096		/* events drained and ordered by seq at a time */
/* The writer's sleep when the ring is empty: 1 ms, doubled at each empty look up to what half
 * the ring takes at 4M events/s (the most one process offers on a GPU; 8 ms for the default
 * 65536 slots), so that an idle process costs a few hundred wakeups a second, not a thousand.
 * Any event drained starts again from 1 ms; a dlclose and the exit wake it at once. */
#define IDLE_SLEEP_NS 1000000
#define IDLE_SLEEP_MAX_NS 8000000
#define IDLE_FILL_PER_S 4000000

struct writer {
	struct gmt_writer_config cfg;
	pthread_t thread;
	bool started;
	_Atomic bool stop;
	_Atomic bool done;	/* trailer written */
	const char *end_reason; /* the trailer's reason: "exit" unless gmt_writer_stop() says */
	struct gmt_fd_guard fd; /* the trace file's descriptor (the program may close it) */
	bool appending;		/* it is open with O_APPEND (until the trailer's last form) */
	unsigned reopened;	/* times the program closed it and it was opened again */
	char path[4096 + 256];
	char reopen_path[4096 + 256]; /* the same, absolute: the program may change directory */
	struct gmt_buf out;
	struct gmt_live_table live;
	uint8_t *stack_written; /* by stack id: its line is in the file */
	size_t stack_written_cap;
	uint8_t *code_written; /* by Python code id: its pycode line is in the file */
	size_t code_written_cap;
	const char *python; /* the Python version announced so far */
	struct gmt_event *batch;
	uint64_t events_written;
	uint64_t last_seq;
	_Atomic bool failed; /* also set by the compressor thread */
	bool zstd;	     /* GPUMEMTRACE_COMPRESS=zstd, libzstd loaded: each flush is a frame */
	bool bounded;	     /* GPUMEMTRACE_BOUNDED=1: events go through bounded.c */
	bool pinned;	     /* the library stays loaded: the writer may outlive the destructor */
	struct {
		off_t at; /* where the trailer starts in the file, -1 before it is written */
		uint64_t ts;
		struct gmt_bounded_stats bounded;
	} trailer;
	struct gmt_zsink zs;
	struct {
		pthread_t thread;
		bool running;
		pthread_mutex_t
		    lock; /* the writer and the compressor only, never the application */
		pthread_cond_t cond;
		struct gmt_buf job; /* the frame's lines, the compressor's while busy */
		bool busy, stop;
	} zp;
};

static struct writer w = {.fd = GMT_FD_GUARD_NONE, .trailer.at = -1};

/*
 * At exit the stopper waits for the writer as long as it gets on with its work, not for a fixed
 * time: a bounded trace's last bucket (up to BUCKET_EVENTS events) is cut and written only then,
 * and on a loaded machine that takes seconds of wall time (issue 28: a fixed 2 s wait lost the
 * whole bucket). Working: the writer or the compressor used CPU time or is waiting for a CPU
 * (runnable: a low-priority process on a busy machine may wait seconds for one), or bytes reached
 * the file. Each thread publishes its id and CPU clock when it starts, and withdraws them before
 * it ends.
 */
struct worker {
	clockid_t clock;
	_Atomic int tid; /* 0: none */
};
static struct worker writer_worker, compressor_worker;
static _Atomic uint64_t bytes_written;

static void
worker_publish(struct worker *wk)
{
	if (pthread_getcpuclockid(pthread_self(), &wk->clock) == 0)
		atomic_store_explicit(&wk->tid, (int)gettid(), memory_order_release);
}

/* dlclose barrier: requests from application threads, acknowledged by the writer */
static _Atomic uint64_t modules_requested, modules_done;

/* The writer's idle sleep, cut short by writer_wake() (a futex: a syscall, no lock). */
static _Atomic uint32_t wake_word;

static void
writer_wake(void)
{
	atomic_fetch_add_explicit(&wake_word, 1, memory_order_release);
	syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void
writer_sleep(uint64_t ns)
{
	uint32_t seen = atomic_load_explicit(&wake_word, memory_order_acquire);
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	/* returns at once when woken since @p seen was read (EAGAIN), on a wake, or after ns */
	syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

/* For benchmarks (gmt_writer_bench_hold()): while set, the writer drains nothing. */
static _Atomic bool bench_hold;

bool
gmt_writer_bench_hold(bool hold)
{
	if (hold) {
		atomic_store_explicit(&bench_hold, true, memory_order_release);
		return true;
	}
	atomic_store_explicit(&bench_hold, false, memory_order_release);
	writer_wake();
	if (!w.started)
		return true;
	/* the ring drained, so that what it held is not written during the next timed stretch */
	for (int i = 0; i < 5000 && gmt_ring_pending(w.cfg.ring); i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return gmt_ring_pending(w.cfg.ring) == 0;
}

uint64_t
gmt_writer_request_modules(void)
{
	uint64_t ticket =
	    atomic_fetch_add_explicit(&modules_requested, 1, memory_order_acq_rel) + 1;

	writer_wake();
	return ticket;
}

bool
gmt_writer_modules_done(uint64_t ticket)
{
	return atomic_load_explicit(&modules_done, memory_order_acquire) >= ticket || !w.started ||
	       atomic_load_explicit(&w.done, memory_order_acquire);
}

static uint64_t
now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

const char *
gmt_writer_path(void)
{
	return w.path;
}

// --- output -------------------------------------------------------------------------------------

/* Stop tracing after an output failure: once, whichever thread meets it (writer, compressor). */
static void
fail_once(const char *fmt, const char *what, const char *why)
{
	bool expected = false;
	if (!atomic_compare_exchange_strong(&w.failed, &expected, true))
		return;
	/* the path last: a long one may be cut, the message is not */
	gmt_warn(fmt, what, why, w.path);
	if (w.cfg.on_failure)
		w.cfg.on_failure();
}

static void
writer_fail(const char *what, int err)
{
	fail_once("%s: %s; tracing stops, the program runs on untraced (%s)", what, strerror(err));
}

/*
 * Before each write: the descriptor still names the trace file. A program may close descriptors
 * it did not open and open files of its own, which can take the number: then the trace file is
 * opened again by its path (the same file, by device and inode), and the program's file is never
 * written. False after saying why (tracing stops).
 */
static bool
fd_ready(void)
{
	int old = w.fd.fd;

	if (gmt_fd_guard_ours(&w.fd))
		return true;
	if (old < 0)
		return false;
	const char *path = w.reopen_path[0] ? w.reopen_path : w.path;

	if (gmt_fd_guard_reopen(&w.fd, path, O_WRONLY | (w.appending ? O_APPEND : 0)) < 0) {
		fail_once("%s (%s); tracing stops, the program runs on untraced (%s)",
			  "the program closed the trace file's descriptor and it cannot be opened "
			  "again",
			  errno == ESTALE ? "another file has its name now" : strerror(errno));
		return false;
	}
	if (w.reopened++ == 0)
		gmt_warn("the program closed the trace file's descriptor %d; the trace goes on in "
			 "the same file, opened again as %d (%s)",
			 old, w.fd.fd, w.path);
	return true;
}

static void
write_all(const char *bytes, size_t len)
{
	size_t off = 0;

	if (!fd_ready())
		return;
	while (off < len) {
		ssize_t n = write(w.fd.fd, bytes + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EBADF && fd_ready()) /* closed since the check: again */
				continue;
			writer_fail("cannot write trace file", errno);
			break;
		}
		off += (size_t)n;
		atomic_fetch_add_explicit(&bytes_written, (uint64_t)n, memory_order_relaxed);
	}
}

/*
 * GPUMEMTRACE_COMPRESS=zstd: a thread of its own compresses and writes, so that the writer
 * formats the next lines meanwhile (compressing inline halved the events/s the writer takes,
 * docs/performance.md). The writer hands over its whole buffer at a flush (one flush, one frame:
 * a cut file keeps every frame written before the cut); while the compressor is busy the writer
 * keeps filling its buffer, and the next frame is that much larger. Past ZPIPE_MAX the writer
 * waits for the compressor: then the ring fills and counts drops, never the application.
 */
#define ZPIPE_MAX (64u << 20)

static void *
compressor_main(void *arg)
{
	char why[256];

	(void)arg;
	if (w.cfg.thread_init)
		w.cfg.thread_init();
	worker_publish(&compressor_worker);
	pthread_mutex_lock(&w.zp.lock);
	for (;;) {
		while (!w.zp.busy && !w.zp.stop)
			pthread_cond_wait(&w.zp.cond, &w.zp.lock);
		if (!w.zp.busy)
			break; /* stop, and nothing left */
		pthread_mutex_unlock(&w.zp.lock);
		if (!atomic_load(&w.failed)) {
			size_t len =
			    gmt_zsink_frame(&w.zs, w.zp.job.data, w.zp.job.len, why, sizeof(why));
			if (len)
				write_all(w.zs.frame, len);
			else
				fail_once(
				    "cannot compress the trace (%s%s); tracing stops, the program "
				    "runs on untraced (%s)",
				    why, "");
		}
		pthread_mutex_lock(&w.zp.lock);
		gmt_buf_reset(&w.zp.job);
		w.zp.busy = false;
		pthread_cond_broadcast(&w.zp.cond);
	}
	pthread_mutex_unlock(&w.zp.lock);
	return NULL;
}

/* Start the compressor (writer thread, at the file's creation); false: compress inline. */
static bool
compressor_start(void)
{
	pthread_mutex_init(&w.zp.lock, NULL);
	pthread_cond_init(&w.zp.cond, NULL);
	/* the writer's mask (every signal blocked) is inherited */
	if (pthread_create(&w.zp.thread, NULL, compressor_main, NULL) != 0)
		return false;
	pthread_setname_np(w.zp.thread, "gpumemtrace-z");
	w.zp.running = true;
	return true;
}

/* Hand the buffer to the compressor; with @p wait, also when it is busy (then wait for it). */
static void
hand_over(bool wait)
{
	pthread_mutex_lock(&w.zp.lock);
	if (w.zp.busy && !wait && w.out.len < ZPIPE_MAX) {
		pthread_mutex_unlock(&w.zp.lock); /* keep filling: the next frame takes it all */
		return;
	}
	while (w.zp.busy)
		pthread_cond_wait(&w.zp.cond, &w.zp.lock);
	struct gmt_buf t = w.zp.job;
	w.zp.job = w.out;
	w.out = t; /* the emptied buffer of the last frame, reused */
	w.zp.busy = true;
	pthread_cond_broadcast(&w.zp.cond);
	pthread_mutex_unlock(&w.zp.lock);
}

/* Everything handed over is written; the compressor ends (writer thread, at the end). */
static void
compressor_stop(void)
{
	pthread_mutex_lock(&w.zp.lock);
	w.zp.stop = true;
	pthread_cond_broadcast(&w.zp.cond);
	pthread_mutex_unlock(&w.zp.lock);
	atomic_store_explicit(&compressor_worker.tid, 0, memory_order_release);
	pthread_join(w.zp.thread, NULL);
	w.zp.running = false;
	gmt_buf_free(&w.zp.job);
}

static void
flush_out(void)
{
	/* (while the compressor runs it is the one that writes, and may open the file again) */
	if (atomic_load(&w.failed) || (!w.zp.running && w.fd.fd < 0)) {
		gmt_buf_reset(&w.out);
		return;
	}
	if (!w.out.len)
		return;
	if (w.zstd && w.zp.running) {
		hand_over(false);
		return;
	}
	if (w.zstd) {
		char why[256];
		size_t len = gmt_zsink_frame(&w.zs, w.out.data, w.out.len, why, sizeof(why));
		if (len)
			write_all(w.zs.frame, len);
		else
			fail_once(
			    "cannot compress the trace (%s%s); tracing stops, the program runs on "
			    "untraced (%s)",
			    why, "");
	} else {
		write_all(w.out.data, w.out.len);
	}
	gmt_buf_reset(&w.out);
}

/* Everything formatted is in the file (the end, before the trailer is the last frame). */
static void
flush_all(void)
{
	flush_out();
	if (w.zstd && w.zp.running && w.out.len && !atomic_load(&w.failed))
		hand_over(true);
	if (w.zp.running)
		compressor_stop();
	gmt_buf_reset(&w.out);
}

static bool
env_long(const char *name, long *out)
{
	const char *s = getenv(name);
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static int
open_trace_file(struct gmt_rank_info *rank, const char *host)
{
	char name[512];
	int n = snprintf(name, sizeof(name), "gpumemtrace.%s.%d", host, (int)getpid());
	if (rank->has_rank)
		n += snprintf(name + n, sizeof(name) - (size_t)n, ".rank%ld", rank->rank);
	if (rank->has_local_rank)
		n += snprintf(name + n, sizeof(name) - (size_t)n, ".lrank%ld", rank->local_rank);

	/* O_EXCL: a recycled pid never overwrites an older trace; take the next free suffix. */
	const char *ext = w.zstd ? ".jsonl.zst" : ".jsonl";
	for (int attempt = 0; attempt < 100; attempt++) {
		if (attempt == 0)
			snprintf(w.path, sizeof(w.path), "%s/%s%s", w.cfg.opts->output_dir, name,
				 ext);
		else
			snprintf(w.path, sizeof(w.path), "%s/%s.%d%s", w.cfg.opts->output_dir, name,
				 attempt, ext);
		int fd = open(w.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_APPEND,
			      w.cfg.private_file ? 0600 : 0644);
		if (fd >= 0 && w.path[0] != '/') {
			char cwd[sizeof(w.reopen_path)];
			int k = getcwd(cwd, sizeof(cwd) - 1)
				    ? snprintf(w.reopen_path, sizeof(w.reopen_path), "%s/%s", cwd,
					       w.path)
				    : -1;
			if (k < 0 || (size_t)k >= sizeof(w.reopen_path))
				w.reopen_path[0] = '\0'; /* then by the name as given */
		}
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

static size_t
read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return 0;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len && buf[len - 1] == '\0')
		len--; /* the last argument's terminator */
	return len;
}

/* GPUMEMTRACE_COMPRESS: zstd when asked and libzstd.so.1 loads, else plain (one warning). */
static void
setup_compression(void)
{
	const char *mode = w.cfg.opts->compress;
	char why[256];

	if (!strcmp(mode, "none"))
		return;
	if (strcmp(mode, "zstd")) {
		char shown[GMT_LOG_VALUE_MAX];
		gmt_warn(GMT_OPTION_PREFIX "COMPRESS: invalid value %s (expected none or zstd); "
					   "writing plain JSON Lines",
			 gmt_log_value(shown, mode));
		return;
	}
	if (!gmt_zsink_init(&w.zs, (int)w.cfg.opts->compress_level, w.cfg.dlclose, why,
			    sizeof(why))) {
		gmt_warn(GMT_OPTION_PREFIX "COMPRESS=zstd: %s; writing plain JSON Lines (.jsonl)",
			 why);
		return;
	}
	w.zstd = true;
	compressor_start(); /* else the writer compresses each flush itself */
}

static bool
open_and_write_header(void)
{
	struct gmt_rank_info rank = {0};
	char host[256] = "unknown";
	static char cmdline[16384];

	rank.has_rank = env_long("RANK", &rank.rank);
	rank.has_local_rank = env_long("LOCAL_RANK", &rank.local_rank);
	rank.has_world_size = env_long("WORLD_SIZE", &rank.world_size);
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown");
	for (char *p = host; *p; p++) /* keep the file name one path component */
		if (*p == '/')
			*p = '_';

	setup_compression();
	w.appending = true;
	if (gmt_fd_guard_take(&w.fd, open_trace_file(&rank, host)) < 0) {
		int err = errno;
		char dir[GMT_LOG_VALUE_MAX];
		gmt_warn("cannot create a trace file in " GMT_OPTION_PREFIX "OUTPUT_DIR %s: %s; "
			 "this process runs on untraced",
			 gmt_log_value(dir, w.cfg.opts->output_dir), strerror(err));
		w.failed = true;
		if (w.cfg.on_failure)
			w.cfg.on_failure();
		return false;
	}

	/* The header's start is when tracing of the process began (library load or fork), which is
	 * before the first event; wall time is derived for the same instant. */
	uint64_t mono = now_ns(CLOCK_MONOTONIC), wall = now_ns(CLOCK_REALTIME);
	uint64_t start = w.cfg.start_ts && w.cfg.start_ts <= mono ? w.cfg.start_ts : mono;
	const char *runtimes[8] = {0};
	if (w.cfg.cuda_runtime)
		w.cfg.cuda_runtime(runtimes, sizeof(runtimes) / sizeof(runtimes[0]) - 1);
	struct gmt_header_info h = {
	    .tracer_version = GMT_VERSION,
	    .pid = (int)getpid(),
	    .ppid = (int)getppid(),
	    .forked_from = w.cfg.forked_from,
	    .host = host,
	    .cmdline = cmdline,
	    .cmdline_len = read_cmdline(cmdline, sizeof(cmdline)),
	    .start_ts = start,
	    .start_unix_ns = wall - (mono - start),
	    .rank = rank,
	    .coverage = w.cfg.coverage,
	    .coverage_reason = w.cfg.coverage_reason,
	    .capture = w.cfg.capture,
	    .cuda_runtime = runtimes,
	    .cupti = w.cfg.cupti ? w.cfg.cupti() : NULL,
	    .ring_slots = w.cfg.opts->ring_slots,
	    .flush_ms = w.cfg.opts->flush_ms,
	    .snapshot_ms = w.cfg.opts->snapshot_ms,
	    .stacks_native = w.cfg.stacks_native,
	    .stacks_python = w.python = w.cfg.python_version ? w.cfg.python_version() : NULL,
	    .stacks_depth = w.cfg.stacks_depth,
	    .stacks_interpreter = w.cfg.stacks_interpreter,
	    .bounded = w.bounded,
	    .bucket_ms = w.cfg.opts->bucket_ms,
	};
	gmt_jsonl_header(&w.out, &h);
	flush_out();
	return !w.failed;
}

// --- events -------------------------------------------------------------------------------------

static int
by_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct gmt_event *)a)->seq, y = ((const struct gmt_event *)b)->seq;
	return (x > y) - (x < y);
}

/* A written-once flag by id, grown on demand. Out of memory: "written" (a line is lost, not
 * doubled). */
static bool
flag_test_set(uint8_t **flags, size_t *cap, uint32_t id)
{
	if (id >= *cap) {
		size_t n = *cap ? *cap : 4096;
		while (n <= id)
			n *= 2;
		uint8_t *p = realloc(*flags, n);
		if (!p)
			return true;
		memset(p + *cap, 0, n - *cap);
		*flags = p;
		*cap = n;
	}
	bool was = (*flags)[id];
	(*flags)[id] = 1;
	return was;
}

static void
write_pycode(const struct gmt_pycode_view *c)
{
	if (!flag_test_set(&w.code_written, &w.code_written_cap, c->id))
		gmt_jsonl_pycode(&w.out, c);
}

/* Python code objects registered since the last call, as pycode lines, then any the stack names
 * that the ordered cursor has not reached yet (another thread still registering a lower id). */
static void
write_pycodes(const struct gmt_stack_view *st)
{
	struct gmt_pycode_view c;

	if (!w.cfg.pycode_next)
		return;
	while (w.cfg.pycode_next(&c))
		write_pycode(&c);
	for (size_t i = 0; i < st->npy && w.cfg.pycode_get; i++) {
		uint32_t id = st->py[i].code_id;
		if (id && (id >= w.code_written_cap || !w.code_written[id]) &&
		    w.cfg.pycode_get(id, &c))
			write_pycode(&c);
	}
}

/* A Python interpreter found after the header was written gets a pyinfo line. */
static void
announce_python(void)
{
	const char *v = w.cfg.python_version ? w.cfg.python_version() : NULL;
	if (v && !w.python) {
		w.python = v;
		gmt_jsonl_pyinfo(&w.out, v);
	}
}

/* Before the first event that names a stack: the code objects and modules it refers to, then
 * the stack itself (docs/trace-format.md: each line refers only to lines before it). */
static void
write_stack(uint32_t id)
{
	struct gmt_stack_view st;

	if ((id < w.stack_written_cap && w.stack_written[id]) || !w.cfg.stack_get ||
	    !w.cfg.stack_get(id, &st))
		return;
	announce_python();
	write_pycodes(&st);
	if (st.nframes && gmt_modules_changed())
		gmt_modules_write(&w.out, w.last_seq); /* loaded since the last loop */
	gmt_jsonl_stack(&w.out, &st);
	flag_test_set(&w.stack_written, &w.stack_written_cap, id);
}

/* One event's line (the bounded writer writes the events it keeps through this too). */
static void
write_line(const struct gmt_event *ev)
{
	if (ev->op != GMT_OP_MARKER && ev->stack)
		write_stack(ev->stack);
	gmt_jsonl_event(&w.out, ev, ev->stack);
	if (ev->op == GMT_OP_LAYER || ev->op == GMT_OP_HOLDERS)
		gmt_torch_layer_free(ev->layer);
	w.events_written++;
	if (ev->seq > w.last_seq)
		w.last_seq = ev->seq;
}

static void
write_event(const struct gmt_event *ev)
{
	if (!gmt_live_apply(&w.live, ev))
		gmt_warn("out of memory in the writer; snapshots may be incomplete");
	if (w.bounded)
		gmt_bounded_push(ev); /* written, or counted, when its bucket ends */
	else
		write_line(ev);
}

// --- bounded mode (bounded.h) -------------------------------------------------------------------

/* A kept event of a bucket being cut: its line, and the lines so far into the file once a chunk
 * is buffered, so that a bucket of many events reaches the file while it is cut (and a writer
 * stopped in the middle of the last one at exit leaves what it has) rather than all at its end. */
static void
bounded_emit(const struct gmt_event *ev)
{
	write_line(ev);
	if (w.out.len >= WRITE_CHUNK)
		flush_out();
}

static void
bounded_start(void)
{
	struct gmt_bounded_config cfg = {
	    .bucket_ns = w.cfg.opts->bucket_ms * 1000000ULL,
	    .max_events = (size_t)w.cfg.opts->bucket_events,
	    .out = &w.out,
	    .emit = bounded_emit,
	    .stack = write_stack,
	};
	w.bounded = w.cfg.opts->bounded && gmt_bounded_init(&cfg);
}

/* End the bucket (@p force: everything held, also past a missing seq). */
static void
bounded_cut(bool force)
{
	if (!w.bounded)
		return;
	uint64_t upto = gmt_bounded_cut(now_ns(CLOCK_MONOTONIC), force);
	if (upto > w.last_seq)
		w.last_seq = upto; /* a snapshot next is at the cut */
}

/* Drain up to BATCH_MAX events, order them by seq (producers commit out of order) and format them.
 */
static size_t
drain_batch(void)
{
	size_t n = 0;

	while (n < BATCH_MAX && gmt_ring_pop(w.cfg.ring, &w.batch[n]))
		n++;
	if (n) { /* their clock into ns (util/clock.h) */
		gmt_clock_anchor();
		for (size_t i = 0; i < n; i++)
			w.batch[i].ts_ns = gmt_clock_ns(w.batch[i].ts_ns);
	}
	if (n > 1)
		qsort(w.batch, n, sizeof(w.batch[0]), by_seq);
	for (size_t i = 0; i < n; i++)
		write_event(&w.batch[i]);
	return n;
}

static void
write_snapshot(void)
{
	struct gmt_live_total rows[(GMT_MAX_DEVICES + 1) * GMT_KIND_COUNT];
	struct gmt_nvml_reading nvml[GMT_DEVICES_MAX];
	size_t n = gmt_live_totals(&w.live, rows, sizeof(rows) / sizeof(rows[0]));
	size_t n_nvml = gmt_nvml_read(w.cfg.device_busid, w.cfg.dlclose, nvml, GMT_DEVICES_MAX);

	gmt_jsonl_snapshot(&w.out, now_ns(CLOCK_MONOTONIC), w.last_seq, w.events_written,
			   atomic_load_explicit(w.cfg.dropped, memory_order_relaxed), rows, n, nvml,
			   n_nvml);
}

// --- the trailer and the calls after it ---------------------------------------------------------
//
// The trailer is written when the library's destructor stops the writer, but the process goes on
// a while: other threads, and the destructors of libraries finalized after this one (a CUDA
// library freeing its memory at teardown), still make calls. The capture side counts them as
// dropped (the writer has stopped); so that they are not lost silently, the writer stays (the
// library is pinned: it is never unloaded under it) and writes the trailer again, in place, with
// the count, until the process ends. Counts only grow, so each new trailer is at least as long
// as the one before and one pwrite() covers it: at every moment the file ends with one whole
// trailer. A zstd trace has the trailer in a stored (raw) frame of its own for that.

/* The drops counted so far: all, and the readings among them. */
struct drops {
	uint64_t all, readings;
};

static struct drops
drops_now(void)
{
	struct drops d = {0, 0};
	/* readings first: a reading counted after this load is in neither (all grows first) */
	if (w.cfg.dropped_readings)
		d.readings = atomic_load_explicit(w.cfg.dropped_readings, memory_order_relaxed);
	d.all = atomic_load_explicit(w.cfg.dropped, memory_order_relaxed);
	return d;
}

/* The trailer for @p d, at the end of the file (again at the same place once written). */
static void
put_trailer(struct drops d)
{
	const struct gmt_bounded_stats *bs = &w.trailer.bounded;

	gmt_buf_reset(&w.out);
	if (w.bounded)
		gmt_jsonl_trailer_bounded(&w.out, w.trailer.ts, w.events_written, d.all, d.readings,
					  w.end_reason ? w.end_reason : "exit", bs->elided,
					  bs->late, bs->buckets);
	else
		gmt_jsonl_trailer(&w.out, w.trailer.ts, w.events_written, d.all, d.readings,
				  w.end_reason ? w.end_reason : "exit");
	const char *bytes = w.out.data;
	size_t len = w.out.len;
	if (w.zstd) {
		len = gmt_zsink_raw_frame(&w.zs, w.out.data, w.out.len);
		bytes = w.zs.frame;
		if (!len) {
			fail_once("cannot write the trailer (%s%s); (%s)", "out of memory", "");
			return;
		}
	}
	if (!fd_ready()) {
		gmt_buf_reset(&w.out);
		return;
	}
	if (w.trailer.at < 0) {
		off_t at = lseek(w.fd.fd, 0, SEEK_END);
		write_all(bytes, len);
		w.trailer.at = atomic_load(&w.failed) ? -1 : at;
	} else {
		for (size_t off = 0; off < len;) {
			ssize_t n =
			    pwrite(w.fd.fd, bytes + off, len - off, w.trailer.at + (off_t)off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break; /* the trailer before stays */
			off += (size_t)n;
		}
	}
	gmt_buf_reset(&w.out);
}

/* The writer's last work, after the destructor returned: until the process ends, the calls
 * counted as dropped since go into the trailer (checked every millisecond). */
static void
count_late_calls(struct drops written)
{
	for (;;) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		struct drops d = drops_now();
		if (d.all != written.all || d.readings != written.readings) {
			put_trailer(d);
			written = d;
		}
	}
}

static void *
writer_main(void *arg)
{
	(void)arg;
	if (w.cfg.thread_init)
		w.cfg.thread_init();
	worker_publish(&writer_worker);
	w.pinned = w.cfg.pin && w.cfg.pin();
	bounded_start();
	if (!open_and_write_header()) {
		if (w.zp.running)
			compressor_stop();
		return NULL;
	}

	uint64_t flush_ns = w.cfg.opts->flush_ms * 1000000ULL;
	uint64_t snap_ns = w.cfg.opts->snapshot_ms * 1000000ULL;
	uint64_t last_flush = now_ns(CLOCK_MONOTONIC), last_snap = last_flush;
	uint64_t idle_max = (uint64_t)w.cfg.opts->ring_slots / 2 * 1000000000u / IDLE_FILL_PER_S;
	uint64_t idle = IDLE_SLEEP_NS;

	if (idle_max > IDLE_SLEEP_MAX_NS)
		idle_max = IDLE_SLEEP_MAX_NS;
	if (idle_max < IDLE_SLEEP_NS || w.bounded) /* bounded: buckets cut on time, as before */
		idle_max = IDLE_SLEEP_NS;

	while (!w.failed) {
		bool stopping = atomic_load_explicit(&w.stop, memory_order_acquire);
		if (!stopping && atomic_load_explicit(&bench_hold, memory_order_acquire)) {
			writer_sleep(IDLE_SLEEP_NS);
			continue;
		}
		if (w.cfg.tick && !stopping) /* not at exit: the libraries may be going */
			w.cfg.tick();
		/* Objects loaded and unloaded get a modules line within a loop (~1 ms), so that a
		 * library unloaded after its stacks were captured is still in an earlier line. */
		uint64_t requested = atomic_load_explicit(&modules_requested, memory_order_acquire);
		if (w.cfg.stacks_native && gmt_modules_changed()) {
			bounded_cut(true); /* the stacks held, before the objects change */
			gmt_modules_write(&w.out, w.last_seq);
		}
		size_t n = drain_batch();
		if (requested != atomic_load_explicit(&modules_done, memory_order_relaxed)) {
			/* a dlclose waits: everything pushed before it, with its stacks, now */
			while (drain_batch() == BATCH_MAX)
				;
			bounded_cut(true);
			flush_out();
			atomic_store_explicit(&modules_done, requested, memory_order_release);
		}
		uint64_t now = now_ns(CLOCK_MONOTONIC);

		if (w.bounded) {
			/* snapshots at bucket ends only, where the written lines replay exactly */
			uint64_t every = snap_ns > w.cfg.opts->bucket_ms * 1000000ULL
					     ? snap_ns
					     : w.cfg.opts->bucket_ms * 1000000ULL;
			bool snap = snap_ns && now - last_snap >= every;
			if (snap || gmt_bounded_due(now))
				bounded_cut(false);
			if (snap) {
				write_snapshot();
				last_snap = now;
			}
		} else if (snap_ns && now - last_snap >= snap_ns) {
			write_snapshot();
			last_snap = now;
		}
		if (w.out.len >= WRITE_CHUNK || (w.out.len && now - last_flush >= flush_ns)) {
			flush_out();
			last_flush = now;
		}
		if (stopping && n == 0)
			break;
		if (n)
			idle = IDLE_SLEEP_NS;
		if (n < BATCH_MAX) {
			/* never past the next flush or snapshot */
			uint64_t sleep = idle;
			if (w.out.len && last_flush + flush_ns > now &&
			    last_flush + flush_ns - now < sleep)
				sleep = last_flush + flush_ns - now;
			if (snap_ns && last_snap + snap_ns > now &&
			    last_snap + snap_ns - now < sleep)
				sleep = last_snap + snap_ns - now;
			writer_sleep(sleep < 100000 ? 100000 : sleep);
			if (!n && idle < idle_max)
				idle = idle * 2 < idle_max ? idle * 2 : idle_max;
		}
	}
	if (w.failed) {
		if (w.zp.running)
			compressor_stop();
		return NULL;
	}

	/* Producers that passed the "running" check just before exit may still be committing:
	 * wait a little for claimed slots to fill. */
	for (int spin = 0; spin < 20 && gmt_ring_pending(w.cfg.ring); spin++) {
		drain_batch();
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	drain_batch();
	bounded_cut(true);
	write_snapshot();
	flush_all(); /* everything but the trailer; the compressor has ended */
	w.trailer.ts = now_ns(CLOCK_MONOTONIC);
	if (w.bounded) {
		w.trailer.bounded = *gmt_bounded_stats();
		gmt_bounded_fini();
	}
	struct drops dropped = drops_now();
	put_trailer(dropped);
	gmt_nvml_close();
	/* Pinned, the writer outlives the destructor: it stays to count the calls made after the
	 * trailer (other threads, later destructors) into it. */
	int fl = fd_ready() ? fcntl(w.fd.fd, F_GETFL) : -1;
	bool linger = w.pinned && !atomic_load(&w.failed) && w.trailer.at >= 0 && fl >= 0 &&
		      fcntl(w.fd.fd, F_SETFL, fl & ~O_APPEND) == 0;
	if (linger)
		w.appending = false; /* the trailer is rewritten in place (pwrite) */
	if (!linger) {
		gmt_fd_guard_release(&w.fd); /* never the program's, if it took the number */
		if (w.zstd)
			gmt_zsink_free(&w.zs);
	}
	atomic_store_explicit(&w.done, true, memory_order_release);
	if (linger)
		count_late_calls(dropped);
	return NULL;
}

// --- control ------------------------------------------------------------------------------------

int
gmt_writer_start(const struct gmt_writer_config *cfg)
{
	sigset_t all, old;
	int rc;

	w.cfg = *cfg;
	w.batch = malloc(BATCH_MAX * sizeof(*w.batch));
	if (!w.batch)
		return -ENOMEM;
	atomic_store(&w.stop, false);
	atomic_store(&w.done, false);

	/* The writer inherits a mask with every signal blocked, so the application's signal
	 * routing never lands on our thread (heaptrack does the same). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	pthread_setname_np(w.thread, "gpumemtrace");
	w.started = true;
	return 0;
}

/* Progress of one of the writer's threads: its CPU time in ns, or UINT64_MAX while it is
 * runnable (working, or waiting for a CPU); 0 when it has ended or is not known. */
static uint64_t
worker_progress(struct worker *wk)
{
	int tid = atomic_load_explicit(&wk->tid, memory_order_acquire);
	struct timespec ts;
	char path[64], buf[512];

	if (!tid)
		return 0;
	/* /proc/self/task/TID/stat: "TID (comm) S ...", the state after the last ')' */
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		const char *r = strrchr(buf, ')');
		if (r && r[1] == ' ' && r[2] == 'R')
			return UINT64_MAX;
	}
	if (clock_gettime(wk->clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Changes while the writer works (see struct worker). */
static bool
writer_progress(uint64_t *seen)
{
	uint64_t a = worker_progress(&writer_worker), b = worker_progress(&compressor_worker);
	uint64_t now = a + b + atomic_load_explicit(&bytes_written, memory_order_relaxed);
	bool moved = a == UINT64_MAX || b == UINT64_MAX || now != *seen;

	*seen = now;
	return moved;
}

#define STOP_SLICE_MS 50
#define STOP_NOTICE_MS 2000

bool
gmt_writer_stop(const char *reason, unsigned idle_ms, unsigned max_ms)
{
	if (!w.started)
		return false;
	w.end_reason = reason; /* read by the writer after it sees stop (release below) */
	atomic_store_explicit(&w.stop, true, memory_order_release);
	writer_wake();

	uint64_t start = now_ns(CLOCK_MONOTONIC), idle_since = start;
	uint64_t seen = 0;
	(void)writer_progress(&seen);
	bool noticed = false;
	for (unsigned tick = 1;; tick++) {
		/* the trailer is written (the writer stays, counting late calls), or it has ended
		 * (a failure); looked at every millisecond, the progress every STOP_SLICE_MS */
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		if (atomic_load_explicit(&w.done, memory_order_acquire))
			break;
		if (pthread_tryjoin_np(w.thread, NULL) == 0) {
			w.started = false;
			break;
		}
		if (tick % STOP_SLICE_MS)
			continue;
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		if (writer_progress(&seen))
			idle_since = now;
		if (now - idle_since >= (uint64_t)idle_ms * 1000000ULL) {
			gmt_warn(
			    "the trace writer made no progress for %u ms at exit; the trace has "
			    "no trailer and lacks the events not written yet (%s)",
			    idle_ms, w.path);
			break;
		}
		if (now - start >= (uint64_t)max_ms * 1000000ULL) {
			gmt_warn(
			    "the trace writer did not finish within %u s at exit; the trace has "
			    "no trailer and lacks the events not written yet (%s)",
			    max_ms / 1000, w.path);
			break;
		}
		if (!noticed && now - start >= STOP_NOTICE_MS * 1000000ULL) {
			/* a long exit says why: the writer is at work, not hung */
			gmt_info("writing the end of the trace at exit (%s)", w.path);
			noticed = true;
		}
	}
	return atomic_load_explicit(&w.done, memory_order_acquire);
}

void
gmt_writer_forget_after_fork(void)
{
	/* The parent's thread does not exist in the child, and the tables may have been mid-update
	 * when fork() copied them: leak them rather than touch them (memray does the same), and
	 * close the parent's file so the child never writes into it. */
	gmt_fd_guard_release(&w.fd);
	w = (struct writer){.fd = GMT_FD_GUARD_NONE, .trailer.at = -1};
	atomic_store(&writer_worker.tid, 0);
	atomic_store(&compressor_worker.tid, 0);
	gmt_nvml_forget();
	gmt_modules_forget();
}
