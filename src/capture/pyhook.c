/*
 * @brief The Python side's start-up hook: PYTHONPATH gets python/ (the gpumemtrace module: markers
 * from Python) and, unless GPUMEMTRACE_TORCH=off, python/gpumemtrace/_site (whose sitecustomize
 * attaches the PyTorch layer when torch is imported), so that
 * `LD_PRELOAD=libgpumemtrace.so python train.py` needs no change to the script.
 *
 * Runs in the constructor, before the program's main(): a Python interpreter reads PYTHONPATH
 * after that. Programs that are not Python never look at it. Only when the directory exists; an
 * entry already there is not added twice (children inherit it).
 */
#define _GNU_SOURCE
#include "capture/pyhook.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/options.h"

static bool
has_site(const char *dir)
{
	char f[PATH_MAX + 64];

	if (strlen(dir) > PATH_MAX)
		return false;
	memcpy(f, dir, strlen(dir) + 1);
	strcat(f, "/gpumemtrace/_site/sitecustomize.py");
	return access(f, R_OK) == 0;
}

/* python/ of this library: installed, LIBDIR/../share/gpumemtrace/python (LIBDIR may be lib/ or
 * lib/<triplet>/); a build tree mirrors that (BUILD/share/gpumemtrace/python links to the source
 * tree's python/, made by meson.build). */
static bool
python_dir(char *out)
{
	Dl_info self;
	char dir[PATH_MAX], cand[PATH_MAX + 64];

	if (!dladdr((void *)&python_dir, &self) || !self.dli_fname ||
	    !realpath(self.dli_fname, dir))
		return false;
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	/* the last: a wheel, SITE/gpumemtrace/lib/libgpumemtrace.so beside SITE/gpumemtrace/_site
	 */
	static const char *const rel[] = {"/../share/gpumemtrace/python",
					  "/../../share/gpumemtrace/python", "/../.."};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (strlen(dir) + strlen(rel[i]) >= sizeof(cand))
			continue;
		strcpy(cand, dir);
		strcat(cand, rel[i]);
		if (has_site(cand))
			return realpath(cand, out) != NULL;
	}
	return false;
}

/* Is @p entry one of PYTHONPATH's entries? */
static bool
in_path(const char *path, const char *entry)
{
	size_t n = strlen(entry);

	for (const char *p = path; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		if (len == n && !memcmp(p, entry, n))
			return true;
		p = colon ? colon + 1 : NULL;
	}
	return false;
}

void
gmt_pyhook_setup(const struct gmt_options *opts)
{
	char py[PATH_MAX], site[PATH_MAX + 32];

	if (!python_dir(py))
		return;
	strcpy(site, py);
	strcat(site, "/gpumemtrace/_site");
	const char *old = getenv("PYTHONPATH");
	bool off = !strcmp(opts->torch, "off") || !strcmp(opts->torch, "0");
	bool have_site = off || (old && in_path(old, site)), have_py = old && in_path(old, py);
	if (have_site && have_py)
		return;
	size_t len = strlen(site) + strlen(py) + (old ? strlen(old) : 0) + 3;
	char *val = malloc(len);
	if (!val)
		return;
	snprintf(val, len, "%s%s%s%s%s", have_site ? "" : site, have_site ? "" : ":",
		 have_py ? "" : py, (old && *old) ? ":" : "", old ? old : "");
	/* no trailing ':' (an empty entry is the current directory) */
	size_t l = strlen(val);
	if (l && val[l - 1] == ':')
		val[l - 1] = '\0';
	setenv("PYTHONPATH", val, 1);
	free(val);
}
