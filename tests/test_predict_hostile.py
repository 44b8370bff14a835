"""No gap means right (issue 12): over models written to trip the prediction, a prediction
with no gap and no note agrees with the capture; every construct it cannot follow exactly
says so, with the line it stopped at; and every prediction terminates within its budget.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
import threading

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

import torchlens as tl
from torchlens.analysis import lru
from torchlens.analysis.prediction import Prediction
from models import hostile as H

MODELS = H.hostile_models()

def line_of(cls: type, text: str) -> str:
    """``hostile.py:N`` of the first line of ``cls``'s source that holds ``text``."""
    lines, first = inspect.getsourcelines(cls)
    return f"hostile.py:{first + next(k for k, line in enumerate(lines) if text in line)}"


#: Constructs the prediction reports instead of following: model -> text its gap or note gives.
REPORTED = {
    "EvalString": f"eval/exec of a string at {line_of(H.EvalString, 'eval(')}",
    "ExecString": f"eval/exec of a string at {line_of(H.ExecString, 'exec(')}",
    "MatchOnTensor": f"match at {line_of(H.MatchOnTensor, 'match ')}",
    "UnknownClassRaised": f"except at {line_of(H.UnknownClassRaised, 'except ValueError:')} in "
                          "UnknownClassRaised.forward: whether it catches self.error() raised",
    "BigWhile": f"while at {line_of(H.BigWhile, 'while ')} in BigWhile.forward ran past 10,000 passes",
    "Recurse": "recursion deeper than 24 calls",
    "Lost": "cannot be read (no Python source)",
    "ModuleInBranch": f"<Tanh#1>, a Tanh outside the model's modules, is first called at "
                      f"{line_of(H.ModuleInBranch, 'nn.Tanh()')} in ModuleInBranch.forward under a branch",
    "ExecBranch": "branchy: no source for '<string>'",
    "CacheUnderBranch": f"an item write into a live dict at {line_of(H.CacheUnderBranch, 'self.cache[')} in "
                        "CacheUnderBranch.forward under a branch "
                        "the prediction cannot decide: what reads it later is not predicted",
    "LostFlag": f"or of _opaque(x > 0), a value the prediction lost track of (Opaque cannot be read (no Python "
                f"source)) at {line_of(H.LostFlag, '_opaque(x > 0) |')} in LostFlag.forward",
    "SelfIterating": f"iterating a Counting at {line_of(H.SelfIterating, 'for t in')} in SelfIterating.forward runs "
                     "its __next__ until it raises StopIteration: not followed",
    "SortedThree": f"sorted compares 3 tensors at {line_of(H.SortedThree, 'sorted(')} in SortedThree.forward: how "
                   "many comparisons (ops) run depends on their values",
}
REPORTED["CFunctionGivenTensors"] = (
    f"heappush (C code of module _heapq) given a tensor at {line_of(H.CFunctionGivenTensors, 'heappush(')} in "
    "CFunctionGivenTensors.forward: the ops it may run are not predicted")
REPORTED["RaiseInDataLoop"] = (f"try at {line_of(H.RaiseInDataLoop, 'try:')} in RaiseInDataLoop.forward: a raise in "
                               "its body was taken as not run")
# its second try: an arm that can only raise is taken as not run, and the elif's test runs after it
REPORTED["EveryArmRaises"] = (f"try at hostile.py:{int(line_of(H.EveryArmRaises, 'x.mean() > 0').split(':')[1]) - 1} "
                              "in EveryArmRaises.forward: a raise in its body was taken as not run")
REPORTED["SuppressedKeyError"] = f"{{'a': x}}['b'] raises KeyError at {line_of(H.SuppressedKeyError, '.cos()')}"
REPORTED["GeneratorLeftInFinally"] = (f"generator rows ({line_of(H.GeneratorLeftInFinally, 'def rows')}) is left at a "
                                      "yield and closed later: what its finally or __exit__ runs then is not predicted")
REPORTED["LostLeftOperand"] = (f"mul of {{x: 2}}[x], a value the prediction lost track of (item of an unknown value) "
                               f"at {line_of(H.LostLeftOperand, '{x: 2}')} in LostLeftOperand.forward: taken as a tensor")
REPORTED["StarUnknown"] = f"pair is given *items the prediction cannot list at {line_of(H.StarUnknown, 'self.pair(*xs)')}"
REPORTED["WrittenUnknown"] = (f"add of d[0], a value the prediction lost track of (item of an unknown value) at "
                              f"{line_of(H.WrittenUnknown, 'd[0] + x')} in WrittenUnknown.forward: taken as a tensor")
REPORTED["LocalClassRunsCode"] = (f"class Offset defined at {line_of(H.LocalClassRunsCode, 'class Offset')} in "
                                  "LocalClassRunsCode.forward: torch.ones(4) at line "
                                  f"{line_of(H.LocalClassRunsCode, 'w = torch.ones').split(':')[1]} runs code")
if sys.version_info < (3, 11):
    REPORTED["ExecFunction"] = "scaled_tanh: no source for '<string>'"


def exact(model: nn.Module, *inputs) -> Prediction:
    """``tl.predict(model, *inputs)``, asserted to claim everything (no gap, no note) and to
    agree with the capture on every op."""
    pred = tl.predict(model, *inputs)
    report = tl.trace(model, *inputs).check_prediction(pred)
    assert report.ok and report.coverage == 1.0 and not pred.gaps and not pred.notes, (type(model).__name__, str(report))
    return pred


@pytest.mark.parametrize("name", list(MODELS))
def test_no_gap_and_no_note_means_the_capture_agrees(name: str):
    model, inputs = MODELS[name]
    pred = tl.predict(model, *inputs)
    report = tl.trace(model, *inputs).check_prediction(pred)
    said = [g.why for g in pred.gaps] + list(pred.notes)
    if not said:
        assert report.ok, str(report)
    if name in REPORTED:
        assert any(REPORTED[name] in why for why in said), said
    if not report.ok:
        assert said, f"{name}: wrong with no gap and no note\n{report}"


def test_exact_where_it_says_nothing():
    """The constructs the prediction now follows: generators (``yield from``, consumed by a loop,
    ``sum`` and ``list``), context managers left every way, match on constants, sorted items,
    __call__ overrides, custom autograd functions, a data-dependent while True, higher-order ops,
    builtins that call back (reduce, map, filter, sorted and max with a key), tensors iterated
    by comprehensions, records whose constructors Python generates (dataclasses, named tuples),
    RNNs over packed sequences, operator functions, list.sort with a key, itertools, descriptors,
    next of iterators the code made, comparisons of built lists, ``str.join`` of a map and
    version checks with ``packaging``, sums of sizes (a live list copied and written), sets of known items, builtins of
    unknown numbers, special methods in Python reached by syntax and builtins, an input's
    metadata after in-place writes, dicts built by ``dict.fromkeys``, loops over set comprehensions, names tested against ``None``,
    functions named like a list's methods after a write into a live dict, ``self.dtype`` and a
    loop over the parameters of a module registered twice (torch's memo sets), lists of known
    sizes joined by ``+``, NumPy's ufuncs on numbers, raises the run is certain of taken by the except arm their class picks, tests on tensors made from constants alone,
    classes with a ``__new__`` in Python, torch's legacy constructors, checks on data-sized selections, a try whose arm only raises again,
    branches whose every arm raises inside a try, a try around a cached plan or a dict read that cannot raise,
    a generator expression's items asked for at two places, lists, tuples and dicts a module holds compared with
    ones the code makes, callable() of a tensor an op made, an argument check
    inside a with whose __exit__ cannot suppress, generators closed (started or not), next of an exhausted iterator
    caught, a context manager whose generator yields inside a with of its own,
    zip(strict=True) of a source whose length the data decides, a class's __subclasses__ walked by a worklist,
    records compared by identity given to a cached function, sets changed by their methods and operators and
    iterated in Python's order (copies sized afresh, slots freed by removals), a deep copy's list and set changed,
    dicts reordered by move_to_end and popitem, a named tuple's _replace and _asdict, classes defined in forward, branches on logging's answers,
    dicts merged by ``|`` and ``|=``, iterators over modules."""
    names = ["GeneratorForward", "GeneratorsEverywhere", "Match", "SortedItems", "CallOverrideParent", "CustomFunction",
             "WhileTrue", "ModelOutputStyle", "SequenceInstance", "Cond", "Callbacks", "Comprehensions", "Records", "Packed", "MoreCallbacks", "Nexts",
             "LiveCaches", "FlagsAndShapes", "ModuleInForward", "SortedTensors", "PlainChecks",
             "ShiftedWindows", "SetsAndNumbers", "Specials", "SequentialSubclass",
             "InputWritten", "OperatorFunctions", "ShortCircuits", "NamedOutputs", "ReadsOneElement", "Asserts",
             "OutsideData", "ConstantProbe", "BuiltContainers", "SetComprehensions", "NarrowedNone",
             "MutatorNames", "ParameterQueries", "KnownLists", "NumpyNumbers", "TryExcept", "CaughtByClass",
             "ConstantContents", "PythonNew", "LegacyConstructors", "DataSizedCheck",
             "ReraisingArm", "GuardedCache", "AskedTwice", "LiveListsCompared",
             "CallableChecks", "ArgumentCheckInWith", "GeneratorProtocol", "ZipStrict",
             "SubclassWalk", "CachedPlans", "SetMutations", "SetOrder",
             "DeepCopiedRecord", "ReorderedRecords", "LocalClasses", "LoggingQueries", "DictMerges", "IteratorOfModules"]
    if sys.version_info >= (3, 11):  # 3.10 gives each way out of a with its own __exit__ place
        names.append("ContextManagers")
        names.append("ExecFunction")  # read from its bytecode (3.11+ positions)
    for name in names:
        model, inputs = MODELS[name]
        exact(model, *inputs)


@pytest.mark.parametrize("name, expected", [
    ("EnumerateFrom", {"linear": "1", "sin": "2", "cos": "1"}),  # counted from its start
    ("CallableChecks", {"linear": "1", "view": "1", "sum": "1"}),  # callable() of a tensor is False
    ("LiveListsCompared", {"permute": "1", "sin": "1", "cos": "1"}),  # a module's lists compared for real
])
def test_decided_where_an_optional_count_would_also_check_ok(name: str, expected: dict[str, str]):
    """Tests an undecided reading leaves optional (``0..1``), which ``exact`` alone accepts."""
    model, inputs = MODELS[name]
    counts = {layer.func_name: str(layer.count) for layer in exact(model, *inputs).layers}
    assert counts == expected, counts


def test_zip_of_a_known_and_an_unknown_length_runs_each_known_item_at_most_once():
    model, inputs = MODELS["ZipMixedLengths"]
    pred = tl.predict(model, *inputs)
    assert tl.trace(model, *inputs).check_prediction(pred).ok
    counts = {(layer.module, layer.func_name): str(layer.count) for layer in pred.layers}
    assert counts[("self", "sin")] == "1" and counts[("self", "mul")] == "2", counts  # levels 1, 0: known
    assert counts[("layers.0", "linear")] == counts[("layers.1", "linear")] == "1+0..1", counts


def test_zip_strict_of_an_unknown_length_runs_each_known_item_once():
    model, inputs = MODELS["ZipStrict"]
    pred = exact(model, *inputs)
    counts = {(layer.module, layer.func_name): str(layer.count) for layer in pred.layers}
    assert counts[("layers.0", "linear")] == counts[("layers.1", "linear")] == "1", counts


def test_operator_functions_and_builtins_given_tensors_run_the_tensors_operators():
    model, inputs = MODELS["OperatorFunctions"]
    pred = tl.predict(model, *inputs)
    counts = {layer.func_name: str(layer.count) for layer in pred.layers}
    assert {name: counts.get(name) for name in ("neg", "positive", "abs", "invert", "getitem", "setitem", "add_",
                                                "matmul", "lshift", "rshift", "ilshift", "pow", "rpow", "reversed",
                                                "unbind", "T", "sum", "relu")} == {
        "neg": "2", "positive": "1", "abs": "1", "invert": "1", "getitem": "2", "setitem": "1", "add_": "1",
        "matmul": "1", "lshift": "1", "rshift": "1", "ilshift": "1", "pow": "1", "rpow": "1", "reversed": "1",
        "unbind": "1", "T": "2", "sum": "1", "relu": "1"}, counts  # neg: a layer and map's; T: attrgetter("T.T")
    c_code, _ = MODELS["CFunctionGivenTensors"]
    said = [g.why for g in tl.predict(c_code, *inputs).gaps]
    assert any("operator.countOf given a tensor" in why for why in said), said


def test_torchs_type_error_guard_is_decided_by_the_computed_op_and_a_models_own_try_is_not():
    model, inputs = MODELS["ReflectedOperators"]
    pred = tl.predict(model, *inputs)
    own = f"try at {line_of(H.ReflectedOperators, 'try:')} in ReflectedOperators.forward"
    assert [note.split(": predicted")[0] for note in pred.notes] == [own], pred.notes
    assert tl.trace(model, *inputs).check_prediction(pred).ok
    assert {layer.func_name for layer in pred.layers} >= {"rsub", "rdiv", "pow", "rpow", "floordiv", "rmod"}
    unknown = tl.predict(model)  # without inputs nothing is computed: the operands' types decide the guard
    assert [note.split(": predicted")[0] for note in unknown.notes] == [own], unknown.notes

    class MatmulNumber(nn.Module):  # matmul of a number raises TypeError inside the guard: NotImplemented
        def forward(self, x):
            return x.relu() if x.__rmatmul__(2) is NotImplemented else x

    said = tl.predict(MatmulNumber()).notes
    assert any("_handle_torch_function_and_wrap_type_error_to_not_implemented" in note for note in said), said


@pytest.mark.parametrize("seed", range(4))
def test_short_circuits_over_data_dependent_iterators_hold_on_any_data(seed: int):
    """Whatever the data decides (which item stops ``any``, which rows a filter keeps), the
    prediction holds: the counts after an undecided item are ranges."""
    model, _ = MODELS["ShortCircuits"]
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed)) * 2
    pred = tl.predict(model, x)
    assert not pred.gaps and not pred.notes
    assert tl.trace(model, x).check_prediction(pred).ok
    counts = {layer.func_name: (layer.count.lo, layer.count.hi) for layer in pred.layers}
    assert counts["where"] == (1, 1) and counts["float"] == (1, 1) and counts["int"] == (1, 1), counts


def test_conditions_on_built_lists_joined_maps_and_versions_are_decided():
    model, inputs = MODELS["PlainChecks"]
    assert {layer.func_name: str(layer.count) for layer in tl.predict(model, *inputs).layers} == {
        "sin": "1", "cos": "1", "exp": "1"}


@pytest.mark.parametrize("sign", [1, -1])
def test_a_name_tested_against_none_is_narrowed_and_a_pair_of_ints_is_known(sign: int):
    pred = exact(H.NarrowedNone(), torch.randn(3, 4).abs() * sign)
    assert {layer.func_name: str(layer.count) for layer in pred.layers}["relu"] == "4"  # the rows of unfold's output


def test_autocast_state_bindings_are_no_ops():
    model, inputs = MODELS["AutocastOff"]
    pred = exact(model, *inputs)  # set_autocast_enabled_1... were predicted, and a gap at a name it did not know
    assert [layer.func_name for layer in pred.layers] == ["t", "matmul", "relu"], pred.layers


def test_operators_defined_in_python_run_their_ops():
    model, inputs = MODELS["Operators"]
    pred = tl.predict(model, *inputs)
    assert tl.trace(model, *inputs).check_prediction(pred).ok and not pred.gaps and not pred.notes
    counts = [(layer.func_name, str(layer.count)) for layer in pred.layers]
    assert counts[:5] == [("sin", "1"), ("cos", "1"), ("add", "1"), ("add", "1"), ("exp", "1")], counts
    assert ("mul", "1") in counts[5:7] and ("lt", "1") in counts  # Doubled.__radd__ first; Boxed.__lt__
    assert counts[-2:] == [("eq", "1+0..1"), ("all", "1+0..1")]  # the second item only if the first differs


@pytest.mark.parametrize("form", H.ITERATE_UNION_FORMS)
@pytest.mark.parametrize("sign", [1, -1])
def test_iterating_a_value_from_an_undecided_branch_runs_each_options_iteration(form: str, sign: int):
    """``xs`` is a tensor or a list, as the data decides: iterating it runs the tensor's
    ``unbind`` (0..1 times) and what follows once per item, on every path that iterates."""
    exact(H.IterateUnion(form), torch.randn(3, 4).abs() * sign)


@pytest.mark.parametrize("sign", [1, -1])
def test_keys_of_a_dict_from_an_undecided_branch_read_it(sign: int):
    exact(H.KeysUnion(), torch.randn(3, 4).abs() * sign)


def test_while_true_with_a_data_dependent_break_predicts_n_passes():
    model, inputs = MODELS["WhileTrue"]
    pred = tl.predict(model, *inputs)
    assert str(pred["mul_1"].count) == "N" and pred["mul_1"].num_passes is None
    assert "break the prediction cannot decide" in pred["mul_1"].passes_note


def test_caches_filled_in_forward_are_followed_on_a_copy_both_empty_and_filled():
    """A dict or list of the live model that forward writes into (timm's attention-bias cache,
    a class-level table shared by instances) is copied on the first write: the prediction
    follows the call that fills it and the calls that find it filled, and never changes it."""
    H.BiasTable.table.clear()
    model, x = H.LiveCaches(), torch.randn(3, 4)
    counts = []
    for _ in range(2):  # empty caches, then the ones the trace filled
        live = (dict(model.first.cache), dict(H.BiasTable.table), list(model.seen), dict(model.named))
        pred = tl.predict(model, x)
        assert (model.first.cache, H.BiasTable.table, model.seen, model.named) == live
        report = tl.trace(model, x).check_prediction(pred)
        assert report.ok and report.coverage == 1.0 and not pred.gaps and not pred.notes, str(report)
        counts.append(sum(layer.func_name in ("mul", "ones") for layer in pred.layers))
    assert counts == [6, 3]  # bias * 2 once per instance and ones once (the shared table): then read back
    assert model.first.cache and H.BiasTable.table and model.named


def test_lru_cache_calls_follow_the_live_cache_and_are_a_gap_when_it_cannot_be_read(monkeypatch):
    """From empty caches the run fills them itself: misses run the function, hits run nothing;
    a cache filled before the prediction (here by the trace) is read: its hits run nothing, a
    key it evicted runs again. A cache whose content cannot be read is a gap."""
    H.Cached.mask.cache_clear()
    H.Cached.scale.cache_clear()
    model, x = H.Cached(), torch.randn(3, 4)
    made = []
    for _ in range(2):  # empty caches, then the ones the first trace filled
        pred = exact(model, x)
        made.append([layer.func_name for layer in pred.layers if layer.func_name in ("tril", "full")])
    # mask once (then a hit), scale(4), scale(1), scale(4) again (maxsize=1); then mask is a hit
    # from the start and scale's cache holds scale(4): a hit, then scale(1) and scale(4) run
    assert made == [["tril", "full", "full", "full"], ["full", "full"]], made
    monkeypatch.setattr(lru, "entries", lambda wrapper: None)
    why = " ".join(g.why for g in tl.predict(model, x).gaps)
    assert f"mask is cached (functools.lru_cache) at {line_of(H.Cached, 'self.mask(4)')} in Cached.forward: its " \
           "cache holds 1 entry that cannot be read, so whether it runs is not known" in why, why


def test_a_cached_call_given_a_record_the_run_built_is_decided_from_empty_caches():
    H._recipe.cache_clear()
    H._cooked.cache_clear()
    pred = exact(H.CachedRecipes(), torch.randn(3, 4))
    names = [layer.func_name for layer in pred.layers]
    assert names.count("view") == 2 and "sin" not in names, pred.layers  # the except arm: not even optional
    assert H._cooked.cache_info().currsize == 1  # the trace's run: one miss, one hit


def test_records_compared_by_identity_are_cache_misses_for_sure():
    H._plan.cache_clear()
    H._planned.cache_clear()
    pred = exact(H.CachedPlans(), torch.randn(3, 8))
    assert [layer.func_name for layer in pred.layers].count("view") == 2


def test_a_set_iterates_in_pythons_order_after_copies_and_removals():
    """``s`` starts at 1, each copy of it at 16, ``{0, *s}`` at 0; after ``remove(1)``, 33 takes slot 1."""
    pred = exact(H.SetOrder(), torch.randn(3))
    assert {layer.func_name: str(layer.count) for layer in pred.layers} == {
        "sin": "1", "cos": "5", "relu": "1"}, pred.layers


def test_a_module_built_in_forward_predicted_from_its_class_is_a_gap():
    """From a class there is no live model to count modules in: the capture's ``<Cls#k>`` is unknown."""
    why = " ".join(g.why for g in tl.predict(H.ModuleInForward).gaps)
    assert f"ReLU built while the model runs at {line_of(H.ModuleInForward, 'nn.ReLU()')}" in why
    assert "predicted from its class" in why


def test_a_list_changed_under_an_undecided_branch_is_not_unrolled():
    model, inputs = MODELS["ListUnderBranch"]
    pred = tl.predict(model, *inputs)
    assert pred["add_1"].num_passes is None  # once, or twice had the branch run
    assert tl.trace(model, *inputs).check_prediction(pred).ok


def test_recursion_cut_off_is_a_lower_bound_not_an_exact_count():
    model, inputs = MODELS["Recurse"]
    pred = tl.predict(model, *inputs)
    assert pred["tanh_1"].num_passes is None and str(pred["tanh_1"].count) == "25+"


def test_higher_order_ops_are_one_op_each_and_quick():
    pred = tl.predict(H.Cond(), torch.randn(3), max_steps=1_000)  # once 40-50 s of torch's own code
    assert not pred.gaps and not pred.notes
    assert [(layer.func_name, layer.slot) for layer in pred.layers if layer.func_name in ("cond", "while_loop")] == [
        ("cond", 0), ("cond", 0), ("cond", 1), ("while_loop", 0), ("while_loop", 1)]


def test_a_filter_the_data_decides_runs_what_follows_0_or_1_times():
    pred = tl.predict(H.Callbacks(), torch.randn(3, 4))
    kept = [layer for layer in pred.layers if layer.count.exact is None]
    assert [(layer.func_name, layer.count.lo, layer.count.hi) for layer in kept] == [("add", 0, 3)]
    assert "filter keeps items the prediction cannot decide" in kept[0].passes_note


def test_exec_built_code_beyond_straight_lines_is_a_gap_naming_the_instruction():
    pred = tl.predict(*[H.ExecBranch(), torch.randn(3, 4)])
    why = " ".join(g.why for g in pred.gaps)
    if sys.version_info >= (3, 11):
        assert "only straight-line code is read from bytecode (POP_JUMP" in why and "at line 2)" in why, why
    else:
        assert "its bytecode is read on Python 3.11+ only" in why, why


#: An op raising on the example inputs: what it raises, and the line its gap names.
RAISING = {"view": ("RuntimeError: shape '[5, 7]' is invalid for input of size 12", "y.view(5, 7)"),
           "cat": ("RuntimeError: Sizes of tensors must match except in dimension 0", "torch.cat([y, y.t()])"),
           "index": ("IndexError: index 7 is out of bounds for dimension 0 with size 3", "y[7]")}


@pytest.mark.parametrize("how", list(RAISING))
def test_an_op_raising_on_the_example_inputs_is_a_gap_naming_the_error_and_line(how: str):
    model, inputs = H.raising_models()[how]
    error, text = RAISING[how]
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    filters = list(fake_log.filters)
    with RecordsOf(fake_log) as logged:
        pred = tl.predict(model, *inputs)
    assert not logged and fake_log.filters == filters  # torch's log of it kept quiet, torch's logger as it was
    why = " ".join(g.why for g in pred.gaps)
    assert error in why and f"at {line_of(H.OpRaises, text)} in OpRaises.forward" in why, why
    with pytest.raises((RuntimeError, IndexError), match=error.split(": ", 1)[1].replace("[", r"\[")):
        tl.trace(model, *inputs)

    def fakes_in_another_thread() -> None:
        with FakeTensorMode():
            torch.cat([torch.empty(3, 4), torch.empty(4, 3)])

    with RecordsOf(fake_log) as logged:  # fakes the user runs still log
        worker = threading.Thread(target=lambda: pytest.raises(RuntimeError, fakes_in_another_thread))
        worker.start()
        worker.join()
    assert any("failed while attempting to run meta" in r.getMessage() for r in logged)


@pytest.mark.parametrize("how", list(H.READS))
def test_python_reading_a_tensor_where_that_raises_is_a_gap_naming_the_error_and_line(how: str):
    """``if y > 0``, ``float(y)``, ``min(a, b)`` of rows, ``round(t)``, a float tensor as an index...:
    where the read raises on the example inputs' shapes (or on any tensor), the prediction says the
    forward stops there; after an undecided operand of ``and`` it may (a note)."""
    model, inputs = H.raising_models()[f"read {how}"]
    pred = tl.predict(model, *inputs)
    said = " ".join([g.why for g in pred.gaps] + (list(pred.notes) if how == "and" else []))
    with pytest.raises((RuntimeError, TypeError, ValueError)) as raised:
        tl.trace(model, *inputs)
    error = f"{type(raised.value).__name__}: {str(raised.value).splitlines()[0]}"
    assert error in said and f"at {line_of(H.ReadsAsPython, H.READS[how])} in ReadsAsPython.forward" in said, said


@pytest.mark.parametrize("how", list(H.STATEMENTS))
def test_an_assert_decided_false_a_missing_attribute_and_a_wrong_unpack_are_gaps_naming_the_line(how: str):
    model, inputs = H.raising_models()[how]
    said = " ".join(g.why for g in tl.predict(model, *inputs).gaps)
    with pytest.raises((AssertionError, AttributeError, ValueError)):
        tl.trace(model, *inputs)
    assert f"at {line_of(H.RaisesInPython, H.STATEMENTS[how])} in RaisesInPython.forward" in said, said
    assert {"assert": "AssertionError (x.shape[0] == 5) raised",
            "attribute": "reading RaisesInPython.missing raises AttributeError",
            "getattr": "getattr of 'absent' raises AttributeError",
            "unpack rows": "unpacking 3 items into 2 targets raises ValueError",
            "unpack outputs": "unpacking 3 items into 2 targets raises ValueError",
            "unpack starred": "unpacking 2 items into 3 or more targets raises ValueError",
            "uncaught": "ValueError('no arm takes it') raised"}[how] in said, said


def test_a_refusal_of_the_fake_kernel_alone_is_not_a_certain_raise():
    """A fake (meta) kernel may check more than the device's (``_grouped_mm`` wants bfloat16 on
    fakes, not on CPU): a raise is certain only when the real kernel refuses zeros of those shapes;
    where it takes them, what it gives on zeros stands for the op's output, as fakes."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    from torchlens.fake_memo import Raises
    from torchlens.torch_host import _raised

    mode = FakeTensorMode()
    fake = mode.from_tensor(torch.zeros(3, 4))
    refused = RuntimeError("shape '[5, 7]' is invalid for input of size 12")
    assert type(_raised(refused, mode, torch.Tensor.view, [fake, 5, 7], {})) is Raises
    taken = _raised(refused, mode, torch.Tensor.view, [fake, 4, 3], {})  # the real view works
    assert type(taken) is FakeTensor and taken.shape == (4, 3) and taken.fake_mode is mode
    assert type(_raised(TypeError("no .T here"), mode, "T", [fake], {})) is not Raises  # read, not called
    state = torch.random.get_rng_state()
    assert type(_raised(refused, mode, lambda t: (torch.rand(1), t.view(5, 7)), [fake], {})) is Raises
    assert torch.equal(state, torch.random.get_rng_state())  # the real run drew nothing from the user's state
    grouped = _raised(RuntimeError("Expected inputs of BF16 type"), mode, torch._grouped_mm,
                      [mode.from_tensor(torch.zeros(8, 32)), mode.from_tensor(torch.zeros(4, 32, 16))],
                      {"offs": mode.from_tensor(torch.tensor([2, 4, 6, 8], dtype=torch.int32))})
    assert type(grouped) is FakeTensor and grouped.shape == (8, 16) and grouped.dtype == torch.float32


class RecordsOf(logging.Handler):
    """The records a logger emits while this is entered."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger, self.records = logger, []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> list:
        self.logger.addHandler(self)
        return self.records

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)


def test_defaults_that_raise_say_so_and_ask_for_inputs():
    pred = tl.predict(H.RaisesWithoutInputs())
    assert len(pred) == 0
    why = " ".join(g.why for g in pred.gaps)
    assert "ValueError('You must specify exactly one of input_ids or inputs_embeds') raised at hostile.py:" in why
    assert "pass example inputs" in why


class Endless(nn.Module):
    def forward(self, x):
        for _ in range(4000):
            for _ in range(4000):
                x = x + 1
        return x


def test_a_step_budget_ends_every_prediction_with_a_gap_at_the_same_place():
    preds = [tl.predict(Endless(), torch.randn(2), max_steps=1_000) for _ in range(2)]
    assert preds[0].gaps == preds[1].gaps and repr(preds[0].layers) == repr(preds[1].layers)
    stopped = [g for g in preds[0].gaps if "stopped after 1,000 interpreted steps" in g.why]
    assert stopped and f"test_predict_hostile.py:{inspect.getsourcelines(Endless)[1] + 3}" in stopped[0].why
    assert any("(pass max_steps= to allow more)" in n for n in preds[0].notes)


def test_the_clock_is_an_outer_guard():
    """Past ``max_seconds`` (here none at all) the prediction stops too, at its next look at the
    clock, and says which budget to raise."""
    pred = tl.predict(Endless(), torch.randn(2), max_seconds=0)
    stopped = [g for g in pred.gaps if "stopped after 0 s" in g.why]
    assert stopped and "test_predict_hostile.py:" in stopped[0].why
    assert any("(pass max_seconds= to allow more)" in n for n in pred.notes)


def test_source_edited_after_import_is_a_gap(tmp_path, monkeypatch):
    """Same bytecode, other columns: the places would be stale, so the prediction says so."""
    path = tmp_path / "edited_model.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.tanh(x)\n")
    spec = importlib.util.spec_from_file_location("edited_model", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "edited_model", module)
    spec.loader.exec_module(module)
    path.write_text(path.read_text().replace("return torch.tanh(x)", "return   torch.tanh(x)"))
    import linecache
    linecache.checkcache(str(path))
    pred = tl.predict(module.Net(), torch.randn(2))
    assert len(pred) == 0 and any("changed after it was imported" in g.why for g in pred.gaps)


class LostTwice(nn.Module):
    def forward(self, x):
        return H._opaque(x) + H._opaque(x)


def test_gaps_with_the_same_reason_print_once_with_a_count():
    pred = tl.predict(LostTwice(), torch.randn(2))
    twice = "self: Opaque cannot be read (no Python source) (x2)"
    assert len(pred.gap_lines()) == len(pred.gaps) - 1 and twice in pred.gap_lines()
    assert f"  {twice}" in str(pred).splitlines()


def test_torchs_memo_sets_skip_a_member_seen_before():
    model, inputs = MODELS["ParameterQueries"]
    pred = exact(model, *inputs)  # the shared Linear's two parameters once: four in all
    assert {layer.func_name: str(layer.count) for layer in pred.layers}["sum"] == "4"


def test_tests_on_constant_contents_are_decided():
    model, inputs = MODELS["ConstantContents"]
    counts = {layer.func_name: str(layer.count) for layer in exact(model, *inputs).layers}
    assert counts["relu"] == "3" and "exp" not in counts and "cos" not in counts, counts
    assert counts["add"] == "6" and counts["view"] == "1", counts  # six rows of zeros(2 * 3, 1)


@pytest.mark.parametrize("sign", [1, -1])
def test_contents_that_may_not_hold_decide_nothing(sign: int):
    model = H.ContentsNotClaimed()
    x = torch.randn(3, 4).abs() * sign
    pred = tl.predict(model, x)
    assert tl.trace(model, x).check_prediction(pred).ok
    counts = {layer.layer_label: str(layer.count) for layer in pred.layers}
    assert all(counts[label] == "0..1" for label in ("mul_1", "sub_1", "add_2", "div_1", "abs_1", "exp_1", "sin_1",
                                                     "tanh_1")), counts


def test_a_logging_query_that_raises_is_not_a_crash_of_the_prediction():
    """``logging.getLogger(3)`` raises TypeError in the program; called for real by the
    prediction, its raise stays the program's (an unknown value), not the prediction's."""
    class BadLoggerName(nn.Module):
        def forward(self, x):
            logging.getLogger(3)
            return x.relu()

    pred = tl.predict(BadLoggerName(), torch.randn(3))
    assert [layer.func_name for layer in pred] == ["relu"]
