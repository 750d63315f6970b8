/*
 * @brief Offline symbolization of native code addresses with elfutils (libdwfl/libdw).
 *
 * A trace names each loaded object by path, load base and GNU build-id (its `modules` lines);
 * the analyzer opens that file where the trace says it was, and uses it only if its build-id is
 * the trace's: a rebuilt library at the same path would otherwise give confident wrong names.
 * When the file is missing or differs, the separate debug file named by the build-id
 * (/usr/lib/debug/.build-id/xx/yyyy.debug) is tried; failing that, frames stay
 * `module+0xoffset`, never dropped.
 *
 * One address gives one or more frames: the function whose code it is, and, when the compiler
 * inlined calls there, each inlined function innermost first (DWARF inlined_subroutine scopes),
 * each with its source file and line. C++ names are demangled.
 *
 * Caching, so a trace of millions of events over thousands of stacks stays fast: a module file
 * is opened once per build-id (or per path, when it has none) for the symbolizer's life, and
 * each (module, offset) is resolved once. Strings (function names, files, module paths) are
 * interned for the symbolizer's life, so equal strings are equal pointers. The names and files
 * it finds in a module's debug information are valid UTF-8 (a byte that is not is shown as
 * U+FFFD), as reports need.
 */
#ifndef GMT_SYMBOLS_SYMBOLIZE_H
#define GMT_SYMBOLS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** Why an address has the names it has. */
enum gmt_sym_status {
	GMT_SYM_OK = 0,	    /**< resolved (a symbol, possibly with source lines) */
	GMT_SYM_NO_SYMBOL,  /**< the file is the right one, but no symbol covers the address */
	GMT_SYM_NO_MODULE,  /**< no module of the trace contains the address */
	GMT_SYM_NO_FILE,    /**< the module's file cannot be opened or is not ELF */
	GMT_SYM_MISMATCH,   /**< the file at that path has another build-id (rebuilt, replaced) */
	GMT_SYM_NO_FILE_ID, /**< an object without a file ("[vdso]", anonymous code) */
};

/** One resolved frame: a function, or a function inlined into the next frame. */
struct gmt_sym_frame {
	const char *function; /**< demangled; NULL unknown */
	const char *file;     /**< source file, absolute when the debug info allows; NULL unknown */
	uint32_t line;	      /**< 0 unknown */
	bool inlined;	      /**< inlined into the next (outer) frame of the same address */
};

struct gmt_symbolizer;

/**
 * A new symbolizer. Notes about modules that cannot be used (missing, other build-id) go to
 * @p diag, once per module and at most a few dozen in all. NULL out of memory.
 */
struct gmt_symbolizer *gmt_symbolizer_new(FILE *diag);

void gmt_symbolizer_free(struct gmt_symbolizer *s);

/**
 * 0, or -ENOMEM once an answer was lost for lack of memory (a name given as unknown, an address
 * as unresolved): what was built from the symbolizer since is not to be trusted.
 */
int gmt_symbolizer_error(const struct gmt_symbolizer *s);

/** A module handle that names no module (gmt_symbolize() says GMT_SYM_NO_MODULE). */
#define GMT_SYM_NONE (UINT32_MAX - 1)

/**
 * @p str, interned: the same pointer for equal strings, valid for the symbolizer's life. NULL
 * for NULL, or out of memory (gmt_symbolizer_error()).
 */
const char *gmt_sym_intern(struct gmt_symbolizer *s, const char *str);

/**
 * The symbolizer's handle for the module at @p path with build-id @p build_id (lowercase hex, ""
 * when it has none). @p file is the path's bytes when they are not the UTF-8 text @p path shows
 * (a directory named in another encoding: the trace's "path_hex"), NULL when @p path is the
 * file's name; messages name @p path. Cheap: the file is opened on the first gmt_symbolize()
 * that needs it.
 */
uint32_t
gmt_sym_module(struct gmt_symbolizer *s, const char *path, const char *file, const char *build_id);

/**
 * Resolve the code at @p offset (an ELF virtual address: the runtime address minus the
 * module's base; for a return address, minus 1 more so it points into the call) of @p module.
 * Sets *@p frames to the frames, innermost first (*@p nframes of them, 0 when unresolved) and
 * returns the status. The frames stay valid until the next call.
 */
enum gmt_sym_status gmt_symbolize(struct gmt_symbolizer *s,
				  uint32_t module,
				  uint64_t offset,
				  const struct gmt_sym_frame **frames,
				  uint32_t *nframes);

/**
 * An absolute @p path with "." and ".." components folded, lexically, into @p out (@p max
 * bytes): "/b/build/../src/x.c" is "/b/src/x.c".
 */
void gmt_sym_fold_path(const char *path, char *out, size_t max);

/** One short phrase for a status ("build-id differs", ...), for reports. */
const char *gmt_sym_status_str(enum gmt_sym_status st);

/**
 * The symbol index's check (tests/unit/analysis/test_symindex.c): in the ELF file @p path, the
 * name the index gives each of a set of addresses (the first and last byte of its symbols and
 * the bytes around them, an even sample when they are more than @p spread symbols, and
 * @p spread more addresses across its code) against libdwfl's dwfl_module_addrinfo(). Returns the
 * number of addresses where they differ (the first few written to @p out), or -1 when the file
 * cannot be read; *@p checked gets how many were asked.
 */
long gmt_sym_verify_index(const char *path, size_t spread, FILE *out, size_t *checked);

#endif
