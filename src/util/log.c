/*
 * @brief gmt_log(): one line to fd 2, no allocation (see log.h).
 */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_uint warnings_left = GMT_MAX_WARNINGS;

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
	ssize_t w = write(2, line, (size_t)n);
	(void)w; /* nothing sensible to do if stderr is gone */
out:
	errno = saved_errno;
}
