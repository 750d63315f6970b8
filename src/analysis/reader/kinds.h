/*
 * @brief The memory kinds a trace names, as the reader stores them: one enum, read by name.
 *
 * The reader keeps its own enum rather than the tracer's (format/event.h): it reads kinds by
 * their names in docs/trace-format.md, and must keep reading traces of any version-1 tracer. The
 * enum order is the order in which reports list kinds: device memory first, then views and
 * address space, then host memory. What each kind means and how kinds add up is the model's
 * (model/kinds.h).
 */
#ifndef GMT_READER_KINDS_H
#define GMT_READER_KINDS_H

#include <stdbool.h>

enum gmt_tkind {
	GMT_TK_NONE = 0,
	GMT_TK_DEVICE,
	GMT_TK_MANAGED,
	GMT_TK_POOL,
	GMT_TK_POOL_RESERVE,
	GMT_TK_ARRAY,
	GMT_TK_VMM_PHYSICAL,
	GMT_TK_VMM_MAPPED,
	GMT_TK_VMM_RESERVE,
	GMT_TK_GRAPH,
	GMT_TK_GRAPH_RESERVE,
	GMT_TK_IMPORTED,
	GMT_TK_PINNED,
	GMT_TK_REGISTERED,
	GMT_TK_COUNT,
};

/** The format's name ("vmm_physical"); "none" for GMT_TK_NONE, "unknown" out of range. */
const char *gmt_kind_str(enum gmt_tkind kind);

/** The kind named @p name, GMT_TK_NONE when the format has no such kind. */
enum gmt_tkind gmt_kind_parse(const char *name);

/** pool_reserve and graph_reserve: values of `usage` readings, never allocated or freed. */
bool gmt_kind_is_reading(enum gmt_tkind kind);

#endif
