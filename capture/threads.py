"""One capture at a time, and what other threads, forks and interrupts see while it runs.

The capture slot is process-wide (the patches are), so a second concurrent capture is refused,
and a capture started inside a traced forward is refused as nested. What the slot and the
patches do to the rest of the process is bounded to the threads that act for the capture:

* a thread that calls one of the *traced model's* modules during the capture is refused
  (:meth:`capture.session.Capture.call_module`); any other module call on any other thread
  runs untouched;
* a thread started during the capture gets a :class:`_RefuseTorch` mode that refuses its
  torch calls on the capture's tensors (inputs, parameters, buffers, op outputs) while the
  capture runs. Torch function modes are per thread, so such calls would silently be missing
  from the trace. After the capture the mode takes itself off that thread's mode stack at the
  thread's next Python event;
* a child forked while another thread captures starts clean (:func:`_reset_in_child`).

Interrupts: the claim, the installation and the removal of everything a capture changes are
each one C-level call (:func:`capture.patches.atomic`), so an asynchronous exception
(``KeyboardInterrupt``, a signal handler raising) lands before or after each, never inside.
"""

from __future__ import annotations

import os
import sys
import threading
from enum import IntEnum
from types import FrameType
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode

from torchlens.analysis.errors import CaptureThreadError

from .patches import Step, atomic

#: The captures that hold or wait on the slot, in the order they claimed it: the first one runs.
_claims: dict[Any, None] = {}


class Stage(IntEnum):
    """How much of a capture's process-wide state is in place."""

    #: Nothing: no claim, no patch.
    IDLE = 0
    #: The capture holds (or queued for) the slot; nothing is patched.
    CLAIMED = 1
    #: The slot, the patches, the torch function mode and the worker guard are in place.
    INSTALLED = 2


def claim_steps(capture: Any) -> list[Step]:
    """The steps of a claim: queue ``capture`` for the slot and mark it claimed."""
    return [(_claims.__setitem__, capture, None), (setattr, capture, "stage", Stage.CLAIMED)]


def release_steps(capture: Any) -> list[Step]:
    """The steps that give the slot back (idempotent)."""
    return [(_claims.pop, capture, None), (setattr, capture, "stage", Stage.IDLE)]


def check_claim(capture: Any) -> None:
    """Raise :class:`CaptureThreadError` unless ``capture`` is first in line for the slot."""
    holder = next(iter(_claims), capture)
    if holder is capture:
        return
    if holder.thread == threading.get_ident():
        raise CaptureThreadError(
            "tl.trace was called inside a forward pass that torchlens is already tracing (a nested "
            "trace); torchlens records one forward pass at a time: call tl.trace outside the model"
        )
    raise CaptureThreadError(
        "another torchlens capture is running in this process (on another thread); "
        "captures patch torch process-wide, so run them one after the other"
    )


def running() -> Any:
    """The capture that holds the slot, or ``None``."""
    return next(iter(_claims), None)


class WorkerGuard:
    """Refuses torch calls on the capture's tensors from threads started while it runs.

    :meth:`enter_thread` is ``threading``'s trace hook for the capture's duration: a new
    thread's first Python call pushes a :class:`_RefuseTorch` mode there, which leaves at the
    thread's first Python call after the capture. The thread's trace function is the
    removal's until then. The first refusal is kept in :attr:`refusal` so the capturing thread can raise it even if the worker
    swallowed it.
    """

    def __init__(self, owns: Callable[[torch.Tensor], bool]) -> None:
        self.active = False
        #: The error raised on a worker thread, if any.
        self.refusal: Optional[CaptureThreadError] = None
        #: ``threading``'s trace hook before the capture (put back after it).
        self.previous: Optional[Callable] = threading._trace_hook  # type: ignore[attr-defined]  # (threading.gettrace())
        #: Whether a tensor belongs to the capture (its inputs, parameters, buffers, outputs).
        self.owns = owns

    def enter_thread(self, frame: FrameType, event: str, arg: Any) -> Optional[Callable]:
        """``threading``'s trace hook during the capture: guard the new thread."""
        sys.settrace(self.previous)
        if self.active:
            mode = _RefuseTorch(self)
            mode.__enter__()
            mode.leave_stack()
        return None

    def refuse(self, error: CaptureThreadError) -> CaptureThreadError:
        """Keep the first refusal for the capturing thread; return ``error`` to raise."""
        self.refusal = self.refusal or error
        return error

    def concerns(self, args: tuple, kwargs: Optional[dict]) -> bool:
        """Whether a torch call reads a tensor of the capture (one level into lists/tuples)."""
        owns = self.owns
        for value in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(value, torch.Tensor):
                if owns(value):
                    return True
            elif type(value) is list or type(value) is tuple:
                if any(isinstance(item, torch.Tensor) and owns(item) for item in value):
                    return True
        return False


class LeavesStack:
    """For a torch function mode that must take itself off its thread's mode stack later.

    :meth:`leave_stack` arms the running thread's trace function: at its first Python event
    (a call, or a line of an armed frame) where the mode's job is :meth:`done` and the mode is
    on the stack, the mode is removed (the modes above it stay, in order) and the thread's
    previous trace function is put back. Inside its own handler a mode is off the stack (torch
    stashes it), so the removal always waits for a later event.
    """

    #: Whether the removal is armed; the trace function to put back; the frames armed.
    leaving = False
    _after: Optional[Callable] = None
    _armed: tuple[FrameType, ...] = ()

    def done(self) -> bool:
        """Whether the mode may leave now."""
        return True

    def leave_stack(self, caller: Optional[FrameType] = None) -> None:
        """Remove this mode from the running thread's stack at a Python event once :meth:`done`.

        ``caller`` is also armed for line events (a loop of torch calls makes no Python call).
        """
        if caller is not None and caller not in self._armed:
            caller.f_trace = self._remove
            self._armed = (*self._armed, caller)
        if not self.leaving:
            self.leaving, self._after = True, sys.gettrace()
            sys.settrace(self._remove)

    def _remove(self, frame: FrameType, event: str, arg: Any) -> Optional[Callable]:
        if not self.leaving:
            return None
        depth = torch._C._len_torch_function_stack()
        stack = [torch._C._get_function_stack_at(i) for i in range(depth)]
        mine = next((i for i, mode in enumerate(stack) if mode is self), None)
        if mine is None or not self.done():  # stashed (its handler is running), or still needed
            return self._remove if frame in self._armed else None
        for _ in range(depth - mine):
            torch._C._pop_torch_function_stack()
        for mode in stack[mine + 1:]:
            torch._C._push_on_torch_function_stack(mode)
        for armed in self._armed:
            armed.f_trace = None
        self.leaving, self._armed = False, ()
        sys.settrace(self._after)
        return None


class _RefuseTorch(LeavesStack, TorchFunctionMode):
    """A worker thread's mode: refuses while the capture runs, then leaves the mode stack."""

    def __init__(self, guard: WorkerGuard) -> None:
        super().__init__()
        self.guard = guard

    def done(self) -> bool:  # noqa: D102
        return not self.guard.active

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),  # noqa: D105
                           kwargs: Optional[dict] = None) -> Any:
        if self.guard.active:
            if self.guard.concerns(args, kwargs):
                raise self.guard.refuse(CaptureThreadError(
                    f"torch call `{getattr(func, '__name__', func)}` on thread "
                    f"{threading.current_thread().name!r}, started during a capture, reads the traced "
                    "model's tensors: torchlens captures one thread, so its ops would be missing from "
                    "the trace; run the forward pass on one thread"
                ))
        else:
            self.leave_stack(sys._getframe(1))
        return func(*args, **(kwargs or {}))


def _reset_in_child() -> None:
    """After ``fork``: undo a capture another thread of the parent was running.

    Only the forking thread lives in the child, so such a capture can never finish there.
    A capture the forking thread itself runs (a forward pass that forks) goes on.
    """
    me = threading.get_ident()
    for capture in list(_claims):
        if capture.thread != me:
            if capture.stage == Stage.INSTALLED:
                atomic(capture.undo_steps(own_thread=False))()
            _claims.pop(capture, None)


os.register_at_fork(after_in_child=_reset_in_child)
