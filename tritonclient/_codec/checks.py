"""What both protocols' clients check in a response before handing it out.

:func:`decode_raw_output` (the raw bytes of an output fit its datatype and shape),
:func:`response_shape`, :func:`known_datatype`, :class:`Requested` (the outputs the request
asked for, and which of them go to shared memory), :class:`DecodedOutputs` and the messages of
a broken answer (:func:`response_fault`).  Every problem is an
:class:`~tritonclient.utils.InferenceServerProtocolError` (a client-side error: no status) that
names the output, what was expected and what came.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient.utils import InferenceServerException, deserialize_bytes_tensor
from tritonclient.utils._dtypes import DATATYPES
from tritonclient.utils._errors import InferenceServerProtocolError

from .raw import wire_dtype
from .types import Buffer

__all__ = [
    "FIXED_DATATYPES",
    "DecodedOutputs",
    "Requested",
    "decode_raw_output",
    "known_datatype",
    "response_fault",
    "response_shape",
]


def response_fault(message: str, hint: str | None = None) -> InferenceServerProtocolError:
    """The exception for a response that cannot be handed out as it is.

    Parameters
    ----------
    message : str
        What was wrong: which output, what was expected, what came.
    hint : str, optional
        How to avoid it, when the client can (kept in the exception's ``hint``).

    Returns
    -------
    InferenceServerProtocolError
        Without a status: the client found the fault, not the server.
    """
    error = InferenceServerProtocolError(f"invalid inference response: {message}")
    error.with_hint(hint)
    return error


def _datatypes() -> str:
    return ", ".join(DATATYPES)


def known_datatype(name: str, datatype: Any) -> Any:
    """The table entry of an output's datatype.

    Raises
    ------
    InferenceServerProtocolError
        For a datatype that is not one of the protocol's.
    """
    info = DATATYPES.get(datatype) if isinstance(datatype, str) else None
    if info is None:
        raise response_fault(
            f"output '{name}' has datatype {datatype!r}, which is not a protocol datatype "
            f"(expected one of {_datatypes()})"
        )
    return info


def response_shape(name: str, shape: Any) -> tuple[int, ...]:
    """An output's shape, checked to be a list of non-negative integers.

    Parameters
    ----------
    name : str
        The output, for the message.
    shape : sequence
        The shape as the response gives it (a JSON list, a protobuf repeated field).

    Returns
    -------
    tuple of int

    Raises
    ------
    InferenceServerProtocolError
        For anything else (a response has no variable, -1, dimensions).
    """
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    for dim in dims if dims is not None else (None,):
        if type(dim) is not int or dim < 0:
            raise response_fault(
                f"output '{name}' has shape {shape!r}; expected a list of non-negative integers"
            )
    assert dims is not None
    return dims


#: Each fixed-size datatype's wire dtype and element size, for the decoding of every output.
FIXED_DATATYPES: dict[str, tuple[np.dtype[Any], int]] = {
    name: (wire_dtype(name), info.byte_size)
    for name, info in DATATYPES.items()
    if info.byte_size is not None
}


def decode_raw_output(
    name: str,
    datatype: Any,
    shape: Any,
    buffer: Buffer,
    offset: int = 0,
    size: int | None = None,
) -> npt.NDArray[Any]:
    """Read an output from its raw bytes, checking that they are exactly what its datatype and
    shape need.

    Parameters
    ----------
    name : str
        The output, for messages.
    datatype : str
        Its protocol datatype.
    shape : sequence of int
        Its shape.
    buffer : bytes-like
        The raw bytes (HTTP binary data, a gRPC ``raw_output_contents`` entry), or a larger
        buffer holding them at ``offset``.
    offset : int, optional
        Where the output's bytes start in ``buffer`` (default 0).
    size : int, optional
        How many bytes they are (default: the rest of ``buffer``).

    Returns
    -------
    numpy.ndarray
        Fixed-size datatypes: a view of ``buffer`` (no copy; read-only when ``buffer`` is);
        BYTES: an object array of ``bytes``.

    Raises
    ------
    InferenceServerProtocolError
        For an unknown datatype, a bad shape, missing or trailing bytes, or a BYTES buffer
        that is not ``shape``'s number of well-formed elements.
    """
    fixed = FIXED_DATATYPES.get(datatype) if type(datatype) is str else None
    if fixed is None and datatype != "BYTES":
        known_datatype(name, datatype)  # raises
    try:
        dims = tuple(shape)
    except TypeError:
        dims = (None,)
    for dim in dims:  # inline: this runs for every output of every response
        if type(dim) is not int or dim < 0:
            response_shape(name, shape)  # raises with the message
    count = math.prod(dims)
    total = len(buffer) if type(buffer) is bytes else memoryview(buffer).nbytes
    if size is None:
        size = total - offset
    if fixed is not None:
        dtype, item = fixed
        if size != count * item:
            raise response_fault(
                f"output '{name}' ({datatype}, shape {list(dims)}) needs {count * item} bytes "
                f"of data, the response has {size}"
            )
        # One ndarray over the buffer at the offset: no slice, no reshape.
        array: npt.NDArray[Any] = np.ndarray(dims, dtype, buffer, offset)
        return array
    view = buffer
    if offset or size != total:
        view = memoryview(buffer).cast("B")[offset : offset + size]
    try:
        items = deserialize_bytes_tensor(view) if size else np.empty(0, np.object_)
    except InferenceServerException as exc:
        raise response_fault(
            f"output '{name}' (BYTES, shape {list(dims)}) is not a valid BYTES buffer of "
            f"{size} bytes: {exc.message()}"
        ) from None
    if len(items) != count:
        raise response_fault(
            f"output '{name}' (BYTES, shape {list(dims)}) needs {count} elements, the "
            f"response has {len(items)}"
        )
    return items.reshape(dims)


class Requested:
    """The outputs a request asked for, to check its response against.

    Parameters
    ----------
    outputs : mapping of str to bool, or None
        Each requested output and whether it goes to shared memory; None when the request
        named no outputs (the server returns all of them, none in shared memory).
    """

    __slots__ = ("outputs",)

    def __init__(self, outputs: Mapping[str, bool] | None) -> None:
        self.outputs = outputs

    def in_shared_memory(self, name: str) -> bool:
        """Whether output ``name`` was requested in shared memory (then it comes without
        data)."""
        outputs = self.outputs
        return outputs is not None and outputs.get(name, False)

    def check_present(self, present: Collection[str]) -> None:
        """Check that every requested output is in ``present`` (the response's outputs).

        Raises
        ------
        InferenceServerProtocolError
            Naming the requested outputs that are missing and those that came.
        """
        outputs = self.outputs
        if not outputs:
            return
        missing = [name for name in outputs if name not in present]
        if missing:
            raise response_fault(
                f"the response has no output {_names(missing)}, which the request asked for "
                f"(the response's outputs: {sorted(present)})"
            )

    def no_data(self, name: str, datatype: Any, shape: Sequence[int]) -> None:
        """An output came without data: right for one requested in shared memory.

        Raises
        ------
        InferenceServerProtocolError
            When ``name`` was not requested in shared memory and has elements.
        """
        if math.prod(shape) and not self.in_shared_memory(name):
            raise response_fault(
                f"output '{name}' ({datatype}, shape {list(shape)}) came without data, and it "
                "was not requested in shared memory"
            )


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


class DecodedOutputs:
    """The outputs of a checked response, decoded once, as ``as_numpy`` hands them out.

    Parameters
    ----------
    arrays : dict
        Output name to its array, or to None for an output without data (written to shared
        memory).
    """

    __slots__ = ("_arrays", "_handed")

    def __init__(self, arrays: dict[str, npt.NDArray[Any] | None]) -> None:
        self._arrays = arrays
        self._handed: set[str] = set()

    def __contains__(self, name: str) -> bool:
        return name in self._arrays

    def peek(self, name: str) -> npt.NDArray[Any] | None:
        """Output ``name`` as decoded, or None, without handing it out (see :meth:`get`)."""
        return self._arrays.get(name)

    def get(self, name: str) -> npt.NDArray[Any] | None:
        """Output ``name``, or None (no such output, or no data).

        A read-only array (a view of the received bytes) is returned as it is; a writable one
        (JSON data, BYTES, typed contents) the first time, and a copy of it at every later
        call, so that no caller sees another's changes (as when each call decoded anew).
        """
        array = self._arrays.get(name)
        if array is not None and array.flags.writeable:
            if name in self._handed:
                copy: npt.NDArray[Any] = array.copy()
                return copy
            self._handed.add(name)
        return array
