"""One capture at a time: patches are process-wide, so a second concurrent one is refused."""

from __future__ import annotations

import threading

from analysis.errors import CaptureThreadError

_lock = threading.Lock()


def claim_capture() -> None:
    """Take the process-wide capture slot, or raise :class:`CaptureThreadError` at once."""
    if not _lock.acquire(blocking=False):
        raise CaptureThreadError(
            "another torchlens capture is running in this process (on another thread); "
            "captures patch torch process-wide, so run them one after the other"
        )


def release_capture() -> None:
    """Give the capture slot back."""
    _lock.release()
