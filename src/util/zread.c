/*
 * @brief A zstd-compressed trace as a stdio stream of its decompressed bytes (see zread.h).
 */
#define _GNU_SOURCE
#include "util/zread.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/zstd_api.h"

struct gmt_zread {
	struct gmt_zstd z;
	void *dctx;
	FILE *raw;
	unsigned char
	    *in; /* compressed bytes read from raw, in[in_pos .. in_len) not decoded yet */
	size_t in_cap, in_len, in_pos;
	long long consumed; /* compressed bytes handed to the decoder */
	bool in_frame;	    /* the decoder is inside a frame (bytes of it seen, its end not yet) */
	bool eof, done;
	unsigned long long frames;
	bool truncated;
	char problem[256];
};

static void
set_problem(struct gmt_zread *r, const char *fmt, const char *arg)
{
	if (!r->problem[0])
		snprintf(r->problem, sizeof(r->problem), fmt, r->consumed, arg);
	r->done = true;
}

/* Refill the compressed buffer; false at the end of the file or on an error. */
static bool
refill(struct gmt_zread *r)
{
	if (r->eof)
		return false;
	if (r->in_pos == r->in_len)
		r->in_pos = r->in_len = 0;
	size_t n = fread(r->in + r->in_len, 1, r->in_cap - r->in_len, r->raw);
	r->in_len += n;
	if (n == 0) {
		r->eof = true;
		if (ferror(r->raw)) {
			snprintf(r->problem, sizeof(r->problem), "read error: %s", strerror(errno));
			r->done = true;
		}
		return false;
	}
	return true;
}

static ssize_t
zread_read(void *cookie, char *buf, size_t size)
{
	struct gmt_zread *r = cookie;
	struct gmt_zstd_out out = {buf, size, 0};

	while (out.pos == 0 && !r->done) {
		if (r->in_pos == r->in_len && !refill(r)) {
			if (!r->done && r->in_frame) {
				r->truncated = true;
				set_problem(
				    r,
				    "truncated: the file ends inside a zstd frame (at byte %lld%s)",
				    "; a killed writer's last flush, or a full disk");
			}
			r->done = true;
			break;
		}
		struct gmt_zstd_in in = {r->in + r->in_pos, r->in_len - r->in_pos, 0};
		size_t rc = r->z.decompressStream(r->dctx, &out, &in);
		r->in_pos += in.pos;
		r->consumed += (long long)in.pos;
		if (r->z.isError(rc)) {
			set_problem(r, "corrupt at byte %lld: %s", r->z.getErrorName(rc));
			break;
		}
		if (rc == 0) { /* a frame ended (its checksum, when it has one, verified) */
			r->frames++;
			r->in_frame = false;
		} else if (in.pos || out.pos) {
			r->in_frame = true;
		}
	}
	return (ssize_t)out.pos;
}

static int
zread_close(void *cookie)
{
	struct gmt_zread *r = cookie;
	int rc = fclose(r->raw);

	r->z.freeDCtx(r->dctx);
	free(r->in);
	/* the library stays loaded: another trace will want it */
	free(r);
	return rc;
}

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
	r->in_cap = r->z.DStreamInSize();
	r->in = malloc(r->in_cap);
	r->dctx = r->z.createDCtx();
	if (!r->in || !r->dctx)
		goto err_free;
	memcpy(r->in, magic, sizeof(magic));
	r->in_len = sizeof(magic);
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
	free(r->in);
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
