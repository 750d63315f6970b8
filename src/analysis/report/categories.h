/*
 * @brief What an allocation is for, from its call stack: parameters, gradients, optimizer state,
 * activations, temporaries, other. A rule set (the built-in one below, or a file the user gives)
 * of patterns on frames, tried in order, the first match wins; the lifetime decides what the stack
 * cannot (freed before the step ends: a temporary, whatever made it).
 *
 * A rule is one line:  CATEGORY  WHERE  PATTERN
 *   WHERE: py-file, py-func (a Python frame's file or function), native (a native function name),
 * module (a native frame's library), thread (the stack's thread kind: "autograd", a thread with
 * Python state but no Python frames, as PyTorch's backward threads) PATTERN: a glob (*, ?) on that
 * field, anywhere in the stack unless it starts with '^' (the innermost frame outside torch's own
 * files only) Lines starting with '#' and empty lines are comments. docs/categories.md lists the
 * built-in rules.
 */
#ifndef GMT_REPORT_CATEGORIES_H
#define GMT_REPORT_CATEGORIES_H

#include <stdbool.h>
#include <stddef.h>

enum gmt_category {
	GMT_CAT_OTHER = 0,
	GMT_CAT_PARAMETER,
	GMT_CAT_GRADIENT,
	GMT_CAT_OPTIMIZER_STATE,
	GMT_CAT_ACTIVATION,
	GMT_CAT_TEMPORARY,
	GMT_CAT_WORKSPACE, /* a library's workspace (cuBLAS, cuDNN) held through the cache */
	GMT_CAT_COUNT,
};

const char *gmt_category_name(enum gmt_category c);
int gmt_category_from_name(const char *name); /* -1 when none */

/* One frame as the rules see it (NULL fields: unknown). */
struct gmt_cat_frame {
	bool python;
	const char *function, *file, *module;
};

struct gmt_cat_rules;

/** The built-in rules. */
struct gmt_cat_rules *gmt_cat_builtin(void);
/** Rules from a file, the built-in ones after them unless the file says "no-builtin". NULL and
 * @p err ("FILE:LINE: why") on a bad line. */
struct gmt_cat_rules *gmt_cat_load(const char *path, char *err, size_t errlen);
void gmt_cat_free(struct gmt_cat_rules *r);

/**
 * The category of an allocation made by the stack @p f (innermost first, @p n frames; @p autograd:
 * its thread had Python state but no Python frames), before its lifetime is known.
 */
enum gmt_category
gmt_cat_of(const struct gmt_cat_rules *r, const struct gmt_cat_frame *f, size_t n, bool autograd);

#endif
