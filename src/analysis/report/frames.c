/*
 * @brief Frames and paths as the text and folded reports print them (frames.h).
 */
#include "analysis/report/frames.h"
#include "util/path.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *
gmt_display_path(const char *path, char *buf, size_t max)
{
	static char cwd[PATH_MAX];
	static size_t ncwd;
	static bool have_cwd;
	const char *p, *best = NULL;

	if (!path)
		return NULL;
	for (p = path; (p = strstr(p, "-packages/")); p++)
		if (p - path >= 5 &&
		    (strncmp(p - 5, "/site", 5) == 0 || strncmp(p - 5, "/dist", 5) == 0))
			best = p + strlen("-packages/");
	if (best && *best)
		return best;
	if (path[0] != '/' || max < 2)
		return path;
	gmt_sym_fold_path(path, buf, max);
	if (!have_cwd) {
		have_cwd = true;
		if (getcwd(cwd, sizeof(cwd)))
			ncwd = strlen(cwd);
	}
	if (ncwd > 1 && strncmp(buf, cwd, ncwd) == 0 && buf[ncwd] == '/' && buf[ncwd + 1])
		return buf + ncwd + 1;
	return buf;
}

/*
 * One frame in either style: the same parts (where in the source, else which module, else the
 * bare address), in the order each format reads best.
 */
static void
frame_text(const struct gmt_cframe *f, bool folded, char *buf, size_t max)
{
	const char *fn = f->function ? f->function : "?";
	char path[PATH_MAX], where[PATH_MAX + 16];

	if (f->kind == GMT_CF_NATIVE && f->status != GMT_SYM_OK) {
		if (f->module)
			snprintf(buf, max, "%s+0x%llx", gmt_path_base(f->module),
				 (unsigned long long)f->offset);
		else
			snprintf(buf, max, "0x%llx", (unsigned long long)f->address);
	} else if (f->file) {
		const char *p = gmt_display_path(f->file, path, sizeof(path));

		if (f->line)
			snprintf(where, sizeof(where), "%s:%u", p, f->line);
		else
			snprintf(where, sizeof(where), "%s", p);
		if (folded)
			snprintf(buf, max, "%s (%s)", fn, where);
		else
			snprintf(buf, max, "%s in %s", where, fn);
	} else if (f->module) {
		if (folded)
			snprintf(buf, max, "%s [%s]", fn, gmt_path_base(f->module));
		else
			snprintf(buf, max, "%s %s", gmt_path_base(f->module), fn);
	} else {
		snprintf(buf, max, "%s", fn);
	}
}

void
gmt_cframe_text(const struct gmt_cframe *f, char *buf, size_t max)
{
	frame_text(f, false, buf, max);
}

void
gmt_cframe_folded(const struct gmt_cframe *f, char *buf, size_t max)
{
	frame_text(f, true, buf, max);
}
