/*
 * victim_late N: N cudaMalloc of 4 KiB handed to late_lib.c, whose destructor frees them after
 * the tracer's own destructor wrote the trailer. Prints what it did, as victim.c does: N
 * allocations, N frees (made at teardown), nothing leaked.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void late_keep(void *p);

int
main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;

	for (long i = 0; i < n; i++) {
		void *p;
		if (cudaMalloc(&p, 4096) != cudaSuccess) {
			fprintf(stderr, "victim_late: cudaMalloc failed\n");
			return 2;
		}
		late_keep(p);
	}
	printf("{\"pid\":%d,\"allocs\":{\"cudaMalloc\":%ld},\"frees\":{\"cudaFree\":%ld},"
	       "\"leaked_bytes\":0,\"leaked_allocations\":0}\n",
	       (int)getpid(), n, n);
	return 0;
}
