/*
 * @brief What the fuzz targets share (tests/fuzz/README.md): libFuzzer's entry point, the input
 * as a file the readers can open without touching the disk, and a sink for their messages.
 *
 * Each target (fuzz_<name>.c) defines LLVMFuzzerTestOneInput() for one kind of input and frees
 * everything it made before it returns: one process runs millions of inputs, and ASan's leak
 * check runs at its end. Built two ways (tests/fuzz/meson.build):
 *  - -Dfuzz=true (scripts/fuzz: clang, -fsanitize=fuzzer): libFuzzer's main() drives it;
 *  - otherwise (gcc or clang): driver.c's main() replays the files and directories on its
 *    command line, so every build, and the ASan+UBSan stage of scripts/test, replays the corpus.
 */
#ifndef GMT_TESTS_FUZZ_H
#define GMT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** /dev/null as a stream, for the messages the readers write about bad input. */
FILE *fuzz_devnull(void);

/**
 * A path that opens @p size bytes of @p data (and these bytes only): "/proc/self/fd/N" of one
 * memfd per process, rewritten for each input. The readers that only take a path read it as a
 * regular file, with no file on disk and nothing to clean up. Aborts when the memfd fails.
 * @p parts of them, one after the other, make the file: fuzz_memfile(2, (const void *[]){a, b},
 * (size_t[]){na, nb}).
 */
const char *fuzz_memfile(size_t parts, const void *const *data, const size_t *size);

/** The same, for one part. */
const char *fuzz_memfd_path(const uint8_t *data, size_t size);

#endif
