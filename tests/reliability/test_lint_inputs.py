"""Every input a user can give ``torchlens lint`` ends in findings, a clear error or a skip, with
the documented exit status (0 clean, 1 findings, 2 usage, configuration or unreadable file) and
never a traceback (torch-free)."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from torchlens.analysis.lint import LintConfig, lint_source
from torchlens.cli import main

MODEL = """\
import torch
from torch import nn


class Seq(nn.Module):
    def forward(self, x):
        x = x @ self.W
        x = x @ self.W
        return x
"""


@pytest.fixture
def lint(capsys, monkeypatch, tmp_path):
    """``lint(*argv)`` in ``tmp_path``: exit status, stdout and stderr."""
    monkeypatch.chdir(tmp_path)

    def lint(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        returncode = main(["lint", *args])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return SimpleNamespace(returncode=returncode, stdout=out, stderr=err)
    return lint


def test_a_binary_file_is_an_unreadable_file(lint, tmp_path):
    (tmp_path / "weights.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    result = lint("weights.py")
    assert result.returncode == 2
    assert result.stdout.startswith("weights.py:1:1: TL000 not Python source: the file is binary")


def test_a_file_that_cannot_be_decoded_says_how_to_declare_its_encoding(lint, tmp_path):
    (tmp_path / "m.py").write_bytes("s = 'caf\u00e9'\n".encode("latin-1"))
    result = lint("m.py")
    assert result.returncode == 2 and "TL000 cannot decode this file: invalid or missing encoding" in result.stdout
    assert "coding" in result.stdout


def test_a_latin1_file_with_a_coding_cookie_is_linted(lint, tmp_path):
    source = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + MODEL
    (tmp_path / "m.py").write_bytes(source.encode("latin-1"))
    result = lint("m.py")
    assert result.returncode == 1
    assert result.stdout.startswith("m.py:9:13: TL101 `x @ self.W` is written out 2 times")


def test_a_utf8_bom_is_not_a_parse_error(lint, tmp_path):
    (tmp_path / "m.py").write_bytes(b"\xef\xbb\xbf" + MODEL.encode())
    result = lint("m.py")
    assert result.returncode == 1 and "TL000" not in result.stdout
    assert result.stdout.startswith("m.py:7:13: TL101")
    assert [f.code for f in lint_source("\ufeff" + MODEL, "m.py")] == ["TL101"]


def test_a_broken_pyproject_is_a_configuration_error(lint, tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "pyproject.toml").write_text("[tool.torchlens.lint\nselect = [\n")
    result = lint("m.py")
    assert (result.returncode, result.stdout) == (2, "")
    assert "pyproject.toml: cannot read it as TOML" in result.stderr


@pytest.mark.parametrize("table, says", [
    ("select = [101]", "select must be a list of rule codes as strings"),
    ('ignore = "TL101"', "ignore must be a list of rule codes as strings"),
    ('select = ["TL9"]', "unknown lint rule 'TL9'"),
])
def test_bad_values_in_the_configuration_are_errors(lint, tmp_path, table, says):
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchlens.lint]\n{table}\n")
    result = lint("m.py")
    assert (result.returncode, result.stdout) == (2, "") and says in result.stderr


def test_a_non_string_code_is_refused_by_the_api():
    with pytest.raises(TypeError, match="lint rule codes are strings"):
        LintConfig(select=(101,))  # type: ignore[arg-type]


def test_a_deep_expression_is_linted_and_every_rule_finishes():
    terms = " + ".join(["x"] * 400)
    source = MODEL.replace("        return x\n", f"        y = {terms}\n        y = {terms}\n"
                                                  "        self.memory = torch.tanh(y)\n        return y\n")
    found = lint_source(source, "deep.py", LintConfig(select=("ALL",)))
    assert [f.code for f in found] == ["TL101", "TL302"]


def test_a_file_too_deep_to_parse_is_reported_and_the_folder_goes_on(lint, tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a_deep.py").write_text("y = " + "-" * 20_000 + "x\n")  # too complex on 3.10-3.13
    (tmp_path / "models" / "b_seq.py").write_text(MODEL)
    result = lint("models")
    assert result.returncode == 2
    assert result.stdout.splitlines()[:2] == [
        "models/a_deep.py:1:1: TL000 cannot parse this file: it nests deeper than Python's parser allows",
        "models/b_seq.py:7:13: TL101 `x @ self.W` is written out 2 times (lines 7, 8): 2 layers, not one layer "
        "with 2 passes; a loop would make them one layer",
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_skipped_without_opening_it(lint, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "m.py").write_text(MODEL)
    done = threading.Event()
    results = []

    def run() -> None:
        results.append(lint("pipe.py", "m.py"))
        done.set()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    if not done.wait(30):  # a blocked open never returns: free it so the test fails instead of hanging
        with open(tmp_path / "pipe.py", "w"):
            pass
        worker.join(5)
        pytest.fail("lint blocked on a FIFO")
    (result,) = results
    assert result.returncode == 1
    assert result.stderr == "torchlens lint: skipped pipe.py: not a regular file (a FIFO)\n"
    assert "m.py:7:13: TL101" in result.stdout



def test_a_crashing_rule_is_an_internal_error_finding_and_the_rest_is_linted(lint, tmp_path, monkeypatch):
    from torchlens.analysis.lint import RULES

    def crash(model):
        yield from ()
        raise KeyError("boom")

    monkeypatch.setitem(RULES, "TL201", dataclasses.replace(RULES["TL201"], check=crash))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.py").write_text(MODEL)
    (tmp_path / "models" / "b.py").write_text(MODEL)
    result = lint("models")
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    for name in ("a", "b"):
        assert (f"models/{name}.py:1:1: TL001 internal error in rule TL201 (while-condition-op): KeyError: 'boom'; "
                "this is a bug in torchlens, not in your file: please report it with this file attached "
                "(the other rules and files were linted)") in lines
        assert any(line.startswith(f"models/{name}.py:7:13: TL101 ") for line in lines)
    assert "--explain TL101" in lines[-1]
