"""Which calls are JAX computations (imports jax: only used once the user's process has)."""

from __future__ import annotations

import sys
from typing import Any

import jax
from jax.extend.core import ClosedJaxpr


def claims(model: Any, inputs: tuple, kwargs: dict) -> bool:
    """Whether ``model(*inputs, **kwargs)`` is a JAX computation: ``model`` is a Flax NNX module
    or a ``ClosedJaxpr``, or a callable given at least one JAX array."""
    if isinstance(model, ClosedJaxpr) or is_nnx_module(model):
        return True
    return callable(model) and any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves((inputs, kwargs)))


def is_nnx_module(value: Any) -> bool:
    """Whether ``value`` is a Flax NNX module (without importing Flax when the user has not)."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and isinstance(value, nnx.Module)
