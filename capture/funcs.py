"""What a torch callable is to the capture: an op, torch's own Python, or a metadata query.

The torch function mode hands us every torch function, Tensor method, operator and
property getter. :func:`classify` decides, once per callable, how each is treated:

* :data:`OP`: recorded when it returns tensors (``torch.tanh``, ``Tensor.add``, C
  ``linear``, and Tensor methods written in Python such as ``Tensor.__rsub__``).
* :data:`TRANSPARENT`: a torch function written in Python outside ``torch._tensor``
  (``torch.nn.functional.softmax``, ``multi_head_attention_forward``,
  ``torch.functional.split``). It is not an op itself: it runs with the mode active, so the
  torch calls inside it are ops, each with its own call site, and its frames are part of
  the chain.
* :data:`QUERY`: metadata (``.shape``, ``.data``, ``.grad``): never an op.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple


class FuncKind(Enum):
    """How the capture treats a torch callable (see the module docstring)."""

    OP = "op"
    TRANSPARENT = "transparent"
    QUERY = "query"


#: The members as module constants (a module attribute is a cheaper lookup than a member).
OP, TRANSPARENT, QUERY = FuncKind.OP, FuncKind.TRANSPARENT, FuncKind.QUERY

#: Property getters that compute a new tensor and so are ops.
VIEW_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
#: Reflected operators that torch implements in C and reports under the forward name
#: (``0 + t`` reaches the mode as ``add``): the capture names them as this says.
#: The names under which torch's modules read the torch-function check; the capture makes the
#: next one say no in a module whose function it re-enters (one read as an attribute it cannot).
CHECK_NAMES = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")
REFLECTED = {"__radd__": "radd", "__rmul__": "rmul", "__rand__": "rand", "__ror__": "ror", "__rxor__": "rxor"}
#: torch.func transforms recorded as single boundary ops: (module, attribute, op name).
TRANSFORMS = (
    ("torch._functorch.apis", "vmap_impl", "vmap"),
    ("torch._functorch.eager_transforms", "grad_impl", "grad"),
    ("torch._functorch.eager_transforms", "grad_and_value_impl", "grad_and_value"),
)
#: Higher-order ops, which compile their function arguments with Dynamo, recorded as single
#: boundary ops run with the capture's mode off the stack: (module, attribute, op name).
HIGHER_ORDER = (
    ("torch", "cond", "cond"),
    ("torch", "while_loop", "while_loop"),
    ("torch._higher_order_ops", "cond", "cond"),
    ("torch._higher_order_ops", "while_loop", "while_loop"),
    ("torch._higher_order_ops", "scan", "scan"),
    ("torch._higher_order_ops", "associative_scan", "associative_scan"),
    ("torch._higher_order_ops", "map", "map"),
)


class FuncInfo(NamedTuple):
    """How the capture treats one torch callable."""

    kind: FuncKind
    #: The op name users read: dunders normalised (``__getitem__`` -> ``getitem``).
    name: str
    #: Whether the op writes into its first argument (``add_``, ``__setitem__``).
    inplace: bool


def op_name(raw: str) -> str:
    """Normalise a torch callable's name: ``__add__`` -> ``add``, ``__rsub__`` -> ``rsub``."""
    if raw.startswith("__") and raw.endswith("__") and len(raw) > 4:
        return raw[2:-2]
    return raw


#: In-place operator dunders torch hands the mode under their own name (``x |= m`` is
#: ``__ior__``; ``x += 1`` is handed as ``add_``), normalised.
_INPLACE_DUNDERS = frozenset({"iadd", "isub", "imul", "idiv", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
                              "iand", "ior", "ixor", "ilshift", "irshift"})


def is_inplace(name: str) -> bool:
    """Whether an op of this (normalised) name writes into its first argument."""
    return name.endswith("_") and not name.startswith("_") or name == "setitem" or name in _INPLACE_DUNDERS


#: Ops that draw from torch's random state: a partial replay still runs them all, in capture
#: order, so each draws the numbers it drew during the capture.
RANDOM = frozenset({
    "dropout", "dropout_", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout",
    "fused_dropout", "bernoulli", "bernoulli_", "rand", "randn", "randint", "rand_like", "randn_like",
    "randint_like", "randperm", "normal", "normal_", "uniform_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "random_", "multinomial", "poisson", "rrelu", "rrelu_", "scaled_dot_product_attention",
})

#: Ops whose output is uninitialised memory: what a replay gives is not what the capture saw.
UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"})


def classify(func: Any) -> FuncInfo:
    """Classify ``func`` as handed to ``__torch_function__`` (uncached: call through a cache)."""
    if type(func).__name__ == "method-wrapper" and func.__name__ == "__get__":
        prop = getattr(func.__self__, "__name__", "")
        return FuncInfo(OP if prop in VIEW_PROPERTIES else QUERY, prop, False)
    raw = getattr(func, "__name__", None) or type(func).__name__
    name = op_name(raw)
    inplace = is_inplace(name)
    code = getattr(func, "__code__", None)
    module = getattr(func, "__module__", None) or ""
    if code is not None and module.startswith("torch") and module != "torch._tensor":
        return FuncInfo(TRANSPARENT, name, False)
    return FuncInfo(OP, name, inplace)
