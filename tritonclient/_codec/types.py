"""The types every codec module shares (one definition each)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Buffer", "ParamValue", "SharedMemoryRef"]

#: A contiguous byte buffer: a body, a piece of one, or a tensor's raw contents.
Buffer = bytes | bytearray | memoryview

#: A request, response or tensor parameter value.
ParamValue = bool | int | float | str


@dataclass(frozen=True)
class SharedMemoryRef:
    """Where a tensor lives in a registered shared-memory region.

    Attributes
    ----------
    region : str
        The registered region name.
    byte_size : int
        Bytes of the tensor in the region.
    offset : int
        Offset of the tensor inside the region.
    """

    region: str
    byte_size: int
    offset: int = 0

    def to_parameters(self) -> dict[str, Any]:
        """The tensor-level ``parameters`` entries for this placement (offset only when
        non-zero, as NVIDIA's client sends them)."""
        out: dict[str, Any] = {
            "shared_memory_region": self.region,
            "shared_memory_byte_size": self.byte_size,
        }
        if self.offset:
            out["shared_memory_offset"] = self.offset
        return out
