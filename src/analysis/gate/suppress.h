/*
 * @brief Suppressions for `gpumemtrace check`: LSan-like `TYPE:PATTERN` lines that take known
 * leaks, peak holders or growing sites out of the gates.
 *
 * A file holds one suppression per line, `leak:PATTERN`, `peak:PATTERN` or `growth:PATTERN`;
 * `#` starts a comment line, blank lines are skipped. PATTERN is matched, as LeakSanitizer
 * matches, anywhere in the function name, the source file or the module path of any frame of the
 * entry's call stack, and in the allocating call's name: `*` matches any run of characters, `?`
 * one character, a leading `^` or trailing `$` anchors the pattern at that end. The first
 * suppression that matches an entry takes it; each one counts what it took, so the check can say
 * which suppressions were used and which never matched.
 */
#ifndef GMT_GATE_SUPPRESS_H
#define GMT_GATE_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/** What a suppression applies to: the gates that read leaks, peaks or growth. */
enum gmt_supp_type { GMT_SUPP_LEAK = 0, GMT_SUPP_PEAK, GMT_SUPP_GROWTH, GMT_SUPP_NTYPES };

struct gmt_suppression {
	enum gmt_supp_type type;
	char *pattern;
	char *file;	      /**< the file it was read from, for messages */
	unsigned line;	      /**< its line in that file */
	uint64_t hits;	      /**< stacks (or sites) it took */
	uint64_t bytes;	      /**< bytes it took out of its gate */
	uint64_t allocations; /**< allocations it took (leaks, peaks) */
};

struct gmt_suppressions {
	struct gmt_suppression *v;
	size_t n;
};

/**
 * Append the suppressions of @p path to @p s. Returns 0, or -1 after writing why to @p diag:
 * "PATH: cannot read: ..." or "PATH:LINE: ..." for a line that is not a suppression; -ENOMEM
 * out of memory (said too).
 */
int gmt_suppressions_load(struct gmt_suppressions *s, const char *path, FILE *diag);

/**
 * Append one suppression line (`leak:PATTERN`, ...) that comes from @p origin (a file name, or
 * "built-in") at @p lineno. Returns 0, or -1 (not a suppression) or -ENOMEM after saying why on
 * @p diag.
 */
int gmt_suppressions_add(
    struct gmt_suppressions *s, const char *line, const char *origin, unsigned lineno, FILE *diag);

void gmt_suppressions_free(struct gmt_suppressions *s);

/** "leak", "peak" or "growth". */
const char *gmt_supp_type_name(enum gmt_supp_type type);

/** Whether @p pattern matches @p text (the rules above); a NULL @p text never matches. */
bool gmt_supp_pattern_match(const char *pattern, const char *text);

/**
 * The first suppression of @p type that matches an entry: its call stack @p call_stack (an array
 * of frame objects as in docs/report-json.md, or NULL), its call-site frame @p site (or NULL) and
 * its call @p api and @p driver (either may be NULL). NULL when none matches. The caller adds
 * what it takes to the suppression's counters.
 */
struct gmt_suppression *gmt_suppressions_match(const struct gmt_suppressions *s,
					       enum gmt_supp_type type,
					       const json_t *call_stack,
					       const json_t *site,
					       const char *api,
					       const char *driver);

#endif
