/*
 * @brief The JSON report as the gates read it (doc.h): read back from a file that `report
 * --format json` wrote, an older version brought up to this one, and the values gates take
 * from it.
 */
#include "analysis/gate/doc.h"
#include "analysis/report/keys.h"
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
	const char *fn = json_string_value(json_object_get(site, GMT_RK_FUNCTION));
	const char *file = json_string_value(json_object_get(site, GMT_RK_FILE));
	const char *module = json_string_value(json_object_get(site, GMT_RK_MODULE));
	const char *offset = json_string_value(json_object_get(site, GMT_RK_OFFSET));
	const char *addr = json_string_value(json_object_get(site, GMT_RK_ADDRESS));
	json_int_t line = json_integer_value(json_object_get(site, GMT_RK_LINE));

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
 * A report of version 2 read as this version (docs/report-json.md, "Changes from report version
 * 2"; version 4 removed nothing), so that `check --baseline` and `diff` compare like with like:
 * version 2 counted in `leaked_bytes` what caching allocators held at exit; the only one it named
 * is PyTorch's
 * (`cache` "pytorch"). Its failed allocations all count (it told no probe apart).
 */
static void
upgrade_v2(json_t *doc)
{
	json_t *summary = json_object_get(doc, GMT_RK_SUMMARY);
	json_t *pytorch = json_object(), *by = json_object();
	int64_t bytes = 0, allocs = 0, entries = 0;
	json_t *e, *st;
	size_t i, k;

	json_array_foreach(json_object_get(doc, GMT_RK_LEAKS), i, e)
	{
		const char *c = json_string_value(json_object_get(e, GMT_RK_CACHE));
		bool cached = c && strcmp(c, gmt_cache_name(GMT_CACHE_PYTORCH)) == 0;

		json_object_set_new(e, GMT_RK_CACHED, json_boolean(cached));
		if (!cached || !json_is_true(json_object_get(e, GMT_RK_AT_EXIT)) ||
		    !json_is_true(json_object_get(e, GMT_RK_COUNTED)))
			continue;
		bytes += (int64_t)gmt_json_u64(e, GMT_RK_BYTES);
		allocs += (int64_t)gmt_json_u64(e, GMT_RK_ALLOCATIONS);
		entries++;
	}
	json_array_foreach(json_object_get(doc, GMT_RK_LEAK_SITES), i, e)
	{
		int64_t gb = 0, ga = 0;

		json_array_foreach(json_object_get(e, GMT_RK_STACKS), k, st)
		{
			const char *c = json_string_value(json_object_get(st, GMT_RK_CACHE));
			bool cached = c && strcmp(c, gmt_cache_name(GMT_CACHE_PYTORCH)) == 0;

			json_object_set_new(st, GMT_RK_CACHED, json_boolean(cached));
			if (cached) {
				gb += (int64_t)gmt_json_u64(st, GMT_RK_BYTES);
				ga += (int64_t)gmt_json_u64(st, GMT_RK_ALLOCATIONS);
			}
		}
		json_object_set_new(e, GMT_RK_CACHED_BYTES, json_integer(gb));
		json_object_set_new(e, GMT_RK_CACHED_ALLOCATIONS, json_integer(ga));
	}
	json_array_foreach(json_object_get(doc, GMT_RK_FAILED), i, e) json_object_set_new(
	    e, GMT_RK_CLASS, json_string(gmt_fail_class_name(GMT_FAIL_COUNTED)));
	json_array_foreach(json_object_get(doc, GMT_RK_OOM), i, e) json_object_set_new(
	    e, GMT_RK_CLASS, json_string(gmt_fail_class_name(GMT_FAIL_COUNTED)));
	if (!json_is_object(summary)) {
		json_decref(pytorch);
		json_decref(by);
		return;
	}
	add_u64(summary, GMT_RK_LEAKED_BYTES, -bytes);
	add_u64(summary, GMT_RK_LEAKED_ALLOCATIONS, -allocs);
	add_u64(summary, GMT_RK_LEAK_SITES, -entries);
	json_object_set_new(summary, GMT_RK_CACHED_AT_EXIT_BYTES, json_integer(bytes));
	json_object_set_new(summary, GMT_RK_CACHED_AT_EXIT_ALLOCATIONS, json_integer(allocs));
	json_object_set_new(pytorch, GMT_RK_BYTES, json_integer(bytes));
	json_object_set_new(pytorch, GMT_RK_ALLOCATIONS, json_integer(allocs));
	json_object_set_new(by, gmt_cache_name(GMT_CACHE_PYTORCH), pytorch);
	json_object_set_new(summary, GMT_RK_CACHED_AT_EXIT, by);
	json_object_set_new(summary, GMT_RK_PROBE_FAILURES, json_integer(0));
	json_object_set_new(summary, GMT_RK_RECOVERED_FAILURES, json_integer(0));
	json_object_set_new(doc, GMT_RK_REPORT_VERSION, json_integer(GMT_REPORT_JSON_VERSION));
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
	const char *kind = json_string_value(json_object_get(doc, GMT_RK_KIND));
	if (json_is_object(doc) && kind && strcmp(kind, GMT_SK_KIND_SUMMARY) == 0) {
		/* a summary carries report_version (its figures are the report's) but not the
		 * report's shape: read as one, every gate would look at nothing and pass */
		json_decref(doc);
		return GMT_DOC_SUMMARY;
	}
	version = json_object_get(doc, GMT_RK_REPORT_VERSION);
	if (!json_is_object(doc) || !version) {
		json_decref(doc);
		return GMT_DOC_NONE;
	}
	if (json_is_integer(version) && json_integer_value(version) == 2) {
		upgrade_v2(doc);
		*out = doc;
		return GMT_DOC_OK;
	}
	if (json_is_integer(version) && json_integer_value(version) == 3) {
		/* version 4 only added keys (docs/report-json.md, "Changes from report version 3"):
		 * a version-3 report is one without them; the tensor gates say it has no tensor
		 * level */
		json_object_set_new(doc, GMT_RK_REPORT_VERSION,
				    json_integer(GMT_REPORT_JSON_VERSION));
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
