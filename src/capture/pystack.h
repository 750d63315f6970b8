/*
 * @brief The Python half of call stacks: a GIL-free walk of the calling thread's CPython frames,
 * and the registry of the code objects those frames name (design/capture.md §5, spec issue 4).
 *
 * Nothing here links libpython. The interpreter is found with dlsym() the first time a walk is
 * asked for; its minor version picks a struct layout (3.10, 3.11, 3.12 from the CPython headers of
 * those versions, 3.13 from the _Py_DebugOffsets table at the start of _PyRuntime). Any other
 * version, a free-threaded build or a layout that fails its self-check is refused with one
 * warning; a process without Python is "unavailable" without a word.
 *
 * Hook side (any application thread, inside its CUDA call): gmt_py_walk(). No malloc, no lock, no
 * system call, no reference count touched, no GIL: the thread is blocked in our hook, so its own
 * frame chain cannot change under us. The first sight of a code object copies its facts (file,
 * name, qualname, first line, line table) into an append-only arena mapped once at detection;
 * later sights cost one hash-table probe.
 *
 * Writer side (one consumer thread): gmt_py_next_code() hands out the registered code objects in
 * id order, gmt_py_code() looks one up by id, both as a struct gmt_pycode_view (format/stack.h)
 * whose pointers stay valid for the life of the process. Kept from each code object: co_filename
 * (UTF-8, cut at 1023 bytes), co_name (255), co_qualname on 3.11+ / co_name on 3.10 (511),
 * co_firstlineno, co_linetable (cut at an entry boundary past 64 KiB); "version" names the line
 * table's format ("3.10" .. "3.13"). Cuts fall on UTF-8 character boundaries; a string the
 * walker cannot read (not a compact str) reads "?"; lone surrogates become U+FFFD.
 *
 * fork(): the child inherits the registry (copy-on-write). A pthread_atfork child handler, set at
 * detection, retires registrations that other (now vanished) threads had in flight and rewinds
 * the gmt_py_next_code() cursor, so the child's new trace file gets every record again.
 */
#ifndef GMT_CAPTURE_PYSTACK_H
#define GMT_CAPTURE_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/stack.h" /* struct gmt_pycode_view: what a pycode line says */

/** gmt_py_walk(): the calling thread has no Python thread state ("pystate":"none"). */
#define GMT_PY_NO_THREAD (-1)
/** gmt_py_walk(): Python stacks are unavailable (no Python, refused version, detection busy). */
#define GMT_PY_UNAVAILABLE (-2)

/** One Python frame, as captured inside a hook. */
struct gmt_pyframe {
	uint32_t code_id;      /* pycode id; 0 = unknown (registry full, unreadable object) */
	uint32_t instr_offset; /* bytes from the start of co_code of the executing instruction */
	uint8_t entry; /* 1: entered from C (the eval loop's entry frame); always 1 on 3.10 */
};

/**
 * Walk the calling thread's Python frames, innermost first, into @p out (at most @p max).
 * Returns the number of frames written (0: a thread state without frames, "pystate":"empty"),
 * GMT_PY_NO_THREAD or GMT_PY_UNAVAILABLE. The first call in the process runs detection (dlsym);
 * a torn or implausible frame ends the walk early with the frames read so far.
 */
int gmt_py_walk(struct gmt_pyframe *out, int max);

/**
 * Run detection now if it has not run (also done lazily by gmt_py_walk()). Returns true when
 * Python stacks are available. Safe from any thread; never waits for another thread's detection.
 */
bool gmt_py_detect(void);

/**
 * The code range [lo, hi) of the interpreter's eval function (_PyEval_EvalFrameDefault) once
 * Python stacks are available and the function's size is known from the dynamic symbol table;
 * false otherwise. Hook side: no dlsym, read from what detection found.
 */
bool gmt_py_eval_range(uintptr_t *lo, uintptr_t *hi);

/**
 * Call with the GIL held, from Python (python/gpumemtrace/_site/sitecustomize.py, through the
 * exported gmt_py_watch): on 3.12+, subscribe a code watcher (PyCode_AddWatcher) so that walks
 * look a code object up by its address, told of every code object's death, instead of hashing
 * its contents at every sight. Once per process; 0 when the watcher is on, -1 otherwise (an
 * older Python, no watcher id free: the walk hashes contents, as before).
 */
int gmt_py_watch_code(void);

/** The detected minor version ("3.12"), or NULL when Python stacks are unavailable. */
const char *gmt_py_version(void);

/**
 * Forget a negative detection so the next walk looks again: call when the set of loaded objects
 * has changed (libpython may be dlopen()ed after the first CUDA call). No effect otherwise.
 */
void gmt_py_rescan(void);

/**
 * Writer side: the next code object not handed out yet, in id order. Returns false when there is
 * none yet (including: the next id is still being registered by another thread; ask again later).
 * One consumer thread only.
 */
bool gmt_py_next_code(struct gmt_pycode_view *out);

/** Look a registered code object up by id (false: unknown or not published yet). Any thread. */
bool gmt_py_code(uint32_t id, struct gmt_pycode_view *out);

/** Start gmt_py_next_code() from id 1 again (a new trace file needs every record again). */
void gmt_py_rewind(void);

#endif
