"""Compiled code read instruction by instruction, and aligned with the source it came from.

Two things every static reading of a code object needs, written once:

* :func:`instructions`: a code object's instructions read from ``co_code`` (as the
  ``bytecode`` package's ``ConcreteBytecode`` reads them, checked against it by the tests, five
  times faster), with ``EXTENDED_ARG`` prefixes folded into the instruction they
  extend and ``CACHE`` entries counted into the instruction they follow, so each carries
  its own offset, the span of code units it owns, its full argument and its jump target.
* :func:`compile_twice` and :func:`align`: which syntax node each instruction was compiled
  from. The source is compiled as written and again with one fake line number per node of
  the kinds asked for; the two compilations have the same instructions, so walking them
  in lockstep names each real instruction's node (design note cpython-callsites §2.1). The
  3.10 fold (:mod:`torchlens.analysis.fold310`) and the prediction's source reading
  (:mod:`torchlens.analysis.source`) both use it.

Offsets are byte offsets, as ``f_lasti`` and ``dis`` count them. Torch-free.
"""

from __future__ import annotations

import ast
import dis
import sys
from dataclasses import dataclass
from types import CodeType
from typing import Iterator, NamedTuple, Optional

from .caches import PerCode

__all__ = ["Instruction", "instructions", "walk_codes", "Compiled", "compile_twice", "align"]

#: Instructions that alignment ignores: the compiler keeps or drops NOPs by line numbers.
_IGNORED = frozenset({"NOP"})


class Instruction(NamedTuple):
    """One instruction of a code object (never an ``EXTENDED_ARG`` prefix or a ``CACHE`` entry).

    A named tuple: a large function has thousands, made three times faster than a frozen record."""

    #: Byte offset of the instruction itself, as ``dis`` gives it.
    offset: int
    #: Byte offset of its first ``EXTENDED_ARG`` prefix (``offset`` when it has none).
    start: int
    #: Byte offset just past it and its ``CACHE`` entries: it owns the code units ``start..end``.
    end: int
    #: Opcode name and number.
    name: str
    opcode: int
    #: The full argument (prefixes folded in); ``None`` when the opcode takes none.
    arg: Optional[int]
    #: For a jump: the byte offset it may jump to; ``None`` for every other instruction.
    target: Optional[int]

    @property
    def is_jump(self) -> bool:
        return self.target is not None


_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_CACHE = dis.opmap.get("CACHE", -1)
_NOP = dis.opmap["NOP"]
if sys.version_info >= (3, 13):
    _HAS_ARG = frozenset(dis.hasarg)
    _RELATIVE = frozenset(dis.hasjump)
    _ABSOLUTE: frozenset[int] = frozenset()
    _CACHES = [dis._inline_cache_entries.get(name, 0) for name in dis.opname]  # type: ignore[attr-defined]
else:
    _HAS_ARG = frozenset(range(dis.HAVE_ARGUMENT, 256))
    _RELATIVE = frozenset(dis.hasjrel)
    _ABSOLUTE = frozenset(dis.hasjabs)
    _CACHES = list(getattr(dis, "_inline_cache_entries", [0] * 256))
_JUMPS = _RELATIVE | _ABSOLUTE
#: Relative jumps that go backwards (``JUMP_BACKWARD``, ``END_ASYNC_FOR`` on 3.12+).
_BACKWARD = frozenset(op for op in _RELATIVE if "BACKWARD" in dis.opname[op] or "END_ASYNC_FOR" in dis.opname[op])


def _instructions(code: CodeType) -> tuple[Instruction, ...]:
    raw = code.co_code
    names = dis.opname
    rows: list[list] = []  # [offset, start, end, opcode, arg, target] per instruction
    start = 0  # where the current instruction's EXTENDED_ARG prefixes began
    prefix = -1  # their argument so far (-1: none)
    for at in range(0, len(raw), 2):
        op = raw[at]
        if op == _CACHE and rows:
            rows[-1][2] = start = at + 2
            continue
        if op == _EXTENDED_ARG:
            prefix = raw[at + 1] if prefix < 0 else (prefix << 8) + raw[at + 1]
            continue
        arg = target = None
        if op in _HAS_ARG and not (op == _NOP and prefix >= 0):
            arg = raw[at + 1] if prefix < 0 else (prefix << 8) + raw[at + 1]
            if op in _JUMPS:
                after = at // 2 + 1 + _CACHES[op]
                target = 2 * (after - arg if op in _BACKWARD else after + arg if op in _RELATIVE else arg)
        prefix = -1
        rows.append([at, start, at + 2, op, arg, target])
        start = at + 2
    return tuple(Instruction(o, s, e, names[op], op, a, t) for o, s, e, op, a, t in rows)


#: A code object's :class:`Instruction` s in order, computed once per code object.
instructions: PerCode[tuple[Instruction, ...]] = PerCode(_instructions)


def walk_codes(code: CodeType) -> Iterator[CodeType]:
    """``code`` and every code object nested in it, depth first in ``co_consts`` order."""
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from walk_codes(const)


@dataclass(frozen=True, slots=True)
class Compiled:
    """A source compiled as written and with fake lines, ready for :func:`align`."""

    #: The syntax tree with the file's own positions.
    tree: ast.Module
    #: The nodes that got a fake line, from ``tree``, in ``ast.walk`` order: node ``k`` has
    #: fake line ``base + k``.
    nodes: tuple[ast.AST, ...]
    #: The module code as written.
    real: CodeType
    #: The module code compiled with fake lines; ``None`` when that compilation failed.
    fake: Optional[CodeType]
    #: The first fake line number.
    base: int

    def pairs(self) -> Iterator[tuple[CodeType, CodeType]]:
        """Each real code object with its fake twin (same tree, so the same code-object tree)."""
        if self.fake is not None:
            yield from zip(walk_codes(self.real), walk_codes(self.fake))


def compile_twice(text: str, filename: str, kinds: tuple[type, ...], flags: int = 0) -> Compiled:
    """Compile ``text`` as written and with one fake line per node of ``kinds``.

    ``flags`` are compiler flags (``from __future__`` features the text itself does not
    import). Raises ``SyntaxError``/``ValueError``/``RecursionError``/``MemoryError`` when
    the text itself does not compile; a failure of the fake compilation leaves ``fake`` ``None``.
    The text is parsed once: the fake lines are set on the tree for the second compilation
    and the tree's own positions put back after it.
    """
    tree = ast.parse(text, filename)
    real = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    nodes = tuple(n for n in ast.walk(tree) if isinstance(n, kinds))
    base = text.count("\n") + 2  # small: 3.10 line tables grow with the line deltas
    kept = [(n.lineno, n.end_lineno, n.col_offset, n.end_col_offset) for n in nodes]  # type: ignore[attr-defined]
    try:
        for k, node in enumerate(nodes):
            node.lineno = node.end_lineno = base + k  # type: ignore[attr-defined]
            node.col_offset, node.end_col_offset = 0, 1  # type: ignore[attr-defined]  # 3.11+: end >= start
        fake: Optional[CodeType] = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        fake = None
    finally:
        for node, position in zip(nodes, kept):
            node.lineno, node.end_lineno, node.col_offset, node.end_col_offset = position  # type: ignore[attr-defined]
    return Compiled(tree, nodes, real, fake, base)


def align(real: CodeType, fake: CodeType, base: int) -> Optional[list[tuple[Instruction, int]]]:
    """``(real instruction, k)`` for each instruction compiled from fake line ``base + k``.

    ``None`` when the two codes differ in more than line numbers (opcodes, or arguments
    other than jump targets), which can happen when fake lines change what the compiler
    keeps; the caller then treats the code as unaligned.
    """
    real_instrs, fake_instrs = _tokens(real), _tokens(fake)
    if _shape(real_instrs) != _shape(fake_instrs):
        return None
    lines = {o: line for start, end, line in fake.co_lines() for o in range(start, end, 2)}
    out = []
    for r, f in zip(real_instrs, fake_instrs):
        line = lines.get(f.offset)
        if line is not None and line >= base:
            out.append((r, line - base))
    return out


def _tokens(code: CodeType) -> list[Instruction]:
    return [i for i in instructions(code) if i.name not in _IGNORED]


def _shape(instrs: list[Instruction]) -> list[tuple[int, Optional[int]]]:
    """What must agree between real and fake code: opcodes, and arguments except jumps'."""
    return [(i.opcode, None if i.is_jump else i.arg) for i in instrs]
