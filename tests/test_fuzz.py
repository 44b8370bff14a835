"""The fuzz harness in CI: a budget of generated models checked against the oracle.

One seeded campaign of 200 models (``fuzz.campaign``) checks, per model: capture == oracle,
static prediction == oracle where static (when ``tl.predict`` exists), traced output ==
untraced output, ``Trace.check()``, and two traces labelled alike; and every rule of the
registry (``fuzz.rules``) must be reached. ``python -m torchlens.fuzz`` runs longer campaigns.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings

import torchlens.fuzz
from torchlens.fuzz.build import build
from torchlens.fuzz.campaign import run_campaign
from torchlens.fuzz.check import check_model, layer_rows, predict_function
from torchlens.fuzz.rules import NOT_FUZZED, RULES
from torchlens.fuzz.spec import Assign, ClassDef, ModelSpec, Unary, Var

#: The CI budget: fixed, so a CI failure reproduces with ``python -m torchlens.fuzz --seed 4``.
CI_EXAMPLES, CI_SEED = 200, 4


@pytest.fixture(scope="module")
def ci_report(tmp_path_factory):
    return run_campaign(CI_EXAMPLES, CI_SEED, "ci", out_dir=tmp_path_factory.mktemp("failures"))


def test_ci_campaign_finds_no_disagreement(ci_report):
    assert ci_report.models == CI_EXAMPLES
    found = "\n\n".join(f"{f.path}\n" + "\n".join(map(str, f.disagreements)) + "\n" + f.path.read_text()
                        for f in ci_report.findings)
    assert not ci_report.findings, f"{len(ci_report.findings)} disagreements; shrunk regressions:\n{found}"


def test_ci_campaign_reaches_every_rule(ci_report):
    assert ci_report.unreached() == [], "rules no model of the CI budget exercised"


def test_registry_names_each_row_once():
    rows = [rule.row for rule in RULES]
    assert len(rows) == len(set(rows)) and len({rule.id for rule in RULES}) == len(RULES)
    assert not set(rows) & set(NOT_FUZZED)


@pytest.mark.skipif(predict_function() is None, reason="torchlens.predict does not exist yet (issue 3)")
def test_static_prediction_is_compared():
    """The prediction property is live: a wrong prediction is reported."""
    built = build(ModelSpec(ClassDef((Assign(Unary("tanh", Var())),))))
    assert check_model(built) == []
    built.expected = replace(built.expected, layers=tuple(replace(l, passes=2) for l in built.expected.layers))
    assert [d.prop for d in check_model(built)] == ["capture", "prediction"]


@settings(max_examples=5, deadline=None)
@given(torchlens.fuzz.models())
def test_models_strategy_gives_models_with_their_expected_layers(generated):
    """The documented use of ``from torchlens.fuzz import models``."""
    import torchlens as tl

    trace = tl.trace(generated.make(), *generated.inputs())
    assert layer_rows(trace) == [(l.label, l.func, l.passes, l.module, l.params) for l in generated.expected.layers]
