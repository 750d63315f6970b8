/*
 * @brief The memory kinds as the analyzer understands them: names, one-line meanings, and which
 * kinds add up to "device memory held by this process".
 *
 * The analyzer keeps its own enum rather than the tracer's (format/event.h): it reads kinds by
 * their names in docs/trace-format.md, and must keep reading traces of any version-1 tracer. The
 * enum order is the order in which reports list kinds: device memory first, then views and
 * address space, then host memory.
 *
 * Which kinds sum into what is the one place where the analysis takes a position; docs/design.md
 * ("Analysis semantics") and docs/report-json.md explain the choice.
 */
#ifndef GMT_ANALYSIS_KINDS_H
#define GMT_ANALYSIS_KINDS_H

#include <stdbool.h>
#include <stdint.h>

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

/** One line for a person: what the bytes of this kind are, and whether they count as memory. */
const char *gmt_kind_meaning(enum gmt_tkind kind);

/**
 * Whether live allocations of this kind are memory this process allocated, so that leaks of it
 * add up in `leaked_bytes`: device, managed, pool, array, vmm_physical, pinned. Address space
 * (vmm_reserve, graph), views (vmm_mapped), other processes' memory (imported) and host memory
 * merely locked in place (registered) are listed but not summed.
 */
bool gmt_kind_counted(enum gmt_tkind kind);

/** Kinds a context or device reset releases: device, pinned, registered, managed, array, imported.
 */
bool gmt_kind_reset_frees(enum gmt_tkind kind);

/** pool_reserve and graph_reserve: values of `usage` readings, never allocated or freed. */
bool gmt_kind_is_reading(enum gmt_tkind kind);

/**
 * Device memory held by this process, from the live bytes of every kind on one device:
 * device + array + vmm_physical + max(pool, pool_reserve) + graph_reserve.
 *
 * pool and pool_reserve measure the same memory twice (allocations inside the reservation), so
 * only the larger counts: the reservation when the tracer read it, the live allocations when it
 * could not (or a pool was never read). vmm_mapped is a view of vmm_physical; graph and
 * vmm_reserve are address space; managed memory migrates and its residence is unknown; pinned
 * and registered are host memory; imported memory belongs to another process.
 */
uint64_t gmt_kind_held(const uint64_t by_kind[GMT_TK_COUNT]);

/** Whether @p kind can be a term of gmt_kind_held() (pool and pool_reserve both can). */
bool gmt_kind_in_held(enum gmt_tkind kind);

/**
 * Whether @p kind is a term of gmt_kind_held() for these live bytes: of pool and pool_reserve
 * only the larger (the reservation on a tie), and only a term with bytes.
 */
bool gmt_kind_held_term(enum gmt_tkind kind, const uint64_t by_kind[GMT_TK_COUNT]);

#endif
