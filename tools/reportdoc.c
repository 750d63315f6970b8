/*
 * @brief The JSON report as input of `check` and `diff`: built from traces, or read back from a
 * file that `report --format json` wrote (gate/doc.h).
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

json_t *
gmt_report_doc_load(const char *cmd, char *const *paths, size_t n, int *rc)
{
	struct gmt_session_options so;
	struct gmt_session in;
	json_t *doc = NULL;
	size_t reports = 0;

	*rc = GMT_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		json_t *r, *version;
		enum gmt_doc_status st = gmt_report_doc_read(paths[i], &r, &version);

		if (st == GMT_DOC_BAD_VERSION) {
			fprintf(stderr,
				"gpumemtrace %s: %s: report_version %s%lld is not supported (this "
				"version reads 2 to %d)\n",
				cmd, gmt_esc(paths[i]),
				json_is_integer(version) ? "" : "(not an integer) ",
				(long long)json_integer_value(version), GMT_REPORT_JSON_VERSION);
			json_decref(version);
			json_decref(doc);
			*rc = GMT_EXIT_UNREADABLE;
			return NULL;
		}
		if (st == GMT_DOC_NONE)
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

	gmt_cli_session_options(&so);
	gmt_session_init(&in, &so, stderr);
	for (size_t i = 0; i < n; i++)
		gmt_session_add_path(&in, paths[i]);
	if (in.n == 0) {
		fprintf(stderr, "gpumemtrace %s: no readable trace in", cmd);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", gmt_esc(paths[i]));
		fprintf(stderr, "\n");
		gmt_session_free(&in);
		*rc = GMT_EXIT_UNREADABLE;
		return NULL;
	}
	doc = gmt_report_json_doc(in.models, in.n);
	gmt_session_free(&in);
	if (!doc) {
		fprintf(stderr, "gpumemtrace %s: out of memory building the report\n", cmd);
		*rc = GMT_EXIT_UNREADABLE;
	}
	return doc;
}
