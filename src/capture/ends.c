/*
 * @brief The ends of a process image that run no destructor of ours: exec, _exit and the
 * signals whose default action ends the process.
 *
 * An exec replaces the image and takes the writer thread with the old one; _exit ends the process
 * at once (Python's os._exit, which training scripts call at their end to skip a slow or hanging
 * teardown, and which ends multiprocessing's forked workers). Either way what the writer had not
 * flushed yet (up to GPUMEMTRACE_FLUSH_MS of events, or the whole trace of a short run: an empty
 * file) was lost and the trace had no trailer, so the report said the process died. Each
 * function here ends the trace first (gmt_tracer_end_early(): everything written, then a trailer
 * whose reason is "exec" or "_exit") and calls libc's. After an exec, the new image starts a trace
 * of its own if it uses CUDA (the same pid: the next file name). An exec that fails returns to a
 * process whose trace has ended; its later calls are counted as dropped in that trailer, and one
 * line says so. So the trace is not ended for an exec that cannot succeed: a file that is not
 * there or not an executable regular file, or a name found in no directory of PATH (Python's
 * os.execvp tries each directory of PATH with an execv; a program tries a tool and goes on
 * without it): such an exec is passed to libc with the trace running, and fails as it would.
 *
 * libc's execv, execvp and execl* call execve inside libc, not through the PLT: each is wrapped.
 * posix_spawn and system() exec in a child (glibc's own clone): nothing of this process ends. A
 * vfork child (CPython's subprocess execs from one, and _exits when the exec fails) shares this
 * memory and this tracer: it ends nothing (gmt_tracer_end_early() knows it by its pid).
 *
 * A signal that ends the process (a scheduler's SIGTERM at a time limit, Ctrl-C, abort() after an
 * uncaught C++ exception or a failed CUDA check, a segfault) ran no destructor either: the trace
 * lost what was not flushed, often the failed allocation that explains the crash, and a short run
 * left no file. Where the disposition is still the default when the trace starts, a handler of
 * ours ends the trace (trailer reason: the signal's name), then the signal takes its default
 * action as it would have: re-raised (SA_RESETHAND made it the default again), or, for a fault
 * the kernel raised, by returning to the instruction, which faults again with its own siginfo (a
 * core dump shows the crash, not us). A handler the program installs replaces ours, as any
 * other's; one that chains to the handler before it (Python's faulthandler) reaches ours.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/capture.h"
#include "util/log.h"

/* the version the exec family has in glibc on this machine (the version script's node) */
#if defined(__aarch64__)
#	define EXEC_VERSION "GLIBC_2.17"
#else
#	define EXEC_VERSION "GLIBC_2.2.5"
#endif

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef void (*exit_fn)(int);

enum real { R_EXECVE, R_EXECV, R_EXECVP, R_EXECVPE, R_FEXECVE, R_EXIT, R_EXIT2, R_COUNT };

static void *
real(enum real which)
{
	static const char *const names[R_COUNT] = {"execve",  "execv", "execvp", "execvpe",
						   "fexecve", "_exit", "_Exit"};
	static _Atomic(void *) fns[R_COUNT];
	void *f = atomic_load_explicit(&fns[which], memory_order_acquire);

	if (!f) {
		f = dlvsym(RTLD_NEXT, names[which], EXEC_VERSION);
		if (!f && which == R_EXECVPE)
			f = dlvsym(RTLD_NEXT, names[which], "GLIBC_2.11");
		if (!f)
			f = dlsym(RTLD_NEXT, names[which]);
		atomic_store_explicit(&fns[which], f, memory_order_release);
	}
	return f;
}

void
gmt_ends_setup(void)
{
	/* libc's functions found now, in the constructor: a vfork child (whose parent's other
	 * threads run on in the same memory) must not be the first to look them up */
	for (int i = 0; i < R_COUNT; i++)
		real((enum real)i);
}

/* The exec failed (errno kept): the trace was ended for nothing; said once. */
static void
failed(bool ended, const char *what)
{
	static atomic_bool said;
	int err = errno;

	if (ended && !atomic_exchange(&said, true)) {
		char shown[GMT_LOG_VALUE_MAX];
		gmt_warn(
		    "%s failed (%s): the trace had ended before it; the rest of this process is "
		    "not traced (its calls are counted as dropped)",
		    gmt_log_value(shown, what ? what : "exec"), strerror(err));
	}
	errno = err;
}

/* @p path is a regular file this process may execute (what execve checks first; not whether
 * its format is one the kernel runs). errno is left as it was. */
static bool
executable(const char *path)
{
	struct stat st;
	int err = errno;
	bool ok = stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		  faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;

	errno = err;
	return ok;
}

/* An exec of @p file may succeed: with @p search (execvp, execvpe) and no '/' in it, as some
 * directory of PATH's (glibc's default when PATH is unset); else as the path it is. No memory
 * is allocated (a vfork child may call this). */
static bool
may_exec(const char *file, bool search)
{
	if (!file || !*file)
		return false;
	if (!search || strchr(file, '/'))
		return executable(file);
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	size_t flen = strlen(file);
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		char full[PATH_MAX];
		if (dlen + 1 + flen < sizeof(full)) {
			/* an empty entry is the current directory */
			memcpy(full, dlen ? p : ".", dlen ? dlen : 1);
			size_t at = dlen ? dlen : 1;
			full[at++] = '/';
			memcpy(full + at, file, flen + 1);
			if (executable(full))
				return true;
		} else {
			return true; /* too long to check here: let the exec say */
		}
		if (!*end)
			return false;
		p = end;
	}
}

/* libc's @p which (of type @p type) called with the arguments after the trace has ended, unless
 * the exec cannot succeed (@p can: may_exec()); an exec that returns failed (@p what: the file,
 * for the line that says so). */
#define THROUGH(which, type, can, what, ...)                                                       \
	do {                                                                                       \
		type f_ = (type)real(which);                                                       \
		if (!f_) {                                                                         \
			errno = ENOSYS;                                                            \
			return -1;                                                                 \
		}                                                                                  \
		bool ended_ = (can) && gmt_tracer_end_early("exec");                               \
		int rc_ = f_(__VA_ARGS__);                                                         \
		failed(ended_, what);                                                              \
		return rc_;                                                                        \
	} while (0)

GMT_EXPORT int
execve(const char *path, char *const argv[], char *const envp[])
{
	THROUGH(R_EXECVE, execve_fn, may_exec(path, false), path, path, argv, envp);
}

GMT_EXPORT int
execv(const char *path, char *const argv[])
{
	THROUGH(R_EXECV, execv_fn, may_exec(path, false), path, path, argv);
}

GMT_EXPORT int
execvp(const char *file, char *const argv[])
{
	THROUGH(R_EXECVP, execv_fn, may_exec(file, true), file, file, argv);
}

GMT_EXPORT int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	THROUGH(R_EXECVPE, execve_fn, may_exec(file, true), file, file, argv, envp);
}

GMT_EXPORT int
fexecve(int fd, char *const argv[], char *const envp[])
{
	THROUGH(R_FEXECVE, fexecve_fn, fcntl(fd, F_GETFD) != -1, NULL, fd, argv, envp);
}

/* execl, execlp, execle: their arguments into an array on the stack (as glibc does), then the
 * array forms above. */
static size_t
count_args(va_list ap)
{
	size_t n =
	    1; /* the first, never NULL (glibc declares it so, and its own execl counts on it) */
	va_list aq;

	va_copy(aq, ap);
	while (va_arg(aq, const char *))
		n++;
	va_end(aq);
	return n;
}

/* char *argv[] of @p arg0 and the arguments after it in @p ap, up to their NULL (left in ap) */
#define ARGV_OF(argv, arg0, ap)                                                                    \
	size_t argv##_n = count_args(ap);                                                          \
	char *argv[argv##_n + 1];                                                                  \
	(argv)[0] = (char *)(arg0);                                                                \
	for (size_t i_ = 1; i_ < argv##_n; i_++)                                                   \
		(argv)[i_] = va_arg(ap, char *);                                                   \
	(argv)[argv##_n] = NULL

GMT_EXPORT int
execl(const char *path, const char *arg0, ...)
{
	va_list ap;

	va_start(ap, arg0);
	ARGV_OF(argv, arg0, ap);
	va_end(ap);
	return execv(path, argv);
}

GMT_EXPORT int
execlp(const char *file, const char *arg0, ...)
{
	va_list ap;

	va_start(ap, arg0);
	ARGV_OF(argv, arg0, ap);
	va_end(ap);
	return execvp(file, argv);
}

GMT_EXPORT int
execle(const char *path, const char *arg0, ...)
{
	va_list ap;

	va_start(ap, arg0);
	ARGV_OF(argv, arg0, ap);
	(void)va_arg(ap, char *); /* the NULL that ends them */
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* _exit and _Exit (the same in glibc; a program calls the one it names) */
static void __attribute__((noreturn)) end_now(enum real which, int status)
{
	exit_fn f = (exit_fn)real(which);

	gmt_tracer_end_early("_exit");
	if (f)
		f(status);
	for (;;) /* never: libc's is always there */
		syscall(SYS_exit_group, status);
}

GMT_EXPORT void
_exit(int status)
{
	end_now(R_EXIT, status);
}

GMT_EXPORT void
_Exit(int status)
{
	end_now(R_EXIT2, status);
}

// --- signals that end the process ---------------------------------------------------------------

static const struct {
	int sig;
	const char *name;
} fatal[] = {
    {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},	{SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"},
    {SIGABRT, "SIGABRT"}, {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGILL, "SIGILL"},	  {SIGSYS, "SIGSYS"},	{SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGPIPE, "SIGPIPE"},
};

static void
on_fatal(int sig, siginfo_t *si, void *uctx)
{
	int err = errno;
	const char *name = "signal";

	(void)uctx;
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (fatal[i].sig == sig)
			name = fatal[i].name;
	gmt_tracer_end_on_signal(name);
	/* The default again: SA_RESETHAND made it so when the signal came through us, but a
	 * handler the program installed later may call ours as the one before it (crash reporters,
	 * language runtimes chain so); raising then would reach its handler, and ours, again and
	 * again. A fault the kernel raised comes back when the instruction runs again; anything
	 * sent (kill, abort's raise) is sent again, pending until the handlers return. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	errno = err;
	bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
	if (!(fault && si && si->si_code > 0))
		raise(sig);
}

void
gmt_ends_signals(void)
{
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		struct sigaction old, sa;

		if (sigaction(fatal[i].sig, NULL, &old) != 0)
			continue;
		/* a handler (ours already, in a forked child; or the program's), or ignored */
		if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal;
		sigemptyset(&sa.sa_mask);
		/* once: the next delivery takes the default action; on the alternate stack when the
		 * thread has one (a stack overflow's SIGSEGV) */
		sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK | SA_RESTART;
		sigaction(fatal[i].sig, &sa, NULL);
	}
}
