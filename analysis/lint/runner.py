"""Linting files: read, parse, run the enabled rules, drop what ``# torchlens: noqa`` suppresses."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .config import LintConfig
from .files import Skipped, UnreadableSource, python_files, read_source
from .findings import UNREADABLE, Finding
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


def lint_source(text: str, path: str = "<string>", config: LintConfig = LintConfig()) -> list[Finding]:
    """Lint one file's source text; a file that does not parse gives one ``TL000`` finding."""
    try:
        model = SourceModel(path, text.removeprefix("\ufeff"))
    except SyntaxError as error:
        return [_unreadable(path, f"cannot parse this file: {error.msg}", error.lineno or 1, error.offset or 1)]
    except (RecursionError, MemoryError):
        return [_unreadable(path, "cannot parse this file: it nests deeper than Python's parser allows")]
    findings = []
    for code in config.enabled():
        rule = RULES[code]
        for node, message in rule.check(model):
            line, col = model.where(node)
            if not _suppressed(model.lines, line, code):
                findings.append(Finding(path, line, col, code, rule.severity, message))
    return sorted(set(findings))


def lint_paths(paths: Iterable[str], config: LintConfig = LintConfig()) -> LintReport:
    """Lint files and every ``*.py`` under folders, in path order."""
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    for file in python_files(paths):
        if isinstance(file, Skipped):
            skipped.append(file)
            continue
        try:
            text = read_source(file)
        except UnreadableSource as error:
            findings.append(_unreadable(str(file), str(error)))
            continue
        findings.extend(lint_source(text, str(file), config))
    return LintReport(tuple(findings), tuple(skipped))


def _unreadable(path: str, message: str, line: int = 1, col: int = 1) -> Finding:
    return Finding(path, line, col, UNREADABLE, "error", message)


def _suppressed(lines: list[str], line: int, code: str) -> bool:
    """Whether the reported line carries ``# torchlens: noqa`` (for all codes or this one)."""
    match = _NOQA.search(lines[line - 1]) if 0 < line <= len(lines) else None
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or code in {c.strip().upper() for c in codes.split(",")}
