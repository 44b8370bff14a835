"""JAX and Flax NNX counterparts of the spec's Cases rows (tests/jaxbackend only; needs jax and flax)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx


def loop(x):
    for _ in range(3):
        x = jnp.tanh(x) * 0.5
    return x


def unrolled(x):
    x = jnp.tanh(x) * 0.5
    x = jnp.tanh(x) * 0.5
    return x


def nested_one_line(x):
    return jnp.tanh(jnp.tanh(jnp.tanh(x)))


def two_on_one_line(x):
    return jnp.sin(x) + jnp.sin(x)


def two_on_one_line_in_loop(x):
    for _ in range(3):
        x = jnp.sin(x) + jnp.sin(x)
    return x


def helper(x):
    return jnp.exp(x)


def helper_two_lines(x):
    a = helper(x)
    b = helper(a)
    return b


def helper_in_loop(x):
    for _ in range(3):
        x = helper(x)
    return x


def helper_two_loops(x):
    for _ in range(2):
        x = helper(x)
    for _ in range(3):
        x = helper(x)
    return x


def depth(x, n):
    if n == 0:
        return x
    return depth(jnp.cos(x), n - 1)


def recursion(x):
    return depth(x, 3)


def recursion_two_places(x):
    a = depth(x, 2)
    b = depth(a, 2)
    return b


def comprehension(x):
    return [jnp.exp(c) for c in (x, x + 1.0, x + 2.0)]


def nested_loops(x):
    for _ in range(2):
        x = jnp.cos(x)
        for _ in range(3):
            x = jnp.sin(x)
    return x


def matmul_twice(x, w):
    a = x @ w
    b = a @ w
    return b


jitted_helper = jax.jit(helper)


def jit_two_lines(x):
    a = jitted_helper(x)
    b = jitted_helper(a)
    return b


def jit_in_loop(x):
    for _ in range(3):
        x = jitted_helper(x)
    return x


def scan_in_loop(x):
    for _ in range(2):
        x = jax.lax.scan(lambda c, _: (jnp.sin(c), None), x, None, length=4)[0]
    return x


class Block(nnx.Module):
    def __init__(self, d: int, rngs: nnx.Rngs) -> None:
        self.lin = nnx.Linear(d, d, rngs=rngs)

    def __call__(self, x):
        x = x + jnp.tanh(self.lin(x))
        return x + 1.0


class BlockInLoop(nnx.Module):
    """One submodule called 3 times from a loop line."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.block = Block(4, rngs)

    def __call__(self, x):
        for _ in range(3):
            x = self.block(x)
        return x


class BlockThreeLines(nnx.Module):
    """One submodule instance called from 3 different lines."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.block = Block(4, rngs)

    def __call__(self, x):
        x = self.block(x)
        x = self.block(x)
        x = self.block(x)
        return x


class Stack(nnx.Module):
    """A list of distinct but identical blocks (a decoder's layers)."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.blocks = nnx.List([Block(4, rngs) for _ in range(3)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.fc1 = nnx.Linear(4, 8, rngs=rngs)
        self.fc2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.fc2(jax.nn.relu(self.fc1(x)))


class TransformerBlock(nnx.Module):
    """Pre-norm self-attention and MLP with two residual adds."""

    def __init__(self, d: int, heads: int, rngs: nnx.Rngs) -> None:
        self.norm1 = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(d, rngs=rngs)
        self.up = nnx.Linear(d, 2 * d, rngs=rngs)
        self.down = nnx.Linear(2 * d, d, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.down(jax.nn.gelu(self.up(self.norm2(x))))
        return x


def dict_output(x):
    return {"a": jnp.sin(x), "pair": (jnp.cos(x), [jnp.exp(x)])}


def mapped(x):
    return list(map(jnp.sin, (x, x + 1.0, x + 2.0)))


class Parent(nnx.Module):
    def __init__(self, shared: Block) -> None:
        self.shared = shared

    def __call__(self, x):
        return self.shared(x)


class SharedByTwoParents(nnx.Module):
    """One module instance reached through two parents."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        shared = Block(4, rngs)
        self.left = Parent(shared)
        self.right = Parent(shared)

    def __call__(self, x):
        return self.right(self.left(x))


class Siamese(nnx.Module):
    """One encoder on two inputs."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.encoder = Block(4, rngs)

    def __call__(self, a, b):
        return self.encoder(a) - self.encoder(b)


def while_in_function(x):
    return jax.lax.while_loop(lambda c: c[1] < 3, lambda c: (jnp.sin(c[0]), c[1] + 1), (x, 0))[0]


def cond_in_loop(x):
    for k in range(2):
        x = jax.lax.cond(k == 0, jnp.sin, jnp.cos, x)
    return x


@jax.custom_vjp
def clipped(x):
    return jnp.tanh(x)


clipped.defvjp(lambda x: (jnp.tanh(x), x), lambda x, g: (g,))


def custom_vjp_two_lines(x):
    a = clipped(x)
    b = clipped(a)
    return b


def checkpoint_in_loop(x):
    for _ in range(3):
        x = jax.checkpoint(lambda t: jnp.cos(t) * 2.0)(x)
    return x


class CallsFromAThread(nnx.Module):
    """Its forward has another thread call its own block eagerly (that call is not the trace's)."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.block = Block(4, rngs)
        self.seen: list = []

    def __call__(self, x):
        import threading

        import numpy as np

        worker = threading.Thread(target=lambda: self.seen.append(self.block(jnp.asarray(np.ones((1, 4), np.float32)))))
        worker.start()
        worker.join()
        return self.block(x)
