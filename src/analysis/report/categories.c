/*
 * @brief Categories of allocations from their stacks (see categories.h).
 */
#include "analysis/report/categories.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum where { W_PY_FILE, W_PY_FUNC, W_NATIVE, W_MODULE, W_THREAD };

struct rule {
	enum gmt_category cat;
	enum where where;
	bool innermost; /* '^': the innermost frame outside torch's own files only */
	char *pattern;
};

struct gmt_cat_rules {
	struct rule *v;
	size_t n, cap;
};

static const char *const cat_names[GMT_CAT_COUNT] = {
    [GMT_CAT_OTHER] = "other",		 [GMT_CAT_PARAMETER] = "parameter",
    [GMT_CAT_GRADIENT] = "gradient",	 [GMT_CAT_OPTIMIZER_STATE] = "optimizer_state",
    [GMT_CAT_ACTIVATION] = "activation", [GMT_CAT_TEMPORARY] = "temporary",
    [GMT_CAT_WORKSPACE] = "workspace",
};

static const char *const where_names[] = {"py-file", "py-func", "native", "module", "thread"};

const char *
gmt_category_name(enum gmt_category c)
{
	return (unsigned)c < GMT_CAT_COUNT ? cat_names[c] : "other";
}

int
gmt_category_from_name(const char *name)
{
	for (int c = 0; c < GMT_CAT_COUNT; c++)
		if (!strcmp(cat_names[c], name))
			return c;
	return -1;
}

/*
 * The built-in rules, for PyTorch (first match wins). Optimizer state is made in torch/optim's
 * step (exp_avg, exp_avg_sq, momentum buffers); gradients of parameters are accumulated by
 * autograd's AccumulateGrad; parameters are made by Module._apply (.cuda(), .to()), nn.init,
 * reset_parameters and Parameter; what autograd's threads allocate otherwise is backward's
 * (gradients of activations on their way, counted as gradients); cuBLAS's and cuDNN's workspaces
 * taken through the cache are the library's;
 * an allocation under a forward() is an activation (the forward pass's temporaries included).
 */
static const char *const builtin[] = {
    "workspace native *getCUDABlasLtWorkspace*",
    "workspace native *getCurrentCUDABlasHandle*",
    "workspace native *cublasWorkspace*",
    "workspace native *CUDABlasWorkspace*",
    "workspace native *cudnn*Workspace*",
    "optimizer_state py-file */torch/optim/*",
    "optimizer_state native *fused_adam*",
    "optimizer_state native *fused_sgd*",
    "gradient native *AccumulateGrad*",
    "gradient native *accumulate_grad*",
    "parameter py-func _apply",
    "parameter py-file */torch/nn/init.py",
    "parameter py-func reset_parameters",
    "parameter py-file */torch/nn/parameter.py",
    "gradient thread autograd",
    "activation py-func forward",
    "activation py-func *_forward",
};

static int
add(struct gmt_cat_rules *r, const char *line, char *err, size_t errlen)
{
	char cat[64], where[32], pat[512];
	if (sscanf(line, " %63s %31s %511s", cat, where, pat) != 3) {
		snprintf(err, errlen, "expected 'CATEGORY WHERE PATTERN'");
		return -EINVAL;
	}
	int c = gmt_category_from_name(cat);
	if (c < 0) {
		snprintf(
		    err, errlen,
		    "unknown category '%.40s' (parameter, gradient, optimizer_state, activation, "
		    "temporary, workspace, other)",
		    cat);
		return -EINVAL;
	}
	int w = -1;
	for (int i = 0; i < (int)(sizeof(where_names) / sizeof(where_names[0])); i++)
		if (!strcmp(where_names[i], where))
			w = i;
	if (w < 0) {
		snprintf(err, errlen,
			 "unknown place '%.30s' (py-file, py-func, native, module, thread)", where);
		return -EINVAL;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct rule *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	bool inner = pat[0] == '^';
	char *p = strdup(pat + inner);
	if (!p)
		return -ENOMEM;
	r->v[r->n++] = (struct rule){(enum gmt_category)c, (enum where)w, inner, p};
	return 0;
}

static int
add_builtin(struct gmt_cat_rules *r)
{
	char err[128];
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (add(r, builtin[i], err, sizeof(err)))
			return -ENOMEM;
	return 0;
}

struct gmt_cat_rules *
gmt_cat_builtin(void)
{
	struct gmt_cat_rules *r = calloc(1, sizeof(*r));
	if (r && add_builtin(r)) {
		gmt_cat_free(r);
		return NULL;
	}
	return r;
}

struct gmt_cat_rules *
gmt_cat_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct gmt_cat_rules *r = calloc(1, sizeof(*r));
	char line[1024], why[256];
	bool builtin_too = true;
	size_t lineno = 0;
	while (r && fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "\r\n")] = '\0';
		if (!*s || *s == '#')
			continue;
		if (!strcmp(s, "no-builtin")) {
			builtin_too = false;
			continue;
		}
		if (add(r, s, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
			gmt_cat_free(r);
			r = NULL;
		}
	}
	fclose(f);
	if (r && builtin_too && add_builtin(r)) {
		gmt_cat_free(r);
		r = NULL;
	}
	return r;
}

void
gmt_cat_free(struct gmt_cat_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].pattern);
	free(r->v);
	free(r);
}

static bool
torch_own(const struct gmt_cat_frame *f)
{
	return f->python && f->file && strstr(f->file, "/torch/");
}

static bool
frame_matches(const struct rule *ru, const struct gmt_cat_frame *f)
{
	const char *field = NULL;
	switch (ru->where) {
	case W_PY_FILE: field = f->python ? f->file : NULL; break;
	case W_PY_FUNC: field = f->python ? f->function : NULL; break;
	case W_NATIVE: field = !f->python ? f->function : NULL; break;
	case W_MODULE: field = !f->python ? f->module : NULL; break;
	case W_THREAD: return false;
	}
	if (!field)
		return false;
	if (fnmatch(ru->pattern, field, 0) == 0)
		return true;
	/* a Python function by its name alone too: "forward" matches "GPT2MLP.forward" */
	const char *dot = ru->where == W_PY_FUNC ? strrchr(field, '.') : NULL;
	return dot && fnmatch(ru->pattern, dot + 1, 0) == 0;
}

enum gmt_category
gmt_cat_of(const struct gmt_cat_rules *r, const struct gmt_cat_frame *f, size_t n, bool autograd)
{
	size_t inner = n;
	for (size_t i = 0; i < n && inner == n; i++)
		if (f[i].python && !torch_own(&f[i]))
			inner = i;
	for (size_t k = 0; k < r->n; k++) {
		const struct rule *ru = &r->v[k];
		if (ru->where == W_THREAD) {
			if (autograd && !fnmatch(ru->pattern, "autograd", 0))
				return ru->cat;
			continue;
		}
		if (ru->innermost) {
			if (inner < n && frame_matches(ru, &f[inner]))
				return ru->cat;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (frame_matches(ru, &f[i]))
				return ru->cat;
	}
	return GMT_CAT_OTHER;
}
