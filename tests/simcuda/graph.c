/* SPDX-License-Identifier: MIT */
/**
 * @file graph.c
 * @brief Graph memory of the simulated driver (TEST DOUBLE): graphs with memory alloc/free
 *        nodes, stream capture of cuMemAllocAsync/cuMemFreeAsync, instantiation, launch, and the
 *        per-device graph memory pool.
 *
 * Only what a memory profiler sees is modelled; graphs hold memory nodes and nothing else.
 *  - An alloc node (cuGraphAddMemAllocNode, or a cuMemAllocAsync on a capturing stream) gets its
 *    address when it is made: address space only (mmap PROT_NONE, 2 MiB-rounded), fixed for
 *    the node's life. The memory is not touchable.
 *  - A free node (cuGraphAddMemFreeNode, or a captured cuMemFreeAsync) names such an address.
 *  - Each creation fires RESOURCE GRAPHNODE_CREATED (CUpti_GraphData; nodeType is 0, as measured
 *    on a real driver: ask cuGraphNodeGetType).
 *  - cuGraphLaunch applies the nodes in order: an allocation becomes live, a free ends it. The
 *    device's graph pool grows (device capacity, so cudaMemGetInfo sees it) when live graph
 *    memory exceeds its reservation, and keeps the memory until cuDeviceGraphMemTrim. Graph
 *    memory freed with cuMemFree/cuMemFreeAsync outside a graph stops being live too.
 * All state is under graphs.lock; device capacity is taken and returned with it not held.
 */
#include "simcuda-internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The memory of one alloc node. */
struct sim_graph_alloc {
	int device;
	uintptr_t va;
	size_t size;   /* as asked */
	size_t length; /* rounded to 2 MiB: what it takes from the graph pool */
	int live;      /* allocated by a launch and not freed since */
	unsigned refs; /* its node and the executable graphs that contain it */
	struct sim_graph_alloc *next;
};

struct sim_graph_node {
	CUgraphNodeType type;		   /* CU_GRAPH_NODE_TYPE_MEM_ALLOC or _MEM_FREE */
	CUDA_MEM_ALLOC_NODE_PARAMS params; /* an alloc node's parameters, dptr filled in */
	struct sim_graph_alloc *alloc;	   /* what it allocates or frees */
	struct sim_graph_node *next;
};

struct sim_graph {
	struct sim_graph_node *nodes; /* in creation order */
	struct sim_graph_node **tail;
	struct sim_graph *next;
};

/* One step of an executable graph: allocate or free alloc. */
struct sim_graph_op {
	struct sim_graph_alloc *alloc;
	int is_free;
};

struct sim_graph_exec {
	struct sim_graph_op *ops;
	size_t n_ops;
	struct sim_graph_exec *next;
};

struct sim_graph_chunk {
	uintptr_t addr;
	size_t size;
};

/* The graph memory pool of a device. */
struct sim_graph_pool {
	struct sim_graph_chunk *chunks; /* reservation order */
	size_t n_chunks;
	size_t chunks_cap;
	size_t reserved;
	size_t used;
	size_t reserved_high;
	size_t used_high;
};

static struct {
	pthread_mutex_t lock;
	struct sim_graph *graphs;
	struct sim_graph_exec *execs;
	struct sim_graph_alloc *allocs;
	struct sim_graph_pool pools[SIM_MAX_DEVICES];
} graphs = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

// --- lookups (graphs.lock held) -----------------------------------------------------------

static struct sim_graph *
sim_graph_find(CUgraph handle)
{
	struct sim_graph *g;

	for (g = graphs.graphs; g; g = g->next)
		if (g == (struct sim_graph *)handle)
			return g;
	return NULL;
}

static struct sim_graph_node *
sim_node_find(CUgraphNode handle)
{
	struct sim_graph *g;
	struct sim_graph_node *n;

	for (g = graphs.graphs; g; g = g->next)
		for (n = g->nodes; n; n = n->next)
			if (n == (struct sim_graph_node *)handle)
				return n;
	return NULL;
}

static struct sim_graph_exec *
sim_exec_find(CUgraphExec handle)
{
	struct sim_graph_exec *e;

	for (e = graphs.execs; e; e = e->next)
		if (e == (struct sim_graph_exec *)handle)
			return e;
	return NULL;
}

static struct sim_graph_alloc *
sim_alloc_find(CUdeviceptr dptr)
{
	struct sim_graph_alloc *a;

	for (a = graphs.allocs; a; a = a->next)
		if (a->va == (uintptr_t)dptr)
			return a;
	return NULL;
}

/* An allocation that nothing refers to and that holds no memory goes away. */
static void
sim_alloc_release(struct sim_graph_alloc *a)
{
	struct sim_graph_alloc **pp;

	if (a->refs || a->live)
		return;
	for (pp = &graphs.allocs; *pp != a; pp = &(*pp)->next)
		;
	*pp = a->next;
	munmap((void *)a->va, a->length);
	free(a);
}

static void
sim_alloc_unref(struct sim_graph_alloc *a)
{
	a->refs--;
	sim_alloc_release(a);
}

// --- nodes --------------------------------------------------------------------------------

/* Fire GRAPHNODE_CREATED for a new node; graphs.lock not held. */
static void
sim_node_created(CUgraph graph, CUgraphNode node, int device)
{
	CUpti_GraphData data;

	memset(&data, 0, sizeof(data));
	data.graph = graph;
	data.node = node;
	data.nodeType = (CUgraphNodeType)0; /* what the real driver reports here */
	sim_emit_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
			  sim_ctx_uid(device) ? sim_ctx_handle(device) : NULL, &data);
}

static void
sim_node_append(struct sim_graph *g, struct sim_graph_node *n)
{
	*g->tail = n;
	g->tail = &n->next;
}

/* Make an alloc node with its address; *params gets dptr. Returns the node or NULL (OOM). */
static struct sim_graph_node *
sim_alloc_node_new(CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
	struct sim_graph_node *n = calloc(1, sizeof(*n));
	struct sim_graph_alloc *a = calloc(1, sizeof(*a));
	void *va = MAP_FAILED;

	if (n && a && params->bytesize <= SIZE_MAX - SIM_GRANULARITY) {
		a->length = (params->bytesize + SIM_GRANULARITY - 1) & ~(SIM_GRANULARITY - 1);
		va = mmap(NULL, a->length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	}
	if (va == MAP_FAILED) {
		free(n);
		free(a);
		return NULL;
	}
	a->device = params->poolProps.location.id;
	a->va = (uintptr_t)va;
	a->size = params->bytesize;
	a->refs = 1;
	params->dptr = (CUdeviceptr)a->va;
	n->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
	n->params = *params;
	n->alloc = a;
	return n;
}

/* Add an alloc node to g (graph handle checked under the lock) and announce it. */
static CUresult
sim_add_alloc_node(CUgraph handle, CUDA_MEM_ALLOC_NODE_PARAMS *params, CUgraphNode *out)
{
	struct sim_graph_node *n = sim_alloc_node_new(params);
	struct sim_graph *g;

	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graphs.lock);
	g = sim_graph_find(handle);
	if (g) {
		n->alloc->next = graphs.allocs;
		graphs.allocs = n->alloc;
		sim_node_append(g, n);
	}
	pthread_mutex_unlock(&graphs.lock);
	if (!g) {
		munmap((void *)n->alloc->va, n->alloc->length);
		free(n->alloc);
		free(n);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (out)
		*out = (CUgraphNode)n;
	sim_node_created(handle, (CUgraphNode)n, params->poolProps.location.id);
	return CUDA_SUCCESS;
}

/* Add a free node of graph memory dptr to g and announce it. */
static CUresult
sim_add_free_node(CUgraph handle, CUdeviceptr dptr, CUgraphNode *out)
{
	struct sim_graph_node *n = calloc(1, sizeof(*n));
	struct sim_graph *g = NULL;
	int device = 0;

	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graphs.lock);
	n->alloc = sim_alloc_find(dptr);
	if (n->alloc)
		g = sim_graph_find(handle);
	if (g) {
		n->type = CU_GRAPH_NODE_TYPE_MEM_FREE;
		n->alloc->refs++;
		device = n->alloc->device;
		sim_node_append(g, n);
	}
	pthread_mutex_unlock(&graphs.lock);
	if (!g) {
		free(n);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (out)
		*out = (CUgraphNode)n;
	sim_node_created(handle, (CUgraphNode)n, device);
	return CUDA_SUCCESS;
}

CUresult
sim_graph_capture_alloc(struct sim_graph *graph, int device, size_t size, CUdeviceptr *dptr)
{
	CUDA_MEM_ALLOC_NODE_PARAMS params;
	CUresult rc;

	memset(&params, 0, sizeof(params));
	params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	params.poolProps.location.id = device;
	params.bytesize = size;
	rc = sim_add_alloc_node((CUgraph)graph, &params, NULL);
	if (rc == CUDA_SUCCESS)
		*dptr = params.dptr;
	return rc;
}

CUresult
sim_graph_capture_free(struct sim_graph *graph, CUdeviceptr dptr)
{
	return sim_add_free_node((CUgraph)graph, dptr, NULL);
}

static CUresult
sim_check_node_args(CUgraphNode *node, const CUgraphNode *deps, size_t n_deps)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	return !node || (n_deps && !deps) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult
sim_do_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode,
			      CUgraph hGraph,
			      const CUgraphNode *dependencies,
			      size_t numDependencies,
			      CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	CUresult rc = sim_check_node_args(phGraphNode, dependencies, numDependencies);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!nodeParams || nodeParams->bytesize == 0 ||
	    nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (nodeParams->poolProps.location.id < 0 ||
	    nodeParams->poolProps.location.id >= sim_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	return sim_add_alloc_node(hGraph, nodeParams, phGraphNode);
}

CUresult
sim_do_cuGraphAddMemFreeNode(CUgraphNode *phGraphNode,
			     CUgraph hGraph,
			     const CUgraphNode *dependencies,
			     size_t numDependencies,
			     CUdeviceptr dptr)
{
	CUresult rc = sim_check_node_args(phGraphNode, dependencies, numDependencies);

	if (rc != CUDA_SUCCESS)
		return rc;
	return sim_add_free_node(hGraph, dptr, phGraphNode);
}

/* Look a node up and copy what the caller asks for; graphs.lock taken here. */
static CUresult
sim_node_query(CUgraphNode handle,
	       CUgraphNodeType *type,
	       CUDA_MEM_ALLOC_NODE_PARAMS *alloc,
	       CUdeviceptr *freed)
{
	struct sim_graph_node *n;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&graphs.lock);
	n = sim_node_find(handle);
	if (n && type) {
		*type = n->type;
		rc = CUDA_SUCCESS;
	} else if (n && alloc && n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
		*alloc = n->params;
		rc = CUDA_SUCCESS;
	} else if (n && freed && n->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
		*freed = (CUdeviceptr)n->alloc->va;
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&graphs.lock);
	return rc;
}

CUresult
sim_do_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	return type ? sim_node_query(hNode, type, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

CUresult
sim_do_cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!params_out)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_node_query(hNode, NULL, params_out, NULL);
}

CUresult
sim_do_cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	return dptr_out ? sim_node_query(hNode, NULL, NULL, dptr_out) : CUDA_ERROR_INVALID_VALUE;
}

// --- graphs and capture -------------------------------------------------------------------

static struct sim_graph *
sim_graph_new(void)
{
	struct sim_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->tail = &g->nodes;
	pthread_mutex_lock(&graphs.lock);
	g->next = graphs.graphs;
	graphs.graphs = g;
	pthread_mutex_unlock(&graphs.lock);
	return g;
}

/* Unlink g and free it with its nodes; graphs.lock held. */
static void
sim_graph_free(struct sim_graph *g)
{
	struct sim_graph **pp;
	struct sim_graph_node *n, *next;

	for (pp = &graphs.graphs; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	for (n = g->nodes; n; n = next) {
		next = n->next;
		sim_alloc_unref(n->alloc);
		free(n);
	}
	free(g);
}

CUresult
sim_do_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct sim_graph *g;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phGraph || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	g = sim_graph_new();
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phGraph = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuGraphDestroy(CUgraph hGraph)
{
	struct sim_graph *g;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&graphs.lock);
	g = sim_graph_find(hGraph);
	if (g)
		sim_graph_free(g);
	pthread_mutex_unlock(&graphs.lock);
	return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Only created streams capture; the legacy and per-thread streams cannot here. */
CUresult
sim_do_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	struct sim_graph *g;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	g = sim_graph_new();
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_stream_set_capture(hStream, g);
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_lock(&graphs.lock);
		sim_graph_free(g);
		pthread_mutex_unlock(&graphs.lock);
	}
	return rc;
}

CUresult
sim_do_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	struct sim_graph *g;
	int device;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_lookup(hStream, &device, &g);
	if (rc == CUDA_SUCCESS)
		rc = sim_stream_set_capture(hStream, NULL);
	if (rc == CUDA_SUCCESS)
		*phGraph = (CUgraph)g;
	return rc;
}

// --- executable graphs and the graph pool -------------------------------------------------

static CUresult
sim_exec_new(struct sim_graph *g, struct sim_graph_exec **out)
{
	struct sim_graph_exec *e = calloc(1, sizeof(*e));
	struct sim_graph_node *n;
	size_t count = 0;

	for (n = g->nodes; n; n = n->next)
		count++;
	if (e && count)
		e->ops = calloc(count, sizeof(*e->ops));
	if (!e || (count && !e->ops)) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (n = g->nodes; n; n = n->next) {
		e->ops[e->n_ops].alloc = n->alloc;
		e->ops[e->n_ops].is_free = n->type == CU_GRAPH_NODE_TYPE_MEM_FREE;
		n->alloc->refs++;
		e->n_ops++;
	}
	e->next = graphs.execs;
	graphs.execs = e;
	*out = e;
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
				   CUgraph hGraph,
				   unsigned long long flags)
{
	struct sim_graph_exec *e = NULL;
	struct sim_graph *g;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	(void)flags; /* auto-free-on-launch and friends are not simulated */
	pthread_mutex_lock(&graphs.lock);
	g = sim_graph_find(hGraph);
	rc = g ? sim_exec_new(g, &e) : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&graphs.lock);
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	return rc;
}

CUresult
sim_do_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct sim_graph_exec **pp, *e = NULL;
	size_t i;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&graphs.lock);
	for (pp = &graphs.execs; *pp; pp = &(*pp)->next) {
		if (*pp == (struct sim_graph_exec *)hGraphExec) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	for (i = 0; e && i < e->n_ops; i++)
		sim_alloc_unref(e->ops[i].alloc);
	pthread_mutex_unlock(&graphs.lock);
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	free(e->ops);
	free(e);
	return CUDA_SUCCESS;
}

/* Whether step i of e finds its allocation live: as the earlier steps leave it. */
static int
sim_live_before(const struct sim_graph_exec *e, size_t i)
{
	int live = e->ops[i].alloc->live;
	size_t j;

	for (j = 0; j < i; j++)
		if (e->ops[j].alloc == e->ops[i].alloc)
			live = !e->ops[j].is_free;
	return live;
}

/*
 * How much each device's graph pool must grow for a launch of e: the peak of its usage while
 * the steps run, less what it has reserved. graphs.lock held; changes nothing.
 */
static void
sim_launch_deficit(const struct sim_graph_exec *e, size_t *deficit)
{
	size_t used[SIM_MAX_DEVICES], i;
	int d;

	for (d = 0; d < SIM_MAX_DEVICES; d++) {
		used[d] = graphs.pools[d].used;
		deficit[d] = 0;
	}
	for (i = 0; i < e->n_ops; i++) {
		const struct sim_graph_alloc *a = e->ops[i].alloc;
		int live = sim_live_before(e, i);

		d = a->device;
		if (e->ops[i].is_free && live)
			used[d] -= a->length;
		else if (!e->ops[i].is_free && !live)
			used[d] += a->length;
		if (used[d] > graphs.pools[d].reserved + deficit[d])
			deficit[d] = used[d] - graphs.pools[d].reserved;
	}
}

static void
sim_pool_account(struct sim_graph_pool *p)
{
	if (p->used > p->used_high)
		p->used_high = p->used;
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
}

/* Add a reserved chunk to a device's graph pool; graphs.lock held. Returns 0 or -1. */
static int
sim_pool_add(struct sim_graph_pool *p, uintptr_t addr, size_t size)
{
	if (p->n_chunks == p->chunks_cap) {
		size_t ncap = p->chunks_cap ? p->chunks_cap * 2 : 8;
		void *t = realloc(p->chunks, ncap * sizeof(*p->chunks));

		if (!t)
			return -1;
		p->chunks = t;
		p->chunks_cap = ncap;
	}
	p->chunks[p->n_chunks].addr = addr;
	p->chunks[p->n_chunks].size = size;
	p->n_chunks++;
	p->reserved += size;
	sim_pool_account(p);
	return 0;
}

/* Run the steps: allocations become live, frees end them. graphs.lock held. */
static void
sim_launch_apply(struct sim_graph_exec *e)
{
	size_t i;

	for (i = 0; i < e->n_ops; i++) {
		struct sim_graph_alloc *a = e->ops[i].alloc;
		struct sim_graph_pool *p = &graphs.pools[a->device];

		if (e->ops[i].is_free && a->live) {
			a->live = 0;
			p->used -= a->length;
		} else if (!e->ops[i].is_free && !a->live) {
			a->live = 1;
			p->used += a->length;
			sim_pool_account(p);
		}
	}
}

/* Reserve the deficit of every device from its heap; all or nothing. Lock not held. */
static CUresult
sim_launch_reserve(const size_t *deficit, uintptr_t *addr)
{
	int d, n = sim_device_count();

	for (d = 0; d < n; d++) {
		if (deficit[d] && sim_phys_alloc(d, deficit[d], &addr[d]) < 0) {
			while (d-- > 0)
				if (deficit[d])
					sim_phys_free(d, addr[d]);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	size_t deficit[SIM_MAX_DEVICES];
	uintptr_t addr[SIM_MAX_DEVICES];
	struct sim_graph_exec *e;
	int device, d;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_stream_lookup(hStream, &device, NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&graphs.lock);
	e = sim_exec_find(hGraphExec);
	if (e)
		sim_launch_deficit(e, deficit);
	pthread_mutex_unlock(&graphs.lock);
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_launch_reserve(deficit, addr);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&graphs.lock);
	for (d = 0; d < sim_device_count(); d++)
		if (deficit[d] && sim_pool_add(&graphs.pools[d], addr[d], deficit[d]) < 0)
			rc = CUDA_ERROR_OUT_OF_MEMORY; /* the chunk stays reserved, unaccounted */
	if (e == sim_exec_find(hGraphExec))
		sim_launch_apply(e);
	pthread_mutex_unlock(&graphs.lock);
	return rc;
}

int
sim_graph_free_ptr(CUdeviceptr dptr, CUresult *rc)
{
	struct sim_graph_alloc *a;

	pthread_mutex_lock(&graphs.lock);
	a = sim_alloc_find(dptr);
	if (a) {
		*rc = a->live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
		if (a->live) {
			a->live = 0;
			graphs.pools[a->device].used -= a->length;
			sim_alloc_release(a); /* gone if no graph refers to it any more */
		}
	}
	pthread_mutex_unlock(&graphs.lock);
	return a != NULL;
}

/* Take the newest chunk that live graph memory does not need; 0 when there is none. */
static int
sim_pool_pop(struct sim_graph_pool *p, struct sim_graph_chunk *out)
{
	int rc = 0;

	pthread_mutex_lock(&graphs.lock);
	if (p->n_chunks && p->reserved - p->chunks[p->n_chunks - 1].size >= p->used) {
		*out = p->chunks[--p->n_chunks];
		p->reserved -= out->size;
		rc = 1;
	}
	pthread_mutex_unlock(&graphs.lock);
	return rc;
}

/* Release reserved chunks, newest first, that live graph memory does not need. */
CUresult
sim_do_cuDeviceGraphMemTrim(CUdevice device)
{
	struct sim_graph_chunk chunk;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (device < 0 || device >= sim_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	while (sim_pool_pop(&graphs.pools[device], &chunk))
		sim_phys_free(device, chunk.addr);
	return CUDA_SUCCESS;
}

CUresult
sim_do_cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	const struct sim_graph_pool *p;
	CUresult rc = sim_drv_ready();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (device < 0 || device >= sim_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	p = &graphs.pools[device];
	pthread_mutex_lock(&graphs.lock);
	switch (attr) {
	case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
	case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
	default: rc = CUDA_ERROR_INVALID_VALUE; break;
	}
	pthread_mutex_unlock(&graphs.lock);
	return rc;
}
