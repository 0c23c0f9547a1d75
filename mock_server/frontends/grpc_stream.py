"""One ``ModelStreamInfer`` call of the gRPC frontend: its reader, its requests in flight and
the queue its responses are written from (see :mod:`mock_server.frontends.grpc`, "Streams").
Requests go through the core's dataplane, as :mod:`.grpc_infer`'s unary calls do."""

from __future__ import annotations

import asyncio
import functools
import itertools
from typing import TYPE_CHECKING, Any

from tritonclient._codec import grpc_server
from tritonclient._proto import service_pb2 as pb

from ..core.dataplane import Call
from ..core.errors import ServerError
from ..core.types import InferRequest, InferResponse, ParamValue
from .grpc_support import Malformed, call_soon, log, server_error

if TYPE_CHECKING:
    from .grpc_infer import InferRpcs

__all__ = ["END", "Stream"]

#: Put on a stream's queue after its last message.
END = object()


class Stream:
    """The state of one ``ModelStreamInfer`` call."""

    def __init__(
        self,
        rpcs: InferRpcs,
        loop: asyncio.AbstractEventLoop,
        error_header: str | None,
        forwarded: dict[str, ParamValue] | None = None,
    ) -> None:
        self._rpcs = rpcs
        self._forwarded = forwarded
        self._loop = loop
        self._error_mode = (error_header or "").lower() == "true"
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self._in_flight: dict[int, InferRequest] = {}
        self._answered: set[int] = set()  # default-mode requests whose response went out
        self._keys = itertools.count()
        self._reading = True
        self._ended = False
        self._failed = False

    async def read(self, request_iterator: Any) -> None:
        """Submit every request of the stream, in order."""
        try:
            async for parts in request_iterator:
                if isinstance(parts, Malformed):
                    # Triton reads no further: the requests already sent complete, then the
                    # stream ends with OK.
                    log.info("stream reading ends at a malformed message: %s", parts.message)
                    break
                await self._submit(*parts)
                if self._failed:
                    break
        except Exception as exc:
            self._fail(server_error(exc))
        finally:
            self._reading = False
            self._maybe_end()

    def cancel_all(self) -> None:
        """Cancel every request still in flight (the client went away or the call ended)."""
        in_flight, self._in_flight = self._in_flight, {}
        for request in in_flight.values():
            request.cancel()

    def _fail(self, error: ServerError) -> None:
        """End the stream with ``error`` (``triton_grpc_error`` mode)."""
        if not self._failed:
            self._failed = True
            self.queue.put_nowait(error)
            self.cancel_all()

    def _maybe_end(self) -> None:
        if not self._reading and not self._in_flight and not self._ended:
            self._ended = True
            self.queue.put_nowait(END)

    async def _submit(self, request: pb.ModelInferRequest, raw: list[memoryview]) -> None:
        dataplane = self._rpcs.dataplane
        key: int | None = None
        # Held until the request's final response is encoded (:meth:`_on_response_thread`).
        holds = dataplane.holds()
        try:
            decoded, decoupled = await self._rpcs.decode(request, raw, holds, unary=False)
            call = dataplane.prepare(decoded, self._forwarded, holds)
            key = next(self._keys)
            self._in_flight[key] = call.request
            dataplane.submit(
                call, functools.partial(self._on_response_thread, key, call, decoded, decoupled)
            )
        except Exception as exc:
            holds.release()
            if key is not None:
                self._in_flight.pop(key, None)
            # Reported in the stream, even with triton_grpc_error (Triton 2.51 ends the stream
            # only for errors a model sends).
            error = server_error(exc)
            self.queue.put_nowait(
                (grpc_server.encode_stream_error(error.message, request_id=request.id), [])
            )

    def _encode(
        self,
        call: Call,
        decoded: grpc_server.DecodedInferRequest,
        decoupled: bool,
        response: InferResponse,
    ) -> Any:
        """The stream message for ``response``: parts, None (nothing to send) or an error."""
        error = response.error
        if error is None:
            if decoupled and response.final and not response.outputs and not response.parameters:
                if not decoded.enable_empty_final_response:
                    return None
                message = grpc_server.encode_empty_final_response(
                    request_id=decoded.id,
                    model_name=decoded.model_name,
                    model_version=decoded.model_version_str,
                )
                return (message, [])
            try:
                reply = self._rpcs.dataplane.reply(call, response)
                parts = grpc_server.encode_stream_response_parts(
                    response, final=response.final, shm_outputs=reply.shm_outputs
                )
                self._rpcs.check_size(parts)
                return parts
            except Exception as exc:
                error = server_error(exc)
        if self._error_mode:
            return error
        message = grpc_server.encode_stream_error(
            error.message,
            request_id=decoded.id,
            model_name=decoded.model_name,
            model_version=decoded.model_version_str,
            final=response.final,
        )
        return (message, [])

    def _on_response_thread(
        self,
        key: int,
        call: Call,
        decoded: grpc_server.DecodedInferRequest,
        decoupled: bool,
        response: InferResponse,
    ) -> None:
        """Response callback, on the thread that produced the response.  The request's
        shared-memory regions are released after its final response is encoded (Triton deletes
        the final response's ResponseReleasePayload: src/grpc/stream_infer_handler.cc:894-896,
        2.73.0)."""
        try:
            if key not in self._in_flight:
                return  # cancelled: nobody reads it
            call_soon(
                self._loop,
                self._on_response,
                key,
                self._encode(call, decoded, decoupled, response),
                response.final,
                decoupled,
            )
        finally:
            if response.final:
                call.release()

    def _on_response(self, key: int, item: Any, final: bool, decoupled: bool = True) -> None:
        if key not in self._in_flight:
            return
        if not decoupled and key in self._answered:
            # Triton's stream passes on a default-mode request's first response only (a model
            # that sent one and then failed: the error after it is dropped).
            item = None
        if isinstance(item, ServerError):
            self._fail(item)
            return
        if item is not None:
            self.queue.put_nowait(item)
            if not decoupled:
                self._answered.add(key)
        if final:
            del self._in_flight[key]
            self._answered.discard(key)
            self._maybe_end()
