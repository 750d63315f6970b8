/*
 * @brief The analyzer's table of memory kinds: meaning, and how each kind adds up.
 */
#include "analysis/model/tkinds.h"
#include "util/sat.h"

struct kind_info {
	const char *meaning;
	bool counted;	  /* leaks sum into leaked_bytes */
	bool reset_frees; /* a context/device reset releases it */
	bool in_held;	  /* a term of gmt_kind_held() */
};

/* One row per kind; docs/report-json.md repeats these meanings, keep them in step. */
static const struct kind_info kinds[GMT_TK_COUNT] = {
    [GMT_TK_NONE] =
	{
	    .meaning = "",
	},
    [GMT_TK_DEVICE] =
	{
	    .meaning = "device memory from cudaMalloc and cuMemAlloc",
	    .counted = true,
	    .reset_frees = true,
	    .in_held = true,
	},
    [GMT_TK_MANAGED] =
	{
	    .meaning =
		"unified memory (cudaMallocManaged): resident on host or device as touched, so "
		"not in the device memory held",
	    .counted = true,
	    .reset_frees = true,
	},
    [GMT_TK_POOL] =
	{
	    .meaning =
		"live stream-ordered allocations (cudaMallocAsync); the device memory held counts "
		"the larger of pool and pool_reserve",
	    .counted = true,
	    .in_held = true,
	},
    [GMT_TK_POOL_RESERVE] =
	{
	    .meaning = "memory the pools hold (their reservation, as the tracer read it)",
	    .in_held = true,
	},
    [GMT_TK_ARRAY] =
	{
	    .meaning = "CUDA arrays, nominal bytes (width x height x depth x element)",
	    .counted = true,
	    .reset_frees = true,
	    .in_held = true,
	},
    [GMT_TK_VMM_PHYSICAL] =
	{
	    .meaning = "physical memory from cuMemCreate, live while referenced or mapped",
	    .counted = true,
	    .in_held = true,
	},
    [GMT_TK_VMM_MAPPED] =
	{
	    .meaning =
		"virtual addresses mapped onto vmm_physical memory (a view, not counted again)",
	},
    [GMT_TK_VMM_RESERVE] =
	{
	    .meaning = "virtual address space reserved (not memory)",
	},
    [GMT_TK_GRAPH] =
	{
	    .meaning = "virtual addresses of graph memory nodes (the memory behind them is "
		       "graph_reserve)",
	},
    [GMT_TK_GRAPH_RESERVE] =
	{
	    .meaning = "memory the device's graph memory pool holds",
	    .in_held = true,
	},
    [GMT_TK_IMPORTED] =
	{
	    .meaning =
		"another process's memory mapped here (IPC, shareable handles, external memory): "
		"not this process's",
	    .reset_frees = true,
	},
    [GMT_TK_PINNED] =
	{
	    .meaning = "page-locked host memory (host memory, not device memory)",
	    .counted = true,
	    .reset_frees = true,
	},
    [GMT_TK_REGISTERED] =
	{
	    .meaning = "host memory page-locked in place (not new memory)",
	    .reset_frees = true,
	},
};

static bool
valid(enum gmt_tkind kind)
{
	return kind > GMT_TK_NONE && kind < GMT_TK_COUNT;
}

const char *
gmt_kind_meaning(enum gmt_tkind kind)
{
	return valid(kind) ? kinds[kind].meaning : "";
}

bool
gmt_kind_counted(enum gmt_tkind kind)
{
	return valid(kind) && kinds[kind].counted;
}

bool
gmt_kind_reset_frees(enum gmt_tkind kind)
{
	return valid(kind) && kinds[kind].reset_frees;
}

bool
gmt_kind_in_held(enum gmt_tkind kind)
{
	return valid(kind) && kinds[kind].in_held;
}

bool
gmt_kind_held_term(enum gmt_tkind kind, const uint64_t by_kind[GMT_TK_COUNT])
{
	if (!gmt_kind_in_held(kind) || by_kind[kind] == 0)
		return false;
	if (kind == GMT_TK_POOL)
		return by_kind[GMT_TK_POOL] > by_kind[GMT_TK_POOL_RESERVE];
	if (kind == GMT_TK_POOL_RESERVE)
		return by_kind[GMT_TK_POOL_RESERVE] >= by_kind[GMT_TK_POOL];
	return true;
}

uint64_t
gmt_kind_held(const uint64_t by_kind[GMT_TK_COUNT])
{
	/* what gmt_kind_held_term() selects, summed without a call per kind (once per event):
	 * the pool's terms are the larger of pool and pool_reserve, both in held */
	uint64_t pool = by_kind[GMT_TK_POOL], reserve = by_kind[GMT_TK_POOL_RESERVE];
	uint64_t sum = pool > reserve ? pool : reserve;

	/* unrolled, the table's flags are constants: the sum is a few adds, no loop */
#pragma GCC unroll 16
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		if (kinds[k].in_held && k != GMT_TK_POOL && k != GMT_TK_POOL_RESERVE)
			sum = gmt_sat_add(sum, by_kind[k]); /* held at its most (util/sat.h) */
	return sum;
}
