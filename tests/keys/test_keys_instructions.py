"""Instruction-level key facts, torch-free: what ``f_lasti`` becomes and when it is stable.

Covers the version-specific parts of :func:`analysis.sites.instruction_place` (design note
§1, §2, §8, §9): keys that don't move under specialization, operators keyed at their
``BINARY_OP``, 3.10's ``EXTENDED_ARG`` prefixes, ``-X no_debug_ranges`` (no columns), and
:func:`analysis.fold310.fold_map` itself, including its bytecode-only fallback.
"""

from __future__ import annotations

import dis
import json
import linecache
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from models import standin as m
from models.standin import call_copies, ops

from torchlens.analysis.fold310 import fold_map
from torchlens.analysis.sites import instruction_place
from torchlens.capture.frames import SKIP
from torchlens.capture.standin import StandinRecorder, Value

KEYS_DIR = Path(__file__).resolve().parent
REPO = KEYS_DIR.parent.parent


class SpyRecorder(StandinRecorder):
    """Also notes the raw ``f_lasti`` of the frame running ``code`` at every record."""

    def __init__(self, code):
        super().__init__()
        self._roles[id(SpyRecorder.record.__code__)] = SKIP
        self.code = code
        #: (op name, chain id) -> raw f_lasti values seen in ``code``'s frame.
        self.raw = defaultdict(set)

    def record(self, name):
        frame = sys._getframe(1)
        while frame.f_code is not self.code:
            frame = frame.f_back
        super().record(name)
        self.raw[self.records[-1]].add(frame.f_lasti)


# --- specialization ---------------------------------------------------------------------------


def test_keys_are_stable_under_specialization():
    runs = 30
    rec = SpyRecorder(m.many_instruction_kinds.__code__)
    o = ops(rec, *m.KINDS_OPS)
    rec.run(m.run_kinds, o, m.Box(o), Value(rec), runs)
    per_run = len(rec.records) // runs
    keys = [frozenset(rec.records[k * per_run:(k + 1) * per_run]) for k in range(runs)]
    assert len(set(keys)) == 1
    assert rec.layers() == [(name, passes * runs) for name, passes in m.KINDS_LAYERS]
    if sys.version_info[:2] in ((3, 11), (3, 12)):
        # Warm-up moved the raw f_lasti of some sites (CACHE, PRECALL): the keys did not move.
        assert any(len(lastis) > 1 for lastis in rec.raw.values())


# --- operators --------------------------------------------------------------------------------


def test_value_operators_are_keyed_at_their_instruction():
    rec = StandinRecorder()
    a, b = Value(rec), Value(rec)
    rec.run(m.value_operators, ops(rec), a, b)
    assert rec.layers() == [("add", 1), ("mul", 1), ("matmul", 1), ("getitem", 1)]
    code = m.value_operators.__code__
    operators = {"BINARY_OP", "BINARY_ADD", "BINARY_MULTIPLY", "BINARY_MATRIX_MULTIPLY",
                 "BINARY_SUBSCR"}
    instrs = [i for i in dis.get_instructions(code) if i.opname in operators]
    assert [places for _, places in rec.sites()] == [
        (instruction_place(code, i.offset),) for i in instrs
    ]
    if sys.version_info >= (3, 11):  # the column span is the operator expression
        source = Path(code.co_filename).read_text().splitlines()
        spans = [source[p.line - 1][p.col:p.end_col] for _, (p,) in rec.sites()]
        assert spans == ["a + b", "c * 2", "d @ a", "e[0]"]
    else:  # the offset is the operator instruction
        assert [p.offset for _, (p,) in rec.sites()] == [i.offset for i in instrs]


# --- EXTENDED_ARG (3.10 reports the prefix's offset) ------------------------------------------

#: 300 global names come first, so the name index of ``prop`` needs an EXTENDED_ARG prefix.
EXTENDED_SOURCE = f"""\
def extended(o, box, n):
    if o is None:
        return ({", ".join(f"n{k}" for k in range(300))})
    y = box.prop
    i = 0
    while box.prop is not None and i < n:
        i += 1
    return i
"""


class SpyBox:
    """A property that notes its caller's raw ``f_lasti`` and records an op."""

    def __init__(self, o):
        self.o = o
        self.lastis = []

    @property
    def prop(self):
        self.lastis.append(sys._getframe(1).f_lasti)
        return self.o.prop(self)


@pytest.mark.parametrize("register", [True, False], ids=["source", "no-source"])
def test_extended_arg_prefix_gives_the_instructions_place(register):
    filename = f"<keys-extended-{register}>"
    fn = m.exec_function(EXTENDED_SOURCE, "extended", filename, register=register)
    code = fn.__code__
    loads = [i for i in dis.get_instructions(code)
             if i.opname == "LOAD_ATTR" and i.argval == "prop"]
    assert len(loads) == 3  # y = box.prop, and the while test twice
    before = {i.offset + 2: i.opname for i in dis.get_instructions(code)}
    assert all(before.get(i.offset) == "EXTENDED_ARG" for i in loads)

    rec = StandinRecorder()
    box = SpyBox(ops(rec, "prop"))
    rec.run(fn, box.o, box, 2)
    assert rec.layers() == [("prop", 1), ("prop", 3)]
    first, *rest = [places[0] for _, places in rec.sites()]
    assert first == instruction_place(code, loads[0].offset)
    assert set(rest) == {instruction_place(code, loads[1].offset)}
    if sys.version_info < (3, 11):
        assert box.lastis[0] == loads[0].offset - 2  # f_lasti is the prefix's offset
        assert first.offset == loads[0].offset


# --- -X no_debug_ranges: no columns, keys fall back to offsets --------------------------------

NODEBUG_SCRIPT = """
import json, sys
from models import standin as m
from torchlens.capture.standin import StandinRecorder, Value

out = {}
def run(key, model, *args, **kw):
    rec = m.trace(model, *args, **kw)
    out[key] = rec.layers()
    out.setdefault("cols", []).extend(p.col for _, ps in rec.sites() for p in ps)

run("two_calls", m.two_calls_one_line, value=True)
run("while", m.while_test, 3, names=("check", "body"))
run("finally", m.run_finally_exits, ["normal", "return", "raise", "break"], names=("fin",))
run("with", m.run_with_exits, ["normal", "return", "raise", "continue"], names=("enter", "exit"))
rec = StandinRecorder()
o = m.ops(rec, *m.KINDS_OPS)
rec.run(m.run_kinds, o, m.Box(o), Value(rec), 25)
out["kinds"] = rec.layers()
print(json.dumps(out))
"""


def test_no_debug_ranges_falls_back_to_offsets():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(KEYS_DIR.parent)]))  # models.standin
    env.pop("PYTHONNODEBUGRANGES", None)
    done = subprocess.run([sys.executable, "-X", "no_debug_ranges", "-c", NODEBUG_SCRIPT],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = {k: v if k == "cols" else [tuple(layer) for layer in v]
           for k, v in json.loads(done.stdout).items()}
    assert set(out.pop("cols")) == {None}  # the flag took effect: no columns anywhere
    assert out == {
        "two_calls": [("op", 1), ("op", 1), ("add", 1)],
        "while": [("check", 4), ("body", 3)],
        "finally": [("fin", 4)],
        "with": [("enter", 4), ("exit", 4)],
        "kinds": [(name, passes * 25) for name, passes in m.KINDS_LAYERS],
    }


# --- fold_map itself --------------------------------------------------------------------------


@pytest.mark.parametrize("fn, tag, distinct", [
    (m.while_two_ops_in_test, "test", 2),  # lo(i), hi(n): each written twice
    (m.finally_exits, "fin", 1),  # one copy per exit path
    # Ctx(o), and __exit__ once per exit path. 3.13 gives __exit__ the location of the
    # context expression Ctx(o), so there the two share a line as they share a position.
    (m.with_exits, "with", 1 if sys.version_info >= (3, 13) else 2),
])
def test_fold_map_merges_copies_and_nothing_else(fn, tag, distinct):
    copies = call_copies(fn, tag)
    assert len(copies) > distinct
    fold = fold_map(fn.__code__)
    assert len({fold.get(o, o) for o in copies}) == distinct


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from _code_objects(const)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="compares with 3.11+ column positions")
def test_fold_map_never_merges_calls_at_different_positions():
    source = Path(m.__file__).read_text()
    merged = 0
    for code in _code_objects(compile(source, m.__file__, "exec", dont_inherit=True)):
        fold = fold_map(code)
        positions = dict(zip(range(0, len(code.co_code), 2), code.co_positions()))
        for ins in dis.get_instructions(code):
            if ins.opname in m.CALLS and fold.get(ins.offset, ins.offset) != ins.offset:
                assert positions[fold[ins.offset]] == positions[ins.offset], (code, ins)
                merged += 1
    assert merged >= 10


STALE_SOURCE = """\
def stale(o, n, mode):
    i = 0
    while o.check(i) < n:
        i += 1
    try:
        if mode:
            return i
    finally:
        o.fin(i)
    return i
"""


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="3.12+ while loops jump back unconditionally: nothing to fold")
def test_fold_map_falls_back_to_the_while_fold_when_source_is_stale():
    filename = "<keys-stale>"
    fn = m.exec_function(STALE_SOURCE, "stale", filename)
    shifted = "# one more line\n" + STALE_SOURCE
    linecache.cache[filename] = (len(shifted), None, shifted.splitlines(True), filename)
    code = fn.__code__
    lines = {o: ln for start, end, ln in code.co_lines() for o in range(start, end, 2)}
    fold = fold_map(code)

    def distinct(line):
        calls = [i.offset for i in dis.get_instructions(code)
                 if i.opname in m.CALLS and lines.get(i.offset) == line]
        assert len(calls) >= 2
        return len({fold.get(o, o) for o in calls})

    assert distinct(3) == 1  # while test: folded from bytecode alone
    assert distinct(9) > 1  # finally body: needs the source, which doesn't match


def test_fold_map_is_computed_once_per_code_object():
    code = m.while_test.__code__
    assert fold_map(code) is fold_map(code)
