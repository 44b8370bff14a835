"""The model spec: plain frozen data describing a generated model, torch-free.

A spec is what hypothesis draws, what the renderer turns into source, what the oracle
simulates and what the shrinker cuts down. Nodes are frozen dataclasses compared by
value; a node's *place* is its position in the tree (its path), never its value, so two
identical statements written on two lines stay two places, as the grouping rule says.

Every model threads one tensor ``x`` (shape 2x4) through its statements: ``x = <expr>``.
Names used in the rendered source (``i0``, ``m``, ``w``, ``self.lin0``) are derived from
the nesting, never stored, so a shrunk spec always renders to valid code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

# --- expressions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A tensor variable: ``x`` (the threaded value) or ``y`` (the second model input)."""

    name: str = "x"


@dataclass(frozen=True)
class Unary:
    """One op on one tensor. ``form``: ``call`` (``torch.tanh(e)``), ``method`` (``e.tanh()``),
    ``functional`` (``F.relu(e)``, torch's own Python in the chain) or ``index`` (``e[:]``)."""

    op: str
    arg: "Expr"
    form: str = "call"
    #: Write the argument on the next line (``relu(\n relu(x))``): still one place per op.
    split: bool = False


@dataclass(frozen=True)
class Scalar:
    """A tensor and a Python number: ``e * 0.5`` (``mul``), ``0.5 * e`` (``rmul``), ...

    ``value`` ``None`` means the innermost loop or comprehension index (``e * (i0 + 1)``), the
    spec's "varying scalar"; with no index in reach it renders as ``2.0``.
    """

    op: str
    arg: "Expr"
    value: Optional[float] = 0.5


@dataclass(frozen=True)
class Binary:
    """Two tensors: ``left + right`` (``add``), ``*`` (``mul``), ``-`` (``sub``)."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class MaxSlots:
    """``torch.max(e, 1, keepdim=True)[0].expand(2, 4)``: a two-output op, then ``expand``."""

    arg: "Expr"


@dataclass(frozen=True)
class MatParam:
    """``e @ W``: ``param`` is a raw weight's name (``W0``) or ``"w"``, the ParameterList loop's
    weight."""

    param: str
    arg: "Expr"


@dataclass(frozen=True)
class CallChild:
    """``self.<child>(e)``; ``child`` ``"m"`` is the ModuleList loop's module, ``"inner"`` a
    parent class's injected module."""

    child: str
    arg: "Expr"


@dataclass(frozen=True)
class CallFunc:
    """``f<func>(e)``: a module-level function (plain, decorated, exec-built or recursive)."""

    func: int
    arg: "Expr"
    #: Recursion depth passed to a recursive function (ignored for the others).
    depth: int = 0


@dataclass(frozen=True)
class ListComp:
    """``[elem for j in range(k)]`` reduced by ``torch.stack(...).sum(0)`` or builtin ``sum``."""

    elem: "Expr"
    k: int
    reduce: str = "stack"


@dataclass(frozen=True)
class GenSum:
    """``sum(elem for j in range(k))``: builtin ``sum`` over a generator expression."""

    elem: "Expr"
    k: int


@dataclass(frozen=True)
class MapSum:
    """``sum(map(torch.<op>, [e] * k))``, or with ``lam`` ``map(lambda t: torch.<op>(t), ...)``."""

    op: str
    arg: "Expr"
    k: int
    lam: bool = False


@dataclass(frozen=True)
class SumChildren:
    """``sum(m(e) for m in self.<modulelist>)``: each module its own call, builtin ``sum`` glue."""

    modulelist: str
    arg: "Expr"


@dataclass(frozen=True)
class MultiOut:
    """A multi-output op put back together: ``torch.cat(e.split(n, dim), dim)``, ``torch.cat(
    torch.chunk(e, n, dim), dim)`` or ``torch.stack(e.unbind(dim), dim)``: one output slot per
    piece (the count follows from the 2x4 shape)."""

    op: str
    arg: "Expr"
    n: int = 2
    dim: int = 1
    #: ``method`` (``e.split(...)``) or ``call`` (``torch.split(e, ...)``).
    form: str = "method"


@dataclass(frozen=True)
class MapRows:
    """``torch.stack(list(map(torch.<op>, e)))`` (``lam``: ``lambda r: torch.<op>(r)``): ``map``
    iterates the tensor's rows (``unbind``, one slot per row), the op runs once per row."""

    op: str
    arg: "Expr"
    lam: bool = False


@dataclass(frozen=True)
class ReduceRows:
    """``functools.reduce(torch.<op>, e).expand(2, 4)`` over the rows of ``e``; ``op``
    ``lambda`` is ``lambda a, r: a + torch.<unary>(r)``."""

    op: str
    arg: "Expr"
    unary: str = "tanh"


@dataclass(frozen=True)
class ReadBuffer:
    """``self.<buffer>``: reading a registered buffer (not an op)."""

    buffer: str


Expr = Union[Var, Unary, Scalar, Binary, MaxSlots, MatParam, CallChild, CallFunc, ListComp,
             GenSum, MapSum, SumChildren, MultiOut, MapRows, ReduceRows, ReadBuffer]

# --- statements --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    """``x = <expr>``."""

    expr: Expr


@dataclass(frozen=True)
class For:
    """``for i<d> in range(k): body``; with ``shape`` the bound is read from the input's 2x4
    shape (``range(x.shape[1] - 1)`` for 3)."""

    k: int
    body: tuple["Stmt", ...]
    shape: bool = False


@dataclass(frozen=True)
class ForModules:
    """``for m in self.<modulelist>: body`` (``m`` callable in the body)."""

    modulelist: str
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class ForParams:
    """``for w in self.<paramlist>: body`` (``w`` usable as ``x @ w`` in the body)."""

    paramlist: str
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class While:
    """A ``while`` whose condition is a tensor op, body run ``n`` times (a counter tensor)."""

    n: int
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class ForGen:
    """``for x in f<func>(x, k): body``: ``f<func>`` is a generator function."""

    func: int
    k: int
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class ForRows:
    """``for r<d> in e: x = x + r<d>; body``: iterating a tensor (``unbind``, one slot per row)."""

    arg: Expr
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class With:
    """``with Cm<ctx>(x) as x: body``: the context manager's ``__enter__`` and ``__exit__`` run ops."""

    ctx: int
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class Try:
    """``try: body`` then ``except Stop: handler``: a ``raise Stop()`` in ``body`` (or in a
    ``for`` in it) leaves it for ``handler``, whose ops run in its place."""

    body: tuple["Stmt", ...]
    handler: tuple["Stmt", ...]


@dataclass(frozen=True)
class Unpack:
    """``v, ix = torch.<op>(e, dim=1)`` then ``x`` from both outputs: ``max`` (``x = x *
    v.unsqueeze(1) + ix.unsqueeze(1)``) or ``sort`` (``x = v + ix``)."""

    op: str
    arg: Expr


@dataclass(frozen=True)
class BreakIf:
    """``if i<d> == at: <how>`` in a ``For`` body: ``break``, ``continue`` or ``raise Stop()``
    (in a ``With`` body, whose ``__exit__`` suppresses it, or a ``Try`` body, whose handler
    takes it). ``at`` ``None``: unconditional (a ``raise`` only)."""

    at: Optional[int]
    how: str = "break"


@dataclass(frozen=True)
class IfIndex:
    """``if i<d> % mod == rem: then else: orelse`` directly in a ``For`` body."""

    mod: int
    rem: int
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()


@dataclass(frozen=True)
class IfShape:
    """``if x.shape[dim] == value: then else: orelse`` (``x`` is 2x4)."""

    dim: int
    value: int
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()


@dataclass(frozen=True)
class BufInplace:
    """``self.<buffer>.add_(e)`` or ``self.<buffer>.mul_(0.5)`` (``arg`` ``None``)."""

    buffer: str
    op: str
    arg: Optional[Expr] = None


@dataclass(frozen=True)
class BufAssign:
    """``self.<buffer> = e``: reassigning a registered buffer."""

    buffer: str
    expr: Expr


Stmt = Union[Assign, For, ForModules, ForParams, While, ForGen, ForRows, With, Try, Unpack, BreakIf, IfIndex,
             IfShape, BufInplace, BufAssign]

# --- definitions -------------------------------------------------------------------------------

#: ``FuncDef.kind`` values.
PLAIN, DECORATED, EXEC, RECURSIVE, GENERATOR = "plain", "decorated", "exec", "recursive", "generator"


@dataclass(frozen=True)
class FuncDef:
    """Module-level function ``f<index>(x)``; function ``i`` calls only functions ``j > i``.

    ``decorated``: wrapped by ``twice`` (its wrapper calls it on two lines); ``exec``: built by
    ``exec`` of a string; ``recursive``: ``f(x, depth)`` runs its body, then recurses to depth 0;
    ``generator``: ``f(x, n)`` runs ``for i in range(n): body; yield x`` (only a ``ForGen``
    calls it).
    """

    kind: str
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class HookDef:
    """``hook<index>``: a forward hook ``return <expr of x>`` (``x`` is the output), or a
    pre-hook (``kind`` ``pre``) returning ``(<expr of x>,)`` for the first argument."""

    kind: str
    expr: Expr


@dataclass(frozen=True)
class CtxDef:
    """Context manager class ``Cm<index>``: ``Cm(x)`` keeps ``x``; ``__enter__`` returns
    ``enter`` applied to it; ``__exit__`` runs ``exit`` on it and suppresses ``Stop``."""

    enter: tuple[Stmt, ...]
    exit: tuple[Stmt, ...]


#: ``Child.kind`` values.
LINEAR, RELU, BLOCK, MODULELIST, SHARED = "linear", "relu", "block", "modulelist", "shared"


@dataclass(frozen=True)
class Child:
    """A submodule attribute ``self.<name>``.

    ``block``: an instance of class ``Block<cls>``; ``modulelist``: ``nn.ModuleList(items)``;
    ``shared``: one instance of ``items[0]`` injected into two ``Block<cls>`` parents,
    ``self.<name>a`` and ``self.<name>b``. ``hooks`` are registered on it in ``__init__``
    (on a ModuleList: on every item).
    """

    name: str
    kind: str
    cls: Optional[int] = None
    items: tuple["Child", ...] = ()
    hooks: tuple[int, ...] = ()


@dataclass(frozen=True)
class ParamDecl:
    """A raw weight ``self.<name>`` (``n`` 0) or a ``ParameterList`` of ``n`` 4x4 weights."""

    name: str
    n: int = 0


@dataclass(frozen=True)
class ClassDef:
    """An ``nn.Module`` class: its submodules, weights, buffers and ``forward`` body.

    ``Block<i>`` may hold only ``Block<j>`` with ``j > i``; with ``takes_inner`` its
    constructor takes the injected module ``self.inner``.
    """

    body: tuple[Stmt, ...]
    children: tuple[Child, ...] = ()
    params: tuple[ParamDecl, ...] = ()
    buffers: tuple[str, ...] = ()
    takes_inner: bool = False


@dataclass(frozen=True)
class ModelSpec:
    """A whole generated model: ``Model`` (the root) and what it uses."""

    root: ClassDef
    classes: tuple[ClassDef, ...] = ()
    functions: tuple[FuncDef, ...] = ()
    hooks: tuple[HookDef, ...] = ()
    #: 1 (``forward(self, x)``) or 2 (``forward(self, x, y)``).
    inputs: int = 1
    contexts: tuple[CtxDef, ...] = ()


def child_attrs(child: Child) -> tuple[str, ...]:
    """The ``self.`` attributes a child occupies (two for a shared pair)."""
    return (child.name + "a", child.name + "b") if child.kind == SHARED else (child.name,)


def stmt_bodies(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement bodies of a statement (empty for simple statements)."""
    if isinstance(stmt, (For, ForModules, ForParams, While, ForGen, ForRows, With)):
        return (stmt.body,)
    if isinstance(stmt, (IfIndex, IfShape)):
        return (stmt.then, stmt.orelse)
    if isinstance(stmt, Try):
        return (stmt.body, stmt.handler)
    return ()
