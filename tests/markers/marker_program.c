/*
 * A program that marks its phases with the client API of include/gpumemtrace.h (and links nothing
 * of gpumemtrace: the symbols are weak). check_markers.py runs it under the tracer and compares
 * the trace's marker lines with the sequence below, and without the tracer, where every call
 * must do nothing.
 *
 * Sequence on the main thread (allocations on the CUDA runtime, tests/simcuda in the suite):
 *
 *   alloc A; mark "start"
 *   push "epoch 1" (1); alloc B; push "forward" (2); alloc C; free C; pop "forward" (2)
 *   pop "epoch 1" (1); pop "" (0: no range open)
 *   push "level 1" .. "level 40"; pop them all (depths above 32 pop with label "")
 *   push LONG (truncated to 63 bytes, never inside a UTF-8 character); pop
 *   push "main open"; a thread: push "worker" (1); alloc; pop "worker" (1); join; pop "main open"
 *   mark "end"; free A, B, the worker's
 *
 * Prints "tracer: present" or "tracer: absent" (whether the weak symbols resolved).
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#include <gpumemtrace.h>

#define DEEP 40

static void *worker_mem;

static int
alloc(void **p, size_t n)
{
	cudaError_t rc = cudaMalloc(p, n);

	if (rc != cudaSuccess)
		fprintf(stderr, "cudaMalloc(%zu): %d\n", n, (int)rc);
	return rc == cudaSuccess ? 0 : 1;
}

static void *
worker(void *arg)
{
	(void)arg;
	GMT_RANGE_PUSH("worker");
	if (alloc(&worker_mem, 1 << 16) != 0)
		return (void *)1;
	GMT_RANGE_POP();
	return NULL;
}

int
main(void)
{
	/* 60 ASCII bytes, then "é" (2 bytes), "€" (3 bytes): the cut at 63 falls inside the euro */
	static const char long_label[] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab\xc3\xa9\xe2\x82\xac-tail";
	void *a, *b, *c, *ret;
	pthread_t th;
	char label[32];
	int bad = 0;

	bad |= alloc(&a, 1 << 20);
	GMT_MARK("start");

	GMT_RANGE_PUSH("epoch 1");
	bad |= alloc(&b, 2 << 20);
	GMT_RANGE_PUSH("forward");
	bad |= alloc(&c, 3 << 20);
	cudaFree(c);
	GMT_RANGE_POP();
	GMT_RANGE_POP();
	GMT_RANGE_POP(); /* unbalanced: nothing is open */

	for (int i = 1; i <= DEEP; i++) {
		snprintf(label, sizeof(label), "level %d", i);
		GMT_RANGE_PUSH(label);
	}
	for (int i = 1; i <= DEEP; i++)
		GMT_RANGE_POP();

	GMT_RANGE_PUSH(long_label);
	GMT_RANGE_POP();

	GMT_RANGE_PUSH("main open");
	if (pthread_create(&th, NULL, worker, NULL) != 0 || pthread_join(th, &ret) != 0 || ret)
		bad = 1;
	GMT_RANGE_POP();

	GMT_MARK("end");
	cudaFree(a);
	cudaFree(b);
	cudaFree(worker_mem);
	printf("tracer: %s\n", gmt_mark && gmt_range_push && gmt_range_pop ? "present" : "absent");
	return bad;
}
