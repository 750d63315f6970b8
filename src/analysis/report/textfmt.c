/*
 * @brief The words every text writer uses (textfmt.h).
 */
#include "analysis/report/textfmt.h"

#include <stdio.h>
#include <string.h>

#include "util/esc.h"

const char *
gmt_text_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void
gmt_report_command(const struct gmt_trace *t, char *buf, size_t max)
{
	size_t len = 0;

	buf[0] = '\0';
	if (t->argc == 0) {
		snprintf(buf, max, "unknown command");
		return;
	}
	for (size_t i = 0; i < t->argc; i++) {
		int w = snprintf(buf + len, max - len, "%s%s", i ? " " : "", gmt_esc(t->argv[i]));

		if (w < 0 || (size_t)w >= max - len) {
			/* Long command lines (a full torchrun invocation) are cut, visibly. */
			if (max > 4)
				strcpy(buf + max - 4, "...");
			return;
		}
		len += (size_t)w;
	}
}

void
gmt_report_call(const struct gmt_trace *t, uint16_t api, uint16_t driver, char *buf, size_t max)
{
	const char *drv = gmt_trace_driver(t, driver);

	if (drv)
		snprintf(buf, max, "%s → %s", gmt_esc(gmt_trace_string(t, api)), gmt_esc(drv));
	else
		snprintf(buf, max, "%s", gmt_esc(gmt_trace_string(t, api)));
}

const char *
gmt_text_auto_steps(const struct gmt_trace *t)
{
	for (size_t i = 0; t && i < t->nmarkers; i++)
		if (t->markers[i].auto_step)
			return t->markers[i].label &&
				       strncmp(t->markers[i].label, "forward ", 8) == 0
				   ? "automatic steps (forward)"
				   : "automatic steps (optimizer)";
	return "automatic steps (optimizer)";
}

void
gmt_text_process_name(const struct gmt_trace *t, char *buf, size_t max)
{
	if (t->pid >= 0)
		snprintf(buf, max, "%lld", t->pid);
	else if (t->from_snapshot) /* no process: the pickle is all there is */
		snprintf(buf, max, "? (PyTorch snapshot %s)", gmt_esc(t->path));
	else
		snprintf(buf, max, "? (%s)", gmt_esc(t->path));
}
