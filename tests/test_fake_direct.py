"""Fakes made without the fake mode's dispatch (:mod:`torchlens.fake_direct`) equal the mode's own."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchlens import fake_composite
from torchlens.fake_direct import NOT_DONE, fresh, in_place, live, on_twins, ops
from torchlens.torch_host import FakeShapes


def _everything(t, mode, inputs) -> tuple:
    """All a fake has that a prediction (or the code it reads) can see, its view and storage
    relations to ``inputs`` and its attributes and dispatch keys included (not its ``grad_fn``'s
    type: ``grad_fn is None`` only)."""
    if not isinstance(t, torch.Tensor):
        return ("value", t)
    base = t._base
    storage = t.untyped_storage()._cdata
    attributes = {name: "the mode" if value is mode else value for name, value in vars(t).items()}
    return (attributes, torch._C._dispatch_keys(t), type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.fake_device, t.layout,
            t.requires_grad, t.is_leaf, t._is_view(), t.untyped_storage().nbytes(), t.is_conj(), t.is_neg(),
            t.is_inference(), t._version, t.grad_fn is None, t.constant is None, t.fake_mode is mode,
            [k for k, i in enumerate(inputs) if i is t], [k for k, i in enumerate(inputs)
                                                         if i.untyped_storage()._cdata == storage],
            None if base is None else (base.shape, base.stride(), base.requires_grad, base.is_leaf,
                                       base.untyped_storage().nbytes(), [k for k, i in enumerate(inputs) if i is base]))


def _layouts(shape: tuple, dtype: torch.dtype, grad: bool) -> list:
    """Live tensors of ``shape`` laid out every way a model's tensors are (contiguous, permuted,
    channels-last, expanded, a slice with a storage offset, a view of a parameter)."""
    base = torch.randn(shape).to(dtype)
    out = [base, base.transpose(-1, -2).contiguous().transpose(-1, -2)]
    if len(shape) == 4:
        out.append(base.contiguous(memory_format=torch.channels_last))
    out.append(torch.randn(shape[-1]).to(dtype).expand(shape))
    wide = torch.randn(*shape[:-1], shape[-1] + 2).to(dtype)
    out.append(wide[..., 1:-1])
    if grad:
        out = [t.clone().requires_grad_() if t.is_leaf and not t._is_view() else nn.Parameter(t.clone()) * 1
               for t in out]
        out.append(nn.Parameter(base.clone())[..., :])  # a view of a leaf that requires grad
    return out


def _cases(x, y, w, b, v, mask):
    """(op, args, kwargs): ``x`` 4-d, ``y`` like ``x``, ``w``/``b`` a linear's weight and bias,
    ``v`` a vector of ``x``'s last size, ``mask`` a bool tensor like ``x``."""
    n = x.shape[-1]
    yield from ((fn, (x, other), {}) for fn in (torch.add, torch.sub, torch.mul, torch.Tensor.__add__,
                                                torch.Tensor.__sub__, torch.Tensor.__mul__, torch.Tensor.__truediv__,
                                                torch.Tensor.__radd__, torch.Tensor.__rmul__, torch.Tensor.add,
                                                torch.Tensor.mul, torch.div)
                for other in (y, v, 2, 0.5))
    yield torch.Tensor.__rsub__, (x, 1.0), {}
    yield torch.Tensor.__rtruediv__, (x, 1.0), {}
    yield torch.add, (x, y), {"alpha": 2}
    for fn in (torch.Tensor.__neg__, torch.neg, torch.relu, torch.sigmoid, torch.tanh, torch.exp, torch.Tensor.relu,
               torch.Tensor.sigmoid, torch.Tensor.exp, torch.abs, torch.rsqrt, torch.sqrt, torch._C._nn.gelu,
               torch._C._nn.silu, torch._C._nn.hardswish, torch._C._nn.hardsigmoid, torch.Tensor.contiguous,
               torch.Tensor.t if x.dim() == 2 else torch.Tensor.contiguous):
        yield fn, (x,), {}
    yield torch._C._nn.gelu, (x,), {"approximate": "tanh"}
    yield torch.clamp, (x, -0.5, 0.5), {}
    yield torch.Tensor.clamp, (x,), {"min": 0.0}
    yield torch.clamp_min, (x, 1e-6), {}
    yield torch.Tensor.clamp_max, (x, 3.0), {}
    yield torch.Tensor.masked_fill, (x, mask, -100.0), {}
    for fn in (torch.Tensor.__eq__, torch.Tensor.__ne__, torch.eq, torch.Tensor.ne):
        yield fn, (x, y), {}
        yield fn, (x, 0.5), {}
    yield torch.Tensor.norm, (x, 2, -1, True), {}
    yield torch.Tensor.norm, (x,), {}
    yield torch.norm, (x,), {"dim": (1, 2)}
    yield torch.clone, (x,), {}
    yield torch.Tensor.clone, (x,), {"memory_format": torch.contiguous_format}
    yield torch.Tensor.new_zeros, (x, (2, n)), {}
    yield torch.Tensor.new_zeros, (x, x.shape), {"dtype": torch.float64}
    yield torch.Tensor.softmax, (x, -1), {}
    yield torch.softmax, (x, 1), {}
    yield torch.log_softmax, (x, -1), {}
    yield torch._C._nn.linear, (x, w, b), {}
    yield torch._C._nn.linear, (x, w), {}
    yield torch.matmul, (x, w.t()), {}
    yield torch.Tensor.__matmul__, (x, y.transpose(-1, -2)), {}
    yield torch.layer_norm, (x, (n,), v, v, 1e-5), {}
    yield torch.layer_norm, (x, (n,)), {}
    yield torch.mean, (x, -1), {"keepdim": True}
    yield torch.Tensor.mean, (x, (1, 2)), {}
    yield torch.Tensor.sum, (x, 1), {}
    yield torch.amax, (x, -1), {}
    yield torch.Tensor.unsqueeze, (x, -1), {}
    yield torch.Tensor.permute, (x, *reversed(range(x.dim()))), {}
    yield torch.Tensor.transpose, (x, 0, 1), {}
    yield torch.Tensor.swapaxes, (x, 1, -1), {}
    yield torch.Tensor.unsqueeze, (x, 1), {}
    yield torch.Tensor.squeeze, (x, 0), {}
    yield torch.Tensor.squeeze, (x,), {}
    yield torch.Tensor.unsqueeze, (x, 0), {}
    yield torch.Tensor.expand, (x[..., :1], *x.shape), {}
    yield torch.Tensor.expand_as, (v, x), {}
    yield torch.Tensor.narrow, (x, -1, 1, n - 1), {}
    yield torch.Tensor.select, (x, 1, 0), {}
    for index in (0, (slice(None), 1), (Ellipsis, slice(1, None)), (None, slice(None, None, 2)),
                  (slice(None), slice(None), 0, -1), (slice(-1, None),)):
        yield torch.Tensor.__getitem__, (x, index), {}
    yield torch.cat, ([x, y], -1), {}
    yield torch.cat, ((x, y, x), 1), {}
    yield torch.stack, ([x, y], 1), {}
    yield torch.roll, (x, (1, -1), (1, 2)), {}
    yield torch.roll, (x, 2), {}
    yield F.pad, (x, (1, 2)), {}
    yield F.pad, (x, (0, 0, 1, 1)), {"value": -1.0}
    # composites (fake_composite): strides of size-1 dimensions as the fake mode's reference gives them
    for shape in ((-1,), (x.shape[0], -1), (*x.shape, 1), (1, -1, n), (x.shape[0], 1, -1, 1), (-1, 1, n)):
        yield torch.Tensor.view, (x, *shape), {}
        yield torch.Tensor.reshape, (x, shape), {}
        yield torch.reshape, (x, shape), {}
    yield torch.Tensor.view, (x, torch.int16 if x.dtype == torch.bfloat16 else torch.int32), {}
    for dims in ((), (1,), (0, 2), (2, -1), (-2,)):
        yield torch.flatten, (x, *dims), {}
        yield torch.Tensor.flatten, (x, *dims), {}
    yield torch.Tensor.unflatten, (x, -1, (1, n)), {}
    yield torch.Tensor.unflatten, (x, 1, (-1, 1)), {}
    yield torch.Tensor.view_as, (x, y), {}
    yield torch.Tensor.reshape_as, (x, y), {}
    yield torch.Tensor.reshape_as, (x[:, :1], y[:, :1]), {}
    for equation, operands in (("abcd,abed->abce", (x, y)), ("abcd->abdc", (x,)), ("abcd,d->abc", (x, v)),
                               ("abcd,ed->abce", (x, w)), ("abcd,abcd->ab", (x, y)), ("...d,ed->...e", (x, w)),
                               ("abcd,abce->abde", (x, y)), ("abcd->", (x,)), ("abcd,e->abcde", (x, b))):
        yield torch.einsum, (equation, *operands), {}
    yield torch._C._VariableFunctions.einsum, ("abcd,abed->abce", (x, y)), {}  # (what torch.einsum calls)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_ops_on_meta_twins_equal_the_fake_mode_s_own(grad_mode) -> None:
    """For every op of :func:`ops`, on many layouts, dtypes and grad settings: where
    :func:`on_twins` gives a fake, it equals what the fake mode gives in everything a fake has;
    and it gives one in most cases (it is not a path that never runs)."""
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    made, seen, compared, differ = set(), set(), 0, {}  # type: ignore[var-annotated]
    dtypes = [torch.float32, torch.bfloat16] if grad_mode else [torch.float64]
    for shape, dtype, grad in itertools.product([(1, 6, 4, 4), (3, 1, 5, 2)], dtypes, [False, True]):
        ws = [shapes.fake(t) for t in (nn.Parameter(torch.randn(7, shape[-1]).to(dtype), requires_grad=grad),
                                       nn.Parameter(torch.randn(7).to(dtype), requires_grad=grad))]
        mask = shapes.fake(torch.rand(shape) > 0.5)
        for x, y in zip(_layouts(shape, dtype, grad), reversed(_layouts(shape, dtype, False))):
            x, y, v = shapes.fake(x), shapes.fake(y), shapes.fake(torch.randn(shape[-1]).to(dtype).requires_grad_(grad))
            for fn, args, kwargs in _cases(x, y, *ws, v, mask):
                inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
                inputs += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
                seen.add(fn)
                with torch.set_grad_enabled(grad_mode):
                    try:
                        with mode:
                            own = fn(*args, **kwargs)
                    except Exception:  # noqa: BLE001 - a dtype the op refuses: the twins must not answer
                        assert on_twins(mode, fn, list(args), kwargs) is None, fn
                        continue
                    direct = on_twins(mode, fn, list(args), kwargs)
                if direct is None:
                    continue
                made.add(fn)
                compared += 1
                if _everything(direct, mode, inputs) != _everything(own, mode, inputs):
                    differ[getattr(fn, "__qualname__", fn)] = (shape, dtype, grad)
    assert not differ, differ
    assert seen <= ops() and made == seen, sorted(map(str, seen - made))
    assert compared > 1000


def test_fresh_fakes_are_an_op_s_outputs() -> None:
    """:func:`fresh` makes what a clone made on the fake mode is, with and without grad."""
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    for grad in (False, True):
        x = shapes.fake(torch.randn(2, 3, 4).requires_grad_(grad))
        with mode:
            own = torch.ops.aten.clone.default(x)
        made = fresh(mode, x.shape, x.stride(), x.dtype, x.fake_device, grad, x)
        assert _everything(made, mode, [x]) == _everything(own, mode, [x])
    with torch.no_grad():
        assert fresh(mode, (2,), (1,), torch.float32, torch.device("cpu"), True, x) is None


def test_what_the_twins_cannot_stand_for_goes_to_the_fake_mode() -> None:
    """A constant, an inference tensor, a live tensor, an object, an op not listed, a tensor index,
    an active mode: no answer (the fake mode's run decides)."""
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    x = shapes.fake(torch.randn(2, 3))
    with mode:
        constant = torch.tensor(2.0)
    with torch.inference_mode():
        inference = shapes.fake(torch.randn(2, 3))
    index = shapes.fake(torch.tensor([0, 1]))
    for fn, args in [(torch.add, (x, constant)), (torch.add, (x, inference)), (torch.add, (x, torch.randn(2, 3))),
                     (torch.add, (x, object())), (torch.nonzero, (x,)), (torch.Tensor.__getitem__, (x, index)),
                     (torch.Tensor.add_, (x, 1)), (torch.Tensor.view, (x, 5, 7))]:
        assert on_twins(mode, fn, list(args), {}) is None, fn
    with torch.autocast("cpu"):
        assert on_twins(mode, torch.add, [x, x], {}) is None
    assert on_twins(mode, torch.add, [x, x], {}) is not None


def _written(x, v):
    """(in-place op, args) writing into ``x`` (``v`` a plain number)."""
    yield from ((fn, (x,)) for fn in (torch.relu_, torch.Tensor.relu_, torch.Tensor.zero_, torch._C._nn.hardswish_,
                                      torch._C._nn.hardsigmoid_, torch._C._nn.silu_, torch._C._nn.relu6_,
                                      torch.Tensor.sigmoid_, torch.Tensor.tanh_))
    yield torch._C._nn.hardtanh_, (x, -1.0, 1.0)
    yield from ((fn, (x, v)) for fn in (torch.Tensor.fill_, torch.Tensor.add_, torch.Tensor.sub_, torch.Tensor.mul_,
                                        torch.Tensor.div_, torch.Tensor.__iadd__, torch.Tensor.__isub__,
                                        torch.Tensor.__imul__, torch.Tensor.__itruediv__))
    for index in (0, (slice(None), 1), (Ellipsis, slice(1, None)), (slice(-1, None), slice(0, 1)), (None, 0),
                  (slice(None), slice(None), 0, -1), 99):
        yield torch.Tensor.__setitem__, (x, index, v)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_in_place_ops_done_without_the_fake_mode_do_what_it_does(grad_mode) -> None:
    """Each in-place op of :func:`in_place`, on fakes laid out every way, with and without grad
    (a leaf, an op's output, a view of either, one of views made together, a view made in
    no-grad mode): where it is done without the fake mode, the
    fake written, its base and the op's answer equal what the fake mode's own run gives to an
    equal fake (version counter included); where the fake mode raises, it is not done."""
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    done, seen, differ = set(), set(), {}
    for shape, dtype, grad in [((1, 6, 4, 4), torch.float32, True), ((3, 1, 5, 2), torch.float32, False),
                               ((3, 1, 5, 2), torch.int64, False)][:3 if grad_mode else 2]:
        for layout, live in enumerate(_layouts(shape, dtype, grad)):
            for form in ("leaf", "output", "view", "one of views", "view made without grad", "view as like makes"):
                for v in (2,) if dtype is torch.int64 else (0.5,):
                    for k, (fn, _) in enumerate(_written(None, v)):
                        pair = []
                        for _ in range(2):
                            x = shapes.fake(live.detach().clone().requires_grad_(live.requires_grad))
                            if form != "leaf":
                                with mode:
                                    x = x * 1
                            if form == "view":
                                x = x[..., :]
                            elif form == "one of views":
                                with mode:
                                    x = x.unbind(0)[0]
                            elif form == "view made without grad":
                                with mode, torch.no_grad():
                                    x = x[..., :]
                            elif form == "view as like makes":
                                x = fake_composite.as_strided(mode, x, x.shape, x.stride(), x.storage_offset())
                            pair.append(x)
                        (_, args), (_, own_args) = list(_written(pair[0], v))[k], list(_written(pair[1], v))[k]
                        seen.add(fn)
                        with torch.set_grad_enabled(grad_mode):
                            try:
                                with mode:
                                    own = fn(*own_args)
                            except Exception:  # noqa: BLE001 - refused (a leaf that requires grad, a dtype)
                                assert in_place(mode, fn, list(args), {}) is NOT_DONE, fn
                                continue
                            made = in_place(mode, fn, list(args), {})
                        if made is NOT_DONE:
                            continue
                        done.add(fn)
                        if form.startswith("view") and pair[0].requires_grad:
                            done.add("a view that requires grad")
                        mine, theirs = ((_everything(out, mode, [target]), _everything(target, mode, []),
                                         None if target._base is None else _everything(target._base, mode, []))
                                        for out, target in ((made, pair[0]), (own, pair[1])))
                        if mine != theirs:
                            differ[getattr(fn, "__qualname__", fn)] = (shape, dtype, grad, layout, form, v)
    assert not differ, differ
    assert done - {"a view that requires grad"} == seen, sorted(map(str, seen - done))
    assert ("a view that requires grad" in done) == grad_mode  # (swin_v2's relu_ after a linear of a 4-d input)


def test_a_write_into_a_view_as_like_makes_it_needs_no_fake_mode(monkeypatch) -> None:
    """Autograd replays a view written into (its new history); a view made by ``as_strided`` (as
    ``OpMemo.like`` makes them) is replayed by :func:`~torchlens.fake_composite.as_strided`'s
    path, not the fake mode's dispatch (~0.3 ms a write)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    shapes = FakeShapes()
    mode = shapes._fake_mode()
    with mode:
        x = shapes.fake(torch.randn(4, 6, requires_grad=True)) * 1
    view = fake_composite.as_strided(mode, x, (4, 3), (6, 1), 2)
    calls = []
    dispatch = FakeTensorMode.dispatch
    monkeypatch.setattr(FakeTensorMode, "dispatch", lambda self, *a, **k: calls.append(a[0]) or dispatch(self, *a, **k))
    assert in_place(mode, torch.relu_, [view], {}) is view
    assert calls == [] and view._version == 1 and view.grad_fn is not None and x._version == 1


def test_fakes_of_live_tensors_made_directly_are_the_mode_s_own() -> None:
    """:func:`live` makes the fake ``from_tensor`` makes of a parameter or a buffer (every dtype,
    layout and grad setting, 0-d included), kept in the mode's memo (the mode's own conversion
    of that tensor gives it back; a view, the only one of its base, with its base); and none
    of what it cannot stand for (a view of a tensor other views share, or that requires grad, a tensor
    sharing its storage, a subclass, a tensor with a grad or attributes, an inference tensor,
    a storage larger than the tensor, one of at most one element)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def everything(t, mode):
        return (_everything(t, mode, []), isinstance(t, nn.Parameter), getattr(t, "_is_param", False),
                {k: v for k, v in t.__dict__.items() if k != "fake_mode"})

    tensors = []
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        for shape in ((3, 4), (2, 3, 4, 5), (2,)):
            t = torch.zeros(shape, dtype=dtype)
            tensors.append(t)
            if dtype.is_floating_point:
                tensors += [nn.Parameter(t.clone()), nn.Parameter(t.clone(), requires_grad=False)]
    tensors.append(nn.Parameter(torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)))
    tensors.append(torch.empty_strided((4, 3), (1, 4)))  # transposed strides, alone on its storage
    # views of a tensor nothing else holds (swin's relative_position_index: a flatten() registered)
    tensors += [torch.arange(24).reshape(2, 3, 4).sum(-1).flatten(), torch.randn(4, 3)[1:], torch.randn(4, 6).t(),
                torch.randn(4, 6)[1], torch.randn(4, 6)[:, ::2]]
    for tensor in tensors:
        mode, other = FakeTensorMode(allow_non_fake_inputs=True), FakeTensorMode(allow_non_fake_inputs=True)
        made = live(mode, tensor)
        assert made is not None, (type(tensor), tensor.shape, tensor.dtype)
        assert mode.from_tensor(tensor) is made
        own = other.from_tensor(tensor)
        assert everything(made, mode) == everything(own, other)
        if tensor._is_view():
            assert mode.from_tensor(tensor._base) is made._base
            assert everything(made._base, mode) == everything(own._base, other)

    shared = torch.randn(3, 4)
    kept = shared.detach()  # noqa: F841 - shares the storage while alive
    with_grad = nn.Parameter(torch.randn(3))
    with_grad.grad = torch.zeros(3)
    tagged = nn.Parameter(torch.randn(3))
    tagged.no_decay = True
    with torch.inference_mode():
        inference = torch.randn(3)
    larger = torch.randn(6)[:3].clone()
    larger.set_(torch.randn(6).untyped_storage(), 0, (3,), (1,))
    viewed = torch.randn(4, 3)
    other_view = viewed[:1]  # noqa: F841 - another view of the same base while alive
    for tensor in (viewed[1:], nn.Parameter(torch.randn(4, 3))[1:], torch.randn(4, 3).requires_grad_()[1:], shared, with_grad, tagged, inference, larger, torch.tensor(3), torch.zeros(1),
                   torch.zeros(0, 3),
                   torch.randn(2, 3).requires_grad_() * 2):
        assert live(FakeTensorMode(allow_non_fake_inputs=True), tensor) is None


@pytest.mark.parametrize("grad_mode", [True, False])
def test_views_made_without_the_fake_mode_are_its_own(grad_mode) -> None:
    """:func:`~torchlens.fake_composite.as_strided` makes what the fake mode's ``as_strided``
    makes (geometry, grad, leaf and view bits, base, storage, version) of fakes laid out every
    way, leaves and ops' outputs and views of them, with and without grad (and inference) mode;
    a fake with a constant goes through the mode (which folds it)."""
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    compared = 0
    for dtype, grad in [(torch.float32, True), (torch.float32, False), (torch.int64, False)]:
        for live in _layouts((3, 1, 5, 2), dtype, grad):
            for form in ("leaf", "output", "view", "one of views", "view made without grad"):
                x = shapes.fake(live)
                if form != "leaf":
                    with mode:
                        x = x * 1
                if form == "view":
                    x = x[1:]
                for shape, stride, offset in [((5, 2), (2, 1), 0), ((2, 5), (1, 2), 3), ((3, 1, 5, 2), x.stride(), 0),
                                              ((1,), (0,), 7), (x.shape, x.stride(), x.storage_offset())]:
                    with torch.set_grad_enabled(grad_mode):
                        with mode:
                            own = torch.ops.aten.as_strided.default(x, shape, stride, offset)
                        made = fake_composite.as_strided(mode, x, shape, stride, offset)
                    assert _everything(made, mode, [x]) == _everything(own, mode, [x]), (live.stride(), form, shape)
                    compared += 1
    x = shapes.fake(torch.randn(3, 4))
    with torch.inference_mode():
        made = fake_composite.as_strided(mode, x, (4,), (1,), 2)
        with mode:
            own = torch.ops.aten.as_strided.default(x, (4,), (1,), 2)
    assert _everything(made, mode, [x]) == _everything(own, mode, [x])
    with mode:
        constant = torch.tensor(2.0)
    assert constant.constant is not None
    assert fake_composite.as_strided(mode, constant, (1,), (0,), 0).constant is not None
    assert compared > 100


def test_fakes_wrapped_without_the_constructor_are_its_own(monkeypatch) -> None:
    """:func:`~torchlens.fake_composite.wrapped` makes what ``FakeTensor(mode, elem, device)``
    makes (attributes, dispatch keys, metadata), for modes that guard data pointers either way;
    in the constructor's debug mode (a traceback kept) and for another device it is the
    constructor's own."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorConfig, FakeTensorMode

    compared = 0
    for unsafe in (False, True):
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        mode._allow_unsafe_data_ptr_access = unsafe
        for shape, stride, dtype, grad in [((2, 3), (3, 1), torch.float32, False), ((2, 3), (1, 2), torch.float32, True),
                                           ((4,), (2,), torch.int64, False), ((), (), torch.bfloat16, True)]:
            elem = torch.empty_strided(shape, stride, dtype=dtype, device="meta", requires_grad=grad)
            made, own = fake_composite.wrapped(mode, elem, torch.device("cpu")), FakeTensor(mode, elem, torch.device("cpu"))
            assert _everything(made, mode, []) == _everything(own, mode, [])
            compared += 1
    assert compared == 8
    monkeypatch.setattr(FakeTensorConfig, "debug", True)
    assert hasattr(fake_composite.wrapped(mode, torch.empty(2, device="meta"), torch.device("cpu")), "_debug_trace")


def test_an_in_place_op_runs_on_a_twin_once_per_key(monkeypatch) -> None:
    """What an in-place op did to a meta twin is kept by the twin's metadata and the other
    arguments (by type and value): the same write again is done without running it, one that
    differs in any of them runs, and what raised on the twin is still not done."""
    from torchlens import fake_direct

    ran: list = []
    run = fake_direct._run
    monkeypatch.setattr(fake_direct, "_run", lambda fn, *rest: ran.append(fn) or run(fn, *rest))
    monkeypatch.setattr(fake_direct, "_WRITTEN", {})
    shapes = FakeShapes()
    mode = shapes._fake_mode()
    fakes = [shapes.fake(t) for t in (torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 3).t(),
                                      torch.zeros(3, 4, dtype=torch.int64))]
    calls = [(torch.Tensor.relu_, (fakes[0],), True), (torch.Tensor.relu_, (fakes[1],), False),
             (torch.Tensor.relu_, (fakes[2],), True), (torch.Tensor.fill_, (fakes[0], 1), True),
             (torch.Tensor.fill_, (fakes[1], 1.0), True), (torch.Tensor.fill_, (fakes[1], True), True),
             (torch.Tensor.fill_, (fakes[0], 1), False), (torch.Tensor.__setitem__, (fakes[0], 7, 0.5), True),
             (torch.Tensor.__setitem__, (fakes[1], 7, 0.5), False), (torch.Tensor.tanh_, (fakes[3],), True),
             (torch.Tensor.tanh_, (fakes[3],), False)]
    for fn, args, runs in calls:
        ran.clear()
        version = args[0]._version
        made = in_place(mode, fn, list(args), {})
        assert ran == ([fn] if runs else []), (fn, args[1:])
        raises = fn is torch.Tensor.__setitem__ or fn is torch.Tensor.tanh_  # out of range; a float into ints
        assert (made is NOT_DONE) is raises and args[0]._version == version + (not raises)
