/*
 * @brief `gpumemtrace report --format html`: one self-contained HTML page of the JSON report.
 *
 * The page needs no network (a Content-Security-Policy forbids every fetch): its CSS and script
 * are below, and the JSON report document (gmt_report_json_doc()) is embedded as data in a
 * `<script type="application/json">` element. The page's script draws everything from that data
 * with textContent and createTextNode only, so a name from a trace (function, file, label, argv)
 * can only ever be text. The data is escaped so that nothing in it can end its element: `<`, `>`,
 * `&`, U+2028 and U+2029 are written as \uXXXX escapes, which JSON.parse reads back unchanged.
 *
 * The page's markup, style and script are files of their own (src/analysis/report/html/: linted
 * and run in Chromium by tests/html), embedded here at build time; what the page shows is in
 * docs/report-formats.md.
 */
#include "analysis/report/report_formats.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

/* The page's parts (html/: head.html up to <style>, page.css, body.html from </style> to the
 * data element, page.js), embedded at build time (html/embed.py). */
extern const char gmt_html_head[], gmt_html_css[], gmt_html_body[], gmt_html_js[];
extern const size_t gmt_html_head_len, gmt_html_css_len, gmt_html_body_len, gmt_html_js_len;

/*
 * The JSON inside a script element: `</script>` or `<!--` in a string must not end or change the
 * element, and U+2028/U+2029 are line terminators to older JavaScript parsers. JSON has these
 * characters only inside strings, where the \u escape means the same character. Written as
 * jansson dumps it, piece by piece (the document as one string would double the memory of a
 * large report), so the first bytes of U+2028 wait in `held` for the next piece.
 */
struct script_out {
	FILE *out;
	unsigned held; /* 0, 1: 0xe2 held, 2: 0xe2 0x80 held */
};

static int
script_safe_piece(const char *buf, size_t size, void *data)
{
	struct script_out *so = data;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (so->held == 1 && c == 0x80) {
			so->held = 2;
			continue;
		}
		if (so->held == 2 && (c == 0xa8 || c == 0xa9)) {
			fputs(c == 0xa8 ? "\\u2028" : "\\u2029", so->out);
			so->held = 0;
			continue;
		}
		if (so->held)
			fputs(so->held == 1 ? "\xe2" : "\xe2\x80", so->out);
		so->held = 0;
		if (c == 0xe2)
			so->held = 1;
		else if (c == '<')
			fputs("\\u003c", so->out);
		else if (c == '>')
			fputs("\\u003e", so->out);
		else if (c == '&')
			fputs("\\u0026", so->out);
		else
			fputc(c, so->out);
	}
	return 0;
}

/* The page around the data: the document's bytes come from @p dump. */
static int
html_page(FILE *out, int (*dump)(struct script_out *so, const void *arg), const void *arg)
{
	struct script_out so = {.out = out};
	int rc;

	fwrite(gmt_html_head, 1, gmt_html_head_len, out);
	fwrite(gmt_html_css, 1, gmt_html_css_len, out);
	fwrite(gmt_html_body, 1, gmt_html_body_len, out);
	fputs("<script type=\"application/json\" id=\"gmt-data\">", out);
	rc = dump(&so, arg);
	if (so.held)
		fputs(so.held == 1 ? "\xe2" : "\xe2\x80", out);
	if (rc != 0)
		return rc == -ENOMEM ? -ENOMEM : -EIO;
	fputs("</script>\n<script>\n", out);
	fwrite(gmt_html_js, 1, gmt_html_js_len, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}

#define HTML_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static int
dump_doc(struct script_out *so, const void *doc)
{
	return json_dump_callback(doc, script_safe_piece, so, HTML_JSON_FLAGS);
}

int
gmt_report_html_doc(FILE *out, const json_t *doc)
{
	return html_page(out, dump_doc, doc);
}

struct procs_arg {
	const struct gmt_process *procs;
	size_t n;
	const struct gmt_lost *lost;
	const struct gmt_cat_rules *categories;
};

static int
dump_procs(struct script_out *so, const void *arg)
{
	const struct procs_arg *pa = arg;

	return gmt_report_json_stream(pa->procs, pa->n, pa->lost, pa->categories, HTML_JSON_FLAGS,
				      script_safe_piece, so);
}

int
gmt_report_html(FILE *out,
		const struct gmt_process *procs,
		size_t n,
		const struct gmt_lost *lost,
		const struct gmt_cat_rules *categories)
{
	struct procs_arg pa = {procs, n, lost, categories};

	/* streamed: the call stacks, most of a large page, are never one document */
	return html_page(out, dump_procs, &pa);
}
