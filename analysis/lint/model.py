"""What the lint rules read: one source file's classes, functions, imports and torch ops.

Rules never run a model. They read the syntax tree through the small vocabulary here:
which names are torch (import aliases resolved), which expressions are torch operations,
which attributes of a module class are registered buffers, parameters or submodules. The
tree is the standard library's ``ast`` (what CPython compiles): linting all of ``torch.nn``
takes about a second. Every walk here is iterative, so expressions of any depth the parser
accepts are read without recursion.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Optional, TypeVar

N = TypeVar("N", bound=ast.AST)

#: Tensor methods common enough to count a call ``x.name(...)`` on a local value as an op.
TENSOR_METHODS = frozenset("""
    abs add addmm all any argmax argmin baddbmm bmm chunk clamp clamp_min clone contiguous cos
    cumsum detach div exp expand expand_as flatten float gather gelu half index_select log
    log_softmax masked_fill matmul max mean min mm mul narrow neg norm permute pow prod relu
    repeat reshape roll rsqrt sigmoid sin softmax split sqrt squeeze std sub sum t tanh to topk
    transpose tril triu type_as unbind unflatten unsqueeze var view view_as where
""".split())
#: ``torch`` namespaces that wrap other code rather than compute (checkpoint runs a module).
NOT_OP_PREFIXES = ("torch.utils.", "torch.jit.", "torch.autograd.", "torch.compile", "torch.compiler.", "torch.cuda.",
                   "torch.backends.", "torch.distributed.", "torch.nn.init.", "torch.is_", "torch.get_", "torch.set_")
#: ``torch.*`` callables that are not tensor operations.
NOT_OPS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled", "torch.is_grad_enabled",
    "torch.inference_mode", "torch.manual_seed", "torch.is_tensor", "torch.Size",
    "torch.device", "torch.get_default_dtype", "torch.is_floating_point",
})
#: Base classes that make a class a module.
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
#: What a message quotes of an expression at most (longer ones end in "...").
QUOTE_LIMIT = 60
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Nodes whose insides run in another frame: a function's walk does not enter them.
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(eq=False)
class Function:
    """One function or method: its syntax and its class (``None`` at module level)."""

    node: ast.FunctionDef
    owner: Optional["ModelClass"]

    @property
    def name(self) -> str:
        return self.node.name

    #: The body's nodes by type, each list in source order (not nested defs or lambdas); filled
    #: by the one walk of what the rules read (:meth:`SourceModel._walk`).
    nodes: dict[type, list[ast.AST]] = field(default_factory=dict)

    def of_type(self, *kinds: type[N]) -> list[N]:
        """The body's nodes of these types (not in nested defs or lambdas)."""
        if len(kinds) == 1:
            return self.nodes.get(kinds[0], [])  # type: ignore[return-value]
        return sorted((n for kind in kinds for n in self.nodes.get(kind, [])),  # type: ignore[misc]
                      key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


@dataclass(eq=False)
class ModelClass:
    """A class of the file, with what its methods register (any method: ``__init__`` and its helpers)."""

    node: ast.ClassDef
    is_module: bool
    methods: dict[str, Function] = field(default_factory=dict)
    #: Classes of this file it derives from.
    bases: list["ModelClass"] = field(default_factory=list)
    #: A module by a base in another file: what that base registers is not known here.
    base_elsewhere: bool = False
    #: ``self.register_buffer("name", ...)`` names.
    buffers: set[str] = field(default_factory=set)
    #: Attributes assigned an ``nn.Parameter`` (or ``register_parameter``-ed), and attributes assigned a module.
    params: set[str] = field(default_factory=set)
    submodules: set[str] = field(default_factory=set)

    def lineage(self) -> list["ModelClass"]:
        """This class, then its bases of this file, breadth first (the one walk up the hierarchy)."""
        order: list[ModelClass] = []
        todo = [self]
        while todo:
            cls = todo.pop(0)
            if all(cls is not seen for seen in order):
                order.append(cls)
                todo.extend(cls.bases)
        return order

    def lookup(self, name: str) -> Optional[Function]:
        """The method ``self.name`` calls: this class's, else the first of its bases' in this file."""
        return next((cls.methods[name] for cls in self.lineage() if name in cls.methods), None)

    @property
    def sees_all_registrations(self) -> bool:
        """Whether every class it derives from that registers anything is in this file."""
        return not any(cls.base_elsewhere for cls in self.lineage())

    def registered(self, kind: str = "") -> set[str]:
        """Buffers, parameters and submodules (or only ``kind``: ``"buffers"``) of the lineage."""
        kinds = (kind,) if kind else ("buffers", "params", "submodules")
        return {name for cls in self.lineage() for k in kinds for name in getattr(cls, k)}


class SourceModel:
    """A parsed file as the rules see it. Raises ``SyntaxError`` for a file that does not parse."""

    def __init__(self, path: str, text: str, module: str = "", known: frozenset[str] = frozenset()) -> None:
        """``module``: the file's dotted name; ``known``: module classes of other files of the run
        (:func:`.index.module_index`), by qualified name."""
        self.path = path
        self.text = text
        self.lines = _LINE_BREAK.split(text)  # the lines ast numbers (str.splitlines also splits at \f)
        self.tree = ast.parse(text, filename=path)
        self.module = module
        self.known = known
        self.imports = imports(self.tree, module, path.endswith("__init__.py"))
        self.aliases = {k: v for k, v in self.imports.items() if v == "torch" or v.startswith("torch.")}
        self.classes: dict[str, ModelClass] = {}
        self.functions: dict[str, Function] = {}
        self._torch_calls: dict[int, bool] = {}
        self._index()

    # -- places ----------------------------------------------------------------------------

    def where(self, node: ast.AST) -> tuple[int, int]:
        """1-based line and column (in characters; ``ast`` counts UTF-8 bytes) of a node."""
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        return line, self._chars(line, col) + 1

    def code(self, node: ast.AST) -> str:
        """The node's source text on one line, at most :data:`QUOTE_LIMIT` characters."""
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        start, end = self._chars(first, node.col_offset), self._chars(last, node.end_col_offset)  # type: ignore[attr-defined]
        if first == last:
            text = self.lines[first - 1][start:end]
        else:
            text = " ".join([self.lines[first - 1][start:], *self.lines[first:last - 1], self.lines[last - 1][:end]])
        text = " ".join(text.split())
        return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT - 3] + "..."

    def _chars(self, line: int, offset: int) -> int:
        """The character column of UTF-8 byte ``offset`` in ``line``."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return offset if text.isascii() else len(text.encode()[:offset].decode(errors="replace"))

    def mentions(self, word: str) -> bool:
        """Whether ``word`` occurs anywhere in the text: a cheap test before a rule looks for it."""
        return word in self.text

    @cached_property
    def all_calls(self) -> list[ast.Call]:
        """Every call of the file, nested ones and module-level ones too (a walk of its own)."""
        return [node for node in walk(self.tree, nested=True) if type(node) is ast.Call]

    # -- names and ops -----------------------------------------------------------------------

    def qualified(self, node: ast.AST) -> Optional[str]:
        """``torch.nn.functional.relu`` for ``F.relu`` (imports resolved), else ``None``."""
        head, dot, rest = dotted(node).partition(".")
        full = self.aliases.get(head) if head else None
        return f"{full}{dot}{rest}" if full else None

    def is_torch_call(self, node: ast.AST) -> bool:
        """A call of a torch function (``torch.tanh``, ``F.relu``) or of a tensor method."""
        if not isinstance(node, ast.Call):
            return False
        known = self._torch_calls.get(id(node))
        if known is None:
            known = self._torch_calls[id(node)] = self._is_torch_call(node)
        return known

    def _is_torch_call(self, node: ast.Call) -> bool:
        name = self.qualified(node.func)
        if name is not None:
            return (name.startswith("torch.") and name not in NOT_OPS and not name.startswith(NOT_OP_PREFIXES)
                    and not name.rpartition(".")[2][:1].isupper())
        func = node.func
        return (isinstance(func, ast.Attribute) and func.attr.rstrip("_") in TENSOR_METHODS
                and not _is_self(func.value) and not self.is_import(func.value))

    def is_import(self, node: ast.AST) -> bool:
        """A name bound by a top-level import (``math``, ``np``): its methods are not tensor methods."""
        return isinstance(node, ast.Name) and node.id in self.imports

    def torch_ops(self, node: ast.AST) -> list[ast.Call]:
        """The torch calls inside ``node`` (not inside nested functions or lambdas)."""
        return [n for n in walk(node) if self.is_torch_call(n)]  # type: ignore[misc]

    @cached_property
    def calls(self) -> dict[Function, list[tuple[Function, ast.Call]]]:
        """Callee -> every ``(caller, call node)`` from a function a forward pass may run."""
        calls: dict[Function, list[tuple[Function, ast.Call]]] = {}
        for function in self.forward_functions():
            for node in function.of_type(ast.Call):
                callee = self.callee(node, function)
                if callee is not None:
                    calls.setdefault(callee, []).append((function, node))
        return calls

    @cached_property
    def callees(self) -> dict[Function, list[Function]]:
        """Caller -> the functions of this file it calls (the other direction of :attr:`calls`)."""
        callees: dict[Function, list[Function]] = {}
        for callee, sites in self.calls.items():
            for caller, _ in sites:
                callees.setdefault(caller, []).append(callee)
        return callees

    def callee(self, node: ast.Call, caller: Function) -> Optional[Function]:
        """The function of this file that a call calls (``helper(x)``, ``self.method(x)``)."""
        if isinstance(node.func, ast.Name):
            return self.functions.get(node.func.id)
        attr = self_attribute(node.func)
        if attr is not None and caller.owner is not None:
            return caller.owner.lookup(attr)
        return None

    def forward_functions(self) -> Iterator[Function]:
        """Every function a forward pass may run: module classes' methods and top-level functions."""
        for cls in self.model_classes():
            yield from (f for name, f in cls.methods.items() if name != "__init__")
        yield from self.functions.values()

    @staticmethod
    def submodule_call(node: ast.AST, cls: Optional[ModelClass]) -> bool:
        """A call ``self.name(...)`` of a submodule registered in ``__init__``."""
        return (cls is not None and isinstance(node, ast.Call) and self_attribute(node.func) in cls.submodules)

    def constructs_module(self, call: ast.Call) -> bool:
        """A call of a ``torch.nn`` module class, of a module class of this file or of one imported
        from another file of the run."""
        qualified = self.qualified(call.func) or ""
        last = qualified.rpartition(".")[2]
        local = self.classes.get(call.func.id) if isinstance(call.func, ast.Name) else None
        head, dot, rest = dotted(call.func).partition(".")
        imported = f"{self.imports[head]}{dot}{rest}" if head in self.imports else ""
        return ((qualified.startswith("torch.nn.") and last[:1].isupper() and last != "Parameter")
                or (local is not None and local.is_module) or imported in self.known)

    # -- structure -------------------------------------------------------------------------

    def model_classes(self) -> Iterator[ModelClass]:
        """The ``nn.Module`` subclasses of the file."""
        return (cls for cls in self.classes.values() if cls.is_module)

    def _index(self) -> None:
        for statement in self.tree.body:
            if isinstance(statement, ast.ClassDef):
                self.classes[statement.name] = ModelClass(
                    statement, any(self.qualified(b) in MODULE_BASES for b in statement.bases))
            elif isinstance(statement, ast.FunctionDef):
                self.functions[statement.name] = Function(statement, None)
        for cls in self.classes.values():
            cls.bases = [self.classes[b.id] for b in cls.node.bases if isinstance(b, ast.Name) and b.id in self.classes]
        changed = True
        while changed:  # a subclass of a module class of this file is a module too
            changed = False
            for cls in self.classes.values():
                if not cls.is_module and any(b.is_module for b in cls.bases):
                    cls.is_module = changed = True
        for name, cls in self.classes.items():  # a module by a base in another file of the run
            if not cls.is_module and f"{self.module}.{name}" in self.known:
                cls.is_module = cls.base_elsewhere = True
        for cls in self.classes.values():
            cls.methods = {s.name: Function(s, cls) for s in cls.node.body if isinstance(s, ast.FunctionDef)}
        self._walk()
        for cls in self.model_classes():
            for method in cls.methods.values():
                self._registrations(cls, method)

    def _walk(self) -> None:
        """The one walk of what the rules read: the functions a forward pass may run (module
        classes' methods, those of their bases in this file, top-level functions), each node filed
        under its function by type. Other classes and module-level code are not walked; nested
        defs and lambdas are not entered (they run in frames of their own)."""
        classes = dict.fromkeys(base for cls in self.model_classes() for base in cls.lineage())
        for function in [*(f for cls in classes for f in cls.methods.values()), *self.functions.values()]:
            nodes = function.nodes
            stack: list[ast.AST] = [function.node]
            while stack:
                node = stack.pop()
                nodes.setdefault(type(node), []).append(node)
                children = child_nodes(node)
                for child in reversed(children):
                    if type(child) not in _NESTED_TYPES:
                        stack.append(child)

    def _registrations(self, cls: ModelClass, method: Function) -> None:
        for node in method.of_type(ast.Call, ast.Assign, ast.AnnAssign):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("register_buffer", "register_parameter", "register_module", "add_module")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                kind = {"register_buffer": cls.buffers, "register_parameter": cls.params}.get(node.func.attr, cls.submodules)
                kind.add(node.args[0].value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            value = getattr(node, "value", None)
            if targets and isinstance(value, ast.Call):
                name = self.qualified(value.func) or ""
                for target in targets:
                    attr = self_attribute(target)
                    if attr is None:
                        continue
                    if name.endswith(".Parameter") or dotted(value.func).rpartition(".")[2] == "Parameter":
                        cls.params.add(attr)
                    elif self.constructs_module(value):
                        cls.submodules.add(attr)


def walk(node: ast.AST, nested: bool = False) -> list[ast.AST]:
    """Every node under ``node`` in source order (itself first), without context and operator
    nodes (``Load``, ``Add``); nested defs and lambdas only if ``nested``. Iterative: any depth."""
    found: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        children = child_nodes(current)
        if not nested:
            children = [c for c in children if type(c) not in _NESTED_TYPES]
        children.reverse()
        stack.extend(children)
    return found


#: Fields that never hold a node (names, flags), or hold only operators and contexts no rule reads.
_SCALAR_FIELDS = frozenset({"id", "ctx", "attr", "arg", "kind", "op", "ops", "name", "module", "level", "asname",
                            "type_comment", "conversion", "is_async", "simple", "kwd_attrs", "rest"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.Global: (), ast.Nonlocal: (),
                                               ast.MatchSingleton: ()}  # its value: True, False or None
_NESTED_TYPES = frozenset(_NESTED)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The node's child nodes in field order (not the context and operator nodes)."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)
    children: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            children.extend(value)
        elif value is not None:
            children.append(value)
    # A list field may hold None: ``{**x}``'s key, a keyword-only argument without a default.
    return [c for c in children if c is not None] if None in children else children


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of names and attributes, else ``""``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def self_attribute(node: ast.AST) -> Optional[str]:
    """``name`` for ``self.name``, else ``None``."""
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return node.attr
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def imports(tree: ast.Module, module: str = "", package: bool = False) -> dict[str, str]:
    """Local name -> qualified name, from the file's top-level imports.

    Relative imports resolve against ``module``, the file's dotted name (``package``: the file is
    its package's ``__init__``); where it is not known they keep their dots (``..utils.f``).
    """
    aliases: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases[local] = alias.name if alias.asname else local
        elif isinstance(statement, ast.ImportFrom):
            source = _absolute(statement.module or "", statement.level, module, package)
            for alias in statement.names:
                aliases[alias.asname or alias.name] = f"{source}.{alias.name}" if source else alias.name
    return aliases


def _absolute(name: str, level: int, module: str, package: bool) -> str:
    """What ``from {"." * level}{name} import ...`` imports from, in module ``module``."""
    if not level:
        return name
    if not module:
        return "." * level + name
    parts = module.split(".")[:len(module.split(".")) - level + package]
    return ".".join(parts + ([name] if name else []))
