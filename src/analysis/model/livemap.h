/*
 * @brief The replay's tables of live objects, keyed by one 64-bit value: an address, or a handle.
 *
 * An open-addressing hash table with linear probing and backward-shift deletion, so there are no
 * tombstones and a long trace of alloc/free pairs never degrades it. Key 0 marks an empty slot:
 * no successful allocation returns address 0 or handle 0, and the model never inserts one.
 *
 * The model keeps one table per address space (docs/design.md, "Analysis semantics"): device
 * pointers and handles are different namespaces and the same number may be valid in both.
 */
#ifndef GMT_MODEL_LIVEMAP_H
#define GMT_MODEL_LIVEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One live object of the replay: an allocation, a mapping, a reservation or a handle. */
struct gmt_live {
	uint64_t key;  /**< address, or handle value in handle tables */
	uint64_t size; /**< bytes */
	uint64_t
	    handle; /**< mappings: the physical handle; imported buffers: the external memory */
	uint64_t context; /**< CUPTI contextUid of the allocating call, 0 unknown */
	uint64_t seq;	  /**< the allocating event's seq and time */
	uint64_t ts;
	uint32_t site; /**< index into the model's sites (gmt_site_stats) */
	uint32_t stack;
	uint32_t refs; /**< handles: create/import/retain minus release */
	uint32_t maps; /**< handles: live mappings of the handle */
	int32_t device;
	uint16_t api;
	uint16_t driver;
	uint8_t kind; /**< enum gmt_tkind */
};

struct gmt_livemap {
	struct gmt_live *slots;
	size_t mask; /**< capacity - 1, capacity a power of two */
	size_t count;
};

/** An empty table. Returns 0, or -ENOMEM (then only gmt_livemap_fini() may follow). */
int gmt_livemap_init(struct gmt_livemap *m);

void gmt_livemap_fini(struct gmt_livemap *m);

/** The entry with @p key, NULL when there is none. The pointer is valid until the next change. */
struct gmt_live *gmt_livemap_find(struct gmt_livemap *m, uint64_t key);

/** Precondition: @p l->key is non-zero and not in the table. Returns 0, or -ENOMEM (not added). */
int gmt_livemap_insert(struct gmt_livemap *m, const struct gmt_live *l);

/** Remove the entry @p slot points at (from gmt_livemap_find()). */
void gmt_livemap_remove(struct gmt_livemap *m, struct gmt_live *slot);

/**
 * Remove every entry for which @p match returns true and give them, *@p n of them, in a new
 * array *@p out the caller frees (NULL when none). Rebuilds the table: for rare bulk removals
 * (a reset, an unmapped range that is not a run of whole mappings). Returns 0, or -ENOMEM
 * (nothing removed).
 */
int gmt_livemap_take(struct gmt_livemap *m,
		     bool (*match)(const struct gmt_live *l, const void *ctx),
		     const void *ctx,
		     struct gmt_live **out,
		     size_t *n);

/** Every entry, in a new array *@p out the caller frees (NULL when the table is empty).
 * Returns 0, or -ENOMEM. */
int gmt_livemap_all(const struct gmt_livemap *m, struct gmt_live **out, size_t *n);

#endif
