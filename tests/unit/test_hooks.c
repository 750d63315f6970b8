/*
 * The hook table (src/capture/hooks.def) against everything it must agree with: the callback ids
 * enabled, the id -> api lookup of the callbacks, the API list (src/format/apis.def) and the
 * symbols the built library exports at each CUDA runtime's version (nm -D): libcudart.so.13 as the
 * default, libcudart.so.12 and libcudart.so.11.0 as the .symver copies (capture/runtimes.h).
 *
 *   test_hooks LIBGPUMEMTRACE
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/hook_lookup.h"
#include "capture/runtimes.h"

enum domain { D_RT, D_DRV, D_RES, D_WRAP };
static const char *const domain_names[] = {"RT", "DRV", "RES", "WRAP"};

struct row {
	enum domain domain;
	const char *id;
	unsigned cbid; /* CUPTI rows */
	enum gmt_api api;
	const char *api_name;
	bool ptsz;
};

static const struct row rows[] = {
#define ROW(d, id, cbid, api, ptsz) {d, #id, cbid, GMT_API_##api, #api, GMT_HOOK_PTSZ_##ptsz},
#define GMT_HOOK_RT(id, api, ptsz, family, args) ROW(D_RT, id, RT(id), api, ptsz)
#define GMT_HOOK_DRV(id, api, ptsz, family, args) ROW(D_DRV, id, DRV(id), api, ptsz)
#define GMT_HOOK_RES(id, api, ptsz, family, args) ROW(D_RES, id, RES(id), api, ptsz)
#define GMT_HOOK_WRAP(id, api, ptsz, family, args) ROW(D_WRAP, id, 0, api, ptsz)
#include "capture/hooks.def"
#undef ROW
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static int failures;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "test_hooks: " __VA_ARGS__);                                       \
		fputc('\n', stderr);                                                               \
		failures++;                                                                        \
	} while (0)

/* How often @p cbid is in @p ids. */
static size_t
count_id(const CUpti_CallbackId *ids, size_t n, unsigned cbid)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += ids[i] == cbid;
	return k;
}

/* Every CUPTI row is enabled once, and every enabled id is a row of its domain. */
static void
enabled_ids(void)
{
	for (size_t s = 0; s < GMT_CBID_SETS; s++) {
		const struct gmt_cbid_set *set = &gmt_cbid_sets[s];
		enum domain d = set->domain == CUPTI_CB_DOMAIN_DRIVER_API    ? D_DRV
				: set->domain == CUPTI_CB_DOMAIN_RUNTIME_API ? D_RT
									     : D_RES;
		size_t in_table = 0;
		for (size_t r = 0; r < NROWS; r++) {
			if (rows[r].domain != d)
				continue;
			in_table++;
			size_t k = count_id(set->ids, set->n, rows[r].cbid);
			if (k != 1)
				FAIL("%s %s is enabled %zu times", domain_names[d], rows[r].id, k);
		}
		if (in_table != set->n)
			FAIL("%s: %zu ids enabled, %zu rows in the table", domain_names[d], set->n,
			     in_table);
	}
}

/* The callbacks' lookup gives each row's api and ptsz, and nothing for ids no row names. */
static void
lookup(void)
{
	bool named_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {0};
	bool named_drv[CUPTI_DRIVER_TRACE_CBID_SIZE] = {0};

	for (size_t r = 0; r < NROWS; r++) {
		const struct row *w = &rows[r];
		struct gmt_hook h;
		if (w->domain == D_RT) {
			h = gmt_hook_runtime(w->cbid);
			named_rt[w->cbid] = true;
		} else if (w->domain == D_DRV) {
			h = gmt_hook_driver(w->cbid);
			named_drv[w->cbid] = true;
		} else {
			continue;
		}
		if (h.api != w->api || h.ptsz != w->ptsz)
			FAIL("%s %s looks up as %s%s, the table says %s%s", domain_names[w->domain],
			     w->id, gmt_api_name((enum gmt_api)h.api), h.ptsz ? " (ptsz)" : "",
			     w->api_name, w->ptsz ? " (ptsz)" : "");
	}
	for (unsigned id = 0; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++)
		if (!named_rt[id] && gmt_hook_runtime(id).api != GMT_API_NONE)
			FAIL("runtime callback id %u records %s but is in no row", id,
			     gmt_api_name((enum gmt_api)gmt_hook_runtime(id).api));
	for (unsigned id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (!named_drv[id] && gmt_hook_driver(id).api != GMT_API_NONE)
			FAIL("driver callback id %u records %s but is in no row", id,
			     gmt_api_name((enum gmt_api)gmt_hook_driver(id).api));
	if (gmt_hook_driver(CUPTI_DRIVER_TRACE_CBID_SIZE + 5).api != GMT_API_NONE ||
	    gmt_hook_runtime(0xffffffffu).api != GMT_API_NONE)
		FAIL("an id beyond the headers' range must record nothing");
}

/* A row's id is its API's entry point: "cudaFree_v3020" records cudaFree, "cuMemFreeAsync_ptsz"
 * cuMemFreeAsync with ptsz; runtime and wrapper rows name cuda* APIs, driver rows cu* ones. */
static void
names(void)
{
	for (size_t r = 0; r < NROWS; r++) {
		const struct row *w = &rows[r];
		const char *dom = domain_names[w->domain];
		if (w->api == GMT_API_NONE) {
			if (w->domain == D_RT || w->domain == D_WRAP)
				FAIL("%s %s records no API", dom, w->id);
			continue;
		}
		const char *api = gmt_api_name(w->api);
		size_t n = strlen(api);
		if (strcmp(api, w->api_name) != 0)
			FAIL("%s: apis.def names %s \"%s\"", w->id, w->api_name, api);
		if (strncmp(w->id, api, n) != 0 || (w->id[n] != '\0' && w->id[n] != '_'))
			FAIL("%s %s records %s: not its entry point", dom, w->id, api);
		bool is_ptsz = strstr(w->id + n, "_ptsz") != NULL;
		if (is_ptsz != w->ptsz)
			FAIL("%s %s: ptsz is %s", dom, w->id, w->ptsz ? "set" : "not set");
		bool runtime = strncmp(api, "cuda", 4) == 0;
		if (runtime != (w->domain == D_RT || w->domain == D_WRAP))
			FAIL("%s %s records %s, an API of the other domain", dom, w->id, api);
	}
}

/* Every API of apis.def is recorded by some row: none is left in neither list. */
static void
every_api_recorded(void)
{
	for (int a = 1; a < GMT_API_COUNT; a++) {
		bool found = false;
		for (size_t r = 0; r < NROWS && !found; r++)
			found = rows[r].api == (enum gmt_api)a && rows[r].domain != D_RES;
		if (!found)
			FAIL("%s (apis.def) is recorded by no row of hooks.def",
			     gmt_api_name((enum gmt_api)a));
	}
	for (size_t r = 0; r < NROWS; r++) {
		enum gmt_op op = gmt_api_op(rows[r].api);
		if (rows[r].domain == D_WRAP && op != GMT_OP_ALLOC && op != GMT_OP_FREE &&
		    op != GMT_OP_RESET)
			FAIL("WRAP %s: a wrapper records allocations, frees and resets, not %s",
			     rows[r].id, gmt_op_name(op));
	}
}

static const char *const runtime_versions[] = {
#define X(tag, cudart, cupti) cudart,
    GMT_CUDA_RUNTIMES(X)
#undef X
};

/* The library exports exactly the WRAP rows at each runtime's version: the first (CUDA 13) as
 * the default version (name@@version), the older ones as name@version. */
static void
exports_at(const char *lib, const char *version, bool is_default)
{
	char cmd[4096], line[1024];
	bool seen[NROWS] = {0};
	size_t nexports = 0;
	const char *sep = is_default ? "@@" : "@";

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", lib);
	FILE *f = popen(cmd, "r");
	if (!f) {
		FAIL("cannot run nm on %s", lib);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char addr[64], type[8], sym[512];
		if (sscanf(line, "%63s %7s %511s", addr, type, sym) != 3)
			continue;
		char *at = strchr(sym, '@');
		if (!at || strncmp(at, sep, strlen(sep)) != 0 || at[strlen(sep)] == '@' ||
		    strcmp(at + strlen(sep), version) != 0)
			continue;
		*at = '\0';
		nexports++;
		bool known = false;
		for (size_t r = 0; r < NROWS; r++) {
			if (rows[r].domain == D_WRAP && strcmp(rows[r].id, sym) == 0) {
				seen[r] = known = true;
			}
		}
		if (!known)
			FAIL("%s exports %s%s%s, which no WRAP row names", lib, sym, sep, version);
	}
	if (pclose(f) != 0)
		FAIL("nm -D %s failed", lib);
	for (size_t r = 0; r < NROWS; r++)
		if (rows[r].domain == D_WRAP && !seen[r])
			FAIL("WRAP %s is not exported by %s as %s%s%s", rows[r].id, lib, rows[r].id,
			     sep, version);
	if (nexports == 0)
		FAIL("%s exports nothing at %s", lib, version);
}

static void
exports(const char *lib)
{
	for (size_t i = 0; i < sizeof(runtime_versions) / sizeof(runtime_versions[0]); i++)
		exports_at(lib, runtime_versions[i], i == 0);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_hooks LIBGPUMEMTRACE\n");
		return 2;
	}
	enabled_ids();
	lookup();
	names();
	every_api_recorded();
	exports(argv[1]);
	if (failures) {
		fprintf(stderr, "test_hooks: %d failures\n", failures);
		return 1;
	}
	printf("test_hooks: %zu rows agree with apis.def, the enabled ids and %s\n", NROWS,
	       argv[1]);
	return 0;
}
