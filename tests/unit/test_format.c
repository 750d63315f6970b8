/*
 * Trace format: every record the writer produces is one line of valid JSON with the keys
 * docs/trace-format.md promises (parsed back with jansson, the analyzer's parser).
 */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "format/jsonl.h"

static json_t *
parse_line(struct gmt_buf *b)
{
	json_error_t err;

	CHECK(b->len > 0 && b->data[b->len - 1] == '\n');
	CHECK(memchr(b->data, '\n', b->len) == b->data + b->len - 1); /* exactly one line */
	json_t *j = json_loadb(b->data, b->len, 0, &err);
	if (!j)
		fprintf(stderr, "invalid JSON: %s: %.*s", err.text, (int)b->len, b->data);
	CHECK(j != NULL);
	gmt_buf_reset(b);
	return j;
}

static const char *
str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	CHECK(s != NULL);
	return s;
}

static json_int_t
num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	CHECK(json_is_integer(v));
	return json_integer_value(v);
}

int
main(void)
{
	struct gmt_buf b = {0};
	json_t *j;

	/* header, with argv needing escapes and invalid UTF-8 */
	static const char cmd[] = "python3\0tr\"ain.py\0--x=\xff\n";
	const char *const cap[] = {"interpose", NULL};
	struct gmt_header_info h = {
	    .tracer_version = "0.1.0",
	    .pid = 42,
	    .ppid = 1,
	    .host = "node7",
	    .cmdline = cmd,
	    .cmdline_len = sizeof(cmd) - 1,
	    .start_ts = 123,
	    .start_unix_ns = 456,
	    .rank = {.has_rank = true, .rank = 3},
	    .coverage = "runtime API only",
	    .capture = cap,
	    .ring_slots = 1024,
	    .flush_ms = 100,
	    .snapshot_ms = 0,
	    .stacks_native = true,
	    .stacks_python = "3.12",
	    .stacks_depth = 64,
	};
	gmt_jsonl_header(&b, &h);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "type"), "header") == 0);
	CHECK(strcmp(str(j, "format"), "gpumemtrace") == 0);
	CHECK(num(j, "version") == GMT_FORMAT_VERSION);
	CHECK(num(j, "pid") == 42);
	json_t *argv = json_object_get(j, "argv");
	CHECK(json_array_size(argv) == 3);
	CHECK(strcmp(json_string_value(json_array_get(argv, 1)), "tr\"ain.py") == 0);
	CHECK(strcmp(json_string_value(json_array_get(argv, 2)), "--x=\xef\xbf\xbd\n") == 0);
	CHECK(num(json_object_get(j, "rank"), "rank") == 3);
	CHECK(json_is_null(json_object_get(json_object_get(j, "rank"), "local_rank")));
	CHECK(json_is_null(json_object_get(j, "forked_from")));
	CHECK(strcmp(str(j, "coverage"), "runtime API only") == 0);
	CHECK(num(json_object_get(j, "options"), "ring_slots") == 1024);
	json_t *stacks = json_object_get(j, "stacks");
	CHECK(json_is_true(json_object_get(stacks, "native")) && num(stacks, "depth") == 64);
	CHECK(strcmp(str(stacks, "python"), "3.12") == 0);
	json_decref(j);

	/* allocation with a 64-bit pointer */
	struct gmt_event ev = {
	    .seq = 17,
	    .ts_ns = 999,
	    .tid = 7,
	    .op = GMT_OP_ALLOC,
	    .api = GMT_API_cudaMalloc,
	    .kind = GMT_KIND_DEVICE,
	    .device = 0,
	    .ptr = 0xffff7f3a40000000ULL,
	    .size = 1ULL << 40,
	};
	gmt_jsonl_event(&b, &ev, 3);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "type"), "event") == 0);
	CHECK(strcmp(str(j, "op"), "alloc") == 0);
	CHECK(strcmp(str(j, "api"), "cudaMalloc") == 0);
	CHECK(strcmp(str(j, "kind"), "device") == 0);
	CHECK(strcmp(str(j, "ptr"), "0xffff7f3a40000000") == 0);
	CHECK(strcmp(str(j, "stream"), "0x0") == 0);
	CHECK(num(j, "size") == (json_int_t)(1ULL << 40));
	CHECK(num(j, "seq") == 17 && num(j, "ts") == 999 && num(j, "tid") == 7);
	CHECK(num(j, "stack") == 3 && num(j, "result") == 0);
	CHECK(json_object_get(j, "free_bytes") == NULL);
	json_decref(j);

	/* failed allocation keeps the request and the device's free memory */
	ev.result = 2;
	ev.ptr = 0;
	ev.flags = GMT_EV_HAS_MEMINFO;
	ev.free_bytes = 5;
	ev.total_bytes = 10;
	gmt_jsonl_event(&b, &ev, 3);
	j = parse_line(&b);
	CHECK(num(j, "result") == 2 && num(j, "free_bytes") == 5 && num(j, "total_bytes") == 10);
	CHECK(strcmp(str(j, "ptr"), "0x0") == 0);
	json_decref(j);

	/* free: no size; pitch: requested; ptsz flag; reset: no ptr */
	struct gmt_event fr = {.seq = 18,
			       .op = GMT_OP_FREE,
			       .api = GMT_API_cudaFreeAsync,
			       .kind = GMT_KIND_POOL,
			       .ptr = 0x10,
			       .stream = 0xabc,
			       .flags = GMT_EV_PTSZ};
	gmt_jsonl_event(&b, &fr, 0);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "op"), "free") == 0 && json_object_get(j, "size") == NULL);
	CHECK(strcmp(str(j, "stream"), "0xabc") == 0);
	CHECK(json_is_true(json_object_get(j, "ptsz")));
	json_decref(j);

	struct gmt_event rs = {
	    .seq = 19, .op = GMT_OP_RESET, .api = GMT_API_cudaDeviceReset, .device = 1};
	gmt_jsonl_event(&b, &rs, 0);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "op"), "reset") == 0 && num(j, "device") == 1);
	CHECK(json_object_get(j, "ptr") == NULL && json_object_get(j, "kind") == NULL);
	json_decref(j);

	/* marker with a label that needs escaping */
	struct gmt_event mk = {.seq = 20, .op = GMT_OP_MARKER, .tid = 1};
	strcpy(mk.label, "epoch \"1\"\t<script>");
	gmt_jsonl_event(&b, &mk, 0);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "type"), "marker") == 0);
	CHECK(strcmp(str(j, "label"), "epoch \"1\"\t<script>") == 0);
	json_decref(j);

	/* stack, snapshot, trailer */
	uint64_t frames[] = {0x401000, 0x7f0000001234};
	struct gmt_stack_py py[] = {{7, 46u << 1 | 1}, {5, 120u << 1}};
	struct gmt_stack_view sv = {.id = 5, .nframes = 2, .npy = 2, .frames = frames, .py = py};
	gmt_jsonl_stack(&b, &sv);
	j = parse_line(&b);
	CHECK(num(j, "id") == 5);
	CHECK(strcmp(json_string_value(json_array_get(json_object_get(j, "frames"), 1)),
		     "0x7f0000001234") == 0);
	json_t *p0 = json_array_get(json_object_get(j, "py"), 0),
	       *p1 = json_array_get(json_object_get(j, "py"), 1);
	CHECK(json_integer_value(json_array_get(p0, 0)) == 7 &&
	      json_integer_value(json_array_get(p0, 1)) == 46 &&
	      json_integer_value(json_array_get(p0, 2)) == 1);
	CHECK(json_integer_value(json_array_get(p1, 1)) == 120 &&
	      json_integer_value(json_array_get(p1, 2)) == 0);
	json_decref(j);
	sv = (struct gmt_stack_view){
	    .id = 6, .nframes = 1, .frames = frames, .pystate = GMT_PYSTATE_EMPTY};
	gmt_jsonl_stack(&b, &sv);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "pystate"), "empty") == 0 && json_object_get(j, "py") == NULL);
	json_decref(j);

	/* pycode: strings escaped, the line table as hex */
	const uint8_t table[] = {0x80, 0x00, 0xde, 0x0b};
	struct gmt_pycode_view pc = {.id = 7,
				     .file = "/tmp/t\"x.py",
				     .name = "step",
				     .qualname = "T.step",
				     .firstlineno = 40,
				     .linetable = table,
				     .linetable_len = 4,
				     .version = "3.12"};
	gmt_jsonl_pycode(&b, &pc);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "file"), "/tmp/t\"x.py") == 0 &&
	      strcmp(str(j, "qualname"), "T.step") == 0);
	CHECK(strcmp(str(j, "linetable"), "8000de0b") == 0 && num(j, "firstlineno") == 40);
	json_decref(j);

	/* modules: two objects, the second with its segments */
	const uint8_t bid[] = {0xab, 0x01};
	const uint64_t segs[2][2] = {{0, 4096}, {8192, 100}};
	struct gmt_module_view mods[] = {
	    {.path = "/usr/bin/prog",
	     .base = 0x555500000000,
	     .build_id = bid,
	     .build_id_len = 2,
	     .segments = segs,
	     .nsegments = 2},
	    {.path = "[vdso]", .base = 0x7fff0000, .segments = segs, .nsegments = 1},
	};
	gmt_jsonl_modules_begin(&b, 9);
	for (size_t i = 0; i < 2; i++)
		gmt_jsonl_modules_entry(&b, &mods[i], i);
	gmt_jsonl_modules_end(&b);
	j = parse_line(&b);
	json_t *m0 = json_array_get(json_object_get(j, "modules"), 0);
	json_t *m1 = json_array_get(json_object_get(j, "modules"), 1);
	CHECK(num(j, "seq") == 9 && strcmp(str(m0, "build_id"), "ab01") == 0);
	CHECK(json_integer_value(
		  json_array_get(json_array_get(json_object_get(m0, "segments"), 1), 0)) == 8192);
	CHECK(strcmp(str(m1, "path"), "[vdso]") == 0 && strcmp(str(m1, "build_id"), "") == 0);
	CHECK(json_object_get(m0, "path_hex") == NULL && json_object_get(m1, "path_hex") == NULL);
	json_decref(j);

	/* a path that is not UTF-8: shown with U+FFFD, its bytes whole in path_hex */
	struct gmt_module_view bytes = {
	    .path = "/t/\xff\xc3(/l\xe9.so", .base = 0x1000, .segments = segs, .nsegments = 1};
	gmt_jsonl_modules_begin(&b, 10);
	gmt_jsonl_modules_entry(&b, &bytes, 0);
	gmt_jsonl_modules_end(&b);
	j = parse_line(&b);
	m0 = json_array_get(json_object_get(j, "modules"), 0);
	CHECK(strcmp(str(m0, "path"), "/t/\xef\xbf\xbd\xef\xbf\xbd(/l\xef\xbf\xbd.so") == 0);
	CHECK(strcmp(str(m0, "path_hex"), "2f742fffc3282f6ce92e736f") == 0);
	json_decref(j);

	struct gmt_live_total live[] = {{0, GMT_KIND_DEVICE, 100, 2},
					{1, GMT_KIND_PINNED, 4096, 1}};
	gmt_jsonl_snapshot(&b, 1, 20, 19, 0, live, 2, NULL, 0);
	j = parse_line(&b);
	json_t *l1 = json_array_get(json_object_get(j, "live"), 1);
	CHECK(num(l1, "device") == 1 && strcmp(str(l1, "kind"), "pinned") == 0 &&
	      num(l1, "bytes") == 4096);
	json_decref(j);

	gmt_jsonl_trailer(&b, 2, 19, 3, 0, "exit");
	j = parse_line(&b);
	CHECK(strcmp(str(j, "type"), "trailer") == 0 && num(j, "dropped") == 3 &&
	      num(j, "events") == 19 && !json_object_get(j, "dropped_readings"));
	json_decref(j);
	gmt_jsonl_trailer(&b, 2, 19, 3, 2, "exit");
	j = parse_line(&b);
	CHECK(num(j, "dropped") == 3 && num(j, "dropped_readings") == 2);
	json_decref(j);

	/* every API is a runtime (cuda*) or driver (cu*) function, with an op and, except resets, a
	 * kind */
	for (int a = 1; a < GMT_API_COUNT; a++) {
		const char *name = gmt_api_name((enum gmt_api)a);
		CHECK(strncmp(name, "cu", 2) == 0);
		CHECK(gmt_api_op((enum gmt_api)a) != GMT_OP_NONE);
		CHECK(gmt_api_op((enum gmt_api)a) == GMT_OP_RESET ||
		      gmt_api_kind((enum gmt_api)a) != GMT_KIND_NONE);
	}

	/* a CUPTI event names both calls; a range free carries its size; a reading its pool */
	struct gmt_event d = {.seq = 30,
			      .op = GMT_OP_ALLOC,
			      .api = GMT_API_cudaMalloc,
			      .driver = GMT_API_cuMemAlloc_v2,
			      .kind = GMT_KIND_DEVICE,
			      .ptr = 0x1000,
			      .size = 512,
			      .context = 7};
	gmt_buf_reset(&b);
	gmt_jsonl_event(&b, &d, 0);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "api"), "cudaMalloc") == 0 &&
	      strcmp(str(j, "driver"), "cuMemAlloc_v2") == 0);
	CHECK(num(j, "context") == 7);
	json_decref(j);
	d = (struct gmt_event){.seq = 31,
			       .op = GMT_OP_FREE,
			       .api = GMT_API_cuMemUnmap,
			       .kind = GMT_KIND_VMM_MAPPED,
			       .ptr = 0x2000,
			       .size = 4096};
	gmt_buf_reset(&b);
	gmt_jsonl_event(&b, &d, 0);
	j = parse_line(&b);
	CHECK(num(j, "size") == 4096 && json_object_get(j, "driver") == NULL);
	json_decref(j);
	d = (struct gmt_event){.seq = 32,
			       .op = GMT_OP_USAGE,
			       .api = GMT_API_cuMemPoolTrimTo,
			       .kind = GMT_KIND_POOL_RESERVE,
			       .pool = 0xabc,
			       .size = 0,
			       .flags = GMT_EV_HAS_POOL};
	gmt_buf_reset(&b);
	gmt_jsonl_event(&b, &d, 0);
	j = parse_line(&b);
	CHECK(strcmp(str(j, "op"), "usage") == 0 && strcmp(str(j, "pool"), "0xabc") == 0 &&
	      json_object_get(j, "ptr") == NULL);
	json_decref(j);

	gmt_buf_free(&b);
	printf("format: ok\n");
	return 0;
}
