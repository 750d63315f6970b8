/*
 * @brief Call-stack victim: main → a() → b() → lib_alloc_*() (libvictim.so) → cudaMalloc.
 *
 * One leak per call site (weights, grads, an inlined site) and one failed allocation (huge).
 * Prints one JSON line: the pid and, for each site, the function, file and line of the
 * allocating call and of each caller, innermost first, as `gpumemtrace report` must name them.
 * Built with -O0 -g; a() and b() are noinline, so every call is a frame. Each call shares its
 * line with the __LINE__ it records (and a SITE: marker that make_trace.py reads).
 */
#include <stdio.h>
#include <unistd.h>

#include "victim_sites.h"

/* A call and the __LINE__ it records (and its SITE: marker) share one line. */
/* clang-format off */

enum { SITE_WEIGHTS, SITE_GRADS, SITE_INLINED, SITE_HUGE, SITE_COUNT };

struct chain {
	size_t bytes;
	struct victim_site site, inl, b, a, main;
};

static __attribute__((noinline)) void
b(int which, struct chain *c)
{
	switch (which) {
	case SITE_WEIGHTS: lib_alloc_weights(c->bytes, &c->site); victim_site_set(&c->b, __func__, __FILE__, __LINE__, 1); break; /* SITE:b-weights */
	case SITE_GRADS: lib_alloc_grads(c->bytes, &c->site); victim_site_set(&c->b, __func__, __FILE__, __LINE__, 1); break; /* SITE:b-grads */
	case SITE_INLINED: lib_alloc_inlined(c->bytes, &c->site, &c->inl); victim_site_set(&c->b, __func__, __FILE__, __LINE__, 1); break; /* SITE:b-inlined */
	default: lib_alloc_huge(c->bytes, &c->site); victim_site_set(&c->b, __func__, __FILE__, __LINE__, 1); break; /* SITE:b-huge */
	}
}

static __attribute__((noinline)) void
a(int which, struct chain *c)
{
	b(which, c); victim_site_set(&c->a, __func__, __FILE__, __LINE__, 1); /* SITE:a-b */
}

static void
print_frame(const struct victim_site *s, int comma)
{
	printf("%s{\"function\":\"%s\",\"file\":\"%s\",\"line\":%d}", comma ? "," : "", s->function,
	       s->file, s->line);
}

int
main(void)
{
	static const size_t sizes[SITE_COUNT] = {1 << 20, 2 << 20, 3 << 20, (size_t)1 << 50};
	struct chain c[SITE_COUNT] = {{0}};

	for (int i = 0; i < SITE_COUNT; i++) {
		c[i].bytes = sizes[i];
		a(i, &c[i]); victim_site_set(&c[i].main, __func__, __FILE__, __LINE__, 1); /* SITE:main-a */
	}
	printf("{\"pid\":%d,\"sites\":[", (int)getpid());
	for (int i = 0; i < SITE_COUNT; i++) {
		printf("%s{\"bytes\":%zu,\"ok\":%s,\"frames\":[", i ? "," : "", c[i].bytes,
		       c[i].site.ok ? "true" : "false");
		print_frame(&c[i].site, 0);
		if (i == SITE_INLINED)
			print_frame(&c[i].inl, 1);
		print_frame(&c[i].b, 1);
		print_frame(&c[i].a, 1);
		print_frame(&c[i].main, 1);
		printf("]}");
	}
	printf("]}\n");
	return 0;
}
/* clang-format on */
