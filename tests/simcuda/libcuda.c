/* SPDX-License-Identifier: MIT */
/**
 * @file libcuda.c
 * @brief A simulated libcuda.so.1 (TEST DOUBLE, not the CUDA driver): the driver calls of
 *        SIMCUDA_DRIVER_APIS, exported unversioned under their real names.
 *
 * The state lives in the simulated libcudart.so.13, which this library needs: each call here
 * is simcuda_<name> of the runtime double, which fires the call's CUPTI DRIVER_API callbacks
 * and runs the simulation. So the runtime and the driver share one set of devices, and a driver
 * call made directly shows its callbacks just like one the runtime makes. Where cuda.h renames
 * a call by macro (cuMemAlloc -> cuMemAlloc_v2) the real library's symbol is the _v2 name, and
 * so it is here.
 */
#include "simcuda-driver.h"

/* Declared again before each definition: the compiler checks it against cuda.h. */
#define SIM_EXPORT(name, params, args)                                                             \
	CUresult CUDAAPI name params;                                                              \
	CUresult CUDAAPI name params                                                               \
	{                                                                                          \
		return simcuda_##name args;                                                        \
	}

SIMCUDA_DRIVER_APIS(SIM_EXPORT)
