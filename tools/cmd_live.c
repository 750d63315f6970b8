/*
 * @brief `gpumemtrace live DIR|TRACE`: a running job's device memory, redrawn about once a
 * second from its traces as the tracer's writer flushes them (tools/live_view.c makes each
 * frame). Plain ANSI, so it works over ssh and in tmux; `q` quits; --once prints one frame.
 *
 * On a terminal the frame is redrawn in place (cursor home, each line cleared to its end, the
 * rest of the screen cleared), in the alternate screen so the shell's scrollback stays as it
 * was; keys are read with the terminal in non-canonical mode without echo, and the terminal is
 * restored on every way out (q, Ctrl-C, SIGTERM, SIGHUP). Not on a terminal, frames follow
 * one another, separated by a blank line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "live.h"

/* Sites listed by default (--top), and the refresh interval (--interval). */
#define LIVE_DEFAULT_TOP 10
#define LIVE_DEFAULT_INTERVAL 1.0

static void
usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumemtrace live [--once] [--interval S] [--top N] [--bytes]\n"
		"                        [--no-symbols] DIR|TRACE\n"
		"\n"
		"Follow a running job's traces as the tracer writes them: device memory held now\n"
		"and at its peak per device and per process (rank), PyTorch's allocated and\n"
		"reserved bytes, the call sites holding the most memory now, and what grew since\n"
		"the last step (the last marker, or automatic step, of each trace). DIR is the\n"
		"job's output directory ('run -o DIR', GPUMEMTRACE_OUTPUT_DIR): new traces in it\n"
		"are picked up. The traces are only read; the job does not notice.\n"
		"\n"
		"Options:\n"
		"      --once          print one frame and exit (for scripts)\n"
		"  -i, --interval S    seconds between refreshes (default 1)\n"
		"  -n, --top N         call sites listed (default %d; 0: all)\n"
		"      --bytes         sizes as exact byte counts\n"
		"      --no-symbols    raw call sites (API and innermost address), not symbolized\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n"
		"\n"
		"Keys: q quits (also Ctrl-C).\n"
		"\n"
		"Exit status: 0 done, 2 usage error, 3 DIR|TRACE cannot be read (--once: or\n"
		"holds no readable trace).\n",
		LIVE_DEFAULT_TOP);
}

static volatile sig_atomic_t live_stop;

static void
on_signal(int sig)
{
	live_stop = sig;
}

static struct termios saved_tty;
static bool tty_saved;

static void
tty_restore(void)
{
	if (tty_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_saved = false;
}

/* Keys one at a time, unechoed; the rest of the terminal's settings (output) as they were. */
static void
tty_keys(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty) != 0)
		return;
	t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		tty_saved = true;
}

static void
term_size(struct gmt_live_options *o)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		o->width = ws.ws_col;
		o->height = ws.ws_row;
	}
}

/* Draw one frame: in place on a terminal, else appended. */
static void
draw(struct gmt_live_view *v, struct gmt_live_options *o, bool tty, bool first)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	if (tty)
		term_size(o);
	mem = open_memstream(&buf, &len);
	if (!mem)
		return;
	gmt_live_frame(v, mem, o);
	if (fclose(mem) != 0) {
		free(buf);
		return;
	}
	if (tty) {
		/* home, then each line cleared to its end, then the rest of the screen */
		fputs("\033[H", stdout);
		for (char *line = buf, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl)
				break;
			fwrite(line, 1, (size_t)(nl - line), stdout);
			/* the last row gets no newline: it would scroll the screen */
			fputs(nl[1] ? "\033[K\r\n" : "\033[K", stdout);
		}
		fputs("\033[J", stdout);
	} else {
		if (!first)
			fputc('\n', stdout);
		fwrite(buf, 1, len, stdout);
	}
	fflush(stdout);
	free(buf);
}

/* Wait up to @p seconds for a key; true when it says quit (q, Q, or the end of the input). */
static bool
wait_key(double seconds, bool *keys)
{
	struct timespec start, now;
	int left_ms = (int)(seconds * 1000);

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!live_stop) {
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		int r;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left_ms = (int)(seconds * 1000) - (int)((now.tv_sec - start.tv_sec) * 1000 +
							(now.tv_nsec - start.tv_nsec) / 1000000);
		if (left_ms <= 0)
			return false;
		r = poll(&pfd, *keys ? 1 : 0, left_ms);
		if (r < 0 && errno != EINTR)
			return false;
		if (r > 0) {
			char c;
			ssize_t k = read(STDIN_FILENO, &c, 1);
			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
				*keys =
				    false; /* no more keys (stdin at its end): run until a signal */
				continue;
			}
			if (k == 1 && (c == 'q' || c == 'Q'))
				return true;
		}
	}
	return true;
}

static int
parse_interval(const char *s, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) || d < 0.05 || d > 3600)
		return -1;
	*out = d;
	return 0;
}

static int
parse_top(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > 1000000)
		return -1;
	*out = (size_t)v;
	return 0;
}

int
gmt_cmd_live(int argc, char **argv)
{
	enum { OPT_ONCE = 256, OPT_BYTES, OPT_NO_SYMBOLS };
	static const struct option longopts[] = {
	    {"once", no_argument, NULL, OPT_ONCE},
	    {"interval", required_argument, NULL, 'i'},
	    {"top", required_argument, NULL, 'n'},
	    {"bytes", no_argument, NULL, OPT_BYTES},
	    {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct gmt_live_options o = {.top = LIVE_DEFAULT_TOP, .symbolize = true};
	struct gmt_live_view *v;
	double interval = LIVE_DEFAULT_INTERVAL, read_s = 0;
	bool once = false, tty, keys, first = true;
	int c, rc = GMT_EXIT_OK;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "i:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE: once = true; break;
		case 'i':
			if (parse_interval(optarg, &interval) != 0) {
				fprintf(stderr,
					"gpumemtrace live: --interval: '%s' is not a number of "
					"seconds from 0.05 to 3600\n",
					gmt_esc(optarg));
				return gmt_usage_hint("live");
			}
			break;
		case 'n':
			if (parse_top(optarg, &o.top) != 0) {
				fprintf(stderr, "gpumemtrace live: --top: '%s' is not a count\n",
					gmt_esc(optarg));
				return gmt_usage_hint("live");
			}
			break;
		case OPT_BYTES: o.exact = true; break;
		case OPT_NO_SYMBOLS: o.symbolize = false; break;
		case 'h': usage(stdout); return GMT_EXIT_OK;
		case 'V': return gmt_print_version();
		default: gmt_bad_option("live", argv); return gmt_usage_hint("live");
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "gpumemtrace live: %s\n",
			argc - optind ? "one DIR or TRACE at most" : "no DIR or TRACE given");
		return gmt_usage_hint("live");
	}
	v = gmt_live_new(argv[optind], &o);
	if (!v) {
		fprintf(stderr, "gpumemtrace live: out of memory\n");
		return GMT_EXIT_UNREADABLE;
	}
	if (gmt_live_refresh(v) != 0) {
		fprintf(stderr, "gpumemtrace live: %s: cannot read: %s\n", gmt_esc(argv[optind]),
			errno == EINVAL ? "not a regular file or a directory" : strerror(errno));
		gmt_live_free(v);
		return GMT_EXIT_UNREADABLE;
	}
	if (once) {
		draw(v, &o, false, true);
		if (gmt_live_traces(v) == 0) {
			fprintf(stderr, "gpumemtrace live: %s: no readable trace\n",
				gmt_esc(argv[optind]));
			rc = GMT_EXIT_UNREADABLE;
		}
		gmt_live_free(v);
		return rc;
	}

	tty = isatty(STDOUT_FILENO);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	keys = true;
	tty_keys();
	o.hint = tty && tty_saved;
	if (tty)
		fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, cursor hidden */
	for (;;) {
		struct timespec t0, t1;
		double took;
		draw(v, &o, tty, first);
		first = false;
		/* a trace of hundreds of megabytes takes a second to read again: wait three times
		 * as long as the last refresh took, so that the view keeps under a third of a core
		 * whatever the traces' size (the job's own CPUs are the job's) */
		if (ferror(stdout) || wait_key(fmax(interval, 3 * read_s), &keys) || live_stop)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		gmt_live_refresh(v);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		read_s = took;
	}
	if (tty) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
	}
	tty_restore();
	gmt_live_free(v);
	return GMT_EXIT_OK;
}
