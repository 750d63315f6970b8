/*
 * @brief Call stacks as reports show them: native frames symbolized, Python frames spliced in,
 * and the frame that names the call site ("the user's code").
 *
 * A trace's stack line holds raw return addresses and Python (code, instruction) pairs. Here each
 * address is found in the module list in force when the stack was written (the latest `modules`
 * line before it), symbolized (symbolize.h: function, file:line, inlined calls), and the Python
 * frames replace the native frames of the interpreter's eval function that ran them, so the
 * stack reads as one chain: Python caller, Python callee, C++ extension, CUDA runtime.
 *
 * The call site of a stack (docs/report-json.md, "Call sites") is the innermost frame of the
 * user's code: the innermost Python frame when the stack has any; otherwise the innermost native
 * frame outside the CUDA runtime, driver and CUPTI, gpumemtrace itself, the C and C++ runtimes
 * and the loader, and PyTorch's CUDA allocator libraries (libc10_cuda, libtorch_cuda). A CUDA
 * runtime linked statically into the user's own module (libcudart_static.a) is told by its
 * functions' names and counts as the CUDA runtime.
 *
 * Stacks are built on first use and kept, one per stack id of a trace, in the memory of what they
 * show: each distinct frame (a return address's function, file and line, or a Python line, with
 * its `hidden` flag) is stored once per trace and a stack is a list of frame ids, so a trace of
 * many distinct stacks over the same code costs four bytes per frame of each stack
 * (docs/performance.md, "Memory per distinct stack").
 */
#ifndef GMT_SYMBOLS_CALLSTACK_H
#define GMT_SYMBOLS_CALLSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader/trace.h"
#include "analysis/symbols/symbolize.h"

enum gmt_cframe_kind {
	GMT_CF_NATIVE = 0,
	GMT_CF_PYTHON,
};

/** What a native frame's module is, for the call-site rule and for display. */
enum gmt_cframe_class {
	GMT_CC_USER = 0,    /**< everything below does not apply (also: module unknown) */
	GMT_CC_CUDA,	    /**< libcudart, libcuda, libcupti, libnvidia-*, static cudart */
	GMT_CC_TRACER,	    /**< libgpumemtrace */
	GMT_CC_SYSTEM,	    /**< libc, libstdc++, libgcc_s, libpthread, libdl, libm, librt, ld.so */
	GMT_CC_ALLOCATOR,   /**< libc10_cuda, libtorch_cuda*: PyTorch's CUDA caching allocator */
	GMT_CC_INTERPRETER, /**< the python executable, libpython */
};

/**
 * One frame of a symbolized stack. Strings are interned in the symbolizer; the frame itself is
 * interned in its trace's stacks: equal frames of two stacks may be the same pointer (compare
 * them with gmt_cframe_same_site() or gmt_cframe_cmp(), not by address).
 */
struct gmt_cframe {
	const char *function; /**< demangled C/C++ name, or a Python qualname; NULL unknown */
	const char *file;     /**< source file; NULL unknown */
	const char *module;   /**< native: the module's path as the trace names it; NULL none */
	uint64_t address;     /**< native: the return address as captured */
	uint64_t offset;      /**< native: address - the module's base */
	uint32_t line;	      /**< 0 unknown */
	uint8_t kind;	      /**< enum gmt_cframe_kind */
	uint8_t cls;	      /**< enum gmt_cframe_class (GMT_CC_USER for Python frames) */
	uint8_t status;	      /**< enum gmt_sym_status; Python: OK, NO_SYMBOL without pycode */
	bool inlined;	      /**< native: inlined into the next frame (same address) */
	bool hidden; /**< left out of text and folded stacks: CUDA/tracer frames at the innermost
			  end (the API name stands for them), interpreter frames between Python
			  frames */
};

struct gmt_callstacks;

struct gmt_cstack {
	uint32_t id;
	uint32_t nframes;
	const uint32_t *frame_ids; /**< innermost first; gmt_cstack_frame() gives the frames */
	const struct gmt_callstacks *owner;
	int32_t site;	       /**< index of the call-site frame; -1 when there is no frame */
	uint32_t npython;      /**< Python frames among them */
	uint8_t pystate;       /**< enum gmt_trace_pystate of the stack line */
	bool python_outermost; /**< no eval-function frame was found (no symbols for the
				    interpreter): the Python frames were put at the outermost end */
	uint64_t hash;	       /**< of the frames as shown: equal stacks have equal hashes */
	uint8_t memo;	       /**< gmt_cstack_memo() */
};

struct gmt_callstacks;

/** The stacks of @p trace, symbolized with @p sym; both must outlive the result. NULL out of
 * memory. */
struct gmt_callstacks *gmt_callstacks_new(const struct gmt_trace *trace,
					  struct gmt_symbolizer *sym);

/**
 * 0, or -ENOMEM once a stack could not be built or symbolized for lack of memory (it was given
 * as unknown: what was made of these stacks since is not to be trusted).
 */
int gmt_callstacks_error(const struct gmt_callstacks *cs);

void gmt_callstacks_free(struct gmt_callstacks *cs);

/** The stack with @p id, built on first use; NULL for 0 or an id the trace never defined. */
const struct gmt_cstack *gmt_callstacks_get(struct gmt_callstacks *cs, uint32_t id);

/** Frame @p i (0 the innermost, below nframes) of @p st; valid as long as the stacks. */
const struct gmt_cframe *gmt_cstack_frame(const struct gmt_cstack *st, uint32_t i);

/**
 * A byte of @p st where its users keep what they make of its frames, 0 until one does (the
 * report's holder rules, report/explain.c): a stack is looked at again for each OOM, leak and
 * site that has it, and its frames do not change. Like the stacks, for one thread at a time.
 */
uint8_t *gmt_cstack_memo(const struct gmt_cstack *st);

/** The call-site frame of @p st, NULL when it has none (or @p st is NULL). */
const struct gmt_cframe *gmt_cstack_site(const struct gmt_cstack *st);

/**
 * Whether @p file is a Python file of an installed package (site-packages, dist-packages) or of
 * the standard library (.../lib/python3.X/, <frozen ...>), not of the program: the rule for
 * which Python frame is the user's own.
 */
bool gmt_python_library_file(const char *file);

/** Whether two stacks show the same frames (grouping by whole stack). */
bool gmt_cstack_equal(const struct gmt_cstack *a, const struct gmt_cstack *b);

/** Whether two frames are the same call site (same function, file and line, or address). */
bool gmt_cframe_same_site(const struct gmt_cframe *a, const struct gmt_cframe *b);

/** Orders call sites for stable output: by file, line, function, module, offset. */
int gmt_cframe_cmp(const struct gmt_cframe *a, const struct gmt_cframe *b);

/** The label of a stack whose thread had Python but no Python frames (pystate "empty"). */
#define GMT_PYSTATE_EMPTY_LABEL "(PyTorch autograd / worker thread: no Python frames)"

#endif
