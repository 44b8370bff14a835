"""A small, safe expression language for model inputs on the command line (never ``eval``).

``randn(2, 7, 16)``; several inputs separated by commas, ``randn(2, 7), randint(0, 10, (2, 5))``.
Factories: ``randn``, ``rand``, ``zeros``, ``ones`` (a shape), ``randint(low, high, shape)``,
``arange(n)``, ``full(shape, value)``, ``tensor([...])``; keyword ``dtype=`` one of torch's dtype
names (``float16``, ``long``...). Literals: numbers, ``True``/``False``/``None``, tuples, lists,
unary minus. Anything else (names, attributes, other calls) is refused with the reason. Parsing
reads the text with :mod:`ast` only; nothing in it is executed but the listed factories.
"""

from __future__ import annotations

import ast
from typing import Any

from torchlens.analysis.errors import TorchLensValueError

FACTORIES = ("randn", "rand", "zeros", "ones", "randint", "arange", "full", "tensor")
DTYPES = ("float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16", "int32",
          "int64", "long", "int", "uint8", "bool", "complex64")


def parse_inputs(text: str) -> tuple:
    """The inputs ``text`` describes, as a tuple of tensors and constants."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise TorchLensValueError(f"--input {text!r} is not an expression: {error.msg}; "
                                  "write e.g. 'randn(2, 7, 16)'") from None
    items = tree.elts if isinstance(tree, ast.Tuple) and any(isinstance(e, ast.Call) for e in tree.elts) else [tree]
    return tuple(_value(node, text) for node in items)


def _value(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _value(node.operand, text)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_value(e, text) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FACTORIES:
        return _call(node, text)
    raise TorchLensValueError(
        f"--input {text!r}: {ast.unparse(node)!r} is not allowed; use numbers, tuples, lists and "
        f"{', '.join(FACTORIES)} (with dtype=...)"
    )


def _call(node: ast.Call, text: str) -> Any:
    import torch

    args = [_value(a, text) for a in node.args]
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg != "dtype" or not isinstance(keyword.value, ast.Name) or keyword.value.id not in DTYPES:
            raise TorchLensValueError(f"--input {text!r}: only dtype=<name> is accepted as a keyword, "
                                      f"with a name among {', '.join(DTYPES)}")
        kwargs["dtype"] = getattr(torch, keyword.value.id)
    factory = getattr(torch, node.func.id)  # type: ignore[attr-defined]
    try:
        return factory(*args, **kwargs)
    except (TypeError, RuntimeError, ValueError) as error:
        raise TorchLensValueError(f"--input {text!r}: {ast.unparse(node)} failed: {error}") from None
