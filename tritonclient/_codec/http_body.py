"""HTTP framing shared by both sides: header names, request and response bodies as chunks,
the binary tensor extension's header length, compression, and the endpoints' paths.

Bodies are passed around as :data:`~tritonclient._codec.types.Buffer` objects.  Request and
response bodies are built as a list of chunks (:class:`EncodedBody`) so that a transport can
write numpy arrays without joining them; received bodies are sliced with ``memoryview``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, quote_plus

from tritonclient.utils import (
    raise_error,
)

from .errors import HttpCodecError, http_bad, http_internal
from .numbers import atoi
from .types import Buffer

__all__ = [
    "HEADER_ACCEPT_ENCODING",
    "HEADER_CONTENT_ENCODING",
    "HEADER_INFERENCE_HEADER_CONTENT_LENGTH",
    "SUPPORTED_ENCODINGS",
    "EncodedBody",
    "compress",
    "cuda_shm_path",
    "decompress",
    "encode_query",
    "model_path",
    "negotiate_encoding",
    "parse_header_length",
    "system_shm_path",
]

HEADER_INFERENCE_HEADER_CONTENT_LENGTH = "Inference-Header-Content-Length"


HEADER_CONTENT_ENCODING = "Content-Encoding"


HEADER_ACCEPT_ENCODING = "Accept-Encoding"


#: Content codings this module compresses and decompresses.
SUPPORTED_ENCODINGS = ("gzip", "deflate")


@dataclass
class EncodedBody:
    """A request or response body as a list of chunks to write in order.

    Attributes
    ----------
    chunks : list of bytes-like
        The pieces (the JSON first; then binary tensor data, often ``memoryview`` objects of
        numpy arrays -- keep the arrays unchanged until the body is sent).
    json_size : int or None
        Byte length of the JSON part when binary data follows it (the value of
        ``Inference-Header-Content-Length``), None when the body is all JSON.
    content_encoding : str or None
        ``"gzip"`` or ``"deflate"`` after :meth:`compressed`, else None.
    size : int or None
        The total length, when the encoder counted it as it went (else :attr:`nbytes`
        counts it).
    """

    chunks: list[Buffer]
    json_size: int | None = None
    content_encoding: str | None = None
    #: The total length when the encoder counted it (None: counted on demand).
    size: int | None = None

    @property
    def nbytes(self) -> int:
        """Total length of the body (``Content-Length``)."""
        if self.size is not None:
            return self.size
        total = 0
        for chunk in self.chunks:
            total += len(chunk) if type(chunk) is bytes else memoryview(chunk).nbytes
        return total

    def tobytes(self) -> bytes:
        """The body as one ``bytes`` object (copies every chunk)."""
        return b"".join(self.chunks)

    def headers(self) -> dict[str, str]:
        """The headers that describe this body.

        Returns
        -------
        dict
            ``Content-Type`` (``application/octet-stream`` with binary data, else
            ``application/json``), ``Inference-Header-Content-Length`` when binary data
            follows the JSON, and ``Content-Encoding`` when compressed.
        """
        out = {
            "Content-Type": "application/json"
            if self.json_size is None
            else "application/octet-stream"
        }
        if self.json_size is not None:
            out[HEADER_INFERENCE_HEADER_CONTENT_LENGTH] = str(self.json_size)
        if self.content_encoding is not None:
            out[HEADER_CONTENT_ENCODING] = self.content_encoding
        return out

    def compressed(self, algorithm: str | None) -> EncodedBody:
        """This body compressed as one chunk (``json_size`` unchanged: it counts the JSON
        before compression, section 3.10).

        Parameters
        ----------
        algorithm : {"gzip", "deflate"} or None
            None returns the body unchanged.

        Returns
        -------
        EncodedBody
        """
        if algorithm is None:
            return self
        return EncodedBody([compress(self.chunks, algorithm)], self.json_size, algorithm)


def parse_header_length(value: str | None, body_size: int, *, stoi: bool = False) -> int:
    """Interpret the ``Inference-Header-Content-Length`` request header as Triton does.

    Parameters
    ----------
    value : str or None
        The header value (None when absent).
    body_size : int
        Length of the (decompressed) body.
    stoi : bool, optional
        Read the value as Triton 2.73 does (``std::stoi``, src/http_server.cc:2484-2504 of
        2.73.0): text without a leading number is refused ("Unable to parse
        Inference-Header-Content-Length, got: ..."), as is a number outside int32; otherwise
        as Triton 2.51 (``atoi``: such text reads as 0).

    Returns
    -------
    int
        The JSON length: the whole body when the header is absent; 0 means a raw binary
        request (also what an absent header gives for an empty body, and what a value that is
        not a number reads as, as with ``atoi``).

    Raises
    ------
    HttpCodecError
        400 ``inference header size should be in range (0, <body size>), got: <value>`` for a
        negative value or one larger than the body.
    """
    if value is None:
        return body_size
    size = _stoi(value) if stoi else atoi(value)
    if size < 0 or size > body_size:
        raise http_bad(f"inference header size should be in range (0, {body_size}), got: {value}")
    return size


_STOI = re.compile(r"\s*([+-]?\d+)")
_HEADER_LENGTH = "Inference-Header-Content-Length"


def _stoi(value: str) -> int:
    """``std::stoi``: the leading number (after white space), or the errors Triton words."""
    match = _STOI.match(value)
    if match is None:
        raise http_bad(f"Unable to parse {_HEADER_LENGTH}, got: {value}")
    number = int(match.group(1))
    if not -(2**31) <= number < 2**31:
        raise http_bad(
            f"Unable to parse {_HEADER_LENGTH}, value is out of range [ {-(2**31)}, "
            f"{2**31 - 1} ], got: {value}"
        )
    return number


def _window_bits(size: int) -> int:
    """The deflate window for ``size`` bytes: the smallest that holds them (at least 512 bytes,
    zlib's least, and at most zlib's default 32 KiB).

    A match cannot reach back past the data's start, so a larger window compresses no better;
    but zlib allocates and clears its window and hash table for each stream, which for a
    small response costs more than the compression itself (28 us against 7 us for the
    ``simple`` model's 343-byte response, gzip, measured with ``timeit``).
    """
    return min(max(size - 1, 1).bit_length(), 15) if size > 512 else 9


def compress(chunks: Buffer | Iterable[Buffer], algorithm: str) -> bytes:
    """Compress a body.

    Parameters
    ----------
    chunks : bytes-like or iterable of bytes-like
        The body, whole or in pieces (not joined first).
    algorithm : {"gzip", "deflate"}
        ``gzip`` (RFC 1952) or ``deflate`` (zlib container, RFC 1950, as ``zlib.compress``).

    Returns
    -------
    bytes

    Raises
    ------
    InferenceServerException
        For another algorithm.
    """
    if algorithm not in ("gzip", "deflate"):
        raise_error(
            f"unsupported compression algorithm '{algorithm}'; expected 'gzip' or 'deflate'"
        )
    pieces = [chunks] if isinstance(chunks, (bytes, bytearray, memoryview)) else list(chunks)
    window_bits = _window_bits(sum(memoryview(piece).nbytes for piece in pieces))
    compressor = zlib.compressobj(
        zlib.Z_DEFAULT_COMPRESSION,
        zlib.DEFLATED,
        window_bits + 16 if algorithm == "gzip" else window_bits,
        # A hash table of as many entries as the window has bytes (zlib's default, memLevel
        # 8, for the largest window).
        window_bits - 7,
    )
    out = [compressor.compress(piece) for piece in pieces]
    out.append(compressor.flush())
    return b"".join(out)


def decompress(
    body: Buffer, encoding: str | None, *, max_size: int | None = None, lenient: bool = False
) -> Buffer:
    """Decompress a body by its ``Content-Encoding``.

    Parameters
    ----------
    body : bytes-like
        The body as received.
    encoding : str or None
        The ``Content-Encoding`` value: None, ``""`` or ``identity`` (returned unchanged),
        ``gzip`` or ``deflate`` (either container is detected automatically, and raw
        deflate is accepted too).
    max_size : int, optional
        Refuse bodies that inflate to more than this many bytes.
    lenient : bool, optional
        Corrupt or truncated data gives what inflated before the fault instead of an error
        (Triton's server does that, so a corrupt body reaches it as an empty or short one).

    Returns
    -------
    bytes-like

    Raises
    ------
    HttpCodecError
        501 ``Unsupported compression type`` for another encoding; 500 when the data is
        corrupt (unless ``lenient``); 400 when it exceeds ``max_size``.
    """
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return body
    if name not in SUPPORTED_ENCODINGS:
        raise HttpCodecError("Unsupported compression type", 501)
    for wbits in (47, -15):
        inflater = zlib.decompressobj(wbits=wbits)
        try:
            if max_size is None:
                out = inflater.decompress(body) + inflater.flush()
            else:
                out = _inflate_bounded(inflater, body, max_size)
        except zlib.error as exc:
            if wbits == 47 and name == "deflate":
                continue
            if lenient:
                return _inflated_prefix(body, wbits, max_size)
            raise http_internal(f"failed to decompress the {name} body: {exc}") from None
        if not inflater.eof and not lenient:
            raise http_internal(f"failed to decompress the {name} body: truncated data")
        return out
    raise http_internal(f"failed to decompress the {name} body")  # pragma: no cover


def _too_large(max_size: int) -> str:
    """Triton's words for a body that inflates past the limit (src/data_compressor.h of
    2.73.0, ``DecompressData``)."""
    return (
        f"Decompressed data size exceeds the maximum allowed value of {max_size} bytes. Use "
        "--http-max-input-size to increase the limit."
    )


#: Bounded inflation works in pieces of this size (see _inflate_bounded).
_INFLATE_PIECE = 1 << 20


def _inflate_bounded(inflater: Any, body: Buffer, max_size: int) -> bytes:
    """Inflate ``body`` to at most ``max_size`` bytes, a piece at a time: a body that inflates
    past the limit (a decompression bomb) is refused as soon as it does, without its output
    ever being joined into one object (a copy made holding the GIL, which stalled every other
    request of the server for a tenth of a second per bomb)."""
    pieces: list[bytes] = []
    total = 0
    data: Buffer = body
    while True:
        piece = inflater.decompress(data, _INFLATE_PIECE)
        total += len(piece)
        if total > max_size:
            raise http_bad(_too_large(max_size))
        pieces.append(piece)
        data = inflater.unconsumed_tail
        if not data and (inflater.eof or len(piece) < _INFLATE_PIECE):
            break
    pieces.append(inflater.flush())
    if total + len(pieces[-1]) > max_size:
        raise http_bad(_too_large(max_size))
    return pieces[0] if len(pieces) == 2 and not pieces[1] else b"".join(pieces)


def _inflated_prefix(body: Buffer, wbits: int, max_size: int | None) -> bytes:
    """What inflates from ``body`` before the first corrupt byte (fed in small pieces)."""
    inflater = zlib.decompressobj(wbits=wbits)
    view = memoryview(body).cast("B")
    out: list[bytes] = []
    total = 0
    for start in range(0, len(view), 256):
        try:
            piece = inflater.decompress(view[start : start + 256])
        except zlib.error:
            break
        out.append(piece)
        total += len(piece)
        if max_size is not None and total > max_size:
            raise http_bad(_too_large(max_size))
    return b"".join(out)


def negotiate_encoding(accept_encoding: str | None) -> Literal["gzip", "deflate"] | None:
    """Pick the response encoding from an ``Accept-Encoding`` header (section 3.10).

    Parameters
    ----------
    accept_encoding : str or None
        The header, e.g. ``"gzip;q=0.5, deflate"``.

    Returns
    -------
    {"gzip", "deflate"} or None
        The acceptable coding with the highest weight among gzip, deflate and identity (ties
        keep the first listed); None for identity or when nothing applies.
    """
    if not accept_encoding:
        return None
    best: str | None = None
    best_q = 0.0
    for item in accept_encoding.split(","):
        parts = [p.strip() for p in item.split(";")]
        coding = parts[0].lower()
        if coding not in ("gzip", "deflate", "identity"):
            continue
        weight = 1.0
        for part in parts[1:]:
            if part.lower().startswith("q="):
                try:
                    weight = float(part[2:])
                except ValueError:
                    weight = 0.0
        if weight > best_q:
            best, best_q = coding, weight
    if best == "gzip":
        return "gzip"
    if best == "deflate":
        return "deflate"
    return None


def model_path(model_name: str, model_version: str = "", suffix: str = "") -> str:
    """The path of a model endpoint, with the name percent-encoded (as ``tritonclient``).

    Parameters
    ----------
    model_name : str
        The model.
    model_version : str, optional
        A version ("" for the server's choice).
    suffix : str, optional
        ``"infer"``, ``"ready"``, ``"config"``, ``"stats"``, ``"generate"``, ... ("" for
        metadata).

    Returns
    -------
    str
        E.g. ``/v2/models/simple/versions/1/infer``.
    """
    path = "/v2/models/" + quote(model_name)
    if model_version:
        path += "/versions/" + quote(str(model_version))
    if suffix:
        path += "/" + suffix
    return path


def encode_query(query_params: Mapping[str, Any] | None) -> str:
    """A query string from ``query_params`` as ``tritonclient`` builds it.

    Parameters
    ----------
    query_params : mapping or None
        ``{name: value}``; a list value repeats the name once per item.  Names and values are
        ``quote_plus``-encoded (values through ``str``).

    Returns
    -------
    str
        ``"a=1&b=x+y"``, or ``""`` for no parameters (the server ignores query strings).
    """
    pairs: list[str] = []
    for key, value in (query_params or {}).items():
        for item in value if isinstance(value, list) else [value]:
            pairs.append(f"{quote_plus(str(key))}={quote_plus(str(item))}")
    return "&".join(pairs)


def system_shm_path(action: str, region_name: str = "") -> str:
    """``/v2/systemsharedmemory[/region/<name>]/<action>`` (action: status, register,
    unregister)."""
    region = f"/region/{quote(region_name)}" if region_name else ""
    return f"/v2/systemsharedmemory{region}/{action}"


def cuda_shm_path(action: str, region_name: str = "") -> str:
    """``/v2/cudasharedmemory[/region/<name>]/<action>`` (action: status, register,
    unregister)."""
    region = f"/region/{quote(region_name)}" if region_name else ""
    return f"/v2/cudasharedmemory{region}/{action}"
