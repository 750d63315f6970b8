/*
 * @brief Benchmark: what holding CUPTI's callbacks costs kernel launches, measured inside ONE
 * process. Blocks of launches alternate between "no subscriber" and "a subscriber with exactly
 * the tracer's callback set enabled" (src/capture/cupti_ids.h), so the machine's drift between
 * processes and rounds (±15% on the shared H200, docs/performance.md) hits both alike.
 *
 *   nvcc -O2 -I src -o launch_inprocess bench/launch_inprocess.cu -lcupti
 *   launch_inprocess [--pairs P] [--launches N] [--batch B] [--warmup W]
 *
 * The subscriber's callback does nothing: none of the enabled ids fires on a launch, so the
 * tracer's own callback code is not what is measured here (the memory hooks are measured by
 * hook_overhead); this is CUPTI's dispatch cost on every driver call while a subscriber exists.
 * Each pair measures both states in alternating order (off/on, then on/off) and yields the ratio
 * on/off of launches per second; the program prints the median ratio over the pairs, for the
 * launch calls alone ("submit", in batches of B with the stream synchronised outside the timed
 * region) and end to end (N launches and one synchronisation). One line of JSON on stdout.
 * Run it without the tracer (it subscribes itself).
 */
#define BENCH_PROG "launch_inprocess"
#include "bench_util.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <cupti.h>
#include <string.h>

#include "capture/cupti_ids.h"
#include "launch_common.cuh"

#define MAX_PAIRS 1000

static void CUPTIAPI
on_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}

static CUpti_SubscriberHandle subscriber;

static void
die(const char *what)
{
	fprintf(stderr, BENCH_PROG ": %s\n", what);
	exit(1);
}

static void
hold_cupti(bool on)
{
	if (!on) {
		if (cuptiUnsubscribe(subscriber) != CUPTI_SUCCESS)
			die("cuptiUnsubscribe failed");
		return;
	}
	if (cuptiSubscribe(&subscriber, on_callback, NULL) != CUPTI_SUCCESS)
		die("cuptiSubscribe failed (is another CUPTI tool attached?)");
	for (size_t i = 0; i < sizeof(driver_cbids) / sizeof(driver_cbids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids[i]);
	for (size_t i = 0; i < sizeof(runtime_cbids) / sizeof(runtime_cbids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids[i]);
	for (size_t i = 0; i < sizeof(resource_cbids) / sizeof(resource_cbids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, resource_cbids[i]);
}

static double
median(double *v, unsigned long n)
{
	std::sort(v, v + n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int
main(int argc, char **argv)
{
	unsigned long pairs = 41, launches = 20000, batch = 256, warmup = 20000;
	static double r_submit[MAX_PAIRS], r_e2e[MAX_PAIRS], off_submit[MAX_PAIRS], on_submit[MAX_PAIRS];
	cudaStream_t s;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--pairs") == 0)
			pairs = parse_ulong(argv[i + 1], 1, MAX_PAIRS);
		else if (strcmp(argv[i], "--launches") == 0)
			launches = parse_ulong(argv[i + 1], 1, 100000000UL);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = parse_ulong(argv[i + 1], 1, 100000UL);
		else if (strcmp(argv[i], "--warmup") == 0)
			warmup = parse_ulong(argv[i + 1], 0, 100000000UL);
		else
			die("usage: launch_inprocess [--pairs P] [--launches N] [--batch B] [--warmup W]");
	}
	CK(cudaFree(NULL));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (unsigned long i = 0; i < warmup; i++)
		empty_kernel<<<1, 1, 0, s>>>();
	CK(cudaStreamSynchronize(s));
	hold_cupti(true); /* one subscribe/unsubscribe cycle before anything is timed */
	measure_launches(s, launches / 4 + 1, batch);
	hold_cupti(false);

	for (unsigned long p = 0; p < pairs; p++) {
		struct launch_rate off, on;
		if (p % 2 == 0) {
			off = measure_launches(s, launches, batch);
			hold_cupti(true);
			on = measure_launches(s, launches, batch);
			hold_cupti(false);
		} else {
			hold_cupti(true);
			on = measure_launches(s, launches, batch);
			hold_cupti(false);
			off = measure_launches(s, launches, batch);
		}
		r_submit[p] = on.submit / off.submit;
		r_e2e[p] = on.e2e / off.e2e;
		off_submit[p] = off.submit;
		on_submit[p] = on.submit;
	}
	printf("{\"bench\":\"launch_inprocess\",\"pairs\":%lu,\"launches\":%lu,\"batch\":%lu,"
	       "\"cbids\":%zu,\"median_off_launches_per_s\":%.1f,\"median_on_launches_per_s\":%.1f,"
	       "\"median_ratio_submit\":%.4f,\"median_ratio_e2e\":%.4f}\n",
	       pairs, launches, batch,
	       sizeof(driver_cbids) / sizeof(driver_cbids[0]) + sizeof(runtime_cbids) / sizeof(runtime_cbids[0]) +
		   sizeof(resource_cbids) / sizeof(resource_cbids[0]),
	       median(off_submit, pairs), median(on_submit, pairs), median(r_submit, pairs),
	       median(r_e2e, pairs));
	return 0;
}
