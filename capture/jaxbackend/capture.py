"""One JAX capture: trace the call to a jaxpr, then evaluate it equation by equation.

``jax.make_jaxpr`` traces ``model(*inputs, **kwargs)`` (array leaves of the inputs traced, every
other leaf held fixed) while the model's Flax module classes number their calls
(:mod:`.modules`). The jaxpr is then evaluated eagerly, one ``primitive.bind`` per equation,
and every output of every primitive is recorded as an op named by its primitive (``tanh``,
``dot_general``, ``add``), keyed by its equation's traceback (:mod:`.frames`) and its module
call (the equation's name stack).

The bodies of ``jit``, ``custom_jvp``/``custom_vjp`` and ``checkpoint`` calls are evaluated
equation by equation too, each body equation keyed by the call that ran it and its own place
in the body. Control flow whose body runs a data-dependent number of times (``scan``,
``while``, ``cond``) and every other primitive holding a jaxpr is recorded as one boundary op.
An equation without a usable traceback is keyed by its position (structural grouper); a
capture none of whose ops has a traceback is grouped by the structural grouper alone
(``grouping_policy["detector"] == "grouper_v1"``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import CodeType
from typing import Any, Optional

import jax
from jax.extend.core import ClosedJaxpr, Literal

from ..backends import ContainerCapability, Detector
from ..boundary import claim
from ..containers import Node, NodeKind, RawContainer, Role
from ..record import INPUT, OP, OUTPUT, OpKind, RawCapture, RawOp
from . import frames as frames_module, modules as modules_module, pytrees
from .frames import ChainReader
from .modules import WRAPPER_CODE, CallPatches, call_of, nnx_modules, scopes_of
from .pytrees import is_array, paths_node
from .values import is_nnx_module

#: Primitives whose body is evaluated (and keyed) equation by equation: it runs exactly once
#: per call, as written.
INLINED = frozenset({"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat2",
                     "checkpoint"})
#: Where those primitives keep their body.
_BODY_PARAMS = ("jaxpr", "call_jaxpr")
#: An op's value source: the op index that produced it, a parameter address, or nothing.
Source = Any


@dataclass(frozen=True, slots=True)
class _Context:
    """Where a jaxpr's equations run: the chain frames and module call of the equation whose
    body it is (nothing and the root call at the top)."""

    frames: tuple
    call: int
    body: bool


class JaxCapture:
    """Records one call of a JAX computation; use :func:`capture_jax`."""

    def __init__(self, model: Any, keep: bool, containers: bool) -> None:
        self.model = model
        self.keep = keep
        self.containers = containers
        self.scopes = scopes_of(model)
        self.reader = ChainReader([WRAPPER_CODE, _entry_code()], _own_codes())
        self.raw = RawCapture()
        self.evidence = False

    # -- tracing ---------------------------------------------------------------------------

    def trace(self, args: tuple, kwargs: dict) -> tuple[ClosedJaxpr, Any, list]:
        """The call's jaxpr, its output tree, and the array inputs it takes (in order)."""
        if isinstance(self.model, ClosedJaxpr):
            self.scopes.enter(0)
            arrays = [leaf for leaf in jax.tree_util.tree_leaves((args, kwargs)) if is_array(leaf)]
            return self.model, jax.tree_util.tree_structure(list(self.model.out_avals)), arrays
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        at = [i for i, leaf in enumerate(leaves) if is_array(leaf)]
        session = self

        def torchlens_entry(*values: Any) -> Any:
            filled = list(leaves)
            for i, value in zip(at, values):
                filled[i] = value
            call_args, call_kwargs = jax.tree_util.tree_unflatten(tree, filled)
            return session.call_root(call_args, call_kwargs)

        with CallPatches(self.scopes, nnx_modules(self.model)):
            closed, shapes = jax.make_jaxpr(torchlens_entry, return_shape=True)(*[leaves[i] for i in at])
        return closed, jax.tree_util.tree_structure(shapes), [leaves[i] for i in at]

    def call_root(self, args: tuple, kwargs: dict) -> Any:
        """Call the model (a Flax module opens its own call through its patched ``__call__``)."""
        if is_nnx_module(self.model):
            return self.model(*args, **kwargs)
        return self.scopes.run(0, self.model, args, kwargs)

    # -- evaluation ------------------------------------------------------------------------

    def run(self, args: tuple, kwargs: dict) -> RawCapture:
        closed, out_tree, arrays = self.trace(args, kwargs)
        raw = self.raw
        input_ops = [self.add(_array_op(INPUT, INPUT.value, 0, -1, 0, None, "", jax.numpy.asarray(a), [], ()))
                     for a in arrays]
        if self.containers:
            self._record_inputs(args, kwargs, input_ops)
        env: dict[Any, tuple[Any, Source]] = {}
        for var, value in zip(closed.jaxpr.constvars, closed.consts):
            env[var] = (value, self.scopes.params.get(id(value)))
        for var, index in zip(closed.jaxpr.invars, input_ops):
            env[var] = (raw.ops[index].out, index)
        results = self.evaluate(closed.jaxpr, env, _Context((), 0, False))
        output_ops = []
        for value, source in results:
            params = (source,) if isinstance(source, str) else ()
            output_ops.append(self.add(_array_op(OUTPUT, OUTPUT.value, 0, -1, 0, None, "", value,
                                                 [source] if isinstance(source, int) else [], params)))
        raw.output = jax.tree_util.tree_unflatten(out_tree, [value for value, _ in results])
        leaves: list = []
        spec = paths_node(raw.output, leaves)
        raw.containers.insert(0, RawContainer(Role.MODEL_OUTPUT, "output", spec, output_ops,
                                              capability=ContainerCapability.PATHS_ONLY))
        if self.containers:
            claim(raw)
        if not self.keep:
            for op in raw.ops:
                op.out = None
        raw.modules, raw.calls, raw.call_io = self.scopes.modules, self.scopes.calls, self.scopes.call_io
        _call_edges(raw)
        raw.chains = self.reader.chains
        has_ops = any(op.kind is OP for op in raw.ops)
        raw.detector = Detector.CALLSITE if self.evidence or not has_ops else Detector.GROUPER
        return raw

    def evaluate(self, jaxpr: Any, env: dict, context: _Context) -> list[tuple[Any, Source]]:
        """Evaluate ``jaxpr`` (its inputs bound in ``env``); return its outputs and their sources."""
        for eqn in jaxpr.eqns:
            inputs = [_read(env, var) for var in eqn.invars]
            frames, call = self._place(eqn, context)
            body = _body(eqn)
            if body is not None:
                inner = getattr(body, "jaxpr", body)
                inner_env = {var: (value, self.scopes.params.get(id(value)))
                             for var, value in zip(inner.constvars, getattr(body, "consts", ()))}
                inner_env.update(zip(inner.invars, inputs))
                results = self.evaluate(inner, inner_env, _Context(frames, call, True))
                env.update(zip(eqn.outvars, results))
                continue
            with eqn.ctx.manager:
                out = eqn.primitive.bind(*[value for value, _ in inputs], **eqn.primitive.get_bind_params(eqn.params))
            outs = out if eqn.primitive.multiple_results else [out]
            chain = self.reader.chain(frames)
            self.evidence = self.evidence or chain is not None
            site = None if chain is None else (chain,)
            args_text = "" if site is not None else _args_text(eqn)
            parents = list(dict.fromkeys(s for _, s in inputs if isinstance(s, int)))
            used = tuple(dict.fromkeys(s for _, s in inputs if isinstance(s, str)))
            scope = self.scopes.calls[call][0]
            for slot, (var, value) in enumerate(zip(eqn.outvars, outs)):
                index = self.add(_array_op(OP, eqn.primitive.name, scope, call, slot, site, args_text, value,
                                           parents, used))
                env[var] = (value, index)
        return [_read(env, var) for var in jaxpr.outvars]

    def _place(self, eqn: Any, context: _Context) -> tuple[tuple, int]:
        """The chain frames (outermost first) and module call of one equation."""
        frames, stopped = self.reader.frames(eqn.source_info.traceback, context.body)
        call = call_of(eqn.source_info.name_stack)
        if context.body and not stopped:
            return (*context.frames, *frames), context.call
        return tuple(frames), context.call if call is None else call

    def add(self, op: RawOp) -> int:
        """Append a recorded op (with its metadata: JAX arrays have no strides and no grad flag)."""
        op.meta = (getattr(op.out, "device", None), None, False)
        self.raw.ops.append(op)
        return len(self.raw.ops) - 1

    def _record_inputs(self, args: tuple, kwargs: dict, input_ops: list[int]) -> None:
        leaves: list = []
        children = tuple(paths_node(value, leaves) for value in (*args, *kwargs.values()))
        spec = Node(NodeKind.ARGS, None, (*range(len(args)), *kwargs), children, None, len(leaves), False)
        self.raw.containers.append(RawContainer(Role.MODEL_INPUT, "input", spec, input_ops,
                                                capability=ContainerCapability.PATHS_ONLY))


def capture_jax(model: Any, args: tuple, kwargs: dict, keep: bool = True,
                containers: bool = False) -> tuple[RawCapture, dict[str, tuple[tuple[int, ...], Any]]]:
    """Trace ``model(*args, **kwargs)`` (a Flax NNX module, a function of JAX arrays, or a
    ``ClosedJaxpr`` applied to its inputs) and record every primitive it ran; return the raw
    capture and the model's parameters (address -> shape and dtype).

    ``keep=False`` drops every op output (``CaptureOptions(save="none")``); ``containers``
    records the inputs' key paths and each op's place in the recorded containers.
    """
    capture = JaxCapture(model, keep, containers)
    return capture.run(args, kwargs), capture.scopes.param_meta


def _body(eqn: Any) -> Optional[Any]:
    if eqn.primitive.name not in INLINED:
        return None
    return next((eqn.params[name] for name in _BODY_PARAMS if name in eqn.params), None)


def _read(env: dict, var: Any) -> tuple[Any, Source]:
    if isinstance(var, Literal):
        return var.val, None
    return env[var]


def _array_op(kind: OpKind, name: str, scope: int, call: int, slot: int, site: Optional[tuple[int, ...]],
              args_text: str, value: Any, parents: list[int], params: tuple[str, ...]) -> RawOp:
    """A :class:`RawOp` whose output is the array ``value`` (shape and dtype read from it)."""
    return RawOp(kind, name, scope, call, slot, site, args_text, value, tuple(value.shape), value.dtype, parents, params)


def _args_text(eqn: Any) -> str:
    """The equation's non-array arguments (parameters and literals), for the position key."""
    params = {k: v for k, v in sorted(eqn.params.items()) if not isinstance(v, ClosedJaxpr) and k not in _BODY_PARAMS}
    literals = [var.val for var in eqn.invars if isinstance(var, Literal)]
    return repr((literals, params))


def _call_edges(raw: RawCapture) -> None:
    """Each module call's inputs and outputs: the values that cross its boundary (an op outside
    it read by an op inside, an op inside read outside it or returned)."""
    def enclosing(call: int) -> list[int]:
        out = []
        while call >= 0:
            out.append(call)
            call = raw.call_io[call].parent
        return out

    around = [enclosing(op.call) for op in raw.ops]
    for i, op in enumerate(raw.ops):
        mine = set(around[i])
        for parent in op.parents:
            theirs = set(around[parent])
            for call in around[i]:
                if call not in theirs and parent not in raw.call_io[call].inputs:
                    raw.call_io[call].inputs.append(parent)
            for call in around[parent]:
                if call not in mine and parent not in raw.call_io[call].outputs:
                    raw.call_io[call].outputs.append(parent)


def _entry_code() -> Any:
    """The code of the function ``jax.make_jaxpr`` traces: where every chain ends."""
    return next(c for c in JaxCapture.trace.__code__.co_consts if getattr(c, "co_name", "") == "torchlens_entry")


def _own_codes() -> list:
    """Every code object of this package (left out of call-site chains)."""
    package = os.path.join(os.path.dirname(__file__), "")
    out: list[CodeType] = []
    todo: list[Any] = []
    seen: set[int] = set()
    for module in (frames_module, modules_module, pytrees):
        todo.extend(vars(module).values())
    todo.extend(globals().values())
    while todo:
        item = todo.pop()
        if isinstance(item, type) and item.__module__.startswith(__package__ or ""):
            todo.extend(vars(item).values())
            continue
        code = getattr(item, "__code__", item if isinstance(item, CodeType) else None)
        if not isinstance(code, CodeType) or id(code) in seen or not code.co_filename.startswith(package):
            continue
        seen.add(id(code))
        out.append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    return out
