/*
 * @brief CPU time per kind of thread (see cputime.h).
 */
#define _GNU_SOURCE
#include "util/cputime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KINDS 16

static struct {
	const char *name;
	double seconds;
	unsigned threads;
} kinds[KINDS];
static unsigned nkinds;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool on;

static void
read_env(void)
{
	const char *v = getenv("GMT_THREAD_TIMES");
	on = v && *v && strcmp(v, "0") != 0;
}

bool
gmt_cputime_on(void)
{
	pthread_once(&once, read_env);
	return on;
}

void
gmt_cputime_note(const char *name)
{
	struct timespec ts;

	if (!gmt_cputime_on() || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return;
	double s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	pthread_mutex_lock(&lock);
	unsigned i = 0;
	while (i < nkinds && strcmp(kinds[i].name, name) != 0)
		i++;
	if (i == nkinds && nkinds < KINDS)
		kinds[nkinds++].name = name;
	if (i < nkinds) {
		kinds[i].seconds += s;
		kinds[i].threads++;
	}
	pthread_mutex_unlock(&lock);
}

void
gmt_cputime_print(FILE *f)
{
	if (!gmt_cputime_on())
		return;
	gmt_cputime_note("calling");
	pthread_mutex_lock(&lock);
	fprintf(f, "gpumemtrace: thread CPU:");
	for (unsigned i = 0; i < nkinds; i++)
		fprintf(f, "%s %s %.3f s (%u)", i ? ";" : "", kinds[i].name, kinds[i].seconds,
			kinds[i].threads);
	fputc('\n', f);
	pthread_mutex_unlock(&lock);
}
