"""Rule fragments: strategies that add one Cases-table construct to a drawn model.

Random specs reach the simple rows often; compound rows (a helper called from two loops,
one instance under two parents, a hooked module in a loop) need several parts to line up.
A fragment appends those parts (a function, class, child, weight, hook or buffer with a
fresh name, plus the statements that use them) to the end of the root's ``forward``, with
drawn bodies and expressions, so the construct is always there and still varies.
``specs`` in :mod:`torchlens.fuzz.strategies` applies a few fragments to each model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Protocol

from hypothesis import strategies as st

from . import spec as S

X = S.Var()


def _assign(expr: S.Expr) -> S.Assign:
    return S.Assign(expr)


def _with_function(model: S.ModelSpec, kind: str, body: tuple[S.Stmt, ...]) -> tuple[S.ModelSpec, int]:
    index = len(model.functions)
    return replace(model, functions=(*model.functions, S.FuncDef(kind, body))), index


def _with_child(model: S.ModelSpec, child: S.Child) -> S.ModelSpec:
    return replace(model, root=replace(model.root, children=(*model.root.children, child)))


def _with_class(model: S.ModelSpec, cls: S.ClassDef) -> tuple[S.ModelSpec, int]:
    return replace(model, classes=(*model.classes, cls)), len(model.classes)


def _append(model: S.ModelSpec, *stmts: S.Stmt) -> S.ModelSpec:
    return replace(model, root=replace(model.root, body=(*model.root.body, *stmts)))


def _name(model: S.ModelSpec, prefix: str) -> str:
    return f"{prefix}{len(model.root.children)}"


class Parts(Protocol):
    """Where fragments get their drawn bodies and expressions (:mod:`torchlens.fuzz.strategies`
    passes its own strategies in, so this module does not import it)."""

    def body(self, draw: Any) -> tuple[S.Stmt, ...]: ...

    def expr(self, draw: Any) -> S.Expr: ...


# --- one function per fragment: (draw, model, parts) -> model --------------------------------------


def helper_calls(draw, model, parts):
    """A plain helper called from two lines or from one loop line."""
    model, f = _with_function(model, S.PLAIN, parts.body(draw))
    call = _assign(S.CallFunc(f, X))
    if draw(st.booleans()):
        return _append(model, call, call)
    return _append(model, S.For(3, (call,)))


def helper_two_loops(draw, model, parts):
    """A plain helper called from two different loops, of 2 and 3 iterations."""
    model, f = _with_function(model, S.PLAIN, parts.body(draw))
    call = _assign(S.CallFunc(f, X))
    return _append(model, S.For(2, (call,)), S.For(3, (call,)))


def recursion(draw, model, parts):
    """A recursive function entered from one place or from two, depths 1 to 3."""
    model, f = _with_function(model, S.RECURSIVE, parts.body(draw))
    depths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2).filter(lambda d: sum(d) > 1))
    return _append(model, *(_assign(S.CallFunc(f, X, d)) for d in depths))


def twin_functions(draw, model, parts):
    """Two separately written identical functions, called in one loop."""
    body = parts.body(draw)
    model, a = _with_function(model, S.PLAIN, body)
    model, b = _with_function(model, S.PLAIN, body)
    return _append(model, S.For(2, (_assign(S.CallFunc(a, X)), _assign(S.CallFunc(b, X)))))


def exec_or_decorated(draw, model, parts):
    """An ``exec``-built function or a decorated one (wrapper calls it twice), called in a loop."""
    model, f = _with_function(model, draw(st.sampled_from((S.EXEC, S.DECORATED))), parts.body(draw))
    return _append(model, S.For(draw(st.integers(2, 3)), (_assign(S.CallFunc(f, X)),)))


def _module(draw, model, parts) -> tuple[S.ModelSpec, S.Assign]:
    kind = draw(st.sampled_from((S.LINEAR, S.RELU, S.BLOCK)))
    name = _name(model, "mod")
    if kind == S.BLOCK:
        model, cls = _with_class(model, S.ClassDef(parts.body(draw)))
        return _with_child(model, S.Child(name, S.BLOCK, cls)), _assign(S.CallChild(name, X))
    return _with_child(model, S.Child(name, kind)), _assign(S.CallChild(name, X))


def module_loop(draw, model, parts):
    """One Linear, ReLU or block called 3 times from a loop line."""
    model, call = _module(draw, model, parts)
    return _append(model, S.For(3, (call,)))


def module_lines(draw, model, parts):
    """One Linear, ReLU or block called from 3 lines, with other ops between."""
    model, call = _module(draw, model, parts)
    between = _assign(parts.expr(draw))
    return _append(model, call, between, call, between, call)


def shared_parents(draw, model, parts):
    """One module instance injected into two parent modules, both called."""
    model, parent = _with_class(model, S.ClassDef((_assign(S.CallChild("inner", X)), *parts.body(draw)),
                                                  takes_inner=True))
    name = _name(model, "par")
    inner = S.Child("", draw(st.sampled_from((S.LINEAR, S.RELU))))
    model = _with_child(model, S.Child(name, S.SHARED, parent, items=(inner,)))
    return _append(model, _assign(S.CallChild(name + "a", X)), _assign(S.CallChild(name + "b", X)))


def module_list(draw, model, parts):
    """A ModuleList of distinct (or identical) blocks, maybe hooked, looped with glue or summed."""
    model, cls = _with_class(model, S.ClassDef(parts.body(draw)))
    name = _name(model, "ml")
    hooks = ()
    if draw(st.integers(0, 2)):
        hooks = (len(model.hooks),)
        model = replace(model, hooks=(*model.hooks, S.HookDef("forward", parts.expr(draw))))
    n = draw(st.integers(2, 3))
    kinds = (S.BLOCK,) * n if draw(st.booleans()) else draw(st.lists(st.sampled_from((S.BLOCK, S.LINEAR)),
                                                                      min_size=n, max_size=n))
    items = tuple(S.Child("", kind, cls) for kind in kinds)
    items = tuple(replace(i, cls=None) if i.kind == S.LINEAR else i for i in items)
    model = _with_child(model, S.Child(name, S.MODULELIST, items=items, hooks=hooks))
    if draw(st.booleans()):
        return _append(model, _assign(S.SumChildren(name, X)))
    return _append(model, S.ForModules(name, (_assign(S.Binary("add", X, S.CallChild("m", X))),)))


def siamese(draw, model, parts):
    """One module applied to both model inputs."""
    name = _name(model, "enc")
    model = replace(_with_child(model, S.Child(name, S.LINEAR)), inputs=2)
    return _append(model, _assign(S.CallChild(name, X)),
                   _assign(S.Binary("sub", X, S.CallChild(name, S.Var("y")))))


def raw_weight(draw, model, parts):
    """A raw weight used on two lines, or in a first step and then in a loop."""
    name = f"W{len(model.root.params)}"
    model = replace(model, root=replace(model.root, params=(*model.root.params, S.ParamDecl(name))))
    step = _assign(S.Unary("tanh", S.MatParam(name, X)))
    if draw(st.booleans()):
        return _append(model, step, step)
    return _append(model, step, S.For(3, (step,)))


def hooked_module(draw, model, parts):
    """A hooked Linear called from a loop line and from another line."""
    hook = S.HookDef(draw(st.sampled_from(("forward", "pre"))), parts.expr(draw))
    model = replace(model, hooks=(*model.hooks, hook))
    name = _name(model, "hooked")
    model = _with_child(model, S.Child(name, S.LINEAR, hooks=(len(model.hooks) - 1,)))
    call = _assign(S.CallChild(name, X))
    return _append(model, S.For(draw(st.integers(2, 3)), (call,)), call)


def buffers(draw, model, parts):
    """A buffer updated in place in a loop and on another line, then reassigned in a loop."""
    name = f"buf{len(model.root.buffers)}"
    model = replace(model, root=replace(model.root, buffers=(*model.root.buffers, name)))
    write = S.BufInplace(name, "add_", parts.expr(draw))
    reassign = S.BufAssign(name, S.Binary("add", S.ReadBuffer(name), X))
    return _append(model, S.For(3, (write,)), S.BufInplace(name, "mul_"), S.For(2, (reassign,)),
                   _assign(S.Binary("add", X, S.ReadBuffer(name))))


def generator_loop(draw, model, parts):
    """A generator function (its body in its own ``for``, maybe left by ``continue``/``break``)
    consumed by a ``for`` with a body of its own."""
    body = parts.body(draw)
    if draw(st.booleans()):
        body = (*body, S.BreakIf(draw(st.integers(0, 2)), draw(st.sampled_from(("continue", "break")))), *body)
    model, f = _with_function(model, S.GENERATOR, body)
    return _append(model, S.ForGen(f, draw(st.integers(1, 3)), parts.body(draw)))


def context_exits(draw, model, parts):
    """A context manager with ops in ``__enter__`` and ``__exit__``, in a loop, its ``with``
    body left normally, by ``continue``, ``break`` or a ``raise`` its ``__exit__`` suppresses."""
    cm = S.CtxDef(parts.body(draw), parts.body(draw))
    index = len(model.contexts)
    model = replace(model, contexts=(*model.contexts, cm))
    leave = S.BreakIf(draw(st.integers(0, 2)), draw(st.sampled_from(("continue", "break", "raise"))))
    inner = (_assign(parts.expr(draw)), leave, _assign(parts.expr(draw)))
    return _append(model, S.For(3, (S.With(index, inner),)))


def try_except(draw, model, parts):
    """A ``try`` whose body raises ``Stop`` at a drawn pass of a loop (the loop in the ``try``,
    or the ``try`` in the loop), taken by its ``except`` arm: the ops before the raise run, those
    after it do not, then the arm's."""
    inner = (_assign(parts.expr(draw)), S.BreakIf(draw(st.integers(0, 2)), "raise"), _assign(parts.expr(draw)))
    if draw(st.booleans()):
        return _append(model, S.Try((S.For(3, inner),), parts.body(draw)))
    return _append(model, S.For(3, (S.Try(inner, parts.body(draw)),)))


def rows_and_outputs(draw, model, parts):
    """Iteration over a tensor's rows (``for``, ``map``, ``functools.reduce``) and a
    multi-output op, split and put back or unpacked."""
    arg = parts.expr(draw)
    rows = draw(st.sampled_from((
        S.ForRows(arg, parts.body(draw)), _assign(S.MapRows(draw(st.sampled_from(("tanh", "sin"))), arg, draw(st.booleans()))),
        _assign(S.ReduceRows(draw(st.sampled_from(("add", "maximum", "lambda"))), arg)))))
    outputs = draw(st.sampled_from((S.Unpack(draw(st.sampled_from(("max", "sort"))), arg),
                                    _assign(S.MultiOut(draw(st.sampled_from(("split", "chunk", "unbind"))), arg)))))
    return _append(model, rows, outputs)


def shape_control(draw, model, parts):
    """A loop whose bound and a branch whose test read the input's shape."""
    loop = S.For(draw(st.integers(1, 4)), parts.body(draw), shape=True)
    branch = S.IfShape(draw(st.integers(0, 1)), draw(st.sampled_from((2, 4, 3))), parts.body(draw), parts.body(draw))
    return _append(model, loop, branch)


#: Every fragment, by name (``Rule.strategy`` names them as ``fragments.<name>``).
FRAGMENTS: dict[str, Callable] = {f.__name__: f for f in (
    helper_calls, helper_two_loops, recursion, twin_functions, exec_or_decorated, module_loop,
    module_lines, shared_parents, module_list, siamese, raw_weight, hooked_module, buffers, generator_loop,
    context_exits, try_except, rows_and_outputs, shape_control,
)}


@st.composite
def with_fragments(draw, model: S.ModelSpec, parts: Parts, most: int = 3) -> S.ModelSpec:
    """``model`` with up to ``most`` drawn fragments appended."""
    for name in draw(st.lists(st.sampled_from(sorted(FRAGMENTS)), min_size=1, max_size=most)):
        model = FRAGMENTS[name](draw, model, parts)
    return model
