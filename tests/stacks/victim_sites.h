/*
 * @brief What the call-stack victims report about themselves: each allocating call's function,
 * file and line, recorded on the same source line as the call (so it is the line that DWARF
 * gives the call's return address), and the lines of the calls leading to it.
 */
#ifndef GMT_TESTS_VICTIM_SITES_H
#define GMT_TESTS_VICTIM_SITES_H

#include <stddef.h>

struct victim_site {
	const char *function;
	const char *file;
	int line;
	int ok; /* the allocation succeeded */
};

static inline void
victim_site_set(struct victim_site *s, const char *function, const char *file, int line, int ok)
{
	s->function = function;
	s->file = file;
	s->line = line;
	s->ok = ok;
}

/* libvictim.so: each function allocates from its own line (marked SITE:<name> there). */
void *lib_alloc_weights(size_t n, struct victim_site *s);
void *lib_alloc_grads(size_t n, struct victim_site *s);
void *lib_alloc_inlined(size_t n, struct victim_site *s, struct victim_site *caller);
void *lib_alloc_huge(size_t n, struct victim_site *s);

/* libvictim_other.so */
void *other_alloc(size_t n, struct victim_site *s);

#endif
