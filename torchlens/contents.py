"""The exact contents of tensors a prediction makes from constants alone.

``torch.arange(n)`` of a known ``n``, and deterministic ops on such tensors, have contents the
prediction can compute for real (small CPU tensors), so that a test on them is decided as the
run will decide it: transformers' packed-sequence check (``(ids[:, -1] == 0).all()`` on
position ids made by ``arange``) chooses whether an attention mask is made at all. Kept exact
by construction:

- Only the ops of :data:`FACTORIES` (from plain arguments) and :data:`PURE` (which write into
  none of their arguments; from tensors whose contents are known) are computed, with no
  ``out=``, only where the interpreter makes the call exactly once (``once``), only when the
  fake output is on the CPU with at most :data:`MAX_ELEMENTS` elements. No random op is in
  either set (nor ``rand``, the name of ``&`` reflected: torch's ``rand`` has the same). Inputs, parameters and buffers have no known contents: the prediction holds for
  any data.
- Any other op given such a tensor may write into it (an in-place op, ``setitem``, ``out=``):
  the contents of every tensor sharing its storage are forgotten at once.
- The interpreter drops the contents of what it binds under a count other than one, joins or
  merges after a branch (:func:`~torchlens.analysis.values.without_contents`), and reads them
  only in a test it runs exactly once.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import torch

from torchlens.analysis.values import Known, Seq, Tensor, Value

__all__ = ["Contents", "known_contents", "FACTORIES", "PURE", "MAX_ELEMENTS"]

#: The most elements a tensor whose contents are kept may have.
MAX_ELEMENTS = 4096
#: Ops that make a tensor from plain arguments, deterministically.
FACTORIES = frozenset({"arange", "zeros", "ones", "full", "eye", "tensor", "as_tensor", "scalar_tensor", "linspace",
                       "tril_indices", "triu_indices"})
#: Deterministic ops that write into none of their arguments (computed from known contents).
PURE = frozenset({
    # made like a tensor, copies and conversions
    "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "new_tensor", "clone", "contiguous",
    "detach", "to", "type_as", "long", "int", "float", "double", "bool", "half",
    # views and reshapes
    "view", "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "expand", "expand_as", "broadcast_to",
    "flatten", "unflatten", "permute", "transpose", "t", "T", "mT", "movedim", "narrow", "select", "getitem",
    "repeat", "repeat_interleave", "flip", "roll", "tril", "triu", "diag", "diagonal",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "index_select", "gather", "take",
    # arithmetic and comparisons
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "neg", "abs", "pow", "sign",
    "rsub", "radd", "rmul", "reciprocal", "floordiv", "truediv", "mod",
    "clamp", "clip", "minimum", "maximum", "where", "masked_fill", "floor", "ceil",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "and", "or", "xor", "invert", "ror", "rxor", "isin",
    # reductions and scans
    "all", "any", "sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod", "diff", "count_nonzero",
    "mean",
    # queries answered from the contents
    "item", "tolist", "equal",
})

#: Nothing known of the contents.
_UNKNOWN = object()


class _Unknown(Exception):
    """An argument whose contents are not known."""


class Contents:
    """The contents one prediction computed, and who holds them (to forget them on a write)."""

    def __init__(self) -> None:
        #: A storage's address -> the values holding contents on it.
        self._holders: dict[int, list[Tensor]] = {}

    def compute(self, name: str, fn: Any, args: Sequence[Value], kwargs: dict[str, Value], once: bool,
                fake: Any) -> Any:
        """What the op gives on the contents of its arguments (a tensor, or a query's plain
        answer), or :data:`_UNKNOWN`; forgets the contents of what an op outside :data:`PURE`
        is given. ``fake``: what it gave on fakes (a tensor output is computed only if that
        one is a small CPU tensor)."""
        factory = name in FACTORIES
        if not factory and name not in PURE or "out" in kwargs:
            if self._holders:  # none made so far: none to forget
                self._forget([*args, *kwargs.values()])
            return _UNKNOWN
        if not once or not factory and not self._holders:
            return _UNKNOWN
        try:  # (before the fake's size: most ops are given a tensor whose contents are not known)
            plain = [_plain(a) for a in args]
            plain_kw = {k: _plain(v) for k, v in kwargs.items()}
        except _Unknown:
            return _UNKNOWN
        if isinstance(fake, torch.Tensor) and (fake.device.type != "cpu" or fake.numel() > MAX_ELEMENTS):
            return _UNKNOWN
        if not factory and not any(isinstance(a, Tensor) for a in [*args, *kwargs.values()]):
            return _UNKNOWN
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn(*plain, **plain_kw)
        except Exception:  # noqa: BLE001 - the fakes decide what raises; no contents then
            return _UNKNOWN
        if isinstance(result, torch.Tensor) and (type(result) is not torch.Tensor or result.device.type != "cpu"
                                                 or result.numel() > MAX_ELEMENTS or result.layout != torch.strided):
            return _UNKNOWN
        return result

    def give(self, made: Value, contents: Any) -> None:
        """``made`` (the op's output) holds ``contents``."""
        if isinstance(made, Tensor) and isinstance(contents, torch.Tensor):
            made.data = contents
            self._holders.setdefault(_storage(contents), []).append(made)

    def _forget(self, values: Sequence[Value]) -> None:
        for value in values:
            if isinstance(value, Seq):
                self._forget(value.items)
            elif isinstance(value, Tensor) and value.data is not None:
                for holder in self._holders.pop(_storage(value.data), [value]):
                    holder.data = None
                value.data = None


def known_contents(result: Any) -> bool:
    """Whether :meth:`Contents.compute` gave something."""
    return result is not _UNKNOWN


def _plain(value: Value) -> Any:
    if isinstance(value, Tensor):
        if value.data is None:
            raise _Unknown
        return value.data
    if isinstance(value, Known):
        return value.obj
    if isinstance(value, Seq) and not value.unsure:
        return value.kind(_plain(v) for v in value.items)
    raise _Unknown


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()
