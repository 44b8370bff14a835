"""A definition read alone (``analysis.source.source_of_code``) stands exactly for its file.

The prediction reads each function it runs by itself, not its whole file: its lines at
their own line numbers under stand-in headers. These tests check that reading against the
whole file's on every construct that changes how CPython compiles a function (methods,
name mangling, ``super()``, nested functions and closures, decorators, lambdas, imported
names, ``from __future__``, definitions inside module-level blocks), and that an edited
file is never served from the cache.
"""

from __future__ import annotations

import ast
import importlib.util
import linecache
import sys
import textwrap
from types import CodeType, ModuleType

import pytest

from torchlens.analysis import source
from torchlens.analysis.align import walk_codes
from torchlens.analysis.errors import SourceUnavailableError
from torchlens.analysis.source import source_file, source_of_code, source_read_before

MODULE = '''\
from __future__ import annotations
import functools
import os.path as osp
from collections import (
    OrderedDict,
    deque)

try:
    import json
except ImportError:  # pragma: no cover
    json = None


def plain(x, y=2):
    """A docstring."""
    return osp.join(str(x), str(y)) + json.dumps(
        [x, y],
    )


def decorate(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        inner = [a for a in args if a]
        return fn(*inner, **kwargs)
    return wrapper


@decorate
def decorated(a: int, b: "int" = 3) -> int:
    return a + b


class Base:
    def __init__(self):
        self.__secret = 1

    def method(self, n):
        total = 0
        for k in range(n):
            total += self.__secret * k
        return total


class Child(Base):
    scale = lambda self, v: v * 2

    def method(self, n):
        out = super().method(n)
        squares = {k: k * k for k in range(n)}
        gen = (v for v in squares.values())
        return out + sum(gen) + OrderedDict(a=1)["a"]

    class Inner:
        def deep(self, __z):
            def closure(w):
                return w + __z + len(deque())
            return closure(1)

    @staticmethod
    def static(
        a,
        b,
    ):
        return (
            a + b
        )


if True:
    def in_block(x):
        return x * 2
'''


@pytest.fixture
def module(tmp_path, monkeypatch) -> ModuleType:
    path = tmp_path / "alone_model.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("alone_model", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "alone_model", mod)
    spec.loader.exec_module(mod)
    return mod


def _functions(mod: ModuleType) -> list:
    inner = mod.Child.Inner().deep
    return [mod.plain, mod.decorate, mod.decorated.__wrapped__, mod.Base.__init__, mod.Base.method,
            mod.Child.method, mod.Child.scale, inner, mod.Child.static, mod.in_block]


def _described(src: source.SourceFile, node: ast.AST) -> list:
    """Each node under ``node`` with its positions, code object and instructions."""
    out = []
    for each in ast.walk(node):
        code = src.codes.get(id(each))
        out.append((ast.dump(each, include_attributes=True) if not list(ast.iter_child_nodes(each)) else
                    type(each).__name__, getattr(each, "lineno", None), getattr(each, "col_offset", None),
                    None if code is None else (code.co_name, code.co_code, id(code) in src.unaligned),
                    [(offset, name) for offset, name in src.instrs.get(id(each), (None, []))[1]]))
    return out


def test_every_definition_read_alone_is_its_whole_file_reading(module) -> None:
    codes: list[tuple[CodeType, str]] = []
    for fn in _functions(module):
        fn = getattr(fn, "__func__", fn)
        codes.append((fn.__code__, fn.__qualname__))
    # decorate.<locals>.wrapper, a nested function with a closure (its __qualname__ is the
    # wrapped function's: functools.wraps copies it; 3.11+ code objects carry their own)
    codes.append((module.decorated.__code__, "decorate.<locals>.wrapper"))
    whole = source_file(module.__file__)
    for code, qualname in codes:
        src, node = source_of_code(code, qualname)
        assert src is not whole, f"{qualname} was not read alone"
        assert _described(src, node) == _described(whole, whole.node_of(code)), qualname


def test_closure_defined_in_a_call_is_read_alone(module) -> None:
    """``Child.Inner.deep.<locals>.closure``: found by reading ``deep`` alone."""
    deep = module.Child.Inner.deep.__code__
    closure = next(c for c in walk_codes(deep) if c.co_name == "closure")
    src, node = source_of_code(closure, "Child.Inner.deep.<locals>.closure")
    whole = source_file(module.__file__)
    assert src is not whole and _described(src, node) == _described(whole, whole.node_of(closure))


def test_an_edited_file_is_read_again(module, tmp_path) -> None:
    """The cache is per text: lines moved after import make the live code stale (an error,
    never the old reading, nor what was read before: ``source_read_before``); the re-imported
    module is read from the new text."""
    code = module.plain.__code__
    src, node = source_of_code(code, "plain")
    assert node.lineno == code.co_firstlineno
    assert source_read_before(code, "plain") == (src, node)
    path = tmp_path / "alone_model.py"
    path.write_text("\n\n" + MODULE)
    linecache.checkcache(str(path))
    assert source_read_before(code, "plain") is None
    with pytest.raises(SourceUnavailableError, match="changed after it was imported"):
        source_of_code(code, "plain")
    spec = importlib.util.spec_from_file_location("alone_model", path)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert source_read_before(fresh.plain.__code__, "plain") is None
    src2, node2 = source_of_code(fresh.plain.__code__, "plain")
    assert source_read_before(fresh.plain.__code__, "plain") == (src2, node2)
    assert node2.lineno == node.lineno + 2 and src2 is not src


def test_a_reading_that_does_not_compile_alone_falls_back_to_the_whole_file(tmp_path, monkeypatch) -> None:
    """A definition whose last statement goes on in a string at column 0 (its extent cannot
    be read line by line): the whole file is read instead."""
    path = tmp_path / "odd_model.py"
    path.write_text(textwrap.dedent('''\
        def odd(x):
            return x + len("""
        text
        """)
        '''))
    spec = importlib.util.spec_from_file_location("odd_model", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "odd_model", mod)
    spec.loader.exec_module(mod)
    src, node = source_of_code(mod.odd.__code__, "odd")
    assert src is source_file(str(path)) and node.name == "odd"


def test_lambdas_alike_on_one_line_are_told_apart_by_their_positions(tmp_path, monkeypatch) -> None:
    """Lambdas on one line with the same bytecode (each names its own globals) share a first
    line and a name: each is paired with its own node by its positions, not the first one's
    (which read as "the source changed after it was imported")."""
    path = tmp_path / "lambdas_model.py"
    path.write_text("probes = dict(first=lambda v: abs(v), second=lambda v: len(v), third=lambda v: str(v))\n")
    spec = importlib.util.spec_from_file_location("lambdas_model", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "lambdas_model", mod)
    spec.loader.exec_module(mod)
    columns = {}
    for name, fn in mod.probes.items():
        src, node = source_of_code(fn.__code__, fn.__qualname__)
        assert src.codes[id(node)].co_linetable == fn.__code__.co_linetable, name
        columns[name] = node.col_offset
    line = path.read_text()
    assert columns == {name: line.index(f"{name}=") + len(name) + 1 for name in mod.probes}
