/*
 * @brief One tracer per process: a second copy of libgpumemtrace.so (another path, so another
 * object: `LD_PRELOAD=/other/libgpumemtrace.so gpumemtrace run ...`, or CUDA_INJECTION64_PATH
 * naming another build) finds the first one at its constructor, stays inert and forwards the
 * public API (markers, InitializeInjection) to it (api.c). Without this every event was
 * recorded twice, into two trace files.
 */
#ifndef GMT_CAPTURE_INSTANCE_H
#define GMT_CAPTURE_INSTANCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct gmt_torch_entry;

#define GMT_INSTANCE_MAGIC 0x31736e69746d67ULL /* "gmtins1" */

/*
 * Exported as gmt_tracer_instance (libgpumemtrace.sym): what another copy needs to find this
 * one and forward to it. Fields are only ever appended; `size` says how many there are.
 */
struct gmt_instance {
	uint64_t magic;
	uint32_t size;
	uint32_t reserved;
	/* NULL until this copy's constructor ran; itself when it traces; else where it forwards */
	const struct gmt_instance *_Atomic owner;
	void (*mark)(const char *label);
	void (*range_push)(const char *label);
	void (*range_pop)(void);
	int (*initialize_injection)(void);
	/* appended: the PyTorch layer (capture/torch.c) */
	int (*torch_record)(const struct gmt_torch_entry *entry);
	void (*torch_layer)(const char *version,
			    const char *backend,
			    const char *alloc_conf,
			    const char *status,
			    const char *detail);
	/* appended: the Python code watcher (capture/pystack.c) */
	int (*py_watch)(void);
	/* appended: automatic step marks (api.c) */
	void (*step_mark)(const char *label);
	/* appended: Python's cyclic collector running (capture/torch.c) */
	void (*torch_gc)(int collecting);
	/* appended: what keeps the live tensors (capture/torch.c) */
	void (*torch_holders)(const char *json);
};

/**
 * At the constructor, before anything else: the copy of the tracer that is (or will be, being
 * first in the global scope) the one tracing this process, when that is another copy than
 * @p self; this copy then stays inert: one warning line (unless @p quiet) names both. NULL: this
 * copy traces. Publishes the answer in self->owner for copies that come later. Runs in the
 * constructor only (the loader's lock is held or the process is single-threaded), so it may
 * walk the list of loaded objects.
 */
const struct gmt_instance *gmt_instance_other(struct gmt_instance *self, bool quiet);

#endif
