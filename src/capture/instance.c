/*
 * @brief One tracer per process (see instance.h).
 *
 * Which copy traces: the first in the global scope when there is one, since its symbols are the
 * ones the program's markers and cudart calls bind to, whatever order the constructors run in;
 * else (copies loaded RTLD_LOCAL: the driver's CUDA_INJECTION64_PATH) the first constructed.
 * Found through the exported gmt_tracer_instance: dlsym(RTLD_DEFAULT) for the global scope, a
 * dlopen(RTLD_NOLOAD) + dlsym per loaded object for the others. A copy from before this
 * handshake is recognised by its gmt_mark and InitializeInjection in the global scope.
 */
#define _GNU_SOURCE
#include "capture/instance.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "capture/dlclose.h"
#include "util/log.h"

/* The entry points of a legacy copy (no gmt_tracer_instance), from the global scope. */
static struct gmt_instance legacy = {.magic = GMT_INSTANCE_MAGIC,
				     .size = sizeof(struct gmt_instance)};

static bool
valid(const struct gmt_instance *g)
{
	return g && g->magic == GMT_INSTANCE_MAGIC && g->size >= sizeof(struct gmt_instance);
}

/* The object @p addr lies in, for the warning ("?" when unknown). */
static const char *
object_of(const void *addr)
{
	Dl_info info;
	return dladdr(addr, &info) && info.dli_fname && info.dli_fname[0] ? info.dli_fname : "?";
}

/* A copy that traces among the objects loaded so far, outside the global scope. */
static const struct gmt_instance *
find_loaded(const struct gmt_instance *self)
{
	struct link_map *lm = NULL;
	void *main_h = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	const char *self_name = object_of(self);
	const struct gmt_instance *found = NULL;

	if (!main_h)
		return NULL;
	if (dlinfo(main_h, RTLD_DI_LINKMAP, &lm) != 0)
		lm = NULL;
	for (; lm && !found; lm = lm->l_next) {
		if (!lm->l_name || !lm->l_name[0] || strcmp(lm->l_name, self_name) == 0)
			continue;
		void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		const struct gmt_instance *g = dlsym(h, "gmt_tracer_instance");
		if (valid(g) && g != self &&
		    atomic_load_explicit(&g->owner, memory_order_acquire) == g)
			found = g;
		gmt_real_dlclose(h);
	}
	gmt_real_dlclose(main_h);
	return found;
}

/* A copy of the tracer from before gmt_tracer_instance, first in the global scope. */
static const struct gmt_instance *
find_legacy(const struct gmt_instance *self)
{
	void *mark = dlsym(RTLD_DEFAULT, "gmt_mark");
	void *init = dlsym(RTLD_DEFAULT, "InitializeInjection");
	Dl_info a, b, me;

	if (!mark || !init || !dladdr(mark, &a) || !dladdr(init, &b) || !dladdr(self, &me) ||
	    a.dli_fbase != b.dli_fbase || a.dli_fbase == me.dli_fbase)
		return NULL; /* not both from one other object: not another tracer */
	legacy.mark = (void (*)(const char *))mark;
	legacy.range_push = (void (*)(const char *))dlsym(RTLD_DEFAULT, "gmt_range_push");
	legacy.range_pop = (void (*)(void))dlsym(RTLD_DEFAULT, "gmt_range_pop");
	legacy.initialize_injection = (int (*)(void))init;
	return &legacy;
}

const struct gmt_instance *
gmt_instance_other(struct gmt_instance *self, bool quiet)
{
	const struct gmt_instance *g = dlsym(RTLD_DEFAULT, "gmt_tracer_instance");
	const void *other_addr;

	if (valid(g) && g != self) {
		other_addr = g; /* first in the global scope, constructed or not yet */
	} else if ((g = find_legacy(self)) != NULL) {
		other_addr = (const void *)g->mark;
	} else if ((g = find_loaded(self)) != NULL) {
		other_addr = g;
	} else {
		atomic_store_explicit(&self->owner, self, memory_order_release);
		return NULL;
	}
	atomic_store_explicit(&self->owner, g, memory_order_release);
	if (!quiet) {
		char other[GMT_LOG_VALUE_MAX], me[GMT_LOG_VALUE_MAX];
		gmt_warn("another copy of the tracer traces this process (%s); this one (%s) stays "
			 "inactive",
			 gmt_log_value(other, object_of(other_addr)),
			 gmt_log_value(me, object_of(self)));
	}
	return g;
}
