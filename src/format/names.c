/*
 * @brief Names of APIs, ops and kinds, generated from apis.def and shared by writer and tests.
 */
#include "format/event.h"
#include "format/kinds.h"

#include <stdlib.h>
#include <string.h>

#include "format/torch_entry.h"

static const char *const api_names[GMT_API_COUNT] = {
    [GMT_API_NONE] = "none",
#define GMT_API(id, name, op, kind) [GMT_API_##id] = name,
#include "format/apis.def"
#undef GMT_API
};

const struct gmt_api_facts gmt_api_facts[GMT_API_COUNT] = {
    [GMT_API_NONE] = {GMT_OP_NONE, GMT_KIND_NONE},
#define GMT_API(id, name, op, kind) [GMT_API_##id] = {GMT_OP_##op, GMT_KIND_##kind},
#include "format/apis.def"
#undef GMT_API
};
_Static_assert(GMT_OP_COUNT <= 256 && GMT_KIND_COUNT <= 256, "gmt_api_facts holds bytes");

const char *
gmt_api_name(enum gmt_api api)
{
	return (unsigned)api < GMT_API_COUNT ? api_names[api] : "unknown";
}

static const char *const kind_names[GMT_KIND_COUNT] = {
    [GMT_KIND_NONE] = "none",
#define GMT_KIND(id, name, rank) [GMT_KIND_##id] = name,
#include "format/kinds.def"
#undef GMT_KIND
};

const char *
gmt_kind_name(enum gmt_kind kind)
{
	return (unsigned)kind < GMT_KIND_COUNT ? kind_names[kind] : "none";
}

// --- the kinds by rank (kinds.h) ---------------------------------------------------------------

/* Every rank once: each is in 1 .. GMT_KIND_COUNT - 1 and, there being as many kinds, a rank
 * missing means one repeated, which the table below refuses (a second initializer of an entry). */
#define GMT_KIND(id, name, rank)                                                                   \
	_Static_assert((rank) >= 1 && (rank) < GMT_KIND_COUNT, "kinds.def: rank of " #id);
#include "format/kinds.def"
#undef GMT_KIND

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Woverride-init"
static const char *const rank_names[GMT_TK_COUNT] = {
    [GMT_TK_NONE] = "none",
#define GMT_KIND(id, name, rank) [rank] = name,
#include "format/kinds.def"
#undef GMT_KIND
};
#pragma GCC diagnostic pop

const char *
gmt_kind_str(enum gmt_tkind kind)
{
	return (unsigned)kind < GMT_TK_COUNT ? rank_names[kind] : "unknown";
}

/*
 * Whether @p name is @p want, compared here: the parsers call this per event, on names of a few
 * bytes that differ early, where a call to strcmp cost more than the comparing.
 */
static inline bool
name_is(const char *name, const char *want)
{
	size_t i = 0;

	while (want[i] && name[i] == want[i])
		i++;
	return name[i] == want[i];
}

enum gmt_tkind
gmt_kind_parse(const char *name)
{
	for (int k = GMT_TK_NONE + 1; k < GMT_TK_COUNT; k++)
		if (name_is(name, rank_names[k]))
			return (enum gmt_tkind)k;
	return GMT_TK_NONE;
}

bool
gmt_kind_is_reading(enum gmt_tkind kind)
{
	return kind == GMT_TK_POOL_RESERVE || kind == GMT_TK_GRAPH_RESERVE;
}

const char *
gmt_op_name(enum gmt_op op)
{
	switch (op) {
	case GMT_OP_ALLOC: return "alloc";
	case GMT_OP_FREE: return "free";
	case GMT_OP_RESET: return "reset";
	case GMT_OP_MARKER: return "marker";
	case GMT_OP_RETAIN: return "retain";
	case GMT_OP_USAGE: return "usage";
	case GMT_OP_BLOCK: return "block";
	case GMT_OP_LAYER: return "layer";
	case GMT_OP_ELIDED: return "elided";
	case GMT_OP_HOLDERS: return "holders";
	case GMT_OP_NONE:
	case GMT_OP_COUNT: break;
	}
	return "none";
}

enum gmt_op
gmt_op_from_name(const char *name)
{
	for (int op = GMT_OP_NONE + 1; op < GMT_OP_COUNT; op++)
		if (name_is(name, gmt_op_name((enum gmt_op)op)))
			return (enum gmt_op)op;
	return GMT_OP_NONE;
}

/* The "action" of a block line (docs/trace-format.md), by enum gmt_torch_action: writer and
 * reader use this one table. */
static const char *const torch_action_names[GMT_TORCH_ACTION_COUNT] = {
    [GMT_TORCH_ALLOC] = "alloc",
    [GMT_TORCH_FREE_REQUESTED] = "free_requested",
    [GMT_TORCH_FREE_COMPLETED] = "free_completed",
    [GMT_TORCH_SEGMENT_ALLOC] = "segment_alloc",
    [GMT_TORCH_SEGMENT_FREE] = "segment_free",
    [GMT_TORCH_SEGMENT_MAP] = "segment_map",
    [GMT_TORCH_SEGMENT_UNMAP] = "segment_unmap",
    [GMT_TORCH_SNAPSHOT] = "snapshot",
    [GMT_TORCH_OOM] = "oom",
    [GMT_TORCH_STATE_SEGMENT] = "segment_state",
    [GMT_TORCH_STATE_BLOCK] = "block_state",
};

const char *
gmt_torch_action_name(unsigned action)
{
	return action < GMT_TORCH_ACTION_COUNT && torch_action_names[action]
		   ? torch_action_names[action]
		   : "unknown";
}

unsigned
gmt_torch_action_from_name(const char *name)
{
	for (unsigned a = 1; a < GMT_TORCH_ACTION_COUNT; a++)
		if (torch_action_names[a] && !strcmp(torch_action_names[a], name))
			return a;
	return 0;
}

void
gmt_torch_layer_free(const struct gmt_torch_layer *cl)
{
	struct gmt_torch_layer *l = (struct gmt_torch_layer *)cl;

	if (!l)
		return;
	free(l->version);
	free(l->backend);
	free(l->alloc_conf);
	free(l->status);
	free(l->detail);
	free(l->holders);
	free(l);
}
