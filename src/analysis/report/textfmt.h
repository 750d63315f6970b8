/*
 * @brief The words and names every text writer of the report room uses (the text report and its
 * section files, the tensor section, run's summary, check's and diff's messages): a plural, a
 * process's name, its command line, a call's name. It depends on the reader's trace only, so
 * the writers depend on it and never on each other (report_text.c calls the section files,
 * none of them calls back).
 */
#ifndef GMT_REPORT_TEXTFMT_H
#define GMT_REPORT_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/reader/trace.h"

/** @p one or @p many by @p n. */
const char *gmt_text_plural(uint64_t n, const char *one, const char *many);

/** What the tracer's automatic steps of @p t are, as growth's text names its samples:
 * "automatic steps (forward)" where they are the model's forward() calls (a program with no
 * optimizer, docs/markers.md), else "automatic steps (optimizer)". */
const char *gmt_text_auto_steps(const struct gmt_trace *t);

/** "4242", or "? (FILE)" when the header (and so the pid) was lost. */
void gmt_text_process_name(const struct gmt_trace *t, char *buf, size_t max);

/** The process's command line for a message, shortened to about @p max bytes. */
void gmt_report_command(const struct gmt_trace *trace, char *buf, size_t max);

/**
 * The call as a person reads it: "cudaMalloc", or "cudaMalloc → cuMemAlloc_v2" when the trace
 * knows the driver call underneath (@p driver is GMT_TRACE_NO_STRING otherwise).
 */
void gmt_report_call(
    const struct gmt_trace *trace, uint16_t api, uint16_t driver, char *buf, size_t max);

#endif
