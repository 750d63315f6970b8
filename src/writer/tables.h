/*
 * @brief The writer's bookkeeping: live allocations, for snapshots.
 *
 * Writer-thread only: these allocate and are not thread-safe. Open addressing with linear
 * probing; the tables grow at 50% load.
 */
#ifndef GMT_WRITER_TABLES_H
#define GMT_WRITER_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/event.h"
#include "format/jsonl.h"

#define GMT_MAX_DEVICES 64 /* devices 0..63 get their own totals; others count under "unknown" */

struct gmt_live_entry {
	uint64_t ptr; /* the key (see live_key() in tables.c); 0 = empty */
	uint64_t seq; /* of the allocation: a free or reset ordered before it is not its end */
	uint64_t size;
	uint64_t context;
	uint64_t handle; /* external memory object of an imported buffer */
	int32_t device;
	uint8_t kind;
	uint8_t tomb;
};

struct gmt_live_table {
	struct gmt_live_entry *e;
	size_t cap, used, tombs;
	/* totals[device + 1][kind]: index 0 is device -1 (unknown) */
	uint64_t bytes[GMT_MAX_DEVICES + 1][GMT_KIND_COUNT];
	uint64_t count[GMT_MAX_DEVICES + 1][GMT_KIND_COUNT];
};

/**
 * Apply one event (alloc, free, reset; readings and markers are ignored) to the table. Events
 * may come out of seq order (the writer orders each drained batch, not across batches): a free
 * or reset ends only allocations with a smaller seq, so a free that reaches the table after an
 * allocation that reused its address leaves that allocation live. Returns false only on
 * allocation failure.
 */
bool gmt_live_apply(struct gmt_live_table *t, const struct gmt_event *ev);
/**
 * The allocation a plain free @p ev (one address or handle, not a range, not external memory)
 * would end now, as gmt_live_apply() would pair it; NULL when none or when @p ev is not such a
 * free. For the bounded writer (bounded.c), which pairs frees with allocations before writing.
 */
const struct gmt_live_entry *gmt_live_peek_free(const struct gmt_live_table *t,
						const struct gmt_event *ev);
/** The live allocation at @p ev's address or handle (an allocation there: a reuse), or NULL. */
const struct gmt_live_entry *gmt_live_peek_alloc(const struct gmt_live_table *t,
						 const struct gmt_event *ev);
/** Fill up to @p max totals with non-zero (device, kind) rows; returns how many. */
size_t gmt_live_totals(const struct gmt_live_table *t, struct gmt_live_total *out, size_t max);
void gmt_live_free(struct gmt_live_table *t);

#endif
