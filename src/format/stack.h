/*
 * @brief Call stacks as the capture side hands them to the writer: the contract for `stack`,
 * `pycode` and `modules` lines (docs/trace-format.md). No behaviour here, only shapes.
 */
#ifndef GMT_FORMAT_STACK_H
#define GMT_FORMAT_STACK_H

#include <stddef.h>
#include <stdint.h>

/** What the thread's Python state was when a stack has no Python frames. */
enum gmt_pystate {
	GMT_PYSTATE_UNKNOWN = 0, /* Python stacks off or unavailable, or frames present */
	GMT_PYSTATE_NONE,	 /* not a Python thread */
	GMT_PYSTATE_EMPTY,	 /* a Python thread state without frames (e.g. autograd threads) */
};

/** One Python frame: code id (pycode line), byte offset of the instruction, entered from C. */
struct gmt_stack_py {
	uint32_t code_id;
	uint32_t offset_entry; /* instruction byte offset << 1 | entry */
};

/** A stack: native return addresses and Python frames, innermost first. */
struct gmt_stack_view {
	uint32_t id;
	uint16_t nframes, npy;
	uint8_t pystate; /* enum gmt_pystate */
	const uint64_t *frames;
	const struct gmt_stack_py *py;
};

/** A Python code object, registered once (pycode line). */
struct gmt_pycode_view {
	uint32_t id;
	const char *file, *name, *qualname;
	int firstlineno;
	const uint8_t *linetable;
	size_t linetable_len;
	const char *version; /* "3.12" */
};

/** A loaded object (modules line). */
struct gmt_module_view {
	const char *path;
	uint64_t base;
	const uint8_t *build_id;
	size_t build_id_len;
	const uint64_t (*segments)[2]; /* [vaddr, memsz] of each PT_LOAD */
	size_t nsegments;
};

#endif
