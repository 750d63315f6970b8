/*
 * @brief The CUDA runtimes room (runtimes.h): the sonames of each runtime and its CUPTI, the
 * runtimes an interposed wrapper was called through, and the runtimes the process has mapped.
 * Both capture paths read it (interpose.c notes a runtime per call, cupti.c picks the CUPTI of a
 * loaded runtime, lifecycle.c names them in the header); it calls neither.
 */
#define _GNU_SOURCE
#include "capture/runtimes.h"

#include <dlfcn.h>

#include "capture/dlclose.h"

_Atomic unsigned gmt_runtimes_called;

const char *const gmt_cudart_sonames[GMT_CUDART_COUNT] = {
#define X(tag, cudart, cupti) [GMT_CUDART_##tag] = cudart,
    GMT_CUDA_RUNTIMES(X)
#undef X
};

const char *const gmt_cupti_sonames[GMT_CUDART_COUNT] = {
#define X(tag, cudart, cupti) [GMT_CUDART_##tag] = cupti,
    GMT_CUDA_RUNTIMES(X)
#undef X
};

unsigned
gmt_cudart_seen(void)
{
	unsigned seen = atomic_load_explicit(&gmt_runtimes_called, memory_order_relaxed);

	for (int rt = 0; rt < GMT_CUDART_COUNT; rt++) {
		void *h = dlopen(gmt_cudart_sonames[rt], RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			seen |= 1u << rt;
			gmt_real_dlclose(h);
		}
	}
	return seen;
}
