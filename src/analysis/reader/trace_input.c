/*
 * @brief The trace reader's input: plain, zstd or gzip files and standard input (trace_input.h).
 */
#define _GNU_SOURCE
#include "analysis/reader/trace_input.h"
#include "gmt-config.h"
#include "util/cputime.h"
#include "util/input.h"
#include "util/zread.h"
#include "util/zstd_api.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if GMT_HAVE_ZLIB
#	include <zlib.h>
#endif

#define GZIP_MAGIC "\x1f\x8b"
#define PEEK 4 /* bytes that tell the kind: zstd's magic number is the longest */

struct gmt_trace_input_state {
	FILE *raw; /* the file from its first byte (through `replay` for standard input) */
	int fd;	   /* the file's descriptor when it is a regular file, else -1 */
	long long size;
	struct gmt_zread *z; /* zstd */
	/*
	 * Standard input cannot seek back over the bytes that told its kind: a stream of its
	 * own hands them out again, then the rest.
	 */
	FILE *under;
	unsigned char peek[PEEK];
	size_t npeek, peek_pos;
	long long replayed;
	/* gzip: one member after the other, as gzip -d does */
#if GMT_HAVE_ZLIB
	z_stream zs;
#endif
	bool zs_ready;
	unsigned char *in;
	size_t in_cap;
	long long consumed; /* compressed bytes handed to inflate() */
	bool in_member, done;
	enum gmt_trace_input_end end;
	char problem[GMT_TRACE_INPUT_WHY];
	/* gmt_trace_input_line(): bytes read from the stream, rbuf[rpos .. rlen) not handed out
	 * yet; a line that does not lie whole in rbuf is put together in lbuf */
	char *rbuf, *lbuf;
	size_t rpos, rlen, lcap;
	bool reof;
	struct readahead *ra; /* gmt_trace_input_readahead(): the stream read on its own thread */
	long long ra_end;     /* with ra: raw_offset() at the end of the block in rbuf */
};

/* What gmt_trace_input_line() reads from the stream at a time. */
#define LINE_READ (256u * 1024)

/*
 * The read-ahead: a ring of RA_BLOCKS blocks of LINE_READ bytes. The thread fills the free ones
 * in turn with fread(); the line reader consumes block `head` (it stays counted in `count` while
 * lines are cut from it) and gives it back when it needs the next. The thread alone touches the
 * stream until it is joined; each block notes where the file stood once it was read, for the
 * progress line.
 */
#define RA_BLOCKS 4

struct readahead {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t filled, freed;
	char *block[RA_BLOCKS];
	size_t len[RA_BLOCKS];
	long long end[RA_BLOCKS]; /* raw_offset() once the block was read */
	size_t head, count; /* block[head] is the reader's; count: filled, the reader's included */
	bool holding;	    /* the reader holds block[head] (cut lines from it) */
	bool eof, quit;
	int err; /* at eof: errno of a read error, 0 for the stream's end */
	FILE *f;
	const struct gmt_trace_input *in;
};

static bool stdin_taken; /* its bytes are read once; a second "-" would see none */

const char *
gmt_trace_input_kind_name(enum gmt_trace_input_kind kind)
{
	switch (kind) {
	case GMT_TRACE_INPUT_ZSTD: return "zstd";
	case GMT_TRACE_INPUT_GZIP: return "gzip";
	case GMT_TRACE_INPUT_PLAIN: break;
	}
	return "plain";
}

// --- standard input: the peeked bytes again, then the rest -------------------------------------

static ssize_t
replay_read(void *cookie, char *buf, size_t size)
{
	struct gmt_trace_input_state *st = cookie;
	size_t n = 0;

	if (st->peek_pos < st->npeek) {
		n = st->npeek - st->peek_pos < size ? st->npeek - st->peek_pos : size;
		memcpy(buf, st->peek + st->peek_pos, n);
		st->peek_pos += n;
	} else {
		n = fread(buf, 1, size, st->under);
		if (n == 0 && ferror(st->under))
			return -1;
	}
	st->replayed += (long long)n;
	return (ssize_t)n;
}

static int
replay_close(void *cookie)
{
	struct gmt_trace_input_state *st = cookie;
	int rc = fclose(st->under);

	st->under = NULL;
	return rc;
}

// --- gzip ------------------------------------------------------------------------------------

#if GMT_HAVE_ZLIB

static void
gz_problem(struct gmt_trace_input_state *st,
	   enum gmt_trace_input_end end,
	   const char *fmt,
	   const char *arg)
{
	if (st->end == GMT_TRACE_INPUT_END_NONE) {
		st->end = end;
		snprintf(st->problem, sizeof(st->problem), fmt, st->consumed, arg);
	}
	st->done = true;
}

static ssize_t
gz_read(void *cookie, char *buf, size_t size)
{
	struct gmt_trace_input_state *st = cookie;
	z_stream *zs = &st->zs;

	zs->next_out = (unsigned char *)buf;
	zs->avail_out = size > UINT_MAX ? UINT_MAX : (unsigned)size;
	size_t want = zs->avail_out;
	while (zs->avail_out == want && !st->done) {
		if (zs->avail_in == 0) {
			size_t n = fread(st->in, 1, st->in_cap, st->raw);

			if (n == 0) {
				if (ferror(st->raw))
					gz_problem(st, GMT_TRACE_INPUT_END_READ_ERROR,
						   "read error at byte %lld: %s", strerror(errno));
				else if (st->in_member)
					gz_problem(
					    st, GMT_TRACE_INPUT_END_TRUNCATED,
					    "truncated: the file ends inside a gzip member (at "
					    "byte %lld%s)",
					    "; a copy cut short, or a writer killed or out of "
					    "disk");
				st->done = true;
				break;
			}
			zs->next_in = st->in;
			zs->avail_in = (unsigned)n;
		}
		unsigned had = zs->avail_in;
		long long at = st->consumed;
		bool starting = !st->in_member;
		int rc = inflate(zs, Z_NO_FLUSH);

		st->consumed += had - zs->avail_in;
		if (had != zs->avail_in)
			st->in_member = true;
		if (rc == Z_STREAM_END) { /* a member ended, its CRC and length verified */
			st->in_member = false;
			if (inflateReset(zs) != Z_OK)
				gz_problem(st, GMT_TRACE_INPUT_END_CORRUPT,
					   "corrupt at byte %lld: %s", "inflateReset failed");
		} else if (rc == Z_BUF_ERROR && zs->avail_in == 0) {
			continue; /* wants more input */
		} else if (rc != Z_OK) {
			/* a bad header is named by where it starts: that is where the bad data is
			 */
			if (starting)
				st->consumed = at;
			gz_problem(st, GMT_TRACE_INPUT_END_CORRUPT, "corrupt at byte %lld: %s",
				   zs->msg	       ? zs->msg
				   : rc == Z_MEM_ERROR ? "out of memory"
						       : "not gzip data");
		}
	}
	return (ssize_t)(want - zs->avail_out);
}

static int
gz_close(void *cookie)
{
	struct gmt_trace_input_state *st = cookie;
	int rc = fclose(st->raw);

	st->raw = NULL;
	inflateEnd(&st->zs);
	st->zs_ready = false;
	return rc;
}

static FILE *
gz_open(struct gmt_trace_input_state *st, char why[GMT_TRACE_INPUT_WHY])
{
	FILE *f;

	st->in_cap = 1 << 16;
	st->in = malloc(st->in_cap);
	if (!st->in || inflateInit2(&st->zs, 15 + 16) != Z_OK) { /* 16: gzip's wrapper only */
		snprintf(why, GMT_TRACE_INPUT_WHY, "out of memory");
		return NULL;
	}
	st->zs_ready = true;
	f = fopencookie(st, "r", (cookie_io_functions_t){.read = gz_read, .close = gz_close});
	if (!f) {
		inflateEnd(&st->zs);
		st->zs_ready = false;
		snprintf(why, GMT_TRACE_INPUT_WHY, "out of memory");
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 17);
	return f;
}
#else
static FILE *
gz_open(struct gmt_trace_input_state *st, char why[GMT_TRACE_INPUT_WHY])
{
	(void)st;
	snprintf(why, GMT_TRACE_INPUT_WHY,
		 "a gzip-compressed trace, and this gpumemtrace was built without zlib "
		 "(zlib1g-dev): gzip -dc FILE | gpumemtrace report -");
	return NULL;
}
#endif

// --- opening ---------------------------------------------------------------------------------

/* The file as a stream from its first byte, with its first bytes in st->peek. */
static FILE *
open_raw(struct gmt_trace_input *in, const char *path, bool pipe_ok, char why[GMT_TRACE_INPUT_WHY])
{
	struct gmt_trace_input_state *st = in->st;
	char owhy[GMT_INPUT_WHY];
	struct stat sb;
	FILE *f;
	int fd;

	if (strcmp(path, GMT_TRACE_STDIN) == 0) {
		if (stdin_taken) {
			snprintf(why, GMT_TRACE_INPUT_WHY,
				 "standard input was read already (\"-\" "
				 "given twice)");
			errno = EINVAL;
			return NULL;
		}
		stdin_taken = true;
		in->is_stream = true;
		/* a copy of the descriptor: closing the trace leaves the process's stdin open */
		fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(why, GMT_TRACE_INPUT_WHY, "%s", strerror(errno));
			return NULL;
		}
	} else if ((fd = pipe_ok ? gmt_input_open_pipe(path, &in->is_stream, owhy)
				 : gmt_input_open(path, owhy)) < 0) {
		snprintf(why, GMT_TRACE_INPUT_WHY, "%s", owhy);
		return NULL;
	}
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		st->fd = fd;
		st->size = (long long)sb.st_size;
	}
	f = fdopen(fd, "r");
	if (!f) {
		snprintf(why, GMT_TRACE_INPUT_WHY, "%s", strerror(errno));
		close(fd);
		return NULL;
	}
	st->npeek = fread(st->peek, 1, PEEK, f);
	if (ferror(f)) {
		snprintf(why, GMT_TRACE_INPUT_WHY, "%s", strerror(errno));
		fclose(f);
		return NULL;
	}
	if (!in->is_stream) {
		if (fseek(f, 0, SEEK_SET) == 0)
			return f;
		snprintf(why, GMT_TRACE_INPUT_WHY, "cannot rewind: %s", strerror(errno));
		fclose(f);
		return NULL;
	}
	/* standard input or a pipe: a pipe cannot seek, and a file on standard input need not be
	 * at its start */
	st->under = f;
	f = fopencookie(st, "r",
			(cookie_io_functions_t){.read = replay_read, .close = replay_close});
	if (!f) {
		snprintf(why, GMT_TRACE_INPUT_WHY, "out of memory");
		fclose(st->under);
		st->under = NULL;
	}
	return f;
}

int
gmt_trace_input_open(struct gmt_trace_input *in,
		     const char *path,
		     bool pipe_ok,
		     char why[GMT_TRACE_INPUT_WHY])
{
	struct gmt_trace_input_state *st = calloc(1, sizeof(*st));
	FILE *f;

	*in = (struct gmt_trace_input){.st = st};
	if (!st) {
		snprintf(why, GMT_TRACE_INPUT_WHY, "out of memory");
		return -1;
	}
	st->fd = -1;
	st->size = -1;
	if (!(st->raw = open_raw(in, path, pipe_ok, why)))
		goto err_free;
	if (st->npeek == PEEK && memcmp(st->peek, GMT_ZSTD_MAGIC, PEEK) == 0) {
		in->kind = GMT_TRACE_INPUT_ZSTD;
		f = gmt_zread_open(st->raw, &st->z, why, GMT_TRACE_INPUT_WHY);
	} else if (st->npeek >= 2 && memcmp(st->peek, GZIP_MAGIC, 2) == 0) {
		in->kind = GMT_TRACE_INPUT_GZIP;
		f = gz_open(st, why);
	} else {
		f = st->raw;
	}
	if (!f) {
		fclose(st->raw);
		goto err_free;
	}
	in->f = f;
	return 0;
err_free:
	free(st->in);
	free(st);
	in->st = NULL;
	return -1;
}

// --- lines -------------------------------------------------------------------------------------

/* Append @p n bytes at @p p to the line being put together (*@p have of them so far). */
static int
line_append(struct gmt_trace_input_state *st, size_t *have, const char *p, size_t n)
{
	if (*have + n + 1 > st->lcap) {
		size_t cap = st->lcap ? st->lcap : 4096;
		char *b;

		while (cap < *have + n + 1)
			cap *= 2;
		if (!(b = realloc(st->lbuf, cap))) {
			errno = ENOMEM;
			return -1;
		}
		st->lbuf = b;
		st->lcap = cap;
	}
	memcpy(st->lbuf + *have, p, n);
	*have += n;
	st->lbuf[*have] = '\0';
	return 0;
}

// --- reading ahead -------------------------------------------------------------------------------

static long long raw_offset(const struct gmt_trace_input *in);

static void *
ra_main(void *arg)
{
	struct readahead *ra = arg;

	pthread_mutex_lock(&ra->mu);
	for (;;) {
		while (!ra->quit && ra->count == RA_BLOCKS)
			pthread_cond_wait(&ra->freed, &ra->mu);
		if (ra->quit)
			break;
		size_t slot = (ra->head + ra->count) % RA_BLOCKS;
		pthread_mutex_unlock(&ra->mu);
		errno = 0;
		size_t n = fread(ra->block[slot], 1, LINE_READ, ra->f);
		int err = n == 0 && ferror(ra->f) ? (errno ? errno : EIO) : 0;
		pthread_mutex_lock(&ra->mu);
		if (n == 0) {
			ra->eof = true;
			ra->err = err;
			pthread_cond_signal(&ra->filled);
			break;
		}
		ra->len[slot] = n;
		ra->end[slot] = raw_offset(ra->in);
		ra->count++;
		pthread_cond_signal(&ra->filled);
	}
	pthread_mutex_unlock(&ra->mu);
	gmt_cputime_note("gmt-readahead");
	return NULL;
}

/*
 * The next block of the stream into st->rbuf / st->rlen, the one cut so far given back. 0, -1
 * at the stream's end (st->reof), or the errno of a read error (st->reof too).
 */
static int
ra_next(struct gmt_trace_input_state *st)
{
	struct readahead *ra = st->ra;
	int err = 0;

	pthread_mutex_lock(&ra->mu);
	if (ra->holding) {
		ra->head = (ra->head + 1) % RA_BLOCKS;
		ra->count--;
		ra->holding = false;
		pthread_cond_signal(&ra->freed);
	}
	while (!ra->count && !ra->eof)
		pthread_cond_wait(&ra->filled, &ra->mu);
	if (ra->count) {
		ra->holding = true;
		st->rbuf = ra->block[ra->head];
		st->rlen = ra->len[ra->head];
		st->ra_end = ra->end[ra->head];
	} else {
		st->reof = true;
		st->rlen = 0;
		err = ra->err ? ra->err : -1;
	}
	pthread_mutex_unlock(&ra->mu);
	return err;
}

int
gmt_trace_input_readahead(struct gmt_trace_input *in, unsigned decoders)
{
	struct gmt_trace_input_state *st = in->st;
	struct readahead *ra;
	pthread_attr_t attr;
	int rc;

	if (st->ra || st->reof)
		return st->ra ? 0 : -1;
	/* a regular file only: a read of a pipe can block for good (a producer that keeps it open),
	 * and a read that stopped early must not wait for it when the thread is joined */
	if (st->fd < 0)
		return -1;
	if (!(ra = calloc(1, sizeof(*ra))))
		return -1;
	ra->f = in->f;
	ra->in = in;
	for (size_t i = 0; i < RA_BLOCKS; i++)
		if (!(ra->block[i] = malloc(LINE_READ)))
			goto err_free;
	/* what the line reader holds and has not handed out goes first: it is the ring's head */
	if (st->rpos < st->rlen) {
		memcpy(ra->block[0], st->rbuf + st->rpos, st->rlen - st->rpos);
		ra->len[0] = st->rlen - st->rpos;
		ra->end[0] = raw_offset(in);
		ra->count = 1;
	}
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->filled, NULL);
	pthread_cond_init(&ra->freed, NULL);
	if (pthread_attr_init(&attr) != 0)
		goto err_sync;
	pthread_attr_setstacksize(&attr, 256u << 10); /* fread and the decompressor's reads */
	if (st->z && decoders) /* before the thread reads the stream: then only it does */
		gmt_zread_parallel(st->z, decoders);
	rc = pthread_create(&ra->th, &attr, ra_main, ra);
	if (rc == 0)
		pthread_setname_np(ra->th, "gmt-readahead");
	pthread_attr_destroy(&attr);
	if (rc != 0)
		goto err_sync;
	free(st->rbuf);
	st->rbuf = NULL;
	st->rpos = st->rlen = 0;
	st->ra = ra;
	return 0;
err_sync:
	pthread_cond_destroy(&ra->freed);
	pthread_cond_destroy(&ra->filled);
	pthread_mutex_destroy(&ra->mu);
err_free:
	for (size_t i = 0; i < RA_BLOCKS; i++)
		free(ra->block[i]);
	free(ra);
	return -1;
}

void
gmt_trace_input_readahead_stop(struct gmt_trace_input *in)
{
	struct gmt_trace_input_state *st = in->st;
	struct readahead *ra = st ? st->ra : NULL;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->quit = true;
	pthread_cond_signal(&ra->freed);
	pthread_mutex_unlock(&ra->mu);
	pthread_join(ra->th, NULL);
	pthread_cond_destroy(&ra->freed);
	pthread_cond_destroy(&ra->filled);
	pthread_mutex_destroy(&ra->mu);
	for (size_t i = 0; i < RA_BLOCKS; i++)
		free(ra->block[i]);
	free(ra);
	st->ra = NULL;
	/* nothing more is handed out: the line reader is at the end of what it was given */
	st->rbuf = NULL;
	st->rpos = st->rlen = 0;
	st->reof = true;
}

int
gmt_trace_input_line(struct gmt_trace_input *in, struct gmt_trace_line *line, size_t max)
{
	struct gmt_trace_input_state *st = in->st;
	unsigned long long total = 0; /* bytes of the line so far */
	size_t have = 0;	      /* of them in lbuf */
	bool skipping = false;

	*line = (struct gmt_trace_line){0};
	if (!st->ra && !st->rbuf && !(st->rbuf = malloc(LINE_READ))) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (st->rpos == st->rlen) {
			if (st->reof)
				break;
			st->rpos = 0;
			if (st->ra) {
				int err = ra_next(st);

				if (err > 0) {
					errno = err;
					return -1;
				}
				if (err < 0)
					break;
			} else {
				st->rlen = fread(st->rbuf, 1, LINE_READ, in->f);
				if (st->rlen == 0) {
					st->reof = true;
					if (ferror(in->f))
						return -1;
					break;
				}
			}
		}
		char *p = st->rbuf + st->rpos;
		size_t avail = st->rlen - st->rpos;
		char *nl = memchr(p, '\n', avail);
		size_t take = nl ? (size_t)(nl - p) : avail;

		total += take;
		st->rpos += take + (nl != NULL);
		if (!skipping && total > max) {
			/* past the limit: the rest goes by without being kept */
			skipping = true;
			have = 0;
		}
		if (!skipping) {
			if (nl && have == 0) { /* whole in what was read: no copy */
				line->text = p;
				line->len = take;
				return 1;
			}
			if (line_append(st, &have, p, take) != 0)
				return -1;
		}
		if (nl)
			goto done;
	}
	if (total == 0 && !skipping)
		return 0; /* the end of the stream, at the start of a line */
	line->torn = true;
done:
	if (skipping) {
		line->skipped = total;
	} else {
		line->text = st->lbuf ? st->lbuf : "";
		line->len = have;
	}
	return 1;
}

// --- what was read -----------------------------------------------------------------------------

/* Bytes of the file consumed by the reads of in->f so far (by whoever reads it). */
static long long
raw_offset(const struct gmt_trace_input *in)
{
	const struct gmt_trace_input_state *st = in->st;

	switch (in->kind) {
	case GMT_TRACE_INPUT_ZSTD: return gmt_zread_raw_offset(st->z, in->f);
	case GMT_TRACE_INPUT_GZIP: return st->consumed;
	case GMT_TRACE_INPUT_PLAIN: break;
	}
	return in->is_stream ? st->replayed : (long long)ftell(in->f);
}

long long
gmt_trace_input_offset(const struct gmt_trace_input *in)
{
	const struct gmt_trace_input_state *st = in->st;
	/* read ahead: where the file stood once the block being cut was read */
	long long at = st->ra ? st->ra_end : raw_offset(in);

	if (in->kind != GMT_TRACE_INPUT_PLAIN || at < 0)
		return at;
	/* less what the line reader holds and has not handed out */
	return at - (long long)(st->rlen - st->rpos);
}

long long
gmt_trace_input_size(const struct gmt_trace_input *in)
{
	return in->st->size;
}

int
gmt_trace_input_fd(const struct gmt_trace_input *in)
{
	return in->st->fd;
}

enum gmt_trace_input_end
gmt_trace_input_end(const struct gmt_trace_input *in, const char **why)
{
	const struct gmt_trace_input_state *st = in->st;
	const char *p;

	*why = NULL;
	switch (in->kind) {
	case GMT_TRACE_INPUT_ZSTD:
		if (!(p = gmt_zread_problem(st->z)))
			return GMT_TRACE_INPUT_END_NONE;
		*why = p;
		if (gmt_zread_truncated(st->z))
			return GMT_TRACE_INPUT_END_TRUNCATED;
		return strncmp(p, "read error", 10) == 0 ? GMT_TRACE_INPUT_END_READ_ERROR
							 : GMT_TRACE_INPUT_END_CORRUPT;
	case GMT_TRACE_INPUT_GZIP:
		if (st->end != GMT_TRACE_INPUT_END_NONE)
			*why = st->problem;
		return st->end;
	case GMT_TRACE_INPUT_PLAIN: break;
	}
	return GMT_TRACE_INPUT_END_NONE;
}

void
gmt_trace_input_close(struct gmt_trace_input *in)
{
	struct gmt_trace_input_state *st = in->st;

	gmt_trace_input_readahead_stop(in);
	if (in->f)
		fclose(in->f); /* closes what it reads from: the zstd or gzip stream its file */
	if (st) {
		free(st->in);
		free(st->rbuf);
		free(st->lbuf);
		free(st);
	}
	*in = (struct gmt_trace_input){0};
}
