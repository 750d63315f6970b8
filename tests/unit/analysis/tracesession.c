/*
 * @brief Traces written in the test, read through a session (tracetext.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/session/session.h"
#include "tracetext.h"

void
tt_session_add(struct gmt_session *s, const struct tt *t)
{
	char *path = tt_file(t);

	if (gmt_session_add_file(s, path) != 0) {
		fprintf(stderr, "%s", tt_diag());
		fprintf(stderr, "tracetext: the trace yielded nothing\n");
		exit(1);
	}
	free(path);
}

void
tt_session(struct gmt_session *s, const struct tt *t)
{
	gmt_session_init(s, NULL, tt_diag_stream());
	tt_session_add(s, t);
}
