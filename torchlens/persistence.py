"""``tl.save`` / ``tl.load``: a trace as a plain, versioned file that is safe to open.

The file is the :mod:`torchlens.codec` format: one ``safetensors`` file holding every tensor
of the trace, with its records as JSON in the metadata, a format version and a digest.
Loading parses JSON and tensor bytes and nothing else: no pickle, no import, no user code.

The same representation pickles a trace (``pickle.dumps(trace)``, multiprocessing) and
defines equality: ``a == b`` when their records are equal and every tensor has the same
dtype, shape and values (NaN equal to NaN). The model object (``trace.run``) and the
prediction report are not part of a trace's file, so a loaded trace has neither.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

from torchlens.analysis.arguments import check_instance

from .codec import decode, dumps, same
from .trace import Trace

__all__ = ["save", "load", "dumps", "loads", "same"]

PathLike = Union[str, "os.PathLike[str]"]


def save(trace: Trace, path: PathLike) -> None:
    """Write ``trace`` to ``path`` (one ``safetensors`` file; replaced atomically).

    >>> tl.save(trace, "run.tltrace"); same = tl.load("run.tltrace"); same == trace
    True
    """
    check_instance("tl.save(trace, path)", trace, Trace, "a Trace", "save what tl.trace returned")
    data = dumps(trace)
    target = Path(path)
    handle, temporary = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(path: PathLike) -> Trace:
    """Read a trace written by :func:`save`. Never runs code from the file.

    Raises :class:`~torchlens.errors.TraceFileError` for a file that is truncated, corrupted,
    not a trace, or written by a newer format version; nothing is half-loaded.
    """
    return loads(Path(path).read_bytes(), str(path))


def loads(data: bytes, name: str = "<bytes>") -> Trace:
    """The trace in ``data`` (the bytes of a file written by :func:`save`)."""
    return decode(data, name, Trace)
