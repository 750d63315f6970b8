/*
 * @brief A session's traces: files and directories read, replayed, symbolized (session.h).
 */
#include "analysis/report/session.h"
#include "analysis/reader/input.h"
#include "util/esc.h"
#include "util/path.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void
gmt_session_init(struct gmt_session *s, const struct gmt_session_options *opt, FILE *diag)
{
	static const struct gmt_session_options defaults = GMT_SESSION_OPTIONS_INIT;

	*s = (struct gmt_session){.opt = opt ? *opt : defaults, .diag = diag};
}

static int
cmp_name(const void *a, const void *b)
{
	/* Bytewise, not strcoll(): the order of a report must not depend on the locale. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A trace's name: what the tracer writes (.jsonl, GPUMEMTRACE_COMPRESS=zstd's .jsonl.zst), a
 * trace gzip'd for keeping (.jsonl.gz), and a PyTorch memory snapshot (.pickle, as
 * torch.cuda.memory._dump_snapshot() names it). The reader tells the kind by the bytes. */
static bool
is_trace_name(const char *name)
{
	static const char *const ext[] = {".jsonl", ".jsonl.zst", ".jsonl.gz", ".pickle"};
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t n = strlen(ext[i]);

		if (len > n && strcmp(name + len - n, ext[i]) == 0)
			return true;
	}
	return false;
}

int
gmt_trace_files(const char *dir, char ***names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL, **w;
	size_t n = 0;

	*names = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!is_trace_name(e->d_name))
			continue;
		if (!(w = realloc(v, (n + 1) * sizeof(*v))) || !(w[n] = strdup(e->d_name))) {
			v = w ? w : v;
			while (n > 0)
				free(v[--n]);
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = w;
		n++;
	}
	closedir(d);
	if (n > 1) /* qsort() of NULL is undefined, even for 0 elements */
		qsort(v, n, sizeof(*v), cmp_name);
	*names = v;
	return (int)n;
}

// --- one trace: read, replayed -------------------------------------------------------------

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

/* Append (@p t, @p m, their stacks) to @p s; false out of memory (nothing taken). */
static bool
append(struct gmt_session *s, struct gmt_trace *t, struct gmt_model *m)
{
	struct gmt_trace **traces = realloc(s->traces, (s->n + 1) * sizeof(*traces));
	struct gmt_model **models;
	struct gmt_callstacks **stacks;

	if (traces)
		s->traces = traces;
	models = traces ? realloc(s->models, (s->n + 1) * sizeof(*models)) : NULL;
	if (models)
		s->models = models;
	stacks = models ? realloc(s->stacks, (s->n + 1) * sizeof(*stacks)) : NULL;
	if (!stacks)
		return false;
	s->stacks = stacks;
	if (!s->sym && !(s->sym = gmt_symbolizer_new(s->diag)))
		return false;
	if (!(stacks[s->n] = gmt_callstacks_new(t, s->sym)))
		return false;
	m->stacks = stacks[s->n];
	traces[s->n] = t;
	models[s->n] = m;
	s->n++;
	return true;
}

int
gmt_session_add_file(struct gmt_session *s, const char *path)
{
	struct feed f = {.range = &s->opt.range};
	struct gmt_trace_sink sink = {feed_event, feed_marker, &f};
	struct gmt_trace *t;

	if (s->opt.stored) {
		/* the whole trace first, then its replay */
		if (gmt_trace_read(path, s->diag, &s->opt.read, &t) != GMT_TRACE_OK)
			goto err_unreadable;
		f.m = gmt_model_build_range(t, f.range);
		f.oom = !f.m;
	} else if (gmt_trace_read_sink(path, s->diag, &s->opt.read, &sink, &t) != GMT_TRACE_OK) {
		/* streamed: the events went to the model as they were read, and are not kept */
		gmt_model_free(f.m);
		goto err_unreadable;
	}
	if (!f.oom && !f.m)
		f.m = gmt_model_new(t, f.range); /* a trace without events */
	if (!f.m)
		goto err_oom;
	/* the end of the replay (already done when it was replayed from a stored trace) */
	if (gmt_model_finish(f.m) != 0 || !append(s, t, f.m)) {
		gmt_model_free(f.m);
		goto err_oom;
	}
	return 0;

err_oom:
	fprintf(s->diag, "%s: out of memory\n", gmt_esc(path));
	gmt_trace_free(t);
err_unreadable:
	s->unreadable++;
	return -1;
}

int
gmt_session_add_path(struct gmt_session *s, const char *path)
{
	size_t before = s->n;
	struct stat st;
	char **names;
	int n;

	if (strcmp(path, GMT_TRACE_STDIN) == 0)
		return gmt_session_add_file(s,
					    path); /* standard input: a trace, never a directory */
	if (stat(path, &st) != 0) {
		fprintf(s->diag, "%s: cannot open: %s\n", gmt_esc(path), strerror(errno));
		s->unreadable++;
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return gmt_session_add_file(s, path);
	n = gmt_trace_files(path, &names);
	if (n < 0) {
		fprintf(s->diag, "%s: cannot read directory: %s\n", gmt_esc(path), strerror(-n));
		s->unreadable++;
		return -1;
	}
	if (n == 0) {
		fprintf(s->diag,
			"%s: no trace files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.pickle) in "
			"this directory\n",
			gmt_esc(path));
		s->unreadable++;
	}
	for (int i = 0; i < n; i++) {
		char *p = gmt_path_join(path, names[i]);

		if (p) {
			gmt_session_add_file(s, p);
		} else {
			fprintf(s->diag, "%s: out of memory\n", gmt_esc(path));
			s->unreadable++;
		}
		free(p);
		free(names[i]);
	}
	free(names);
	return s->n > before ? 0 : -1;
}

void
gmt_session_free(struct gmt_session *s)
{
	for (size_t i = 0; i < s->n; i++) {
		gmt_callstacks_free(s->stacks[i]);
		gmt_model_free(s->models[i]);
		gmt_trace_free(s->traces[i]);
	}
	free(s->stacks);
	free(s->models);
	free(s->traces);
	gmt_symbolizer_free(s->sym);
	*s = (struct gmt_session){.opt = s->opt, .diag = s->diag};
}

bool
gmt_session_has_label(const struct gmt_session *s, const char *label)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->traces[i]->nmarkers; k++)
			if (s->traces[i]->markers[k].label &&
			    strcmp(s->traces[i]->markers[k].label, label) == 0)
				return true;
	return false;
}
