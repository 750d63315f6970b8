/*
 * Unit test of src/analysis/pickle.c: the real snapshot pickles of torch 2.11 (tests/fixtures) read
 * with the figures torch gave at each dump, a round trip through the writer, and hostile input:
 * every cut of a real pickle, an opcode that would run code, memo keys out of range, a cycle.
 *
 *   test_pickle FIXTURE_DIR OUT.pickle    (OUT.pickle: the writer's output, for pickle_python.py)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/reader/pickle.h"

static int failures;

/* every failed expectation is printed, the test goes on; exit 1 at the end if any failed */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static int
check_finish(void)
{
	if (failures)
		fprintf(stderr, "%d failed\n", failures);
	return failures ? 1 : 0;
}

static uint8_t *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static size_t
count(const struct gmt_pk *v)
{
	size_t n;
	gmt_pk_items(v, &n);
	return n;
}

static void
real_snapshots(const char *dir)
{
	/* torch's own segment counts at each dump (figures.json) */
	static const struct {
		const char *name;
		size_t segments;
		const char *conf;
		bool traces;
	} want[] = {
	    {"history", 8, "", true},
	    {"nohistory", 8, "", false},
	    {"expandable", 2, "expandable_segments:True", true},
	    {"oom", 4, "", true},
	    {"graphs", 9, "", true},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char path[4096], err[256];
		size_t len;
		snprintf(path, sizeof(path), "%s/%s.pickle", dir, want[i].name);
		uint8_t *buf = slurp(path, &len);
		CHECK(buf != NULL, "read %s", path);
		if (!buf)
			continue;
		struct gmt_pk_doc *doc;
		int rc = gmt_pk_parse(buf, len, &doc, err, sizeof(err));
		CHECK(rc == 0, "%s parses (%s)", want[i].name, err);
		if (rc) {
			free(buf);
			continue;
		}
		const struct gmt_pk *root = gmt_pk_root(doc);
		const struct gmt_pk *segs = gmt_pk_get(root, "segments");
		CHECK(count(segs) == want[i].segments, "%s: %zu segments, torch said %zu",
		      want[i].name, count(segs), want[i].segments);
		/* every block lies in its segment and the blocks tile it */
		size_t n;
		struct gmt_pk *const *s = gmt_pk_items(segs, &n);
		bool tiled = n > 0;
		for (size_t k = 0; k < n; k++) {
			int64_t addr = gmt_pk_int(gmt_pk_get(s[k], "address"), -1);
			int64_t total = gmt_pk_int(gmt_pk_get(s[k], "total_size"), -1), sum = 0;
			size_t nb;
			struct gmt_pk *const *b = gmt_pk_items(gmt_pk_get(s[k], "blocks"), &nb);
			for (size_t j = 0; j < nb; j++) {
				tiled &= gmt_pk_int(gmt_pk_get(b[j], "address"), -2) == addr + sum;
				sum += gmt_pk_int(gmt_pk_get(b[j], "size"), 0);
			}
			tiled &= sum == total || gmt_pk_get(s[k], "is_expandable")->u.b;
		}
		CHECK(tiled, "%s: blocks tile their segments (addresses as 64-bit integers)",
		      want[i].name);
		const char *conf = gmt_pk_str(
		    gmt_pk_get(gmt_pk_get(root, "allocator_settings"), "PYTORCH_CUDA_ALLOC_CONF"));
		CHECK(conf && !strcmp(conf, want[i].conf), "%s: allocator settings '%s'",
		      want[i].name, conf ? conf : "(none)");
		size_t nt;
		struct gmt_pk *const *tr = gmt_pk_items(gmt_pk_get(root, "device_traces"), &nt);
		size_t entries = nt ? count(tr[0]) : 0;
		CHECK((entries > 0) == want[i].traces, "%s: %zu trace entries", want[i].name,
		      entries);
		gmt_pk_free(doc);

		/* every cut of the file is an error, never a crash or a success */
		if (!strcmp(want[i].name, "oom")) {
			size_t bad = 0;
			for (size_t cut = 0; cut < len; cut++) {
				rc = gmt_pk_parse(buf, cut, &doc, err, sizeof(err));
				bad += rc == 0;
				if (rc == 0)
					gmt_pk_free(doc);
			}
			CHECK(bad == 0,
			      "oom.pickle cut anywhere is refused (%zu cuts were accepted)", bad);
		}
		free(buf);
	}
}

static void
hostile(void)
{
	char err[256];
	struct gmt_pk_doc *doc;
	/* os.system via GLOBAL + REDUCE: refused at the GLOBAL, never run */
	static const uint8_t global[] = "\x80\x02"
					"cos\nsystem\n"
					"X\x02\x00\x00\x00id"
					"\x85R.";
	int rc = gmt_pk_parse(global, sizeof(global) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "GLOBAL") && strstr(err, "byte 2"),
	      "a GLOBAL opcode is refused by name and offset (%s)", err);
	static const uint8_t stack_global[] = "\x80\x04\x8c\x02os\x8c\x06system\x93.";
	rc = gmt_pk_parse(stack_global, sizeof(stack_global) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "STACK_GLOBAL"), "STACK_GLOBAL refused (%s)", err);
	static const uint8_t bad_get[] = "\x80\x04j\xff\xff\xff\x7f.";
	rc = gmt_pk_parse(bad_get, sizeof(bad_get) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "never stored"), "a memo key never stored (%s)", err);
	static const uint8_t huge_put[] = "\x80\x04Nr\xff\xff\xff\xff.";
	rc = gmt_pk_parse(huge_put, sizeof(huge_put) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "out of range"), "a memo key of 4G refused (%s)", err);
	static const uint8_t long_str[] = "\x80\x04X\xff\xff\xff\xff"
					  "abc.";
	rc = gmt_pk_parse(long_str, sizeof(long_str) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "past the end"), "a length past the end (%s)", err);
	static const uint8_t text[] = "{\"segments\": []}";
	rc = gmt_pk_parse(text, sizeof(text) - 1, &doc, err, sizeof(err));
	CHECK(rc == -EINVAL, "JSON is not a pickle (%s)", err);
	/* a list that contains itself: parsed (the tree is a DAG with a cycle), freed */
	static const uint8_t cycle[] = "\x80\x04]\x94h\x00"
				       "a.";
	rc = gmt_pk_parse(cycle, sizeof(cycle) - 1, &doc, err, sizeof(err));
	CHECK(rc == 0, "a self-referencing list parses (%s)", err);
	if (rc == 0) {
		size_t n;
		struct gmt_pk *const *it = gmt_pk_items(gmt_pk_root(doc), &n);
		CHECK(n == 1 && it[0] == gmt_pk_root(doc), "its one item is itself");
		gmt_pk_free(doc);
	}
}

static void
roundtrip(const char *out_path)
{
	struct gmt_pkw w;
	gmt_pkw_begin(&w);
	gmt_pkw_dict_begin(&w);
	gmt_pkw_str(&w, "address");
	gmt_pkw_uint(&w, 0x7f1e40000000ull);
	gmt_pkw_str(&w, "negative");
	gmt_pkw_int(&w, -5000000000ll);
	gmt_pkw_str(&w, "small");
	gmt_pkw_int(&w, 7);
	gmt_pkw_str(&w, "mid");
	gmt_pkw_int(&w, 40000);
	gmt_pkw_str(&w, "i32");
	gmt_pkw_int(&w, -2);
	gmt_pkw_str(&w, "top");
	gmt_pkw_uint(&w, UINT64_MAX);
	gmt_pkw_str(&w, "ratio");
	gmt_pkw_float(&w, 0.375);
	gmt_pkw_str(&w, "flags");
	gmt_pkw_list_begin(&w);
	gmt_pkw_bool(&w, true);
	gmt_pkw_bool(&w, false);
	gmt_pkw_none(&w);
	gmt_pkw_list_end(&w);
	gmt_pkw_str(&w, "pool");
	gmt_pkw_int(&w, 1);
	gmt_pkw_int(&w, 0);
	gmt_pkw_tuple2(&w);
	gmt_pkw_str(&w, "name");
	char longname[300];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	gmt_pkw_str(&w, longname);
	gmt_pkw_str(&w, "utf8");
	gmt_pkw_str(&w, "caf\xc3\xa9");
	gmt_pkw_str(&w, "empty");
	gmt_pkw_dict_begin(&w);
	gmt_pkw_dict_end(&w);
	gmt_pkw_dict_end(&w);
	gmt_pkw_end(&w);
	CHECK(!w.failed, "the writer's buffer");

	char err[256];
	struct gmt_pk_doc *doc;
	int rc = gmt_pk_parse(w.buf, w.len, &doc, err, sizeof(err));
	CHECK(rc == 0, "the writer's output parses (%s)", err);
	if (rc == 0) {
		const struct gmt_pk *r = gmt_pk_root(doc);
		CHECK(gmt_pk_int(gmt_pk_get(r, "address"), 0) == 0x7f1e40000000ll, "address back");
		CHECK(gmt_pk_int(gmt_pk_get(r, "negative"), 0) == -5000000000ll, "negative back");
		CHECK(gmt_pk_int(gmt_pk_get(r, "small"), 0) == 7 &&
			  gmt_pk_int(gmt_pk_get(r, "mid"), 0) == 40000 &&
			  gmt_pk_int(gmt_pk_get(r, "i32"), 0) == -2,
		      "small integers back");
		CHECK(gmt_pk_get(r, "top")->type == GMT_PK_BIGINT, "2^64-1 is a big integer");
		CHECK(gmt_pk_get(r, "ratio")->u.f == 0.375, "float back");
		CHECK(count(gmt_pk_get(r, "flags")) == 3, "list back");
		CHECK(gmt_pk_get(r, "pool")->type == GMT_PK_TUPLE &&
			  count(gmt_pk_get(r, "pool")) == 2,
		      "tuple back");
		CHECK(strlen(gmt_pk_str(gmt_pk_get(r, "name"))) == 299, "a 299-byte string back");
		gmt_pk_free(doc);
	}
	FILE *f = fopen(out_path, "wb");
	CHECK(f && fwrite(w.buf, 1, w.len, f) == w.len, "write %s", out_path);
	if (f)
		fclose(f);
	gmt_pkw_free(&w);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_pickle FIXTURE_DIR OUT.pickle\n");
		return 2;
	}
	real_snapshots(argv[1]);
	hostile();
	roundtrip(argv[2]);
	return check_finish();
}
