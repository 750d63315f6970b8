/*
 * @brief Messages from the tracer to the application's stderr.
 *
 * Safe anywhere the tracer runs: no allocation, no stdio, no locks. A message is formatted into a
 * stack buffer and written with one write(2), prefixed "gpumemtrace[<pid>]: <level>: ". Warnings
 * stop after GMT_MAX_WARNINGS so a broken setup cannot flood the application's log.
 */
#ifndef GMT_UTIL_LOG_H
#define GMT_UTIL_LOG_H

enum gmt_log_level {
	GMT_LOG_INFO,
	GMT_LOG_WARN,
};

#define GMT_MAX_WARNINGS 16

void gmt_log(enum gmt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gmt_warn(...) gmt_log(GMT_LOG_WARN, __VA_ARGS__)
#define gmt_info(...) gmt_log(GMT_LOG_INFO, __VA_ARGS__)

#endif
