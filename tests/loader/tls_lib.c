/*
 * A library with a thread-local variable whose loading is slow on purpose: an IFUNC resolver that
 * sleeps runs while the loader relocates it, i.e. after the library got its TLS module id and is
 * in the loader's list, and before that id has a place in the loader's TLS slot table.
 * victim_tls.c loads many copies of it. x86-64 only (the sleep is a raw system call: the resolver
 * runs before this library's own PLT can be trusted).
 */
#include <stddef.h>

__thread int tls_lib_counter[16];

int tls_lib_touch(void);
void tls_lib_call(void (*fn)(void));
int tls_lib_slow(void);

int
tls_lib_touch(void)
{
	return ++tls_lib_counter[0];
}

static int
tls_lib_impl(void)
{
	return 42;
}

typedef int (*tls_lib_fn)(void);

static tls_lib_fn
tls_lib_resolve(void)
{
#if defined(__x86_64__)
	struct {
		long sec, nsec;
	} ts = {0, 30 * 1000 * 1000}; /* 30 ms */
	long rc;
	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"(35L /* nanosleep */), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void)rc;
#endif
	return tls_lib_impl;
}

int tls_lib_slow(void) __attribute__((ifunc("tls_lib_resolve")));

/* a load-time reference to the IFUNC, so its resolver runs while the library is relocated */
int (*volatile tls_lib_slow_ptr)(void) = tls_lib_slow;

/* Calls @p fn from this library's code: a frame at an address the unwinder has not seen yet. */
void
tls_lib_call(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}
