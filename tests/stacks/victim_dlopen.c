/*
 * @brief dlopen/dlclose victim: allocates through libvictim.so, unloads it, loads
 * libvictim_other.so (which may land at the same address) and allocates through that.
 *
 *     victim_dlopen LIBVICTIM LIBOTHER
 *
 * Each allocation leaks. The report must still name the first library's frames: its stack was
 * written under the module list of that moment. Prints one JSON line like victim_stacks.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "victim_sites.h"

typedef void *(*alloc_fn)(size_t n, struct victim_site *s);

/* The site's names, copied out: the library's strings go away with dlclose(). */
struct copied_site {
	char function[64];
	char file[256];
	int line;
	int ok;
};

static int
alloc_through(const char *lib, const char *sym, size_t n, struct copied_site *out)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	struct victim_site s = {0};
	alloc_fn fn;

	if (!h) {
		fprintf(stderr, "victim_dlopen: %s\n", dlerror());
		return -1;
	}
	fn = (alloc_fn)(uintptr_t)dlsym(h, sym);
	if (!fn) {
		fprintf(stderr, "victim_dlopen: %s\n", dlerror());
		return -1;
	}
	fn(n, &s);
	snprintf(out->function, sizeof(out->function), "%s", s.function ? s.function : "?");
	snprintf(out->file, sizeof(out->file), "%s", s.file ? s.file : "?");
	out->line = s.line;
	out->ok = s.ok;
	return dlclose(h);
}

static void
print_site(const struct copied_site *s, int bytes, int comma)
{
	printf("%s{\"bytes\":%d,\"ok\":%s,\"frames\":[", comma ? "," : "", bytes,
	       s->ok ? "true" : "false");
	printf("{\"function\":\"%s\",\"file\":\"%s\",\"line\":%d}]}", s->function, s->file,
	       s->line);
}

int
main(int argc, char **argv)
{
	struct copied_site first = {0}, second = {0};
	int count = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: victim_dlopen LIBVICTIM LIBOTHER\n");
		return 2;
	}
	/* The runtime stays loaded throughout: only the victim libraries come and go. */
	cudaGetDeviceCount(&count);
	if (alloc_through(argv[1], "lib_alloc_weights", 1 << 20, &first) != 0 ||
	    alloc_through(argv[2], "other_alloc", 2 << 20, &second) != 0)
		return 1;
	printf("{\"pid\":%d,\"sites\":[", (int)getpid());
	print_site(&first, 1 << 20, 0);
	print_site(&second, 2 << 20, 1);
	printf("]}\n");
	return 0;
}
