/*
 * @brief NVML readings (see nvml.h). The few NVML declarations used are written out here, with
 * NVML's documented ABI, so the build needs no nvml.h (the toolkit does not always ship it).
 */
#define _GNU_SOURCE
#include "writer/nvml.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "util/devices.h"

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct { /* nvmlProcessInfo_t as taken by nvmlDeviceGetComputeRunningProcesses_v3 */
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define MAX_PROCESSES 256

static struct {
	int state; /* 0 untried, 1 usable, -1 unavailable */
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*by_busid)(const char *busid, nvmlDevice_t *dev);
	nvmlReturn_t (*index)(nvmlDevice_t dev, unsigned int *index);
	nvmlReturn_t (*memory)(nvmlDevice_t dev, nvmlMemory_t *mem);
	nvmlReturn_t (*processes)(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos);
	nvmlDevice_t dev[GMT_DEVICES_MAX];
	unsigned int idx[GMT_DEVICES_MAX];
	nvmlProcessInfo_t procs[MAX_PROCESSES];
} nvml;

static bool
nvml_open(gmt_dlclose_fn close_fn)
{
	if (nvml.state)
		return nvml.state > 0;
	nvml.state = -1;
	nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nvml.lib)
		return false;
#define SYM(field, name) *(void **)&nvml.field = dlsym(nvml.lib, name)
	SYM(init, "nvmlInit_v2");
	SYM(shutdown, "nvmlShutdown");
	SYM(by_busid, "nvmlDeviceGetHandleByPciBusId_v2");
	SYM(index, "nvmlDeviceGetIndex");
	SYM(memory, "nvmlDeviceGetMemoryInfo");
	SYM(processes, "nvmlDeviceGetComputeRunningProcesses_v3");
#undef SYM
	if (!nvml.init || !nvml.by_busid || !nvml.memory || nvml.init() != 0) {
		if (close_fn)
			close_fn(nvml.lib);
		nvml.lib = NULL;
		return false;
	}
	nvml.state = 1;
	return true;
}

/* This process's GPU memory on @p dev; false when NVML does not say (permissions, MIG). */
static bool
process_used(nvmlDevice_t dev, unsigned long long *used)
{
	unsigned int n = MAX_PROCESSES;
	unsigned int self = (unsigned int)getpid();

	if (!nvml.processes || nvml.processes(dev, &n, nvml.procs) != 0)
		return false;
	for (unsigned int i = 0; i < n && i < MAX_PROCESSES; i++) {
		if (nvml.procs[i].pid != self)
			continue;
		if (nvml.procs[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE)
			return false;
		*used = nvml.procs[i].usedGpuMemory;
		return true;
	}
	*used = 0; /* listed nowhere: no memory on this device (yet) */
	return true;
}

static nvmlDevice_t
device_handle(int d, gmt_busid_fn busid)
{
	char id[GMT_BUSID_MAX];

	if (nvml.dev[d])
		return nvml.dev[d];
	if (!busid(d, id, sizeof(id)) || nvml.by_busid(id, &nvml.dev[d]) != 0) {
		nvml.dev[d] = NULL;
		return NULL;
	}
	if (!nvml.index || nvml.index(nvml.dev[d], &nvml.idx[d]) != 0)
		nvml.idx[d] = (unsigned int)d;
	return nvml.dev[d];
}

size_t
gmt_nvml_read(gmt_busid_fn busid, gmt_dlclose_fn close_fn, struct gmt_nvml_reading *out,
	      size_t max)
{
	size_t n = 0;

	if (!busid || !nvml_open(close_fn))
		return 0;
	for (int d = 0; d < GMT_DEVICES_MAX && n < max; d++) {
		nvmlDevice_t dev = device_handle(d, busid);
		nvmlMemory_t mem;
		unsigned long long used;
		if (!dev || nvml.memory(dev, &mem) != 0)
			continue;
		out[n] = (struct gmt_nvml_reading){
			.device = d,
			.index = nvml.idx[d],
			.total = mem.total,
			.used = mem.used,
		};
		if (process_used(dev, &used)) {
			out[n].has_process_used = true;
			out[n].process_used = used;
		}
		n++;
	}
	return n;
}

void
gmt_nvml_close(void)
{
	if (nvml.state > 0 && nvml.shutdown)
		nvml.shutdown();
	nvml.state = 0;
	memset(nvml.dev, 0, sizeof(nvml.dev));
}

void
gmt_nvml_forget(void)
{
	/* a fork child: the parent's NVML session is not ours to shut down; start afresh */
	nvml.state = 0;
	memset(nvml.dev, 0, sizeof(nvml.dev));
}
