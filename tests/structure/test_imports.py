"""Imports run one way: analysis <- capture <- torchlens <- fuzz, with no circle and no upward
import (not even a lazy one); the torch-free parts import without torch; a user's own
``analysis.py``, ``capture.py`` or ``fuzz.py`` cannot shadow torchlens's subpackages.

The graph is read from the source (the syntax tree of every module, imports inside functions
included, ``if TYPE_CHECKING:`` blocks left out, ``importlib.import_module("...")`` of a
literal name counted), so an import that only runs on some path still counts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from torchlens.analysis.graphs import cycles

ROOT = Path(__file__).resolve().parents[2]
#: Source folder -> package name and layer (a module may import only its own layer or lower).
PACKAGES = {"analysis": ("torchlens.analysis", 0), "capture": ("torchlens.capture", 1),
            "torchlens": ("torchlens", 2), "fuzz": ("torchlens.fuzz", 3)}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, (package, _) in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _layer(module: str) -> int:
    for package, layer in sorted(PACKAGES.values(), key=lambda p: -len(p[0])):
        if module == package or module.startswith(package + "."):
            return layer
    raise AssertionError(module)


def _imports(module: str, path: Path) -> set[str]:
    """The project modules ``module`` imports anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    type_only = {id(n) for node in ast.walk(tree)
                 if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                 for n in ast.walk(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                         for alias in node.names)
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return {name for name in names if name in MODULES and name != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _circles() -> set[frozenset[str]]:
    """The import circles: strongly connected components of more than one module."""
    return {frozenset(c) for c in cycles(sorted(GRAPH), {m: sorted(t) for m, t in GRAPH.items()})}


def test_the_graph_is_read():
    assert "torchlens.analysis.sites" in GRAPH["torchlens.capture.frames"]
    assert "torchlens.analysis.keys" in GRAPH["torchlens.grouping"]
    assert len(MODULES) > 60


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(f"{m} -> {n}" for m, targets in GRAPH.items() for n in targets if _layer(n) > _layer(m))
    assert upward == []


def test_no_import_circle():
    assert sorted(sorted(c) for c in _circles()) == []


def _run(code: str, cwd: Path = ROOT) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


TORCH_FREE = [m for m in MODULES if _layer(m) == 0] + [
    "torchlens", "torchlens.errors", "torchlens.capture.frames", "torchlens.capture.standin", "torchlens.capture.backends",
    "torchlens.fuzz.spec", "torchlens.fuzz.oracle", "torchlens.fuzz.strategies"]


def test_the_torch_free_modules_leave_torch_unimported():
    imports = "; ".join(f"import {m}" for m in TORCH_FREE)
    assert _run(f"import sys; {imports}; print('torch' in sys.modules)") == "False"


def test_torchlens_and_a_torch_trace_leave_jax_unimported():
    """Only tracing a JAX value or module imports jax (the JAX backend is looked up lazily)."""
    pytest.importorskip("torch")
    code = ("import sys, torch, torchlens as tl; tl.trace(torch.nn.Linear(2, 2), torch.ones(1, 2)); "
            "print(sorted(m for m in ('jax', 'jaxlib', 'flax', 'torchlens.capture.jaxbackend') if m in sys.modules))")
    assert _run(code) == "[]"


def test_import_torchlens_beside_files_named_like_its_subpackages(tmp_path):
    for name in ("analysis", "capture", "fuzz"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('the user file was imported')\n")
    out = _run("import torchlens, torchlens.analysis.sites, torchlens.capture.frames, torchlens.fuzz.spec; "
               "print(torchlens.__version__)", cwd=tmp_path)
    assert out


def test_the_first_use_of_a_public_name_imports_with_the_collector_paused():
    """``tl.predict`` (any name loaded on first use) imports its modules with Python's cyclic
    collector paused: no collection runs during the import; the collector is running again
    after it if it ran before, and stays off if it was off."""
    pytest.importorskip("torch")
    code = ("import gc, sys, torch, torchlens as tl\n"
            "def importing():\n"
            "    frame = sys._getframe(1)\n"
            "    while frame is not None and frame.f_code.co_name != '_find_and_load':\n"
            "        frame = frame.f_back\n"
            "    return frame is not None\n"
            "during = []\n"
            "gc.callbacks.append(lambda phase, info: during.append(importing()))\n"
            "gc.set_threshold(1); tl.predict; was = gc.isenabled(); gc.disable(); tl.trace\n"
            "print('torchlens.predict' in sys.modules, any(during), was, gc.isenabled())")
    assert _run(code) == "True False True False"
