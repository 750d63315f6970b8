/*
 * @brief The memory kinds as the analyzer understands them: one-line meanings, and which kinds
 * add up to "device memory held by this process" (the kinds and their names: format/kinds.def).
 *
 * Which kinds sum into what is the one place where the analysis takes a position; docs/design.md
 * ("Analysis semantics") and docs/report-json.md explain the choice.
 */
#ifndef GMT_MODEL_TKINDS_H
#define GMT_MODEL_TKINDS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/kinds.h"

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
