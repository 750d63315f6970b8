/*
 * @brief Hashing shared by the writer's tables and the analyzer's replay (header-only, so the
 * analysis links nothing of the tracer's).
 */
#ifndef GMT_UTIL_HASH_H
#define GMT_UTIL_HASH_H

#include <stdint.h>

/* splitmix64 finalizer. Allocation addresses are aligned, so their low bits carry nothing on
 * their own: every table keyed by an address mixes it first. */
static inline uint64_t
gmt_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif
