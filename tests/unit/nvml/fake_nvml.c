/*
 * A stand-in libnvidia-ml.so.1 for test_nvml (TEST DOUBLE): one device at bus id
 * "0000:01:00.0" with 80 GiB of which 3 GiB used, 1 GiB of it by the calling process.
 * FAKE_NVML_INIT_FAIL=1 makes nvmlInit_v2 fail. Counts its init and shutdown calls.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	unsigned long long total, free, used;
} fake_memory;
typedef struct {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
} fake_process;

int fake_nvml_inits, fake_nvml_shutdowns;
static int device = 1; /* its address is the device handle */

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *busid, void **dev);
int nvmlDeviceGetIndex(void *dev, unsigned int *index);
int nvmlDeviceGetMemoryInfo(void *dev, fake_memory *mem);
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, fake_process *infos);

int
nvmlInit_v2(void)
{
	const char *fail = getenv("FAKE_NVML_INIT_FAIL");
	fake_nvml_inits++;
	return fail && strcmp(fail, "1") == 0 ? 1 : 0;
}

int
nvmlShutdown(void)
{
	fake_nvml_shutdowns++;
	return 0;
}

int
nvmlDeviceGetHandleByPciBusId_v2(const char *busid, void **dev)
{
	if (strcmp(busid, "0000:01:00.0") != 0)
		return 13; /* NVML_ERROR_NOT_FOUND */
	*dev = &device;
	return 0;
}

int
nvmlDeviceGetIndex(void *dev, unsigned int *index)
{
	(void)dev;
	*index = 3;
	return 0;
}

int
nvmlDeviceGetMemoryInfo(void *dev, fake_memory *mem)
{
	(void)dev;
	mem->total = 80ULL << 30;
	mem->used = 3ULL << 30;
	mem->free = mem->total - mem->used;
	return 0;
}

int
nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, fake_process *infos)
{
	(void)dev;
	if (*count < 2)
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	*count = 2;
	infos[0] = (fake_process){.pid = 1, .used = 2ULL << 30};
	infos[1] = (fake_process){.pid = (unsigned int)getpid(), .used = 1ULL << 30};
	return 0;
}
