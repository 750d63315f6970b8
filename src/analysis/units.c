/*
 * @brief Human-readable byte sizes for the text reports.
 */
#include "analysis/units.h"

#include <stdio.h>

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
