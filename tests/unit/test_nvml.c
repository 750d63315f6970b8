/*
 * The writer's NVML readings (src/writer/nvml.c) on a stand-in libnvidia-ml.so.1
 * (fake_nvml.c, found through LD_LIBRARY_PATH): a device's readings by the bus id the capture
 * side learnt, and a library that cannot be initialised closed with the dlclose the writer's
 * configuration gives (the tracer's real one), not with the dlclose the tracer exports.
 *
 *   test_nvml                  the above
 *   test_nvml namespace CASE   this process's figure when NVML's pids are not ours (a PID
 *                              namespace; FAKE_NVML_PROCS says what NVML lists): the rule of
 *                              docs/containers.md, CASE is what the environment sets up
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* One reading under FAKE_NVML_PROCS (set by meson.build), checked against the rule. */
static int
namespace_case(const char *c)
{
	struct gmt_nvml_reading r[GMT_DEVICES_MAX];
	const char *from;

	CHECK_EQ_U64(gmt_nvml_read(busid, counting_dlclose, r, GMT_DEVICES_MAX), 1);
	from = r[0].process_used_from ? r[0].process_used_from : "pid";
	printf("test_nvml %s: pid %d, process_used %s %llu MiB from %s, pid_namespace %d\n", c,
	       (int)getpid(), r[0].has_process_used ? "" : "(none)",
	       (unsigned long long)(r[0].process_used >> 20), from, r[0].pid_namespace);
	if (strcmp(c, "nspid") == 0) {
		/* under unshare --pid --fork: getpid() is 1 here, and NVML's pid 1 is the host's
		 * init (2 GiB in this fake); ours is the host pid NSpid names (1 GiB) */
		CHECK_EQ_U64(getpid(), 1);
		CHECK(r[0].has_process_used);
		CHECK_EQ_U64(r[0].process_used, 1ULL << 30);
		CHECK(strcmp(from, "nspid") == 0);
		CHECK(r[0].pid_namespace);
	} else if (strcmp(c, "alone") == 0) {
		/* a container: one process on the device, a pid we cannot see: it is this one */
		CHECK(r[0].has_process_used);
		CHECK_EQ_U64(r[0].process_used, 1536ULL << 20);
		CHECK(strcmp(from, "only_process") == 0);
		CHECK(r[0].pid_namespace);
	} else if (strcmp(c, "alone-na") == 0) {
		/* ... and NVML has no per-process figure: the device's used memory (3 GiB) */
		CHECK(r[0].has_process_used);
		CHECK_EQ_U64(r[0].process_used, 3ULL << 30);
		CHECK(strcmp(from, "device_used") == 0);
		CHECK(r[0].pid_namespace);
	} else if (strcmp(c, "shared") == 0) {
		/* two processes we cannot see: which is ours is unknown, so no figure */
		CHECK(!r[0].has_process_used);
		CHECK(r[0].pid_namespace);
	} else if (strcmp(c, "other") == 0) {
		/* no namespace: another process we can see (pid 1) holds memory, we hold none */
		CHECK(r[0].has_process_used);
		CHECK_EQ_U64(r[0].process_used, 0);
		CHECK(strcmp(from, "pid") == 0);
		CHECK(!r[0].pid_namespace);
	} else {
		fprintf(stderr, "test_nvml: unknown namespace case '%s'\n", c);
		return 2;
	}
	gmt_nvml_close();
	printf("test_nvml namespace %s: ok\n", c);
	return 0;
}

int
main(int argc, char **argv)
{
	struct gmt_nvml_reading r[GMT_DEVICES_MAX];

	if (argc == 3 && strcmp(argv[1], "namespace") == 0)
		return namespace_case(argv[2]);

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
