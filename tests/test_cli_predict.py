"""``torchlens predict`` in-process through ``main(argv)`` (these import torch): output, targets
resolved as ``python -m`` resolves them, and import failures reported as errors with exit 2."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from torchlens.cli import main

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            for _ in range(3):
                x = torch.tanh(self.lin(x))
            while x.norm() > 1:
                x = x / 2
            return x
""")


@pytest.fixture
def run(capsys, monkeypatch):
    """``run(*argv, cwd=folder)``: exit status and output; ``sys.path`` is restored afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))

    def run(*args: str, cwd: Path) -> SimpleNamespace:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        returncode = main(list(args))
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=returncode, stdout=out, stderr=err)
    return run


def package(root: Path, name: str) -> Path:
    """``root/name/models/`` as a package whose ``net.py`` imports its base class relatively."""
    models = root / name / "models"
    models.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (models / "__init__.py").write_text("")
    (models / "base.py").write_text("from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (models / "net.py").write_text(MODEL.replace("from torch import nn\n", "from torch import nn\n\nfrom .base import Base\n")
                                   .replace("class Loop(nn.Module)", "class Loop(Base)"))
    return models / "net.py"


def test_predict_table(run, tmp_path):
    (tmp_path / "loop_table.py").write_text(MODEL)
    result = run("predict", "loop_table.py:Loop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [line.split()[:3] for line in result.stdout.splitlines()[4:9]]
    assert rows == [["linear_1", "linear", "3"], ["tanh_1", "tanh", "3"], ["norm_1", "norm", "N+1"],
                    ["gt_1", "gt", "N+1"], ["div_1", "div", "N"]]
    assert "loop_table.py:12:17" in result.stdout  # tanh's place: file:line:col


def test_predict_json(run, tmp_path):
    (tmp_path / "loop_json.py").write_text(MODEL)
    result = run("predict", "loop_json.py:Loop", "--json", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert data["target"] == "Loop"
    tanh = next(layer for layer in data["layers"] if layer["label"] == "tanh_1")
    assert (tanh["func"], tanh["passes"], tanh["module"]) == ("tanh", 3, "self")
    assert tanh["place"].endswith("loop_json.py:12:17")
    norm = next(layer for layer in data["layers"] if layer["label"] == "norm_1")
    assert norm["passes"] == "N+1" and "while" in norm["passes_note"]


def test_predict_module_class_and_errors(run, tmp_path):
    result = run("predict", "torch.nn:GRUCell", cwd=tmp_path)
    assert result.returncode == 0 and "gru_cell_1" in result.stdout
    (tmp_path / "loop_errors.py").write_text(MODEL)
    missing = run("predict", "loop_errors.py:Nope", cwd=tmp_path)
    assert missing.returncode == 2 and "defines no class 'Nope'" in missing.stderr
    assert run("predict", "loop_errors.py", cwd=tmp_path).returncode == 2
    assert run("predict", "no_such_module:X", cwd=tmp_path).returncode == 2


def test_file_in_a_package_imports_like_python_m(run, tmp_path):
    """A file inside packages is imported as ``pkg.models.net``: its relative imports work."""
    package(tmp_path, "relpkg")
    result = run("predict", "relpkg/models/net.py:Loop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tanh_1" in result.stdout


def test_module_target_from_the_working_directory_without_it_on_the_path(run, tmp_path):
    """The console script does not put the working directory on ``sys.path``; ``python -m`` does."""
    package(tmp_path, "cwdpkg")
    for entry in ("", ".", str(tmp_path)):
        while entry in sys.path:
            sys.path.remove(entry)
    result = run("predict", "cwdpkg.models.net:Loop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tanh_1" in result.stdout


@pytest.mark.parametrize("source, says", [
    ("import no_such_module_anywhere\n", "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    ("x = 1\nraise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ("from .sibling import thing\n", "put an __init__.py in its folder"),
])
def test_import_errors_are_errors_with_exit_two(run, tmp_path, source, says):
    (tmp_path / "bad_target.py").write_text(source)
    result = run("predict", "bad_target.py:Net", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("torchlens predict: cannot import bad_target.py (as module ")
    assert says in result.stderr and "Traceback" not in result.stderr
    if "raise" in source:
        assert "bad_target.py:2)" in result.stderr  # the line that raised


def test_help_lists_both_commands(run, tmp_path):
    result = run("--help", cwd=tmp_path)
    assert result.returncode == 0 and "lint" in result.stdout and "predict" in result.stdout
    assert run("predict", cwd=tmp_path).returncode == 2  # usage error: argparse's message, exit 2
