"""A fuzzing campaign: draw N models, check every property, shrink and save what fails.

Hypothesis draws the specs (seeded, no example database, generation only); every model is
checked and the campaign goes on after a failure, so one run counts all disagreements.
Each failure is shrunk (:mod:`torchlens.fuzz.shrink`) and written as a regression file.

:func:`run_parallel` splits a campaign into fixed shards, each with a seed derived from the
campaign's, and runs them on local processes or a Dask cluster; shrinking happens on the
worker, and the results are merged (and the regression files written) in shard order.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import tempfile
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

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

T = TypeVar("T")


@dataclass(frozen=True)
class Finding:
    """One model that failed a property, shrunk, with its regression file (shrunk on a worker,
    written by the campaign: ``path`` is set once the file is written)."""

    #: The spec as drawn, and as shrunk.
    drawn: S.ModelSpec
    shrunk: S.ModelSpec
    #: What failed on the shrunk model.
    disagreements: tuple[Disagreement, ...]
    #: The regression file's name and text.
    name: str
    text: str
    path: Optional[Path] = None


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
    report, found = _campaign(examples, seed_value, profile, progress,
                              lambda model, found: _write(_shrunk(model, found, shrink_seconds), _folder(out_dir)),
                              run_models)
    report.findings = found
    return report


def _campaign(examples: int, seed_value: int, profile: str, progress: Optional[Callable[[str], None]],
              keep: Callable[[S.ModelSpec, list[Disagreement]], T], run_models: bool = True) -> tuple[Report, list[T]]:
    """Draw and check ``examples`` models; ``keep`` each failing one. The report's findings
    are left to the caller."""
    report = Report()
    kept: list[T] = []
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
            kept.append(keep(model, found))
        else:
            report.rules.update(reached(model, built.expected if run_models else built))
        if progress and report.models % every == 0:
            elapsed = time.monotonic() - start
            progress(f"[{report.models:>{len(str(examples))}}/{examples}] {report.models} models, "
                     f"{len(kept)} disagreements, {report.models / elapsed:.1f} models/s")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)  # big specs have big reprs
        one()
    report.seconds = time.monotonic() - start
    return report, kept


def _shrunk(model: S.ModelSpec, found: list[Disagreement], seconds: float) -> Finding:
    kind = found[0].prop
    props = {d.prop for d in found}
    smallest = shrink(model, lambda m: {d.prop for d in failures(m)} == props, seconds)
    final = tuple(failures(smallest)) or tuple(found)
    name = f"case_{kind}_{_digest(repr(smallest)) % 10**8:08d}.py"
    if kind == "spec":  # the strategy drew something the oracle rejects: nothing to run
        text = f"# The oracle rejected this spec: {final[0].message}\n{smallest!r}\n"
    else:
        built = build(smallest)
        text = regression_source(built.source, built.expected, smallest.inputs, map(str, final))
    return Finding(model, smallest, final, name, text)


def _folder(out_dir: Optional[Path]) -> Path:
    folder = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="torchlens-fuzz-failures-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write(found: Finding, folder: Path) -> Finding:
    path = folder / found.name
    path.write_text(found.text)
    return replace(found, path=path)


def _digest(text: str) -> int:
    """A hash that is the same in every process (``hash`` of a str is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


# -- campaigns over several processes or a Dask cluster ----------------------------------------

#: Models per shard: a campaign of N models is the same ceil(N / SHARD_SIZE) shards whatever
#: runs them, so its models, and so its findings, do not depend on the number of workers.
SHARD_SIZE = 20


@dataclass(frozen=True)
class Shard:
    """One worker's share of a campaign: ``examples`` models drawn with ``seed``."""

    index: int
    examples: int
    seed: int


@dataclass(frozen=True)
class ShardResult:
    """What one shard found; sent back from the worker that ran it."""

    shard: Shard
    models: int
    seconds: float
    rules: Counter
    found: tuple[Finding, ...]


def plan(examples: int, seed_value: int, size: int = SHARD_SIZE) -> list[Shard]:
    """The shards of a campaign: each draws up to ``size`` models with a seed derived from
    ``seed_value`` and its index."""
    count = -(-examples // size)
    return [Shard(k, min(size, examples - k * size), _digest(f"{seed_value}:{k}") % 2**32) for k in range(count)]


def run_shard(shard: Shard, profile: str = "ci", shrink_seconds: float = 120.0) -> ShardResult:
    """Run one shard (in a worker process); failures are shrunk here, written by the caller."""
    report, found = _campaign(shard.examples, shard.seed, profile, None,
                              lambda model, found: _shrunk(model, found, shrink_seconds))
    return ShardResult(shard, report.models, report.seconds, report.rules, tuple(found))


def merge(results: list[ShardResult], seconds: float, out_dir: Optional[Path] = None) -> Report:
    """One report from the shards' results, in shard order; each shrunk failure written to
    ``out_dir`` (a new temporary folder by default)."""
    report = Report(seconds=seconds)
    folder: Optional[Path] = None
    for result in sorted(results, key=lambda r: r.shard.index):
        report.models += result.models
        report.rules.update(result.rules)
        for found in result.found:
            folder = folder or _folder(out_dir)
            report.findings.append(_write(found, folder))
    return report


def run_parallel(examples: int, seed_value: int = 0, profile: str = "ci", workers: int = 2,
                 dask: Optional[str] = None, progress: Optional[Callable[[str], None]] = None,
                 out_dir: Optional[Path] = None, shrink_seconds: float = 120.0,
                 shard_size: int = SHARD_SIZE) -> Report:
    """Run a campaign's shards on ``workers`` local processes, or on the Dask ``distributed``
    cluster whose scheduler is at ``dask`` (``tcp://host:8786``; its workers need torchlens
    installed). The same ``examples``, ``seed_value`` and ``shard_size`` give the same models
    either way."""
    shards = plan(examples, seed_value, shard_size)
    start = time.monotonic()
    results: list[ShardResult] = []

    def done(result: ShardResult) -> None:
        results.append(result)
        if progress:
            models = sum(r.models for r in results)
            found = sum(len(r.found) for r in results)
            progress(f"[{len(results):>{len(str(len(shards)))}}/{len(shards)} shards] {models} models, "
                     f"{found} disagreements, {models / (time.monotonic() - start):.1f} models/s")
            for shrunk in result.found:  # as they come: a long campaign's findings are read early
                progress(f"  shard {result.shard.index} ({result.shard.examples} models, seed {result.shard.seed}): "
                         f"{shrunk.name}: {shrunk.disagreements[0].message.splitlines()[0]}")

    if dask is not None:
        _on_dask(dask, shards, profile, shrink_seconds, done)
    else:
        context = multiprocessing.get_context("spawn")  # no fork of a process torch has started
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_one_thread) as pool:
            futures = [pool.submit(run_shard, shard, profile, shrink_seconds) for shard in shards]
            for future in as_completed(futures):
                done(future.result())
    return merge(results, time.monotonic() - start, out_dir)


def _on_dask(address: str, shards: list[Shard], profile: str, shrink_seconds: float,
             done: Callable[[ShardResult], None]) -> None:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as error:
        raise ImportError("--dask needs Dask's distributed scheduler: pip install 'torchlens[dask]'") from error
    with Client(address) as client:
        futures = client.map(run_shard, shards, profile=profile, shrink_seconds=shrink_seconds, pure=False)
        for future in dask_completed(futures):
            done(future.result())


def _one_thread() -> None:
    """Worker start: one intra-op thread each, so N workers use N cores."""
    import torch

    torch.set_num_threads(1)
