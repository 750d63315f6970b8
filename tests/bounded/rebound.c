/*
 * rebound: a full trace (the default mode's) made into the bounded trace of the same events, by
 * the tracer's own bounded writer (src/writer/bounded.c), so that run_bounded.py can compare the
 * reports of one event stream in both modes, exactly.
 *
 *   rebound IN.jsonl OUT.jsonl BUCKET_MS
 *
 * Event, marker, block and torch lines go through gmt_bounded_push() in file order (the order the
 * writer drained them); a bucket ends when an event is BUCKET_MS past the bucket's first, and at
 * every snapshot line (as the bounded writer writes snapshots only at bucket ends). The lines
 * kept are copied as they were; the header gains the bounded options, the trailer the bounded
 * counts. The other lines (stacks, modules, Python code) are copied where they were: earlier
 * than the tracer would write them, which the format allows. Exit 0, 1 on bad input.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/elided.h"
#include "format/event.h"
#include "format/jsonl.h"
#include "format/torch_entry.h"
#include "writer/bounded.h"

static struct gmt_buf out;
static char **lines; /* the input's event lines, by the index events carry in tid */
static size_t nlines, caplines;
static FILE *fout;
static uint64_t events_written;

static void
emit(const struct gmt_event *ev)
{
	gmt_buf_puts(&out, lines[ev->tid]);
	events_written++;
}

static void
no_stack(uint32_t id)
{
	(void)id; /* the stack lines were copied as they came */
}

static void
flush(void)
{
	fwrite(out.data, 1, out.len, fout);
	gmt_buf_reset(&out);
}

static uint64_t
u64(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static uint64_t
hex(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? strtoull(json_string_value(v), NULL, 16) : 0;
}

static unsigned
api_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return 0;
	for (unsigned a = 1; a < GMT_API_COUNT; a++)
		if (!strcmp(gmt_api_name((enum gmt_api)a), json_string_value(v)))
			return a;
	return 0;
}

/* A block line's fields as the tracer held them (format/jsonl.c event_block() writes them). */
static void
block_of(json_t *o, struct gmt_event *ev)
{
	const char *a = json_string_value(json_object_get(o, "action"));
	json_t *pool = json_object_get(o, "pool");

	for (unsigned k = 1; a && k < GMT_TORCH_ACTION_COUNT; k++)
		if (!strcmp(gmt_torch_action_name(k), a))
			ev->torch_action = (uint8_t)k;
	ev->stream = hex(o, "stream");
	ev->requested = u64(o, "requested");
	if (json_is_true(json_object_get(o, "allocated")))
		ev->cuda_flags |= GMT_TORCH_F_ALLOCATED;
	if (json_is_true(json_object_get(o, "active")))
		ev->cuda_flags |= GMT_TORCH_F_ACTIVE;
	if (json_is_true(json_object_get(o, "expandable")))
		ev->cuda_flags |= GMT_TORCH_F_EXPANDABLE;
	const char *pt = json_string_value(json_object_get(o, "pool_type"));
	if (pt && !strcmp(pt, "large"))
		ev->cuda_flags |= GMT_TORCH_F_LARGE;
	if (json_is_array(pool) && json_array_size(pool) == 2) {
		ev->cuda_flags |= GMT_TORCH_F_HAS_POOL;
		ev->pool = (uint64_t)json_integer_value(json_array_get(pool, 0));
		ev->pool2 = (uint64_t)json_integer_value(json_array_get(pool, 1));
	}
	if (json_is_true(json_object_get(o, "gc")))
		ev->flags |= GMT_EV_IN_GC;
	if (ev->torch_action == GMT_TORCH_OOM)
		ev->free_bytes = u64(o, "device_free");
}

static unsigned
kind_of(json_t *o)
{
	json_t *v = json_object_get(o, "kind");
	if (!json_is_string(v))
		return 0;
	for (unsigned k = 1; k < GMT_KIND_COUNT; k++)
		if (!strcmp(gmt_kind_name((enum gmt_kind)k), json_string_value(v)))
			return k;
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: rebound IN.jsonl OUT.jsonl BUCKET_MS\n");
		return 1;
	}
	FILE *in = fopen(argv[1], "r");
	fout = fopen(argv[2], "w");
	uint64_t bucket_ns = strtoull(argv[3], NULL, 10) * 1000000ULL, bucket_start = 0;
	if (!in || !fout) {
		perror("rebound");
		return 1;
	}
	struct gmt_bounded_config cfg = {
	    .bucket_ns = bucket_ns,
	    .max_events = 1u << 20,
	    .out = &out,
	    .emit = emit,
	    .stack = no_stack,
	};
	gmt_bounded_init(&cfg);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, in)) > 0) {
		json_error_t err;
		json_t *o = json_loadb(line, (size_t)len, 0, &err);
		const char *type = o ? json_string_value(json_object_get(o, "type")) : NULL;
		if (!type) {
			fprintf(stderr, "rebound: %s: not a trace line: %s\n", argv[1], err.text);
			return 1;
		}
		if (!strcmp(type, "header")) {
			json_t *opts = json_object_get(o, "options");
			json_object_set_new(opts, GMT_OPT_BOUNDED, json_true());
			json_object_set_new(opts, GMT_OPT_BUCKET_MS,
					    json_integer((json_int_t)(bucket_ns / 1000000ULL)));
			char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
			gmt_buf_puts(&out, s);
			gmt_buf_puts(&out, "\n");
			free(s);
		} else if (!strcmp(type, "event") || !strcmp(type, "marker") ||
			   !strcmp(type, "block") || !strcmp(type, "torch") ||
			   !strcmp(type, "holders")) {
			struct gmt_event ev = {
			    .seq = u64(o, "seq"),
			    .ts_ns = u64(o, "ts"),
			    .ptr = hex(o, "ptr"),
			    .size = u64(o, "size"),
			    .requested = u64(o, "requested"),
			    .pool = hex(o, "pool"),
			    .handle = hex(o, "handle"),
			    .context = u64(o, "context"),
			    .stack = (uint32_t)u64(o, "stack"),
			    .device =
				json_is_integer(json_object_get(o, "device"))
				    ? (int32_t)json_integer_value(json_object_get(o, "device"))
				    : -1,
			    .result = (int32_t)u64(o, "result"),
			    .api = (uint16_t)api_of(o, "api"),
			    .driver = (uint16_t)api_of(o, "driver"),
			    .kind = (uint8_t)kind_of(o),
			    .tid = (int32_t)nlines,
			};
			if (!strcmp(type, "event"))
				ev.op = (uint8_t)gmt_op_from_name(
				    json_string_value(json_object_get(o, "op")));
			else
				ev.op = !strcmp(type, "marker")	   ? GMT_OP_MARKER
					: !strcmp(type, "block")   ? GMT_OP_BLOCK
					: !strcmp(type, "holders") ? GMT_OP_HOLDERS
								   : GMT_OP_LAYER;
			if (ev.op == GMT_OP_BLOCK)
				block_of(o, &ev);
			if (nlines == caplines) {
				caplines = caplines ? caplines * 2 : 4096;
				lines = realloc(lines, caplines * sizeof(*lines));
			}
			lines[nlines++] = strdup(line);
			if (!bucket_start)
				bucket_start = ev.ts_ns;
			if (ev.ts_ns - bucket_start >= bucket_ns && ev.ts_ns > bucket_start) {
				gmt_bounded_cut(ev.ts_ns, false);
				bucket_start = ev.ts_ns;
			}
			gmt_bounded_push(&ev);
		} else if (!strcmp(type, "snapshot")) {
			gmt_bounded_cut(u64(o, "ts"), true);
			gmt_buf_puts(&out, line);
		} else if (!strcmp(type, "trailer")) {
			gmt_bounded_cut(u64(o, "ts"), true);
			const struct gmt_bounded_stats *st = gmt_bounded_stats();
			gmt_jsonl_trailer_bounded(&out, u64(o, "ts"), events_written,
						  u64(o, "dropped"), u64(o, "dropped_readings"),
						  "exit", st->elided, st->late, st->buckets);
		} else {
			gmt_buf_puts(&out, line);
		}
		json_decref(o);
		if (out.len > (1u << 20))
			flush();
	}
	gmt_bounded_cut(UINT64_MAX / 2, true); /* a trace without a trailer */
	flush();
	fclose(fout);
	fclose(in);
	const struct gmt_bounded_stats *st = gmt_bounded_stats();
	printf("%zu events in, %llu written, %llu elided, %llu buckets\n", nlines,
	       (unsigned long long)events_written, (unsigned long long)st->elided,
	       (unsigned long long)st->buckets);
	return 0;
}
