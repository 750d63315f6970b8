/*
 * @brief The module map (see modules.h).
 */
#define _GNU_SOURCE
#include "writer/modules.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SEGMENTS 16
#define MAX_BUILD_ID 64

static struct {
	bool written;
	unsigned long long adds, subs; /* glibc's counters when last written */
} mm;

struct counters {
	unsigned long long adds, subs;
};

static int
read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct counters *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	return 1; /* the counters are the same in every entry: one is enough */
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

/* The NT_GNU_BUILD_ID note of an object, from its PT_NOTE segments in memory. */
static size_t
build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const uint8_t *desc = (const uint8_t *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= MAX_BUILD_ID) {
				memcpy(out, desc, nh->n_descsz);
				return nh->n_descsz;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

struct walk {
	struct gmt_buf *out;
	size_t n;
	char exe[PATH_MAX];
	struct counters counters;
};

static int
write_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	uint64_t segments[MAX_SEGMENTS][2];
	uint8_t id[MAX_BUILD_ID];
	size_t nseg = 0;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		w->counters.adds = info->dlpi_adds;
		w->counters.subs = info->dlpi_subs;
	}
	for (int i = 0; i < info->dlpi_phnum && nseg < MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			segments[nseg][0] = ph->p_vaddr;
			segments[nseg][1] = ph->p_memsz;
			nseg++;
		}
	}
	const char *path = info->dlpi_name;
	char real[PATH_MAX];
	if (!path || !path[0])
		path = w->n == 0 ? w->exe : "[vdso]"; /* the main program comes first, unnamed */
	else if (!strncmp(path, "linux-vdso", 10))
		path = "[vdso]";
	else if (path[0] != '/' && realpath(path, real))
		path = real; /* a relative LD_LIBRARY_PATH entry: make it usable from anywhere */
	struct gmt_module_view m = {
		.path = path,
		.base = info->dlpi_addr,
		.build_id = id,
		.build_id_len = build_id(info, id),
		.segments = (const uint64_t(*)[2])segments,
		.nsegments = nseg,
	};
	gmt_jsonl_modules_entry(w->out, &m, w->n++);
	return 0;
}

void
gmt_modules_write(struct gmt_buf *out, uint64_t seq)
{
	struct walk w = {.out = out};
	ssize_t n = readlink("/proc/self/exe", w.exe, sizeof(w.exe) - 1);

	w.exe[n > 0 ? n : 0] = '\0';
	gmt_jsonl_modules_begin(out, seq);
	dl_iterate_phdr(write_one, &w);
	gmt_jsonl_modules_end(out);
	mm.written = true;
	mm.adds = w.counters.adds;
	mm.subs = w.counters.subs;
}

void
gmt_modules_forget(void)
{
	mm.written = false;
}
