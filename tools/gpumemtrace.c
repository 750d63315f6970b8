/*
 * @brief `gpumemtrace`: the command-line entry point, subcommand dispatch and global usage.
 *
 * One binary with subcommands (docs: architecture.md, "The command line"). Every subcommand has
 * --help and the same exit codes, so scripts and CI can rely on them:
 *   0 ok, 1 gate failed (check), 2 usage error, 3 unreadable input.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gmt-config.h"
#include "util/cputime.h"

static void
usage(FILE *out)
{
	fprintf(out,
		"Usage: gpumemtrace COMMAND [OPTIONS] [ARGS]\n"
		"\n"
		"Find out where a program's GPU memory goes: peaks, leaks, failed allocations.\n"
		"\n"
		"Commands:\n"
		"  run [-o DIR] [--] CMD ARGS...   trace a program (writes one trace file per "
		"process)\n"
		"  report [--format FORMAT] [--stack site|full] [-o FILE] TRACE...\n"
		"                                  report on trace files or directories of them;\n"
		"                                  FORMAT: text (default), json, folded (flame\n"
		"                                  graph input), html (one page), perfetto (a\n"
		"                                  Perfetto/Chrome trace), pytorch-snapshot,\n"
		"                                  csv (-o DIR: tables for SQL, docs/sql.md)\n"
		"  check [--max-leaked-bytes N] [--max-peak-bytes [DEV=]N] [--baseline B] ...\n"
		"        TRACE...                  CI gates: exit 1 when a limit is exceeded\n"
		"  diff [--format text|json] BASE NEW\n"
		"                                  what changed between two runs, per call site\n"
		"  summarize [-o DIR] TRACE...     one bounded summary file per trace (a rank's\n"
		"                                  figures, symbolized where its libraries are)\n"
		"  live [--once] DIR|TRACE         a running job's memory, redrawn every second\n"
		"\n"
		"Options:\n"
		"  -h, --help       show this help ('gpumemtrace help COMMAND' or\n"
		"                   'gpumemtrace COMMAND --help' for a command)\n"
		"  -V, --version    show the version (also after any command)\n"
		"\n"
		"check writes JUnit XML with --junit FILE; the trace files are JSON Lines\n"
		"(docs/trace-format.md).\n"
		"\n"
		"Exit status:\n"
		"  0  success (run: the traced program's own exit status instead)\n"
		"  1  a gate failed ('check')\n"
		"  2  usage error\n"
		"  3  unreadable input: no trace could be read\n");
}

int
gmt_usage_hint(const char *cmd)
{
	if (cmd)
		fprintf(stderr, "Try 'gpumemtrace %s --help'.\n", cmd);
	else
		fprintf(stderr, "Try 'gpumemtrace --help'.\n");
	return GMT_EXIT_USAGE;
}

void
gmt_bad_option(const char *cmd, char **argv)
{
	extern int optind, optopt;

	char opt[3] = {'-', (char)optopt, '\0'};

	/* what the user typed, escaped: an option may be any byte (-$'\t', -$'\x1b') */
	if (optopt)
		fprintf(stderr, "gpumemtrace %s: unknown option or missing argument: %s\n", cmd,
			gmt_esc(opt));
	else
		fprintf(stderr, "gpumemtrace %s: unknown option or missing argument: %s\n", cmd,
			gmt_esc(argv[optind - 1]));
}

int
gmt_print_version(void)
{
	printf("gpumemtrace %s\n", GMT_VERSION);
	return GMT_EXIT_OK;
}

static int
dispatch(const char *cmd, int argc, char **argv)
{
	/* Each subcommand parses its own options with argv[0] = its name. */
	if (strcmp(cmd, "report") == 0)
		return gmt_cmd_report(argc, argv);
	if (strcmp(cmd, "run") == 0)
		return gmt_cmd_run(argc, argv);
	if (strcmp(cmd, "check") == 0)
		return gmt_cmd_check(argc, argv);
	if (strcmp(cmd, "diff") == 0)
		return gmt_cmd_diff(argc, argv);
	if (strcmp(cmd, "summarize") == 0)
		return gmt_cmd_summarize(argc, argv);
	if (strcmp(cmd, "live") == 0)
		return gmt_cmd_live(argc, argv);
	if (cmd[0] == '-')
		fprintf(stderr, "gpumemtrace: unknown option: %s\n", gmt_esc(cmd));
	else
		fprintf(stderr, "gpumemtrace: unknown command: %s\n", gmt_esc(cmd));
	return gmt_usage_hint(NULL);
}

int
main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return GMT_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "help") == 0 && argc > 2) {
		/* `gpumemtrace help CMD` is `gpumemtrace CMD --help` */
		char help[] = "--help";
		char *sub[] = {argv[2], help, NULL};
		if (argc > 3) {
			fprintf(stderr, "gpumemtrace help: one command at most\n");
			return gmt_usage_hint(NULL);
		}
		return dispatch(argv[2], 2, sub);
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return GMT_EXIT_OK;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0)
		return gmt_print_version();
	int rc = dispatch(cmd, argc - 1, argv + 1);
	gmt_cputime_print(stderr); /* GMT_THREAD_TIMES=1: where the CPU went, per thread kind */
	return rc;
}
