"""The types every codec module shares (one definition each)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

__all__ = [
    "NO_OPTIONS",
    "Buffer",
    "DecodedInferRequest",
    "DecodedInput",
    "DecodedOutput",
    "InferOptions",
    "ParamValue",
    "SharedMemoryRef",
    "infer_options",
]

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


#: The fields of :data:`NO_OPTIONS`, in order.
_NO_OPTION_VALUES = ("", 0, False, False, 0, None, None, False)


def infer_options(*fields: Any) -> InferOptions:
    """``InferOptions(*fields)``, or :data:`NO_OPTIONS` itself when none is set (the usual
    call: no object to make, and the encoders' fast path is an identity test).

    Parameters
    ----------
    *fields
        :class:`InferOptions`' fields in order, as NVIDIA's ``infer`` takes them
        (``request_id, sequence_id, sequence_start, sequence_end, priority, timeout,
        parameters`` and, for streams, ``enable_empty_final_response``).

    Returns
    -------
    InferOptions
    """
    if fields == _NO_OPTION_VALUES[: len(fields)] and type(fields[1]) is int:
        return NO_OPTIONS  # (a sequence id of "" is kept as given: type int, not str)
    return InferOptions(*fields)


@dataclass
class DecodedInput:
    """An input tensor decoded from a request (either protocol).

    Attributes
    ----------
    name, datatype : str
        As sent.
    shape : tuple of int
        As sent.
    data : numpy.ndarray
        The values, shaped as ``shape`` when the data hold exactly that many elements; left
        flat otherwise (the server's validation then reports the mismatch with Triton's
        message), and an empty placeholder for an unknown datatype or negative dimensions.
        Fixed-size data are read-only views of the received buffer (or shared memory).
    parameters : dict
        Tensor parameters other than the shared-memory ones.
    shared_memory : SharedMemoryRef or None
        Where the data were read from, for a shared-memory input.
    """

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: npt.NDArray[Any]
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    shared_memory: SharedMemoryRef | None = None


@dataclass
class DecodedOutput:
    """A requested output decoded from a request (either protocol).

    Attributes
    ----------
    name : str
        Output name.
    parameters : dict
        Tensor parameters other than the shared-memory ones (``classification`` included).
    shared_memory : SharedMemoryRef or None
        Where to write the output instead of the response.
    """

    name: str
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    shared_memory: SharedMemoryRef | None = None


@dataclass
class DecodedInferRequest:
    """An inference request as a server's decoder hands it on, whatever the protocol.

    The gRPC decoder (:func:`~tritonclient._codec.grpc_server.decode_infer_request`) and the
    HTTP one (:func:`~tritonclient._codec.http_server.decode_infer_request`) both produce
    this, so a server builds its own request from it in one place.

    Attributes
    ----------
    model_name : str
        Target model.
    model_version : int
        Target version; -1 for the server's choice.
    model_version_str : str
        The version string as sent (gRPC stream error responses echo it).
    id : str
        Request id.
    inputs : list of DecodedInput
        The inputs.
    outputs : list of DecodedOutput
        The requested outputs (empty: all).
    parameters : dict
        Custom request parameters (reserved ones parsed into the fields below).
    correlation_id : int or str
        ``sequence_id`` (an int64 is read as uint64); 0 or "" when absent.
    sequence_start, sequence_end : bool
        Sequence flags.
    priority : int
        Priority level.
    timeout_us : int
        Queue timeout in microseconds (0: none).
    enable_empty_final_response : bool
        The ``triton_enable_empty_final_response`` request parameter (gRPC streams).
    """

    model_name: str
    model_version: int = -1
    model_version_str: str = ""
    id: str = ""
    inputs: list[DecodedInput] = field(default_factory=list)
    outputs: list[DecodedOutput] = field(default_factory=list)
    parameters: dict[str, ParamValue] = field(default_factory=dict)
    correlation_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    timeout_us: int = 0
    enable_empty_final_response: bool = False

    def output_placements(self) -> dict[str, SharedMemoryRef]:
        """The requested outputs placed in shared memory, by name."""
        return {o.name: o.shared_memory for o in self.outputs if o.shared_memory is not None}
