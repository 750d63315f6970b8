/*
 * @brief Messages from the tracer to the application's stderr.
 *
 * Safe anywhere the tracer runs: no allocation, no stdio, no locks. A message is formatted into a
 * stack buffer and written with one write(2), prefixed "gpumemtrace[<pid>]: <level>: ". Warnings
 * stop after GMT_MAX_WARNINGS so a broken setup cannot flood the application's log.
 */
#ifndef GMT_UTIL_LOG_H
#define GMT_UTIL_LOG_H

#include <stddef.h>

enum gmt_log_level {
	GMT_LOG_INFO,
	GMT_LOG_WARN,
};

#define GMT_MAX_WARNINGS 16

void gmt_log(enum gmt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Room for gmt_log_value()'s result: 64 bytes of the value, quotes, escapes, its length. */
#define GMT_LOG_VALUE_MAX 128

/**
 * @p s as a log line shows a value from outside (an environment variable, a path): quoted, at
 * most 64 bytes of it (cut at a UTF-8 character, then "...' (N bytes)"), control characters
 * and C1 controls as \xNN, so that a long or hostile value neither pushes the rest of the
 * message out of the line nor reaches the terminal raw. Writes into @p buf, returns it.
 */
const char *gmt_log_value(char buf[GMT_LOG_VALUE_MAX], const char *s);
/** The same for the @p len bytes at @p s (no NUL needed). */
const char *gmt_log_value_n(char buf[GMT_LOG_VALUE_MAX], const char *s, size_t len);

#define gmt_warn(...) gmt_log(GMT_LOG_WARN, __VA_ARGS__)
#define gmt_info(...) gmt_log(GMT_LOG_INFO, __VA_ARGS__)

/**
 * write(2) of @p n bytes to @p fd without SIGPIPE. The tracer writes its lines on the program's
 * own threads: a program whose standard error is a pipe nobody reads any more (`prog 2>&1 |
 * head -1`, a supervisor gone) would be killed by the tracer's line where, untraced, it writes
 * nothing there and runs on. Async-signal-safe; errno may change.
 */
void gmt_write_nosigpipe(int fd, const char *buf, size_t n);

#endif
