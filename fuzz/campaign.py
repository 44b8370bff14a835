"""A fuzzing campaign: draw N models, check every property, shrink and save what fails.

Hypothesis draws the specs (seeded, no example database, generation only); every model is
checked and the campaign goes on after a failure, so one run counts all disagreements.
Each failure is shrunk (:mod:`torchlens.fuzz.shrink`) and written as a regression file.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, Phase, given, reject, seed, settings
from hypothesis.errors import HypothesisWarning

from . import spec as S
from .build import GeneratedModel, build
from .check import Disagreement, check_model
from .oracle import SpecError, TooLarge, expect

#: The pseudo-property of a draw over the size limit: rejected, never reported.
TOO_LARGE = "too-large"
from .regression import regression_source
from .rules import RULES, reached
from .shrink import shrink
from .render import TORCH
from .strategies import specs


@dataclass(frozen=True)
class Finding:
    """One model that failed a property, shrunk."""

    #: The spec as drawn, and as shrunk.
    drawn: S.ModelSpec
    shrunk: S.ModelSpec
    #: What failed on the shrunk model.
    disagreements: tuple[Disagreement, ...]
    #: The regression file written for it.
    path: Path


@dataclass
class Report:
    """What a campaign did."""

    models: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    #: Rule id -> number of models that exercised it.
    rules: Counter = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.models / self.seconds if self.seconds else 0.0

    def unreached(self) -> list[str]:
        """Ids of the registered rules no model exercised."""
        return [rule.id for rule in RULES if not self.rules[rule.id]]


def checked(model: S.ModelSpec) -> tuple[Optional[GeneratedModel], list[Disagreement]]:
    """The built model (``None`` when the oracle rejects the spec) and the properties it fails."""
    try:
        built = build(model)
    except SpecError as error:
        return None, [Disagreement(TOO_LARGE if isinstance(error, TooLarge) else "spec", str(error))]
    return built, check_model(built)


def _oracle_only(model: S.ModelSpec) -> tuple[Any, list[Disagreement]]:
    """The oracle's expectation of ``model``, or why it rejects the spec (as :func:`checked`)."""
    try:
        return expect(model, TORCH), []
    except SpecError as error:
        return None, [Disagreement(TOO_LARGE if isinstance(error, TooLarge) else "spec", str(error))]


def failures(model: S.ModelSpec) -> list[Disagreement]:
    """Every property that fails on ``model`` (a spec the oracle rejects fails as ``spec``)."""
    return checked(model)[1]


def run_campaign(examples: int, seed_value: int = 0, profile: str = "ci",
                 progress: Optional[Callable[[str], None]] = None, out_dir: Optional[Path] = None,
                 shrink_seconds: float = 120.0, run_models: bool = True) -> Report:
    """Check ``examples`` drawn models; shrink each failure into ``out_dir``.

    With ``run_models=False`` only the oracle reads each spec (no torch, no model built): the
    same specs are drawn, and the report tells which rules they reach.
    """
    report = Report()
    every = max(1, examples // 20)
    start = time.monotonic()

    @seed(seed_value)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(specs("torch", profile))
    def one(model: S.ModelSpec) -> None:
        built, found = checked(model) if run_models else _oracle_only(model)
        if found and found[0].prop == TOO_LARGE:
            reject()  # a size limit, not a disagreement: hypothesis draws another
        report.models += 1
        if found:
            if progress:
                progress(f"model {report.models}: {found[0]}\nshrinking it...")
            report.findings.append(_keep(model, found, out_dir, shrink_seconds))
        else:
            report.rules.update(reached(model, built.expected if run_models else built))
        if progress and report.models % every == 0:
            elapsed = time.monotonic() - start
            progress(f"[{report.models:>{len(str(examples))}}/{examples}] {report.models} models, "
                     f"{len(report.findings)} disagreements, {report.models / elapsed:.1f} models/s")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)  # big specs have big reprs
        one()
    report.seconds = time.monotonic() - start
    return report


def _keep(model: S.ModelSpec, found: list[Disagreement], out_dir: Optional[Path], seconds: float) -> Finding:
    kind = found[0].prop
    props = {d.prop for d in found}
    smallest = shrink(model, lambda m: {d.prop for d in failures(m)} == props, seconds)
    final = tuple(failures(smallest)) or tuple(found)
    folder = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="torchlens-fuzz-failures-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"case_{kind}_{abs(hash(smallest)) % 10**8:08d}.py"
    if kind == "spec":  # the strategy drew something the oracle rejects: nothing to run
        path.write_text(f"# The oracle rejected this spec: {final[0].message}\n{smallest!r}\n")
    else:
        built = build(smallest)
        path.write_text(regression_source(built.source, built.expected, smallest.inputs, map(str, final)))
    return Finding(model, smallest, final, path)
