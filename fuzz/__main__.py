"""``python -m torchlens.fuzz --examples N --seed S [--profile ci|long] [--workers W | --dask ADDRESS]``.

Runs a fuzzing campaign and prints a progress line as it goes, then ``N models, K
disagreements`` with each disagreement's shrunk regression file (ready for
``tests/regressions/``) and its source. Exits 1 on any disagreement. ``--workers`` runs it
on W local processes, ``--dask`` on an existing Dask ``distributed`` cluster; both split it
into the same seeded shards, so a campaign draws the same models however it is run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from .campaign import run_campaign, run_parallel
from .rules import RULES
from .strategies import PROFILES


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parse the command line, run the campaign, print the summary; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m torchlens.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="models to draw (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="ci", help="model sizes (default ci)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for shrunk failures (default: a new temporary folder)")
    parser.add_argument("--workers", type=int, default=None,
                        help="run the campaign's shards on this many local processes")
    parser.add_argument("--dask", metavar="ADDRESS", default=None,
                        help="run the shards on the Dask distributed cluster at ADDRESS (tcp://host:8786)")
    args = parser.parse_args(argv)
    if args.examples < 1:
        parser.error(f"--examples must be at least 1, got {args.examples}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.workers is not None and args.dask is not None:
        parser.error("--workers and --dask exclude each other: the cluster decides how many workers run")

    if args.workers is None and args.dask is None:
        report = run_campaign(args.examples, args.seed, args.profile, progress=print, out_dir=args.out)
    else:
        report = run_parallel(args.examples, args.seed, args.profile, args.workers or 1, args.dask,
                              progress=print, out_dir=args.out)
    reached = len(RULES) - len(report.unreached())
    print(f"{report.seconds:.1f} s, {report.rate:.1f} models/s; rules reached: {reached}/{len(RULES)}"
          + (f" (not reached: {', '.join(report.unreached())})" if report.unreached() else ""))
    for finding in report.findings:
        print(f"\n--- disagreement: {finding.path}")
        for disagreement in finding.disagreements:
            print(disagreement)
        print(finding.text)
    print(f"{report.models} models, {len(report.findings)} disagreements")
    for finding in report.findings:
        print(f"  {finding.path}")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
