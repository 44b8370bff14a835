"""Linting files: parse, run the enabled rules, drop what ``# torchlens: noqa`` suppresses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

from .config import LintConfig
from .findings import Finding
from .model import SourceModel
from .rules import RULES

_NOQA = re.compile(r"#\s*torchlens:\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.IGNORECASE)


def lint_source(text: str, path: str = "<string>", config: LintConfig = LintConfig()) -> list[Finding]:
    """Lint one file's source text; a file that does not parse gives one ``TL000`` finding."""
    try:
        model = SourceModel(path, text)
    except SyntaxError as error:
        return [Finding(path, error.lineno or 1, error.offset or 1, "TL000", "error",
                        f"cannot parse this file: {error.msg}")]
    findings = []
    for code in config.enabled():
        rule = RULES[code]
        for node, message in rule.check(model):
            line, col = model.where(node)
            if not _suppressed(model.lines, line, code):
                findings.append(Finding(path, line, col, code, rule.severity, message))
    return sorted(set(findings))


def lint_paths(paths: Iterable[str], config: LintConfig = LintConfig()) -> list[Finding]:
    """Lint files and every ``*.py`` under folders, in path order."""
    findings: list[Finding] = []
    for file in _python_files(paths):
        findings.extend(lint_source(file.read_text(encoding="utf-8"), str(file), config))
    return findings


def _python_files(paths: Iterable[str]) -> Iterator[Path]:
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.py") if p.is_file())
        else:
            yield path


def _suppressed(lines: list[str], line: int, code: str) -> bool:
    """Whether the reported line carries ``# torchlens: noqa`` (for all codes or this one)."""
    match = _NOQA.search(lines[line - 1]) if 0 < line <= len(lines) else None
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or code in {c.strip().upper() for c in codes.split(",")}
