/*
 * @brief Unit test of the terminal escaping of human output (src/analysis/esc.h): what is
 * escaped and how (the rules of `ls -b`), what passes unchanged, cuts, and errno.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/esc.h"

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (strcmp(a_, b_) != 0) {                                                         \
			fprintf(stderr, "%s:%d: check failed: %s == \"%s\" (got \"%s\")\n",        \
				__FILE__, __LINE__, #a, b_, a_);                                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void
test_clean(void)
{
	static const char *const clean[] = {
	    "",
	    "train.py:42 in Trainer.step",
	    "operator<<(A&, \"B\" 'c')",
	    "→ café 日本 🚀",
	    "\xc2\xa0",	    /* U+00A0, the first code point after the C1 controls */
	    "\xe2\x80\xa9", /* U+2029: not a bidirectional control */
	};

	for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++) {
		CHECK(gmt_esc_clean(clean[i]));
		CHECK(gmt_esc(clean[i]) == clean[i]); /* no copy */
	}
	CHECK(gmt_esc_clean(NULL));
	CHECK(gmt_esc(NULL) == NULL);
}

static void
test_escaped(void)
{
	/* C escapes, as ls -b */
	CHECK_STR(gmt_esc("a\nb\tc\rd"), "a\\nb\\tc\\rd");
	CHECK_STR(gmt_esc("\a\b\f\v"), "\\a\\b\\f\\v");
	CHECK_STR(gmt_esc("C:\\x"), "C:\\\\x");
	/* other controls as octal: ESC, DEL, the rest of C0 */
	CHECK_STR(gmt_esc("\x1b]0;title\x07\x1b[31m"), "\\033]0;title\\a\\033[31m");
	CHECK_STR(gmt_esc("x\x7fy\x01"), "x\\177y\\001");
	/* C1 controls (U+009B is an 8-bit CSI) and bidirectional overrides and isolates */
	CHECK_STR(gmt_esc("\xc2\x9b"
			  "2J"),
		  "\\302\\2332J");
	CHECK_STR(gmt_esc("\xc2\x80"), "\\302\\200");
	CHECK_STR(gmt_esc("a\xe2\x80\xae"
			  "b"),
		  "a\\342\\200\\256b");
	CHECK_STR(gmt_esc("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9"),
		  "\\342\\200\\252\\342\\201\\246\\342\\201\\251");
	/* bytes that are not UTF-8: stray continuation, invalid lead, overlong, surrogate,
	 * beyond U+10FFFF, cut short */
	CHECK_STR(gmt_esc("\x80"), "\\200");
	CHECK_STR(gmt_esc("\xff\xfe"), "\\377\\376");
	CHECK_STR(gmt_esc("\xc0\xaf"), "\\300\\257");
	CHECK_STR(gmt_esc("\xe0\x80\xaf"), "\\340\\200\\257");
	CHECK_STR(gmt_esc("\xed\xa0\x80"), "\\355\\240\\200");
	CHECK_STR(gmt_esc("\xf4\x90\x80\x80"), "\\364\\220\\200\\200");
	CHECK_STR(gmt_esc("\xe2\x82"), "\\342\\202");
	CHECK_STR(gmt_esc("ok \xe2\x82 \xe2\x86\x92"), "ok \\342\\202 \xe2\x86\x92");
}

static void
test_buf(void)
{
	char buf[8];

	/* a cut falls before an escape or a UTF-8 sequence, never inside */
	CHECK_STR(gmt_esc_buf("abcdefghij", buf, sizeof(buf)), "abcdefg");
	CHECK_STR(gmt_esc_buf("abcde\x1b", buf, sizeof(buf)), "abcde");
	CHECK_STR(gmt_esc_buf("abc\x1b", buf, sizeof(buf)), "abc\\033");
	CHECK_STR(gmt_esc_buf("abcde\xe2\x86\x92", buf, sizeof(buf)), "abcde");
	CHECK_STR(gmt_esc_buf("abcd\xe2\x86\x92", buf, sizeof(buf)), "abcd\xe2\x86\x92");
	CHECK_STR(gmt_esc_buf(NULL, buf, sizeof(buf)), "");
	CHECK_STR(gmt_esc_buf("x", buf, 1), "");
}

static void
test_slots(void)
{
	const char *kept[GMT_ESC_SLOTS];
	char in[GMT_ESC_SLOTS][8], want[16];

	/* GMT_ESC_SLOTS results are alive at once: several in one printf */
	for (int i = 0; i < GMT_ESC_SLOTS; i++) {
		snprintf(in[i], sizeof(in[i]), "%d\x1b", i);
		kept[i] = gmt_esc(in[i]);
	}
	for (int i = 0; i < GMT_ESC_SLOTS; i++) {
		snprintf(want, sizeof(want), "%d\\033", i);
		CHECK_STR(kept[i], want);
	}
	/* a long string grows its slot */
	char big[5000];
	memset(big, '\x1b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(strlen(gmt_esc(big)) == 4 * (sizeof(big) - 1));
	/* errno survives: callers print strerror(errno) next to an escaped name */
	errno = ENOENT;
	(void)gmt_esc("a\x1b");
	CHECK(errno == ENOENT);
}

static void
test_fputs(void)
{
	char out[64] = "";
	FILE *f = fmemopen(out, sizeof(out), "w");

	CHECK(f);
	gmt_fputs_esc("a\x1b"
		      "b",
		      f);
	gmt_fputs_esc(NULL, f);
	fclose(f);
	CHECK_STR(out, "a\\033b(null)");
}

/* JSON text of a name: stray bytes as U+FFFD, UTF-8 (controls included) kept */
static void
test_utf8_lossy(void)
{
	static const char *const cases[][2] = {
	    {"", ""},
	    {"t\x1b[2J caf\xc3\xa9.jsonl", "t\x1b[2J caf\xc3\xa9.jsonl"},
	    {"t\xff.jsonl", "t\xef\xbf\xbd.jsonl"},
	    {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
	    {"ok \xe2\x82", "ok \xef\xbf\xbd\xef\xbf\xbd"},	      /* cut short */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = gmt_utf8_lossy(cases[i][0]);

		CHECK(s != NULL);
		CHECK_STR(s, cases[i][1]);
		free(s);
	}
	CHECK(gmt_utf8_lossy(NULL) == NULL);
}

int
main(void)
{
	test_clean();
	test_escaped();
	test_buf();
	test_slots();
	test_fputs();
	test_utf8_lossy();
	printf("test_esc: ok\n");
	return 0;
}
