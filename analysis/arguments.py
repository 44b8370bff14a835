"""Argument checks for the public entry points: one wording for every refusal.

Each check names the argument as the user wrote it (``where``: ``"CaptureOptions(save_outputs=...)"``,
``"tl.trace(model, ...)"``), the bad value and what is allowed, and raises a
:class:`~torchlens.analysis.errors.TorchLensTypeError` for a value of the wrong type or a
:class:`~torchlens.analysis.errors.TorchLensValueError` for a value of the right type that
is not allowed. Each returns the value, so a check reads as an assignment.
"""

from __future__ import annotations

from typing import Any, Sequence, TypeVar, Union

from .errors import TorchLensTypeError, TorchLensValueError

__all__ = ["check_bool", "check_choice", "check_whole", "check_instance", "check_callable", "wrong_type"]

T = TypeVar("T")


def check_bool(where: str, value: T) -> T:
    """``value`` must be ``True`` or ``False`` (not ``1``, not ``"yes"``)."""
    if not isinstance(value, bool):
        raise TorchLensTypeError(f"{where} must be True or False, got {value!r}")
    return value


def check_choice(where: str, value: T, choices: Sequence[object], *, or_false: bool = False) -> T:
    """``value`` must be one of ``choices`` (or ``False`` when ``or_false``)."""
    if (or_false and value is False) or value in choices:
        return value
    allowed = ", ".join(map(repr, choices))
    raise TorchLensValueError(f"{where} must be {'False or ' if or_false else ''}one of {allowed}, got {value!r}")


def check_whole(where: str, value: T, minimum: int = 0) -> T:
    """``value`` must be an ``int`` (not a ``bool``) of at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TorchLensTypeError(f"{where} must be a whole number >= {minimum}, got {value!r}")
    if value < minimum:
        raise TorchLensValueError(f"{where} must be a whole number >= {minimum}, got {value!r}")
    return value


def check_instance(where: str, value: T, expected: Union[type, tuple[type, ...]], what: str, hint: str = "") -> T:
    """``value`` must be an instance of ``expected``, described to the user as ``what``."""
    if not isinstance(value, expected):
        raise wrong_type(where, value, what, hint)
    return value


def wrong_type(where: str, value: object, what: str, hint: str = "") -> TorchLensTypeError:
    """The error for a value of the wrong type: ``{where} must be {what}, got {type}; {hint}``."""
    return TorchLensTypeError(f"{where} must be {what}, got {_type_name(value)}{'; ' + hint if hint else ''}")


def check_callable(where: str, value: T) -> T:
    """``value`` must be callable."""
    if not callable(value):
        raise wrong_type(where, value, "callable")
    return value


def _type_name(value: Any) -> str:
    return type(value).__name__
