/*
 * @brief Extractor families: how a hooked call's parameters become the facts of its event. One
 * family serves every call whose parameters say the same things (hooks.def names the family of
 * each callback id and symbol and binds its arguments); CUPTI callbacks and the interposed
 * wrappers share the families here, cupti.c adds those that need driver queries.
 *
 * A family fills what the parameters say into @p ev (which holds op, kind, api and result) and
 * answers whether they make an event. It runs inside the application's call: no allocation, no
 * lock, no I/O. Frees run it before the real call too, to learn whether anything is freed.
 */
#ifndef GMT_CAPTURE_PARAMS_H
#define GMT_CAPTURE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/event.h"

/** What a call's parameters make. */
enum gmt_params {
	GMT_PARAMS_NAME = 0, /**< nothing of their own: the call names an event made elsewhere */
	GMT_PARAMS_EVENT,    /**< an event, filled */
	GMT_PARAMS_NOTHING, /**< nothing done (a free of NULL, a failed retain): no event, no seq */
};

/* Argument bindings of hooks.def. OUT(x): what the call wrote to *x, 0 unless it succeeded (the
 * caller's `ok`) and x is not NULL: a failed call may have been given NULL. PTR(x): a pointer
 * argument as a number. */
#define OUT(x) ((ok) && (x) ? (uint64_t)(uintptr_t) * (x) : 0)
#define PTR(x) ((uint64_t)(uintptr_t)(x))

/* The ops a family may serve (checked for every row at build time). */
#define GMT_OPS(op) (1u << GMT_OP_##op)

/* An address and its bytes (0: unknown or none); frees of a handle or range too. */
enum { GMT_FAMILY_OPS_addr = GMT_OPS(ALLOC) | GMT_OPS(FREE) };
static inline enum gmt_params
family_addr(struct gmt_event *ev, bool ok, uint64_t ptr, uint64_t size)
{
	(void)ok;
	ev->ptr = ptr;
	ev->size = size;
	return GMT_PARAMS_EVENT;
}

/* ... and the call's flags argument. */
enum { GMT_FAMILY_OPS_addr_flags = GMT_OPS(ALLOC) };
static inline enum gmt_params
family_addr_flags(struct gmt_event *ev, bool ok, uint64_t ptr, uint64_t size, unsigned flags)
{
	family_addr(ev, ok, ptr, size);
	ev->cuda_flags = flags;
	ev->flags |= GMT_EV_HAS_FLAGS;
	return GMT_PARAMS_EVENT;
}

/* A stream-ordered allocation. */
enum { GMT_FAMILY_OPS_stream = GMT_OPS(ALLOC) };
static inline enum gmt_params
family_stream(struct gmt_event *ev, bool ok, uint64_t ptr, uint64_t size, const void *stream)
{
	family_addr(ev, ok, ptr, size);
	ev->stream = (uint64_t)(uintptr_t)stream;
	return GMT_PARAMS_EVENT;
}

/* A stream-ordered allocation from a given pool. */
enum { GMT_FAMILY_OPS_pool_stream = GMT_OPS(ALLOC) };
static inline enum gmt_params
family_pool_stream(struct gmt_event *ev,
		   bool ok,
		   uint64_t ptr,
		   uint64_t size,
		   const void *pool,
		   const void *stream)
{
	family_stream(ev, ok, ptr, size, stream);
	ev->pool = (uint64_t)(uintptr_t)pool;
	ev->flags |= GMT_EV_HAS_POOL;
	return GMT_PARAMS_EVENT;
}

/* A pitched allocation: granted pitch * height when it succeeded, else what was asked. */
enum { GMT_FAMILY_OPS_pitch = GMT_OPS(ALLOC) };
static inline enum gmt_params
family_pitch(
    struct gmt_event *ev, bool ok, uint64_t ptr, const size_t *pitch, size_t width, size_t height)
{
	ev->ptr = ptr;
	ev->requested = (uint64_t)width * height;
	ev->size = ok && pitch ? (uint64_t)*pitch * height : ev->requested;
	return GMT_PARAMS_EVENT;
}

/* A free of a pointer; of NULL it frees nothing (cudaFree(0) creates a context). */
enum { GMT_FAMILY_OPS_free = GMT_OPS(FREE) };
static inline enum gmt_params
family_free(struct gmt_event *ev, bool ok, uint64_t ptr)
{
	(void)ok;
	ev->ptr = ptr;
	return ptr ? GMT_PARAMS_EVENT : GMT_PARAMS_NOTHING;
}

/* A stream-ordered free. */
enum { GMT_FAMILY_OPS_free_stream = GMT_OPS(FREE) };
static inline enum gmt_params
family_free_stream(struct gmt_event *ev, bool ok, uint64_t ptr, const void *stream)
{
	ev->stream = (uint64_t)(uintptr_t)stream;
	return family_free(ev, ok, ptr);
}

/* A reset: recorded from the context's destruction (cupti.c) or by the wrapper itself. */
enum { GMT_FAMILY_OPS_reset = GMT_OPS(RESET) };
static inline enum gmt_params
family_reset(struct gmt_event *ev, bool ok)
{
	(void)ev;
	(void)ok;
	return GMT_PARAMS_NAME;
}

/* Parameters that say nothing the event needs: the call only names an event made elsewhere
 * (by the driver call under it, a resource callback, a reading). */
enum { GMT_FAMILY_OPS_name = GMT_OPS(ALLOC) | GMT_OPS(FREE) | GMT_OPS(RESET) | GMT_OPS(USAGE) };
static inline enum gmt_params
family_name(struct gmt_event *ev, bool ok)
{
	(void)ev;
	(void)ok;
	return GMT_PARAMS_NAME;
}

/* A family's call with a row's arguments: family_<family>(ev, ok, args...). */
#define GMT_UNPACK(...) __VA_ARGS__
#define GMT_FAMILY_ARGS(...) , ##__VA_ARGS__
#define GMT_FAMILY_CALL(family, ev, ok, args) family_##family(ev, ok GMT_FAMILY_ARGS args)

/* Build-time check of a row: its family serves its API's op. */
#define GMT_FAMILY_FITS(id, api, family)                                                           \
	_Static_assert(GMT_FAMILY_OPS_##family & (1u << GMT_OP_OF_##api),                          \
		       #id ": family " #family " does not serve the op of " #api);

/* The op of each API, as a constant (apis.def). */
enum gmt_op_of {
	GMT_OP_OF_NONE = GMT_OP_NONE,
#define GMT_API(id, name, op, kind) GMT_OP_OF_##id = GMT_OP_##op,
#include "format/apis.def"
#undef GMT_API
};

#endif
