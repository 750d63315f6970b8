/*
 * @brief The module map: every loaded object with its load address, segments and GNU build-id,
 * so that stack addresses can be symbolized after the process is gone (modules lines).
 *
 * Writer thread only. gmt_modules_changed() is cheap (one dl_iterate_phdr call that stops at the
 * first object and compares glibc's load/unload counters); gmt_modules_write() walks them all,
 * without letting glibc compute any object's TLS block (modules.c says why).
 */
#ifndef GMT_WRITER_MODULES_H
#define GMT_WRITER_MODULES_H

#include <stdbool.h>
#include <stdint.h>

#include "format/jsonl.h"

/** True when objects were loaded or unloaded since the last gmt_modules_write() (or never written).
 */
bool gmt_modules_changed(void);

/** Append a complete modules line to @p out. */
void gmt_modules_write(struct gmt_buf *out, uint64_t seq);

/** In a fork child: the next stack line must be preceded by a fresh modules line. */
void gmt_modules_forget(void);

#endif
