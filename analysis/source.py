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

import __future__

import ast
import functools
import linecache
import operator
import sys
from dataclasses import dataclass, field
from types import CodeType
from typing import Optional

from .align import align, compile_twice, walk_codes
from .caches import PerFile
from .errors import SourceUnavailableError
from .sites import Place, instruction_place

__all__ = ["SourceFile", "Parameters", "source_file", "source_of_code", "source_read_before", "source_text", "NODES",
           "CALL_OPS"]

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


@dataclass(frozen=True)
class Parameters:
    """A function's parameter names, as binding arguments reads them."""

    #: Positional-only, then positional-or-keyword.
    positional: tuple[str, ...]
    #: Keyword-only.
    kwonly: tuple[str, ...]
    #: Every name an argument may bind by keyword or position: ``positional + kwonly``.
    named: tuple[str, ...]
    #: ``*args`` and ``**kwargs`` names, if any.
    vararg: Optional[str]
    kwarg: Optional[str]

    @classmethod
    def of(cls, spec: ast.arguments) -> Parameters:
        positional = tuple(a.arg for a in (*spec.posonlyargs, *spec.args))
        kwonly = tuple(a.arg for a in spec.kwonlyargs)
        return cls(positional, kwonly, positional + kwonly, spec.vararg.arg if spec.vararg else None,
                   spec.kwarg.arg if spec.kwarg else None)


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
    #: A function node -> its :class:`Parameters` (see :meth:`parameters`).
    _parameters: dict[ast.AST, Parameters] = field(default_factory=dict, repr=False)
    #: ``(node, opnames)`` -> what :meth:`place` gave (the file's nodes and code do not change).
    _places: dict[tuple[ast.AST, frozenset[str]], Optional[Place]] = field(default_factory=dict, repr=False)

    def place(self, node: ast.AST, opnames: frozenset[str]) -> Optional[Place]:
        """The place of ``node``'s first instruction whose opname is in ``opnames``."""
        key = (node, opnames)
        try:
            return self._places[key]
        except KeyError:
            place = self._places[key] = self._first_place(node, opnames)
            return place

    def parameters(self, node: ast.AST) -> Parameters:
        """The parameter names of a function or lambda node of this file."""
        found = self._parameters.get(node)
        if found is None:
            found = self._parameters[node] = Parameters.of(node.args)  # type: ignore[attr-defined]
        return found

    def _first_place(self, node: ast.AST, opnames: frozenset[str]) -> Optional[Place]:
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
        """The scope node a live code object was compiled from (``None`` if the file changed):
        the one with its bytecode, names and positions (lambdas on one line differ in their
        names, or only in their columns), else the first with its bytecode and names (the
        positions moved: a stale file)."""
        alike = [c for c in self.by_key.get((code.co_firstlineno, code.co_name), ()) if _alike(c, code)]
        found = next((c for c in alike if c.co_linetable == code.co_linetable), alike[0] if alike else None)
        return None if found is None else self.nodes.get(id(found))


class _File:
    """What is kept of one source file: its lines as :mod:`linecache` gave them, the
    definitions read from it one by one, and the whole file once something needed it."""

    __slots__ = ("lines", "defs", "whole", "_imports", "read")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._imports: Optional[str] = None
        #: ``id(live code object)`` -> (it, the qualified name asked, what :func:`source_of_code`
        #: gave for them from these lines): each found once while the lines stand.
        self.read: dict[int, tuple[CodeType, Optional[str], tuple[SourceFile, ast.AST]]] = {}
        #: ``(first line, name, qualified name)`` of a live code object -> its definition read
        #: alone (``None``: it cannot be read alone, see :func:`_definition`).
        self.defs: dict[tuple[int, str, str], Optional[tuple[SourceFile, ast.AST]]] = {}
        self.whole: Optional[SourceFile] = None

    @property
    def imports(self) -> str:
        """``import a, b``: the names the file imports at module level (``""``: none)."""
        if self._imports is None:
            names = _module_imports(self.lines)
            self._imports = f"import {', '.join(names)}\n" if names else ""
        return self._imports


_files: PerFile[_File] = PerFile()
#: Compiler flags of every ``from __future__`` feature (a code object carries those it was compiled with).
_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                                for name in __future__.all_feature_names))


def source_of_code(code: CodeType, qualname: Optional[str] = None) -> tuple[SourceFile, ast.AST]:
    """The source of a live code object and the syntax node it was compiled from.

    A function or method is read alone (its lines, under headers standing for the classes
    around it: see :func:`_definition`), far cheaper than its whole file; when that is not
    possible (a function nested in a function, a definition that does not compile alone to
    the same bytecode) the whole file is read. ``qualname`` is the function's
    ``__qualname__`` (3.10 code objects do not carry it). Raises
    :class:`SourceUnavailableError` when the source cannot be read (a REPL, ``exec`` without
    :mod:`linecache`, a C extension) or no longer matches the code.
    """
    entry = _file(code.co_filename)
    qualname = getattr(code, "co_qualname", qualname)
    found = _read_before(entry, code, qualname)
    if found is None:
        found = _read(entry, code, qualname)
        entry.read[id(code)] = (code, qualname, found)  # (the entry keeps the code: its id is not reused)
    return found


def source_read_before(code: CodeType, qualname: Optional[str] = None) -> Optional[tuple[SourceFile, ast.AST]]:
    """What :func:`source_of_code` gives, where it gave it before from the lines :mod:`linecache`
    gives now (nothing is parsed); else ``None``."""
    try:
        entry = _file(code.co_filename)
    except SourceUnavailableError:
        return None
    return _read_before(entry, code, getattr(code, "co_qualname", qualname))


def _read_before(entry: _File, code: CodeType, qualname: Optional[str]) -> Optional[tuple[SourceFile, ast.AST]]:
    found = entry.read.get(id(code))
    return found[2] if found is not None and found[0] is code and found[1] == qualname else None


def _read(entry: _File, code: CodeType, qualname: Optional[str]) -> tuple[SourceFile, ast.AST]:
    """:func:`source_of_code` of a code object not read from ``entry``'s lines before."""
    if qualname is not None:
        key = (code.co_firstlineno, code.co_name, qualname)
        if key not in entry.defs:
            entry.defs[key] = _definition(code, entry, qualname)
        alone = entry.defs[key]
        if alone is not None and _same_code(alone[0].codes[id(alone[1])], code):
            return alone
    if entry.whole is None:
        entry.whole = _build(code.co_filename, "".join(entry.lines))
    node = entry.whole.node_of(code)
    if node is None:
        raise SourceUnavailableError(
            f"the source of {code.co_name} ({code.co_filename}:{code.co_firstlineno}) does not match "
            "its compiled code: the file changed after it was imported; reload the module"
        )
    return entry.whole, node


def _alike(read: CodeType, live: CodeType) -> bool:
    """Same bytecode and names (lambdas on one line may share their bytecode, each naming its
    own globals and attributes at the same indexes)."""
    return read.co_code == live.co_code and read.co_names == live.co_names


def _same_code(read: CodeType, live: CodeType) -> bool:
    """Whether a definition read alone is the live code's: :func:`_alike`, and its positions
    where several definitions share a first line and a name (lambdas on one line)."""
    return _alike(read, live) and (read.co_linetable == live.co_linetable or live.co_name != "<lambda>")


def source_file(filename: str) -> SourceFile:
    """Parse, compile and align the whole of ``filename`` (cached per file and text)."""
    entry = _file(filename)
    if entry.whole is None:
        entry.whole = _build(filename, "".join(entry.lines))
    return entry.whole


def _file(filename: str) -> _File:
    """The cache entry of ``filename``, new when :mod:`linecache` gives other lines."""
    lines = linecache.getlines(filename) or _frozen_lines(filename)
    if not lines:
        raise SourceUnavailableError(
            f"no source for {filename!r}: code defined in a REPL, by exec without linecache or in a "
            "C extension cannot be predicted; define it in a .py file"
        )
    entry = _files.get(filename)
    if entry is None or entry.lines is not lines and entry.lines != lines:
        entry = _files.remember(filename, _File(lines), sum(map(len, lines)))
    return entry


def _frozen_lines(filename: str) -> list[str]:
    """The source of a frozen stdlib module (``<frozen _collections_abc>``) from its file."""
    if not (filename.startswith("<frozen ") and filename.endswith(">")):
        return []
    module = sys.modules.get(filename[len("<frozen "):-1])
    path = getattr(module, "__file__", None)
    return linecache.getlines(path) if path else []


def _definition(code: CodeType, file: _File, qualname: str) -> Optional[tuple[SourceFile, ast.AST]]:
    """A function or method read alone: the outermost function around it (itself, when it is
    not nested in one) at its own line numbers and columns, after one header line per class
    around that (``class GPT2Attention:``, which gives the same name mangling and
    ``__class__`` cell) or ``if 1:`` for a function indented at module level, and a first
    line importing the names the file imports (the compiler reads ``x.f()`` differently when
    ``x`` was imported). ``None`` when that cannot stand for the file: module code, too few
    lines above it, an enclosing function not found, or text that does not compile alone to
    a code object like ``code``. The caller still checks the bytecode is the live code's."""
    parts = qualname.split(".")
    outer = parts[:parts.index("<locals>")] if "<locals>" in parts else parts
    first, lines = code.co_firstlineno, file.lines
    if code.co_name == "<module>" or not outer or not 0 < first <= len(lines):
        return None
    start = first if outer is parts else _enclosing_def(lines, first, outer[-1])
    if start is None:
        return None
    indent = _indent(lines[start - 1])
    headers = [f"{' ' * k}class {name}:\n" for k, name in enumerate(outer[:-1])] or (["if 1:\n"] if indent else [])
    above = [file.imports] if file.imports else []
    if len(headers) > min(indent, start - 1 - len(above)):
        return None
    end = max([first, *(line for each in walk_codes(code) for _, _, line in each.co_lines() if line is not None)])
    while end < len(lines) and (_indent(lines[end]) > indent or lines[end].lstrip()[:1] in _CONTINUED):
        end += 1  # the rest of the outer function, continuation lines, blank lines and comments
    text = "".join(above + ["\n"] * (start - 1 - len(above) - len(headers)) + headers + lines[start - 1:end])
    try:
        src = _build(code.co_filename, text, code.co_flags & _FUTURE_FLAGS)
    except SourceUnavailableError:
        return None
    node = src.node_of(code)
    return None if node is None else (src, node)


def _enclosing_def(lines: list[str], first: int, name: str) -> Optional[int]:
    """The line of the nearest ``def name(`` above line ``first``, indented less than it."""
    below = _indent(lines[first - 1])
    for at in range(first - 1, 0, -1):
        line = lines[at - 1]
        stripped = line.lstrip(" ")
        if stripped.startswith(("def ", "async def ")) and _indent(line) < below:
            if stripped.split("def ", 1)[1].lstrip().startswith(name + "("):
                return at
            below = _indent(line)  # an enclosing function of another name: look further out
    return None


#: First characters of a line that belongs to the statement above it, whatever its indent
#: (``)`` closing a call; a blank line; a comment).
_CONTINUED = frozenset({")", "]", "}", "", "#"})


def _module_imports(lines: list[str]) -> list[str]:
    """Names bound by ``import`` statements at module level (at column 0 or in a block of
    module-level code such as ``if``/``try``), found line by line; a missed or extra name
    only makes a definition read alone not match, and the whole file is read instead."""
    statements: list[str] = []
    at_module = True  # whether indented lines are module-level code (not in a def or class)
    statement: list[str] = []
    for line in lines:
        stripped = line.lstrip()
        if statement:
            statement.append(stripped)
            if ")" in stripped:
                statements.append("".join(statement))
                statement = []
            continue
        if line[:1].isalpha() or line[:1] == "@":
            at_module = not stripped.startswith(("def ", "class ", "async ", "@"))
        if at_module and stripped.startswith(("import ", "from ")):
            if "(" in stripped and ")" not in stripped:
                statement = [stripped]
            else:
                statements.append(stripped)
    # One parse of them all (a parse costs about as much to start as a statement's; 30-60 a
    # file); each alone where they do not parse together (one of them does not parse).
    names = _imported("".join(statements))
    if names is None:
        names = [name for each in statements for name in _imported(each) or ()]
    return list(dict.fromkeys(names))


def _imported(statements: str) -> Optional[list[str]]:
    """The names the import statements in ``statements`` bind (``None``: a syntax error)."""
    try:
        tree = ast.parse(statements)
    except SyntaxError:
        return None
    return [alias.asname or alias.name.split(".")[0] for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "module", None) != "__future__"
            for alias in node.names if alias.name != "*"]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _build(filename: str, text: str, flags: int = 0) -> SourceFile:
    try:
        compiled = compile_twice(text, filename, NODES, flags)
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
