"""Call-site chains from the Python tracebacks JAX keeps on every jaxpr equation.

``eqn.source_info.traceback.raw_frames()`` gives the ``(code, lasti)`` pairs of the Python stack
that bound the equation, innermost first, ending at the function ``jax.make_jaxpr`` traced.
Those are the inputs of the project's call-site key (:func:`torchlens.analysis.sites.instruction_place`,
:func:`~torchlens.analysis.sites.collapse`), so a JAX op is keyed by the same rule as a torch op.

Which frames count:

* JAX's binding and tracing machinery (``core``, ``pjit``, ``partial_eval``, ...: :data:`PLUMBING`)
  and this package's own code are left out; JAX's library code (``jax.numpy``, ``jax.lax``,
  ``jax.nn``) stays in, as torch's ``torch.nn.functional`` does, so two primitives one library
  call binds from two lines are two places.
* A chain ends at the innermost module-call boundary (:data:`modules.WRAPPER_CODE`) or at the
  capture's entry: it runs from that module's ``__call__`` (or the traced function) down.
* The body of a jitted or custom-derivative function is traced once and its jaxpr reused: the
  tracebacks of its equations are those of its first trace. Such an equation's chain is the
  chain of the call that ran it followed by the body frames of its own traceback (the frames
  after the tracing machinery that entered the body), so each call of the function keys its
  body anew.
"""

from __future__ import annotations

import importlib
import os
from types import CodeType
from typing import Any, Optional, Sequence

from torchlens.analysis.sites import Place, collapse, instruction_place

#: JAX and Flax modules (files, or packages: every file below) that bind, trace and dispatch
#: primitives: their frames are plumbing, never part of a call site.
PLUMBING_MODULES = (
    "jax._src.core", "jax._src.source_info_util", "jax._src.interpreters", "jax._src.pjit",
    "jax._src.traceback_util", "jax._src.api", "jax._src.api_util", "jax._src.linear_util",
    "jax._src.dispatch", "jax._src.custom_derivatives", "jax._src.profiler", "jax._src.util",
    "jax._src.config", "jax._src.named_sharding", "jax._src.sharding_impls", "jax._src.mesh",
    "jax._src.ad_checkpoint", "jax._src.tree_util",
    "flax.nnx.graph", "flax.nnx.pytreelib", "flax.nnx.module", "flax.nnx.transforms", "flax.nnx.bridge",
    "flax.nnx.variablelib",
)


def _roots(names: Sequence[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """Package directories (``dir/``) and single files of the named modules that exist."""
    dirs, files = [], set()
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        path = getattr(module, "__file__", None)
        if path is None:
            continue
        if os.path.basename(path) == "__init__.py":
            dirs.append(os.path.join(os.path.dirname(path), ""))
        else:
            files.add(path)
    return tuple(dirs), frozenset(files)


_DIRS, _FILES = _roots(PLUMBING_MODULES)
#: Roles by ``id(code)`` (see :class:`ChainReader`).
SKIP, STOP = 1, 2


class ChainReader:
    """Turns raw tracebacks into chain ids; equal chains get equal small integers.

    ``stops`` are codes that end a chain (module-call wrappers, the capture's entry);
    ``own`` are codes left out of it (this package's).
    """

    def __init__(self, stops: Sequence[CodeType], own: Sequence[CodeType]) -> None:
        self.roles: dict[int, int] = {id(c): SKIP for c in own}
        self.roles.update({id(c): STOP for c in stops})
        self._file_plumbing: dict[str, bool] = {}
        self._ids: dict[tuple[Place, ...], int] = {}
        #: Chain id -> places, outermost first (``RawCapture.chains``).
        self.chains: list[tuple[Place, ...]] = []
        #: Code objects met, kept alive so no ``id`` in :attr:`roles` is reused.
        self._codes: list[CodeType] = []

    def frames(self, traceback: Any, body: bool) -> tuple[list[tuple[CodeType, int]], bool]:
        """The chain frames of one traceback (outermost first) and whether a boundary ended them.

        With ``body`` the frames stop at the tracing machinery that entered a reused body.
        """
        if traceback is None:
            return [], False
        codes, lastis = traceback.raw_frames()
        kept: list[tuple[CodeType, int]] = []
        stopped = False
        for code, lasti in zip(codes, lastis):
            role = self.roles.get(id(code))
            if role == STOP:
                stopped = True
                break
            if role == SKIP:
                continue
            if self._plumbing(code.co_filename):
                if body and kept:
                    break
                continue
            kept.append((code, lasti))
        kept.reverse()
        return kept, stopped

    def chain(self, frames: Sequence[tuple[CodeType, int]]) -> Optional[int]:
        """The chain id of ``frames`` (outermost first), recursion collapsed; ``None`` when empty."""
        if not frames:
            return None
        codes = [code for code, _ in frames]
        self._codes.extend(codes)
        kept = collapse(codes) if len(set(map(id, codes))) < len(codes) else range(len(codes))
        places = tuple(instruction_place(frames[i][0], frames[i][1]) for i in kept)
        chain = self._ids.get(places)
        if chain is None:
            chain = self._ids[places] = len(self.chains)
            self.chains.append(places)
        return chain

    def _plumbing(self, filename: str) -> bool:
        known = self._file_plumbing.get(filename)
        if known is None:
            known = self._file_plumbing[filename] = filename in _FILES or filename.startswith(_DIRS)
        return known
