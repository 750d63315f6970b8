/*
 * @brief The device's own view of memory, from NVML, for snapshot records.
 *
 * libnvidia-ml.so.1 is loaded at run time by the writer thread (no link-time dependency, no CUDA
 * call). Each reading gives the device's used/total memory and this process's used memory, which
 * the report sets against the tracked allocations (the "ledger"). Without NVML (no driver, a
 * container without the library) readings are simply absent.
 */
#ifndef GMT_WRITER_NVML_H
#define GMT_WRITER_NVML_H

#include <stdbool.h>
#include <stddef.h>

#include "format/jsonl.h"
#include "util/devices.h"

/** CUDA device ordinal -> PCI bus id, as learnt by the capture side. */
typedef bool (*gmt_busid_fn)(int device, char *buf, size_t n);

/** dlclose() as the writer's configuration gives it (the real one), NULL to keep handles open. */
typedef int (*gmt_dlclose_fn)(void *handle);

/**
 * Read every CUDA device whose bus id is known. Loads and initialises NVML at the first call
 * (a library that cannot be initialised is closed with @p close_fn). Returns the number of
 * readings written to @p out (0 without NVML).
 */
size_t gmt_nvml_read(gmt_busid_fn busid,
		     gmt_dlclose_fn close_fn,
		     struct gmt_nvml_reading *out,
		     size_t max);

/** Shut NVML down (writer exit). */
void gmt_nvml_close(void);

/** In a fork child: forget the parent's NVML state without shutting it down. */
void gmt_nvml_forget(void);

#endif
