/*
 * @brief The JSON report as the gates read it (doc.h): read back from a file that `report
 * --format json` wrote, an older version brought up to this one, and the values gates take
 * from it.
 */
#include "analysis/gate/doc.h"
#include "analysis/report/report.h"
#include "util/input.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

uint64_t
gmt_json_u64(const json_t *obj, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(obj, key));

	return v > 0 ? (uint64_t)v : 0;
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

// --- Reading -----------------------------------------------------------------------------

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

enum gmt_doc_status
gmt_report_doc_read(const char *path, json_t **out, json_t **version_out)
{
	char why[GMT_INPUT_WHY];
	FILE *f = gmt_input_fopen(path, why); /* a FIFO or a device: the trace reader says so */
	json_t *doc, *version;
	json_error_t err;
	int c;

	*out = NULL;
	*version_out = NULL;
	if (!f)
		return GMT_DOC_NONE;
	while ((c = getc(f)) != EOF && isspace(c))
		;
	if (c != '{') {
		fclose(f);
		return GMT_DOC_NONE;
	}
	/* the same open file, so what is read is what was looked at */
	doc = fseek(f, 0, SEEK_SET) == 0 ? json_loadf(f, 0, &err) : NULL;
	fclose(f);
	version = json_object_get(doc, "report_version");
	if (!json_is_object(doc) || !version) {
		json_decref(doc);
		return GMT_DOC_NONE;
	}
	if (json_is_integer(version) && json_integer_value(version) == 2) {
		upgrade_v2(doc);
		*out = doc;
		return GMT_DOC_OK;
	}
	if (json_integer_value(version) != GMT_REPORT_JSON_VERSION) {
		*version_out = json_incref(version);
		json_decref(doc);
		return GMT_DOC_BAD_VERSION;
	}
	*out = doc;
	return GMT_DOC_OK;
}
