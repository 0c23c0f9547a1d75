"""The raw (binary) tensor layout shared by both protocols (section 2.2), server side.

Pure functions over buffers; the HTTP and gRPC codecs wrap their results in their own error
types.
"""

from __future__ import annotations

import struct

__all__ = ["BytesFault", "bytes_fault"]

Buffer = bytes | bytearray | memoryview


class BytesFault:
    """Where a BYTES buffer that does not parse goes wrong, in Triton's words.

    Attributes
    ----------
    message : str
        Triton 2.51's message.
    in_response : bool
        True when Triton reports it in the inference response (its Python backend finds a
        string running past the buffer) rather than when the request arrives (its core finds
        a length prefix cut short); the response's message has no request-id prefix.
    """

    def __init__(self, message: str, in_response: bool) -> None:
        self.message = message
        self.in_response = in_response


def bytes_fault(buffer: Buffer, name: str, model_name: str, prefix: str) -> BytesFault:
    """Scan a malformed BYTES buffer (4-byte little-endian length, then the bytes, repeated).

    Parameters
    ----------
    buffer : bytes-like
        The input's bytes.
    name, model_name : str
        The input and the model, for the message.
    prefix : str
        Triton's ``[request id: ...] `` prefix.

    Returns
    -------
    BytesFault
        The first fault.
    """
    view = memoryview(buffer).cast("B")
    offset = 0
    while offset < len(view):
        remaining = len(view) - offset
        if remaining < 4:
            return BytesFault(
                f"{prefix}incomplete string length indicator for inference input '{name}' "
                f"for model '{model_name}', expecting 4 bytes but only {remaining} bytes "
                "available. Please make sure the string length indicator is in one buffer.",
                in_response=False,
            )
        (length,) = struct.unpack_from("<I", view, offset)
        if length > remaining - 4:
            return BytesFault(
                f"incomplete string data for inference input '{name}', expecting string of "
                f"length {length} but only {remaining - 4} bytes available",
                in_response=True,
            )
        offset += 4 + length
    return BytesFault(f"{prefix}invalid string data for inference input '{name}'", False)
