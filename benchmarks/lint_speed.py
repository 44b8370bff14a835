"""Lint speed and findings on real code: every module of ``torch.nn`` and two transformers models.

    python benchmarks/lint_speed.py

Prints, per tree: files, seconds, findings per rule (default rules, then every rule).
"""

from __future__ import annotations

import importlib.util
import time
from collections import Counter
from pathlib import Path

from torchlens.analysis.lint import LintConfig, lint_paths
from torchlens.analysis.table import format_table


def trees() -> list[tuple[str, Path]]:
    """The folders to lint, by package location (import-free where possible)."""
    found = []
    for label, package, sub in (("torch/nn", "torch", "nn"),
                                ("transformers/models/gpt2", "transformers", "models/gpt2"),
                                ("transformers/models/bert", "transformers", "models/bert")):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            found.append((label, Path(spec.origin).parent / sub))
    return found


def main() -> None:
    rows = []
    for label, folder in trees():
        files = sorted(folder.rglob("*.py"))
        for selection, config in (("default", LintConfig()), ("all", LintConfig(select=("ALL",)))):
            start = time.perf_counter()
            findings = lint_paths([str(folder)], config)
            seconds = time.perf_counter() - start
            counts = Counter(f.code for f in findings)
            rows.append([label, selection, str(len(files)), f"{seconds:.2f}", str(len(findings)),
                         ", ".join(f"{code} {n}" for code, n in sorted(counts.items())) or "-"])
    print(format_table(["tree", "rules", "files", "seconds", "findings", "per rule"], rows))


if __name__ == "__main__":
    main()
