"""Lint speed: 50,000-line files against an earlier linter, and findings on real model folders.

    python benchmarks/lint_speed.py                 # against the linter of git revision 704df2f
    python benchmarks/lint_speed.py --against REV   # any revision of this repository
    python benchmarks/lint_speed.py --libcst        # what LibCST metadata would cost on top

Part 1 lints three 50,000-line files with this linter and with the one from REV (extracted from
git into a temporary folder), alternating, 3 rounds, and prints each one's best CPU seconds and
their ratio; also the time of ``ast.parse`` alone (the floor both pay), with the garbage
collector on (as the old linter parses) and paused (as this one does), and 25,000 against
50,000 lines (linear: the ratio is about 2). Part 2 prints, per model folder: files, CPU seconds,
findings per rule (default rules, then every rule). ``--libcst`` prints instead what a hybrid
would cost: LibCST parse plus scope, qualified-name and position metadata, over only the files
the linter has (default) findings in (the hybrid's second pass), and over the 50,000-line
transformers file.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from torchlens.analysis.lint import LintConfig, lint_paths, lint_source
from torchlens.analysis.table import format_table

ROOT = Path(__file__).resolve().parents[1]
LINES = 50_000


def statements_file(lines: int) -> str:
    """A model whose forward methods are long runs of torch statements (the shape TL101 reads)."""
    parts = ["import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"]
    body = ["        h = self.norm(x)", "        h = F.gelu(self.fc1(h))", "        h = self.fc2(h) * self.scale",
            "        x = x + self.drop(h)", "        a = torch.softmax(x @ x.transpose(-1, -2), dim=-1)",
            "        x = torch.tanh(a @ x)", "        y = x.mean(dim=1, keepdim=True)", "        x = x - y"]
    k = 0
    while sum(p.count("\n") for p in parts) < lines:
        forward = "\n".join(body * 6)
        parts.append(f"\n\nclass Block{k}(nn.Module):\n    def forward(self, x):\n{forward}\n        return x\n")
        k += 1
    return "".join(parts)


def classes_file(lines: int) -> str:
    """Many small module classes: __init__, a helper, a forward with a branch and a loop."""
    block = '''

class M{k}(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("state", torch.zeros(4))
        self.scale = 0.5

    def helper(self, x):
        return torch.tanh(self.lin(x))

    def forward(self, x):
        y = self.helper(x)
        if x.sum() > 0:
            x = x * self.scale
        else:
            x = x / 2
        for _ in range(3):
            x = self.lin(x)
        return x + y
'''
    parts = ["import torch\nfrom torch import nn\n"]
    k = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(block.format(k=k))
        k += 1
    return "".join(parts)


def transformers_file(lines: int) -> str:
    """Real code: transformers' modeling files, concatenated (their ``__future__`` lines dropped)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        return ""
    out: list[str] = []
    for file in sorted((Path(spec.origin).parent / "models").glob("*/modeling_*.py")):
        out += [line for line in file.read_text().splitlines() if not line.startswith("from __future__")]
        if len(out) >= lines:
            break
    return "\n".join(out[:lines]) + "\n"


def linter_at(revision: str, folder: Path) -> Callable[..., object]:
    """``lint_source`` of ``analysis/lint`` at a git revision, importable on its own."""
    package = folder / "_lint_at_revision"
    (package / "lint").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", revision, "analysis/lint/"],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in [*names, "analysis/errors.py"]:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{name}"],
                              capture_output=True, text=True, check=True).stdout
        target = package / ("errors.py" if name == "analysis/errors.py" else f"lint/{Path(name).name}")
        target.write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("_lint_at_revision.lint").lint_source


def best_seconds(run: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def speed(revision: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        before = linter_at(revision, Path(folder))
        rows = []
        for label, make in (("forward statements", statements_file), ("small classes", classes_file),
                            ("transformers modeling", transformers_file)):
            text = make(LINES)
            if not text:
                continue
            half = make(LINES // 2)
            old = best_seconds(lambda: before(text, "big.py"))
            new = best_seconds(lambda: lint_source(text, "big.py"))
            new_half = best_seconds(lambda: lint_source(half, "half.py"))
            parse = best_seconds(lambda: ast.parse(text))
            gc.disable()
            try:
                parse_paused = best_seconds(lambda: ast.parse(text))
            finally:
                gc.enable()
            rows.append([label, str(text.count("\n")), f"{parse:.2f}", f"{parse_paused:.2f}", f"{old:.2f}",
                         f"{new:.2f}", f"{old / new:.1f}x", f"{new / new_half:.2f}"])
    print(format_table(["file", "lines", "ast.parse s", "gc paused s", f"{revision} s", "now s", "faster",
                        "50k/25k"], rows))


def trees() -> list[tuple[str, Path]]:
    """The folders to lint, by package location (import-free where possible)."""
    found = []
    for label, package, sub in (("torch/nn", "torch", "nn"),
                                ("transformers/models", "transformers", "models")):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            found.append((label, Path(spec.origin).parent / sub))
    return found


def real_code() -> None:
    rows = []
    for label, folder in trees():
        files = sorted(folder.rglob("*.py"))
        for selection, config in (("default", LintConfig()), ("all", LintConfig(select=("ALL",)))):
            start = time.process_time()
            findings = lint_paths([str(folder)], config).findings
            seconds = time.process_time() - start
            counts = Counter(f.code for f in findings)
            rows.append([label, selection, str(len(files)), f"{seconds:.2f}", str(len(findings)),
                         ", ".join(f"{code} {n}" for code, n in sorted(counts.items())) or "-"])
    print(format_table(["tree", "rules", "files", "CPU s", "findings", "per rule"], rows))


def libcst_cost() -> None:
    """LibCST parse + ScopeProvider + QualifiedNameProvider + PositionProvider against the linter
    (default rules), over the files with findings and over the 50,000-line transformers file."""
    import libcst
    from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, ScopeProvider

    def metadata(text: str) -> None:
        MetadataWrapper(libcst.parse_module(text)).resolve_many([ScopeProvider, QualifiedNameProvider, PositionProvider])

    rows = []
    for label, folder in trees():
        start = time.process_time()
        findings = lint_paths([str(folder)]).findings
        lint = time.process_time() - start
        files = sorted({f.path for f in findings})
        start = time.process_time()
        for file in files:
            metadata(Path(file).read_text(encoding="utf-8"))
        extra = time.process_time() - start
        rows.append([label, f"{len(files)} file{'' if len(files) == 1 else 's'}", f"{lint:.2f}", f"{extra:.2f}",
                     f"{extra / lint:.1f}x"])
    text = transformers_file(LINES)
    if text:  # the 50,000-line file: every part of it has candidates
        lint = best_seconds(lambda: lint_source(text, "big.py"), 1)
        extra = best_seconds(lambda: metadata(text), 1)
        rows.append(["transformers modeling 50k", "1 file", f"{lint:.2f}", f"{extra:.2f}", f"{extra / lint:.1f}x"])
    print(format_table(["linted", "with findings", "linter s", "LibCST metadata s", "extra"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="704df2f", help="git revision whose linter to compare with")
    parser.add_argument("--no-trees", action="store_true", help="only the 50,000-line files")
    parser.add_argument("--libcst", action="store_true", help="what LibCST metadata would cost on top")
    args = parser.parse_args()
    if args.libcst:
        libcst_cost()
        return
    speed(args.against)
    if not args.no_trees:
        print()
        real_code()


if __name__ == "__main__":
    main()
