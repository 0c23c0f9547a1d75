"""The types every codec module shares (one definition each)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NO_OPTIONS", "Buffer", "InferOptions", "ParamValue", "SharedMemoryRef"]

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


@dataclass(frozen=True)
class InferOptions:
    """The request-level options of an inference call, under NVIDIA's parameter names.

    The clients take them as the arguments of ``infer``, ``async_infer`` and the stream calls
    (NVIDIA's signatures) and hand them to the codec as one object; each protocol's encoder
    writes them (HTTP: the request's JSON ``parameters``; gRPC: ``ModelInferRequest``
    parameters).

    Attributes
    ----------
    request_id : str
        The request's id ("" for none).
    sequence_id : int or str
        Correlation id of a sequence (0 or "": not in a sequence).
    sequence_start, sequence_end : bool
        The sequence flags (sent only with a sequence id).
    priority : int
        Priority level (0: the model's default).
    timeout : int or None
        Queue timeout in microseconds.
    parameters : mapping or None
        Custom request parameters (reserved names are refused by the encoders).
    enable_empty_final_response : bool
        gRPC streams: ask a decoupled model for an empty final response.
    """

    request_id: str = ""
    sequence_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout: int | None = None
    parameters: Mapping[str, Any] | None = None
    enable_empty_final_response: bool = False

    @property
    def in_sequence(self) -> bool:
        """Whether the request belongs to a sequence (a non-zero, non-empty id)."""
        return self.sequence_id != 0 and self.sequence_id != ""

    @property
    def plain(self) -> bool:
        """No option beyond the request id is set (the encoders' fast path)."""
        return (
            not self.in_sequence
            and not self.priority
            and self.timeout is None
            and not self.parameters
            and not self.enable_empty_final_response
        )


#: An inference call with no options.
NO_OPTIONS = InferOptions()
