/*
 * @brief `gpumemtrace live`'s view (live.h): the traces followed, each read again when it grew,
 * replayed by the model, and one frame of text made of them.
 *
 * A trace is read whole, not from where the last read stopped: the reader and the replay are
 * the ones `report` uses, so the figures are `report`'s at that moment, and a changed file costs
 * one read (docs/performance.md, "live": tens of milliseconds for a GPT-2 trace of a megabyte).
 * A file that did not change since the last look (same size, modification time and inode) keeps
 * its replay, so a directory of finished ranks costs nothing per refresh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analysis/model/tkinds.h"
#include "analysis/report/frames.h"
#include "cli.h"
#include "live.h"

/* Text widths of the frame's lines before the terminal's width cuts them. */
#define LIVE_LINE 1024
#define LIVE_LABEL 256

struct live_step {
	bool valid;
	char label[LIVE_LABEL];
	uint64_t ts, seq;
	bool auto_step;
	uint64_t *site_live; /* the model's sites' live bytes then */
	size_t nsites;
};

/* One trace file followed. */
struct live_proc {
	char *path; /* a file that went away keeps its last figures */
	/* what the file was when last read */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct gmt_trace *t;
	struct gmt_model *m;
	struct gmt_callstacks *cs;
	/* the last mark (the user's or an automatic step), else the last end of an outermost
	 * range: what "grew since the last step" is measured from */
	struct live_step mark, pop;
	bool failed; /* the last read gave nothing usable (not yet a trace: no header yet) */
	char why[LIVE_LABEL]; /* then the reader's last message about it */
};

struct gmt_live_view {
	char *path;
	struct gmt_live_options opt;
	struct live_proc *procs;
	size_t n;
	bool is_dir;
	int path_errno; /* the path itself cannot be read (0: it can) */
	struct gmt_symbolizer *sym;
	FILE *devnull; /* the reader's messages: a file being written is torn at its end */
};

struct gmt_live_view *
gmt_live_new(const char *path, const struct gmt_live_options *opt)
{
	struct gmt_live_view *v = calloc(1, sizeof(*v));

	if (!v || !(v->path = strdup(path))) {
		free(v);
		return NULL;
	}
	v->opt = *opt;
	v->devnull = fopen("/dev/null", "w");
	if (!v->devnull) {
		free(v->path);
		free(v);
		return NULL;
	}
	return v;
}

static void
proc_clear(struct live_proc *p)
{
	gmt_callstacks_free(p->cs);
	gmt_model_free(p->m);
	gmt_trace_free(p->t);
	free(p->mark.site_live);
	free(p->pop.site_live);
	p->cs = NULL;
	p->m = NULL;
	p->t = NULL;
	p->mark = (struct live_step){0};
	p->pop = (struct live_step){0};
}

void
gmt_live_free(struct gmt_live_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		proc_clear(&v->procs[i]);
		free(v->procs[i].path);
	}
	free(v->procs);
	gmt_symbolizer_free(v->sym);
	fclose(v->devnull);
	free(v->path);
	free(v);
}

// --- Reading one trace ----------------------------------------------------------------------

struct feed {
	struct live_proc *p;
	const struct gmt_trace *t;
	bool oom;
};

static bool
feed_model(struct feed *f, const struct gmt_trace *t)
{
	if (!f->p->m && !f->oom && !(f->p->m = gmt_model_new(t, NULL)))
		f->oom = true;
	return f->p->m != NULL;
}

static void
feed_event(void *ctx, const struct gmt_trace *t, const struct gmt_trace_event *ev)
{
	struct feed *f = ctx;

	if (feed_model(f, t))
		gmt_model_event(f->p->m, ev);
}

/* The sites' live bytes now, into @p s. */
static void
step_take(struct live_step *s,
	  const struct gmt_model *m,
	  const struct gmt_trace *t,
	  const struct gmt_trace_marker *mk)
{
	uint64_t *live = s->site_live;

	if (s->nsites < m->nsites || !live) {
		live = realloc(s->site_live, (m->nsites ? m->nsites : 1) * sizeof(*live));
		if (!live)
			return; /* the step before stays: an older base, not a wrong one */
	}
	for (size_t i = 0; i < m->nsites; i++)
		live[i] = m->sites[i].live;
	s->site_live = live;
	s->nsites = m->nsites;
	s->valid = true;
	s->ts = mk->ts;
	s->seq = mk->seq;
	s->auto_step = mk->auto_step;
	snprintf(s->label, sizeof(s->label), "%s", mk->label ? mk->label : "");
}

static void
feed_marker(void *ctx, const struct gmt_trace *t, const struct gmt_trace_marker *mk)
{
	struct feed *f = ctx;

	if (!feed_model(f, t))
		return;
	gmt_model_marker(f->p->m, mk);
	if (mk->range == GMT_RANGE_NONE)
		step_take(&f->p->mark, f->p->m, t, mk);
	else if (mk->range == GMT_RANGE_POP && mk->depth == 1)
		step_take(&f->p->pop, f->p->m, t, mk);
}

static void
proc_read(struct gmt_live_view *v, struct live_proc *p)
{
	struct feed f = {.p = p};
	struct gmt_trace_sink sink = {.event = feed_event, .marker = feed_marker, .ctx = &f};
	struct gmt_read_options ro = GMT_READ_OPTIONS_INIT;

	char *msg = NULL;
	size_t len = 0;
	FILE *diag;
	enum gmt_trace_status st;

	proc_clear(p);
	p->failed = true;
	p->why[0] = '\0';
	/* the reader's messages are kept for a file that gives nothing (a torn end is normal for
	 * a file being written: they are not shown otherwise) */
	diag = open_memstream(&msg, &len);
	st = gmt_trace_read_sink(p->path, diag ? diag : v->devnull, &ro, &sink, &p->t, NULL);
	if (diag)
		fclose(diag);
	if (st != GMT_TRACE_OK) {
		char *last = msg, *nl;
		/* the last line says why the file was given up on */
		while (last && (nl = strchr(last, '\n')) && nl[1])
			last = nl + 1;
		if (last) {
			nl = strchr(last, '\n');
			snprintf(p->why, sizeof(p->why), "%.*s",
				 (int)(nl ? (size_t)(nl - last) : strlen(last)), last);
		}
		free(msg);
		gmt_model_free(p->m);
		p->m = NULL;
		p->t = NULL;
		return;
	}
	free(msg);
	if (!p->m && !f.oom)
		p->m = gmt_model_new(p->t, NULL); /* a trace without events yet */
	if (!p->m || gmt_model_finish(p->m) != 0) {
		proc_clear(p);
		return;
	}
	if (v->opt.symbolize) {
		if (!v->sym)
			v->sym = gmt_symbolizer_new(v->devnull);
		if (v->sym)
			p->cs = gmt_callstacks_new(p->t, v->sym);
	}
	p->failed = false;
}

/* Read @p p again when the file changed since the last read. */
static void
proc_look(struct gmt_live_view *v, struct live_proc *p)
{
	struct stat st;

	if (stat(p->path, &st) != 0 || !S_ISREG(st.st_mode))
		return; /* gone (rotated away): keep what was read */
	if (p->t && st.st_dev == p->dev && st.st_ino == p->ino && st.st_size == p->size &&
	    st.st_mtim.tv_sec == p->mtime.tv_sec && st.st_mtim.tv_nsec == p->mtime.tv_nsec)
		return;
	if (!p->t && !p->failed && st.st_size == 0)
		return;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	p->size = st.st_size;
	p->mtime = st.st_mtim;
	proc_read(v, p);
}

static struct live_proc *
proc_find_or_add(struct gmt_live_view *v, const char *path)
{
	struct live_proc *procs;

	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->procs[i].path, path) == 0)
			return &v->procs[i];
	procs = realloc(v->procs, (v->n + 1) * sizeof(*procs));
	if (!procs)
		return NULL;
	v->procs = procs;
	procs[v->n] = (struct live_proc){.path = strdup(path)};
	if (!procs[v->n].path)
		return NULL;
	return &procs[v->n++];
}

int
gmt_live_refresh(struct gmt_live_view *v)
{
	struct stat st;
	char **names = NULL;
	int n;

	if (stat(v->path, &st) != 0) {
		v->path_errno = errno;
		return -1;
	}
	v->is_dir = S_ISDIR(st.st_mode);
	if (!v->is_dir && !S_ISREG(st.st_mode)) {
		v->path_errno = errno = EINVAL; /* a FIFO or a device: never waited on */
		return -1;
	}
	v->path_errno = 0;
	if (!v->is_dir) {
		struct live_proc *p = proc_find_or_add(v, v->path);
		if (p)
			proc_look(v, p);
		return 0;
	}
	n = gmt_trace_files(v->path, &names);
	if (n < 0) {
		v->path_errno = errno = -n;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char *full = gmt_path_join(v->path, names[i]);
		struct live_proc *p = full ? proc_find_or_add(v, full) : NULL;
		/* a PyTorch snapshot is one moment, not a trace being written: left out */
		size_t len = strlen(names[i]);
		if (p && !(len > 7 && strcmp(names[i] + len - 7, ".pickle") == 0))
			proc_look(v, p);
		free(full);
		free(names[i]);
	}
	free(names);
	return 0;
}

size_t
gmt_live_traces(const struct gmt_live_view *v)
{
	size_t k = 0;

	for (size_t i = 0; i < v->n; i++)
		k += v->procs[i].m != NULL;
	return k;
}

// --- The frame --------------------------------------------------------------------------------

struct frame {
	FILE *out;
	const struct gmt_live_options *opt;
	unsigned lines;
	bool full;
};

/* One line, cut to the terminal's width (counting UTF-8 characters; the text is escaped). */
static void frame_line(struct frame *fr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
frame_line(struct frame *fr, const char *fmt, ...)
{
	char buf[LIVE_LINE];
	va_list ap;
	size_t cols = 0, i;

	if (fr->full)
		return;
	if (fr->opt->height && fr->lines + 1 >= fr->opt->height) {
		fr->full = true; /* the last row stays for the line that says more is cut */
		fputs("...\n", fr->out);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (i = 0; buf[i]; i++) {
		if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			if (fr->opt->width && cols == fr->opt->width)
				break;
			cols++;
		}
	}
	fwrite(buf, 1, i, fr->out);
	fputc('\n', fr->out);
	fr->lines++;
}

static const char *
bytes_text(const struct gmt_live_options *opt, uint64_t b, char buf[GMT_BYTES_BUF])
{
	if (opt->exact) {
		snprintf(buf, GMT_BYTES_BUF, "%" PRIu64, b);
		return buf;
	}
	return gmt_format_bytes(b, buf);
}

/* "rank 1 pid 4242" or "pid 4242": who a row is about. */
static void
proc_name(const struct live_proc *p, char *buf, size_t max)
{
	const struct gmt_trace *t = p->t;

	if (t->has_rank && t->rank >= 0)
		snprintf(buf, max, "rank %lld pid %lld", t->rank, t->pid);
	else
		snprintf(buf, max, "pid %lld", t->pid);
}

static const char *
proc_state(const struct live_proc *p)
{
	if (p->t->complete)
		return "exited";
	if (p->t->ended_by[0]) /* the trailer names the signal (a name of at most 15 bytes) */
		return p->t->ended_by;
	if (p->t->cut_by_disk)
		return "cut (disk full)";
	return "running";
}

/* A site for a person: its call-site frame, else the API and its first frame (raw). */
static void
site_text(const struct live_proc *p, const struct gmt_site_stats *s, char *buf, size_t max)
{
	const struct gmt_trace *t = p->t;
	const char *api = gmt_trace_string(t, s->api);
	char frame[LIVE_LABEL] = "";

	if (p->cs) {
		const struct gmt_cstack *st = gmt_callstacks_get(p->cs, s->stack);
		const struct gmt_cframe *f = gmt_cstack_site(st);
		if (f)
			gmt_cframe_text(f, frame, sizeof(frame));
	} else {
		const struct gmt_trace_stack *st = gmt_trace_stack(t, s->stack);
		if (st && st->nframes)
			snprintf(frame, sizeof(frame), "0x%" PRIx64, gmt_trace_frame(t, st, 0));
	}
	if (!frame[0])
		snprintf(frame, sizeof(frame), "%s", s->stack ? "(no symbol)" : "(no stack)");
	snprintf(buf, max, "%s  %s", api ? api : "?", frame);
}

/* A row of sites: the model's sites of one process and device that read the same (the report
 * groups call sites by their frame, as here: two stacks through one line are one site). */
struct site_row {
	const struct live_proc *p;
	int32_t device;
	char *label;
	int64_t value; /* live bytes, or growth since the step */
	uint64_t live_allocs;
};

static int
site_row_key_cmp(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return strcmp(x->label, y->label);
}

static int
site_row_cmp(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return site_row_key_cmp(a, b);
}

static void
frame_sites(struct frame *fr, struct gmt_live_view *v, bool growth)
{
	const struct gmt_live_options *opt = fr->opt;
	struct site_row *rows = NULL;
	size_t n = 0, cap = 0;
	char site[LIVE_LINE / 2];

	for (size_t i = 0; i < v->n; i++) {
		const struct live_proc *p = &v->procs[i];
		const struct live_step *step = p->mark.valid ? &p->mark : &p->pop;
		if (!p->m || (growth && !step->valid))
			continue;
		for (size_t k = 0; k < p->m->nsites; k++) {
			const struct gmt_site_stats *s = &p->m->sites[k];
			uint64_t before = growth && k < step->nsites ? step->site_live[k] : 0;
			if (!gmt_kind_in_held((enum gmt_tkind)s->kind) || s->live <= before)
				continue;
			/* held at INT64_MAX, as the sum below: a damaged trace's sizes reach it */
			int64_t value =
			    s->live - before > INT64_MAX ? INT64_MAX : (int64_t)(s->live - before);
			site_text(p, s, site, sizeof(site));
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 64;
				struct site_row *r = realloc(rows, nc * sizeof(*r));
				if (!r)
					break;
				rows = r;
				cap = nc;
			}
			if (!(rows[n].label = strdup(site)))
				break;
			rows[n].p = p;
			rows[n].device = s->device;
			rows[n].value = value;
			rows[n++].live_allocs = s->live_allocs;
		}
	}
	if (n) {
		size_t k = 0;
		qsort(rows, n, sizeof(*rows), site_row_key_cmp);
		for (size_t i = 1; i < n; i++) {
			if (site_row_key_cmp(&rows[k], &rows[i]) == 0) {
				rows[k].value = rows[i].value > INT64_MAX - rows[k].value
						    ? INT64_MAX
						    : rows[k].value + rows[i].value;
				rows[k].live_allocs += rows[i].live_allocs;
				free(rows[i].label);
			} else {
				rows[++k] = rows[i];
			}
		}
		n = k + 1;
		qsort(rows, n, sizeof(*rows), site_row_cmp);
	}
	for (size_t i = 0; i < n && (opt->top == 0 || i < opt->top); i++) {
		char b[GMT_BYTES_BUF], who[64], esc[LIVE_LINE / 2];
		proc_name(rows[i].p, who, sizeof(who));
		frame_line(fr, "  %s%10s  %6" PRIu64 " live  %s dev %d  %s", growth ? "+" : " ",
			   bytes_text(opt, (uint64_t)rows[i].value, b), rows[i].live_allocs, who,
			   rows[i].device, gmt_esc_buf(rows[i].label, esc, sizeof(esc)));
	}
	if (n == 0)
		frame_line(fr, growth ? "  (nothing grew)" : "  (nothing live)");
	for (size_t i = 0; i < n; i++)
		free(rows[i].label);
	free(rows);
}

/* One device's held bytes summed over processes, and the highest sum reached (from each
 * process's series of held bytes on the device, merged in time). */
struct dev_total {
	const char *host;
	int32_t device;
	uint64_t current, peak;
	size_t procs;
};

struct dev_point {
	uint64_t ts;
	size_t proc; /* index into the device's list of series */
	uint64_t bytes;
};

static int
dev_point_cmp(const void *a, const void *b)
{
	const struct dev_point *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static bool
same_host(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void
dev_peak(struct gmt_live_view *v, struct dev_total *d)
{
	struct dev_point *pts = NULL;
	uint64_t *cur = NULL, sum = 0;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct gmt_model *m = v->procs[i].m;
		if (!m || !same_host(m->trace->host, d->host))
			continue;
		for (size_t j = 0; j < m->nseries; j++)
			if (m->series[j].device == d->device && m->series[j].kind == GMT_TK_COUNT)
				n += m->series[j].n;
	}
	pts = calloc(n ? n : 1, sizeof(*pts));
	cur = calloc(v->n ? v->n : 1, sizeof(*cur));
	if (!pts || !cur)
		goto out;
	for (size_t i = 0; i < v->n; i++) {
		const struct gmt_model *m = v->procs[i].m;
		if (!m || !same_host(m->trace->host, d->host))
			continue;
		for (size_t j = 0; j < m->nseries; j++) {
			const struct gmt_series *s = &m->series[j];
			if (s->device != d->device || s->kind != GMT_TK_COUNT)
				continue;
			for (size_t q = 0; q < s->n; q++)
				pts[k++] =
				    (struct dev_point){s->points[q].ts, i, s->points[q].bytes};
		}
	}
	qsort(pts, k, sizeof(*pts), dev_point_cmp);
	for (size_t i = 0; i < k; i++) {
		sum = sum - cur[pts[i].proc] + pts[i].bytes;
		cur[pts[i].proc] = pts[i].bytes;
		if (sum > d->peak)
			d->peak = sum;
	}
out:
	free(pts);
	free(cur);
}

static void
frame_devices(struct frame *fr, struct gmt_live_view *v, bool hosts)
{
	struct dev_total *d = NULL;
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct gmt_model *m = v->procs[i].m;
		if (!m)
			continue;
		for (size_t j = 0; j < m->ndevices; j++) {
			const struct gmt_device_stats *ds = &m->devices[j];
			size_t k;
			if (!gmt_device_active(ds))
				continue;
			for (k = 0; k < n; k++)
				if (d[k].device == ds->device &&
				    same_host(d[k].host, m->trace->host))
					break;
			if (k == n) {
				struct dev_total *nd = realloc(d, (n + 1) * sizeof(*nd));
				if (!nd)
					continue;
				d = nd;
				d[n++] = (struct dev_total){.host = m->trace->host,
							    .device = ds->device};
			}
			d[k].current += ds->held;
			/* a process's own peak is a floor of the device's */
			if (ds->peak.bytes > d[k].peak)
				d[k].peak = ds->peak.bytes;
			d[k].procs++;
		}
	}
	frame_line(fr, "%-24s %12s %12s  %s", hosts ? "HOST DEVICE" : "DEVICE", "CURRENT", "PEAK",
		   "PROCESSES");
	for (size_t k = 0; k < n; k++) {
		char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], name[LIVE_LABEL];
		if (d[k].procs > 1)
			dev_peak(v, &d[k]);
		if (hosts)
			snprintf(name, sizeof(name), "%s %d", gmt_esc(d[k].host ? d[k].host : "?"),
				 d[k].device);
		else
			snprintf(name, sizeof(name), "%d", d[k].device);
		frame_line(fr, "%-24s %12s %12s  %zu", name, bytes_text(fr->opt, d[k].current, b1),
			   bytes_text(fr->opt, d[k].peak, b2), d[k].procs);
	}
	if (n == 0)
		frame_line(fr, "  (no device memory yet)");
	free(d);
}

static void
frame_procs(struct frame *fr, struct gmt_live_view *v)
{
	frame_line(fr, "%-24s %6s %12s %12s  %-8s %s", "PROCESS", "DEVICE", "CURRENT", "PEAK",
		   "STATE", "COMMAND");
	for (size_t i = 0; i < v->n; i++) {
		const struct live_proc *p = &v->procs[i];
		const struct gmt_trace *t = p->t;
		char who[64], cmd[LIVE_LABEL] = "", esc[LIVE_LABEL];
		bool any = false;
		if (!p->m)
			continue;
		proc_name(p, who, sizeof(who));
		for (size_t a = 0, len = 0; a < t->argc && len + 1 < sizeof(cmd); a++)
			len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "%s%s", a ? " " : "",
						t->argv[a]);
		gmt_esc_buf(cmd, esc, sizeof(esc));
		for (size_t j = 0; j < p->m->ndevices; j++) {
			const struct gmt_device_stats *ds = &p->m->devices[j];
			char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF];
			if (!gmt_device_active(ds))
				continue;
			frame_line(fr, "%-24s %6d %12s %12s  %-8s %s", who, ds->device,
				   bytes_text(fr->opt, ds->held, b1),
				   bytes_text(fr->opt, ds->peak.bytes, b2), proc_state(p), esc);
			any = true;
		}
		if (!any)
			frame_line(fr, "%-24s %6s %12s %12s  %-8s %s", who, "-", "-", "-",
				   proc_state(p), esc);
	}
}

/* PyTorch's cache on @p device at the step growth is measured from, NULL when not kept (the
 * tensor level keeps the first GMT_TMARKS_MAX marks, and a range's end is not one). */
static const struct gmt_tmark *
tensor_mark(const struct live_proc *p, int32_t device)
{
	const struct gmt_tensors *ts = p->m->tensors;

	if (!p->mark.valid)
		return NULL;
	for (size_t i = ts->nmarks; i-- > 0;) {
		if (ts->marks[i].seq < p->mark.seq)
			break;
		if (ts->marks[i].seq == p->mark.seq && ts->marks[i].device == device)
			return &ts->marks[i];
	}
	return NULL;
}

static void
frame_tensors(struct frame *fr, struct gmt_live_view *v)
{
	for (size_t i = 0; i < v->n; i++) {
		const struct live_proc *p = &v->procs[i];
		const struct gmt_tensors *ts = p->m ? p->m->tensors : NULL;
		char who[64];
		if (!ts)
			continue;
		proc_name(p, who, sizeof(who));
		for (size_t j = 0; j < ts->ndevices; j++) {
			const struct gmt_tdevice *d = &ts->devices[j];
			char b1[GMT_BYTES_BUF], b2[GMT_BYTES_BUF], b3[GMT_BYTES_BUF],
			    b4[GMT_BYTES_BUF];
			const struct gmt_tmark *mk = tensor_mark(p, d->device);
			char since[GMT_BYTES_BUF + 64] = "";
			if (mk) {
				uint64_t was = mk->cache.allocated, now = d->end.allocated;
				char b5[GMT_BYTES_BUF];
				snprintf(
				    since, sizeof(since), "; allocated %s%s since the step",
				    now >= was ? "+" : "-",
				    bytes_text(fr->opt, now >= was ? now - was : was - now, b5));
			}
			frame_line(
			    fr,
			    "TENSORS %s dev %d: allocated %s reserved %s (peak allocated %s, "
			    "most reserved %s%s)",
			    who, d->device, bytes_text(fr->opt, d->end.allocated, b1),
			    bytes_text(fr->opt, d->end.reserved, b2),
			    bytes_text(fr->opt, d->peak, b3),
			    bytes_text(fr->opt, d->max_reserved, b4), since);
		}
	}
}

/* The step the growth is measured from: the latest of every process's last mark. */
static void
frame_step_title(struct frame *fr, struct gmt_live_view *v)
{
	const struct live_proc *best = NULL;
	const struct live_step *bs = NULL;
	char esc[LIVE_LABEL * 4], who[64];

	for (size_t i = 0; i < v->n; i++) {
		const struct live_proc *p = &v->procs[i];
		const struct live_step *s = p->mark.valid ? &p->mark : &p->pop;
		if (p->m && s->valid && (!bs || s->ts > bs->ts)) {
			best = p;
			bs = s;
		}
	}
	if (!bs) {
		frame_line(fr, "GREW SINCE LAST STEP: no step yet (no marker in the traces)");
		return;
	}
	proc_name(best, who, sizeof(who));
	frame_line(fr, "GREW SINCE LAST STEP (%s '%s' of %s at %.1f s; each process from its own)",
		   bs->auto_step      ? "automatic step"
		   : bs == &best->pop ? "end of range"
				      : "marker",
		   gmt_esc_buf(bs->label, esc, sizeof(esc)), who,
		   gmt_trace_time_s(best->t, bs->ts));
}

void
gmt_live_frame(struct gmt_live_view *v, FILE *out, const struct gmt_live_options *opt)
{
	struct frame fr = {.out = out, .opt = opt};
	size_t running = 0, traces = 0, unread = 0;
	bool hosts = false;
	char clock[16] = "", esc[LIVE_LINE];
	time_t now = time(NULL);
	struct tm tm;

	if (localtime_r(&now, &tm))
		strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	for (size_t i = 0; i < v->n; i++) {
		const struct live_proc *p = &v->procs[i];
		if (!p->m) {
			unread += p->failed;
			continue;
		}
		traces++;
		running += !p->t->complete && !p->t->ended_by[0];
		for (size_t j = 0; j < i; j++)
			if (v->procs[j].m && !same_host(v->procs[j].t->host, p->t->host))
				hosts = true;
	}
	frame_line(&fr, "gpumemtrace live: %s  %zu trace%s, %zu running%s  %s%s",
		   gmt_esc_buf(v->path, esc, sizeof(esc)), traces, traces == 1 ? "" : "s", running,
		   unread ? ", some not readable yet" : "", clock, opt->hint ? "  (q quits)" : "");
	if (v->path_errno) {
		frame_line(&fr, "cannot read %s: %s", gmt_esc_buf(v->path, esc, sizeof(esc)),
			   v->path_errno == EINVAL ? "not a regular file or a directory"
						   : strerror(v->path_errno));
		return;
	}
	if (traces == 0)
		frame_line(&fr, "waiting for a trace (%s)",
			   v->is_dir && !unread ? "none in the directory yet"
						: "none readable yet");
	/* files that give nothing yet: the reader's reason (a file just created has no header) */
	for (size_t i = 0; i < v->n; i++)
		if (!v->procs[i].m && v->procs[i].failed && v->procs[i].why[0])
			frame_line(&fr, "not readable yet: %s",
				   gmt_esc_buf(v->procs[i].why, esc, sizeof(esc)));
	if (traces == 0)
		return;
	frame_line(&fr, "%s", "");
	frame_devices(&fr, v, hosts);
	frame_line(&fr, "%s", "");
	frame_procs(&fr, v);
	frame_tensors(&fr, v);
	frame_line(&fr, "%s", "");
	frame_line(&fr, "TOP SITES NOW (live bytes)");
	frame_sites(&fr, v, false);
	frame_line(&fr, "%s", "");
	frame_step_title(&fr, v);
	frame_sites(&fr, v, true);
}
