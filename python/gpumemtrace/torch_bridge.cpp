// The PyTorch bridge: attaches gpumemtrace to c10's CUDA caching allocator through its trace
// tracker (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker), so that every block the
// allocator hands out or takes back reaches the tracer's ring, with the tracer's own stack of the
// allocating thread.
//
// Built on the user's machine, against the headers of the torch it will run with (TraceEntry
// changed over versions), by gpumemtrace/_torch.py: once per torch build, cached. Loaded with
// ctypes after CUDA's lazy initialisation (before it the allocator has no devices and the
// tracker would be attached to none).
//
// Inside the tracker (the allocator's per-device recursive mutex held, sometimes the GIL too):
// no allocation, no lock, no Python, no torch call; copy the facts into a C struct and hand it
// to the tracer, which stamps it and pushes it into its lock-free ring.
#include <c10/cuda/CUDACachingAllocator.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

extern "C" {
#include "torch_entry.h"
}

namespace
{

namespace cca = c10::cuda::CUDACachingAllocator;
// Named through the CUDA allocator's namespace, which has it in every version checked
// (docs/torch-versions.md): its own struct up to 2.8, a using-declaration of
// c10::CachingDeviceAllocator's since the move to c10/core (2.11 has it there; 2.6 and 2.8 have
// that namespace too, without TraceEntry).
using TE = cca::TraceEntry;

std::atomic<gmt_torch_record_fn> record{nullptr};

// Fields TraceEntry did not always have (mempool_: not in 2.6, in 2.8; user_metadata_: not in
// 2.8, in 2.11; device_ in every version checked): detected at compile time against the headers
// at hand, never assumed. The stream is cudaStream_t up to 2.8, void* from 2.11: both pointers.
template <typename T, typename = void> struct has_device : std::false_type {
};
template <typename T>
struct has_device<T, std::void_t<decltype(std::declval<T>().device_)>> : std::true_type {
};
template <typename T, typename = void> struct has_mempool : std::false_type {
};
template <typename T>
struct has_mempool<T, std::void_t<decltype(std::declval<T>().mempool_)>> : std::true_type {
};
template <typename T, typename = void> struct has_metadata : std::false_type {
};
template <typename T>
struct has_metadata<T, std::void_t<decltype(std::declval<T>().user_metadata_)>> : std::true_type {
};

uint32_t
action_of(int a)
{
	switch (a) {
	case TE::ALLOC: return GMT_TORCH_ALLOC;
	case TE::FREE_REQUESTED: return GMT_TORCH_FREE_REQUESTED;
	case TE::FREE_COMPLETED: return GMT_TORCH_FREE_COMPLETED;
	case TE::SEGMENT_ALLOC: return GMT_TORCH_SEGMENT_ALLOC;
	case TE::SEGMENT_FREE: return GMT_TORCH_SEGMENT_FREE;
	case TE::SEGMENT_MAP: return GMT_TORCH_SEGMENT_MAP;
	case TE::SEGMENT_UNMAP: return GMT_TORCH_SEGMENT_UNMAP;
	case TE::SNAPSHOT: return GMT_TORCH_SNAPSHOT;
	case TE::OOM: return GMT_TORCH_OOM;
	// an action this bridge does not know (2.14's ANNOTATE: metadata attached afterwards to a
	// live allocation, no memory moved): not recorded
	default: return 0;
	}
}

// A template so that the fields a version lacks are left out: `if constexpr` discards a branch
// unchecked only where its expression depends on a template parameter (in a plain function
// te.mempool_ is checked, and 2.6's TraceEntry has none).
template <typename T>
void
on_trace(const T &te) noexcept
{
	gmt_torch_record_fn fn = record.load(std::memory_order_acquire);
	if (!fn)
		return;
	gmt_torch_entry e{};
	e.size = sizeof(e);
	e.abi = GMT_TORCH_ABI;
	e.action = action_of(static_cast<int>(te.action_));
	if (!e.action)
		return;
	e.addr = static_cast<uint64_t>(te.addr_);
	e.bytes = static_cast<uint64_t>(te.size_);
	e.stream = reinterpret_cast<uint64_t>(te.stream_);
	if constexpr (has_device<T>::value) {
		e.device = static_cast<int32_t>(te.device_);
		e.flags |= GMT_TORCH_F_HAS_DEVICE;
	} else {
		e.device = -1;
	}
	if constexpr (has_mempool<T>::value) {
		e.pool_id[0] = static_cast<uint64_t>(te.mempool_.first);
		e.pool_id[1] = static_cast<uint64_t>(te.mempool_.second);
		e.flags |= GMT_TORCH_F_HAS_POOL;
	}
	if constexpr (has_metadata<T>::value) {
		e.meta = te.user_metadata_.data();
		e.meta_len = static_cast<uint32_t>(te.user_metadata_.size());
	}
	fn(&e); // (no count of entries here: a locked add per block event, read by nobody)
}

void
set_error(char *err, size_t len, const char *what)
{
	if (err && len) {
		std::snprintf(err, len, "%s", what);
	}
}

// A memory pool's id: c10::MempoolId_t from 2.11, c10::cuda::MempoolId_t in 2.6; named here by
// the one place every version checked has it, the segment's owner pool.
using PoolId = decltype(cca::SegmentInfo::owner_private_pool_id);

// snapshot(mempool_id, include_traces) from 2.11, snapshot(mempool_id = {0, 0}) in 2.8, snapshot()
// in 2.6: without the traces when the call allows it (they can be large when torch's own history
// is on).
template <typename A>
auto
snapshot_of(A *a, int) -> decltype(a->snapshot(PoolId{0, 0}, false))
{
	return a->snapshot(PoolId{0, 0}, false);
}
template <typename A>
auto
snapshot_of(A *a, long) -> decltype(a->snapshot())
{
	return a->snapshot();
}

template <typename S, typename = void> struct has_expandable : std::false_type {
};
template <typename S>
struct has_expandable<S, std::void_t<decltype(std::declval<S>().is_expandable)>> : std::true_type {
};

// SegmentInfo::is_expandable, where the version has it (a template, as on_trace(), so that a
// version without it compiles)
template <typename S>
bool
expandable(const S &seg)
{
	if constexpr (has_expandable<S>::value)
		return seg.is_expandable;
	return false;
}

} // namespace

extern "C" {

// The bridge's own version of the interface: the Python side refuses a bridge whose differs.
__attribute__((visibility("default"))) int
gmt_bridge_abi(void)
{
	return GMT_TORCH_ABI;
}

// Attach the tracker. @p fn: the tracer's gmt_torch_record. 0 on success; else -1 and @p err says
// why (the allocator not initialised, a backend that refuses trackers: cudaMallocAsync, a
// pluggable allocator). Call once, after CUDA's lazy initialisation.
__attribute__((visibility("default"))) int
gmt_bridge_attach(gmt_torch_record_fn fn, char *err, size_t err_len)
{
	try {
		cca::CUDAAllocator *a = cca::get();
		if (!a) {
			set_error(err, err_len, "no CUDA allocator is set in c10");
			return -1;
		}
		if (!a->initialized()) {
			set_error(err, err_len, "the CUDA allocator is not initialised yet");
			return -1;
		}
		std::string name = a->name();
		if (name != "native") {
			std::string why = "allocator backend '" + name + "' takes no trace tracker";
			set_error(err, err_len, why.c_str());
			return -1;
		}
		record.store(fn, std::memory_order_release);
		cca::attachAllocatorTraceTracker(on_trace<TE>);
		return 0;
	} catch (const std::exception &ex) {
		record.store(nullptr, std::memory_order_release);
		set_error(err, err_len, ex.what());
		return -1;
	} catch (...) {
		record.store(nullptr, std::memory_order_release);
		set_error(err, err_len, "attachAllocatorTraceTracker threw");
		return -1;
	}
}

// Backfill: one STATE_SEGMENT entry per segment that exists now, one STATE_BLOCK per block in
// it (blocks tile their segment in address order), so that memory allocated before the tracker
// was attached is known. Call right after gmt_bridge_attach, outside the allocator (the Python
// side does). Returns the number of entries, or -1 (@p err says why).
__attribute__((visibility("default"))) long
gmt_bridge_backfill(char *err, size_t err_len)
{
	gmt_torch_record_fn fn = record.load(std::memory_order_acquire);
	if (!fn) {
		set_error(err, err_len, "the bridge is not attached");
		return -1;
	}
	try {
		auto info = snapshot_of(cca::get(), 0);
		long n = 0;
		for (const auto &seg : info.segments) {
			gmt_torch_entry e{};
			e.size = sizeof(e);
			e.abi = GMT_TORCH_ABI;
			e.action = GMT_TORCH_STATE_SEGMENT;
			e.flags = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_HAS_POOL;
			if (seg.is_large)
				e.flags |= GMT_TORCH_F_LARGE;
			if (expandable(seg))
				e.flags |= GMT_TORCH_F_EXPANDABLE;
			e.device = static_cast<int32_t>(seg.device);
			e.addr = static_cast<uint64_t>(seg.address);
			e.bytes = static_cast<uint64_t>(seg.total_size);
			e.stream = reinterpret_cast<uint64_t>(seg.stream);
			e.pool_id[0] = static_cast<uint64_t>(seg.owner_private_pool_id.first);
			e.pool_id[1] = static_cast<uint64_t>(seg.owner_private_pool_id.second);
			fn(&e);
			n++;
			uint64_t addr = e.addr;
			for (const auto &blk : seg.blocks) {
				gmt_torch_entry b = e;
				b.action = GMT_TORCH_STATE_BLOCK;
				b.flags = GMT_TORCH_F_HAS_DEVICE | GMT_TORCH_F_HAS_POOL;
				if (blk.allocated)
					b.flags |= GMT_TORCH_F_ALLOCATED;
				if (blk.active)
					b.flags |= GMT_TORCH_F_ACTIVE;
				b.addr = addr;
				b.bytes = static_cast<uint64_t>(blk.size);
				b.requested =
				    blk.allocated ? static_cast<uint64_t>(blk.requested_size) : 0;
				fn(&b);
				n++;
				addr += static_cast<uint64_t>(blk.size);
			}
		}
		return n;
	} catch (const std::exception &ex) {
		set_error(err, err_len, ex.what());
		return -1;
	} catch (...) {
		set_error(err, err_len, "snapshot() threw");
		return -1;
	}
}

// Stop recording (the tracker itself stays in torch's list: trackers cannot be detached).
__attribute__((visibility("default"))) void
gmt_bridge_detach(void)
{
	record.store(nullptr, std::memory_order_release);
}

// Record again after gmt_bridge_detach, into @p fn (the tracer's gmt_torch_record): for an
// in-process comparison of the layer on and off (bench/run_torch_block_ab.py). The events in
// between are missing from the trace: its replay counts what no longer fits as inconsistent.
__attribute__((visibility("default"))) void
gmt_bridge_resume(gmt_torch_record_fn fn)
{
	record.store(fn, std::memory_order_release);
}

} // extern "C"
