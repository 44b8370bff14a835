"""Which rules run: ``--select``/``--ignore`` over ``[tool.torchlens.lint]`` in pyproject.toml."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..errors import TorchLensTypeError, TorchLensValueError
from .rules import RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@dataclass(frozen=True, slots=True)
class LintConfig:
    """Rule selection. Codes match by prefix: ``TL1`` selects TL101..TL105."""

    #: Codes or prefixes to run; empty means every rule that is on by default.
    select: tuple[str, ...] = ()
    #: Codes or prefixes never to run.
    ignore: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for code in (*self.select, *self.ignore):
            if not isinstance(code, str):
                raise TorchLensTypeError(f"lint rule codes are strings such as 'TL101', got {code!r}")
            if code != "ALL" and not any(rule.startswith(code) for rule in RULES):
                raise TorchLensValueError(
                    f"unknown lint rule {code!r}; known rules: {', '.join(RULES)} (or a prefix such as TL1, or ALL)"
                )

    def enabled(self) -> list[str]:
        """The codes that run, in order."""
        picked = [c for c in RULES if any(c.startswith(s) or s == "ALL" for s in self.select)] if self.select \
            else [c for c, rule in RULES.items() if rule.default]
        return [c for c in picked if not any(c.startswith(i) for i in self.ignore)]

    def merged(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> "LintConfig":
        """Command-line choices over this configuration: ``select`` replaces, ``ignore`` adds."""
        return LintConfig(tuple(select) or self.select, (*self.ignore, *ignore))


def load_config(start: Path) -> LintConfig:
    """The ``[tool.torchlens.lint]`` table of the nearest pyproject.toml at or above ``start``."""
    found = _nearest_pyproject(start.resolve())
    if found is None:
        return LintConfig()
    try:
        with found.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TorchLensValueError(f"{found}: cannot read it as TOML: {error}; fix the file or lint from "
                                  "another folder") from None
    table: object = document
    for key in ("tool", "torchlens", "lint"):
        table = table.get(key, {}) if isinstance(table, dict) else table
    if not isinstance(table, dict):
        raise TorchLensValueError(f"{found}: [tool.torchlens.lint] must be a table, got {table!r}")
    unknown = set(table) - {"select", "ignore"}
    if unknown:
        raise TorchLensValueError(f"{found}: unknown keys in [tool.torchlens.lint]: {', '.join(sorted(unknown))}")
    return LintConfig(*(_codes(found, key, table.get(key, [])) for key in ("select", "ignore")))


def _codes(found: Path, key: str, value: object) -> tuple[str, ...]:
    """A list of code strings from the config file, or an error naming the key and the value."""
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise TorchLensValueError(f"{found}: [tool.torchlens.lint] {key} must be a list of rule codes as strings "
                                  f"(as {key} = [\"TL101\"]), got {value!r}")
    return tuple(code.upper() for code in value)


def _nearest_pyproject(start: Path) -> Optional[Path]:
    for folder in (start, *start.parents) if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None
