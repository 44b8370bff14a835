"""``trace.draw()``: golden DOT files for small models, every Cases-table model drawn rolled and
unrolled with every layer (op) a node and every parent link an edge, and the options' behaviour.

Regenerate the golden files after an intended change with ``TORCHLENS_GOLDEN=update``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import graphviz
import pytest
import torch
from torch import nn

import torchlens as tl
from models import cases as C
from models.containers import CacheLM
from models.table import ALL_PARAMS, build

GOLDEN = Path(__file__).parent / "golden"
NODE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" \[label=', re.M)
EDGE = re.compile(r'^\t"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"', re.M)


def nodes(source: str) -> set[str]:
    return set(NODE.findall(source))


def edges(source: str) -> set[tuple[str, str]]:
    return set(EDGE.findall(source))


def render_svg(source: str) -> str:
    done = subprocess.run(["dot", "-Tsvg"], input=source, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("case", ALL_PARAMS)
def test_every_case_model_draws_every_layer_and_link(case):
    model, inputs = build(case)
    trace = tl.trace(model, *inputs)
    rolled = trace.draw(show_buffers="always", fold_repeats=False).source
    assert nodes(rolled) == {layer.layer_label for layer in trace.layers}
    rolled_edges = edges(rolled)
    for op in trace.ops:
        for parent in op.parents:
            assert (trace.ops[parent].layer_label, op.layer_label) in rolled_edges
    unrolled = trace.draw(view="unrolled", show_buffers="always", fold_repeats=False).source
    assert nodes(unrolled) == {op.label for op in trace.ops}
    assert edges(unrolled) == {(parent, op.label) for op in trace.ops for parent in op.parents}
    for source in (rolled, unrolled):
        assert "<svg" in render_svg(source)


class BatchNormNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return torch.relu(self.bn(self.lin(x)))


def golden_traces():
    torch.manual_seed(0)
    ones = torch.ones(2, 4)
    yield "looped", tl.trace(C.Looped(), ones), {}
    yield "unrolled", tl.trace(C.Unrolled(), ones), {}
    yield "block-loop", tl.trace(C.ResidualBlockLoop(), ones), {}
    yield "block-loop-unrolled", tl.trace(C.ResidualBlockLoop(), ones), {"view": "unrolled"}
    cache = tl.trace(CacheLM(), ones, capture=tl.options.CaptureOptions(capture_container_structure=True))
    for level in (False, "labels", "collapsed", "nodes"):
        yield f"dict-containers-{level}", cache, {"show_containers": level}
    bn = tl.trace(BatchNormNet().train(), torch.randn(4, 3))
    for show in ("meaningful", "always"):
        yield f"batchnorm-{show}", bn, {"show_buffers": show}


GOLDEN_CASES = list(golden_traces())


@pytest.mark.parametrize("name,trace,options", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_golden_dot(name, trace, options):
    source = trace.draw(**options).source
    path = GOLDEN / f"{name}.dot"
    if os.environ.get("TORCHLENS_GOLDEN") == "update":
        path.write_text(source)
    assert source == path.read_text()
    render_svg(source)


def test_rolled_edges_carry_their_passes_and_loop_edges_go_back():
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    source = trace.draw().source
    assert '"mul_1" -> "tanh_1" [label="1" constraint="false"' in source
    assert '"mul_1" -> "output_1" [label="2"]' in source
    assert '"tanh_1" -> "mul_1"\n' in source
    assert 'label="tanh_1 x2\\n2x4"' in source


def test_buffers_meaningful_hides_batchnorm_statistics_only():
    trace = tl.trace(BatchNormNet().train(), torch.randn(4, 3))
    hidden = trace.draw().source
    shown = trace.draw(show_buffers="always").source
    assert 'label="running_mean' not in hidden and 'label="num_batches_tracked' not in hidden
    assert 'label="running_mean v2' in shown and 'label="num_batches_tracked v2' in shown
    cell = tl.trace(C.BufferLoop(), torch.randn(2, 4)).draw().source
    assert 'shape="cylinder"' in cell


def test_buffer_nodes_are_named_inside_their_box_with_the_address_in_the_tooltip():
    trace = tl.trace(BatchNormNet().train(), torch.randn(4, 3))
    rolled = trace.draw(show_buffers="always").source
    assert re.search(r'"buffer_5" \[label="running_mean v2\\n3" [^\n]*tooltip="[^"]*buffer bn.running_mean:', rolled)
    assert 'label="bn.' not in rolled
    unrolled = trace.draw(view="unrolled", show_buffers="always").source
    assert 'label="running_mean:2\\n3"' in unrolled and 'label="bn.' not in unrolled
    assert 'label="total v' in tl.trace(C.BufferLoop(), torch.randn(2, 4)).draw().source  # the model's own


def test_depth_draws_deeper_modules_as_one_node_each():
    trace = tl.trace(C.ResidualBlockList(), torch.randn(2, 4))
    source = trace.draw(depth=0, fold_repeats=False).source
    assert {"blocks.0", "blocks.1", "blocks.2"} <= nodes(source)
    assert "linear_1" not in nodes(source) and "cluster_" not in source
    assert ("blocks.0", "blocks.1") in edges(source)
    assert "2 layers" not in source and "4 layers, 40 params" in source
    one = trace.draw(depth=1).source
    assert "cluster_blocks.0" in one and {"blocks.0.f1", "blocks.0.f2"} <= nodes(one)


def test_identical_blocks_in_a_row_fold_into_one_node():
    trace = tl.trace(C.ResidualBlockList(), torch.randn(2, 4))
    source = trace.draw(depth=0).source
    assert nodes(source) == {"input_1", "blocks.0", "output_1"}
    assert "blocks.0 .. 2 x3" in source
    assert edges(source) == {("input_1", "blocks.0"), ("blocks.0", "output_1")}


class SameTypeDifferentInside(nn.Module):
    """Three ``Sequential`` blocks of one shape and parameter count whose activations differ."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(4, 4), act()) for act in (nn.ReLU, nn.Tanh, nn.ReLU)))

    def forward(self, x):
        return self.blocks(x)


def test_collapsed_blocks_fold_only_when_the_same_inside():
    source = tl.trace(SameTypeDifferentInside(), torch.randn(2, 4)).draw(depth=1).source
    assert {"blocks.0", "blocks.1", "blocks.2"} <= nodes(source)  # same label text, different layers
    assert " x" not in source.split("blocks.0")[1].split("]")[0]
    same = tl.trace(C.ResidualBlockList(), torch.randn(2, 4)).draw(depth=0).source
    assert "blocks.0 .. 2 x3" in same


def cluster_label(source: str, name: str) -> str:
    found = re.search(r'subgraph "cluster_' + re.escape(name) + r'" \{\n\t*label="([^"]*)"', source)
    assert found, f"no cluster {name}"
    return found.group(1)


def test_identical_blocks_in_a_row_are_drawn_once_expanded():
    trace = tl.trace(C.ResidualBlockList(), torch.randn(2, 4))
    source = trace.draw().source
    assert nodes(source) == {"input_1", "linear_1", "add_1", "linear_2", "add_2", "output_1"}
    assert cluster_label(source, "blocks.0") == "blocks.0 .. 2 (ResidualBlock) x3"
    assert "cluster_blocks.1" not in source and "cluster_blocks.2" not in source
    assert {("input_1", "linear_1"), ("add_2", "output_1"), ("linear_1", "add_1")} <= edges(source)
    assert ("add_2", "linear_1") not in edges(source)  # one block feeding the next is the x3
    assert "<svg" in render_svg(source)
    unrolled = trace.draw(view="unrolled").source
    assert cluster_label(unrolled, "blocks.0:1") == "blocks.0:1 .. 2:1 (ResidualBlock) x3"
    assert nodes(unrolled) == {"input_1:1", "linear_1:1", "add_1:1", "linear_2:1", "add_2:1", "output_1:1"}
    assert "<svg" in render_svg(unrolled)
    every = trace.draw(fold_repeats=False).source
    assert nodes(every) == {layer.layer_label for layer in trace.layers}


class Widen(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.f(x))


class BrokenRun(nn.Module):
    """Two identical blocks, a different one, then two more identical blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([C.ResidualBlock(), C.ResidualBlock(), Widen(), C.ResidualBlock(),
                                     C.ResidualBlock()])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class SideBySide(nn.Module):
    """Two identical blocks that do not feed each other."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([C.ResidualBlock(), C.ResidualBlock()])

    def forward(self, x):
        return self.blocks[0](x) * self.blocks[1](x)


@pytest.mark.parametrize("first, last, end", [("h.0", "h.11", "11"), ("enc.layer_0", "enc.layer_11", "11"),
                                              ("block9", "block12", "12"), ("b.0:1", "b.2:1", "2:1")])
def test_a_folded_run_is_labelled_by_where_its_last_name_differs(first, last, end):
    from torchlens.draw.trace_view import range_end

    assert range_end(first, last) == end


def test_a_run_of_identical_blocks_breaks_at_a_different_block():
    source = tl.trace(BrokenRun(), torch.randn(2, 4)).draw().source
    assert cluster_label(source, "blocks.0") == "blocks.0 .. 1 (ResidualBlock) x2"
    assert cluster_label(source, "blocks.2") == "blocks.2 (Widen)"
    assert cluster_label(source, "blocks.3") == "blocks.3 .. 4 (ResidualBlock) x2"
    assert "cluster_blocks.1" not in source and "cluster_blocks.4\"" not in source
    assert {("add_2", "linear_5"), ("relu_1", "linear_6"), ("add_6", "output_1")} <= edges(source)
    assert "<svg" in render_svg(source)


def test_identical_blocks_that_do_not_feed_each_other_are_not_folded():
    source = tl.trace(SideBySide(), torch.randn(2, 4)).draw().source
    assert cluster_label(source, "blocks.0") == "blocks.0 (ResidualBlock)"
    assert cluster_label(source, "blocks.1") == "blocks.1 (ResidualBlock)"


def test_collapse_takes_a_predicate_addresses_or_type_names():
    trace = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4))
    by_type = trace.draw(collapse="Linear").source
    by_address = trace.draw(collapse=["block.f1", "block.f2"]).source
    by_predicate = trace.draw(collapse=lambda m: m.type_name == "Linear").source
    assert by_type == by_address == by_predicate
    assert {"block.f1", "block.f2"} <= nodes(by_type) and "linear_1" not in nodes(by_type)
    with pytest.raises(tl.errors.TorchLensTypeError):
        trace.draw(collapse=[3])


def test_unrolled_module_calls_are_separate_boxes():
    source = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4)).draw(view="unrolled").source
    for k in (1, 2, 3):
        assert f'subgraph "cluster_block:{k}"' in source and f'subgraph "cluster_block.f1:{k}"' in source


def test_bad_options_say_what_is_accepted():
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    for bad in ({"view": "flat"}, {"direction": "up"}, {"depth": -1}, {"show_buffers": "some"},
                {"show_containers": "all"}, {"path": "x.jpeg"}):
        with pytest.raises(tl.errors.TorchLensValueError):
            trace.draw(**bad)


@pytest.mark.parametrize("suffix,magic", [(".svg", b"<?xml"), (".png", b"\x89PNG"), (".pdf", b"%PDF"),
                                          (".dot", b"digraph")])
def test_path_writes_the_format_its_suffix_names(tmp_path, suffix, magic):
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    drawing = trace.draw(path=tmp_path / f"model{suffix}")
    assert isinstance(drawing, graphviz.Digraph)
    assert (tmp_path / f"model{suffix}").read_bytes().startswith(magic)


def test_without_dot_the_drawing_is_built_and_rendering_says_how_to_install(monkeypatch, tmp_path):
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    monkeypatch.setenv("PATH", str(tmp_path))
    drawing = trace.draw()
    assert "tanh_1" in drawing.source
    with pytest.raises(tl.errors.GraphvizMissingError, match="apt-get install graphviz"):
        drawing.pipe(format="svg")
    with pytest.raises(tl.errors.GraphvizMissingError):
        trace.draw(path=tmp_path / "x.svg")
    assert isinstance(tl.errors.GraphvizMissingError("x"), tl.TorchLensError)
    bundle = trace._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "graphviz" in bundle["text/plain"].lower()


def test_notebook_display_is_svg():
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    bundle = trace._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml") and "tanh_1" in bundle["image/svg+xml"]


def test_drawing_reads_metadata_not_saved_outputs():
    model = C.ResidualBlockLoop()
    kept = tl.trace(model, torch.ones(2, 4)).draw().source
    bare = tl.trace(model, torch.ones(2, 4), capture=tl.options.CaptureOptions(save_outputs=False)).draw().source
    assert kept == bare


def test_tooltips_carry_the_explanation():
    trace = tl.trace(C.Looped(), torch.ones(2, 4))
    text = trace.explain("tanh_1")
    assert "for _ in range(2)" not in text and "x = torch.tanh(x) * 0.5" in text and "^" in text
    assert "2 passes" in text and "scope: self (Looped)" in text
    assert 'tooltip="tanh_1: op tanh, 2 passes' in trace.draw().source


class SixteenOutputs(nn.Module):
    def forward(self, x):
        return tuple(x * k for k in range(16))


def test_a_flat_output_container_of_many_leaves_is_one_summary_node():
    trace = tl.trace(SixteenOutputs(), torch.ones(2))
    for level in ("collapsed", "nodes"):
        source = trace.draw(show_containers=level).source
        assert 'label="tuple x16 (model output)"' in source
        assert not any(name.startswith("output_") for name in nodes(source))
    unfolded = trace.draw(fold_repeats=False).source
    assert len([n for n in nodes(unfolded) if n.startswith("output_")]) == 16
    assert 'label="output_1 .. 16 x16' in trace.draw().source  # same-shaped outputs of one node fold


def test_labels_level_puts_key_paths_on_the_real_edges_only():
    trace = tl.trace(CacheLM(), torch.ones(2, 4))
    source = trace.draw(show_containers="labels").source
    assert "\"linear_1\" -> \"output_2\" [label=\"['past_key_values'][0][0]\"]" in source
    assert '"container ' not in source


class Pair(nn.Module):
    def forward(self, x):
        return torch.sin(x), torch.cos(x)


class UsesPair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()

    def forward(self, x):
        a, b = self.pair(x)
        return a * b


def test_mid_graph_containers_keep_dataflow_on_the_real_edges():
    trace = tl.trace(UsesPair(), torch.ones(2), capture=tl.options.CaptureOptions(capture_container_structure=True))
    source = trace.draw(show_containers="collapsed").source
    assert '"sin_1" -> "mul_1" [label="[0]"]' in source and '"cos_1" -> "mul_1" [label="[1]"]' in source
    assert 'label="tuple[2] (pair:1 output)' in source
    tie = '"sin_1" -> "container pair:1/output" [style="dashed" arrowhead="none" color="#b0a060" constraint="false"]'
    assert tie in source
    assert not any(head.startswith("container") and tail != "sin_1" and tail != "cos_1" for tail, head in edges(source))


def test_edges_into_and_out_of_a_collapsed_module_carry_its_call_numbers():
    source = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4)).draw(collapse="block").source
    assert 'label="block x3\\nResidualBlock' in source
    assert '"input_1" -> "block" [label="to 1"]' in source
    assert '"block" -> "output_1" [label="3"]' in source
    assert '"block" -> "block" [label="1-2" constraint="false"' in source  # call k feeds call k+1


class SumOfList(nn.Module):
    def forward(self, xs):
        return torch.stack(xs).sum(0)


class FeedsList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = SumOfList()

    def forward(self, x):
        a = torch.sin(x)
        return self.head([a, torch.cos(x)]) * a


def test_a_container_passed_into_a_module_call_is_drawn_with_keys_on_the_edges_into_the_call():
    trace = tl.trace(FeedsList(), torch.ones(2), capture=tl.options.CaptureOptions(capture_container_structure=True))
    labels = trace.draw(show_containers="labels").source
    assert '"sin_1" -> "stack_1" [label="[0][0]"]' in labels and '"cos_1" -> "stack_1" [label="[0][1]"]' in labels
    assert '"sin_1" -> "mul_1" [weight="0" color="#9aa5b5"]' in labels  # used outside the call: no key
    assert '"container ' not in labels
    collapsed = trace.draw(show_containers="collapsed").source
    assert 'label="list[2] (head:1 input)' in collapsed
    tie = '[style="dashed" arrowhead="none" color="#b0a060" constraint="false"]'
    assert f'"sin_1" -> "container head:1/input[0]" {tie}' in collapsed
    assert f'"cos_1" -> "container head:1/input[0]" {tie}' in collapsed
    folded = trace.draw(show_containers="collapsed", collapse="head").source
    assert '"sin_1" -> "head" [label="[0][0]"]' in folded
    unrolled = trace.draw(show_containers="nodes", view="unrolled").source
    assert '"cos_1:1" -> "stack_1:1" [label="[0][1]"]' in unrolled


def test_boxes_are_labelled_inside_their_parent_box_with_the_full_address_as_tooltip():
    source = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4)).draw().source
    assert '\t\t\tlabel="f1 (Linear) x3"\n' in source and 'tooltip="block.f1 (Linear)"' in source
    unrolled = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4)).draw(view="unrolled").source
    assert 'label="f1:2 (Linear)"' in unrolled and 'label="block:2 (ResidualBlock)"' in unrolled


def test_a_residual_input_is_a_side_edge_and_the_latest_input_the_main_line():
    source = tl.trace(C.ResidualBlockLoop(), torch.randn(2, 4)).draw(view="unrolled").source
    assert '"linear_1:1" -> "add_1:1"\n' in source  # the block's own computation: the main line
    assert '"input_1:1" -> "add_1:1" [weight="0" color="#9aa5b5"]' in source  # the residual skips ahead
    pair = tl.trace(UsesPair(), torch.ones(2)).draw().source
    assert '"sin_1" -> "mul_1"\n' in pair and '"cos_1" -> "mul_1"\n' in pair  # parallel inputs: no skip


class ReluTwice(nn.Module):
    """One ReLU module used twice in a block, as torchvision's BasicBlock does."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.act, self.out = nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)

    def forward(self, x):
        h = self.act(self.lin(x))
        h = self.act(h + x)
        return self.out(h)


def test_what_a_later_pass_feeds_is_kept_below_what_fed_that_pass():
    source = tl.trace(ReluTwice(), torch.randn(2, 4)).draw().source
    assert '"add_1" -> "relu_1" [label="to 2" constraint="false"' in source  # pass 2 comes back from add_1
    assert '"relu_1" -> "linear_2" [label="2"]' in source
    assert '"add_1" -> "linear_2" [style="invis"]' in source  # so linear_2 is laid out below add_1
    render_svg(source)


def test_the_title_says_what_the_marks_it_uses_mean():
    looped = tl.trace(C.Looped(), torch.ones(2, 4)).draw().source
    assert ("Looped (rolled): 4 layers, 6 ops\\nedge label: the passes it carries (1-2) or feeds (to 1)"
            "\\nblue edge: back, round a loop" in looped)
    assert "3D box" not in looped and "grey edge" not in looped
    folded = tl.trace(C.ResidualBlockList(), torch.randn(2, 4)).draw(depth=0).source
    assert "\\n3D box: a module drawn as one node\\ndouble border: identical ones in a row, drawn once" in folded
    plain = tl.trace(BatchNormNet(), torch.randn(4, 3)).draw().source
    assert 'label="BatchNormNet (rolled): 12 layers, 12 ops" labelloc' in plain  # nothing to explain
