/*
 * @brief The walker in a process without Python: unavailable, silently (nothing on stderr), and
 * still so after gmt_py_rescan().
 */
#include <fcntl.h>
#include <unistd.h>

#include "capture/pystack.h"
#include "check.h"

int
main(void)
{
	struct gmt_pyframe frames[8];
	struct gmt_pycode_view code;
	int pipefd[2], saved = dup(2);
	char buf[256];

	CHECK(pipe(pipefd) == 0 && saved >= 0);
	CHECK(fcntl(pipefd[0], F_SETFL, O_NONBLOCK) == 0);
	dup2(pipefd[1], 2);

	int first = gmt_py_walk(frames, 8), second = gmt_py_walk(frames, 8);
	bool detected = gmt_py_detect();
	const char *version = gmt_py_version();
	bool next = gmt_py_next_code(&code), byid = gmt_py_code(1, &code);
	gmt_py_rescan();
	int third = gmt_py_walk(frames, 8);

	dup2(saved, 2);
	ssize_t said = read(pipefd[0], buf, sizeof(buf));
	CHECK(first == GMT_PY_UNAVAILABLE && second == GMT_PY_UNAVAILABLE);
	CHECK(third == GMT_PY_UNAVAILABLE);
	CHECK(!detected && version == NULL && !next && !byid);
	CHECK(said <= 0); /* not a word */
	return 0;
}
