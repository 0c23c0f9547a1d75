"""The gRPC frontend's inference RPCs: ``ModelInfer`` and ``ModelStreamInfer``.

:class:`InferRpcs` decodes a request with the codec (in a worker thread when it holds much BYTES
or typed data), hands it to the core's dataplane (:mod:`mock_server.core.dataplane`), and
encodes each response on the thread that produced it (shared-memory outputs written there by
the dataplane) before handing it to the event loop.  One stream's state is
:class:`~mock_server.frontends.grpc_stream.Stream`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from typing import Any

from tritonclient._codec import grpc_server, types
from tritonclient._proto import service_pb2 as pb

from ..core.dataplane import Call, Dataplane
from ..core.errors import ServerError
from ..core.shm import RegionHolds
from ..core.types import InferResponse
from ..core.validation import forwarded_headers
from .grpc_stream import END, Stream
from .grpc_support import (
    Malformed,
    Parsed,
    clip,
    hand_over,
    metadata_value,
    parts_size,
    server_error,
    status,
)

__all__ = ["InferRpcs"]

#: Requests whose BYTES/typed data exceed this are decoded in a worker thread.
_OFFLOAD_BYTES = 1 << 20


class InferRpcs:
    """``ModelInfer`` and ``ModelStreamInfer`` over a core's dataplane.

    Parameters
    ----------
    dataplane : Dataplane
        The core's dataplane.
    forward : HeaderForward or None
        Request metadata whose key matches reaches the model as parameters
        (:meth:`CoreServer.header_forward`).
    compression : grpc.Compression or None
        How inference responses are compressed.
    max_message_bytes : int
        The largest response message.
    check_access : callable
        ``check_access(context, rpc)`` raises ServerError when the call lacks the metadata a
        restricted API group needs.
    """

    def __init__(
        self,
        dataplane: Dataplane,
        *,
        forward: Any,
        compression: Any,
        max_message_bytes: int,
        check_access: Callable[[Any, str], None],
    ) -> None:
        self.dataplane = dataplane
        self._core = dataplane.core
        self._forward = forward
        self._compression = compression
        self._max_message_bytes = max_message_bytes
        self._check_access = check_access
        self._refusing = False

    def stop_accepting(self) -> None:
        """From now on refuse new requests, unary or on open streams, with UNAVAILABLE "GRPC
        server is shutting down and has stopped accepting new requests." while those in
        flight finish (Triton 2.73's graceful stop, #7969: ``Server::GracefulStop``,
        ``DisableNewConnections`` in src/grpc/grpc_server.cc; the checks in
        src/grpc/infer_handler.cc and src/grpc/stream_infer_handler.cc)."""
        self._refusing = True

    async def decode(
        self,
        request: pb.ModelInferRequest,
        raw: list[memoryview],
        holds: RegionHolds,
        *,
        unary: bool,
    ) -> tuple[grpc_server.DecodedInferRequest, bool]:
        """Look the model up, then decode the request (the regions of its shared-memory inputs
        held in ``holds``); also says whether it is decoupled.

        In Triton's order: the model first, then (``unary``) the refusal of decoupled models,
        then the tensors.  Decoding runs in a worker thread when the request holds much
        BYTES or typed data.  Once :meth:`stop_accepting` was called, every request is
        refused first.
        """
        if self._refusing:
            raise ServerError.unavailable(
                "GRPC server is shutting down and has stopped accepting new requests."
            )
        version = grpc_server.parse_model_version(request.model_version, request.model_name)
        model = self._core.model_version(request.model_name, version)
        decoupled = bool(model.config.model_transaction_policy.decoupled)
        if unary and decoupled:
            raise ServerError.unsupported(
                "ModelInfer RPC doesn't support models with decoupled transaction policy"
            )
        if unary:
            model.ahead()  # its idle instance may get ready (a stub is woken)
        decode = functools.partial(
            grpc_server.decode_infer_request,
            request,
            raw,
            shm_resolver=holds.read_input,
        )
        heavy = False
        if any(i.datatype == "BYTES" or i.HasField("contents") for i in request.inputs):
            size = sum(v.nbytes for v in raw)
            if any(i.HasField("contents") for i in request.inputs):
                size += request.ByteSize()
            heavy = size >= _OFFLOAD_BYTES
        decoded = await asyncio.to_thread(decode) if heavy else decode()
        return decoded, decoupled

    def check_size(self, parts: tuple[Any, list[types.Buffer]]) -> None:
        """Refuse a response larger than the largest message."""
        size = parts_size(parts)
        if size > self._max_message_bytes:
            raise ServerError.invalid_arg(
                f"Response has byte size {size} which exceeds gRPC's byte size limit "
                f"{self._max_message_bytes}."
            )

    def _encode_unary(
        self, call: Call, response: InferResponse
    ) -> tuple[pb.ModelInferResponse, list[types.Buffer]] | ServerError:
        """Encode a unary response (runs on the thread that produced it)."""
        try:
            if response.error is not None:
                return response.error
            reply = self.dataplane.reply(call, response)
            parts = grpc_server.encode_infer_response_parts(response, shm_outputs=reply.shm_outputs)
            self.check_size(parts)
            return parts
        except Exception as exc:
            return server_error(exc)

    # -- ModelInfer ----------------------------------------------------------------------
    async def model_infer(self, parts: Parsed | Malformed, context: Any) -> Any:
        """The ``ModelInfer`` RPC (run by the frontend's unary handler)."""
        if isinstance(parts, Malformed):
            raise parts.error()
        request, raw = parts
        if self._compression is not None:
            context.set_compression(self._compression)
        # The regions the request uses are held until its response is encoded (Triton deletes
        # the ResponseReleasePayload after ``Finish``: src/grpc/infer_handler.cc:1189-1197).
        holds = self.dataplane.holds()
        try:
            return await self._model_infer(request, raw, context, holds)
        finally:
            holds.release()

    async def _model_infer(
        self, request: pb.ModelInferRequest, raw: list[memoryview], context: Any, holds: RegionHolds
    ) -> Any:
        decoded, _ = await self.decode(request, raw, holds, unary=True)
        call = self.dataplane.prepare(
            decoded,
            lambda: forwarded_headers(self._forward, context.invocation_metadata() or ()),
            holds,
        )
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        earlier = 0  # responses before the final one (a model's sender, then its error)

        def on_response(response: InferResponse) -> None:  # the thread that produced it
            nonlocal earlier
            if not response.final:
                earlier += 1
                return
            result = self._encode_unary(call, response)
            if earlier and response.error is not None:
                # Triton 2.51's unary handler counts them: the model's response did go out.
                result = ServerError.internal(f"expected a single response, got {earlier + 1}")
            hand_over(loop, done, result)

        self.dataplane.submit(call, on_response)
        try:
            result = await done
        except asyncio.CancelledError:
            call.cancel()
            raise
        if isinstance(result, ServerError):
            raise result
        return result

    # -- ModelStreamInfer ----------------------------------------------------------------
    async def model_stream_infer(self, request_iterator: Any, context: Any) -> None:
        """The ``ModelStreamInfer`` RPC."""
        try:
            self._check_access(context, "ModelStreamInfer")
        except ServerError as exc:
            await context.abort(status(exc.kind), exc.message)
        if self._compression is not None:
            context.set_compression(self._compression)
        try:
            forwarded = forwarded_headers(self._forward, context.invocation_metadata() or ())
        except ServerError as exc:
            await context.abort(status(exc.kind), exc.message)
        stream = Stream(
            self,
            asyncio.get_running_loop(),
            metadata_value(context, "triton_grpc_error"),
            forwarded,
        )
        reader = asyncio.create_task(stream.read(request_iterator))
        try:
            while True:
                item = await stream.queue.get()
                if item is END:
                    break
                if isinstance(item, ServerError):
                    await context.abort(status(item.kind), clip(item.message))
                await context.write(item)
        finally:
            reader.cancel()
            stream.cancel_all()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
