"""Targets: ``FILE:CLASS`` and ``MODULE:CLASS`` resolved to a class as ``python -m`` would; a
``.py`` file imported the same way (:func:`import_file`; the prediction's ``predict_source``).

* ``pkg/models/net.py:Net``: a file inside packages (folders with ``__init__.py``) is imported as
  ``pkg.models.net`` with the folder above the outermost package first on ``sys.path``, so its
  package-relative imports work; a file outside any package is imported by its name with its
  folder first on ``sys.path`` (as ``python net.py`` does).
* ``pkg.models.net:Net``: imported with the working directory first on ``sys.path`` (as
  ``python -m`` does, also when run through the ``torchlens`` console script).

Whatever the import raises (a missing module, an exception in the user's module code) becomes a
:class:`TorchLensValueError` naming the target, the error and the line that raised it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Callable

from .errors import TorchLensValueError

__all__ = ["load_class", "import_file"]


def load_class(target: str) -> type:
    """The class ``target`` names (``models/rnn.py:Seq2Seq`` or ``pkg.models:Seq2Seq``)."""
    if not isinstance(target, str):
        raise TorchLensValueError(f"a target is a string such as models/rnn.py:Seq2Seq, got {target!r}")
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise TorchLensValueError(f"{target!r}: name a file or module and a class, as models/rnn.py:Seq2Seq "
                                  "or pkg.models:Seq2Seq")
    module = import_file(Path(where)) if where.endswith(".py") or Path(where).is_file() else _import_module(where)
    value: object = module
    for part in name.split("."):
        value = getattr(value, part, None)
    if not isinstance(value, type):
        raise TorchLensValueError(f"{where} defines no class {name!r}")
    return value


def _import_module(name: str) -> ModuleType:
    _put_first_on_path(Path.cwd())
    return _guarded(name, name, lambda: importlib.import_module(name))


def import_file(path: Path) -> ModuleType:
    """The module of the ``.py`` file ``path``, imported as the module docstring says."""
    if not path.is_file():
        raise TorchLensValueError(f"no file {str(path)!r}: pass the path of a .py file")
    file = path.resolve()
    parts = [] if file.stem == "__init__" else [file.stem]
    root = file.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    _put_first_on_path(root)
    if len(parts) > 1 or file.stem == "__init__":
        name = ".".join(parts)
        top = sys.modules.get(parts[0])
        if top is not None and not _inside(top, root):
            raise TorchLensValueError(f"cannot import {path} as {name}: a package named {parts[0]!r} is already "
                                      f"imported from {getattr(top, '__file__', None) or top!r}")
        return _guarded(str(path), name, lambda: importlib.import_module(name))
    name = parts[0]
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == file:
        return loaded
    if loaded is not None:  # a module of that name (``json``, ``test``) is imported: keep it, load this one aside
        name = f"_torchlens_target_{name}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise TorchLensValueError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module

    def run() -> ModuleType:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    try:
        return _guarded(str(path), name, run)
    except TorchLensValueError:
        del sys.modules[name]
        raise


def _guarded(shown: str, name: str, load: Callable[[], ModuleType]) -> ModuleType:
    """``load()``, with whatever the user's module raises turned into an error that says where."""
    try:
        return load()
    except (Exception, SystemExit) as error:  # the user's module code may raise anything
        frames = traceback.extract_tb(error.__traceback__)
        user = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith("<frozen")]
        at = f" (at {user[-1].filename}:{user[-1].lineno})" if user and user[-1].filename != __file__ else ""
        hint = ""
        if isinstance(error, ImportError) and "no known parent package" in str(error):
            hint = "; put an __init__.py in its folder so it is part of a package"
        what = f"module {name}" if shown == name else f"{shown} (as module {name})"
        raise TorchLensValueError(f"cannot import {what}: {type(error).__name__}: {error}{at}{hint}") from None


def _put_first_on_path(folder: Path) -> None:
    entry = str(folder)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()


def _inside(module: ModuleType, root: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is not None and root in Path(file).resolve().parents
