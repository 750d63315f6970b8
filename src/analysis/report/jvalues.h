/*
 * @brief JSON values as the JSON report writes them (report_json.c, report_tensors_json.c): sizes
 * as integers clamped to int64, times in seconds from the trace's start rounded to microseconds,
 * addresses as hex strings.
 */
#ifndef GMT_REPORT_JVALUES_H
#define GMT_REPORT_JVALUES_H

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/reader/trace.h"

static inline json_t *
jint(uint64_t v)
{
	/* Sizes never come near 2^63; clamp rather than wrap if a broken trace says otherwise. */
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* @p a - @p b, which may be negative, clamped to int64 (a broken trace's sizes can be anything:
 * the difference must not overflow) */
static inline json_t *
jdiff(uint64_t a, uint64_t b)
{
	if (a >= b)
		return jint(a - b);
	return json_integer(b - a > INT64_MAX ? INT64_MIN : -(json_int_t)(b - a));
}

static inline json_t *
jtime(const struct gmt_trace *t, uint64_t ts)
{
	/* Microseconds are plenty, and rounding keeps the printed value short and stable. */
	return json_real(round(gmt_trace_time_s(t, ts) * 1e6) / 1e6);
}

/* @p v as "0x%" PRIx64 writes it ("0x0" for 0), written by hand and handed over as ASCII (a
 * report writes two per frame of every stack: snprintf() and jansson's UTF-8 check were a third
 * of the call stacks' output) */
static inline json_t *
jhex(uint64_t v)
{
	char buf[2 + 16];
	size_t n = 1;

	for (uint64_t x = v >> 4; x; x >>= 4)
		n++;
	buf[0] = '0';
	buf[1] = 'x';
	for (size_t i = n; i-- > 0; v >>= 4)
		buf[2 + i] = "0123456789abcdef"[v & 15];
	return json_stringn_nocheck(buf, 2 + n);
}

#endif
