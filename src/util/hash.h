/*
 * @brief Hashing shared by the writer's tables and the analyzer's replay (header-only, so the
 * analysis links nothing of the tracer's).
 */
#ifndef GMT_UTIL_HASH_H
#define GMT_UTIL_HASH_H

#include <stddef.h>
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

/* FNV-1a over @p n bytes, continuing from @p h (start with GMT_FNV_SEED): names and byte strings
 * spread over open-addressing tables. */
#define GMT_FNV_SEED 0xcbf29ce484222325ull
static inline uint64_t
gmt_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#endif
