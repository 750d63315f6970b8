/*
 * Options: defaults, valid values with units, and invalid values falling back to the default
 * with a warning that names the variable.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util/options.h"

static const char *const *fake_env;

static const char *
fake_getenv(const char *name)
{
	for (size_t i = 0; fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

/* Run gmt_options_load with stderr captured into buf. */
static int
load_capturing(struct gmt_options *o, const char *const *env, char *buf, size_t cap)
{
	int pipefd[2], saved = dup(2);
	CHECK(pipe(pipefd) == 0);
	dup2(pipefd[1], 2);
	fake_env = env;
	int bad = gmt_options_load(o, fake_getenv);
	dup2(saved, 2);
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	close(saved);
	return bad;
}

int
main(void)
{
	struct gmt_options o;
	char err[4096];
	uint64_t v;
	bool b;

	/* parsers */
	CHECK(gmt_parse_uint("0", &v) && v == 0);
	CHECK(gmt_parse_uint("64K", &v) && v == 65536);
	CHECK(gmt_parse_uint("2M", &v) && v == 2u << 20);
	CHECK(gmt_parse_uint("1GiB", &v) && v == 1u << 30);
	CHECK(!gmt_parse_uint("", &v));
	CHECK(!gmt_parse_uint("12x", &v));
	CHECK(!gmt_parse_uint("-1", &v));
	CHECK(!gmt_parse_uint("99999999999999999999", &v));
	CHECK(gmt_parse_bool("yes", &b) && b);
	CHECK(gmt_parse_bool("OFF", &b) && !b);
	CHECK(!gmt_parse_bool("maybe", &b));

	/* defaults */
	const char *const none[] = {NULL};
	CHECK(load_capturing(&o, none, err, sizeof(err)) == 0);
	CHECK(o.enable);
	CHECK(strcmp(o.output_dir, ".") == 0);
	CHECK_EQ_U64(o.ring_slots, 65536);
	CHECK_EQ_U64(o.flush_ms, 100);
	CHECK_EQ_U64(o.snapshot_ms, 1000);
	CHECK(err[0] == '\0');

	/* valid values */
	const char *const good[] = {"GPUMEMTRACE_ENABLE", "0", "GPUMEMTRACE_OUTPUT_DIR", "/tmp/x",
				    "GPUMEMTRACE_RING_SLOTS", "4K", "GPUMEMTRACE_FLUSH_MS", "10", NULL};
	CHECK(load_capturing(&o, good, err, sizeof(err)) == 0);
	CHECK(!o.enable);
	CHECK(strcmp(o.output_dir, "/tmp/x") == 0);
	CHECK_EQ_U64(o.ring_slots, 4096);
	CHECK_EQ_U64(o.flush_ms, 10);

	/* invalid: warning names the variable and the default; the default is used */
	const char *const bad[] = {"GPUMEMTRACE_RING_SLOTS", "1000", "GPUMEMTRACE_FLUSH_MS", "500",
				   "GPUMEMTRACE_ENABLE", "perhaps", NULL};
	CHECK(load_capturing(&o, bad, err, sizeof(err)) == 3);
	CHECK_EQ_U64(o.ring_slots, 65536);
	CHECK_EQ_U64(o.flush_ms, 100);
	CHECK(o.enable);
	CHECK(strstr(err, "GPUMEMTRACE_RING_SLOTS") && strstr(err, "power of two") &&
	      strstr(err, "using the default 65536"));
	CHECK(strstr(err, "GPUMEMTRACE_FLUSH_MS") && strstr(err, "using the default 100"));
	CHECK(strstr(err, "GPUMEMTRACE_ENABLE") && strstr(err, "'perhaps'"));

	/* help lists every option */
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	gmt_options_print_help(pipefd[1], &o);
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = '\0';
	const char *names[] = {"ENABLE", "OUTPUT_DIR", "RING_SLOTS", "FLUSH_MS", "SNAPSHOT_MS", "HELP"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(strstr(err, names[i]) != NULL);
	printf("options: ok\n");
	return 0;
}
