/*
 * @brief The PyTorch blocks a time range leaves live: those allocated inside `report
 * --from/--to` and still allocated at its end, per (call stack, device). The tensor section
 * itself covers the whole trace whatever the range (a tensor's life often spans it); this is
 * the range's leak at the tensor level, as collect_leaks() is at the CUDA level: what was live
 * when the range began is not its leak. The pytest plugin's per-test tensor leaks are this
 * (docs/pytest.md), so a test, the JSON and the text agree on what a test left live, and a
 * library's workspace among it (the category rules: report/categories.h) is told apart the
 * same way everywhere.
 */
#ifndef GMT_MODEL_RANGE_TENSORS_H
#define GMT_MODEL_RANGE_TENSORS_H

#include <stddef.h>
#include <stdint.h>

struct gmt_model;

/** Blocks of one call stack on one device, made in the range and live at its end. */
struct gmt_range_tensor {
	uint32_t stack;
	int32_t device;
	uint64_t bytes;	    /**< the blocks' sizes as the allocator holds them (rounded) */
	uint64_t requested; /**< what the program asked for */
	uint64_t blocks;
};

/**
 * Take the blocks of @p m's tensor layer allocated at or after the range's start (seq) and
 * allocated now, into m->range_tensors (most bytes first). Once per model: at the range's end,
 * or at the end of the trace while the range is still open. 0 or -ENOMEM.
 */
int gmt_range_tensors_take(struct gmt_model *m);

#endif
