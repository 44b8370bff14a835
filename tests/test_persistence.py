"""Issue 14 point 2: ``tl.save`` / ``tl.load`` and pickling, through one plain versioned format."""

from __future__ import annotations

import json
import pickle
import sys

import pytest
import torch
from torch import nn

import torchlens as tl
from models.containers import PACKS, PairBox, Returns
from models.table import ALL_PARAMS, build
from torchlens.capture.containers import REGISTRY, registered
from torchlens.capture.replay import Aliased
from torchlens.errors import ContainerTypeMissingError, TraceFileError
from torchlens.persistence import dumps, loads

STRUCTURE = tl.options.CaptureOptions(capture_container_structure=True)


def roundtrip(trace, tmp_path):
    path = tmp_path / "trace.tltrace"
    tl.save(trace, path)
    return tl.load(path)


def assert_same_records(loaded, trace) -> None:
    """What ``==`` covers, spelled out on the public records."""
    assert [(l.layer_label, l.num_passes, str(l.call_site)) for l in loaded.layers] == [
        (l.layer_label, l.num_passes, str(l.call_site)) for l in trace.layers]
    assert [(o.label, o.parents, o.children, o.module_call, o.buffer) for o in loaded.ops] == [
        (o.label, o.parents, o.children, o.module_call, o.buffer) for o in trace.ops]
    assert loaded.modules == trace.modules and loaded.params == trace.params
    assert loaded.options == trace.options
    assert list(loaded.buffers) == list(trace.buffers)


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_every_case_round_trips(case, tmp_path):
    model, inputs = build(case)
    trace = tl.trace(model, *inputs)
    loaded = roundtrip(trace, tmp_path)
    assert loaded == trace
    assert_same_records(loaded, trace)
    loaded.check()
    for ours, theirs in zip(loaded.ops, trace.ops):
        assert torch.equal(ours.out, theirs.out) or torch.allclose(ours.out, theirs.out, equal_nan=True)
    if all(op._replay is not None for op in loaded.ops if not (op.layer.is_input or op.layer.is_output or op.is_buffer)):
        assert loaded.validate_forward_pass(strict=True).ok


def test_tiny_gpt2_round_trips_and_rebuilds_its_model_output(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32)
    model, ids = transformers.GPT2LMHeadModel(config).eval(), torch.randint(0, 100, (1, 5))
    trace = tl.trace(model, ids, forward_kwargs={"use_cache": False}, capture=STRUCTURE)
    loaded = roundtrip(trace, tmp_path)
    assert loaded == trace
    assert_same_records(loaded, trace)
    rebuilt = loaded.reconstruct_output()
    assert type(rebuilt) is type(trace.reconstruct_output()) and torch.equal(rebuilt.logits, trace.reconstruct_output().logits)
    assert loaded.validate_forward_pass(strict=True).ok


class Sparse(nn.Module):
    """A graph-network step: a sparse adjacency (COO and CSR) times features."""

    def forward(self, x):
        adjacency = (x @ x.T > 1).float().to_sparse()
        out = torch.sparse.mm(adjacency, x) + adjacency.to_sparse_csr() @ x
        return out + adjacency.to_dense().sum()


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_outputs_validate_and_round_trip(tmp_path):
    torch.manual_seed(0)
    trace = tl.trace(Sparse(), torch.rand(5, 4))
    assert {op.out.layout for op in trace.ops} >= {torch.sparse_coo, torch.sparse_csr}
    assert trace.validate_forward_pass(strict=True).ok
    loaded = roundtrip(trace, tmp_path)
    assert loaded == trace
    assert [op.out.layout for op in loaded.ops] == [op.out.layout for op in trace.ops]
    assert loaded.validate_forward_pass(strict=True).ok


def test_float8_outputs_validate_and_round_trip(tmp_path):
    class Float8(nn.Module):
        def forward(self, x):
            return x.to(torch.float8_e4m3fn).float() * 2

    trace = tl.trace(Float8(), torch.rand(3, 4))
    assert trace.validate_forward_pass(strict=True).ok
    assert roundtrip(trace, tmp_path) == trace


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["quantized", "nested"])
def test_tensors_a_file_cannot_hold_are_refused_naming_what_holds_them(kind, tmp_path):
    class Odd(nn.Module):
        def forward(self, x):
            if kind == "quantized":
                return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8).dequantize()
            return torch.nested.nested_tensor([x[0], x[1, :2]]).to_padded_tensor(0.0)

    trace = tl.trace(Odd(), torch.rand(3, 4))
    with pytest.raises(tl.errors.TorchLensValueError, match=f"cannot save a {kind} tensor .*save='none' keeps no"):
        tl.save(trace, tmp_path / "odd.tltrace")
    if kind == "quantized":
        with pytest.raises(tl.errors.TorchLensValueError, match="the output of quantize_per_tensor_1:1"):
            tl.save(trace, tmp_path / "odd.tltrace")
    tl.save(tl.trace(Odd(), torch.rand(3, 4), capture=tl.options.CaptureOptions(save="none")), tmp_path / "none.tltrace")


def test_equality_sees_a_changed_value():
    torch.manual_seed(0)
    trace = tl.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.randn(2, 3))
    assert trace == loads(dumps(trace))
    assert trace != trace.do({"linear_1": lambda out: out + 1})
    assert trace != tl.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.randn(2, 3))


def test_pickle_goes_through_the_same_representation():
    torch.manual_seed(0)
    trace = tl.trace(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), torch.randn(2, 3))
    again = pickle.loads(pickle.dumps(trace))
    assert again == trace and again.validate_forward_pass(strict=True).ok
    assert again.do({"linear_1": torch.zeros(2, 3)}) == trace.do({"linear_1": torch.zeros(2, 3)})


def test_metadata_only_when_outputs_were_not_saved(tmp_path):
    torch.manual_seed(0)
    bare = tl.options.CaptureOptions(save_outputs=False)
    trace = tl.trace(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), torch.randn(2, 3), capture=bare)
    loaded = roundtrip(trace, tmp_path)
    assert loaded == trace and all(op.out is None for op in loaded.ops)
    assert not loaded.options.capture.save_outputs
    size = (tmp_path / "trace.tltrace").stat().st_size
    full = tl.trace(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), torch.randn(2, 3))
    tl.save(full, tmp_path / "full.tltrace")
    assert size < (tmp_path / "full.tltrace").stat().st_size


def test_containers_round_trip(tmp_path):
    for name, pack in PACKS.items():
        torch.manual_seed(0)
        x = torch.randn(3)
        trace = tl.trace(Returns(pack), x, capture=STRUCTURE)
        loaded = roundtrip(trace, tmp_path)
        assert loaded == trace, name
        rebuilt, expected = loaded.reconstruct_output(), trace.reconstruct_output()
        assert type(rebuilt) is type(expected), name
        assert repr(rebuilt) == repr(expected), name


def test_registered_container_types_are_named_when_missing(tmp_path):
    tl.types.register_container(PairBox, lambda v: ([v.left, v.right], {"side": "left"}),
                                lambda aux, children: PairBox(*children))
    trace = tl.trace(Returns(lambda a, b: {"box": PairBox(a, b)}), torch.randn(3), capture=STRUCTURE)
    data = dumps(trace)
    saved = REGISTRY.pop(PairBox)
    registered.clear()
    try:
        loaded = loads(data)
        assert loaded == trace
        with pytest.raises(ContainerTypeMissingError, match=r"register_container\(PairBox"):
            loaded.reconstruct_output()
    finally:
        REGISTRY[PairBox] = saved
        registered.clear()
    rebuilt = loads(data).reconstruct_output()["box"]
    assert isinstance(rebuilt, PairBox) and torch.equal(rebuilt.right, trace.reconstruct_output()["box"].right)


# -- a file from a stranger ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_bytes() -> bytes:
    torch.manual_seed(0)
    return dumps(tl.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.randn(2, 3)))


def rewritten(data: bytes, change) -> bytes:
    """The same file with its metadata changed by ``change(meta)``."""
    from safetensors.torch import load, save

    size = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8:8 + size])["__metadata__"]
    change(meta)
    return save(load(data), metadata=meta)


@pytest.mark.parametrize("damage", ["truncated", "flipped-data", "flipped-header", "empty", "not-safetensors"])
def test_a_damaged_file_is_refused_whole(saved_bytes, damage, tmp_path):
    data = bytearray(saved_bytes)
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped-data":
        data[-3] ^= 0xFF
    elif damage == "flipped-header":
        data[40] ^= 0x5A
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"PK\x03\x04 this is a zip file, not a trace" * 4)
    path = tmp_path / "bad.tltrace"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceFileError, match="bad.tltrace"):
        tl.load(path)


def test_a_newer_format_version_is_refused(saved_bytes):
    newer = rewritten(saved_bytes, lambda meta: meta.update(version="2"))
    with pytest.raises(TraceFileError, match="newer than this torchlens"):
        loads(newer)


def test_edited_records_fail_the_digest(saved_bytes):
    tampered = rewritten(saved_bytes, lambda meta: meta.update(records=meta["records"].replace("relu_1", "relu_9")))
    with pytest.raises(TraceFileError, match="digest"):
        loads(tampered)


def test_loading_runs_no_code_and_imports_nothing(saved_bytes, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("loading must not unpickle")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    before = set(sys.modules)
    loads(saved_bytes)
    assert set(sys.modules) == before


def test_a_file_naming_code_outside_torch_is_refused(saved_bytes):
    from torchlens.codec import _digest

    def hostile(meta):
        records = json.loads(meta["records"])
        records["calls"][0]["func"] = ["path", "os.system"]
        meta["records"] = json.dumps(records)

    data = rewritten(saved_bytes, hostile)
    from safetensors.torch import load, save

    size = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8:8 + size])["__metadata__"]
    tensors = load(data)
    meta["digest"] = _digest(meta["records"], tensors)  # a careful attacker fixes the digest too
    with pytest.raises(TraceFileError, match="not inside torch"):
        loads(save(tensors, metadata=meta))


@pytest.mark.parametrize("save", ["none", ("relu_1",), "predicate"])
def test_selected_outputs_round_trip_with_every_ops_metadata(save):
    torch.manual_seed(0)
    selection = (lambda info: info.func_name == "relu") if save == "predicate" else save
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    trace = tl.trace(model, torch.randn(2, 3, requires_grad=True), capture=tl.options.CaptureOptions(save=selection))
    loaded = loads(dumps(trace))
    assert loaded == trace
    for ours, theirs in zip(loaded.ops, trace.ops):
        assert (ours.out is None) == (theirs.out is None), ours.label
        assert (ours.device, ours.stride, ours.requires_grad) == (theirs.device, theirs.stride, theirs.requires_grad)
    kept = {op.label for op in loaded.ops if op.out is not None}
    assert kept == (set() if save == "none" else {"relu_1:1"})
    if save == "predicate":  # a predicate cannot be saved: the loaded trace names what it kept
        assert loaded.options.capture.save == frozenset({"relu_1:1"})


class AliasedRead(nn.Module):
    def forward(self, x):
        y = x * 2
        y.view(-1).add_(1)  # writes y's storage through a view
        return torch.tanh(y)  # reads y after that write: no op's output is exactly its value


def test_aliased_read_keeps_its_writer_as_source_and_round_trips(tmp_path):
    trace = tl.trace(AliasedRead(), torch.randn(2, 3))
    tanh = trace.ops["tanh_1:1"]
    assert tanh.parents == ("add__1:1",)
    assert tanh._replay.sources == [Aliased(3)]  # ops: input, mul, view, add_
    loaded = roundtrip(trace, tmp_path)
    assert loaded.ops["tanh_1:1"]._replay.sources == tanh._replay.sources
    assert loaded.validate_forward_pass().ok and trace.validate_forward_pass().ok
