"""Which files a lint run reads, and reading one as Python does (coding cookie, BOM).

Every path ends one of three ways: its text is linted, it cannot be read (a binary file, an
undecodable one, no permission: reported as a ``TL000`` finding), or it is skipped with a
reason (a FIFO or device named on the command line: opening it could block forever).
"""

from __future__ import annotations

import io
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Union


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path that was not linted, and why."""

    #: The path as given (or as found under a given folder).
    path: str
    #: Why it was not read (``not a regular file (a FIFO)``).
    reason: str


_DECLARE = "; declare its encoding with a `# -*- coding: NAME -*-` line (PEP 263) or save it as UTF-8"


class UnreadableSource(Exception):
    """A file whose bytes are not Python source text; the message says why."""


def python_files(paths: Iterable[str]) -> Iterator[Union[Path, Skipped]]:
    """Files named, and every ``*.py`` regular file under folders named, in path order."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.py") if p.is_file())
        elif path.is_file():
            yield path
        else:
            yield Skipped(given, _not_regular(path))


def read_source(path: Path) -> str:
    """The file's text, decoded as Python decodes source: its coding cookie, a BOM, else UTF-8."""
    return read_source_and_encoding(path)[0]


def read_source_and_encoding(path: Path) -> tuple[str, str]:
    """The file's text and the codec it was decoded with (``utf-8-sig`` for a BOM: it writes one back)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UnreadableSource(f"cannot read this file: {error.strerror or error}") from None
    if b"\0" in data:
        raise UnreadableSource("not Python source: the file is binary (it holds NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding  # "utf-8-sig" drops a BOM
    except SyntaxError as error:  # the first lines are not UTF-8, the cookie names no codec, or contradicts a BOM
        raise UnreadableSource(f"cannot decode this file: {error}{_DECLARE}") from None
    except UnicodeDecodeError as error:
        raise UnreadableSource(f"cannot decode this file as {error.encoding}: byte {error.start} is "
                               f"{data[error.start:error.start + 1]!r}{_DECLARE}") from None


def _not_regular(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except OSError as error:
        return f"cannot read it: {error.strerror or error}"
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    kind = next((name for test, name in kinds if test(mode)), "not a file")
    return f"not a regular file ({kind})"
