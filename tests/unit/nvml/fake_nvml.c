/*
 * A stand-in libnvidia-ml.so.1 for test_nvml (TEST DOUBLE): one device at bus id
 * "0000:01:00.0" with 80 GiB of which 3 GiB used, 1 GiB of it by the calling process.
 * FAKE_NVML_INIT_FAIL=1 makes nvmlInit_v2 fail. Counts its init and shutdown calls.
 *
 * FAKE_NVML_PROCS lists the device's processes instead, as NVML would on the host:
 * "PID:MIB,..." where PID is a number, `self` (getpid()) or `host` (the first pid of
 * /proc/self/status's NSpid: the pid the host sees when we run in a child PID namespace), and
 * MIB a number of MiB or `na` (NVML_VALUE_NOT_AVAILABLE). Unset: "1:2048,self:1024".
 */
#include <stdio.h>
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

static unsigned int
host_pid(void)
{
	char line[256];
	unsigned int pid = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0)
			pid = (unsigned int)strtoul(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return pid;
}

int
nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, fake_process *infos)
{
	const char *spec = getenv("FAKE_NVML_PROCS");
	char buf[512], *save = NULL;
	unsigned int n = 0;

	(void)dev;
	snprintf(buf, sizeof(buf), "%s", spec ? spec : "1:2048,self:1024");
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		if (!colon)
			continue;
		*colon = '\0';
		if (n >= *count) {
			n++;
			continue;
		}
		infos[n].pid = strcmp(tok, "self") == 0	  ? (unsigned int)getpid()
			       : strcmp(tok, "host") == 0 ? host_pid()
							  : (unsigned int)strtoul(tok, NULL, 10);
		infos[n].used =
		    strcmp(colon + 1, "na") == 0 ? ~0ULL : strtoull(colon + 1, NULL, 10) << 20;
		infos[n].gpu_instance = infos[n].compute_instance = 0;
		n++;
	}
	if (n > *count) {
		*count = n;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	*count = n;
	return 0;
}
