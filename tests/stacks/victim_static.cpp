/*
 * @brief Static-cudart victim: a C++ program whose runtime is linked in (fake_cudart_static.cpp
 * stands in for libcudart_static.a), so cudaMalloc and the runtime's internals are frames of the
 * program's own executable. The report must name the user's functions as the sites, not them.
 *
 * Two leaks: leak_in_worker(int) on a std::thread, through cuda_runtime.h's typed cudaMalloc<T>
 * wrapper, and alloc_direct() on the main thread through the plain cudaMalloc(void **, size_t).
 * Prints one JSON line like victim_stacks (function names as the report demangles them).
 * Built with -O0 -g (the user's code), so every call is a frame.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <thread>
#include <unistd.h>

/* A call and the line it records share one line. */
/* clang-format off */

struct site {
	int line;
	int ok;
};

static site worker_site, direct_site, main_site;

__attribute__((noinline)) void
leak_in_worker(int n)
{
	float *p = nullptr;

	worker_site.ok = cudaMalloc(&p, (size_t)n << 20) == cudaSuccess; worker_site.line = __LINE__;
}

__attribute__((noinline)) void *
alloc_direct(size_t n)
{
	void *p = nullptr;

	direct_site.ok = cudaMalloc(&p, n) == cudaSuccess; direct_site.line = __LINE__;
	return p;
}

int
main()
{
	std::thread t(leak_in_worker, 3);

	t.join();
	alloc_direct(1 << 20); main_site.line = __LINE__;
	printf("{\"pid\":%d,\"sites\":["
	       "{\"bytes\":%d,\"ok\":%s,\"frames\":[{\"function\":\"leak_in_worker(int)\",\"file\":\"%s\",\"line\":%d}]},"
	       "{\"bytes\":%d,\"ok\":%s,\"frames\":[{\"function\":\"alloc_direct(unsigned long)\",\"file\":\"%s\",\"line\":%d},"
	       "{\"function\":\"main\",\"file\":\"%s\",\"line\":%d}]}]}\n",
	       (int)getpid(), 3 << 20, worker_site.ok ? "true" : "false", __FILE__, worker_site.line,
	       1 << 20, direct_site.ok ? "true" : "false", __FILE__, direct_site.line, __FILE__,
	       main_site.line);
	return 0;
}
/* clang-format on */
