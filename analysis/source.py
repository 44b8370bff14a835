"""A source file as the prediction reads it: its syntax tree aligned with its compiled code.

The prediction walks the syntax tree (``ast``: the tree CPython itself compiles) but takes
every place from the *compiled code*, through :func:`analysis.sites.instruction_place`,
the same function the runtime capture uses. So a predicted place and a captured place are
equal by construction, on every version (cpython-callsites §7): no column arithmetic, no
libcst-to-CPython span conversion, and 3.10's folded ``while`` copies come out folded.

To know which instructions belong to which node, the file is compiled twice and aligned
(:mod:`torchlens.analysis.align`, which the 3.10 fold uses too), with one fake line per node
of the kinds in :data:`NODES`. Code objects (functions,
lambdas, comprehensions, generator expressions) are paired with their syntax nodes by
``(co_firstlineno, co_name)`` and source order.

Torch-free; files are read through :mod:`linecache`, so ``exec`` code registered there works.
"""

from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass, field
from types import CodeType
from typing import Optional

from .align import align, compile_twice, walk_codes
from .caches import PerFile
from .errors import SourceUnavailableError
from .sites import Place, instruction_place

__all__ = ["SourceFile", "source_file", "source_of_code", "source_text", "NODES", "CALL_OPS"]

#: Node kinds whose instructions can reach a torch op: calls, operators, subscripts,
#: attribute loads (properties), ``for`` (``__iter__``/``__next__``) and ``with``.
NODES = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Compare, ast.Attribute,
         ast.With, ast.AsyncWith, ast.AugAssign, ast.For, ast.AsyncFor,
         ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Instructions that call, on any version (3.11's ``PRECALL`` shares its ``CALL``'s place).
CALL_OPS = frozenset({"CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD",
                      "CALL", "CALL_KW"})
#: Syntax nodes that compile to a code object of their own, with its ``co_name``.
_SCOPES = {ast.FunctionDef: None, ast.AsyncFunctionDef: None, ast.ClassDef: None,
           ast.Lambda: "<lambda>", ast.GeneratorExp: "<genexpr>", ast.ListComp: "<listcomp>",
           ast.SetComp: "<setcomp>", ast.DictComp: "<dictcomp>"}


@dataclass(eq=False)
class SourceFile:
    """One file's syntax tree, compiled code and the alignment between them."""

    #: ``co_filename`` of the code compiled from it.
    filename: str
    #: The text as :mod:`linecache` gives it.
    text: str
    #: The syntax tree, with the file's own line numbers.
    tree: ast.Module
    #: ``id(scope node)`` -> the code object compiled for it.
    codes: dict[int, CodeType] = field(default_factory=dict)
    #: ``id(code)`` -> its scope node (``tree`` for the module code).
    nodes: dict[int, ast.AST] = field(default_factory=dict)
    #: ``id(node)`` -> (code holding its instructions, [(offset, opname), ...]).
    instrs: dict[int, tuple[CodeType, list[tuple[int, str]]]] = field(default_factory=dict)
    #: ``(co_firstlineno, co_name)`` -> code objects with that key, in source order.
    by_key: dict[tuple[int, str], list[CodeType]] = field(default_factory=dict)
    #: ``id(code)`` of code objects whose alignment failed: their places are unknown.
    unaligned: set[int] = field(default_factory=set)

    def place(self, node: ast.AST, opnames: frozenset[str]) -> Optional[Place]:
        """The place of ``node``'s first instruction whose opname is in ``opnames``."""
        for owner in (node, getattr(node, "func", None)):
            # A method call's CALL carries its attribute's line (3.11+: the compiler moves a
            # method call's start to the attribute name), so look there second.
            entry = self.instrs.get(id(owner))
            if entry is None:
                continue
            code, found = entry
            for offset, opname in found:
                if opname in opnames:
                    return instruction_place(code, offset)
        return None

    def node_of(self, code: CodeType) -> Optional[ast.AST]:
        """The scope node a live code object was compiled from (``None`` if the file changed)."""
        for candidate in self.by_key.get((code.co_firstlineno, code.co_name), ()):
            if candidate.co_code == code.co_code:
                return self.nodes.get(id(candidate))
        return None


_files: PerFile[SourceFile] = PerFile()


def source_of_code(code: CodeType) -> tuple[SourceFile, ast.AST]:
    """The source file of a live code object and the syntax node it was compiled from.

    Raises :class:`SourceUnavailableError` when the source cannot be read (a REPL, ``exec``
    without :mod:`linecache`, a C extension) or no longer matches the code.
    """
    src = source_file(code.co_filename)
    node = src.node_of(code)
    if node is None:
        raise SourceUnavailableError(
            f"the source of {code.co_name} ({code.co_filename}:{code.co_firstlineno}) does not match "
            "its compiled code: the file changed after it was imported; reload the module"
        )
    return src, node


def source_file(filename: str) -> SourceFile:
    """Parse, compile and align ``filename`` (cached per file and text)."""
    text = "".join(linecache.getlines(filename) or _frozen_lines(filename))
    if not text:
        raise SourceUnavailableError(
            f"no source for {filename!r}: code defined in a REPL, by exec without linecache or in a "
            "C extension cannot be predicted; define it in a .py file"
        )
    cached = _files.get(filename)
    if cached is None or cached.text != text:
        cached = _files.remember(filename, _build(filename, text), len(text))
    return cached


def _frozen_lines(filename: str) -> list[str]:
    """The source of a frozen stdlib module (``<frozen _collections_abc>``) from its file."""
    if not (filename.startswith("<frozen ") and filename.endswith(">")):
        return []
    module = sys.modules.get(filename[len("<frozen "):-1])
    path = getattr(module, "__file__", None)
    return linecache.getlines(path) if path else []


def _build(filename: str, text: str) -> SourceFile:
    try:
        compiled = compile_twice(text, filename, NODES)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise SourceUnavailableError(f"cannot compile {filename!r}: {error}") from error
    src = SourceFile(filename, text, compiled.tree)
    _pair_scopes(src, compiled.real)
    if compiled.fake is None:
        src.unaligned.update(id(c) for c in walk_codes(compiled.real))
        return src
    for real, fake in compiled.pairs():
        aligned = align(real, fake, compiled.base)
        if aligned is None:
            src.unaligned.add(id(real))
            continue
        for ins, k in aligned:
            src.instrs.setdefault(id(compiled.nodes[k]), (real, []))[1].append((ins.offset, ins.name))
    return src


def _scope_key(node: ast.AST) -> Optional[tuple[int, str]]:
    kind = type(node)
    if kind not in _SCOPES:
        return None
    name = _SCOPES[kind] or node.name  # type: ignore[attr-defined]
    decorators = getattr(node, "decorator_list", None)
    line = min([node.lineno] + [d.lineno for d in decorators or ()])  # type: ignore[attr-defined]
    return line, name


def _pair_scopes(src: SourceFile, real: CodeType) -> None:
    """Pair each scope node with its code object: same key, same rank in source order."""
    src.codes[id(src.tree)] = real
    src.nodes[id(real)] = src.tree
    for code in walk_codes(real):
        if code is not real:
            src.by_key.setdefault((code.co_firstlineno, code.co_name), []).append(code)
    ranked: dict[tuple[int, str], list[ast.AST]] = {}
    for node in ast.walk(src.tree):
        key = _scope_key(node)
        if key is not None:
            ranked.setdefault(key, []).append(node)
    for key, nodes in ranked.items():
        nodes.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
        for node, code in zip(nodes, src.by_key.get(key, ())):
            src.codes[id(node)] = code
            src.nodes[id(code)] = node


def source_text(node: ast.AST) -> str:
    """A node as source text (for counts and notes: ``range(n)``)."""
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of a hand-built tree; only a label is lost
        return "?"
