/*
 * A library of the late-calls victim (victim_late.c): what CUDA libraries do at their teardown.
 * Its destructor frees the buffers the program left to it. As a DT_NEEDED library of the program
 * it is finalized after the preloaded tracer, so these frees come after the tracer's trailer
 * (issue 28 item 2: they were counted nowhere).
 */
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <unistd.h>

#define LATE_MAX 4096

void late_keep(void *p);

static void *kept[LATE_MAX];
static size_t nkept;

void
late_keep(void *p)
{
	if (nkept < LATE_MAX)
		kept[nkept++] = p;
}

__attribute__((destructor)) static void
late_teardown(void)
{
	for (size_t i = 0; i < nkept; i++)
		cudaFree(kept[i]);
	/* the rest of a teardown: the tracer counts late calls into its trailer within about a
	 * millisecond, so those of the last moment before the process ends may go uncounted */
	usleep(300 * 1000);
}
