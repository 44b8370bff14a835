"""Walking a model's modules, parameters and buffers by identity.

torch's ``named_modules()`` (and with it ``named_parameters()``, ``named_buffers()``,
``modules()``, ``parameters()``) keeps the modules it met in a ``set``, so it raises
``TypeError`` on a module that is unhashable (an ``nn.Module`` that also subclasses
``OrderedDict``). These walks give the same names in the same order, each object once at its
first address, keyed by ``id``.

A capture reads the model twice, as the forward pass starts and as it ends, each time in one
:func:`walk` that collects what every part of the capture needs (the first one its module
records too).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Optional, Sequence

import torch
from torch import nn

from .buffers import storage_keys
from .record import RawModule

#: What every module's ``__dict__`` holds for torch's own bookkeeping (flags, hook tables and
#: the registries of parameters, buffers and children, read through their own tables): never
#: the model's plain tensor state, so the scan skips it.
_BOOKKEEPING_ORDER = tuple(vars(nn.Module()))
_BOOKKEEPING = frozenset(_BOOKKEEPING_ORDER)


@dataclass(slots=True)
class Walk:
    """A model's modules, parameters, buffers and tensor attributes, read in one walk."""

    #: ``named_modules()``: the model first (address ``""``), then its children, depth first.
    modules: list[tuple[str, nn.Module]]
    #: ``id(module)`` -> its position in :attr:`modules` (a capture takes it over as its module table).
    index: dict[int, int]
    #: ``named_parameters()``: each parameter once, at its first address.
    params: list[tuple[str, torch.Tensor]]
    #: ``id(parameter)`` -> its address in :attr:`params`.
    param_names: dict[int, str]
    #: ``named_buffers()`` with each buffer's owning module and attribute name.
    buffers: list[tuple[str, nn.Module, str, torch.Tensor]]
    #: Storages of the parameters and of the tensors in module attributes (one level into
    #: lists, tuples and dicts): model state a forward pass reads as plain tensors.
    readable: set[int]
    #: Storages of the registered buffers.
    buffer_storages: set[int]


def walk(model: nn.Module, records: Optional[list[RawModule]] = None) -> Walk:
    """Read ``model``'s modules, parameters, buffers and tensor attributes as they are now;
    with ``records``, append to it each module's :class:`RawModule` (in ``modules``' order).

    A record's members are the addresses the walk reads anyway: a module's parameters (buffers)
    met for the first time in the walk are its own, each once; a module that shares one with
    an earlier module has its names read again (:func:`_names`), as has every module's children
    when a module was met twice."""
    modules: list[tuple[str, nn.Module]] = []
    params: list[tuple[str, torch.Tensor]] = []
    buffers: list[tuple[str, nn.Module, str, torch.Tensor]] = []
    seen_modules: dict[int, int] = {}
    param_names: dict[int, str] = {}
    seen_buffers: set[int] = set()
    readable: list[torch.Tensor] = []
    buffer_tensors: list[torch.Tensor] = []
    bookkeeping, plain, order, first = _BOOKKEEPING, _PLAIN_VALUES, _BOOKKEEPING_ORDER, len(_BOOKKEEPING_ORDER)
    met_twice = False
    # The modules still to visit, the next one last: (address, module, its parent's record address).
    todo: list[tuple[str, nn.Module, Optional[str]]] = [("", model, None)]
    while todo:
        name, module, parent = todo.pop()
        key = id(module)  # (each object's id read once: every ``id`` call makes a new int)
        if key in seen_modules:  # met earlier in the walk: it keeps its first address
            met_twice = True
            continue
        seen_modules[key] = len(modules)
        modules.append((name, module))
        prefix = name + "." if name else ""
        # The registries are read from the module's ``__dict__`` (where ``nn.Module`` keeps them),
        # not as attributes, which would look through the class's MRO first.
        attributes = vars(module)
        # With records: this module's parameters (buffers) met first here (``()``: none), None if
        # one was not.
        own_params: Optional[Sequence[str]] = () if records is not None else None
        registry = attributes["_parameters"]
        if registry:
            mine: Optional[list[str]] = [] if records is not None else None
            for param_name, tensor in registry.items():
                if tensor is not None:
                    readable.append(tensor)
                    key = id(tensor)
                    if key in param_names:
                        mine = None  # shared with an earlier module (or twice in this one)
                    else:
                        member = param_names[key] = prefix + param_name
                        params.append((member, tensor))
                        if mine is not None:
                            mine.append(member)
            own_params = mine
        own_buffers: Optional[Sequence[str]] = () if records is not None else None
        registry = attributes["_buffers"]
        if registry:
            mine = [] if records is not None else None
            for buffer_name, buffer in registry.items():
                if buffer is not None:
                    buffer_tensors.append(buffer)
                    key = id(buffer)
                    if key in seen_buffers:
                        mine = None
                    else:
                        seen_buffers.add(key)
                        member = prefix + buffer_name
                        buffers.append((member, module, buffer_name, buffer))
                        if mine is not None:
                            mine.append(member)
            own_buffers = mine
        # ``nn.Module.__init__`` writes its bookkeeping first, in its own order: then the model's
        # attributes are the names after it (a slice, where a set difference costs about 1 us).
        names = tuple(attributes)
        for attribute in names[first:] if names[:first] == order else attributes.keys() - bookkeeping:
            value = attributes[attribute]
            kind = type(value)
            # (a tuple of settings, as a convolution's ``kernel_size``: told apart in one C loop)
            if kind not in plain and not (kind is tuple and plain.issuperset(map(type, value))):
                _tensors_in(value, readable)
        address = name or "self"
        children = attributes["_modules"]
        entries = [(prefix + child_name, child, address) for child_name, child in children.items()
                   if child is not None] if children else ()
        if entries:
            todo.extend(reversed(entries))
        if records is not None:
            records.append(RawModule(
                address, type(module).__name__,
                tuple(own_params) if own_params is not None else _names(prefix, attributes["_parameters"]),
                parent, tuple(map(_ADDRESS, entries)) if entries else (),
                tuple(own_buffers) if own_buffers is not None else _names(prefix, attributes["_buffers"])))
    if met_twice and records is not None:  # a module twice in one registry lists it once
        for record, (name, module) in zip(records[len(records) - len(modules):], modules):
            record.children = _names(name + "." if name else "", vars(module)["_modules"])
    return Walk(modules, seen_modules, params, param_names, buffers, set(storage_keys(readable)),
                set(storage_keys(buffer_tensors)) if buffer_tensors else set())


def module_record(module: nn.Module, address: str, prefix: str, parent: Optional[str],
                  attributes: dict[str, Any]) -> RawModule:
    """The :class:`RawModule` of ``module`` at ``address`` (``self``: the model itself), its
    members' addresses starting with ``prefix``, from its ``__dict__`` ``attributes``."""
    params, children, buffers = attributes["_parameters"], attributes["_modules"], attributes["_buffers"]
    return RawModule(address, type(module).__name__, _names(prefix, params) if params else (), parent,
                     _names(prefix, children) if children else (), _names(prefix, buffers) if buffers else ())


def _names(prefix: str, members: dict[str, Any]) -> tuple[str, ...]:
    """Addresses of a module's own parameters, children or buffers: each object once, no ``None``
    (what ``named_parameters(recurse=False)`` and its kin give)."""
    ids = set(map(id, members.values()))
    if len(ids) == len(members) and _NONE_ID not in ids:  # the common case: every name
        return tuple(map(prefix.__add__, members))
    seen: set[int] = set()
    names = []
    for name, value in members.items():
        if value is not None and id(value) not in seen:
            seen.add(id(value))
            names.append(prefix + name)
    return tuple(names)


_NONE_ID = id(None)
#: The address of a walk entry ``(address, module, parent's address)``.
_ADDRESS = itemgetter(0)

#: Types of the attribute values that are never tensors and that the walk does not look into
#: (most module settings; ``transformers``' sets of key names).
_PLAIN_VALUES = frozenset({int, float, bool, str, type(None), set, frozenset})


def _tensors_in(value: Any, found: list[torch.Tensor]) -> None:
    """Add to ``found`` the tensors ``value`` is or holds one level down, asked of each value's
    type (not through ``isinstance``, which reads a value's own ``__class__`` when its type does
    not match: ``transformers``' configs run two Python ``__getattribute__`` for each such read,
    about 4 us a config per walk)."""
    kind = type(value)
    if issubclass(kind, _Tensor):
        found.append(value)
        return
    if issubclass(kind, (list, tuple)):
        items = value
    elif issubclass(kind, dict):
        items = value.values()
    else:
        return
    found.extend([v for v in items if issubclass(type(v), _Tensor)])


_Tensor = torch.Tensor
