/*
 * @brief GIL-free walk of the calling thread's CPython frames and the code-object registry
 * (see pystack.h; design/capture.md §5).
 *
 * Layouts. 3.10-3.12: field offsets read from the CPython headers of 3.10.13, 3.11.7 and 3.12.1
 * (cpython/pystate.h, cpython/frameobject.h, internal/pycore_frame.h, cpython/code.h,
 * cpython/unicodeobject.h); struct layouts are stable within a minor version. 3.13: the
 * _Py_DebugOffsets table CPython keeps at the start of _PyRuntime for out-of-process debuggers
 * (cookie "xdebugpy"). Each layout is checked against the live interpreter before use: PyCode_Type
 * must look like a type object named "code" whose ob_type is PyType_Type (a Py_TRACE_REFS or
 * free-threaded object header fails this).
 *
 *   innermost frame   3.10 tstate->frame         3.11/3.12 tstate->cframe->current_frame
 *                     3.13 tstate->current_frame
 *   outer link        f_back (3.10), previous (3.11+)
 *   instruction       3.10 f_lasti (code units); 3.11/3.12 prev_instr, 3.13 instr_ptr (pointers
 *                     into co_code_adaptive): the offset is what PyFrame_GetLineNumber() uses
 *   skipped           3.12+: owner == FRAME_OWNED_BY_CSTACK (the eval loop's entry shim);
 *                     3.13: f_executable not a code object; 3.11+: incomplete frames
 *                     (instruction before _co_firsttraceable, not owned by a generator), which
 *                     f_back and tracebacks skip too (3.13's __init__ cleanup trampoline)
 *   entry             3.10: every frame; 3.11: is_entry; 3.12+: the next-outer frame is a
 *                     C-stack shim (or there is none)
 *
 * The thread state comes from PyGILState_GetThisThreadState(): a pthread_getspecific() of the
 * thread's own state, valid with or without the GIL. (PyThreadState_GetUnchecked() and
 * _PyThreadState_UncheckedGet() return the *attached* state: NULL, or another thread's before
 * 3.12, while the GIL is released, which is when CUDA calls run.)
 *
 * Registry. A code object is known by a 64-bit tag: a hash of its address, co_firstlineno and
 * the contents of co_filename, co_name and co_linetable (strings up to 1 KiB, the line table's
 * length, first 32 and last 8 bytes). Contents, not the addresses of those objects: when a module
 * is exec'd again, Python's allocator hands the new code object, its name, file and line table
 * the very addresses of the dead ones, with different text (seen in tests/python). Two code
 * objects with equal tags are one; a false match needs a 64-bit collision. The open-addressing
 * table maps tags to ids; the first thread to claim an empty slot (CAS on the tag) copies the
 * facts into the arena, then publishes the record's offset in the by-id index and the id in the
 * slot, both with release stores. Readers acquire. Nothing is ever removed, so no reader can see
 * a record change. Hashing is most of the cost of a walk (tests/python: about 20 ns a frame).
 */
#define _GNU_SOURCE
#include "capture/pystack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "util/hash.h"
#include "util/log.h"

// --- layouts ---------------------------------------------------------------------------------

/* Frame owner values (internal/pycore_frame.h, 3.11+). */
#define OWNED_BY_GENERATOR 1
#define OWNED_BY_CSTACK 3

/* Byte offsets into the interpreter's objects; -1 = the field does not exist in this version. */
struct pylayout {
	char version[8];
	int minor;
	/* thread state -> innermost frame: at ts_frame, or through the _PyCFrame at ts_cframe */
	int ts_cframe, ts_frame;
	int ts_interp; /* -> its PyInterpreterState (read on 3.12+ only: the code watcher) */
	/* _PyInterpreterFrame (PyFrameObject on 3.10) */
	int fr_code, fr_back, fr_instr, fr_owner, fr_is_entry;
	bool fr_lasti; /* 3.10: fr_instr is an int index in code units, else a code-unit pointer */
	/* PyCodeObject; co_code: the co_code bytes object (3.10) or co_code_adaptive (3.11+) */
	int co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code;
	int co_firsttraceable;
	/* PyASCIIObject / PyCompactUnicodeObject */
	int u_length, u_state, u_ascii_data, u_utf8_len, u_utf8, u_data;
	bool u_ready_bit; /* 3.10/3.11: state.ready must be set */
	/* PyBytesObject, PyObject */
	int b_size, b_data, ob_type;
};

/* One line per struct, in the order of struct pylayout: a table reads better than a list. */
// clang-format off
static const struct pylayout layout_310 = {
	.version = "3.10", .minor = 10,
	.ts_cframe = -1, .ts_frame = 24, .ts_interp = 16,
	.fr_code = 32, .fr_back = 24, .fr_instr = 96, .fr_owner = -1, .fr_is_entry = -1,
	.fr_lasti = true,
	.co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_qualname = -1,
	.co_linetable = 120, .co_code = 48, .co_firsttraceable = -1,
	.u_length = 16, .u_state = 32, .u_ascii_data = 48, .u_utf8_len = 48, .u_utf8 = 56,
	.u_data = 72, .u_ready_bit = true,
	.b_size = 16, .b_data = 32, .ob_type = 8,
};

static const struct pylayout layout_311 = {
	.version = "3.11", .minor = 11,
	.ts_cframe = 56, .ts_frame = 8, .ts_interp = 16,
	.fr_code = 32, .fr_back = 48, .fr_instr = 56, .fr_owner = 69, .fr_is_entry = 68,
	.co_firstlineno = 72, .co_filename = 112, .co_name = 120, .co_qualname = 128,
	.co_linetable = 136, .co_code = 184, .co_firsttraceable = 168,
	.u_length = 16, .u_state = 32, .u_ascii_data = 48, .u_utf8_len = 48, .u_utf8 = 56,
	.u_data = 72, .u_ready_bit = true,
	.b_size = 16, .b_data = 32, .ob_type = 8,
};

static const struct pylayout layout_312 = {
	.version = "3.12", .minor = 12,
	.ts_cframe = 56, .ts_frame = 0, .ts_interp = 16,
	.fr_code = 0, .fr_back = 8, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = -1,
	.co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
	.co_linetable = 136, .co_code = 192, .co_firsttraceable = 176,
	.u_length = 16, .u_state = 32, .u_ascii_data = 40, .u_utf8_len = 40, .u_utf8 = 48,
	.u_data = 56,
	.b_size = 16, .b_data = 32, .ob_type = 8,
};
// clang-format on

/*
 * The head of _Py_DebugOffsets as 3.13 lays it out (internal/pycore_runtime.h): every field is a
 * uint64_t; groups we do not read are kept as arrays of the right length.
 */
struct debug_offsets_313 {
	char cookie[8];
	uint64_t version, free_threaded;
	uint64_t runtime_state[3];
	uint64_t interpreter_state[13];
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		    datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
		    localsplusnames, localspluskinds, co_code_adaptive;
	} code;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3];
	uint64_t float_object[2], long_object[3];
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode;
};
_Static_assert(offsetof(struct debug_offsets_313, thread_state.current_frame) == 184, "layout");
_Static_assert(offsetof(struct debug_offsets_313, unicode.asciiobject_size) == 560, "layout");

// --- state -----------------------------------------------------------------------------------

enum py_state {
	PY_UNKNOWN = 0, /* not looked yet (or gmt_py_rescan()) */
	PY_BUSY,	/* one thread is detecting */
	PY_READY,
	PY_ABSENT, /* not a Python process (as far as dlsym can tell) */
	PY_REFUSED,
};

static _Atomic int py_state;

/* Written once by the detecting thread before py_state becomes PY_READY (release). */
static struct pylayout L;
static struct {
	void *(*this_thread_state)(void);
	int (*is_initialized)(void);
	uintptr_t code_type, unicode_type, bytes_type;
	uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code; 0, 0: unknown */
	void *handle;		    /* where the interpreter's symbols are */
} rt;

// --- registry storage --------------------------------------------------------------------------

#define SLOTS (1u << 16)      /* hash table slots (16 bytes each) */
#define MAX_CODES (SLOTS / 2) /* ids 1 .. MAX_CODES-1; the table stays at most half full */
#define MAX_PROBES 256
#define ARENA_BYTES (8u << 20) /* records: identity, strings, line table */
#define DEAD UINT32_MAX	       /* an id / slot whose registration was abandoned */

#define FILE_CAP 1024
#define NAME_CAP 256
#define QUAL_CAP 512
#define LINETABLE_CAP (64u << 10)
/* Content hashed per sight: strings up to STR_HASH_CAP bytes, line tables up to
 * LT_HASH_CAP, each with its length and last 8 bytes (a module's table runs to kilobytes). */
#define STR_HASH_CAP 1024
#define LT_HASH_CAP 32

struct slot {
	_Atomic uint64_t tag; /* the code object's identity (code_tag()), never 0; 0 = empty */
	_Atomic uint32_t id;  /* 0 = being registered, DEAD = abandoned */
};

/* The objects a code object points to, read once per frame. */
struct pyobjs {
	uintptr_t code, name, file, linetable;
};

struct pyrec {
	int32_t firstlineno;
	uint32_t id;
	uint32_t linetable_len;
	uint16_t file_len, name_len, qual_len;
	char data[]; /* file NUL name NUL qualname NUL linetable */
};

static struct slot *table;
static _Atomic uint32_t *by_id; /* id -> arena offset + 1; 0 = not published, DEAD */
static char *arena;
static _Atomic size_t arena_used;
static _Atomic uint32_t next_id = 1;
static _Atomic bool registry_full;
static _Atomic int in_flight; /* registrations between claiming a slot and publishing */
static uint32_t cursor = 1;   /* gmt_py_next_code(): the writer's position */

/*
 * The code cache: a code object's address to its id, direct-mapped, one word per entry
 * (address << 16 | id), used only while a code watcher (PyCode_AddWatcher, 3.12+) tells us of
 * every code object's death: the entry of a dead code object is cleared before its memory can
 * be reused, so an address found here names the very object it was stored for. A walk reads
 * the code of its own thread's frames, each holding a strong reference: a code object being
 * looked up cannot die meanwhile. Without the watcher every sight hashes the contents (above).
 */
#define CC_SLOTS (1u << 12)
static _Atomic uint64_t *code_cache;
static _Atomic bool code_cache_on;
/* The interpreter the watcher was subscribed in: watchers are per interpreter, so a thread of a
 * subinterpreter (whose code objects die unannounced) walks without the cache. */
static uintptr_t watched_interp;

// --- reading the interpreter's memory ----------------------------------------------------------

/* A user-space, 8-byte aligned address: everything we dereference as an object or a frame. */
static inline uint32_t
cc_slot(uintptr_t code)
{
	return (uint32_t)(((uint64_t)code >> 4) * 0x9e3779b97f4a7c15ull >> 52) & (CC_SLOTS - 1);
}

static inline bool
plausible(uintptr_t p)
{
	return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

static inline uintptr_t
load_ptr(uintptr_t base, int off)
{
	return *(const uintptr_t *)(base + (uintptr_t)off);
}

static inline int32_t
load_i32(uintptr_t base, int off)
{
	return *(const int32_t *)(base + (uintptr_t)off);
}

static inline int64_t
load_i64(uintptr_t base, int off)
{
	return *(const int64_t *)(base + (uintptr_t)off);
}

static inline int
load_owner(uintptr_t frame)
{
	return *(const signed char *)(frame + (uintptr_t)L.fr_owner);
}

static inline bool
is_a(uintptr_t obj, uintptr_t type)
{
	return plausible(obj) && load_ptr(obj, L.ob_type) == type;
}

// --- strings -----------------------------------------------------------------------------------

/* Append code point @p cp as UTF-8 if it fits in @p room bytes; returns the bytes written. */
static size_t
put_utf8(char *dst, size_t room, uint32_t cp)
{
	if ((cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
		cp = 0xfffd; /* lone surrogates (surrogateescape'd bytes) cannot be UTF-8 */
	if (cp < 0x80 && room >= 1) {
		dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800 && room >= 2) {
		dst[0] = (char)(0xc0 | (cp >> 6));
		dst[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0x800 && cp < 0x10000 && room >= 3) {
		dst[0] = (char)(0xe0 | (cp >> 12));
		dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp >= 0x10000 && room >= 4) {
		dst[0] = (char)(0xf0 | (cp >> 18));
		dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[3] = (char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return 0;
}

/* UCS1/UCS2/UCS4 code points to UTF-8, stopping at the first one that does not fit. */
static size_t
encode_points(const void *data, int kind, size_t len, char *dst, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		uint32_t cp = kind == 1	  ? ((const uint8_t *)data)[i]
			      : kind == 2 ? ((const uint16_t *)data)[i]
					  : ((const uint32_t *)data)[i];
		size_t w = put_utf8(dst + n, cap - n, cp);
		if (w == 0)
			break;
		n += w;
	}
	return n;
}

/* Copy at most @p cap bytes of UTF-8, backing off to a character boundary when cut. */
static size_t
copy_utf8(const char *src, size_t len, char *dst, size_t cap)
{
	if (len > cap) {
		len = cap;
		while (len > 0 && ((unsigned char)src[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(dst, src, len);
	return len;
}

/*
 * A str object's text as UTF-8 into @p dst (@p cap bytes, NUL added). Only compact strings are
 * read (code objects never hold legacy ones); anything else reads as "?".
 */
static size_t
copy_str(uintptr_t obj, char *dst, size_t cap)
{
	size_t n = 0;

	cap--; /* room for the NUL */
	if (!is_a(obj, rt.unicode_type))
		goto unreadable;
	uint32_t state = (uint32_t)load_i32(obj, L.u_state);
	int kind = (state >> 2) & 7;
	bool compact = state & (1u << 5), ascii = state & (1u << 6);
	int64_t len = load_i64(obj, L.u_length);
	if (!compact || (L.u_ready_bit && !(state & (1u << 7))) || len < 0 || len > (1 << 24))
		goto unreadable;
	if (ascii) {
		n = copy_utf8((const char *)(obj + (uintptr_t)L.u_ascii_data), (size_t)len, dst,
			      cap);
	} else {
		uintptr_t utf8 = load_ptr(obj, L.u_utf8);
		int64_t utf8_len = load_i64(obj, L.u_utf8_len);
		if (utf8 >= 4096 && utf8 < (1ull << 47) && utf8_len >= 0 && utf8_len < (1 << 26))
			n = copy_utf8((const char *)utf8, (size_t)utf8_len, dst, cap);
		else if (kind == 1 || kind == 2 || kind == 4)
			n = encode_points((const void *)(obj + (uintptr_t)L.u_data), kind,
					  (size_t)len, dst, cap);
		else
			goto unreadable;
	}
	dst[n] = '\0';
	return n;
unreadable:
	dst[0] = '?';
	dst[1] = '\0';
	return 1;
}

/*
 * How much of a line table to keep: all of it up to LINETABLE_CAP, else cut where an entry
 * starts (3.11+: a byte with bit 7 set; 3.10: a whole (offset, line) pair), so a cut table maps
 * the offsets it still covers correctly and the rest to "no line".
 */
static size_t
linetable_keep(const uint8_t *t, size_t n)
{
	if (n <= LINETABLE_CAP)
		return n;
	if (L.minor == 10)
		return LINETABLE_CAP & ~(size_t)1;
	size_t k = LINETABLE_CAP;
	while (k > 0 && !(t[k] & 0x80))
		k--;
	return k;
}

// --- registry ----------------------------------------------------------------------------------

/*
 * Bytes into a running hash. Each 8-byte word is multiplied on its own (position folded in) and
 * the products summed: no chain from word to word, so the multiplies overlap; the caller's final
 * gmt_mix64() spreads the sum. Not for adversarial input: it only tells code objects apart.
 */
static uint64_t
hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	uint64_t w, pos = 0x9e3779b97f4a7c15ull;

	for (; n >= 8; p += 8, n -= 8, pos += 0x9e3779b97f4a7c15ull) {
		memcpy(&w, p, 8);
		h += (w ^ pos) * 0xbf58476d1ce4e5b9ull;
	}
	for (w = n; n > 0; n--)
		w = w << 8 | p[n - 1];
	return h + (w ^ pos) * 0x94d049bb133111ebull;
}

/*
 * One field: its length, up to @p cap bytes and the last 8 (bounded cost for huge objects),
 * after a multiply of what came before (so fields do not commute).
 */
static uint64_t
hash_capped(uint64_t h, const uint8_t *p, size_t n, size_t cap)
{
	h = hash_bytes((h ^ n) * 0xff51afd7ed558ccdull, p, n < cap ? n : cap);
	return n > cap ? hash_bytes(h * 0xc4ceb9fe1a85ec53ull, p + n - 8, 8) : h;
}

/* A str's code points as stored (compact ASCII, UCS1/2/4): stable for the object's life. */
static uint64_t
hash_str(uint64_t h, uintptr_t obj)
{
	if (!is_a(obj, rt.unicode_type))
		return gmt_mix64(h ^ 1);
	uint32_t state = (uint32_t)load_i32(obj, L.u_state);
	int64_t len = load_i64(obj, L.u_length);
	unsigned kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || len < 0 || len > (1 << 24) || kind == 0 || kind == 3 ||
	    kind > 4)
		return gmt_mix64(h ^ 2); /* not compact: copy_str() reads it as "?" too */
	if (state & (1u << 6))
		return hash_capped(h, (const uint8_t *)(obj + (uintptr_t)L.u_ascii_data),
				   (size_t)len, STR_HASH_CAP);
	return hash_capped(h ^ kind, (const uint8_t *)(obj + (uintptr_t)L.u_data),
			   (size_t)len * kind, STR_HASH_CAP);
}

static uint64_t
hash_linetable(uint64_t h, uintptr_t obj)
{
	if (!is_a(obj, rt.bytes_type))
		return gmt_mix64(h ^ 3);
	int64_t n = load_i64(obj, L.b_size);
	if (n < 0 || n >= (1 << 28))
		return gmt_mix64(h ^ 4);
	return hash_capped(h, (const uint8_t *)(obj + (uintptr_t)L.b_data), (size_t)n, LT_HASH_CAP);
}

/* The identity of a code object (see the file comment); never 0. */
static uint64_t
code_tag(const struct pyobjs *o, int32_t firstlineno)
{
	uint64_t h = hash_str((uint64_t)o->code ^ (uint64_t)(uint32_t)firstlineno << 48, o->file);
	h = gmt_mix64(hash_linetable(hash_str(h, o->name), o->linetable));
	return h ? h : 1;
}

static const struct pyrec *
record(uint32_t id)
{
	if (id == 0 || id >= MAX_CODES)
		return NULL;
	uint32_t v = atomic_load_explicit(&by_id[id], memory_order_acquire);
	if (v == 0 || v == DEAD)
		return NULL;
	return (const struct pyrec *)(arena + v - 1);
}

static void
mark_full(void)
{
	if (!atomic_exchange_explicit(&registry_full, true, memory_order_relaxed))
		gmt_warn("Python code registry full (%u code objects or %u MiB): later Python "
			 "frames are recorded without their code (id 0)",
			 MAX_CODES - 1, ARENA_BYTES >> 20);
}

/* Room for @p size bytes in the arena; returns the offset, or SIZE_MAX when full. */
static size_t
arena_reserve(size_t size)
{
	size = (size + 7) & ~(size_t)7;
	if (atomic_load_explicit(&arena_used, memory_order_relaxed) + size > ARENA_BYTES)
		return SIZE_MAX;
	size_t off = atomic_fetch_add_explicit(&arena_used, size, memory_order_relaxed);
	return off + size <= ARENA_BYTES ? off : SIZE_MAX;
}

/* Text fields of a code object, copied out before the record's size is known. */
struct pytext {
	char file[FILE_CAP], name[NAME_CAP], qual[QUAL_CAP];
	size_t file_len, name_len, qual_len;
	const uint8_t *linetable;
	size_t linetable_len;
};

static void
read_text(const struct pyobjs *o, struct pytext *t)
{
	t->file_len = copy_str(o->file, t->file, sizeof(t->file));
	t->name_len = copy_str(o->name, t->name, sizeof(t->name));
	if (L.co_qualname >= 0)
		t->qual_len = copy_str(load_ptr(o->code, L.co_qualname), t->qual, sizeof(t->qual));
	else
		t->qual_len = copy_str(o->name, t->qual, sizeof(t->qual));
	t->linetable = NULL;
	t->linetable_len = 0;
	if (is_a(o->linetable, rt.bytes_type)) {
		int64_t n = load_i64(o->linetable, L.b_size);
		if (n > 0 && n < (1 << 28)) {
			t->linetable = (const uint8_t *)(o->linetable + (uintptr_t)L.b_data);
			t->linetable_len = linetable_keep(t->linetable, (size_t)n);
		}
	}
}

static void
fill_record(struct pyrec *r, uint32_t id, int32_t firstlineno, const struct pytext *t)
{
	char *p = r->data;

	r->firstlineno = firstlineno;
	r->id = id;
	r->linetable_len = (uint32_t)t->linetable_len;
	r->file_len = (uint16_t)t->file_len;
	r->name_len = (uint16_t)t->name_len;
	r->qual_len = (uint16_t)t->qual_len;
	memcpy(p, t->file, t->file_len + 1);
	p += t->file_len + 1;
	memcpy(p, t->name, t->name_len + 1);
	p += t->name_len + 1;
	memcpy(p, t->qual, t->qual_len + 1);
	p += t->qual_len + 1;
	if (t->linetable_len)
		memcpy(p, t->linetable, t->linetable_len);
}

/* Give up on a claimed slot (and id): readers skip it, the writer passes over the id. */
static uint32_t
abandon(struct slot *s, uint32_t id)
{
	if (id != 0 && id < MAX_CODES)
		atomic_store_explicit(&by_id[id], DEAD, memory_order_release);
	atomic_store_explicit(&s->id, DEAD, memory_order_release);
	atomic_fetch_sub_explicit(&in_flight, 1, memory_order_relaxed);
	mark_full();
	return 0;
}

/*
 * We own slot @p s (our CAS filled its tag, in_flight counts us): copy the code object's facts,
 * publish an id.
 */
static uint32_t
register_code(struct slot *s, const struct pyobjs *o, int32_t firstlineno)
{
	struct pytext t;
	uint32_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);

	if (id >= MAX_CODES)
		return abandon(s, 0);
	read_text(o, &t);
	size_t size =
	    sizeof(struct pyrec) + t.file_len + t.name_len + t.qual_len + 3 + t.linetable_len;
	size_t off = arena_reserve(size);
	if (off == SIZE_MAX)
		return abandon(s, id);
	fill_record((struct pyrec *)(arena + off), id, firstlineno, &t);
	/* Record before index before slot: whoever finds the id finds a complete record. */
	atomic_store_explicit(&by_id[id], (uint32_t)off + 1, memory_order_release);
	atomic_store_explicit(&s->id, id, memory_order_release);
	atomic_fetch_sub_explicit(&in_flight, 1, memory_order_relaxed);
	return id;
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* A slot whose tag matches: its id once published (briefly waits for the registering thread). */
static uint32_t
slot_id(struct slot *s)
{
	for (int spin = 0; spin < 256; spin++) {
		uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
		if (id != 0)
			return id;
		cpu_relax();
	}
	return 0; /* still in flight: look further (at worst the code gets a second id) */
}

/* The id of code object @p code, registering it on first sight; 0 when the registry is full. */
static uint32_t
code_id_by_contents(uintptr_t code)
{
	struct pyobjs o = {
	    .code = code,
	    .name = load_ptr(code, L.co_name),
	    .file = load_ptr(code, L.co_filename),
	    .linetable = load_ptr(code, L.co_linetable),
	};
	int32_t firstlineno = load_i32(code, L.co_firstlineno);
	uint64_t tag = code_tag(&o, firstlineno);
	uint32_t i = (uint32_t)tag & (SLOTS - 1);

	for (int probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &table[i];
		uint64_t t = atomic_load_explicit(&s->tag, memory_order_acquire);
		if (t == 0) {
			if (atomic_load_explicit(&registry_full, memory_order_relaxed))
				return 0;
			/* counted before the claim: a fork() in between must see it */
			atomic_fetch_add(&in_flight, 1);
			if (atomic_compare_exchange_strong_explicit(
				&s->tag, &t, tag, memory_order_acq_rel, memory_order_acquire))
				return register_code(s, &o, firstlineno);
			atomic_fetch_sub(&in_flight, 1);
			/* lost the race: t is the winner's tag */
		}
		if (t != tag)
			continue;
		uint32_t id = slot_id(s);
		if (id != 0 && id != DEAD)
			return id;
	}
	mark_full();
	return 0;
}

static bool ready(void);

/* code_id_by_contents(), through the code cache when @p cached: a code watcher keeps it true for
 * the walking thread's interpreter. */
static uint32_t
code_id(uintptr_t code, bool cached)
{
	if (!cached)
		return code_id_by_contents(code);
	_Atomic uint64_t *e = &code_cache[cc_slot(code)];
	uint64_t v = atomic_load_explicit(e, memory_order_acquire);
	if (v && (uintptr_t)(v >> 16) == code)
		return (uint32_t)(v & 0xffff);
	uint32_t id = code_id_by_contents(code);
	if (id && id != DEAD && id <= 0xffff && (uint64_t)code < (1ull << 48))
		atomic_store_explicit(e, (uint64_t)code << 16 | id, memory_order_release);
	return id;
}

/* PyCode_WatchCallback: on a code object's death, forget its entry (under the GIL). */
static int
on_code_event(int event, void *code)
{
	enum { PY_CODE_EVENT_DESTROY = 1 }; /* 3.12 and 3.13: CREATE, DESTROY */

	if (event == PY_CODE_EVENT_DESTROY) {
		_Atomic uint64_t *e = &code_cache[cc_slot((uintptr_t)code)];
		uint64_t v = atomic_load_explicit(e, memory_order_acquire);
		if (v && (uintptr_t)(v >> 16) == (uintptr_t)code)
			atomic_compare_exchange_strong(e, &v, 0);
	}
	return 0;
}

int
gmt_py_watch_code(void)
{
	static _Atomic bool tried;

	if (atomic_exchange(&tried, true))
		return atomic_load(&code_cache_on) ? 0 : -1;
	if (!ready() || L.minor < 12 || !code_cache)
		return -1;
	int (*add)(int (*)(int, void *)) =
	    (int (*)(int (*)(int, void *)))dlsym(rt.handle, "PyCode_AddWatcher");
	void (*clear)(void) = (void (*)(void))dlsym(rt.handle, "PyErr_Clear");
	void *(*interp_of)(void *) =
	    (void *(*)(void *))dlsym(rt.handle, "PyThreadState_GetInterpreter");
	void *(*attached)(void) = (void *(*)(void))dlsym(rt.handle, "PyThreadState_Get");
	if (!add || !clear || !interp_of || !attached || L.ts_interp < 0)
		return -1;
	watched_interp = (uintptr_t)interp_of(attached()); /* the caller's: it holds the GIL */
	if (add(on_code_event) < 0) {
		clear(); /* all watcher ids taken: contents hashing goes on */
		return -1;
	}
	atomic_store_explicit(&code_cache_on, true, memory_order_release);
	return 0;
}

// --- the walk ----------------------------------------------------------------------------------

static uintptr_t
innermost_frame(uintptr_t tstate)
{
	if (L.ts_cframe < 0)
		return load_ptr(tstate, L.ts_frame);
	uintptr_t cframe = load_ptr(tstate, L.ts_cframe);
	return plausible(cframe) ? load_ptr(cframe, L.ts_frame) : 0;
}

/* Byte offset of the frame's instruction from the start of co_code (negative: not started). */
static int64_t
instr_offset(uintptr_t frame, uintptr_t code)
{
	if (L.fr_lasti)
		return (int64_t)load_i32(frame, L.fr_instr) * 2;
	uintptr_t instr = load_ptr(frame, L.fr_instr);
	return (int64_t)(instr - (code + (uintptr_t)L.co_code));
}

/* _PyFrame_IsIncomplete(): still setting up, before the RESUME at _co_firsttraceable. */
static bool
incomplete(uintptr_t frame, uintptr_t code, int64_t off)
{
	if (L.co_firsttraceable < 0 || load_owner(frame) == OWNED_BY_GENERATOR)
		return false;
	return off < (int64_t)load_i32(code, L.co_firsttraceable) * 2;
}

static uint8_t
entered_from_c(uintptr_t frame, uintptr_t back)
{
	if (L.fr_owner < 0)
		return 1;
	if (L.fr_is_entry >= 0)
		return *(const uint8_t *)(frame + (uintptr_t)L.fr_is_entry) != 0;
	return !plausible(back) || load_owner(back) == OWNED_BY_CSTACK;
}

/* One raw frame: 1 = written to @p out, 0 = skipped (shim, incomplete), -1 = torn: stop. */
static int
read_frame(uintptr_t frame, uintptr_t back, bool cached, struct gmt_pyframe *out)
{
	if (L.fr_owner >= 0 && load_owner(frame) == OWNED_BY_CSTACK)
		return 0;
	uintptr_t code = load_ptr(frame, L.fr_code);
	if (!is_a(code, rt.code_type))
		return L.minor >= 13 ? 0 : -1; /* 3.13: f_executable may be None, etc. */
	int64_t off = instr_offset(frame, code);
	if (incomplete(frame, code, off))
		return 0;
	out->code_id = code_id(code, cached);
	out->instr_offset = off < 0 ? 0 : off > UINT32_MAX ? UINT32_MAX : (uint32_t)off;
	out->entry = entered_from_c(frame, back);
	return 1;
}

static int
walk_frames(uintptr_t frame, bool cached, struct gmt_pyframe *out, int max)
{
	int n = 0, steps = 4 * max + 16; /* bounds a cyclic chain; shims are at most every other */

	while (frame != 0 && n < max && steps-- > 0) {
		if (!plausible(frame))
			break;
		uintptr_t back = load_ptr(frame, L.fr_back);
		int r = read_frame(frame, back, cached, &out[n]);
		if (r < 0)
			break;
		n += r;
		frame = back;
	}
	return n;
}

/*
 * Detection is done once, by whichever thread comes first (often the writer, for the header).
 * Another thread that meets it under way waits for it, a bounded while (the detecting thread may
 * wait in dlsym() for a loader lock this thread holds: then it gives up after DETECT_WAIT_NS and
 * this one event has no Python frames). Before, it did not wait at all: a program's first
 * allocations (the model's weights) had no Python frames whenever the writer was slow to start.
 */
#define DETECT_WAIT_NS (20 * 1000 * 1000)

static bool
ready(void)
{
	int st = atomic_load_explicit(&py_state, memory_order_acquire);
	if (st == PY_READY)
		return true;
	if (st == PY_UNKNOWN)
		return gmt_py_detect();
	if (st != PY_BUSY)
		return false;
	for (long waited = 0; waited < DETECT_WAIT_NS;) {
		if (waited < 100 * 1000) {
			sched_yield();
			waited += 1000;
		} else {
			struct timespec ts = {0, 100 * 1000};
			nanosleep(&ts, NULL);
			waited += 100 * 1000;
		}
		st = atomic_load_explicit(&py_state, memory_order_acquire);
		if (st != PY_BUSY)
			return st == PY_READY;
	}
	return false;
}

int
gmt_py_walk(struct gmt_pyframe *out, int max)
{
	if (!ready())
		return GMT_PY_UNAVAILABLE;
	if (!rt.is_initialized())
		return GMT_PY_NO_THREAD; /* not yet, or finalized: no thread state to trust */
	uintptr_t tstate = (uintptr_t)rt.this_thread_state();
	if (!plausible(tstate))
		return GMT_PY_NO_THREAD;
	bool cached = atomic_load_explicit(&code_cache_on, memory_order_acquire) &&
		      load_ptr(tstate, L.ts_interp) == watched_interp;
	return max > 0 ? walk_frames(innermost_frame(tstate), cached, out, max) : 0;
}

// --- detection ---------------------------------------------------------------------------------

/*
 * Where the interpreter's symbols are: the global scope (RTLD_DEFAULT, which is NULL), or a
 * libpython loaded RTLD_LOCAL. False: no Python here.
 */
static bool
python_handle(void **handle)
{
	static const char *const sonames[] = {
	    "libpython3.13.so.1.0", "libpython3.12.so.1.0",  "libpython3.11.so.1.0",
	    "libpython3.10.so.1.0", "libpython3.13t.so.1.0",
	};

	*handle = RTLD_DEFAULT;
	if (dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
		return true;
	for (size_t i = 0; i < sizeof(sonames) / sizeof(sonames[0]); i++) {
		*handle = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
		if (*handle)
			return true; /* kept open: we use its symbols for good */
	}
	return false;
}

/* The running interpreter's minor version (3.x), or -1. */
static int
python_minor(void *h)
{
	const unsigned long *hex = dlsym(h, "Py_Version"); /* 3.11+: PY_VERSION_HEX */
	if (hex)
		return (*hex >> 24) == 3 ? (int)((*hex >> 16) & 0xff) : -1;
	const char *(*get_version)(void) = (const char *(*)(void))dlsym(h, "Py_GetVersion");
	if (!get_version)
		return -1;
	const char *v = get_version(); /* "3.10.13 (main, ...": a static buffer, no allocation */
	if (!v || v[0] != '3' || v[1] != '.')
		return -1;
	return (int)strtol(v + 2, NULL, 10);
}

/* An 8-byte field at @p off of a struct of @p size bytes (sizes are small: < 64 KiB). */
static bool
fits(uint64_t off, uint64_t size)
{
	return size < (1u << 16) && off + 8 <= size;
}

/* Every offset we read lies inside the struct it belongs to. */
static bool
debug_offsets_sane(const struct debug_offsets_313 *d)
{
	return fits(d->thread_state.current_frame, d->thread_state.size) &&
	       fits(d->thread_state.interp, d->thread_state.size) &&
	       fits(d->frame.previous, d->frame.size) && fits(d->frame.executable, d->frame.size) &&
	       fits(d->frame.instr_ptr, d->frame.size) && d->frame.owner < d->frame.size &&
	       fits(d->code.filename, d->code.size) && fits(d->code.name, d->code.size) &&
	       fits(d->code.qualname, d->code.size) && fits(d->code.linetable, d->code.size) &&
	       d->code.firstlineno + 4 <= d->code.size &&
	       d->code.co_code_adaptive <= d->code.size &&
	       fits(d->pyobject.ob_type, d->pyobject.size) && d->bytes.ob_sval <= d->bytes.size &&
	       fits(d->bytes.ob_size, d->bytes.size) && fits(d->unicode.length, d->unicode.size) &&
	       d->unicode.state + 4 <= d->unicode.size &&
	       d->unicode.asciiobject_size <= d->unicode.size;
}

static void
layout_313(const struct debug_offsets_313 *d)
{
	L = (struct pylayout){.version = "3.13", .minor = 13, .ts_cframe = -1, .fr_is_entry = -1};
	L.ts_frame = (int)d->thread_state.current_frame;
	L.ts_interp = (int)d->thread_state.interp;
	L.fr_code = (int)d->frame.executable;
	L.fr_back = (int)d->frame.previous;
	L.fr_instr = (int)d->frame.instr_ptr;
	L.fr_owner = (int)d->frame.owner;
	L.co_firstlineno = (int)d->code.firstlineno;
	L.co_filename = (int)d->code.filename;
	L.co_name = (int)d->code.name;
	L.co_qualname = (int)d->code.qualname;
	L.co_linetable = (int)d->code.linetable;
	L.co_code = (int)d->code.co_code_adaptive;
	/*
	 * _co_firsttraceable is not in the table: trust 3.13.0's header offset only while the
	 * fields around it are where that header has them.
	 */
	L.co_firsttraceable =
	    d->code.co_code_adaptive == 200 && d->code.linetable == 136 ? 184 : -1;
	L.u_length = (int)d->unicode.length;
	L.u_state = (int)d->unicode.state;
	L.u_ascii_data = (int)d->unicode.asciiobject_size;
	L.u_utf8_len = L.u_ascii_data; /* PyCompactUnicodeObject: utf8_length, utf8, then */
	L.u_utf8 = L.u_ascii_data + 8; /* the data (3.12+: no wstr fields) */
	L.u_data = L.u_ascii_data + 16;
	L.b_size = (int)d->bytes.ob_size;
	L.b_data = (int)d->bytes.ob_sval;
	L.ob_type = (int)d->pyobject.ob_type;
}

/* 3.13: offsets from _PyRuntime's _Py_DebugOffsets. Returns NULL or a reason to refuse. */
static const char *
layout_from_debug_offsets(void *h)
{
	const struct debug_offsets_313 *d = dlsym(h, "_PyRuntime");

	if (!d || memcmp(d->cookie, "xdebugpy", 8) != 0)
		return "no _Py_DebugOffsets in _PyRuntime";
	if ((d->version >> 16) != 0x030d)
		return "_Py_DebugOffsets is not 3.13's";
	if (d->free_threaded)
		return "free-threaded build";
	if (!debug_offsets_sane(d))
		return "implausible _Py_DebugOffsets";
	layout_313(d);
	return NULL;
}

/* The object header is what we think it is: PyCode_Type is a type named "code". */
static bool
header_matches(void *h)
{
	uintptr_t type_type = (uintptr_t)dlsym(h, "PyType_Type");
	uintptr_t code_type = rt.code_type;

	if (!type_type || !plausible(code_type) || load_ptr(code_type, L.ob_type) != type_type)
		return false;
	const char *tp_name = (const char *)load_ptr(code_type, L.ob_type + 16);
	return plausible((uintptr_t)tp_name & ~(uintptr_t)7) && strcmp(tp_name, "code") == 0;
}

static const char *
pick_layout(void *h, int minor)
{
	switch (minor) {
	case 10: L = layout_310; return NULL;
	case 11: L = layout_311; return NULL;
	case 12: L = layout_312; return NULL;
	case 13: return layout_from_debug_offsets(h);
	default: return "no frame layout for this version";
	}
}

/* Where _PyEval_EvalFrameDefault's code lies (its dynamic symbol's value and size). Its cold part
 * (GCC's .cold clone) has no dynamic symbol: a stack through it is unwound further, never cut
 * wrongly. */
static void
eval_function(void *h)
{
	void *fn = dlsym(h, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (fn && dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size &&
	    info.dli_saddr == fn) {
		rt.eval_lo = (uintptr_t)fn;
		rt.eval_hi = (uintptr_t)fn + sym->st_size;
	}
}

static bool
resolve_runtime(void *h)
{
	rt.this_thread_state = (void *(*)(void))dlsym(h, "PyGILState_GetThisThreadState");
	rt.is_initialized = (int (*)(void))dlsym(h, "Py_IsInitialized");
	rt.code_type = (uintptr_t)dlsym(h, "PyCode_Type");
	rt.unicode_type = (uintptr_t)dlsym(h, "PyUnicode_Type");
	rt.bytes_type = (uintptr_t)dlsym(h, "PyBytes_Type");
	eval_function(h);
	return rt.this_thread_state && rt.is_initialized && rt.code_type && rt.unicode_type &&
	       rt.bytes_type;
}

static void atfork_child(void);

static bool
map_registry(void)
{
	size_t table_bytes = SLOTS * sizeof(struct slot);
	size_t index_bytes = MAX_CODES * sizeof(uint32_t);
	size_t cache_bytes = CC_SLOTS * sizeof(uint64_t);
	char *p = mmap(NULL, table_bytes + index_bytes + cache_bytes + ARENA_BYTES,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return false;
	table = (struct slot *)p;
	by_id = (_Atomic uint32_t *)(p + table_bytes);
	code_cache = (_Atomic uint64_t *)(p + table_bytes + index_bytes);
	arena = p + table_bytes + index_bytes + cache_bytes;
	return true;
}

/* Detection proper; returns the final state. */
static int
detect(void)
{
	void *h;

	if (!python_handle(&h) || !resolve_runtime(h))
		return PY_ABSENT;
	rt.handle = h;
	int minor = python_minor(h);
	const char *why = minor < 0 ? "unreadable version" : pick_layout(h, minor);
	if (!why && !header_matches(h))
		why = "object layout check failed (debug or free-threaded build?)";
	if (!why && !map_registry())
		why = "cannot map the code registry";
	if (why) {
		if (minor < 0)
			gmt_warn("Python of unknown version: %s; Python stacks are off", why);
		else
			gmt_warn("Python 3.%d: %s; Python stacks are off", minor, why);
		return PY_REFUSED;
	}
	pthread_atfork(NULL, NULL, atfork_child);
	return PY_READY;
}

bool
gmt_py_detect(void)
{
	int st = PY_UNKNOWN;

	/*
	 * One thread detects; others do not wait for it (report "unavailable" meanwhile): the
	 * detecting thread may itself wait in dlsym() for a loader lock held by a thread that is
	 * inside our hook (a CUDA call from a library constructor).
	 */
	if (atomic_compare_exchange_strong_explicit(&py_state, &st, PY_BUSY, memory_order_acquire,
						    memory_order_acquire)) {
		st = detect();
		atomic_store_explicit(&py_state, st, memory_order_release);
	}
	return st == PY_READY;
}

bool
gmt_py_eval_range(uintptr_t *lo, uintptr_t *hi)
{
	if (atomic_load_explicit(&py_state, memory_order_acquire) != PY_READY || !rt.eval_hi)
		return false;
	*lo = rt.eval_lo;
	*hi = rt.eval_hi;
	return true;
}

const char *
gmt_py_version(void)
{
	return ready() ? L.version : NULL;
}

void
gmt_py_rescan(void)
{
	int st = PY_ABSENT;
	atomic_compare_exchange_strong_explicit(&py_state, &st, PY_UNKNOWN, memory_order_relaxed,
						memory_order_relaxed);
}

// --- writer side -------------------------------------------------------------------------------

static void
to_public(const struct pyrec *r, struct gmt_pycode_view *out)
{
	const char *p = r->data;

	out->id = r->id;
	out->firstlineno = r->firstlineno;
	out->file = p;
	p += r->file_len + 1;
	out->name = p;
	p += r->name_len + 1;
	out->qualname = p;
	p += r->qual_len + 1;
	out->linetable = (const uint8_t *)p;
	out->linetable_len = r->linetable_len;
	out->version = L.version;
}

bool
gmt_py_code(uint32_t id, struct gmt_pycode_view *out)
{
	if (atomic_load_explicit(&py_state, memory_order_acquire) != PY_READY)
		return false;
	const struct pyrec *r = record(id);
	if (!r)
		return false;
	to_public(r, out);
	return true;
}

bool
gmt_py_next_code(struct gmt_pycode_view *out)
{
	if (atomic_load_explicit(&py_state, memory_order_acquire) != PY_READY)
		return false;
	for (;;) {
		uint32_t id = cursor;
		if (id >= MAX_CODES || id >= atomic_load_explicit(&next_id, memory_order_relaxed))
			return false;
		uint32_t v = atomic_load_explicit(&by_id[id], memory_order_acquire);
		if (v == 0)
			return false; /* still being registered: keep the order, ask again later */
		cursor++;
		if (v != DEAD) {
			to_public((const struct pyrec *)(arena + v - 1), out);
			return true;
		}
	}
}

void
gmt_py_rewind(void)
{
	cursor = 1;
}

// --- fork --------------------------------------------------------------------------------------

/*
 * In the child only the forking thread exists. Registrations other threads had in flight will
 * never finish: retire their slots (lookups probe past them and register the code again) and
 * their ids (gmt_py_next_code() passes over them instead of waiting forever). The records
 * themselves are still valid, so the child keeps every id the parent handed out; the cursor goes
 * back to 1 because the child writes a trace file of its own.
 */
static void
atfork_child(void)
{
	if (atomic_load_explicit(&py_state, memory_order_relaxed) != PY_READY)
		return;
	cursor = 1;
	if (atomic_load_explicit(&in_flight, memory_order_relaxed) == 0)
		return; /* the usual case: nothing to retire, no 1 MiB scan */
	atomic_store_explicit(&in_flight, 0, memory_order_relaxed);
	for (uint32_t i = 0; i < SLOTS; i++) {
		if (atomic_load_explicit(&table[i].tag, memory_order_relaxed) != 0 &&
		    atomic_load_explicit(&table[i].id, memory_order_relaxed) == 0)
			atomic_store_explicit(&table[i].id, DEAD, memory_order_relaxed);
	}
	uint32_t end = atomic_load_explicit(&next_id, memory_order_relaxed);
	for (uint32_t id = 1; id < end && id < MAX_CODES; id++) {
		if (atomic_load_explicit(&by_id[id], memory_order_relaxed) == 0)
			atomic_store_explicit(&by_id[id], DEAD, memory_order_relaxed);
	}
}
