/*
 * @brief `gpumemtrace run`: trace a program with libgpumemtrace.so, then summarize its traces.
 *
 * The launcher does what a user would do by hand (LD_PRELOAD plus GPUMEMTRACE_OUTPUT_DIR) and
 * then behaves like the program: the signals that would stop it (SIGTERM, SIGHUP, SIGINT,
 * SIGQUIT) go to the program, the launcher waits for it and summarizes, and our exit status is
 * the program's, so `gpumemtrace run -- make test` can stand in for `make test` in a script.
 *
 * It also makes the `gpumemtrace` Python module (python/, markers from Python: docs/markers.md)
 * importable by the program, by prepending its directory to PYTHONPATH.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/report/report.h"
#include "cli.h"

#define LIB_NAME "libgpumemtrace.so"
/* defined by every version of the tracer library (its public API, gpumemtrace.h) */
#define LIB_SYMBOL "gmt_mark"

static void
usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: gpumemtrace run [-o DIR] [--] CMD ARGS...\n"
	    "\n"
	    "Run CMD with the tracer preloaded. Every process of CMD that uses GPU memory writes\n"
	    "one trace file into DIR; a short summary is printed on standard error at the end.\n"
	    "\n"
	    "Options:\n"
	    "  -o, --output DIR  where the traces go (created if missing); default a new\n"
	    "                    directory gpumemtrace-YYYYmmdd-HHMMSS in the current directory\n"
	    "  -h, --help        show this help\n"
	    "  -V, --version     show the version\n"
	    "\n"
	    "The tracer library is GPUMEMTRACE_LIB if set, else " LIB_NAME " next to this\n"
	    "program (../src/ in a build tree, ../lib/ or ../lib/x86_64-linux-gnu/ when\n"
	    "installed). Existing LD_PRELOAD entries are kept, after the tracer.\n"
	    "\n"
	    "The Python module gpumemtrace (markers and ranges from Python) is made importable:\n"
	    "its directory is put first in PYTHONPATH.\n"
	    "\n"
	    "SIGTERM, SIGHUP, SIGINT and SIGQUIT sent to gpumemtrace are passed on to CMD\n"
	    "(Ctrl-C at the terminal reaches CMD itself); gpumemtrace then waits for CMD and\n"
	    "prints its summary. If gpumemtrace itself is killed, CMD gets SIGTERM.\n"
	    "\n"
	    "Exit status: CMD's own (128+N if it was killed by signal N), 127 if CMD was not\n"
	    "found, 126 if it could not be executed, 2 on a usage error or when the tracer\n"
	    "library or the output directory is not available.\n");
}

// --- the tracer library -----------------------------------------------------------------------

/*
 * @p path made absolute in @p out (PATH_MAX), its file name kept: libgpumemtrace.so, not the
 * versioned file that link resolves to, since the tracer recognises its own
 * CUDA_INJECTION64_PATH by that name (a child of a traced process would warn otherwise).
 */
static bool
try_lib(const char *path, char *out)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	size_t n;

	if (access(path, R_OK) != 0)
		return false;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (!realpath(dir[0] ? dir : "/", out))
		return false;
	n = strlen(out);
	return snprintf(out + n, PATH_MAX - n, "%s%s", n > 1 ? "/" : "", name) <
	       (int)(PATH_MAX - n);
}

// --- is it the tracer? ------------------------------------------------------------------------
//
// A library that the loader cannot preload (not an ELF file, another machine's, an executable)
// is skipped by ld.so with a message the program's output may bury, and one that is not the
// tracer loads and does nothing: either way the program runs untraced and the summary would only
// say it "made no GPU memory call". So the library is read before the program starts (never
// loaded here: its constructors would run in the launcher): an ELF shared object of this
// program's class, byte order and machine whose dynamic symbols define LIB_SYMBOL.

static bool
read_at(int fd, void *buf, size_t len, uint64_t off, uint64_t size)
{
	if (off > size || len > size - off)
		return false;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* This program's own ELF header (class, byte order and machine the library must match). */
static bool
own_ehdr(ElfW(Ehdr) * out)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && pread(fd, out, sizeof(*out), 0) == (ssize_t)sizeof(*out);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Whether the dynamic symbol table (section @p dynsym) defines @p name. */
static bool
defines_symbol(
    int fd, uint64_t size, const ElfW(Shdr) * sh, size_t nsh, size_t dynsym, const char *name)
{
	const ElfW(Shdr) *sym = &sh[dynsym];
	size_t nlen = strlen(name);
	bool found = false;

	if (sym->sh_entsize != sizeof(ElfW(Sym)) || sym->sh_link >= nsh)
		return false;
	const ElfW(Shdr) *str = &sh[sym->sh_link];
	uint64_t nsym = sym->sh_size / sizeof(ElfW(Sym));
	char *strtab = str->sh_size <= size ? malloc(str->sh_size ? str->sh_size : 1) : NULL;
	if (!strtab || !read_at(fd, strtab, str->sh_size, str->sh_offset, size)) {
		free(strtab);
		return false;
	}
	for (uint64_t i = 1; i < nsym && !found; i++) {
		ElfW(Sym) y;
		if (!read_at(fd, &y, sizeof(y), sym->sh_offset + i * sizeof(y), size))
			break;
		if (y.st_shndx == SHN_UNDEF || y.st_name >= str->sh_size ||
		    str->sh_size - y.st_name <= nlen)
			continue;
		found = memcmp(strtab + y.st_name, name, nlen + 1) == 0;
	}
	free(strtab);
	return found;
}

/* NULL when @p path is a tracer library this program can preload, else why not. */
static const char *
not_a_tracer(const char *path)
{
	static char why[160];
	ElfW(Ehdr) eh, own;
	struct stat st;
	const char *bad = NULL;
	ElfW(Shdr) *sh = NULL;

	/* O_NONBLOCK: a FIFO named here is refused, not waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return strerror(errno);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		bad = "not a regular file";
		goto out;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (!read_at(fd, &eh, sizeof(eh), 0, size) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		bad = "not an ELF file (not a shared library)";
		goto out;
	}
	if (!own_ehdr(&own) || eh.e_ident[EI_CLASS] != own.e_ident[EI_CLASS] ||
	    eh.e_ident[EI_DATA] != own.e_ident[EI_DATA] || eh.e_machine != own.e_machine) {
		snprintf(why, sizeof(why),
			 "an ELF file for another machine or word size (e_machine %u, class %u)",
			 (unsigned)eh.e_machine, (unsigned)eh.e_ident[EI_CLASS]);
		bad = why;
		goto out;
	}
	if (eh.e_type != ET_DYN) {
		bad = eh.e_type == ET_EXEC ? "an executable, not a shared library"
					   : "not a shared library (ELF type is not ET_DYN)";
		goto out;
	}
	size_t nsh = eh.e_shnum, dynsym = SIZE_MAX;
	if (eh.e_shentsize != sizeof(ElfW(Shdr)) || nsh == 0 || !(sh = calloc(nsh, sizeof(*sh))) ||
	    !read_at(fd, sh, nsh * sizeof(*sh), eh.e_shoff, size)) {
		bad = "a damaged or stripped ELF file (no readable section headers)";
		goto out;
	}
	for (size_t i = 0; i < nsh && dynsym == SIZE_MAX; i++)
		if (sh[i].sh_type == SHT_DYNSYM)
			dynsym = i;
	if (dynsym == SIZE_MAX || !defines_symbol(fd, size, sh, nsh, dynsym, LIB_SYMBOL))
		bad = "an ELF shared object that does not define " LIB_SYMBOL
		      " (not the gpumemtrace tracer, " LIB_NAME ")";
out:
	free(sh);
	close(fd);
	return bad;
}

/* Fills @p out (PATH_MAX) with an absolute path; false (and a message) when there is none. */
static bool
find_lib(char *out)
{
	static const char *const rel[] = {
	    "../src/" LIB_NAME,			 /* build tree: build/tools/ -> build/src/ */
	    "../src/capture/" LIB_NAME,		 /* build tree, library left in its module dir */
	    "../lib/" LIB_NAME,			 /* installed: PREFIX/bin -> PREFIX/lib */
	    "../lib/x86_64-linux-gnu/" LIB_NAME, /* installed with Debian's multiarch libdir */
	    "../lib64/" LIB_NAME,
	};
	const char *env = getenv("GPUMEMTRACE_LIB");
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;

	if (env && *env) {
		const char *bad = NULL;
		if (try_lib(env, out) && !(bad = not_a_tracer(out)))
			return true;
		if (!bad)
			bad = access(env, R_OK) != 0 ? strerror(errno) : "cannot resolve the path";
		fprintf(stderr, "gpumemtrace run: GPUMEMTRACE_LIB=%s: %s\n", gmt_esc(env), bad);
		return false;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
			if (!try_lib(cand, out))
				continue;
			const char *bad = not_a_tracer(out);
			if (!bad)
				return true;
			/* a damaged installation: said, not passed over for another copy */
			fprintf(stderr, "gpumemtrace run: the tracer library %s: %s\n",
				gmt_esc(out), bad);
			return false;
		}
	}
	fprintf(stderr,
		"gpumemtrace run: cannot find the tracer library " LIB_NAME
		" (looked in ../src/, ../lib/ and ../lib/x86_64-linux-gnu/ next to %s);\n"
		"set GPUMEMTRACE_LIB=/path/to/" LIB_NAME "\n",
		n > 0 ? gmt_esc(exe) : "this program");
	return false;
}

// --- the Python module ------------------------------------------------------------------------

static bool
has_module(const char *dir)
{
	char init[PATH_MAX + 64];

	if (snprintf(init, sizeof(init), "%s/gpumemtrace/__init__.py", dir) >= (int)sizeof(init))
		return false;
	return access(init, R_OK) == 0;
}

/* A build tree's source directory, from the build directory's meson-info/meson-info.json. */
static bool
build_tree_source(const char *builddir, char *out)
{
	char path[PATH_MAX + 64];
	json_t *doc, *src;
	bool ok = false;

	if (snprintf(path, sizeof(path), "%s/meson-info/meson-info.json", builddir) >=
	    (int)sizeof(path))
		return false;
	doc = json_load_file(path, 0, NULL);
	src = json_object_get(json_object_get(doc, "directories"), "source");
	if (json_is_string(src) && json_string_length(src) < PATH_MAX - 16) {
		snprintf(out, PATH_MAX, "%s", json_string_value(src));
		ok = true;
	}
	json_decref(doc);
	return ok;
}

/*
 * The directory that holds gpumemtrace/__init__.py, into @p out (PATH_MAX): installed,
 * PREFIX/bin/gpumemtrace -> PREFIX/share/gpumemtrace/python; in a build tree,
 * BUILD/tools/gpumemtrace -> the source tree's python/ (GMT_PYTHON_SRCDIR when the build defines
 * it, else the source directory meson-info names). False when there is none.
 */
static bool
find_python_dir(char *out)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], src[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/../share/gpumemtrace/python", exe);
	if (has_module(cand))
		return realpath(cand, out) != NULL;
#ifdef GMT_PYTHON_SRCDIR
	if (has_module(GMT_PYTHON_SRCDIR))
		return realpath(GMT_PYTHON_SRCDIR, out) != NULL;
#endif
	snprintf(cand, sizeof(cand), "%s/..", exe);
	if (build_tree_source(cand, src)) {
		snprintf(cand, sizeof(cand), "%s/python", src);
		if (has_module(cand))
			return realpath(cand, out) != NULL;
	}
	return false;
}

/*
 * GMT_CLI: this executable's path, for what the program runs of ours (the pytest plugin's
 * reports) when no gpumemtrace is on PATH (a build tree, a path given in full). Not a
 * GPUMEMTRACE_ name: the tracer warns about those it does not know.
 */
static int
set_cli_path(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return 0; /* the program then looks on PATH, as without run */
	exe[n] = '\0';
	return setenv("GMT_CLI", exe, 1);
}

/* PYTHONPATH=DIR[:old]; without the module nothing changes (Python programs run as before). */
static int
set_pythonpath(void)
{
	const char *old = getenv("PYTHONPATH");
	char dir[PATH_MAX], *val;
	int rc;

	if (!find_python_dir(dir))
		return 0;
	if (old && *old)
		rc = asprintf(&val, "%s:%s", dir, old);
	else
		rc = asprintf(&val, "%s", dir);
	if (rc < 0)
		return -ENOMEM;
	rc = setenv("PYTHONPATH", val, 1);
	free(val);
	return rc ? -errno : 0;
}

// --- the output directory ---------------------------------------------------------------------

/*
 * mkdir -p @p path. @p made: the length of the prefix of @p path that names the first directory
 * this call created (SIZE_MAX: none was), so that the run can take back what it made
 * (remove_made()).
 */
static int
mkdir_p(const char *path, size_t *made)
{
	char *p = strdup(path);
	int rc = 0;

	*made = SIZE_MAX;
	if (!p)
		return -ENOMEM;
	/* from the second byte: a leading '/' is the root, not a component to make */
	for (char *s = p + (p[0] != '\0');; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0777) == 0) {
			if (*made == SIZE_MAX)
				*made = (size_t)(s - p);
		} else if (errno != EEXIST) {
			rc = -errno;
		}
		*s = c;
		if (rc || !c)
			break;
	}
	free(p);
	return rc;
}

/*
 * After a run that wrote no trace: remove the directories it created for them (@p dir and its
 * parents down to the prefix of length @p made), while they are empty. True when @p dir is gone.
 */
static bool
remove_made(const char *dir, size_t made)
{
	char *p = made == SIZE_MAX ? NULL : strdup(dir);
	bool gone = false;

	if (!p)
		return false;
	for (size_t n = strlen(p); n > 0 && p[n - 1] == '/' && n > made; n--)
		p[n - 1] = '\0'; /* "out/" */
	while (strlen(p) >= made && rmdir(p) == 0) {
		gone = true;
		char *slash = strrchr(p, '/');
		if (!slash || (size_t)(slash - p) < made)
			break;
		*slash = '\0';
	}
	free(p);
	return gone;
}

/*
 * 0 when the tracer will be able to create its files in @p dir, else -errno. Checked before the
 * program starts: otherwise it would run untraced, and "the program made no GPU memory call"
 * would be the only, wrong, hint. A file is made and removed, because permissions alone do not
 * tell (root, a read-only mount, ACLs, NFS).
 */
static int
check_writable(const char *dir)
{
	struct stat st;
	char probe[PATH_MAX + 64];
	int fd;

	if (stat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR; /* mkdir -p of an existing regular file "succeeds" */
	snprintf(probe, sizeof(probe), "%s/.gpumemtrace-probe-XXXXXX", dir);
	fd = mkstemp(probe);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(probe);
	return 0;
}

/* A new gpumemtrace-YYYYmmdd-HHMMSS[-N]: never reuse a directory of an earlier run. */
static int
make_default_dir(char *out, size_t max)
{
	time_t now = time(NULL);
	struct tm tm;
	char base[64];

	localtime_r(&now, &tm);
	strftime(base, sizeof(base), "gpumemtrace-%Y%m%d-%H%M%S", &tm);
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(out, max, "%s", base);
		else
			snprintf(out, max, "%s-%d", base, i);
		if (mkdir(out, 0777) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

// --- after the run: which traces are ours -----------------------------------------------------
//
// The output directory may hold traces of earlier runs (-o reused). Ours are the files that are
// new, or that changed since we looked (a reused pid overwrote an old trace of the same name).

struct seen {
	char *name;
	struct stat st;
};

static size_t
snapshot_dir(const char *dir, struct seen **out)
{
	char **names;
	int n = gmt_trace_files(dir, &names);
	struct seen *v;
	size_t k = 0;

	*out = NULL;
	if (n <= 0)
		return 0;
	v = calloc((size_t)n, sizeof(*v));
	for (int i = 0; i < n; i++) {
		char *p = gmt_path_join(dir, names[i]);

		if (v && p && stat(p, &v[k].st) == 0)
			v[k++].name = names[i];
		else
			free(names[i]);
		free(p);
	}
	free(names);
	*out = v;
	return k;
}

static bool
unchanged(const struct seen *before, size_t n, const char *name, const struct stat *st)
{
	for (size_t i = 0; i < n; i++) {
		const struct stat *b = &before[i].st;

		if (strcmp(before[i].name, name) != 0)
			continue;
		return b->st_ino == st->st_ino && b->st_size == st->st_size &&
		       b->st_mtim.tv_sec == st->st_mtim.tv_sec &&
		       b->st_mtim.tv_nsec == st->st_mtim.tv_nsec;
	}
	return false;
}

/* The summary of this run's traces; returns how many there were (0: nothing printed). */
static size_t
summarize(const char *dir, const struct seen *before, size_t nbefore)
{
	struct gmt_session_options so;
	struct gmt_session in;
	char **after;
	int nafter = gmt_trace_files(dir, &after);
	size_t files = 0;

	gmt_cli_session_options(&so);
	gmt_session_init(&in, &so, stderr);
	for (int i = 0; i < nafter; i++) {
		char *p = gmt_path_join(dir, after[i]);
		struct stat st;

		if (p && stat(p, &st) == 0 && !unchanged(before, nbefore, after[i], &st)) {
			gmt_session_add_file(&in, p);
			files++;
		}
		free(p);
		free(after[i]);
	}
	free(after);

	if (files == 0) {
		gmt_session_free(&in);
		return 0;
	}
	fprintf(stderr, "gpumemtrace: %zu trace %s in %s\n", files, files == 1 ? "file" : "files",
		gmt_esc(dir));
	size_t lost = gmt_lost_count(&in.lost);
	if (lost) /* as check's complete-traces says it: the figures below lack them */
		fprintf(stderr,
			"gpumemtrace: %zu trace file%s yielded nothing (said above): %s process%s "
			"%s in none of the figures below\n",
			lost, lost == 1 ? "" : "s", lost == 1 ? "its" : "their",
			lost == 1 ? "" : "es", lost == 1 ? "is" : "are");
	if (in.n && gmt_report_summary(stderr, "gpumemtrace: ", in.procs, in.n) == -ENOMEM)
		fprintf(stderr, "gpumemtrace: out of memory: the summary is incomplete\n");
	fprintf(stderr, "gpumemtrace: full report: gpumemtrace report %s\n", gmt_esc(dir));
	gmt_session_free(&in);
	return files;
}

// --- the command ------------------------------------------------------------------------------

static int
set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int rc;

	/* Ours first so our cudaMalloc is the one bound; keep the user's entries after it. */
	if (old && *old)
		rc = asprintf(&val, "%s:%s", lib, old);
	else
		rc = asprintf(&val, "%s", lib);
	if (rc < 0)
		return -ENOMEM;
	rc = setenv("LD_PRELOAD", val, 1);
	free(val);
	return rc ? -errno : 0;
}

// --- the program's signals ---------------------------------------------------------------------
//
// The launcher stands in for the program, so what a job manager sends it (SLURM's, Kubernetes'
// and CI runners' SIGTERM, a closed terminal's SIGHUP, kill -INT) is meant for the program: each
// is passed on to it, and the launcher stays to wait for it and summarize its traces. Dying with
// the signal instead would leave the program running, orphaned, and its traces unreported.

static const int forwarded[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t child_pid; /* 0 until the program runs */

static void
forward(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	pid_t pid = child_pid;

	(void)uctx;
	/*
	 * Ctrl-C and Ctrl-\ at the terminal (si_code SI_KERNEL) reach the whole foreground
	 * process group, the program already has them: a second copy could cut its own cleanup
	 * short. Sent by someone (SI_USER, SI_QUEUE...), they were for us alone: pass them on.
	 */
	if ((sig == SIGINT || sig == SIGQUIT) && si && si->si_code == SI_KERNEL)
		return;
	if (pid > 0) {
		/* a program that made itself a process group leader gets it for its whole group */
		if (getpgid(pid) == pid)
			kill(-pid, sig);
		else
			kill(pid, sig);
	}
	errno = saved;
}

/*
 * Handlers for the forwarded signals, except those ignored when we started (nohup's SIGHUP: the
 * program inherits the ignoring). @p old receives the previous actions.
 */
static void
forward_signals(struct sigaction old[NFORWARDED])
{
	struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};

	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
}

static void
restore_signals(const struct sigaction old[NFORWARDED])
{
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &old[i], NULL);
}

static void
block_forwarded(int how, sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(how, &set, old);
}

static int
wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "gpumemtrace run: waitpid: %s\n", strerror(errno));
			return 127;
		}
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 127;
}

int
gmt_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct sigaction old_act[NFORWARDED], ign = {.sa_handler = SIG_IGN}, old_pipe;
	char lib[PATH_MAX], dir[PATH_MAX], absdir[PATH_MAX];
	sigset_t old_mask;
	const char *output = NULL;
	struct seen *before;
	size_t nbefore, made = SIZE_MAX;
	int c, err, code;
	pid_t pid, parent;

	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, the rest is the command and its own options. */
	while ((c = getopt_long(argc, argv, "+o:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("run", argv); return gmt_usage_hint("run");
		}
	}
	if (output && !*output) {
		fprintf(stderr, "gpumemtrace run: -o needs a directory, not an empty value\n");
		return gmt_usage_hint("run");
	}
	if (optind >= argc) {
		fprintf(stderr, "gpumemtrace run: no command given\n");
		return gmt_usage_hint("run");
	}
	if (!find_lib(lib))
		return GMT_EXIT_USAGE;

	if (output) {
		snprintf(dir, sizeof(dir), "%s", output);
		err = mkdir_p(dir, &made);
	} else {
		err = make_default_dir(dir, sizeof(dir));
		made = 0; /* all of it is ours */
	}
	if (err || !realpath(dir, absdir)) {
		fprintf(stderr, "gpumemtrace run: cannot create the output directory %s: %s\n",
			gmt_esc(dir), strerror(err ? -err : errno));
		return GMT_EXIT_USAGE;
	}
	if ((err = check_writable(absdir)) != 0) {
		fprintf(stderr, "gpumemtrace run: cannot write into the output directory %s: %s\n",
			gmt_esc(dir), strerror(-err));
		remove_made(dir, made);
		return GMT_EXIT_USAGE;
	}
	if (set_preload(lib) != 0 || setenv("GPUMEMTRACE_OUTPUT_DIR", absdir, 1) != 0 ||
	    set_pythonpath() != 0 || set_cli_path() != 0) {
		fprintf(stderr, "gpumemtrace run: cannot set the environment: %s\n",
			strerror(errno));
		return GMT_EXIT_USAGE;
	}

	nbefore = snapshot_dir(absdir, &before);

	fflush(NULL);
	/*
	 * Blocked from before the fork until the handlers know the program's pid: a SIGTERM in
	 * between is held, then forwarded, never lost and never the launcher's death.
	 */
	block_forwarded(SIG_BLOCK, &old_mask);
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "gpumemtrace run: fork: %s\n", strerror(errno));
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		return GMT_EXIT_USAGE;
	}
	if (pid == 0) {
		/*
		 * A launcher killed outright (SIGKILL, which cannot be forwarded) still leaves no
		 * orphan: the program gets SIGTERM. Checked after setting it, in case we already
		 * died.
		 */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			raise(SIGTERM);
		/* the program starts with the signal mask and actions we were given */
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		execvp(argv[optind], argv + optind);
		err = errno;
		/* The shell's conventions: 127 not found, 126 found but not executable. */
		fprintf(stderr, "gpumemtrace run: %s: %s\n", gmt_esc(argv[optind]),
			err == ENOENT ? "command not found" : strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	forward_signals(old_act);
	/* a closed stderr must not kill us before the summary's exit status */
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	code = wait_child(pid);
	child_pid = 0;
	/* the program is gone: a signal now may stop the summary, as it would stop a report */
	restore_signals(old_act);

	if (summarize(dir, before, nbefore) == 0) {
		/* a program that made no GPU memory call leaves no empty directory behind */
		bool removed = remove_made(dir, made);
		fprintf(stderr,
			"gpumemtrace: no trace was written to %s (the program made no GPU memory "
			"call the tracer saw)%s\n",
			gmt_esc(dir), removed ? "; the empty directory was removed" : "");
	}
	sigaction(SIGPIPE, &old_pipe, NULL);
	for (size_t i = 0; i < nbefore; i++)
		free(before[i].name);
	free(before);
	return code;
}
