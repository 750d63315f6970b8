// A TEST DOUBLE of libc10_cuda.so's caching allocator, for gpumemtrace's CPU tests (CI has no
// torch): the names and call shapes of c10::cuda::CUDACachingAllocator that the bridge uses
// (include/c10/...), over a small caching allocator of our own on the simulated CUDA runtime
// (tests/simcuda): segments from cudaMalloc (2 MiB for small requests, 20 MiB for requests under
// 10 MiB, else the request rounded to 2 MiB), blocks rounded to 512 bytes, best fit, split,
// merged on free, trace trackers called under a recursive mutex the way torch calls them, frees
// that wait for a stream (record_stream) completed later by whichever thread processes events,
// an OOM entry (addr = the device's free bytes) after the cache was emptied and cudaMalloc still
// failed. With PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, as torch's cudaMallocAsync backend
// does: no cache and no trace tracker, each tensor one cudaMallocAsync and one cudaFreeAsync on
// the current (null) stream, empty_cache() a synchronize and a trim of the device's default pool
// (a free that waits for a stream is freed at once: the double's streams are in order). Not
// PyTorch's algorithm, none of its code. Built once per torch version the double plays
// (tests/torchsim/meson.build): TraceEntry's layout and snapshot()'s shape are that version's.
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace c10::cuda::CUDACachingAllocator
{
TORCHSIM_API std::atomic<CUDAAllocator *> allocator{nullptr};
}

namespace
{

using namespace c10::cuda::CUDACachingAllocator;
using TE = TraceEntry;
using PoolId = decltype(SegmentInfo::owner_private_pool_id); // c10's or c10::cuda's

constexpr size_t kMinBlock = 512, kSmallSize = 1 << 20, kSmallBuffer = 2 << 20,
		 kLargeBuffer = 20 << 20, kMinLargeAlloc = 10 << 20, kRoundLarge = 2 << 20;

size_t
round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

struct Block {
	size_t size = 0, requested = 0;
	bool allocated = false, pending = false;
};

struct Segment {
	size_t size = 0;
	bool large = false;
	std::map<uintptr_t, Block> blocks;
};

class SimAllocator final : public CUDAAllocator
{
      public:
	std::recursive_mutex mu;
	bool inited = false;
	std::string backend = "native";
	std::string metadata;
	uintptr_t last_alloc = 0; // the newest allocation, which ANNOTATE (2.14 on) annotates
	std::vector<AllocatorTraceTracker> trackers;
	std::map<uintptr_t, Segment> segments;
	std::map<uintptr_t, size_t> async_sizes; // the cudaMallocAsync backend's live allocations
	size_t allocated_bytes = 0, reserved_bytes = 0;

	bool async() const
	{
		return backend == "cudaMallocAsync";
	}

	bool initialized() override
	{
		return inited;
	}
	std::string name() override
	{
		return backend;
	}

	void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) override
	{
		if (backend != "native")
			throw std::runtime_error(
			    backend + " does not yet support attachAllocatorTraceTracker");
		std::lock_guard<std::recursive_mutex> g(mu);
		trackers.push_back(std::move(tracker));
	}

	void record(TE::Action a, size_t addr, size_t size)
	{
		if (trackers.empty())
			return;
#if TORCHSIM_TRACE_METADATA
		TE te(a, 0, addr, size, nullptr, {0, 0}, 0, nullptr, "N/A", metadata);
#elif TORCHSIM_TRACE_MEMPOOL
		TE te(a, 0, addr, size, nullptr, {0, 0}, 0, nullptr, "N/A");
#else
		TE te(a, 0, addr, size, nullptr, 0, nullptr);
#endif
		for (const auto &t : trackers)
			t(te);
	}

#if TORCHSIM_TRACE_METADATA
	SnapshotInfo snapshot(PoolId, bool) override
	{
		return take_snapshot();
	}
#elif TORCHSIM_TRACE_MEMPOOL
	SnapshotInfo snapshot(PoolId) override
	{
		return take_snapshot();
	}
#else
	SnapshotInfo snapshot() override
	{
		return take_snapshot();
	}
#endif

	SnapshotInfo take_snapshot()
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		SnapshotInfo info;
		size_t active = 0;
		for (const auto &[addr, seg] : segments) {
			SegmentInfo si;
			si.device = 0;
			si.address = addr;
			si.total_size = seg.size;
			si.is_large = seg.large;
			for (const auto &[baddr, b] : seg.blocks) {
				BlockInfo bi;
				bi.size = b.size;
				bi.requested_size = b.requested;
				bi.allocated = b.allocated && !b.pending;
				bi.active = b.allocated;
				if (b.allocated)
					active += b.size;
				si.blocks.push_back(bi);
			}
			info.segments.push_back(si);
		}
		record(TE::SNAPSHOT, 0, active);
		return info;
	}

	void *malloc(size_t request)
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		if (async())
			return malloc_async(request);
		size_t size = request < kMinBlock ? kMinBlock : round_up(request, kMinBlock);
		bool large = size > kSmallSize;
		uintptr_t at = find(size, large);
		if (!at) {
			size_t seg_size = !large		  ? kSmallBuffer
					  : size < kMinLargeAlloc ? kLargeBuffer
								  : round_up(size, kRoundLarge);
			void *p = nullptr;
			if (cudaMalloc(&p, seg_size) != cudaSuccess) {
				release_cached();
				if (cudaMalloc(&p, seg_size) != cudaSuccess) {
					size_t free_b = 0, total_b = 0;
					cudaMemGetInfo(&free_b, &total_b);
					record(TE::OOM, free_b, request);
					return nullptr;
				}
			}
			uintptr_t a = reinterpret_cast<uintptr_t>(p);
			Segment &s = segments[a];
			s.size = seg_size;
			s.large = large;
			s.blocks[a] = Block{seg_size, 0, false, false};
			reserved_bytes += seg_size;
			record(TE::SEGMENT_ALLOC, a, seg_size);
			at = a;
		}
		Segment &s = segment_of(at);
		Block &b = s.blocks[at];
		size_t remaining = b.size - size;
		if (remaining >= (large ? kSmallSize + 1 : kMinBlock)) {
			s.blocks[at + size] = Block{remaining, 0, false, false};
			b.size = size;
		}
		b.allocated = true;
		b.requested = request;
		last_alloc = at;
		allocated_bytes += b.size;
		record(TE::ALLOC, at, request);
		return reinterpret_cast<void *>(at);
	}

	// The cudaMallocAsync backend: one stream-ordered allocation per tensor, no cache.
	void *malloc_async(size_t request)
	{
		void *p = nullptr;
		(void)cudaGetLastError(); /* as torch: no error left from before */
		if (cudaMallocAsync(&p, request, nullptr) != cudaSuccess) {
			(void)cudaGetLastError(); /* the OOM is the caller's exception */
			return nullptr;
		}
		async_sizes[reinterpret_cast<uintptr_t>(p)] = request;
		allocated_bytes += request;
		reserved_bytes += request; /* the double's pool holds what is live */
		return p;
	}

	void free_async(uintptr_t a)
	{
		auto it = async_sizes.find(a);
		if (it == async_sizes.end())
			throw std::runtime_error("torchsim: not an address of the async backend");
		cudaFreeAsync(reinterpret_cast<void *>(a), nullptr);
		allocated_bytes -= it->second;
		reserved_bytes -= it->second;
		async_sizes.erase(it);
	}

	void free(void *ptr, bool wait_for_stream)
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		if (async()) {
			free_async(reinterpret_cast<uintptr_t>(ptr));
			return;
		}
		uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
		Segment &s = segment_of(a);
		Block &b = s.blocks.at(a);
		record(TE::FREE_REQUESTED, a, b.requested);
		if (a == last_alloc)
			last_alloc = 0;
		allocated_bytes -=
		    b.size; /* as torch's stats: allocated until the free is requested */
		if (wait_for_stream) {
			b.pending = true;
			return;
		}
		complete(s, a);
	}

	void process_events()
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		for (auto &[saddr, s] : segments)
			for (bool again = true; again;) {
				again = false;
				for (auto &[a, b] : s.blocks)
					if (b.pending) {
						complete(s, a);
						again = true;
						break;
					}
			}
	}

	void release_cached()
	{
		std::lock_guard<std::recursive_mutex> g(mu);
		if (async()) {
			cudaMemPool_t pool = nullptr;
			cudaDeviceSynchronize();
			if (cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess)
				cudaMemPoolTrimTo(pool, 0);
			return;
		}
		for (auto it = segments.begin(); it != segments.end();) {
			const Segment &s = it->second;
			if (s.blocks.size() == 1 && !s.blocks.begin()->second.allocated) {
				record(TE::SEGMENT_FREE, it->first, s.size);
				cudaFree(reinterpret_cast<void *>(it->first));
				reserved_bytes -= s.size;
				it = segments.erase(it);
			} else {
				++it;
			}
		}
	}

      private:
	uintptr_t find(size_t size, bool large)
	{
		uintptr_t best = 0;
		size_t best_size = 0;
		for (const auto &[saddr, s] : segments) {
			if (s.large != large)
				continue;
			for (const auto &[a, b] : s.blocks)
				if (!b.allocated && b.size >= size &&
				    (!best || b.size < best_size)) {
					best = a;
					best_size = b.size;
				}
		}
		return best;
	}

	Segment &segment_of(uintptr_t a)
	{
		auto it = segments.upper_bound(a);
		if (it == segments.begin())
			throw std::runtime_error("torchsim: not an address of the cache");
		return (--it)->second;
	}

	void complete(Segment &s, uintptr_t a)
	{
		Block &b = s.blocks.at(a);
		b.allocated = b.pending = false;
		b.requested = 0;
		record(TE::FREE_COMPLETED, a, b.size);
		auto it = s.blocks.find(a);
		auto next = std::next(it);
		if (next != s.blocks.end() && !next->second.allocated) {
			it->second.size += next->second.size;
			s.blocks.erase(next);
		}
		if (it != s.blocks.begin()) {
			auto prev = std::prev(it);
			if (!prev->second.allocated) {
				prev->second.size += it->second.size;
				s.blocks.erase(it);
			}
		}
	}
};

SimAllocator sim;

} // namespace

// --- cuBLAS's workspace, as torch makes it -----------------------------------------------------
// torch's handle pool gives each cuBLAS handle a workspace from the caching allocator at the
// handle's first use (a matmul) and keeps it for the handle's life: a tensor-level block that
// lives to the end of the process although no program object holds it. The function's name is
// torch's, so that the allocation's native stack is what the category rules see on a GPU
// (report/categories.c: "workspace native *getCurrentCUDABlasHandle*").
namespace at
{
namespace cuda
{
TORCHSIM_API __attribute__((noinline)) void *
getCurrentCUDABlasHandle()
{
	static void *workspace;
	if (!workspace)
		workspace = sim.malloc(4u << 20);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
	return workspace;
}
} // namespace cuda
} // namespace at

// --- the C face the fake torch package (python/torch) calls through ctypes ---------------------

extern "C" {

TORCHSIM_API int
torchsim_init(const char *backend)
{
	std::lock_guard<std::recursive_mutex> g(sim.mu);
	if (backend && *backend)
		sim.backend = backend;
	sim.inited = true;
	allocator.store(&sim);
	return 0;
}

TORCHSIM_API void *
torchsim_malloc(size_t bytes)
{
	return sim.malloc(bytes);
}

TORCHSIM_API void
torchsim_free(void *ptr, int wait_for_stream)
{
	sim.free(ptr, wait_for_stream != 0);
}

TORCHSIM_API void *
torchsim_blas_handle(void)
{
	return at::cuda::getCurrentCUDABlasHandle();
}

TORCHSIM_API void
torchsim_process_events(void)
{
	sim.process_events();
}

TORCHSIM_API void
torchsim_empty_cache(void)
{
	sim.release_cached();
}

TORCHSIM_API unsigned long long
torchsim_allocated(void)
{
	std::lock_guard<std::recursive_mutex> g(sim.mu);
	return sim.allocated_bytes;
}

TORCHSIM_API unsigned long long
torchsim_reserved(void)
{
	std::lock_guard<std::recursive_mutex> g(sim.mu);
	return sim.reserved_bytes;
}

TORCHSIM_API void
torchsim_set_metadata(const char *md)
{
	std::lock_guard<std::recursive_mutex> g(sim.mu);
	sim.metadata = md ? md : "";
#if TORCHSIM_TRACE_ANNOTATE
	// 2.14 on: the metadata is also attached afterwards to the newest allocation (an entry that
	// is no block event: the bridge must leave it out)
	if (!sim.metadata.empty() && sim.last_alloc)
		sim.record(TE::ANNOTATE, sim.last_alloc, 0);
#endif
}

// memory_snapshot() for the fake torch: "ADDR SIZE LARGE;BLOCKSIZE:ALLOCATED,..." per segment,
// one per line (the Python side turns it into torch's list of dicts).
TORCHSIM_API size_t
torchsim_snapshot(char *out, size_t len)
{
	std::string s;
	auto info = sim.take_snapshot();
	for (const auto &seg : info.segments) {
		s += std::to_string(seg.address) + " " + std::to_string(seg.total_size) + " " +
		     (seg.is_large ? "1" : "0");
		for (const auto &b : seg.blocks)
			s += " " + std::to_string(b.size) + ":" + std::to_string(b.requested_size) +
			     ":" + (b.allocated ? "1" : "0");
		s += "\n";
	}
	if (out && len) {
		std::snprintf(out, len, "%s", s.c_str());
	}
	return s.size();
}

} // extern "C"
