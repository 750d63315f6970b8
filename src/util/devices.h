/*
 * @brief What the capture side learns about devices, for the writer's NVML readings.
 *
 * NVML numbers GPUs differently from CUDA (CUDA_VISIBLE_DEVICES, ordering), so a CUDA ordinal
 * is matched to its NVML device through the PCI bus id. The bus id is asked once per device on
 * the application's thread (a trivial CUDA query; the writer never calls CUDA) and published here
 * without locks: the writer reads an entry only after its `ready` flag.
 */
#ifndef GMT_UTIL_DEVICES_H
#define GMT_UTIL_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#define GMT_DEVICES_MAX 64
#define GMT_BUSID_MAX 32

/** True when @p device already has a bus id (cheap: one relaxed load). */
bool gmt_device_known(int device);

/** Record the bus id of a CUDA device ordinal. The first caller for a device wins. */
void gmt_device_note(int device, const char *busid);

/** Copy the bus id of @p device into @p buf. False when it is not known. */
bool gmt_device_busid(int device, char *buf, size_t n);

#endif
