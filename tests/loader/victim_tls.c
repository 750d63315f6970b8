/*
 * A victim for the loader suite: the dlopen burst of a large Python import (torch, transformers)
 * in miniature. It loads copies of tls_lib.so (each with thread-local storage, each slow to
 * relocate) until the loader needs a second chunk of its TLS slot table, starting CUDA (and so the
 * tracer's writer thread) a few libraries before that point, and allocating between loads so the
 * writer keeps writing the module map while libraries come in.
 *
 *   victim_tls DIR N [threads]    DIR holds tls_lib.so copies named 0.so ... N-1.so; with
 *                                 "threads", 4 more threads allocate all the while through call
 *                                 chains of changing depth (new stacks: the unwinder looks up
 *                                 objects on those threads while libraries come in)
 *
 * Prints one JSON line with what it did; exit 0 when it ran to the end.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* glibc sizes its first TLS slot table for the initial modules plus this many
 * (TLS_SLOTINFO_SURPLUS) */
#define SLOTINFO_SURPLUS 62

static int
max_modid(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	size_t *max = arg;
	if (info->dlpi_tls_modid > *max)
		*max = info->dlpi_tls_modid;
	return 0;
}

static _Atomic bool stop;
static _Atomic long thread_allocs;
/* the newest library's tls_lib_call: the threads allocate through it */
static void (*_Atomic newest_call)(void (*)(void));

static void
alloc_free(void)
{
	void *p;
	if (cudaMalloc(&p, 4096) == cudaSuccess) {
		atomic_fetch_add(&thread_allocs, 1);
		cudaFree(p);
	}
}

static void *
allocator(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void (*call)(void (*)(void)) = atomic_load(&newest_call);
		if (call)
			call(alloc_free); /* a frame in the library loaded last */
		else
			alloc_free();
		struct timespec ts = {0, 50 * 1000}; /* steady, not a flood: no event is dropped */
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "threads"))) {
		fprintf(stderr, "usage: %s DIR N [threads]\n", argv[0]);
		return 2;
	}
	pthread_t threads[4];
	int want_threads = argc == 4, started = 0;
	const char *dir = argv[1];
	int n = atoi(argv[2]);
	size_t initial = 0;
	dl_iterate_phdr(max_modid, &initial);
	size_t boundary = initial + 1 + SLOTINFO_SURPLUS; /* the first id past the first table */

	int loaded = 0, allocs = 0, frees = 0;
	size_t modid = 0;
	void *p = NULL;
	char path[4096];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%d.so", dir, i);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
			return 1;
		}
		loaded++;
		dlinfo(h, RTLD_DI_TLS_MODID, &modid);
		int (*touch)(void) = (int (*)(void))dlsym(h, "tls_lib_touch");
		if (touch)
			touch();
		atomic_store(&newest_call, (void (*)(void (*)(void)))dlsym(h, "tls_lib_call"));
		/* CUDA starts a few ids before the table's end: the writer's thread then has room
		 * in its own TLS vector for ids the table does not cover yet */
		if (modid + 6 >= boundary || p) {
			for (; want_threads && started < 4; started++)
				pthread_create(&threads[started], NULL, allocator,
					       (void *)(uintptr_t)(started + 1));
			if (p) {
				cudaFree(p);
				frees++;
			}
			if (cudaMalloc(&p, 1 << 20) == cudaSuccess)
				allocs++;
		}
		if (modid > boundary + 8)
			break;
	}
	if (p) {
		cudaFree(p);
		frees++;
	}
	atomic_store(&stop, true);
	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	printf("{\"thread_allocs\": %ld, \"loaded\": %d, \"last_modid\": %zu, \"boundary\": %zu, "
	       "\"allocs\": %d, \"frees\": %d}\n",
	       atomic_load(&thread_allocs), loaded, modid, boundary, allocs, frees);
	return modid > boundary ? 0 : 1;
}
