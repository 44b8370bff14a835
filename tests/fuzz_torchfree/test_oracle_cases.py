"""The oracle against the spec's Cases table: each fuzzable row written as a spec by hand.

The oracle is the fuzzer's source of truth, so it is itself held to the table's exact
layers and passes here, torch-free, on every interpreter. Rows that need a module, a hook
or a buffer use the torch dialect's op names (``linear``, ``relu``, ``add_``).
"""

from __future__ import annotations

import pytest

from torchlens.fuzz import spec as S
from torchlens.fuzz.oracle import SpecError, expect
from torchlens.fuzz.render import STANDIN, TORCH

X = S.Var()


def tanh(arg=X, **kw):
    return S.Unary("tanh", arg, **kw)


def half(arg):
    return S.Scalar("mul", arg, 0.5)


def root(*body, **kw):
    return S.ClassDef(tuple(body), **kw)


def call(name, arg=X):
    return S.Assign(S.CallChild(name, arg))


RESIDUAL = S.ClassDef(
    (S.Assign(S.Binary("add", X, S.CallChild("f1", X))), S.Assign(S.Binary("add", X, S.CallChild("f2", X)))),
    children=(S.Child("f1", S.LINEAR), S.Child("f2", S.LINEAR)),
)
LINEAR_TANH = S.ClassDef((S.Assign(tanh(S.CallChild("lin", X))),), children=(S.Child("lin", S.LINEAR),))
TANH_HALF = S.FuncDef(S.PLAIN, (S.Assign(half(tanh())),))

#: Row -> (spec, expected (label, passes) of the compute layers).
ROWS = {
    "loop-tanh-mul": (S.ModelSpec(root(S.For(3, (S.Assign(half(tanh())),)))), [("tanh_1", 3), ("mul_1", 3)]),
    "loop-tanh": (S.ModelSpec(root(S.For(3, (S.Assign(tanh()),)))), [("tanh_1", 3)]),
    "written-twice": (S.ModelSpec(root(S.Assign(half(tanh())), S.Assign(half(tanh())))),
                      [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]),
    "nested-one-line": (S.ModelSpec(root(S.Assign(tanh(tanh(tanh()))))), [("tanh_1", 1), ("tanh_2", 1), ("tanh_3", 1)]),
    "residual-once": (S.ModelSpec(root(call("block"), children=(S.Child("block", S.BLOCK, 0),)), (RESIDUAL,)),
                      [("linear_1", 1), ("add_1", 1), ("linear_2", 1), ("add_2", 1)]),
    "residual-loop": (S.ModelSpec(root(S.For(3, (call("block"),)), children=(S.Child("block", S.BLOCK, 0),)),
                                  (RESIDUAL,)), [("linear_1", 3), ("add_1", 3), ("linear_2", 3), ("add_2", 3)]),
    "residual-list": (S.ModelSpec(root(S.ForModules("blocks", (S.Assign(S.CallChild("m", X)),)),
                                       children=(S.Child("blocks", S.MODULELIST, items=(S.Child("", S.BLOCK, 0),) * 3),)),
                                  (RESIDUAL,)), [(f"{f}_{n}", 1) for n in range(1, 7) for f in ("linear", "add")]),
    "relu-two-lines": (S.ModelSpec(root(S.Assign(S.Unary("relu", S.Unary("relu", X), "functional", split=True)))),
                       [("relu_1", 1), ("relu_2", 1)]),
    "helper-two-lines": (S.ModelSpec(root(S.Assign(S.CallFunc(0, X)), S.Assign(S.CallFunc(0, X))), functions=(TANH_HALF,)),
                         [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]),
    "helper-loop-line": (S.ModelSpec(root(S.For(3, (S.Assign(S.CallFunc(0, X)),))), functions=(TANH_HALF,)),
                         [("tanh_1", 3), ("mul_1", 3)]),
    "helper-two-loops": (S.ModelSpec(root(S.For(2, (S.Assign(S.CallFunc(0, X)),)), S.For(3, (S.Assign(S.CallFunc(0, X)),))),
                                     functions=(S.FuncDef(S.PLAIN, (S.Assign(tanh()),)),)), [("tanh_1", 2), ("tanh_2", 3)]),
    "same-op-twice-line-loop": (S.ModelSpec(root(S.For(3, (S.Assign(S.Binary("add", S.Unary("sin", X), S.Unary("sin", X))),)))),
                                [("sin_1", 3), ("sin_2", 3), ("add_1", 3)]),
    "raw-weight-two-lines": (S.ModelSpec(root(S.Assign(S.MatParam("W", X)), S.Assign(S.MatParam("W", X)),
                                              params=(S.ParamDecl("W"),))), [("matmul_1", 1), ("matmul_2", 1)]),
    "module-loop": (S.ModelSpec(root(S.For(3, (call("block"),)), children=(S.Child("block", S.BLOCK, 0),)), (LINEAR_TANH,)),
                    [("linear_1", 3), ("tanh_1", 3)]),
    "module-three-lines": (S.ModelSpec(root(call("block"), call("block"), call("block"), children=(S.Child("block", S.BLOCK, 0),)),
                                       (LINEAR_TANH,)), [("linear_1", 3), ("tanh_1", 3)]),
    "relu-reused": (S.ModelSpec(root(call("act"), S.Assign(S.Scalar("mul", X, 2.0)), call("act"), S.Assign(S.Scalar("sub", X, 1.0)),
                                     call("act"), children=(S.Child("act", S.RELU),))), [("relu_1", 3), ("mul_1", 1), ("sub_1", 1)]),
    "shared-two-parents": (S.ModelSpec(root(call("pa"), call("pb"), children=(S.Child("p", S.SHARED, 0, items=(S.Child("", S.BLOCK, 1),)),)),
                                       (S.ClassDef((S.Assign(S.Scalar("mul", S.CallChild("inner", X), 2.0)),), takes_inner=True), LINEAR_TANH)),
                           [("linear_1", 2), ("tanh_1", 2), ("mul_1", 1), ("mul_2", 1)]),
    "siamese": (S.ModelSpec(root(S.Assign(S.Binary("sub", S.CallChild("enc", X), S.CallChild("enc", S.Var("y")))),
                                 children=(S.Child("enc", S.BLOCK, 0),)), (LINEAR_TANH,), inputs=2),
                [("linear_1", 2), ("tanh_1", 2), ("sub_1", 1)]),
    "sum-over-heads": (S.ModelSpec(root(S.Assign(S.SumChildren("heads", X)),
                                        children=(S.Child("heads", S.MODULELIST, items=(S.Child("", S.LINEAR),) * 3),))),
                       [("linear_1", 1), ("radd_1", 1), ("linear_2", 1), ("add_1", 2), ("linear_3", 1)]),
    "map-builtin": (S.ModelSpec(root(S.Assign(S.MapSum("sin", X, 3)))), [("sin_1", 3), ("radd_1", 1), ("add_1", 2)]),
    "map-lambda": (S.ModelSpec(root(S.Assign(S.MapSum("sin", X, 3, lam=True)))), [("sin_1", 3), ("radd_1", 1), ("add_1", 2)]),
    "nested-loops-2x3": (S.ModelSpec(root(S.For(2, (S.For(3, (S.Assign(tanh()),)), S.Assign(half(X)))))),
                         [("tanh_1", 6), ("mul_1", 2)]),
    "break-partway": (S.ModelSpec(root(S.For(5, (S.Assign(tanh()), S.BreakIf(2), S.Assign(half(X)))))),
                      [("tanh_1", 3), ("mul_1", 2)]),
    "branch": (S.ModelSpec(root(S.For(4, (S.Assign(tanh()), S.IfIndex(2, 0, (S.Assign(half(X)),),
                                                                         (S.Assign(S.Scalar("add", X, 1.0)),)))))),
               [("tanh_1", 4), ("mul_1", 2), ("add_1", 2)]),
    "while-condition": (S.ModelSpec(root(S.While(3, (S.Assign(S.Scalar("add", X, 1.0)),)))),
                        [("zeros_1", 1), ("sum_1", 4), ("lt_1", 4), ("add_1", 3), ("add_2", 3)]),
    "recursion-depth-3": (S.ModelSpec(root(S.Assign(S.CallFunc(0, X, 3))), functions=(S.FuncDef(S.RECURSIVE, TANH_HALF.body),)),
                          [("tanh_1", 3), ("mul_1", 3)]),
    "recursion-two-entries": (S.ModelSpec(root(S.Assign(S.CallFunc(0, X, 2)), S.Assign(S.CallFunc(0, X, 3))),
                                          functions=(S.FuncDef(S.RECURSIVE, TANH_HALF.body),)),
                              [("tanh_1", 2), ("mul_1", 2), ("tanh_2", 3), ("mul_2", 3)]),
    "buffer-inplace-loop": (S.ModelSpec(root(S.For(3, (S.Assign(tanh()), S.BufInplace("total", "add_", X))), buffers=("total",))),
                            [("tanh_1", 3), ("add__1", 3)]),
    "buffer-two-lines": (S.ModelSpec(root(S.BufInplace("count", "add_", X), S.Assign(tanh()), S.BufInplace("count", "add_", X),
                                          buffers=("count",))), [("add__1", 1), ("tanh_1", 1), ("add__2", 1)]),
    "scalar-mul-loop": (S.ModelSpec(root(S.For(3, (S.Assign(S.Scalar("mul", X, None)),)))), [("mul_1", 3)]),
    "parameterlist-loop": (S.ModelSpec(root(S.ForParams("ws", (S.Assign(tanh(S.MatParam("w", X))),)), params=(S.ParamDecl("ws", 3),))),
                           [("matmul_1", 3), ("tanh_1", 3)]),
    "root-modulelist-glue": (S.ModelSpec(root(S.ForModules("blocks", (S.Assign(S.Binary("add", X, S.CallChild("m", X))),)),
                                              children=(S.Child("blocks", S.MODULELIST, items=(S.Child("", S.LINEAR),) * 3),))),
                             [("linear_1", 1), ("add_1", 3), ("linear_2", 1), ("linear_3", 1)]),
    "hook-module-loop": (S.ModelSpec(root(S.For(3, (call("lin"),)), children=(S.Child("lin", S.LINEAR, hooks=(0,)),)),
                                     hooks=(S.HookDef("forward", tanh()),)), [("linear_1", 3), ("tanh_1", 3)]),
    "hook-two-modules": (S.ModelSpec(root(S.ForModules("layers", (S.Assign(S.CallChild("m", X)),)),
                                          children=(S.Child("layers", S.MODULELIST, items=(S.Child("", S.LINEAR),) * 2, hooks=(0,)),)),
                                     hooks=(S.HookDef("forward", tanh()),)),
                         [("linear_1", 1), ("tanh_1", 1), ("linear_2", 1), ("tanh_2", 1)]),
    "hook-module-two-lines": (S.ModelSpec(root(call("lin"), call("lin"), children=(S.Child("lin", S.LINEAR, hooks=(0,)),)),
                                          hooks=(S.HookDef("forward", tanh()),)), [("linear_1", 2), ("tanh_1", 1), ("tanh_2", 1)]),
    "first-step-then-loop": (S.ModelSpec(root(S.Assign(tanh(S.MatParam("W", X))), S.For(3, (S.Assign(tanh(S.MatParam("W", X))),)),
                                              params=(S.ParamDecl("W"),))),
                             [("matmul_1", 1), ("tanh_1", 1), ("matmul_2", 3), ("tanh_2", 3)]),
    "exec-function-loop": (S.ModelSpec(root(S.For(3, (S.Assign(S.CallFunc(0, X)),))), functions=(S.FuncDef(S.EXEC, TANH_HALF.body),)),
                           [("tanh_1", 3), ("mul_1", 3)]),
    "twin-functions": (S.ModelSpec(root(S.Assign(S.CallFunc(0, X)), S.Assign(S.CallFunc(1, X))),
                                   functions=(S.FuncDef(S.PLAIN, (S.Assign(tanh()),)),) * 2), [("tanh_1", 1), ("tanh_2", 1)]),
    "decorator-two-lines": (S.ModelSpec(root(S.Assign(S.CallFunc(0, X))), functions=(S.FuncDef(S.DECORATED, TANH_HALF.body),)),
                            [("tanh_1", 1), ("mul_1", 1), ("tanh_2", 1), ("mul_2", 1)]),
    "sin-plus-sin-one-line": (S.ModelSpec(root(S.Assign(S.Binary("add", S.Unary("sin", X), S.Unary("sin", X))))),
                              [("sin_1", 1), ("sin_2", 1), ("add_1", 1)]),
    "output-slots": (S.ModelSpec(root(S.Assign(S.MaxSlots(X)))), [("max_1", 1), ("max_2", 1), ("expand_1", 1)]),
}


@pytest.mark.parametrize("name", ROWS)
def test_oracle_gives_the_rows_layers(name):
    model, layers = ROWS[name]
    assert expect(model, TORCH).summary() == layers


def test_module_calls_and_scopes():
    model, _ = ROWS["shared-two-parents"]
    expected = expect(model)
    assert expected.calls == {"self": 1, "pa": 1, "pa.inner": 2, "pa.inner.lin": 2, "pb": 1}
    assert [layer.module for layer in expected.layers] == ["pa.inner.lin", "pa.inner", "pa", "pb"]


def test_parameterlist_layer_lists_every_weight_and_each_pass_its_own():
    model, _ = ROWS["parameterlist-loop"]
    matmul = expect(model).layers[0]
    assert matmul.params == ("ws.0", "ws.1", "ws.2")


def test_ops_are_numbered_flat_across_nested_loops():
    model, _ = ROWS["nested-loops-2x3"]
    assert expect(model).ops[:4] == ("tanh_1:1", "tanh_1:2", "tanh_1:3", "mul_1:1")


def test_buffer_versions_group_by_writing_line():
    looped, _ = ROWS["buffer-inplace-loop"]
    two_lines, _ = ROWS["buffer-two-lines"]
    assert expect(looped).buffer_layers == (("total", 4),)  # the starting value joins the loop's layer
    assert expect(two_lines).buffer_layers == (("count", 1), ("count", 1), ("count", 1))


def test_standin_while_has_only_the_condition_op():
    model = S.ModelSpec(root(S.While(3, (S.Assign(S.Unary("tanh", X)),))))
    assert expect(model, STANDIN).summary() == [("check_1", 4), ("tanh_1", 3)]


@pytest.mark.parametrize("bad", [
    S.ModelSpec(root(S.BreakIf(1))),
    S.ModelSpec(root(S.Assign(S.CallChild("nowhere", X)))),
    S.ModelSpec(root(S.Assign(S.Var("y")))),
    S.ModelSpec(root(S.Assign(S.CallFunc(0, X))), functions=(S.FuncDef(S.PLAIN, (S.Assign(S.CallFunc(0, X)),)),)),
    S.ModelSpec(root(S.Assign(S.GenSum(X, 0)))),
])
def test_inconsistent_specs_are_refused(bad):
    with pytest.raises(SpecError):
        expect(bad)


def test_a_label_after_unrun_module_calls_is_not_static():
    """Found by the long campaign: a never-run ``sum(h(x) for h in ...)`` could number linear_1."""
    lists = tuple(S.Child(name, S.MODULELIST, items=(S.Child("", S.LINEAR),)) for name in ("ml2", "ml5"))
    model = S.ModelSpec(root(S.While(0, (S.Assign(S.SumChildren("ml2", X)),)),
                             S.ForModules("ml5", (S.Assign(S.CallChild("m", X)),)), children=lists))
    linear = expect(model).layers[-1]
    assert (linear.label, linear.passes, linear.static) == ("linear_1", 1, False)


def test_a_label_after_a_never_run_while_step_is_not_static():
    """Found by the final long campaign: the step ``c0 = c0 + 1.0`` of a ``while`` that never
    runs could number ``add_1`` for a static analysis, so a later ``add`` is not static."""
    model = S.ModelSpec(root(S.While(0, ()), S.Assign(S.Binary("add", X, X))))
    add = expect(model).layers[-1]
    assert (add.label, add.passes, add.static) == ("add_1", 1, False)


# --- issue 12's Python constructs: the same rule through generators, with, rows and slots ---------

SIN = S.Assign(S.Unary("sin", X))
CM = S.CtxDef((S.Assign(tanh()),), (SIN,))

#: Construct -> (spec, expected (label, passes)); each checked against a capture by hand.
CONSTRUCTS = {
    # ``__enter__``/``__exit__`` run from the ``with`` statement on every exit path: one layer each.
    "with-exits": (S.ModelSpec(root(S.For(4, (S.With(0, (S.Assign(half(X)), S.BreakIf(0, "continue"),
                                                          S.BreakIf(2, "raise"), S.Assign(S.Scalar("add", X, 1.0)),
                                                          S.BreakIf(3, "break"))),), shape=True)), contexts=(CM,)),
                   [("tanh_1", 4), ("mul_1", 4), ("sin_1", 4), ("add_1", 2)]),
    # A generator's body runs at each resumption from the ``for``; ``continue`` skips a yield.
    "generator": (S.ModelSpec(root(S.ForGen(0, 3, (S.Assign(half(X)),))),
                              functions=(S.FuncDef(S.GENERATOR, (S.Assign(S.Unary("sigmoid", X)),
                                                                 S.BreakIf(1, "continue"))),)),
                  [("sigmoid_1", 3), ("mul_1", 2)]),
    # Iterating a 2x4 tensor unbinds its 2 rows at once: one layer per output slot.
    "map-rows": (S.ModelSpec(root(S.Assign(S.MapRows("tanh", X)), S.Assign(S.MapRows("relu", X, lam=True)))),
                 [("unbind_1", 1), ("unbind_2", 1), ("tanh_1", 2), ("stack_1", 1),
                  ("unbind_3", 1), ("unbind_4", 1), ("relu_1", 2), ("stack_2", 1)]),
    "reduce-rows": (S.ModelSpec(root(S.Assign(S.ReduceRows("maximum", X)), S.Assign(S.ReduceRows("lambda", X, "sin")))),
                    [("unbind_1", 1), ("unbind_2", 1), ("maximum_1", 1), ("expand_1", 1),
                     ("unbind_3", 1), ("unbind_4", 1), ("sin_1", 1), ("add_1", 1), ("expand_2", 1)]),
    "for-rows": (S.ModelSpec(root(S.ForRows(X, (S.Assign(tanh()),)))),
                 [("unbind_1", 1), ("unbind_2", 1), ("add_1", 2), ("tanh_1", 2)]),
    # split(1, 1): 4 pieces; chunk(3, 1): pieces of 2, so 2; unbind(0): 2 rows.
    "multi-output": (S.ModelSpec(root(S.Assign(S.MultiOut("split", X, 1, 1)), S.Assign(S.MultiOut("chunk", X, 3, 1)),
                                      S.Assign(S.MultiOut("unbind", X, 0, 0, "call")))),
                     [*((f"split_{k}", 1) for k in range(1, 5)), ("cat_1", 1), ("chunk_1", 1), ("chunk_2", 1),
                      ("cat_2", 1), ("unbind_1", 1), ("unbind_2", 1), ("stack_1", 1)]),
    "unpacked-max": (S.ModelSpec(root(S.Unpack("max", X), S.Unpack("sort", X))),
                     [("max_1", 1), ("max_2", 1), ("unsqueeze_1", 1), ("mul_1", 1), ("unsqueeze_2", 1), ("add_1", 1),
                      ("sort_1", 1), ("sort_2", 1), ("add_2", 1)]),
    "shape-branch": (S.ModelSpec(root(S.IfShape(1, 4, (S.Assign(tanh()),), (SIN,)), S.IfShape(0, 4, (SIN,)))),
                     [("tanh_1", 1)]),
}


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_oracle_gives_the_constructs_layers(name):
    model, layers = CONSTRUCTS[name]
    assert expect(model, TORCH).summary() == layers


@pytest.mark.parametrize("bad", [
    S.ModelSpec(root(S.BreakIf(None, "raise"))),  # raise Stop() with no with to suppress it
    S.ModelSpec(root(S.While(0, (S.BreakIf(None, "raise"),)))),  # even where it never runs
    S.ModelSpec(root(S.Assign(S.CallFunc(0, X))), functions=(S.FuncDef(S.GENERATOR, ()),)),  # runs nothing
    S.ModelSpec(root(S.With(0, ()))),  # no Cm0
    S.ModelSpec(root(S.For(5, (), shape=True))),  # no bound of 5 from a 2x4 shape
])
def test_inconsistent_construct_specs_are_refused(bad):
    with pytest.raises(SpecError):
        expect(bad, TORCH)
