/*
 * @brief Escaping for human output: a string from a trace or from the command line reaches a
 * terminal as text, never as control characters.
 *
 * Traces and command lines are written by others: a function, file or module name, an argv
 * entry, a marker label or a trace file's own name can hold ESC sequences (colours, cursor moves,
 * window titles, hyperlinks, some terminals' clipboard writes) or a newline that forges a report
 * line. Every place that prints such a string for a person (the text report, check, diff, run's
 * summary, messages about traces and usage errors) passes it through here. The rules are those
 * of `ls -b`: \a \b \t \n \v \f \r and the backslash as C escapes, every other control character
 * (C0, DEL, the C1 controls U+0080-U+009F, the bidirectional overrides and isolates U+202A-U+202E
 * and U+2066-U+2069) and every byte that is not part of valid UTF-8 as \ooo, one per byte.
 * Valid UTF-8 otherwise passes unchanged, so names in any script read as they are.
 *
 * The JSON report is escaped by jansson and the HTML page by its own rules; they do not use this.
 */
#ifndef GMT_UTIL_ESC_H
#define GMT_UTIL_ESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/** Escaped copies gmt_esc() keeps alive: that many calls later, a result is reused. */
#define GMT_ESC_SLOTS 16

/** Whether @p s prints as itself (nothing to escape). NULL is clean. */
bool gmt_esc_clean(const char *s);

/**
 * @p s escaped into @p buf of @p size bytes (size > 0), always terminated; a result that does
 * not fit is cut before an escape or a UTF-8 sequence, never inside one. Returns @p buf.
 */
char *gmt_esc_buf(const char *s, char *buf, size_t size);

/**
 * @p s for a terminal: @p s itself when it is clean (the usual case, no copy), else an escaped
 * copy valid until GMT_ESC_SLOTS more calls, so several can be used in one printf. NULL gives
 * NULL. errno is kept, so `printf("%s: %s", gmt_esc(path), strerror(errno))` says the right
 * error. Not thread-safe (the command-line tool prints from one thread).
 */
const char *gmt_esc(const char *s);

/** fputs(gmt_esc(@p s), @p f). */
int gmt_fputs_esc(const char *s, FILE *f);

/**
 * @p s as UTF-8 text for JSON, whose strings are UTF-8 (jansson refuses anything else): a copy
 * with each byte that is not part of valid UTF-8 as U+FFFD (a trace file's name is bytes: a
 * directory named in Latin-1), as the report shows a module's path. Control characters are
 * kept (JSON escapes them). NULL out of memory or for NULL; free() it.
 */
char *gmt_utf8_lossy(const char *s);

/** Whether @p s is valid UTF-8 (no overlong form, surrogate or value past U+10FFFF). */
bool gmt_utf8_valid(const char *s);

#endif
