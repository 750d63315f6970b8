/*
 * @brief Native symbolization with libdwfl: modules by build-id, addresses to inline chains.
 *
 * Each module file gets its own Dwfl session, reported at base 0 with the file's own virtual
 * addresses (add_p_vaddr), so a trace's offset (address - base) is the address libdwfl expects,
 * whatever the object's load bias was in the traced process. libdwfl's standard debuginfo search
 * (.gnu_debuglink, /usr/lib/debug/.build-id) supplies DWARF for stripped system libraries when
 * their -dbg/-dbgsym packages are installed.
 */
#define _GNU_SOURCE
#include "analysis/symbols/symbolize.h"
#include "analysis/reader/trace.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"
#include "util/input.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

#if GMT_HAVE_CXA_DEMANGLE
/* The C++ ABI's demangler, from libstdc++ (linked in): declared here so this file stays C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn
cxa_demangle(void)
{
	return __cxa_demangle;
}
#else
/* Built where libstdc++ could not be linked: its runtime, when installed, is asked at run time;
 * without it names stay mangled. */
static demangle_fn
cxa_demangle(void)
{
	static demangle_fn fn;
	static bool looked;

	if (!looked) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		looked = true;
		if (h)
			fn = (demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");
	}
	return fn;
}
#endif

/* Notes about unusable modules before the rest are only counted. */
#define GMT_SYM_MAX_NOTES 20

/* One ELF symbol of a module's table, as libdwfl's address lookup weighs it. */
struct sym_fn {
	uint64_t value;	  /* its address, as dwfl_module_getsym_info() adjusts it */
	uint64_t size;	  /* 0: a sizeless symbol (an assembly label) */
	const char *name; /* in the module's ELF data (valid while its Dwfl is) */
	uint32_t order;	  /* its place in the table: among equals libdwfl keeps the first */
	uint8_t binding;  /* GELF_ST_BIND */
};

/* Symbols sorted by (value, order), with the highest end (value + size) up to each. */
struct sym_list {
	struct sym_fn *v;
	uint64_t *max_end;
	size_t n;
};

/*
 * A module's symbols indexed by address: libdwfl's dwfl_module_addrinfo() reads the whole
 * table at every call (a trace's thousands of addresses in a library of 100,000 symbols, such
 * as libtorch's, took seconds). Here the symbols are sorted by address once, sized and sizeless
 * apart, non-local and local apart (libdwfl searches the non-local ones first), and looked up by
 * binary search (symbol_name() says where libdwfl still answers).
 */
struct sym_index {
	struct sym_list sized[2], sizeless[2]; /* [0] non-local, [1] local */
	bool built, failed;		       /* failed: out of memory, libdwfl answers */
};

/* One module file as the symbolizer knows it: identified by build-id, or by path without one. */
struct sym_module {
	const char *path;     /* interned; the latest path given when the file was not found */
	const char *file;     /* interned: the bytes to open (= path unless not UTF-8) */
	const char *build_id; /* interned lowercase hex, "" none */
	bool opened;	      /* open attempted */
	enum gmt_sym_status status;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	struct sym_index index;
};

/* One resolved (module, offset): its frames are frames[first .. first + n) of the pool. */
struct sym_entry {
	uint64_t offset;
	uint32_t module; /* index + 1; 0 marks an empty slot */
	uint32_t first;
	uint16_t n;
	uint8_t status;
};

struct gmt_symbolizer {
	FILE *diag;
	size_t notes, notes_dropped;

	char **strs; /* interned strings: open addressing, NULL empty */
	size_t strs_mask, nstrs;

	struct sym_module *mods;
	size_t nmods;

	struct sym_entry *cache; /* open addressing over (module, offset) */
	size_t cache_mask, ncache;

	struct gmt_sym_frame *pool; /* frames of every cached entry */
	size_t npool, poolcap;

	struct gmt_sym_frame scratch[64]; /* frames of the address being resolved */
	uint32_t nscratch;
	int error; /* -ENOMEM once anything was lost for lack of memory (gmt_symbolizer_error()) */
};

static void index_free(struct sym_index *x);

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

// --- strings ------------------------------------------------------------------------------------

static uint64_t
hash_str(const char *str)
{
	return gmt_fnv1a(GMT_FNV_SEED, str, strlen(str));
}

const char *
gmt_sym_intern(struct gmt_symbolizer *s, const char *str)
{
	size_t slot;

	if (!str)
		return NULL;
	if (s->nstrs * 2 >= s->strs_mask) {
		size_t cap = s->strs_mask ? (s->strs_mask + 1) * 2 : 1024;
		char **old = s->strs;
		size_t oldcap = s->strs_mask ? s->strs_mask + 1 : 0;

		char **strs = calloc(cap, sizeof(*s->strs));

		if (!strs) {
			s->error = -ENOMEM;
			return NULL;
		}
		s->strs = strs;
		s->strs_mask = cap - 1;
		for (size_t i = 0; i < oldcap; i++) {
			if (!old[i])
				continue;
			slot = hash_str(old[i]) & s->strs_mask;
			while (s->strs[slot])
				slot = (slot + 1) & s->strs_mask;
			s->strs[slot] = old[i];
		}
		free(old);
	}
	for (slot = hash_str(str) & s->strs_mask; s->strs[slot]; slot = (slot + 1) & s->strs_mask)
		if (strcmp(s->strs[slot], str) == 0)
			return s->strs[slot];
	if (!(s->strs[slot] = strdup(str))) {
		s->error = -ENOMEM;
		return NULL;
	}
	s->nstrs++;
	return s->strs[slot];
}

/*
 * @p str interned as text: a name or file from a module's debug information is bytes, which
 * need not be UTF-8 (a build directory named in another encoding); reports are UTF-8, so each
 * byte that is not part of a valid sequence becomes U+FFFD.
 */
static const char *
intern_text(struct gmt_symbolizer *s, const char *str)
{
	const char *res;
	char *clean;

	if (!str)
		return NULL;
	if (gmt_utf8_valid(str))
		return gmt_sym_intern(s, str);
	if (!(clean = gmt_utf8_lossy(str))) {
		s->error = -ENOMEM;
		return NULL;
	}
	res = gmt_sym_intern(s, clean);
	free(clean);
	return res;
}

// --- the symbolizer -----------------------------------------------------------------------------

struct gmt_symbolizer *
gmt_symbolizer_new(FILE *diag)
{
	struct gmt_symbolizer *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->diag = diag;
	return s;
}

int
gmt_symbolizer_error(const struct gmt_symbolizer *s)
{
	return s ? s->error : 0;
}

void
gmt_symbolizer_free(struct gmt_symbolizer *s)
{
	if (!s)
		return;
	if (s->notes_dropped && s->diag)
		fprintf(s->diag, "gpumemtrace: note: %zu more modules could not be used\n",
			s->notes_dropped);
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		index_free(&s->mods[i].index);
	}
	free(s->mods);
	for (size_t i = 0; s->strs && i <= s->strs_mask; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->cache);
	free(s->pool);
	free(s);
}

uint32_t
gmt_sym_module(struct gmt_symbolizer *s, const char *path, const char *file, const char *build_id)
{
	struct sym_module *m;

	path = gmt_sym_intern(s, path);
	file = file ? gmt_sym_intern(s, file) : path;
	build_id = gmt_sym_intern(s, build_id ? build_id : "");
	if (!path || !file || !build_id)
		return GMT_SYM_NONE; /* out of memory (s->error) */
	for (size_t i = 0; i < s->nmods; i++) {
		m = &s->mods[i];
		if (m->build_id != build_id)
			continue;
		if (m->file == file)
			return (uint32_t)i;
		/*
		 * The same build-id under another path (another process, a container) is the
		 * same file: one Dwfl serves both, unless it was not found where first looked,
		 * then this path gets its own try.
		 */
		if (build_id[0] != '\0' && (!m->opened || m->status != GMT_SYM_NO_FILE))
			return (uint32_t)i;
	}
	if (!(m = gmt_realloc_array(s->mods, s->nmods + 1, sizeof(*s->mods)))) {
		s->error = -ENOMEM;
		return GMT_SYM_NONE;
	}
	s->mods = m;
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->path = path;
	m->file = file;
	m->build_id = build_id;
	return (uint32_t)s->nmods++;
}

const char *
gmt_sym_status_str(enum gmt_sym_status st)
{
	switch (st) {
	case GMT_SYM_OK: return "resolved";
	case GMT_SYM_NO_SYMBOL: return "no symbol at this address";
	case GMT_SYM_NO_MODULE: return "in no module of the trace";
	case GMT_SYM_NO_FILE: return "module file not found";
	case GMT_SYM_MISMATCH: return "module file has another build-id";
	case GMT_SYM_NO_FILE_ID: return "module without a file";
	}
	return "?";
}

// --- opening a module file ----------------------------------------------------------------------

static void __attribute__((format(printf, 2, 3)))
note(struct gmt_symbolizer *s, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (!s->diag)
		return;
	if (s->notes >= GMT_SYM_MAX_NOTES) {
		s->notes_dropped++;
		return;
	}
	s->notes++;
	fprintf(s->diag, "gpumemtrace: note: ");
	va_start(ap, fmt);
	/* escaped as a whole: the paths it names come from the trace */
	if (vasprintf(&msg, fmt, ap) >= 0) {
		gmt_fputs_esc(msg, s->diag);
		free(msg);
	}
	va_end(ap);
	fputc('\n', s->diag);
}

/*
 * Open @p file as module @p m. OK when it is ELF and its build-id is the trace's (both absent
 * counts as the same: nothing better can be checked); MISMATCH with the file's id in @p found.
 */
static enum gmt_sym_status
try_open(
    struct sym_module *m, const char *file, char *found, size_t foundmax, char why[GMT_INPUT_WHY])
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int fd, n;

	found[0] = '\0';
	/* a modules line may name a FIFO or a device: never block on it, never read it */
	fd = gmt_input_open(file, why);
	if (fd < 0)
		return GMT_SYM_NO_FILE;
	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl) {
		close(fd);
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(ENOMEM));
		return GMT_SYM_NO_FILE;
	}
	dwfl_report_begin(dwfl);
	/* On success libdwfl owns fd. */
	mod = dwfl_report_elf(dwfl, m->path, file, fd, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		close(fd);
		dwfl_end(dwfl);
		snprintf(why, GMT_INPUT_WHY, "%s", strerror(ENOEXEC));
		return GMT_SYM_NO_FILE;
	}
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n > 0)
		gmt_hex_encode(bits, (size_t)n, found, foundmax);
	if (strcmp(found, m->build_id) != 0) {
		dwfl_end(dwfl);
		return GMT_SYM_MISMATCH;
	}
	m->dwfl = dwfl;
	m->mod = mod;
	if (!dwfl_module_getelf(mod, &m->bias))
		m->bias = 0;
	return GMT_SYM_OK;
}

static void
module_open(struct gmt_symbolizer *s, struct sym_module *m)
{
	char found[128], debug[300], why[GMT_INPUT_WHY] = "", why2[GMT_INPUT_WHY];
	enum gmt_sym_status st;

	m->opened = true;
	/* "[vdso]", "[heap]", "": nothing on disk to read. */
	if (m->file[0] == '\0' || m->file[0] == '[') {
		m->status = GMT_SYM_NO_FILE_ID;
		return;
	}
	st = try_open(m, m->file, found, sizeof(found), why);
	if (st != GMT_SYM_OK && strlen(m->build_id) > 2) {
		/* The debug file of that exact build, as distributions install them. */
		char other[128];

		snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 m->build_id, m->build_id + 2);
		if (try_open(m, debug, other, sizeof(other), why2) == GMT_SYM_OK) {
			m->status = GMT_SYM_OK;
			return;
		}
	}
	m->status = st;
	if (st == GMT_SYM_NO_FILE)
		note(s, "%s: cannot read it (%s): its frames are shown as module+offset", m->path,
		     why);
	else if (st == GMT_SYM_MISMATCH)
		note(s,
		     "%s: not the file the trace saw (build-id %s there, %s in the trace): its "
		     "frames are shown as module+offset",
		     m->path, found[0] ? found : "none", m->build_id[0] ? m->build_id : "none");
}

// --- the symbol index ---------------------------------------------------------------------------

static void
index_free(struct sym_index *x)
{
	for (int k = 0; k < 2; k++) {
		free(x->sized[k].v);
		free(x->sized[k].max_end);
		free(x->sizeless[k].v);
		free(x->sizeless[k].max_end);
	}
	memset(x, 0, sizeof(*x));
}

static int
fn_cmp(const void *a, const void *b)
{
	const struct sym_fn *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool
list_push(struct sym_list *l, size_t *cap, const struct sym_fn *f)
{
	if (gmt_grow(&l->v, cap, l->n + 1, sizeof(*l->v), 1024) != 0)
		return false;
	l->v[l->n++] = *f;
	return true;
}

static bool
list_finish(struct sym_list *l)
{
	uint64_t end = 0;

	if (!l->n)
		return true;
	qsort(l->v, l->n, sizeof(*l->v), fn_cmp);
	if (!(l->max_end = malloc(l->n * sizeof(*l->max_end))))
		return false;
	for (size_t i = 0; i < l->n; i++) {
		uint64_t e = l->v[i].value + l->v[i].size;
		end = e > end ? e : end;
		l->max_end[i] = end;
	}
	return true;
}

/*
 * Read the module's table once, as libdwfl's lookup reads it at every call: the symbols with a
 * name, defined, not a section, file or TLS symbol. Its search order: the non-local symbols
 * before the local ones (an ELF table lists its locals first), each in table order.
 */
static void
index_build(struct sym_module *m)
{
	struct sym_index *x = &m->index;
	size_t cap[2][2] = {{0, 0}, {0, 0}};
	int n = dwfl_module_getsymtab(m->mod);

	x->built = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		const char *name =
		    dwfl_module_getsym_info(m->mod, i, &sym, &value, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		struct sym_fn f = {
		    .value = value,
		    .size = sym.st_size,
		    .name = name,
		    .order = (uint32_t)i,
		    .binding = (uint8_t)GELF_ST_BIND(sym.st_info),
		};
		int local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
		struct sym_list *l = f.size ? &x->sized[local] : &x->sizeless[local];
		if (!list_push(l, &cap[local][f.size ? 0 : 1], &f)) {
			x->failed = true;
			return;
		}
	}
	for (int k = 0; k < 2; k++)
		if (!list_finish(&x->sized[k]) || !list_finish(&x->sizeless[k])) {
			x->failed = true;
			return;
		}
}

/* The number of symbols of @p l at or below @p addr. */
static size_t
list_upto(const struct sym_list *l, uint64_t addr)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->v[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Walking back further than this from an address to the symbols that contain it (a symbol
 * nested in a long one, many times over) is left to libdwfl. */
#define INDEX_WALK_MAX 256

/*
 * The sized symbols of @p l that contain @p addr, into @p out (at most @p max; false when the
 * walk to them was too long or they were more). The array's highest ends say where to stop.
 */
static bool
containing(
    const struct sym_list *l, uint64_t addr, const struct sym_fn **out, size_t max, size_t *n)
{
	size_t steps = 0;

	for (size_t i = list_upto(l, addr); i > 0 && l->max_end[i - 1] > addr; i--) {
		const struct sym_fn *f = &l->v[i - 1];
		if (++steps > INDEX_WALK_MAX)
			return false;
		if (addr - f->value >= f->size)
			continue;
		if (*n == max)
			return false;
		out[(*n)++] = f;
	}
	return true;
}

/* The highest end of the symbols of @p l at or below @p addr (0: none). */
static uint64_t
list_end_upto(const struct sym_list *l, uint64_t addr)
{
	size_t i = list_upto(l, addr);
	return i ? l->max_end[i - 1] : 0;
}

/* Is there a sizeless symbol of @p l at an address in [@p lo, @p hi]? */
static bool
sizeless_between(const struct sym_list *l, uint64_t lo, uint64_t hi)
{
	size_t i = list_upto(l, hi);
	return i > 0 && l->v[i - 1].value >= lo;
}

/*
 * The name libdwfl's dwfl_module_addrinfo() gives @p addr, by the index (built at the module's
 * first lookup) where the answer does not depend on how a libdwfl version weighs candidates:
 * one sized symbol holds the address, or several that are the same symbol under other names (an
 * alias: the same address, size and binding; the first in table order, as libdwfl keeps the
 * first of equals); none does, and no sizeless symbol (an assembly label, an absolute symbol)
 * lies between the end of the symbols below and the address, so that none could stand for it.
 * Otherwise, and when the index could not be built, libdwfl answers itself.
 */
static const char *
symbol_name(struct sym_module *m, uint64_t addr)
{
	struct sym_index *x = &m->index;
	const struct sym_fn *in[8];
	size_t n = 0;
	GElf_Off symoff = 0;
	GElf_Sym sym;

	if (!x->built)
		index_build(m);
	if (x->failed || !containing(&x->sized[0], addr, in, 8, &n) ||
	    !containing(&x->sized[1], addr, in, 8, &n))
		goto dwfl;
	if (n == 0) {
		/* the highest end of any symbol at or below the address: a sizeless one beneath
		 * it is excluded (libdwfl's min_label, at its lowest: over the non-local ones) */
		uint64_t a = list_end_upto(&x->sized[0], addr),
			 b = list_end_upto(&x->sizeless[0], addr);
		uint64_t low = a > b ? a : b;
		if (sizeless_between(&x->sizeless[0], low, addr) ||
		    sizeless_between(&x->sizeless[1], low, addr))
			goto dwfl;
		return NULL;
	}
	const struct sym_fn *first = in[0];
	for (size_t k = 1; k < n; k++) {
		if (in[k]->value != first->value || in[k]->size != first->size ||
		    in[k]->binding != first->binding)
			goto dwfl;
		if (in[k]->order < first->order)
			first = in[k];
	}
	return first->name;
dwfl:
	return dwfl_module_addrinfo(m->mod, addr, &symoff, &sym, NULL, NULL, NULL);
}

static int
verify_one(struct sym_module *m, uint64_t addr, FILE *out, long bad)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *want = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
	const char *got = symbol_name(m, addr);

	if (want == got || (want && got && strcmp(want, got) == 0))
		return 0;
	if (out && bad < 10)
		fprintf(out, "%s+0x%" PRIx64 ": index %s, libdwfl %s\n", m->path, addr,
			got ? got : "(none)", want ? want : "(none)");
	return 1;
}

long
gmt_sym_verify_index(const char *path, size_t spread, FILE *out, size_t *checked)
{
	struct sym_module m = {.path = path, .file = path, .build_id = ""};
	char found[128], why[GMT_INPUT_WHY];
	uint64_t lo = UINT64_MAX, hi = 0, rnd = 0x9e3779b97f4a7c15ull;
	long bad = 0;
	int n;

	*checked = 0;
	if (try_open(&m, path, found, sizeof(found), why) != GMT_SYM_OK) {
		/* a file with a build-id: open it as that build */
		m.build_id = found;
		if (!found[0] || try_open(&m, path, found, sizeof(found), why) != GMT_SYM_OK)
			return -1;
	}
	n = dwfl_module_getsymtab(m.mod);
	/* every symbol's edges while they fit in @p spread probes, else an even sample of them */
	int step = n > (int)spread && spread ? n / (int)spread + 1 : 1;
	for (int i = 1; i < n; i += step) {
		GElf_Sym sym;
		GElf_Addr v;
		if (!dwfl_module_getsym_info(m.mod, i, &sym, &v, NULL, NULL, NULL) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		uint64_t probe[] = {
		    v - 1, v, v + 1, v + sym.st_size - 1, v + sym.st_size, v + sym.st_size + 1};
		for (size_t k = 0; k < sizeof(probe) / sizeof(probe[0]); k++) {
			bad += verify_one(&m, probe[k], out, bad);
			(*checked)++;
		}
		if (v < lo)
			lo = v;
		if (v + sym.st_size > hi)
			hi = v + sym.st_size;
	}
	for (size_t i = 0; hi > lo && i < spread; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		bad += verify_one(&m, lo + rnd % (hi - lo + 4096), out, bad);
		(*checked)++;
	}
	index_free(&m.index);
	dwfl_end(m.dwfl);
	return bad;
}

// --- names and paths ----------------------------------------------------------------------------

/* @p name demangled when it is a C++ symbol, interned. */
static const char *
demangle(struct gmt_symbolizer *s, const char *name)
{
	const char *res;
	char *d;
	int status = -1;

	if (!name)
		return NULL;
	if (name[0] != '_' || name[1] != 'Z' || !cxa_demangle())
		return intern_text(s, name);
	d = cxa_demangle()(name, NULL, NULL, &status);
	res = intern_text(s, status == 0 && d ? d : name);
	free(d);
	return res;
}

/* The name of a function DIE: its linkage name (demangled) when it has one. */
static const char *
die_function(struct gmt_symbolizer *s, Dwarf_Die *die, bool *linkage)
{
	Dwarf_Attribute attr;
	const char *name;

	*linkage = true;
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name)
		return demangle(s, name);
	*linkage = false;
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name ? intern_text(s, name) : NULL;
}

void
gmt_sym_fold_path(const char *path, char *out, size_t max)
{
	size_t n = 0;

	if (max < 2) {
		if (max)
			out[0] = '\0';
		return;
	}
	/* ".." at the root stays at the root, as the kernel resolves it. */
	for (const char *p = path; *p;) {
		const char *q;
		size_t len;

		while (*p == '/')
			p++;
		q = strchr(p, '/');
		len = q ? (size_t)(q - p) : strlen(p);
		if (len == 0)
			break;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (!(len == 1 && p[0] == '.') && n + 1 + len < max) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
}

/*
 * @p file made absolute against @p dir when relative (a build's "../src/x.c" seen from its build
 * directory), with "." and ".." folded, interned.
 */
static const char *
clean_path(struct gmt_symbolizer *s, const char *file, const char *dir)
{
	char buf[4096], out[4096];

	if (!file)
		return NULL;
	if (file[0] != '/' && dir && dir[0] == '/')
		snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	else
		snprintf(buf, sizeof(buf), "%s", file);
	if (buf[0] != '/')
		return intern_text(s, buf);
	gmt_sym_fold_path(buf, out, sizeof(out));
	return intern_text(s, out);
}

static const char *
cu_dir(Dwarf_Die *cu)
{
	Dwarf_Attribute attr;

	return cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
}

static void
scratch_push(struct gmt_symbolizer *s, const char *fn, const char *file, uint32_t line, bool inl)
{
	if (s->nscratch >= sizeof(s->scratch) / sizeof(s->scratch[0]))
		return;
	s->scratch[s->nscratch++] = (struct gmt_sym_frame){fn, file, line, inl};
}

/* The file and line where inlined scope @p die was called from, in its CU's file table. */
static void
call_site(struct gmt_symbolizer *s, Dwarf_Die *die, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word fileidx = 0, lineno = 0;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &lineno) == 0)
		*line = (uint32_t)lineno;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &fileidx) != 0)
		return;
	if (!dwarf_diecu(die, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 ||
	    fileidx >= nfiles)
		return;
	*file = clean_path(s, dwarf_filesrc(files, fileidx, NULL, NULL), cu_dir(&cu));
}

/*
 * Resolve @p addr (libdwfl's address space) of @p m into s->scratch: the DWARF scopes give the
 * inline chain; the line table gives the innermost file:line and each inlined scope the line of
 * its call in the next one out; the ELF symbol table names the function when there is no DWARF.
 */
static enum gmt_sym_status
resolve(struct gmt_symbolizer *s, struct sym_module *m, Dwarf_Addr addr)
{
	Dwarf_Addr cubias = 0;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *dl;
	const char *symname, *file = NULL;
	uint32_t line = 0;
	int nscopes = 0, lineno = 0;

	s->nscratch = 0;
	symname = symbol_name(m, addr);
	cu = dwfl_module_addrdie(m->mod, addr, &cubias);
	dl = dwfl_module_getsrc(m->mod, addr);
	if (dl) {
		const char *f = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);

		file = clean_path(s, f, cu_dir(cu));
		line = lineno > 0 ? (uint32_t)lineno : 0;
	}
	if (cu)
		nscopes = dwarf_getscopes(cu, addr - cubias, &scopes);
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		bool linkage;
		const char *fn;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		fn = die_function(s, &scopes[i], &linkage);
		if (tag == DW_TAG_subprogram) {
			/* A C++ function DIE without a linkage name: the symbol says more. */
			if (!linkage && symname && symname[0] == '_' && symname[1] == 'Z')
				fn = demangle(s, symname);
			if (!fn)
				fn = demangle(s, symname);
			scratch_push(s, fn, file, line, false);
			break;
		}
		scratch_push(s, fn, file, line, true);
		call_site(s, &scopes[i], &file, &line);
	}
	free(scopes);
	if (s->nscratch == 0 || s->scratch[s->nscratch - 1].inlined) {
		/* No DWARF function here (or only inlined scopes): the ELF symbol, if any. */
		if (!symname && s->nscratch == 0)
			return GMT_SYM_NO_SYMBOL;
		scratch_push(s, demangle(s, symname), file, line, false);
	}
	return GMT_SYM_OK;
}

// --- the cache ----------------------------------------------------------------------------------

static uint64_t
entry_hash(uint32_t module, uint64_t offset)
{
	uint64_t h = offset * 0x9e3779b97f4a7c15ull ^ ((uint64_t)module << 32 | module);

	return h ^ (h >> 29);
}

static bool
cache_grow(struct gmt_symbolizer *s)
{
	size_t cap = s->cache_mask ? (s->cache_mask + 1) * 2 : 4096;
	struct sym_entry *old = s->cache, *cache = calloc(cap, sizeof(*s->cache));
	size_t oldcap = s->cache_mask ? s->cache_mask + 1 : 0;

	if (!cache) {
		s->error = -ENOMEM;
		return false;
	}
	s->cache = cache;
	s->cache_mask = cap - 1;
	for (size_t i = 0; i < oldcap; i++) {
		size_t slot;

		if (!old[i].module)
			continue;
		slot = entry_hash(old[i].module, old[i].offset) & s->cache_mask;
		while (s->cache[slot].module)
			slot = (slot + 1) & s->cache_mask;
		s->cache[slot] = old[i];
	}
	free(old);
	return true;
}

enum gmt_sym_status
gmt_symbolize(struct gmt_symbolizer *s,
	      uint32_t module,
	      uint64_t offset,
	      const struct gmt_sym_frame **frames,
	      uint32_t *nframes)
{
	struct sym_module *m;
	struct sym_entry *e;
	enum gmt_sym_status st;
	size_t slot;

	*frames = NULL;
	*nframes = 0;
	if (module >= s->nmods)
		return GMT_SYM_NO_MODULE;
	m = &s->mods[module];
	if (!m->opened)
		module_open(s, m);
	/* A module without a usable file answers every offset alike: nothing to cache. */
	if (m->status != GMT_SYM_OK)
		return m->status;
	if (s->ncache * 2 >= s->cache_mask && !cache_grow(s))
		return GMT_SYM_NO_SYMBOL; /* out of memory (s->error) */
	slot = entry_hash(module + 1, offset) & s->cache_mask;
	for (; s->cache[slot].module; slot = (slot + 1) & s->cache_mask) {
		e = &s->cache[slot];
		if (e->module == module + 1 && e->offset == offset) {
			*frames = e->n ? s->pool + e->first : NULL;
			*nframes = e->n;
			return (enum gmt_sym_status)e->status;
		}
	}
	st = resolve(s, m, offset + m->bias);
	if (gmt_grow(&s->pool, &s->poolcap, s->npool + s->nscratch, sizeof(*s->pool), 4096) != 0) {
		s->error = -ENOMEM;
		return GMT_SYM_NO_SYMBOL;
	}
	if (s->nscratch)
		memcpy(s->pool + s->npool, s->scratch, s->nscratch * sizeof(*s->scratch));
	e = &s->cache[slot];
	*e = (struct sym_entry){
	    .offset = offset,
	    .module = module + 1,
	    .first = (uint32_t)s->npool,
	    .n = (uint16_t)s->nscratch,
	    .status = (uint8_t)st,
	};
	s->npool += s->nscratch;
	s->ncache++;
	*frames = e->n ? s->pool + e->first : NULL;
	*nframes = e->n;
	return st;
}
