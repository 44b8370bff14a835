"""Hypothesis strategies that draw model specs (torch-free; drawing never imports torch).

``specs(dialect, profile)`` draws a :class:`~fuzz.spec.ModelSpec` whose vocabulary covers the
grouping spec's Cases table, and a few rule fragments (:mod:`torchlens.fuzz.fragments`) append the
compound rows: expressions with several ops on one line (``st.recursive``),
loops, nested loops, ``while`` with a tensor condition, ``break``, index branches, helper
functions (plain, decorated, ``exec``-built, recursive), comprehensions, generator ``sum``,
``map``, submodules (``Linear``, a reused ``ReLU``, blocks, ``ModuleList``, one instance under
two parents), raw weights, ``ParameterList`` loops, hooks and buffers. Each body draw may
repeat a statement (the "written out twice by hand" case) and each function may copy an
earlier body (two separately written identical functions).

The ``standin`` dialect keeps the constructs that run over plain Python with stand-in ops.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from functools import lru_cache
from typing import Optional, Sequence

from hypothesis import strategies as st

from . import spec as S
from .fragments import with_fragments
from .render import STANDIN, TORCH

UNARY = ("tanh", "sin", "sigmoid", "relu")


@dataclass(frozen=True)
class Profile:
    """Size limits of drawn models."""

    name: str
    max_stmts: int
    max_depth: int
    max_leaves: int
    max_functions: int
    max_classes: int
    max_children: int
    max_k: int


PROFILES = {
    "ci": Profile("ci", max_stmts=4, max_depth=2, max_leaves=3, max_functions=3, max_classes=2,
                  max_children=4, max_k=3),
    "long": Profile("long", max_stmts=5, max_depth=2, max_leaves=4, max_functions=4, max_classes=3,
                    max_children=5, max_k=4),
}


@dataclass(frozen=True)
class Reach:
    """What a body may name where it is drawn."""

    dialect: str
    #: Functions callable from here, as ``(index, kind)``.
    functions: tuple[tuple[int, str], ...] = ()
    #: ``self.<attr>`` modules callable here (Linear, ReLU, blocks, ``inner``).
    modules: tuple[str, ...] = ()
    modulelists: tuple[str, ...] = ()
    paramlists: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    buffers: tuple[str, ...] = ()
    second_input: bool = False
    module_var: bool = False
    param_var: bool = False
    in_for: bool = False
    #: Generator functions a ``for x in f(x, k)`` may consume.
    generators: tuple[int, ...] = ()
    #: How many context managers ``Cm<i>`` a ``with`` may use.
    contexts: int = 0
    #: Whether ``raise Stop()`` is in reach (in a ``with`` or ``try`` body).
    in_with: bool = False


def rows_body_reach(arg: S.Expr, reach: Reach) -> Reach:
    """What the body of ``for r in arg`` may use: no buffer where ``arg`` reads one. Its rows may
    be views of the buffer (``for r in self.buf``), and torch refuses an in-place write to the
    base of such views once the buffer needs grad (a generated model that raises untraced)."""
    return replace(reach, buffers=()) if _reads_buffer(arg) else reach


def _reads_buffer(node: object) -> bool:
    if isinstance(node, S.ReadBuffer):
        return True
    if isinstance(node, tuple):
        return any(_reads_buffer(item) for item in node)
    return is_dataclass(node) and any(_reads_buffer(getattr(node, f.name)) for f in fields(node))


def _callables(kinds: Sequence[tuple[int, str]]) -> dict:
    """``Reach`` fields for functions ``(index, kind)``: called ones and consumed generators."""
    return {"functions": tuple((i, kind) for i, kind in kinds if kind != S.GENERATOR),
            "generators": tuple(i for i, kind in kinds if kind == S.GENERATOR)}


# --- expressions ---------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def exprs(reach: Reach, profile: Profile) -> st.SearchStrategy:
    """Expressions over ``x``: a tree of ops, calls and comprehensions (``st.recursive``)."""
    leaves = [st.just(S.Var())]
    if reach.second_input:
        leaves.append(st.just(S.Var("y")))
    if reach.buffers:
        leaves.append(st.builds(S.ReadBuffer, st.sampled_from(reach.buffers)))
    k = st.integers(1, profile.max_k)
    torch = reach.dialect == TORCH

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        forms = ("call", "index", "method", "functional") if torch else ("call", "index")
        options = [
            st.builds(_unary, st.sampled_from(UNARY), inner, st.sampled_from(forms), st.booleans()),
            st.builds(S.Scalar, st.sampled_from(("mul", "add", "sub", "rmul", "radd", "rsub") if torch
                                                else ("mul", "add", "radd")),
                      inner, st.sampled_from((0.5, 2.0, 1.0, None))),
            st.builds(S.Binary, st.sampled_from(("add", "mul", "sub") if torch else ("add", "mul")),
                      inner, inner),
            st.builds(S.ListComp, inner, k, st.sampled_from(("stack", "sum") if torch else ("sum",))),
            st.builds(S.GenSum, inner, k),
            st.builds(S.MapSum, st.sampled_from(UNARY[:3]), inner, k, st.booleans()),
        ]
        options += [
            # Motifs: the same op nested on one line, and two same-type ops side by side.
            st.builds(_nested, st.sampled_from(UNARY), inner, st.integers(2, 3), st.booleans()),
            st.builds(_twin_operands, st.sampled_from(("add", "mul")), st.sampled_from(UNARY), inner),
        ]
        if torch:
            options.append(st.builds(S.MaxSlots, inner))
            # Rows and pieces of a tensor: one option among the others, not three.
            options.append(st.one_of(
                st.builds(S.MultiOut, st.sampled_from(("split", "chunk", "unbind")), inner, st.integers(1, 4),
                          st.integers(0, 1), st.sampled_from(("method", "call"))),
                st.builds(S.MapRows, st.sampled_from(UNARY), inner, st.booleans()),
                st.builds(S.ReduceRows, st.sampled_from(("add", "mul", "maximum", "lambda")), inner,
                          st.sampled_from(UNARY))))
        # Calls are what most rows are about: drawn three times as often as one op.
        if reach.functions:
            options += [st.builds(_call_func, st.sampled_from(reach.functions), inner,
                                  st.integers(0, 3))] * 3
        callable_modules = reach.modules + (("m",) if reach.module_var else ())
        if callable_modules:
            options += [st.builds(S.CallChild, st.sampled_from(callable_modules), inner)] * 3
        if reach.modulelists:
            options.append(st.builds(S.SumChildren, st.sampled_from(reach.modulelists), inner))
        weights = reach.weights + (("w",) if reach.param_var else ())
        if weights:
            options.append(st.builds(S.MatParam, st.sampled_from(weights), inner))
        return st.one_of(options)

    return st.recursive(st.one_of(leaves), extend, max_leaves=profile.max_leaves)


def _unary(op: str, arg: S.Expr, form: str, split: bool) -> S.Unary:
    if form == "functional":
        op = "relu"  # F.relu: torch's own Python between the caller and the op
    return S.Unary(op, arg, form, split and form in ("call", "functional"))


def _nested(op: str, arg: S.Expr, depth: int, split: bool) -> S.Unary:
    for _ in range(depth):
        arg = S.Unary(op, arg)
    return replace(arg, split=split)


def _twin_operands(op: str, unary: str, arg: S.Expr) -> S.Binary:
    return S.Binary(op, S.Unary(unary, arg), S.Unary(unary, arg))


def _call_func(func: tuple[int, str], arg: S.Expr, depth: int) -> S.CallFunc:
    index, kind = func
    return S.CallFunc(index, arg, depth if kind == S.RECURSIVE else 0)


# --- statements ----------------------------------------------------------------------------------


@st.composite
def bodies(draw, reach: Reach, profile: Profile, depth: int = 0, min_size: int = 1) -> tuple[S.Stmt, ...]:
    """A statement list. Motifs: an assignment written twice by hand, or put in two loops of
    different lengths (a helper called from two different loops)."""
    out: list[S.Stmt] = []
    for _ in range(draw(st.integers(min_size, profile.max_stmts))):
        stmt = draw(statements(reach, profile, depth))
        out.append(stmt)
        motif = draw(st.sampled_from(("none",) * 6 + ("twice", "two loops"))) if isinstance(stmt, S.Assign) else "none"
        if motif == "twice":
            out.append(stmt)
        elif motif == "two loops" and depth < profile.max_depth:
            out[-1:] = [S.For(2, (stmt,)), S.For(3, (stmt,))]
    return tuple(out)


@st.composite
def statements(draw, reach: Reach, profile: Profile, depth: int) -> S.Stmt:
    """One statement, nesting at most ``profile.max_depth`` bodies deep."""
    torch = reach.dialect == TORCH
    kinds = ["assign"] * 8
    if depth < profile.max_depth:
        kinds += ["for"] * 4 + ["while"] * 2
        kinds += ["modules"] * 2 * bool(reach.modulelists) + ["params"] * 2 * bool(reach.paramlists)
        kinds += ["rows", "shape-branch"] * torch + ["generator"] * 2 * bool(reach.generators)
        kinds += ["with"] * 2 * bool(reach.contexts) + ["try"]
    if reach.in_for:
        kinds += ["break", "break", "branch", "branch"] + ["continue"] * torch
    if reach.in_with:
        kinds += ["raise"]
    if reach.buffers:
        kinds += ["inplace", "inplace", "reassign", "reassign"]
    kinds += ["unpack"] * torch
    kind = draw(st.sampled_from(kinds))
    expr = exprs(reach, profile)
    nested = replace(reach, in_for=False)
    if kind == "assign":
        return S.Assign(draw(expr))
    if kind == "for":
        loop = replace(reach, in_for=True)
        shape = torch and draw(st.integers(0, 3)) == 0  # the bound read from x.shape
        return S.For(draw(st.integers(1, 4 if shape else profile.max_k)), draw(bodies(loop, profile, depth + 1)),
                     shape)
    if kind == "rows":
        arg = draw(expr)
        return S.ForRows(arg, draw(bodies(rows_body_reach(arg, nested), profile, depth + 1, min_size=0)))
    if kind == "shape-branch":
        then = draw(bodies(reach, profile, depth + 1))
        orelse = draw(bodies(reach, profile, depth + 1, min_size=0))
        return S.IfShape(draw(st.integers(0, 1)), draw(st.sampled_from((2, 3, 4))), then, orelse)
    if kind == "generator":
        return S.ForGen(draw(st.sampled_from(reach.generators)), draw(st.integers(0, profile.max_k)),
                        draw(bodies(nested, profile, depth + 1, min_size=0)))
    if kind == "with":
        inner = replace(reach, in_with=True)
        return S.With(draw(st.integers(0, reach.contexts - 1)), draw(bodies(inner, profile, depth + 1)))
    if kind == "try":
        inner = replace(reach, in_with=True)
        return S.Try(draw(bodies(inner, profile, depth + 1)), draw(bodies(reach, profile, depth + 1, min_size=0)))
    if kind == "unpack":
        return S.Unpack(draw(st.sampled_from(("max", "sort"))), draw(expr))
    if kind in ("continue", "raise"):
        at = draw(st.integers(0, profile.max_k - 1)) if reach.in_for else None
        return S.BreakIf(at, kind)
    if kind == "while":
        return S.While(draw(st.integers(0, profile.max_k)), draw(bodies(nested, profile, depth + 1)))
    if kind == "modules":
        inner = replace(nested, module_var=True)
        call = S.CallChild("m", S.Var())
        first = draw(st.sampled_from((S.Assign(call), S.Assign(S.Binary("add", S.Var(), call)))))  # glue
        rest = draw(bodies(inner, profile, depth + 1, min_size=0))
        return S.ForModules(draw(st.sampled_from(reach.modulelists)), (first, *rest))
    if kind == "params":
        inner = replace(nested, param_var=True)
        first = S.Assign(S.Unary(draw(st.sampled_from(UNARY)), S.MatParam("w", S.Var())))
        rest = draw(bodies(inner, profile, depth + 1, min_size=0))
        return S.ForParams(draw(st.sampled_from(reach.paramlists)), (first, *rest))
    if kind == "break":
        return S.BreakIf(draw(st.integers(0, profile.max_k - 1)))
    if kind == "branch":
        then = draw(bodies(reach, profile, depth + 1))
        orelse = draw(bodies(reach, profile, depth + 1, min_size=0))
        return S.IfIndex(draw(st.integers(2, 3)), draw(st.integers(0, 1)), then, orelse)
    buffer = draw(st.sampled_from(reach.buffers))
    if kind == "inplace":
        op = draw(st.sampled_from(("add_", "mul_")))
        return S.BufInplace(buffer, op, draw(expr) if op == "add_" else None)
    return S.BufAssign(buffer, S.Binary("add", S.ReadBuffer(buffer), draw(expr)))


# --- definitions ---------------------------------------------------------------------------------


@st.composite
def functions(draw, dialect: str, profile: Profile) -> tuple[S.FuncDef, ...]:
    """Module-level functions; ``f<i>`` calls only ``f<j>``, ``j > i``."""
    choices = (S.PLAIN, S.PLAIN, S.DECORATED, S.EXEC, S.RECURSIVE) + ((S.GENERATOR,) if dialect == TORCH else ())
    kinds = draw(st.lists(st.sampled_from(choices), max_size=profile.max_functions))
    made: list[S.FuncDef] = []
    for i in reversed(range(len(kinds))):
        later = tuple((j, kinds[j]) for j in range(i + 1, len(kinds)))
        # A generator's body sits in its own ``for i0 in range(n)``: break, continue, branches.
        reach = Reach(dialect, in_for=kinds[i] == S.GENERATOR, **_callables(later))
        # A twin of a later function (not of a generator's body, written for its own loop).
        twins = [f.body for f in made if f.kind != S.GENERATOR] if kinds[i] != S.GENERATOR else []
        if twins and draw(st.integers(0, 4)) == 0:
            body = twins[draw(st.integers(0, len(twins) - 1))]
        else:
            body = draw(bodies(reach, replace(profile, max_depth=1), depth=0))
        made.insert(0, S.FuncDef(kinds[i], body))
    return tuple(made)


def hooks(profile: Profile) -> st.SearchStrategy:
    """Hook functions: a forward hook or a pre-hook, each one expression over ``x``."""
    expr = exprs(Reach(TORCH), replace(profile, max_leaves=2))
    return st.lists(st.builds(S.HookDef, st.sampled_from(("forward", "forward", "pre")), expr), max_size=2)


@st.composite
def children(draw, inner_flags: tuple[bool, ...], first: int, n_hooks: int, profile: Profile) -> tuple[S.Child, ...]:
    """Submodules of a class that may hold ``Block<j>`` for ``j >= first``.

    ``inner_flags[j]`` says whether ``Block<j>`` takes an injected module (then it is only
    built as one of a shared pair's two parents).
    """
    plain = [j for j in range(first, len(inner_flags)) if not inner_flags[j]]
    parents = [j for j in range(first, len(inner_flags)) if inner_flags[j]]
    kinds = [S.LINEAR, S.RELU, S.MODULELIST] + [S.BLOCK] * bool(plain) + [S.SHARED] * bool(parents)
    item_kinds = st.sampled_from([S.LINEAR, S.RELU] + [S.BLOCK] * bool(plain))
    hook = st.lists(st.integers(0, n_hooks - 1), max_size=1) if n_hooks else st.just([])
    out = []
    for n in range(draw(st.integers(0, profile.max_children))):
        kind = draw(st.sampled_from(kinds))
        name = {S.LINEAR: "lin", S.RELU: "act", S.BLOCK: "blk", S.MODULELIST: "ml", S.SHARED: "par"}[kind] + str(n)
        hooked = tuple(draw(hook))
        if kind == S.BLOCK:
            out.append(S.Child(name, kind, draw(st.sampled_from(plain)), hooks=hooked))
        elif kind == S.MODULELIST:
            items = [_item(draw(item_kinds), plain, draw) for _ in range(draw(st.integers(1, 3)))]
            if draw(st.booleans()):
                items = [items[0]] * len(items)  # distinct but identical modules
            out.append(S.Child(name, kind, items=tuple(items), hooks=hooked))
        elif kind == S.SHARED:
            inner = _item(draw(st.sampled_from([S.LINEAR] + [S.BLOCK] * bool(plain))), plain, draw)
            out.append(S.Child(name, kind, draw(st.sampled_from(parents)), items=(inner,), hooks=hooked))
        else:
            out.append(S.Child(name, kind, hooks=hooked))
    return tuple(out)


def _item(kind: str, plain: list[int], draw) -> S.Child:
    return S.Child("", kind, draw(st.sampled_from(plain)) if kind == S.BLOCK else None)


@st.composite
def class_defs(draw, inner_flags: tuple[bool, ...], first: int, funcs: tuple[S.FuncDef, ...],
               n_hooks: int, profile: Profile, inputs: int = 1, takes_inner: bool = False,
               contexts: int = 0) -> S.ClassDef:
    """One ``nn.Module`` class: submodules, weights, buffers, then a body that uses them."""
    kids = draw(children(inner_flags, first, n_hooks, profile))
    params = []
    for n, size in enumerate(draw(st.lists(st.sampled_from((0, 2, 3)), max_size=2))):
        params.append(S.ParamDecl(("ws" if size else "W") + str(n), size))
    buffers = tuple(f"buf{n}" for n in range(draw(st.integers(0, 1))))
    modules = tuple(attr for c in kids if c.kind != S.MODULELIST for attr in S.child_attrs(c))
    reach = Reach(
        TORCH,
        **_callables(tuple(enumerate(f.kind for f in funcs))),
        contexts=contexts,
        modules=modules + (("inner",) if takes_inner else ()),
        modulelists=tuple(c.name for c in kids if c.kind == S.MODULELIST),
        paramlists=tuple(p.name for p in params if p.n),
        weights=tuple(p.name for p in params if not p.n),
        buffers=buffers,
        second_input=inputs == 2,
    )
    body = draw(bodies(reach, profile))
    if takes_inner:
        body = (S.Assign(S.CallChild("inner", S.Var())), *body)
    return S.ClassDef(body, kids, tuple(params), buffers, takes_inner)


@st.composite
def specs(draw, dialect: str = TORCH, profile: str = "ci") -> S.ModelSpec:
    """A whole model spec in ``dialect`` (``torch`` or ``standin``) sized by ``profile``."""
    limits = PROFILES[profile]
    funcs = draw(functions(dialect, limits))
    if dialect == STANDIN:
        reach = Reach(STANDIN, functions=tuple(enumerate(f.kind for f in funcs)))
        return S.ModelSpec(S.ClassDef(draw(bodies(reach, limits))), functions=funcs)
    hook_defs = tuple(draw(hooks(limits)))
    contexts = tuple(draw(st.lists(context_defs(funcs, limits), max_size=2)))
    inner_flags = tuple(draw(st.lists(st.booleans(), max_size=limits.max_classes)))
    block_limits = replace(limits, max_children=2)
    classes = tuple(
        draw(class_defs(inner_flags, i + 1, funcs, len(hook_defs), block_limits, takes_inner=flag,
                        contexts=len(contexts)))
        for i, flag in enumerate(inner_flags)
    )  # Block<i> holds only Block<j>, j > i: no class contains itself
    inputs = draw(st.sampled_from((1, 1, 2)))
    root = draw(class_defs(inner_flags, 0, funcs, len(hook_defs), limits, inputs=inputs, contexts=len(contexts)))
    model = S.ModelSpec(root, classes, funcs, hook_defs, inputs, contexts)
    return draw(with_fragments(model, _Parts(limits)))


@st.composite
def context_defs(draw, funcs: tuple[S.FuncDef, ...], profile: Profile) -> S.CtxDef:
    """A context manager: ``__enter__`` and ``__exit__`` bodies (either may run no op)."""
    reach = Reach(TORCH, **_callables(tuple(enumerate(f.kind for f in funcs))))
    small = replace(profile, max_depth=1, max_stmts=2)
    return S.CtxDef(draw(bodies(reach, small, min_size=0)), draw(bodies(reach, small, min_size=0)))


@dataclass(frozen=True)
class _Parts:
    """The bodies and expressions fragments draw: small ones, reaching torch only."""

    limits: Profile

    def body(self, draw) -> tuple[S.Stmt, ...]:
        return draw(bodies(Reach("torch"), replace(self.limits, max_depth=1)))

    def expr(self, draw) -> S.Expr:
        return draw(exprs(Reach("torch"), replace(self.limits, max_leaves=2)))


def models(profile: str = "ci") -> st.SearchStrategy:
    """Generated models with their expected layers, for your own property tests.

    Each example is a :class:`fuzz.build.GeneratedModel`: ``.make()`` gives a fresh
    ``nn.Module`` (the same weights every time), ``.inputs()`` its inputs, ``.expected`` the
    oracle's layers, ``.source`` and ``.path`` the generated file. Drawing imports torch.
    """
    from .build import build
    from .oracle import SpecError

    def buildable(spec: S.ModelSpec) -> Optional[object]:
        try:
            return build(spec)
        except SpecError:
            return None

    return specs(TORCH, profile).map(buildable).filter(lambda built: built is not None)
