/*
 * @brief The kinds' names, as docs/trace-format.md spells them.
 */
#include "analysis/reader/kinds.h"

#include <string.h>

static const char *const names[GMT_TK_COUNT] = {
    [GMT_TK_NONE] = "none",
    [GMT_TK_DEVICE] = "device",
    [GMT_TK_MANAGED] = "managed",
    [GMT_TK_POOL] = "pool",
    [GMT_TK_POOL_RESERVE] = "pool_reserve",
    [GMT_TK_ARRAY] = "array",
    [GMT_TK_VMM_PHYSICAL] = "vmm_physical",
    [GMT_TK_VMM_MAPPED] = "vmm_mapped",
    [GMT_TK_VMM_RESERVE] = "vmm_reserve",
    [GMT_TK_GRAPH] = "graph",
    [GMT_TK_GRAPH_RESERVE] = "graph_reserve",
    [GMT_TK_IMPORTED] = "imported",
    [GMT_TK_PINNED] = "pinned",
    [GMT_TK_REGISTERED] = "registered",
};

const char *
gmt_kind_str(enum gmt_tkind kind)
{
	if ((unsigned)kind >= GMT_TK_COUNT)
		return "unknown";
	return names[kind];
}

enum gmt_tkind
gmt_kind_parse(const char *name)
{
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++) /* per event: the first byte first */
		if (name[0] == names[k][0] && strcmp(name, names[k]) == 0)
			return (enum gmt_tkind)k;
	return GMT_TK_NONE;
}

bool
gmt_kind_is_reading(enum gmt_tkind kind)
{
	return kind == GMT_TK_POOL_RESERVE || kind == GMT_TK_GRAPH_RESERVE;
}
