// A TEST DOUBLE of PyTorch's c10/core/CachingDeviceAllocator.h (the names and call shapes of the
// torch versions in docs/torch-versions.md, none of its code): what gpumemtrace's bridge
// (python/gpumemtrace/torch_bridge.cpp) touches, so that CI, which has no torch, compiles the
// bridge the way a user's machine does and drives it through tests/torchsim/c10_cuda.cpp.
// Which version it plays is torchsim/version.h's (TORCH_VERSION_MAJOR/MINOR, as torch's
// version.h names them), written by the test for each version: up to 2.8 the allocator's
// TraceEntry, SegmentInfo and BlockInfo live in c10/cuda/CUDACachingAllocator.h, from 2.11 here.
// Written for gpumemtrace's tests; see tests/torchsim/run_torchsim.py.
#pragma once

#ifndef TORCH_VERSION_MINOR
#	include <torchsim/version.h>
#endif

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// the version this double plays is at least MAJOR.MINOR
#define TORCHSIM_AT_LEAST(major, minor)                                                            \
	(TORCH_VERSION_MAJOR > (major) ||                                                          \
	 (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// The interface differences the double plays (docs/torch-versions.md has the table):
// TraceEntry and its structs in c10::CachingDeviceAllocator, streams as void* (2.11 on)
#define TORCHSIM_TRACE_IN_CORE TORCHSIM_AT_LEAST(2, 11)
// TraceEntry::mempool_ and compile_context_; snapshot(mempool_id) (2.8 on)
#define TORCHSIM_TRACE_MEMPOOL TORCHSIM_AT_LEAST(2, 8)
// TraceEntry::user_metadata_; snapshot(mempool_id, include_traces) (2.11 on)
#define TORCHSIM_TRACE_METADATA TORCHSIM_AT_LEAST(2, 11)
// TraceEntry::ANNOTATE: metadata attached afterwards to a live allocation; headers that need
// C++20 (c10's intrusive_ptr declares operator<=>) (2.14 on)
#define TORCHSIM_TRACE_ANNOTATE TORCHSIM_AT_LEAST(2, 14)

#if TORCHSIM_TRACE_ANNOTATE
#	include <compare>
#endif

namespace c10
{

using DeviceIndex = int8_t;
using CaptureId_t = unsigned long long;
#if TORCHSIM_TRACE_IN_CORE
using MempoolId_t = std::pair<CaptureId_t, CaptureId_t>;
#else
namespace cuda
{
// up to 2.8 a pool's id is c10::cuda's (c10/cuda/CUDAGraphsC10Utils.h), not c10's
using MempoolId_t = std::pair<CaptureId_t, CaptureId_t>;
} // namespace cuda
#endif

struct GatheredContext {
	virtual ~GatheredContext() = default;
};

#if TORCHSIM_TRACE_ANNOTATE
// the shape of what makes 2.14's headers C++20-only
inline std::strong_ordering
torchsim_order(const void *a, const void *b)
{
	return a <=> b;
}
#endif

namespace CachingDeviceAllocator
{

// in every version (2.6's header holds only the statistics)
struct DeviceStats {
	int64_t num_alloc_retries = 0;
	int64_t num_ooms = 0;
};

#if TORCHSIM_TRACE_IN_CORE

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
	int32_t registration_counter = -1;
	size_t address = 0;
	size_t total_size = 0;
	size_t requested_size = 0;
	size_t allocated_size = 0;
	size_t active_size = 0;
	void *stream = nullptr;
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
		OOM,
#	if TORCHSIM_TRACE_ANNOTATE
		ANNOTATE,
#	endif
	};
	TraceEntry(Action action,
		   c10::DeviceIndex device,
		   size_t addr,
		   size_t size,
		   void *stream,
		   MempoolId_t mempool,
		   uint64_t time,
		   std::shared_ptr<GatheredContext> context = nullptr,
		   std::string compile_context = "",
		   std::string user_metadata = "")
	    : action_(action), device_(device), addr_(addr), context_(std::move(context)),
	      stream_(stream), size_(size), mempool_(std::move(mempool)), time_(time),
	      compile_context_(std::move(compile_context)), user_metadata_(std::move(user_metadata))
	{
	}
	Action action_;
	c10::DeviceIndex device_;
	size_t addr_;
	std::shared_ptr<GatheredContext> context_;
	void *stream_{};
	size_t size_;
	MempoolId_t mempool_;
	uint64_t time_;
	std::string compile_context_;
	std::string user_metadata_;
};

using AllocatorTraceTracker = std::function<void(const TraceEntry &)>;

#endif // TORCHSIM_TRACE_IN_CORE

} // namespace CachingDeviceAllocator
} // namespace c10
