"""One thread per capture.

Patches are process-wide, so a second concurrent capture is refused. Torch function modes
are per thread, so a torch call on a thread the forward pass started would silently be
missing from the trace; instead, threads started during a capture get a guard mode that
refuses torch calls while the capture runs (and passes them through after it).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Optional

from torch.overrides import TorchFunctionMode

from torchlens.analysis.errors import CaptureThreadError

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


class WorkerGuard:
    """Refuses torch calls on threads started while a capture runs.

    Installed with ``threading.settrace`` for the capture's duration: a new thread's first
    Python call pushes a :class:`_RefuseTorch` mode there. The first refusal is kept in
    :attr:`refusal` so the capturing thread can raise it even if the worker swallowed it.
    """

    def __init__(self) -> None:
        self.active = False
        #: The error raised on a worker thread, if any.
        self.refusal: Optional[CaptureThreadError] = None
        self._previous: Optional[Callable] = None

    def __enter__(self) -> "WorkerGuard":
        self.active = True
        self._previous = threading.gettrace()
        threading.settrace(self._enter_thread)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.active = False
        threading.settrace(self._previous)  # type: ignore[arg-type]

    def _enter_thread(self, frame: Any, event: str, arg: Any) -> Optional[Callable]:
        sys.settrace(self._previous)
        _RefuseTorch(self).__enter__()
        return self._previous(frame, event, arg) if self._previous is not None else None


class _RefuseTorch(TorchFunctionMode):
    def __init__(self, guard: WorkerGuard) -> None:
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: D105
        if self.guard.active:
            error = CaptureThreadError(
                f"torch call `{getattr(func, '__name__', func)}` on thread "
                f"{threading.current_thread().name!r}, started during a capture: torchlens "
                "captures one thread, so its ops would be missing; run the forward pass on one thread"
            )
            self.guard.refusal = self.guard.refusal or error
            raise error
        return func(*args, **(kwargs or {}))
