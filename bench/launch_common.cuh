/*
 * @brief What the launch benchmarks share: an empty kernel and one measurement of N launches,
 * as launch calls alone ("submit": in batches, the stream synchronised outside the timed region)
 * and end to end (N launches and one synchronisation). Include after bench_util.h.
 */
#ifndef GMT_BENCH_LAUNCH_COMMON_CUH
#define GMT_BENCH_LAUNCH_COMMON_CUH

__global__ void
empty_kernel()
{
}

struct launch_rate {
	double submit, e2e; /* launches per second */
};

static struct launch_rate
measure_launches(cudaStream_t s, unsigned long launches, unsigned long batch)
{
	uint64_t spent = 0;
	for (unsigned long done = 0; done < launches;) {
		unsigned long n = launches - done < batch ? launches - done : batch;
		uint64_t t0 = mono_ns();
		for (unsigned long i = 0; i < n; i++)
			empty_kernel<<<1, 1, 0, s>>>();
		spent += mono_ns() - t0;
		CK(cudaStreamSynchronize(s));
		done += n;
	}
	CK(cudaGetLastError());
	uint64_t t0 = mono_ns();
	for (unsigned long i = 0; i < launches; i++)
		empty_kernel<<<1, 1, 0, s>>>();
	CK(cudaStreamSynchronize(s));
	uint64_t t1 = mono_ns();
	CK(cudaGetLastError());
	return {(double)launches * 1e9 / (double)spent, (double)launches * 1e9 / (double)(t1 - t0)};
}

#endif
