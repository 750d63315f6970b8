/*
 * @brief Loading the traces named on a command line: files, directories of `*.jsonl`.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
cmp_name(const void *a, const void *b)
{
	/* Bytewise, not strcoll(): the order of a report must not depend on the locale. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
gmt_list_traces(const char *dir, char ***names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t n = 0;

	*names = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len <= 6 || strcmp(e->d_name + len - 6, ".jsonl") != 0)
			continue;
		v = gmt_xrealloc(v, n + 1, sizeof(*v));
		v[n] = strdup(e->d_name);
		if (!v[n]) {
			fprintf(stderr, "gpumemtrace: out of memory\n");
			exit(GMT_EXIT_UNREADABLE);
		}
		n++;
	}
	closedir(d);
	if (n > 1) /* qsort() of NULL is undefined, even for 0 elements */
		qsort(v, n, sizeof(*v), cmp_name);
	*names = v;
	return (int)n;
}

/* The model of the trace being read, made when the first event or marker arrives. */
struct feed {
	struct gmt_model *m;
	const struct gmt_range_opt *range;
	bool oom;
};

static bool
feed_model(struct feed *f, const struct gmt_trace *t)
{
	if (!f->m && !f->oom && !(f->m = gmt_model_new(t, f->range)))
		f->oom = true;
	return f->m != NULL;
}

static void
feed_event(void *ctx, const struct gmt_trace *t, const struct gmt_trace_event *ev)
{
	if (feed_model(ctx, t))
		gmt_model_event(((struct feed *)ctx)->m, ev);
}

static void
feed_marker(void *ctx, const struct gmt_trace *t, const struct gmt_trace_marker *mk)
{
	if (feed_model(ctx, t))
		gmt_model_marker(((struct feed *)ctx)->m, mk);
}

void
gmt_inputs_add_file(struct gmt_inputs *in, const char *path, FILE *diag)
{
	struct feed f = {.range = &in->range};
	struct gmt_trace_sink sink = {feed_event, feed_marker, &f};
	struct gmt_trace *t;
	struct gmt_model *m;

	/*
	 * Streamed: the events go to the model as they are read, and are not kept.
	 * GMT_TRACE_STORED=1 reads the whole trace first and replays it (the tests compare both).
	 */
	const char *stored = getenv("GMT_TRACE_STORED");
	if (stored && strcmp(stored, "1") == 0) {
		if (gmt_trace_read(path, diag, &t) != GMT_TRACE_OK) {
			in->unreadable++;
			return;
		}
		f.m = gmt_model_build_range(t, f.range);
		f.oom = !f.m;
	} else if (gmt_trace_read_sink(path, diag, &sink, &t) != GMT_TRACE_OK) {
		gmt_model_free(f.m);
		in->unreadable++;
		return;
	}
	if (!f.oom && !f.m)
		f.m = gmt_model_new(t, f.range); /* a trace without events */
	m = f.m;
	if (!m) {
		fprintf(diag, "%s: out of memory\n", gmt_esc(path));
		gmt_trace_free(t);
		in->unreadable++;
		return;
	}
	gmt_model_finish(m); /* nothing to do when it was replayed from a stored trace */
	if (!in->sym)
		in->sym = gmt_symbolizer_new(diag);
	m->stacks = gmt_callstacks_new(t, in->sym);
	in->traces = gmt_xrealloc(in->traces, in->n + 1, sizeof(*in->traces));
	in->models = gmt_xrealloc(in->models, in->n + 1, sizeof(*in->models));
	in->traces[in->n] = t;
	in->models[in->n] = m;
	in->n++;
}

void
gmt_inputs_add_path(struct gmt_inputs *in, const char *path, FILE *diag)
{
	struct stat st;
	char **names;
	int n;

	if (stat(path, &st) != 0) {
		fprintf(diag, "%s: cannot open: %s\n", gmt_esc(path), strerror(errno));
		in->unreadable++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		gmt_inputs_add_file(in, path, diag);
		return;
	}
	n = gmt_list_traces(path, &names);
	if (n < 0) {
		fprintf(diag, "%s: cannot read directory: %s\n", gmt_esc(path), strerror(-n));
		in->unreadable++;
		return;
	}
	if (n == 0) {
		fprintf(diag, "%s: no *.jsonl trace files in this directory\n", gmt_esc(path));
		in->unreadable++;
	}
	for (int i = 0; i < n; i++) {
		char *p = gmt_path_join(path, names[i]);

		if (p) {
			gmt_inputs_add_file(in, p, diag);
		} else {
			fprintf(diag, "%s: out of memory\n", gmt_esc(path));
			in->unreadable++;
		}
		free(p);
		free(names[i]);
	}
	free(names);
}

void
gmt_inputs_free(struct gmt_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		gmt_callstacks_free(in->models[i]->stacks);
		gmt_model_free(in->models[i]);
		gmt_trace_free(in->traces[i]);
	}
	free(in->models);
	free(in->traces);
	gmt_symbolizer_free(in->sym);
	in->models = NULL;
	in->traces = NULL;
	in->sym = NULL;
	in->n = 0;
}

bool
gmt_parse_range_bound(const char *option, const char *value, struct gmt_range_bound *b)
{
	char *end;
	double s;

	if (!value || !*value) {
		fprintf(stderr, "gpumemtrace: %s needs seconds or a marker label, not an empty "
				"value\n", option);
		return false;
	}
	*b = (struct gmt_range_bound){.set = true, .spec = value};
	errno = 0;
	s = strtod(value, &end);
	if (end != value && errno == 0 && s >= 0 && (*end == '\0' || strcmp(end, "s") == 0))
		b->seconds = s;
	else
		b->label = value;
	return true;
}
