/*
 * @brief Frames and paths as the text and folded reports print them.
 */
#ifndef GMT_REPORT_FRAMES_H
#define GMT_REPORT_FRAMES_H

#include <stddef.h>

#include "analysis/symbols/callstack.h"

/**
 * A path as reports print it: after the last "site-packages/" or "dist-packages/"; else, when
 * absolute, with "." and ".." folded and relative to the current directory when under it; else
 * unchanged. Returns @p path, a part of it, or @p buf (@p max bytes).
 */
const char *gmt_display_path(const char *path, char *buf, size_t max);

/**
 * A frame for a person: "train.py:42 in step", "libc10_cuda.so c10::cuda::...::malloc(...)",
 * "libvictim.so+0x1139" (unresolved), "0x7f3a4001f00d" (in no module).
 */
void gmt_cframe_text(const struct gmt_cframe *f, char *buf, size_t max);

/**
 * A frame for folded stacks: "step (train.py:42)", "malloc [libc10_cuda.so]",
 * "libvictim.so+0x1139"; ';' and line breaks, which the format reserves, become ','/' '.
 */
void gmt_cframe_folded(const struct gmt_cframe *f, char *buf, size_t max);

#endif
