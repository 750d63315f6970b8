/*
 * A stand-in for JAX's CUDA plugin (jax_plugins/xla_cuda12/xla_cuda_plugin.so), for
 * tests/analysis (case "caches"): functions with the mangled names of XLA's allocators, so the
 * return addresses of a trace's stack demangle to them. tsl::BFCAllocator (JAX's default, which
 * preallocates) over stream_executor's driver allocation; and the `platform` allocator
 * (stream_executor::StreamExecutorMemoryAllocator), which caches nothing.
 */
void fake_cu_mem_alloc(void);
void _ZN15stream_executor3gpu9GpuDriver14DeviceAllocateEm(void);
void _ZN3tsl12BFCAllocator11AllocateRawEmm(void);
void _ZN15stream_executor29StreamExecutorMemoryAllocator8AllocateEim(void);

__attribute__((noinline)) void
fake_cu_mem_alloc(void)
{
	__asm__ volatile("" ::: "memory");
}

/* stream_executor::gpu::GpuDriver::DeviceAllocate(unsigned long) */
__attribute__((noinline)) void
_ZN15stream_executor3gpu9GpuDriver14DeviceAllocateEm(void)
{
	fake_cu_mem_alloc();
	__asm__ volatile("" ::: "memory");
}

/* tsl::BFCAllocator::AllocateRaw(unsigned long, unsigned long) */
__attribute__((noinline)) void
_ZN3tsl12BFCAllocator11AllocateRawEmm(void)
{
	_ZN15stream_executor3gpu9GpuDriver14DeviceAllocateEm();
	__asm__ volatile("" ::: "memory");
}

/* stream_executor::StreamExecutorMemoryAllocator::Allocate(int, unsigned long) */
__attribute__((noinline)) void
_ZN15stream_executor29StreamExecutorMemoryAllocator8AllocateEim(void)
{
	_ZN15stream_executor3gpu9GpuDriver14DeviceAllocateEm();
	__asm__ volatile("" ::: "memory");
}
