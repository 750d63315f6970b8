/*
 * @brief One line of a trace in its turn (reader_int.h): the fast path or jansson, to its line
 * function (lines.c, meta.c); and what a worker may read of a line ahead of its turn.
 */
#define _GNU_SOURCE
#include "analysis/reader/flatjson.h"
#include "analysis/reader/reader_int.h"
#include "analysis/reader/trace.h"
#include "analysis/reader/trace_input.h"
#include "format/elided.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/*
 * Line @p lineno was longer than the reader keeps (GMT_TRACE_MAX_LINE) and went by unread: a bad
 * line (the report says the trace was damaged, check does not pass it), or one more line before
 * the first trace line. Nothing of it is quoted.
 */
static void
long_line(struct reader *r, size_t lineno, const struct gmt_trace_line *line)
{
	if (!r->trace_line_seen) {
		r->lead++;
		return;
	}
	rd_bad_line(r, lineno,
		    "line of %llu bytes%s, longer than the %u MiB a line may have: skipped (not a "
		    "line the tracer writes: a damaged or hostile file)",
		    line->skipped, line->torn ? " (the file ends inside it)" : "",
		    GMT_TRACE_MAX_LINE >> 20);
}

/* Line @p lineno is the first trace line: the lines before it are counted as bad, unquoted. */
void
rd_lead_end(struct reader *r, size_t lineno)
{
	if (r->trace_line_seen)
		return;
	r->trace_line_seen = true;
	if (!r->lead)
		return;
	r->t->bad_lines += r->lead;
	r->shown++;
	fprintf(r->diag,
		"%s:%zu: %zu line%s before the first trace line skipped (not trace lines: a file "
		"cut at its start?)\n",
		r->epath, lineno - r->lead, r->lead, r->lead == 1 ? "" : "s");
}

/*
 * The fast path: an event line of the plain shape, read without jansson (flatjson.h). False when
 * it declines the line; the slow path then reads it, with its messages.
 */
static bool
read_line_flat(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	struct gmt_flat flat;

	if (len < 2)
		return false;
	if (len + 1 > r->scratch_cap) {
		size_t cap = len + 1 > 4096 ? len + 1 : 4096;

		if (!rd_resize(r, &r->scratch, cap, 1))
			return true; /* taken: the read stops */
		r->scratch_cap = cap;
	}
	memcpy(r->scratch, buf, len);
	r->scratch[len] = '\0';
	if (!gmt_flat_parse(r->scratch, len, &flat))
		return false;
	/* a second "type" key wins, as in jansson: that line is not an event */
	const struct gmt_flat_value *type = gmt_flat_get(&flat, "type");
	bool block = gmt_flat_str_is(type, "block");
	if (!block && !gmt_flat_str_is(type, "event"))
		return false;
	rd_lead_end(r, lineno);
	struct src src = {.flat = &flat};
	if (block ? rd_read_block(r, src, lineno) : rd_read_event(r, src, lineno)) {
		r->usable++;
		r->content++;
	}
	return true;
}

static bool
read_line_fast(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	/* any flat object is tried (a writer may put spaces or order keys its own way); a line
	 * with a nested value (stack, snapshot, header) is declined at its first '[' or '{' */
	return !r->no_fast && read_line_flat(r, buf, len, lineno);
}

static bool
known_type(const char *type)
{
	static const char *const types[] = {
	    "header", "event",	"stack", "marker", "snapshot",	    "trailer", "modules",
	    "pycode", "pyinfo", "torch", "block",  GMT_ELIDED_TYPE, NULL};

	for (size_t i = 0; types[i]; i++)
		if (strcmp(type, types[i]) == 0)
			return true;
	return false;
}

/*
 * Lines that change nothing the sink reads of the trace besides what it is handed
 * (gmt_trace_sink.sync): events and blocks (a new name syncs in rd_intern()), markers (the sink
 * copies them), and what only the report reads after the read (stacks, modules, Python code).
 * Any other line syncs first: snapshots (readings), holders, elided lines, the header.
 */
static bool
sink_unaffected(const char *type)
{
	static const char *const types[] = {"event",   "block",	 "marker", "stack",
					    "modules", "pycode", "pyinfo", NULL};

	for (size_t i = 0; types[i]; i++)
		if (strcmp(type, types[i]) == 0)
			return true;
	return false;
}

static void
read_line(struct reader *r, const char *buf, size_t len, size_t lineno)
{
	json_error_t jerr;
	json_t *obj;
	const char *type;

	/* the tracer's stack lines start so; the flat path would copy a long one only to decline */
	if (len > 15 && memcmp(buf, "{\"type\":\"stack\"", 15) == 0) {
		if (rd_read_stack_fast(r, buf, len, lineno))
			return;
	} else if (read_line_fast(r, buf, len, lineno)) {
		return; /* an event or block line: only a new name changes the trace (rd_intern) */
	}
	bool used = false, content = false; /* before any goto out */

	obj = json_loadb(buf, len, 0, &jerr);
	/* an integer past 2^63 - 1, which the fast path reads (flatjson.h): with it off
	 * (GMT_TRACE_SLOW), such a line is read as the fast path reads it */
	if (!obj && r->no_fast && strncmp(jerr.text, "too big integer", 15) == 0 &&
	    read_line_flat(r, buf, len, lineno))
		return;
	if (!r->trace_line_seen && (!obj || !json_is_object(obj) ||
				    rd_get_str(JS(obj), "type", &type) != 0 || !known_type(type))) {
		r->lead++; /* not quoted: this file has not shown it is a trace */
		json_decref(obj);
		return;
	}
	rd_lead_end(r, lineno);
	if (!obj) {
		if (len == 0)
			rd_bad_line(r, lineno, "empty line");
		else
			rd_bad_line(r, lineno, "invalid JSON: %s", jerr.text);
		return;
	}
	if (!json_is_object(obj)) {
		rd_bad_line(r, lineno, "not a JSON object");
		goto out;
	}
	if (rd_get_str(JS(obj), "type", &type) != 0) {
		rd_bad_line(r, lineno, "line without \"type\"");
		goto out;
	}
	if (!sink_unaffected(type))
		rd_sink_sync(r);
	if (strcmp(type, "event") == 0)
		used = content = rd_read_event(r, JS(obj), lineno);
	else if (strcmp(type, "stack") == 0)
		used = rd_read_stack(r, obj, lineno);
	else if (strcmp(type, "marker") == 0)
		used = content = rd_read_marker(r, obj, lineno);
	else if (strcmp(type, "snapshot") == 0)
		used = content = rd_read_snapshot(r, obj, lineno);
	else if (strcmp(type, "header") == 0)
		used = rd_read_header(r, obj, lineno);
	else if (strcmp(type, "trailer") == 0)
		used = content = rd_read_trailer(r, obj, lineno);
	else if (strcmp(type, "modules") == 0)
		used = rd_read_modules(r, obj, lineno);
	else if (strcmp(type, "pycode") == 0)
		used = rd_read_pycode(r, obj, lineno);
	else if (strcmp(type, "pyinfo") == 0)
		used = rd_read_pyinfo(r, obj, lineno);
	else if (strcmp(type, "block") == 0)
		used = content = rd_read_block(r, JS(obj), lineno);
	else if (strcmp(type, "torch") == 0)
		used = rd_read_torch(r, obj, lineno);
	else if (strcmp(type, GMT_ELIDED_TYPE) == 0)
		used = content = rd_read_elided(r, JS(obj), lineno);
	else if (strcmp(type, GMT_ELIDED_BLOCKS_TYPE) == 0)
		used = content = rd_read_elided_blocks(r, JS(obj), lineno);
	else if (strcmp(type, "holders") == 0)
		used = rd_read_holders(r, obj, lineno);
	/* Other types are ignored without a word: adding a line type is not a format change. */
	if (used)
		r->usable++;
	if (content)
		r->content++;
out:
	json_decref(obj);
}

/*
 * Line t->lines + 1 of the input in its turn, @p pre what a worker read of it ahead (NULL: none,
 * pipeline.c): false when the read stops there.
 */
bool
rd_take_line(struct reader *r, const struct gmt_trace_line *line, const struct rd_pre *pre)
{
	struct gmt_trace *t = r->t;
	size_t len = line->len;

	t->lines++;
	if (line->skipped) {
		long_line(r, t->lines, line);
		if (!r->trace_line_seen && r->lead > GMT_TRACE_MAX_LEAD)
			return false; /* not a trace: the rest is not read either */
		return !line->torn;
	}
	if (line->torn) {
		/*
		 * A line without its '\n' can only be the last: the writer was killed in the
		 * middle of a write. The format says to ignore it.
		 */
		t->torn = true;
		fprintf(r->diag, "%s:%zu: note: last line is incomplete (torn write), ignored\n",
			r->epath, t->lines);
		return false;
	}
	if (pre && pre->kind != RD_PRE_NONE) {
		/* what read_line_fast() does with the line, its reading done already */
		struct gmt_trace_event ev = pre->ev;

		rd_lead_end(r, t->lines);
		if (pre->kind == RD_PRE_BLOCK
			? rd_take_block(r, &ev)
			: rd_take_event_hashed(r, &ev, pre->api, pre->driver, pre->api_key,
					       pre->driver_key)) {
			r->usable++;
			r->content++;
		}
	} else {
		if (len && line->text[len - 1] == '\r')
			len--;
		read_line(r, line->text, len, t->lines);
	}
	if (r->refused || r->nomem)
		return false;
	if (!r->trace_line_seen && r->lead > GMT_TRACE_MAX_LEAD)
		return false; /* not a trace: the rest is not read either */
	return true;
}

/*
 * A line read ahead of its turn (pipeline.c): an event or block line of the shape the fast path
 * reads, read into @p pre as read_line() would read it, from @p text (@p len bytes, cut up in
 * place: a copy of the line); anything else, or a line that would be said to be bad, is left to
 * its turn (RD_PRE_NONE), which reads it again from its own bytes.
 */
/* @p name (its length in @p key's upper half) copied into @p room when it fits, NUL included;
 * else @p name itself. */
static const char *
keep_name(char room[24], const char *name, uint64_t key)
{
	size_t n = (size_t)(key >> 32);

	if (n >= 24)
		return name;
	memcpy(room, name, n + 1);
	return room;
}

void
rd_pre_read(char *text, size_t len, size_t lineno, struct rd_pre *pre)
{
	struct gmt_flat flat;

	pre->kind = RD_PRE_NONE;
	if (len && text[len - 1] == '\r')
		len--;
	if (len < 2 || (len > 15 && memcmp(text, "{\"type\":\"stack\"", 15) == 0))
		return;
	if (!gmt_flat_parse(text, len, &flat))
		return;
	const struct gmt_flat_value *type = gmt_flat_get(&flat, "type");
	if (!type || type->type != GMT_FLAT_STR)
		return;
	struct src src = {.flat = &flat};
	if (gmt_flat_str_is(type, "block")) {
		if (rd_parse_block(NULL, src, lineno, &pre->ev))
			pre->kind = RD_PRE_BLOCK;
	} else if (gmt_flat_str_is(type, "event")) {
		uint64_t key[2];

		if (rd_parse_event(NULL, src, lineno, &pre->ev, &pre->api, &pre->driver, key)) {
			pre->kind = RD_PRE_EVENT;
			pre->api_key = key[0];
			pre->driver_key = key[1];
			pre->api = keep_name(pre->names[0], pre->api, key[0]);
			if (pre->driver)
				pre->driver = keep_name(pre->names[1], pre->driver, key[1]);
		}
	}
}
