"""Fold the compiler's duplicate copies of one source node onto one offset (for Python 3.10).

Python 3.10 has no column positions, so a place there is a bytecode offset. The compiler
emits some source nodes more than once: a ``while`` test (before the loop and at its
bottom), a ``finally`` body (once per exit path) and a ``with`` statement's ``__exit__``
call (once per exit path). Each copy has its own offset, so an op in a ``while`` test would
otherwise count as two layers. :func:`fold_map` maps every copy onto the first.

The exact method (design note §2.1) recompiles the module source with one fake line per
AST node of the kinds in :data:`_NODES`, so that a fake line names one node and every copy
of that node carries it, then aligns the fake code with the real code instruction by
instruction. Without the source (``exec`` code not in :mod:`linecache`), or if the
alignment fails, a bytecode-only fold of ``while`` tests is used instead (§2.2).

Torch-free and importable on any version. :mod:`torchlens.analysis.sites` uses it on 3.10, and on
3.11+ when positions have no columns (``-X no_debug_ranges``); the method works there too,
except that the bytecode-only fallback finds nothing on 3.12+ (no backward conditional jump).
"""

from __future__ import annotations

import ast
import linecache
from types import CodeType
from typing import Optional

from .align import Instruction, align, compile_twice, instructions
from .caches import PerCode, PerFile

__all__ = ["fold_map"]

#: AST node kinds that get a fake line each: every node an op can be reached through,
#: plus the statements whose own instructions reach dunders. Faking more (every
#: ``ast.expr``, comprehensions) would change the compiled code or the code-object tree.
_NODES = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Compare, ast.Attribute,
          ast.FormattedValue, ast.With, ast.AsyncWith, ast.AugAssign, ast.For, ast.AsyncFor)
#: Opcodes that call: a node's copies are folded per kind, and an ``__exit__`` call is a
#: ``CALL`` on the normal path but ``WITH_EXCEPT_START`` on the exceptional one.
_CALLS = {"CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL",
          "CALL_KW", "WITH_EXCEPT_START"}

#: filename -> (source, {(co_firstlineno, co_name): [(real, fake code)]} or None, fake base line)
_files: PerFile[tuple[str, Optional[dict], int]] = PerFile()


def _fold_map(code: CodeType) -> dict[int, int]:
    """Map instruction offsets of ``code`` to the offset of their node's first copy.

    Offsets are instruction offsets (as ``dis`` gives them, never an ``EXTENDED_ARG``
    prefix). Offsets that are not a later copy of anything are absent or map to themselves.
    Computed once per code object.
    """
    fold = _source_fold(code)
    return _while_fold(code) if fold is None else fold


fold_map: "PerCode[dict[int, int]]" = PerCode(_fold_map)


def _module_index(filename: str) -> Optional[tuple[dict, int]]:
    """Real and fake-line code objects of ``filename``'s source, cached per file and source."""
    source = "".join(linecache.getlines(filename))
    if not source:
        return None
    cached = _files.get(filename)
    if cached is None or cached[0] != source:
        cached = _files.remember(filename, (source, *_index(source, filename)), len(source))
    return None if cached[1] is None else (cached[1], cached[2])


def _index(source: str, filename: str) -> tuple[Optional[dict], int]:
    """Compile ``source`` as is and with fake lines; pair up their code objects."""
    try:
        compiled = compile_twice(source, filename, _NODES)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, 0
    if compiled.fake is None:
        return None, 0
    index: dict = {}
    for r, f in compiled.pairs():
        index.setdefault((r.co_firstlineno, r.co_name), []).append((r, f))
    return index, compiled.base


def _source_fold(code: CodeType) -> Optional[dict[int, int]]:
    """The exact fold of §2.1, or ``None`` when the source is missing or doesn't match."""
    found = _module_index(code.co_filename)
    if found is None:
        return None
    index, base = found
    pairs = index.get((code.co_firstlineno, code.co_name), ())
    fake = next((f for r, f in pairs if r.co_code == code.co_code), None)
    aligned = None if fake is None else align(code, fake, base)
    if aligned is None:
        return None
    first: dict[tuple, int] = {}
    out: dict[int, int] = {}
    for real, node in aligned:
        kind = "CALL" if real.name in _CALLS else real.name
        out[real.offset] = first.setdefault((node, kind), real.offset)
    return out


def _while_fold(code: CodeType) -> dict[int, int]:
    """Bytecode-only fold of ``while`` tests (§2.2): no source needed, no ``finally``/``with``.

    A backward conditional jump ends the bottom copy of a ``while`` test, and the top copy
    ends just before the jump's target. Walk both copies backwards in lockstep while the
    instructions match (opcode, argument and line; any jump matches any jump), mapping the
    bottom copy onto the top one.
    """
    lines = {o: line for start, end, line in code.co_lines() for o in range(start, end, 2)}
    instrs: list[Instruction] = []
    at: dict[int, int] = {}  # offset -> index in instrs; a skipped one -> the next kept one
    for ins in instructions(code):
        at[ins.start] = at[ins.offset] = len(instrs)
        if ins.name != "NOP":
            instrs.append(ins)

    def token(ins: Instruction) -> tuple:
        return ("jump" if ins.is_jump else ins.opcode, None if ins.is_jump else ins.arg, lines.get(ins.offset))

    out: dict[int, int] = {}
    for end, jump in enumerate(instrs):
        # POP_JUMP_IF_* and JUMP_IF_*_OR_POP on 3.10, POP_JUMP_BACKWARD_IF_* on 3.11.
        if "IF" in jump.name and jump.target is not None and at.get(jump.target, end) < end:
            top, bottom = at[jump.target] - 1, end
            while 0 <= top < bottom and token(instrs[top]) == token(instrs[bottom]):
                out[instrs[bottom].offset] = out.get(instrs[top].offset, instrs[top].offset)
                top, bottom = top - 1, bottom - 1
    return out
