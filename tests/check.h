/*
 * @brief Minimal assertions for the C test programs: print file:line and the failed expression,
 * exit 1. Tests run under meson test; exit 77 means skipped.
 */
#ifndef GMT_TESTS_CHECK_H
#define GMT_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
		if (a_ != b_) {                                                                    \
			fprintf(stderr,                                                            \
				"%s:%d: check failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n",    \
				__FILE__, __LINE__, #a, #b, a_, b_);                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define SKIP_TEST 77

#endif
