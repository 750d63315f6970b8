/*
 * @brief Test library for the Python stack walker. test_pystack.py loads it with ctypes into a
 * real interpreter (it does not link libpython): it walks the calling thread's frames with
 * gmt_py_walk(), maps each frame to file:line with gmt_pyline() and the registered line table,
 * and hands the result back as text to compare with traceback.extract_stack(). ctypes.CDLL
 * releases the GIL around every call, so the walk runs the way it does inside a CUDA hook.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/symbols/pyline.h"
#include "capture/pystack.h"
#include "util/hex.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FRAMES 256

EXPORT int pywalk_format(char *buf, int cap);
EXPORT int pywalk_count(void);
EXPORT int pywalk_ids(uint32_t *ids, int max);
EXPORT const char *pywalk_version(void);
EXPORT int pywalk_cthread(void);
EXPORT int pywalk_gilstate_thread(void);
EXPORT double pywalk_bench(int iters, int *frames);
EXPORT int pywalk_pyline(const char *version, const uint8_t *t, size_t n, int first, uint32_t off);
EXPORT int pywalk_pyline_hex(const char *version, const char *hex, int first, uint32_t off);
EXPORT int pywalk_next_codes(int *first_id, int *last_id);
EXPORT int pywalk_watch(void);

/* One line per frame, innermost first: file, line, name, qualname, entry, code id. */
static int
format_frame(char *buf, size_t cap, const struct gmt_pyframe *f)
{
	struct gmt_pycode_view c;

	if (!gmt_py_code(f->code_id, &c))
		return snprintf(buf, cap, "?\t-1\t?\t?\t%u\t%u\n", f->entry, f->code_id);
	int line =
	    gmt_pyline(c.version, c.linetable, c.linetable_len, c.firstlineno, f->instr_offset);
	return snprintf(buf, cap, "%s\t%d\t%s\t%s\t%u\t%u\n", c.file, line, c.name, c.qualname,
			f->entry, c.id);
}

/* Walk and format; returns the frame count, a negative gmt_py_walk() result, or -100 (buffer). */
int
pywalk_format(char *buf, int cap)
{
	struct gmt_pyframe frames[MAX_FRAMES];
	int n = gmt_py_walk(frames, MAX_FRAMES);
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		int w = format_frame(buf + used, (size_t)cap - used, &frames[i]);
		if (w < 0 || (size_t)w >= (size_t)cap - used)
			return -100;
		used += (size_t)w;
	}
	return n;
}

int
pywalk_count(void)
{
	struct gmt_pyframe frames[MAX_FRAMES];
	return gmt_py_walk(frames, MAX_FRAMES);
}

/* The code ids of the walk, innermost first; returns the count (or gmt_py_walk()'s error). */
int
pywalk_ids(uint32_t *ids, int max)
{
	struct gmt_pyframe frames[MAX_FRAMES];
	int n = gmt_py_walk(frames, max < MAX_FRAMES ? max : MAX_FRAMES);

	for (int i = 0; i < n; i++)
		ids[i] = frames[i].code_id;
	return n;
}

const char *
pywalk_version(void)
{
	return gmt_py_version();
}

static void *
walk_thread(void *arg)
{
	*(int *)arg = pywalk_count();
	return NULL;
}

/* A thread the interpreter has never seen: no thread state at all (-1). */
int
pywalk_cthread(void)
{
	pthread_t t;
	int result = -99;

	if (pthread_create(&t, NULL, walk_thread, &result) != 0)
		return -98;
	pthread_join(t, NULL);
	return result;
}

static void *
gilstate_thread(void *arg)
{
	int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");

	if (!ensure || !release) {
		*(int *)arg = -97;
		return NULL;
	}
	int g = ensure();
	*(int *)arg = pywalk_count();
	release(g);
	return NULL;
}

/* A C thread with a thread state but no Python frames (as PyTorch's autograd threads): 0. */
int
pywalk_gilstate_thread(void)
{
	pthread_t t;
	int result = -99;

	if (pthread_create(&t, NULL, gilstate_thread, &result) != 0)
		return -98;
	pthread_join(t, NULL);
	return result;
}

/* Nanoseconds per gmt_py_walk() of the calling thread (median of 5 runs of @p iters walks). */
double
pywalk_bench(int iters, int *frames)
{
	struct gmt_pyframe out[MAX_FRAMES];
	double runs[5];

	for (int r = 0; r < 5; r++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < iters; i++)
			*frames = gmt_py_walk(out, MAX_FRAMES);
		clock_gettime(CLOCK_MONOTONIC, &b);
		runs[r] =
		    ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / iters;
	}
	for (int i = 1; i < 5; i++) /* insertion sort: 5 values */
		for (int j = i; j > 0 && runs[j] < runs[j - 1]; j--) {
			double t = runs[j];
			runs[j] = runs[j - 1];
			runs[j - 1] = t;
		}
	return runs[2];
}

int
pywalk_pyline(const char *version, const uint8_t *t, size_t n, int first, uint32_t off)
{
	return gmt_pyline(version, t, n, first, off);
}

int
pywalk_pyline_hex(const char *version, const char *hex, int first, uint32_t off)
{
	size_t len = strlen(hex);
	uint8_t *t = malloc(len / 2 + 1);
	ssize_t n = t ? gmt_unhex(hex, len, t, len / 2 + 1) : -1;
	int line = n < 0 ? -1000 : gmt_pyline(version, t, (size_t)n, first, off);

	free(t);
	return line;
}

/*
 * Drain gmt_py_next_code(): the number of records, first and last id (ids are increasing; ids
 * missing in between were abandoned). Returns -1 when they are not increasing.
 */
int
pywalk_next_codes(int *first_id, int *last_id)
{
	struct gmt_pycode_view c;
	int n = 0;

	*first_id = *last_id = 0;
	while (gmt_py_next_code(&c)) {
		if (n == 0)
			*first_id = (int)c.id;
		else if ((int)c.id <= *last_id)
			return -1;
		*last_id = (int)c.id;
		n++;
	}
	return n;
}

/* The code watcher (called with the GIL held: ctypes.PYFUNCTYPE). */
int
pywalk_watch(void)
{
	return gmt_py_watch_code();
}
