"""What a capture keeps of each torch call so the graph can be replayed op by op.

A :class:`RecordedCall` owns what it holds: argument lists are copied when the call is
recorded (a list the model appends to later is not the list the call saw), tensor arguments
that an op produced are dropped (replay reads them from that op's saved output), and every
other tensor argument (a parameter, a module attribute, a constant) is replaced by a snapshot
at the end of the capture, so nothing the model or the caller does afterwards reaches it.
During the forward pass most calls are kept as a plain tuple instead (a pending call:
:func:`make_call`), cheaper to make; the record is built from it, with those snapshots, when it
is first read (:class:`Settlement`). A pending call whose arguments hold no list and no keyword
keeps them as passed, every output being held anyway, and drops the produced tensors only then
(:func:`make_passed_call`).
:class:`GlobalState` is the global torch state the capture ran under, restored for a replay.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Union

import torch

from torchlens.analysis.builder import builder

#: Device types whose autocast state a capture records.
AUTOCAST_DEVICES = ("cpu", "cuda")
#: Autocast enabled on none of them (what :meth:`Modes.now` knows without asking per device
#: when torch says autocast is off everywhere).
_AUTOCAST_OFF = (False,) * len(AUTOCAST_DEVICES)
_any_autocast: Callable[[], bool] = torch._C._is_any_autocast_enabled


class Produced:
    """Stands for a tensor argument an op produced: replay reads that op's value instead."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<produced>"


#: The one :class:`Produced` marker.
PRODUCED = Produced()


@dataclass(frozen=True, slots=True)
class Aliased:
    """The source of a tensor argument read after op ``writer`` wrote its storage through
    another alias (a view): no op's output is exactly the value read, so replay takes the
    call's snapshot of it, and ``writer`` is the op it depends on."""

    writer: int


#: Where a tensor argument came from: an op's index (a buffer version included), -1 for
#: none (a parameter or a constant), or an :class:`Aliased` read.
Source = Union[int, Aliased]


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One torch call as it was made: shared by the ops of its output slots."""

    #: The callable torch dispatched (``torch.tanh``, ``Tensor.add``, a ScriptModule, a
    #: ``torch.func`` implementation).
    func: Callable
    #: The arguments as passed, lists copied and :data:`PRODUCED` for a tensor an op made;
    #: after the capture, a snapshot for any other tensor.
    args: tuple
    kwargs: dict
    #: For each tensor argument, in :func:`substitute` order, its :data:`Source`.
    sources: list[Source]
    #: Tensor argument position -> its value when read, for the aliased reads above.
    snapshots: dict
    #: Index into ``GlobalState.modes`` of the modes the call ran under.
    modes: int = 0


#: :class:`RecordedCall` as a capture builds it, once per recorded call.
new_call = builder(RecordedCall)


class Settlement:
    """What one capture's pending calls are built with (:func:`make_call`).

    During the forward pass a recorded call is kept as a plain tuple, cheap to make; its
    :class:`RecordedCall` is built when ``RawOp.replay`` is first read. The tensor arguments
    no op produced (parameters, constants) are collected in :attr:`foreign` as the calls are
    recorded; at the end of the capture each gets its owned copy once (:attr:`owned`, set by
    ``Ownership.settle``), so building a call later gives what settling it then would have.
    """

    __slots__ = ("foreign", "owned", "shared", "early")

    def __init__(self) -> None:
        #: ``id(tensor)`` -> tensor, for each tensor argument no op produced (held, so no id is reused).
        self.foreign: dict[int, torch.Tensor] = {}
        #: ``id(tensor)`` -> its owned copy; ``None`` until the capture settles.
        self.owned: Optional[dict[int, torch.Tensor]] = None
        #: Settled positional arguments by the ids of the recorded ones, with those (held, so
        #: no id is reused while a later call is built): calls reading the same objects share them.
        self.shared: dict[tuple[int, ...], tuple[tuple, tuple]] = {}
        #: Whether a call was built before the capture settled (which settles those one by one).
        self.early = False


def make_call(pending: tuple) -> RecordedCall:
    """The :class:`RecordedCall` of a pending call, settled if its capture has settled.

    A pending call is a recorded call (no aliased read) as a capture keeps it until it is first
    read, a plain tuple the capture writes out where it records (a function call more per op
    otherwise): ``(make_call, func, args, kwargs, sources, modes, settlement)``, the arguments as
    :class:`RecordedCall` takes them. ``RawOp.replay`` builds it (``pending[0](pending)``)."""
    _, func, args, kwargs, sources, modes, settlement = pending
    owned = settlement.owned
    if owned is None:
        settlement.early = True
    elif -1 in sources:
        args, kwargs = _settled_args(args, kwargs, lambda tensor: owned.get(id(tensor), tensor), settlement.shared)
    return new_call(func, args, kwargs if kwargs else {}, sources, {}, modes)


def make_passed_call(pending: tuple) -> RecordedCall:
    """:func:`make_call` of a pending call that keeps its positional arguments as they were
    passed (no keyword argument, no list among them): each tensor an op made becomes
    :data:`PRODUCED` here, when the record is first read, instead of in a copy of the
    arguments made as the call is recorded."""
    _, func, args, kwargs, sources, modes, settlement = pending
    marked, _ = substitute(args, {}, lambda k, tensor: tensor if sources[k] == -1 else PRODUCED)
    return make_call((make_call, func, marked, kwargs, sources, modes, settlement))


@dataclass(frozen=True, slots=True)
class Modes:
    """The global modes a torch call ran under: autocast, grad mode, default dtype."""

    #: ``(device type, enabled, dtype)`` of autocast per device type.
    autocast: tuple[tuple[str, bool, torch.dtype], ...]
    grad_enabled: bool
    default_dtype: torch.dtype

    @classmethod
    def now(cls) -> "Modes":
        """The current modes (one record per distinct set of them, made once: :data:`_KNOWN_MODES`)."""
        enabled = tuple(map(torch.is_autocast_enabled, AUTOCAST_DEVICES)) if _any_autocast() else _AUTOCAST_OFF
        dtypes = tuple(map(torch.get_autocast_dtype, AUTOCAST_DEVICES))
        grad, default = torch.is_grad_enabled(), torch.get_default_dtype()
        key = (enabled, dtypes, grad, default)
        modes = _KNOWN_MODES.get(key)
        if modes is None:
            modes = _KNOWN_MODES[key] = cls(tuple(zip(AUTOCAST_DEVICES, enabled, dtypes)), grad, default)
        return modes

    def apply(self) -> None:
        """Make these the current modes."""
        for device, enabled, dtype in self.autocast:
            torch.set_autocast_enabled(device, enabled)
            torch.set_autocast_dtype(device, dtype)
        torch.set_grad_enabled(self.grad_enabled)
        torch.set_default_dtype(self.default_dtype)


#: Process-wide: the modes met (autocast enabled and dtype per device, grad mode, default dtype,
#: as :meth:`Modes.now` reads them) -> their record. Bounded: a few flags and dtypes.
_KNOWN_MODES: dict[tuple, Modes] = {}


class ModesJournal:
    """The modes a capture's calls ran under, each distinct one once (``RecordedCall.modes``)."""

    def __init__(self, start: Modes) -> None:
        """``start``: the modes in force as the capture starts."""
        self.table: dict[Modes, int] = {}
        #: Index of the current modes.
        self.index = self.intern(start)

    def intern(self, modes: Modes) -> int:
        return self.table.setdefault(modes, len(self.table))

    def changed(self) -> None:
        """A mode setter ran: note the modes now in force."""
        self.index = self.intern(Modes.now())

    @property
    def modes(self) -> tuple[Modes, ...]:
        return tuple(self.table)


@dataclass(frozen=True, slots=True)
class GlobalState:
    """The global torch state a forward pass ran under: what a replay must run under too."""

    #: torch's CPU random state before the forward pass, so a replay draws the same numbers.
    rng: torch.Tensor
    #: The CUDA random states, when CUDA was initialised (else ``None``).
    cuda_rng: Optional[tuple]
    #: Every distinct :class:`Modes` the forward pass's calls ran under, the starting ones first
    #: (``RecordedCall.modes`` indexes it).
    modes: tuple[Modes, ...]

    @classmethod
    def now(cls) -> "GlobalState":
        """The current state."""
        cuda = tuple(torch.cuda.get_rng_state_all()) if torch.cuda.is_initialized() else None
        return cls(torch.default_generator.get_state(), cuda, (Modes.now(),))  # (torch.get_rng_state())

    @contextlib.contextmanager
    def restored(self) -> Iterator[None]:
        """Run the block under this state's starting modes and random state; put back the
        state found before afterwards."""
        before = GlobalState.now()
        try:
            GlobalState._apply(self)
            yield
        finally:
            GlobalState._apply(before)

    @staticmethod
    def _apply(state: "GlobalState") -> None:
        torch.set_rng_state(state.rng)
        if state.cuda_rng is not None and torch.cuda.is_initialized():
            torch.cuda.set_rng_state_all(list(state.cuda_rng))
        state.modes[0].apply()


def tensor_args(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensor arguments of a call, in :func:`substitute` order."""
    found: list[torch.Tensor] = []

    def collect(_: int, tensor: torch.Tensor) -> torch.Tensor:
        found.append(tensor)
        return tensor

    substitute(args, kwargs, collect)
    return found


def substitute(args: tuple, kwargs: dict, replace: Callable[[int, Any], Any]) -> tuple[tuple, dict]:
    """Rebuild ``args``/``kwargs`` with ``replace(k, tensor)`` for the k-th tensor argument.

    The order is the capture's (``Capture._read``): positional, then keyword values, one
    level into plain lists and tuples. A :data:`PRODUCED` marker counts as a tensor argument.
    """
    k = 0

    def one(value: Any) -> Any:
        nonlocal k
        if isinstance(value, torch.Tensor) or value is PRODUCED:
            k += 1
            return replace(k - 1, value)
        if type(value) is list or type(value) is tuple:
            items = []
            for item in value:
                if isinstance(item, torch.Tensor) or item is PRODUCED:
                    item = replace(k, item)
                    k += 1
                items.append(item)
            return type(value)(items)
        return value

    new_args = tuple([one(a) for a in args])
    return new_args, {key: one(v) for key, v in kwargs.items()} if kwargs else {}


def settle_call(call: RecordedCall, own: Callable[[torch.Tensor], torch.Tensor],
                shared: dict[tuple[int, ...], tuple[tuple, tuple]]) -> RecordedCall:
    """The call as a trace keeps it: every tensor argument no op produced owned (the call
    itself when there is none). Those are the tensors left in its arguments: a produced one
    is :data:`PRODUCED` since the call was recorded. ``shared``: see :func:`_settled_args`."""
    if -1 not in call.sources:
        return call
    args, kwargs = _settled_args(call.args, call.kwargs, own, shared)
    return new_call(call.func, args, kwargs, call.sources, call.snapshots, call.modes)


def _settled_args(args: tuple, kwargs: dict, own: Callable[[torch.Tensor], torch.Tensor],
                  shared: dict[tuple[int, ...], tuple[tuple, tuple]]) -> tuple[tuple, dict]:
    """A call's arguments with ``own(tensor)`` for each tensor in them.

    ``shared``: the settled positional arguments of the calls settled before, with the
    arguments as recorded (held, so no id is reused), by the ids of those; a call whose
    arguments are the same objects (a loop calling a ``Linear`` each step reads the same
    weight and bias) shares their settled tuple. ``own`` is a function of the tensor's
    identity, so the tuple is what settling them again gives."""

    def keep(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return own(value)
        if type(value) is list or type(value) is tuple:
            return type(value)([own(item) if isinstance(item, torch.Tensor) else item for item in value])
        return value

    key = tuple(map(id, args))
    entry = shared.get(key)
    if entry is None:
        entry = shared[key] = (tuple([keep(value) for value in args]), args)
    return entry[0], {key: keep(value) for key, value in kwargs.items()} if kwargs else {}
