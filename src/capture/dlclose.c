/*
 * @brief dlclose() interposition (LD_PRELOAD): before a library can be unloaded, the writer writes
 * the stacks captured so far and a modules line that still lists the library, so that frames in
 * it stay resolvable offline (heaptrack and memray watch dlclose for the same reason).
 *
 * Exported as dlclose@@GLIBC_2.34 (libgpumemtrace.sym), the version programs built against glibc
 * 2.34 or later call; the real function is found with dlvsym. The wait is bounded (100 ms) and
 * only happens while the tracer runs with native stacks; it never happens inside a CUDA call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <time.h>

#include "capture/capture.h"
#include "capture/stacks.h"
#include "writer/writer.h"

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

GMT_EXPORT int
dlclose(void *handle)
{
	if (gmt_depth == 0 && gmt_stacks_native() &&
	    atomic_load_explicit(&gmt_state, memory_order_acquire) == GMT_STATE_RUNNING) {
		uint64_t ticket = gmt_writer_request_modules();
		for (int i = 0; i < 1000 && !gmt_writer_modules_done(ticket); i++) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
	}
	return gmt_real_dlclose(handle);
}
