/*
 * @brief NVML readings (see nvml.h). The few NVML declarations used are written out here, with
 * NVML's documented ABI, so the build needs no nvml.h (the toolkit does not always ship it).
 */
#define _GNU_SOURCE
#include "writer/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
	/* This process's pid as NVML sees it: NVML reports pids of the host's PID namespace. In a
	 * child namespace, /proc/self/status's NSpid lists the pid in each namespace from the one
	 * /proc belongs to down to ours; when it has more than one, the first is the outermost we
	 * can name (the host's, unless /proc is the container's own). */
	unsigned int pid;
	bool in_pid_namespace;
} nvml;

/* nvml.pid and nvml.in_pid_namespace, from /proc/self/status (the writer thread: I/O is fine). */
static void
learn_pid(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	nvml.pid = (unsigned int)getpid();
	nvml.in_pid_namespace = false;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		char *end, *p = line + 6;
		unsigned long first = strtoul(p, &end, 10);
		if (end != p && first > 0) {
			strtoul(end, &p, 10);
			if (p != end) { /* a second entry: we are in a child PID namespace */
				nvml.pid = (unsigned int)first;
				nvml.in_pid_namespace = true;
			}
		}
		break;
	}
	fclose(f);
}

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
	learn_pid();
	return true;
}

/* None of NVML's @p n processes is one this process can see (kill(pid, 0): ESRCH), so their pids
 * are of another PID namespace. */
static bool
pids_hidden(unsigned int n)
{
	if (n == 0)
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (kill((pid_t)nvml.procs[i].pid, 0) == 0 || errno != ESRCH)
			return false;
	return true;
}

/*
 * This process's GPU memory on @p dev, into @p r; no figure when NVML does not say (permissions,
 * MIG). The rule (docs/containers.md): NVML's entry of our pid (the outer one in a PID
 * namespace, "nspid"); no entry and every listed pid one we can see: none ("0"); when no entry
 * has it and the listed pids are another namespace's (we cannot see them), the device's
 * only process is taken as this one ("only_process": we are traced, so we hold a context
 * there), and when NVML has no per-process figure for it, the device's used memory
 * ("device_used"). Several processes and none ours: no figure, and pid_namespace says why.
 */
static void
process_used(nvmlDevice_t dev, const nvmlMemory_t *mem, struct gmt_nvml_reading *r)
{
	unsigned int n = MAX_PROCESSES;

	if (!nvml.processes || nvml.processes(dev, &n, nvml.procs) != 0)
		return;
	if (n > MAX_PROCESSES)
		n = MAX_PROCESSES;
	for (unsigned int i = 0; i < n; i++) {
		if (nvml.procs[i].pid != nvml.pid)
			continue;
		if (nvml.procs[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE)
			return;
		r->has_process_used = true;
		r->process_used = nvml.procs[i].usedGpuMemory;
		r->process_used_from = nvml.in_pid_namespace ? "nspid" : NULL;
		r->pid_namespace = nvml.in_pid_namespace;
		return;
	}
	if (!nvml.in_pid_namespace && !pids_hidden(n)) {
		/* listed nowhere, and NVML's pids are ours to see: no memory on this device (yet)
		 */
		r->has_process_used = true;
		r->process_used = 0;
		return;
	}
	/* Processes on the device, none with our pid, and none of them a process we can see:
	 * NVML's pids are another namespace's (a container whose /proc is its own). */
	r->pid_namespace = true;
	if (n != 1)
		return;
	r->has_process_used = true;
	if (nvml.procs[0].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
		r->process_used = nvml.procs[0].usedGpuMemory;
		r->process_used_from = "only_process";
	} else {
		r->process_used = mem->used;
		r->process_used_from = "device_used";
	}
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
gmt_nvml_read(gmt_busid_fn busid, gmt_dlclose_fn close_fn, struct gmt_nvml_reading *out, size_t max)
{
	size_t n = 0;

	if (!busid || !nvml_open(close_fn))
		return 0;
	for (int d = 0; d < GMT_DEVICES_MAX && n < max; d++) {
		nvmlDevice_t dev = device_handle(d, busid);
		nvmlMemory_t mem;
		if (!dev || nvml.memory(dev, &mem) != 0)
			continue;
		out[n] = (struct gmt_nvml_reading){
		    .device = d,
		    .index = nvml.idx[d],
		    .total = mem.total,
		    .used = mem.used,
		};
		process_used(dev, &mem, &out[n]);
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
