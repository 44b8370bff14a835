"""Which classes of a lint run are ``nn.Module`` subclasses, across its files.

A file alone cannot tell that ``class LlamaDecoderLayer(GradientCheckpointingLayer)`` is a
module when ``GradientCheckpointingLayer`` derives from ``nn.Module`` in another file. Before
the rules run, :func:`module_index` reads every file's top-level ``class`` headers and imports
(a few lines each, not the whole syntax tree), names each file as Python imports it
(``transformers.models.llama.modeling_llama``: the folders above it that hold an
``__init__.py``), resolves relative imports and re-exports through ``__init__`` files, and
follows the bases to ``torch.nn.Module``.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from .files import UnreadableSource, read_source
from .model import MODULE_BASES, dotted, imports

#: How the top-level statements the index reads begin: class headers and imports.
_STARTS = ("class ", "from ", "import ")
#: Re-exports followed from a name to the class it stands for, at most.
_HOPS = 8


@dataclass(frozen=True, slots=True)
class ModuleIndex:
    """The lint run's module classes by qualified name, and each file's module name."""

    #: ``pkg.mod.Class`` of every class of the run that derives from ``nn.Module``.
    modules: frozenset[str] = frozenset()
    #: File path (as given to the run) -> its dotted module name.
    names: dict[str, str] = field(default_factory=dict)


def module_name(path: Path) -> tuple[str, Path]:
    """``a.b.c`` for ``a/b/c.py`` where ``a`` and ``a/b`` hold an ``__init__.py`` (``a.b`` for
    ``a/b/__init__.py``), and the folder that holds ``a``."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.resolve().parent
    while (folder / "__init__.py").is_file() and folder.name.isidentifier():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)), folder


def module_index(files: Iterable[Path]) -> ModuleIndex:
    """The index over ``files`` and the files of their packages their bases come from
    (unreadable files and files that do not parse add nothing)."""
    reader = _Reader()
    for path in files:
        reader.read(path, named=True)
    resolved: dict[str, list[str]] = {}
    while len(resolved) < len(reader.bases):  # following a base may read another file's classes
        for cls in [c for c in reader.bases if c not in resolved]:
            resolved[cls] = [reader.follow(b) for b in reader.bases[cls]]
    modules = set(MODULE_BASES)
    grew = True
    while grew:
        grew = False
        for cls, found in resolved.items():
            if cls not in modules and any(b in modules for b in found):
                modules.add(cls)
                grew = True
    return ModuleIndex(frozenset(modules - MODULE_BASES), reader.names)


class _Reader:
    """The class headers and imports read so far, by module."""

    def __init__(self) -> None:
        #: Path of a file of the run -> its module name.
        self.names: dict[str, str] = {}
        #: ``module.Class`` -> its bases' qualified names, as the module imports them.
        self.bases: dict[str, list[str]] = {}
        #: Module -> its imports (local name -> qualified name): what it re-exports.
        self.exports: dict[str, dict[str, str]] = {}
        #: Top-level package -> the folder that holds it (where its other modules are found).
        self.roots: dict[str, Path] = {}

    def read(self, path: Path, named: bool = False) -> None:
        name, root = module_name(path)
        self.roots.setdefault(name.partition(".")[0], root)
        if named:
            self.names[str(path)] = name
        tree = _headers(path)
        if tree is None or name in self.exports:
            return
        table = self.exports[name] = imports(tree, name, path.stem == "__init__")
        local = {s.name for s in tree.body if isinstance(s, ast.ClassDef)}
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                self.bases[f"{name}.{statement.name}"] = [
                    _qualified(dotted(b), name, local, table) for b in statement.bases if dotted(b)]

    def follow(self, qualified: str) -> str:
        """The class a qualified name stands for, through re-exports (``pkg.Model`` imported into
        ``pkg/__init__.py`` from ``pkg.modeling``), reading the modules it passes through."""
        for _ in range(_HOPS):
            if qualified in self.bases:
                break
            module, _, last = qualified.rpartition(".")
            if module not in self.exports:
                self.load(module)
            target = self.exports.get(module, {}).get(last)
            if target is None:
                break
            qualified = target
        return qualified

    def load(self, module: str) -> None:
        """Read ``module``'s file if it belongs to a package of the run (never elsewhere)."""
        self.exports.setdefault(module, {})  # read once, found or not
        root = self.roots.get(module.partition(".")[0])
        if root is None:
            return
        base = root.joinpath(*module.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                del self.exports[module]
                self.read(path)
                return


def _qualified(name: str, module: str, local: set[str], table: dict[str, str]) -> str:
    head, dot, rest = name.partition(".")
    if head in local:
        return f"{module}.{name}"
    return f"{table[head]}{dot}{rest}" if head in table else name


def _headers(path: Path) -> Optional[ast.Module]:
    """The file's top-level class headers and imports as a small syntax tree (the whole file's
    tree where the headers alone do not parse: a header with a string holding a bracket)."""
    try:
        text = read_source(path)
    except UnreadableSource:
        return None
    lines = text.splitlines()
    kept: list[str] = []
    for start, first in enumerate(lines):
        if not first.startswith(_STARTS):
            continue
        statement, depth = [], 0
        for line in itertools.islice(lines, start, None):
            statement.append(line)
            code = line.split("#", 1)[0].rstrip()
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            if depth <= 0 and not code.endswith("\\"):
                break
        kept.append("\n".join(statement) + (" ..." if code.endswith(":") else ""))
    try:
        return ast.parse("\n".join(kept))
    except SyntaxError:
        try:
            return ast.parse(text)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            return None
