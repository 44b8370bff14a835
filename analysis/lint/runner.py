"""Linting files: read, parse, run the enabled rules, drop what ``# torchlens: noqa`` suppresses.

A rule that crashes on a file is a bug in torchlens, not in the file: it becomes one ``TL001``
finding naming the rule (asking for a bug report), and the other rules and files are linted.
"""

from __future__ import annotations

import contextlib
import gc
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from .config import LintConfig
from .files import Skipped, UnreadableSource, python_files, read_source
from .findings import INTERNAL_ERROR, UNREADABLE, Finding
from .index import ModuleIndex, module_index
from .model import SourceModel
from .rules import RULES

_NOQA = re.compile(r"#\s*torchlens:\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class LintReport:
    """What a lint run found, and what it did not read."""

    #: Every finding, file by file in path order.
    findings: tuple[Finding, ...]
    #: Paths named that are not regular files (never opened: a FIFO would block).
    skipped: tuple[Skipped, ...] = ()


def lint_source(text: str, path: str = "<string>", config: LintConfig = LintConfig(), *,
                index: ModuleIndex = ModuleIndex()) -> list[Finding]:
    """Lint one file's source text; a file that does not parse gives one ``TL000`` finding, a
    rule that crashes one ``TL001`` finding (the other rules still run). ``index``: the module
    classes of the other files linted with it (a class whose module base is there is read too)."""
    with _collector_paused():
        return _lint(text, path, config, index)


def _lint(text: str, path: str, config: LintConfig, index: ModuleIndex) -> list[Finding]:
    try:
        model = SourceModel(path, text.removeprefix("\ufeff"), index.names.get(path, ""), index.modules)
    except SyntaxError as error:
        return [_unreadable(path, f"cannot parse this file: {error.msg}", error.lineno or 1, error.offset or 1)]
    except (RecursionError, MemoryError):
        return [_unreadable(path, "cannot parse this file: it nests deeper than Python's parser allows")]
    except Exception as error:  # noqa: BLE001 - a bug of ours, reported as a finding, never a traceback
        return [_internal_error(path, "while reading the file's classes and functions", error)]
    findings = []
    for code in config.enabled():
        rule = RULES[code]
        try:
            for node, message in rule.check(model):
                line, col = model.where(node)
                if not _suppressed(model.lines, line, code):
                    findings.append(Finding(path, line, col, code, rule.severity, message))
        except Exception as error:  # noqa: BLE001 - as above; the findings it yielded before stand
            findings.append(_internal_error(path, f"in rule {code} ({rule.name})", error))
    return sorted(set(findings))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one file is read, then as it was.

    A syntax tree is hundreds of thousands of young objects and no garbage cycles; the
    collector's passes over them while they are built cost more than the parse itself
    (``benchmarks/lint_speed.py`` prints both). What the file's reading leaves is freed by
    reference counting when it ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lint_paths(paths: Iterable[str], config: LintConfig = LintConfig()) -> LintReport:
    """Lint files and every ``*.py`` under folders, in path order; a class whose ``nn.Module``
    base is in another of these files is linted as a module (:mod:`.index`)."""
    findings: list[Finding] = []
    found = list(python_files(paths))
    skipped = [file for file in found if isinstance(file, Skipped)]
    files = [file for file in found if not isinstance(file, Skipped)]
    index = module_index(files)
    for file in files:
        try:
            text = read_source(file)
        except UnreadableSource as error:
            findings.append(_unreadable(str(file), str(error)))
            continue
        findings.extend(lint_source(text, str(file), config, index=index))
    return LintReport(tuple(findings), tuple(skipped))


def _unreadable(path: str, message: str, line: int = 1, col: int = 1) -> Finding:
    return Finding(path, line, col, UNREADABLE, "error", message)


def _internal_error(path: str, where: str, error: Exception) -> Finding:
    return Finding(path, 1, 1, INTERNAL_ERROR, "error",
                   f"internal error {where}: {type(error).__name__}: {error}; this is a bug in torchlens, not in "
                   "your file: please report it with this file attached (the other rules and files were linted)")


def _suppressed(lines: list[str], line: int, code: str) -> bool:
    """Whether the reported line carries ``# torchlens: noqa`` (for all codes or this one)."""
    match = _NOQA.search(lines[line - 1]) if 0 < line <= len(lines) else None
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or code in {c.strip().upper() for c in codes.split(",")}
