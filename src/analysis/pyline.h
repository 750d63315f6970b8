/*
 * @brief Source lines of Python instructions, offline: the byte offset of an instruction plus its
 * code object's line table (a `pycode` line of the trace) give the line, with the rules of
 * CPython's own PyCode_Addr2Line() for that version.
 *
 * Two table formats: 3.10's co_linetable (PEP 626: (offset delta, line delta) byte pairs) and the
 * location table of 3.11-3.13 (PEP 657: one entry per run of code units, varint line deltas).
 */
#ifndef GMT_ANALYSIS_PYLINE_H
#define GMT_ANALYSIS_PYLINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * The line of the instruction at byte offset @p instr_offset of a code object whose first line
 * is @p firstlineno and whose co_linetable is @p table (@p n bytes), for CPython @p version
 * ("3.10" .. "3.13"). Returns -1 when the instruction has no line (an artificial instruction),
 * the offset is past the table, the table is malformed or the version is unknown.
 */
int gmt_pyline(
    const char *version, const uint8_t *table, size_t n, int firstlineno, uint32_t instr_offset);

/**
 * Decode the hex string of a `pycode` line's "linetable" (@p len characters, either case) into
 * @p out (@p cap bytes). Returns the number of bytes, or -1 for an odd length, a non-hex
 * character or too small a buffer (len / 2 bytes always suffice).
 */
ssize_t gmt_pyline_unhex(const char *hex, size_t len, uint8_t *out, size_t cap);

/** The value of the hex digit @p c (either case), or -1 (the trace reader's pointers use it too:
 * inline, it runs for every digit of every event's address). */
static inline int
gmt_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
