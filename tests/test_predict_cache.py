"""What ``tl.predict`` keeps from one prediction to the next (fakes of tensors, source read
per definition, parameter names and places per source file) and within one (the torch
host's answers per callable and tensor attribute) is never served stale: a changed
parameter, buffer, input, module attribute, config value, submodule, tensor method or
source file gives the answer a fresh process would."""

from __future__ import annotations

import importlib.util
import linecache
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

import torchlens as tl


class ShapeBranch(nn.Module):
    """Takes one branch or the other by a parameter's shape and dtype."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 2))

    def forward(self, x):
        w = self.w * 1  # its shape and dtype come from the fake of self.w
        if w.shape[0] > 3:
            x = torch.tanh(x)
        if w.dtype == torch.float64:
            x = torch.sigmoid(x)
        return x @ w.T


def _ops(pred) -> list[str]:
    return [layer.func_name for layer in pred.layers]


def test_a_parameter_changed_in_place_is_seen_by_the_next_prediction() -> None:
    model, x = ShapeBranch(), torch.randn(1, 2)
    before = _ops(tl.predict(model, x))
    assert "tanh" not in before and "sigmoid" not in before
    model.w.data = torch.randn(5, 2)  # the same Parameter object, another shape
    assert before == ["mul", "T", "matmul"]
    assert _ops(tl.predict(model, x)) == ["mul", "tanh", "T", "matmul"]
    model.double()  # the same Parameter object, another dtype
    assert _ops(tl.predict(model, x.double())) == ["mul", "tanh", "sigmoid", "T", "matmul"]
    assert _ops(tl.predict(ShapeBranch(), x)) == before


class GrowsItsBuffer(nn.Module):
    """An in-place op changes a buffer's shape during the (abstract) run."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.zeros(4))

    def forward(self, x):
        if self.b.dim() == 1:
            x = torch.tanh(x)
        self.b.unsqueeze_(0)
        return x + self.b


def test_a_fake_changed_by_an_earlier_prediction_is_not_reused() -> None:
    """The fake of ``b`` is unsqueezed by the first prediction; the model's buffer is not, so
    the second prediction must see a 1-d buffer again."""
    model, x = GrowsItsBuffer(), torch.randn(4)
    first = _ops(tl.predict(model, x))
    assert model.b.dim() == 1 and "tanh" in first
    assert _ops(tl.predict(model, x)) == first


def test_an_input_of_another_shape_is_seen() -> None:
    class ByInput(nn.Module):
        def forward(self, x):
            return [torch.tanh(part) for part in x.unbind(0)]

    model = ByInput()
    assert _ops(tl.predict(model, torch.randn(2, 3))).count("tanh") == 1  # one site, 2 passes
    assert tl.predict(model, torch.randn(2, 3)).layers[-1].count.lo == 2
    assert tl.predict(model, torch.randn(5, 3)).layers[-1].count.lo == 5


def _import_file(path, name: str, monkeypatch):
    """Import ``path`` as module ``name`` afresh (``sys.modules`` restored after the test)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_a_source_file_edited_and_reloaded_is_read_again(tmp_path, monkeypatch) -> None:
    path = tmp_path / "reloaded_model.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.tanh(x)\n")

    def load():
        return _import_file(path, "reloaded_model", monkeypatch)

    assert _ops(tl.predict(load().Net(), torch.randn(2))) == ["tanh"]
    path.write_text(path.read_text().replace("return torch.tanh(x)", "return torch.sigmoid(x).exp()"))
    linecache.checkcache(str(path))
    assert _ops(tl.predict(load().Net(), torch.randn(2))) == ["sigmoid", "exp"]


def test_batch_norm_on_fakes_is_empty_like_its_input() -> None:
    """The shortcut for ``torch.batch_norm`` (not training) gives the fake the op itself gives,
    on the contiguous layouts it is taken for; the others run the op."""
    from torchlens.torch_host import FakeShapes, _like_its_input
    from torchlens.analysis.values import Known, Tensor

    shapes = FakeShapes()
    mode = shapes._fake_mode()
    for shape, layout in [((2, 8), torch.contiguous_format), ((2, 8, 5), torch.contiguous_format),
                          ((1, 8, 6, 6), torch.contiguous_format), ((1, 8, 6, 6), torch.channels_last),
                          ((2, 8, 3, 4, 5), torch.channels_last_3d), ((8, 8, 1, 1), torch.contiguous_format),
                          ((8, 8, 1, 1), None), ((2, 8, 5), None)]:
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            live = torch.randn(shape, dtype=dtype)
            live = live.transpose(0, -1) if layout is None else live.contiguous(memory_format=layout)
            c = live.shape[1]
            x, w, stats = (shapes.fake(t) for t in (live, torch.randn(c), torch.randn(c)))
            args = [x, w, w, stats, stats, False, 0.1, 1e-5, False]
            with mode:
                op = torch.batch_norm(*args)
            values = [Tensor(meta=a) if isinstance(a, torch.Tensor) else Known(a) for a in args]
            got = shapes.run(torch.batch_norm, values, {})
            assert _like_its_input(torch.batch_norm, args) is (layout is torch.contiguous_format)
            assert (got.shape, got.stride(), got.dtype, got.device, got.storage_offset()) == \
                (op.shape, op.stride(), op.dtype, op.device, op.storage_offset()), (shape, layout, dtype)


class BranchOnBatchNormGrad(nn.Module):
    """A branch on whether a batch norm's output requires grad (it does when its weight does)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3)

    def forward(self, x):
        y = self.bn(x)
        y = torch.tanh(y) if y.requires_grad else torch.relu(y)
        z = self.bn(self.conv(x))
        return y + (torch.sigmoid(z) if z.requires_grad else z)


@pytest.mark.parametrize("grad", [True, False])
def test_batch_norm_on_fakes_requires_grad_as_the_op_does(grad) -> None:
    """The batch-norm shortcut gives an output that requires grad where the op's does (its
    weight requires grad; its input too, or not), so a branch on it is predicted as it runs."""
    model, x = BranchOnBatchNormGrad().eval(), torch.randn(1, 3, 4, 4)
    with torch.set_grad_enabled(grad):
        pred = tl.predict(model, x)
        report = tl.trace(model, x).check_prediction(pred)
    assert report.ok and report.coverage == 1.0
    assert ("tanh" in _ops(pred), "sigmoid" in _ops(pred), "relu" in _ops(pred)) == (grad, grad, not grad)
    from torchlens.analysis.values import Known, Tensor
    from torchlens.torch_host import FakeShapes

    shapes = FakeShapes()
    mode = shapes._fake_mode()
    for needs in (False, True):
        live, w = torch.randn(1, 3, 4, 4).requires_grad_(needs), nn.Parameter(torch.randn(3))
        stats = torch.randn(3)
        fakes = [shapes.fake(t) for t in (live, w, w, stats, stats)]
        args = [*fakes, False, 0.1, 1e-5, False]
        with torch.set_grad_enabled(grad):
            with mode:
                op = torch.batch_norm(*args)
            got = shapes.run(torch.batch_norm, [Tensor(meta=a) if isinstance(a, torch.Tensor) else Known(a)
                                                for a in args], {})
        assert (got.shape, got.stride(), got.requires_grad, got.is_leaf, got._is_view()) == \
            (op.shape, op.stride(), op.requires_grad, op.is_leaf, op._is_view()), (grad, needs)


def test_empty_like_made_without_the_fake_mode_is_its_own() -> None:
    """The batch-norm shortcut's ``empty_like``, made outside the fake mode, equals the fake
    mode's own ``empty_like`` in everything a fake has, on every dtype, with and without
    ``requires_grad``, in and out of inference mode."""
    from torchlens.torch_host import FakeShapes, _empty_like

    shapes = FakeShapes()
    mode = shapes._fake_mode()

    def everything(t: torch.Tensor) -> tuple:
        return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.layout, t.requires_grad,
                t.is_leaf, t._is_view(), t.untyped_storage().nbytes(), t.is_conj(), t.is_neg(), t.is_inference(),
                None if t.is_inference() else t._version, t.grad_fn, t.constant, t.fake_mode is mode)

    for shape in [(2, 8), (2, 8, 5), (1, 8, 6, 6), (8, 8, 1, 1), (2, 8, 3, 4, 5), (0, 3, 2), (1,), ()]:
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64):
            for grad in (False, True) if dtype.is_floating_point else (False,):
                for inference in (False, True):
                    fake = shapes.fake(torch.randn(shape).to(dtype).requires_grad_(grad))
                    with torch.inference_mode(inference):
                        with mode:
                            own = torch.empty_like(fake)
                        made = _empty_like(mode, fake)
                    assert everything(made) == everything(own), (shape, dtype, grad, inference)


class Configured(nn.Module):
    """Its ops follow a module attribute, a config value and a submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.config = SimpleNamespace(activation="tanh", depth=1)
        self.scale = True
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        for _ in range(self.config.depth):
            x = self.proj(x)
        x = torch.tanh(x) if self.config.activation == "tanh" else torch.sigmoid(x)
        return x * 2 if self.scale else x


def test_a_module_attribute_a_config_value_and_a_submodule_changed_between_predictions() -> None:
    model, x = Configured(), torch.randn(2, 3)
    assert _ops(tl.predict(model, x)) == ["linear", "tanh", "mul"]
    model.scale = False
    assert _ops(tl.predict(model, x)) == ["linear", "tanh"]
    model.config.activation = "sigmoid"
    assert _ops(tl.predict(model, x)) == ["linear", "sigmoid"]
    model.config.depth = 3
    assert tl.predict(model, x).layers[0].count.lo == 3
    model.proj = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    assert _ops(tl.predict(model, x)) == ["linear", "relu", "sigmoid"]


class CallsAPatchedMethod(nn.Module):
    def forward(self, x):
        return x.speed_test_helper() + x


def test_a_tensor_method_patched_between_predictions_is_read_again() -> None:
    """The torch host keeps what a tensor attribute is for one prediction only."""
    model, x = CallsAPatchedMethod(), torch.randn(2)
    torch.Tensor.speed_test_helper = lambda self: torch.tanh(self)
    try:
        assert _ops(tl.predict(model, x)) == ["tanh", "add"]
        torch.Tensor.speed_test_helper = lambda self: torch.sigmoid(self).exp()
        assert _ops(tl.predict(model, x)) == ["sigmoid", "exp", "add"]
    finally:
        del torch.Tensor.speed_test_helper


def test_a_signature_edited_and_reloaded_is_bound_again(tmp_path, monkeypatch) -> None:
    """Parameter names and places are kept per source file: an edited file is read afresh
    (with the names kept from the first text, ``act('sigmoid', x)`` would bind ``x='sigmoid'``)."""
    path = tmp_path / "resigned_model.py"
    body = "    return torch.tanh(x) if kind == 'tanh' else torch.sigmoid(x)\n"
    path.write_text("import torch\nfrom torch import nn\n\n\ndef act(x, kind):\n" + body +
                    "\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return act(x, 'tanh')\n")

    def load():
        return _import_file(path, "resigned_model", monkeypatch)

    assert _ops(tl.predict(load().Net(), torch.randn(2))) == ["tanh"]
    path.write_text(path.read_text().replace("def act(x, kind):", "def act(kind, x):")
                    .replace("act(x, 'tanh')", "act('sigmoid', x)"))
    linecache.checkcache(str(path))
    assert _ops(tl.predict(load().Net(), torch.randn(2))) == ["sigmoid"]


# -- the memo of ops on fakes (torchlens.fake_memo): kept across predictions, never stale ----------


class WritesIntoAnOutput(nn.Module):
    """``y`` is an op's output, reshaped in place between two branches that read its shape
    (``.shape`` is read from its fake, not answered by the memo)."""

    def __init__(self, dim) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        y = x + 1
        if len(y.shape) == 2:
            x = torch.tanh(x)
        y.unsqueeze_(self.dim)
        if len(y.shape) == 3:
            x = torch.sigmoid(x)
        return x, y


@pytest.mark.parametrize("dim", [0, np.int64(0)], ids=["keyed", "not keyed"])
def test_an_output_changed_in_place_by_the_last_prediction_is_made_again(dim) -> None:
    """Neither the output changed in place (kept, it would be 3-d) nor the in-place op (kept,
    it would change nothing) is given again, whether the in-place op was keyed or not (a
    numpy int is an argument the memo does not key: the op runs, unchecked)."""
    model, x = WritesIntoAnOutput(dim), torch.randn(2, 3)
    first = _ops(tl.predict(model, x))
    assert first == ["add", "tanh", "unsqueeze_", "sigmoid"]
    assert _ops(tl.predict(model, x)) == first == _ops(tl.predict(model, x))


class ReducesAfterAWrite(nn.Module):
    def forward(self, x):
        y = x + 1
        y.unsqueeze_(0)
        z = y.sum(-1)
        return torch.tanh(z) if len(z.shape) == 2 else z


class ReducesPlainly(nn.Module):
    def forward(self, x):
        z = (x + 1).sum(-1)
        return torch.sigmoid(z) if len(z.shape) == 1 else z


def test_a_fake_changed_in_place_is_keyed_by_its_new_metadata() -> None:
    """After ``unsqueeze_``, ``y.sum(-1)`` is keyed by the 3-d ``y`` (read before the write,
    the 2-d key would keep a 2-d result for it, which a 2-d tensor's sum would then get)."""
    x = torch.randn(2, 3)
    assert _ops(tl.predict(ReducesAfterAWrite(), x)) == ["add", "unsqueeze_", "sum", "tanh"]
    assert _ops(tl.predict(ReducesPlainly(), x)) == ["add", "sum", "sigmoid"]


class TwoEqualCalls(nn.Module):
    """The same op on the same argument twice: two distinct tensors, as in a real run."""

    def forward(self, x):
        a = x + 1
        b = x + 1
        a.unsqueeze_(0)
        if b.dim() == 2:
            x = torch.tanh(x)
        if a is b:
            x = torch.sigmoid(x)
        return x


def test_equal_calls_in_one_prediction_get_distinct_tensors() -> None:
    model, x = TwoEqualCalls(), torch.randn(2, 3)
    for _ in range(3):
        assert _ops(tl.predict(model, x)) == ["add", "add", "unsqueeze_", "tanh"]


class WritesThroughAView(nn.Module):
    """A view of an op's output, written into only when ``write`` is set (the output then
    requires grad: the write goes through the view to its base); ``reshape`` changes the
    output in place after its view was made."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(2, 2))
        self.write, self.reshape = False, True

    def forward(self, x):
        base = x * 1
        v = base.view(2, 2)
        if self.reshape:
            base.unsqueeze_(0)
        if self.write:
            v.copy_(self.w)
        if base.requires_grad:
            x = torch.tanh(x)
        return x


def test_a_view_is_given_again_only_of_the_same_tensor() -> None:
    """The second prediction makes ``base`` afresh (the kept one was reshaped), and the view
    of it must not be the last prediction's view (of the last ``base``), although that one
    still has all its metadata: written through, it would leave this ``base`` without grad."""
    model = WritesThroughAView()
    assert _ops(tl.predict(model, torch.randn(4))) == ["mul", "view", "unsqueeze_"]
    model.write, model.reshape = True, False
    assert _ops(tl.predict(model, torch.randn(4))) == ["mul", "view", "copy_", "tanh"]


class ByGradMode(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        y = self.proj(x)
        return torch.tanh(y) if y.requires_grad else y


def test_the_grad_mode_is_part_of_the_key() -> None:
    model, x = ByGradMode(), torch.randn(2, 3)
    with torch.no_grad():
        assert _ops(tl.predict(model, x)) == ["linear"]
    assert _ops(tl.predict(model, x)) == ["linear", "tanh"]
    with torch.no_grad():
        assert _ops(tl.predict(model, x)) == ["linear"]


def test_ops_given_again_equal_the_fake_mode_s_own() -> None:
    """Every kept result, given again by a later prediction, has all the metadata the op
    gives run afresh on the fake mode (and is the kept object: the memo answered)."""
    from torchlens.analysis.values import Known, Tensor
    from torchlens.fake_memo import UNKNOWN
    from torchlens.torch_host import FakeShapes

    def everything(t):
        if not isinstance(t, torch.Tensor):
            return t
        return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, t.is_leaf,
                t._is_view(), t.constant is None)

    live = torch.randn(2, 3, 4), nn.Parameter(torch.randn(4, 4))  # the same fakes in both

    def calls(shapes, fresh):
        x, w = (shapes.fake(t) for t in live)
        for fn, args in [(torch.Tensor.view, (x, 6, 4)), (torch.matmul, (x, w)), (torch.Tensor.transpose, (x, 0, 1)),
                         (torch.tensor, (0.5,)), (torch.Tensor.size, (x,)), (torch.Tensor.size, (x, -1)),
                         (torch.Tensor.contiguous, (x,)), (torch.max, (x, 1)), ("mT", (x,)), (torch.nonzero, (x,)),
                         (torch._C._VariableFunctions.split, (x, 2, -1))]:
            values = [Tensor(meta=a) if isinstance(a, torch.Tensor) else Known(a) for a in args]
            own = FakeShapes._run(shapes._fake_mode(), fn, list(args), {}) if fresh else None
            yield fn, own, shapes.run(fn, values, {})

    made = list(calls(FakeShapes(), False))
    for (fn, own, again), (_, _, before) in zip(calls(FakeShapes(), True), made):
        if own is UNKNOWN:
            assert again is UNKNOWN, fn
        elif isinstance(own, torch.Tensor):
            assert everything(again) == everything(own), fn
        elif isinstance(own, tuple) and not isinstance(own, torch.Size):
            assert type(again) is type(own) and [everything(t) for t in again] == [everything(t) for t in own], fn
            assert again[0] is before[0], fn  # the kept ones (also views made together, as split's)
        else:
            assert again == own, fn


def test_the_memo_is_bounded(monkeypatch) -> None:
    from torchlens import fake_memo
    from torchlens.torch_host import _kept

    monkeypatch.setattr(fake_memo, "KEYS", 4)

    class Many(nn.Module):
        def forward(self, x):
            for k in range(1, 9):
                x = x.view(k, -1).reshape(-1)
            return x

    tl.predict(Many(), torch.randn(840))
    assert 0 < len(_kept().memo) <= 4


def test_a_number_standing_for_fake_metadata_is_never_given_to_other_metadata(monkeypatch) -> None:
    """A fake in a key is a number for its metadata; when the numbering starts afresh (a full
    table) old numbers are never given again, so a key kept under one metadata is not hit by
    a fake of another."""
    from torchlens import fake_memo
    from torchlens.analysis.values import Tensor
    from torchlens.torch_host import FakeShapes

    monkeypatch.setattr(fake_memo, "TOKENS", 1)
    short, long = torch.randn(2), torch.randn(3)

    def tanh(live):
        shapes = FakeShapes()
        return shapes.run(torch.tanh, [Tensor(meta=shapes.fake(live))], {}).shape

    assert [tanh(short), tanh(long), tanh(short), tanh(long)] == [(2,), (3,), (2,), (3,)]


class Flag:
    """A plain object: true, until its class is given a ``__bool__`` (that runs ops)."""


def _by_an_op(self) -> bool:
    return bool(torch.zeros(1).sum() > 0)


class ByAFlag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flag = Flag()

    def forward(self, x):
        if self.flag:
            x = torch.tanh(x)
        return x


def test_a_special_method_given_to_a_class_between_predictions_is_run(monkeypatch) -> None:
    """Which special methods a class defines in Python is looked up once per prediction: a
    ``__bool__`` given to the class since the last one runs its ops where the test is."""
    model, x = ByAFlag(), torch.randn(2)
    assert _ops(tl.predict(model, x)) == ["tanh"]
    monkeypatch.setattr(Flag, "__bool__", _by_an_op, raising=False)
    assert _ops(tl.predict(model, x))[:3] == ["zeros", "sum", "gt"]


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flag = Flag()

    def forward(self, x):
        return x * self.flag.scale


def _ones(self):
    return torch.ones(1)


def test_a_property_given_to_a_class_between_predictions_is_run(monkeypatch) -> None:
    """A live object's class attributes are looked up once per prediction: a property given
    to the class since the last one runs its ops."""
    model, x = Scaled(), torch.randn(2)
    monkeypatch.setattr(Flag, "scale", 2.0, raising=False)
    assert _ops(tl.predict(model, x)) == ["mul"]
    monkeypatch.setattr(Flag, "scale", property(_ones))
    assert _ops(tl.predict(model, x)) == ["ones", "mul"]


class ByAConstant(nn.Module):
    """A branch decided by the value of a tensor made from a Python float (the fake mode
    carries the value of a one-element tensor made from data)."""

    def __init__(self) -> None:
        super().__init__()
        self.s = 2.0

    def forward(self, x):
        t = 1 / torch.tensor(self.s)
        if t.item() > 0:
            x = torch.tanh(x)
        return x


def test_a_constant_s_value_is_part_of_the_key() -> None:
    """Floats are keyed by their bits: ``0.0`` and ``-0.0`` are equal, their inverses are not."""
    model, x = ByAConstant(), torch.randn(3)
    for value, ops in [(2.0, ["tensor", "rdiv", "tanh"]), (-2.0, ["tensor", "rdiv"]),
                       (0.0, ["tensor", "rdiv", "tanh"]), (-0.0, ["tensor", "rdiv"]),
                       (0.0, ["tensor", "rdiv", "tanh"])]:
        model.s = value
        assert _ops(tl.predict(model, x)) == ops, value


def test_only_callables_that_cannot_change_are_keyed() -> None:
    """torch's C callables by themselves; torch's own Python without a closure by its code and
    defaults too (a new ``__code__`` is a new key); any other Python, and a C method bound to
    a tensor (whose metadata the key would not hold), are not kept."""
    from torchlens.fake_memo import _op_key

    assert _op_key(torch.tanh) is torch.tanh and _op_key(torch.Tensor.view) is torch.Tensor.view
    assert _op_key("mT") == "mT"
    assert _op_key(torch.randn(2).view) is None
    assert _op_key(lambda x: x) is None
    split = torch.Tensor.split
    key = _op_key(split)
    assert key is not None and split.__code__ in key
    wrapped = torch.Tensor.__rsub__
    assert wrapped.__closure__ is None or _op_key(wrapped) is None

    def fake_torch(x):
        return x

    fake_torch.__module__ = "torch.fake_for_test"
    before = _op_key(fake_torch)
    fake_torch.__code__ = (lambda x: -x).__code__
    assert before is not None and _op_key(fake_torch) != before


def test_views_made_together_are_made_again_after_a_write_into_their_base() -> None:
    """unbind's outputs are given again only while nothing was written into their base since
    they were made: torch refuses to read such a view once its base was written in place (the
    first prediction here does so after its unbind), a fresh one it reads."""
    from torchlens.analysis.values import Known, Tensor
    from torchlens.torch_host import FakeShapes

    w = nn.Parameter(torch.randn(2, 3))

    def predict(write: bool):
        shapes = FakeShapes()
        x = shapes.run(torch.mul, [Tensor(meta=shapes.fake(w)), Known(2.0)], {})
        parts = shapes.run(torch.unbind, [Tensor(meta=x)], {})
        if write:
            shapes.run(torch.Tensor.add_, [Tensor(meta=x), Known(1.0)], {})
        return parts

    first = predict(write=True)
    second = predict(write=False)
    assert second[0] is not first[0] and (second[0] * 2).shape == (3,)
    assert predict(write=False)[1] is second[1]  # nothing written since: the kept ones


def test_views_made_together_are_not_given_again():
    """Regression (fuzz campaign, seed 11): unbind's outputs kept by one prediction were given
    to a later one after their base had been written in place; torch refuses to read such a
    view, so ``tl.predict`` raised. The 20 models of that fuzz shard, predicted and checked in
    one process, now agree."""
    from torchlens.fuzz.campaign import Shard, run_shard

    assert not run_shard(Shard(9, 20, 1388570106), shrink_seconds=0).found


def test_an_equal_call_in_one_prediction_is_made_like_the_earlier_one_with_the_op_s_own_metadata(monkeypatch) -> None:
    """Within one prediction (the memo holding nothing for the call yet: a cold one), a call
    equal to an earlier one gets tensors made like what that one made (clones, views of its
    argument as_strided), not a dispatch of the op, exactly where they have every bit of
    metadata the op gives run afresh on the fake mode: not for views made together, a view
    of another dtype, or leaves that require grad. An earlier output written into or changed
    in place since (``unsqueeze_``) is not read: what is made has the metadata it was made with."""
    from torchlens.analysis.values import Known, Tensor
    from torchlens.torch_host import FakeShapes

    def everything(t):
        if not isinstance(t, torch.Tensor):
            return t
        base = t._base
        return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, t.is_leaf,
                t._is_view(), t.constant is None, t._version, t.grad_fn is None, t.is_inference(),
                None if base is None else (base.shape, base.requires_grad, base.is_leaf))

    dispatched: list = []
    run = FakeShapes._run
    monkeypatch.setattr(FakeShapes, "_run", staticmethod(lambda mode, fn, *rest: dispatched.append(fn)
                                                         or run(mode, fn, *rest)))
    live = (torch.randn(3, 5, 7), nn.Parameter(torch.randn(11, 7)), nn.Parameter(torch.randn(11)), torch.randn(7, 11),
            torch.randn(5, 7))
    shapes = FakeShapes()
    x, w, b, y, rows = (shapes.fake(t) for t in live)
    cases = [(torch._C._nn.linear, (rows, w, b), True), (torch._C._nn.linear, (x, w, b), True),
             (torch.matmul, (x, y), True), (torch.tanh, (x,), True), (torch.max, (x, 1), True),
             (torch.Tensor.size, (x,), True), (torch.Tensor.view, (x, 15, 7), True),
             (torch.Tensor.transpose, (x, 0, 1), True), (torch.Tensor.__getitem__, (x, (slice(None), 1)), True),
             (torch.Tensor.transpose, (w, 0, 1), True),
             (torch.sigmoid, (w,), True), (torch.Tensor.view, (x, torch.int32), False),
             (torch.Tensor.split, (x, 2), False), (torch.ones, (3, 7), False), (torch.exp, (x,), True),
             (torch.neg, (x,), True),
             (torch.Tensor.unsqueeze, (x, 0), True)]
    for fn, args, made in cases:
        values = [Tensor(meta=a) if isinstance(a, torch.Tensor) else Known(a) for a in args]
        kwargs = {"requires_grad": Known(True)} if fn is torch.ones else {}  # a leaf that requires grad
        first = shapes.run(fn, values, kwargs)
        if fn is torch.exp:
            first.add_(1)  # written since, its metadata kept: a fresh one is made like it
        elif fn is torch.neg:
            first.unsqueeze_(0)  # its metadata changed since: made as neg makes it, not like it is now
        dispatched.clear()
        second = shapes.run(fn, values, kwargs)
        own = run(shapes._fake_mode(), fn, list(args), {k: v.obj for k, v in kwargs.items()})
        assert (dispatched == []) is made, fn
        if isinstance(own, (tuple, list)) and not isinstance(own, torch.Size):
            assert type(second) is type(own) and [everything(t) for t in second] == [everything(t) for t in own], fn
            assert all(s is not f for s, f in zip(second, first)), fn
        else:
            assert everything(second) == everything(own), fn
            assert not isinstance(own, torch.Tensor) or second is not first, fn


def test_a_view_of_a_tensor_the_op_made_is_made_again_like_it_in_the_next_prediction(monkeypatch) -> None:
    """A warm prediction's first call of a key whose output is a view of a tensor the op made
    (``linear`` of a 3-d or 4-d input: a view of its ``addmm``; never given again itself) is made
    like what that call gave last time (a clone of the tensor viewed, then the view), not run
    again: with the op's own metadata, and not the earlier tensor."""
    from torchlens.analysis.values import Tensor
    from torchlens.torch_host import FakeShapes

    dispatched: list = []
    run = FakeShapes._run
    monkeypatch.setattr(FakeShapes, "_run", staticmethod(lambda mode, fn, *rest: dispatched.append(fn)
                                                         or run(mode, fn, *rest)))
    live = (torch.randn(3, 5, 7), torch.randn(2, 3, 5, 7), nn.Parameter(torch.randn(11, 7)),
            nn.Parameter(torch.randn(11)))
    fakes = [FakeShapes().fake(t) for t in live]
    for x in fakes[:2]:
        args = [Tensor(meta=a) for a in (x, *fakes[2:])]
        first = FakeShapes().run(torch._C._nn.linear, args, {})
        assert first._is_view()
        dispatched.clear()
        again = FakeShapes().run(torch._C._nn.linear, args, {})  # the next prediction
        assert dispatched == []
        own = run(FakeShapes()._fake_mode(), torch._C._nn.linear, [x, *fakes[2:]], {})
        assert again is not first and again._base is not first._base

        def everything(t):
            return (t.shape, t.stride(), t.storage_offset(), t.dtype, t.requires_grad, t.is_leaf, t._is_view(),
                    t._version, t.grad_fn is None)

        assert everything(again) == everything(own) and everything(again._base) == everything(own._base)


def test_an_output_the_op_wrote_into_itself_is_not_made_like_it() -> None:
    """What the memo makes like an earlier output is a fresh tensor (version 0): only where the
    op gave its output so (one that wrote into its own output gave version 1)."""
    from torchlens.fake_memo import MISS
    from torchlens.torch_host import FakeShapes

    shapes = FakeShapes()
    mode = shapes._fake_mode()
    memo = shapes._memo
    x = shapes.fake(torch.randn(3, 5))
    for write, given in ((True, False), (False, True)):
        with mode:
            out = x * 1
            if write:
                out.add_(1)
        calls: list = []
        memo.put(calls, 0, out, [x], memo.before([x]))
        made = memo.like(calls, 1, [x])
        assert (made is not MISS) is given
        if given:
            assert made is not out and made._version == 0 and made.shape == out.shape
