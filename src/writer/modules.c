/*
 * @brief The module map (see modules.h).
 *
 * Why not one dl_iterate_phdr() walk over every object: glibc's dl_iterate_phdr computes each
 * object's TLS block for the calling thread (_dl_tls_get_addr_soft), and that races with a dlopen
 * on another thread. An object that has its TLS module id and is already in the loader's list, but
 * whose id has no place in the loader's TLS slot table yet (the table grows in chunks of 62),
 * sends the walk through a NULL chunk pointer: SIGSEGV inside ld.so, on our writer thread. A large
 * Python import (torch, transformers: hundreds of extension modules, many with thread-locals)
 * crosses such a chunk while the writer writes the map (tests/loader reproduces it).
 *
 * So the walk visits one object through dl_iterate_phdr, the main program (its TLS id, if any, is
 * in the first chunk: the soft lookup is safe there), and, from its callback, while glibc holds the
 * loader's list lock for us, follows the link_map chain itself. No TLS lookup is made; the list
 * cannot change under us; nodes are only freed after they are unlinked, which takes that lock.
 * An object's memory, though, is unmapped before it is unlinked (dlclose), so its ELF header and
 * notes are read with a fault-safe copy, and only once per object (a cache keyed by base and name).
 */
#define _GNU_SOURCE
#include "writer/modules.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/fdguard.h"
#include "util/hash.h"

#define MAX_SEGMENTS 16
#define MAX_BUILD_ID 64
#define MAX_PHDRS 64
#define MAX_NOTE_BYTES 4096

/* What is read once per object from its memory. */
struct objinfo {
	uintptr_t base;
	uint64_t name_hash;
	bool ok;
	uint8_t nseg, id_len;
	uint64_t segments[MAX_SEGMENTS][2];
	uint8_t id[MAX_BUILD_ID];
};

static struct {
	bool written;
	unsigned long long adds, subs; /* glibc's counters when last written */
	struct gmt_fd_guard mem;       /* /proc/self/mem, or none: the fallback safe reader */
	bool mem_tried;
	struct objinfo *cache; /* open addressing by (base, name hash); base 0 = empty */
	size_t cache_cap, cache_used;
} mm = {.mem = GMT_FD_GUARD_NONE};

struct counters {
	unsigned long long adds, subs;
};

static void
read_counters_from(const struct dl_phdr_info *info, size_t size, struct counters *c)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
}

static int
read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	read_counters_from(info, size, arg);
	return 1; /* the counters are the same in every entry: the first (the main program) is
		     enough */
}

bool
gmt_modules_changed(void)
{
	struct counters c = {0, 0};

	if (!mm.written)
		return true;
	dl_iterate_phdr(read_counters, &c);
	return c.adds != mm.adds || c.subs != mm.subs;
}

// --- fault-safe reads of our own memory
// ------------------------------------------------------------

/* Copy @p len bytes at @p addr of this process into @p dst without faulting on an unmapped page:
 * process_vm_readv on ourselves, else pread on /proc/self/mem (a seccomp profile may refuse the
 * first). False when neither can read it all. */
static bool
safe_read(void *dst, uintptr_t addr, size_t len)
{
	struct iovec local = {dst, len}, remote = {(void *)addr, len};
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return true;
	if (!mm.mem_tried || (mm.mem.fd >= 0 && !gmt_fd_guard_ours(&mm.mem))) {
		/* opened once; again only when the program closed it (its number may be a file of
		 * the program's now: never read, never closed) */
		mm.mem_tried = true;
		gmt_fd_guard_drop(&mm.mem);
		gmt_fd_guard_take(&mm.mem, open("/proc/self/mem", O_RDONLY | O_CLOEXEC));
	}
	if (mm.mem.fd < 0)
		return false;
	return pread(mm.mem.fd, dst, len, (off_t)addr) == (ssize_t)len;
}

// --- one object
// ------------------------------------------------------------------------------------

/* The NT_GNU_BUILD_ID note in a PT_NOTE segment's bytes. */
static size_t
build_id_in(const char *p, const char *end, uint8_t *out)
{
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const char *name = p + sizeof(*nh);
		size_t namesz = (nh->n_namesz + 3) & ~(size_t)3,
		       descsz = (nh->n_descsz + 3) & ~(size_t)3;
		if (namesz > (size_t)(end - name) || descsz > (size_t)(end - name) - namesz)
			return 0;
		const uint8_t *desc = (const uint8_t *)name + namesz;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    nh->n_descsz <= MAX_BUILD_ID) {
			memcpy(out, desc, nh->n_descsz);
			return nh->n_descsz;
		}
		p = (const char *)desc + descsz;
	}
	return 0;
}

/* Segments and build-id from program headers at @p phdr (already in our hands), notes read safely.
 */
static void
fill_from_phdrs(struct objinfo *o, uintptr_t base, const ElfW(Phdr) * phdr, size_t phnum)
{
	char notes[MAX_NOTE_BYTES];

	o->nseg = 0;
	o->id_len = 0;
	for (size_t i = 0; i < phnum; i++) {
		const ElfW(Phdr) *ph = &phdr[i];
		if (ph->p_type == PT_LOAD && o->nseg < MAX_SEGMENTS) {
			o->segments[o->nseg][0] = ph->p_vaddr;
			o->segments[o->nseg][1] = ph->p_memsz;
			o->nseg++;
		} else if (ph->p_type == PT_NOTE && !o->id_len) {
			size_t len = ph->p_memsz < sizeof(notes) ? ph->p_memsz : sizeof(notes);
			if (safe_read(notes, base + ph->p_vaddr, len))
				o->id_len = (uint8_t)build_id_in(notes, notes + len, o->id);
		}
	}
	o->ok = true;
}

/* An object known only by its link_map: its ELF header is at @p hdr (its load bias @p base, where
 * the first PT_LOAD is at 0; the vDSO's is where the kernel says). */
static void
fill_from_memory(struct objinfo *o, uintptr_t hdr, uintptr_t base)
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph[MAX_PHDRS];

	o->ok = false;
	if (!hdr || !safe_read(&eh, hdr, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS)
		return;
	if (!safe_read(ph, hdr + eh.e_phoff, eh.e_phnum * sizeof(ph[0])))
		return;
	fill_from_phdrs(o, base, ph, eh.e_phnum);
}

static struct objinfo *
cache_slot(uintptr_t base, uint64_t name_hash)
{
	if (mm.cache_used * 2 >= mm.cache_cap) {
		size_t cap = mm.cache_cap ? mm.cache_cap * 2 : 256;
		struct objinfo *c = calloc(cap, sizeof(*c));
		if (!c)
			return NULL;
		for (size_t i = 0; i < mm.cache_cap; i++) {
			struct objinfo *o = &mm.cache[i];
			if (!o->base)
				continue;
			size_t k = gmt_mix64(o->base ^ o->name_hash) & (cap - 1);
			while (c[k].base)
				k = (k + 1) & (cap - 1);
			c[k] = *o;
		}
		free(mm.cache);
		mm.cache = c;
		mm.cache_cap = cap;
	}
	size_t k = gmt_mix64(base ^ name_hash) & (mm.cache_cap - 1);
	while (mm.cache[k].base && (mm.cache[k].base != base || mm.cache[k].name_hash != name_hash))
		k = (k + 1) & (mm.cache_cap - 1);
	return &mm.cache[k];
}

// --- the walk
// --------------------------------------------------------------------------------------

struct walk {
	struct gmt_buf *out;
	size_t n;
	char exe[PATH_MAX];
	struct counters counters;
};

static void
write_entry(struct walk *w, const char *path, uintptr_t base, const struct objinfo *o)
{
	char real[PATH_MAX];

	if (!path || !path[0])
		path = w->n == 0 ? w->exe : "[vdso]"; /* the main program comes first, unnamed */
	else if (!strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
		path = "[vdso]";
	else if (path[0] != '/' && realpath(path, real))
		path = real; /* a relative LD_LIBRARY_PATH entry: make it usable from anywhere */
	struct gmt_module_view m = {
	    .path = path,
	    .base = base,
	    .build_id = o->id,
	    .build_id_len = o->id_len,
	    .segments = (const uint64_t(*)[2])o->segments,
	    .nsegments = o->nseg,
	};
	gmt_jsonl_modules_entry(w->out, &m, w->n++);
}

static int
walk_from_main(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct objinfo main_obj;
	struct link_map *l;

	/* glibc holds its list lock while we are here: the chain below cannot change */
	read_counters_from(info, size, &w->counters);
	fill_from_phdrs(&main_obj, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
	write_entry(w, info->dlpi_name, info->dlpi_addr, &main_obj);

	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	for (l = _r_debug.r_map ? _r_debug.r_map->l_next : NULL; l; l = l->l_next) {
		const char *name = l->l_name ? l->l_name : "";
		uint64_t h = gmt_fnv1a(GMT_FNV_SEED, name, strlen(name));
		uintptr_t base = (uintptr_t)l->l_addr;
		struct objinfo *o = cache_slot(base ? base : 1, h), tmp;
		if (!o)
			o = &tmp;
		if (!o->base) {
			uintptr_t hdr = base;
			if (vdso &&
			    (!strncmp(name, "linux-vdso", 10) || !strncmp(name, "linux-gate", 10)))
				hdr = vdso; /* the vDSO's header is where the kernel says */
			fill_from_memory(o, hdr, base);
			o->base = base ? base : 1;
			o->name_hash = h;
			if (o != &tmp)
				mm.cache_used++;
		}
		if (o->ok)
			write_entry(w, name, base, o);
	}
	return 1;
}

void
gmt_modules_write(struct gmt_buf *out, uint64_t seq)
{
	struct walk w = {.out = out};
	ssize_t n = readlink("/proc/self/exe", w.exe, sizeof(w.exe) - 1);

	w.exe[n > 0 ? n : 0] = '\0';
	gmt_jsonl_modules_begin(out, seq);
	dl_iterate_phdr(walk_from_main, &w);
	gmt_jsonl_modules_end(out);
	mm.written = true;
	mm.adds = w.counters.adds;
	mm.subs = w.counters.subs;
}

void
gmt_modules_forget(void)
{
	mm.written = false;
	/* the parent's /proc/self/mem reads the parent's memory: the child opens its own */
	gmt_fd_guard_release(&mm.mem);
	mm.mem_tried = false;
}
