/*
 * @brief Suppressions for `gpumemtrace check`: reading `TYPE:PATTERN` files and matching their
 * patterns against the call stacks of the JSON report (src/analysis/suppress.h).
 */
#define _GNU_SOURCE
#include "analysis/gate/suppress.h"
#include "analysis/report/keys.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/input.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[GMT_SUPP_NTYPES] = {"leak", "peak", "growth"};

const char *
gmt_supp_type_name(enum gmt_supp_type type)
{
	return (unsigned)type < GMT_SUPP_NTYPES ? type_names[type] : "?";
}

// --- Reading ------------------------------------------------------------------------------

/* @p s without leading and trailing white space (in place). */
static char *
trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* One non-blank, non-comment line: 0 and appended, or -1 (not a suppression) or -ENOMEM after
 * writing why to @p diag. */
static int
parse_line(struct gmt_suppressions *s, char *text, const char *path, unsigned lineno, FILE *diag)
{
	char *colon = strchr(text, ':');
	struct gmt_suppression *v;
	char *pattern;
	int type = -1;

	if (!colon) {
		fprintf(diag, "%s:%u: expected TYPE:PATTERN (leak:, peak: or growth:), got '%s'\n",
			gmt_esc(path), lineno, gmt_esc(text));
		return -1;
	}
	*colon = '\0';
	for (int t = 0; t < GMT_SUPP_NTYPES; t++)
		if (strcmp(trim(text), type_names[t]) == 0)
			type = t;
	if (type < 0) {
		fprintf(diag, "%s:%u: unknown suppression type '%s' (leak, peak or growth)\n",
			gmt_esc(path), lineno, gmt_esc(trim(text)));
		return -1;
	}
	pattern = trim(colon + 1);
	if (!*pattern || strcmp(pattern, "^") == 0 || strcmp(pattern, "$") == 0) {
		fprintf(diag, "%s:%u: empty pattern after '%s:'\n", gmt_esc(path), lineno,
			type_names[type]);
		return -1;
	}
	if (!(v = gmt_realloc_array(s->v, s->n + 1, sizeof(*s->v))))
		goto err_nomem;
	s->v = v;
	s->v[s->n] = (struct gmt_suppression){
	    .type = (enum gmt_supp_type)type,
	    .pattern = strdup(pattern),
	    .file = strdup(path),
	    .line = lineno,
	};
	if (!s->v[s->n].pattern || !s->v[s->n].file) {
		free(s->v[s->n].pattern);
		free(s->v[s->n].file);
		goto err_nomem;
	}
	s->n++;
	return 0;

err_nomem:
	fprintf(diag, "%s:%u: out of memory\n", gmt_esc(path), lineno);
	return -ENOMEM;
}

int
gmt_suppressions_load(struct gmt_suppressions *s, const char *path, FILE *diag)
{
	char why[GMT_INPUT_WHY];
	FILE *f = gmt_input_fopen(path, why); /* not a FIFO: it would block the check */
	char *buf = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;

	if (!f) {
		fprintf(diag, "%s: cannot read: %s\n", gmt_esc(path), why);
		return -1;
	}
	while (getline(&buf, &cap, f) >= 0) {
		char *text = trim(buf);

		lineno++;
		if (*text == '\0' || *text == '#')
			continue;
		if ((rc = parse_line(s, text, path, lineno, diag)) != 0)
			break;
	}
	if (rc == 0 && ferror(f)) {
		fprintf(diag, "%s: cannot read: %s\n", gmt_esc(path), strerror(errno));
		rc = -1;
	}
	free(buf);
	fclose(f);
	return rc;
}

int
gmt_suppressions_add(
    struct gmt_suppressions *s, const char *line, const char *origin, unsigned lineno, FILE *diag)
{
	char *copy = strdup(line);
	int rc;

	if (!copy) {
		fprintf(diag, "%s:%u: out of memory\n", gmt_esc(origin), lineno);
		return -ENOMEM;
	}
	rc = parse_line(s, trim(copy), origin, lineno, diag);
	free(copy);
	return rc;
}

void
gmt_suppressions_free(struct gmt_suppressions *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].pattern);
		free(s->v[i].file);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

// --- Matching -----------------------------------------------------------------------------

/*
 * Whether the glob @p p (its first @p plen bytes; `*`, `?`) matches all of @p t when @p to_end,
 * else a prefix of @p t. Iterative: on a mismatch it retries from the last `*` with one more
 * character taken by it, so the cost stays O(len(p) * len(t)) and never recurses.
 */
static bool
glob_at(const char *p, size_t plen, const char *t, bool to_end)
{
	size_t pi = 0, ti = 0, star_p = (size_t)-1, star_t = 0;

	for (;;) {
		if (pi == plen && (!to_end || t[ti] == '\0'))
			return true;
		if (pi < plen && p[pi] == '*') {
			star_p = pi++;
			star_t = ti;
			continue;
		}
		if (pi < plen && t[ti] != '\0' && (p[pi] == '?' || p[pi] == t[ti])) {
			pi++;
			ti++;
			continue;
		}
		if (star_p == (size_t)-1 || t[star_t] == '\0')
			return false;
		pi = star_p + 1;
		ti = ++star_t;
	}
}

bool
gmt_supp_pattern_match(const char *pattern, const char *text)
{
	bool start = false, end = false;
	size_t plen;

	if (!pattern || !text)
		return false;
	if (*pattern == '^') {
		start = true;
		pattern++;
	}
	plen = strlen(pattern);
	if (plen > 0 && pattern[plen - 1] == '$') {
		end = true;
		plen--;
	}
	if (start)
		return glob_at(pattern, plen, text, end);
	/* Unanchored at the start: try every position (a leading implicit `*`). */
	for (const char *t = text;; t++) {
		if (glob_at(pattern, plen, t, end))
			return true;
		if (*t == '\0')
			return false;
	}
}

static const char *
str_key(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Whether @p pattern matches the frame's function, source file or module. */
static bool
frame_matches(const char *pattern, const json_t *frame)
{
	if (!json_is_object(frame))
		return false;
	return gmt_supp_pattern_match(pattern, str_key(frame, GMT_RK_FUNCTION)) ||
	       gmt_supp_pattern_match(pattern, str_key(frame, GMT_RK_FILE)) ||
	       gmt_supp_pattern_match(pattern, str_key(frame, GMT_RK_MODULE));
}

static bool
entry_matches(const char *pattern,
	      const json_t *call_stack,
	      const json_t *site,
	      const char *api,
	      const char *driver)
{
	size_t i;
	const json_t *frame;

	if (gmt_supp_pattern_match(pattern, api) || gmt_supp_pattern_match(pattern, driver))
		return true;
	if (frame_matches(pattern, site))
		return true;
	json_array_foreach(call_stack, i, frame)
	{
		if (frame_matches(pattern, frame))
			return true;
	}
	return false;
}

struct gmt_suppression *
gmt_suppressions_match(const struct gmt_suppressions *s,
		       enum gmt_supp_type type,
		       const json_t *call_stack,
		       const json_t *site,
		       const char *api,
		       const char *driver)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].type == type &&
		    entry_matches(s->v[i].pattern, call_stack, site, api, driver))
			return &s->v[i];
	return NULL;
}
