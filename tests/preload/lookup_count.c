/*
 * @brief A shim for the preload suite's "lookups" scenario: preloaded before the tracer, it counts
 * the dlopen(RTLD_NOLOAD) calls that look for the loaded libcudart.so.13 (how the tracer finds a
 * runtime function it has not resolved yet) and forwards every dlopen unchanged. At exit one line
 * on stderr, "lookup-count: N", says how many there were: a runtime function that does not exist
 * must be looked up once, not at every traced call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic unsigned long lookups;

__attribute__((visibility("default"))) void *
dlopen(const char *file, int mode)
{
	static void *(*real_dlopen)(const char *, int);

	if (!real_dlopen)
		*(void **)&real_dlopen = dlsym(RTLD_NEXT, "dlopen");
	if (file && (mode & RTLD_NOLOAD) && strcmp(file, "libcudart.so.13") == 0)
		atomic_fetch_add(&lookups, 1);
	return real_dlopen(file, mode);
}

__attribute__((destructor)) static void
report(void)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "lookup-count: %lu\n", atomic_load(&lookups));
	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;
}
