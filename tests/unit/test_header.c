/* include/gpumemtrace.h compiles as strict C99, and GMT_MARK is a no-op without the tracer. */
#include <gpumemtrace.h>
#include <stdio.h>

int
main(void)
{
	GMT_MARK("no tracer here");
	printf("header: ok (gmt_mark %s)\n", gmt_mark ? "present" : "absent");
	return 0;
}
