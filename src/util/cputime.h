/*
 * @brief Where an analysis's CPU goes, per kind of thread, for benchmarks on hosts without perf:
 * with GMT_THREAD_TIMES=1 in the environment, each of the analyzer's helper threads adds its own
 * CPU time (CLOCK_THREAD_CPUTIME_ID) under its name as it ends, and gmt_cputime_print() writes
 * one line of the sums at exit:
 *
 *   gpumemtrace: thread CPU: calling 0.41 s; gmt-parse 0.95 s (7); gmt-fill 0.10 s (1); ...
 *
 * (bench/run_report_throughput.py --thread-times reads it). Off, a note is one load of a flag.
 * Offline tools only (a mutex, stdio).
 */
#ifndef GMT_UTIL_CPUTIME_H
#define GMT_UTIL_CPUTIME_H

#include <stdbool.h>
#include <stdio.h>

/** Is GMT_THREAD_TIMES set (to anything but "" or "0")? Read once. */
bool gmt_cputime_on(void);

/** The calling thread's CPU time so far, added under @p name (a string that outlives the
 * process's end, e.g. a literal), when on. Call it last thing in a thread. */
void gmt_cputime_note(const char *name);

/** When on: the calling thread noted as "calling", then the line above on @p f. */
void gmt_cputime_print(FILE *f);

#endif
