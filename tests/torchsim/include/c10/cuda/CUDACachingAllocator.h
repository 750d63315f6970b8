// A TEST DOUBLE of PyTorch's c10/cuda/CUDACachingAllocator.h (the names and call shapes of the
// torch versions in docs/torch-versions.md, none of its code); the version it plays is
// c10/core/CachingDeviceAllocator.h's. The real header includes the CUDA runtime's headers too:
// so does this one, so that the bridge's build needs what a user's machine needs.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#if defined(__GNUC__)
#	define TORCHSIM_API __attribute__((visibility("default")))
#else
#	define TORCHSIM_API
#endif

namespace c10::cuda::CUDACachingAllocator
{

#if TORCHSIM_TRACE_IN_CORE

using c10::CachingDeviceAllocator::AllocatorTraceTracker;
using c10::CachingDeviceAllocator::BlockInfo;
using c10::CachingDeviceAllocator::SegmentInfo;
using c10::CachingDeviceAllocator::TraceEntry;

#else // up to 2.8: the allocator's own structs, CUDA's stream type

using c10::CachingDeviceAllocator::DeviceStats;

struct BlockInfo {
	size_t size = 0;
	size_t requested_size = 0;
	int32_t gc_counter = 0;
	bool allocated = false;
	bool active = false;
	std::shared_ptr<GatheredContext> context_when_allocated;
};

struct SegmentInfo {
	c10::DeviceIndex device = 0;
	size_t address = 0;
	size_t total_size = 0;
	size_t requested_size = 0;
	size_t allocated_size = 0;
	size_t active_size = 0;
	cudaStream_t stream = nullptr;
	bool is_large = false;
	bool is_expandable = false;
	MempoolId_t owner_private_pool_id = {0, 0};
	std::vector<BlockInfo> blocks;
	std::shared_ptr<GatheredContext> context_when_allocated;
};

struct TraceEntry {
	enum Action {
		ALLOC,
		FREE_REQUESTED,
		FREE_COMPLETED,
		SEGMENT_ALLOC,
		SEGMENT_FREE,
		SEGMENT_MAP,
		SEGMENT_UNMAP,
		SNAPSHOT,
		OOM
	};
#	if TORCHSIM_TRACE_MEMPOOL
	TraceEntry(Action action,
		   c10::DeviceIndex device,
		   size_t addr,
		   size_t size,
		   cudaStream_t stream,
		   MempoolId_t mempool,
		   uint64_t time,
		   std::shared_ptr<GatheredContext> context = nullptr,
		   std::string compile_context = "")
	    : action_(action), device_(device), addr_(addr), context_(std::move(context)),
	      stream_(stream), size_(size), mempool_(std::move(mempool)), time_(time),
	      compile_context_(std::move(compile_context))
	{
	}
#	else
	TraceEntry(Action action,
		   c10::DeviceIndex device,
		   size_t addr,
		   size_t size,
		   cudaStream_t stream,
		   uint64_t time,
		   std::shared_ptr<GatheredContext> context = nullptr)
	    : action_(action), device_(device), addr_(addr), context_(std::move(context)),
	      stream_(stream), size_(size), time_(time)
	{
	}
#	endif
	Action action_;
	c10::DeviceIndex device_;
	size_t addr_;
	std::shared_ptr<GatheredContext> context_;
	cudaStream_t stream_{};
	size_t size_;
#	if TORCHSIM_TRACE_MEMPOOL
	MempoolId_t mempool_;
#	endif
	uint64_t time_;
#	if TORCHSIM_TRACE_MEMPOOL
	std::string compile_context_{};
#	endif
};

using AllocatorTraceTracker = std::function<void(const TraceEntry &)>;

#endif // TORCHSIM_TRACE_IN_CORE

struct SnapshotInfo {
	std::vector<SegmentInfo> segments;
	std::vector<std::vector<TraceEntry>> device_traces;
};

class TORCHSIM_API CUDAAllocator
{
      public:
	virtual ~CUDAAllocator() = default;
	virtual bool initialized() = 0;
	virtual std::string name() = 0;
#if TORCHSIM_TRACE_METADATA
	virtual SnapshotInfo snapshot(MempoolId_t mempool_id = {0, 0},
				      bool include_traces = true) = 0;
#elif TORCHSIM_TRACE_MEMPOOL
	virtual SnapshotInfo snapshot(MempoolId_t mempool_id = {0, 0}) = 0;
#else
	virtual SnapshotInfo snapshot() = 0;
#endif
	virtual void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) = 0;
};

TORCHSIM_API extern std::atomic<CUDAAllocator *> allocator;

inline CUDAAllocator *
get()
{
	return allocator.load();
}

inline void
attachAllocatorTraceTracker(AllocatorTraceTracker tracker)
{
	get()->attachAllocatorTraceTracker(std::move(tracker));
}

} // namespace c10::cuda::CUDACachingAllocator
