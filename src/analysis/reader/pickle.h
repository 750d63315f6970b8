/*
 * @brief Python pickles of plain data: the subset PyTorch's memory snapshots use (and other
 * data-only pickles: dicts, lists, tuples, str, bytes, int, float, bool, None), read into a tree
 * and written from one. Nothing in a pickle is ever run: an opcode that would import or call code
 * (GLOBAL, REDUCE, BUILD, NEWOBJ, persistent ids, extensions) is an error naming it and its offset,
 * so a hostile or foreign pickle is refused, never executed.
 *
 * Reading: gmt_pk_parse() over the whole file in memory; every length is checked against the
 * buffer, the stack and memo are bounded by the input's size, a value referenced through the memo
 * is shared (the tree is a DAG: freed at once with its document). The parse is linear in the
 * input and its memory too (at most about 50 bytes per input byte: a node per opcode, the stack,
 * the memo; None, booleans and the integers 0 to 255 one shared node each). A DAG is not: a few
 * bytes of memo references can reach the same list a million times over, so a reader that walks the
 * tree bounds its own work (gmt_pk_mark(): a node it already reached, or what it made of it).
 * Writing: gmt_pkw_*() append opcodes to a buffer, only those PyTorch's memory_viz (MemoryViz.js)
 * reads: PROTO, EMPTY_DICT/LIST/TUPLE, MARK, SETITEMS, APPENDS, TUPLE2, BINUNICODE,
 * SHORT_BINUNICODE, BININT, BININT1, BININT2, LONG1, BINFLOAT, NEWTRUE/NEWFALSE, NONE, STOP.
 */
#ifndef GMT_READER_PICKLE_H
#define GMT_READER_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gmt_pk_type {
	GMT_PK_NONE,
	GMT_PK_BOOL,
	GMT_PK_INT,    /* fits in int64 (snapshots: addresses, sizes, times) */
	GMT_PK_BIGINT, /* an integer that does not: kept as its sign only */
	GMT_PK_FLOAT,
	GMT_PK_STR, /* UTF-8 as the pickle has it, NUL-terminated copy, len bytes */
	GMT_PK_BYTES,
	GMT_PK_LIST,
	GMT_PK_TUPLE,
	GMT_PK_DICT, /* items[2k] the keys, items[2k+1] the values, in insertion order */
};

struct gmt_pk {
	enum gmt_pk_type type;
	uint32_t mark; /* the reader's (gmt_pk_set_mark), 0 as parsed; containers only */
	/* only the member of the type is there: a scalar's node ends after its value */
	union {
		bool b;
		int64_t i;
		double f;
		struct {
			const char *s;
			size_t len;
		} str;
		struct {
			struct gmt_pk **items;
			size_t n, cap; /* cap: the parser's own */
		} seq;		       /* LIST, TUPLE, DICT */
	} u;
};

struct gmt_pk_doc;

/**
 * Parse @p len bytes. 0 and *@p out on success; else -EINVAL (not a pickle we read: @p err, of
 * @p errlen bytes, says why and at which byte offset) or -ENOMEM.
 */
int gmt_pk_parse(const uint8_t *buf, size_t len, struct gmt_pk_doc **out, char *err, size_t errlen);
const struct gmt_pk *gmt_pk_root(const struct gmt_pk_doc *doc);
void gmt_pk_free(struct gmt_pk_doc *doc);

/** dict[key] for a str key, or NULL. */
const struct gmt_pk *gmt_pk_get(const struct gmt_pk *dict, const char *key);
/** The integer value of @p v (INT or BOOL), or @p def. */
int64_t gmt_pk_int(const struct gmt_pk *v, int64_t def);
/** The str value of @p v, or NULL. */
const char *gmt_pk_str(const struct gmt_pk *v);
/** Items of a LIST or TUPLE (n in *n), or NULL with *n 0. */
struct gmt_pk *const *gmt_pk_items(const struct gmt_pk *v, size_t *n);
/** Items of a DICT: the number of keys (0 for anything else). */
size_t gmt_pk_dict_len(const struct gmt_pk *v);

/**
 * A reader's mark on container @p v of @p doc (LIST, TUPLE or DICT; 0 until set): that it was
 * reached before through another memo reference, or what the reader made of it, so that a
 * shared node is expanded once however often it is referenced. Setting it on a scalar is a
 * no-op (scalars may be one node shared by the whole document).
 */
uint32_t gmt_pk_mark(const struct gmt_pk *v);
void gmt_pk_set_mark(struct gmt_pk_doc *doc, const struct gmt_pk *v, uint32_t mark);

/* --- writing ---------------------------------------------------------------------------------- */

struct gmt_pkw {
	uint8_t *buf;
	size_t len, cap;
	bool failed; /* out of memory: the buffer is incomplete */
};

void gmt_pkw_begin(struct gmt_pkw *w); /* PROTO 4 */
void gmt_pkw_end(struct gmt_pkw *w);   /* STOP */
void gmt_pkw_free(struct gmt_pkw *w);
void gmt_pkw_none(struct gmt_pkw *w);
void gmt_pkw_bool(struct gmt_pkw *w, bool v);
void gmt_pkw_int(struct gmt_pkw *w, int64_t v);
void gmt_pkw_uint(struct gmt_pkw *w, uint64_t v);
void gmt_pkw_float(struct gmt_pkw *w, double v);
void gmt_pkw_str(struct gmt_pkw *w, const char *s); /* NULL: None */
void gmt_pkw_strn(struct gmt_pkw *w, const char *s, size_t n);
/* containers: dict_begin, then (key, value) pairs, dict_end; list_begin, items, list_end;
 * a pair (tuple of two) is written as its two items then gmt_pkw_tuple2 */
void gmt_pkw_dict_begin(struct gmt_pkw *w);
void gmt_pkw_dict_end(struct gmt_pkw *w);
void gmt_pkw_list_begin(struct gmt_pkw *w);
void gmt_pkw_list_end(struct gmt_pkw *w);
void gmt_pkw_tuple2(struct gmt_pkw *w);

#endif
