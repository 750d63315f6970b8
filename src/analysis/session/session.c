/*
 * @brief A session's traces: files and directories read, replayed, symbolized (session.h).
 */
#define _GNU_SOURCE
#include "analysis/session/session.h"
#include "analysis/reader/trace_input.h"
#include "analysis/session/feed.h"
#include "util/cputime.h"
#include "util/esc.h"
#include "util/path.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void
gmt_session_init(struct gmt_session *s, const struct gmt_session_options *opt, FILE *diag)
{
	static const struct gmt_session_options defaults = GMT_SESSION_OPTIONS_INIT;

	*s = (struct gmt_session){.opt = opt ? *opt : defaults, .diag = diag};
}

/* A trace's name: what the tracer writes (.jsonl, GPUMEMTRACE_COMPRESS=zstd's .jsonl.zst), a
 * trace gzip'd for keeping (.jsonl.gz), and a PyTorch memory snapshot (.pickle, as
 * torch.cuda.memory._dump_snapshot() names it). The reader tells the kind by the bytes. */
static bool
is_trace_name(const char *name)
{
	static const char *const ext[] = {".jsonl", ".jsonl.zst", ".jsonl.gz", ".pickle"};
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t n = strlen(ext[i]);

		if (len > n && strcmp(name + len - n, ext[i]) == 0)
			return true;
	}
	return false;
}

int
gmt_trace_files(const char *dir, char ***names)
{
	return gmt_dir_names(dir, is_trace_name, names);
}

// --- one trace: read, replayed -------------------------------------------------------------

/* A bound placed in seconds from the trace's start, which follows the reader until its end. */
static bool
range_in_seconds(const struct gmt_range_opt *range)
{
	return (range->from.set && !range->from.label) || (range->to.set && !range->to.label);
}

/* Append (@p t, @p m, their stacks) to @p s; false out of memory (nothing taken). */
static bool
append(struct gmt_session *s, struct gmt_trace *t, struct gmt_model *m)
{
	struct gmt_process *procs = realloc(s->procs, (s->n + 1) * sizeof(*procs));
	struct gmt_callstacks *stacks;

	if (!procs)
		return false;
	s->procs = procs;
	if (!s->sym && !(s->sym = gmt_symbolizer_new(s->diag)))
		return false;
	if (!(stacks = gmt_callstacks_new(t, s->sym)))
		return false;
	procs[s->n++] = (struct gmt_process){.trace = t, .model = m, .stacks = stacks};
	return true;
}

/* One trace read and replayed: 0, -1 unreadable (said on @p diag), -4 the same of a trace whose
 * story is lost (GMT_TRACE_LOST, the reader's reason in @p why), -2 out of memory (not said). */
static int
read_one(const struct gmt_session_options *opt,
	 FILE *diag,
	 const char *path,
	 struct gmt_trace **tp,
	 struct gmt_model **mp,
	 char why[GMT_TRACE_WHY])
{
	struct gmt_model *m = NULL;
	struct gmt_trace *t;
	bool oom = false;

	if (opt->stored) {
		/* the whole trace first, then its replay */
		enum gmt_trace_status st =
		    gmt_trace_read_sink(path, diag, &opt->read, NULL, &t, why);
		if (st != GMT_TRACE_OK)
			return st == GMT_TRACE_LOST ? -4 : -1;
		m = gmt_model_build_range(t, &opt->range);
		oom = !m;
	} else {
		/* streamed: the events go to the model as they are read, and are not kept; with
		 * the read on several threads, the replay gets one of its own (feed.h) */
		bool threaded = opt->read.jobs >= GMT_READ_HELPER_JOBS && !opt->read.slow &&
				!range_in_seconds(&opt->range);
		struct gmt_feed *f = gmt_feed_new(&opt->range, threaded);
		if (!f)
			return -2;
		struct gmt_trace_sink sink = gmt_feed_sink(f);
		enum gmt_trace_status rc =
		    gmt_trace_read_sink(path, diag, &opt->read, &sink, &t, why);
		m = gmt_feed_end(f, &oom);
		if (rc != GMT_TRACE_OK) {
			gmt_model_free(m);
			return rc == GMT_TRACE_LOST ? -4 : -1;
		}
	}
	if (!oom && !m)
		m = gmt_model_new(t, &opt->range); /* a trace without events */
	/* the end of the replay (already done when it was replayed from a stored trace) */
	if (oom || !m || gmt_model_finish(m) != 0) {
		gmt_model_free(m);
		gmt_trace_free(t);
		return -2;
	}
	*tp = t;
	*mp = m;
	return 0;
}

/* @p path, an input that yielded nothing (@p why), kept for the reports; out of memory it is
 * counted without its name (said on diag), never left out. */
static void
add_lost(struct gmt_session *s, const char *path, const char *why)
{
	struct gmt_lost_trace *v = realloc(s->lost.v, (s->lost.n + 1) * sizeof(*v));
	char *file = strdup(path), *w = strdup(why);

	if (v)
		s->lost.v = v;
	if (!v || !file || !w) {
		free(file);
		free(w);
		fprintf(s->diag,
			"%s: out of memory: counted among the inputs that yielded nothing\n",
			gmt_esc(path));
		s->lost.unnamed++;
		return;
	}
	v[s->lost.n++] = (struct gmt_lost_trace){.file = file, .why = w};
}

/*
 * The outcome of read_one() taken into the session, as gmt_session_add_file() returns it. A
 * trace whose story is lost, anything that yielded nothing out of memory, and a file that could
 * not be read though it may be a trace (missing, a format version this reader does not know, a
 * damaged compressed stream: the reader gives its reason) are kept among the lost inputs: what
 * the user asked about is not in the figures. A file that is evidently another program's (the
 * reader gives no reason) is only said, named or found in a directory (a glob's metrics.jsonl).
 */
static int
take(struct gmt_session *s,
     const char *path,
     int rc,
     struct gmt_trace *t,
     struct gmt_model *m,
     const char *why)
{
	if (rc == 0 && !append(s, t, m)) {
		gmt_model_free(m);
		gmt_trace_free(t);
		rc = -2;
	}
	if (rc == -2)
		fprintf(s->diag, "%s: out of memory\n", gmt_esc(path));
	if (rc == -4 || rc == -2 || (rc == -1 && why[0]))
		add_lost(s, path, rc == -2 ? "out of memory" : why);
	if (rc != 0) {
		s->unreadable++;
		return -1;
	}
	return 0;
}

int
gmt_session_add_file(struct gmt_session *s, const char *path)
{
	struct gmt_trace *t = NULL;
	struct gmt_model *m = NULL;
	char why[GMT_TRACE_WHY] = "";

	int rc = read_one(&s->opt, s->diag, path, &t, &m, why);

	return take(s, path, rc, t, m, why);
}

/* A file the user named: a pipe there (`report <(zstdcat t.zst)`, a FIFO) is read as standard
 * input is, where a directory's files must be regular files. */
static int
add_named(struct gmt_session *s, const char *path)
{
	struct gmt_session_options opt = s->opt;
	struct gmt_trace *t = NULL;
	struct gmt_model *m = NULL;
	char why[GMT_TRACE_WHY] = "";

	opt.read.pipe_ok = true;
	int rc = read_one(&opt, s->diag, path, &t, &m, why);

	return take(s, path, rc, t, m, why);
}

// --- a directory: its traces read in parallel ------------------------------------------------

/*
 * The traces of a directory (one per process, one per rank) are independent until the reports
 * join them: each is read and replayed on a worker thread, then taken into the session in name
 * order, its messages (collected per trace) printed in that order too, so that the report and
 * stderr are the same as one after another. The reader and the model keep no state outside a
 * trace's own; symbolization comes later, on the calling thread. Memory: the session keeps every
 * model anyway; at most `jobs` traces are being read at once.
 */
struct dir_job {
	char *path;
	struct gmt_trace *t;
	struct gmt_model *m;
	char *msgs;
	size_t msgs_len;
	int rc;
	char why[GMT_TRACE_WHY]; /* rc -4: the reader's reason */
};

struct dir_work {
	const struct gmt_session_options *opt;
	struct dir_job *jobs;
	size_t n;
	_Atomic size_t next;
	_Atomic size_t done;
	_Atomic size_t running; /* workers not returned yet */
};

static void *
dir_worker(void *arg)
{
	struct dir_work *w = arg;

	for (;;) {
		size_t i = atomic_fetch_add(&w->next, 1);
		if (i >= w->n)
			return NULL;
		struct dir_job *j = &w->jobs[i];
		if (!j->path)
			continue;
		FILE *diag = open_memstream(&j->msgs, &j->msgs_len);
		if (!diag) {
			j->rc = -2;
			continue;
		}
		j->rc = read_one(w->opt, diag, j->path, &j->t, &j->m, j->why);
		fclose(diag);
		atomic_fetch_add(&w->done, 1);
	}
}

static void *
dir_worker_main(void *arg)
{
	struct dir_work *w = arg;

	dir_worker(w);
	atomic_fetch_sub(&w->running, 1);
	gmt_cputime_note("gmt-dir");
	return NULL;
}

static double
seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Wait for the workers. On a terminal, the line shown for one trace becomes one for
 * the directory (each worker's own messages go to its buffer, not the terminal): how many of its
 * traces are done, rewritten at most once a second (GMT_PROGRESS_INTERVAL_S), erased at the end.
 */
static void
dir_wait(struct gmt_session *s, struct dir_work *w, const char *dir)
{
	bool tty = isatty(fileno(s->diag)), shown = false;
	double every = s->opt.progress_every_s >= 0 ? s->opt.progress_every_s : 1.0;
	double last = seconds_now();

	for (;;) {
		bool finished = atomic_load(&w->running) == 0;
		double t = seconds_now();
		if (tty && !finished && t - last >= every) {
			last = t;
			fprintf(s->diag, "\rgpumemtrace: reading %s: %zu of %zu traces",
				gmt_esc(dir), atomic_load(&w->done), w->n);
			fflush(s->diag);
			shown = true;
		}
		if (finished)
			break;
		struct timespec nap = {0, 20 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
	if (shown)
		fprintf(s->diag, "\r\033[K");
}

/* How many traces to read at once: GMT_JOBS (the tests' switch), else the CPUs this process may
 * run on, at most 16. */
static size_t
session_jobs(size_t files)
{
	size_t n = gmt_jobs();

	return n < files ? n : files;
}

/* Read @p names of @p dir into @p s; false when the threads could not be had (nothing read). */
static bool
add_parallel(struct gmt_session *s, const char *dir, char **names, size_t n)
{
	size_t nthreads = session_jobs(n), started = 0;
	/* a thread per trace: each trace read by its thread alone (the CPUs are taken) */
	struct gmt_session_options one = s->opt;
	one.read.jobs = 1;
	one.read.progress = NULL; /* the directory's line instead (dir_wait()) */
	struct dir_work w = {.opt = &one, .n = n};
	pthread_t *th;

	if (nthreads < 2)
		return false;
	w.jobs = calloc(n, sizeof(*w.jobs));
	th = calloc(nthreads, sizeof(*th));
	if (!w.jobs || !th) {
		free(w.jobs);
		free(th);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		w.jobs[i].path = gmt_path_join(dir, names[i]);
	for (size_t i = 0; i < n; i++)
		if (!w.jobs[i].path)
			w.jobs[i].rc = -3; /* said below */
	atomic_store(&w.next, 0);
	/* 4 MiB of stack each (jansson's nesting limit needs about a quarter of it), not the
	 * default 8: the address space a directory's analysis takes stays near one reader's */
	pthread_attr_t attr;
	bool have_attr = pthread_attr_init(&attr) == 0;
	if (have_attr)
		pthread_attr_setstacksize(&attr, 4u << 20);
	for (size_t i = 0; i < nthreads; i++) {
		atomic_fetch_add(&w.running, 1);
		if (pthread_create(&th[started], have_attr ? &attr : NULL, dir_worker_main, &w) ==
		    0)
			pthread_setname_np(th[started++], "gmt-dir"); /* for top and perf */
		else
			atomic_fetch_sub(&w.running, 1);
	}
	if (have_attr)
		pthread_attr_destroy(&attr);
	if (started == 0) {
		for (size_t i = 0; i < n; i++)
			free(w.jobs[i].path);
		free(w.jobs);
		free(th);
		return false;
	}
	dir_wait(s, &w, dir);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < n; i++) {
		struct dir_job *j = &w.jobs[i];
		if (j->msgs_len)
			fwrite(j->msgs, 1, j->msgs_len, s->diag);
		free(j->msgs);
		if (j->rc == -3) {
			fprintf(s->diag, "%s: out of memory\n", gmt_esc(dir));
			add_lost(s, dir, "out of memory");
			s->unreadable++;
			continue;
		}
		take(s, j->path, j->rc, j->t, j->m, j->why);
		free(j->path);
	}
	free(w.jobs);
	free(th);
	return true;
}

int
gmt_session_add_path(struct gmt_session *s, const char *path)
{
	size_t before = s->n;
	struct stat st;
	char **names;
	int n;

	if (strcmp(path, GMT_TRACE_STDIN) == 0)
		return gmt_session_add_file(s,
					    path); /* standard input: a trace, never a directory */
	if (stat(path, &st) != 0) {
		char why[GMT_TRACE_WHY];
		snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
		fprintf(s->diag, "%s: %s\n", gmt_esc(path), why);
		add_lost(s, path, why);
		s->unreadable++;
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return add_named(s, path);
	n = gmt_trace_files(path, &names);
	if (n < 0) {
		char why[GMT_TRACE_WHY];
		snprintf(why, sizeof(why), "cannot read directory: %s", strerror(-n));
		fprintf(s->diag, "%s: %s\n", gmt_esc(path), why);
		add_lost(s, path, why);
		s->unreadable++;
		return -1;
	}
	if (n == 0) {
		static const char none[] =
		    "no trace files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.pickle) in this directory";
		fprintf(s->diag, "%s: %s\n", gmt_esc(path), none);
		add_lost(s, path, none);
		s->unreadable++;
	}
	bool parallel = n > 1 && add_parallel(s, path, names, (size_t)n);
	for (int i = 0; i < n; i++) {
		char *p = parallel ? NULL : gmt_path_join(path, names[i]);

		if (p) {
			gmt_session_add_file(s, p);
		} else if (!parallel) {
			fprintf(s->diag, "%s: out of memory\n", gmt_esc(path));
			add_lost(s, path, "out of memory");
			s->unreadable++;
		}
		free(p);
		free(names[i]);
	}
	free(names);
	return s->n > before ? 0 : -1;
}

void
gmt_session_free(struct gmt_session *s)
{
	for (size_t i = 0; i < s->n; i++) {
		gmt_callstacks_free(s->procs[i].stacks);
		gmt_model_free(s->procs[i].model);
		gmt_trace_free(s->procs[i].trace);
	}
	free(s->procs);
	for (size_t i = 0; i < s->lost.n; i++) {
		free(s->lost.v[i].file);
		free(s->lost.v[i].why);
	}
	free(s->lost.v);
	gmt_symbolizer_free(s->sym);
	*s = (struct gmt_session){.opt = s->opt, .diag = s->diag};
}

bool
gmt_session_has_label(const struct gmt_session *s, const char *label)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->procs[i].trace->nmarkers; k++)
			if (s->procs[i].trace->markers[k].label &&
			    strcmp(s->procs[i].trace->markers[k].label, label) == 0)
				return true;
	return false;
}
