/*
 * @brief Data-only pickles (see pickle.h).
 */
#include "analysis/reader/pickle.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memo keys beyond this are refused (LONG_BINPUT takes any 32 bits) */
#define MEMO_MAX (1u << 24)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

struct gmt_pk_doc {
	struct gmt_pk *root;
	struct chunk *chunks;
	struct gmt_pk **arrays; /* the containers whose items array is on the heap, for freeing */
	size_t narrays, arrays_cap;
	/* one node each, shared by every occurrence: None, False, True, the integers 0 to 255 */
	struct gmt_pk *none, *boolean[2], *small[256];
};

/* An items array of the heap (grown past its first size), not of the arena: cap's top bit. */
#define HEAP ((size_t)1 << (sizeof(size_t) * 8 - 1))

static void *
arena(struct gmt_pk_doc *d, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (!d->chunks || d->chunks->cap - d->chunks->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		/* the slack: a short node at the very end of a chunk read as a whole struct stays
		 * inside it */
		struct chunk *c = malloc(sizeof(*c) + cap + sizeof(struct gmt_pk));
		if (!c)
			return NULL;
		c->next = d->chunks;
		c->used = 0;
		c->cap = cap;
		d->chunks = c;
	}
	void *p = d->chunks->data + d->chunks->used;
	d->chunks->used += n;
	return p;
}

/* A node of type @p t, only as long as its type's member of the union (a scalar: 16 bytes). */
static struct gmt_pk *
node(struct gmt_pk_doc *d, enum gmt_pk_type t)
{
	size_t size = sizeof(struct gmt_pk);

	if (t == GMT_PK_STR || t == GMT_PK_BYTES)
		size = offsetof(struct gmt_pk, u) + sizeof(((struct gmt_pk *)0)->u.str);
	else if (t != GMT_PK_LIST && t != GMT_PK_TUPLE && t != GMT_PK_DICT)
		size = offsetof(struct gmt_pk, u) + sizeof(int64_t);
	struct gmt_pk *v = arena(d, size);
	if (v) {
		memset(v, 0, size);
		v->type = t;
	}
	return v;
}

/* Room for @p extra more items in container @p c: the first array exactly as long as asked,
 * from the arena (most containers are filled by one SETITEMS or APPENDS); one that grows past
 * it moves to the heap and doubles. */
static bool
seq_reserve(struct gmt_pk_doc *d, struct gmt_pk *c, size_t extra)
{
	size_t cap = c->u.seq.cap & ~HEAP, need = c->u.seq.n + extra;

	if (need <= cap)
		return true;
	if (need < extra || need > SIZE_MAX / 2 / sizeof(struct gmt_pk *))
		return false;
	if (cap == 0) {
		size_t n = extra > 1 ? extra : 4;
		if (!(c->u.seq.items = arena(d, n * sizeof(struct gmt_pk *))))
			return false;
		c->u.seq.cap = n;
		return true;
	}
	size_t nc = cap * 2 > need ? cap * 2 : need;
	struct gmt_pk **items;
	if (c->u.seq.cap & HEAP) {
		if (!(items = realloc(c->u.seq.items, nc * sizeof(*items))))
			return false;
	} else {
		if (d->narrays == d->arrays_cap) {
			size_t ac = d->arrays_cap ? d->arrays_cap * 2 : 64;
			struct gmt_pk **a = realloc(d->arrays, ac * sizeof(*a));
			if (!a)
				return false;
			d->arrays = a;
			d->arrays_cap = ac;
		}
		if (!(items = malloc(nc * sizeof(*items))))
			return false;
		memcpy(items, c->u.seq.items, c->u.seq.n * sizeof(*items));
		d->arrays[d->narrays++] = c; /* the owner: its items freed */
	}
	c->u.seq.items = items;
	c->u.seq.cap = nc | HEAP;
	return true;
}

static bool
seq_push(struct gmt_pk_doc *d, struct gmt_pk *c, struct gmt_pk *item)
{
	if (!seq_reserve(d, c, 1))
		return false;
	c->u.seq.items[c->u.seq.n++] = item;
	return true;
}

/* Append @p n items at once (exact room). */
static bool
seq_append(struct gmt_pk_doc *d, struct gmt_pk *c, struct gmt_pk *const *items, size_t n)
{
	if (n == 0)
		return true;
	if (!seq_reserve(d, c, n))
		return false;
	memcpy(c->u.seq.items + c->u.seq.n, items, n * sizeof(*items));
	c->u.seq.n += n;
	return true;
}

void
gmt_pk_free(struct gmt_pk_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->narrays; i++)
		free(d->arrays[i]->u.seq.items);
	free(d->arrays);
	for (struct chunk *c = d->chunks, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(d);
}

const struct gmt_pk *
gmt_pk_root(const struct gmt_pk_doc *d)
{
	return d ? d->root : NULL;
}

// --- parsing ------------------------------------------------------------------------------------

struct parser {
	const uint8_t *p, *end, *start;
	struct gmt_pk_doc *d;
	struct gmt_pk **stack;
	size_t sp, scap;
	size_t *marks; /* stack positions of MARKs */
	size_t nmarks, mcap;
	struct gmt_pk **memo;
	size_t memo_n;
	size_t memo_keys; /* distinct keys stored: MEMOIZE's key */
	char *err;
	size_t errlen;
	int rc;
};

static int
fail(struct parser *ps, size_t at, const char *fmt, ...)
{
	if (ps->err && ps->errlen) {
		va_list ap;
		int n = snprintf(ps->err, ps->errlen, "byte %zu: ", at);
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < ps->errlen)
			vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	ps->rc = -EINVAL;
	return -EINVAL;
}

static int
oom(struct parser *ps)
{
	if (ps->err && ps->errlen)
		snprintf(ps->err, ps->errlen, "out of memory");
	ps->rc = -ENOMEM;
	return -ENOMEM;
}

static bool
need(struct parser *ps, size_t n)
{
	return (size_t)(ps->end - ps->p) >= n;
}

static uint64_t
le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int
push(struct parser *ps, struct gmt_pk *v)
{
	if (!v)
		return oom(ps);
	if (ps->sp == ps->scap) {
		size_t cap = ps->scap ? ps->scap * 2 : 256;
		struct gmt_pk **s = realloc(ps->stack, cap * sizeof(*s));
		if (!s)
			return oom(ps);
		ps->stack = s;
		ps->scap = cap;
	}
	ps->stack[ps->sp++] = v;
	return 0;
}

static struct gmt_pk *
pop(struct parser *ps)
{
	size_t floor = ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
	return ps->sp > floor ? ps->stack[--ps->sp] : NULL;
}

static struct gmt_pk *
top(struct parser *ps)
{
	size_t floor = ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
	return ps->sp > floor ? ps->stack[ps->sp - 1] : NULL;
}

static int
mark(struct parser *ps)
{
	if (ps->nmarks == ps->mcap) {
		size_t cap = ps->mcap ? ps->mcap * 2 : 64;
		size_t *m = realloc(ps->marks, cap * sizeof(*m));
		if (!m)
			return oom(ps);
		ps->marks = m;
		ps->mcap = cap;
	}
	ps->marks[ps->nmarks++] = ps->sp;
	return 0;
}

static int
memo_put(struct parser *ps, size_t at, uint64_t key)
{
	struct gmt_pk *v = ps->sp ? ps->stack[ps->sp - 1] : NULL;
	if (!v)
		return fail(ps, at, "a memo store with nothing on the stack");
	if (key >= MEMO_MAX || key > (uint64_t)(ps->end - ps->start) + 1)
		return fail(ps, at, "memo key %llu out of range", (unsigned long long)key);
	if (key >= ps->memo_n) {
		size_t n = (size_t)key + 1 > ps->memo_n * 2 ? (size_t)key + 1 : ps->memo_n * 2;
		struct gmt_pk **m = realloc(ps->memo, n * sizeof(*m));
		if (!m)
			return oom(ps);
		memset(m + ps->memo_n, 0, (n - ps->memo_n) * sizeof(*m));
		ps->memo = m;
		ps->memo_n = n;
	}
	ps->memo_keys += ps->memo[key] == NULL;
	ps->memo[key] = v;
	return 0;
}

static int
memo_get(struct parser *ps, size_t at, uint64_t key)
{
	if (key >= ps->memo_n || !ps->memo[key])
		return fail(ps, at, "memo key %llu was never stored", (unsigned long long)key);
	return push(ps, ps->memo[key]);
}

static int
str_value(struct parser *ps, size_t at, size_t n, enum gmt_pk_type t)
{
	if (!need(ps, n))
		return fail(ps, at, "a string of %zu bytes runs past the end", n);
	struct gmt_pk *v = node(ps->d, t);
	char *s = v ? arena(ps->d, n + 1) : NULL;
	if (!s)
		return oom(ps);
	memcpy(s, ps->p, n);
	s[n] = '\0';
	v->u.str.s = s;
	v->u.str.len = n;
	ps->p += n;
	return push(ps, v);
}

/* A scalar node that may be shared: *@p slot made once. */
static struct gmt_pk *
shared(struct gmt_pk_doc *d, struct gmt_pk **slot, enum gmt_pk_type t)
{
	if (!*slot)
		*slot = node(d, t);
	return *slot;
}

static int
int_value(struct parser *ps, int64_t i)
{
	struct gmt_pk *v;

	if (i >= 0 && i < 256) {
		if ((v = shared(ps->d, &ps->d->small[i], GMT_PK_INT)))
			v->u.i = i;
		return push(ps, v);
	}
	if ((v = node(ps->d, GMT_PK_INT)))
		v->u.i = i;
	return push(ps, v);
}

static int
bool_value(struct parser *ps, bool b)
{
	struct gmt_pk *v = shared(ps->d, &ps->d->boolean[b], GMT_PK_BOOL);

	if (v)
		v->u.b = b;
	return push(ps, v);
}

/* LONG1/LONG4: little-endian two's complement of n bytes */
static int
long_value(struct parser *ps, size_t at, size_t n)
{
	if (!need(ps, n))
		return fail(ps, at, "an integer of %zu bytes runs past the end", n);
	const uint8_t *b = ps->p;
	ps->p += n;
	if (n == 0)
		return int_value(ps, 0);
	bool neg = b[n - 1] & 0x80;
	if (n > 8) {
		/* fits if the extra bytes only extend the sign */
		bool fits = true;
		for (size_t i = 8; i < n; i++)
			fits &= b[i] == (neg ? 0xff : 0x00);
		fits &= ((b[7] & 0x80) != 0) == neg;
		if (!fits) {
			struct gmt_pk *v = node(ps->d, GMT_PK_BIGINT);
			if (v)
				v->u.i = neg ? -1 : 1;
			return push(ps, v);
		}
		n = 8;
	}
	uint64_t u = le(b, n);
	if (neg && n < 8)
		u |= ~(uint64_t)0 << (8 * n);
	return int_value(ps, (int64_t)u);
}

/* Pop everything above the innermost MARK (and the mark) into @p c. */
static int
collect(struct parser *ps, size_t at, struct gmt_pk *c, bool pairs)
{
	if (!ps->nmarks)
		return fail(ps, at, "an opcode needs a MARK and there is none");
	size_t from = ps->marks[--ps->nmarks];
	if (pairs && (ps->sp - from) % 2)
		return fail(ps, at, "a dict update with an odd number of items");
	/* (nothing above the mark: the stack may still be NULL, and NULL + 0 is undefined) */
	if (ps->sp > from && !seq_append(ps->d, c, ps->stack + from, ps->sp - from))
		return oom(ps);
	ps->sp = from;
	return 0;
}

static const char *
code_opcode(uint8_t op)
{
	switch (op) {
	case 'c': return "GLOBAL";
	case 0x93: return "STACK_GLOBAL";
	case 'R': return "REDUCE";
	case 'b': return "BUILD";
	case 'i': return "INST";
	case 'o': return "OBJ";
	case 0x81: return "NEWOBJ";
	case 0x92: return "NEWOBJ_EX";
	case 'P': return "PERSID";
	case 'Q': return "BINPERSID";
	case 0x82:
	case 0x83:
	case 0x84: return "EXT";
	case 0x97: return "NEXT_BUFFER";
	case 0x98: return "READONLY_BUFFER";
	default: return NULL;
	}
}

static int
step(struct parser *ps)
{
	size_t at = (size_t)(ps->p - ps->start);
	uint8_t op = *ps->p++;
	struct gmt_pk *v, *k, *c;

	switch (op) {
	case 0x80: /* PROTO */
		if (!need(ps, 1))
			return fail(ps, at, "PROTO without its version");
		if (*ps->p > 5)
			return fail(ps, at, "pickle protocol %u (this reader knows 0 to 5)",
				    *ps->p);
		ps->p++;
		return 0;
	case 0x95: /* FRAME: a length hint */
		if (!need(ps, 8))
			return fail(ps, at, "FRAME without its length");
		ps->p += 8;
		return 0;
	case '(': return mark(ps);
	case '0': /* POP */
		if (!pop(ps))
			return fail(ps, at, "POP on an empty stack");
		return 0;
	case '1': /* POP_MARK */
		if (!ps->nmarks)
			return fail(ps, at, "POP_MARK without a MARK");
		ps->sp = ps->marks[--ps->nmarks];
		return 0;
	case '2': /* DUP */
		if (!(v = top(ps)))
			return fail(ps, at, "DUP on an empty stack");
		return push(ps, v);
	case 'N': return push(ps, shared(ps->d, &ps->d->none, GMT_PK_NONE));
	case 0x88:
	case 0x89: /* NEWTRUE, NEWFALSE */ return bool_value(ps, op == 0x88);
	case 'J':
		if (!need(ps, 4))
			return fail(ps, at, "BININT runs past the end");
		{
			int32_t i = (int32_t)(uint32_t)le(ps->p, 4);
			ps->p += 4;
			return int_value(ps, i);
		}
	case 'K':
		if (!need(ps, 1))
			return fail(ps, at, "BININT1 runs past the end");
		return int_value(ps, *ps->p++);
	case 'M':
		if (!need(ps, 2))
			return fail(ps, at, "BININT2 runs past the end");
		ps->p += 2;
		return int_value(ps, (int64_t)le(ps->p - 2, 2));
	case 0x8a: /* LONG1 */
		if (!need(ps, 1))
			return fail(ps, at, "LONG1 runs past the end");
		return long_value(ps, at, *ps->p++);
	case 0x8b: /* LONG4 */
		if (!need(ps, 4))
			return fail(ps, at, "LONG4 runs past the end");
		ps->p += 4;
		return long_value(ps, at, (size_t)le(ps->p - 4, 4));
	case 'I':
	case 'L': { /* INT, LONG: decimal text to the newline (protocol 0) */
		const uint8_t *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
		char num[32];
		size_t n = nl ? (size_t)(nl - ps->p) : 0;
		if (!nl || n == 0 || n >= sizeof(num))
			return fail(ps, at, "a text integer without its newline or too long");
		memcpy(num, ps->p, n);
		num[n] = '\0';
		ps->p = nl + 1;
		if (n && num[n - 1] == 'L')
			num[--n] = '\0';
		if (op == 'I' && (!strcmp(num, "00") || !strcmp(num, "01")))
			return bool_value(ps, num[1] == '1');
		char *endp;
		errno = 0;
		long long x = strtoll(num, &endp, 10);
		if (*endp || errno)
			return fail(ps, at, "not a text integer: \"%.20s\"", num);
		return int_value(ps, x);
	}
	case 'G': /* BINFLOAT: big-endian IEEE 754 double */
		if (!need(ps, 8))
			return fail(ps, at, "BINFLOAT runs past the end");
		{
			uint64_t u = 0;
			for (int i = 0; i < 8; i++)
				u = u << 8 | ps->p[i];
			ps->p += 8;
			double f;
			memcpy(&f, &u, sizeof(f));
			if ((v = node(ps->d, GMT_PK_FLOAT)))
				v->u.f = f;
			return push(ps, v);
		}
	case 'X': /* BINUNICODE */
		if (!need(ps, 4))
			return fail(ps, at, "BINUNICODE runs past the end");
		ps->p += 4;
		return str_value(ps, at, (size_t)le(ps->p - 4, 4), GMT_PK_STR);
	case 0x8c: /* SHORT_BINUNICODE */
		if (!need(ps, 1))
			return fail(ps, at, "SHORT_BINUNICODE runs past the end");
		return str_value(ps, at, *ps->p++, GMT_PK_STR);
	case 0x8d: /* BINUNICODE8 */
		if (!need(ps, 8))
			return fail(ps, at, "BINUNICODE8 runs past the end");
		ps->p += 8;
		return str_value(ps, at, (size_t)le(ps->p - 8, 8), GMT_PK_STR);
	case 'T': /* BINSTRING (Python 2 str) */
		if (!need(ps, 4))
			return fail(ps, at, "BINSTRING runs past the end");
		ps->p += 4;
		return str_value(ps, at, (size_t)le(ps->p - 4, 4), GMT_PK_STR);
	case 'U': /* SHORT_BINSTRING */
		if (!need(ps, 1))
			return fail(ps, at, "SHORT_BINSTRING runs past the end");
		return str_value(ps, at, *ps->p++, GMT_PK_STR);
	case 'B': /* BINBYTES */
		if (!need(ps, 4))
			return fail(ps, at, "BINBYTES runs past the end");
		ps->p += 4;
		return str_value(ps, at, (size_t)le(ps->p - 4, 4), GMT_PK_BYTES);
	case 'C': /* SHORT_BINBYTES */
		if (!need(ps, 1))
			return fail(ps, at, "SHORT_BINBYTES runs past the end");
		return str_value(ps, at, *ps->p++, GMT_PK_BYTES);
	case 0x8e:
	case 0x96: /* BINBYTES8, BYTEARRAY8 */
		if (!need(ps, 8))
			return fail(ps, at, "BINBYTES8 runs past the end");
		ps->p += 8;
		return str_value(ps, at, (size_t)le(ps->p - 8, 8), GMT_PK_BYTES);
	case ']': return push(ps, node(ps->d, GMT_PK_LIST));
	case ')': return push(ps, node(ps->d, GMT_PK_TUPLE));
	case '}': return push(ps, node(ps->d, GMT_PK_DICT));
	case 0x8f: /* EMPTY_SET: read as a list */ return push(ps, node(ps->d, GMT_PK_LIST));
	case 'l':
	case 't':
	case 0x91: /* LIST, TUPLE, FROZENSET (from MARK) */
		if (!(c = node(ps->d, op == 't' ? GMT_PK_TUPLE : GMT_PK_LIST)))
			return oom(ps);
		if (collect(ps, at, c, false))
			return ps->rc;
		return push(ps, c);
	case 'd': /* DICT (from MARK) */
		if (!(c = node(ps->d, GMT_PK_DICT)))
			return oom(ps);
		if (collect(ps, at, c, true))
			return ps->rc;
		return push(ps, c);
	case 0x85:
	case 0x86:
	case 0x87: { /* TUPLE1..3 */
		size_t n = op - 0x84;
		size_t floor = ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
		if (ps->sp - floor < n)
			return fail(ps, at, "TUPLE%zu with fewer items on the stack", n);
		if (!(c = node(ps->d, GMT_PK_TUPLE)))
			return oom(ps);
		if (!seq_append(ps->d, c, ps->stack + ps->sp - n, n))
			return oom(ps);
		ps->sp -= n;
		return push(ps, c);
	}
	case 'a': /* APPEND */
		v = pop(ps);
		c = top(ps);
		if (!v || !c || c->type != GMT_PK_LIST)
			return fail(ps, at, "APPEND without a list under the item");
		return seq_push(ps->d, c, v) ? 0 : oom(ps);
	case 'e':
	case 0x90: { /* APPENDS, ADDITEMS */
		if (!ps->nmarks || ps->marks[ps->nmarks - 1] == 0)
			return fail(ps, at, "APPENDS without a list and a MARK");
		c = ps->stack[ps->marks[ps->nmarks - 1] - 1];
		if (c->type != GMT_PK_LIST)
			return fail(ps, at, "APPENDS onto something that is not a list");
		return collect(ps, at, c, false);
	}
	case 's': /* SETITEM */
		v = pop(ps);
		k = pop(ps);
		c = top(ps);
		if (!v || !k || !c || c->type != GMT_PK_DICT)
			return fail(ps, at, "SETITEM without a dict, a key and a value");
		return seq_reserve(ps->d, c, 2) && seq_push(ps->d, c, k) && seq_push(ps->d, c, v)
			   ? 0
			   : oom(ps);
	case 'u': { /* SETITEMS */
		if (!ps->nmarks || ps->marks[ps->nmarks - 1] == 0)
			return fail(ps, at, "SETITEMS without a dict and a MARK");
		c = ps->stack[ps->marks[ps->nmarks - 1] - 1];
		if (c->type != GMT_PK_DICT)
			return fail(ps, at, "SETITEMS onto something that is not a dict");
		return collect(ps, at, c, true);
	}
	case 'q': /* BINPUT */
		if (!need(ps, 1))
			return fail(ps, at, "BINPUT runs past the end");
		return memo_put(ps, at, *ps->p++);
	case 'r': /* LONG_BINPUT */
		if (!need(ps, 4))
			return fail(ps, at, "LONG_BINPUT runs past the end");
		ps->p += 4;
		return memo_put(ps, at, le(ps->p - 4, 4));
	case 0x94: /* MEMOIZE: under the memo's size, the number of keys stored so far */
		return memo_put(ps, at, ps->memo_keys);
	case 'h': /* BINGET */
		if (!need(ps, 1))
			return fail(ps, at, "BINGET runs past the end");
		return memo_get(ps, at, *ps->p++);
	case 'j': /* LONG_BINGET */
		if (!need(ps, 4))
			return fail(ps, at, "LONG_BINGET runs past the end");
		ps->p += 4;
		return memo_get(ps, at, le(ps->p - 4, 4));
	case 'p':
	case 'g': { /* PUT, GET: decimal text (protocol 0) */
		const uint8_t *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
		char num[24];
		size_t n = nl ? (size_t)(nl - ps->p) : 0;
		if (!nl || n == 0 || n >= sizeof(num))
			return fail(ps, at, "a text memo key without its newline or too long");
		memcpy(num, ps->p, n);
		num[n] = '\0';
		ps->p = nl + 1;
		char *endp;
		unsigned long long key = strtoull(num, &endp, 10);
		if (*endp)
			return fail(ps, at, "not a memo key: \"%.20s\"", num);
		return op == 'p' ? memo_put(ps, at, key) : memo_get(ps, at, key);
	}
	default: {
		const char *name = code_opcode(op);
		if (name)
			return fail(ps, at,
				    "the pickle would run code (opcode %s): it is not plain data, "
				    "and is not read",
				    name);
		return fail(ps, at, "opcode 0x%02x is not one of plain data", op);
	}
	}
}

int
gmt_pk_parse(const uint8_t *buf, size_t len, struct gmt_pk_doc **out, char *err, size_t errlen)
{
	struct parser ps = {.p = buf, .start = buf, .end = buf + len, .err = err, .errlen = errlen};

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!(ps.d = calloc(1, sizeof(*ps.d))))
		return -ENOMEM;
	if (len == 0)
		fail(&ps, 0, "empty file");
	else if (buf[0] != 0x80 && buf[0] != '(' && buf[0] != '}' && buf[0] != ']')
		fail(&ps, 0, "not a pickle (it starts with byte 0x%02x)", buf[0]);
	while (!ps.rc) {
		if (ps.p >= ps.end) {
			fail(&ps, len, "the pickle ends without its STOP opcode (cut short?)");
			break;
		}
		if (*ps.p == '.') {
			if (ps.sp != 1 || ps.nmarks)
				fail(&ps, (size_t)(ps.p - buf), "STOP with %zu values on the stack",
				     ps.sp);
			break;
		}
		step(&ps);
	}
	if (!ps.rc)
		ps.d->root = ps.stack[0];
	free(ps.stack);
	free(ps.marks);
	free(ps.memo);
	if (ps.rc) {
		gmt_pk_free(ps.d);
		return ps.rc;
	}
	*out = ps.d;
	return 0;
}

// --- lookups ------------------------------------------------------------------------------------

const struct gmt_pk *
gmt_pk_get(const struct gmt_pk *d, const char *key)
{
	if (!d || d->type != GMT_PK_DICT)
		return NULL;
	size_t klen = strlen(key);
	/* the last of equal keys wins, as in Python */
	for (size_t i = d->u.seq.n; i >= 2; i -= 2) {
		const struct gmt_pk *k = d->u.seq.items[i - 2];
		if (k->type == GMT_PK_STR && k->u.str.len == klen && !memcmp(k->u.str.s, key, klen))
			return d->u.seq.items[i - 1];
	}
	return NULL;
}

int64_t
gmt_pk_int(const struct gmt_pk *v, int64_t def)
{
	if (v && v->type == GMT_PK_INT)
		return v->u.i;
	if (v && v->type == GMT_PK_BOOL)
		return v->u.b;
	return def;
}

const char *
gmt_pk_str(const struct gmt_pk *v)
{
	return v && v->type == GMT_PK_STR ? v->u.str.s : NULL;
}

size_t
gmt_pk_dict_len(const struct gmt_pk *v)
{
	return v && v->type == GMT_PK_DICT ? v->u.seq.n / 2 : 0;
}

static bool
container(const struct gmt_pk *v)
{
	return v && (v->type == GMT_PK_LIST || v->type == GMT_PK_TUPLE || v->type == GMT_PK_DICT);
}

uint32_t
gmt_pk_mark(const struct gmt_pk *v)
{
	return container(v) ? v->mark : 0;
}

void
gmt_pk_set_mark(struct gmt_pk_doc *doc, const struct gmt_pk *v, uint32_t mark)
{
	/* the document's own node: writable through its owner */
	if (doc && container(v))
		((struct gmt_pk *)v)->mark = mark;
}

struct gmt_pk *const *
gmt_pk_items(const struct gmt_pk *v, size_t *n)
{
	if (!v || (v->type != GMT_PK_LIST && v->type != GMT_PK_TUPLE)) {
		*n = 0;
		return NULL;
	}
	*n = v->u.seq.n;
	return v->u.seq.items;
}

// --- writing ------------------------------------------------------------------------------------

static void
put(struct gmt_pkw *w, const void *p, size_t n)
{
	if (w->failed)
		return;
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap - w->len < n)
			cap *= 2;
		uint8_t *b = realloc(w->buf, cap);
		if (!b) {
			w->failed = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void
put1(struct gmt_pkw *w, uint8_t b)
{
	put(w, &b, 1);
}

static void
put_le(struct gmt_pkw *w, uint64_t v, size_t n)
{
	uint8_t b[8];
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, n);
}

void
gmt_pkw_begin(struct gmt_pkw *w)
{
	*w = (struct gmt_pkw){0};
	put1(w, 0x80);
	put1(w, 4);
}

void
gmt_pkw_end(struct gmt_pkw *w)
{
	put1(w, '.');
}

void
gmt_pkw_free(struct gmt_pkw *w)
{
	free(w->buf);
	*w = (struct gmt_pkw){0};
}

void
gmt_pkw_none(struct gmt_pkw *w)
{
	put1(w, 'N');
}

void
gmt_pkw_bool(struct gmt_pkw *w, bool v)
{
	put1(w, v ? 0x88 : 0x89);
}

void
gmt_pkw_int(struct gmt_pkw *w, int64_t v)
{
	if (v >= 0 && v < 256) {
		put1(w, 'K');
		put1(w, (uint8_t)v);
	} else if (v >= 0 && v < 65536) {
		put1(w, 'M');
		put_le(w, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		put1(w, 'J');
		put_le(w, (uint64_t)(uint32_t)(int32_t)v, 4);
	} else {
		/* LONG1: the fewest bytes of two's complement that keep the sign */
		uint8_t n = 8;
		while (n > 1) {
			int64_t shifted = v >> (8 * (n - 1) - 1);
			if (shifted != 0 && shifted != -1)
				break;
			n--;
		}
		put1(w, 0x8a);
		put1(w, n);
		put_le(w, (uint64_t)v, n);
	}
}

void
gmt_pkw_uint(struct gmt_pkw *w, uint64_t v)
{
	if (v <= INT64_MAX) {
		gmt_pkw_int(w, (int64_t)v);
		return;
	}
	put1(w, 0x8a); /* 9 bytes: the value and a zero sign byte */
	put1(w, 9);
	put_le(w, v, 8);
	put1(w, 0);
}

void
gmt_pkw_float(struct gmt_pkw *w, double f)
{
	uint64_t u;
	uint8_t b[8];
	memcpy(&u, &f, sizeof(u));
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(u >> (56 - 8 * i));
	put1(w, 'G');
	put(w, b, 8);
}

void
gmt_pkw_strn(struct gmt_pkw *w, const char *s, size_t n)
{
	if (n < 256) {
		put1(w, 0x8c);
		put1(w, (uint8_t)n);
	} else {
		put1(w, 'X');
		put_le(w, n, 4);
	}
	put(w, s, n);
}

void
gmt_pkw_str(struct gmt_pkw *w, const char *s)
{
	if (!s)
		gmt_pkw_none(w);
	else
		gmt_pkw_strn(w, s, strlen(s));
}

void
gmt_pkw_dict_begin(struct gmt_pkw *w)
{
	put1(w, '}');
	put1(w, '(');
}

void
gmt_pkw_dict_end(struct gmt_pkw *w)
{
	put1(w, 'u');
}

void
gmt_pkw_list_begin(struct gmt_pkw *w)
{
	put1(w, ']');
	put1(w, '(');
}

void
gmt_pkw_list_end(struct gmt_pkw *w)
{
	put1(w, 'e');
}

void
gmt_pkw_tuple2(struct gmt_pkw *w)
{
	put1(w, 0x86);
}
