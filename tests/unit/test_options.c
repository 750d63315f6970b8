/*
 * Options: defaults, valid values with units, and invalid values falling back to the default
 * with a warning that names the variable.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util/log.h"
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
load_capturing_as(struct gmt_options *o, const char *const *env, char *buf, size_t cap, bool secure)
{
	int pipefd[2], saved = dup(2);
	CHECK(pipe(pipefd) == 0);
	dup2(pipefd[1], 2);
	fake_env = env;
	int bad = gmt_options_load(o, fake_getenv, secure);
	dup2(saved, 2);
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	close(saved);
	return bad;
}

static int
load_capturing(struct gmt_options *o, const char *const *env, char *buf, size_t cap)
{
	return load_capturing_as(o, env, buf, cap, false);
}

int
main(void)
{
	struct gmt_options o;
	char err[16384];
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
	const char *const good[] = {"GPUMEMTRACE_ENABLE",
				    "0",
				    "GPUMEMTRACE_OUTPUT_DIR",
				    "/tmp/x",
				    "GPUMEMTRACE_RING_SLOTS",
				    "4K",
				    "GPUMEMTRACE_FLUSH_MS",
				    "10",
				    NULL};
	CHECK(load_capturing(&o, good, err, sizeof(err)) == 0);
	CHECK(!o.enable);
	CHECK(strcmp(o.output_dir, "/tmp/x") == 0);
	CHECK_EQ_U64(o.ring_slots, 4096);
	CHECK_EQ_U64(o.flush_ms, 10);

	/* a secure-execution process keeps the defaults of the options naming files and libraries,
	 * says so once, and takes the others */
	const char *const chosen[] = {"GPUMEMTRACE_OUTPUT_DIR",
				      "/tmp/x",
				      "GPUMEMTRACE_CUPTI_LIB",
				      "/tmp/evil.so",
				      "GPUMEMTRACE_FLUSH_MS",
				      "10",
				      NULL};
	CHECK(load_capturing_as(&o, chosen, err, sizeof(err), true) == 0);
	CHECK(strcmp(o.output_dir, ".") == 0 && o.cupti_lib[0] == '\0');
	CHECK_EQ_U64(o.flush_ms, 10);
	CHECK(strstr(err, "secure-execution process") &&
	      strstr(err, "GPUMEMTRACE_OUTPUT_DIR, GPUMEMTRACE_CUPTI_LIB ignored"));
	CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
	CHECK(load_capturing_as(&o, good, err, sizeof(err), false) == 0 && err[0] == '\0');
	CHECK(strcmp(o.output_dir, "/tmp/x") == 0); /* the same environment, not secure */
	CHECK(load_capturing_as(&o, none, err, sizeof(err), true) == 0 && err[0] == '\0');
	/* this test is no setuid program: the real check says so (the preload suite's "secure"
	 * scenario runs a setuid copy of the victim, where it says the opposite) */
	CHECK(!gmt_options_secure());

	/* invalid: warning names the variable and the default; the default is used */
	const char *const bad[] = {"GPUMEMTRACE_RING_SLOTS",
				   "1000",
				   "GPUMEMTRACE_FLUSH_MS",
				   "500",
				   "GPUMEMTRACE_ENABLE",
				   "perhaps",
				   NULL};
	CHECK(load_capturing(&o, bad, err, sizeof(err)) == 3);
	CHECK_EQ_U64(o.ring_slots, 65536);
	CHECK_EQ_U64(o.flush_ms, 100);
	CHECK(o.enable);
	CHECK(strstr(err, "GPUMEMTRACE_RING_SLOTS") && strstr(err, "power of two") &&
	      strstr(err, "using the default 65536"));
	CHECK(strstr(err, "GPUMEMTRACE_FLUSH_MS") && strstr(err, "using the default 100"));
	CHECK(strstr(err, "GPUMEMTRACE_ENABLE") && strstr(err, "'perhaps'"));

	/* a 5000-byte value: the warning keeps the name and the default, cuts the value */
	static char huge[5001];
	memset(huge, '7', sizeof(huge) - 1);
	const char *const longval[] = {"GPUMEMTRACE_FLUSH_MS", huge, NULL};
	CHECK(load_capturing(&o, longval, err, sizeof(err)) == 1);
	CHECK(strstr(err, "GPUMEMTRACE_FLUSH_MS: invalid value '7777") &&
	      strstr(err, "...' (5000 bytes)") && strstr(err, "using the default 100\n"));
	CHECK(strlen(err) < 300 && strchr(err, '\n') == err + strlen(err) - 1);

	/* a value from outside reaches stderr without control characters */
	const char *const esc[] = {"GPUMEMTRACE_ENABLE", "no\033[2J\r\xc2\x9b", NULL};
	CHECK(load_capturing(&o, esc, err, sizeof(err)) == 1);
	CHECK(strstr(err, "'no\\x1b[2J\\x0d\\xc2\\x9b'") && !strchr(err, '\033') &&
	      !strchr(err, '\r'));
	char shown[GMT_LOG_VALUE_MAX];
	/* 62 ASCII bytes, then a 3-byte character across the 64-byte cut: left out whole */
	CHECK(
	    strcmp(
		gmt_log_value(shown, "0123456789012345678901234567890123456789012345678901234567890"
				     "1\xe2\x82\xac-tail"),
		"'01234567890123456789012345678901234567890123456789012345678901...' (70 bytes)") ==
	    0);
	CHECK(strcmp(gmt_log_value(shown, "caf\xc3\xa9"), "'caf\xc3\xa9'") == 0);

	/* names that are no option: each warned once, with the closest option */
	static char longname[5020];
	snprintf(longname, sizeof(longname), "GPUMEMTRACE_%s=1", huge);
	char *envp[] = {"PATH=/bin",
			"GPUMEMTRACE_RING_SLOT=1024",
			"GPUMEMTRACE_OUTPUT_DIR=/tmp",
			"GPUMEMTRACE_LIB=/x/libgpumemtrace.so",
			"GPUMEMTRACE_STACK=none",
			"gpumemtrace_flush_ms=5",
			"GPUMEMTRACE_SANPSHOT_MS=5",
			"GPUMEMTRACE_CUPTI_RUN=0",
			"GPUMEMTRACE_RING_SLOT=2048",
			"GPUMEMTRACE_BANANA=1",
			longname,
			"MY_GPUMEMTRACE_X=1",
			NULL};
	int pipefd[2], saved = dup(2);
	CHECK(pipe(pipefd) == 0);
	dup2(pipefd[1], 2);
	int unknown = gmt_options_check_names(envp);
	dup2(saved, 2);
	close(pipefd[1]);
	ssize_t n = read(pipefd[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	CHECK_EQ_U64(unknown, 7);
	CHECK(strstr(err,
		     "'GPUMEMTRACE_RING_SLOT' is ignored; did you mean GPUMEMTRACE_RING_SLOTS?\n"));
	const char *first = strstr(err, "RING_SLOT'");
	CHECK(first && !strstr(first + 1, "RING_SLOT'")); /* set twice, warned once */
	CHECK(strstr(err, "'GPUMEMTRACE_STACK' is ignored; did you mean GPUMEMTRACE_STACKS?"));
	CHECK(strstr(err, "'gpumemtrace_flush_ms' is ignored; did you mean GPUMEMTRACE_FLUSH_MS?"));
	CHECK(strstr(
	    err, "'GPUMEMTRACE_SANPSHOT_MS' is ignored; did you mean GPUMEMTRACE_SNAPSHOT_MS?"));
	CHECK(strstr(
	    err, "'GPUMEMTRACE_CUPTI_RUN' is ignored; did you mean GPUMEMTRACE_CUPTI_RUNTIME?"));
	CHECK(
	    strstr(err, "'GPUMEMTRACE_BANANA' is ignored (GPUMEMTRACE_HELP=1 lists the options)"));
	CHECK(strstr(err, "...' (5012 bytes) is ignored (GPUMEMTRACE_HELP=1"));
	CHECK(!strstr(err, "OUTPUT_DIR'") && !strstr(err, "GPUMEMTRACE_LIB'") &&
	      !strstr(err, "MY_"));

	/* help lists every option */
	CHECK(pipe(pipefd) == 0);
	gmt_options_print_help(pipefd[1], &o);
	close(pipefd[1]);
	n = read(pipefd[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = '\0';
	const char *names[] = {"ENABLE",   "OUTPUT_DIR",  "RING_SLOTS",
			       "FLUSH_MS", "SNAPSHOT_MS", "HELP"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(strstr(err, names[i]) != NULL);
	printf("options: ok\n");
	return 0;
}
