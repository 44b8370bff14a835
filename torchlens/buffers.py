"""The :class:`Buffer` entity: a registered buffer's state across one forward pass.

A projection over the buffer-version ops of a trace (spec: buffers.txt): the graph keeps
one op per observed version; the entity keeps the address-level view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import TorchLensValueError
from .records import Op


@dataclass(frozen=True, slots=True, eq=False)
class Buffer:
    """One registered buffer: its starting value, its versions, its final value."""

    #: Address as in ``named_buffers()`` (``bn.running_mean``).
    address: str
    #: Address of the module that owns it.
    module: str
    #: The value before the forward pass.
    initial_value: Any = field(repr=False)
    #: The value at the end of the capture.
    final_value: Any = field(repr=False)
    #: Every observed version, in order: the starting value first (when the forward pass
    #: read or wrote the buffer), then one per write.
    versions: tuple[Op, ...] = field(repr=False)

    @property
    def num_overwrites(self) -> int:
        """How many writes the forward pass made to this buffer."""
        return sum(1 for op in self.versions if op.buffer_write_kind is not None)

    def value_at(self, n: int) -> Any:
        """The value of observed version ``n`` (1-based; version 1 is the starting value)."""
        if not 1 <= n <= len(self.versions):
            raise TorchLensValueError(
                f"buffer `{self.address}` has versions 1..{len(self.versions)}, not {n}"
            )
        return self.versions[n - 1].out

    def value_after(self, n: int) -> Any:
        """The value right after the ``n``-th write (1-based)."""
        writes = [op for op in self.versions if op.buffer_write_kind is not None]
        if not 1 <= n <= len(writes):
            raise TorchLensValueError(
                f"buffer `{self.address}` was written {len(writes)} times; there is no write {n}"
            )
        return writes[n - 1].out
