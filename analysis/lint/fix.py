"""``torchlens lint --fix``: rewrites that are certain, made on LibCST's lossless tree.

A finding is fixed only where the rewrite keeps what the code does; the rest of the file is
left byte for byte as it was (LibCST keeps comments, blank lines and formatting). The places
come from LibCST's ``PositionProvider`` and are matched to the findings' line and column.

* TL301 ``self.buf.data = value`` becomes ``self.buf = value.detach()``: a reassignment of the
  registered buffer, which the capture records. Like ``.data =``, it takes ``value``'s storage,
  shape, dtype and device without copying and without joining the autograd graph; unlike it, the
  buffer becomes a new tensor object (a reference to the old one kept elsewhere is not updated).
  ``copy_`` would keep the object but needs the shapes to match, which the source cannot tell.

No other rule has a certain rewrite: a loop for TL101 changes the labels the user may rely on,
a buffer for TL302 needs an initial value only the author knows.
"""

from __future__ import annotations

import difflib
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

with warnings.catch_warnings():  # libcst 1.0 imports mypy_extensions.TypedDict (deprecated) on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

from .files import UnreadableSource, read_source_and_encoding
from .findings import Finding

#: The rules with a certain rewrite.
FIXABLE = frozenset({"TL301"})


@dataclass(frozen=True, slots=True)
class Fixed:
    """One file's text after the rewrites, and the findings they resolved."""

    #: The new text (equal to the old one when nothing was fixed).
    text: str
    #: The findings fixed, in order.
    findings: tuple[Finding, ...]


class FixError(Exception):
    """LibCST cannot parse the file (syntax it does not know); the message says why."""


def fix_source(text: str, findings: Iterable[Finding]) -> Fixed:
    """Apply every certain rewrite for ``findings`` (those of one file) to ``text``."""
    wanted = {(f.line, f.col): f for f in findings if f.code in FIXABLE}
    if not wanted:
        return Fixed(text, ())
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise FixError(f"LibCST cannot parse this file, so it is not rewritten: {error.message}") from None
    fixer = _BufferDataFix(wanted)
    new = MetadataWrapper(module, unsafe_skip_copy=True).visit(fixer)
    return Fixed(new.code, tuple(sorted(fixer.fixed)))


class _BufferDataFix(cst.CSTTransformer):
    """TL301: ``self.buf.data = value`` -> ``self.buf = value.detach()`` at the findings' places."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: dict[tuple[int, int], Finding]) -> None:
        super().__init__()
        self.wanted = wanted
        self.fixed: list[Finding] = []

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:  # noqa: N802
        if len(updated.targets) != 1:
            return updated
        target = updated.targets[0].target
        start = self.get_metadata(PositionProvider, original.targets[0].target).start
        finding = self.wanted.get((start.line, start.column + 1))
        if (finding is None or finding.code != "TL301" or not isinstance(target, cst.Attribute)
                or target.attr.value != "data"):
            return updated
        self.fixed.append(finding)
        return updated.with_changes(targets=[updated.targets[0].with_changes(target=target.value)],
                                    value=_detached(updated.value))


def _detached(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value.detach()``, in parentheses unless ``value`` binds tighter than attribute access."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "detach":
        return value
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
    if not isinstance(value, atoms) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))


def unified_diff(path: str, before: str, after: str) -> str:
    """The change as a unified diff (``--- a/PATH`` / ``+++ b/PATH``), empty when there is none."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@dataclass(frozen=True, slots=True)
class FixRun:
    """What ``--fix`` (or ``--diff``) did over the files of a lint run."""

    #: Every finding a rewrite resolved.
    fixed: tuple[Finding, ...]
    #: One unified diff per changed file, in path order.
    diffs: tuple[str, ...]
    #: ``path: why`` for files with fixable findings that were not rewritten.
    refused: tuple[str, ...]


def fix_files(findings: Iterable[Finding], write: bool) -> FixRun:
    """Rewrite each file with fixable findings (in its own encoding) if ``write``; diff it either way."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.code in FIXABLE:
            by_path[finding.path].append(finding)
    fixed: list[Finding] = []
    diffs: list[str] = []
    refused: list[str] = []
    for path, found in by_path.items():
        try:
            text, encoding = read_source_and_encoding(Path(path))
            result = fix_source(text, found)
        except (UnreadableSource, FixError) as error:
            refused.append(f"{path}: {error}")
            continue
        if result.text != text:
            diffs.append(unified_diff(path, text, result.text))
            fixed.extend(result.findings)
            if write:
                Path(path).write_bytes(result.text.encode(encoding))
    return FixRun(tuple(fixed), tuple(diffs), tuple(refused))


__all__ = ["FIXABLE", "Fixed", "FixError", "FixRun", "fix_source", "fix_files", "unified_diff"]
