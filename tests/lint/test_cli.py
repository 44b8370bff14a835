"""The command line end to end: text, JSON, noqa, configuration, exit codes (torch-free).

Commands run in-process through ``main(argv)``; one smoke test runs ``python -m torchlens`` in a
fresh interpreter and proves the lint path imports no torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import torchlens
from torchlens.cli import main

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class Seq(nn.Module):
        def forward(self, x):
            x = x @ self.W
            x = x @ self.W
            while x.norm() > 1:
                x = x / 2
            return x
""")


@pytest.fixture
def run(capsys, monkeypatch):
    """``run(*argv, cwd=folder)``: the command's exit status and output, as a subprocess would give."""
    def run(*args: str, cwd: Path) -> SimpleNamespace:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        returncode = main(list(args))
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=returncode, stdout=out, stderr=err)
    return run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "seq.py").write_text(MODEL)
    return tmp_path


def test_text_output_and_exit_status_one(run, project):
    result = run("lint", "models", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "models/seq.py:7:13: TL101 `x @ self.W` is written out 2 times (lines 7, 8): 2 layers, not one layer "
        "with 2 passes; a loop would make them one layer",
        "models/seq.py:9:15: TL201 tensor op in a `while` condition: the condition runs once more than the body, "
        "so its ops get N+1 passes",
        "Found 2 problems (TL101, TL201). Run `torchlens lint --explain TL101` for details.",
    ]


def test_json_output_has_stable_fields(run, project):
    result = run("lint", "--format", "json", "models/seq.py", cwd=project)
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    assert [sorted(f) for f in findings] == [["code", "col", "line", "message", "path", "severity"]] * 2
    assert [(f["code"], f["line"], f["col"], f["severity"]) for f in findings] == [
        ("TL101", 7, 13, "warning"), ("TL201", 9, 15, "warning")]


def test_clean_file_exits_zero(run, project):
    (project / "models" / "seq.py").write_text("import torch\n\n\ndef f(x):\n    return torch.tanh(x)\n")
    result = run("lint", "models", cwd=project)
    assert (result.returncode, result.stdout.strip()) == (0, "No problems found.")


def test_select_ignore_and_pyproject_configuration(run, project):
    assert "TL101" not in run("lint", "--ignore", "TL101", "models", cwd=project).stdout
    assert "TL201" not in run("lint", "--select", "TL1", "models", cwd=project).stdout
    (project / "pyproject.toml").write_text('[tool.torchlens.lint]\nignore = ["TL2"]\n')
    result = run("lint", "models", cwd=project)
    assert "TL101" in result.stdout and "TL201" not in result.stdout
    (project / "pyproject.toml").write_text('[tool.torchlens.lint]\nselect = ["TL201"]\n')
    assert "TL101" not in run("lint", "models", cwd=project).stdout


def test_noqa_comment(run, project):
    path = project / "models" / "seq.py"
    path.write_text(MODEL.replace("while x.norm() > 1:", "while x.norm() > 1:  # torchlens: noqa: TL201"))
    assert "TL201" not in run("lint", "models", cwd=project).stdout


def test_usage_and_parse_errors_exit_two(run, project):
    assert run("lint", "missing.py", cwd=project).returncode == 2
    assert run("lint", "--select", "TL999", "models", cwd=project).returncode == 2
    assert run("lint", cwd=project).returncode == 2
    (project / "models" / "bad.py").write_text("def broken(:\n")
    result = run("lint", "models", cwd=project)
    assert result.returncode == 2 and "models/bad.py:1:12: TL000 cannot parse this file" in result.stdout
    (project / "pyproject.toml").write_text('[tool.torchlens.lint]\nselekt = ["TL1"]\n')
    bad_config = run("lint", "models/seq.py", cwd=project)
    assert bad_config.returncode == 2 and "selekt" in bad_config.stderr


def test_explain_and_list(run, project):
    explain = run("lint", "--explain", "tl201", cwd=project)
    assert explain.returncode == 0 and explain.stdout.startswith("TL201 (while-condition-op, warning)")
    assert "N+1 passes" in explain.stdout
    listing = run("lint", "--list", cwd=project).stdout.splitlines()
    assert len(listing) == 11 and listing[0].split()[:4] == ["TL101", "written-out-repeat", "warning", "on"]
    assert run("lint", "--explain", "TL999", cwd=project).returncode == 2


def test_help_reads_well(run, project):
    result = run("--help", cwd=project)
    assert result.returncode == 0 and "lint" in result.stdout and "predict" in result.stdout


def test_version(run, project):
    result = run("--version", cwd=project)
    assert (result.returncode, result.stdout.strip()) == (0, f"torchlens {torchlens.__version__}")


def test_python_m_torchlens_lints_without_importing_torch(project):
    """The one subprocess: a fresh ``python -m torchlens lint``, from a folder holding the user's own
    analysis.py, capture.py and fuzz.py (which must not shadow torchlens's subpackages)."""
    for name in ("analysis", "capture", "fuzz"):
        (project / f"{name}.py").write_text("raise ImportError('the user module was imported')\n")
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "torchlens", "lint", "models"],
                            cwd=project, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "TL101" in result.stdout and "TL201" in result.stdout
    imported = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "torchlens.analysis.lint" in imported
    assert not {name for name in imported if name == "torch" or name.startswith("torch.")}
