/*
 * @brief The hook table (hooks.def) as lookups for the callbacks: CUPTI callback id -> the API
 * it records and whether it is a _ptsz entry. One bounded array load per callback.
 */
#ifndef GMT_CAPTURE_HOOK_LOOKUP_H
#define GMT_CAPTURE_HOOK_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/cupti_ids.h"
#include "format/event.h"

/** What a callback id records: api GMT_API_NONE for ids that make no event of their own. */
struct gmt_hook {
	uint16_t api; /* enum gmt_api */
	bool ptsz;
};

static const struct gmt_hook gmt_hooks_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {
#define GMT_HOOK_RT(id, api, ptsz, family, args) [RT(id)] = {GMT_API_##api, GMT_HOOK_PTSZ_##ptsz},
#include "capture/hooks.def"
};

static const struct gmt_hook gmt_hooks_driver[CUPTI_DRIVER_TRACE_CBID_SIZE] = {
#define GMT_HOOK_DRV(id, api, ptsz, family, args) [DRV(id)] = {GMT_API_##api, GMT_HOOK_PTSZ_##ptsz},
#include "capture/hooks.def"
};

static inline struct gmt_hook
gmt_hook_runtime(CUpti_CallbackId cbid)
{
	return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? gmt_hooks_runtime[cbid]
						    : (struct gmt_hook){0};
}

static inline struct gmt_hook
gmt_hook_driver(CUpti_CallbackId cbid)
{
	return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? gmt_hooks_driver[cbid] : (struct gmt_hook){0};
}

#endif
