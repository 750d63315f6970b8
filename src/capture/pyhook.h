/*
 * @brief PYTHONPATH for the Python side of the tracer (pyhook.c): set by the constructor.
 */
#ifndef GMT_CAPTURE_PYHOOK_H
#define GMT_CAPTURE_PYHOOK_H

struct gmt_options;

/** Prepend python/gpumemtrace/_site (unless GPUMEMTRACE_TORCH=off) and python/ to PYTHONPATH. */
void gmt_pyhook_setup(const struct gmt_options *opts);

#endif
