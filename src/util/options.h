/*
 * @brief The tracer's options (options.def): one struct, parsed once from the environment.
 */
#ifndef GMT_UTIL_OPTIONS_H
#define GMT_UTIL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_OPTION_PREFIX "GPUMEMTRACE_"
#define GMT_OPTION_STR_MAX 1024

struct gmt_options {
#define GMT_OPT_FIELD_BOOL(field) bool field;
#define GMT_OPT_FIELD_UINT(field) uint64_t field;
#define GMT_OPT_FIELD_STR(field) char field[GMT_OPTION_STR_MAX];
#define GMT_OPT_FIELD_PATH(field) char field[GMT_OPTION_STR_MAX];
#define GMT_OPTION(type, field, name, def, min, max, help) GMT_OPT_FIELD_##type(field)
#include "util/options.def"
#undef GMT_OPTION
#undef GMT_OPT_FIELD_BOOL
#undef GMT_OPT_FIELD_UINT
#undef GMT_OPT_FIELD_STR
#undef GMT_OPT_FIELD_PATH
};

/** Environment lookup, injectable for tests (getenv in the library). */
typedef const char *(*gmt_getenv_fn)(const char *name);

/**
 * Fill @p opts from the environment. An invalid value gets one warning naming the variable and
 * the default used. Returns the number of invalid values. No allocation.
 *
 * @p secure: the process runs with privileges its invoker lacks (gmt_options_secure()). Then
 * the PATH options (files and libraries the tracer would open with those privileges) keep
 * their defaults whatever the environment says, as secure_getenv() would have it, and one line
 * names those that were set.
 */
int gmt_options_load(struct gmt_options *opts, gmt_getenv_fn get, bool secure);

/**
 * True in a secure-execution process: setuid, setgid or with file capabilities, where the
 * environment is the (less privileged) invoker's (getauxval(AT_SECURE), what secure_getenv()
 * and the dynamic loader go by).
 */
bool gmt_options_secure(void);

/**
 * Warn once for each GPUMEMTRACE_* name in @p envp (any case of the prefix) that is no option,
 * with the closest option's name when one is near (a typo, a cut or swapped letters, another
 * case). Returns how many were unknown. No allocation.
 */
int gmt_options_check_names(char *const *envp);

/** The option name (without the prefix) closest to the @p len bytes at @p name, NULL if none is
 * near. */
const char *gmt_options_closest(const char *name, size_t len);

/** Write the option table with help text, defaults and current values to @p fd. */
void gmt_options_print_help(int fd, const struct gmt_options *opts);

/** Parse "123", "64K", "2M", "1G" (binary units). Returns false on anything else or overflow. */
bool gmt_parse_uint(const char *s, uint64_t *out);

/** Parse 1/0, yes/no, true/false, on/off (any case). */
bool gmt_parse_bool(const char *s, bool *out);

#endif
