"""``torchlens predict`` and ``python -m torchlens`` end to end (these import torch)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchlens", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_predict_table(tmp_path):
    (tmp_path / "loop.py").write_text(MODEL)
    result = run("predict", "loop.py:Loop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [line.split()[:3] for line in result.stdout.splitlines()[4:9]]
    assert rows == [["linear_1", "linear", "3"], ["tanh_1", "tanh", "3"], ["norm_1", "norm", "N+1"],
                    ["gt_1", "gt", "N+1"], ["div_1", "div", "N"]]
    assert "loop.py:12:17" in result.stdout  # tanh's place: file:line:col


def test_predict_json(tmp_path):
    (tmp_path / "loop.py").write_text(MODEL)
    result = run("predict", "loop.py:Loop", "--json", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert data["target"] == "Loop"
    tanh = next(layer for layer in data["layers"] if layer["label"] == "tanh_1")
    assert (tanh["func"], tanh["passes"], tanh["module"]) == ("tanh", 3, "self")
    assert tanh["place"].endswith("loop.py:12:17")
    norm = next(layer for layer in data["layers"] if layer["label"] == "norm_1")
    assert norm["passes"] == "N+1" and "while" in norm["passes_note"]


def test_predict_module_class_and_errors(tmp_path):
    result = run("predict", "torch.nn:GRUCell", cwd=tmp_path)
    assert result.returncode == 0 and "gru_cell_1" in result.stdout
    (tmp_path / "loop.py").write_text(MODEL)
    missing = run("predict", "loop.py:Nope", cwd=tmp_path)
    assert missing.returncode == 2 and "defines no class 'Nope'" in missing.stderr
    assert run("predict", "loop.py", cwd=tmp_path).returncode == 2
    assert run("predict", "no_such_module:X", cwd=tmp_path).returncode == 2


def test_python_m_torchlens_runs_lint(tmp_path):
    (tmp_path / "loop.py").write_text(MODEL)
    result = run("lint", "loop.py", cwd=tmp_path)
    assert result.returncode == 1 and "TL201" in result.stdout
