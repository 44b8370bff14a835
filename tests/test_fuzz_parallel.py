"""Fuzz campaigns that scale out (issue 13): seeded shards, local worker processes, a Dask cluster."""

from __future__ import annotations

from collections import Counter

import pytest

from torchlens.fuzz.__main__ import main
from torchlens.fuzz.campaign import SHARD_SIZE, Shard, ShardResult, Finding, merge, plan, run_parallel, run_shard
from torchlens.fuzz.check import Disagreement


def test_plan_splits_a_campaign_into_reproducible_shards():
    shards = plan(2 * SHARD_SIZE + 3, 7)
    assert [s.examples for s in shards] == [SHARD_SIZE, SHARD_SIZE, 3]
    assert [s.index for s in shards] == [0, 1, 2]
    assert shards == plan(2 * SHARD_SIZE + 3, 7)
    assert len({s.seed for s in shards}) == 3
    assert [s.seed for s in plan(5, 8)] != [s.seed for s in plan(5, 7)]


def test_a_shard_draws_the_same_models_every_time():
    first, second = run_shard(Shard(0, 2, 11)), run_shard(Shard(0, 2, 11))
    assert first.models == second.models == 2
    assert first.rules == second.rules and first.found == second.found == ()


def test_merge_sums_shards_in_order_and_writes_each_shrunk_model(tmp_path):
    model = "a model spec"  # merge passes specs through untouched
    found = lambda name: Finding(model, model, (Disagreement("trace", name),), name, f"# {name}\n")  # noqa: E731
    results = [
        ShardResult(Shard(1, 2, 5), 2, 1.0, Counter({"a": 1}), (found("case_b.py"),)),
        ShardResult(Shard(0, 3, 4), 3, 1.0, Counter({"a": 2, "b": 1}), (found("case_a.py"),)),
    ]
    report = merge(results, 2.0, tmp_path)
    assert (report.models, report.seconds, report.rules) == (5, 2.0, Counter({"a": 3, "b": 1}))
    assert [f.path.name for f in report.findings] == ["case_a.py", "case_b.py"]
    assert (tmp_path / "case_b.py").read_text() == "# case_b.py\n"


def test_two_workers_run_the_same_campaign_as_one(capsys):
    one = [run_shard(shard) for shard in plan(3, 3, 2)]
    two = run_parallel(3, 3, workers=2, progress=print, shard_size=2)
    assert two.models == sum(r.models for r in one) == 3
    assert two.rules == sum((r.rules for r in one), Counter()) and not two.findings
    assert "[2/2 shards]" in capsys.readouterr().out


def test_command_line_workers(capsys):
    assert main(["--examples", "2", "--seed", "2", "--workers", "1"]) == 0
    assert "2 models, 0 disagreements" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--workers", "0"])
    with pytest.raises(SystemExit):
        main(["--workers", "2", "--dask", "tcp://127.0.0.1:1"])


def test_dask_cluster_runs_the_same_campaign():
    distributed = pytest.importorskip("distributed")
    local = [run_shard(shard) for shard in plan(3, 9, 2)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = run_parallel(3, 9, dask=cluster.scheduler_address, shard_size=2)
    assert remote.models == 3 and remote.rules == sum((r.rules for r in local), Counter())
