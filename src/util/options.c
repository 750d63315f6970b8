/*
 * @brief Parsing and help for the options table (options.def).
 *
 * Runs in the library constructor, so it must stay cheap and allocation-free: a handful of
 * getenv() calls and integer parsing.
 */
#include "util/options.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "util/log.h"

bool
gmt_parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!s || !*s)
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (p == s)
		return false;
	unsigned shift = 0;
	switch (*p) {
	case '\0': break;
	case 'k':
	case 'K':
		shift = 10;
		p++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		p++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		p++;
		break;
	default: return false;
	}
	if (*p == 'i' || *p == 'I') /* "64Ki" reads as 64K too */
		p++;
	if (shift && (*p == 'b' || *p == 'B'))
		p++;
	if (*p != '\0')
		return false;
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}

bool
gmt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

static bool
is_power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Per-option checks the table cannot express. */
static bool
option_extra_ok(const char *name, uint64_t v)
{
	if (strcmp(name, "RING_SLOTS") == 0)
		return is_power_of_two(v);
	return true;
}

static int
load_bool(bool *field, const char *name, const char *value, bool def)
{
	char shown[GMT_LOG_VALUE_MAX];

	*field = def;
	if (!value)
		return 0;
	if (gmt_parse_bool(value, field))
		return 0;
	*field = def;
	gmt_warn(GMT_OPTION_PREFIX "%s: invalid value %s (expected 0 or 1); using the default %d",
		 name, gmt_log_value(shown, value), (int)def);
	return 1;
}

static int
load_uint(
    uint64_t *field, const char *name, const char *value, uint64_t def, uint64_t min, uint64_t max)
{
	char shown[GMT_LOG_VALUE_MAX];
	uint64_t v;

	*field = def;
	if (!value)
		return 0;
	if (gmt_parse_uint(value, &v) && v >= min && v <= max && option_extra_ok(name, v)) {
		*field = v;
		return 0;
	}
	gmt_warn(GMT_OPTION_PREFIX "%s: invalid value %s (expected an integer in [%llu, %llu]%s); "
				   "using the default %llu",
		 name, gmt_log_value(shown, value), (unsigned long long)min,
		 (unsigned long long)max, strcmp(name, "RING_SLOTS") == 0 ? ", a power of two" : "",
		 (unsigned long long)def);
	return 1;
}

static int
load_str(char *field, const char *name, const char *value, const char *def)
{
	const char *use = def;
	int bad = 0;

	if (value && *value) {
		if (strlen(value) < GMT_OPTION_STR_MAX) {
			use = value;
		} else {
			gmt_warn(GMT_OPTION_PREFIX "%s: the value is longer than %d bytes "
						   "(%zu); using the default '%s'",
				 name, GMT_OPTION_STR_MAX - 1, strlen(value), def);
			bad = 1;
		}
	}
	snprintf(field, GMT_OPTION_STR_MAX, "%s", use);
	return bad;
}

#define GMT_OPT_LOAD_BOOL(field, name, def, min, max)                                              \
	load_bool(&opts->field, name, get(GMT_OPTION_PREFIX name), (def) != 0)
#define GMT_OPT_LOAD_UINT(field, name, def, min, max)                                              \
	load_uint(&opts->field, name, get(GMT_OPTION_PREFIX name), (def), (min), (max))
#define GMT_OPT_LOAD_STR(field, name, def, min, max)                                               \
	load_str(opts->field, name, get(GMT_OPTION_PREFIX name), (const char *)(def))
#define GMT_OPT_LOAD_PATH(field, name, def, min, max)                                              \
	load_str(opts->field, name, secure ? NULL : get(GMT_OPTION_PREFIX name),                   \
		 (const char *)(def))

bool
gmt_options_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

/* In a secure-execution process: one line naming the PATH options the environment set. */
static void
note_ignored_paths(gmt_getenv_fn get)
{
	char names[256];
	size_t n = 0;

	names[0] = '\0';
#define GMT_OPT_IGNORED_BOOL(name)
#define GMT_OPT_IGNORED_UINT(name)
#define GMT_OPT_IGNORED_STR(name)
#define GMT_OPT_IGNORED_PATH(name)                                                                 \
	if (get(GMT_OPTION_PREFIX name) && n < sizeof(names))                                      \
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s" GMT_OPTION_PREFIX name,   \
				      n ? ", " : "");
#define GMT_OPTION(type, field, name, def, min, max, help) GMT_OPT_IGNORED_##type(name)
#include "util/options.def"
#undef GMT_OPTION
	if (n)
		gmt_warn("secure-execution process (setuid, setgid or capabilities): %s "
			 "ignored (a file or library chosen by the invoker's environment); traces "
			 "go to the working directory, readable by the owner only",
			 names);
}

int
gmt_options_load(struct gmt_options *opts, gmt_getenv_fn get, bool secure)
{
	int bad = 0;
#define GMT_OPTION(type, field, name, def, min, max, help)                                         \
	bad += GMT_OPT_LOAD_##type(field, name, def, min, max);
#include "util/options.def"
#undef GMT_OPTION
	if (secure)
		note_ignored_paths(get);
	return bad;
}

// --- names that are not options ---------------------------------------------------------------

/* Every GPUMEMTRACE_ name the tracer's process may legitimately carry: the options, and
 * GPUMEMTRACE_LIB (read by `gpumemtrace run`, left in its children's environment). */
static const char *const known_names[] = {
#define GMT_OPTION(type, field, name, def, min, max, help) name,
#include "util/options.def"
#undef GMT_OPTION
    "LIB",
};
#define KNOWN_NAMES (sizeof(known_names) / sizeof(known_names[0]))

#define NAME_MAX_CMP 64 /* longer names get no suggestion */

/* Optimal string alignment distance (Levenshtein plus swapped neighbours), ignoring case;
 * allocation-free: both strings are at most NAME_MAX_CMP bytes. */
static size_t
name_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t rows[3][NAME_MAX_CMP + 1];
	size_t *pp = rows[0], *p = rows[1], *c = rows[2];

	for (size_t j = 0; j <= lb; j++)
		p[j] = j;
	for (size_t i = 1; i <= la; i++) {
		c[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			int ai = toupper((unsigned char)a[i - 1]);
			int bj = toupper((unsigned char)b[j - 1]);
			size_t best = p[j - 1] + (ai != bj);
			if (p[j] + 1 < best)
				best = p[j] + 1;
			if (c[j - 1] + 1 < best)
				best = c[j - 1] + 1;
			if (i > 1 && j > 1 && ai == toupper((unsigned char)b[j - 2]) &&
			    toupper((unsigned char)a[i - 2]) == bj && pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			c[j] = best;
		}
		size_t *t = pp;
		pp = p;
		p = c;
		c = t;
	}
	return p[lb];
}

const char *
gmt_options_closest(const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;

	if (len > NAME_MAX_CMP)
		return NULL;
	/* A cut name (OUTPUT for OUTPUT_DIR, CUPTI_RUN) is the shortest option it begins. */
	for (size_t k = 0; len >= 3 && k < KNOWN_NAMES; k++) {
		size_t kl = strlen(known_names[k]);
		if (kl > len && strncasecmp(name, known_names[k], len) == 0 && kl < best_d) {
			best = known_names[k];
			best_d = kl;
		}
	}
	if (best)
		return best;
	/* Else the nearest within a third of its length (at least 2 edits): a typo, swapped
	 * letters, an extra suffix. */
	for (size_t k = 0; k < KNOWN_NAMES; k++) {
		const char *known = known_names[k];
		size_t kl = strlen(known), d = name_distance(name, len, known, kl);
		size_t limit = kl / 3 > 2 ? kl / 3 : 2;

		if (d <= limit && d < best_d) {
			best = known;
			best_d = d;
		}
	}
	return best;
}

/* Is the environment entry @p e the name of entry @p earlier too (a name set twice)? */
static bool
same_name(const char *e, size_t len, const char *earlier)
{
	return strncmp(e, earlier, len) == 0 && earlier[len] == '=';
}

int
gmt_options_check_names(char *const *envp)
{
	const size_t plen = sizeof(GMT_OPTION_PREFIX) - 1;
	int unknown = 0;

	for (size_t i = 0; envp && envp[i]; i++) {
		const char *e = envp[i], *eq = strchr(e, '=');
		size_t len = eq ? (size_t)(eq - e) : strlen(e);
		const char *rest = e + plen;
		size_t rlen = len - plen;
		bool known = false, seen = false;

		if (len < plen || strncasecmp(e, GMT_OPTION_PREFIX, plen) != 0)
			continue;
		for (size_t k = 0; !known && k < KNOWN_NAMES; k++)
			known = strncmp(e, GMT_OPTION_PREFIX, plen) == 0 &&
				strlen(known_names[k]) == rlen &&
				memcmp(rest, known_names[k], rlen) == 0;
		for (size_t j = 0; !known && !seen && j < i; j++)
			seen = same_name(e, len, envp[j]);
		if (known || seen)
			continue;

		char shown[GMT_LOG_VALUE_MAX];
		const char *close = gmt_options_closest(rest, rlen);
		if (close)
			gmt_warn("unknown variable %s is ignored; did you mean " GMT_OPTION_PREFIX
				 "%s?",
				 gmt_log_value_n(shown, e, len), close);
		else
			gmt_warn("unknown variable %s is ignored (" GMT_OPTION_PREFIX
				 "HELP=1 lists the options)",
				 gmt_log_value_n(shown, e, len));
		unknown++;
	}
	return unknown;
}

// --- help ---------------------------------------------------------------------------------------

static void print_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
print_line(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	gmt_write_nosigpipe(fd, buf, (size_t)n);
}

void
gmt_options_print_help(int fd, const struct gmt_options *opts)
{
	print_line(fd, "gpumemtrace options (environment variables; current value in brackets):\n");
#define GMT_OPT_PRINT_BOOL(field, name, def, help)                                                 \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default %d) [%d]\n", name, help,          \
		   (int)(def), (int)opts->field);
#define GMT_OPT_PRINT_UINT(field, name, def, help)                                                 \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default %llu) [%llu]\n", name, help,      \
		   (unsigned long long)(def), (unsigned long long)opts->field);
#define GMT_OPT_PRINT_STR(field, name, def, help)                                                  \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default '%s') [%s]\n", name, help,        \
		   (const char *)(def), opts->field);
#define GMT_OPT_PRINT_PATH GMT_OPT_PRINT_STR
#define GMT_OPTION(type, field, name, def, min, max, help)                                         \
	GMT_OPT_PRINT_##type(field, name, def, help)
#include "util/options.def"
#undef GMT_OPTION
}
