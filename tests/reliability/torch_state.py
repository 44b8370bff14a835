"""What a capture may touch, by identity: a snapshot that must be equal before and after."""

from __future__ import annotations

import sys
import threading

import torch
import torch._functorch.apis
import torch._functorch.eager_transforms
import torch.nn.functional
from torch import nn

from torchlens.capture import threads

#: Every namespace a capture patches (classes and modules), compared attribute by attribute.
NAMESPACES = (
    nn.Module, torch.Tensor, torch.nn.functional, torch.functional, torch._functorch.apis,
    torch._functorch.eager_transforms, threading,
)


def snapshot() -> dict:
    """Each namespace's attributes (by identity), torch's hook tables, the mode stack, the slot."""
    state: dict = {f"{getattr(ns, '__name__', ns)}.{k}": id(v) for ns in NAMESPACES for k, v in vars(ns).items()}
    modules = torch.nn.modules.module
    for table in ("_global_buffer_registration_hooks", "_global_forward_hooks", "_global_forward_pre_hooks"):
        state[table] = tuple(getattr(modules, table).items())
    state["nn.Module._call_impl code"] = id(nn.Module._call_impl.__code__)
    state["mode stack depth"] = torch._C._len_torch_function_stack()
    state["grad mode"] = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    state["default dtype"] = torch.get_default_dtype()
    state["autocast"] = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
    state["capture slot"] = threads.running()
    state["trace function"] = sys.gettrace()
    return state


def differences(before: dict, after: dict) -> list[str]:
    """The keys whose values differ, for a readable assertion."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k, "<missing>") != after.get(k, "<missing>"))
