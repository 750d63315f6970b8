/*
 * @brief A do-nothing shared library for the `gpumemtrace run` golden test.
 *
 * The test checks what the launcher does (LD_PRELOAD, output directory, exit status), not what
 * the tracer does, so it preloads this instead of libgpumemtrace.so. `run` preloads only a library
 * that defines gmt_mark (the tracer's public API): this one does, and does nothing with it.
 */
int gmt_golden_dummy(void);
void gmt_mark(const char *label);

void
gmt_mark(const char *label)
{
	(void)label;
}

int
gmt_golden_dummy(void)
{
	return 0;
}
