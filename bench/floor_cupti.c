/*
 * @brief The CUPTI floor of bench/run_hook_overhead.py: a CUPTI subscriber holding exactly the
 * tracer's callback ids (src/capture/cupti_ids.h) whose callback does nothing, or only the bare
 * minimum of a recorded event (floor.h). What CUPTI's dispatch costs a memory call, measured the
 * way the tracer is: LD_PRELOAD=libgmt_floor_cupti.so, the same program, the same runtime.
 *
 *   GMT_FLOOR_MODE=empty   (default) every id of the tracer; the callback counts and returns
 *                  driver  the same without the runtime-domain ids (what dropping them would save)
 *                  record  every id; at each driver-domain EXIT, one recorded event (floor.h)
 *
 * Started like the tracer: the constructor sets CUDA_INJECTION64_PATH to this library when it is
 * unset, the driver calls InitializeInjection at cuInit, which loads libcupti.so.13 at run time
 * (the copy already loaded, the loader path, the toolkit's directories), subscribes and enables
 * the ids one by one. At exit one line on stderr, "gmt-floor: {...}", says how many callbacks
 * and records the main thread saw, so that the runner can check the floor really was in the
 * call path. Not a test double: it runs on tests/simcuda's CUPTI and on NVIDIA's.
 */
#include "floor.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "capture/cupti_ids.h"

#define EXPORT __attribute__((visibility("default")))

static const char *mode = "empty";
static int record_mode, driver_only;
static CUpti_SubscriberHandle subscriber;
static __typeof__(&cuptiEnableCallback) enable; /* set once subscribed */

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	if (floor_paused)
		return;
	floor_calls++;
	if (record_mode && domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		const CUpti_CallbackData *cb = data;
		if (cb->callbackSite == CUPTI_API_EXIT)
			floor_record(cbid, cb->correlationId, 0);
	}
}

static void *
open_cupti(void)
{
	static const char *const toolkit[] = {
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
	    "/usr/local/cuda/lib64/libcupti.so.13",
	    "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
	};
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !h && i < sizeof(toolkit) / sizeof(toolkit[0]); i++)
		h = dlopen(toolkit[i], RTLD_NOW | RTLD_LOCAL);
	return h;
}

/* The floor's ids (all, or the driver's only) on or off; how many changed. */
static int
enable_ids(int on)
{
	int changed = 0;

	for (size_t s = 0; s < GMT_CBID_SETS; s++) {
		const struct gmt_cbid_set *set = &gmt_cbid_sets[s];
		if (driver_only && set->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
			continue;
		for (size_t i = 0; i < set->n; i++)
			changed +=
			    enable(on, subscriber, set->domain, set->ids[i]) == CUPTI_SUCCESS;
	}
	return changed;
}

/* As the tracer's (src/capture/api.c): the floor's callbacks off (0) or on again (1), so that
 * hook_overhead --in-process times the floor with no subscriber too; -1 before it subscribed. */
EXPORT int gmt_bench_cupti(int on);
int
gmt_bench_cupti(int on)
{
	return enable ? enable_ids(on != 0) : -1;
}

EXPORT int InitializeInjection(void);

EXPORT int
InitializeInjection(void)
{
	static int done;
	void *h;
	__typeof__(&cuptiSubscribe) subscribe;
	__typeof__(&cuptiEnableCallback) enable_fn;

	if (done++)
		return 1;
	h = open_cupti();
	if (!h) {
		fprintf(stderr, "gmt-floor: libcupti.so.13 cannot be loaded: %s\n", dlerror());
		return 1;
	}
	*(void **)&subscribe = dlsym(h, "cuptiSubscribe");
	*(void **)&enable_fn = dlsym(h, "cuptiEnableCallback");
	if (!subscribe || !enable_fn ||
	    subscribe(&subscriber, on_callback, NULL) != CUPTI_SUCCESS) {
		fprintf(stderr, "gmt-floor: cannot subscribe to CUPTI\n");
		return 1;
	}
	enable = enable_fn;
	if (!enable_ids(1))
		fprintf(stderr, "gmt-floor: CUPTI enabled none of the callback ids\n");
	return 1;
}

__attribute__((constructor)) static void
floor_init(void)
{
	const char *m = getenv("GMT_FLOOR_MODE");
	Dl_info self;

	if (m && !strcmp(m, "record"))
		record_mode = 1;
	else if (m && !strcmp(m, "driver"))
		driver_only = 1;
	else if (m && *m && strcmp(m, "empty"))
		fprintf(stderr,
			"gmt-floor: GMT_FLOOR_MODE=%s is not empty, driver or record; "
			"using empty\n",
			m);
	mode = record_mode ? "record" : driver_only ? "driver" : "empty";
	if (record_mode)
		floor_map_ring();
	if (!getenv("CUDA_INJECTION64_PATH") && dladdr((void *)&floor_init, &self) &&
	    self.dli_fname)
		setenv("CUDA_INJECTION64_PATH", self.dli_fname, 0);
}

__attribute__((destructor)) static void
floor_fini(void)
{
	floor_report("cupti", mode);
}
