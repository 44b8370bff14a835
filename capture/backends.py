"""The backend boundary: what differs between a torch capture and a JAX capture.

A backend turns one call of a model into a :class:`~torchlens.capture.record.RawCapture`:
it intercepts the ops (torch: a ``TorchFunctionMode``; JAX: the jaxpr of the call, evaluated
equation by equation), names them (torch function names; JAX primitive names), marks the
scope boundaries (``nn.Module`` calls; Flax NNX module calls) and records what it can of
the containers that flow in and out. Everything after the raw capture (grouping, records,
labels, drawing, tables) is one code path for every backend.

Each backend declares what it can record (spec: containers.txt, "Backend Capability"):

============  ==========================  ===========================  ===================
backend       input_container_structure   output_container_structure   call-site evidence
============  ==========================  ===========================  ===================
torch         full_spec                   full_spec                    yes
jax           paths_only                  paths_only                   yes (tracebacks)
============  ==========================  ===========================  ===================

``paths_only``: the key paths of builtin pytrees are recorded (``op.container`` indexes them),
but a container view is never reconstructable (custom pytrees least of all). A JAX capture
groups by call site where its equations carry Python tracebacks (``callsite_v1``) and by the
structural grouper otherwise (``grouper_v1``).

This module imports neither torch nor jax: :func:`jax_claims` looks at ``jax`` only when the
user's process has imported it already (no JAX value can exist otherwise).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from .named import NamedEnum

__all__ = ["ContainerCapability", "Detector", "Capabilities", "TORCH", "JAX", "BACKENDS", "jax_claims"]


class ContainerCapability(NamedEnum):
    """How much of a container's structure a backend records (spec: containers.txt)."""

    #: Kinds, types, keys and constants: the value can be rebuilt (``Container.reconstruct``).
    FULL_SPEC = "full_spec"
    #: Key paths only: ``op.container`` can be indexed but never rebuilt.
    PATHS_ONLY = "paths_only"
    #: Nothing: no container view.
    NONE = "none"


class Detector(NamedEnum):
    """Which grouping ran: ``trace.options.grouping_policy["detector"]`` (spec: grouping.txt)."""

    #: The call-site rule: scope, call site, operation, output slot.
    CALLSITE = "callsite_v1"
    #: The structural grouper, for captures without Python call-site evidence: an op's position
    #: in its module call (scope, operation, non-tensor arguments, ordinal, output slot).
    GROUPER = "grouper_v1"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What one backend records."""

    #: The backend's name (``torch``, ``jax``).
    name: str
    #: How much of the model inputs' and module inputs' structure it records.
    input_container_structure: ContainerCapability
    #: How much of the model output's and module outputs' structure it records.
    output_container_structure: ContainerCapability
    #: Whether its ops carry the Python frames that called them (the call-site rule needs them).
    call_site_evidence: bool


TORCH = Capabilities("torch", ContainerCapability.FULL_SPEC, ContainerCapability.FULL_SPEC, True)
JAX = Capabilities("jax", ContainerCapability.PATHS_ONLY, ContainerCapability.PATHS_ONLY, True)
#: Every backend this package implements, by name.
BACKENDS = {backend.name: backend for backend in (TORCH, JAX)}


def jax_claims(model: Any, inputs: tuple, kwargs: dict) -> bool:
    """Whether ``model`` called on ``inputs`` is a JAX computation: a Flax NNX module, a
    ``ClosedJaxpr``, or a callable given a JAX array. Imports nothing when JAX is not loaded."""
    if "jax" not in sys.modules:
        return False
    from .jaxbackend.values import claims

    return claims(model, inputs, kwargs)
