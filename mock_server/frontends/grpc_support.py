"""What the gRPC frontend's unary handlers and its stream share: error mapping, the hand-off
to the event loop, malformed messages and status-message clipping."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from tritonclient._codec import errors, grpc_common, grpc_framing
from tritonclient._proto import service_pb2 as pb
from tritonclient.utils import InferenceServerException

from ..core.errors import ErrorKind, ServerError
from ._delivery import delivery_for

log = logging.getLogger("mock_server.grpc")


def status(kind: ErrorKind) -> Any:
    """The ``grpc.StatusCode`` of a core error kind."""
    return grpc.StatusCode[grpc_common.status_for_error_kind(kind.name)]


def server_error(exc: BaseException) -> ServerError:
    """Any failure while serving a request, as a core error."""
    if isinstance(exc, ServerError):
        return exc
    if isinstance(exc, errors.CodecError):
        return ServerError(ErrorKind[exc.kind], exc.message() or "")
    if isinstance(exc, InferenceServerException):
        return ServerError.internal(exc.message() or str(exc))
    log.exception("unexpected error in the gRPC frontend", exc_info=exc)
    return ServerError.internal(f"internal error: {type(exc).__name__}: {exc}")


def resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Schedule ``callback`` on ``loop`` from any thread (through the loop's delivery, which
    wakes it once per burst of responses); a closed loop drops it."""
    delivery_for(loop).call(callback, *args)


def hand_over(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any) -> None:
    """Resolve ``future`` (of ``loop``) with ``value`` from any thread: at once on the loop's
    own thread when nothing is queued before it (see Delivery.run), otherwise through the
    loop's delivery."""
    delivery_for(loop).run(resolve, future, value)


def metadata_value(context: Any, key: str) -> str | None:
    for item_key, value in context.invocation_metadata() or ():
        if item_key == key and isinstance(value, str):
            return value
    return None


Parsed = tuple[pb.ModelInferRequest, list[memoryview]]


@dataclass(frozen=True)
class Malformed:
    """A request message that did not parse.

    Triton (grpc's C++ server) answers a unary call with INTERNAL ``Unable to parse request``
    and ends a stream's reading at such a message, as if the client had closed its side.
    """

    message: str

    def error(self) -> ServerError:
        log.info("%s", self.message)
        return ServerError.internal("Unable to parse request")


#: Longest status message sent, in characters: grpc clients refuse trailers past 16 KiB, and a
#: character may take 4 bytes, percent-encoded x3 (hostile shapes make long messages).
MAX_STATUS_MESSAGE = 1200


def clip(message: str) -> str:
    if len(message) <= MAX_STATUS_MESSAGE:
        return message
    return message[: MAX_STATUS_MESSAGE - 20] + "... (message clipped)"


def lenient(message_type: Any) -> Callable[[bytes], Any]:
    """A deserializer for ``message_type`` that returns :class:`Malformed` on bad bytes."""
    name = message_type.DESCRIPTOR.name

    def parse(data: bytes) -> Any:
        try:
            return message_type.FromString(data)
        except Exception as exc:
            return Malformed(f"failed to parse the {name} message: {exc}")

    return parse


def parts_size(parts: tuple[Any, list[Any]]) -> int:
    """The size of the message serializing ``parts`` (a response and its raw contents) makes."""
    message, raw = parts
    return int(message.ByteSize()) + sum(
        (b.nbytes if isinstance(b, memoryview) else len(b)) + 16 for b in raw
    )


def parse_infer_request(data: bytes) -> Parsed | Malformed:
    """:func:`grpc_framing.parse_infer_request`, turning a malformed message into a value.

    grpc would answer a deserializer's exception with a bare UNKNOWN (unary) or fail the
    whole stream; as a value, the handler answers as Triton does (see :class:`Malformed`).
    """
    try:
        return grpc_framing.parse_infer_request(data)
    except Exception as exc:  # DecodeError, ValueError: whatever the bytes were
        return Malformed(f"failed to parse the ModelInferRequest message: {exc}")
