"""The stand-in recorder (:mod:`torchlens.capture.standin`) as a prediction :class:`~analysis.host.Host`.

A stand-in op (``rec.op(name)``) records ``name`` and returns its first argument; a
:class:`~capture.standin.Value` is the tensor type, whose Python dunders record ``add``,
``radd``, ``mul``, ``matmul`` and ``getitem`` and return the value itself.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from torchlens.analysis.host import Host
from torchlens.analysis.values import Known, Value
from torchlens.capture import standin
from torchlens.capture.standin import Value as StandinValue

#: Value's recording dunders -> the op name each records.
_DUNDERS = {getattr(StandinValue, f"__{name}__"): name for name in ("add", "radd", "mul", "matmul", "getitem")}


class StandinHost(Host):
    """Ops are the stand-in op closures and :class:`Value`'s dunders."""

    tensor_type = StandinValue

    def op_name(self, fn: Any) -> Optional[str]:
        if getattr(fn, "__code__", None) is standin._op_code:
            cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
            return cells["name"].cell_contents
        try:
            return _DUNDERS.get(fn)
        except TypeError:  # unhashable
            return None

    def op_result(self, name: str, fn: Any, args: Sequence[Value], kwargs: dict[str, Value],
                  make_tensor: Callable[[Any], Value],
                  make_tuple: Callable[[Optional[int], Optional[tuple]], Value], once: bool = False) -> Optional[Value]:
        make_tensor(None)  # records the event
        return args[0] if args else Known(None)
