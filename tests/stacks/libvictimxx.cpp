/*
 * @brief libvictimxx.so: a C++ call site of cudaMalloc, so the offline test sees a mangled
 * symbol demangled (victim::Pool::grab(unsigned long, int*)). Used only for its addresses.
 */
#include <cuda_runtime_api.h>

/* A call and the __LINE__ it records (and its SITE: marker) share one line. */
/* clang-format off */

namespace victim {

struct Pool {
	static void *grab(unsigned long n, int *line);
};

void *
Pool::grab(unsigned long n, int *line)
{
	void *p = nullptr;

	cudaMalloc(&p, n); *line = __LINE__; /* SITE:cxx */
	return p;
}

} // namespace victim

extern "C" void *
cxx_alloc(unsigned long n, int *line)
{
	return victim::Pool::grab(n, line); /* SITE:cxx-call */
}
/* clang-format on */
