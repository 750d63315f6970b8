/*
 * @brief The CUDA runtimes the tracer records: CUDA 13, 12 and 11.x (11.8 is what PyTorch's
 * cu118 builds ship), newest first.
 *
 *   GMT_CUDA_RUNTIME(tag, cudart, cupti)
 *
 * tag:    the major, for names (gmt_cu12_cudaMalloc)
 * cudart: the runtime's soname, which is also the symbol version of every cuda* symbol it exports
 *         (readelf -V of NVIDIA's libcudart.so.13, .so.12 and .so.11.0, the last one for every
 *         CUDA 11 minor)
 * cupti:  the soname of the CUPTI of the same major (libcupti.so.11.8 for CUDA 11.8)
 *
 * The interposed wrappers exist once per runtime (interpose.c): a program linked against
 * libcudart.so.12 references cudaMalloc@libcudart.so.12 and binds to that copy, which forwards
 * to the same version of the real function. CUDA 13's copy is the default version
 * (cudaMalloc@@libcudart.so.13, the version script's node), the others are `.symver` aliases
 * in nodes of their own (libgpumemtrace.sym.in).
 *
 * The room (runtimes.c) knows no capture path: interpose.c notes the runtime of each call here,
 * cupti.c reads which are loaded, and neither calls the other for it.
 */
#ifndef GMT_CAPTURE_RUNTIMES_H
#define GMT_CAPTURE_RUNTIMES_H

#include <stdatomic.h>

#define GMT_CUDART_SONAME_13 "libcudart.so.13"
#define GMT_CUDART_SONAME_12 "libcudart.so.12"
#define GMT_CUDART_SONAME_11 "libcudart.so.11.0"

#define GMT_CUDA_RUNTIMES(X)                                                                       \
	X(13, GMT_CUDART_SONAME_13, "libcupti.so.13")                                              \
	X(12, GMT_CUDART_SONAME_12, "libcupti.so.12")                                              \
	X(11, GMT_CUDART_SONAME_11, "libcupti.so.11.8")

enum gmt_cuda_runtime {
#define GMT_RT_ENUM(tag, cudart, cupti) GMT_CUDART_##tag,
	GMT_CUDA_RUNTIMES(GMT_RT_ENUM)
#undef GMT_RT_ENUM
	    GMT_CUDART_COUNT
};

/** The runtime's soname (= its symbol version) and its CUPTI's, by enum gmt_cuda_runtime. */
extern const char *const gmt_cudart_sonames[GMT_CUDART_COUNT];
extern const char *const gmt_cupti_sonames[GMT_CUDART_COUNT];

/** The runtimes an interposed wrapper was called through, a bit each (gmt_runtime_note()). */
extern _Atomic unsigned gmt_runtimes_called;

/** Inside a wrapper: a fact for the header, one relaxed load per call once the bit is set. */
static inline void
gmt_runtime_note(enum gmt_cuda_runtime rt)
{
	unsigned bit = 1u << rt;
	if (__builtin_expect(
		!(atomic_load_explicit(&gmt_runtimes_called, memory_order_relaxed) & bit), 0))
		atomic_fetch_or_explicit(&gmt_runtimes_called, bit, memory_order_relaxed);
}

/**
 * The CUDA runtimes loaded in the process, one bit per enum gmt_cuda_runtime: those an
 * interposed wrapper was called through, and those the dynamic linker has mapped (dlopen
 * RTLD_NOLOAD: takes the loader's lock, so only outside the application's CUDA calls: the
 * writer thread asks when it writes the header).
 */
unsigned gmt_cudart_seen(void);

#endif
