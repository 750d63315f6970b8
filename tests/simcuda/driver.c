/* SPDX-License-Identifier: MIT */
/**
 * @file driver.c
 * @brief The simulated driver calls as CUPTI reports them (TEST DOUBLE): simcuda_cu* for every
 *        entry of SIMCUDA_DRIVER_APIS.
 *
 * Each simcuda_<name> fills <name>_params (generated_cuda_meta.h) from its arguments, fires
 * DRIVER_API ENTER (CUPTI_DRIVER_TRACE_CBID_<name>, functionName "<name>"), runs sim_do_<name>
 * and fires EXIT with functionReturnValue pointing at the CUresult. The simulated runtime calls
 * these where the real runtime calls the driver; libcuda.so.1 exports <name> as a call of them.
 */
#include "simcuda-internal.h"

#include <stdbool.h>

#include <cupti.h> /* the CBIDs, and generated_cuda_meta.h with what it needs first */

#define SIM_ARGS(...) __VA_ARGS__

/* The calls that only ask (what a tracer calls inside the application's call): they cost
 * SIMCUDA_QUERY_NS and are counted (device.c, sim_query). */
static bool
is_query(CUpti_CallbackId cbid)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemGetAddressRange_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool:
	case CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetGraphMemAttribute:
	case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetPCIBusId:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeGetType:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphMemAllocNodeGetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphMemFreeNodeGetParams: return true;
	default: return false;
	}
}

#define SIM_DRIVER_SHELL(name, params, args)                                                       \
	CUresult simcuda_##name params                                                             \
	{                                                                                          \
		name##_params params_ = {SIM_ARGS args};                                           \
		struct sim_api api_;                                                               \
                                                                                                   \
		if (is_query(CUPTI_DRIVER_TRACE_CBID_##name))                                      \
			sim_query();                                                               \
		sim_drv_enter(&api_, CUPTI_DRIVER_TRACE_CBID_##name, #name, &params_);             \
		return sim_drv_exit(&api_, sim_do_##name args);                                    \
	}

SIMCUDA_DRIVER_APIS(SIM_DRIVER_SHELL)
