/*
 * @brief The pipelined read of one trace (reader_int.h, gmt_read_options.jobs > 1): the lines
 * read in chunks (by a filler thread), their event and block lines parsed ahead by workers, and
 * every line taken in its order by the calling thread, as the serial loop of read.c takes it.
 *
 * Order is kept by construction: a worker only reads a line into a struct rd_pre (no message,
 * nothing of the trace or the reader touched: rd_pre_read()); the calling thread takes the
 * chunks oldest first and each line in it in turn (rd_take_line()), which does all that depends
 * on what came before: the lead lines, the string table, the reorder window and the sink (the
 * model's replay), and every message, a line that a worker declined (any line but an event or
 * block line of the plain shape, and any it would say something about) being read then from its
 * own bytes, exactly as without workers. So the report, the messages and their file:line are the
 * same at every job count; only the time differs.
 *
 * The calling thread fills the first chunk (a trace of one chunk is read with no thread). Once
 * it is full, the workers start, the input is read ahead on a thread of its own
 * (trace_input.h: gmt_trace_input_readahead(), so the file's reads and a compressed trace's
 * decompression leave the calling thread) and, where that worked (a regular file), a filler
 * thread cuts the lines and copies them into the chunks (fill_main()): the calling thread keeps
 * only what must be done in order, which bounds the read of one trace on many cores. The
 * calling thread parses a chunk itself rather than wait for one no worker has taken. The
 * filler and the read-ahead are stopped before the read's end is judged.
 *
 * Memory: a ring of 2 x jobs chunks of at most chunk_lines lines and about CHUNK_BYTES bytes,
 * each also copied once for its parse. A line longer than BIG_LINE (a long stack or modules line,
 * up to GMT_TRACE_MAX_LINE) is not copied: the chunks before it are taken, then the line where
 * the input holds it (the filler waits meanwhile), as without workers.
 */
#define _GNU_SOURCE
#include "analysis/reader/reader_int.h"
#include "analysis/reader/trace.h"
#include "analysis/reader/trace_input.h"
#include "util/cputime.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_LINES 2048	  /* lines per chunk by default */
#define CHUNK_BYTES (512u << 10)  /* a chunk ends after the line that reaches this */
#define BIG_LINE (64u << 10)	  /* a longer line is taken where it lies, after the chunks */
#define WORKER_STACK (256u << 10) /* a worker runs the flat parser alone */
#define MAX_JOBS 64

/* One line of a chunk: its bytes at buf + off, or what gmt_trace_input_line() said of it. */
struct cline {
	size_t off, len;
	unsigned long long skipped;
	bool torn;
};

struct chunk {
	char *buf; /* the lines' bytes, back to back */
	size_t len, cap;
	char *copy; /* the worker's copy of buf, cut up in place by the parse */
	size_t copy_cap;
	struct cline *lines;
	struct rd_pre *pre;
	size_t n, lines_cap;
	size_t first;	  /* the line number of lines[0] */
	long long offset; /* where the input stood once the chunk was filled (the progress) */
	bool parsed;	  /* under the mutex */
	bool nomem;	  /* the copy could not be had: every line is taken in its turn alone */
};

struct pipeline {
	pthread_mutex_t mu;
	pthread_cond_t work, done, room;
	struct chunk *ring;
	size_t nring;
	size_t filled;	   /* chunks handed out (ring[filled % nring] is the next to fill) */
	size_t next_parse; /* the next chunk a worker may take */
	size_t taken;	   /* chunks the calling thread is done with (their room free again) */
	bool quit;
	/* the filler (fill_main()), once the input has more than a chunk: under the mutex */
	struct gmt_trace_input *in;
	size_t max_lines;
	size_t nread;		   /* lines read */
	struct gmt_trace_line big; /* a long line read, to be taken after the chunks before it */
	bool big_waits;
	bool more;  /* the filler goes on (false: the input ended, `end` says how) */
	bool nomem; /* the filler ran out of memory (it stopped) */
	struct rd_pipeline_end end;
};

bool
rd_pipeline_wanted(const struct gmt_read_options *opt)
{
	/* the slow path reads every line with jansson in its turn: nothing to read ahead */
	return opt->jobs > 1 && !opt->slow;
}

/* Every line of @p c read ahead (or left to its turn). */
static void
parse_chunk(struct chunk *c)
{
	if (c->copy_cap < c->len) {
		char *p = realloc(c->copy, c->len);

		if (!p) {
			c->nomem = true;
			return;
		}
		c->copy = p;
		c->copy_cap = c->len;
	}
	c->nomem = false;
	if (c->len)
		memcpy(c->copy, c->buf, c->len);
	for (size_t i = 0; i < c->n; i++) {
		const struct cline *l = &c->lines[i];

		if (l->skipped || l->torn)
			c->pre[i].kind = RD_PRE_NONE;
		else
			rd_pre_read(c->copy + l->off, l->len, c->first + i, &c->pre[i]);
	}
}

static void *
worker(void *arg)
{
	struct pipeline *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->next_parse == p->filled)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->quit)
			break;
		struct chunk *c = &p->ring[p->next_parse++ % p->nring];
		pthread_mutex_unlock(&p->mu);
		parse_chunk(c);
		pthread_mutex_lock(&p->mu);
		c->parsed = true;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	gmt_cputime_note("gmt-parse");
	return NULL;
}

/* Room for one more line of @p len bytes (at most BIG_LINE) in @p c; false out of memory. */
static bool
chunk_room(struct chunk *c, size_t len, size_t max_lines)
{
	if (!c->lines) {
		c->lines = calloc(max_lines, sizeof(*c->lines));
		c->pre = calloc(max_lines, sizeof(*c->pre));
		c->lines_cap = max_lines;
		if (!c->lines || !c->pre)
			return false;
	}
	if (!c->buf) { /* a chunk ends once it reaches CHUNK_BYTES: it never holds more than this */
		c->cap = CHUNK_BYTES + BIG_LINE;
		if (!(c->buf = malloc(c->cap)))
			return false;
	}
	return c->len + len <= c->cap;
}

static void
chunk_free(struct chunk *c)
{
	free(c->buf);
	free(c->copy);
	free(c->lines);
	free(c->pre);
}

enum fill_end {
	FILL_FULL, /* the chunk is full: more to read */
	FILL_END,  /* the input ended (its answer in the rd_pipeline_end) */
	FILL_BIG,  /* a line longer than BIG_LINE is next: in *big, to be taken after the chunks */
	FILL_NOMEM,
};

/*
 * Fill @p c with the next lines of @p in, from line @p *nread + 1, until it is full, the input
 * ends or a long line comes. Touches nothing of the reader's: it runs on the filler thread.
 */
static enum fill_end
fill(struct gmt_trace_input *in,
     struct chunk *c,
     size_t max_lines,
     size_t *nread,
     struct gmt_trace_line *big,
     struct rd_pipeline_end *end)
{
	struct gmt_trace_line line;
	int n;

	c->n = c->len = 0;
	c->first = *nread + 1;
	c->parsed = false;
	while (c->n < max_lines && c->len < CHUNK_BYTES) {
		errno = 0;
		n = gmt_trace_input_line(in, &line, GMT_TRACE_MAX_LINE);
		if (n <= 0) {
			end->n = n;
			end->err = errno;
			c->offset = gmt_trace_input_offset(in);
			return FILL_END;
		}
		++*nread;
		size_t len = line.skipped ? 0 : line.len;
		if (len > BIG_LINE) {
			*big = line;
			if (line.torn) /* the input's last */
				*end = (struct rd_pipeline_end){.n = 0};
			return FILL_BIG;
		}
		if (!chunk_room(c, len, max_lines))
			return FILL_NOMEM;
		c->lines[c->n++] = (struct cline){c->len, len, line.skipped, line.torn};
		if (len)
			memcpy(c->buf + c->len, line.text, len);
		c->len += len;
		if (line.torn) {
			/* nothing follows a torn line: the stream ended inside it */
			end->n = 0;
			end->err = 0;
			c->offset = gmt_trace_input_offset(in);
			return FILL_END;
		}
	}
	c->offset = gmt_trace_input_offset(in);
	return FILL_FULL;
}

/*
 * The filler: once the input holds more than a chunk, the lines are cut and copied into the
 * chunks here, off the calling thread, which then only takes them (what must stay in order). A
 * chunk is filled when the ring has room (the calling thread is done with the chunk that was
 * there); a long line waits until the calling thread has taken it, where the input holds it.
 * Started on a regular file only (the input read ahead: a read never blocks for good).
 */
static void *
fill_main(void *arg)
{
	struct pipeline *p = arg;

	pthread_mutex_lock(&p->mu);
	while (p->more) {
		while (!p->quit && (p->big_waits || p->filled - p->taken == p->nring))
			pthread_cond_wait(&p->room, &p->mu);
		if (p->quit)
			break;
		struct chunk *c = &p->ring[p->filled % p->nring];
		size_t nread = p->nread;
		struct gmt_trace_line big;
		struct rd_pipeline_end end = p->end;
		pthread_mutex_unlock(&p->mu);
		enum fill_end e = fill(p->in, c, p->max_lines, &nread, &big, &end);
		pthread_mutex_lock(&p->mu);
		p->nread = nread;
		p->end = end;
		if (e == FILL_NOMEM) {
			p->nomem = true;
			p->more = false;
		} else {
			p->more = e == FILL_FULL || (e == FILL_BIG && !big.torn);
			if (e == FILL_BIG) {
				p->big = big;
				p->big_waits = true;
			}
		}
		if (c->n && !p->nomem) {
			p->filled++;
			pthread_cond_signal(&p->work);
		}
		pthread_cond_broadcast(&p->done); /* the calling thread waits on it too */
	}
	pthread_mutex_unlock(&p->mu);
	gmt_cputime_note("gmt-fill");
	return NULL;
}

/* Take @p c's lines in their turn; false when one stopped the read (@p torn: a torn one, the
 * input's last). */
static bool
take_chunk(struct reader *r, const struct chunk *c, bool *torn)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct cline *l = &c->lines[i];
		rd_progress_at(r, c->first + i, c->offset);
		struct gmt_trace_line line = {
		    .text = l->skipped ? NULL : c->buf + l->off,
		    .len = l->len,
		    .torn = l->torn,
		    .skipped = l->skipped,
		};

		if (!rd_take_line(r, &line, c->nomem ? NULL : &c->pre[i])) {
			*torn = l->torn;
			return false;
		}
	}
	return true;
}

/* Start the workers wanted (and not started yet), then the filler; false: no filler (the calling
 * thread fills the chunks itself, as it did the first). */
static void
start_threads(struct pipeline *p,
	      size_t jobs,
	      pthread_t *th,
	      size_t *nthreads,
	      pthread_t *filler,
	      bool *have_filler,
	      const pthread_attr_t *attr)
{
	while (*nthreads + 1 < jobs) {
		if (pthread_create(&th[*nthreads], attr, worker, p) != 0)
			break; /* fewer workers: the same lines, in the same order */
		pthread_setname_np(th[*nthreads], "gmt-parse"); /* for top and perf */
		++*nthreads;
	}
	/* the filler reads the input on: only once it is read ahead (a regular file, whose reads
	 * end), so that a read that stopped early never waits for it */
	bool helpers = jobs >= GMT_READ_HELPER_JOBS;
	/* a zstd trace's frames decoded on half as many threads as parse (decoding is the
	 * lighter half of the work) */
	if (gmt_trace_input_readahead(p->in, helpers ? (unsigned)(jobs / 2) : 0) == 0 && helpers)
		*have_filler = pthread_create(filler, attr, fill_main, p) == 0;
	if (*have_filler)
		pthread_setname_np(*filler, "gmt-fill");
}

struct rd_pipeline_end
rd_read_pipelined(struct reader *r, struct gmt_trace_input *in, const struct gmt_read_options *opt)
{
	struct pipeline p = {.in = in, .more = true, .end = {.n = 1}};
	size_t jobs = opt->jobs < MAX_JOBS ? opt->jobs : MAX_JOBS;
	size_t nthreads = 0;
	pthread_t th[MAX_JOBS], filler;
	bool stopped = false, torn = false, started = false, have_filler = false;

	p.max_lines = opt->chunk_lines ? opt->chunk_lines : CHUNK_LINES;
	p.nring = 2 * jobs;
	p.ring = calloc(p.nring, sizeof(*p.ring));
	if (!p.ring) {
		rd_nomem(r);
		return (struct rd_pipeline_end){.n = 1, .early = true};
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.work, NULL);
	pthread_cond_init(&p.done, NULL);
	pthread_cond_init(&p.room, NULL);
	pthread_attr_t attr;
	bool have_attr = pthread_attr_init(&attr) == 0;
	if (have_attr)
		pthread_attr_setstacksize(&attr, WORKER_STACK);
	pthread_mutex_lock(&p.mu);
	while (!stopped && !p.nomem) {
		/* no filler (yet): the chunks are filled here, the first always (a trace of one
		 * chunk is read with no thread) */
		if (!have_filler && p.more && !p.big_waits && p.filled - p.taken < p.nring) {
			struct chunk *c = &p.ring[p.filled % p.nring];
			struct gmt_trace_line big;
			pthread_mutex_unlock(&p.mu);
			enum fill_end e = fill(in, c, p.max_lines, &p.nread, &big, &p.end);
			pthread_mutex_lock(&p.mu);
			if (e == FILL_NOMEM) {
				p.nomem = true;
				p.more = false;
				break;
			}
			p.more = e == FILL_FULL || (e == FILL_BIG && !big.torn);
			if (e == FILL_BIG) {
				p.big = big;
				p.big_waits = true;
			}
			if (c->n == 0)
				continue;
			p.filled++;
			pthread_cond_signal(&p.work);
			/* more than one chunk: the workers, the input read ahead and the filler */
			if (e == FILL_FULL && !started) {
				started = true;
				start_threads(&p, jobs, th, &nthreads, &filler, &have_filler,
					      have_attr ? &attr : NULL);
			}
			continue;
		}
		if (p.taken < p.filled) {
			struct chunk *c = &p.ring[p.taken % p.nring];

			if (p.next_parse == p.taken) { /* no worker took it: read it here */
				p.next_parse++;
				pthread_mutex_unlock(&p.mu);
				parse_chunk(c);
				pthread_mutex_lock(&p.mu);
				c->parsed = true;
			}
			while (!c->parsed)
				pthread_cond_wait(&p.done, &p.mu);
			pthread_mutex_unlock(&p.mu);
			stopped = !take_chunk(r, c, &torn);
			pthread_mutex_lock(&p.mu);
			p.taken++; /* its room is free again */
			pthread_cond_signal(&p.room);
			continue;
		}
		if (p.big_waits) { /* where the input holds it: the next read comes after it */
			struct gmt_trace_line big = p.big;
			pthread_mutex_unlock(&p.mu);
			if (!rd_take_line(r, &big, NULL)) {
				stopped = true;
				torn = big.torn;
			}
			pthread_mutex_lock(&p.mu);
			p.big_waits = false;
			pthread_cond_signal(&p.room);
			continue;
		}
		if (!have_filler || !p.more)
			break; /* the input ended (or the filler stopped), every line taken */
		pthread_cond_wait(&p.done, &p.mu); /* the filler's next chunk */
	}
	p.quit = true;
	pthread_cond_broadcast(&p.work);
	pthread_cond_broadcast(&p.room);
	pthread_mutex_unlock(&p.mu);
	if (have_filler)
		pthread_join(filler, NULL);
	if (have_attr)
		pthread_attr_destroy(&attr);
	/* the stream's state (ferror, how a compressed one ended) is the read-ahead's last */
	gmt_trace_input_readahead_stop(in);
	for (size_t i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	pthread_cond_destroy(&p.work);
	pthread_cond_destroy(&p.done);
	pthread_cond_destroy(&p.room);
	pthread_mutex_destroy(&p.mu);
	for (size_t i = 0; i < p.nring; i++)
		chunk_free(&p.ring[i]);
	free(p.ring);
	if (p.nomem)
		rd_nomem(r);
	/*
	 * Stopped by a line, the serial loop would have read no further: what was read past it
	 * does not count (early). A torn line is the input's last: its end was reached either way.
	 */
	struct rd_pipeline_end end = p.end;
	if (stopped)
		end = (struct rd_pipeline_end){.n = 1, .early = !torn};
	if (r->nomem)
		end = (struct rd_pipeline_end){.n = 1, .early = true};
	return end;
}
