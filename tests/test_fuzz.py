"""The fuzz harness in CI: a budget of generated models checked against the oracle.

Seeded campaigns of 200 models in all (``fuzz.campaign``), in shards that xdist spreads over
its workers, check per model: capture == oracle, static prediction == oracle where static,
traced output == untraced output, ``Trace.check()``, and two traces labelled alike; and the
same 200 specs, read by the oracle alone, must reach every rule of the registry
(``fuzz.rules``). ``python -m torchlens.fuzz`` runs longer campaigns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings

import torchlens.fuzz
from torchlens.fuzz.build import build
from torchlens.fuzz.campaign import run_campaign
from torchlens.fuzz.check import check_model, layer_rows
from torchlens.fuzz.rules import NOT_FUZZED, RULES
from torchlens.fuzz.spec import Assign, ClassDef, ModelSpec, Unary, Var

#: The CI budget: fixed, so a CI failure in shard k reproduces with
#: ``python -m torchlens.fuzz --examples 50 --seed k``.
CI_EXAMPLES, CI_SEED, CI_SHARDS = 200, 0, 4


@pytest.mark.parametrize("shard", range(CI_SHARDS))
def test_ci_campaign_finds_no_disagreement(shard, tmp_path):
    report = run_campaign(CI_EXAMPLES // CI_SHARDS, CI_SEED + shard, "ci", out_dir=tmp_path)
    assert report.models == CI_EXAMPLES // CI_SHARDS
    found = "\n\n".join(f"{f.path}\n" + "\n".join(map(str, f.disagreements)) + "\n" + f.path.read_text()
                        for f in report.findings)
    assert not report.findings, f"{len(report.findings)} disagreements; shrunk regressions:\n{found}"


def test_ci_campaign_reaches_every_rule():
    reached: Counter = Counter()
    for shard in range(CI_SHARDS):
        reached.update(run_campaign(CI_EXAMPLES // CI_SHARDS, CI_SEED + shard, "ci", run_models=False).rules)
    assert [rule.id for rule in RULES if not reached[rule.id]] == [], "rules no model of the CI budget exercised"


def test_registry_names_each_row_once():
    rows = [rule.row for rule in RULES]
    assert len(rows) == len(set(rows)) and len({rule.id for rule in RULES}) == len(RULES)
    assert not set(rows) & set(NOT_FUZZED)


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
