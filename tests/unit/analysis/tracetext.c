/*
 * @brief Traces written in the test (tracetext.h).
 */
#define _GNU_SOURCE /* mkdtemp, open_memstream */
#include "tracetext.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static unsigned nfiles;
static FILE *diag;
static char *diag_buf;
static size_t diag_len;

static void
cleanup(void)
{
	DIR *d = tmpdir[0] ? opendir(tmpdir) : NULL;
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
		unlink(path);
	}
	if (d) {
		closedir(d);
		rmdir(tmpdir);
	}
	if (diag)
		fclose(diag);
	free(diag_buf);
}

static void
fail(const char *what)
{
	fprintf(stderr, "tracetext: %s\n", what);
	exit(1);
}

static void
append(struct tt *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *p = realloc(t->text, cap);

		if (!p)
			fail("out of memory");
		t->text = p;
		t->cap = cap;
	}
	memcpy(t->text + t->len, s, n);
	t->len += n;
	t->text[t->len] = '\0';
}

void
tt_line(struct tt *t, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		fail("line too long");
	for (char *p = buf; *p; p++)
		if (*p == '\'')
			*p = '"';
	append(t, buf, (size_t)n);
	append(t, "\n", 1);
}

void
tt_init(struct tt *t, long pid)
{
	*t = (struct tt){0};
	tt_line(t,
		"{'type':'header','format':'gpumemtrace','version':1,'tracer':'0.1.0','pid':%ld,"
		"'ppid':1,'host':'unit','argv':['unit'],'start_ts':0,'start_unix_ns':0,"
		"'rank':null,'forked_from':null,'coverage':'full','capture':['cupti']}",
		pid);
}

void
tt_fini(struct tt *t)
{
	free(t->text);
	*t = (struct tt){0};
}

void
tt_alloc(struct tt *t,
	 uint64_t seq,
	 const char *api,
	 const char *kind,
	 int device,
	 uint64_t ptr,
	 uint64_t size,
	 uint32_t stack)
{
	tt_line(t,
		"{'type':'event','seq':%" PRIu64 ",'ts':%" PRIu64 ",'tid':1,'op':'alloc',"
		"'api':'%s','kind':'%s','device':%d,'ptr':'0x%" PRIx64 "','size':%" PRIu64
		",'result':0,'stack':%" PRIu32 "}",
		seq, seq * 1000, api, kind, device, ptr, size, stack);
}

void
tt_free(struct tt *t, uint64_t seq, const char *api, const char *kind, int device, uint64_t ptr)
{
	tt_line(t,
		"{'type':'event','seq':%" PRIu64 ",'ts':%" PRIu64 ",'tid':1,'op':'free',"
		"'api':'%s','kind':'%s','device':%d,'ptr':'0x%" PRIx64 "','result':0}",
		seq, seq * 1000, api, kind, device, ptr);
}

void
tt_stack(struct tt *t, uint32_t id, const uint64_t *frames, size_t n)
{
	char buf[2048];
	size_t len = 0;

	for (size_t i = 0; i < n && len + 32 < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s'0x%" PRIx64 "'",
					i ? "," : "", frames[i]);
	buf[len] = '\0';
	tt_line(t, "{'type':'stack','id':%" PRIu32 ",'frames':[%s]}", id, buf);
}

void
tt_mark(struct tt *t, uint64_t seq, const char *label)
{
	tt_line(t, "{'type':'marker','seq':%" PRIu64 ",'ts':%" PRIu64 ",'tid':1,'label':'%s'}", seq,
		seq * 1000, label);
}

void
tt_trailer(struct tt *t, uint64_t ts, uint64_t events)
{
	tt_line(t,
		"{'type':'trailer','ts':%" PRIu64 ",'events':%" PRIu64 ",'dropped':0,"
		"'reason':'exit'}",
		ts, events);
}

char *
tt_file(const struct tt *t)
{
	char *path;
	FILE *f;

	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");

		snprintf(tmpdir, sizeof(tmpdir), "%s/gmt-unit-XXXXXX",
			 base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir))
			fail("cannot make a temporary directory");
		atexit(cleanup);
	}
	if (asprintf(&path, "%s/trace%u.jsonl", tmpdir, nfiles++) < 0)
		fail("out of memory");
	if (!(f = fopen(path, "w")) || fwrite(t->text, 1, t->len, f) != t->len || fclose(f) != 0)
		fail("cannot write a trace");
	return path;
}

FILE *
tt_diag_stream(void)
{
	if (!diag && !(diag = open_memstream(&diag_buf, &diag_len)))
		fail("out of memory");
	return diag;
}

const char *
tt_diag(void)
{
	static char last[4096];
	static size_t seen;

	fflush(tt_diag_stream());
	snprintf(last, sizeof(last), "%s", diag_buf ? diag_buf + seen : "");
	seen = diag_len; /* the next call says what came after this one */
	return last;
}

struct gmt_trace *
tt_read(const struct tt *t)
{
	char *path = tt_file(t);
	struct gmt_trace *trace;

	if (gmt_trace_read(path, tt_diag_stream(), NULL, &trace) != GMT_TRACE_OK) {
		fprintf(stderr, "%s", tt_diag());
		fail("the trace is unreadable");
	}
	free(path);
	return trace;
}
