"""One capture: intercept every torch call of one forward pass and record it with its key.

Interception is a ``torch.overrides.TorchFunctionMode`` installed for the forward pass and
removed after it. Module calls are tracked by a capture-scoped patch of
``nn.Module._call_impl``: torch's function runs the capture's code (:data:`_ROUTED`, its
``__code__`` swapped; no class attribute is written, which would invalidate the type caches of
every ``nn.Module`` subclass), which gives each op its scope (the innermost module instance)
and each module its numbered calls; buffer reassignments arrive through
torch's buffer-registration hook. Everything is undone when the forward pass ends, also
when the model raises or an interrupt lands (see :mod:`capture.patches`); the model's
exception propagates as itself with a note saying where it happened.

Per op, the hot path is: one cached classification of the callable, the call itself, a
walk of the Python stack up to the innermost module boundary (the frame that called the
module's ``forward``: :meth:`Capture.call_module`'s, or torch's ``_call_impl``'s for a module
with hooks) that builds a raw tuple of ints, and one dict lookup to turn it into a chain id;
then the op's arguments are read by id and it is appended with its replay call as a plain
tuple. What a trace shows but the forward pass does not need (the replay record, the output's
shape and dtype) is built when first read (``RawOp.replay``, ``RawOp.shape``).
"""

from __future__ import annotations

import sys
import threading
import weakref
from functools import partial
from itertools import chain, compress, repeat, starmap, takewhile
from operator import is_, lt, sub, truth
from types import CodeType, FrameType, FunctionType
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, cast

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from torchlens.analysis.errors import CaptureThreadError, UnsupportedForwardError
from torchlens.analysis.sites import instruction_place

from . import funcs
from .boundary import call_inputs, call_outputs, record_inputs, record_module_call, record_output
from .buffers import FUSED_MUTATORS, BufferJournal, storage_key
from .containers import Flat
from .frames import SKIP, STOP, ChainInterner, read_raw, read_stack
from .gradients import Gradients
from .patches import MISSING as _MISSING, Patches, Step, atomic, class_dict
from .record import (OP, OUTPUT, Hooked, OpKind, RawCall, RawCapture, RawOp, Segment,
                     meta_of)
from .replay import (PRODUCED, Aliased, GlobalState, ModesJournal, Settlement, Source, make_call,
                     make_passed_call, new_call, tensor_args)
from .select import ALL, OnlineLabels, OpInfo, Save, matcher
from .snapshots import Ownership, snapshot
from .threads import LeavesStack, Stage, WorkerGuard, check_claim, claim_steps, release_steps
from .walk import module_record, walk

_Tensor = torch.Tensor
_Size = torch.Size
#: The keyword arguments a pending call keeps when the op took none (read, never changed).
_NO_KWARGS: dict = {}
#: ``Capture.plain_now`` while a plain op may not take the shortcut (never written).
_NO_PLAIN: dict = {}
#: Types of the op arguments that never are or hold a tensor, kept as they are: what the
#: argument readers (:meth:`Capture._read_by_id`) leave alone without asking anything else.
_ATOMS = frozenset({int, float, bool, complex, str, type(None), torch.dtype, torch.device, torch.Size,
                    torch.layout, torch.memory_format})
_getframe = sys._getframe
#: Makes an object of a slotted record class without calling its ``__init__`` (its slots set by the caller).
_new = object.__new__
_INSTALLED = Stage.INSTALLED
_get_ident = threading.get_ident
_CALL_IMPL = nn.Module._call_impl.__code__
_CALL_IMPL_INNER = next(c for c in _CALL_IMPL.co_consts if getattr(c, "co_name", None) == "inner")
#: torch's ``nn.Module._call_impl`` function, and a copy of it (the same code and globals): what
#: a capture calls to run a module call with hooks (or one that is not its own), since the
#: function itself runs :data:`_ROUTED` then.
_CALL_IMPL_TORCH = nn.Module._call_impl
_CALL_IMPL_FUNC = FunctionType(_CALL_IMPL, _CALL_IMPL_TORCH.__globals__, _CALL_IMPL_TORCH.__name__)
_CALL_IMPL_FUNC.__qualname__ = _CALL_IMPL_TORCH.__qualname__
#: What torch's ``_call_impl`` reads to decide whether a module call may skip its hook handling
#: (:meth:`Capture.call_module` decides so too): its process-wide hook tables (torch adds to them
#: and removes from them, never rebinds them) and whether the JIT tracer runs.
_GLOBAL_BACKWARD_PRE_HOOKS = _CALL_IMPL_TORCH.__globals__["_global_backward_pre_hooks"]
_GLOBAL_BACKWARD_HOOKS = _CALL_IMPL_TORCH.__globals__["_global_backward_hooks"]
_GLOBAL_FORWARD_HOOKS = _CALL_IMPL_TORCH.__globals__["_global_forward_hooks"]
_GLOBAL_FORWARD_PRE_HOOKS = _CALL_IMPL_TORCH.__globals__["_global_forward_pre_hooks"]
_tracing_state = torch._C._get_tracing_state
_ScriptModule = torch.jit.ScriptModule
#: torch's process-wide buffer-registration hooks (also run by ``module.buffer = t``).
_BUFFER_HOOKS = torch.nn.modules.module._global_buffer_registration_hooks
_push_mode = torch._C._push_on_torch_function_stack
_pop_mode = torch._C._pop_torch_function_stack
_mode_depth = torch._C._len_torch_function_stack
_mode_at = torch._C._get_function_stack_at
#: The setters of the global modes a replay restores per call (``torch.autocast``, ``no_grad``
#: and ``enable_grad`` go through them): (owner, attribute).
_MODE_SETTERS = ((torch, "set_autocast_enabled"), (torch, "set_autocast_dtype"), (torch._C, "_set_grad_enabled"),
                 (torch, "set_default_dtype"))


#: How many torch callables the process-wide classification (:func:`_classified`) keeps before
#: it starts again (each entry holds its callable).
FUNCS_KEPT = 4096
#: Process-wide: torch callable -> :func:`funcs.classify` of it; the plain ops among them (an
#: op, not in place, no fused buffer write) -> their name.
_FUNC_INFO: dict[Any, funcs.FuncInfo] = {}
_PLAIN: dict[Any, str] = {}


def _classified(func: Callable) -> funcs.FuncInfo:
    """Classify ``func`` into :data:`_FUNC_INFO` (and :data:`_PLAIN`, for a plain op)."""
    if len(_FUNC_INFO) >= FUNCS_KEPT:
        _FUNC_INFO.clear()
        _PLAIN.clear()
    info = _FUNC_INFO[func] = funcs.classify(func)
    if info.kind is funcs.OP and not info.inplace and info.name not in FUSED_MUTATORS:
        _PLAIN[func] = info.name
    return info


def _forward_lines() -> frozenset[int]:
    """Lines of ``_call_impl``'s ``inner`` that call ``forward`` (every other call is a hook)."""
    import inspect

    lines, first = inspect.getsourcelines(_CALL_IMPL)
    return frozenset(first + i for i, text in enumerate(lines) if "forward_call(" in text)


_FORWARD_LINES = _forward_lines()


class Capture(LeavesStack, TorchFunctionMode):
    """Records one forward pass of ``model``; use :func:`capture_forward`.

    A capture's mode is on the stack only while it is installed. If torch puts it back later
    (its ``_pop_mode_temporarily`` generator, interrupted, re-pushes the mode when collected),
    it passes every call through and takes itself off the stack.
    """

    #: Whether the hot path takes its shortcuts for the common cases (a plain op decided by
    #: one lookup, tensor arguments read inline, torch's Python functions run without a round
    #: trip through the mode: :meth:`passes_checks`); ``tests/test_capture_fast.py`` turns them off
    #: to check that the general paths record the same.
    fast = True

    def __init__(self, model: nn.Module, save: Save = ALL, containers: bool = False,
                 gradients: bool = False) -> None:
        super().__init__()
        self.raw = RawCapture()
        #: The global state as the capture starts (its modes completed as it ends).
        self.raw.state = GlobalState.now()
        #: ``raw.ops``, and with ``save_gradients`` the store the tensor hooks fill (``raw.gradients``).
        self.ops = self.raw.ops
        self.gradients = self.raw.gradients = Gradients() if gradients else None
        #: Keep every output and the replay records (``save="all"``).
        self.keep_all = save == ALL
        #: For a selection: which ops to keep, and their labels as grouping will give them.
        self.select = matcher(save)
        self.labels = OnlineLabels() if self.select is not None else None
        #: Record input and module-call containers and each op's place in them.
        self.containers = containers
        self.interner = ChainInterner()
        #: What the replay records left pending during the forward pass are built with.
        self.settlement = Settlement()
        #: ``id(tensor)`` -> the op whose output it is. Under ``save="all"`` every such tensor
        #: is held until the capture ends, so no id is reused; otherwise :attr:`refs` tells
        #: whether the tensor an id named is still the same one.
        self.producer: dict[int, int] = {}
        self.refs: Optional[dict[int, weakref.ref]] = None if self.keep_all else {}
        #: Whether :meth:`_arguments` may know a tensor argument by its id alone (every output
        #: held) on its shortcut (:attr:`fast`).
        self.by_id = self.fast and self.keep_all
        #: :attr:`producer` where an id found in it is that tensor's (:attr:`by_id`), else empty:
        #: what :meth:`call_module` reads its common case (one tensor in, one out) from.
        self.held: dict[int, int] = self.producer if self.by_id else {}
        #: Whether a plain op returning one tensor may take :meth:`_record_plain`: every output
        #: kept or none (``save="all"`` or ``"none"``: no selection to decide) and no gradients
        #: watched. (After an in-place write, an op reading a storage it wrote through another
        #: alias takes the general path: :meth:`_reads_written`.)
        self.lean = self.fast and self.select is None and not gradients
        #: Storage -> saved outputs in it; built at the first in-place write (:meth:`preserve`).
        self.by_storage: Optional[dict[int, list[int]]] = None
        #: Storage -> the last in-place op that wrote it (reads through other aliases see it).
        self.storage_writer: dict[int, int] = {}
        #: Indices of the TorchScript modules among them.
        self.scripts: set[int] = set()
        #: Objects whose ``id`` keys the tables above, beside the model's modules (which
        #: :attr:`model` holds): kept alive so no id is reused.
        self.keep_alive: list[Any] = []
        self.stack: list[int] = []
        #: The plain ops met (an op, not in place, no fused buffer write) -> their name: what
        #: :meth:`__torch_function__` decides with one lookup (process-wide, :func:`_classified`).
        self.plain: dict[Any, str] = _PLAIN if self.fast else {}
        #: :attr:`plain` while a plain op may take its shortcut (the capture installed, not
        #: suspended, no check bypassed), :data:`_NO_PLAIN` otherwise: one lookup in
        #: :meth:`__torch_function__` decides the common case. Set by the install and undo steps,
        #: and by :meth:`suspend`, :meth:`resume` and :meth:`set_bypass`.
        self.plain_now: dict[Any, str] = _NO_PLAIN
        self.hook_calls: dict[int, bool] = {}
        #: The outermost module call's return value and its flattening, for :func:`record_output`
        #: (:func:`capture.boundary.call_outputs`).
        self.returned: Optional[tuple[Any, Flat]] = None
        self.pending_name: Optional[str] = None
        self.bypass = False
        #: The torch modules whose torch-function checks say no where :meth:`passes_checks` says
        #: so: those every capture patches (:data:`_PATCH_TARGETS`), and those patched since.
        self.bypassed: set[str] = set(_PASSING_MODULES)
        self.suspended = 0
        #: The steps that install and undo the patches every capture installs (:func:`_torch_patches`,
        #: set by :meth:`plan`), and the patches this capture sets while it runs (:meth:`_bypass_checks`).
        self.planned: PlannedSteps = ((), ())
        self.patches = Patches()
        self.thread = threading.get_ident()
        #: How much of the capture's process-wide state is in place (changed by steps only).
        self.stage = Stage.IDLE
        #: Per stage, the one-shot call that removes what it put in place (set by :meth:`plan`).
        self.undo: tuple[Callable[[], Any], ...] = ()
        #: Frame roles (:data:`_ROLES`, shared by every capture: never written).
        self.roles: dict[int, int] = _ROLES
        #: ``torch.compile``'s module wrapper class, once Dynamo is loaded.
        self.compiled = _compiled_module_type()
        #: :func:`capture.walk.walk` of the model, as the forward pass starts (with its modules' records).
        self.model = walk(model, self.raw.modules)
        self.modules = self.model.modules
        #: ``id(module)`` -> index into ``raw.modules``: the model's (the walk's table), then those met when called.
        self.module_index = self.model.index
        for index, (name, module) in enumerate(self.modules):
            if getattr(module, "_compiled_call_impl", None) is not None:
                raise UnsupportedForwardError(
                    f"module `{name or 'self'}` ({type(module).__name__}) was compiled in place with "
                    ".compile(): its calls run Dynamo's code, not its Python, so torchlens cannot "
                    "record them; trace it before compiling it, or compile with torch.compile(module), "
                    "whose wrapper torchlens looks through"
                )
            if _is_script(module):
                self.scripts.add(index)
        self.param_names = self.model.param_names
        self.buffers = BufferJournal(self, self.model.buffers)
        #: The autocast, grad and default-dtype modes each recorded call runs under.
        self.modes = ModesJournal(self.raw.state.modes[0])
        #: Set by :func:`capture_forward` once the inputs are known.
        self.ownership: Ownership
        self.guard = WorkerGuard(self.owns)

    # -- torch function mode -------------------------------------------------------------

    def done(self) -> bool:  # noqa: D102 (LeavesStack: a copy of the mode left after the capture)
        return self.stage is not _INSTALLED

    def refresh(self) -> None:
        """Set :attr:`plain_now` after :attr:`suspended` or :attr:`bypass` changed (:meth:`resume`,
        :meth:`set_bypass`)."""
        self.plain_now = self.plain if self.stage is _INSTALLED and not (self.suspended or self.bypass) else _NO_PLAIN

    def suspend(self) -> None:
        """Record nothing until :meth:`resume` (nested: a count); the plain-op shortcut is off."""
        self.suspended += 1
        self.plain_now = _NO_PLAIN

    def resume(self) -> None:
        """Undo one :meth:`suspend`."""
        self.suspended -= 1
        self.refresh()

    def set_bypass(self, on: bool) -> None:
        """Set :attr:`bypass`: the next torch-function check of torch's Python says no
        (:meth:`passes_checks`); the plain-op shortcut is off meanwhile."""
        self.bypass = on
        self.refresh()

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),  # noqa: D105
                           kwargs: Optional[dict] = None) -> Any:
        name = self.plain_now.get(func)
        if name is not None:
            # A plain op (not in place, no buffer statistics): the common case.
            if self.pending_name is not None:  # a reflected operator (``2 * t``): named as written
                name, self.pending_name = self.pending_name, None
            try:
                out = func(*args, **kwargs) if kwargs else func(*args)
            except Exception as error:
                self._annotate(error, name, _getframe(1))
                raise
            if type(out) is _Tensor and self.lean:
                self._record_plain(func, name, args, kwargs, out, _getframe(1))
            elif type(out) is not int and type(out) is not _Size:  # (``size()``: nothing to record)
                self._record(func, name, args, kwargs or {}, out, _getframe(1))
            return out
        if self.stage is not _INSTALLED:
            self.leave_stack(_getframe(1))
            return func(*args, **(kwargs or {}))
        if kwargs is None:
            kwargs = {}
        info = _FUNC_INFO.get(func) or _classified(func)
        if self.suspended or info.kind is funcs.QUERY:
            return func(*args, **kwargs)
        if info.kind is funcs.TRANSPARENT and not self.bypass:
            return self._run_transparent(func, args, kwargs)
        if self.bypass:
            self.set_bypass(False)
        name = info.name
        if self.pending_name is not None:
            name, self.pending_name = self.pending_name, None
        if info.inplace and args:
            self.preserve(args[0], inplace=True)
        fused = self.buffers.before_fused(name, args) if name in FUSED_MUTATORS else None
        try:
            out = func(*args, **kwargs)
        except Exception as error:
            self._annotate(error, name, sys._getframe(1))
            raise
        if info.inplace and out is None and args:
            out = args[0]
        if type(out) is _Tensor and self.lean:  # (an in-place op, a fused update, a first meeting)
            self._record_plain(func, name, args, kwargs, out, sys._getframe(1))
        else:
            self._record(func, name, args, kwargs, out, sys._getframe(1))
        if info.inplace and args and isinstance(args[0], _Tensor):
            self.ownership.after_write(self.raw, len(self.raw.ops) - 1)
            self.storage_writer[storage_key(args[0])] = len(self.raw.ops) - 1
            self.buffers.after_inplace(len(self.raw.ops) - 1, args[0])
        elif fused:
            self.buffers.after_fused(name, args, len(self.raw.ops) - 1, fused)
        return out

    def _run_transparent(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """Run torch's own Python with the mode active, past its torch-function check."""
        self._bypass_checks(func)
        self.set_bypass(True)
        try:
            _push_mode(self)
            return func(*args, **kwargs)
        finally:
            self.set_bypass(False)
            if _mode_depth() and _mode_at(_mode_depth() - 1) is self:
                _pop_mode()

    def _bypass_checks(self, func: Callable) -> None:
        """Make the ``has_torch_function*`` checks in ``func``'s module say no where
        :meth:`passes_checks` says so.

        Patched lazily, per torch module met, for this capture only.
        """
        for namespace in (getattr(func, "__globals__", None), vars(sys.modules.get(func.__module__, torch))):
            if not namespace:
                continue
            module_name = namespace.get("__name__", "")
            if module_name in self.bypassed or module_name not in sys.modules:
                continue
            self.bypassed.add(module_name)
            for name in funcs.CHECK_NAMES:
                if name in namespace:
                    self.patches.set(sys.modules[module_name], name, _passing(namespace[name]))

    def passes_checks(self) -> bool:
        """Whether a torch-function check this capture patched says no, on the capture's thread:
        once for the function :meth:`_run_transparent` re-enters, and whenever this capture's mode
        is on top of the stack, not suspended. Such a check would send its function to the mode
        (torch's ``handle_torch_function`` calls the top mode first), which would run it with
        :meth:`_run_transparent`; saying no runs it so at once: the same ops at the same call
        sites, the function's frame once in their chains."""
        if self.bypass:
            self.set_bypass(False)
            return True
        return (self.fast and not self.suspended and self.stage is _INSTALLED and _mode_depth() > 0
                and _mode_at(_mode_depth() - 1) is self)

    # -- recording -------------------------------------------------------------------------

    def _record(self, func: Callable, name: str, args: tuple, kwargs: dict, out: Any, frame: Optional[FrameType]) -> None:
        leaves: Sequence[tuple[int, torch.Tensor]]
        if type(out) is _Tensor or isinstance(out, _Tensor):
            leaves = ((0, out),)
        elif isinstance(out, (tuple, list)):
            leaves = [(slot, t) for slot, t in enumerate(out) if isinstance(t, _Tensor)]
            if not leaves:
                return
        else:
            return
        call_args, call_kwargs, sources, params = self._arguments(args, kwargs)
        scope, call, site = self._site(frame)
        args_text = "" if site is not None else _args_text(args, kwargs)
        replay: Any = None
        if self.keep_all:
            snapshots = self._alias_snapshots(args, kwargs, sources) if self.storage_writer else None
            if snapshots or len(leaves) > 1:  # built now: the slots share it, a snapshot was taken
                replay = new_call(func, call_args, call_kwargs, sources, snapshots or {}, self.modes.index)
                self.settlement.early = True
            else:
                # (a pending call, :func:`~capture.replay.make_call`'s tuple)
                replay = (make_call, func, call_args, call_kwargs, sources, self.modes.index, self.settlement)
        for slot, tensor in leaves:
            self.add_op(RawOp(OP, name, scope, call, slot, site, args_text, tensor, None, None, None, params,
                              None, replay, sources=sources))

    def _record_plain(self, func: Callable, name: str, args: tuple, kwargs: Optional[dict], out: _Tensor,
                      frame: FrameType) -> None:
        """:meth:`_record` of an op that returned one tensor, in a capture that keeps every output
        or none and watches no gradient (:attr:`lean`), when it reads no value an in-place write
        changed through another alias (:meth:`_reads_written`): the common case, in one call.
        Its arguments are read as the shortcut of :meth:`_arguments` reads them, keyword values
        (``dim=``, ``attn_mask=``) like positional ones; saving every output, a call with
        positional arguments only, no list among them, keeps them as passed
        (:meth:`_read_passed`). Keeping no output (``save="none"``), it keeps no replay record
        either, and drops the output at once as :meth:`add_op` does."""
        if self.storage_writer and self._reads_written(args, kwargs):
            self._record(func, name, args, kwargs or {}, out, frame)
            return
        sources: list[Source] = []
        params: list[str] = []
        replay: Any
        if self.keep_all and not kwargs and self._read_passed(args, sources, params):
            # (a pending call keeping its arguments as passed: :func:`~capture.replay.make_passed_call`)
            replay = (make_passed_call, func, args, _NO_KWARGS, sources, self.modes.index, self.settlement)
        else:
            if sources or params:  # read up to a list: read again, copying it
                sources, params = [], []
            kept = self._read_by_id(args, sources, params)
            read = dict(zip(kwargs, self._read_by_id(kwargs.values(), sources, params))) if kwargs else _NO_KWARGS
            # (a pending call: :func:`~capture.replay.make_call`'s tuple)
            replay = (make_call, func, kept, read, sources, self.modes.index, self.settlement) if self.keep_all else None
        # ``RawOp(OP, name, scope, call, 0, site, args_text, out, None, None, None, params, None,
        # replay, sources=sources)``, its slots set here: the class call (an ``__init__`` frame and
        # an argument tuple) or a builder function cost a call more per op. Every field is set
        # (an unset slot would raise where it is read: ``tests/test_capture_fast.py`` reads them all).
        op = _new(RawOp)
        back = frame.f_back
        key = id(frame.f_code)
        if self.stack and back is not None and back.f_code is _CALL_MODULE and key not in self.roles:
            # torch called straight from a module's forward (:meth:`_site`'s common case, inline)
            op.call = call = self.stack[-1]
            op.scope = self.raw.calls[call][0]
            op.site = self.interner.sites.get((key, frame.f_lasti)) or self.interner.frame_site(frame)
        else:
            op.scope, op.call, op.site = self._site(frame)
        op.kind = OP
        op.name = name
        op.slot = 0
        op.args_text = "" if op.site is not None else _args_text(args, kwargs or {})
        op.out = out
        op._shape = None
        op._dtype = None
        op._parents = None
        op.params = tuple(params) if params else ()
        op.buffer = None
        op._replay = replay
        op.container = None
        op.meta = None
        op.sources = sources
        ops = self.ops
        index = len(ops)
        ops.append(op)
        self.producer[id(out)] = index
        if self.refs is not None:
            self.refs[id(out)] = weakref.ref(out)
            drop(op)
        elif self.by_storage is not None:
            self.by_storage.setdefault(storage_key(out), []).append(index)

    def add_op(self, op: RawOp) -> int:
        """Append a recorded op, dropping its output unless it is selected; return its index."""
        ops = self.ops
        index = len(ops)
        ops.append(op)
        tensor = op.out
        if self.gradients is not None:
            self.suspend()  # register_hook dispatches to the mode
            try:
                self.gradients.watch(index, tensor)
            finally:
                self.resume()
        self.producer[id(tensor)] = index
        if self.refs is not None:  # not every output kept (``save`` other than "all")
            self.refs[id(tensor)] = weakref.ref(tensor)
            labels = self.labels.add(index, op) if self.labels is not None else None
            # Buffer versions are kept while the capture runs (the journal compares them) and
            # selected at its end (:meth:`drop_unselected_buffers`).
            if op.buffer is None:
                info = None if labels is None else self._info(op, *labels)
                if info is None or self.select is None or not self.select(info):
                    drop(op)
                    return index
                self.raw.selected.append((index, info))
        if self.by_storage is not None:
            self.by_storage.setdefault(storage_key(tensor), []).append(index)
        return index

    def set_producer(self, tensor: _Tensor, index: int) -> None:
        """Record that ``tensor`` is op ``index``'s output (or buffer version)."""
        self.producer[id(tensor)] = index
        if self.refs is not None:
            self.refs[id(tensor)] = weakref.ref(tensor)

    def producer_of(self, tensor: _Tensor) -> Optional[int]:
        """The op whose output ``tensor`` is, or ``None``."""
        index = self.producer.get(id(tensor))
        if index is not None and self.refs is not None and self.refs[id(tensor)]() is not tensor:
            return None
        return index

    def _info(self, op: RawOp, layer_label: str, pass_num: int) -> OpInfo:
        module_call = None
        if op.call >= 0:
            module, number = self.raw.calls[op.call]
            module_call = f"{self.raw.modules[module].address}:{number}"
        return OpInfo(f"{layer_label}:{pass_num}", layer_label, pass_num, op.name, self.raw.modules[op.scope].address,
                      module_call, op.shape, op.dtype, op.out.device)

    def drop_unselected_buffers(self) -> None:
        """At the end of a capture that does not keep everything: drop the buffer versions not
        selected (named by buffer address and version), and the values only a replay reads."""
        for index, op in enumerate(self.raw.ops):
            info = op.buffer
            if info is None or op.out is None:
                continue
            owner = self.raw.modules[op.scope].address
            version = OpInfo(f"{info.address}:{info.version}", info.address, info.version, op.name, owner, None,
                             op.shape, op.dtype, op.out.device)
            if self.select is not None and self.select(version):
                self.raw.selected.append((index, version))
            else:
                drop(op)
        self.raw.selected.sort(key=lambda entry: entry[0])
        if self.select is None:
            self.raw.buffer_values = {address: (None, None) for address in self.raw.buffer_values}
        self.raw.state = None

    def _arguments(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, list[Source], tuple[str, ...]]:
        """A recorded call's arguments as its :class:`~capture.replay.RecordedCall` keeps them,
        the :data:`~capture.replay.Source` of each tensor argument (what the ops it reads are
        read from: ``RawOp.parents``) and the parameters it reads.

        A tensor an op produced becomes :data:`~capture.replay.PRODUCED` (replay reads that
        op's value) and a plain list is copied (later changes to a list the model keeps do not
        reach the record). Tensor arguments are visited in :func:`capture.replay.substitute`'s
        order: positional then keyword values, one level into plain lists and tuples.
        """
        sources: list[Source] = []
        params: list[str] = []
        if self.by_id and not self.storage_writer:
            kept = self._read_by_id(args, sources, params)
        else:
            kept = tuple([self._read_value(value, sources, params) for value in args])
        if kwargs:
            kwargs = {key: self._read_value(value, sources, params) for key, value in kwargs.items()}
        return kept, kwargs, sources, tuple(params)

    def _read_by_id(self, args: Iterable[Any], sources: list[Source], params: list[str]) -> tuple:
        """The arguments as kept, when an op's output is known by its id (every output is held,
        so an id found is the tensor itself; with ``save="none"``, an id found whose weak
        reference still gives the tensor; no aliased write): the common case; a parameter too.
        A value of a type that never holds a tensor (:data:`_ATOMS`) is kept as it is, without
        a type test more; other lists, tuples and tensors go through :meth:`_read_value`."""
        kept: list[Any] = []
        producer, refs = self.producer, self.refs
        for value in args:
            key = id(value)
            index = producer.get(key)
            if index is not None and (refs is None or refs[key]() is value):
                sources.append(index)
                kept.append(PRODUCED)
                continue
            param = self.param_names.get(key)
            if param is not None:
                params.append(param)
                sources.append(-1)
                kept.append(value)
                self.settlement.foreign[key] = value
            elif type(value) in _ATOMS:
                kept.append(value)
            elif type(value) is list or type(value) is tuple or isinstance(value, _Tensor):
                kept.append(self._read_value(value, sources, params))
            else:
                kept.append(value)
        return tuple(kept)

    def _read_passed(self, args: tuple, sources: list[Source], params: list[str]) -> bool:
        """:meth:`_read_by_id` of a call whose pending record keeps its positional arguments as
        passed (every output held: ``save="all"``): only the sources and the parameters read are
        collected; a tensor an op made stays where it is and becomes
        :data:`~capture.replay.PRODUCED` when the record is built
        (:func:`~capture.replay.make_passed_call`), one copy of the arguments fewer per op.
        ``False``, part of them read, at a list, which must be copied as it is now (a later change
        to it must not reach the record)."""
        producer = self.producer
        for value in args:
            key = id(value)
            index = producer.get(key)
            if index is not None:
                sources.append(index)
                continue
            param = self.param_names.get(key)
            if param is not None:
                params.append(param)
                sources.append(-1)
                self.settlement.foreign[key] = value
            elif type(value) in _ATOMS:
                continue
            elif type(value) is list:
                return False
            elif type(value) is tuple:
                for item in value:
                    if isinstance(item, _Tensor):
                        self._read_tensor(item, sources, params)
            elif isinstance(value, _Tensor):
                self._read_tensor(value, sources, params)
        return True

    def _reads_written(self, args: tuple, kwargs: Optional[dict]) -> bool:
        """Whether a call reads an op's output whose storage an in-place op wrote after it
        (through another alias: a view of it, or the tensor it views), which :meth:`_source` makes
        an :class:`~capture.replay.Aliased` read and :meth:`_record` snapshots. Visits the
        tensors :meth:`_read_value` visits; only asked once an in-place write was recorded."""
        producer, refs = self.producer, self.refs
        for value in (*args, *kwargs.values()) if kwargs else args:
            for item in value if type(value) is list or type(value) is tuple else (value,):
                # (an id found is an output's: :meth:`producer_of`, inline)
                index = producer.get(id(item))
                if (index is not None and (refs is None or refs[id(item)]() is item)
                        and self._written_after(item, index) >= 0):
                    return True
        return False

    def _written_after(self, tensor: _Tensor, index: int) -> int:
        """The last in-place op that wrote ``tensor``'s storage, when it came after op ``index``
        made ``tensor`` (the value read is then not that op's output): its index; else -1."""
        writer = self.storage_writer.get(storage_key(tensor), -1)
        return writer if writer > index else -1

    def _read_value(self, value: Any, sources: list[Source], params: list[str]) -> Any:
        if isinstance(value, _Tensor):
            return self._read_tensor(value, sources, params)
        if type(value) is list or type(value) is tuple:
            return type(value)([self._read_tensor(item, sources, params) if isinstance(item, _Tensor)
                                else item for item in value])
        return value

    def _read_tensor(self, tensor: _Tensor, sources: list[Source], params: list[str]) -> Any:
        index = self.producer.get(id(tensor))
        source: Source
        if index is not None and self.refs is None and not self.storage_writer:
            source = index  # an op's output, no weak check, no aliased write
        elif index is None and id(tensor) in self.param_names:
            params.append(self.param_names[id(tensor)])
            source = -1
        else:
            source = self._source(tensor, params)
        sources.append(source)
        if type(source) is int and source < 0:
            self.settlement.foreign[id(tensor)] = tensor
            return tensor
        return PRODUCED

    def _source(self, tensor: _Tensor, params: list[str]) -> Source:
        """The op whose output ``tensor`` is (a buffer's version included), or -1.

        When an in-place op later wrote the tensor's storage through another alias (a view),
        the source is that op, :class:`~capture.replay.Aliased`: the value read is then kept
        as a snapshot for replay, since no op's output is exactly it.
        """
        index = self.producer_of(tensor)
        if index is not None:
            if self.storage_writer:
                writer = self._written_after(tensor, index)
                if writer >= 0:
                    return Aliased(writer)
            return index
        name = self.param_names.get(id(tensor))
        if name is not None:
            params.append(name)
            return -1
        index = self.buffers.read(tensor)
        return -1 if index is None else index

    def _alias_snapshots(self, args: tuple, kwargs: dict, sources: list[Source]) -> dict:
        if not any(type(s) is Aliased for s in sources):
            return {}
        return {k: t.clone() for k, t in enumerate(tensor_args(args, kwargs)) if type(sources[k]) is Aliased}

    def preserve(self, target: Any, inplace: bool = False) -> None:
        """Copy what a write is about to change: the saved outputs sharing its storage, and
        the model state replays read from it (``inplace``: the op writing it is recorded next)."""
        if isinstance(target, _Tensor):
            key = storage_key(target)
            if self.by_storage is None:
                self.by_storage = {}
                for index, op in enumerate(self.raw.ops):
                    if op.out is not None:
                        self.by_storage.setdefault(storage_key(op.out), []).append(index)
            for index in self.by_storage.pop(key, ()):
                op = self.raw.ops[index]
                op.meta = op.meta or meta_of(op.out)
                op.out = snapshot(op.out)
            self.ownership.before_write(self.raw, target, key, inplace)

    def _site(self, frame: Optional[FrameType]) -> tuple[int, int, Optional[tuple[Segment, ...]]]:
        """Scope, module call and call-site chain of an op called from ``frame``."""
        if frame is not None and self.stack:
            back = frame.f_back
            code = frame.f_code
            if back is not None and id(code) not in self.roles:
                if back.f_code is _CALL_MODULE:
                    # torch called straight from a module's forward: the common case, made cheap
                    call = self.stack[-1]
                    site = self.interner.sites.get((id(code), frame.f_lasti)) or self.interner.frame_site(frame)
                    return self.raw.calls[call][0], call, site
                outer = back.f_back
                if (outer is not None and outer.f_code is _CALL_MODULE and self.fast
                        and id(back.f_code) not in self.roles):
                    # one function between forward and torch (``F.layer_norm``, a helper): the raw
                    # key :func:`read_raw` would read, without the walk
                    call = self.stack[-1]
                    raw = (id(code), frame.f_lasti, id(back.f_code), back.f_lasti)
                    site = self.interner.sites.get(raw) or self.interner.site(raw, frame, self.roles)
                    return self.raw.calls[call][0], call, site
        raw, stop = read_raw(frame, self.roles)
        level = len(self.stack) - 1
        if stop is not None and stop.f_code is not _CALL_IMPL_INNER and raw and level >= 0:
            call = self.stack[level]  # no hook in the way: the common case, made cheap
            return self.raw.calls[call][0], call, self.interner.site(raw, cast(FrameType, frame), self.roles)
        frames, stop = read_stack(frame, self.roles)
        segments: list[Segment] = [self.interner.intern(frames)] if frames else []
        while stop is not None and self._is_hook_call(stop) and level >= 0:
            hooked = self.raw.calls[self.stack[level]][0]
            level -= 1
            # The hook runner's frame (torch's ``_call_impl``), called by :meth:`call_module`'s
            # (a boundary itself): the frame that called the module is above both.
            runner = stop.f_back
            caller = runner and runner.f_back
            frames, stop = read_stack(caller and caller.f_back, self.roles)
            mark = Hooked(hooked)
            segments[:0] = [self.interner.intern(frames), mark] if frames else [mark]
        call = self.stack[level] if level >= 0 else -1
        scope = self.raw.calls[call][0] if call >= 0 else 0
        return scope, call, tuple(segments) if segments else None

    def _is_hook_call(self, frame: FrameType) -> bool:
        """Whether a module-boundary frame is calling a hook rather than ``forward``."""
        if frame.f_code is not _CALL_IMPL_INNER:
            return False
        lasti = frame.f_lasti
        hook = self.hook_calls.get(lasti)
        if hook is None:
            hook = self.hook_calls[lasti] = instruction_place(_CALL_IMPL_INNER, lasti).line not in _FORWARD_LINES
        return hook

    # -- modules ---------------------------------------------------------------------------

    def _module(self, module: nn.Module) -> int:
        """Add a module that is not the model's (met when called) to ``raw.modules`` as
        ``<Type#index>``; its index."""
        modules = self.raw.modules
        index = self.module_index[id(module)] = len(modules)
        self.keep_alive.append(module)
        if _is_script(module):
            self.scripts.add(index)
        address = f"<{type(module).__name__}#{index}>"
        modules.append(module_record(module, address, address + ".", None, vars(module)))
        return index

    def call_module(self, module: nn.Module, args: tuple, kwargs: dict) -> Any:
        """Run one module call as a numbered call of that module, in its own scope.

        A module without hooks has its ``forward`` called from here, as torch's ``_call_impl``
        would call it, so this frame is a module boundary (:data:`_ROLES`); a module with hooks
        is run by torch's code (:data:`_CALL_IMPL_FUNC`), its hooks' ops recorded as such."""
        if self.compiled is not None and type(module) is self.compiled:  # torch.compile(m): run m
            module = uncompiled(module)  # (in this frame: see :meth:`_site`'s hook runner)
        if _get_ident() != self.thread:
            if id(module) not in self.module_index:
                return _CALL_IMPL_FUNC(module, *args, **kwargs)  # not the traced model's: untouched
            raise self.guard.refuse(CaptureThreadError(
                f"{type(module).__name__} of the traced model was called from a second Python thread "
                "during a capture; torchlens captures one thread at a time (nn.DataParallel runs "
                "replicas in threads): trace the module on one thread, e.g. trace `model.module` "
                "for a DataParallel model"
            ))
        try:
            index = self.module_index[id(module)]
        except KeyError:  # not the model's, met for the first time
            index = self._module(module)
        raw = self.raw
        record = raw.modules[index]
        record.num_calls = number = record.num_calls + 1
        calls = raw.calls
        call = len(calls)
        calls.append((index, number))
        stack = self.stack
        # The call's record, its slots set here (the class's ``__init__`` would cost a Python
        # call per module call; ``tests/test_capture_fast.py`` checks every slot is set).
        io = _new(RawCall)
        io.parent = stack[-1] if stack else -1
        if not kwargs and len(args) == 1 and (found := self.held.get(id(args[0]))) is not None:
            io.inputs = [found]  # one tensor an op made: the common case, one lookup
        else:
            io.inputs = call_inputs(self, args, kwargs)
        raw.call_io.append(io)
        # A TorchScript module is one boundary op: nothing inside it is recorded, not even the
        # Python kernels some devices (meta) run for its ops.
        script = index in self.scripts
        if script:
            self.suspend()
        stack.append(call)
        try:
            # torch's own shortcut in ``_call_impl``, taken here (a frame and an argument tuple less
            # per call): no hook of any kind and no JIT tracing, ``forward`` called at once; from
            # this frame, so that it is a module boundary as ``_call_impl``'s is (:data:`_ROLES`).
            # Otherwise torch's code runs the call, its hooks (:meth:`_is_hook_call`) and all.
            if (_tracing_state() or module._backward_hooks or module._backward_pre_hooks or module._forward_hooks
                    or module._forward_pre_hooks or _GLOBAL_BACKWARD_PRE_HOOKS or _GLOBAL_BACKWARD_HOOKS
                    or _GLOBAL_FORWARD_HOOKS or _GLOBAL_FORWARD_PRE_HOOKS):
                out = _CALL_IMPL_FUNC(module, *args, **kwargs)
            else:
                out = module.forward(*args, **kwargs) if kwargs else module.forward(*args)
        except Exception as error:
            io.outputs = []
            self._annotate(error, None, None)
            raise
        finally:
            stack.pop()
            if script:
                self.resume()
        if (found := self.held.get(id(out))) is not None:
            io.outputs = [found]  # one tensor an op made: the common case, one lookup
        else:
            io.outputs = call_outputs(self, out)
        if script and not self.suspended:  # the outermost one (``suspended`` is as it was before the call)
            self._record(module, "torchscript", args, kwargs, out, sys._getframe(1))
        if self.containers:
            record_module_call(self, call, args, kwargs, out)
        return out

    def run_transform(self, name: str, impl: Callable, args: tuple, kwargs: dict, frame: Optional[FrameType],
                      off_stack: bool = False) -> Any:
        """Run a ``torch.func`` transform or a higher-order op as one boundary op; nothing inside
        is recorded. ``off_stack`` runs it with the capture's mode off the mode stack (Dynamo,
        which higher-order ops call, would otherwise trace the mode's own code)."""
        if self.suspended:
            return impl(*args, **kwargs)
        self.suspend()
        lifted = False
        try:
            if off_stack and _mode_depth() and _mode_at(_mode_depth() - 1) is self:
                lifted = _pop_mode() is self
            out = impl(*args, **kwargs)
        finally:
            self.resume()
            if lifted:
                _push_mode(self)
        self._record(impl, name, args, kwargs, out, frame)
        return out

    def refuse_backward(self, run_backward: Callable, args: tuple, kwargs: dict) -> Any:
        """torch's autograd engine entry: a backward pass inside the forward pass is refused."""
        if threading.get_ident() != self.thread or self.suspended:
            return run_backward(*args, **kwargs)
        raise UnsupportedForwardError(
            "the forward pass runs a backward pass (torch.autograd.grad or .backward()) while "
            "torchlens traces it: its gradient ops would be recorded apart from the ops they come "
            "from; trace the model without the gradient step (or wrap it in torch.func.grad, "
            "which is recorded as one op)"
        )

    def reassign_buffer(self, module: nn.Module, name: str, value: Any, frame: Optional[FrameType]) -> None:
        """Journal ``module.name = value`` for a registered buffer, keyed by where it was written."""
        if not self.suspended:
            scope, _, site = self._site(frame)
            self.buffers.reassign(module, name, value, (scope, site))

    # -- inputs, outputs, errors -------------------------------------------------------------

    def add_boundary(self, kind: OpKind, tensor: _Tensor) -> None:
        """Record an input or output tensor as a single-pass layer of its own."""
        params: list[str] = []
        source = self._source(tensor, params) if kind is OUTPUT else -1
        # An output read after a write through another alias (a view) has two parents: the op
        # whose output it is and the op that wrote it last (``Reexecution.written_through_view``).
        if isinstance(source, Aliased):
            parents = [cast(int, self.producer_of(tensor)), source.writer]
        else:
            parents = [source] if source >= 0 else []
        self.add_op(RawOp(kind, kind._value_, 0, -1, 0, None, "", tensor, tuple(tensor.shape), tensor.dtype,
                          parents, tuple(params)))

    def _annotate(self, error: BaseException, op: Optional[str], frame: Optional[FrameType]) -> None:
        """Note where ``error`` happened: in op ``op`` (``None``: in the module's own Python),
        in the innermost module call running, at the innermost place in the model's code."""
        if getattr(error, "_torchlens_noted", False) or not hasattr(error, "add_note"):
            return
        where = _innermost_place(frame, error, self.roles)
        module = self.raw.modules[self.raw.calls[self.stack[-1]][0]].address if self.stack else "self"
        in_op = f"op `{op}` in " if op is not None else ""
        error.add_note(f"torchlens: raised in {in_op}module `{module}` at {where}")
        try:
            error._torchlens_noted = True  # type: ignore[attr-defined]
        except AttributeError:
            pass

    # -- installation ----------------------------------------------------------------------

    def owns(self, tensor: _Tensor) -> bool:
        """Whether ``tensor`` is one of the capture's: an input, op output, parameter or buffer."""
        key = id(tensor)
        return key in self.producer or key in self.param_names or key in self.buffers.address_of

    def plan(self) -> tuple[Callable[[], Any], Callable[[], Any]]:
        """Prepare the one-shot C-level calls that claim the slot and install the capture.

        Sets :attr:`undo`, the call that removes what each :class:`Stage` put in place.
        """
        self.planned = _torch_patches()
        install = [
            *self.planned[0],
            (setattr, _SERVING, "capture", self),
            (_BUFFER_HOOKS.__setitem__, self, self._buffer_hook),
            (setattr, self.guard, "active", True),
            (setattr, threading, "_trace_hook", self.guard.enter_thread),
            (_push_mode, self),
            (setattr, self, "stage", Stage.INSTALLED),
            (setattr, self, "plain_now", self.plain),
        ]
        self.undo = (tuple, atomic(release_steps(self)), atomic(self.undo_steps(own_thread=True)))
        return atomic(claim_steps(self)), atomic(install)

    def undo_steps(self, own_thread: bool) -> Iterable[Step]:
        """The steps that remove everything :meth:`plan`'s install put in place, and the claim.

        The capture's torch function mode is popped last, and only on its own thread (a forked
        child has no such thread).
        """
        return chain(
            [(setattr, self, "plain_now", _NO_PLAIN),
             (setattr, self.guard, "active", False),
             (setattr, threading, "_trace_hook", self.guard.previous),
             (_BUFFER_HOOKS.pop, self, None),
             (setattr, _SERVING, "capture", None)],
            self.planned[1],
            self.patches.undo(),
            release_steps(self),
            _pop_own_mode(self) if own_thread else (),
        )

    def close(self) -> None:
        """Untie the capture from itself once it is removed and its capture settled: its undo
        calls, the worker guard and the buffer journal refer back to it, so that it (with the
        tables and tensors it holds) would otherwise wait for the cyclic collector; without them
        it is freed as soon as the last reference to it goes."""
        self.undo = ()
        self.guard.owns = _owns_nothing
        del self.buffers

    def _buffer_hook(self, module: nn.Module, name: str, value: Any) -> None:
        """torch's buffer-registration hook: journal ``module.name = value`` for a buffer."""
        if threading.get_ident() != self.thread:
            if id(module) in self.module_index:
                raise self.guard.refuse(CaptureThreadError(
                    f"buffer `{name}` of the traced model was assigned from a second Python thread "
                    "during a capture; torchlens captures one thread at a time"
                ))
            return
        if name in module._buffers and not self.suspended:
            self.reassign_buffer(module, name, value, sys._getframe(1))


class _Serving:
    """The capture whose patches are installed (its install and undo steps set and clear it):
    the one the patched functions of :func:`_torch_patches` serve."""

    __slots__ = ("capture",)

    def __init__(self) -> None:
        self.capture: Optional[Capture] = None


_SERVING = _Serving()


def _route_template(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    # The code torch's ``_call_impl`` function runs while a capture is installed (:data:`_ROUTED`,
    # where the two strings are the objects they name): ``__globals__`` stays torch's, so what the
    # code reads it holds as constants.
    capture = "<serving>".capture  # type: ignore[attr-defined]
    if capture is None:
        return "<call_impl>".__call__(module, *args, **kwargs)  # type: ignore[operator]
    return capture.call_module(module, args, kwargs)


def _routed_code() -> CodeType:
    code = _route_template.__code__
    objects = {"<serving>": _SERVING, "<call_impl>": _CALL_IMPL_FUNC}
    return code.replace(co_consts=tuple(objects.get(c, c) if type(c) is str else c for c in code.co_consts))


#: Module calls are routed to the capture by swapping the ``__code__`` of torch's own
#: ``nn.Module._call_impl`` function for this code: a function attribute, where setting the class
#: attribute (:func:`_module_call`, used when the class holds another function) makes CPython
#: invalidate the type caches of ``nn.Module`` and every subclass, on install and again on
#: removal (hundreds with ``transformers`` loaded: tens of microseconds each time, and the
#: forward pass refilling them).
_ROUTED = _routed_code()


def _module_call(original: Callable) -> Callable:
    def _call_impl(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
        capture = _SERVING.capture
        if capture is None:
            return original(module, *args, **kwargs)
        return capture.call_module(module, args, kwargs)

    return _call_impl


def _mode_setter(setter: Callable) -> Callable:
    def set_mode(*args: Any, **kwargs: Any) -> Any:
        result = setter(*args, **kwargs)
        capture = _SERVING.capture
        if capture is not None and _get_ident() == capture.thread:  # grad mode is per thread
            capture.modes.changed()
        return result

    return set_mode


def _reflected(method: Callable, name: str) -> Callable:
    def reflected(tensor: torch.Tensor, other: Any) -> Any:
        capture = _SERVING.capture
        if capture is None or _get_ident() != capture.thread:
            return method(tensor, other)
        capture.pending_name = name
        try:
            return method(tensor, other)
        finally:
            capture.pending_name = None

    return reflected


def _passing(check: Callable) -> Callable:
    """A torch-function check (``has_torch_function``...) that says no where the capture says so
    (:meth:`Capture.passes_checks`), on the capture's thread."""
    def bypassing_check(*args: Any) -> bool:
        capture = _SERVING.capture
        if capture is not None and _get_ident() == capture.thread and capture.passes_checks():
            return False
        return check(*args)

    return bypassing_check


def _transform(impl: Callable, name: str, off_stack: bool) -> Callable:
    def transform(*args: Any, **kwargs: Any) -> Any:
        capture = _SERVING.capture
        if capture is None or _get_ident() != capture.thread:
            return impl(*args, **kwargs)
        return capture.run_transform(name, impl, args, kwargs, sys._getframe(1), off_stack)

    return transform


def _backward_refusal(run_backward: Callable) -> Callable:
    def _engine_run_backward(*args: Any, **kwargs: Any) -> Any:
        capture = _SERVING.capture
        if capture is None:
            return run_backward(*args, **kwargs)
        return capture.refuse_backward(run_backward, args, kwargs)

    return _engine_run_backward


#: What every capture patches: (owner; attribute; the wrapper of the original value), the
#: owners that are modules loaded when first used named by their ``sys.modules`` key, last.
_PATCH_TARGETS: tuple[tuple[Any, str, Callable[[Callable], Callable]], ...] = (
    (nn.Module, "_call_impl", _module_call),
    *((owner, setter, _mode_setter) for owner, setter in _MODE_SETTERS),
    *((_Tensor, dunder, partial(_reflected, name=name)) for dunder, name in funcs.REFLECTED.items()),
    (torch.autograd, "_engine_run_backward", _backward_refusal),
    # The module most of torch's Python functions live in (other modules are patched when met).
    *(("torch.nn.functional", check, _passing) for check in funcs.CHECK_NAMES),
    *((module_name, attr, partial(_transform, name=name, off_stack=off_stack))
      for table, off_stack in ((funcs.TRANSFORMS, False), (funcs.HIGHER_ORDER, True))
      for module_name, attr, name in table),
)
_PASSING_MODULES = frozenset(owner for owner, _, wrap in _PATCH_TARGETS if wrap is _passing)
_FIXED_OWNERS = tuple(owner for owner, _, _ in _PATCH_TARGETS if type(owner) is not str)
_OWNER_NAMES = tuple(owner for owner, _, _ in _PATCH_TARGETS if type(owner) is str)
_ATTRIBUTES = tuple(attr for _, attr, _ in _PATCH_TARGETS)
#: The class targets: what the class itself defines decides how a patch is undone (read from
#: each class's own dict).
_CLASS_DICTS = tuple(class_dict(owner) for owner, _, _ in _PATCH_TARGETS if isinstance(owner, type))
_CLASS_ATTRIBUTES = tuple(attr for owner, attr, _ in _PATCH_TARGETS if isinstance(owner, type))
#: The steps that install a :class:`Patches`, and those that undo it.
PlannedSteps = tuple[tuple[Step, ...], tuple[Step, ...]]
#: The last :func:`_torch_patches`: (what each target held then, its patches' steps).
_planned: list[tuple[tuple, PlannedSteps]] = []


def _torch_patches() -> PlannedSteps:
    """The steps that install and undo the patches of every :data:`_PATCH_TARGETS` present now.

    The wrappers serve whichever capture is installed (:data:`_SERVING`), so the same patches
    serve every capture as long as each target holds the same value as when they were made
    (checked by identity, every time: a target changed or loaded since gets new ones).
    """
    owners = (*_FIXED_OWNERS, *map(sys.modules.get, _OWNER_NAMES))
    values = tuple(map(getattr, owners, _ATTRIBUTES, repeat(_MISSING)))
    now = (*owners, *values, *map(dict.get, _CLASS_DICTS, _CLASS_ATTRIBUTES, repeat(_MISSING)),
           _CALL_IMPL_TORCH.__code__)
    if _planned and all(map(is_, _planned[0][0], now)):
        return _planned[0][1]
    patches = Patches()
    for (_, attr, wrap), owner, value in zip(_PATCH_TARGETS, owners, values):
        if owner is nn.Module and value is _CALL_IMPL_TORCH:  # torch's own function: swap its code
            patches.plan(value, "__code__", _ROUTED)
        elif owner is not None and value is not _MISSING:
            patches.plan(owner, attr, wrap(cast(Callable, value)))
    steps = tuple(patches.install()), tuple(patches.undo())
    _planned[:] = [(now, steps)]
    return steps


def capture_forward(
    model: nn.Module, args: tuple, kwargs: dict, save: Save = ALL, containers: bool = False,
    gradients: bool = False,
) -> RawCapture:
    """Run ``model(*args, **kwargs)`` once and return everything it recorded.

    ``save`` selects the op outputs kept (``CaptureOptions.save``). The output's container
    structure is always recorded; ``containers`` adds the inputs', the module calls' and each
    op's place in them (:mod:`torchlens.capture.boundary`).

    Raises :class:`CaptureThreadError` when another capture is running or this one is nested.
    Claiming, installing and removing are each one C-level call (:func:`capture.patches.atomic`)
    and :attr:`Capture.stage` says which took place, so an interrupt at any point leaves
    nothing behind.
    """
    capture = Capture(model, save, containers, gradients)
    capture.ownership = Ownership(capture.model, record_inputs(capture, args, kwargs))
    claim, install = capture.plan()
    try:
        claim()
        check_claim(capture)
        install()
        output = model(*args, **kwargs)
    except Exception as error:
        refusal = capture.guard.refusal
        if refusal is not None and error is not refusal:
            raise refusal from error
        raise
    finally:
        capture.undo[capture.stage]()
    if capture.guard.refusal is not None:
        raise capture.guard.refusal
    if not _called_directly(model):
        capture.returned = None
    record_output(capture, output, keep_values=capture.keep_all)
    state, modes = capture.raw.state, capture.modes.modes
    if modes != state.modes:  # a mode changed during the pass: every distinct one, the starting ones first
        capture.raw.state = GlobalState(state.rng, state.cuda_rng, modes)
    capture.raw.buffer_values = capture.buffers.finish()
    now = walk(model)
    capture.ownership.settle(capture.raw, capture.keep_all, now, capture.settlement)
    # (each shape as torch gives it, a ``torch.Size``: a tuple, made a plain one when the records are built)
    capture.raw.params = {name: (param.shape, param.dtype) for name, param in now.params}
    if not capture.keep_all:
        capture.drop_unselected_buffers()
    raw = capture.raw
    raw.chains = capture.interner.chains
    raw.output = output
    capture.close()
    return raw


def _owns_nothing(tensor: _Tensor) -> bool:
    """A closed capture's ownership test (its guard is inactive): it owns no tensor any more."""
    return False


def _called_directly(model: nn.Module) -> bool:
    """Whether ``model(...)`` is torch's module call alone, so that what it returns is what the
    outermost module call returned, as it returned it (no ``__call__`` of the model's own, which
    may change or replace it)."""
    kind = type(model)
    return (kind.__call__ is nn.Module.__call__ and kind._call_impl is _CALL_IMPL_TORCH
            and "_call_impl" not in vars(model))


def drop(op: RawOp) -> None:
    """Forget an op's output, keeping what users read of it without the tensor."""
    op.meta = op.meta or meta_of(op.out)
    op.keep_shape()
    op.out = None


def _compiled_module_type() -> Optional[type]:
    """``torch.compile``'s ``OptimizedModule``, if Dynamo is loaded (no compiled module otherwise)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)


def uncompiled(model: nn.Module) -> nn.Module:
    """The module ``torch.compile(model)`` wraps (``model`` itself when it is not such a wrapper):
    its Python is what a capture records."""
    compiled = _compiled_module_type()
    while compiled is not None and type(model) is compiled:
        model = _compiled_target(model)
    return model


def _compiled_target(compiled: nn.Module) -> nn.Module:
    """The module a ``torch.compile`` wrapper (``OptimizedModule``) runs: its ``_orig_mod``
    submodule (``nn.Module.__getattr__`` types a submodule as tensor or module)."""
    return cast(nn.Module, compiled._orig_mod)


#: Whether a mode stack depth is above zero (``0 < depth``).
_POSITIVE = partial(lt, 0)


def _pop_own_mode(mode: Capture) -> Iterator[Step]:
    """Steps that pop ``mode`` off the top of torch's mode stack while it is on top (each copy).

    torch's own ``_pop_mode_temporarily`` can lose a mode when interrupted, and an interrupted
    :meth:`Capture._run_transparent` can leave a second copy, so the pops are conditional:
    built from C iterators alone (:mod:`capture.patches`), which read the stack again before
    each pop (lazily, as the steps run), so the steps end when the top is not ``mode``.
    """
    depths = takewhile(_POSITIVE, starmap(_mode_depth, repeat(())))
    on_top = map(is_, map(_mode_at, map(sub, depths, repeat(1))), repeat(mode))
    return compress(repeat((_pop_mode,)), takewhile(truth, on_top))


def _is_script(module: nn.Module) -> bool:
    """Whether ``module`` is a TorchScript module: one boundary op (read from its class's MRO;
    ``isinstance`` asks the metaclass, then the module's ``__class__``)."""
    return _ScriptModule in type(module).__mro__


def _args_text(args: tuple, kwargs: dict) -> str:
    plain = [a for a in args if not isinstance(a, _Tensor)]
    return repr((plain, {k: v for k, v in kwargs.items() if not isinstance(v, _Tensor)}))


def _innermost_place(frame: Optional[FrameType], error: BaseException, roles: dict[int, int]) -> str:
    if frame is not None:
        frames, _ = read_stack(frame, roles)
        if frames:
            return f"{frames[0].f_code.co_filename}:{frames[0].f_lineno}"
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "an unknown place"


def _own_codes() -> tuple:
    """Every code object defined in this module (left out of call-site chains)."""
    out, todo = [], [v for v in list(globals().values()) + list(vars(Capture).values())]
    seen = set()
    while todo:
        item = todo.pop()
        code = getattr(item, "__code__", item)
        if type(code) is not CodeType or id(code) in seen or code.co_filename != __file__:
            continue
        seen.add(id(code))
        out.append(code)
        todo.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    return tuple(out)


_OWN_CODES = _own_codes()
#: The code of :meth:`Capture.call_module`: the frame that calls the ``forward`` of a module
#: without hooks, as torch's ``_call_impl`` does.
_CALL_MODULE = Capture.call_module.__code__
#: Frame roles every capture starts with: module boundaries and the capture's entry stop a
#: chain; torch's call plumbing and this module's own code are left out of it.
_ROLES: dict[int, int] = {
    id(_CALL_IMPL): STOP,
    id(_CALL_IMPL_INNER): STOP,
    id(capture_forward.__code__): STOP,
    id(nn.Module._wrapped_call_impl.__code__): SKIP,
    id(nn.Module.register_buffer.__code__): SKIP,
    id(nn.Module.__setattr__.__code__): SKIP,
    id(torch.overrides.handle_torch_function.__code__): SKIP,
    **{id(code): SKIP for code in _OWN_CODES},
    id(_CALL_MODULE): STOP,  # (one of this module's codes: the frame that calls a hookless module's forward)
}
