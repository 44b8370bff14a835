"""The oracle: a model's expected layers, computed from its spec alone (torch-free).

It runs the spec abstractly, in Python's evaluation order, and gives every op it meets the
key the grouping rule (``spec/grouping.txt``) defines:

* **scope**: the innermost module instance running (hook ops: the caller's scope);
* **call site**: the chain of places from that module's ``forward`` to the op, one place per
  spec node (a node is written once, so it is one place), with recursion collapsed by
  chronological loop erasure (every depth maps to the chain of its first entry; a decorator
  wrapper's code counts as distinct per function it wraps); a hook's ops add the place of
  the hooked module's call and the hooked module to their chain;
* **operation** and **output slot**.

Equal keys are passes of one layer; labels are ``{func}_{n}`` in order of first execution.
Nothing here imports ``capture/`` or ``analysis/``: the oracle is the rule written again,
from the spec, so the capture has something independent to be compared with.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterator, Optional

from . import spec as S
from .render import STANDIN, TORCH
from .walk import Path, sub, walk

#: The ops each dialect's ``while`` writes: counter init, condition, counter step.
_WHILE_OPS = {TORCH: (("zeros",), ("sum", "lt"), ("add",)), STANDIN: ((), ("check",), ())}
#: What one call of a library module records: (op name, place inside the module).
_LIBRARY_OPS = {S.LINEAR: ("linear", "nn.Linear.forward"), S.RELU: ("relu", "nn.ReLU.forward")}


class SpecError(ValueError):
    """The spec refers to something it does not define (a shrinker candidate may)."""


class TooLarge(SpecError):
    """The model would run more ops than a fuzz example should (:data:`MAX_OPS`)."""


#: Most ops one generated model may run; larger draws are rejected, not checked.
MAX_OPS = 5000


@dataclass(frozen=True)
class ExpectedLayer:
    """One expected compute layer."""

    #: ``{func}_{n}``.
    label: str
    func: str
    passes: int
    #: Scope address (``self`` for the root model).
    module: str
    #: Parameters any pass read, in order of first use.
    params: tuple[str, ...]
    #: Whether a static analysis can know the pass count *and* the label: no while, break,
    #: branch, recursion, hook or lazy list around it, and no op of its name in such a place
    #: or in code that did not run (which would shift the ``_n`` numbering statically).
    static: bool


@dataclass(frozen=True)
class Expected:
    """Everything the oracle expects of one model's trace."""

    #: Compute layers (not inputs, outputs or buffer versions), in order of first execution.
    layers: tuple[ExpectedLayer, ...]
    #: Every compute op as ``{label}:{pass}``, in execution order.
    ops: tuple[str, ...]
    #: Module address -> number of calls, for every module of the model (``self`` included).
    calls: dict[str, int]
    #: Buffer version layers (issue 5) as ``(buffer address, passes)``, for written buffers.
    buffer_layers: tuple[tuple[str, int], ...]
    #: Whether every buffer the forward reads is also written (read-only buffers' versions
    #: are issue 5's choice, so they are not predicted).
    buffers_predicted: bool
    #: How many times each spec node ran (statements, expressions, ops), by path.
    runs: dict[Path, int] = field(repr=False)
    #: Whether a static analysis can see all the source (no ``exec``-built function).
    predictable: bool = True

    def summary(self) -> list[tuple[str, int]]:
        """``(label, passes)`` per layer, the shape tests and reports print."""
        return [(layer.label, layer.passes) for layer in self.layers]


def expect(model: S.ModelSpec, dialect: str = TORCH) -> Expected:
    """Run ``model`` abstractly and return what its trace must show.

    Raises :class:`SpecError` for a spec that names something it does not define, or that
    would recurse without end (a shrunk spec may do both).
    """
    try:
        return _Oracle(model, dialect).run()
    except RecursionError:
        raise SpecError("the spec's functions or classes call each other without end") from None


# --- module instances ------------------------------------------------------------------------


class _Instance:
    """A module instance of the model: what it is and, once numbered, its address."""

    def __init__(self, kind: str, cls: Optional[int] = None) -> None:
        self.kind = kind
        self.cls = cls
        #: attribute -> instance, in registration order (``inner`` first).
        self.children: dict[str, _Instance] = {}
        #: Raw weights and ParameterList lengths of a class instance.
        self.params: dict[str, int] = {}
        self.buffers: tuple[str, ...] = ()
        self.hooks: list[int] = []
        self.address = ""
        self.calls = 0

    def param_address(self, name: str) -> str:
        return name if self.address == "self" else f"{self.address}.{name}"


@dataclass(frozen=True)
class _Frame:
    """One activation on the way from a module's ``forward`` to an op."""

    #: Code identity: ``(kind, index, closure)``; a wrapper's closure is the wrapped function.
    code: tuple
    #: The node (path) running in this frame: a call, or the op itself.
    node: Hashable


@dataclass
class _Ctx:
    """Where the abstract interpreter stands: scope, frames, variables in reach."""

    scope: _Instance
    #: ``self`` of the running method (``None`` in functions and hooks).
    owner: Optional[_Instance]
    code: tuple
    stack: tuple[_Frame, ...] = ()
    #: Key prefix of hook ops: the hooked call's place and the hooked module.
    prefix: tuple = ()
    indices: tuple[int, ...] = ()
    module_vars: tuple[_Instance, ...] = ()
    param_vars: tuple[str, ...] = ()
    dynamic: bool = False
    #: Whether ``break`` and index branches are in reach (directly in a ``for`` body).
    in_for: bool = False
    #: Whether a ``raise Stop()`` is in reach (in a ``with`` or ``try`` body of this function).
    in_with: bool = False

    def enter(self, **changes: Any) -> "_Ctx":
        values = {**self.__dict__, **changes}
        return _Ctx(**values)


def collapse(frames: tuple[_Frame, ...]) -> tuple[_Frame, ...]:
    """Chronological loop erasure: a code seen again erases everything from its first visit."""
    kept: list[_Frame] = []
    for frame in frames:
        for j, earlier in enumerate(kept):
            if earlier.code == frame.code:
                del kept[j:]
                break
        kept.append(frame)
    return tuple(kept)


class _Break(Exception):
    """``break`` out of the innermost ``for``."""


class _Continue(Exception):
    """``continue`` with the innermost ``for``'s next item."""


class _Raise(Exception):
    """``raise Stop()``: up to the innermost ``with`` (whose ``__exit__`` suppresses it) or
    ``try`` (whose handler takes it)."""


_LEAVE = {"break": _Break, "continue": _Continue, "raise": _Raise}
#: The input's shape (every generated model keeps ``x`` 2x4).
SHAPE = (2, 4)


def _exits(body: tuple[S.Stmt, ...]) -> bool:
    """Whether a ``break``/``continue``/``raise`` is written anywhere in ``body``."""
    return any(isinstance(stmt, S.BreakIf) or any(_exits(inner) for inner in S.stmt_bodies(stmt))
               for stmt in body)


def pieces(expr: S.MultiOut) -> int:
    """How many outputs ``split``/``chunk``/``unbind`` give on the 2x4 input, by the docs'
    arithmetic: ``split(n)`` pieces of ``n``, ``chunk(n)`` pieces of ``ceil(size / n)``."""
    if expr.dim not in (0, 1) or (expr.op != "unbind" and expr.n < 1):
        raise SpecError(f"{expr.op} of a 2x4 tensor along {expr.dim} in pieces of {expr.n}")
    size = SHAPE[expr.dim]
    if expr.op == "unbind":
        return size
    each = expr.n if expr.op == "split" else -(-size // expr.n)
    return -(-size // each)


class _Oracle:
    def __init__(self, model: S.ModelSpec, dialect: str) -> None:
        self.model = model
        self.dialect = dialect
        self.events: list[tuple[Hashable, str, str, tuple[str, ...], bool]] = []
        self.runs: Counter = Counter()
        self.buffer_writes: dict[str, list[Hashable]] = {}
        self.buffers_read: set[str] = set()
        self.instances: list[_Instance] = []
        self.root = self._instantiate_class(None, model.root)
        self._number()

    # -- building the instance tree, as the rendered __init__ does ----------------------------

    def _instantiate_class(self, index: Optional[int], cls: S.ClassDef, inner: Optional[_Instance] = None) -> _Instance:
        inst = self._new("root" if index is None else S.BLOCK, index)
        if cls.takes_inner:
            if inner is None:
                raise SpecError(f"Block{index} takes an injected module but was built without one")
            inst.children["inner"] = inner
        for child in cls.children:
            if child.kind == S.SHARED:
                shared = self._instantiate(child.items[0]) if child.items else None
                if shared is None:
                    raise SpecError(f"shared child {child.name} has nothing to share")
                shared.hooks.extend(child.hooks)
                for attr in S.child_attrs(child):
                    inst.children[attr] = self._instantiate_class(child.cls, self._class(child.cls), shared)
            else:
                inst.children[child.name] = made = self._instantiate(child)
                targets = made.children.values() if child.kind == S.MODULELIST else (made,)
                for target in targets:
                    target.hooks.extend(child.hooks)
        for param in cls.params:
            inst.params[param.name] = param.n
            if param.n:
                inst.children[param.name] = self._new("paramlist")
        inst.buffers = cls.buffers
        return inst

    def _instantiate(self, child: S.Child) -> _Instance:
        if child.kind in _LIBRARY_OPS:
            return self._new(child.kind)
        if child.kind == S.BLOCK:
            return self._instantiate_class(child.cls, self._class(child.cls))
        if child.kind == S.MODULELIST:
            made = self._new(S.MODULELIST)
            for k, item in enumerate(child.items):
                made.children[str(k)] = self._instantiate(item)
            return made
        raise SpecError(f"a {child.kind} child cannot be an item")

    def _class(self, index: Optional[int]) -> S.ClassDef:
        if index is None or not 0 <= index < len(self.model.classes):
            raise SpecError(f"no class Block{index}")
        return self.model.classes[index]

    def _new(self, kind: str, cls: Optional[int] = None) -> _Instance:
        inst = _Instance(kind, cls)
        self.instances.append(inst)
        if len(self.instances) > 500:
            raise TooLarge("the module tree has more than 500 modules")
        return inst

    def _number(self) -> None:
        """Addresses as ``named_modules()`` gives them: depth first, first path wins."""
        seen: set[int] = set()

        def visit(inst: _Instance, address: str) -> None:
            if id(inst) in seen:
                return
            seen.add(id(inst))
            inst.address = address
            for attr, child in inst.children.items():
                visit(child, attr if address == "self" else f"{address}.{attr}")

        visit(self.root, "self")

    # -- running ------------------------------------------------------------------------------

    def run(self) -> Expected:
        if self.model.inputs not in (1, 2):
            raise SpecError(f"a model takes 1 or 2 inputs, not {self.model.inputs}")
        for path, node, ancestors in walk(self.model):  # also where it never runs (a shrunk spec)
            if isinstance(node, S.BreakIf) and node.how == "raise" and not any(
                    isinstance(a, (S.With, S.Try)) for a in ancestors):
                raise SpecError(f"raise Stop() outside a with or try body at {path}")
        self.root.calls = 1
        ctx = _Ctx(self.root, self.root, ("forward", "root", None))
        self._body(self.model.root.body, ctx, ("root", "body"))
        return self._result()

    def _result(self) -> Expected:
        layer_of: dict[Hashable, int] = {}
        firsts: list[tuple[str, str]] = []
        passes: list[int] = []
        params: list[dict[str, None]] = []
        static: list[bool] = []
        op_layers: list[tuple[int, int]] = []
        for key, name, scope, used, dynamic in self.events:
            n = layer_of.get(key)
            if n is None:
                n = layer_of[key] = len(firsts)
                firsts.append((name, scope))
                passes.append(0)
                params.append({})
                static.append(True)
            passes[n] += 1
            params[n].update(dict.fromkeys(used))
            static[n] = static[n] and not dynamic
            op_layers.append((n, passes[n]))
        uncertain = {name for _, name, _, _, dynamic in self.events if dynamic} | self._unrun_names()
        static = [flag and name not in uncertain for flag, (name, _) in zip(static, firsts)]
        per_name: Counter = Counter()
        labels = []
        for name, _ in firsts:
            per_name[name] += 1
            labels.append(f"{name}_{per_name[name]}")
        layers = tuple(
            ExpectedLayer(labels[n], name, passes[n], scope, tuple(params[n]), static[n])
            for n, (name, scope) in enumerate(firsts)
        )
        written = set(self.buffer_writes)
        return Expected(
            layers,
            tuple(f"{labels[n]}:{k}" for n, k in op_layers),
            {inst.address: inst.calls for inst in self._unique_instances()},
            self._buffer_layers(),
            self.buffers_read <= written,
            dict(self.runs),
            not any(f.kind == S.EXEC for f in self.model.functions),
        )

    def _unrun_names(self) -> set[str]:
        """Op names written in code that never ran (followed into the functions it calls)."""
        names: set[str] = set()
        for path, node, _ in walk(self.model):
            if not self.runs.get(path) and path[0] != "hook":
                names |= _op_names(self.model, node, set())
            elif isinstance(node, S.While) and node.n == 0:  # its step is written but never ran
                names |= set(_WHILE_OPS[self.dialect][2])
        return names

    def _unique_instances(self) -> Iterator[_Instance]:
        return (inst for inst in dict.fromkeys(self.instances) if inst.address)

    def _buffer_layers(self) -> tuple[tuple[str, int], ...]:
        """Versions grouped by writing place; the starting value joins a repeating first write."""
        out = []
        for buffer, writers in self.buffer_writes.items():
            counts = Counter(writers)
            first_repeats = counts[writers[0]] > 1
            if not first_repeats:
                out.append((buffer, 1))
            for writer in dict.fromkeys(writers):
                out.append((buffer, counts[writer] + (writer == writers[0] and first_repeats)))
        return tuple(out)

    def _op(self, name: str, ctx: _Ctx, node: Path, slot: int = 0, params: tuple[str, ...] = ()) -> None:
        self.runs[node] += 1
        chain = collapse((*ctx.stack, _Frame(ctx.code, node)))
        key = (id(ctx.scope), ctx.prefix, chain, name, slot)
        self.events.append((key, name, ctx.scope.address, params, ctx.dynamic))
        if len(self.events) > MAX_OPS:
            raise TooLarge(f"the model runs more than {MAX_OPS} ops")

    # -- statements ---------------------------------------------------------------------------

    def _body(self, body: tuple[S.Stmt, ...], ctx: _Ctx, path: Path) -> None:
        for i, stmt in enumerate(body):
            self._stmt(stmt, ctx, sub(path, i))

    def _stmt(self, stmt: S.Stmt, ctx: _Ctx, path: Path) -> None:
        self.runs[path] += 1
        if isinstance(stmt, S.Assign):
            self._expr(stmt.expr, ctx, sub(path, "expr"))
        elif isinstance(stmt, S.For):
            if stmt.shape and stmt.k not in range(5):
                raise SpecError(f"no bound of {stmt.k} from the 2x4 shape")
            inner = ctx.enter(dynamic=ctx.dynamic or _exits(stmt.body), in_for=True)
            for i in range(stmt.k):
                try:
                    self._body(stmt.body, inner.enter(indices=(*ctx.indices, i)), sub(path, "body"))
                except _Continue:
                    continue
                except _Break:
                    break
        elif isinstance(stmt, S.ForGen):
            self._for_gen(stmt, ctx, path)
        elif isinstance(stmt, S.ForRows):
            self._expr(stmt.arg, ctx, sub(path, "arg"))
            for slot in range(SHAPE[0]):  # iter(e): Tensor.__iter__ unbinds the rows at once
                self._op("unbind", ctx, sub(path, "iter"), slot=slot)
            inside = ctx.enter(in_for=False)
            for _ in range(SHAPE[0]):
                self._op("add", inside, sub(path, "glue"))
                self._body(stmt.body, inside, sub(path, "body"))
        elif isinstance(stmt, S.With):
            self._with(stmt, ctx, path)
        elif isinstance(stmt, S.Try):
            try:
                self._body(stmt.body, ctx.enter(in_with=True, dynamic=ctx.dynamic or _exits(stmt.body)),
                           sub(path, "body"))
            except _Raise:
                self._body(stmt.handler, ctx.enter(dynamic=True), sub(path, "handler"))
        elif isinstance(stmt, S.Unpack):
            self._expr(stmt.arg, ctx, sub(path, "arg"))
            if stmt.op not in ("max", "sort"):
                raise SpecError(f"no two-output {stmt.op} to unpack")
            self._op(stmt.op, ctx, path, slot=0)
            self._op(stmt.op, ctx, path, slot=1)
            ops = (("unsqueeze", "v"), ("mul", "mul"), ("unsqueeze", "ix"), ("add", "add")) if stmt.op == "max" \
                else (("add", "add"),)
            for name, place in ops:
                self._op(name, ctx, sub(path, place))
        elif isinstance(stmt, S.ForModules):
            for item in self._child(ctx, stmt.modulelist, S.MODULELIST).children.values():
                inner = ctx.enter(module_vars=(*ctx.module_vars, item), in_for=False)
                self._body(stmt.body, inner, sub(path, "body"))
        elif isinstance(stmt, S.ForParams):
            plist = self._child(ctx, stmt.paramlist, "paramlist")
            for k in range(ctx.owner.params.get(stmt.paramlist, 0)):
                weight = f"{plist.address}.{k}"
                inner = ctx.enter(param_vars=(*ctx.param_vars, weight), in_for=False)
                self._body(stmt.body, inner, sub(path, "body"))
        elif isinstance(stmt, S.While):
            self._while(stmt, ctx, path)
        elif isinstance(stmt, S.BreakIf):
            if stmt.how not in _LEAVE or (stmt.how == "raise" and not ctx.in_with):
                raise SpecError(f"no {stmt.how} here (raise Stop() needs an enclosing with or try)")
            if stmt.at is None and stmt.how == "raise":
                self.runs[sub(path, "taken")] += 1
                raise _Raise
            if not ctx.in_for or stmt.at is None:
                raise SpecError(f"a conditional {stmt.how} outside a for body")
            if ctx.indices[-1] == stmt.at:
                self.runs[sub(path, "taken")] += 1
                raise _LEAVE[stmt.how]
        elif isinstance(stmt, S.IfIndex):
            if not ctx.in_for or stmt.mod < 1:
                raise SpecError("an index branch needs an enclosing for body and a modulus >= 1")
            taken = "then" if ctx.indices[-1] % stmt.mod == stmt.rem else "orelse"
            self._body(getattr(stmt, taken), ctx.enter(dynamic=True), sub(path, taken))
        elif isinstance(stmt, S.IfShape):
            if stmt.dim not in (0, 1):
                raise SpecError(f"a 2x4 tensor has no dimension {stmt.dim}")
            taken = "then" if SHAPE[stmt.dim] == stmt.value else "orelse"
            self._body(getattr(stmt, taken), ctx, sub(path, taken))
        elif isinstance(stmt, S.BufInplace):
            buffer = self._buffer(ctx, stmt.buffer)
            if stmt.arg is not None:
                self._expr(stmt.arg, ctx, sub(path, "arg"))
            self._op(stmt.op, ctx, path)
            self.buffers_read.add(buffer)
            self._write(buffer, ctx, path)
        elif isinstance(stmt, S.BufAssign):
            buffer = self._buffer(ctx, stmt.buffer)
            self._expr(stmt.expr, ctx, sub(path, "expr"))
            self._write(buffer, ctx, path)
        else:
            raise SpecError(f"not a statement: {stmt!r}")

    def _while(self, stmt: S.While, ctx: _Ctx, path: Path) -> None:
        init, test, step = _WHILE_OPS[self.dialect]
        for name in init:
            self._op(name, ctx, sub(path, name))
        inside = ctx.enter(dynamic=True, in_for=False)
        for n in range(stmt.n + 1):
            for name in test:
                self._op(name, inside, sub(path, "test", name))
            if n == stmt.n:
                break
            self._body(stmt.body, inside, sub(path, "body"))
            for name in step:
                self._op(name, inside, sub(path, "step", name))

    def _for_gen(self, stmt: S.ForGen, ctx: _Ctx, path: Path) -> None:
        """``for x in f(x, k)``: each resumption runs the generator's body from the ``for``."""
        if not 0 <= stmt.func < len(self.model.functions) or self.model.functions[stmt.func].kind != S.GENERATOR:
            raise SpecError(f"f{stmt.func} is not a generator function")
        body = self.model.functions[stmt.func].body
        dynamic = ctx.dynamic or _exits(body)
        inside = ctx.enter(stack=(*ctx.stack, _Frame(ctx.code, path)), code=("function", stmt.func, None),
                           owner=None, module_vars=(), param_vars=(), dynamic=dynamic, in_for=True, in_with=False)

        def resumptions() -> Iterator[None]:
            for i in range(stmt.k):
                try:
                    self._body(body, inside.enter(indices=(i,)), ("func", stmt.func, "body"))
                except _Continue:
                    continue  # skips the yield
                except _Break:
                    return
                yield

        consumer = ctx.enter(dynamic=dynamic, in_for=False)
        for _ in resumptions():
            self._body(stmt.body, consumer, sub(path, "body"))

    def _with(self, stmt: S.With, ctx: _Ctx, path: Path) -> None:
        """``with Cm(x) as x``: ``__enter__`` and ``__exit__`` are called from the ``with``
        statement (one source span for the call on every exit path), ``Stop`` suppressed."""
        if not 0 <= stmt.ctx < len(self.model.contexts):
            raise SpecError(f"no context manager Cm{stmt.ctx}")
        cm = self.model.contexts[stmt.ctx]
        method = ctx.enter(stack=(*ctx.stack, _Frame(ctx.code, path)), owner=None, indices=(), module_vars=(),
                           param_vars=(), in_for=False, in_with=False)
        self._body(cm.enter, method.enter(code=("enter", stmt.ctx, None)), ("ctx", stmt.ctx, "enter"))
        leaving: Optional[Exception] = None
        try:
            self._body(stmt.body, ctx.enter(in_with=True, dynamic=ctx.dynamic or _exits(stmt.body)),
                       sub(path, "body"))
        except (_Break, _Continue) as jump:
            leaving = jump
        except _Raise:
            pass
        self._body(cm.exit, method.enter(code=("exit", stmt.ctx, None)), ("ctx", stmt.ctx, "exit"))
        if leaving is not None:
            raise leaving

    def _write(self, buffer: str, ctx: _Ctx, path: Path) -> None:
        writer = (id(ctx.scope), ctx.prefix, collapse((*ctx.stack, _Frame(ctx.code, path))))
        self.buffer_writes.setdefault(buffer, []).append(writer)

    # -- expressions ----------------------------------------------------------------------------

    def _expr(self, expr: S.Expr, ctx: _Ctx, path: Path) -> None:
        self.runs[path] += 1
        if isinstance(expr, S.Var):
            if expr.name != "x" and not (expr.name == "y" and self.model.inputs == 2 and ctx.owner is self.root
                                         and not ctx.stack and ctx.code[1] == "root"):
                raise SpecError(f"{expr.name} is not in reach here")
            return
        if isinstance(expr, S.ReadBuffer):
            self.buffers_read.add(self._buffer(ctx, expr.buffer))
        elif isinstance(expr, (S.Unary, S.Scalar)):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            name = "getitem" if isinstance(expr, S.Unary) and expr.form == "index" else expr.op
            self._op(name, ctx, path)
        elif isinstance(expr, S.Binary):
            self._expr(expr.left, ctx, sub(path, "left"))
            self._expr(expr.right, ctx, sub(path, "right"))
            self._op(expr.op, ctx, path)
        elif isinstance(expr, S.MaxSlots):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            self._op("max", ctx, path, slot=0)
            self._op("max", ctx, path, slot=1)
            self._op("expand", ctx, sub(path, "expand"))
        elif isinstance(expr, S.MatParam):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            self._op("matmul", ctx, path, params=(self._weight(ctx, expr.param),))
        elif isinstance(expr, S.CallChild):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            self._call_module(self._callee(ctx, expr.child), ctx, path)
        elif isinstance(expr, S.CallFunc):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            self._call_func(expr, ctx, path)
        elif isinstance(expr, S.ListComp):
            self._list_comp(expr, ctx, path)
        elif isinstance(expr, S.GenSum):
            if expr.k < 1:
                raise SpecError("sum over an empty generator gives 0, not a tensor")
            for j in range(expr.k):
                self._expr(expr.elem, ctx.enter(indices=(*ctx.indices, j)), sub(path, "elem"))
                self._op("add" if j else "radd", ctx, sub(path, "sum"))
        elif isinstance(expr, S.MapSum):
            if expr.k < 1:
                raise SpecError("sum over an empty map gives 0, not a tensor")
            self._expr(expr.arg, ctx, sub(path, "arg"))
            inside = ctx.enter(dynamic=True)
            for j in range(expr.k):
                self._op(expr.op, inside, sub(path, "lambda" if expr.lam else "sum"))
                self._op("add" if j else "radd", inside, sub(path, "sum"))
        elif isinstance(expr, S.MultiOut):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            for slot in range(pieces(expr)):
                self._op(expr.op, ctx, path, slot=slot)
            self._op("stack" if expr.op == "unbind" else "cat", ctx, sub(path, "join"))
        elif isinstance(expr, S.MapRows):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            for slot in range(SHAPE[0]):
                self._op("unbind", ctx, sub(path, "iter"), slot=slot)
            for _ in range(SHAPE[0]):  # called from C (map), at list(...)
                self._op(expr.op, ctx, sub(path, "lambda" if expr.lam else "list"))
            self._op("stack", ctx, sub(path, "stack"))
        elif isinstance(expr, S.ReduceRows):
            self._expr(expr.arg, ctx, sub(path, "arg"))
            for slot in range(SHAPE[0]):
                self._op("unbind", ctx, sub(path, "iter"), slot=slot)
            for _ in range(SHAPE[0] - 1):  # called from C (functools.reduce)
                if expr.op == "lambda":
                    self._op(expr.unary, ctx, sub(path, "lambda", "unary"))
                    self._op("add", ctx, sub(path, "lambda", "add"))
                else:
                    self._op(expr.op, ctx, sub(path, "reduce"))
            self._op("expand", ctx, sub(path, "expand"))
        elif isinstance(expr, S.SumChildren):
            items = self._child(ctx, expr.modulelist, S.MODULELIST).children.values()
            if not items:
                raise SpecError("sum over an empty ModuleList gives 0, not a tensor")
            for j, item in enumerate(items):
                self._expr(expr.arg, ctx, sub(path, "arg"))
                self._call_module(item, ctx, sub(path, "call"))
                self._op("add" if j else "radd", ctx, sub(path, "sum"))
        else:
            raise SpecError(f"not an expression: {expr!r}")

    def _list_comp(self, expr: S.ListComp, ctx: _Ctx, path: Path) -> None:
        if expr.k < 1:
            raise SpecError("a comprehension needs at least one element")
        for j in range(expr.k):
            self._expr(expr.elem, ctx.enter(indices=(*ctx.indices, j)), sub(path, "elem"))
        if expr.reduce == "sum":
            for j in range(expr.k):
                self._op("add" if j else "radd", ctx, sub(path, "sum"))
        else:
            self._op("stack", ctx, sub(path, "stack"))
            self._op("sum", ctx, sub(path, "sum"))

    # -- calls ------------------------------------------------------------------------------------

    def _call_module(self, inst: _Instance, ctx: _Ctx, path: Path) -> None:
        """One module call from ``path``: pre-hooks, its forward, forward hooks."""
        inst.calls += 1
        place = collapse((*ctx.stack, _Frame(ctx.code, path)))
        hook_ctx = _Ctx(ctx.scope, None, (), prefix=(*ctx.prefix, place, id(inst)), dynamic=True)
        hooks = [(h, self.model.hooks[h]) for h in inst.hooks if h < len(self.model.hooks)]
        for h, hook in hooks:
            if hook.kind == "pre":
                self._expr(hook.expr, hook_ctx.enter(code=("hook", h, None)), ("hook", h, "expr"))
        if inst.kind in _LIBRARY_OPS:
            name, code = _LIBRARY_OPS[inst.kind]
            params = (inst.param_address("weight"), inst.param_address("bias")) if inst.kind == S.LINEAR else ()
            self._op(name, _Ctx(inst, None, (code, None, None), dynamic=ctx.dynamic), ("library", code),
                     params=params)
        elif inst.kind == S.BLOCK:
            body_ctx = _Ctx(inst, inst, ("forward", inst.cls, None), dynamic=ctx.dynamic)
            self._body(self._class(inst.cls).body, body_ctx, ("class", inst.cls, "body"))
        else:
            raise SpecError(f"a {inst.kind} is not callable")
        for h, hook in hooks:
            if hook.kind != "pre":
                self._expr(hook.expr, hook_ctx.enter(code=("hook", h, None)), ("hook", h, "expr"))

    def _call_func(self, expr: S.CallFunc, ctx: _Ctx, path: Path) -> None:
        if not 0 <= expr.func < len(self.model.functions):
            raise SpecError(f"no function f{expr.func}")
        func = self.model.functions[expr.func]
        if func.kind == S.GENERATOR:
            raise SpecError(f"f{expr.func} is a generator: calling it runs nothing")
        here = _Frame(ctx.code, path)
        code = ("function", expr.func, None)
        inside = ctx.enter(stack=(*ctx.stack, here), code=code, owner=None, indices=(), module_vars=(),
                           param_vars=(), dynamic=ctx.dynamic or func.kind == S.EXEC, in_for=False)
        body_path = ("func", expr.func, "body")
        if func.kind == S.DECORATED:
            wrapper = ("wrapper", None, expr.func)
            for line in ("first", "second"):
                called = (*ctx.stack, here, _Frame(wrapper, ("wrapper", line)))
                self._body(func.body, inside.enter(stack=called), body_path)
        elif func.kind == S.RECURSIVE:
            stack = inside.stack
            for _ in range(expr.depth):
                self._body(func.body, inside.enter(stack=stack, dynamic=True), body_path)
                stack = (*stack, _Frame(code, ("func", expr.func, "tail")))
        else:
            self._body(func.body, inside, body_path)

    # -- names in reach ---------------------------------------------------------------------------

    def _child(self, ctx: _Ctx, attr: str, kind: str) -> _Instance:
        child = ctx.owner.children.get(attr) if ctx.owner is not None else None
        if child is None or child.kind != kind:
            raise SpecError(f"no {kind} self.{attr} here")
        return child

    def _callee(self, ctx: _Ctx, name: str) -> _Instance:
        if name == "m":
            if not ctx.module_vars:
                raise SpecError("m(...) outside a ModuleList loop")
            return ctx.module_vars[-1]
        callee = ctx.owner.children.get(name) if ctx.owner is not None else None
        if callee is None or callee.kind not in (*_LIBRARY_OPS, S.BLOCK):
            raise SpecError(f"no callable module self.{name} here")
        return callee

    def _weight(self, ctx: _Ctx, name: str) -> str:
        if name == "w":
            if not ctx.param_vars:
                raise SpecError("x @ w outside a ParameterList loop")
            return ctx.param_vars[-1]
        if ctx.owner is None or ctx.owner.params.get(name, -1) != 0:
            raise SpecError(f"no raw weight self.{name} here")
        return ctx.owner.param_address(name)

    def _buffer(self, ctx: _Ctx, name: str) -> str:
        if ctx.owner is None or name not in ctx.owner.buffers:
            raise SpecError(f"no buffer self.{name} here")
        return ctx.owner.param_address(name)


_NAMED = {S.MaxSlots: ("max", "expand"), S.MatParam: ("matmul",), S.ListComp: ("stack", "sum", "radd", "add"),
          S.GenSum: ("radd", "add"), S.MapSum: ("radd", "add"), S.SumChildren: ("radd", "add", "linear", "relu"),
          S.While: ("zeros", "sum", "lt", "add", "check"), S.CallChild: ("linear", "relu"),
          S.ForRows: ("unbind", "add"), S.MapRows: ("unbind", "stack"), S.ReduceRows: ("unbind", "expand", "add"),
          S.Unpack: ("unsqueeze", "mul", "add"), S.MultiOut: ("stack", "cat")}


def _op_names(model: S.ModelSpec, node: object, seen: set) -> set[str]:
    """Every op name ``node`` could record, through the functions and classes it may call."""
    names = set(_NAMED.get(type(node), ()))
    if isinstance(node, (S.Unary, S.Scalar, S.Binary, S.BufInplace, S.MapSum, S.MultiOut, S.MapRows, S.ReduceRows,
                         S.Unpack)):
        names.add("getitem" if isinstance(node, S.Unary) and node.form == "index" else node.op)
    if isinstance(node, S.ReduceRows):
        names.add(node.unary)
    targets = []
    if isinstance(node, (S.CallFunc, S.ForGen)) and node.func < len(model.functions):
        targets.append(("func", node.func, model.functions[node.func].body))
    if isinstance(node, S.With) and node.ctx < len(model.contexts):
        targets.append(("ctx", node.ctx, model.contexts[node.ctx].enter + model.contexts[node.ctx].exit))
    if isinstance(node, (S.CallChild, S.SumChildren, S.ForModules)):  # any block or hook may run
        targets += [("class", k, cls.body) for k, cls in enumerate(model.classes)]
        targets += [("hook", k, (S.Assign(hook.expr),)) for k, hook in enumerate(model.hooks)]
    for key_kind, index, body in targets:
        if (key_kind, index) not in seen:
            seen.add((key_kind, index))
            for stmt in body:
                names |= _op_names(model, stmt, seen)
    for value in vars(node).values():
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if hasattr(item, "__dataclass_fields__") and not isinstance(item, (S.Child, S.ClassDef)):
                names |= _op_names(model, item, seen)
    return names
