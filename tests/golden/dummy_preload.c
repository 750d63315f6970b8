/*
 * @brief A do-nothing shared library for the `gpumemtrace run` golden test.
 *
 * The test checks what the launcher does (LD_PRELOAD, output directory, exit status), not what
 * the tracer does, so it preloads this instead of libgpumemtrace.so.
 */
int gmt_golden_dummy(void);

int
gmt_golden_dummy(void)
{
	return 0;
}
