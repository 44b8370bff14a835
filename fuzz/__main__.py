"""``python -m torchlens.fuzz --examples N --seed S [--profile ci|long]``: run a fuzzing campaign.

Prints a progress line as it goes, then ``N models, K disagreements`` with each
disagreement's shrunk regression file (ready for ``tests/regressions/``) and its source.
Exits 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from .campaign import run_campaign
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
    args = parser.parse_args(argv)
    if args.examples < 1:
        parser.error(f"--examples must be at least 1, got {args.examples}")

    report = run_campaign(args.examples, args.seed, args.profile, progress=print, out_dir=args.out)
    reached = len(RULES) - len(report.unreached())
    print(f"{report.seconds:.1f} s, {report.rate:.1f} models/s; rules reached: {reached}/{len(RULES)}"
          + (f" (not reached: {', '.join(report.unreached())})" if report.unreached() else ""))
    for finding in report.findings:
        print(f"\n--- disagreement: {finding.path}")
        for disagreement in finding.disagreements:
            print(disagreement)
        print(finding.path.read_text())
    print(f"{report.models} models, {len(report.findings)} disagreements")
    for finding in report.findings:
        print(f"  {finding.path}")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
