/*
 * A stand-in for CuPy's cupy/cuda/memory extension module, for tests/analysis (case "caches"):
 * functions named as Cython names those of memory.pyx, each calling the next as the pool does
 * (MemoryPool.malloc -> SingleDeviceMemoryPool._malloc -> _try_malloc -> the module's _malloc ->
 * Memory.__init__ -> runtime.malloc), so the return addresses of a trace's stack symbolize to
 * them. The names are Cython's (reserved identifiers in C, on purpose).
 */
void fake_cuda_malloc(void);
void __pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(void);
void __pyx_f_4cupy_4cuda_6memory__malloc(void);
void __pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__try_malloc(void);
void __pyx_pw_4cupy_4cuda_6memory_10MemoryPool_5malloc(void);
void __pyx_pw_4cupy_4cuda_6memory_3alloc(void);

__attribute__((noinline)) void
fake_cuda_malloc(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Memory.__init__: what allocates with or without the pool */
__attribute__((noinline)) void
__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(void)
{
	fake_cuda_malloc();
	__asm__ volatile("" ::: "memory");
}

/* the module-level _malloc: the allocator without a pool (cupy.cuda.set_allocator(None)) */
__attribute__((noinline)) void
__pyx_f_4cupy_4cuda_6memory__malloc(void)
{
	__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__try_malloc(void)
{
	__pyx_f_4cupy_4cuda_6memory__malloc();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
__pyx_pw_4cupy_4cuda_6memory_10MemoryPool_5malloc(void)
{
	__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__try_malloc();
	__asm__ volatile("" ::: "memory");
}

/* cupy.cuda.memory.alloc() without a pool: _malloc straight from the module's entry point */
__attribute__((noinline)) void
__pyx_pw_4cupy_4cuda_6memory_3alloc(void)
{
	__pyx_f_4cupy_4cuda_6memory__malloc();
	__asm__ volatile("" ::: "memory");
}
