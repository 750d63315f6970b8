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

static inline json_t *
jtime(const struct gmt_trace *t, uint64_t ts)
{
	/* Microseconds are plenty, and rounding keeps the printed value short and stable. */
	return json_real(round(gmt_trace_time_s(t, ts) * 1e6) / 1e6);
}

static inline json_t *
jhex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

#endif
