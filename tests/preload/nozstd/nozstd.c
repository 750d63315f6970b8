/*
 * @brief A "libzstd.so.1" that is not zstd (no ZSTD_* entry points), for the preload suite's
 * compress-nolib scenario: found first through LD_LIBRARY_PATH, it makes the tracer's
 * GPUMEMTRACE_COMPRESS=zstd fall back to plain JSON Lines with one warning.
 */
int gmt_not_zstd(void);

int
gmt_not_zstd(void)
{
	return 0;
}
