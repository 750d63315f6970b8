/*
 * @brief The PyTorch layer's work (torch.c): what the exported gmt_torch_record() and
 * gmt_torch_layer() (api.c) do in the copy of the tracer that traces the process.
 */
#ifndef GMT_CAPTURE_TORCH_H
#define GMT_CAPTURE_TORCH_H

struct gmt_torch_entry;

/** A block event of c10's caching allocator, into the ring (inside torch's allocator). */
int gmt_api_torch_record(const struct gmt_torch_entry *entry);

/** The layer's status, from Python (may allocate: its strings go to the writer). */
void gmt_api_torch_layer(const char *version,
			 const char *backend,
			 const char *alloc_conf,
			 const char *status,
			 const char *detail);

/** From Python's gc.callbacks, with the GIL: the cyclic collector starts (1) or stops (0) on
 * this thread; blocks freed meanwhile are flagged GMT_EV_IN_GC. */
void gmt_api_torch_gc(int collecting);

/** From Python at the end of the run (no CUDA call, may allocate): what keeps the live tensors,
 * a JSON array written as a "holders" line (dropped when it is not one JSON array). */
void gmt_api_torch_holders(const char *json);

#endif
