/*
 * @brief What the trace reader reads from: a trace file as it is (`.jsonl`), zstd-compressed
 * (`.jsonl.zst`, the tracer's GPUMEMTRACE_COMPRESS=zstd) or gzip-compressed (`.jsonl.gz`), or
 * standard input (`-`), always as one stdio stream of JSON Lines.
 *
 * The kind comes from the file's first bytes, not from its name: a renamed or piped trace reads
 * the same. A compressed file that ends early (a killed writer inside its last frame, a copy
 * cut short) or holds bytes that are not of its format is read as far as it is good: the stream
 * ends there, and gmt_trace_input_problem() says why and at which byte of the file.
 */
#ifndef GMT_ANALYSIS_READER_TRACE_INPUT_H
#define GMT_ANALYSIS_READER_TRACE_INPUT_H

#include <stdbool.h>
#include <stdio.h>

/** Big enough for the reason gmt_trace_input_open() gives. */
#define GMT_TRACE_INPUT_WHY 256

/** The path that names standard input. */
#define GMT_TRACE_STDIN "-"

enum gmt_trace_input_kind {
	GMT_TRACE_INPUT_PLAIN,
	GMT_TRACE_INPUT_ZSTD,
	GMT_TRACE_INPUT_GZIP,
};

/**
 * The longest line read, in bytes without its '\n' (docs/trace-format.md): far above what the
 * tracer writes (a stack line holds at most 256 native and 128 Python frames, a modules line
 * every loaded object, a header the command line), and above the million-frame stack line the
 * reader keeps the innermost frames of. A longer line (a decompression bomb, a file that is not
 * JSON Lines) is skipped to its end without being kept: memory stays within this bound however
 * long it is.
 */
#define GMT_TRACE_MAX_LINE (64u << 20)

/** How a compressed stream ended early (none: it did not, or it is not compressed). */
enum gmt_trace_input_end {
	GMT_TRACE_INPUT_END_NONE,
	GMT_TRACE_INPUT_END_TRUNCATED, /* the file ends inside a frame or member */
	GMT_TRACE_INPUT_END_CORRUPT,   /* bytes that are not of the format */
	GMT_TRACE_INPUT_END_READ_ERROR,
};

struct gmt_trace_input_state;

struct gmt_trace_input {
	FILE *f; /* the trace's lines, decompressed */
	enum gmt_trace_input_kind kind;
	bool is_stream; /* standard input or a pipe: read once, never rewound */
	struct gmt_trace_input_state *st;
};

/**
 * Open @p path (or standard input for "-") to read its lines. A path must be a regular file
 * (util/input.h: a FIFO may block), or with @p pipe_ok (a path the user named) also a FIFO or
 * pipe, read as standard input is; standard input may be anything, and is read once per process
 * (a second "-" is refused: its bytes are gone). 0, or -1 with the reason in @p why (the open's,
 * or why a compressed file cannot be read: no libzstd.so.1, out of memory).
 */
int gmt_trace_input_open(struct gmt_trace_input *in,
			 const char *path,
			 bool pipe_ok,
			 char why[GMT_TRACE_INPUT_WHY]);

/** The format's name for messages: "plain", "zstd", "gzip". */
const char *gmt_trace_input_kind_name(enum gmt_trace_input_kind kind);

/** Bytes of the file itself consumed so far (compressed bytes for a compressed one), -1 unknown. */
long long gmt_trace_input_offset(const struct gmt_trace_input *in);

/** The file's size in bytes, -1 when it has none (standard input from a pipe). */
long long gmt_trace_input_size(const struct gmt_trace_input *in);

/** The descriptor of the file itself when it is a regular file (fstat, fstatvfs), else -1. */
int gmt_trace_input_fd(const struct gmt_trace_input *in);

/** How the decompressed stream ended early, and why in words (NULL when it did not). */
enum gmt_trace_input_end gmt_trace_input_end(const struct gmt_trace_input *in, const char **why);

/** One line of the trace, as gmt_trace_input_line() read it. */
struct gmt_trace_line {
	const char
	    *text; /**< the line without its '\n', valid until the next call; NULL: skipped */
	size_t len;
	bool torn;		    /**< the stream ended before its '\n' (a cut last line) */
	unsigned long long skipped; /**< not 0: longer than the limit, skipped; its length */
};

/**
 * The next line of @p in into @p line, at most @p max bytes (GMT_TRACE_MAX_LINE): a longer one
 * is read to its end and dropped (@p line->skipped its length), in memory bounded by @p max.
 * Returns 1 (a line), 0 at the end of the stream, -1 on a read error (errno; ferror(in->f)). A
 * '\r' before the '\n' stays in the text. Use it alone on @p in, or after getc()/ungetc().
 */
int gmt_trace_input_line(struct gmt_trace_input *in, struct gmt_trace_line *line, size_t max);

/**
 * Read @p in ahead on a thread of its own from now on: the decompression (and the file's
 * reads) run there while the caller takes lines, a few LINE_READ blocks ahead. The lines are
 * the same, in the same order, ending the same way (gmt_trace_input_offset() counts the blocks
 * handed out). The lines handed out so far must no longer be in use. Regular files only (a pipe's
 * read may block for good, and stopping must not wait for it). 0, or -1 (not a regular file, or
 * no thread could be had: the caller reads on as before). A zstd trace's frames are decoded on
 * @p decoders threads more (util/zread.h: gmt_zread_parallel(); 0: on the read-ahead thread).
 */
int gmt_trace_input_readahead(struct gmt_trace_input *in, unsigned decoders);

/**
 * Stop reading ahead (joins the thread; what it had read and not handed out is dropped): after
 * it, ferror(in->f), gmt_trace_input_end() and the file's state are the thread's last. Safe
 * when no read-ahead runs; gmt_trace_input_close() does it too.
 */
void gmt_trace_input_readahead_stop(struct gmt_trace_input *in);

/** Close the stream and the file; @p in is zeroed. */
void gmt_trace_input_close(struct gmt_trace_input *in);

#endif
