/*
 * @brief Byte counts summed from a trace: held at UINT64_MAX once reached. The sizes come from
 * the file, and a forged or damaged trace's (2^63 - 1 bytes, twice) would wrap a plain sum to a
 * small number: "0 B leaked" from three leaks, and a leak gate that passes. A held count stays
 * held when sizes are taken off it again (it no longer says how much is left), and the reports
 * show it as the most they can (their JSON clamps to INT64_MAX).
 */
#ifndef GMT_UTIL_SAT_H
#define GMT_UTIL_SAT_H

#include <stdint.h>

/** @p a + @p b, or UINT64_MAX when that does not fit. */
static inline uint64_t
gmt_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/** @p a - @p b, except that a held count (UINT64_MAX) stays held. */
static inline uint64_t
gmt_sat_sub(uint64_t a, uint64_t b)
{
	return a == UINT64_MAX ? a : a - b;
}

#endif
