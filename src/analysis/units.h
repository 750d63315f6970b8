/*
 * @brief Human-readable units for reports: byte sizes (KiB/MiB/GiB) and times.
 *
 * Text reports print sizes the way a person reads them; JSON reports never use these (they carry
 * exact integers). Both functions write into a caller-owned buffer so callers can format several
 * values in one printf without allocation.
 */
#ifndef GMT_ANALYSIS_UNITS_H
#define GMT_ANALYSIS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/** Big enough for any gmt_format_bytes() result ("1023.9 EiB", "18446744073709551615 B"). */
#define GMT_BYTES_BUF 32

/**
 * Format @p bytes as "512 B", "4.0 KiB", "3.0 MiB", "80.0 GiB" (binary units, one decimal).
 * Returns @p buf.
 */
const char *gmt_format_bytes(uint64_t bytes, char buf[GMT_BYTES_BUF]);

#endif
