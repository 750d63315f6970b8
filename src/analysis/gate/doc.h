/*
 * @brief The JSON report (docs/report-json.md) as the gates' input: read back from a file, and
 * the few ways its entries are taken apart.
 */
#ifndef GMT_GATE_DOC_H
#define GMT_GATE_DOC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/** What gmt_report_doc_read() found. */
enum gmt_doc_status {
	GMT_DOC_NONE = 0,    /**< not a JSON report (a trace, a directory, unreadable) */
	GMT_DOC_OK,	     /**< a report this program reads */
	GMT_DOC_BAD_VERSION, /**< a report of a version this program does not read */
	GMT_DOC_SUMMARY,     /**< a summary (`gpumemtrace summarize`): not a report, whatever its
				keys say (check and diff do not read summaries yet) */
};

/**
 * Read @p path as a JSON report: its first non-space byte is '{' and the whole file is one
 * object with "report_version". On GMT_DOC_OK, *@p doc is the document (json_decref() it), a
 * version-2 or version-3 report read as this version (docs/report-json.md, "Changes from report
 * version 2" and "... 3");
 * on GMT_DOC_BAD_VERSION, *@p version is its report_version (json_decref() it). A file that
 * cannot be opened is GMT_DOC_NONE: the trace reader says why.
 */
enum gmt_doc_status gmt_report_doc_read(const char *path, json_t **doc, json_t **version);

/** @p obj's integer @p key, 0 when absent, null or negative. */
uint64_t gmt_json_u64(const json_t *obj, const char *key);

/**
 * A call-site frame of the report as one line: `function (file:line)`, `function [module]`,
 * `module+offset`, the bare address, or "[no stack]" for a null site. Returns @p buf.
 */
const char *gmt_site_text(const json_t *site, char *buf, size_t size);

#endif
