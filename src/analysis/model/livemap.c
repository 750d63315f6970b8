/*
 * @brief Open-addressing table of live objects (linear probing, backward-shift deletion).
 */
#include "analysis/model/livemap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

#define INITIAL_SLOTS 64

static size_t
home_of(const struct gmt_livemap *m, uint64_t key)
{
	return (size_t)gmt_mix64(key) & m->mask;
}

int
gmt_livemap_init(struct gmt_livemap *m)
{
	m->slots = calloc(INITIAL_SLOTS, sizeof(*m->slots));
	m->mask = INITIAL_SLOTS - 1;
	m->count = 0;
	return m->slots ? 0 : -ENOMEM;
}

void
gmt_livemap_fini(struct gmt_livemap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->count = 0;
}

struct gmt_live *
gmt_livemap_find(struct gmt_livemap *m, uint64_t key)
{
	if (key == 0)
		return NULL;
	for (size_t i = home_of(m, key);; i = (i + 1) & m->mask) {
		if (m->slots[i].key == key)
			return &m->slots[i];
		if (m->slots[i].key == 0)
			return NULL;
	}
}

static void
place(struct gmt_livemap *m, const struct gmt_live *l)
{
	size_t i;

	for (i = home_of(m, l->key); m->slots[i].key; i = (i + 1) & m->mask)
		;
	m->slots[i] = *l;
	m->count++;
}

static int
rehash(struct gmt_livemap *m, size_t cap)
{
	struct gmt_live *old = m->slots, *slots = calloc(cap, sizeof(*slots));
	size_t oldcap = m->mask + 1;

	if (!slots)
		return -ENOMEM;
	m->slots = slots;
	m->mask = cap - 1;
	m->count = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			place(m, &old[i]);
	free(old);
	return 0;
}

int
gmt_livemap_insert(struct gmt_livemap *m, const struct gmt_live *l)
{
	/* At most 3/4 full, so probe runs stay short. */
	if ((m->count + 1) * 4 > (m->mask + 1) * 3 && rehash(m, (m->mask + 1) * 2) != 0)
		return -ENOMEM;
	place(m, l);
	return 0;
}

void
gmt_livemap_remove(struct gmt_livemap *m, struct gmt_live *slot)
{
	size_t i = (size_t)(slot - m->slots);
	size_t j = i;

	/* Backward shift: move later entries of the probe run into the hole if that is allowed. */
	for (;;) {
		size_t home;

		j = (j + 1) & m->mask;
		if (m->slots[j].key == 0)
			break;
		home = home_of(m, m->slots[j].key);
		/* Entry j may fill hole i only if its home is not in the cyclic range (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->count--;
}

int
gmt_livemap_take(struct gmt_livemap *m,
		 bool (*match)(const struct gmt_live *l, const void *ctx),
		 const void *ctx,
		 struct gmt_live **out,
		 size_t *n)
{
	size_t cap = m->mask + 1, nkeep = 0, ntake = 0;
	struct gmt_live *keep, *taken;

	*out = NULL;
	*n = 0;
	if (m->count == 0)
		return 0;
	keep = calloc(m->count, sizeof(*keep));
	taken = calloc(m->count, sizeof(*taken));
	if (!keep || !taken) {
		free(keep);
		free(taken);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap; i++) {
		const struct gmt_live *l = &m->slots[i];

		if (!l->key)
			continue;
		if (match(l, ctx))
			taken[ntake++] = *l;
		else
			keep[nkeep++] = *l;
	}
	if (ntake) {
		memset(m->slots, 0, cap * sizeof(*m->slots));
		m->count = 0;
		for (size_t i = 0; i < nkeep; i++)
			place(m, &keep[i]);
	}
	free(keep);
	if (!ntake) {
		free(taken);
		return 0;
	}
	*out = taken;
	*n = ntake;
	return 0;
}

int
gmt_livemap_all(const struct gmt_livemap *m, struct gmt_live **out, size_t *n)
{
	struct gmt_live *all;

	*out = NULL;
	*n = 0;
	if (m->count == 0)
		return 0;
	if (!(all = calloc(m->count, sizeof(*all))))
		return -ENOMEM;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->slots[i].key)
			all[(*n)++] = m->slots[i];
	*out = all;
	return 0;
}
