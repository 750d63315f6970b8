// A TEST DOUBLE of PyTorch's c10/cuda/CUDACachingAllocator.h (torch 2.11's names and call shapes,
// none of its code); see tests/torchsim/README.md. The real header includes the CUDA runtime's
// headers too: so does this one, so that the bridge's build needs what a user's machine needs.
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

using c10::CachingDeviceAllocator::AllocatorTraceTracker;
using c10::CachingDeviceAllocator::BlockInfo;
using c10::CachingDeviceAllocator::SegmentInfo;
using c10::CachingDeviceAllocator::TraceEntry;

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
	virtual SnapshotInfo snapshot(MempoolId_t mempool_id = {0, 0},
				      bool include_traces = true) = 0;
	virtual void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) = 0;
};

TORCHSIM_API extern std::atomic<CUDAAllocator *> allocator;

inline CUDAAllocator *
get()
{
	return allocator.load();
}

inline SnapshotInfo
snapshot(MempoolId_t mempool_id = {0, 0}, bool include_traces = true)
{
	return get()->snapshot(mempool_id, include_traces);
}

inline void
attachAllocatorTraceTracker(AllocatorTraceTracker tracker)
{
	get()->attachAllocatorTraceTracker(std::move(tracker));
}

} // namespace c10::cuda::CUDACachingAllocator
