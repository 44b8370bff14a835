"""Each lint rule on a positive and a negative example (torch-free: runs on every interpreter)."""

from __future__ import annotations

import textwrap

import pytest

from torchlens.analysis.lint import LintConfig, lint_paths, lint_source

HEADER = """\
import functools
import threading
import torch
import torch.nn.functional as F
from torch import nn
"""


def codes(body: str, select: str = "ALL") -> list[tuple[str, int]]:
    """``(code, line)`` of every finding in a model file made of HEADER + ``body``."""
    text = HEADER + textwrap.dedent(body)
    return [(f.code, f.line - HEADER.count("\n")) for f in lint_source(text, "m.py", LintConfig(select=(select,)))]


CASES = {
    # code: (positive source, expected lines, negative source)
    "TL101": ("""
        class M(nn.Module):
            def forward(self, x):
                x = x @ self.W
                x = x @ self.W
                x = x @ self.W
                return torch.tanh(x)
        """, [4], """
        class M(nn.Module):
            def forward(self, x):
                for _ in range(3):
                    x = x @ self.W
                x = self.block(x)
                x = self.block(x)
                return x
        """),
    "TL102": ("""
        class M(nn.Module):
            def proj(self, x):
                return torch.tanh(x)

            def forward(self, x):
                y = self.proj(x)
                z = self.proj(y)
                return z
        """, [8], """
        class M(nn.Module):
            def proj(self, x):
                return torch.tanh(x)

            def forward(self, x):
                for _ in range(2):
                    x = self.proj(x)
                return x
        """),
    "TL103": ("""
        def tree(x, depth):
            return x if depth == 0 else tree(torch.tanh(x), depth - 1)

        class M(nn.Module):
            def forward(self, x):
                a = tree(x, 3)
                b = tree(x, 2)
                return a + b
        """, [8], """
        def tree(x, depth):
            return x if depth == 0 else tree(torch.tanh(x), depth - 1)

        class M(nn.Module):
            def forward(self, x):
                return tree(x, 3)
        """),
    "TL104": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.W = nn.Parameter(torch.ones(2, 2))
                self.emb, self.head = nn.Embedding(3, 2), nn.Linear(2, 3)
                self.head.weight = self.emb.weight

            def forward(self, x):
                return (x @ self.W) + (x @ self.W.T)
        """, [7, 10], """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.W = nn.Parameter(torch.ones(2, 2))

            def forward(self, x):
                for _ in range(2):
                    x = x @ self.W
                return x
        """),
    "TL105": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                shared = nn.Linear(2, 2)
                self.left = nn.Sequential(shared)
                self.right = nn.Sequential(shared)
        """, [7], """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                first = nn.Linear(2, 2)
                self.blocks = nn.ModuleList([first, copy.deepcopy(first)])
        """),
    "TL201": ("""
        class M(nn.Module):
            def forward(self, x):
                while x.norm() > 1:
                    x = x / 2
                return x
        """, [4], """
        class M(nn.Module):
            def forward(self, x, n: int):
                while n > 0:
                    x = torch.tanh(x)
                    n -= 1
                return x
        """),
    "TL202": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

            def forward(self, xs):
                a = sum(h(xs[0]) for h in self.heads)
                b = list(map(torch.sin, xs))
                c = functools.reduce(lambda s, t: s + torch.cos(t), xs)
                return a, b, c
        """, [8, 9, 10], """
        class M(nn.Module):
            def forward(self, xs, sizes):
                n = sum(len(s) for s in sizes)
                names = list(map(str, sizes))
                return torch.stack(xs), n, names
        """),
    "TL301": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("state", torch.zeros(2))

            def forward(self, x):
                self.state.data = x * 2
                return x
        """, [8], """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("state", torch.zeros(2))

            def forward(self, x):
                self.state.copy_(x * 2)
                self.state = x * 2
                return x
        """),
    "TL302": ("""
        class M(nn.Module):
            def forward(self, x):
                self.memory = torch.tanh(x)
                return x
        """, [4], """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("memory", torch.zeros(2))

            def forward(self, x):
                self.memory = torch.tanh(x)
                self.calls = 3
                return x
        """),
    "TL401": ("""
        class M(nn.Module):
            def forward(self, x):
                worker = threading.Thread(target=print)
                return nn.DataParallel(self.inner)(x)
        """, [4, 5], """
        class M(nn.Module):
            def forward(self, x):
                return self.inner(x)
        """),
    "TL402": ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)
                self.lin.register_forward_hook(lambda m, i, o: o * 2)
        """, [6], """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)
        """),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fires_where_it_should(code):
    positive, lines, _ = CASES[code]
    assert codes(positive, code) == [(code, line) for line in lines]


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_is_quiet_where_it_should(code):
    _, _, negative = CASES[code]
    assert codes(negative, code) == []


def test_messages_name_places_and_consequences():
    text = HEADER + textwrap.dedent(CASES["TL101"][0])
    (finding,) = lint_source(text, "models/rnn.py", LintConfig(select=("TL101",)))
    assert str(finding) == (
        "models/rnn.py:9:13: TL101 `x @ self.W` is written out 3 times (lines 9, 10, 11): 3 layers, "
        "not one layer with 3 passes; a loop would make them one layer"
    )


def test_informational_rules_are_off_by_default():
    text = HEADER + textwrap.dedent(CASES["TL102"][0])
    assert lint_source(text, "m.py") == []
    assert [f.code for f in lint_source(text, "m.py", LintConfig(select=("TL1",)))] == ["TL102"]


def test_noqa_suppresses_the_reported_line_only():
    body = textwrap.dedent(CASES["TL201"][0]).replace("while x.norm() > 1:", "while x.norm() > 1:  # torchlens: noqa: TL201")
    assert codes(body, "TL201") == []
    other = body.replace("noqa: TL201", "noqa: TL101")
    assert codes(other, "TL201") == [("TL201", 4)]
    bare = body.replace("noqa: TL201", "noqa")
    assert codes(bare, "TL201") == []


def test_a_file_that_does_not_parse_is_reported():
    (finding,) = lint_source("def broken(:\n    pass\n", "bad.py")
    assert (finding.code, finding.line, finding.severity) == ("TL000", 1, "error")
    assert finding.message.startswith("cannot parse this file")


def test_unknown_rule_codes_are_refused():
    with pytest.raises(ValueError, match="unknown lint rule 'TL999'"):
        LintConfig(select=("TL999",))


# Scope and type facts: each case is reduced from a model folder where the rule used to fire
# falsely (torchvision swin_transformer.py, timm vision_transformer.py, efficientvim.py, hgnet.py,
# dpn.py, cpubone.py, roi_heads.py); the rule must stay quiet.
QUIET = {
    "TL302 nn.Parameter set in a helper __init__ calls": ("TL302", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.define_table()

            def define_table(self):
                self.table = nn.Parameter(torch.zeros(4, 2))

            def forward(self, x):
                self.table = nn.Parameter(torch.zeros(4, 2))
                return x @ self.table
        """),
    "TL302 a float set in a helper __init__ calls": ("TL302", """
        import math

        class M(nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.set_lambda(depth)

            def set_lambda(self, depth):
                self.lam = 0.8 - 0.6 * math.exp(-0.3 * depth)

            def forward(self, x):
                return x * self.lam
        """),
    "TL302 a parameter replaced by a pruning method": ("TL302", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.weights = nn.Parameter(torch.ones(4))

            def prune(self, n):
                self.weights = nn.Parameter(torch.cat([self.weights[:n], self.weights[-1:]]).detach())

            def forward(self, x):
                return x * self.weights
        """),
    "TL302 numbers and a registered parameter": ("TL302", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_parameter("scale", nn.Parameter(torch.ones(1)))

            def forward(self, x):
                self.scale = torch.tanh(x)
                self.steps = int(x.sum())
                self.half = x.shape[-1] ** -0.5
                self.cuda_ok = torch.cuda.is_available()
                return x
        """),
    "TL105 one module placed in exclusive if/else arms": ("TL105", """
        class M(nn.Module):
            def __init__(self, stride, lab):
                super().__init__()
                proj = nn.Conv2d(2, 2, 1)
                if stride == 2:
                    self.proj_s2 = proj
                else:
                    self.proj_s1 = proj
                conv, act = nn.Conv2d(2, 2, 1), nn.ReLU()
                if lab:
                    self.last = nn.Sequential(conv, act, nn.Identity())
                elif stride == 3:
                    self.last = nn.Sequential(act)
                else:
                    self.last = nn.Sequential(conv, act)
        """),
    "TL105 a name rebound to a new module that wraps the old one": ("TL105", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                context = nn.Sequential(nn.Linear(2, 2))
                context = nn.Sequential(context, nn.ReLU())
                self.total = nn.Sequential(context, nn.Identity())
        """),
    "TL105 an attribute rebound to a module that wraps the one it held (transformers DAB-DETR)": ("TL105", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.backbone = nn.Conv2d(2, 2, 1)
                self.proj = nn.Conv2d(2, 2, 1)
                self.backbone = nn.Sequential(self.backbone, nn.ReLU())
        """),
    "TL101 parallel updates of different lists": ("TL101", """
        class M(nn.Module):
            def forward(self, proposals, labels, inds, i):
                proposals[i] = proposals[i][inds]
                labels[i] = labels[i][inds]
                return proposals, labels
        """),
    "TL101 a chain of different names, and dict lookups (transformers musicflamingo, openfold)": ("TL101", """
        def rotate(h, cos, dtype, table, letter, atoms):
            h = h.to(dtype)
            cos = cos.to(h)
            name = table[letter]
            names = atoms[name]
            return h, cos, names
        """),
    "TL202 map over a builtin, a tensor method only in the iterable (openfold protein.py)": ("TL202", """
        def parse(g):
            return list(map(float, g[1].split()))
        """),
    "TL302 a number that is a tensor only under jit tracing (transformers clap)": ("TL302", """
        class M(nn.Module):
            def forward(self, x, res):
                self.window = torch.min(torch.tensor(res)) if torch.jit.is_tracing() else min(res)
                return x
        """),
    "TL102 a helper without torch ops (torchvision roi_heads.py, maxvit.py)": ("TL102", """
        def out_shape(size, k):
            return (size[0] - k) // 2 + 1, (size[1] - k) // 2 + 1

        class M(nn.Module):
            def has_mask(self):
                return self.mask_head is not None

            def forward(self, x):
                if self.has_mask():
                    x = x + 1
                a = out_shape(x.shape, 3)
                b = out_shape(a, 3)
                return x if self.has_mask() else b
        """),
    "TL104 a weight tested against None and its shape read (torchvision mvit.py)": ("TL104", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.pos = nn.Parameter(torch.zeros(4, 2))

            def forward(self, x):
                if self.pos is not None:
                    n, d = self.pos.shape
                    x = x + self.pos.unsqueeze(0)
                return x
        """),
    "TL104 a weight used in exclusive arms (timm fastvit.py, xcit.py)": ("TL104", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.gamma = nn.Parameter(torch.ones(2))

            def forward(self, x, fused):
                if fused:
                    x = x * self.gamma
                else:
                    x = torch.tanh(x) * self.gamma
                return x

        class N(M):
            def forward(self, x, inplace):
                return x.mul_(self.gamma) if inplace else x * self.gamma
        """),
}

# And where the same facts must still find the problem.
LOUD = {
    "TL302 state set in a method forward calls (and a list of tensors)": ("TL302", """
        class M(nn.Module):
            def forward(self, x):
                self.update(x)
                return x

            def update(self, x):
                self.memory = torch.tanh(x)
                self.anchors = [a.to(x.dtype) for a in self.anchors]
                self.mask = self.mask.to(x.dtype) if self.mask is not None else None
        """, [8, 9, 10]),
    "TL105 one module under two parents outside exclusive arms": ("TL105", """
        class M(nn.Module):
            def __init__(self, flag):
                super().__init__()
                proj = nn.Linear(2, 2)
                if flag:
                    self.a = proj
                self.b = nn.Sequential(proj)
                self.c = nn.Linear(2, 2)
                self.d = self.c
        """, [8, 10]),
    "TL104 a weight used twice in one arm": ("TL104", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.gamma = nn.Parameter(torch.ones(2))

            def forward(self, x, inplace):
                return x.mul_(self.gamma) if inplace else x * self.gamma * self.gamma
        """, [8]),
}


@pytest.mark.parametrize("case", sorted(QUIET))
def test_scope_and_type_facts_keep_rules_quiet(case):
    code, source = QUIET[case]
    assert codes(source, code) == []


@pytest.mark.parametrize("case", sorted(LOUD))
def test_scope_and_type_facts_keep_true_findings(case):
    code, source, lines = LOUD[case]
    assert codes(source, code) == [(code, line) for line in lines]


def test_tl302_says_where_the_state_is_updated():
    text = HEADER + textwrap.dedent(LOUD["TL302 state set in a method forward calls (and a list of tensors)"][1])
    messages = [f.message for f in lint_source(text, "m.py", LintConfig(select=("TL302",)))]
    assert messages == [
        "tensor state kept in plain attribute `self.memory` and updated in `update` (called from `forward`): "
        "torchlens does not track it as model state; register it with `self.register_buffer(\"memory\", ...)`",
        "tensors kept in plain attribute `self.anchors` (a list) and updated in `update` (called from `forward`): "
        "torchlens does not track them as model state; register each with `self.register_buffer(name, tensor)`",
        "tensor state kept in plain attribute `self.mask` and updated in `update` (called from `forward`): "
        "torchlens does not track it as model state; register it with `self.register_buffer(\"mask\", ...)`",
    ]


SYNTAX = '''
import torch
from torch import nn

@staticmethod
def free(a, /, b=1, *args, c, d=2, **kw):
    global G
    x = {**kw, "k": a}
    y = [*args, *(v for v in x)]
    if (n := len(y)) > 1:
        pass
    f"{a!r:>{b}} {c=}"
    lambda q=1, *, r: q + r
    return x, y, n


class M(nn.Module):
    async def run(self, xs):
        async with xs as z:
            async for t in z:
                yield t
        await z

    def forward(self, x, *, scale):
        def inner():
            nonlocal x
            x = x * 2
        match x.dim():
            case 1 | 2:
                x = torch.tanh(x)
            case [a, *rest] if a:
                pass
            case {"k": v, **others}:
                pass
            case M(p=1) as bound:
                pass
            case None | True:
                pass
            case _:
                pass
        try:
            x = x @ x
        except ValueError as error:
            raise error from None
        finally:
            del scale
        with torch.no_grad(), open("f") as (a, b):
            x = x[1:2, ..., None]
        assert x is not None, "x"
        return -x if x else ~x
'''


def test_every_syntax_form_is_read():
    """Every kind of node the grammar has (3.10) passes the walks without error."""
    assert lint_source(SYNTAX, "m.py", LintConfig(select=("ALL",))) == []


def _package(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_class_whose_module_base_is_in_another_file_is_linted(tmp_path):
    _package(tmp_path / "pkg", {
        "__init__.py": "from .layers import Layer\n",
        "layers.py": """
            from torch import nn

            class Layer(nn.Module):
                pass
        """,
        "models/__init__.py": "",
        "models/net.py": """
            import torch
            from torch import nn
            from .. import Layer
            from ..layers import Layer as Base

            class Net(Layer):
                def forward(self, x):
                    x = torch.relu(x)
                    x = torch.relu(x)
                    return x

            class Deeper(Net):
                def forward(self, x):
                    x = torch.tanh(x)
                    x = torch.tanh(x)
                    return x

            class Plain(Base):
                def forward(self, x):
                    self.state = torch.sigmoid(x)
                    return x

            class Direct(nn.Module):
                def forward(self, x):
                    self.state = torch.sigmoid(x)
                    return x
        """,
    })
    report = lint_paths([str(tmp_path / "pkg" / "models")])  # the base's file is found, not linted
    assert sorted((f.path.rpartition("/")[2], f.line, f.code) for f in report.findings) == [
        ("net.py", 9, "TL101"), ("net.py", 15, "TL101"), ("net.py", 26, "TL302")]
    # Plain's base (elsewhere) may register `state`: TL302 is claimed only where every base is seen
    alone = lint_source((tmp_path / "pkg" / "models" / "net.py").read_text(), "net.py")
    assert [(f.line, f.code) for f in alone] == [(26, "TL302")]  # alone, its bases are not known modules
