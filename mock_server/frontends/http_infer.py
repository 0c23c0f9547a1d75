"""The HTTP frontend's inference endpoint (``POST /v2/models/<name>[/versions/<v>]/infer``).

:class:`InferEndpoint` reads the body (inflated, size-checked), parses it with the codec (JSON
with the binary tensor extension, or a raw binary request), hands the decoded request to the
core's dataplane (:mod:`mock_server.core.dataplane`), waits for the response that answers it,
and encodes that response (compressed when the client accepts it).  :func:`decode` and
:func:`submit` are shared with the generate endpoints (:mod:`.http_generate`).

Large bodies are decoded, and large responses encoded, in the frontend's worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
from aiohttp import web

from tritonclient._codec import errors, http_body, http_server, types

from ..core.config import datatype_of
from ..core.dataplane import Call, Dataplane, Reply
from ..core.shm import RegionHolds
from ..core.types import InferResponse
from ..core.validation import forwarded_headers
from ._delivery import Responses, delivery_for
from .http_support import (
    PLAIN,
    Frontend,
    HttpError,
    from_codec_error,
    from_server_error,
    plain_errors,
)

__all__ = ["HttpInferRequest", "InferEndpoint", "decode", "submit"]

#: The most a deflate stream inflates by (zlib's technical note): what a compressed body's size
#: may stand for.
_MAX_INFLATION = 1032
#: Responses smaller than this are sent as one joined buffer.
_JOIN_BYTES = 1 << 16
#: Large response chunks are written in slices of this size, each awaited: the transport then
#: sends them straight from the tensor instead of copying most of a large body into its buffer.
_WRITE_SLICE = 1 << 20

_HEADER_LENGTH = http_body.HEADER_INFERENCE_HEADER_CONTENT_LENGTH
_DECOUPLED_MESSAGE = "HTTP end point doesn't support models with decoupled transaction policy"


def decode(
    dataplane: Dataplane,
    parsed: http_server.ParsedInferRequest,
    name: str,
    version: int,
    holds: RegionHolds,
    max_json_bytes: int | None = None,
) -> types.DecodedInferRequest:
    """A parsed request's tensors decoded, inputs in shared memory resolved (and their regions
    held) through the request's ``holds``; ``max_json_bytes``: the largest JSON input
    (``/infer``'s ``--http-max-input-size``; the generate endpoints have their own checks)."""
    return http_server.decode_infer_request(
        parsed,
        name,
        version,
        shm_resolver=holds.read_input,
        max_json_depth=dataplane.core.compat.http_json_depth,
        element_count_2_73=dataplane.core.compat.element_count_2_73,
        max_json_bytes=max_json_bytes,
    )


def submit(
    frontend: Frontend,
    raw_headers: Iterable[tuple[bytes, bytes]],
    decoded: types.DecodedInferRequest,
    holds: RegionHolds,
) -> tuple[Call, Responses[InferResponse]]:
    """Submit ``decoded`` through the dataplane (with the headers the frontend forwards, out
    of the request's ``raw_headers``); its responses arrive on the returned inbox (moved onto
    the loop by the loop's shared delivery, one wake-up per burst).  The caller releases
    ``holds`` when the request is done."""
    dataplane = frontend._dataplane
    call = dataplane.prepare(
        decoded, lambda: forwarded_headers(frontend._forward, received_headers(raw_headers)), holds
    )
    responses: Responses[InferResponse] = Responses(delivery_for(asyncio.get_running_loop()))
    dataplane.submit(call, responses.put)  # put is called from model threads
    return call, responses


def received_headers(raw_headers: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[str, str]]:
    """A request's headers named as the client spelled them (aiohttp's parser gives the
    headers it knows, ``priority`` among them, their canonical spelling; Triton forwards the
    name as received), decoded as aiohttp decodes them."""
    for name, value in raw_headers:
        yield (
            name.decode("utf-8", "surrogateescape"),
            value.decode("utf-8", "surrogateescape"),
        )


@dataclass(frozen=True)
class HttpInferRequest:
    """An inference request as an HTTP engine read it (aiohttp, or the fast path).

    Attributes
    ----------
    headers : mapping
        The request's headers (names compared without regard to case).
    raw_headers : iterable of (bytes, bytes)
        The same headers as received (for ``--http-header-forward-pattern``).
    read_body : callable
        Reads the whole body; called once the model is known to take the request.
    name : str
        The model named by the path.
    version : int
        The version named by the path (-1: the model's version policy chooses).
    """

    headers: Mapping[str, str]
    raw_headers: Iterable[tuple[bytes, bytes]]
    read_body: Callable[[], Awaitable[types.Buffer]]
    name: str
    version: int


class InferEndpoint:
    """``/infer`` over one frontend's core, body reading and worker threads."""

    def __init__(self, frontend: Frontend) -> None:
        self._frontend = frontend

    async def handle(self, request: web.BaseRequest, name: str, version: int) -> web.StreamResponse:
        """Answer one inference request read by aiohttp."""
        encoded = await self.answer(
            HttpInferRequest(
                request.headers,
                request.raw_headers,
                lambda: self._frontend._bodies.read(request),
                name,
                version,
            )
        )
        return await _send(request, encoded)

    async def answer(self, request: HttpInferRequest) -> http_body.EncodedBody:
        """Answer one inference request, whichever engine read it (aiohttp, or the fast path
        of :mod:`.http_fast`); the shared-memory regions it uses are held until it is answered
        (or failed), as Triton releases them once the reply is sent
        (src/http_server.cc:3946-3969, 2.73.0).

        Returns
        -------
        EncodedBody
            The response (compressed when the client accepts it).

        Raises
        ------
        HttpError, ServerError, HttpCodecError
            The error to answer with.
        """
        holds = self._frontend._dataplane.holds()
        try:
            return await self._answer(request, holds)
        finally:
            holds.release()

    async def _answer(self, request: HttpInferRequest, holds: RegionHolds) -> http_body.EncodedBody:
        headers, raw_headers, name, version = (
            request.headers,
            request.raw_headers,
            request.name,
            request.version,
        )
        frontend = self._frontend
        bodies = frontend._bodies
        # Until the body is parsed, and again for what the response carries, Triton's errors
        # are text/plain; the rest (parsing, validation) are application/json.
        with plain_errors():
            model = frontend._core.model_version(name, version)
            if model.config.model_transaction_policy.decoupled:
                raise HttpError(501, _DECOUPLED_MESSAGE)
            model.ahead()  # its idle instance may get ready (a stub is woken)
            raw_body = await request.read_body()
            # A compressed body may inflate to at most the input-size limit (decompression
            # bombs stop as soon as they pass it); an uncompressed one is limited by its JSON.
            # What decides is what it may inflate to (deflate reaches ~1032:1): a small
            # compressed body can keep the loop, every client's, busy for a long time.
            compressed = headers.get(http_body.HEADER_CONTENT_ENCODING, "identity")
            size = len(raw_body) * (1 if compressed in ("", "identity") else _MAX_INFLATION)
            body = await frontend._maybe_blocking(
                size, bodies.decompressed, compressed, raw_body, True
            )
            header_length = http_body.parse_header_length(
                headers.get(_HEADER_LENGTH),
                len(body),
                stoi=frontend._core.compat.http_checks_2_73,
            )
        if header_length == 0:
            bodies.check_size(len(body), "raw input")
            config = model.config
            parsed = http_server.parse_raw_request(
                body,
                model_name=name,
                inputs=[(i.name, datatype_of(i.data_type), list(i.dims)) for i in config.input],
                max_batch_size=int(config.max_batch_size),
            )
        else:
            bodies.check_size(header_length, "JSON")
            parsed = await frontend._maybe_blocking(
                len(body), _parse_infer, body, header_length, name
            )
        try:
            decoded = await frontend._maybe_blocking(
                len(body),
                decode,
                frontend._dataplane,
                parsed,
                name,
                version,
                holds,
                bodies.max_input_size,
            )
        except errors.HttpCodecError as exc:
            if exc.in_response:  # Triton finds this one while running the request
                raise from_codec_error(exc, PLAIN) from None
            raise
        call, final = await self._run(raw_headers, decoded, holds)
        with plain_errors():
            if final.error is not None:
                raise from_server_error(final.error)
            size = sum(int(t.data.nbytes) for t in final.outputs if t.data.dtype != np.object_)
            encoded = await frontend._maybe_blocking(size, self._encode, call, final, parsed, name)
        encoding = http_body.negotiate_encoding(headers.get(http_body.HEADER_ACCEPT_ENCODING))
        if encoding is not None:
            encoded = await frontend._maybe_blocking(encoded.nbytes, encoded.compressed, encoding)
        return encoded

    async def _run(
        self,
        raw_headers: Iterable[tuple[bytes, bytes]],
        decoded: types.DecodedInferRequest,
        holds: RegionHolds,
    ) -> tuple[Call, InferResponse]:
        """Run a non-decoupled request; return its response (the first error, else the one
        with outputs, or the final one)."""
        call, responses = submit(self._frontend, raw_headers, decoded, holds)
        answer: InferResponse | None = None
        try:
            while True:
                response = await responses.get()
                if response.error is not None:
                    return call, response
                if response.outputs or answer is None:
                    answer = response
                if response.final:
                    return call, answer
        except BaseException:
            call.cancel()
            raise

    def _encode(
        self,
        call: Call,
        final: InferResponse,
        parsed: http_server.ParsedInferRequest,
        name: str,
    ) -> http_body.EncodedBody:
        reply: Reply = self._frontend._dataplane.reply(call, final)
        written = reply.shm_outputs
        outputs = [
            http_server.ResponseOutput(tensor.name, tensor.datatype, tensor.shape, None)
            if tensor.name in written
            else http_server.ResponseOutput(
                tensor.name,
                tensor.datatype,
                tensor.shape,
                tensor.data,
                parsed.output_binary(tensor.name),
            )
            for tensor in final.outputs
        ]
        return http_server.encode_infer_response(
            final.model_name or name,
            final.model_version,
            outputs,
            request_id=final.id or parsed.id,
            parameters=final.parameters,
        )


async def _send(request: web.BaseRequest, body: http_body.EncodedBody) -> web.StreamResponse:
    headers = body.headers()
    if len(body.chunks) == 1 or body.nbytes <= _JOIN_BYTES:
        return web.Response(body=body.tobytes(), headers=headers)
    response = web.StreamResponse(headers=headers)
    response.content_length = body.nbytes
    await response.prepare(request)
    for chunk in body.chunks:
        view = memoryview(chunk).cast("B")
        for start in range(0, view.nbytes, _WRITE_SLICE):
            await response.write(view[start : start + _WRITE_SLICE])
    await response.write_eof()
    return response


def _parse_infer(
    body: types.Buffer, header_length: int | None, model_name: str
) -> http_server.ParsedInferRequest:
    return http_server.parse_infer_request(body, header_length, model_name=model_name)
