/*
 * A library that must not be loaded: the preload suite's "secure" scenario names it in
 * GPUMEMTRACE_CUPTI_LIB for a setuid program, whose tracer has to ignore that option. Its
 * constructor says that it ran (in the control run without setuid, where the option counts).
 */
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void
announce(void)
{
	static const char line[] = "evil_lib: loaded\n";
	ssize_t w = write(2, line, sizeof(line) - 1);
	(void)w;
}
