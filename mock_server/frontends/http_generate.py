"""The generate extension's endpoints of the HTTP frontend (``/generate``, ``/generate_stream``).

:class:`GenerateEndpoints` answers both as Triton 2.51 does (``docs/protocol.md`` section 3.16;
the differential suite in ``tests/conformance`` checks it): the request object is mapped onto
the model's inputs and parameters by :func:`tritonclient._codec.generate.parse_generate_request`;
``/generate`` answers with the status of the first response and needs exactly one;
``/generate_stream`` opens an event stream with the first response's status (400 for an error)
and sends every response, errors included, as one ``data:`` event.

A client that goes away stops its request: aiohttp cancels the handler of a closed connection
(``handler_cancellation``), or writing the next event fails; either way the request is
cancelled through the core (:meth:`InferRequest.cancel`), which a running model sees as
``is_cancelled()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from tritonclient._codec import errors, generate, http_body, http_server

from ..core.types import InferRequest, InferResponse
from ._delivery import Responses
from .http_infer import decode, submit
from .http_support import JSON, Frontend
from .load_report import FORMAT_HEADER, HEADER, load_metrics_header

__all__ = ["GenerateEndpoints"]

_EVENT_STREAM = "text/event-stream; charset=utf-8"


def _payload(response: InferResponse, name: str, request_id: str) -> bytes:
    """A response's generate JSON, or its error object (an FP16 output, say)."""
    if response.error is not None:
        return http_server.encode_error(response.error.message)
    try:
        return generate.encode_generate_response(
            response.model_name or name,
            response.model_version,
            [(t.name, t.datatype, t.data) for t in response.outputs],
            request_id=response.id or request_id,
            parameters=response.parameters,
        )
    except errors.HttpCodecError as exc:
        return http_server.encode_error(str(exc.message()))


def _is_flags_only(response: InferResponse) -> bool:
    """A final response carrying nothing: the model's "no more responses" flag."""
    return (
        response.final
        and response.error is None
        and not response.outputs
        and not response.parameters
    )


class GenerateEndpoints:
    """``/generate`` and ``/generate_stream`` over one frontend's core and body reading."""

    def __init__(self, frontend: Frontend) -> None:
        self._frontend = frontend

    async def handle(
        self, request: web.BaseRequest, name: str, version: int, *, stream: bool
    ) -> web.StreamResponse:
        """Answer one generate request (``stream``: ``/generate_stream``).

        Raises
        ------
        ServerError, HttpCodecError
            Errors before inference starts (unknown model, a body that is not a JSON object,
            inputs that do not fit), which the frontend renders with their status.
        """
        frontend = self._frontend
        core = frontend._core
        metadata = await frontend._blocking(core.model_metadata, name, version)
        encoding = request.headers.get(http_body.HEADER_CONTENT_ENCODING, "")
        if encoding not in ("", "identity"):
            raise errors.HttpCodecError(
                "Unsupported content-encoding, only 'identity' is supported.", 400
            )
        body = await frontend._bodies.read(request)
        frontend._bodies.check_size(len(body), "JSON")
        model_inputs = {i["name"]: (i["datatype"], i["shape"]) for i in metadata["inputs"]}
        sized = core.compat.generate_input_sizes
        parsed = generate.parse_generate_request(
            body,
            model_inputs=model_inputs,
            # 2.51 neither adds up a generate request's inputs (it has no such limit, even
            # where this server is given one) nor treats an empty one apart.
            max_input_size=frontend._bodies.max_input_size if sized else None,
            empty_unshaped=sized,
        )
        holds = frontend._dataplane.holds()
        try:
            decoded = decode(frontend._dataplane, parsed, name, version, holds)
            call, responses = submit(frontend, request.raw_headers, decoded, holds)
            core_request = call.request
            report_format = request.headers.get(FORMAT_HEADER)
            try:
                if stream:
                    return await self._stream(request, core_request, responses, name, report_format)
                return await self._one(core_request, responses, name, report_format)
            except BaseException:
                # The client went away (the handler is cancelled, or a write failed): stop the
                # model through the core's cancel path.
                core_request.cancel()
                raise
        finally:
            holds.release()

    async def _load_report(self, report_format: str | None) -> dict[str, str]:
        """The ``endpoint-load-metrics`` header asked for with ``endpoint-load-metrics-format``
        (computed when the first response is ready, as Triton's ``StartResponse``)."""
        render = self._frontend._metrics
        if report_format is None or render is None:
            return {}
        text = (await self._frontend._blocking(render)).decode("utf-8", "replace")
        value = load_metrics_header(text, report_format)
        return {} if value is None else {HEADER: value}

    async def _one(
        self,
        core_request: InferRequest,
        responses: Responses[InferResponse],
        name: str,
        report_format: str | None,
    ) -> web.StreamResponse:
        # Triton collects the responses, answers with the first one's status (400 when it is
        # an error) and needs exactly one of them.
        status: int | None = None
        payloads: list[bytes] = []
        while True:
            response = await responses.get()
            if status is None:
                status = 400 if response.error is not None else 200
            if not _is_flags_only(response):
                payloads.append(_payload(response, name, core_request.id))
            if response.final:
                break
        if len(payloads) != 1:
            payloads = [
                http_server.encode_error(
                    "generate expects model to produce exactly 1 response, use generate stream "
                    "for model that generates various number of responses"
                )
            ]
        return web.Response(
            status=status or 200,
            body=payloads[0],
            content_type=JSON,
            headers=await self._load_report(report_format),
        )

    async def _stream(
        self,
        request: web.BaseRequest,
        core_request: InferRequest,
        responses: Responses[InferResponse],
        name: str,
        report_format: str | None,
    ) -> web.StreamResponse:
        # The first response opens the event stream with its status (400 for an error); every
        # response, errors included, is one event.
        stream: web.StreamResponse | None = None
        write: Callable[[bytes], Awaitable[None]] | None = None
        while True:
            response = await responses.get()
            if stream is None:
                stream = web.StreamResponse(
                    status=400 if response.error is not None else 200,
                    headers={
                        **await self._load_report(report_format),
                        "Content-Type": _EVENT_STREAM,
                    },
                )
                await stream.prepare(request)
                write = stream.write
            assert write is not None
            if not _is_flags_only(response):
                payload = _payload(response, name, core_request.id)
                try:
                    await write(generate.encode_sse_event(payload))
                except ConnectionResetError:
                    # The client went away (it closed the stream): stop the model, quietly,
                    # as an ended stream is not a server error.
                    core_request.cancel()
                    return stream
            if response.final:
                break
        await stream.write_eof()
        return stream
