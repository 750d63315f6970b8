/*
 * @brief struct gmt_trace: its memory (frame lists in blocks handed out in order) and its accessors
 * (trace.h); every reader of a trace fills it (read.c, snapshot.c).
 */
#define _GNU_SOURCE
#include "analysis/reader/trace.h"
#include "analysis/reader/flatjson.h"
#include "analysis/reader/reorder.h"
#include "analysis/reader/trace_input.h"
#include "format/elided.h"
#include "format/torch_entry.h"
#include "util/alloc.h"
#include "util/esc.h"
#include "util/hash.h"
#include "util/hex.h"

#include "analysis/reader/reader_int.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stacks' frame lists: blocks handed out in order, freed with the trace. */
struct gmt_trace_block {
	struct gmt_trace_block *next;
	size_t used, cap;
	_Alignas(8) unsigned char data[];
};

#define STACK_BLOCK (64u * 1024)

void *
gmt_trace_mem(struct gmt_trace *t, size_t size)
{
	struct gmt_trace_block *b = t->stack_mem, *nb;
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (!b || b->cap - b->used < size) {
		/*
		 * Blocks double from 1 KiB to STACK_BLOCK (a trace of a few stacks, one of many in
		 * a directory, takes little); a list of more than a quarter block gets its own.
		 */
		size_t grow = b && b->cap >= STACK_BLOCK / 2 ? STACK_BLOCK : b ? b->cap * 2 : 1024;
		size_t cap = size > grow / 4 ? size : grow;

		if (!(nb = malloc(sizeof(*nb) + cap)))
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (b && cap != grow) { /* behind the current block, which stays in use */
			nb->next = b->next;
			b->next = nb;
			nb->used = size;
			return nb->data;
		}
		nb->next = b;
		t->stack_mem = b = nb;
	}
	p = b->data + b->used;
	b->used += size;
	return p;
}

void
rd_holders_free(struct gmt_trace *t)
{
	for (size_t i = 0; i < t->nholders; i++) {
		free(t->holders[i].what);
		free(t->holders[i].ptrs);
		free(t->holders[i].devices);
	}
	free(t->holders);
	t->holders = NULL;
	t->nholders = 0;
}

static int
cmp_stack(const void *pa, const void *pb)
{
	const struct gmt_trace_stack *a = pa, *b = pb;

	return a->id < b->id ? -1 : a->id > b->id;
}

void
rd_pycode_free(struct gmt_trace_pycode *c)
{
	free(c->file);
	free(c->name);
	free(c->qualname);
	free(c->python);
	free(c->linetable);
}

void
gmt_trace_free(struct gmt_trace *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->host);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->tracer);
	free(t->coverage);
	free(t->coverage_reason);
	free(t->elided_bins);
	free(t->torch_version);
	free(t->torch_backend);
	free(t->torch_alloc_conf);
	free(t->torch_layer);
	free(t->torch_detail);
	rd_holders_free(t);
	for (size_t i = 0; i < t->ncapture; i++)
		free(t->capture[i]);
	free(t->capture);
	free(t->nvml);
	free(t->events);
	for (size_t i = 0; i < t->nmarkers; i++)
		free(t->markers[i].label);
	free(t->markers);
	for (struct gmt_trace_block *b = t->stack_mem, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(t->stacks);
	free(t->addresses);
	free(t->python);
	for (size_t i = 0; i < t->nmodules; i++) {
		free(t->modules[i].path);
		free(t->modules[i].file);
		free(t->modules[i].build_id);
		free(t->modules[i].segments);
	}
	free(t->modules);
	for (size_t i = 0; i < t->nmodsets; i++)
		free(t->modsets[i].mods);
	free(t->modsets);
	for (size_t i = 0; i < t->npycodes; i++)
		rd_pycode_free(&t->pycodes[i]);
	free(t->pycodes);
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t);
}

const char *
gmt_trace_string(const struct gmt_trace *t, uint16_t idx)
{
	return idx < t->nstrings ? t->strings[idx] : "?";
}

const char *
gmt_trace_driver(const struct gmt_trace *t, uint16_t idx)
{
	return idx < t->nstrings ? t->strings[idx] : NULL;
}

const struct gmt_trace_stack *
gmt_trace_stack(const struct gmt_trace *t, uint32_t id)
{
	struct gmt_trace_stack key = {.id = id};

	if (id == 0 || t->nstacks == 0)
		return NULL;
	/* the tracer numbers its stacks 1, 2, 3...: the id is its place, mostly (the report asks
	 * for every site's, leak's and OOM site's stack, again and again) */
	if (id <= t->nstacks && t->stacks[id - 1].id == id)
		return &t->stacks[id - 1];
	return bsearch(&key, t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack);
}

const struct gmt_trace_pycode *
gmt_trace_pycode(const struct gmt_trace *t, uint32_t id)
{
	struct gmt_trace_pycode key = {.id = id};

	if (t->npycodes == 0)
		return NULL;
	/* After reading, ids are unique, so the line number never decides the comparison. */
	for (size_t lo = 0, hi = t->npycodes; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->pycodes[mid].id == key.id)
			return &t->pycodes[mid];
		if (t->pycodes[mid].id < key.id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

double
gmt_trace_time_s(const struct gmt_trace *t, uint64_t ts)
{
	if (ts >= t->start_ts)
		return (double)(ts - t->start_ts) / 1e9;
	return -(double)(t->start_ts - ts) / 1e9;
}
