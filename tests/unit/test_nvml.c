/*
 * The writer's NVML readings (src/writer/nvml.c) on a stand-in libnvidia-ml.so.1
 * (fake_nvml.c, found through LD_LIBRARY_PATH): a device's readings by the bus id the capture
 * side learnt, and a library that cannot be initialised closed with the dlclose the writer's
 * configuration gives (the tracer's real one), not with the dlclose the tracer exports.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "writer/nvml.h"

static int closes;
static void *closed;

static int
counting_dlclose(void *handle)
{
	closes++;
	closed = handle;
	return dlclose(handle);
}

static bool
busid(int device, char *buf, size_t n)
{
	if (device != 0)
		return false;
	snprintf(buf, n, "0000:01:00.0");
	return true;
}

static int
fake_counter(const char *name)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
	CHECK(h != NULL);
	int *p = dlsym(h, name);
	CHECK(p != NULL);
	dlclose(h);
	return *p;
}

int
main(void)
{
	struct gmt_nvml_reading r[GMT_DEVICES_MAX];

	/* a library whose init fails: closed through the configured dlclose, no readings */
	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	CHECK_EQ_U64(gmt_nvml_read(busid, counting_dlclose, r, GMT_DEVICES_MAX), 0);
	CHECK_EQ_U64(closes, 1);
	CHECK(closed != NULL);
	CHECK(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL); /* really closed */
	/* tried once per process: no second load */
	CHECK_EQ_U64(gmt_nvml_read(busid, counting_dlclose, r, GMT_DEVICES_MAX), 0);
	CHECK_EQ_U64(closes, 1);

	/* after a fork the child starts afresh: now NVML works, and nothing is closed */
	gmt_nvml_forget();
	unsetenv("FAKE_NVML_INIT_FAIL");
	CHECK_EQ_U64(gmt_nvml_read(busid, counting_dlclose, r, GMT_DEVICES_MAX), 1);
	CHECK_EQ_U64(closes, 1);
	CHECK_EQ_U64(r[0].device, 0);
	CHECK_EQ_U64(r[0].index, 3);
	CHECK_EQ_U64(r[0].total, 80ULL << 30);
	CHECK_EQ_U64(r[0].used, 3ULL << 30);
	CHECK(r[0].has_process_used);
	CHECK_EQ_U64(r[0].process_used, 1ULL << 30);
	CHECK_EQ_U64(fake_counter("fake_nvml_inits"), 1);

	gmt_nvml_close();
	CHECK_EQ_U64(fake_counter("fake_nvml_shutdowns"), 1);
	printf("test_nvml: ok\n");
	return 0;
}
