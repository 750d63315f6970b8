/*
 * @brief Symbolized call stacks: module lookup, Python splicing, the call-site rule.
 *
 * Splicing (docs/trace-format.md, stack "py"): each Python frame group — consecutive frames,
 * innermost first, up to and including one with entry=1 — was run by one call of the
 * interpreter's eval function (_PyEval_EvalFrameDefault). The native frames of that function,
 * innermost first, are matched to the groups innermost first and replaced by them. Groups left
 * over (the native stack was cut at its depth limit, or the interpreter has no symbols) go to the
 * outermost end, where the cut-off frames were.
 */
#define _GNU_SOURCE
#include "analysis/symbols/callstack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/symbols/pyline.h"
#include "util/alloc.h"

/* The address ranges of one modules line, sorted, for a binary search per frame. */
struct range {
	uint64_t lo, hi;
	uint32_t module; /* index into the trace's modules */
};

struct modset_index {
	struct range *r;
	size_t n;
	bool built;
};

/* One native return address while a stack is built: frames[first .. first + n) of the list. */
struct phys {
	size_t first, n;
	bool eval;
};

struct fvec {
	struct gmt_cframe *f;
	size_t n, cap;
	bool oom; /* a push found no memory: the stack being built is lost */
};

/*
 * What build() works on: the stack with its frames by value, each with its own `hidden` flag,
 * before they are interned. The fields are those of struct gmt_cstack.
 */
struct draft {
	uint32_t id;
	uint32_t nframes;
	struct gmt_cframe *frames;
	int32_t site;
	uint32_t npython;
	uint8_t pystate;
	bool python_outermost;
	uint64_t hash;
};

/* Memory handed out in order and released all at once: stacks and interned frames. */
struct arena {
	char *cur;
	size_t left;
	char **blocks;
	size_t nblocks;
	bool oom;
};

#define ARENA_BLOCK (64u * 1024)

struct gmt_callstacks {
	const struct gmt_trace *t;
	struct gmt_symbolizer *sym;
	uint32_t *modsym; /* per trace module: the symbolizer's handle, UINT32_MAX not asked yet */
	uint8_t *modcls;  /* per trace module: enum gmt_cframe_class + 1, 0 not computed */
	struct modset_index *sets;  /* per modules line */
	struct gmt_cstack **stacks; /* per trace stack (same index), NULL not built */
	struct arena arena;

	/* every distinct frame of the stacks built so far (in the arena), by id */
	const struct gmt_cframe **frames;
	uint32_t nfr, frcap;
	uint32_t *fslots; /* open addressing over the frames: id + 1, 0 empty */
	size_t fmask;

	struct work *w;
	int error; /* -ENOMEM once a stack could not be built (gmt_callstacks_error()) */
};

/*
 * build()'s working memory, kept from one stack to the next and shared by the stacks of every
 * trace (a directory of many traces keeps them all): freed with the last of them.
 */
struct work {
	struct fvec nat, py, out;
	struct phys *ph;
	size_t phcap;
	size_t *gstart;
	size_t gcap;
	size_t users;
};

static struct work shared_work;

static void *
arena_alloc(struct arena *a, size_t size)
{
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (size > a->left) {
		/*
		 * Blocks double from 1 KiB to ARENA_BLOCK (a trace of a few stacks, one of many in
		 * a directory, takes little); a request of more than a quarter block gets its own.
		 */
		size_t grow = a->nblocks < 6 ? (size_t)1024 << a->nblocks : ARENA_BLOCK;
		size_t bsize = size > grow / 4 ? size : grow;

		char **blocks = gmt_realloc_array(a->blocks, a->nblocks + 1, sizeof(*a->blocks));

		if (blocks)
			a->blocks = blocks;
		if (!blocks || !(a->blocks[a->nblocks] = malloc(bsize))) {
			a->oom = true;
			return NULL;
		}
		if (bsize != grow)
			return a->blocks[a->nblocks++];
		a->cur = a->blocks[a->nblocks++];
		a->left = bsize;
	}
	p = a->cur;
	a->cur += size;
	a->left -= size;
	return p;
}

static void
arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->nblocks; i++)
		free(a->blocks[i]);
	free(a->blocks);
}

struct gmt_callstacks *
gmt_callstacks_new(const struct gmt_trace *t, struct gmt_symbolizer *sym)
{
	struct gmt_callstacks *cs = calloc(1, sizeof(*cs));

	if (!cs)
		goto err_nomem;
	cs->t = t;
	cs->sym = sym;
	cs->w = &shared_work;
	cs->w->users++;
	cs->modsym = gmt_realloc_array(NULL, t->nmodules, sizeof(*cs->modsym));
	cs->modcls = calloc(t->nmodules ? t->nmodules : 1, 1);
	cs->sets = calloc(t->nmodsets ? t->nmodsets : 1, sizeof(*cs->sets));
	cs->stacks = calloc(t->nstacks ? t->nstacks : 1, sizeof(*cs->stacks));
	if (!cs->modsym || !cs->modcls || !cs->sets || !cs->stacks) {
		gmt_callstacks_free(cs);
		goto err_nomem;
	}
	memset(cs->modsym, 0xff, t->nmodules * sizeof(*cs->modsym));
	return cs;

err_nomem:
	errno = ENOMEM;
	return NULL;
}

void
gmt_callstacks_free(struct gmt_callstacks *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; cs->sets && i < cs->t->nmodsets; i++)
		free(cs->sets[i].r);
	arena_free(&cs->arena);
	free(cs->frames);
	free(cs->fslots);
	if (--cs->w->users == 0) {
		free(cs->w->nat.f);
		free(cs->w->py.f);
		free(cs->w->out.f);
		free(cs->w->ph);
		free(cs->w->gstart);
		*cs->w = (struct work){0};
	}
	free(cs->stacks);
	free(cs->sets);
	free(cs->modcls);
	free(cs->modsym);
	free(cs);
}

// --- modules ------------------------------------------------------------------------------------

static int
cmp_range(const void *pa, const void *pb)
{
	const struct range *a = pa, *b = pb;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The sorted ranges of @p ms into @p x; false out of memory. */
static bool
modset_build(const struct gmt_trace *t, const struct gmt_trace_modset *ms, struct modset_index *x)
{
	size_t n = 0;

	for (uint32_t i = 0; i < ms->nmods; i++)
		n += t->modules[ms->mods[i]].nsegments;
	if (!(x->r = gmt_realloc_array(NULL, n, sizeof(*x->r))))
		return false;
	x->built = true;
	for (uint32_t i = 0; i < ms->nmods; i++) {
		const struct gmt_trace_module *m = &t->modules[ms->mods[i]];

		for (uint32_t k = 0; k < m->nsegments; k++) {
			uint64_t lo = m->base + m->segments[k][0];

			if (m->segments[k][1] == 0)
				continue;
			x->r[x->n++] = (struct range){lo, lo + m->segments[k][1], ms->mods[i]};
		}
	}
	qsort(x->r, x->n, sizeof(*x->r), cmp_range);
	return true;
}

/* The trace module holding @p addr in modules line @p set, -1 when none does. */
static int64_t
module_of(struct gmt_callstacks *cs, int32_t set, uint64_t addr)
{
	struct modset_index *x;
	size_t lo = 0, hi;

	if (set < 0 || (size_t)set >= cs->t->nmodsets)
		return -1;
	x = &cs->sets[set];
	if (!x->built && !modset_build(cs->t, &cs->t->modsets[set], x)) {
		cs->error = -ENOMEM;
		return -1;
	}
	/* The last range starting at or below addr. */
	hi = x->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= x->r[lo - 1].hi)
		return -1;
	return x->r[lo - 1].module;
}

/* "libcudart" of ".../libcudart.so.13", "python3.12" of "/usr/bin/python3.12". */
static void
module_stem(const char *path, char *stem, size_t max)
{
	const char *base = strrchr(path, '/'), *so;
	size_t n;

	base = base ? base + 1 : path;
	so = strstr(base, ".so");
	n = so ? (size_t)(so - base) : strlen(base);
	if (n >= max)
		n = max - 1;
	memcpy(stem, base, n);
	stem[n] = '\0';
}

static enum gmt_cframe_class
classify(const char *path)
{
	static const struct {
		const char *stem;
		bool prefix;
		enum gmt_cframe_class cls;
	} table[] = {
	    {"libcudart", false, GMT_CC_CUDA},
	    {"libcuda", false, GMT_CC_CUDA},
	    {"libcupti", false, GMT_CC_CUDA},
	    {"libnvidia-", true, GMT_CC_CUDA},
	    {"libgpumemtrace", true, GMT_CC_TRACER},
	    {"torch_bridge-", true,
	     GMT_CC_TRACER}, /* the PyTorch layer's bridge (python/gpumemtrace) */
	    {"libc", false, GMT_CC_SYSTEM},
	    {"libc-", true, GMT_CC_SYSTEM}, /* libc-2.31.so of older glibc */
	    {"libstdc++", false, GMT_CC_SYSTEM},
	    {"libgcc_s", false, GMT_CC_SYSTEM},
	    {"libpthread", false, GMT_CC_SYSTEM},
	    {"libpthread-", true, GMT_CC_SYSTEM},
	    {"libdl", false, GMT_CC_SYSTEM},
	    {"libdl-", true, GMT_CC_SYSTEM},
	    {"libm", false, GMT_CC_SYSTEM},
	    {"libm-", true, GMT_CC_SYSTEM},
	    {"librt", false, GMT_CC_SYSTEM},
	    {"librt-", true, GMT_CC_SYSTEM},
	    {"ld-linux", true, GMT_CC_SYSTEM},
	    {"ld-", true, GMT_CC_SYSTEM},
	    {"libc10_cuda", false, GMT_CC_ALLOCATOR},
	    {"libtorch_cuda", true, GMT_CC_ALLOCATOR},
	    {"libpython", true, GMT_CC_INTERPRETER},
	    {"python", true, GMT_CC_INTERPRETER},
	};
	char stem[256];

	module_stem(path, stem, sizeof(stem));
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		size_t n = strlen(table[i].stem);

		if (table[i].prefix ? strncmp(stem, table[i].stem, n) == 0
				    : strcmp(stem, table[i].stem) == 0)
			return table[i].cls;
	}
	return GMT_CC_USER;
}

// --- building one stack -------------------------------------------------------------------------

/* A new frame at the end of @p v. Out of memory, a frame to write that is thrown away (v->oom:
 * build() gives up the stack), so that callers need no failure path of their own. */
static struct gmt_cframe *
fvec_push(struct fvec *v)
{
	static struct gmt_cframe lost;

	if (gmt_grow(&v->f, &v->cap, v->n + 1, sizeof(*v->f), 32) != 0) {
		v->oom = true;
		memset(&lost, 0, sizeof(lost));
		return &lost;
	}
	memset(&v->f[v->n], 0, sizeof(v->f[v->n]));
	return &v->f[v->n++];
}

/* The frames of one native return address appended to @p v (one or more, inline chains). */
static void
native_frames(struct gmt_callstacks *cs,
	      const struct gmt_trace_stack *ts,
	      uint64_t addr,
	      struct fvec *v)
{
	const struct gmt_trace *t = cs->t;
	const struct gmt_trace_module *tm;
	const struct gmt_sym_frame *sf;
	const char *module;
	enum gmt_sym_status st;
	struct gmt_cframe *f;
	uint32_t nsf = 0;
	uint64_t off;
	int64_t mi = module_of(cs, ts->modset, addr);

	if (mi < 0) {
		f = fvec_push(v);
		f->address = addr;
		f->status = GMT_SYM_NO_MODULE;
		return;
	}
	tm = &t->modules[mi];
	if (cs->modsym[mi] == UINT32_MAX)
		cs->modsym[mi] = gmt_sym_module(cs->sym, tm->path, tm->file, tm->build_id);
	if (!cs->modcls[mi])
		cs->modcls[mi] = (uint8_t)(classify(tm->path) + 1);
	module = gmt_sym_intern(cs->sym, tm->path);
	off = addr - tm->base;
	/* A return address is the instruction after the call: the call is the byte before. */
	st = gmt_symbolize(cs->sym, cs->modsym[mi], off ? off - 1 : off, &sf, &nsf);
	for (uint32_t k = 0; k < (nsf ? nsf : 1); k++) {
		f = fvec_push(v);
		f->address = addr;
		f->offset = off;
		f->module = module;
		f->status = (uint8_t)st;
		f->cls = (uint8_t)(cs->modcls[mi] - 1);
		if (nsf) {
			f->function = sf[k].function;
			f->file = sf[k].file;
			f->line = sf[k].line;
			f->inlined = sf[k].inlined;
		}
	}
}

static void
python_frame(struct gmt_callstacks *cs, const struct gmt_trace_pyframe *pf, struct fvec *v)
{
	const struct gmt_trace_pycode *code = gmt_trace_pycode(cs->t, pf->code);
	struct gmt_cframe *f = fvec_push(v);
	const char *version;
	char buf[64];
	int line;

	f->kind = GMT_CF_PYTHON;
	if (!code) {
		snprintf(buf, sizeof(buf), "<unknown Python code %u>", pf->code);
		f->function = gmt_sym_intern(cs->sym, buf);
		f->status = GMT_SYM_NO_SYMBOL;
		return;
	}
	if (code->qualname || code->name) {
		f->function = gmt_sym_intern(cs->sym, code->qualname ? code->qualname : code->name);
	} else {
		snprintf(buf, sizeof(buf), "<unnamed Python code %u>", pf->code);
		f->function = gmt_sym_intern(cs->sym, buf);
	}
	f->file = gmt_sym_intern(cs->sym, code->file);
	version = code->python ? code->python : cs->t->python;
	line = version ? gmt_pyline(version, code->linetable, code->nlinetable, code->firstlineno,
				    pf->offset)
		       : -1;
	f->line = line > 0 ? (uint32_t)line : 0;
}

/* Whether @p file is Python source: a PyTorch snapshot names Python and C++ frames alike. */
static bool
python_file(const char *file)
{
	size_t n = file ? strlen(file) : 0;

	return n > 3 && strcmp(file + n - 3, ".py") == 0;
}

/*
 * The class of a C++ frame of a PyTorch snapshot by its function: torch's own recorder (the
 * unwinder and the traceback it gathers, at the innermost end of every stack recorded with
 * stacks="all": never a call site, as our tracer's frames are not) and its caching allocator.
 * The file of such a frame is a source path or "??", which says nothing of the module.
 */
static enum gmt_cframe_class
torch_text_class(const char *fn)
{
	static const char *const recorder[] = {"torch::unwind::", "torch::CapturedTraceback",
					       "torch::(anonymous namespace)::gather",
					       "torch::cuda::(anonymous namespace)::gather"};

	if (!fn)
		return GMT_CC_USER;
	for (size_t i = 0; i < sizeof(recorder) / sizeof(recorder[0]); i++)
		if (!strncmp(fn, recorder[i], strlen(recorder[i])))
			return GMT_CC_TRACER;
	if (strstr(fn, "CUDACachingAllocator::") || strstr(fn, "CachingDeviceAllocator::"))
		return GMT_CC_ALLOCATOR;
	return GMT_CC_USER;
}

/*
 * A stack whose frames are text (a PyTorch snapshot's: file, function, line): a Python frame for
 * a .py file, a native one otherwise, classed by its file as a module would be (a frame of
 * libc10_cuda.so is the allocator's), else by its function (torch_text_class()); there is
 * nothing to symbolize or splice.
 */
static void
text_frames(struct gmt_callstacks *cs,
	    const struct gmt_trace_stack *ts,
	    struct draft *st,
	    struct fvec *out)
{
	uint32_t npy = 0;

	for (uint32_t i = 0; i < ts->ntext; i++) {
		const struct gmt_trace_textframe *tf = &ts->text[i];
		struct gmt_cframe *f = fvec_push(out);

		if (!f)
			return;
		f->function = gmt_sym_intern(cs->sym, tf->function);
		f->file = gmt_sym_intern(cs->sym, tf->file);
		f->line = tf->line;
		f->status = GMT_SYM_OK;
		if (python_file(tf->file)) {
			f->kind = GMT_CF_PYTHON;
			npy++;
		} else {
			f->kind = GMT_CF_NATIVE;
			f->cls = (uint8_t)(tf->file ? classify(tf->file) : GMT_CC_USER);
			if (f->cls == GMT_CC_USER)
				f->cls = (uint8_t)torch_text_class(tf->function);
		}
	}
	st->npython = npy;
}

/* Whether @p name is @p fn, or a part of it the compiler split off ("fn.cold"). */
static bool
is_function(const char *name, const char *fn)
{
	size_t n = strlen(fn);

	return name && strncmp(name, fn, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/*
 * Which physical frames are the eval function's. _PyEval_EvalFrame is an inline wrapper around
 * _PyEval_EvalFrameDefault: with debug info it shows in the caller's frame, which then must not
 * count as a second eval call.
 */
static void
mark_eval(const struct fvec *nat, struct phys *ph, size_t nph)
{
	bool prev_default = false;

	for (size_t i = 0; i < nph; i++) {
		bool dflt = false, wrapper = false;

		for (size_t k = ph[i].first; k < ph[i].first + ph[i].n; k++) {
			dflt |= is_function(nat->f[k].function, "_PyEval_EvalFrameDefault");
			wrapper |= is_function(nat->f[k].function, "_PyEval_EvalFrame");
		}
		ph[i].eval = dflt || (wrapper && !prev_default);
		prev_default = dflt;
	}
}

/* The frames of @p ts: natives with the Python groups spliced in, into @p out. */
static void
splice(struct gmt_callstacks *cs,
       const struct gmt_trace_stack *ts,
       struct draft *st,
       struct fvec *out)
{
	struct work *w = cs->w;
	struct fvec *nat = &w->nat, *py = &w->py;
	struct phys *ph;
	size_t *gstart;
	size_t ngroups = 0, g = 0, neval = 0;

	nat->n = py->n = 0;
	if (ts->ntext) {
		text_frames(cs, ts, st, out);
		return;
	}
	if (gmt_grow(&w->ph, &w->phcap, ts->nframes, sizeof(*w->ph), 1) != 0 ||
	    gmt_grow(&w->gstart, &w->gcap, (size_t)ts->npy + 1, sizeof(*w->gstart), 1) != 0) {
		cs->error = -ENOMEM;
		return;
	}
	ph = w->ph;
	gstart = w->gstart;
	for (uint32_t i = 0; i < ts->nframes; i++) {
		ph[i].first = nat->n;
		native_frames(cs, ts, gmt_trace_frame(cs->t, ts, i), nat);
		ph[i].n = nat->n - ph[i].first;
	}
	mark_eval(nat, ph, ts->nframes);
	for (uint32_t i = 0; i < ts->npy; i++) {
		if (i == 0 || ts->py[i - 1].entry)
			gstart[ngroups++] = py->n;
		python_frame(cs, &ts->py[i], py);
	}
	gstart[ngroups] = py->n;
	for (uint32_t i = 0; i < ts->nframes; i++) {
		if (ph[i].eval)
			neval++;
		if (ph[i].eval && g < ngroups) {
			for (size_t k = gstart[g]; k < gstart[g + 1]; k++)
				*fvec_push(out) = py->f[k];
			g++;
			continue;
		}
		for (size_t k = ph[i].first; k < ph[i].first + ph[i].n; k++)
			*fvec_push(out) = nat->f[k];
	}
	for (size_t k = gstart[g]; k < py->n; k++)
		*fvec_push(out) = py->f[k];
	st->npython = (uint32_t)py->n;
	st->python_outermost = py->n && neval == 0;
}

/* A Python file of an installed package or of the standard library, not of the program. */
bool
gmt_python_library_file(const char *file)
{
	if (!file)
		return false;
	if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	    !strncmp(file, "<frozen", 7))
		return true;
	/* the standard library: .../lib/python3.X/module.py (not under site-packages) */
	const char *lib = strstr(file, "/lib/python3.");
	return lib != NULL;
}

/*
 * Whether a native frame of a module that is otherwise the user's belongs to the CUDA runtime
 * linked into it: nvcc links libcudart_static.a by default, so cudaMalloc and the runtime's
 * internals are functions of the program's own executable (or of a library that linked it).
 * CUDA 13 names the internals libcudart_static_<sha1>, older toolkits cudart::... and
 * __cudart...; the archive has no debug information, so a frame with a source file and a
 * cuda.../cu... name is the user's own function (a wrapper called cudaCheckedMalloc, say). The
 * typed wrappers of cuda_runtime.h (cudaMalloc<float>, inline) are the API entry too.
 */
static bool
static_cuda_frame(const struct gmt_cframe *f)
{
	static const char *const internal[] = {"libcudart_static_", "cudart::", "__cudart"};
	const char *fn = f->function, *base;

	if (f->file) {
		base = strrchr(f->file, '/');
		base = base ? base + 1 : f->file;
		if (!strcmp(base, "cuda_runtime.h") || !strcmp(base, "cuda_runtime_api.h"))
			return true;
	}
	if (!fn)
		return false;
	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (!strncmp(fn, internal[i], strlen(internal[i])))
			return true;
	if (f->file)
		return false;
	/* The runtime's and the driver's C API entries: cudaMalloc, __cudaRegisterFatBinary,
	 * cuMemAlloc_v2 (a program that links a static driver shim). */
	if (!strncmp(fn, "__cuda", 6))
		return true;
	if (!strncmp(fn, "cuda", 4))
		fn += 4;
	else if (!strncmp(fn, "cu", 2))
		fn += 2;
	else
		return false;
	return *fn >= 'A' && *fn <= 'Z';
}

/* Frames that text and folded stacks leave out, and the call site. */
static void
settle(struct draft *st)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < st->nframes; i++)
		if (st->frames[i].kind == GMT_CF_NATIVE && st->frames[i].cls == GMT_CC_USER &&
		    st->frames[i].status == GMT_SYM_OK && static_cuda_frame(&st->frames[i]))
			st->frames[i].cls = GMT_CC_CUDA;
	/* The innermost run inside the CUDA libraries and the tracer: the API name says it. */
	while (k < st->nframes && st->frames[k].kind == GMT_CF_NATIVE &&
	       (st->frames[k].cls == GMT_CC_CUDA || st->frames[k].cls == GMT_CC_TRACER))
		k++;
	for (uint32_t i = 0; k < st->nframes && i < k; i++)
		st->frames[i].hidden = true;
	/* Between Python frames the interpreter's own C frames are only glue. */
	for (uint32_t i = 0; st->npython && i < st->nframes; i++)
		if (st->frames[i].cls == GMT_CC_INTERPRETER)
			st->frames[i].hidden = true;

	st->site = st->nframes ? 0 : -1;
	/* Python: the innermost frame of the program's own files, past frameworks and the standard
	 * library (torch/nn/modules/... is not where a user looks); else the innermost Python
	 * frame. */
	for (uint32_t i = 0; st->npython && i < st->nframes; i++) {
		if (st->frames[i].kind == GMT_CF_PYTHON &&
		    !gmt_python_library_file(st->frames[i].file)) {
			st->site = (int32_t)i;
			return;
		}
	}
	for (uint32_t i = 0; i < st->nframes; i++) {
		if (st->npython ? st->frames[i].kind == GMT_CF_PYTHON
				: st->frames[i].cls == GMT_CC_USER) {
			st->site = (int32_t)i;
			return;
		}
	}
	/* Nothing is the user's: the innermost frame outside CUDA and the tracer, if any. */
	if (k < st->nframes)
		st->site = (int32_t)k;
}

static uint64_t
mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t
frame_hash(const struct gmt_cframe *f)
{
	uint64_t h = f->kind;

	if (f->kind == GMT_CF_NATIVE && f->status != GMT_SYM_OK)
		return mix(mix(h, (uintptr_t)f->module), f->module ? f->offset : f->address);
	h = mix(h, (uintptr_t)f->function);
	h = mix(h, (uintptr_t)f->file);
	h = mix(h, f->line);
	return mix(h, (uintptr_t)f->module);
}

// --- interned frames ----------------------------------------------------------------------------

static uint64_t
intern_hash(const struct gmt_cframe *f)
{
	uint64_t h = (uint64_t)f->kind | (uint64_t)f->cls << 8 | (uint64_t)f->status << 16 |
		     (uint64_t)f->inlined << 24 | (uint64_t)f->hidden << 25;

	h = mix(h, (uintptr_t)f->function);
	h = mix(h, (uintptr_t)f->file);
	h = mix(h, (uintptr_t)f->module);
	h = mix(h, f->address);
	h = mix(h, f->offset);
	h = mix(h, f->line);
	return h ^ (h >> 31);
}

/* Every field (strings are interned, so by pointer); not memcmp: padding is not set. */
static bool
same_frame(const struct gmt_cframe *a, const struct gmt_cframe *b)
{
	return a->function == b->function && a->file == b->file && a->module == b->module &&
	       a->address == b->address && a->offset == b->offset && a->line == b->line &&
	       a->kind == b->kind && a->cls == b->cls && a->status == b->status &&
	       a->inlined == b->inlined && a->hidden == b->hidden;
}

static const struct gmt_cframe *
frame_by_id(const struct gmt_callstacks *cs, uint32_t id)
{
	return cs->frames[id];
}

static bool
fslots_grow(struct gmt_callstacks *cs)
{
	size_t cap = cs->fmask ? (cs->fmask + 1) * 2 : 64;
	uint32_t *slots = calloc(cap, sizeof(*cs->fslots));

	if (!slots)
		return false;
	free(cs->fslots);
	cs->fslots = slots;
	cs->fmask = cap - 1;
	for (uint32_t id = 0; id < cs->nfr; id++) {
		size_t slot;

		for (slot = intern_hash(frame_by_id(cs, id)) & cs->fmask; cs->fslots[slot];
		     slot = (slot + 1) & cs->fmask)
			;
		cs->fslots[slot] = id + 1;
	}
	return true;
}

/* The id of the one stored copy of @p f; 0 and cs->error out of memory. */
static uint32_t
intern_frame(struct gmt_callstacks *cs, const struct gmt_cframe *f)
{
	struct gmt_cframe *copy;
	size_t slot;
	uint32_t id;

	if (((size_t)cs->nfr + 1) * 4 > (cs->fmask + 1) * 3 && !fslots_grow(cs))
		goto err_nomem;
	for (slot = intern_hash(f) & cs->fmask; cs->fslots[slot]; slot = (slot + 1) & cs->fmask)
		if (same_frame(frame_by_id(cs, cs->fslots[slot] - 1), f))
			return cs->fslots[slot] - 1;
	if (cs->nfr == UINT32_MAX - 1) /* 2^32 frames do not fit in memory anyway */
		goto err_nomem;
	if (cs->nfr == cs->frcap) {
		size_t cap = cs->frcap;

		if (gmt_grow(&cs->frames, &cap, (size_t)cs->nfr + 1, sizeof(*cs->frames), 64) != 0)
			goto err_nomem;
		cs->frcap = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
	}
	if (!(copy = arena_alloc(&cs->arena, sizeof(*copy))))
		goto err_nomem;
	*copy = *f;
	id = cs->nfr++;
	cs->frames[id] = copy;
	cs->fslots[slot] = id + 1;
	return id;

err_nomem:
	cs->error = -ENOMEM;
	return 0;
}

const struct gmt_cframe *
gmt_cstack_frame(const struct gmt_cstack *st, uint32_t i)
{
	return frame_by_id(st->owner, st->frame_ids[i]);
}

uint8_t *
gmt_cstack_memo(const struct gmt_cstack *st)
{
	return &((struct gmt_cstack *)st)->memo; /* every stack is made writable, in build() */
}

static struct gmt_cstack *
build(struct gmt_callstacks *cs, const struct gmt_trace_stack *ts)
{
	struct draft d = {.id = ts->id, .pystate = ts->pystate};
	uint32_t *ids;
	struct gmt_cstack *st;

	cs->w->out.n = 0;
	cs->w->nat.oom = cs->w->py.oom = cs->w->out.oom = false;
	splice(cs, ts, &d, &cs->w->out);
	if (cs->error || cs->w->nat.oom || cs->w->py.oom || cs->w->out.oom) {
		cs->error = -ENOMEM;
		return NULL;
	}
	d.frames = cs->w->out.f;
	d.nframes = (uint32_t)cs->w->out.n;
	settle(&d);
	d.hash = d.pystate;
	for (uint32_t i = 0; i < d.nframes; i++)
		if (!d.frames[i].hidden)
			d.hash = mix(d.hash, frame_hash(&d.frames[i]));

	/* The stack and its list of frame ids in one piece; the frames themselves are shared. */
	st = arena_alloc(&cs->arena, sizeof(*st) + (size_t)d.nframes * sizeof(*ids));
	if (!st) {
		cs->error = -ENOMEM;
		return NULL;
	}
	ids = (uint32_t *)(st + 1);
	for (uint32_t i = 0; i < d.nframes; i++)
		ids[i] = intern_frame(cs, &d.frames[i]);
	if (cs->error)
		return NULL;
	*st = (struct gmt_cstack){
	    .id = d.id,
	    .nframes = d.nframes,
	    .frame_ids = ids,
	    .owner = cs,
	    .site = d.site,
	    .npython = d.npython,
	    .pystate = d.pystate,
	    .python_outermost = d.python_outermost,
	    .hash = d.hash,
	};
	return st;
}

const struct gmt_cstack *
gmt_callstacks_get(struct gmt_callstacks *cs, uint32_t id)
{
	const struct gmt_trace_stack *ts;
	size_t i;

	if (!cs)
		return NULL;
	ts = gmt_trace_stack(cs->t, id);
	if (!ts)
		return NULL;
	i = (size_t)(ts - cs->t->stacks);
	if (!cs->stacks[i])
		cs->stacks[i] = build(cs, ts);
	return cs->stacks[i];
}

int
gmt_callstacks_error(const struct gmt_callstacks *cs)
{
	if (!cs)
		return 0;
	return cs->error ? cs->error : gmt_symbolizer_error(cs->sym);
}

// --- comparing ----------------------------------------------------------------------------------

const struct gmt_cframe *
gmt_cstack_site(const struct gmt_cstack *st)
{
	return st && st->site >= 0 ? gmt_cstack_frame(st, (uint32_t)st->site) : NULL;
}

bool
gmt_cframe_same_site(const struct gmt_cframe *a, const struct gmt_cframe *b)
{
	if (!a || !b)
		return a == b;
	return frame_hash(a) == frame_hash(b) && gmt_cframe_cmp(a, b) == 0;
}

bool
gmt_cstack_equal(const struct gmt_cstack *a, const struct gmt_cstack *b)
{
	uint32_t i = 0, k = 0;

	if (a == b)
		return true;
	if (!a || !b || a->hash != b->hash || a->pystate != b->pystate)
		return false;
	for (;;) {
		while (i < a->nframes && gmt_cstack_frame(a, i)->hidden)
			i++;
		while (k < b->nframes && gmt_cstack_frame(b, k)->hidden)
			k++;
		if (i == a->nframes || k == b->nframes)
			return i == a->nframes && k == b->nframes;
		if (!gmt_cframe_same_site(gmt_cstack_frame(a, i), gmt_cstack_frame(b, k)))
			return false;
		i++;
		k++;
	}
}

static int
cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	return strcmp(a, b);
}

int
gmt_cframe_cmp(const struct gmt_cframe *a, const struct gmt_cframe *b)
{
	bool ra = a->kind == GMT_CF_PYTHON || a->status == GMT_SYM_OK;
	bool rb = b->kind == GMT_CF_PYTHON || b->status == GMT_SYM_OK;
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (ra != rb)
		return ra ? -1 : 1;
	if (ra) {
		if ((c = cmp_str(a->file, b->file)))
			return c;
		if (a->line != b->line)
			return a->line < b->line ? -1 : 1;
		if ((c = cmp_str(a->function, b->function)))
			return c;
		return cmp_str(a->module, b->module);
	}
	if ((c = cmp_str(a->module, b->module)))
		return c;
	if (!a->module)
		return a->address < b->address ? -1 : a->address > b->address;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}
