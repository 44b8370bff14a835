"""A lint finding and the two ways it is printed: ``path:line:col: CODE message`` and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Iterable


#: The code of a file that cannot be read or parsed (not a rule: it cannot be selected or ignored).
UNREADABLE = "TL000"
#: The code of a rule that crashed on a file: a bug in torchlens (not a rule either).
INTERNAL_ERROR = "TL001"
#: Codes that are not rules: the file could not be (fully) linted.
NOT_LINTED = frozenset({UNREADABLE, INTERNAL_ERROR})


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One problem at one place. JSON field names are stable."""

    #: The file, as given on the command line.
    path: str
    #: 1-based line and column.
    line: int
    col: int
    #: Rule code (``TL101``); ``TL000`` for a file that does not parse, ``TL001`` for a rule that crashed.
    code: str
    #: ``error``, ``warning`` or ``info``.
    severity: str
    #: What is wrong, which places, what the user gets.
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


def as_text(findings: Iterable[Finding]) -> str:
    """One line per finding, then a summary naming the codes and how to read more."""
    findings = list(findings)
    if not findings:
        return "No problems found."
    codes = sorted({f.code for f in findings})
    noun = "problem" if len(findings) == 1 else "problems"
    rules = [code for code in codes if code not in NOT_LINTED]
    hint = f" Run `torchlens lint --explain {rules[0]}` for details." if rules else ""
    return "\n".join([*map(str, findings), f"Found {len(findings)} {noun} ({', '.join(codes)}).{hint}"])


def as_json(findings: Iterable[Finding]) -> str:
    """A JSON list with one object per finding."""
    return json.dumps([asdict(f) for f in findings], indent=2)
