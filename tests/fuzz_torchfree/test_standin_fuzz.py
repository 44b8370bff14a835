"""The fuzzer's torch-free half: drawn control flow over plain Python, oracle vs recorder keys.

Hypothesis draws ``standin``-dialect specs (loops, ``while``, ``break``, branches, helpers,
decorators, ``exec``, recursion, comprehensions, ``sum``, ``map``); each is rendered to a real
file and run under the stand-in recorder, whose call-site keys are this interpreter's own
(3.10 offsets with the folded ``while`` test, 3.11+ spans, 3.12's inlined comprehensions).
The layers it forms must be the oracle's. Also checks the shrinker, which is torch-free.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings

from torchlens.fuzz import spec as S
from torchlens.fuzz.oracle import SpecError, TooLarge, expect
from torchlens.fuzz.render import STANDIN
from torchlens.fuzz.shrink import shrink, size
from torchlens.fuzz.standin import run_standin
from torchlens.fuzz.strategies import specs
from torchlens.fuzz.walk import walk

X = S.Var()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs(STANDIN))
def test_standin_keys_form_the_oracles_layers(model):
    # Specs the oracle refuses as too large are skipped, as the fuzz campaign skips them.
    try:
        expected = expect(model, STANDIN)
    except TooLarge:
        assume(False)
        raise
    assert run_standin(model) == [(layer.func, layer.passes) for layer in expected.layers]


def test_standin_while_condition_is_one_layer_on_this_interpreter():
    model = S.ModelSpec(S.ClassDef((S.While(3, (S.Assign(S.Unary("tanh", X)),)),)))
    assert run_standin(model) == [("check", 4), ("tanh", 3)]


def test_standin_recursion_and_decorator():
    body = (S.Assign(S.Scalar("mul", S.Unary("tanh", X))),)
    model = S.ModelSpec(
        S.ClassDef((S.Assign(S.CallFunc(0, X, 2)), S.Assign(S.CallFunc(0, X, 3)), S.Assign(S.CallFunc(1, X)))),
        functions=(S.FuncDef(S.RECURSIVE, body), S.FuncDef(S.DECORATED, body)),
    )
    assert run_standin(model) == [("tanh", 2), ("mul", 2), ("tanh", 3), ("mul", 3),
                                  ("tanh", 1), ("mul", 1), ("tanh", 1), ("mul", 1)]


def _has_while_with_tanh(model: S.ModelSpec) -> bool:
    """A stand-in for "fails": valid (the oracle accepts it) and has a tanh in a running while."""
    try:
        expect(model)
    except SpecError:
        return False
    return any(isinstance(node, S.While) and node.n >= 1 and any(
        isinstance(inner, S.Unary) and inner.op == "tanh" for _, inner, _ in walk(S.ModelSpec(S.ClassDef(node.body)))
    ) for _, node, _ in walk(model))


def test_shrinker_reaches_a_minimal_spec():
    big = S.ModelSpec(S.ClassDef((
        S.Assign(S.Unary("sin", X)),
        S.For(3, (S.While(2, (S.Assign(S.Binary("add", S.Unary("tanh", S.Unary("sin", X)), X)), S.Assign(X))),)),
        S.Assign(S.GenSum(S.Unary("sigmoid", X), 3)),
    )), functions=(S.FuncDef(S.PLAIN, (S.Assign(S.Unary("tanh", X)),)),))
    small = shrink(big, _has_while_with_tanh)
    assert small == S.ModelSpec(S.ClassDef((S.While(1, (S.Assign(S.Unary("tanh", X)),)),)))
    assert size(small) < size(big)


def test_a_loop_over_a_buffers_rows_writes_no_buffer():
    """``for r in self.buf: self.buf.mul_(0.5)`` raises in torch once the buffer needs grad (a
    5,000-model campaign drew it): a body over rows that read a buffer gets no buffer."""
    from torchlens.fuzz.strategies import Reach, rows_body_reach

    reach = Reach("torch", buffers=("buf0",))
    assert rows_body_reach(S.ReadBuffer("buf0"), reach).buffers == ()
    assert rows_body_reach(S.Binary("add", S.Var(), S.Unary("tanh", S.ReadBuffer("buf0"))), reach).buffers == ()
    assert rows_body_reach(S.Unary("tanh", S.Var()), reach).buffers == ("buf0",)
