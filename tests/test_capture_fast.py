"""The capture's fast paths give exactly what its general paths give.

Each fast path of the capture (``capture/session.py``, ``capture/boundary.py``) is a shortcut
for a common case of a general path. Here every Cases model (and a few models that take the
general paths on purpose) is captured with the fast paths on and with them turned off, and the
two raw captures are compared field by field: ops, parents, call sites, replay records, module
calls, containers, buffers.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import handle_torch_function, has_torch_function_unary

from models.table import ALL_PARAMS, Case, build
from torchlens.capture import boundary, frames, replay, session
from torchlens.capture.containers import flatten
from torchlens.capture.record import OP, RawCall, RawOp
from torchlens.capture.replay import Aliased
from torchlens.capture.session import capture_forward


def assert_same(a: Any, b: Any, path: str = "raw") -> None:
    """``a`` and ``b`` hold equal values in the same structure (tensors by type, shape, dtype
    and value; modules by type: each capture runs its own copy of the model)."""
    if isinstance(a, torch.Tensor):
        assert type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype, path
        if a.layout is torch.strided and a.device.type != "meta" and not a.is_quantized:
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=path)
        return
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, nn.Module):
        return
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            # A raw op's replay record, shape and dtype may still be pending: compare what they read.
            name = f.name.lstrip("_") if isinstance(a, RawOp) else f.name
            assert_same(getattr(a, name), getattr(b, name), f"{path}.{name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for key in a:
            assert_same(a[key], b[key], f"{path}[{key!r}]")
    else:
        assert a is b or a == b, f"{path}: {a!r} != {b!r}"


def capture(case: Case, **options: Any) -> Any:
    model, inputs = build(case)
    torch.manual_seed(1)
    return capture_forward(model, inputs, {}, **options)


def general_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn every fast path off."""
    monkeypatch.setattr(boundary, "plain_leaves", lambda value: None)
    monkeypatch.setattr(session.Capture, "fast", False)


@pytest.mark.parametrize("options", [{}, {"containers": True}, {"save": "none"}], ids=["all", "containers", "none"])
@pytest.mark.parametrize("case", ALL_PARAMS)
def test_fast_paths_record_what_the_general_paths_record(case: Case, options: dict,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fast = capture(case, **options)
    with monkeypatch.context() as patched:
        general_paths(patched)
        general = capture(case, **options)
    assert_same(fast, general)


class _Forgetful(dict):
    """A memo that never answers (every lookup is a first meeting)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return default


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_process_wide_memos_give_what_a_first_meeting_gives(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chains' places and the callables' classification are kept across captures; a
    capture that meets them all for the first time records the same."""
    capture(case)  # fills the memos
    warm = capture(case)
    with monkeypatch.context() as patched:
        patched.setattr(frames, "_PLACES", _Forgetful())
        patched.setattr(session, "_FUNC_INFO", _Forgetful())
        patched.setattr(session, "FUNCS_KEPT", 0)  # the classification starts again at each callable
        cold = capture(case)
    assert_same(warm, cold)


def test_the_memos_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    case = next(p.values[0] for p in ALL_PARAMS if p.id == "recursion-depth-3")
    monkeypatch.setattr(frames, "PLACES_KEPT", 2)
    monkeypatch.setattr(frames, "_PLACES", {})
    monkeypatch.setattr(session, "FUNCS_KEPT", 2)
    monkeypatch.setattr(session, "_FUNC_INFO", {})
    capture(case)
    assert len(frames._PLACES) <= 2 and len(session._FUNC_INFO) <= 2
    assert_same(capture(case), capture(case))


def test_the_switch_turns_the_fast_paths_off(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, plain = [], []
    original, original_plain = session.Capture._read_value, session.Capture._record_plain
    monkeypatch.setattr(session.Capture, "_read_value", lambda self, *args: calls.append(1) or original(self, *args))
    monkeypatch.setattr(session.Capture, "_record_plain",
                        lambda self, *args: plain.append(1) or original_plain(self, *args))
    case = next(p.values[0] for p in ALL_PARAMS if p.id == "loop-tanh-mul")
    capture(case)
    assert not calls and plain
    plain.clear()
    general_paths(monkeypatch)
    capture(case)
    assert calls and not plain


class Functional(nn.Module):
    """torch's Python functions (``torch.nn.functional``, ``torch.functional``), called several
    times and nested."""

    def forward(self, x):
        for _ in range(3):
            x = F.relu(F.softmax(x, dim=-1)) + F.silu(x)
        return F.layer_norm(x, x.shape[-1:]) + torch.norm(x) + torch.norm(x * 2)


def test_torch_python_functions_run_without_the_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's Python functions run straight (their torch-function checks say no while the
    capture's mode is on top), not through the mode and ``Capture._run_transparent``: those of
    ``torch.nn.functional`` always, those of another module after the first of them in a capture;
    the capture is the one the round trip gives."""
    entered: list[str] = []
    original = session.Capture._run_transparent
    monkeypatch.setattr(session.Capture, "_run_transparent",
                        lambda self, func, *rest: entered.append(func.__name__) or original(self, func, *rest))
    torch.manual_seed(0)
    fast = capture_forward(Functional(), (torch.randn(3, 4),), {})
    assert entered == ["norm"]  # the first meeting patches torch.functional's checks
    entered.clear()
    with monkeypatch.context() as patched:
        general_paths(patched)
        torch.manual_seed(0)
        general = capture_forward(Functional(), (torch.randn(3, 4),), {})
    assert entered == ["softmax", "relu", "silu"] * 3 + ["layer_norm", "norm", "norm"]
    assert_same(fast, general)


def test_the_comparison_sees_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    case = next(p.values[0] for p in ALL_PARAMS if p.id == "loop-tanh-mul")
    fast = capture(case)
    with monkeypatch.context() as patched:
        general_paths(patched)  # (the fast path reads a module call's one returned tensor itself)
        patched.setattr(session, "call_outputs", lambda capture, out: [])
        broken = capture(case)
    with pytest.raises(AssertionError, match="outputs"):
        assert_same(fast, broken)


class Shapes(nn.Module):
    """Plain ops of the shapes the one-call path (``Capture._record_plain``) takes beyond the
    positional one: keyword arguments (numbers, a produced tensor, a parameter, a list of
    produced tensors, a tensor no op produced), reflected operators (named as written), and a
    size query between them (nothing to record)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("mask", torch.ones(3, 4, dtype=torch.bool))
        self.act = nn.Softmax(dim=-1)  # its forward calls torch with a keyword argument

    def forward(self, x):
        y = torch.cat([x, x], dim=0)
        z = torch.add(x, other=self.lin.weight[0], alpha=2)
        w = torch.where(self.mask, input=x, other=z)
        n = x.size(0) + x.size()[1]
        v = 1.5 + 2 * w + n
        u = torch.stack(tensors=[v, z], dim=1)
        return self.act(u.sum(dim=1, keepdim=False)), y


class Bare(nn.Module):
    """A module whose ``forward`` is a torch function itself: its op has no call site, and the
    keyword arguments are part of its key (``args_text``)."""

    def __init__(self) -> None:
        super().__init__()
        self.forward = torch.add  # type: ignore[method-assign,assignment]


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bare = Bare()

    def forward(self, x):
        return self.bare(x, other=x * 2, alpha=3) + self.bare(x, other=x.exp(), alpha=2)


class Positional(nn.Module):
    """Plain ops with positional arguments only, whose pending replay record keeps them as
    passed: a produced tensor, a parameter, the input, a buffer, numbers, a tuple of tensors;
    and two that copy theirs, a list (read up to it, then again) and a keyword argument."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 4))
        self.register_buffer("scale", torch.full((3, 4), 2.0))

    def forward(self, x):
        y = torch.mul(x.exp(), self.weight)
        z = torch.add(y, x, alpha=0.5)
        s = torch.stack((y, z, self.scale))
        t = torch.clamp(s, -1.0, 1.0)
        return torch.cat([t.sum(0), z]).permute([1, 0]), torch.sub(z, self.scale)


#: model -> (its inputs, the ops each must record through the one-call path).
SHAPES: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple], set[str]]] = {
    "keywords, reflected": (Shapes, lambda: (torch.randn(3, 4),),
                            {"cat", "add", "where", "rmul", "radd", "stack", "sum", "softmax"}),
    "no call site": (Outer, lambda: (torch.randn(3, 4),), {"mul", "exp", "add"}),
    "positional": (Positional, lambda: (torch.randn(3, 4),), {"exp", "mul", "add", "stack", "clamp", "cat", "permute"}),
}


def test_a_pending_call_keeps_positional_arguments_as_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saving every output, an op's pending replay record keeps its positional arguments as
    they were passed (no copy as it is recorded), unless one is a list or a keyword is given;
    built, each record has PRODUCED for a tensor an op made and the trace's copy of every
    other tensor, as the general path's does (compared in the test above)."""
    torch.manual_seed(0)
    model, x = Positional(), torch.randn(3, 4)
    raw, _ = spied_capture(monkeypatch, lambda: model, lambda: (x,), "_record_plain")
    pending = {op.name: op._replay for op in raw.ops if op.kind is OP}
    passed = {name for name, call in pending.items() if call[0] is replay.make_passed_call}
    assert passed == {"exp", "mul", "stack", "clamp", "sum", "sub"}, passed
    assert pending["mul"][2][1] is model.weight and pending["stack"][2][0][2] is model.scale
    built = {op.name: op.replay for op in raw.ops if op.kind is OP}
    assert built["mul"].args[0] is replay.PRODUCED and built["mul"].sources == [1, -1]
    assert built["mul"].args[1] is not model.weight and torch.equal(built["mul"].args[1], model.weight)
    assert built["stack"].args[0][:2] == (replay.PRODUCED, replay.PRODUCED) and built["stack"].sources[2] >= 0
    assert built["cat"].args[0] == [replay.PRODUCED, replay.PRODUCED]  # the list: copied as recorded
    assert built["sub"].args == (replay.PRODUCED, replay.PRODUCED)  # the buffer's version, an op


def spied_capture(monkeypatch: pytest.MonkeyPatch, make_model: Callable[[], nn.Module], make_inputs: Callable[[], tuple],
                  method: str) -> tuple[Any, list[str]]:
    """A capture made after a first one has classified every callable it calls (a callable is
    classified at its first meeting, in process-wide memos that start again when full: fresh
    ones here), with the names of the ops ``Capture.<method>`` was called for."""
    monkeypatch.setattr(session, "_FUNC_INFO", {})
    monkeypatch.setattr(session, "_PLAIN", {})
    capture_forward(make_model(), make_inputs(), {})
    names: list[str] = []
    original = getattr(session.Capture, method)
    with monkeypatch.context() as spied:
        spied.setattr(session.Capture, method,
                      lambda self, func, name, *rest: names.append(name) or original(self, func, name, *rest))
        torch.manual_seed(0)
        raw = capture_forward(make_model(), make_inputs(), {})
    return raw, names


def general_capture(monkeypatch: pytest.MonkeyPatch, make_model: Callable[[], nn.Module],
                    make_inputs: Callable[[], tuple]) -> Any:
    """The same capture with every fast path off."""
    with monkeypatch.context() as patched:
        general_paths(patched)
        torch.manual_seed(0)
        return capture_forward(make_model(), make_inputs(), {})


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_one_call_path_records_what_the_general_path_records(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shape the one-call path takes is taken (a spy counts it) and gives the raw capture
    the general paths give."""
    make_model, make_inputs, expected = SHAPES[name]
    fast, taken = spied_capture(monkeypatch, make_model, make_inputs, "_record_plain")
    assert expected <= set(taken), expected - set(taken)
    assert "size" not in {op.name for op in fast.ops}
    assert_same(fast, general_capture(monkeypatch, make_model, make_inputs))
    assert [op.replay for op in fast.ops if op.kind is OP]  # the replay records were compared, built


class AfterWrite(nn.Module):
    """An in-place write, then reads: of the written tensor itself (its producer is the
    writer), of a view made before the write (an aliased read), of outputs made after it."""

    def forward(self, x):
        y = torch.relu(x)
        v = y.view(-1)
        y.add_(1)
        a = torch.sigmoid(y)
        b = torch.tanh(torch.mul(v, 2))
        return torch.exp(a), b, torch.add(a, y)


def test_after_an_in_place_write_only_aliased_reads_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-place op returning one tensor is recorded by the one-call path, and once its write
    is recorded a plain op still takes that path unless it reads a value the write changed
    through another alias (``Capture._reads_written``), which the general path records as an
    aliased read; the capture is the general paths' capture."""
    inputs = lambda: (torch.randn(2, 3),)  # noqa: E731
    fast, general_calls = spied_capture(monkeypatch, AfterWrite, inputs, "_record")
    assert general_calls == ["mul"], general_calls
    (mul,) = [op for op in fast.ops if op.name == "mul"]
    assert type(mul.sources[0]) is Aliased
    assert_same(fast, general_capture(monkeypatch, AfterWrite, inputs))


def test_a_compute_op_reads_its_parents_from_its_sources() -> None:
    """A compute op's parents, derived when first read: the op each tensor argument came from
    (an aliased read: the op that wrote it), none for a parameter or constant, in order."""
    op = RawOp(OP, "add", 0, -1, 0, None, "", None, None, None, None, (), sources=[3, -1, Aliased(5), 3, 0])
    assert op.parents == [3, 5, 3, 0]
    assert op.parents is op.parents  # derived once
    boundary_op = RawOp(OP, "output", 0, -1, 0, None, "", None, None, None, [1, 2], ())
    assert boundary_op.parents == [1, 2] and boundary_op.sources is None


class Pair(nn.Module):
    def forward(self, x):
        return x


VALUES: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "tuple": lambda a, b: (a, b),
    "list with None and numbers": lambda a, b: [a, None, 3, 2.5, True, b],
    "lstm-shaped": lambda a, b: (a, (b, a)),
    "inner None": lambda a, b: (a, (None, b)),
    "empty": lambda a, b: (),
    "inner list": lambda a, b: (a, [b]),
    "dict": lambda a, b: {"x": a},
    "inner dict": lambda a, b: (a, {"y": b}),
    "string": lambda a, b: (a, "b"),
    "int subclass": lambda a, b: (a, torch.Size([2])),
    "inner number": lambda a, b: (a, (b, 3)),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_plain_leaves_are_the_flattened_leaves(name: str) -> None:
    """``plain_leaves`` answers only for values it reads exactly as ``flatten`` does."""
    a, b = torch.ones(1), torch.zeros(1)
    value = VALUES[name](a, b)
    leaves = boundary.plain_leaves(value)
    if leaves is not None:
        assert [id(t) for t in leaves] == [id(t) for t in flatten(value).leaves]
    plain = name in {"tuple", "list with None and numbers", "lstm-shaped", "inner None", "empty"}
    assert (leaves is not None) == plain


def test_call_inputs_of_one_tensor_is_the_general_answer() -> None:
    import types

    made, param = torch.ones(1), torch.zeros(1)
    capture_ = types.SimpleNamespace(producer={id(made): 7}, refs=None)
    for args, kwargs, expected in [((made,), {}, [7]), ((param,), {}, []), ((made, made), {}, [7]),
                                   ((), {"x": made}, [7]), (([made, param], None), {"y": (made,)}, [7])]:
        assert boundary.call_inputs(capture_, args, kwargs) == expected


def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def _through(x: torch.Tensor) -> torch.Tensor:
    return _twice(x)


class Helpers(nn.Module):
    """Ops one function away from ``forward`` (``F.relu``'s ``torch.relu``, a helper's ``mul``),
    and one two functions away."""

    def forward(self, x):
        return _twice(F.relu(x)) + _through(x)


def test_a_site_one_function_away_is_found_without_walking_the_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op called from one Python function that ``forward`` called gets its call site from the
    two frames alone (``Capture._site``); only the deeper chain is walked (``read_raw``); the
    capture is the one the general paths give."""
    walked: list[int] = []
    original = session.read_raw
    monkeypatch.setattr(session, "read_raw", lambda frame, roles: walked.append(1) or original(frame, roles))
    x = torch.randn(3, 4)
    fast = capture_forward(Helpers(), (x,), {})
    assert len(walked) == 1  # the mul inside _twice inside _through
    walked.clear()
    with monkeypatch.context() as patched:
        general_paths(patched)
        general = capture_forward(Helpers(), (x,), {})
    assert len(walked) == 3
    assert_same(fast, general)
    assert len({op.site for op in fast.ops if op.kind is OP}) == 4



class Failing(nn.Module):
    def forward(self, x):
        raise ValueError("no")


class Catching(nn.Module):
    """A child call that raises, caught by its parent, between two that return."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.bad = nn.Linear(4, 4), Failing()

    def forward(self, x):
        y = self.lin(x)
        try:
            self.bad(y)
        except ValueError:
            pass
        return self.lin(y)


def test_module_call_records_have_every_field_set() -> None:
    """``Capture.call_module`` sets a ``RawCall``'s slots itself, not through the class: each call
    has every field the class has (a field added to ``RawCall`` and not set there reads as unset
    here), also a call that raised and was caught."""
    raw = capture_forward(Catching(), (torch.randn(2, 4),), {})
    ios = [tuple(getattr(io, f.name) for f in dataclasses.fields(RawCall)) for io in raw.call_io]
    first, second = (index for index, op in enumerate(raw.ops) if op.kind is OP)
    assert raw.calls == [(0, 1), (1, 1), (2, 1), (1, 2)]
    assert ios == [(-1, [0], [second]), (0, [0], [first]), (0, [first], []), (0, [first], [second])]


def _late_check(x: torch.Tensor) -> torch.Tensor:
    """Like one of torch's Python functions (its module a ``torch`` one), but making a torch call
    before its torch-function check: re-entered by ``Capture._run_transparent``, that call comes
    while the check is still to be bypassed."""
    y = x.exp()
    if has_torch_function_unary(x):
        return handle_torch_function(_late_check, (x,), x)
    return y * 2


def _no_check(x: torch.Tensor) -> torch.Tensor:
    """Like one of torch's Python functions, but with neither a torch call nor a check: the check
    ``Capture._run_transparent`` was to bypass is never made."""
    return x


_late_check.__module__ = _no_check.__module__ = "torch.nonexistent"


class Suspending(nn.Module):
    """Torch calls around every event that suspends the capture or bypasses a torch-function
    check: a TorchScript submodule and a ``torch.func`` transform (nothing inside recorded), a
    reflected operator right after each, and torch's Python functions re-entered through
    ``Capture._run_transparent`` (``torch.norm``, met first in a capture, and two odd ones)."""

    def __init__(self) -> None:
        super().__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script is deprecated
            self.script = torch.jit.script(nn.Linear(4, 4))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x = handle_torch_function(_no_check, (x,), _late_check(x.tanh()))  # (the first patches the checks here)
        y = 2 * self.script(x.sin())
        z = 3 * torch.func.vmap(torch.sin)(self.lin(y))
        return 1 + torch.norm(z) + torch.norm(z.tanh())


@pytest.mark.parametrize("gradients", [False, True], ids=["plain", "gradients"])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_plain_op_shortcut_is_open_exactly_while_nothing_else_applies(device: str, gradients: bool,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``Capture.plain_now``, the shortcut's table, is the plain-op table exactly while the
    capture is installed, not suspended and not bypassing a check, at every torch call the
    capture sees (with ``save_gradients`` an op's hook is registered while it is suspended; on
    the meta device, the TorchScript module's ops run Python kernels, which call torch)."""
    seen: list[tuple[bool, bool]] = []
    captures: list[session.Capture] = []
    original = session.Capture.__torch_function__

    def checked(self: session.Capture, *args: Any, **kwargs: Any) -> Any:
        captures.append(self)
        expected = self.stage is session._INSTALLED and not self.suspended and not self.bypass
        seen.append((self.plain_now is self.plain and bool(self.plain), expected))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(session.Capture, "__torch_function__", checked)
    model, x = Suspending().to(device), torch.randn(3, 4, device=device)
    capture_forward(model, (x,), {}, gradients=gradients)  # (classifies the callables)
    seen.clear()
    raw = capture_forward(model, (x,), {}, gradients=gradients)
    assert {"exp", "rmul", "vmap", "torchscript", "linalg_vector_norm", "radd"} <= {op.name for op in raw.ops}
    assert seen and [actual for actual, _ in seen] == [expected for _, expected in seen]
    assert (True, True) in seen and (False, False) in seen
    assert not captures[-1].plain_now  # closed once the capture is removed
