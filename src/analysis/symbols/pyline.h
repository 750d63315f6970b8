/*
 * @brief Source lines of Python instructions, offline: the byte offset of an instruction plus its
 * code object's line table (a `pycode` line of the trace) give the line, with the rules of
 * CPython's own PyCode_Addr2Line() for that version.
 *
 * Two table formats: 3.10's co_linetable (PEP 626: (offset delta, line delta) byte pairs) and the
 * location table of 3.11-3.13 (PEP 657: one entry per run of code units, varint line deltas).
 */
#ifndef GMT_SYMBOLS_PYLINE_H
#define GMT_SYMBOLS_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/**
 * The line of the instruction at byte offset @p instr_offset of a code object whose first line
 * is @p firstlineno and whose co_linetable is @p table (@p n bytes), for CPython @p version
 * ("3.10" .. "3.13"). Returns -1 when the instruction has no line (an artificial instruction),
 * the offset is past the table, the table is malformed or the version is unknown.
 */
int gmt_pyline(
    const char *version, const uint8_t *table, size_t n, int firstlineno, uint32_t instr_offset);

#endif
