"""The checks behind the lint rules: each reads a :class:`SourceModel` and yields findings.

A check yields ``(node, message)`` pairs; :mod:`torchlens.analysis.lint.rules` attaches the code and
the place. Every message names the places and says what grouping the user gets.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Iterator, Optional, Sequence

from ..graphs import cycles
from .model import Function, ModelClass, SourceModel, child_nodes, dotted, self_attribute, walk

Hit = tuple[ast.AST, str]
Site = tuple[Function, ast.Call]


def functions(model: SourceModel) -> Iterator[Function]:
    """Every function a forward pass may run: module classes' methods and top-level functions."""
    return model.forward_functions()


def _lines(nodes: Sequence[ast.AST]) -> str:
    return ", ".join(str(n.lineno) for n in nodes)  # type: ignore[attr-defined]


# -- TL101: one op written out several times in sequence ---------------------------------------


def repeated_statements(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for block in _blocks(function.node):
            # Facts only for statements next to one of their own type: the only ones a run can hold.
            facts = [_Statement(model, s) if isinstance(s, _SIMPLE) and (
                         (k > 0 and type(block[k - 1]) is type(s)) or (k + 1 < len(block) and type(block[k + 1]) is type(s)))
                     else None for k, s in enumerate(block)]
            start = 0
            while start < len(block):
                end = start + 1
                first = facts[start]
                while first is not None and first.shape is not None and end < len(block):
                    previous, current = facts[end - 1], facts[end]
                    if previous is None or current is None or current.shape != first.shape or not previous.feeds(current):
                        break
                    end += 1
                if end - start > 1:
                    run = block[start:end]
                    expr = getattr(run[0], "value", run[0])
                    n = len(run)
                    yield expr, (f"`{model.code(expr)}` is written out {n} times (lines {_lines(run)}): {n} layers, "
                                 f"not one layer with {n} passes; a loop would make them one layer")
                start = end


class _Statement:
    """What TL101 reads of a simple statement, from one iterative walk (any depth of expression).

    ``shape``: the statement with local names blanked, if it computes with torch (a torch call,
    ``@``), else ``None``; consecutive statements of one shape where each ``feeds`` the next
    (``x = f(x)`` twice) are what a loop would write once.
    """

    __slots__ = ("shape", "reads", "binds")

    def __init__(self, model: SourceModel, statement: ast.stmt) -> None:
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, ast.AugAssign) else [])
        self.binds = {t.id for t in targets if isinstance(t, ast.Name)}
        self.binds.update(n.id for t in targets if isinstance(t, (ast.Tuple, ast.List))
                          for n in t.elts if isinstance(n, ast.Name))
        self.reads: set[str] = set()
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            self.reads.add(statement.target.id)
        keep = model.aliases
        shape: list[object] = []
        computes = False
        todo: list[ast.AST] = [statement]
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind is ast.Name:
                name = node.id  # type: ignore[attr-defined]
                shape.append(name if name == "self" or name in keep else "_")
                if isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                    self.reads.add(name)
                continue
            if kind is ast.Constant:
                shape.append(repr(node.value))  # type: ignore[attr-defined]
                continue
            kids = child_nodes(node)
            shape += (kind, len(kids))
            if kind is ast.Attribute:
                shape.append(node.attr)  # type: ignore[attr-defined]
            elif kind is ast.keyword:
                shape.append(node.arg)  # type: ignore[attr-defined]
            elif kind is ast.Compare:
                shape += map(type, node.ops)  # type: ignore[attr-defined]
            elif kind is ast.Call:
                computes = computes or model.is_torch_call(node)
            op = getattr(node, "op", None)
            if op is not None:
                shape.append(type(op))
            computes = computes or (kind is ast.BinOp and type(op) is ast.MatMult)
            kids.reverse()
            todo += kids
        self.shape = tuple(shape) if computes else None

    def feeds(self, later: "_Statement") -> bool:
        """Whether ``later`` rebinds a name this statement binds, reading it: ``x = f(x)`` again,
        the recurrence a loop would express."""
        return not (self.binds & later.binds).isdisjoint(later.reads)


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list in a function: its body and the bodies of its compound statements."""
    todo = [node]
    while todo:
        current = todo.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(current, name, None)
            if isinstance(block, list) and block:
                if isinstance(block[0], ast.stmt):
                    yield block
                todo.extend(s for s in block if not isinstance(s, _NESTED_DEFS))


_NESTED_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)
# -- TL201: a tensor op in a while condition ---------------------------------------------------


def while_condition_ops(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for node in function.of_type(ast.While):
            ops = model.torch_ops(node.test)
            if ops:
                yield ops[0], ("tensor op in a `while` condition: the condition runs once more than the "
                               "body, so its ops get N+1 passes")


# -- TL202: builtins that call torch from C code ---------------------------------------------


def builtin_c_calls(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for node in function.of_type(ast.Call):
            name = dotted(node.func)
            if name not in ("sum", "map", "reduce", "functools.reduce") or not _calls_torch(model, node, function.owner):
                continue
            if name == "sum":
                yield node, ("builtin `sum` adds the tensors from C code: its additions are one layer "
                             "(`radd` once, then `add` with N-1 passes), not told apart by place")
            else:
                yield node, (f"`{name}` calls from C code: the calls it makes are keyed at the instruction "
                             "that consumes it, one layer with a pass per element, not told apart by place")


def _calls_torch(model: SourceModel, call: ast.Call, cls: Optional[ModelClass]) -> bool:
    """Whether C code calls torch here: ``sum`` adds the values of its argument; ``map`` and
    ``reduce`` call their first argument (the iterable is evaluated before, in Python)."""
    for arg in call.args if dotted(call.func) == "sum" else call.args[:1]:
        if (model.qualified(arg) or "").startswith("torch."):
            return True
        for node in walk(arg.body if isinstance(arg, ast.Lambda) else arg, nested=True):
            if model.is_torch_call(node) or model.submodule_call(node, cls) or _calls_self_collection(node, cls):
                return True
    return False


def _calls_self_collection(node: ast.AST, cls: Optional[ModelClass]) -> bool:
    """``h(x) for h in self.heads``: a comprehension over a submodule collection."""
    return (cls is not None and isinstance(node, (ast.GeneratorExp, ast.ListComp))
            and any(self_attribute(g.iter) in cls.submodules for g in node.generators))


# -- TL102 / TL103: helpers and recursion --------------------------------------------------------


def _calls(model: SourceModel) -> dict[Function, list[Site]]:
    """Callee -> every ``(caller, call node)`` in the file."""
    return model.calls


def _per_model(sites: list[Site]) -> Iterator[list[Site]]:
    """Call sites grouped by model: a method's class, or a top-level function on its own."""
    groups: dict[object, list[Site]] = defaultdict(list)
    for caller, node in sites:
        groups[caller.owner or caller].append((caller, node))
    yield from groups.values()


def helpers_from_several_lines(model: SourceModel) -> Iterator[Hit]:
    for callee, all_sites in _calls(model).items():
        if not _has_ops(model, callee):
            continue  # a helper without torch ops (a shape computation, a flag) makes no layer
        for sites in _per_model([(c, n) for c, n in all_sites if c is not callee]):
            firsts = list({n.lineno: n for _, n in reversed(sites)}.values())[::-1]
            if len(firsts) > 1 and callee.name != "forward":
                yield firsts[1], (f"helper `{callee.name}` is called from {len(firsts)} lines ({_lines(firsts)}): "
                                  f"its ops are one layer per calling line, not one layer with {len(firsts)} passes")


def _has_ops(model: SourceModel, function: Function) -> bool:
    """Whether the function, or a function of this file it calls, makes a torch op or calls a submodule."""
    todo, seen = [function], {function}
    while todo:
        current = todo.pop()
        if any(model.is_torch_call(n) or model.submodule_call(n, current.owner) for n in current.of_type(ast.Call)):
            return True
        for callee in model.callees.get(current, ()):
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return False


def recursion_entries(model: SourceModel) -> Iterator[Hit]:
    calls = _calls(model)
    for cycle in cycles(list(calls), model.callees):
        head = min(cycle, key=lambda f: f.node.lineno)  # one member of the cycle reports it
        for group in _per_model([(c, n) for c, n in calls[head] if c not in cycle]):
            entries = [node for _, node in group]
            if len(entries) > 1:
                yield entries[1], (f"recursion `{head.name}` is entered from {len(entries)} places (lines "
                                   f"{_lines(entries)}): each entry gives its own layers; only the depths of one "
                                   "entry are passes of one layer")


# -- TL104 / TL105: shared weights and shared modules ---------------------------------------------


def shared_weights(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        forward = cls.methods.get("forward")
        uses: dict[str, list[tuple[ast.AST, Arms]]] = defaultdict(list)
        looks = _looks(forward) if forward else set()
        params = cls.registered("params")
        for node, arms in _expressions(forward.node) if forward else ():
            attr = self_attribute(node)
            if attr in params and id(node) not in looks:
                uses[attr].append((node, arms))
        for attr, places in uses.items():
            nodes = _together(sorted(places, key=lambda p: (p[0].lineno, p[0].col_offset)))  # type: ignore[attr-defined]
            if len(nodes) > 1:
                yield nodes[1], (f"weight `self.{attr}` is used at {len(nodes)} places (lines {_lines(nodes)}): "
                                 "separate layers, even though they share the weight")
        init = cls.methods.get("__init__")
        for assign in init.of_type(ast.Assign) if init else ():
            if _ties_weights(assign):
                yield assign, (f"tied weights `{model.code(assign.targets[0])} = {model.code(assign.value)}`: "
                               "the modules that use them keep separate layers")


#: Tensor attributes that read metadata, not values: no op.
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout"})


def _looks(function: Function) -> set[int]:
    """Ids of the nodes in ``function`` that look at a value without computing with it: the
    operands of ``is``/``is not`` comparisons and the owners of ``.shape``-like reads."""
    looks = {id(node.value) for node in function.of_type(ast.Attribute) if node.attr in _METADATA}
    for compare in function.of_type(ast.Compare):
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in compare.ops):
            looks.update(id(operand) for operand in (compare.left, *compare.comparators))
    return looks


def _ties_weights(node: ast.Assign) -> bool:
    target, value = node.targets[0], node.value
    return (isinstance(target, ast.Attribute) and isinstance(value, ast.Attribute)
            and target.attr in ("weight", "bias") and value.attr in ("weight", "bias"))


#: Where a statement sits among exclusive branches: ``(id of the if or match, arm)`` from the outside in.
Arms = tuple[tuple[int, int], ...]


def shared_modules(model: SourceModel) -> Iterator[Hit]:
    """One module instance held by two parents on one path through ``__init__``.

    Instances are followed by binding, not by name: ``m = Block(); m = nn.Sequential(m)`` binds
    two instances, each held once, and so does ``self.m = Block(); self.m = Wrap(self.m)`` (the
    attribute lets go of the first). Holders in exclusive arms (``if``/``else``, ``match`` cases)
    never run together and are not two parents.
    """
    for cls in model.model_classes():
        init = cls.methods.get("__init__")
        if init is None:
            continue
        binding: dict[str, int] = {}  # name (``x`` or ``self.x``) -> the instance it holds now
        names: dict[int, str] = {}
        holders: dict[int, list[tuple[ast.AST, Arms]]] = defaultdict(list)
        holding: dict[str, tuple[int, tuple[ast.AST, Arms]]] = {}  # ``self.x`` -> its instance, its holding

        def hold(instance: int, name: str, statement: ast.AST, arms: Arms) -> None:
            holders[instance].append(entry := (statement, arms))
            holding[name] = instance, entry

        for statement, arms in _statements(init.node):
            targets = (statement.targets if isinstance(statement, ast.Assign)
                       else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            value = getattr(statement, "value", None) if targets else None
            if isinstance(statement, (ast.For, ast.AsyncFor)):  # the loop variable is rebound
                targets, value = [statement.target], None
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Return)):
                for call in walk(statement):
                    if isinstance(call, ast.Call) and model.constructs_module(call):
                        for arg in [*call.args, *(k.value for k in call.keywords)]:
                            for held in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                                instance = binding.get(_name(held))
                                if instance is not None:
                                    holders[instance].append((call, arms))
            for target, value in _pairs(targets, value):
                name = _name(target)
                if not name:
                    continue
                if name in holding:  # the attribute lets go of what it held
                    was, entry = holding.pop(name)
                    holders[was] = [e for e in holders[was] if e is not entry]
                instance = binding.get(_name(value)) if value is not None else None
                if instance is not None and name.startswith("self."):
                    hold(instance, name, statement, arms)  # one more attribute holds it
                    binding[name] = instance
                elif isinstance(value, ast.Call) and model.constructs_module(value):
                    binding[name] = instance = len(names)
                    names[instance] = name
                    if name.startswith("self."):
                        hold(instance, name, statement, arms)
                else:
                    binding.pop(name, None)  # rebound to something else
        for instance, places in holders.items():
            together = _together(places)
            if len(together) > 1:
                yield together[1], (f"module `{names[instance]}` is reachable under {len(together)} parents (lines "
                                    f"{_lines(together)}): one instance is one scope, so its ops are one layer with "
                                    "passes from every parent")


def _pairs(targets: Sequence[ast.expr], value: Optional[ast.expr]) -> Iterator[tuple[ast.expr, Optional[ast.expr]]]:
    """``(target, value)`` of an assignment, element by element for ``a, b = x, y``."""
    for target in targets:
        if (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts)):
            yield from zip(target.elts, value.elts)
        elif isinstance(target, (ast.Tuple, ast.List)):
            yield from ((element, None) for element in target.elts)  # unpacked from something: rebound
        else:
            yield target, value


def _name(node: Optional[ast.AST]) -> str:
    """``x`` for a name, ``self.x`` for an attribute of self, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    attr = self_attribute(node) if node is not None else None
    return f"self.{attr}" if attr else ""


def _statements(function: ast.AST) -> Iterator[tuple[ast.stmt, Arms]]:
    """A function's statements in source order, each with the exclusive arms it sits in."""
    todo: list[tuple[ast.stmt, Arms]] = [(s, ()) for s in reversed(getattr(function, "body", []))]
    while todo:
        statement, arms = todo.pop()
        yield statement, arms
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If):
            inner = [(s, (*arms, (id(statement), 0))) for s in statement.body]
            inner += [(s, (*arms, (id(statement), 1))) for s in statement.orelse]
        elif isinstance(statement, ast.Match):
            inner = [(s, (*arms, (id(statement), k))) for k, case in enumerate(statement.cases) for s in case.body]
        else:
            inner = [(s, arms) for name in ("body", "orelse", "finalbody") for s in getattr(statement, name, [])]
            inner += [(s, arms) for handler in getattr(statement, "handlers", []) for s in handler.body]
        todo.extend(reversed(inner))


def _expressions(function: ast.AST) -> Iterator[tuple[ast.AST, Arms]]:
    """Every expression node of a function with the exclusive arms it sits in: those of
    ``if``/``else`` and ``match`` statements and of ``a if c else b`` expressions."""
    for statement, arms in _statements(function):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if hasattr(statement, "body"):  # a compound statement: only its header; its body comes as statements
            roots = [getattr(statement, f) for f in ("test", "iter", "target", "subject") if hasattr(statement, f)]
            roots += [item.context_expr for item in getattr(statement, "items", [])]
        else:
            roots = [statement]
        todo = [(root, arms) for root in roots]
        while todo:
            node, here = todo.pop()
            yield node, here
            if isinstance(node, ast.IfExp):
                todo += [(node.test, here), (node.body, (*here, (id(node), 0))), (node.orelse, (*here, (id(node), 1)))]
            else:
                todo += [(child, here) for child in child_nodes(node) if not isinstance(child, _NESTED_DEFS + (ast.Lambda,))]


def _together(places: list[tuple[ast.AST, Arms]]) -> list[ast.AST]:
    """The most places, in order, that run together on one path (none in another arm of a
    branch another one is in): grown from each place in turn, the largest kept."""
    best: list[int] = []
    for seed in range(len(places)):
        chosen = [seed]
        for k, (_, arms) in enumerate(places):
            if k != seed and all(not _exclusive(arms, places[c][1]) for c in chosen):
                chosen.append(k)
        if len(chosen) > len(best):
            best = chosen
    return [places[k][0] for k in sorted(best)]


def _exclusive(a: Arms, b: Arms) -> bool:
    for (branch_a, arm_a), (branch_b, arm_b) in zip(a, b):
        if branch_a != branch_b:
            return False
        if arm_a != arm_b:
            return True
    return False


# -- TL301 / TL302: buffers and plain tensor state ---------------------------------------------


def buffer_data_assignment(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        buffers = cls.registered("buffers")
        for function in cls.methods.values():
            for node in function.of_type(ast.Assign):
                for target in node.targets:
                    if not isinstance(target, ast.Attribute) or target.attr != "data":
                        continue
                    name = self_attribute(target.value)
                    if name in buffers:
                        yield target, (f"`self.{name}.data = ...` replaces registered buffer `{name}` in a way the "
                                       f"capture cannot record, so tracing raises; write `self.{name} = tensor` "
                                       f"or `self.{name}.copy_(tensor)`")


def plain_tensor_state(model: SourceModel) -> Iterator[Hit]:
    """A tensor kept in an attribute that is not a buffer, parameter or submodule, and set by the
    forward pass (``forward`` or a method it calls). Methods only ``__init__`` runs, and methods
    nothing in the forward pass calls (``prune_...``, ``set_...`` helpers), are construction."""
    for cls in model.model_classes():
        forward = cls.methods.get("forward")
        if forward is None or not cls.sees_all_registrations:  # a base elsewhere may register it
            continue
        known = cls.registered()
        for function in _reached(model, forward):
            for node in function.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
                value = getattr(node, "value", None)
                kind = _tensor_kind(model, value) if value is not None else None
                if kind is None:
                    continue
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:  # type: ignore[attr-defined]
                    attr = self_attribute(target)
                    if attr is None or attr in known:
                        continue
                    where = "`forward`" if function is forward else f"`{function.name}` (called from `forward`)"
                    if kind == "tensor":
                        yield target, (f"tensor state kept in plain attribute `self.{attr}` and updated in {where}: "
                                       "torchlens does not track it as model state; register it with "
                                       f"`self.register_buffer(\"{attr}\", ...)`")
                    else:
                        yield target, (f"tensors kept in plain attribute `self.{attr}` (a {kind}) and updated in "
                                       f"{where}: torchlens does not track them as model state; register each "
                                       "with `self.register_buffer(name, tensor)`")


def _reached(model: SourceModel, forward: Function) -> list[Function]:
    """``forward`` and the methods of its class it calls, directly or through each other."""
    reached = [forward]
    seen = {forward}
    for function in reached:
        for callee in model.callees.get(function, ()):
            if callee.owner is not None and callee not in seen:
                seen.add(callee)
                reached.append(callee)
    return reached


_CONTAINERS = {ast.List: "list", ast.Tuple: "tuple", ast.ListComp: "list", ast.Dict: "dict", ast.DictComp: "dict"}


def _tensor_kind(model: SourceModel, value: ast.AST) -> Optional[str]:
    """``"tensor"`` for an expression that computes a tensor, the container's name for a list,
    tuple or dict of them, else ``None`` (a number, a string, anything not known to be a tensor)."""
    container = _CONTAINERS.get(type(value))
    if container is not None:
        elements = (value.elts if isinstance(value, (ast.List, ast.Tuple)) else value.values
                    if isinstance(value, ast.Dict) else [getattr(value, "elt", None) or value.value])  # type: ignore[attr-defined]
        return container if any(e is not None and _is_tensor(model, e) for e in elements) else None
    return "tensor" if _is_tensor(model, value) else None


def _is_tensor(model: SourceModel, expr: ast.AST) -> bool:
    """An expression whose value is a tensor: a torch op, or arithmetic, indexing or a conditional over one."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call):
            if model.is_torch_call(node):
                return True
        elif isinstance(node, ast.BinOp):
            todo += [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            todo.append(node.operand)
        elif isinstance(node, ast.IfExp):  # a tensor on every arm that is not None
            arms = [arm for arm in (node.body, node.orelse) if not (isinstance(arm, ast.Constant) and arm.value is None)]
            if arms and all(_is_tensor(model, arm) for arm in arms):
                return True
        elif isinstance(node, ast.Subscript):
            todo.append(node.value)
    return False


# -- TL401 / TL402: threads and hooks ---------------------------------------------------------


_THREADS = {"DataParallel": "`nn.DataParallel` runs replicas on threads: tl.trace refuses it; trace `model.module`",
            "Thread": "a thread started in model code: its torch calls are refused during a capture",
            "ThreadPoolExecutor": "a thread pool in model code: torch calls on its threads are not captured"}


def threads(model: SourceModel) -> Iterator[Hit]:
    if not any(model.mentions(name) for name in _THREADS):
        return
    for node in model.all_calls:
        name = dotted(node.func).rpartition(".")[2]
        if name in _THREADS:
            yield node, f"capture across threads is not supported: {_THREADS[name]}"


def hook_ops(model: SourceModel) -> Iterator[Hit]:
    if not model.mentions("register_forward"):
        return
    for node in model.all_calls:
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("register_forward_hook", "register_forward_pre_hook"):
            yield node, ("ops in a forward hook belong to the caller's scope, with the hooked module as part of "
                         "the place: the same hook on two modules gives two layers")
