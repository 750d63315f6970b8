/*
 * @brief The CUPTI callback ids the tracer enables, from the hook table (hooks.def): the driver
 * API's memory calls, the runtime API's (for the names the program called) and three resource
 * callbacks. Never whole domains.
 *
 * In a header so that bench/launch_inprocess.cu can hold exactly this set while it measures
 * what a subscriber costs kernel launches (C and C++).
 */
#ifndef GMT_CAPTURE_CUPTI_IDS_H
#define GMT_CAPTURE_CUPTI_IDS_H

#include <stddef.h>

#include <cupti.h>

#ifndef RT
#	define RT(cb) CUPTI_RUNTIME_TRACE_CBID_##cb
#endif
#ifndef DRV
#	define DRV(cb) CUPTI_DRIVER_TRACE_CBID_##cb
#endif
#ifndef RES
#	define RES(cb) CUPTI_CBID_RESOURCE_##cb
#endif

static const CUpti_CallbackId runtime_cbids[] = {
#define GMT_HOOK_RT(id, api, ptsz, family, args) RT(id),
#include "capture/hooks.def"
};

static const CUpti_CallbackId driver_cbids[] = {
#define GMT_HOOK_DRV(id, api, ptsz, family, args) DRV(id),
#include "capture/hooks.def"
};

static const CUpti_CallbackId resource_cbids[] = {
#define GMT_HOOK_RES(id, api, ptsz, family, args) RES(id),
#include "capture/hooks.def"
};

/* The three sets with their domains, in the order they are enabled. */
struct gmt_cbid_set {
	CUpti_CallbackDomain domain;
	const CUpti_CallbackId *ids;
	size_t n;
};

#define GMT_CBID_COUNT(a) (sizeof(a) / sizeof((a)[0]))
static const struct gmt_cbid_set gmt_cbid_sets[] = {
    {CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids, GMT_CBID_COUNT(driver_cbids)},
    {CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids, GMT_CBID_COUNT(runtime_cbids)},
    {CUPTI_CB_DOMAIN_RESOURCE, resource_cbids, GMT_CBID_COUNT(resource_cbids)},
};
#define GMT_CBID_SETS GMT_CBID_COUNT(gmt_cbid_sets)

#endif
