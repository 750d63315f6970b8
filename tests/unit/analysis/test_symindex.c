/*
 * The symbolizer's symbol index against libdwfl (analysis/symbols/symbolize.c): in real ELF
 * files of this machine (the C library, the C++ library, Python, elfutils, LLVM where installed,
 * and this build's own tracer with its local symbols), the name the index gives each symbol's
 * edges and thousands of other addresses is the name dwfl_module_addrinfo() gives them.
 * A file that is not here is skipped; at least two must be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/symbols/symbolize.h"

int
main(int argc, char **argv)
{
	static const char *const system_files[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	    "/usr/lib/x86_64-linux-gnu/libdw.so.1",
	    "/usr/lib/x86_64-linux-gnu/libelf.so.1",
	    "/usr/bin/python3",
	    "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
	    "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
	};
	size_t files = 0, total = 0;
	long bad = 0;

	for (int pass = 0; pass < 2; pass++) {
		size_t n = pass == 0 ? sizeof(system_files) / sizeof(system_files[0])
				     : (size_t)(argc > 1 ? argc - 1 : 0);
		for (size_t i = 0; i < n; i++) {
			const char *f = pass == 0 ? system_files[i] : argv[i + 1];
			size_t checked = 0;
			if (access(f, R_OK) != 0)
				continue;
			long b = gmt_sym_verify_index(f, 600, stderr, &checked);
			if (b < 0) {
				printf("%s: not readable as ELF, skipped\n", f);
				continue;
			}
			printf("%s: %zu addresses, %ld differ\n", f, checked, b);
			files++;
			total += checked;
			bad += b;
		}
	}
	printf("%zu files, %zu addresses, %ld differ\n", files, total, bad);
	if (files < 2) {
		fprintf(stderr, "test_symindex: fewer than two ELF files to check\n");
		return 1;
	}
	return bad != 0;
}
