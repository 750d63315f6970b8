/*
 * @brief What a call site's samples say: whether its live bytes keep growing, and how long its
 * allocations live.
 */
#include "analysis/model/model.h"

#include "analysis/model/growth.h"

const struct gmt_growth *
gmt_site_growth(const struct gmt_model *m, const struct gmt_site_stats *s)
{
	return m->marker_samples >= 2 ? &s->at_markers : &s->at_snapshots;
}

/* Markers are placed by the user (or are the ends of their ranges): two will do, and a site
 * made between them is what they ask about. Automatic samples go by growth.h's rule. */
bool
gmt_site_grows(const struct gmt_model *m, const struct gmt_site_stats *s)
{
	bool markers = m->marker_samples >= 2;
	uint32_t samples = markers ? m->marker_samples : m->snapshot_samples;
	const struct gmt_growth *g = gmt_site_growth(m, s);

	if (samples < (markers ? 2 : GMT_GROWTH_SNAPSHOTS_LEAST) || g->last <= g->first ||
	    2u * g->rises < samples - 1)
		return false;
	if (!markers || m->growth_basis == GMT_BASIS_AUTO_STEPS)
		return gmt_growth_auto_grows(samples, g->born, g->rises_live, g->falls,
					     markers ? GMT_GROWTH_AUTO_STEPS_LEAST
						     : GMT_GROWTH_SNAPSHOTS_LEAST);
	return true;
}

uint64_t
gmt_site_median_lifetime(const struct gmt_site_stats *s)
{
	uint64_t total = 0, seen = 0;

	for (int b = 0; b < GMT_LIFETIME_BUCKETS; b++)
		total += s->lifetime[b];
	if (!total)
		return 0;
	for (int b = 0; b < GMT_LIFETIME_BUCKETS; b++) {
		seen += s->lifetime[b];
		if (2 * seen >= total)
			/* the bucket's middle, [2^b, 2^(b+1)): 1.5 x 2^b */
			return b == 0 ? 1 : (3ull << b) / 2;
	}
	return 0;
}
