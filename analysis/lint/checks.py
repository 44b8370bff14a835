"""The checks behind the lint rules: each reads a :class:`SourceModel` and yields findings.

A check yields ``(node, message)`` pairs; :mod:`torchlens.analysis.lint.rules` attaches the code and
the place. Every message names the places and says what grouping the user gets.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Iterator, Optional

from .model import Function, ModelClass, SourceModel, dotted, self_attribute, walk

Hit = tuple[ast.AST, str]
Site = tuple[Function, ast.Call]


def functions(model: SourceModel) -> Iterator[Function]:
    """Every function a forward pass may run: module classes' methods and top-level functions."""
    for cls in model.model_classes():
        yield from (f for name, f in cls.methods.items() if name != "__init__")
    yield from model.functions.values()


def _lines(nodes: list[ast.AST]) -> str:
    return ", ".join(str(n.lineno) for n in nodes)  # type: ignore[attr-defined]


# -- TL101: one op written out several times in sequence ---------------------------------------


def repeated_statements(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for block in _blocks(function.node):
            start = 0
            shape = _shape(model, block[0])
            for end in range(1, len(block) + 1):
                if (end < len(block) and type(block[end]) is type(block[end - 1]) and shape is not None
                        and _feeds(block[end - 1], block[end]) and _shape(model, block[end]) == shape):
                    continue
                run = block[start:end]
                if len(run) > 1:
                    expr = getattr(run[0], "value", run[0])
                    n = len(run)
                    yield expr, (f"`{model.code(expr)}` is written out {n} times (lines {_lines(run)}): {n} layers, "
                                 f"not one layer with {n} passes; a loop would make them one layer")
                start = end
                shape = _shape(model, block[end]) if end < len(block) else None


def _feeds(first: ast.stmt, second: ast.stmt) -> bool:
    """Whether ``second`` reads a name ``first`` binds: the chain a loop would express."""
    targets = first.targets if isinstance(first, ast.Assign) else [getattr(first, "target", None)]
    written = {n.id for t in targets if t is not None for n in ast.walk(t)
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if not written:
        return False
    value = getattr(second, "value", None)
    reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
    if isinstance(second, ast.AugAssign) and isinstance(second.target, ast.Name):
        reads.add(second.target.id)
    return bool(written & reads)


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
_COMPUTES = (ast.BinOp, ast.UnaryOp, ast.Subscript)


def _shape(model: SourceModel, statement: ast.stmt) -> Optional[tuple]:
    """The statement with local names blanked, if it computes with torch; else ``None``.

    Consecutive statements of one shape where each feeds the next (``x = f(x)`` twice) are
    what a loop would write once. Built by one iterative walk: any depth of expression.
    """
    if not isinstance(statement, _SIMPLE):
        return None
    keep = model.aliases
    shape: list[object] = []
    computes = False
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
        if isinstance(node, ast.Name):
            shape.append(node.id if node.id == "self" or node.id in keep else "_")
        elif isinstance(node, ast.Constant):
            shape.append(repr(node.value))
        else:
            shape.append((type(node).__name__, len(children), getattr(node, "attr", None), getattr(node, "arg", None)))
        computes = computes or isinstance(node, _COMPUTES) or model.is_torch_call(node)
        todo.extend(reversed(children))
    return tuple(shape) if computes else None


# -- TL201: a tensor op in a while condition ---------------------------------------------------


def while_condition_ops(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for node in walk(function.node):
            if isinstance(node, ast.While):
                ops = model.torch_ops(node.test)
                if ops:
                    yield ops[0], ("tensor op in a `while` condition: the condition runs once more than the "
                                   "body, so its ops get N+1 passes")


# -- TL202: builtins that call torch from C code ---------------------------------------------


def builtin_c_calls(model: SourceModel) -> Iterator[Hit]:
    for function in functions(model):
        for node in walk(function.node):
            if not isinstance(node, ast.Call):
                continue
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
    for arg in call.args:
        if (model.qualified(arg) or "").startswith("torch."):
            return True
        for node in ast.walk(arg.body if isinstance(arg, ast.Lambda) else arg):
            if model.is_torch_call(node) or model.submodule_call(node, cls) or _calls_self_collection(node, cls):
                return True
    return False


def _calls_self_collection(node: ast.AST, cls: Optional[ModelClass]) -> bool:
    """``h(x) for h in self.heads``: a comprehension over a submodule collection."""
    return (cls is not None and isinstance(node, (ast.GeneratorExp, ast.ListComp))
            and any(self_attribute(g.iter) in cls.submodules for g in node.generators))


# -- TL102 / TL103: helpers and recursion --------------------------------------------------------


def _callee(node: ast.AST, function: Function, model: SourceModel) -> Optional[Function]:
    """The function of this file that a call node calls (``helper(x)``, ``self.method(x)``)."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return model.functions.get(node.func.id)
    attr = self_attribute(node.func)
    if attr is not None and function.owner is not None:
        return function.owner.methods.get(attr)
    return None


def _calls(model: SourceModel) -> dict[Function, list[Site]]:
    """Callee -> every ``(caller, call node)`` in the file."""
    calls: dict[Function, list[Site]] = defaultdict(list)
    for function in functions(model):
        for node in walk(function.node):
            callee = _callee(node, function, model)
            if callee is not None:
                calls[callee].append((function, node))  # type: ignore[arg-type]
    return calls


def _per_model(sites: list[Site]) -> Iterator[list[Site]]:
    """Call sites grouped by model: a method's class, or a top-level function on its own."""
    groups: dict[object, list[Site]] = defaultdict(list)
    for caller, node in sites:
        groups[caller.owner or caller].append((caller, node))
    yield from groups.values()


def helpers_from_several_lines(model: SourceModel) -> Iterator[Hit]:
    for callee, all_sites in _calls(model).items():
        for sites in _per_model([(c, n) for c, n in all_sites if c is not callee]):
            firsts = list({n.lineno: n for _, n in reversed(sites)}.values())[::-1]
            if len(firsts) > 1 and callee.name != "forward":
                yield firsts[1], (f"helper `{callee.name}` is called from {len(firsts)} lines ({_lines(firsts)}): "
                                  f"its ops are one layer per calling line, not one layer with {len(firsts)} passes")


def recursion_entries(model: SourceModel) -> Iterator[Hit]:
    calls = _calls(model)
    callees: dict[Function, set[Function]] = defaultdict(set)
    for callee, sites in calls.items():
        for caller, _ in sites:
            callees[caller].add(callee)
    for callee, sites in calls.items():
        cycle = {f for f in _reach(callee, callees) if callee in _reach(f, callees)}
        if not cycle or callee is not min(cycle, key=lambda f: f.node.lineno):
            continue  # not recursive, or another member of the cycle reports it
        for group in _per_model([(c, n) for c, n in sites if c not in cycle]):
            entries = [node for _, node in group]
            if len(entries) > 1:
                yield entries[1], (f"recursion `{callee.name}` is entered from {len(entries)} places (lines "
                                   f"{_lines(entries)}): each entry gives its own layers; only the depths of one "
                                   "entry are passes of one layer")


def _reach(start: Function, edges: dict[Function, set[Function]]) -> set[Function]:
    """Every function reachable from ``start`` by one or more calls."""
    seen: set[Function] = set()
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# -- TL104 / TL105: shared weights and shared modules ---------------------------------------------


def shared_weights(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        forward = cls.methods.get("forward")
        uses: dict[str, list[ast.AST]] = defaultdict(list)
        for node in walk(forward.node) if forward else ():
            if self_attribute(node) in cls.params:
                uses[self_attribute(node)].append(node)  # type: ignore[index]
        for attr, nodes in uses.items():
            if len(nodes) > 1:
                yield nodes[1], (f"weight `self.{attr}` is used at {len(nodes)} places (lines {_lines(nodes)}): "
                                 "separate layers, even though they share the weight")
        init = cls.methods.get("__init__")
        for node in walk(init.node) if init else ():
            if isinstance(node, ast.Assign) and _ties_weights(node):
                yield node, (f"tied weights `{model.code(node.targets[0])} = {model.code(node.value)}`: "
                             "the modules that use them keep separate layers")


def _ties_weights(node: ast.Assign) -> bool:
    target, value = node.targets[0], node.value
    return (isinstance(target, ast.Attribute) and isinstance(value, ast.Attribute)
            and target.attr in ("weight", "bias") and value.attr in ("weight", "bias"))


def shared_modules(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        init = cls.methods.get("__init__")
        holders: dict[str, list[ast.AST]] = defaultdict(list)
        local_modules: set[str] = set()
        for node in walk(init.node) if init else ():
            if isinstance(node, ast.Assign) and self_attribute(node.value) in cls.submodules:
                holders[f"self.{self_attribute(node.value)}"].extend([node.value, node])
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                holders[node.value.id].append(node)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and model.constructs_module(node.value):
                local_modules.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if isinstance(node, ast.Call) and model.constructs_module(node):
                for arg in node.args:
                    for value in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                        if isinstance(value, ast.Name):
                            holders[value.id].append(node)
        for name, places in holders.items():
            if len(places) > 1 and (name.startswith("self.") or name in local_modules):
                yield places[1], (f"module `{name}` is reachable under {len(places)} parents: one instance is one "
                                  "scope, so its ops are one layer with passes from every parent")


# -- TL301 / TL302: buffers and plain tensor state ---------------------------------------------


def buffer_data_assignment(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        for function in cls.methods.values():
            for node in walk(function.node):
                for target in node.targets if isinstance(node, ast.Assign) else ():
                    name = self_attribute(target.value) if isinstance(target, ast.Attribute) else None
                    if name in cls.buffers and target.attr == "data":  # type: ignore[union-attr]
                        yield target, (f"`self.{name}.data = ...` replaces registered buffer `{name}` in a way the "
                                       f"capture cannot record, so tracing raises; write `self.{name} = tensor` "
                                       f"or `self.{name}.copy_(tensor)`")


def plain_tensor_state(model: SourceModel) -> Iterator[Hit]:
    for cls in model.model_classes():
        known = cls.buffers | cls.params | cls.submodules
        for name, function in cls.methods.items():
            if name == "__init__":
                continue
            for node in walk(function.node):
                if not isinstance(node, (ast.Assign, ast.AugAssign)):
                    continue
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    attr = self_attribute(target)
                    if attr is not None and attr not in known and model.torch_ops(node.value):
                        yield target, (f"tensor state kept in plain attribute `self.{attr}` and updated in "
                                       f"`{name}`: torchlens does not track it as model state; register it with "
                                       f"`self.register_buffer(\"{attr}\", ...)`")


# -- TL401 / TL402: threads and hooks ---------------------------------------------------------


_THREADS = {"DataParallel": "`nn.DataParallel` runs replicas on threads: tl.trace refuses it; trace `model.module`",
            "Thread": "a thread started in model code: its torch calls are refused during a capture",
            "ThreadPoolExecutor": "a thread pool in model code: torch calls on its threads are not captured"}


def threads(model: SourceModel) -> Iterator[Hit]:
    for node in ast.walk(model.tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func).rpartition(".")[2]
            if name in _THREADS:
                yield node, f"capture across threads is not supported: {_THREADS[name]}"


def hook_ops(model: SourceModel) -> Iterator[Hit]:
    for node in ast.walk(model.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("register_forward_hook", "register_forward_pre_hook")):
            yield node, ("ops in a forward hook belong to the caller's scope, with the hooked module as part of "
                         "the place: the same hook on two modules gives two layers")
