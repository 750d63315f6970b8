/*
 * Stack capture and interning (src/capture/stacks.c): the same call site gives the same id, another
 * site another id; the stored frames are the caller's (the library's own frames dropped), innermost
 * first; many threads interning the same sites agree; the depth option is honoured.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <unistd.h>

#include "capture/stacks.h"
#include "check.h"

#define THREADS 8
#define ROUNDS 2000

static __attribute__((noinline)) uint32_t
site_a(void)
{
	uint32_t id = gmt_stack_capture(NULL);
	__asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
	return id;
}

static __attribute__((noinline)) uint32_t
site_b(void)
{
	uint32_t id = gmt_stack_capture(NULL);
	__asm__ volatile("" ::: "memory");
	return id;
}

static uint32_t ids_a[THREADS], ids_b[THREADS];

/*
 * Under ThreadSanitizer (the TSan stage of scripts/test) the workers never exit: libunwind frees
 * its per-thread trace cache in a thread-exit destructor that takes a mutex after TSan has torn
 * the thread down, a crash inside TSan, not a race of ours. They park instead, and the test ends
 * with _exit. Elsewhere they are joined.
 */
#if defined(__SANITIZE_THREAD__)
#	define PARK_WORKERS 1
#else
#	define PARK_WORKERS 0
#endif
static sem_t done;

static void *
worker(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t a = site_a(), b = site_b();
		CHECK(a != 0 && b != 0 && a != b);
		if (i == 0) {
			ids_a[t] = a;
			ids_b[t] = b;
		}
		CHECK(a == ids_a[t] && b == ids_b[t]); /* stable once interned */
	}
	sem_post(&done);
	while (PARK_WORKERS)
		pause();
	return NULL;
}

static bool
in_function(uint64_t ret, void *fn)
{
	Dl_info a, b;
	/* a return address lies inside the calling function: same symbol */
	return dladdr((void *)(uintptr_t)(ret - 1), &a) && dladdr(fn, &b) &&
	       a.dli_saddr == b.dli_saddr;
}

int
main(void)
{
	gmt_stacks_setup();
	if (!gmt_stacks_native()) {
		printf("stacks: built without libunwind, skipped\n");
		return SKIP_TEST;
	}
	uint32_t again[2], a, b;
	volatile int twice = 2; /* not unrolled: one call site, called twice */
	for (int i = 0; i < twice; i++)
		again[i] = site_a();
	a = again[0];
	b = site_b();
	CHECK(a && b && a != b);
	CHECK(again[1] == a);

	struct gmt_stack_view v;
	CHECK(gmt_stack_get(a, &v) && v.id == a && v.nframes >= 2 && v.npy == 0);
	CHECK(in_function(v.frames[0], (void *)site_a)); /* innermost: the site, not the library */
	CHECK(in_function(v.frames[1], (void *)main));
	CHECK(!gmt_stack_get(0, &v) && !gmt_stack_get(a + 1000, &v));

	pthread_t th[THREADS];
	sem_init(&done, 0, 0);
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < THREADS; t++)
		sem_wait(&done);
	for (int t = 0; t < THREADS && !PARK_WORKERS; t++)
		pthread_join(th[t], NULL);
	/* threads start in worker(), not main(): other stacks than the main thread's; a race on a
	 * slot being written may give one stack two ids, never one id two stacks */
	for (int t = 0; t < THREADS; t++) {
		CHECK(ids_a[t] != a && ids_b[t] != b);
		struct gmt_stack_view va, vb;
		CHECK(gmt_stack_get(ids_a[t], &va) && gmt_stack_get(ids_b[t], &vb));
		CHECK(in_function(va.frames[0], (void *)site_a) &&
		      in_function(vb.frames[0], (void *)site_b));
		CHECK(in_function(va.frames[1], (void *)worker));
	}
	CHECK(gmt_stacks_overflow() == 0);
	printf("stacks: ok\n");
	fflush(stdout);
	if (PARK_WORKERS)
		_exit(0);
	return 0;
}
