/*
 * @brief Refusal: a "Python" the walker has no layout for says so in exactly one warning line and
 * reports unavailable. The executable exports the symbols detection looks for (export_dynamic);
 * argv[1] picks the case:
 *   old   Py_Version 3.9         new   Py_Version 3.14
 *   ft    3.13 whose _Py_DebugOffsets says free-threaded
 *   trace 3.12 whose object header does not match (a Py_TRACE_REFS build)
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "capture/pystack.h"
#include "check.h"

#define EXPORT __attribute__((visibility("default"), used))

/* A stand-in type object: refcount, ob_type, ob_size, tp_name (a PyVarObject head). */
struct fake_type {
	intptr_t refcnt;
	void *ob_type;
	intptr_t size;
	const char *tp_name;
};

EXPORT unsigned long Py_Version;
EXPORT struct fake_type PyType_Type = {1, &PyType_Type, 0, "type"};
EXPORT struct fake_type PyCode_Type = {1, &PyType_Type, 0, "code"};
EXPORT struct fake_type PyUnicode_Type = {1, &PyType_Type, 0, "str"};
EXPORT struct fake_type PyBytes_Type = {1, &PyType_Type, 0, "bytes"};
/* _PyRuntime's first bytes: cookie, version, free_threaded (the rest stays zero). */
EXPORT uint64_t fake_runtime[80] __asm__("_PyRuntime");

EXPORT int Py_IsInitialized(void);
EXPORT void *PyGILState_GetThisThreadState(void);

int
Py_IsInitialized(void)
{
	return 1;
}

void *
PyGILState_GetThisThreadState(void)
{
	return NULL;
}

static const char *
setup(const char *which)
{
	if (strcmp(which, "old") == 0) {
		Py_Version = 0x030912f0;
		return "Python 3.9: no frame layout";
	}
	if (strcmp(which, "new") == 0) {
		Py_Version = 0x030e00f0;
		return "Python 3.14: no frame layout";
	}
	if (strcmp(which, "ft") == 0) {
		Py_Version = 0x030d00f0;
		memcpy(fake_runtime, "xdebugpy", 8);
		fake_runtime[1] = 0x030d00f0;
		fake_runtime[2] = 1;
		return "free-threaded";
	}
	Py_Version = 0x030c01f0;
	PyCode_Type.ob_type = NULL; /* the header is not where a release build has it */
	return "object layout check failed";
}

int
main(int argc, char **argv)
{
	struct gmt_pyframe frames[8];
	int pipefd[2], saved = dup(2);
	char buf[1024];

	CHECK(argc == 2);
	const char *expect = setup(argv[1]);
	CHECK(pipe(pipefd) == 0 && saved >= 0);
	CHECK(fcntl(pipefd[0], F_SETFL, O_NONBLOCK) == 0);
	dup2(pipefd[1], 2);
	int first = gmt_py_walk(frames, 8), second = gmt_py_walk(frames, 8);
	gmt_py_rescan(); /* a refusal is final: no second look, no second warning */
	int third = gmt_py_walk(frames, 8);
	dup2(saved, 2);

	ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
	CHECK(n > 0);
	buf[n] = '\0';
	fprintf(stderr, "%s", buf);
	CHECK(first == GMT_PY_UNAVAILABLE && second == GMT_PY_UNAVAILABLE);
	CHECK(third == GMT_PY_UNAVAILABLE && gmt_py_version() == NULL);
	CHECK(strstr(buf, expect) != NULL);
	CHECK(strchr(buf, '\n') == buf + n - 1); /* exactly one line */
	return 0;
}
