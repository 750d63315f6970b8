/* SPDX-License-Identifier: MIT */
/**
 * @file simcuda.h
 * @brief Extra entry points of the simulated libcudart.so.13, for tests only.
 *
 * The real runtime has none of these. They carry the symbol version SIMCUDA_1, so a program
 * that uses them cannot be run on a real libcudart by accident: the dynamic linker refuses it.
 * A test that only wants to know which runtime it is on should look the symbol up with
 * dlsym(RTLD_DEFAULT, "simcuda_is_simulated") instead of linking it.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Always 1: the runtime in this process is the simulation, not a GPU. */
int simcuda_is_simulated(void);

/**
 * The address window of a simulated device: every pointer that cudaMalloc, cudaMallocManaged,
 * cudaMallocPitch or a memory pool returns for that device lies in [*base, *base + *capacity).
 * Returns 0, or -1 when device is out of range.
 */
int simcuda_device_range(int device, uintptr_t *base, size_t *capacity);

/**
 * Check the allocator invariants of a device heap and of every pool chunk on it (sorted,
 * non-overlapping, coalesced, accounting adds up). Returns 0 when they hold, -1 for a bad
 * device, or a positive code naming the first broken invariant.
 */
int simcuda_check(int device);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_H */
