"""The trace file's codec: a :class:`~torchlens.trace.Trace` to bytes and back, and the
equality both define (:func:`same`).

One file in the ``safetensors`` format: every tensor the trace holds (op outputs, buffer
values, replay arguments, container leaves, the random state) is a named tensor, and the
records (labels, passes, call sites, modules, module calls, parameters, buffers, containers,
options, replay calls) are JSON in the file's metadata, with a format version and a digest
of everything. Decoding parses JSON and tensor bytes and nothing else: no pickle, no import,
no user code. Classes the records name (a namedtuple or dataclass the model returned, a
registered container type) stay names until :meth:`Container.reconstruct` needs them; torch
callables a replay needs are looked up among torch's own, already imported, modules.

Below :mod:`torchlens.trace` (which pickles and compares through it): a decoded trace is built
by the class the caller passes. ``tl.save`` / ``tl.load`` are :mod:`torchlens.persistence`.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import json
import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from torchlens import __version__
from torchlens.analysis.sites import CodeId, HookMark, Place
from torchlens.capture.buffers import WriteKind
from torchlens.capture.containers import ContainerSpec, Node, NodeKind, RawContainer, Role, TypeRef, Unsaved
from torchlens.capture.gradients import Gradients
from torchlens.capture.replay import PRODUCED, Aliased, GlobalState, Modes, RecordedCall, Source

from .buffers import Buffer
from .containers import ContainerRecords
from .errors import TorchLensError, TorchLensValueError, TraceFileError
from .options import CaptureOptions, TraceOptions
from .records import BufferVersion, CallSite, Layer, Module, ModuleCall, Op, OpGraph, Ops, Param
from .validation import comparable

if TYPE_CHECKING:
    from .trace import Trace

#: What the file says it is, and the newest format version this torchlens reads and writes.
FORMAT = "torchlens-trace"
VERSION = 1
#: dtypes safetensors stores natively; any other is stored as its bytes.
_NATIVE = frozenset(vars(torch)[name] for name in (
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
    "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
) if name in vars(torch))
#: Builtin classes the ``builtins`` module does not name.
_UNNAMED_BUILTINS = {"NoneType": type(None), "ellipsis": type(Ellipsis)}


def dumps(trace: "Trace") -> bytes:
    """The file's bytes for ``trace``."""
    _torch_only(trace, "tl.save (and pickling a trace)")
    records, tensors = _Writer().trace(trace)
    holders = {op["out"]: f"the output of {op['label']}" for op in reversed(records["ops"])}
    stored, layout = _storable(tensors, holders)
    text = json.dumps(records, separators=(",", ":"), allow_nan=False)
    meta = {"format": FORMAT, "version": str(VERSION), "records": text, "layout": json.dumps(layout),
            "digest": _digest(text, stored)}
    return save_tensors(stored, metadata=meta)


def decode(data: bytes, name: str, trace_type: "type[Trace]") -> "Trace":
    """The trace in ``data`` (the bytes :func:`dumps` wrote), built as a ``trace_type``;
    ``name`` says where the bytes came from in errors."""
    try:
        meta = _metadata(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise TraceFileError(f"{name} is not a torchlens trace file (or it is truncated): {error}") from None
    if meta.get("format") != FORMAT:
        raise TraceFileError(f"{name} is a safetensors file but not a torchlens trace (no {FORMAT!r} format mark)")
    version = meta.get("version", "")
    if not version.isdigit() or int(version) > VERSION:
        raise TraceFileError(
            f"{name} was written in trace format version {version}, newer than this torchlens "
            f"({__version__}) reads (up to {VERSION}); upgrade torchlens to open it"
        )
    try:
        stored = load_tensors(data)
        text = meta["records"]
        if _digest(text, stored) != meta.get("digest"):
            raise ValueError("its digest does not match its contents")
        tensors = _restored(stored, json.loads(meta["layout"]))
        return _Reader(tensors, trace_type).trace(json.loads(text))
    except TorchLensError:
        raise
    except (SafetensorError, ValueError, KeyError, TypeError, IndexError, AttributeError, RuntimeError) as error:
        raise TraceFileError(f"{name} is corrupted or truncated and was not loaded: {error}") from None


def _torch_only(trace: "Trace", what: str) -> None:
    """The file format (and equality through it) holds torch tensors only."""
    if trace.options.backend != "torch":
        raise TorchLensValueError(
            f"{what} works on torch traces; this trace was captured by the {trace.options.backend} backend "
            "(a JAX trace), whose arrays the file format cannot hold"
        )


def same(a: "Trace", b: "Trace") -> bool:
    """Trace equality: equal records, and tensors of equal dtype, shape and values."""
    _torch_only(a, "comparing traces (==)")
    _torch_only(b, "comparing traces (==)")
    records_a, tensors_a = _Writer().trace(a)
    records_b, tensors_b = _Writer().trace(b)
    return records_a == records_b and tensors_a.keys() == tensors_b.keys() and all(
        _equal(tensors_a[k], tensors_b[k]) for k in tensors_a
    )


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape or a.layout != b.layout:
        return False
    a, b = comparable(a.detach().cpu()), comparable(b.detach().cpu())
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.isnan(a), torch.isnan(b))) and bool(torch.equal(a.nan_to_num(0), b.nan_to_num(0)))
    return bool(torch.equal(a, b))


# -- the file's tensors ---------------------------------------------------------------------------

#: Sparse layouts a file holds: stored as their dense values and made sparse again when read.
_SPARSE = {"sparse_coo": torch.sparse_coo, "sparse_csr": torch.sparse_csr, "sparse_csc": torch.sparse_csc}


def _storable(tensors: dict[str, torch.Tensor], holders: dict[str, str]) -> tuple[dict[str, torch.Tensor],
                                                                                dict[str, list]]:
    """Contiguous CPU tensors safetensors can write, with each one's dtype, shape and layout when
    it is stored as bytes (a dtype safetensors lacks) or as the dense values of a sparse tensor
    (``holders``: what holds a tensor, by its key, for errors)."""
    stored, layout = {}, {}
    for key, tensor in tensors.items():
        kind = "nested" if tensor.is_nested else "quantized" if tensor.is_quantized else \
            str(tensor.layout).removeprefix("torch.")
        if kind != "strided" and kind not in _SPARSE:
            raise TorchLensValueError(
                f"cannot save a {kind} tensor ({holders.get(key, 'a tensor the trace holds')}): a trace file holds "
                f"strided tensors and the sparse layouts {', '.join(_SPARSE)}; trace with CaptureOptions(save=...) "
                "leaving out the ops that give it (save='none' keeps no tensor)")
        value = tensor.detach().to("cpu")
        value = value if value.layout is torch.strided else value.to_dense()
        value = value.clone(memory_format=torch.contiguous_format)
        if value.dtype not in _NATIVE or kind in _SPARSE:
            layout[key] = [str(value.dtype).removeprefix("torch."), list(value.shape), kind]
        if value.dtype not in _NATIVE:
            value = value.reshape(-1).view(torch.uint8)
        stored[key] = value
    return stored, layout


def _restored(stored: dict[str, torch.Tensor], layout: dict[str, list]) -> dict[str, torch.Tensor]:
    out = dict(stored)
    for key, (dtype, shape, *kind) in layout.items():  # files written before sparse layouts: two fields
        out[key] = stored[key].view(_dtype(dtype)).reshape(shape)
        if kind and kind[0] in _SPARSE:
            out[key] = out[key].to_sparse(layout=_SPARSE[kind[0]])
    return out


def _digest(text: str, tensors: dict[str, torch.Tensor]) -> str:
    digest = hashlib.blake2b(text.encode(), digest_size=20)
    for key in sorted(tensors):
        tensor = tensors[key]
        digest.update(f"{key}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        if tensor.numel():
            flat = tensor.reshape(-1)
            flat = flat if flat.stride(0) == 1 else flat.clone()
            digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _metadata(data: bytes) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors header, read without loading any tensor."""
    if len(data) < 8:
        raise ValueError("the file is shorter than a safetensors header")
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8:
        raise ValueError("its header runs past the end of the file")
    header = json.loads(data[8:8 + size].decode("utf-8"))
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict):
        raise ValueError("it has no metadata")
    return meta


def _dtype(name: str) -> torch.dtype:
    value = vars(torch).get(name.removeprefix("torch."))
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value


# -- writing --------------------------------------------------------------------------------------


class _Unencodable(Exception):
    """A value the file cannot hold as plain data."""


class _Writer:
    """Turns a trace into JSON-ready records and named tensors."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.refs: dict[int, str] = {}
        self.calls: list[Any] = []
        self.call_refs: dict[int, Optional[int]] = {}

    def tensor(self, value: Optional[torch.Tensor]) -> Optional[str]:
        if value is None:
            return None
        ref = self.refs.get(id(value))
        if ref is None:
            ref = self.refs[id(value)] = f"t{len(self.tensors)}"
            self.tensors[ref] = value
        return ref

    def trace(self, trace: "Trace") -> tuple[dict, dict[str, torch.Tensor]]:
        roots = list(trace.containers.roots) if trace.containers is not None else []
        root_index = {id(root): n for n, root in enumerate(roots)}
        records = {
            "options": self.options(trace.options, trace.ops),
            "state": self.state(trace._state),
            "input_layers": list(trace.input_layers),
            "output_layers": list(trace.output_layers),
            "layers": [self.layer(layer) for layer in trace.layers],
            "ops": [self.op(op, root_index) for op in trace.ops],
            "calls": self.calls,
            "modules": [self.module(module) for module in trace.modules.values()],
            "params": [[p.address, list(p.shape), _dtype_name(p.dtype), p.module] for p in trace.params.values()],
            "buffers": [
                [b.address, b.module, self.tensor(b.initial_value), self.tensor(b.final_value),
                 [op.label for op in b.versions]]
                for b in trace.buffers.values()
            ],
            "containers": [self.root(root) for root in roots],
        }
        return records, self.tensors

    def options(self, options: TraceOptions, ops: tuple[Op, ...]) -> dict:
        """The capture options; ``save_outputs`` is derived from ``save``, and a ``save``
        predicate is written as the labels of the ops it kept (what a loaded trace selects)."""
        capture = {}
        for f in dataclasses.fields(options.capture):
            value = getattr(options.capture, f.name)
            if f.name == "save_outputs":
                continue
            if f.name == "save" and not isinstance(value, str):
                names = value if isinstance(value, frozenset) else [op.label for op in ops if op.out is not None]
                capture[f.name] = {"names": sorted(names)}
            else:
                capture[f.name] = self.value(value)
        return {"capture": capture, "grouping_policy": self.value(dict(options.grouping_policy))}

    def state(self, state: Optional[GlobalState]) -> Optional[dict]:
        if state is None:
            return None
        return {
            "rng": self.tensor(state.rng),
            "cuda_rng": None if state.cuda_rng is None else [self.tensor(t) for t in state.cuda_rng],
            "modes": [[[[d, e, _dtype_name(t)] for d, e, t in m.autocast], m.grad_enabled, _dtype_name(m.default_dtype)]
                      for m in state.modes],
        }

    def layer(self, layer: Layer) -> dict:
        return {
            "label": layer.layer_label, "func": layer.func_name, "module": layer.module,
            "is_input": layer.is_input, "is_output": layer.is_output, "params": list(layer.params),
            "call_site": [_frame(f) for f in layer.call_site.frames],
        }

    def op(self, op: Op, root_index: dict[int, int]) -> dict:
        spec = op.container_spec
        return {
            "label": op.label, "layer": op.layer_label, "pass": op.pass_num, "func": op.func_name,
            "out": self.tensor(op.out), "shape": list(op.shape), "dtype": _dtype_name(op.dtype),
            "meta": _meta(op._metadata),
            "parents": list(op.parents), "children": list(op.children), "params": list(op.params),
            "module_call": op.module_call, "site_key": list(op.graph.site_key),
            "buffer": None if op.buffer is None else _buffer_version(op.buffer),
            "container": None if spec is None else [root_index[id(spec.root)], self.value(spec.path)],
            "replay": self.call(op._replay),
            "grad": self.tensor(op.grad),
        }

    def call(self, call: Optional[RecordedCall]) -> Optional[int]:
        """Index of the call in the file's call table; ``None`` when it cannot be named (a
        ScriptModule, a ``torch.func`` transform of a Python function): that op then loads
        without a replay record."""
        if call is None:
            return None
        if id(call) not in self.call_refs:
            known = len(self.tensors)
            try:
                encoded = {
                    "func": _func_ref(call.func), "args": self.value(call.args), "kwargs": self.value(call.kwargs),
                    "sources": [_source_code(s) for s in call.sources],
                    "snapshots": [[k, self.tensor(t)] for k, t in call.snapshots.items()],
                    "modes": call.modes,
                }
                self.calls.append(encoded)
                self.call_refs[id(call)] = len(self.calls) - 1
            except _Unencodable:
                self.call_refs[id(call)] = None
                self._forget(list(self.tensors)[known:])
        return self.call_refs[id(call)]

    def _forget(self, refs: list[str]) -> None:
        """Drop the tensors a call that could not be encoded had named."""
        for ref in refs:
            del self.tensors[ref]
        self.refs = {k: ref for k, ref in self.refs.items() if ref in self.tensors}

    def module(self, module: Module) -> dict:
        return {
            "address": module.address, "type_name": module.type_name, "num_calls": module.num_calls,
            "calls": [[c.label, c.module, c.index, c.parent, list(c.inputs), list(c.outputs), list(c.ops)]
                      for c in module.calls],
            "params": list(module.params), "children": list(module.children), "parent": module.parent,
            "buffers": list(module.buffers),
        }

    def root(self, root: RawContainer) -> dict:
        return {
            "role": root.role, "id": root.id, "spec": self.node(root.spec), "leaves": list(root.leaves),
            "values": None if root.values is None else [self.tensor(t) for t in root.values],
        }

    def node(self, node: Node) -> dict:
        data: Any = node.data
        if node.kind == NodeKind.LEAF:
            pass
        elif node.kind in (NodeKind.CONST, NodeKind.CUSTOM, NodeKind.DICT):
            data = self.plain(data)
        else:
            data = None
        return {
            "kind": node.kind, "type": None if node.type is None else _type_ref(node.type),
            "keys": [self.plain(k) for k in node.keys], "children": [self.node(c) for c in node.children],
            "data": data, "num_leaves": node.num_leaves, "reconstructable": node.reconstructable,
        }

    def plain(self, value: Any) -> Any:
        """``value`` encoded, or a marker saying it could not be saved (rebuilding then says so)."""
        try:
            return self.value(value)
        except _Unencodable:
            return {"unsaved": repr(value)[:200]}

    def value(self, value: Any) -> Any:
        """A tagged JSON encoding of plain Python data, torch constants and tensors."""
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) in (int, bool):
            return value
        if isinstance(value, Unsaved):
            return {"unsaved": value.text}
        if value is PRODUCED:
            return {"produced": True}
        if isinstance(value, torch.Tensor):
            return {"tensor": self.tensor(value)}
        if type(value) is float:
            return {"float": value.hex()}
        if type(value) is complex:
            return {"complex": [value.real.hex(), value.imag.hex()]}
        if isinstance(value, torch.dtype):
            return {"dtype": _dtype_name(value)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, torch.Size):
            return {"size": list(value)}
        if isinstance(value, (torch.layout, torch.memory_format)):
            return {type(value).__name__: str(value).removeprefix("torch.")}
        if type(value) is tuple:
            return {"tuple": [self.value(v) for v in value]}
        if type(value) is list:
            return {"list": [self.value(v) for v in value]}
        if type(value) is dict:
            return {"dict": [[self.value(k), self.value(v)] for k, v in value.items()]}
        if type(value) is slice:
            return {"slice": [self.value(value.start), self.value(value.stop), self.value(value.step)]}
        if type(value) is range:
            return {"range": [value.start, value.stop, value.step]}
        if value is Ellipsis:
            return {"ellipsis": True}
        if type(value) is bytes:
            return {"bytes": value.hex()}
        if isinstance(value, type) and _builtin_type(value):
            return {"type": _type_ref(value)}
        raise _Unencodable(type(value).__name__)


def _meta(meta: tuple[Any, Optional[tuple[int, ...]], bool]) -> list:
    device, stride, requires_grad = meta
    return [str(device), None if stride is None else list(stride), bool(requires_grad)]


def _dtype_name(dtype: Any) -> Optional[str]:
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _buffer_version(version: BufferVersion) -> list:
    """The fields a loaded trace needs (the capture's grouping facts stay behind)."""
    return [version.address, version.version, version.write_kind, version.value_changed, version.transition_only]


def _read_buffer_version(fields: list) -> BufferVersion:
    address, version, kind, changed, transition_only = fields
    return BufferVersion(address, version, None if kind is None else WriteKind(kind), changed, transition_only)


def _frame(frame: Union[Place, HookMark]) -> dict:
    if isinstance(frame, HookMark):
        return {"hook": frame.module}
    code = frame.code
    return {"place": [code.filename, code.qualname, code.firstlineno, code.digest, frame.line, frame.end_line,
                      frame.col, frame.end_col, frame.offset]}


def _type_ref(tp: Any) -> list:
    if isinstance(tp, TypeRef):
        return [tp.module, tp.qualname]
    return [tp.__module__, tp.__qualname__]


def _builtin_type(tp: type) -> bool:
    return tp.__module__ == "builtins" and vars(builtins).get(tp.__qualname__) is tp


def _source_code(source: Source) -> int:
    """A call's argument source as the file stores it: the op index, -1 for none, and
    ``-2 - writer`` for a read aliased by op ``writer`` (:class:`Aliased`)."""
    return -2 - source.writer if isinstance(source, Aliased) else source


def _source_of(code: int) -> Source:
    """The inverse of :func:`_source_code`."""
    return Aliased(-2 - code) if code <= -2 else code


def _func_ref(func: Callable) -> list:
    """Where a torch callable lives in torch's namespace, checked to lead back to it."""
    if type(func).__name__ == "method-wrapper" and func.__name__ == "__get__":
        name = getattr(getattr(func, "__self__", None), "__name__", "")
        if _getter(name) == func:
            return ["getter", name]
        raise _Unencodable("property getter")
    owner = getattr(func, "__objclass__", None)
    module, name = getattr(func, "__module__", None), getattr(func, "__name__", None)
    candidates = [f"{module}.{getattr(func, '__qualname__', None)}", f"{module}.{name}"]
    if owner is not None:
        candidates.insert(0, f"{owner.__module__}.{owner.__qualname__}.{name}")
    for path in candidates:
        try:
            found = _torch_object(path)
        except (KeyError, ValueError, TypeError):
            continue
        if found is func or found == func:
            return ["path", path]
    raise _Unencodable(candidates[0])


def _torch_object(path: str) -> Any:
    """The object at a dotted ``path`` inside torch, found through ``vars`` only (no import,
    no attribute hooks); only torch's own namespace is searched."""
    parts = path.split(".")
    if parts[0] != "torch" or "torch" not in sys.modules:
        raise ValueError(f"{path} is not inside torch")
    value: Any = sys.modules["torch"]
    for part in parts[1:]:
        value = vars(value)[part]
    return value


def _getter(name: str) -> Any:
    return vars(torch._C.TensorBase)[name].__get__


# -- reading --------------------------------------------------------------------------------------


class _Reader:
    """Builds a trace's records from the file's JSON and tensors."""

    def __init__(self, tensors: dict[str, torch.Tensor], trace_type: "type[Trace]") -> None:
        self.tensors = tensors
        self.trace_type = trace_type

    def tensor(self, ref: Optional[str]) -> Optional[torch.Tensor]:
        return None if ref is None else self.tensors[ref]

    def trace(self, records: dict) -> "Trace":
        index: dict[str, Any] = {}
        calls = [self.call(c) for c in records["calls"]]
        roots = [self.root(r) for r in records["containers"]]
        grads = {i: self.tensors[o["grad"]] for i, o in enumerate(records["ops"]) if o["grad"] is not None}
        store = Gradients(grads) if grads else None
        ops = [self.op(o, index, calls, roots, None if store is None else (store, i))
               for i, o in enumerate(records["ops"])]
        by_label = {op.label: op for op in ops}
        per_layer: dict[str, list[Op]] = {}
        for op in ops:
            per_layer.setdefault(op.layer_label, []).append(op)
        layers = tuple(self.layer(r, tuple(per_layer.get(r["label"], ()))) for r in records["layers"])
        index.update((layer.layer_label, layer) for layer in layers)
        modules = {m["address"]: self.module(m) for m in records["modules"]}
        params = {a: Param(a, tuple(shape), _dtype(dtype), module) for a, shape, dtype, module in records["params"]}
        buffers = {
            address: Buffer(address, module, self.tensor(first), self.tensor(last),
                            tuple(by_label[label] for label in versions))
            for address, module, first, last, versions in records["buffers"]
        }
        containers = ContainerRecords.bind(roots, ops, None, {}) if roots else None
        return self.trace_type(
            layers, Ops(ops), modules, params, tuple(records["input_layers"]), tuple(records["output_layers"]),
            self.options(records["options"]), buffers=buffers, _state=self.state(records["state"]),
            containers=containers,
        )

    def options(self, record: dict) -> TraceOptions:
        names = {f.name for f in dataclasses.fields(CaptureOptions)}
        unknown = set(record["capture"]) - names
        if unknown:
            raise ValueError(f"unknown capture options {sorted(unknown)}")
        fields = {k: self.value(v) for k, v in record["capture"].items() if k != "save"}
        save = record["capture"].get("save", "all")
        fields["save"] = frozenset(save["names"]) if isinstance(save, dict) and "names" in save else self.value(save)
        capture = CaptureOptions(**fields)
        return TraceOptions(capture, self.value(record["grouping_policy"]))

    def state(self, record: Optional[dict]) -> Optional[GlobalState]:
        if record is None:
            return None
        cuda = record["cuda_rng"]
        modes = tuple(
            Modes(tuple((d, bool(e), _dtype(t)) for d, e, t in autocast), bool(grad), _dtype(dtype))
            for autocast, grad, dtype in record["modes"]
        )
        if not modes:
            raise ValueError("the global state names no modes")
        return GlobalState(
            self.tensors[record["rng"]], None if cuda is None else tuple(self.tensors[r] for r in cuda), modes,
        )

    def layer(self, record: dict, ops: tuple[Op, ...]) -> Layer:
        frames = tuple(_place(f) for f in record["call_site"])
        return Layer(record["label"], record["func"], record["module"], bool(record["is_input"]),
                     bool(record["is_output"]), ops, tuple(record["params"]), CallSite(frames))

    def op(self, record: dict, index: dict, calls: list, roots: list[RawContainer], grad: Any) -> Op:
        buffer = record["buffer"]
        container = record["container"]
        replay = record["replay"]
        return Op(
            record["label"], record["layer"], int(record["pass"]), record["func"], self.tensor(record["out"]),
            tuple(record["shape"]), None if record["dtype"] is None else _dtype(record["dtype"]),
            tuple(record["parents"]), tuple(record["children"]), tuple(record["params"]), record["module_call"],
            OpGraph(tuple(record["site_key"])), index, None if buffer is None else _read_buffer_version(buffer),
            None if replay is None else calls[replay],
            container_spec=None if container is None else ContainerSpec(roots[container[0]], self.value(container[1])),
            _meta=_read_meta(record["meta"]), _grad=grad,
        )

    def call(self, record: dict) -> RecordedCall:
        kind, name = record["func"]
        func = _getter(name) if kind == "getter" else _torch_object(name)
        return RecordedCall(func, self.value(record["args"]), self.value(record["kwargs"]),
                            [_source_of(code) for code in record["sources"]],
                            {k: self.tensors[ref] for k, ref in record["snapshots"]}, int(record["modes"]))

    def module(self, record: dict) -> Module:
        calls = tuple(ModuleCall(label, module, index, parent, tuple(inputs), tuple(outputs), tuple(ops))
                      for label, module, index, parent, inputs, outputs, ops in record["calls"])
        return Module(record["address"], record["type_name"], int(record["num_calls"]), calls,
                      tuple(record["params"]), tuple(record["children"]), record["parent"], tuple(record["buffers"]))

    def root(self, record: dict) -> RawContainer:
        values = record["values"]
        return RawContainer(Role(record["role"]), record["id"], self.node(record["spec"]), list(record["leaves"]),
                            None if values is None else tuple(self.tensor(v) for v in values))

    def node(self, record: dict) -> Node:
        kind = NodeKind(record["kind"])
        data = record["data"] if kind == NodeKind.LEAF else self.value(record["data"])
        tp = record["type"]
        return Node(kind, None if tp is None else _known_type(*tp), tuple(self.value(k) for k in record["keys"]),
                    tuple(self.node(c) for c in record["children"]), data, int(record["num_leaves"]),
                    bool(record["reconstructable"]))

    def value(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, list):  # the records' own lists (never produced by ``_Writer.value``)
            return [self.value(v) for v in value]
        (tag, body), = value.items()
        if tag == "tensor":
            return self.tensors[body]
        if tag == "produced":
            return PRODUCED
        if tag == "unsaved":
            return Unsaved(body)
        if tag == "float":
            return float.fromhex(body)
        if tag == "complex":
            return complex(float.fromhex(body[0]), float.fromhex(body[1]))
        if tag == "dtype":
            return _dtype(body)
        if tag == "device":
            return torch.device(body)
        if tag == "size":
            return torch.Size(body)
        if tag in ("layout", "memory_format"):
            found = vars(torch).get(body)
            if type(found).__name__ != tag:
                raise ValueError(f"unknown {tag} {body!r}")
            return found
        if tag == "tuple":
            return tuple(self.value(v) for v in body)
        if tag == "list":
            return [self.value(v) for v in body]
        if tag == "dict":
            return {self.value(k): self.value(v) for k, v in body}
        if tag == "slice":
            return slice(*(self.value(v) for v in body))
        if tag == "range":
            return range(*body)
        if tag == "ellipsis":
            return Ellipsis
        if tag == "bytes":
            return bytes.fromhex(body)
        if tag == "type":
            return _known_type(*body)
        raise ValueError(f"unknown value tag {tag!r}")


def _read_meta(record: list) -> tuple[torch.device, Optional[tuple[int, ...]], bool]:
    device, stride, requires_grad = record
    return torch.device(device), None if stride is None else tuple(stride), bool(requires_grad)


def _place(record: dict) -> Union[Place, HookMark]:
    if "hook" in record:
        return HookMark(record["hook"])
    filename, qualname, firstlineno, digest, line, end_line, col, end_col, offset = record["place"]
    return Place(CodeId(filename, qualname, firstlineno, digest), line, end_line, col, end_col, offset)


def _known_type(module: str, qualname: str) -> Any:
    """A builtin or torch class by name; any other class stays a :class:`TypeRef` (its module
    is never imported; :mod:`torchlens.rebuild` resolves it when a container is rebuilt)."""
    if module == "builtins":
        found = _UNNAMED_BUILTINS.get(qualname, vars(builtins).get(qualname))
        if isinstance(found, type):
            return found
    if module.split(".")[0] == "torch":
        try:
            found = _torch_object(f"{module}.{qualname}")
        except (KeyError, ValueError, TypeError):
            found = None
        if isinstance(found, type):
            return found
    return TypeRef(module, qualname)


__all__ = ["save", "load", "dumps", "loads", "same", "FORMAT", "VERSION"]
