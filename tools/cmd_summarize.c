/*
 * @brief `gpumemtrace summarize TRACE... [-o DIR]`: one bounded summary file per trace
 * (report/summary.h), written beside the trace or into DIR, several traces at once.
 *
 * Each trace is its own job: read, replayed and symbolized in a session of its own, summarized,
 * written, freed, so memory is a few traces' (the jobs running), never every trace's. Jobs run
 * in child processes, not threads: the analysis keeps per-process state (the stack builder's
 * shared working memory, symbols/callstack.c) that one session at a time uses, and a child that
 * dies takes only its trace with it. A child's messages go to a file of its own, copied to
 * stderr in the order of the inputs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/reader/trace_input.h"
#include "analysis/report/keys.h"
#include "analysis/report/summary.h"
#include "cli.h"
#include "gmt-config.h"
#include "util/outfile.h"

#define SUMMARY_SUFFIX ".summary.json"

/* What each summary states of its wall clock's uncertainty (--clock-uncertainty). */
static double clock_uncertainty_s = GMT_SUMMARY_CLOCK_UNCERTAINTY_S;

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace summarize [-o DIR] TRACE...\n"
	    "\n"
	    "Write one summary per trace: what a merge of many ranks needs, symbolized here\n"
	    "(where the program's libraries are) and bounded in size however long the trace\n"
	    "(the peak per device with its wall-clock time and top %d sites with their stacks,\n"
	    "the tensor level, leaks, failures and their causes, growth, NCCL's memory, a\n"
	    "timeline of at most %d points per device; docs/report-formats.md). Every figure\n"
	    "is the one 'report --format json' gives for that trace.\n"
	    "TRACE is a trace file or a directory (every trace in it). The summary of\n"
	    "DIR/NAME.jsonl (.jsonl.zst, .jsonl.gz, .pickle) is DIR/NAME" SUMMARY_SUFFIX ".\n"
	    "A pipe named as TRACE (<(zstdcat t.jsonl.zst)) is read as '-' is; give -o DIR.\n"
	    "\n"
	    "Options:\n"
	    "  -o, --output DIR  write the summaries into DIR instead of beside the traces\n"
	    "      --clock-uncertainty S\n"
	    "                    how far this host's wall clock may be from the other\n"
	    "                    hosts' (default 0.01 s, NTP): a merge names the rank that\n"
	    "                    failed first only when the gap is larger\n"
	    "  -h, --help        show this help\n"
	    "  -V, --version     show the version\n"
	    "\n"
	    "Each summary written is named on standard output, one per line. GMT_JOBS=N\n"
	    "summarizes N traces at once (default: one per CPU, at most 16). A trace that\n"
	    "yielded nothing (empty: its process ended before its tracer wrote a line) gets a\n"
	    "summary saying so (lost_traces), for check and report over the summaries.\n"
	    "\n"
	    "Exit status: 0 every readable trace summarized (an unreadable one is named on\n"
	    "standard error, the others are still summarized), 2 usage error or a summary\n"
	    "that could not be written, 3 no trace could be read.\n",
	    GMT_SUMMARY_TOP, GMT_SUMMARY_TIMELINE_POINTS);
}

enum job_status {
	JOB_OK = 0,
	JOB_UNREADABLE, /* no trace in it (said) */
	JOB_UNWRITTEN,	/* its summary could not be written (said) */
	JOB_SKIPPED,	/* its summary's name is another trace's (said) */
	JOB_LOST,	/* yielded nothing (said): written, its summary says so; unreadable */
};

/* A child's exit status: CHILD_EXIT + its job_status (anything else: it did not finish). */
#define CHILD_EXIT 64

struct job {
	char *trace; /* the trace's path */
	char *out;   /* its summary's path */
	bool named;  /* named on the command line, not found in a directory: may be a pipe */
	FILE *log;   /* what its child said, until copied to stderr */
	pid_t pid;   /* its child while it runs, else 0 */
	bool done;   /* finished (or never to run), its messages ready */
	enum job_status status;
};

struct work {
	struct job *jobs;
	size_t n;
	size_t shown; /* jobs whose messages are on stderr, in input order */
};

/* NAME.jsonl(.zst|.gz) or NAME.pickle -> NAME.summary.json; standard input is "stdin". */
static char *
summary_name(const char *trace)
{
	static const char *const suffixes[] = {".jsonl.zst", ".jsonl.gz", ".jsonl", ".pickle"};
	const char *base = strcmp(trace, GMT_TRACE_STDIN) == 0 ? "stdin" : gmt_path_base(trace);
	size_t len = strlen(base);
	char *name;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sl = strlen(suffixes[i]);
		if (len > sl && strcmp(base + len - sl, suffixes[i]) == 0) {
			len -= sl;
			break;
		}
	}
	if (asprintf(&name, "%.*s%s", (int)len, base, SUMMARY_SUFFIX) < 0)
		return NULL;
	return name;
}

/* The summary's path: in @p dir, else beside the trace. */
static char *
summary_path(const char *trace, const char *dir)
{
	char *name = summary_name(trace), *path = NULL;

	if (!name)
		return NULL;
	if (dir) {
		path = gmt_path_join(dir, name);
	} else if (strcmp(trace, GMT_TRACE_STDIN) == 0 || !strchr(trace, '/')) {
		path = strdup(name);
	} else {
		const char *base = gmt_path_base(trace);
		char *d = strndup(trace, (size_t)(base - trace));
		path = d ? gmt_path_join(d, name) : NULL;
		free(d);
	}
	free(name);
	return path;
}

/* Write @p doc to @p path (never through a link planted there). 0, or -1 after a message. */
static int
write_summary(FILE *diag, const char *path, const json_t *doc, bool pipe_trace)
{
	struct gmt_outfile f = {.dirfd = -1};
	char why[GMT_OUTFILE_WHY];

	if (gmt_outfile_open(&f, path, why) != 0) {
		fprintf(diag, "gpumemtrace summarize: cannot write %s: %s%s\n", gmt_esc(path), why,
			pipe_trace ? " (its trace is a pipe: give -o DIR)" : "");
		return -1;
	}
	if (json_dumpf(doc, f.f, JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0 ||
	    fputc('\n', f.f) == EOF || ferror(f.f)) {
		fprintf(diag, "gpumemtrace summarize: cannot write %s: %s\n", gmt_esc(path),
			strerror(errno ? errno : EIO));
		gmt_outfile_abort(&f);
		return -1;
	}
	if (gmt_outfile_close(&f, why) != 0) {
		fprintf(diag, "gpumemtrace summarize: cannot write %s: %s\n", gmt_esc(path), why);
		return -1;
	}
	return 0;
}

/*
 * One trace: read, summarized, written; what it says goes to @p diag. A trace that yielded
 * nothing (empty: its process ended before its tracer wrote a line) has the summary that says so
 * (gmt_summary_lost_doc()): a merge or a check over the summaries then knows its rank is missing,
 * where no file at all would let them pass over it.
 */
static enum job_status
run_job(struct job *j, FILE *diag)
{
	struct gmt_session_options so;
	struct gmt_session s;
	enum job_status st = JOB_OK;
	json_t *doc;

	gmt_cli_session_options(&so);
	gmt_session_init(&s, &so, diag);
	/* a trace the user named is read as `report` reads it: a pipe there too (`summarize -o DIR
	 * <(zstdcat t.zst)`); a directory's traces are regular files only */
	bool read = (j->named ? gmt_session_add_path(&s, j->trace)
			      : gmt_session_add_file(&s, j->trace)) == 0 &&
		    s.n > 0;
	if (!read && gmt_lost_count(&s.lost) == 0) {
		gmt_session_free(&s);
		return JOB_UNREADABLE;
	}
	if (read) {
		doc = gmt_summary_doc(s.procs, s.n, 0, &s.lost);
	} else {
		st = JOB_LOST;
		doc = gmt_summary_lost_doc(&s.lost);
	}
	if (!doc) {
		fprintf(diag, "gpumemtrace summarize: %s: out of memory\n", gmt_esc(j->trace));
		st = JOB_UNWRITTEN;
	} else {
		json_object_set_new(doc, GMT_SK_SUMMARIZED_BY, json_string(GMT_VERSION));
		if (read)
			json_object_set_new(doc, GMT_SK_CLOCK_UNCERTAINTY_S,
					    json_real(clock_uncertainty_s));
		struct stat ts;
		bool pipe_trace = j->named && stat(j->trace, &ts) == 0 && S_ISFIFO(ts.st_mode);
		if (write_summary(diag, j->out, doc, pipe_trace) != 0)
			st = JOB_UNWRITTEN;
	}
	json_decref(doc);
	gmt_session_free(&s);
	return st;
}

/* How many traces to summarize at once: GMT_JOBS, else the CPUs we may run on, at most 16. */
static size_t
jobs_at_once(size_t n)
{
	const char *v = getenv("GMT_JOBS");
	long k = v && *v ? strtol(v, NULL, 10) : 0;
	cpu_set_t set;

	if (k <= 0 && sched_getaffinity(0, sizeof(set), &set) == 0)
		k = CPU_COUNT(&set);
	if (k <= 0)
		k = 1;
	if (k > 16)
		k = 16;
	return (size_t)k < n ? (size_t)k : n;
}

/* The messages of the finished jobs that follow the ones shown, in input order. */
static void
show_done(struct work *w)
{
	char buf[8192];
	size_t got;

	for (; w->shown < w->n && w->jobs[w->shown].done; w->shown++) {
		struct job *j = &w->jobs[w->shown];

		if (!j->log)
			continue;
		fflush(j->log);
		rewind(j->log);
		while ((got = fread(buf, 1, sizeof(buf), j->log)) > 0)
			fwrite(buf, 1, got, stderr);
		fclose(j->log);
		j->log = NULL;
	}
}

/* Start job @p j in a child, its stderr to a file of its own; false: run it here instead. */
static bool
start_job(struct job *j)
{
	pid_t pid;

	j->log = tmpfile(); /* without one, the child's messages go to stderr as they come */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		if (j->log)
			dup2(fileno(j->log), STDERR_FILENO);
		_exit(CHILD_EXIT + (int)run_job(j, stderr));
	}
	if (pid < 0) {
		if (j->log)
			fclose(j->log);
		j->log = NULL;
		return false;
	}
	j->pid = pid;
	return true;
}

/* A child ended: its job's status from its exit. */
static void
end_job(struct job *j, int wstatus)
{
	j->pid = 0;
	j->done = true;
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) >= CHILD_EXIT &&
	    WEXITSTATUS(wstatus) <= CHILD_EXIT + JOB_LOST) {
		j->status = (enum job_status)(WEXITSTATUS(wstatus) - CHILD_EXIT);
		return;
	}
	j->status = JOB_UNWRITTEN;
	if (j->log) /* said in its place among the messages */
		fprintf(j->log, "gpumemtrace summarize: %s: not summarized: the analysis %s %d\n",
			gmt_esc(j->trace), WIFSIGNALED(wstatus) ? "died of signal" : "exited with",
			WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
	else
		fprintf(stderr, "gpumemtrace summarize: %s: not summarized: the analysis died\n",
			gmt_esc(j->trace));
}

/* Every job, at most jobs_at_once() children at a time; one at a time: here, in order. */
static void
run_all(struct work *w)
{
	size_t at_once = jobs_at_once(w->n), next = 0, running = 0;

	while (next < w->n || running > 0) {
		while (next < w->n && (running < at_once || at_once < 2)) {
			struct job *j = &w->jobs[next++];

			if (j->status != JOB_OK) {
				j->done = true;
			} else if (at_once < 2 || !start_job(j)) {
				j->status = run_job(j, stderr);
				j->done = true;
			} else {
				running++;
			}
			show_done(w);
		}
		if (running == 0)
			break;
		int wstatus;
		pid_t pid = waitpid(-1, &wstatus, 0);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* no child left to wait for: cannot be */
		}
		for (size_t i = 0; i < w->n; i++)
			if (w->jobs[i].pid == pid) {
				end_job(&w->jobs[i], wstatus);
				running--;
				break;
			}
		show_done(w);
	}
	show_done(w);
}

/* Add @p path's traces (a directory: each trace in it) to @p w; false out of memory. */
static bool
add_jobs(struct work *w, size_t *cap, const char *path, const char *dir, FILE *diag)
{
	struct stat st;
	char **names = NULL;
	int n = 0;
	bool ok = true;

	if (strcmp(path, GMT_TRACE_STDIN) != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		n = gmt_trace_files(path, &names);
		if (n < 0) {
			fprintf(diag, "%s: cannot read directory: %s\n", gmt_esc(path),
				strerror(-n));
			return true;
		}
		if (n == 0)
			fprintf(diag,
				"%s: no trace files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.pickle) "
				"in this directory\n",
				gmt_esc(path));
	}
	for (int i = 0; i < (names ? n : 1); i++) {
		struct job *j;

		if (w->n == *cap) {
			size_t c = *cap ? *cap * 2 : 16;
			struct job *nj = realloc(w->jobs, c * sizeof(*nj));
			if (!nj) {
				ok = false;
				break;
			}
			w->jobs = nj;
			*cap = c;
		}
		j = &w->jobs[w->n];
		*j = (struct job){0};
		j->trace = names ? gmt_path_join(path, names[i]) : strdup(path);
		j->named = !names;
		j->out = j->trace ? summary_path(j->trace, dir) : NULL;
		if (!j->trace || !j->out) {
			free(j->trace);
			free(j->out);
			ok = false;
			break;
		}
		w->n++;
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ok;
}

int
gmt_cmd_summarize(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"clock-uncertainty", required_argument, NULL, 'U'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct work w = {0};
	const char *dir = NULL;
	size_t cap = 0, readable = 0, unwritten = 0, lost = 0;
	struct stat st;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'U': {
			char *end;

			errno = 0;
			clock_uncertainty_s = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(clock_uncertainty_s >= 0) ||
			    clock_uncertainty_s > 3600) {
				fprintf(stderr,
					"gpumemtrace summarize: --clock-uncertainty '%s': give "
					"seconds, 0 to 3600 (0.01: NTP, 0.0001: PTP)\n",
					gmt_esc(optarg));
				return gmt_usage_hint("summarize");
			}
			break;
		}
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("summarize", argv); return gmt_usage_hint("summarize");
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace summarize: no trace given\n");
		return gmt_usage_hint("summarize");
	}
	if (dir && stat(dir, &st) != 0) {
		fprintf(stderr, "gpumemtrace summarize: -o %s: %s\n", gmt_esc(dir),
			strerror(errno));
		return gmt_usage_hint("summarize");
	}
	if (dir && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "gpumemtrace summarize: -o %s: not a directory\n", gmt_esc(dir));
		return gmt_usage_hint("summarize");
	}
	for (int i = optind, stdins = 0; i < argc; i++) {
		if (strcmp(argv[i], GMT_TRACE_STDIN) == 0 && ++stdins > 1) {
			fprintf(stderr,
				"gpumemtrace summarize: standard input ('-') given twice\n");
			return gmt_usage_hint("summarize");
		}
		if (strcmp(argv[i], GMT_TRACE_STDIN) == 0 && !dir) {
			fprintf(stderr, "gpumemtrace summarize: standard input ('-') needs -o DIR "
					"(there is no trace file to write beside)\n");
			return gmt_usage_hint("summarize");
		}
		if (!add_jobs(&w, &cap, argv[i], dir, stderr)) {
			fprintf(stderr, "gpumemtrace summarize: out of memory\n");
			rc = GMT_EXIT_UNREADABLE;
			goto out;
		}
	}
	/* two traces whose summaries would have one name (a.jsonl and a.jsonl.zst, or -o DIR
	 * over two directories): the first keeps it, the other is not summarized */
	for (size_t i = 0; i < w.n; i++)
		for (size_t k = 0; k < i; k++)
			if (w.jobs[k].status == JOB_OK &&
			    strcmp(w.jobs[k].out, w.jobs[i].out) == 0) {
				fprintf(stderr,
					"gpumemtrace summarize: %s: not summarized: its summary %s "
					"would replace that of %s\n",
					gmt_esc(w.jobs[i].trace), gmt_esc(w.jobs[i].out),
					gmt_esc(w.jobs[k].trace));
				w.jobs[i].status = JOB_SKIPPED;
				unwritten++;
				break;
			}
	run_all(&w);
	for (size_t i = 0; i < w.n; i++) {
		struct job *j = &w.jobs[i];

		if (j->status == JOB_OK || j->status == JOB_LOST)
			printf("%s\n", gmt_esc(j->out));
		if (j->status == JOB_OK) {
			readable++;
		} else if (j->status == JOB_LOST) {
			lost++; /* written, its trace still unreadable */
		} else if (j->status == JOB_UNWRITTEN) {
			readable++;
			unwritten++;
		}
	}
	if (readable == 0) {
		fprintf(stderr, "gpumemtrace summarize: no readable trace");
		if (lost)
			fprintf(stderr, " (%zu yielded nothing: %s so)", lost,
				lost == 1 ? "its summary says" : "their summaries say");
		fprintf(stderr, "\n");
		rc = GMT_EXIT_UNREADABLE;
	} else if (unwritten) {
		rc = GMT_EXIT_USAGE;
	} else {
		rc = GMT_EXIT_OK;
	}
	if (fflush(stdout) != 0 && rc == GMT_EXIT_OK)
		rc = GMT_EXIT_USAGE;
out:
	for (size_t i = 0; i < w.n; i++) {
		free(w.jobs[i].trace);
		free(w.jobs[i].out);
	}
	free(w.jobs);
	return rc;
}
