"""Capture mechanics: what is recorded, what is left as it was, and how errors read."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchlens as tl
from torchlens.errors import CaptureThreadError, TorchLensTypeError, TorchLensValueError


def layers_of(trace):
    """``(func_name, num_passes)`` of every non-boundary layer, in order."""
    return [(l.func_name, l.num_passes) for l in trace.layers if not (l.is_input or l.is_output)]


def patched_state():
    """Everything a capture patches, by identity."""
    import torch._functorch.apis as apis
    import torch._functorch.eager_transforms as eager

    return (
        nn.Module.__call__, nn.Module._call_impl, nn.Module._call_impl.__code__, nn.Module.__setattr__,
        tuple(torch.nn.modules.module._global_buffer_registration_hooks),
        tuple(torch.Tensor.__dict__.get(n) for n in ("__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__")),
        F.has_torch_function, F.has_torch_function_unary, F.has_torch_function_variadic,
        torch.functional.has_torch_function,
        apis.vmap_impl, eager.grad_impl, eager.grad_and_value_impl,
        torch._C._len_torch_function_stack(),
        threading.gettrace(),
    )


class Mixed(nn.Module):
    """Exercises reflected operators, torch's Python functions, and a C module."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = sum([x, x, x])
        y = 2 * F.softmax(self.lin(y), -1)
        return torch.func.vmap(torch.sin)(y)


class Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(3, 5)

    def forward(self, x):
        x = torch.tanh(x)
        return self.inner(x.T)


def test_everything_patched_is_restored():
    before = patched_state()
    tl.trace(Mixed(), torch.ones(2, 4))
    assert patched_state() == before


def test_restored_and_exception_propagates_as_itself_with_a_note():
    before = patched_state()
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as info:
        tl.trace(Raises(), torch.ones(2, 3))
    assert patched_state() == before
    note = "\n".join(info.value.__notes__)
    assert "op `linear`" in note and "module `inner`" in note and "linear.py" in note


class SetsDtype(nn.Module):
    """Calls a function every capture patches (a mode setter), keeping what it called."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        self.setter = torch.set_default_dtype
        self.setter(torch.get_default_dtype())
        return self.lin(x)


def test_a_function_the_user_patched_between_traces_is_wrapped_then_put_back(monkeypatch):
    model, x = SetsDtype(), torch.ones(1, 2)
    tl.trace(model, x)  # the patches of the functions as torch had them
    calls, original = [], torch.set_default_dtype

    def users_setter(dtype):
        calls.append(dtype)
        original(dtype)

    monkeypatch.setattr(torch, "set_default_dtype", users_setter)
    tl.trace(model, x)
    assert calls and set(calls) == {torch.get_default_dtype()} and torch.set_default_dtype is users_setter
    called = len(calls)
    monkeypatch.undo()
    tl.trace(model, x)
    assert len(calls) == called and torch.set_default_dtype is original


def test_a_patched_function_kept_after_its_capture_calls_what_it_replaced():
    model, x = SetsDtype(), torch.ones(1, 2)
    tl.trace(model, x)
    assert model.setter is not torch.set_default_dtype  # the capture's wrapper, kept by the model
    before = patched_state()
    model.setter(torch.float64)
    try:
        assert torch.get_default_dtype() is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.equal(model(x), model.lin(x)) and patched_state() == before


def test_module_calls_are_routed_without_writing_a_class_attribute():
    """torch's ``_call_impl`` runs the capture's code while it is installed: ``nn.Module``'s own
    attributes (whose writes invalidate every subclass's type cache) are never written."""
    seen = []

    class Looks(nn.Module):
        def forward(self, x):
            seen.append((nn.Module.__dict__["_call_impl"], nn.Module._call_impl.__code__))
            return x + 1

    impl, code = nn.Module._call_impl, nn.Module._call_impl.__code__
    trace = tl.trace(Looks(), torch.ones(2))
    assert seen[0][0] is impl and seen[0][1] is not code and nn.Module._call_impl.__code__ is code
    assert [call.label for call in trace.modules["self"].calls] == ["self:1"]


def _forward_only(self, *args, **kwargs):
    # Another tool's ``_call_impl`` (no closure): runs ``forward`` without hooks.
    return self.forward(*args, **kwargs)


def test_a_call_impl_another_tool_put_in_place_is_routed_then_put_back():
    model, x = Mixed(), torch.ones(2, 4)
    impl, code = nn.Module._call_impl, nn.Module._call_impl.__code__
    tl.trace(model, x)  # the patches as torch had it
    impl.__code__ = _forward_only.__code__  # its code swapped by another tool between traces
    try:
        trace = tl.trace(model, x)
        assert nn.Module._call_impl.__code__ is _forward_only.__code__
    finally:
        impl.__code__ = code
    assert [call.label for call in trace.modules["lin"].calls] == ["lin:1"]

    def wrapper(self, *args, **kwargs):  # the class attribute replaced by a closure
        return impl(self, *args, **kwargs)

    nn.Module._call_impl = wrapper
    try:
        trace = tl.trace(model, x)
        assert nn.Module.__dict__["_call_impl"] is wrapper and impl.__code__ is code
    finally:
        nn.Module._call_impl = impl
    assert [call.label for call in trace.modules["lin"].calls] == ["lin:1"]


def test_the_removal_pops_every_copy_of_the_mode_on_top_and_nothing_below():
    from torch.overrides import TorchFunctionMode

    from torchlens.capture.patches import atomic
    from torchlens.capture.session import _pop_own_mode

    mode, other = TorchFunctionMode(), TorchFunctionMode()
    depth = torch._C._len_torch_function_stack()
    for pushed in (mode, other, mode, mode, mode):
        torch._C._push_on_torch_function_stack(pushed)
    try:
        atomic(_pop_own_mode(mode))()
        assert torch._C._len_torch_function_stack() == depth + 2
        assert torch._C._get_function_stack_at(depth + 1) is other
        torch._C._pop_torch_function_stack()
        atomic(_pop_own_mode(mode))()
        assert torch._C._len_torch_function_stack() == depth
    finally:
        while torch._C._len_torch_function_stack() > depth:
            torch._C._pop_torch_function_stack()


def test_python_exception_in_forward_names_the_module():
    class Fails(nn.Module):
        def forward(self, x):
            raise KeyError("boom")

    with pytest.raises(KeyError) as info:
        tl.trace(nn.Sequential(Fails()), torch.ones(1))
    assert "module `0`" in "\n".join(info.value.__notes__)


def test_model_state_is_untouched():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).eval()
    params = {k: v.clone() for k, v in model.state_dict().items()}
    tl.trace(model, torch.ones(2, 3))
    assert not model.training
    assert all(torch.equal(params[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: tl.trace(lambda x: x, torch.ones(1)), TorchLensTypeError),
        (lambda: tl.trace(nn.ReLU(), torch.ones(1), capture={"save_outputs": False}), TorchLensTypeError),
        (lambda: tl.trace(nn.ReLU(), torch.ones(1), forward_kwargs=[1]), TorchLensTypeError),
        (lambda: tl.options.CaptureOptions(save_outputs="yes"), TorchLensTypeError),
        (lambda: tl.trace(nn.ReLU(), torch.ones(1))["relu_9"], TorchLensValueError),
        (lambda: tl.trace(nn.ReLU(), torch.ones(1), check_prediction="yes"), TorchLensTypeError),
        (lambda: tl.trace(nn.ReLU(), torch.ones(1)).validate_forward_pass(strict=1), TorchLensTypeError),
    ],
    ids=["not-a-module", "options-dict", "kwargs-list", "bad-option-value", "unknown-label", "check-prediction-not-bool",
         "strict-not-bool"],
)
def test_bad_input_raises_a_typed_error(call, error):
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, tl.TorchLensError)


def test_dataparallel_is_refused():
    with pytest.raises(CaptureThreadError, match="model.module"):
        tl.trace(nn.DataParallel(nn.Linear(2, 2)), torch.ones(1, 2))


def test_module_called_from_a_second_thread_is_refused():
    class Threaded(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            errors = []
            worker = threading.Thread(target=lambda: _call_catching(self.lin, x, errors))
            worker.start()
            worker.join()
            raise errors[0]

    with pytest.raises(CaptureThreadError, match="second Python thread"):
        tl.trace(Threaded(), torch.ones(1, 2))


def _call_catching(module, x, errors):
    try:
        module(x)
    except Exception as error:  # handed back to the capturing thread
        errors.append(error)


def test_concurrent_captures_are_refused():
    started, release, errors = threading.Event(), threading.Event(), []

    class Slow(nn.Module):
        def forward(self, x):
            started.set()
            release.wait(10)
            return x + 1

    worker = threading.Thread(target=lambda: tl.trace(Slow(), torch.ones(1)))
    worker.start()
    started.wait(10)
    try:
        with pytest.raises(CaptureThreadError, match="another torchlens capture"):
            tl.trace(nn.ReLU(), torch.ones(1))
    finally:
        release.set()
        worker.join()


def test_outputs_are_kept_as_they_were_when_the_op_ran():
    class InPlace(nn.Module):
        def forward(self, x):
            y = x * 2
            y.view(-1).add_(1)
            y[0] = 5.0
            return y

    trace = tl.trace(InPlace(), torch.ones(2))
    assert trace["mul_1:1"].out.tolist() == [2.0, 2.0]
    assert trace["add__1:1"].out.tolist() == [3.0, 3.0]
    assert trace["setitem_1:1"].out.tolist() == [5.0, 3.0]
    assert [l.func_name for l in trace.layers] == ["input", "mul", "view", "add_", "setitem", "output"]


def test_metadata_queries_are_not_ops():
    class Meta(nn.Module):
        def forward(self, x):
            n = x.shape[0] + x.size(1) + x.dim() + x.numel()
            return x.reshape(n - 10, -1)  # n == 13

    assert layers_of(tl.trace(Meta(), torch.ones(2, 3))) == [("reshape", 1)]


def test_reflected_operators_and_torch_python_functions():
    trace = tl.trace(Mixed(), torch.ones(2, 4))
    assert layers_of(trace) == [("radd", 1), ("add", 2), ("linear", 1), ("softmax", 1), ("rmul", 1), ("vmap", 1)]
    assert trace["linear_1"].params == ("lin.weight", "lin.bias")


class ReflectedOnParameter(nn.Module):
    """``3 * parameter``, reading the reflected operators through ``torch.Tensor`` and its subclass."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))
        self.seen: list = []

    def forward(self, x):
        self.seen = [torch.Tensor.__radd__, nn.Parameter.__rmul__]
        return 3 * self.scale + x


def test_reflected_operators_are_read_as_the_capture_s_during_it_and_torch_s_after():
    # The capture writes them into torch.Tensor's dict and makes CPython forget what its
    # attribute caches held (capture.patches.slot_unchanged); caches left as they were would
    # give torch's methods during the capture and the capture's functions after it.
    base, model = torch._C.TensorBase, ReflectedOnParameter()
    looked_up = [torch.Tensor.__radd__, nn.Parameter.__rmul__]  # in the caches now
    assert looked_up == [base.__radd__, base.__rmul__]
    trace = tl.trace(model, torch.ones(4))
    assert layers_of(trace) == [("rmul", 1), ("add", 1)]
    assert model.seen[0] is not base.__radd__ and model.seen[1] is not base.__rmul__
    assert [torch.Tensor.__radd__, nn.Parameter.__rmul__] == looked_up
    assert "__rmul__" not in vars(torch.Tensor)
    assert torch.equal(3 * nn.Parameter(torch.ones(2)), torch.full((2,), 3.0))


def test_a_special_method_in_a_c_slot_is_patched_by_setattr_and_put_back():
    from torchlens.capture.patches import Patches, atomic, slot_unchanged

    class Number(int):
        pass

    assert slot_unchanged(torch.Tensor, "__radd__")
    assert not slot_unchanged(Number, "__radd__")  # int's slot wrapper: setting it changes the slot
    assert not slot_unchanged(torch.Tensor, "add")
    patches = Patches()
    patches.plan(Number, "__radd__", lambda self, other: "patched")
    atomic(patches.install())()
    assert 1 + Number(2) == "patched"
    atomic(patches.undo())()
    assert 1 + Number(2) == 3 and "__radd__" not in vars(Number)


def test_a_module_s_planned_attributes_are_written_in_one_step_and_put_back():
    import types

    from torchlens.capture.patches import Patches, atomic

    module = types.ModuleType("patched_here")
    module.first, module.second = "first", "second"
    lazy = types.ModuleType("lazy")  # an attribute its __getattr__ gives, not in its __dict__
    lazy.__getattr__ = lambda name: "given" if name == "given" else None  # type: ignore[method-assign]
    before = dict(vars(module)), dict(vars(lazy))
    patches = Patches()
    patches.plan(module, "first", 1)
    patches.plan(module, "second", 2)
    patches.plan(lazy, "given", 3)
    install, undo = list(patches.install()), list(patches.undo())
    assert len(install) == len(undo) == 2  # the module's dict in one step; the lazy one by setattr
    atomic(install)()
    assert (module.first, module.second, vars(lazy)["given"]) == (1, 2, 3)
    atomic(undo)()
    assert (dict(vars(module)), dict(vars(lazy))) == before


def test_the_module_namespaces_a_capture_patches_are_left_as_they_were():
    import torch._higher_order_ops

    namespaces = (torch, torch._C, torch.autograd, torch.nn.functional, torch._higher_order_ops)
    before = [dict(vars(namespace)) for namespace in namespaces]
    tl.trace(nn.Linear(2, 2), torch.ones(1, 2))
    with pytest.raises(RuntimeError):
        tl.trace(nn.Linear(2, 2), torch.ones(1, 3))
    after = [dict(vars(namespace)) for namespace in namespaces]
    for old, new in zip(before, after):
        assert old.keys() == new.keys() and all(old[k] is new[k] for k in old)


def test_position_fallback_when_no_python_frame_sits_in_between():
    class CForward(nn.Module):
        forward = torch.relu  # a C function: no Python frame under the module boundary

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = CForward()

        def forward(self, x):
            for _ in range(3):
                x = self.act(x) - 1
            return x

    trace = tl.trace(Outer(), torch.ones(2))
    assert layers_of(trace) == [("relu", 3), ("sub", 3)]
    assert trace["relu_1"].call_site.frames == ()
    assert trace["relu_1:2"].graph.site_key == ("act", "relu", 0, 0)


def test_save_outputs_false_keeps_shapes_only():
    trace = tl.trace(Mixed(), torch.ones(2, 4), capture=tl.options.CaptureOptions(save_outputs=False))
    assert all(op.out is None for op in trace.ops)
    assert trace["linear_1:1"].shape == (2, 4) and trace["linear_1:1"].dtype == torch.float32
    assert trace["linear_1:1"].parents == ("add_1:2",)


def test_no_frame_or_local_outlives_the_capture():
    class Marker:
        pass

    refs = []

    class Holds(nn.Module):
        def forward(self, x):
            marker = Marker()
            refs.append(weakref.ref(marker))
            return torch.tanh(x)

    trace = tl.trace(Holds(), torch.ones(1))
    gc.collect()
    assert refs[0]() is None and trace["tanh_1"].num_passes == 1


def test_forward_kwargs_reach_forward():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0, bias=None):
            return x * scale + bias

    trace = tl.trace(Scaled(), torch.ones(2), forward_kwargs={"scale": 3.0, "bias": torch.ones(2)})
    assert trace.input_layers == ("input_1", "input_2")
    assert trace[trace.output_layers[0]].out.tolist() == [4.0, 4.0]


def test_pre_hook_ops_belong_to_the_callers_scope():
    lin = nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda module, args: (args[0] * 2,))

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lin

        def forward(self, x):
            for _ in range(3):
                x = self.lin(x)
            return x

    trace = tl.trace(Outer(), torch.ones(1, 2))
    assert layers_of(trace) == [("mul", 3), ("linear", 3)]
    assert trace["mul_1"].module == "self" and trace["linear_1"].module == "lin"
    assert "[hook of lin]" in str(trace["mul_1"].call_site)


def _doubled(module, args):
    return (args[0] * 2,)


def _tripled(module, args, out):
    return out * 3


def _no_gradient_change(module, *grads):
    return None


_MODULE_HOOKS = torch.nn.modules.module
#: Every kind of hook torch's ``_call_impl`` runs, registered on a module or process-wide: kind ->
#: (how to register it on a module, the layers that module's call then records: a backward hook
#: wraps the call's input and output).
_HOOK_KINDS = {
    "forward pre-hook": (lambda m: m.register_forward_pre_hook(_doubled), [("mul", 1), ("linear", 1)]),
    "forward hook": (lambda m: m.register_forward_hook(_tripled), [("linear", 1), ("mul", 1)]),
    "backward hook": (lambda m: m.register_full_backward_hook(_no_gradient_change),
                      [("view_as", 1), ("linear", 1), ("view_as", 1)]),
    "backward pre-hook": (lambda m: m.register_full_backward_pre_hook(_no_gradient_change),
                          [("view_as", 1), ("linear", 1), ("view_as", 1)]),
    "global forward pre-hook": (lambda m: _MODULE_HOOKS.register_module_forward_pre_hook(_doubled),
                                [("mul", 1), ("linear", 1)]),
    "global forward hook": (lambda m: _MODULE_HOOKS.register_module_forward_hook(_tripled),
                            [("linear", 1), ("mul", 1)]),
    "global backward hook": (lambda m: _MODULE_HOOKS.register_module_full_backward_hook(_no_gradient_change),
                             [("view_as", 1), ("linear", 1), ("view_as", 1)]),
    "global backward pre-hook": (lambda m: _MODULE_HOOKS.register_module_full_backward_pre_hook(_no_gradient_change),
                                 [("view_as", 1), ("linear", 1), ("view_as", 1)]),
}


@pytest.mark.parametrize("kind", list(_HOOK_KINDS))
def test_a_hook_registered_during_the_forward_pass_runs_and_is_recorded(kind):
    """A module without hooks skips torch's hook handling (torch's own shortcut); a hook of any
    kind registered during the forward pass, on the module or process-wide, runs at the module's
    next call and what it does is recorded there."""
    register, expected = _HOOK_KINDS[kind]

    class Registering(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.lin = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            x = self.first(x)  # no hook yet
            handle = register(self.lin)
            try:
                return self.lin(x)
            finally:
                handle.remove()

    trace = tl.trace(Registering(), torch.ones(1, 2))
    assert layers_of(trace) == [("linear", 1), *expected]
    hooks = [layer for layer in trace.layers if layer.func_name in ("mul", "view_as")]
    assert hooks and all("[hook of lin]" in str(layer.call_site) for layer in hooks)


def test_trace_prints_a_table():
    text = str(tl.trace(Mixed(), torch.ones(2, 4)))
    assert "radd_1" in text and "weight, bias" in text and "lin:1" in text  # params named within their module


def test_no_debug_ranges_falls_back_to_offsets():
    script = textwrap.dedent(
        """
        import torch, torchlens as tl
        class Two(torch.nn.Module):
            def forward(self, a):
                return torch.sin(a) + torch.sin(a)
        print([(l.layer_label, l.num_passes) for l in tl.trace(Two(), torch.ones(1)).layers])
        """
    )
    out = subprocess.run([sys.executable, "-X", "no_debug_ranges", "-c", script], capture_output=True, text=True, check=True)
    assert "('sin_1', 1), ('sin_2', 1)" in out.stdout


def test_ops_index_by_position_and_label():
    trace = tl.trace(Mixed(), torch.ones(2, 4))
    assert trace.ops[0].label == "input_1:1"
    assert trace.ops["add_1:2"] is trace["add_1"].ops[1]
    assert trace.ops[trace.output_layers[0]] is trace[trace.output_layers[0]].ops[0]
    with pytest.raises(TorchLensValueError):
        trace.ops["add_1"]  # two passes: name one


class FillsEmpty(nn.Module):
    """``torch.nn.utils.rnn.invert_permutation``'s pattern: uninitialised memory, then filled."""

    def forward(self, perm):
        out = torch.empty_like(perm)
        out.scatter_(0, perm, torch.arange(perm.numel()))
        return out * 2


def test_validation_compares_uninitialised_memory_by_shape_and_dtype_only():
    trace = tl.trace(FillsEmpty(), torch.tensor([2, 0, 1]))
    report = trace.validate_forward_pass()
    assert report.ok and report.metadata_only == ("empty_like_1:1",)
    assert report.checked == len(trace.ops) - 1  # every op but the input; scatter_ and mul by value
    assert "uninitialised memory, shape and dtype only: empty_like_1:1" in str(report)
