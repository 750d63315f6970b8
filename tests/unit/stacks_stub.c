/*
 * The tracer's option lookup for test_stacks: stacks.c is linked into a small shared library of
 * its own here, so that its frames (not the test program's) are the "tracer's own" it drops.
 * The self-profile is off (its probes see gmt_prof_on false).
 */
#include <string.h>

#include "capture/capture.h"
#include "capture/selfprof.h"
#include "util/options.h"

__thread unsigned gmt_depth __attribute__((tls_model("initial-exec")));
bool gmt_prof_on;

void
gmt_prof_add_slow(enum gmt_prof_part part, uint64_t ticks)
{
	(void)part;
	(void)ticks;
}

const struct gmt_options *
gmt_tracer_options(void)
{
	static struct gmt_options opts;
	static int done;
	if (!done) {
		strcpy(opts.stacks, "native");
		opts.stack_depth = 64;
		done = 1;
	}
	return &opts;
}
