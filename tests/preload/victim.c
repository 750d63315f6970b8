/*
 * A victim program for the preload suite: does known CUDA memory work, then prints on stdout
 * one JSON line saying exactly what it did, which run_preload.py compares with the trace.
 *
 *   victim basic     every API once or more, frees, cudaFree(NULL), a bad free, markers, leaks
 *   victim threads   16 threads allocating and freeing concurrently
 *   victim fork      allocations before and after fork(); the child allocates too
 *   victim _exit     allocations, then _exit() at once (no destructors: the tracer's _exit ends the
 *                    trace first, trailer and all)
 *   victim hang      allocations, prints "ready", sleeps until killed (SIGKILL test)
 *   victim oom       fragmentation makes a request fail although enough memory is free
 *   victim bigoom    a request larger than the device fails (any device)
 *   victim reset     cudaDeviceReset with live allocations of every kind
 *   victim burst     4 threads push events as fast as they can (drop accounting; one thread's
 *                    first pool allocation comes when the ring is full), then one pool pair
 *                    when all is quiet (its reading written whatever the burst's lost)
 *   victim plain     one allocation, nothing else (for option tests)
 *   victim vmm       the driver's virtual memory API as PyTorch's expandable segments use it:
 *                    reserve, create, map, set access, retain, unmap, release (CUPTI sees it)
 *   victim exec      allocations (one kept), says what it did, then execs itself as "victim plain"
 *                    (the same pid): the first image's trace must be whole, ended at the exec
 *   victim die HOW   allocations (one kept), an allocation too large for the device, says what it
 *                    did, then dies at once: HOW is abort (an uncaught C++ exception or a failed
 *                    CUDA check), segv (a null pointer written), term (raise(SIGTERM)),
 *                    thread-term (SIGTERM while another thread is in its CUDA calls), or
 *                    chain-term (raise(SIGTERM) into a handler of its own, installed after the
 *                    tracer's, that calls the one before it, as crash reporters do)
 *   victim closefds FILE
 *                    allocations, then closes every regular file it did not open (a daemon's
 *                    closefrom), changes directory to /, opens FILE and puts it on every free
 *                    number up to 1023, more
 *                    allocations, one line of its own into FILE: FILE must hold only that line
 *
 * Linked against libcudart.so.13: runs on tests/simcuda, or on a GPU with the real runtime.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpumemtrace.h>

#define MAX_APIS 16

/* What the program did, as the trace should show it. */
static struct {
	const char *api[MAX_APIS];
	_Atomic long allocs[MAX_APIS];
	_Atomic long frees[MAX_APIS];
	_Atomic long failed;
	_Atomic long long leaked_bytes;
	_Atomic long leaked_allocs;
	_Atomic long markers;
} did;

static pthread_mutex_t did_lock = PTHREAD_MUTEX_INITIALIZER;

static int
api_index(const char *api)
{
	pthread_mutex_lock(&did_lock);
	int i = 0;
	for (; i < MAX_APIS && did.api[i]; i++)
		if (strcmp(did.api[i], api) == 0)
			break;
	if (i < MAX_APIS && !did.api[i])
		did.api[i] = api;
	pthread_mutex_unlock(&did_lock);
	return i;
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, "victim: %s failed: %s\n", #call,                          \
				cudaGetErrorString(rc_));                                          \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static void
did_alloc(const char *api)
{
	atomic_fetch_add(&did.allocs[api_index(api)], 1);
}

static void
did_free(const char *api)
{
	atomic_fetch_add(&did.frees[api_index(api)], 1);
}

static void
did_leak(size_t bytes)
{
	atomic_fetch_add(&did.leaked_bytes, (long long)bytes);
	atomic_fetch_add(&did.leaked_allocs, 1);
}

static void
mark(const char *label)
{
	if (gmt_mark) {
		gmt_mark(label);
		atomic_fetch_add(&did.markers, 1);
	}
}

static void
print_did(void)
{
	printf("{\"pid\":%d,\"allocs\":{", (int)getpid());
	for (int i = 0, n = 0; i < MAX_APIS && did.api[i]; i++)
		if (did.allocs[i])
			printf("%s\"%s\":%ld", n++ ? "," : "", did.api[i], (long)did.allocs[i]);
	printf("},\"frees\":{");
	for (int i = 0, n = 0; i < MAX_APIS && did.api[i]; i++)
		if (did.frees[i])
			printf("%s\"%s\":%ld", n++ ? "," : "", did.api[i], (long)did.frees[i]);
	printf(
	    "},\"failed\":%ld,\"leaked_bytes\":%lld,\"leaked_allocations\":%ld,\"markers\":%ld}\n",
	    (long)did.failed, (long long)did.leaked_bytes, (long)did.leaked_allocs,
	    (long)did.markers);
	fflush(stdout);
}

// --- scenarios ----------------------------------------------------------------------------------

static void
basic(void)
{
	void *d[4], *h, *ha, *m, *p, *a, *fp;
	size_t pitch;
	cudaStream_t s;
	cudaMemPool_t pool;

	CK(cudaFree(NULL)); /* context creation idiom: not an event */
	mark("start");
	for (int i = 0; i < 4; i++) {
		CK(cudaMalloc(&d[i], (size_t)(i + 1) << 20));
		did_alloc("cudaMalloc");
	}
	CK(cudaMallocHost(&h, 4096));
	did_alloc("cudaMallocHost");
	CK(cudaHostAlloc(&ha, 8192, cudaHostAllocPortable));
	did_alloc("cudaHostAlloc");
	CK(cudaMallocManaged(&m, 3 << 20, cudaMemAttachGlobal));
	did_alloc("cudaMallocManaged");
	CK(cudaMallocPitch(&p, &pitch, 1000, 10));
	did_alloc("cudaMallocPitch");
	CK(cudaStreamCreate(&s));
	CK(cudaMallocAsync(&a, 1 << 20, s));
	did_alloc("cudaMallocAsync");
	CK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CK(cudaMallocFromPoolAsync(&fp, 2 << 20, pool, s));
	did_alloc("cudaMallocFromPoolAsync");
	mark("allocated");

	CK(cudaFree(d[0]));
	did_free("cudaFree");
	CK(cudaFree(d[2]));
	did_free("cudaFree");
	CK(cudaFreeHost(h));
	did_free("cudaFreeHost");
	CK(cudaFreeAsync(a, s));
	did_free("cudaFreeAsync");
	CK(cudaFree(fp)); /* a pool pointer freed by cudaFree, as CUDA allows */
	did_free("cudaFree");
	CK(cudaFree(p));
	did_free("cudaFree");
	CK(cudaStreamSynchronize(s));

	/* a bad free is recorded with its error and changes nothing */
	int on_stack;
	if (cudaFree(&on_stack) == cudaSuccess) {
		fprintf(stderr, "victim: freeing a stack address succeeded?\n");
		exit(2);
	}
	cudaGetLastError();
	did_free("cudaFree(bad)");

	/* leaks: d[1] (2 MiB), d[3] (4 MiB), ha (8 KiB), m (3 MiB) */
	did_leak(2 << 20);
	did_leak(4 << 20);
	did_leak(8192);
	did_leak(3 << 20);
	mark("end");
	CK(cudaStreamDestroy(s));
}

#define THREADS 16
#define PER_THREAD 500

static void *
thread_main(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		void *p;
		size_t sz = (size_t)(512 * (1 + (i + id) % 64));
		CK(cudaMalloc(&p, sz));
		did_alloc("cudaMalloc");
		if (i == PER_THREAD - 1) {
			did_leak(sz); /* each thread leaks its last allocation */
		} else {
			CK(cudaFree(p));
			did_free("cudaFree");
		}
	}
	return NULL;
}

static void
threads(void)
{
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
}

/* Each event's device (the "devices" scenario, two simulated devices): allocations after
 * cudaSetDevice(1) and back on 0, and a free by a thread whose first CUDA call it is (no context
 * of its own yet: its device is the runtime's default, 0). Prints the device of each allocation
 * in order, and the freeing thread's device, for the trace to be compared with. */
static void *
free_first(void *p)
{
	int dev = -1;

	CK(cudaFree(p)); /* this thread's first CUDA call */
	did_free("cudaFree");
	CK(cudaGetDevice(&dev));
	printf("free-device %d\n", dev);
	return NULL;
}

static void
devices(void)
{
	void *a, *b, *c;
	pthread_t th;

	CK(cudaSetDevice(1));
	CK(cudaMalloc(&a, 1 << 20));
	did_alloc("cudaMalloc");
	CK(cudaMallocAsync(&b, 2 << 20, 0));
	did_alloc("cudaMallocAsync");
	CK(cudaSetDevice(0));
	CK(cudaMalloc(&c, 3 << 20));
	did_alloc("cudaMalloc");
	printf("alloc-devices 1 1 0\n");
	CK(cudaSetDevice(1));
	CK(cudaFreeAsync(b, 0)); /* on device 1 again */
	did_free("cudaFreeAsync");
	CK(cudaSetDevice(0));
	pthread_create(&th, NULL, free_first, a);
	pthread_join(th, NULL);
	CK(cudaFree(c));
	did_free("cudaFree");
}

static void
do_fork(void)
{
	void *a, *b;

	CK(cudaMalloc(&a, 1 << 20));
	did_alloc("cudaMalloc");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		/* the child: a fresh ledger, its own trace file */
		memset(&did, 0, sizeof(did));
		void *c;
		CK(cudaMalloc(&c, 3 << 20));
		did_alloc("cudaMalloc");
		CK(cudaMalloc(&c, 5 << 20));
		did_alloc("cudaMalloc");
		did_leak(3 << 20);
		did_leak(5 << 20);
		print_did();
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	CK(cudaMalloc(&b, 2 << 20));
	did_alloc("cudaMalloc");
	CK(cudaFree(a));
	did_free("cudaFree");
	did_leak(2 << 20);
}

static void
oom(void)
{
	/* run with SIMCUDA_MEM_BYTES=64M: four 16 MiB blocks fill the device, freeing the first and
	 * third leaves 32 MiB free in two pieces, so a 32 MiB request fails */
	void *d[4], *big;
	for (int i = 0; i < 4; i++) {
		CK(cudaMalloc(&d[i], 16 << 20));
		did_alloc("cudaMalloc");
	}
	CK(cudaFree(d[0]));
	did_free("cudaFree");
	CK(cudaFree(d[2]));
	did_free("cudaFree");
	cudaError_t rc = cudaMalloc(&big, 32 << 20);
	if (rc != cudaErrorMemoryAllocation) {
		fprintf(stderr, "victim: expected cudaErrorMemoryAllocation, got %d\n", rc);
		exit(2);
	}
	/* the application still sees its error: the tracer must not have swallowed it */
	if (cudaGetLastError() != cudaErrorMemoryAllocation) {
		fprintf(stderr, "victim: cudaGetLastError lost the OOM\n");
		exit(2);
	}
	did.failed++;
	did_leak(16 << 20);
	did_leak(16 << 20);
}

static void
bigoom(void)
{
	/* a request larger than the whole device fails on any device, real or simulated */
	void *a, *big;
	size_t free_b = 0, total_b = 0;
	CK(cudaMalloc(&a, 1 << 20));
	did_alloc("cudaMalloc");
	did_leak(1 << 20);
	CK(cudaMemGetInfo(&free_b, &total_b));
	cudaError_t rc = cudaMalloc(&big, total_b + (1UL << 30));
	if (rc != cudaErrorMemoryAllocation) {
		fprintf(stderr, "victim: expected cudaErrorMemoryAllocation, got %d\n", rc);
		exit(2);
	}
	if (cudaGetLastError() != cudaErrorMemoryAllocation) {
		fprintf(stderr, "victim: cudaGetLastError lost the OOM\n");
		exit(2);
	}
	did.failed++;
}

static void
reset(void)
{
	void *d, *h, *m, *a;
	CK(cudaMalloc(&d, 1 << 20));
	did_alloc("cudaMalloc");
	CK(cudaMallocHost(&h, 1 << 16));
	did_alloc("cudaMallocHost");
	CK(cudaMallocManaged(&m, 1 << 20, cudaMemAttachGlobal));
	did_alloc("cudaMallocManaged");
	CK(cudaMallocAsync(&a, 1 << 20, 0));
	did_alloc("cudaMallocAsync");
	CK(cudaDeviceReset()); /* frees all but the pool allocation */
	did_free("cudaDeviceReset");
	did_leak(1 << 20);
}

/* Three threads flood the ring with cudaMalloc/cudaFree; once they have, the fourth makes its
 * first pool allocation, so the pool's first reservation reading most likely finds the ring
 * full (and must still reach the trace, at a later allocation). */
static _Atomic long burst_flooded;

static void *
burst_main(void *arg)
{
	bool pool = (long)arg == 0;
	while (pool && atomic_load(&burst_flooded) < 3 * 2000)
		sched_yield();
	for (int i = 0; i < 50000; i++) {
		void *p;
		if (pool) {
			CK(cudaMallocAsync(&p, 512, 0));
			did_alloc("cudaMallocAsync");
			CK(cudaFreeAsync(p, 0));
			did_free("cudaFreeAsync");
		} else {
			CK(cudaMalloc(&p, 512));
			did_alloc("cudaMalloc");
			CK(cudaFree(p));
			did_free("cudaFree");
			atomic_fetch_add(&burst_flooded, 1);
		}
	}
	return NULL;
}

static void
burst(void)
{
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, burst_main, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* quiet, then one more pool pair: the ring has room again, so the pool's next reading is
	 * written even if every reading of the burst was dropped (a loaded machine can keep the
	 * ring full at each of them) */
	struct timespec quiet = {0, 50 * 1000 * 1000};
	nanosleep(&quiet, NULL);
	void *p;
	CK(cudaMallocAsync(&p, 512, 0));
	did_alloc("cudaMallocAsync");
	CK(cudaFreeAsync(p, 0));
	did_free("cudaFreeAsync");
}

/* load THREADS PAIRS: THREADS threads of PAIRS cudaMalloc/cudaFree each, all at once (the exit
 * path under load: a bounded trace holds them all in its last bucket). */
static long load_pairs;

static void *
load_main(void *arg)
{
	(void)arg;
	for (long i = 0; i < load_pairs; i++) {
		void *p;
		CK(cudaMalloc(&p, 4096 + (size_t)(i % 16) * 512));
		did_alloc("cudaMalloc");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	return NULL;
}

static void
load(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 16;
	load_pairs = argc > 3 ? strtol(argv[3], NULL, 10) : 4000;
	if (n < 1 || n > 1024 || load_pairs < 0) {
		fprintf(stderr, "victim: load THREADS(1..1024) PAIRS\n");
		exit(2);
	}
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	if (!th)
		exit(2);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, load_main, NULL) != 0)
			exit(2);
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
}

/* A pool growing at every allocation for a burst, then once more after a pause; the pool's
 * reservation at the end on stdout ("pool-reserved: N"), for the trace's last reading. */
static void
poolburst(void)
{
	enum { N = 100 };
	void *p[N + 1];
	cudaMemPool_t pool;
	cuuint64_t reserved = 0;

	CK(cudaFree(NULL));
	for (int i = 0; i < N; i++) {
		CK(cudaMallocAsync(&p[i], 4 << 20, 0)); /* a chunk of its own each time */
		did_alloc("cudaMallocAsync");
	}
	usleep(5000);			    /* past the tracer's window of pool readings (1 ms) */
	CK(cudaMallocAsync(&p[N], 512, 0)); /* the chunks are full: one more */
	did_alloc("cudaMallocAsync");
	CK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
	printf("pool-reserved: %llu\n", (unsigned long long)reserved);
	for (int i = 0; i <= N; i++) {
		CK(cudaFreeAsync(p[i], 0));
		did_free("cudaFreeAsync");
	}
	CK(cudaStreamSynchronize(0));
}

/* N cudaMallocAsync + cudaFreeAsync pairs on one stream ("asyncpairs N"), and how long they took
 * on stdout ("elapsed-ms: T"): what the tracer's driver queries are bounded by. */
static void
asyncpairs(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	struct timespec t0, t1;
	void *p;

	CK(cudaFree(NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		CK(cudaMallocAsync(&p, 1 << 20, 0));
		CK(cudaFreeAsync(p, 0));
	}
	CK(cudaStreamSynchronize(0));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("elapsed-ms: %.3f\n",
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}

/* hold N: N device allocations live at once, then freed newest first (a reference counter's
 * hash chains full of neighbours, each free taking the head of its chain). */
static void
hold(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 5000;
	if (n < 1 || n > 1000000) {
		fprintf(stderr, "victim: hold N(1..1000000)\n");
		exit(2);
	}
	void **p = calloc((size_t)n, sizeof(*p));
	if (!p)
		exit(2);
	for (long i = 0; i < n; i++) {
		CK(cudaMalloc(&p[i], 256 + (size_t)(i % 8) * 256));
		did_alloc("cudaMalloc");
	}
	for (long i = n - 1; i >= 0; i--) {
		CK(cudaFree(p[i]));
		did_free("cudaFree");
	}
	free(p);
}

/* exec: the image replaced after its allocations, without exit: everything before must be in
 * its trace (there was no destructor, and the writer thread goes with the image). */
static void
exec_self(void)
{
	void *p, *kept;

	for (int i = 0; i < 300; i++) {
		CK(cudaMalloc(&p, 4096));
		did_alloc("cudaMalloc");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	CK(cudaMalloc(&kept, 1 << 20)); /* live when the image goes */
	did_alloc("cudaMalloc");
	did_leak(1 << 20);
	print_did();
	execl("/proc/self/exe", "victim", "plain", (char *)NULL);
	perror("victim: exec");
	exit(2);
}

/* closefds FILE: the tracer's descriptor closed under it, its number given to the program's
 * file; the trace must go on and FILE must hold the program's line only. */
static void
closefds(int argc, char **argv)
{
	static const char own[] = "the victim's own line\n";
	struct timespec flush = {0, 400 * 1000 * 1000}; /* > GPUMEMTRACE_FLUSH_MS */
	void *p;

	if (argc < 3) {
		fprintf(stderr, "victim: closefds FILE\n");
		exit(2);
	}
	for (int i = 0; i < 200; i++) {
		CK(cudaMalloc(&p, 4096));
		did_alloc("cudaMalloc");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	nanosleep(&flush, NULL); /* the trace file is open and written */
	for (int fd = 3; fd < 4096; fd++) {
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			close(fd);
	}
	if (chdir("/") != 0) /* and the trace's directory was given relative to the old one */
		exit(2);
	int mine = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (mine < 0) {
		perror("victim: closefds: open");
		exit(2);
	}
	for (int fd = 3; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			dup2(mine, fd);
	for (int i = 0; i < 200; i++) {
		CK(cudaMalloc(&p, 8192));
		did_alloc("cudaMalloc");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	nanosleep(&flush, NULL); /* the writer has written since */
	if (write(mine, own, sizeof(own) - 1) != (ssize_t)sizeof(own) - 1) {
		perror("victim: closefds: write");
		exit(2);
	}
	struct stat me;
	if (fstat(mine, &me) != 0)
		exit(2);
	for (int fd = 3; fd < 1024; fd++) { /* every copy of FILE, the tracer's own left open */
		struct stat st;
		if (fstat(fd, &st) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino)
			close(fd);
	}
}

static void
plain(void)
{
	void *p;
	CK(cudaMalloc(&p, 1 << 20));
	did_alloc("cudaMalloc");
	did_leak(1 << 20);
}

/* die chain-term: the handler before ours, called as crash reporters and runtimes chain */
static struct sigaction chained;

static void
chain_handler(int sig, siginfo_t *si, void *uc)
{
	if (chained.sa_flags & SA_SIGINFO)
		chained.sa_sigaction(sig, si, uc);
	else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN)
		chained.sa_handler(sig);
}

/* die: a process a signal ends (no destructor runs), right after its calls */
static void *
churn(void *arg)
{
	void *p;

	atomic_store((_Atomic bool *)arg, true);
	for (;;) { /* until the signal: not counted, the test only needs the process to end */
		if (cudaMalloc(&p, 4096) == cudaSuccess)
			cudaFree(p);
	}
	return NULL;
}

static void
die(int argc, char **argv)
{
	const char *how = argc > 2 ? argv[2] : "";
	void *p;

	for (int i = 0; i < 100; i++) {
		CK(cudaMalloc(&p, 4096));
		did_alloc("cudaMalloc");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	bigoom(); /* one kept, one failed: the failure that explains a crash */
	if (strcmp(how, "thread-term") == 0) {
		pthread_t t;
		_Atomic bool started = false;
		if (pthread_create(&t, NULL, churn, &started) != 0)
			exit(2);
		while (!atomic_load(&started))
			sched_yield();
		print_did();
		raise(SIGTERM);
	}
	if (strcmp(how, "chain-term") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = chain_handler;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTERM, &sa, &chained) != 0)
			exit(2);
		print_did();
		raise(SIGTERM);
		fprintf(stderr, "victim: SIGTERM did not end it\n");
		exit(2);
	}
	print_did();
	if (strcmp(how, "abort") == 0)
		abort();
	if (strcmp(how, "segv") == 0)
		*(volatile int *)(uintptr_t)atoi("0") = 1;
	if (strcmp(how, "term") == 0)
		raise(SIGTERM);
	fprintf(stderr, "victim: die abort|segv|term|thread-term|chain-term\n");
	exit(2);
}

/* Driver calls through dlopen, as cudart and PyTorch reach them (no link against libcuda). */
#define DRV_CK(call)                                                                               \
	do {                                                                                       \
		CUresult rc_ = (call);                                                             \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			fprintf(stderr, "victim: %s failed: %d\n", #call, (int)rc_);               \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static void *
driver_fn(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "victim: libcuda.so.1 has no %s\n", name);
		exit(2);
	}
	return p;
}

static void
vmm(void)
{
	CK(cudaFree(NULL)); /* the context; and the runtime has loaded its driver by now */
	/* the driver the runtime loaded (a build RUNPATH must not pick the test double on a GPU) */
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "victim: cannot load libcuda.so.1: %s\n", dlerror());
		exit(2);
	}
	__typeof__(&cuMemGetAllocationGranularity) granularity =
	    driver_fn(lib, "cuMemGetAllocationGranularity");
	__typeof__(&cuMemAddressReserve) reserve = driver_fn(lib, "cuMemAddressReserve");
	__typeof__(&cuMemCreate) create = driver_fn(lib, "cuMemCreate");
	__typeof__(&cuMemMap) map = driver_fn(lib, "cuMemMap");
	__typeof__(&cuMemSetAccess) set_access = driver_fn(lib, "cuMemSetAccess");
	__typeof__(&cuMemRetainAllocationHandle) retain =
	    driver_fn(lib, "cuMemRetainAllocationHandle");
	__typeof__(&cuMemUnmap) unmap = driver_fn(lib, "cuMemUnmap");
	__typeof__(&cuMemRelease) release = driver_fn(lib, "cuMemRelease");

	CUmemAllocationProp prop = {
	    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
	};
	size_t gran = 0;
	DRV_CK(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

	CUdeviceptr va;
	DRV_CK(reserve(&va, 16 * gran, 0, 0, 0));
	did_alloc("cuMemAddressReserve");
	CUmemGenericAllocationHandle h1, h2, again;
	DRV_CK(create(&h1, gran, &prop, 0));
	did_alloc("cuMemCreate");
	DRV_CK(create(&h2, gran, &prop, 0));
	did_alloc("cuMemCreate");
	DRV_CK(map(va, gran, 0, h1, 0));
	did_alloc("cuMemMap");
	DRV_CK(map(va + gran, gran, 0, h2, 0));
	did_alloc("cuMemMap");
	CUmemAccessDesc access = {.location = prop.location,
				  .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	DRV_CK(set_access(va, 2 * gran, &access, 1));
	DRV_CK(retain(&again, (void *)(uintptr_t)(va + gran))); /* h2 gains a reference ... */
	DRV_CK(release(again));					/* ... and loses it */
	did_free("cuMemRelease");
	DRV_CK(unmap(va, gran)); /* shrink: the first page goes */
	did_free("cuMemUnmap");
	DRV_CK(release(h1));
	did_free("cuMemRelease");
	/* left: the reservation, h2 and its mapping */
	did_leak(16 * gran);
	did_leak(gran);
	did_leak(gran);
}

/* A driver allocation with no runtime call around it (as a static cudart or a library calling
 * the driver makes), then runtime calls ("driverfirst"): the tracer's runtime names must come
 * out as with CUPTI's runtime callbacks, before and after it turns them back on. */
static void
driverfirst(void)
{
	void *p, *q;

	CK(cudaFree(NULL));
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib) {
		fprintf(stderr, "victim: libcuda.so.1 is not loaded: %s\n", dlerror());
		exit(2);
	}
	__typeof__(&cuMemAlloc_v2) alloc = driver_fn(lib, "cuMemAlloc_v2");
	__typeof__(&cuMemFree_v2) release = driver_fn(lib, "cuMemFree_v2");
	CUdeviceptr d;
	for (int i = 0; i < 3; i++) {
		CK(cudaMallocAsync(&q, 4096, 0)); /* before: the wrappers name it */
		did_alloc("cudaMallocAsync");
		CK(cudaFreeAsync(q, 0));
		did_free("cudaFreeAsync");
	}
	DRV_CK(alloc(&d, 1 << 16));
	did_alloc("cuMemAlloc_v2");
	for (int i = 0; i < 20; i++) {
		CK(cudaMalloc(&p, 4096 + (size_t)i));
		did_alloc("cudaMalloc");
		CK(cudaMallocAsync(&q, 8192, 0));
		did_alloc("cudaMallocAsync");
		CK(cudaFreeAsync(q, 0));
		did_free("cudaFreeAsync");
		CK(cudaFree(p));
		did_free("cudaFree");
	}
	DRV_CK(release(d));
	did_free("cuMemFree_v2");
	CK(cudaStreamSynchronize(0));
	dlclose(lib);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";

	if (strcmp(mode, "basic") == 0) {
		basic();
	} else if (strcmp(mode, "threads") == 0) {
		threads();
	} else if (strcmp(mode, "devices") == 0) {
		devices();
	} else if (strcmp(mode, "fork") == 0) {
		do_fork();
	} else if (strcmp(mode, "_exit") == 0) {
		plain();
		print_did();
		_exit(0); /* at once: the tracer's _exit writes what is left, then the trailer */
	} else if (strcmp(mode, "hang") == 0) {
		plain();
		print_did();
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	} else if (strcmp(mode, "oom") == 0) {
		oom();
	} else if (strcmp(mode, "bigoom") == 0) {
		bigoom();
	} else if (strcmp(mode, "reset") == 0) {
		reset();
	} else if (strcmp(mode, "burst") == 0) {
		burst();
	} else if (strcmp(mode, "plain") == 0) {
		plain();
	} else if (strcmp(mode, "vmm") == 0) {
		vmm();
	} else if (strcmp(mode, "poolburst") == 0) {
		poolburst();
	} else if (strcmp(mode, "load") == 0) {
		load(argc, argv);
	} else if (strcmp(mode, "asyncpairs") == 0) {
		asyncpairs(argc, argv);
	} else if (strcmp(mode, "driverfirst") == 0) {
		driverfirst();
	} else if (strcmp(mode, "hold") == 0) {
		hold(argc, argv);
	} else if (strcmp(mode, "exec") == 0) {
		exec_self();
	} else if (strcmp(mode, "closefds") == 0) {
		closefds(argc, argv);
	} else if (strcmp(mode, "die") == 0) {
		die(argc, argv);
	} else {
		fprintf(stderr,
			"usage: victim "
			"basic|threads|fork|_exit|hang|oom|bigoom|reset|burst|plain|vmm|poolburst|"
			"load|asyncpairs|driverfirst|hold|closefds|exec|die\n");
		return 2;
	}
	print_did();
	return 0;
}
