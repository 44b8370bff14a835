"""``torchlens lint --fix`` and ``--diff``: certain rewrites on LibCST, the rest of the file kept
byte for byte (torch-free)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from torchlens.analysis.lint import lint_source
from torchlens.analysis.lint.fix import fix_source
from torchlens.cli import main

README_MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = nn.Parameter(torch.eye(4))
            self.register_buffer("state", torch.zeros(4))

        def forward(self, x):
            x = torch.tanh(x @ self.W)
            x = torch.tanh(x @ self.W)
            while x.norm() > 1:
                x = x / 2
            self.state.data = x
            return sum(torch.sin(t) for t in x)
""")


def fixed(source: str) -> str:
    result = fix_source(source, lint_source(source, "m.py"))
    assert [f.code for f in result.findings] == ["TL301"]
    return result.text


def test_buffer_data_assignment_becomes_a_detached_reassignment():
    after = fixed(README_MODEL)
    assert after == README_MODEL.replace("self.state.data = x", "self.state = x.detach()")
    assert [f.code for f in lint_source(after, "m.py")] == ["TL101", "TL201", "TL202"]


@pytest.mark.parametrize("line, becomes", [
    ("self.state.data = x * 2  # halve later", "self.state = (x * 2).detach()  # halve later"),
    ("self.state.data = x.detach()", "self.state = x.detach()"),
    ("self.state.data = (x + 1)", "self.state = (x + 1).detach()"),
    ("self.state.data  =  torch.tanh( x )", "self.state  =  torch.tanh( x ).detach()"),
    ("self.state.data = x[0] if x.dim() else x", "self.state = (x[0] if x.dim() else x).detach()"),
])
def test_the_rewrite_keeps_formatting_and_precedence(line, becomes):
    assert fixed(README_MODEL.replace("self.state.data = x", line)) == README_MODEL.replace("self.state.data = x", becomes)


def test_nothing_else_is_rewritten():
    unfixable = README_MODEL.replace("        self.state.data = x\n", "")
    result = fix_source(unfixable, lint_source(unfixable, "m.py"))
    assert (result.text, result.findings) == (unfixable, ())
    suppressed = README_MODEL.replace("self.state.data = x", "self.state.data = x  # torchlens: noqa: TL301")
    assert fix_source(suppressed, lint_source(suppressed, "m.py")).text == suppressed


@pytest.fixture
def lint(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()

    def lint(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        returncode = main(["lint", *args])
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=returncode, stdout=out, stderr=err)
    return lint


def test_diff_previews_and_changes_nothing(lint, tmp_path):
    path = tmp_path / "models" / "rnn.py"
    path.write_text(README_MODEL)
    result = lint("--diff", "models")
    assert result.returncode == 1 and path.read_text() == README_MODEL
    assert result.stdout == textwrap.dedent("""\
        --- a/models/rnn.py
        +++ b/models/rnn.py
        @@ -13,5 +13,5 @@
                 x = torch.tanh(x @ self.W)
                 while x.norm() > 1:
                     x = x / 2
        -        self.state.data = x
        +        self.state = x.detach()
                 return sum(torch.sin(t) for t in x)
    """)
    assert result.stderr == "torchlens lint: --fix would fix 1 problem in 1 file\n"


def test_fix_rewrites_and_reports_what_is_left(lint, tmp_path):
    path = tmp_path / "models" / "rnn.py"
    path.write_text(README_MODEL)
    result = lint("--fix", "models")
    assert path.read_text() == README_MODEL.replace("self.state.data = x", "self.state = x.detach()")
    assert result.returncode == 1 and "TL301" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("Found 3 problems (TL101, TL201, TL202).")
    assert result.stderr == "torchlens lint: fixed 1 problem in 1 file\n"
    again = lint("--fix", "--select", "TL301", "models")
    assert (again.returncode, again.stdout.strip()) == (0, "No problems found.")
    assert lint("--diff", "models").returncode == 0


@pytest.mark.parametrize("encoding, prefix, newline", [
    ("latin-1", "# -*- coding: latin-1 -*-\n# caf\u00e9\n", "\n"),
    ("utf-8-sig", "# caf\u00e9\n", "\n"),
    ("utf-8", "", "\r\n"),
])
def test_fix_writes_the_file_back_in_its_own_encoding_and_newlines(lint, tmp_path, encoding, prefix, newline):
    path = tmp_path / "models" / "rnn.py"
    source = (prefix + README_MODEL).replace("\n", newline)
    path.write_bytes(source.encode(encoding))
    assert lint("--fix", "models").returncode == 1
    assert path.read_bytes() == source.replace("self.state.data = x", "self.state = x.detach()").encode(encoding)


def test_fix_leaves_files_without_fixes_untouched(lint, tmp_path):
    path = tmp_path / "models" / "plain.py"
    path.write_bytes(b"x = 1\r\n")
    before = path.stat().st_mtime_ns
    assert lint("--fix", "models").returncode == 0
    assert path.stat().st_mtime_ns == before
