"""``analysis.align.instructions`` reads ``co_code`` by hand: it must agree with the ``bytecode``
package's ``ConcreteBytecode`` (what it replaced) on every code object of real modules."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap

import pytest
from bytecode import ConcreteBytecode, ConcreteInstr

import torchlens.analysis.interpreter as interpreter_module
from torchlens.analysis.align import _HAS_ARG, Instruction, instructions, walk_codes


def _by_bytecode(code) -> tuple[Instruction, ...]:
    """The reading through ``bytecode`` (``EXTENDED_ARG`` folded in, ``CACHE`` counted into the
    instruction before it, jump targets in bytes)."""
    out: list[Instruction] = []
    at = 0
    for instr in ConcreteBytecode.from_code(code):
        if not isinstance(instr, ConcreteInstr):
            continue
        size = instr.size
        if instr.name == "CACHE" and out:
            out[-1] = out[-1]._replace(end=at + size)
        else:
            jump = instr.get_jump_target(at // 2) if instr.has_jump() else None
            arg = instr.arg if isinstance(instr.arg, int) and instr.opcode in _HAS_ARG else None
            out.append(Instruction(at + size - 2, at, at + size, instr.name, instr.opcode, arg,
                                   None if jump is None else 2 * jump))
        at += size
    return tuple(out)


_BIG_ARGS = "def big():\n" + "".join(f"    v{k} = {k}.5\n" for k in range(300)) + \
    "    while v0:\n        if v1:\n            break\n        v2 += 1\n    return v299\n"


@pytest.mark.parametrize("module", [ast, inspect, json.decoder, textwrap, interpreter_module])
def test_instructions_agree_with_bytecode_package(module) -> None:
    code = compile(inspect.getsource(module), module.__file__, "exec")
    for each in walk_codes(code):
        assert instructions(each) == _by_bytecode(each), each.co_name


def test_extended_args_and_far_jumps_agree() -> None:
    """Over 256 constants and locals: ``EXTENDED_ARG`` prefixes and long jumps."""
    for each in walk_codes(compile(_BIG_ARGS, "<big>", "exec")):
        found = instructions(each)
        assert found == _by_bytecode(each)
        assert each.co_name != "big" or any(i.start < i.offset for i in found)


def test_the_interpreter_s_instructions_are_read_again_for_another_line_table() -> None:
    """The interpreter reads each code's instructions once: two codes that differ only in
    their line table (the same function with a blank line more) compare equal on 3.10, yet
    their instructions' lines differ; each must get its own."""
    import dis
    from types import CodeType

    codes = [next(c for c in compile(src, "m.py", "exec").co_consts if isinstance(c, CodeType))
             for src in ("def f(x):\n    return x + 1\n", "def f(x):\n\n    return x + 1\n")]
    for code in codes:
        assert interpreter_module._instructions(code) == tuple(dis.get_instructions(code))
