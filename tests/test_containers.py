"""Containers (``spec/containers.txt``): record, view and rebuild structured inputs and outputs."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch

import torchlens as tl
from torchlens.errors import (
    ContainerFlattenError, ContainerKeyError, ContainerStructureError, OpaqueContainerError,
    TorchLensTypeError, TorchLensValueError,
)
from models.containers import (
    PACKS, CacheLM, PairBox, Result, Returns, TakesBatch, Unknown, UsesHalves, VariableKeys, Pair,
)

STRUCTURE = tl.options.CaptureOptions(capture_container_structure=True)


def output_container(trace):
    return trace[trace.output_layers[0]].container


# -- the spec's example ------------------------------------------------------------------------

def test_spec_example_dict_with_legacy_cache():
    torch.manual_seed(0)
    model, x = CacheLM(), torch.randn(2, 4)
    trace = tl.trace(model, x, capture=STRUCTURE)
    container = output_container(trace)
    assert (container.kind, container.root_kind, container.root_id, container.reconstructable) == (
        "dict", "model_output", "output", True)
    assert container.keys() == ("logits", "past_key_values")
    assert container["logits"] is trace["output_1:1"]
    key_op = container["past_key_values"][0][0]
    assert key_op is trace["output_2:1"] and key_op.parents == ("linear_1:1",)
    assert trace["linear_1"].module == "keys.0"
    assert torch.equal(key_op.out, model.keys[0](x))
    assert container["past_key_values"][1][1].parents == ("linear_4:1",)
    assert container["past_key_values"][-1][0] is container["past_key_values"][1][0]
    cache = container["past_key_values"]
    assert (cache.kind, cache.path, len(cache), repr(cache)) == (
        "tuple", ("past_key_values",), 2, "<Container tuple[2] (model_output) output['past_key_values']>")
    assert [op.label for op in cache.leaves] == ["output_2:1", "output_3:1", "output_4:1", "output_5:1"]
    assert trace["output_2:1"].container_spec.path == ("past_key_values", 0, 0)
    assert repr(trace["output_5:1"].container_spec) == "ContainerSpec(output['past_key_values'][1][1])"


def test_reconstruct_rebuilds_the_spec_example():
    torch.manual_seed(0)
    model, x = CacheLM(), torch.randn(2, 4)
    expected = model(x)
    trace = tl.trace(model, x, capture=STRUCTURE)
    for rebuilt in (output_container(trace).reconstruct(), trace.reconstruct_output()):
        assert type(rebuilt) is dict and list(rebuilt) == ["logits", "past_key_values"]
        assert torch.equal(rebuilt["logits"], expected["logits"])
        assert [[type(pair)] + [torch.equal(a, b) for a, b in zip(pair, want)]
                for pair, want in zip(rebuilt["past_key_values"], expected["past_key_values"])] == [
            [tuple, True, True], [tuple, True, True]]
    rebuilt_cache = output_container(trace)["past_key_values"][1].reconstruct()
    assert type(rebuilt_cache) is tuple and rebuilt_cache[0] is trace["output_4:1"].out


def test_selectors_reach_leaves_by_path():
    trace = tl.trace(CacheLM(), torch.randn(2, 4), capture=STRUCTURE)
    assert trace.output_at("past_key_values", 0, 1) is trace["output_3:1"]
    assert trace.output_at("past_key_values", 1).path == ("past_key_values", 1)
    assert trace.output_at().kind == "dict"
    with pytest.raises(ContainerKeyError, match=r"output\['past_key_values'\]\[0\]\[0\] is not a container"):
        trace.output_at("past_key_values", 0, 0, 1)
    with pytest.raises(KeyError, match=r"output \(dict\) has no key 'loss'; its keys are \['logits', 'past_key_values'\]"):
        trace.output_at("loss")


# -- each built-in kind --------------------------------------------------------------------------

CASES = {
    # kind: (first key, path to the sigmoid leaf, expected container kind)
    "tuple": (0, (1, 0), "tuple"),
    "list": (0, (1, 0), "list"),
    "dict": ("a", ("inner", "b"), "dict"),
    "ordered_dict": ("a", ("inner", "b"), "dict"),
    "namedtuple": ("first", ("second", "first"), "namedtuple"),
    "dataclass": ("hidden", ("extras", 0), "dataclass"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_builtin_kind_indexes_and_rebuilds(name):
    first, path, kind = CASES[name]
    x = torch.randn(3)
    model = Returns(PACKS[name])
    expected = model(x)
    trace = tl.trace(model, x, capture=STRUCTURE)
    container = output_container(trace)
    assert (container.kind, container.type_name) == (kind, type(expected).__name__)
    assert container[first] is trace["output_1:1"] and trace["output_1:1"].parents == ("tanh_1:1",)
    assert trace.output_at(*path) is trace["output_2:1"] and trace["output_2:1"].parents == ("sigmoid_1:1",)
    rebuilt = trace.reconstruct_output()
    assert type(rebuilt) is type(expected) and repr(rebuilt) == repr(expected)


def test_constants_and_positions_inside_containers():
    trace = tl.trace(Returns(PACKS["namedtuple"]), torch.randn(3), capture=STRUCTURE)
    container = output_container(trace)
    assert container[0] is container["first"] and container[1][1] == "s" and container["second"]["second"] == "s"
    rebuilt = trace.reconstruct_output()
    assert isinstance(rebuilt, Pair) and rebuilt.second.second == "s"
    dataclass_trace = tl.trace(Returns(PACKS["dataclass"]), torch.randn(3), capture=STRUCTURE)
    assert output_container(dataclass_trace)["step"] == 7 and dataclass_trace.reconstruct_output().step == 7
    with pytest.raises(ContainerKeyError, match="has no key 0"):
        output_container(dataclass_trace)[0]  # dataclass fields are reached by name only
    rebuilt = tl.trace(Returns(PACKS["ordered_dict"]), torch.randn(3)).reconstruct_output()
    assert type(rebuilt) is OrderedDict and type(rebuilt["inner"]) is OrderedDict


def test_single_tensor_output_has_no_container_but_reconstructs():
    x = torch.randn(3)
    trace = tl.trace(torch.nn.Tanh(), x, capture=STRUCTURE)
    assert trace["output_1:1"].container is None and trace.output_at() is trace["output_1:1"]
    assert torch.equal(trace.reconstruct_output(), torch.tanh(x))


# -- always vs opt-in ---------------------------------------------------------------------------------

def test_default_capture_records_output_structure_only():
    x = torch.randn(2, 4)
    trace = tl.trace(CacheLM(), x)
    assert all(op.container_spec is None and op.container is None for op in trace.ops)
    assert list(trace.reconstruct_output()) == ["logits", "past_key_values"]
    assert [r.role for r in trace.containers.roots] == ["model_output"]
    with pytest.raises(TorchLensValueError, match="capture_container_structure=True"):
        trace.input_at(0)


def test_reconstruct_output_saving_only_the_outputs():
    model, x = CacheLM(), torch.randn(2, 4)
    options = tl.options.CaptureOptions(save=("output",), capture_container_structure=True)
    trace = tl.trace(model, x, capture=options)
    assert all(op.out is None for op in trace.ops if not op.layer.is_output)
    assert torch.equal(trace.reconstruct_output()["logits"], model(x)["logits"])
    assert output_container(trace).reconstructable


def test_reconstruct_output_without_saved_outputs_says_how_to_save_them():
    model, x = CacheLM(), torch.randn(2, 4)
    trace = tl.trace(model, x, capture=tl.options.CaptureOptions(save="none", capture_container_structure=True))
    assert trace["output_1:1"].out is None
    with pytest.raises(tl.TorchLensError, match="no saved value"):
        trace.reconstruct_output()


# -- user containers -----------------------------------------------------------------------------------

def test_register_container_with_the_spec_pairbox():
    tl.types.register_container(
        PairBox,
        lambda value: ([value.left, value.right], None),
        lambda aux, children: PairBox(children[0], children[1]),
    )
    x = torch.randn(3)
    trace = tl.trace(Returns(lambda a, b: {"box": PairBox(a, (b,))}), x, capture=STRUCTURE)
    box = output_container(trace)["box"]
    assert (box.kind, box.type_name, box.reconstructable, box.keys()) == ("custom", "PairBox", True, (0, 1))
    assert box[0] is trace["output_1:1"] and box[1][0] is trace["output_2:1"]
    rebuilt = trace.reconstruct_output()["box"]
    assert isinstance(rebuilt, PairBox) and torch.equal(rebuilt.left, torch.tanh(x))
    assert type(rebuilt.right) is tuple and torch.equal(rebuilt.right[0], torch.sigmoid(x))


def test_register_container_rejects_bad_arguments():
    with pytest.raises(TorchLensTypeError, match="type_ must be a class"):
        tl.types.register_container(PairBox(1, 2), lambda v: ([], None), lambda a, c: None)
    with pytest.raises(TorchLensTypeError, match="dict is handled by torchlens itself"):
        tl.types.register_container(dict, lambda v: ([], None), lambda a, c: None)
    with pytest.raises(TorchLensTypeError, match="unflatten must be callable, got int"):
        tl.types.register_container(Unknown, lambda v: ([], None), 3)


def test_a_bad_registered_flatten_raises_a_typed_error():
    class Box:
        def __init__(self, value) -> None:
            self.value = value

    tl.types.register_container(Box, lambda box: (box.value, None), lambda aux, children: Box(*children))
    with pytest.raises(ContainerFlattenError, match="children of type Tensor"):
        tl.trace(Returns(lambda a, b: Box(a)), torch.randn(3))


# -- opaque and unknown objects --------------------------------------------------------------------------

def test_unknown_output_object_degrades_to_opaque():
    x = torch.randn(3)
    trace = tl.trace(Returns(lambda a, b: (a, Unknown(state=[b], name="n"))), x, capture=STRUCTURE)
    container = output_container(trace)
    assert container.reconstructable is False
    unknown = container[1]
    assert (unknown.kind, unknown.type_name, unknown.reconstructable, unknown.keys()) == (
        "opaque", "Unknown", False, (".state[0]",))
    assert unknown[".state[0]"] is trace["output_2:1"] and trace["output_2:1"].parents == ("sigmoid_1:1",)
    with pytest.raises(OpaqueContainerError, match=r"cannot rebuild output\[1\]: it is a models\.containers\.Unknown"):
        trace.reconstruct_output()
    assert torch.equal(container[0].out, torch.tanh(x))


def test_unknown_objects_without_tensors_and_cycles_do_not_crash():
    looped: list = []
    looped.append(looped)
    trace = tl.trace(Returns(lambda a, b: [a, Unknown(), looped]), torch.randn(3))
    container = trace.output_at()
    assert [container[1].kind, container[2].kind, container[2][0].kind] == ["opaque", "list", "opaque"]
    assert container[1].leaves == () and not container.reconstructable
    with pytest.raises(OpaqueContainerError, match=r"output\[1\]"):
        trace.reconstruct_output()


# -- inputs and module boundaries --------------------------------------------------------------------------------

def test_nested_input_containers_with_structure():
    ids, first, second, bias = torch.randn(3), torch.randn(3), torch.randn(3), torch.randn(3)
    batch = {"ids": ids, "pair": (first, second)}
    trace = tl.trace(TakesBatch(), batch, forward_kwargs={"bias": bias}, capture=STRUCTURE)
    assert trace.input_layers == ("input_1", "input_2", "input_3", "input_4")
    assert trace.input_at(0, "ids") is trace["input_1:1"] and trace.input_at(0, "pair", 1) is trace["input_3:1"]
    assert trace.input_at("bias") is trace["input_4:1"]
    view = trace["input_2:1"].container
    assert (view.kind, view.root_kind, view.root_id, view.path) == ("dict", "model_input", "input", (0,))
    rebuilt = view.reconstruct()
    # the trace owns copies of the caller's tensors: same values, never the same objects
    assert torch.equal(rebuilt["ids"], ids) and rebuilt["ids"] is not ids and type(rebuilt["pair"]) is tuple
    assert torch.equal(rebuilt["pair"][1], second)
    assert trace["input_4:1"].container is None  # a bare keyword tensor is in no container
    assert trace["input_4:1"].container_spec.path == ("bias",)
    args, kwargs = trace.input_at().reconstruct()
    assert torch.equal(args[0]["pair"][0], first) and list(kwargs) == ["bias"] and torch.equal(kwargs["bias"], bias)


def test_module_boundary_containers():
    x = torch.randn(3)
    trace = tl.trace(UsesHalves(), x, capture=STRUCTURE)
    view = trace["add_1:1"].container
    assert (view.kind, view.root_kind, view.root_id) == ("tuple", "module_output", "halves:1/output")
    assert view[0] is trace["add_1:1"] and view[1] is trace["mul_1:1"]
    low, high = view.reconstruct()
    assert torch.equal(low, x + 1) and torch.equal(high, x * 2)
    assert [r.id for r in trace.containers.roots] == ["output", "input", "halves:1/output"]
    assert tl.trace(UsesHalves(), x)["add_1:1"].container is None


# -- trace.run ------------------------------------------------------------------------------------------------------

def test_run_returns_the_recorded_structure_live():
    model = CacheLM()
    trace = tl.trace(model, torch.randn(2, 4))
    y = torch.randn(5, 4)
    out = trace.run(y)
    assert list(out) == ["logits", "past_key_values"] and torch.equal(out["logits"], model(y)["logits"])


def test_run_refuses_a_different_structure():
    x = torch.randn(3)
    trace = tl.trace(VariableKeys(), x)
    assert list(trace.run(x)) == ["y"]
    with pytest.raises(ContainerStructureError, match="different structure than when it was traced, at output"):
        trace.run(x, forward_kwargs={"extra": True})
    flagged = tl.trace(VariableKeys(), x, forward_kwargs={"extra": True})
    assert list(flagged.run(torch.randn(3))) == ["y", "z"]


# -- a real Hugging Face model -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32)
    return transformers.GPT2LMHeadModel(config).eval(), torch.randint(0, 100, (1, 5))


def test_gpt2_model_output_rebuilds_without_cache(gpt2):
    model, ids = gpt2
    expected = model(ids, use_cache=False)
    trace = tl.trace(model, ids, forward_kwargs={"use_cache": False}, capture=STRUCTURE)
    container = output_container(trace)
    assert (container.kind, container.type_name, container.keys(), container.reconstructable) == (
        "model_output", type(expected).__name__, ("logits",), True)
    assert container["logits"] is container[0] and container["logits"].shape == (1, 5, 100)
    rebuilt = trace.reconstruct_output()
    assert type(rebuilt) is type(expected) and list(rebuilt.keys()) == ["logits"]
    assert torch.equal(rebuilt.logits, expected.logits) and rebuilt.to_tuple()[0] is rebuilt.logits
    assert trace.input_at(0) is trace["input_1:1"]
    assert type(trace.run(ids)) is type(expected)


def test_gpt2_dynamic_cache_is_opaque(gpt2):
    model, ids = gpt2
    expected = model(ids)
    cache_key = next(k for k, v in expected.items() if type(v).__name__ == "DynamicCache")
    trace = tl.trace(model, ids, capture=STRUCTURE)
    container = output_container(trace)
    cache = container[cache_key]
    assert (cache.kind, cache.type_name, cache.reconstructable, container.reconstructable) == (
        "opaque", "DynamicCache", False, False)
    assert cache.keys() == (".layers[0].keys", ".layers[0].values", ".layers[1].keys", ".layers[1].values")
    assert [op.shape for op in cache.leaves] == [(1, 2, 5, 16)] * 4
    assert torch.equal(cache[".layers[1].values"].out, expected[cache_key].layers[1].values)
    with pytest.raises(OpaqueContainerError, match=rf"output\['{cache_key}'\]: it is a transformers\.cache_utils\.DynamicCache"):
        trace.reconstruct_output()
    assert type(trace.run(ids)[cache_key]).__name__ == "DynamicCache"


# -- options --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("setting", [False, "labels", "collapsed", "nodes"])
def test_show_containers_settings_are_stored(setting):
    options = tl.options.CaptureOptions(show_containers=setting, container_max_inline=2)
    assert (options.show_containers, options.container_max_inline) == (setting, 2)


@pytest.mark.parametrize("bad, error", [
    ({"show_containers": True}, "must be False or one of 'labels', 'collapsed', 'nodes', got True"),
    ({"show_containers": "edges"}, "got 'edges'"),
    ({"container_max_inline": -1}, "whole number >= 0, got -1"),
    ({"container_max_inline": 2.5}, "got 2.5"),
    ({"capture_container_structure": "yes"}, "must be True or False, got 'yes'"),
])
def test_bad_container_options_are_refused(bad, error):
    with pytest.raises((TorchLensTypeError, TorchLensValueError), match=error):
        tl.options.CaptureOptions(**bad)


class ChangesItsResult(torch.nn.Module):
    """A ``__call__`` of its own changes what torch's module call returned before the caller
    sees it: the model output is what the model returned, not what its module call did."""

    def forward(self, x):
        return {"sin": x.sin(), "cos": x.cos()}

    def __call__(self, x):
        out = super().__call__(x)
        del out["cos"]
        return out


def test_the_model_output_is_what_the_model_returned_not_its_module_call():
    trace = tl.trace(ChangesItsResult(), torch.ones(2))
    assert [trace[label].ops[0].parents for label in trace.output_layers] == [("sin_1:1",)]
    assert list(trace.reconstruct_output()) == ["sin"]
