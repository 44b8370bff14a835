"""The rule-table registry: every Cases-table row (``spec/grouping.txt``), how it is fuzzed.

Each :class:`Rule` names its row, the strategy that draws its construct, and a predicate
saying whether one generated model exercised it (read from the spec and from how often
the oracle saw each node run). A CI run must reach every fuzzed rule at least once
(``tests/test_fuzz.py``). Rows the vocabulary does not cover are in :data:`NOT_FUZZED`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from . import spec as S
from .oracle import Expected, pieces
from .walk import Path, owners, walk


@dataclass(frozen=True)
class Model:
    """A spec with its oracle expectation, as the predicates read it."""

    spec: S.ModelSpec
    expected: Expected

    def nodes(self, kind: type) -> Iterator[tuple[Path, Any, tuple[Any, ...]]]:
        """Every node of ``kind`` that ran at least once: ``(path, node, ancestors)``."""
        for path, node, ancestors in walk(self.spec):
            if isinstance(node, kind) and self.expected.runs.get(path, 0):
                yield path, node, ancestors

    def ran(self, path: Path) -> int:
        return self.expected.runs.get(path, 0)

    def contexts_run(self) -> Iterator[bool]:
        """For each ``with`` that ran: whether its context manager's methods run an op."""
        for _, n, _ in self.nodes(S.With):
            if n.ctx < len(self.spec.contexts):
                cm = self.spec.contexts[n.ctx]
                yield _any_op(cm.enter) and _any_op(cm.exit)


@dataclass(frozen=True)
class Rule:
    """One row of the Cases table and the fuzzing that exercises it."""

    #: Short id (used in reports).
    id: str
    #: The row's text, as in the spec.
    row: str
    #: The strategy in :mod:`torchlens.fuzz.strategies` that draws the construct.
    strategy: str
    #: Whether a model exercised the row.
    reached: Callable[[Model], bool]


# --- predicates -----------------------------------------------------------------------------------

_OPS = (S.Unary, S.Scalar, S.Binary, S.MaxSlots, S.MatParam)


def _ops_in(expr: Any) -> list[Any]:
    """Op nodes written in ``expr`` itself (not inside the functions or modules it calls)."""
    found = [expr] if isinstance(expr, _OPS) else []
    for value in vars(expr).values():
        if isinstance(value, _OPS + (S.CallChild, S.CallFunc, S.ListComp, S.GenSum, S.MapSum,
                                     S.SumChildren)):
            found += _ops_in(value)
    return found


def _in_loop(ancestors: tuple[Any, ...]) -> bool:
    return any(isinstance(a, (S.For, S.ForModules, S.ForParams, S.While)) for a in ancestors)


def _loop_line(ops: Callable[[int], bool]) -> Callable[[Model], bool]:
    return lambda m: any(_in_loop(a) and m.ran(p) >= 2 and ops(len(_ops_in(n.expr)))
                         for p, n, a in m.nodes(S.Assign))


def _calls(m: Model, kind: str) -> dict[int, list[tuple[Path, Any, tuple]]]:
    """Call nodes that ran, per function index of ``kind``."""
    out = defaultdict(list)
    for p, n, a in m.nodes(S.CallFunc):
        if n.func < len(m.spec.functions) and m.spec.functions[n.func].kind == kind:
            out[n.func].append((p, n, a))
    return out


def _helper_two_loops(m: Model) -> bool:
    for calls in _calls(m, S.PLAIN).values():
        trips = {next((x.k for x in reversed(a) if isinstance(x, S.For)), None) for _, _, a in calls}
        if len(trips - {None}) >= 2:
            return True
    return False


def _child_kinds(m: Model) -> dict[tuple[str, str], str]:
    """``(owner, attr) -> kind`` for every ``self.<attr>`` module (owner ``root`` or class index)."""
    out = {}
    owners = [("root", m.spec.root)] + [(str(k), c) for k, c in enumerate(m.spec.classes)]
    for owner, cls in owners:
        for child in cls.children:
            for attr in S.child_attrs(child):
                out[(owner, attr)] = child.kind if child.kind != S.SHARED else S.BLOCK
        if cls.takes_inner:
            out[(owner, "inner")] = "inner"
    return out


def _owner(path: Path) -> str:
    return "root" if path[0] == "root" else str(path[1]) if path[0] == "class" else path[0]


def _module_calls(m: Model, kinds: tuple[str, ...]) -> Iterator[tuple[Path, Any, tuple, str]]:
    table = _child_kinds(m)
    for p, n, a in m.nodes(S.CallChild):
        kind = "item" if n.child == "m" else table.get((_owner(p), n.child))
        if kind in kinds:
            yield p, n, a, _owner(p) + "." + n.child


def _called_from_lines(m: Model, kinds: tuple[str, ...], lines: int) -> bool:
    places = defaultdict(set)
    for p, _, _, target in _module_calls(m, kinds):
        places[target].add(p)
    return any(len(v) >= lines for v in places.values())


def _hooked_attrs(m: Model) -> set[str]:
    owners = [("root", m.spec.root)] + [(str(k), c) for k, c in enumerate(m.spec.classes)]
    return {owner + "." + attr for owner, cls in owners for c in cls.children if c.hooks
            for attr in S.child_attrs(c)}


def _modulelist_loop(m: Model, test: Callable[[S.Child], bool]) -> bool:
    lists = {}
    for owner, cls in [("root", m.spec.root)] + [(str(k), c) for k, c in enumerate(m.spec.classes)]:
        lists.update({(owner, c.name): c for c in cls.children if c.kind == S.MODULELIST})
    used = [(p, n.modulelist) for p, n, _ in m.nodes(S.ForModules)]
    used += [(p, n.modulelist) for p, n, _ in m.nodes(S.SumChildren)]
    return any(test(lists[key]) for p, name in used if (key := (_owner(p), name)) in lists)


def _same_unary_pair(n: S.Binary) -> bool:
    return isinstance(n.left, S.Unary) and n.left == n.right


def _written_twice(m: Model) -> bool:
    bodies = [body for _, body in owners(m.spec) if isinstance(body, tuple)]
    bodies += [body for _, node, _ in walk(m.spec) for body in S.stmt_bodies(node)]
    return any(a == b and isinstance(a, S.Assign) and _ops_in(a.expr)
               for body in bodies for a, b in zip(body, body[1:]))


def _param_in_and_out_of_loop(m: Model) -> bool:
    uses = defaultdict(set)
    for p, n, a in m.nodes(S.MatParam):
        if n.param != "w":
            uses[(_owner(p), n.param)].add(_in_loop(a))
    return any(v == {True, False} for v in uses.values())


def _twin_functions(m: Model) -> bool:
    called = {n.func for _, n, _ in m.nodes(S.CallFunc)}
    bodies = [(f.kind, f.body) for i, f in enumerate(m.spec.functions) if i in called and _any_op(f.body)]
    return len(bodies) != len(set(bodies))


def _any_op(body: tuple) -> bool:
    return any(isinstance(n, _OPS) for stmt in body for _, n, _ in _walk_stmt(stmt))


def _walk_stmt(stmt: Any) -> Iterator:
    return walk(S.ModelSpec(S.ClassDef((stmt,))))


def _branch(m: Model) -> bool:
    return any(m.ran(p + ("then", 0)) and m.ran(p + ("then", 0)) < m.ran(p) for p, n, _ in m.nodes(S.IfIndex))


def _break(m: Model) -> bool:
    return any(n.how == "break" and a and isinstance(a[-1], S.For) and n.at is not None and n.at < a[-1].k - 1
               for _, n, a in m.nodes(S.BreakIf))


def _recursion_entries(m: Model) -> bool:
    return any(len({p for p, n, _ in calls if n.depth}) >= 2 for calls in _calls(m, S.RECURSIVE).values())


def _shared(m: Model) -> bool:
    table = _child_kinds(m)
    called = {target for _, _, _, target in _module_calls(m, (S.BLOCK,))}
    inner_called = any(n.child == "inner" for _, n, _ in m.nodes(S.CallChild))
    pairs = [(o, a[:-1]) for (o, a), k in table.items() if a.endswith("a") and (o, a[:-1] + "b") in table]
    return inner_called and any(f"{o}.{a}a" in called and f"{o}.{a}b" in called for o, a in pairs)


def _glue(m: Model) -> bool:
    return any(isinstance(n.expr, S.Binary) and any(isinstance(x, S.CallChild) and x.child == "m"
                                                    for x in (n.expr.left, n.expr.right))
               for _, n, a in m.nodes(S.Assign) if any(isinstance(x, S.ForModules) for x in a))


def _left_with(m: Model, how: str, block: type = S.With) -> bool:
    """Whether a ``break``/``continue``/``raise`` in a ``with`` (or ``block``) body was taken."""
    return any(n.how == how and m.ran(p + ("taken",)) and any(isinstance(x, block) for x in a)
               for p, n, a in m.nodes(S.BreakIf))


def _buffer_lines(m: Model) -> bool:
    places = defaultdict(set)
    for p, n, _ in m.nodes(S.BufInplace):
        places[(_owner(p), n.buffer)].add(p)
    return any(len(v) >= 2 for v in places.values())


# --- the registry -----------------------------------------------------------------------------------

RULES: tuple[Rule, ...] = (
    Rule("loop-two-ops", "`for _ in range(3): x = torch.tanh(x) * 0.5`", "statements",
         _loop_line(lambda n: n >= 2)),
    Rule("loop-one-op", "`for _ in range(3): x = torch.tanh(x)`", "statements", _loop_line(lambda n: n == 1)),
    Rule("written-twice", "The two-op statement written out twice by hand", "bodies", _written_twice),
    Rule("nested-one-line", "`torch.tanh(torch.tanh(torch.tanh(x)))` on one line", "exprs",
         lambda m: any(isinstance(n.arg, S.Unary) and n.arg.op == n.op for _, n, _ in m.nodes(S.Unary))),
    Rule("block-once", "Two residual adds in a block called once", "children",
         lambda m: any(calls == 1 and address != "self" and any(l.module == address for l in m.expected.layers)
                       for address, calls in m.expected.calls.items())),
    Rule("block-in-loop", "That block called 3 times from a loop", "children",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for p, _, a, _ in _module_calls(m, (S.BLOCK,)))),
    Rule("modulelist-blocks", "A `ModuleList` of 3 such blocks", "children",
         lambda m: _modulelist_loop(m, lambda c: sum(i.kind == S.BLOCK for i in c.items) >= 2)),
    Rule("two-lines-one-statement", "`relu(relu(x))` written on two lines", "exprs",
         lambda m: any(n.split and _ops_in(n.arg) for _, n, _ in m.nodes(S.Unary))),
    Rule("helper-two-lines", "A helper function called from two lines", "functions",
         lambda m: any(len(c) >= 2 for c in _calls(m, S.PLAIN).values())),
    Rule("helper-loop-line", "A helper called from one loop line", "functions",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for c in _calls(m, S.PLAIN).values() for p, _, a in c)),
    Rule("helper-two-loops", "A helper called from two different loops (2 and 3 iterations)", "functions",
         _helper_two_loops),
    Rule("same-op-twice-line-loop", "Two same-type ops on one line, inside a loop", "exprs",
         lambda m: any(_same_unary_pair(n) and _in_loop(a) and m.ran(p) >= 2 for p, n, a in m.nodes(S.Binary))),
    Rule("raw-weight-two-lines", "One raw weight used on two lines, `x @ W` twice", "class_defs",
         lambda m: len({p for p, n, _ in m.nodes(S.MatParam) if n.param != "w"})
         > len({(_owner(p), n.param) for p, n, _ in m.nodes(S.MatParam) if n.param != "w"})),
    Rule("module-in-loop", "One module called 3 times from a loop", "children",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for p, _, a, _ in _module_calls(m, (S.LINEAR, S.RELU, S.BLOCK)))),
    Rule("module-several-lines", "One module instance called from 3 different lines (here: 2 or more)",
         "children", lambda m: _called_from_lines(m, (S.LINEAR, S.BLOCK), 2)),
    Rule("relu-reused-lines", "One `nn.ReLU` instance reused on 3 lines, with other ops between (2 or more)",
         "children", lambda m: _called_from_lines(m, (S.RELU,), 2)),
    Rule("shared-two-parents", "One module instance shared by two parent modules", "children", _shared),
    Rule("modulelist-identical", "A `ModuleList` of distinct but identical modules", "children",
         lambda m: _modulelist_loop(m, lambda c: len(c.items) >= 2 and len(set(c.items)) < len(c.items))),
    Rule("siamese", "Siamese encoder (one encoder on two inputs)", "class_defs",
         lambda m: m.spec.inputs == 2 and any(n.arg == S.Var("y") for _, n, _, _ in
                                              _module_calls(m, (S.LINEAR, S.RELU, S.BLOCK)))),
    Rule("list-comprehension", "`[torch.exp(c) for c in cs]`", "exprs",
         lambda m: any(n.k >= 2 and _ops_in(n.elem) for _, n, _ in m.nodes(S.ListComp))),
    Rule("sum-over-modules", "`sum(h(x) for h in self.heads)` over a `ModuleList`", "exprs",
         lambda m: _modulelist_loop(m, lambda c: len(c.items) >= 2) and any(True for _ in m.nodes(S.SumChildren))),
    Rule("map-builtin", "`map(torch.sin, xs)`", "exprs", lambda m: any(n.k >= 2 and not n.lam for _, n, _ in m.nodes(S.MapSum))),
    Rule("map-lambda", "`map(lambda t: torch.sin(t), xs)`", "exprs",
         lambda m: any(n.k >= 2 and n.lam for _, n, _ in m.nodes(S.MapSum))),
    Rule("generator-sum", "builtin `sum` over a generator expression (`radd` once, `add` N-1 times)", "exprs",
         lambda m: any(n.k >= 2 for _, n, _ in m.nodes(S.GenSum))),
    Rule("nested-loops", "Nested loops, 2 outer by 3 inner, no module", "statements",
         lambda m: any(sum(isinstance(x, S.For) for x in a) >= 2 for _, _, a in m.nodes(S.Assign))),
    Rule("break", "`break` partway through a loop", "statements", _break),
    Rule("branch", "A branch taken on some iterations", "statements", _branch),
    Rule("while-condition", "A tensor op in a `while` condition, body runs N times", "statements",
         lambda m: any(n.n >= 1 for _, n, _ in m.nodes(S.While))),
    Rule("recursion", "Recursion of depth 3 (here: 2 or more)", "functions",
         lambda m: any(n.depth >= 2 and _any_op(m.spec.functions[n.func].body)
                       for c in _calls(m, S.RECURSIVE).values() for _, n, _ in c)),
    Rule("recursion-two-entries", "Recursion entered from two places", "functions", _recursion_entries),
    Rule("buffer-inplace-loop", "A buffer updated in place in a loop", "statements",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for p, _, a in m.nodes(S.BufInplace))),
    Rule("buffer-two-lines", "A buffer updated on two different lines", "statements", _buffer_lines),
    Rule("buffer-reassigned-loop", "A buffer reassigned in a loop (issue list)", "statements",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for p, _, a in m.nodes(S.BufAssign))),
    Rule("varying-scalar", "`x * i` with a varying scalar in a loop", "exprs",
         lambda m: any(n.value is None and m.ran(p) >= 2 and any(isinstance(x, (S.For, S.ListComp, S.GenSum)) for x in a)
                       for p, n, a in m.nodes(S.Scalar))),
    Rule("parameterlist-loop", "A loop over a `ParameterList`, `x = torch.tanh(x @ w)`", "statements",
         lambda m: any(True for _ in m.nodes(S.ForParams))),
    Rule("modulelist-glue", "Root `ModuleList` loop with glue `x = x + blk(x)`", "statements", _glue),
    Rule("hook-in-loop", "A forward hook on a module called in a loop", "hooks",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 and t in _hooked_attrs(m)
                       for p, _, a, t in _module_calls(m, (S.LINEAR, S.RELU, S.BLOCK)))),
    Rule("hook-two-modules", "One hook on two distinct modules called from one loop line", "hooks",
         lambda m: _modulelist_loop(m, lambda c: bool(c.hooks) and len(c.items) >= 2)),
    Rule("first-step-then-loop", "A special first step before a loop that uses the same weight", "class_defs",
         _param_in_and_out_of_loop),
    Rule("exec-in-loop", "A function built with `exec` and called in a loop", "functions",
         lambda m: any(_in_loop(a) and m.ran(p) >= 2 for c in _calls(m, S.EXEC).values() for p, _, a in c)),
    Rule("twin-functions", "Two separately written identical functions", "functions", _twin_functions),
    Rule("decorator-twice", "A decorator whose wrapper calls `f(x)` on two lines", "functions",
         lambda m: any(_any_op(m.spec.functions[i].body) for i in _calls(m, S.DECORATED))),
    Rule("sin-plus-sin", "`torch.sin(a) + torch.sin(a)` on one line is two places (prose)", "exprs",
         lambda m: any(_same_unary_pair(n) for _, n, _ in m.nodes(S.Binary))),
    Rule("hook-two-lines", "A hooked module called from two lines: two hook-op layers (Limits)", "hooks",
         lambda m: any(len({p for p, _, _, t in _module_calls(m, (S.LINEAR, S.RELU, S.BLOCK)) if t == target}) >= 2
                       for target in _hooked_attrs(m))),
    Rule("output-slots", "Output slot: which output of a multi-output op (`max`) (rule)", "exprs",
         lambda m: any(True for _ in m.nodes(S.MaxSlots))),
    Rule("functional-frames", "torch's own Python (`F.relu`) is part of the chain (rule)", "exprs",
         lambda m: any(n.form == "functional" for _, n, _ in m.nodes(S.Unary))),
    Rule("two-traces", "Two separate traces of one model", "check_model (retrace property)", lambda m: True),
    # Python constructs of issue 12 (not rows of the Cases table: the rule applied through them)
    Rule("generator-for", "Ops in a generator function consumed by a `for` (issue 12)", "fragments.generator_loop",
         lambda m: any(m.ran(("func", n.func, "body", 0)) >= 2 for _, n, _ in m.nodes(S.ForGen))),
    Rule("with-normal", "Ops in a context manager's `__enter__`/`__exit__`, left normally (issue 12)",
         "fragments.context_exits", lambda m: any(m.contexts_run())),
    Rule("with-continue", "A `with` body left by `continue` (issue 12)", "fragments.context_exits",
         lambda m: _left_with(m, "continue")),
    Rule("with-break", "A `with` body left by `break` (issue 12)", "fragments.context_exits",
         lambda m: _left_with(m, "break")),
    Rule("with-raise", "A `with` body left by an exception `__exit__` suppresses (issue 12)",
         "fragments.context_exits", lambda m: _left_with(m, "raise")),
    Rule("try-raise", "A `try` body left by an exception its `except` arm takes (issue 12)",
         "fragments.try_except", lambda m: _left_with(m, "raise", S.Try)),
    Rule("map-rows", "`map` over the rows of a tensor (issue 12)", "fragments.rows_and_outputs",
         lambda m: any(True for _ in m.nodes(S.MapRows))),
    Rule("reduce-rows", "`functools.reduce` over the rows of a tensor (issue 12)", "fragments.rows_and_outputs",
         lambda m: any(True for _ in m.nodes(S.ReduceRows))),
    Rule("tensor-iteration", "A `for` over a tensor (issue 12)", "fragments.rows_and_outputs",
         lambda m: any(True for _ in m.nodes(S.ForRows))),
    Rule("multi-output", "`split`/`chunk`/`unbind`: one layer per output (issue 12)", "fragments.rows_and_outputs",
         lambda m: any(pieces(n) >= 2 for _, n, _ in m.nodes(S.MultiOut))),
    Rule("unpacked-slots", "`vals, idx = torch.max(x, dim=1)` unpacked (issue 12)", "fragments.rows_and_outputs",
         lambda m: any(True for _ in m.nodes(S.Unpack))),
    Rule("shape-loop", "A loop bound read from `x.shape` (issue 12)", "fragments.shape_control",
         lambda m: any(n.shape and m.ran(p + ("body", 0)) for p, n, _ in m.nodes(S.For))),
    Rule("shape-branch", "A branch on `x.shape` (issue 12)", "fragments.shape_control",
         lambda m: any(True for _ in m.nodes(S.IfShape))),
)

#: Rows outside the fuzzing vocabulary, with why; each has a hand-written test in tests/test_cases.py.
NOT_FUZZED: dict[str, str] = {
    "`nn.RNNCell` or `nn.LSTMCell` applied per time step, with `x[:, t]`": "torch's cell internals",
    "Embedding and output head with tied weights": "integer inputs; weights are never evidence",
    "`torch.func.vmap` or `torch.func.grad` in a loop": "transform boundary ops",
    "Greedy generation calling a model from one line": "integer ids and argmax",
    "`x * i` with a varying scalar, or a growing `cat`, in a loop": "the growing cat changes shapes "
    "(the varying scalar is fuzzed)",
    "`torch.utils.checkpoint` of one block from two lines": "checkpoint internals",
    "A loop over a `ParameterList`: which weights does the layer list?": "fuzzed as layer params, "
    "compared on every layer",
    "A TorchScript submodule called in a loop": "boundary op",
    "`nn.MultiheadAttention` (many `linear` calls inside torch's code)": "torch's attention internals",
}


def reached(spec: S.ModelSpec, expected: Expected) -> set[str]:
    """Ids of the rules one model exercised."""
    model = Model(spec, expected)
    return {rule.id for rule in RULES if rule.reached(model)}
