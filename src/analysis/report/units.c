/*
 * @brief Human-readable byte sizes for the text reports.
 */
#include "analysis/report/units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *
gmt_format_bytes(uint64_t bytes, char buf[GMT_BYTES_BUF])
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, GMT_BYTES_BUF, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	v /= 1024.0;
	/*
	 * Move up a unit when the value would print as "1024.0": 1048575 bytes is "1.0 MiB",
	 * not "1024.0 KiB".
	 */
	while (v >= 1023.95 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, GMT_BYTES_BUF, "%.1f %s", v, units[u]);
	return buf;
}

/* The multiplier of a unit suffix, 0 when @p unit is none of them. */
static double
unit_scale(const char *unit)
{
	static const struct {
		const char *name;
		double scale;
	} units[] = {
	    {"", 1.0},	     {"B", 1.0},    {"K", 0x1p10},   {"KiB", 0x1p10}, {"M", 0x1p20},
	    {"MiB", 0x1p20}, {"G", 0x1p30}, {"GiB", 0x1p30}, {"T", 0x1p40},   {"TiB", 0x1p40},
	    {"KB", 1e3},     {"MB", 1e6},   {"GB", 1e9},     {"TB", 1e12},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcasecmp(unit, units[i].name) == 0)
			return units[i].scale;
	return 0.0;
}

int
gmt_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	double v, scale;

	while (isspace((unsigned char)*s))
		s++;
	/* strtod() would take "-1", "inf", "nan" and hex floats: only digits and one point. */
	if (!isdigit((unsigned char)*s) && !(*s == '.' && isdigit((unsigned char)s[1])))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	for (const char *p = s; p < end; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return -1;
	while (*end == ' ')
		end++;
	scale = unit_scale(end);
	if (scale == 0.0)
		return -1;
	/* Plain integers are taken exactly (a double loses digits above 2^53). */
	if (scale == 1.0 && !memchr(s, '.', (size_t)(end - s))) {
		unsigned long long u;

		errno = 0;
		u = strtoull(s, NULL, 10);
		if (errno)
			return -1;
		*out = u;
		return 0;
	}
	/* 1.5 is no number of bytes: refused, not rounded (1.5 KiB is 1536) */
	if (scale == 1.0 && v != (double)(uint64_t)v)
		return -1;
	v *= scale;
	/* 2^64 itself does not fit; a double holds it exactly, so the comparison is exact. */
	if (v >= 0x1p64)
		return -1;
	/* Above 2^53 doubles are whole numbers, so adding 0.5 cannot reach 2^64. */
	*out = (uint64_t)(v + 0.5);
	return 0;
}

const char *
gmt_size_text(uint64_t bytes, char buf[GMT_SIZE_TEXT])
{
	char h[GMT_BYTES_BUF];

	if (bytes < 1024)
		snprintf(buf, GMT_SIZE_TEXT, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, GMT_SIZE_TEXT, "%s (%" PRIu64 " bytes)", gmt_format_bytes(bytes, h),
			 bytes);
	return buf;
}
