/*
 * @brief Human-readable units for reports: byte sizes (KiB/MiB/GiB) and times.
 *
 * Text reports print sizes the way a person reads them; JSON reports never use these (they carry
 * exact integers). Both functions write into a caller-owned buffer so callers can format several
 * values in one printf without allocation.
 */
#ifndef GMT_REPORT_UNITS_H
#define GMT_REPORT_UNITS_H

#include <stddef.h>
#include <stdint.h>

/** Big enough for any gmt_format_bytes() result ("1023.9 EiB", "18446744073709551615 B"). */
#define GMT_BYTES_BUF 32

/**
 * Format @p bytes as "512 B", "4.0 KiB", "3.0 MiB", "80.0 GiB" (binary units, one decimal).
 * Returns @p buf.
 */
const char *gmt_format_bytes(uint64_t bytes, char buf[GMT_BYTES_BUF]);

/**
 * Parse a size given on a command line: plain bytes ("1048576"), or a number (decimals allowed,
 * "1.5G") with a unit: K/M/G/T and KiB/MiB/GiB/TiB (binary), KB/MB/GB/TB (decimal), B (bytes);
 * case-insensitive, an optional space before the unit. Returns 0, or -1 for anything else
 * (empty, negative, unknown unit, trailing junk, over 2^64 - 1) with @p out untouched.
 */
int gmt_parse_bytes(const char *s, uint64_t *out);

/** Big enough for any gmt_size_text() result. */
#define GMT_SIZE_TEXT 64

/** "512 B", or "2.0 MiB (2097152 bytes)": human-readable and exact. Returns @p buf. */
const char *gmt_size_text(uint64_t bytes, char buf[GMT_SIZE_TEXT]);

#endif
