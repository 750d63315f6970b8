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

/* call_stacks[].call_stack of (@p process, @p stack) from the session's procs (@p data). */
static json_t *
session_stack(void *data, json_int_t process, json_int_t stack)
{
	const struct gmt_session *s = data;

	if (process < 0 || stack <= 0 || stack > UINT32_MAX)
		return NULL;
	return gmt_report_json_call_stack(s->procs, s->n, (size_t)process, (uint32_t)stack);
}

int
gmt_report_input_load(struct gmt_report_input *in, const char *cmd, char *const *paths, size_t n)
{
	struct gmt_session_options so;
	struct gmt_session *s;
	size_t reports = 0;
	int rc = GMT_EXIT_OK;

	*in = (struct gmt_report_input){0};
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
			gmt_report_input_free(in);
			return GMT_EXIT_UNREADABLE;
		}
		if (st == GMT_DOC_SUMMARY) {
			fprintf(
			    stderr,
			    "gpumemtrace %s: %s: a summary (gpumemtrace summarize) cannot stand "
			    "for a trace or a JSON report here (a baseline, or among traces); give "
			    "the trace it was made from, or its `report --format json`\n",
			    cmd, gmt_esc(paths[i]));
			gmt_report_input_free(in);
			return GMT_EXIT_UNREADABLE;
		}
		if (st == GMT_DOC_NONE)
			continue;
		reports++;
		json_decref(in->doc);
		in->doc = r;
	}
	if (reports > 0 && n > 1) {
		/* Two reports cannot be merged into one (process indices would collide). */
		fprintf(stderr,
			"gpumemtrace %s: a JSON report must be given alone, not with other "
			"reports or traces\n",
			cmd);
		gmt_report_input_free(in);
		return GMT_EXIT_USAGE;
	}
	if (in->doc)
		return GMT_EXIT_OK;

	if (!(s = calloc(1, sizeof(*s)))) {
		fprintf(stderr, "gpumemtrace %s: out of memory\n", cmd);
		return GMT_EXIT_UNREADABLE;
	}
	gmt_cli_session_options(&so);
	gmt_session_init(s, &so, stderr);
	in->session = s;
	for (size_t i = 0; i < n; i++)
		gmt_session_add_path(s, paths[i]);
	if (s->n == 0) {
		fprintf(stderr, "gpumemtrace %s: no readable trace in", cmd);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", gmt_esc(paths[i]));
		fprintf(stderr, "\n");
		rc = GMT_EXIT_UNREADABLE;
	} else if (!(in->doc = gmt_report_json_doc_frameless(s->procs, s->n, &s->lost))) {
		fprintf(stderr, "gpumemtrace %s: out of memory building the report\n", cmd);
		rc = GMT_EXIT_UNREADABLE;
	}
	if (rc != GMT_EXIT_OK) {
		gmt_report_input_free(in);
		return rc;
	}
	in->stacks = (struct gmt_stack_source){session_stack, s};
	return GMT_EXIT_OK;
}

void
gmt_report_input_free(struct gmt_report_input *in)
{
	json_decref(in->doc);
	if (in->session) {
		gmt_session_free(in->session);
		free(in->session);
	}
	*in = (struct gmt_report_input){0};
}

json_t *
gmt_report_doc_load(const char *cmd, char *const *paths, size_t n, int *rc)
{
	struct gmt_report_input in;
	json_t *doc;

	*rc = gmt_report_input_load(&in, cmd, paths, n);
	if (*rc != GMT_EXIT_OK)
		return NULL;
	doc = in.doc; /* it holds nothing of the session: it outlives it */
	in.doc = NULL;
	gmt_report_input_free(&in);
	return doc;
}
