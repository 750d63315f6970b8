/*
 * @brief The memory kinds as the analyzer keeps them: the kinds of format/kinds.def numbered by
 * their rank, the order in which reports list them, and read by name (the analyzer must read the
 * traces of any version-1 tracer, whose enum gmt_kind it never sees).
 */
#ifndef GMT_FORMAT_KINDS_H
#define GMT_FORMAT_KINDS_H

#include <stdbool.h>

#include "format/event.h"

enum gmt_tkind {
	GMT_TK_NONE = 0,
#define GMT_KIND(id, name, rank) GMT_TK_##id = rank,
#include "format/kinds.def"
#undef GMT_KIND
	GMT_TK_COUNT = GMT_KIND_COUNT, /**< the ranks are 1 .. GMT_KIND_COUNT - 1 */
};

/** The format's name ("vmm_physical"); "none" for GMT_TK_NONE, "unknown" out of range. */
const char *gmt_kind_str(enum gmt_tkind kind);

/** The kind named @p name, GMT_TK_NONE when the format has no such kind. */
enum gmt_tkind gmt_kind_parse(const char *name);

/** pool_reserve and graph_reserve: values of `usage` readings, never allocated or freed. */
bool gmt_kind_is_reading(enum gmt_tkind kind);

#endif
