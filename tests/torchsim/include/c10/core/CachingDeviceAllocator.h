// A TEST DOUBLE of PyTorch's c10/core/CachingDeviceAllocator.h (torch 2.11's names and call shapes,
// none of its code): what gpumemtrace's bridge (python/gpumemtrace/torch_bridge.cpp) touches, so
// that CI, which has no torch, compiles the bridge the way a user's machine does and drives it
// through tests/torchsim/c10_cuda.cpp. Written for gpumemtrace's tests; see
// tests/torchsim/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace c10
{

using DeviceIndex = int8_t;
using CaptureId_t = unsigned long long;
using MempoolId_t = std::pair<CaptureId_t, CaptureId_t>;

struct GatheredContext {
	virtual ~GatheredContext() = default;
};

namespace CachingDeviceAllocator
{

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
		OOM
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

} // namespace CachingDeviceAllocator
} // namespace c10
