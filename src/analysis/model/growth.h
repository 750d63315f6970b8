/*
 * @brief The growth rule on automatic samples, shared by the CUDA level (growth.c) and the
 * tensor level (tensors.c): one verdict for both.
 */
#ifndef GMT_MODEL_GROWTH_H
#define GMT_MODEL_GROWTH_H

#include <stdbool.h>
#include <stdint.h>

/* Samples a site needs from the first at which it held bytes, on automatic samples: the
 * tracer's step marks, and the periodic snapshots (once a second whatever the program does: a
 * short run's two or three say little). */
#define GMT_GROWTH_AUTO_STEPS_LEAST 3
#define GMT_GROWTH_SNAPSHOTS_LEAST 4

/*
 * Besides the rule every basis has (more bytes at the last sample than at the first, a rise in
 * half the intervals), whether a site grows on automatic samples (the tracer's step marks,
 * snapshots), which nobody placed where a leak would show: judged from @p born (1 + the sample
 * at which the site first held bytes; 0: never), so that a site made between two samples is
 * not growth by being made (a CUDA graph's pool made in the third of three forwards rose "in 1
 * of 2 intervals"); its @p rises_live (rises from a sample at which it held bytes) must be half
 * the intervals since, and more than twice its @p falls: a site whose bytes swing with the
 * batch's shape (a list of this step's images) rises and falls, a kept reference mostly rises.
 * The user's marks and ranges are judged by the first rule alone (growth.c): two marks around
 * an epoch ask what it kept.
 */
static inline bool
gmt_growth_auto_grows(
    uint32_t samples, uint32_t born, uint32_t rises_live, uint32_t falls, uint32_t least)
{
	if (!born || samples < born)
		return false;
	uint32_t since = samples - born + 1; /* samples from the first with bytes on */
	return since >= least && 2u * rises_live >= since - 1 && rises_live > 2u * falls;
}

#endif
