"""What the lint rules read: one source file's classes, functions, imports and torch ops.

Rules never run a model. They read the syntax tree through the small vocabulary here:
which names are torch (import aliases resolved), which expressions are torch operations,
which attributes of a module class are registered buffers, parameters or submodules. The
tree is the standard library's ``ast`` (what CPython compiles): linting all of ``torch.nn``
takes about a second.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, Optional

#: Tensor methods common enough to count a call ``x.name(...)`` on a local value as an op.
TENSOR_METHODS = frozenset("""
    abs add addmm all any argmax argmin baddbmm bmm chunk clamp clamp_min clone contiguous cos
    cumsum detach div exp expand expand_as flatten float gather gelu half index_select log
    log_softmax masked_fill matmul max mean min mm mul narrow neg norm permute pow prod relu
    repeat reshape roll rsqrt sigmoid sin softmax split sqrt squeeze std sub sum t tanh to topk
    transpose tril triu type_as unbind unflatten unsqueeze var view view_as where
""".split())
#: ``torch`` namespaces that wrap other code rather than compute (checkpoint runs a module).
NOT_OP_PREFIXES = ("torch.utils.", "torch.jit.", "torch.autograd.", "torch.compile", "torch.compiler.")
#: ``torch.*`` callables that are not tensor operations.
NOT_OPS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled", "torch.is_grad_enabled",
    "torch.inference_mode", "torch.manual_seed", "torch.is_tensor", "torch.Size",
    "torch.device", "torch.get_default_dtype", "torch.is_floating_point",
})
#: Base classes that make a class a module.
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
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


@dataclass(eq=False)
class ModelClass:
    """A class of the file, with what its ``__init__`` registers."""

    node: ast.ClassDef
    is_module: bool
    methods: dict[str, Function] = field(default_factory=dict)
    #: ``self.register_buffer("name", ...)`` names.
    buffers: set[str] = field(default_factory=set)
    #: Attributes assigned an ``nn.Parameter``, and attributes assigned a module, in ``__init__``.
    params: set[str] = field(default_factory=set)
    submodules: set[str] = field(default_factory=set)


class SourceModel:
    """A parsed file as the rules see it. Raises ``SyntaxError`` for a file that does not parse."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.tree = ast.parse(text, filename=path)
        self.aliases = _import_aliases(self.tree)
        self.classes: dict[str, ModelClass] = {}
        self.functions: dict[str, Function] = {}
        self._index()

    # -- places ----------------------------------------------------------------------------

    @staticmethod
    def where(node: ast.AST) -> tuple[int, int]:
        """1-based line and column of a node."""
        return node.lineno, node.col_offset + 1  # type: ignore[attr-defined]

    @staticmethod
    def code(node: ast.AST) -> str:
        """The node as source text, normalised by ``ast.unparse``."""
        return ast.unparse(node)

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
        name = self.qualified(node.func)
        if name is not None:
            return (name.startswith("torch.") and name not in NOT_OPS and not name.startswith(NOT_OP_PREFIXES)
                    and not name.rpartition(".")[2][:1].isupper())
        func = node.func
        return isinstance(func, ast.Attribute) and not _is_self(func.value) and func.attr.rstrip("_") in TENSOR_METHODS

    def torch_ops(self, node: ast.AST) -> list[ast.Call]:
        """The torch calls inside ``node`` (not inside nested functions or lambdas)."""
        return [n for n in walk(node) if self.is_torch_call(n)]  # type: ignore[misc]

    @staticmethod
    def submodule_call(node: ast.AST, cls: Optional[ModelClass]) -> bool:
        """A call ``self.name(...)`` of a submodule registered in ``__init__``."""
        return (cls is not None and isinstance(node, ast.Call) and self_attribute(node.func) in cls.submodules)

    def constructs_module(self, call: ast.Call) -> bool:
        """A call of a ``torch.nn`` class or of a module class of this file."""
        qualified = self.qualified(call.func) or ""
        local = self.classes.get(call.func.id) if isinstance(call.func, ast.Name) else None
        return qualified.startswith("torch.nn.") or (local is not None and local.is_module)

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
        changed = True
        while changed:  # a subclass of a module class of this file is a module too
            changed = False
            for cls in self.classes.values():
                bases = [self.classes.get(b.id) for b in cls.node.bases if isinstance(b, ast.Name)]
                if not cls.is_module and any(b is not None and b.is_module for b in bases):
                    cls.is_module = changed = True
        for cls in self.classes.values():
            cls.methods = {s.name: Function(s, cls) for s in cls.node.body if isinstance(s, ast.FunctionDef)}
            if "__init__" in cls.methods:
                self._registrations(cls)

    def _registrations(self, cls: ModelClass) -> None:
        for node in walk(cls.methods["__init__"].node):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "register_buffer" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                cls.buffers.add(node.args[0].value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                name = self.qualified(node.value.func) or ""
                for target in node.targets:
                    attr = self_attribute(target)
                    if attr is None:
                        continue
                    if name.endswith(".Parameter"):
                        cls.params.add(attr)
                    elif self.constructs_module(node.value):
                        cls.submodules.add(attr)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order (itself first), not entering nested defs or lambdas."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed([c for c in ast.iter_child_nodes(current) if not isinstance(c, _NESTED)]))


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


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from the file's top-level torch imports."""
    aliases: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases[local] = alias.name if alias.asname else local
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                aliases[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
    return {k: v for k, v in aliases.items() if v == "torch" or v.startswith("torch.")}
