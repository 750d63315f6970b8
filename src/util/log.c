/*
 * @brief gmt_log(): one line to fd 2, no allocation (see log.h).
 */
#define _GNU_SOURCE
#include "util/log.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_uint warnings_left = GMT_MAX_WARNINGS;

/*
 * SIGPIPE is blocked for the write, and one it raised is taken back unless one was pending
 * already (the program's own).
 */
void
gmt_write_nosigpipe(int fd, const char *line, size_t n)
{
	sigset_t pipe_only, old, pending;
	bool had = false;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &pipe_only, &old) != 0) {
		ssize_t w = write(fd, line, n);
		(void)w;
		return;
	}
	if (sigpending(&pending) == 0)
		had = sigismember(&pending, SIGPIPE) == 1;
	ssize_t w = write(fd, line, n);
	if (w < 0 && errno == EPIPE && !had) {
		struct timespec now = {0, 0};
		sigtimedwait(&pipe_only, NULL, &now);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void
gmt_log(enum gmt_log_level level, const char *fmt, ...)
{
	char line[512];
	int saved_errno = errno;
	va_list ap;
	int n;

	if (level == GMT_LOG_WARN) {
		unsigned left = atomic_load_explicit(&warnings_left, memory_order_relaxed);
		do {
			if (left == 0)
				goto out;
		} while (!atomic_compare_exchange_weak(&warnings_left, &left, left - 1));
	}

	n = snprintf(line, sizeof(line), "gpumemtrace[%d]: %s", (int)getpid(),
		     level == GMT_LOG_WARN ? "warning: " : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		goto out;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		goto out;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2; /* truncated: keep the newline */
	line[n++] = '\n';
	gmt_write_nosigpipe(2, line, (size_t)n); /* nothing sensible to do if stderr is gone */
out:
	errno = saved_errno;
}

/* Length of the well-formed UTF-8 character at @p s (up to @p left bytes), 0 when it is not one
 * (an invalid or stray byte) or is a C1 control (U+0080..U+009F: CSI among them). */
static size_t
utf8_char(const unsigned char *s, size_t left)
{
	size_t n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

	if (n == 0 || n > left || (n == 2 && s[0] == 0xc2 && s[1] <= 0x9f))
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

const char *
gmt_log_value(char buf[GMT_LOG_VALUE_MAX], const char *s)
{
	return gmt_log_value_n(buf, s, strlen(s));
}

const char *
gmt_log_value_n(char buf[GMT_LOG_VALUE_MAX], const char *s, size_t len)
{
	const size_t shown = 1 + 64; /* the opening quote and 64 bytes of the value */
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, i = 0;

	buf[o++] = '\'';
	while (i < len) {
		size_t n = 0; /* 0: a control character or a byte that is not text */

		if (u[i] >= 0x20 && u[i] < 0x7f)
			n = 1;
		else if (u[i] >= 0x80)
			n = utf8_char(u + i, len - i);
		if (n == 0) {
			if (o + 4 > shown)
				break;
			snprintf(buf + o, 5, "\\x%02x", u[i]);
			o += 4;
			i++;
			continue;
		}
		if (o + n > shown)
			break;
		memcpy(buf + o, s + i, n);
		o += n;
		i += n;
	}
	if (i < len)
		snprintf(buf + o, GMT_LOG_VALUE_MAX - o, "...' (%zu bytes)", len);
	else
		snprintf(buf + o, GMT_LOG_VALUE_MAX - o, "'");
	return buf;
}
