/*
 * @brief Test helper: render a JSON report document from a file as html or perfetto.
 *
 *     render_doc html|perfetto DOC.json > OUT
 *
 * Lets the tests feed hand-made documents with the keys docs/report-json.md specifies (timeline,
 * oom, growth, marker ranges) to the two formats, whether or not the analysis writes them yet.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "analysis/report/report_formats.h"

int
main(int argc, char **argv)
{
	json_error_t err;
	json_t *doc;
	int rc;

	if (argc != 3 || (strcmp(argv[1], "html") != 0 && strcmp(argv[1], "perfetto") != 0)) {
		fprintf(stderr, "usage: render_doc html|perfetto DOC.json\n");
		return 2;
	}
	doc = json_load_file(argv[2], 0, &err);
	if (!doc) {
		fprintf(stderr, "render_doc: %s:%d: %s\n", argv[2], err.line, err.text);
		return 3;
	}
	if (strcmp(argv[1], "html") == 0)
		rc = gmt_report_html_doc(stdout, doc);
	else
		rc = gmt_report_perfetto_doc(stdout, doc);
	json_decref(doc);
	return rc == 0 && fflush(stdout) == 0 ? 0 : 1;
}
