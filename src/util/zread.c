/*
 * @brief A zstd-compressed trace as a stdio stream of its decompressed bytes (see zread.h).
 *
 * The file is taken a frame at a time. A scan finds where the next frame ends
 * (ZSTD_findFrameCompressedSize) and what its header says it decodes to; a frame of a known size
 * up to FRAME_MAX is decoded whole into a buffer of that size and then handed out, and with
 * gmt_zread_parallel() decoder threads decode the frames after it meanwhile. Any other frame (no
 * size in its header, a larger one, one cut by the file's end, bytes that are not zstd) is
 * decoded as a stream on the reading thread, a piece at a time, in constant memory.
 *
 * Either way a frame goes through the same sequence of decoder calls: input and output windows
 * fixed from the frame's first byte (decode_step()). So what a damaged frame gives before its
 * damage, and the problem said about it, do not depend on how many threads decode, on stdio's
 * buffer or on the read sizes of whoever reads the stream.
 */
#define _GNU_SOURCE
#include "util/zread.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/cputime.h"
#include "util/zstd_api.h"

#define FRAME_MAX (128u << 20) /* larger frames (and unsized ones) are decoded as streams */
#define SCAN_MAX (128u << 20)  /* compressed bytes held to find a frame's end, at most */
#define BUDGET (64u << 20)     /* decoded bytes of queued frames, at most (one frame always) */
#define KEEP_MAX (4u << 20)    /* a slot keeps buffers up to this size for the next frame */
#define PIECE (1u << 20)       /* a decoder call's output window */
#define READ_SIZE (1u << 20)   /* the file is read this much at a time, at least */
#define MAX_THREADS 32

enum slot_state { SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

/* A frame of a known size, decoded whole. */
struct slot {
	unsigned char *src; /* the frame's compressed bytes */
	size_t src_len, src_cap;
	unsigned char *dst; /* what it decoded to */
	size_t dst_len, dst_cap;
	size_t size;   /* its header's content size */
	long long off; /* its first byte in the file */
	enum slot_state state;
	size_t err; /* the decoder's error, 0 when none */
	bool stuck; /* the decoder wanted bytes the frame does not have (its header lied) */
	bool nomem; /* no decoder context could be had */
};

/* The frame decoded as a stream, on the reading thread. */
struct stream {
	bool on;
	long long off;	      /* its first byte in the file */
	size_t in_done;	      /* its bytes given to the decoder */
	size_t out_done;      /* its bytes decoded */
	unsigned char *piece; /* PIECE bytes: piece[pos .. len) decoded, not handed out */
	size_t pos, len;
};

struct gmt_zread {
	struct gmt_zstd z;
	void *dctx; /* the reading thread's */
	FILE *raw;
	size_t in_step; /* a decoder call's input window */
	/* compressed bytes read from raw: buf[pos .. len) not taken yet; buf[0] is byte base */
	unsigned char *buf;
	size_t cap, len, pos;
	long long base;
	bool eof;
	/* frames scanned and queued: slots[head], the next count - 1 after it (a ring) */
	struct slot *slots;
	size_t nslots, head, count, in_flight;
	bool have_head; /* slots[head] is decoded and being handed out from out_pos */
	size_t out_pos;
	bool stream_next; /* the scan stopped at a frame to decode as a stream */
	struct stream st;
	/* decoder threads (gmt_zread_parallel) */
	pthread_t th[MAX_THREADS];
	unsigned nthreads;
	pthread_mutex_t mu;
	pthread_cond_t work, decoded;
	bool quit;

	long long consumed; /* compressed bytes of what was handed out */
	bool failed;	    /* a problem was said: nothing more is scanned or streamed */
	bool done;	    /* nothing more is handed out */
	unsigned long long frames;
	bool truncated;
	char problem[256];
};

static void
set_problem(struct gmt_zread *r, const char *fmt, long long at, const char *arg)
{
	if (!r->problem[0])
		snprintf(r->problem, sizeof(r->problem), fmt, at, arg);
	r->failed = true; /* the frames queued before it are still handed out */
}

// --- one frame's decoder calls ------------------------------------------------------------------

/*
 * One decoder call on a frame: @p src holds @p avail of its bytes from byte @p in_done on, @p dst
 * room for @p out_room bytes of its output from byte @p out_done on. The input window ends at the
 * next multiple of in_step from the frame's first byte, the output window at the next multiple of
 * PIECE: the same calls whoever decodes the frame. Returns the decoder's code.
 */
static size_t
decode_step(const struct gmt_zread *r,
	    void *dctx,
	    const unsigned char *src,
	    size_t in_done,
	    size_t avail,
	    unsigned char *dst,
	    size_t out_done,
	    size_t out_room,
	    size_t *in_used,
	    size_t *out_made)
{
	size_t in_win = (in_done / r->in_step + 1) * r->in_step - in_done;
	size_t out_win = ((out_done / PIECE) + 1) * PIECE - out_done;
	struct gmt_zstd_in in = {src, avail < in_win ? avail : in_win, 0};
	struct gmt_zstd_out out = {dst, out_room < out_win ? out_room : out_win, 0};
	size_t rc = r->z.decompressStream(dctx, &out, &in);

	*in_used = in.pos;
	*out_made = out.pos;
	return rc;
}

/*
 * A damaged frame again, a byte of input a call: a call that fails makes nothing, and with one
 * byte each every block before the damaged one was decoded by a call before it. So the frame
 * gives all that its good blocks hold (a checksum that fails: all of it), as the decoding of a
 * cut frame does, whoever decodes it. Only for frames that failed; one of more than 1 MiB in
 * steps of a millionth of it (a hostile file's frame of 128 MiB: a million calls, not 128).
 */
static void
salvage(const struct gmt_zread *r, void **dctx, struct slot *s)
{
	size_t in_done = 0, out_done = 0;
	size_t step = s->src_len > (1u << 20) ? s->src_len >> 20 : 1;

	for (;;) {
		size_t left = s->src_len - in_done;
		struct gmt_zstd_in in = {s->src + in_done, left < step ? left : step, 0};
		struct gmt_zstd_out out = {s->dst + out_done, s->size - out_done, 0};
		size_t rc = r->z.decompressStream(*dctx, &out, &in);
		if (r->z.isError(rc)) {
			s->err = rc;
			break;
		}
		in_done += in.pos;
		out_done += out.pos;
		if (rc == 0 || (!in.pos && !out.pos))
			break; /* (not expected: it failed the first time) */
	}
	s->dst_len = out_done;
	r->z.freeDCtx(*dctx);
	*dctx = r->z.createDCtx();
}

/* Decode the frame of @p s whole (any thread); *@p dctx is replaced after a failure. */
static void
decode_frame(const struct gmt_zread *r, void **dctx, struct slot *s)
{
	size_t in_done = 0, out_done = 0;

	s->err = 0;
	s->stuck = s->nomem = false;
	if (!*dctx && !(*dctx = r->z.createDCtx())) {
		s->nomem = true;
		s->dst_len = 0;
		return;
	}
	for (;;) {
		size_t used, made;
		size_t rc =
		    decode_step(r, *dctx, s->src + in_done, in_done, s->src_len - in_done,
				s->dst + out_done, out_done, s->size - out_done, &used, &made);
		in_done += used;
		out_done += made;
		if (r->z.isError(rc)) {
			s->err = rc;
			break;
		}
		if (rc == 0)
			break; /* the frame ended (its checksum, when it has one, verified) */
		if (!used && !made) {
			s->stuck = true;
			break;
		}
	}
	s->dst_len = out_done;
	if (s->err || s->stuck) { /* mid-frame: a fresh context for the next one */
		r->z.freeDCtx(*dctx);
		*dctx = r->z.createDCtx();
	}
	if (s->err && *dctx)
		salvage(r, dctx, s);
}

// --- the file's bytes ---------------------------------------------------------------------------

/*
 * At least @p need bytes from pos on in buf, or as many as the file still has (eof). false on a
 * read error or when memory runs out (the problem said).
 */
static bool
have(struct gmt_zread *r, size_t need)
{
	while (r->len - r->pos < need && !r->eof) {
		if (r->pos) { /* what was taken goes: the rest to the front */
			memmove(r->buf, r->buf + r->pos, r->len - r->pos);
			r->base += (long long)r->pos;
			r->len -= r->pos;
			r->pos = 0;
		}
		size_t want = need > READ_SIZE ? need : READ_SIZE;
		if (r->cap - r->len < want) {
			size_t cap = r->cap ? r->cap : READ_SIZE;
			while (cap - r->len < want)
				cap *= 2;
			unsigned char *nb = realloc(r->buf, cap);
			if (!nb) {
				set_problem(r, "read error at byte %lld: %s",
					    r->base + (long long)r->len, "out of memory");
				return false;
			}
			r->buf = nb;
			r->cap = cap;
		}
		errno = 0;
		size_t n = fread(r->buf + r->len, 1, r->cap - r->len, r->raw);
		r->len += n;
		if (n == 0) {
			r->eof = true;
			if (ferror(r->raw)) {
				snprintf(r->problem, sizeof(r->problem), "read error: %s",
					 strerror(errno ? errno : EIO));
				r->failed = true;
				return false;
			}
		}
	}
	return true;
}

/* A zstd frame's magic number, or a skippable frame's (0x184D2A50 to 0x184D2A5F). */
static bool
frame_magic(const unsigned char *p)
{
	return memcmp(p, GMT_ZSTD_MAGIC, 4) == 0 ||
	       ((p[0] & 0xf0) == 0x50 && p[1] == 0x2a && p[2] == 0x4d && p[3] == 0x18);
}

// --- scanning frames ----------------------------------------------------------------------------

static bool
grow(unsigned char **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return true;
	unsigned char *np = realloc(*p, need);
	if (!np)
		return false;
	*p = np;
	*cap = need;
	return true;
}

/*
 * Queue the next frame when it is one of a known size (into the ring's next slot): true. false
 * at the file's end, on a problem (r->failed), when the budget has no room for it yet, or when it
 * is to be decoded as a stream (r->stream_next).
 */
static bool
scan_one(struct gmt_zread *r)
{
	if (!have(r, 4))
		return false;
	size_t avail = r->len - r->pos;
	if (avail == 0)
		return false; /* the end, between frames */
	if (avail < 4 || !frame_magic(r->buf + r->pos)) {
		r->stream_next = true; /* cut, or not zstd: the stream decoder says which */
		return false;
	}
	size_t n;
	for (;;) {
		n = r->z.findFrameCompressedSize(r->buf + r->pos, avail);
		if (!r->z.isError(n))
			break;
		if (r->eof || avail >= SCAN_MAX) {
			r->stream_next = true;
			return false;
		}
		if (!have(r, avail * 2))
			return false;
		avail = r->len - r->pos;
	}
	unsigned long long size = r->z.getFrameContentSize(r->buf + r->pos, n);
	if (size == GMT_ZSTD_CONTENTSIZE_UNKNOWN || size == GMT_ZSTD_CONTENTSIZE_ERROR ||
	    size > FRAME_MAX) {
		r->stream_next = true;
		return false;
	}
	if (r->count && r->in_flight + size > BUDGET)
		return false;
	struct slot *s = &r->slots[(r->head + r->count) % r->nslots];
	if (!grow(&s->src, &s->src_cap, n) || !grow(&s->dst, &s->dst_cap, size ? size : 1)) {
		set_problem(r, "read error at byte %lld: %s", r->base + (long long)r->pos,
			    "out of memory");
		return false;
	}
	memcpy(s->src, r->buf + r->pos, n);
	s->src_len = n;
	s->size = (size_t)size;
	s->off = r->base + (long long)r->pos;
	s->dst_len = 0;
	r->pos += n;
	if (r->nthreads)
		pthread_mutex_lock(&r->mu);
	s->state = SLOT_QUEUED;
	r->count++;
	r->in_flight += s->size;
	if (r->nthreads) {
		pthread_cond_signal(&r->work);
		pthread_mutex_unlock(&r->mu);
	}
	return true;
}

/* The head frame, decoded: by a decoder thread, else here. */
static void
take_head(struct gmt_zread *r)
{
	struct slot *s = &r->slots[r->head];

	if (r->nthreads) {
		pthread_mutex_lock(&r->mu);
		while (s->state == SLOT_BUSY)
			pthread_cond_wait(&r->decoded, &r->mu);
		bool mine = s->state == SLOT_QUEUED;
		if (mine)
			s->state = SLOT_BUSY;
		pthread_mutex_unlock(&r->mu);
		if (!mine)
			return;
	}
	decode_frame(r, &r->dctx, s);
	if (r->nthreads) /* the decoders look at every queued slot's state */
		pthread_mutex_lock(&r->mu);
	s->state = SLOT_DONE;
	if (r->nthreads)
		pthread_mutex_unlock(&r->mu);
}

/* The head frame is handed out: its problem said, its slot free. */
static void
finish_head(struct gmt_zread *r)
{
	struct slot *s = &r->slots[r->head];

	if (s->nomem)
		set_problem(r, "read error at byte %lld: %s", s->off, "out of memory");
	else if (s->err)
		set_problem(r, "corrupt at byte %lld: %s", s->off, r->z.getErrorName(s->err));
	else if (s->stuck)
		set_problem(r, "corrupt at byte %lld: %s", s->off,
			    "the frame decodes to more than its header says");
	else
		r->frames++;
	if (s->nomem || s->err || s->stuck)
		r->done = true; /* the stream ends at this frame: those after it are not read */
	r->consumed = s->off + (long long)s->src_len;
	/* a large frame's buffers go: every slot keeping the largest it saw would hold that
	 * many times over (the writer's frames reach 64 MiB when its compressor falls behind) */
	if (s->dst_cap > KEEP_MAX) {
		free(s->dst);
		s->dst = NULL;
		s->dst_cap = 0;
	}
	if (s->src_cap > KEEP_MAX) {
		free(s->src);
		s->src = NULL;
		s->src_cap = 0;
	}
	if (r->nthreads)
		pthread_mutex_lock(&r->mu);
	r->in_flight -= s->size;
	r->head = (r->head + 1) % r->nslots;
	r->count--;
	if (r->nthreads)
		pthread_mutex_unlock(&r->mu);
	r->have_head = false;
}

// --- a frame as a stream ------------------------------------------------------------------------

/* One decoder call of the streamed frame; ends it, or the whole stream with a problem. */
static void
stream_step(struct gmt_zread *r)
{
	struct stream *st = &r->st;
	size_t in_win = (st->in_done / r->in_step + 1) * r->in_step - st->in_done;

	if (!have(r, in_win)) {
		st->on = false;
		return;
	}
	size_t at = st->out_done % PIECE, used, made;
	if (at == 0)
		st->pos = st->len = 0;
	size_t rc = decode_step(r, r->dctx, r->buf + r->pos, st->in_done, r->len - r->pos,
				st->piece + at, st->out_done, PIECE - at, &used, &made);
	r->pos += used;
	st->in_done += used;
	st->out_done += made;
	st->len = at + made;
	r->consumed = st->off + (long long)st->in_done;
	if (r->z.isError(rc)) {
		set_problem(r, "corrupt at byte %lld: %s", st->off, r->z.getErrorName(rc));
		st->on = false;
	} else if (rc == 0) {
		r->frames++;
		st->on = false;
	} else if (!used && !made) {
		st->on = false;
		if (r->eof && r->pos == r->len) {
			r->truncated = true;
			set_problem(r,
				    "truncated: the file ends inside a zstd frame (at byte %lld%s)",
				    r->consumed, "; a killed writer's last flush, or a full disk");
		} else {
			set_problem(r, "corrupt at byte %lld: %s", st->off,
				    "the decoder takes nothing more");
		}
	}
}

static bool
stream_start(struct gmt_zread *r)
{
	struct stream *st = &r->st;

	if (!st->piece && !(st->piece = malloc(PIECE))) {
		set_problem(r, "read error at byte %lld: %s", r->base + (long long)r->pos,
			    "out of memory");
		return false;
	}
	st->on = true;
	st->off = r->base + (long long)r->pos;
	st->in_done = st->out_done = st->pos = st->len = 0;
	return true;
}

// --- the stdio stream ---------------------------------------------------------------------------

static size_t
hand_out(char *buf, size_t size, const unsigned char *from, size_t *pos, size_t len)
{
	size_t n = len - *pos < size ? len - *pos : size;
	memcpy(buf, from + *pos, n);
	*pos += n;
	return n;
}

static ssize_t
zread_read(void *cookie, char *buf, size_t size)
{
	struct gmt_zread *r = cookie;

	for (;;) {
		if (r->have_head) {
			struct slot *s = &r->slots[r->head];
			if (r->out_pos < s->dst_len)
				return (ssize_t)hand_out(buf, size, s->dst, &r->out_pos,
							 s->dst_len);
			finish_head(r);
			continue;
		}
		if (r->st.pos < r->st.len)
			return (ssize_t)hand_out(buf, size, r->st.piece, &r->st.pos, r->st.len);
		if (r->done)
			return 0;
		if (r->st.on) {
			stream_step(r);
			continue;
		}
		while (!r->stream_next && !r->failed && r->count < r->nslots && scan_one(r))
			;
		if (r->count) {
			take_head(r);
			r->have_head = true;
			r->out_pos = 0;
		} else if (r->stream_next && !r->failed) {
			r->stream_next = false;
			stream_start(r);
		} else {
			r->done = true; /* the end (or the problem that stopped the scan) */
		}
	}
}

static void
stop_threads(struct gmt_zread *r)
{
	if (!r->nthreads)
		return;
	pthread_mutex_lock(&r->mu);
	r->quit = true;
	pthread_cond_broadcast(&r->work);
	pthread_mutex_unlock(&r->mu);
	for (unsigned i = 0; i < r->nthreads; i++)
		pthread_join(r->th[i], NULL);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->decoded);
	pthread_mutex_destroy(&r->mu);
	r->nthreads = 0;
}

static int
zread_close(void *cookie)
{
	struct gmt_zread *r = cookie;
	int rc = fclose(r->raw);

	stop_threads(r);
	for (size_t i = 0; i < r->nslots; i++) {
		free(r->slots[i].src);
		free(r->slots[i].dst);
	}
	free(r->slots);
	r->z.freeDCtx(r->dctx);
	free(r->buf);
	free(r->st.piece);
	/* the library stays loaded: another trace will want it */
	free(r);
	return rc;
}

// --- decoder threads ----------------------------------------------------------------------------

static void *
decoder_main(void *arg)
{
	struct gmt_zread *r = arg;
	void *dctx = NULL;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		struct slot *s = NULL;
		for (;;) {
			for (size_t i = 0; i < r->count && !s && !r->quit; i++) {
				struct slot *c = &r->slots[(r->head + i) % r->nslots];
				if (c->state == SLOT_QUEUED)
					s = c;
			}
			if (s || r->quit)
				break;
			pthread_cond_wait(&r->work, &r->mu);
		}
		if (!s)
			break;
		s->state = SLOT_BUSY;
		pthread_mutex_unlock(&r->mu);
		decode_frame(r, &dctx, s);
		pthread_mutex_lock(&r->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&r->decoded);
	}
	pthread_mutex_unlock(&r->mu);
	if (dctx)
		r->z.freeDCtx(dctx);
	gmt_cputime_note("gmt-unzstd");
	return NULL;
}

unsigned
gmt_zread_parallel(struct gmt_zread *r, unsigned threads)
{
	if (!r || r->nthreads || threads == 0)
		return r ? r->nthreads : 0;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	size_t nslots = 2 * (size_t)threads + 2;
	struct slot *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return 0;
	/* the frames queued so far (the one being handed out) keep their order, from slot 0 */
	for (size_t i = 0; i < r->nslots; i++)
		slots[i] = r->slots[(r->head + i) % r->nslots];
	free(r->slots);
	r->slots = slots;
	r->nslots = nslots;
	r->head = 0;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->decoded, NULL);
	pthread_attr_t attr;
	bool attr_ok = pthread_attr_init(&attr) == 0;
	if (attr_ok)
		pthread_attr_setstacksize(&attr, 256u << 10);
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&r->th[r->nthreads], attr_ok ? &attr : NULL, decoder_main, r) !=
		    0)
			break;
		pthread_setname_np(r->th[r->nthreads], "gmt-unzstd");
		r->nthreads++;
	}
	if (attr_ok)
		pthread_attr_destroy(&attr);
	if (!r->nthreads) {
		pthread_cond_destroy(&r->work);
		pthread_cond_destroy(&r->decoded);
		pthread_mutex_destroy(&r->mu);
	}
	return r->nthreads;
}

// --- opening ------------------------------------------------------------------------------------

FILE *
gmt_zread_open(FILE *raw, struct gmt_zread **state, char *why, size_t why_len)
{
	unsigned char magic[4];
	size_t n = fread(magic, 1, sizeof(magic), raw);
	struct gmt_zread *r;
	FILE *f;

	*state = NULL;
	if (ferror(raw)) {
		snprintf(why, why_len, "%s", strerror(errno));
		return NULL;
	}
	if (n < sizeof(magic) || memcmp(magic, GMT_ZSTD_MAGIC, sizeof(magic)) != 0) {
		/* plain: the reader's fast path reads the file itself */
		if (fseek(raw, 0, SEEK_SET) != 0) {
			snprintf(why, why_len, "cannot rewind: %s", strerror(errno));
			return NULL;
		}
		return raw;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	if (!gmt_zstd_load(&r->z, NULL, why, why_len)) {
		size_t len = strlen(why);
		snprintf(why + len, why_len - len, ": this is a zstd-compressed trace");
		free(r);
		return NULL;
	}
	r->raw = raw;
	r->in_step = r->z.DStreamInSize();
	r->cap = READ_SIZE;
	r->buf = malloc(r->cap);
	r->nslots = 1;
	r->slots = calloc(1, sizeof(*r->slots));
	r->dctx = r->z.createDCtx();
	if (!r->buf || !r->slots || !r->dctx)
		goto err_free;
	memcpy(r->buf, magic, sizeof(magic));
	r->len = sizeof(magic);
	f = fopencookie(r, "r", (cookie_io_functions_t){.read = zread_read, .close = zread_close});
	if (!f)
		goto err_free;
	/* stdio's buffer as large as one decoder output block: fewer cookie calls */
	setvbuf(f, NULL, _IOFBF, r->z.DStreamOutSize());
	*state = r;
	return f;
err_free:
	if (r->dctx)
		r->z.freeDCtx(r->dctx);
	free(r->slots);
	free(r->buf);
	free(r);
	snprintf(why, why_len, "out of memory");
	return NULL;
}

bool
gmt_zread_compressed(const struct gmt_zread *state)
{
	return state != NULL;
}

long long
gmt_zread_raw_offset(const struct gmt_zread *state, FILE *f)
{
	return state ? state->consumed : (long long)ftell(f);
}

int
gmt_zread_raw_fd(const struct gmt_zread *state, FILE *f)
{
	return state ? fileno(state->raw) : fileno(f);
}

unsigned long long
gmt_zread_frames(const struct gmt_zread *state)
{
	return state ? state->frames : 0;
}

const char *
gmt_zread_problem(const struct gmt_zread *state)
{
	return state && state->problem[0] ? state->problem : NULL;
}

bool
gmt_zread_truncated(const struct gmt_zread *state)
{
	return state && state->truncated;
}
