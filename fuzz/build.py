"""Build a spec into a real model: source written to a file, imported, instantiated.

The file is real so that frames, ``co_positions`` and source lookup behave as they do for a
user's model. Each model gets its own file (code identity includes the file name) in one
temporary folder per process, removed at exit; failures are copied elsewhere by the caller.
Torch is imported by the generated module, not here, so this module imports without torch.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from . import spec as S
from .oracle import Expected, SpecError, expect
from .render import TORCH, render

_folder: Optional[Path] = None
_counter = itertools.count(1)


def _model_folder() -> Path:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="torchlens-fuzz-"))
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def load_source(source: str, stem: str = "model") -> tuple[ModuleType, Path]:
    """Write ``source`` to a fresh file and import it (not registered in ``sys.modules``)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    path = _model_folder() / f"{stem}_{next(_counter)}_{digest}.py"
    path.write_text(source)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module, path


@dataclass
class GeneratedModel:
    """A generated model: its spec, source, file, expected layers, and how to make it."""

    #: The spec it was built from.
    spec: S.ModelSpec
    #: The rendered source (the file's contents).
    source: str
    #: The file it was imported from.
    path: Path
    #: What the oracle expects of its trace.
    expected: Expected
    namespace: ModuleType = field(repr=False)

    def make(self) -> Any:
        """A fresh ``Model`` instance; the same weights and buffers every time."""
        import torch

        torch.manual_seed(0)
        return self.namespace.Model()

    def inputs(self) -> tuple:
        """The forward's inputs: ``spec.inputs`` tensors of shape 2x4, the same every time."""
        import torch

        generator = torch.Generator().manual_seed(1)
        return tuple(torch.randn(2, 4, generator=generator) for _ in range(self.spec.inputs))


def build(model: S.ModelSpec) -> GeneratedModel:
    """Render ``model`` (torch dialect), import it, and compute its expectation.

    Raises :class:`fuzz.oracle.SpecError` when the spec is inconsistent: the oracle refuses it,
    or (in code that never runs, which the oracle does not visit) it names something that
    does not exist, so it cannot be rendered or imported.
    """
    expected = expect(model, TORCH)
    try:
        source = render(model, TORCH)
        namespace, path = load_source(source)
    except (LookupError, NameError, SyntaxError, TypeError, ValueError) as error:
        raise SpecError(f"the spec does not render to a module: {type(error).__name__}: {error}") from error
    return GeneratedModel(model, source, path, expected, namespace)
