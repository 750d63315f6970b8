/*
 * @brief The real dlclose() (dlclose.h). The library exports a dlclose of its own (lifecycle.c:
 * the writer records the modules before a library goes), which our own handles must not take:
 * glibc's is found with dlvsym, at the version programs built against glibc 2.34 or later call,
 * else the older one.
 */
#define _GNU_SOURCE
#include "capture/dlclose.h"

#include <dlfcn.h>
#include <stdatomic.h>

typedef int (*dlclose_fn)(void *);

static dlclose_fn
real_dlclose(void)
{
	static _Atomic(dlclose_fn) fn;
	dlclose_fn f = atomic_load_explicit(&fn, memory_order_acquire);
	if (!f) {
		f = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.34");
		if (!f)
			f = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.2.5");
		atomic_store_explicit(&fn, f, memory_order_release);
	}
	return f;
}

int
gmt_real_dlclose(void *handle)
{
	dlclose_fn f = real_dlclose();
	return f ? f(handle) : -1;
}
