"""JAX with its default allocator (XLA's BFC, preallocating 75% of the device): jitted matmuls and a
gradient."""
import jax
import jax.numpy as jnp

from common import report


@jax.jit
def step(w, x):
    return jnp.tanh(x @ w).sum()


key = jax.random.PRNGKey(0)
w = jax.random.normal(key, (2048, 2048), dtype=jnp.float32) / 64
x = jax.random.normal(key, (1024, 2048), dtype=jnp.float32)
grad = jax.jit(jax.grad(step))
for i in range(10):
    w = w - 1e-3 * grad(w, x)
val = float(step(w, x).block_until_ready())
report("jax", value=val, devices=[str(d) for d in jax.devices()])
