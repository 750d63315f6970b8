/*
 * @brief The JSON report as input of `check` and `diff`: built from traces, or read back from a
 * file that `report --format json` wrote, and the few ways those commands print its entries.
 */
#define _GNU_SOURCE
#include "analysis/report/report.h"
#include "analysis/report/units.h"
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

uint64_t
gmt_json_u64(const json_t *obj, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(obj, key));

	return v > 0 ? (uint64_t)v : 0;
}

const char *
gmt_size_text(uint64_t bytes, char buf[GMT_SIZE_TEXT])
{
	char h[GMT_BYTES_BUF];

	if (bytes < 1024)
		snprintf(buf, GMT_SIZE_TEXT, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, GMT_SIZE_TEXT, "%s (%" PRIu64 " bytes)", gmt_format_bytes(bytes, h),
			 bytes);
	return buf;
}

const char *
gmt_site_text(const json_t *site, char *buf, size_t size)
{
	const char *fn = json_string_value(json_object_get(site, "function"));
	const char *file = json_string_value(json_object_get(site, "file"));
	const char *module = json_string_value(json_object_get(site, "module"));
	const char *offset = json_string_value(json_object_get(site, "offset"));
	const char *addr = json_string_value(json_object_get(site, "address"));
	json_int_t line = json_integer_value(json_object_get(site, "line"));

	if (!json_is_object(site))
		snprintf(buf, size, "[no stack]");
	else if (fn && file && line > 0)
		snprintf(buf, size, "%s (%s:%lld)", fn, file, (long long)line);
	else if (fn && file)
		snprintf(buf, size, "%s (%s)", fn, file);
	else if (fn && module)
		snprintf(buf, size, "%s [%s]", fn, module);
	else if (fn)
		snprintf(buf, size, "%s", fn);
	else if (module && offset)
		snprintf(buf, size, "%s+%s", module, offset);
	else if (addr)
		snprintf(buf, size, "%s", addr);
	else
		snprintf(buf, size, "[unknown frame]");
	return buf;
}

// --- Loading ------------------------------------------------------------------------------

/* Add @p v to the integer at @p key of @p obj (created as 0). */
static void
add_u64(json_t *obj, const char *key, int64_t v)
{
	json_int_t have = json_integer_value(json_object_get(obj, key));

	json_object_set_new(obj, key, json_integer(have + v > 0 ? have + v : 0));
}

/*
 * A report of version 2 read as version 3 (docs/report-json.md, "Changes from report version
 * 2"), so that `check --baseline` and `diff` compare like with like: version 2 counted in
 * `leaked_bytes` what caching allocators held at exit; the only one it named is PyTorch's
 * (`cache` "pytorch"). Its failed allocations all count (it told no probe apart).
 */
static void
upgrade_v2(json_t *doc)
{
	json_t *summary = json_object_get(doc, "summary");
	json_t *pytorch = json_object(), *by = json_object();
	int64_t bytes = 0, allocs = 0, entries = 0;
	json_t *e, *st;
	size_t i, k;

	json_array_foreach(json_object_get(doc, "leaks"), i, e)
	{
		const char *c = json_string_value(json_object_get(e, "cache"));
		bool cached = c && strcmp(c, "pytorch") == 0;

		json_object_set_new(e, "cached", json_boolean(cached));
		if (!cached || !json_is_true(json_object_get(e, "at_exit")) ||
		    !json_is_true(json_object_get(e, "counted")))
			continue;
		bytes += (int64_t)gmt_json_u64(e, "bytes");
		allocs += (int64_t)gmt_json_u64(e, "allocations");
		entries++;
	}
	json_array_foreach(json_object_get(doc, "leak_sites"), i, e)
	{
		int64_t gb = 0, ga = 0;

		json_array_foreach(json_object_get(e, "stacks"), k, st)
		{
			const char *c = json_string_value(json_object_get(st, "cache"));
			bool cached = c && strcmp(c, "pytorch") == 0;

			json_object_set_new(st, "cached", json_boolean(cached));
			if (cached) {
				gb += (int64_t)gmt_json_u64(st, "bytes");
				ga += (int64_t)gmt_json_u64(st, "allocations");
			}
		}
		json_object_set_new(e, "cached_bytes", json_integer(gb));
		json_object_set_new(e, "cached_allocations", json_integer(ga));
	}
	json_array_foreach(json_object_get(doc, "failed"), i, e)
	    json_object_set_new(e, "class", json_string("failure"));
	json_array_foreach(json_object_get(doc, "oom"), i, e)
	    json_object_set_new(e, "class", json_string("failure"));
	if (!json_is_object(summary)) {
		json_decref(pytorch);
		json_decref(by);
		return;
	}
	add_u64(summary, "leaked_bytes", -bytes);
	add_u64(summary, "leaked_allocations", -allocs);
	add_u64(summary, "leak_sites", -entries);
	json_object_set_new(summary, "cached_at_exit_bytes", json_integer(bytes));
	json_object_set_new(summary, "cached_at_exit_allocations", json_integer(allocs));
	json_object_set_new(pytorch, "bytes", json_integer(bytes));
	json_object_set_new(pytorch, "allocations", json_integer(allocs));
	json_object_set_new(by, "pytorch", pytorch);
	json_object_set_new(summary, "cached_at_exit", by);
	json_object_set_new(summary, "probe_failures", json_integer(0));
	json_object_set_new(summary, "recovered_failures", json_integer(0));
	json_object_set_new(doc, "report_version", json_integer(GMT_REPORT_JSON_VERSION));
}

/*
 * A JSON report file: @p path's first non-space byte is '{' and the whole file is one object
 * with "report_version". Returns it, NULL when @p path is not one (a trace, a directory, or
 * unreadable: the trace reader says why). *@p bad is set when it is a report this program
 * cannot read (reported).
 */
static json_t *
load_json_report(const char *cmd, const char *path, bool *bad)
{
	char why[GMT_INPUT_WHY];
	FILE *f = gmt_input_fopen(path, why); /* a FIFO or a device: the trace reader says so */
	json_t *doc, *version;
	json_error_t err;
	int c;

	*bad = false;
	if (!f)
		return NULL;
	while ((c = getc(f)) != EOF && isspace(c))
		;
	if (c != '{') {
		fclose(f);
		return NULL;
	}
	/* the same open file, so what is read is what was looked at */
	doc = fseek(f, 0, SEEK_SET) == 0 ? json_loadf(f, 0, &err) : NULL;
	fclose(f);
	version = json_object_get(doc, "report_version");
	if (!json_is_object(doc) || !version) {
		json_decref(doc);
		return NULL;
	}
	if (json_is_integer(version) && json_integer_value(version) == 2) {
		upgrade_v2(doc);
		return doc;
	}
	if (json_integer_value(version) != GMT_REPORT_JSON_VERSION) {
		fprintf(stderr,
			"gpumemtrace %s: %s: report_version %s%lld is not supported (this version "
			"reads 2 and %d)\n",
			cmd, gmt_esc(path), json_is_integer(version) ? "" : "(not an integer) ",
			(long long)json_integer_value(version), GMT_REPORT_JSON_VERSION);
		json_decref(doc);
		*bad = true;
		return NULL;
	}
	return doc;
}

json_t *
gmt_report_doc_load(const char *cmd, char *const *paths, size_t n, int *rc)
{
	struct gmt_inputs in = {0};
	json_t *doc = NULL;
	size_t reports = 0;
	bool bad;

	*rc = GMT_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		json_t *r = load_json_report(cmd, paths[i], &bad);

		if (bad) {
			json_decref(doc);
			*rc = GMT_EXIT_UNREADABLE;
			return NULL;
		}
		if (!r)
			continue;
		reports++;
		json_decref(doc);
		doc = r;
	}
	if (reports > 0 && n > 1) {
		/* Two reports cannot be merged into one (process indices would collide). */
		fprintf(stderr,
			"gpumemtrace %s: a JSON report must be given alone, not with other "
			"reports or traces\n",
			cmd);
		json_decref(doc);
		*rc = GMT_EXIT_USAGE;
		return NULL;
	}
	if (doc)
		return doc;

	for (size_t i = 0; i < n; i++)
		gmt_inputs_add_path(&in, paths[i], stderr);
	if (in.n == 0) {
		fprintf(stderr, "gpumemtrace %s: no readable trace in", cmd);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", gmt_esc(paths[i]));
		fprintf(stderr, "\n");
		gmt_inputs_free(&in);
		*rc = GMT_EXIT_UNREADABLE;
		return NULL;
	}
	doc = gmt_report_json_doc(in.models, in.n);
	gmt_inputs_free(&in);
	if (!doc) {
		fprintf(stderr, "gpumemtrace %s: out of memory building the report\n", cmd);
		*rc = GMT_EXIT_UNREADABLE;
	}
	return doc;
}
