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

#include <cupti.h> /* the CBIDs, and generated_cuda_meta.h with what it needs first */

#define SIM_ARGS(...) __VA_ARGS__

#define SIM_DRIVER_SHELL(name, params, args)                                                       \
	CUresult simcuda_##name params                                                             \
	{                                                                                          \
		name##_params params_ = {SIM_ARGS args};                                           \
		struct sim_api api_;                                                               \
                                                                                                   \
		sim_drv_enter(&api_, CUPTI_DRIVER_TRACE_CBID_##name, #name, &params_);             \
		return sim_drv_exit(&api_, sim_do_##name args);                                    \
	}

SIMCUDA_DRIVER_APIS(SIM_DRIVER_SHELL)
