/*
 * @brief Instruction offset -> source line for CPython 3.10-3.13 line tables (see pyline.h).
 *
 * Both decoders walk the table from its start the way CPython's PyCode_Addr2Line() does
 * (Objects/codeobject.c of each version: _PyCode_CheckLineNumber() over the address ranges that
 * _PyLineTable_NextAddressRange() yields): the running line starts at co_firstlineno, every entry
 * adds its line delta, and the entry whose range [start, end) holds the offset gives the line, or
 * -1 when that entry says "no line". An offset past the last range is -1.
 */
#include "analysis/symbols/pyline.h"

#include <stdbool.h>
#include <stdlib.h>

/* Entry codes of the 3.11+ location table (Include/cpython/code.h, _PyCodeLocationInfoKind). */
enum {
	LOC_ONE_LINE0 = 10,
	LOC_ONE_LINE1 = 11,
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,
	LOC_LONG = 14,
	LOC_NONE = 15,
};

// --- 3.10: PEP 626 ---------------------------------------------------------------------------

/*
 * Byte pairs (offset delta: unsigned, line delta: signed; -128 = this range has no line and
 * leaves the running line alone). Ranges of length 0 only carry line deltas: they are passed
 * over, never matched.
 */
static int
line_pep626(const uint8_t *t, size_t n, int line, uint32_t off)
{
	uint64_t start, end = 0;
	int range_line = -1;
	size_t i = 0;

	n &= ~(size_t)1;
	while (end <= off) {
		do {
			if (i >= n)
				return -1;
			start = end;
			end += t[i];
			int delta = (int8_t)t[i + 1];
			i += 2;
			if (delta == -128) {
				range_line = -1;
			} else {
				line += delta;
				range_line = line;
			}
		} while (start == end);
	}
	return range_line;
}

// --- 3.11 - 3.13: PEP 657 location table ------------------------------------------------------

/* A signed varint (6 bits a byte, bit 6 = more; the low bit of the value is the sign). */
static int
read_svarint(const uint8_t *t, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	uint32_t b = t[i], val = b & 63;
	unsigned shift = 0;

	while ((b & 64) && ++i < n) {
		b = t[i];
		shift += 6;
		if (shift < 32)
			val |= (b & 63) << shift;
	}
	return (val & 1) ? -(int)(val >> 1) : (int)(val >> 1);
}

/* How much entry @p i (first byte t[i], code @p code) moves the running line. */
static int
entry_line_delta(const uint8_t *t, size_t n, size_t i, int code)
{
	switch (code) {
	case LOC_NONE: return 0;
	case LOC_NO_COLUMNS:
	case LOC_LONG: return read_svarint(t, n, i + 1);
	case LOC_ONE_LINE1: return 1;
	case LOC_ONE_LINE2: return 2;
	default: return 0; /* ONE_LINE0 and the short forms 0-9: same line */
	}
}

/*
 * Entries: a first byte 1cccclll (c = code, l = length - 1 in code units), then the code's
 * operands, none of which has bit 7 set.
 */
static int
line_pep657(const uint8_t *t, size_t n, int line, uint32_t off)
{
	uint64_t end = 0;
	int range_line = -1;
	size_t i = 0;

	while (end <= off) {
		if (i >= n || !(t[i] & 0x80))
			return -1;
		int code = (t[i] >> 3) & 15;
		line += entry_line_delta(t, n, i, code);
		range_line = code == LOC_NONE ? -1 : line;
		end += ((uint64_t)(t[i] & 7) + 1) * 2;
		do
			i++;
		while (i < n && !(t[i] & 0x80));
	}
	return range_line;
}

// --- API ---------------------------------------------------------------------------------------

/* "3.N" or "3.N.x" -> N; -1 otherwise. */
static int
python_minor(const char *version)
{
	char *end;

	if (!version || version[0] != '3' || version[1] != '.')
		return -1;
	long minor = strtol(version + 2, &end, 10);
	if (end == version + 2 || (*end != '\0' && *end != '.') || minor < 0 || minor > 99)
		return -1;
	return (int)minor;
}

int
gmt_pyline(
    const char *version, const uint8_t *table, size_t n, int firstlineno, uint32_t instr_offset)
{
	int minor = python_minor(version);

	if (!table && n)
		return -1;
	if (minor == 10)
		return line_pep626(table, n, firstlineno, instr_offset);
	if (minor >= 11 && minor <= 13)
		return line_pep657(table, n, firstlineno, instr_offset);
	return -1;
}
