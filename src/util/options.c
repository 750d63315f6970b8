/*
 * @brief Parsing and help for the options table (options.def).
 *
 * Runs in the library constructor, so it must stay cheap and allocation-free: a handful of
 * getenv() calls and integer parsing.
 */
#include "util/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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
	case '\0':
		break;
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default:
		return false;
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
	*field = def;
	if (!value)
		return 0;
	if (gmt_parse_bool(value, field))
		return 0;
	*field = def;
	gmt_warn("invalid value '%s' for " GMT_OPTION_PREFIX "%s (expected 0 or 1); using the default %d",
		 value, name, (int)def);
	return 1;
}

static int
load_uint(uint64_t *field, const char *name, const char *value, uint64_t def, uint64_t min,
	  uint64_t max)
{
	uint64_t v;

	*field = def;
	if (!value)
		return 0;
	if (gmt_parse_uint(value, &v) && v >= min && v <= max && option_extra_ok(name, v)) {
		*field = v;
		return 0;
	}
	gmt_warn("invalid value '%s' for " GMT_OPTION_PREFIX
		 "%s (expected an integer in [%llu, %llu]%s); using the default %llu",
		 value, name, (unsigned long long)min, (unsigned long long)max,
		 strcmp(name, "RING_SLOTS") == 0 ? ", a power of two" : "", (unsigned long long)def);
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
			gmt_warn("value of " GMT_OPTION_PREFIX "%s is longer than %d bytes; using the default '%s'",
				 name, GMT_OPTION_STR_MAX - 1, def);
			bad = 1;
		}
	}
	snprintf(field, GMT_OPTION_STR_MAX, "%s", use);
	return bad;
}

#define GMT_OPT_LOAD_BOOL(field, name, def, min, max) \
	load_bool(&opts->field, name, get(GMT_OPTION_PREFIX name), (def) != 0)
#define GMT_OPT_LOAD_UINT(field, name, def, min, max) \
	load_uint(&opts->field, name, get(GMT_OPTION_PREFIX name), (def), (min), (max))
#define GMT_OPT_LOAD_STR(field, name, def, min, max) \
	load_str(opts->field, name, get(GMT_OPTION_PREFIX name), (const char *)(def))

int
gmt_options_load(struct gmt_options *opts, gmt_getenv_fn get)
{
	int bad = 0;
#define GMT_OPTION(type, field, name, def, min, max, help) \
	bad += GMT_OPT_LOAD_##type(field, name, def, min, max);
#include "util/options.def"
#undef GMT_OPTION
	return bad;
}

static void
print_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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
	ssize_t w = write(fd, buf, (size_t)n);
	(void)w;
}

void
gmt_options_print_help(int fd, const struct gmt_options *opts)
{
	print_line(fd, "gpumemtrace options (environment variables; current value in brackets):\n");
#define GMT_OPT_PRINT_BOOL(field, name, def, help) \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default %d) [%d]\n", name, help, (int)(def), (int)opts->field);
#define GMT_OPT_PRINT_UINT(field, name, def, help) \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default %llu) [%llu]\n", name, help, \
		   (unsigned long long)(def), (unsigned long long)opts->field);
#define GMT_OPT_PRINT_STR(field, name, def, help) \
	print_line(fd, "  " GMT_OPTION_PREFIX "%-12s %s (default '%s') [%s]\n", name, help, \
		   (const char *)(def), opts->field);
#define GMT_OPTION(type, field, name, def, min, max, help) GMT_OPT_PRINT_##type(field, name, def, help)
#include "util/options.def"
#undef GMT_OPTION
}
