"""The OpenAI-compatible frontend (``--openai-port``): Triton's OpenAI frontend's routes on the
frontends' event loop (aiohttp), over the same core as the KServe frontends.

Routes, as Triton's frontend serves them (``python/openai`` in the server repository):

=========================================  ==================================================
``GET /v1/models``, ``/v1/models/{m}``     every ready model (404 ``Unknown model: m``)
``POST /v1/completions``                   text completion, ``stream`` as Server-Sent Events
``POST /v1/chat/completions``              chat completion (template: :mod:`.openai_chat`)
``POST /v1/embeddings``                    embeddings of an embedding model
``POST /v1/models/{m}/load``, ``unload``   model control (``--model-control-mode explicit``)
``GET /metrics``, ``GET /health/ready``    the core's metrics; 200 when the core is ready
=========================================  ==================================================

Errors are Triton's frontend's (FastAPI's): ``{"detail": message}`` with 400 (a request it
refuses), 404 or 500 (inference failed); 422 with ``{"detail": [pydantic errors]}`` for a body
that does not fit the schema; 401 ``{"error": {...}}`` for a restricted API without its
header (``--openai-restricted-api``); 413 ``{"error": {...}}`` for a body over
``--http-max-input-size``.  A model error after a stream has started arrives as an event
``{"error": {...}}`` (the ``openai`` package raises it as ``APIError``), then ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
from aiohttp import web

from ..core.errors import ErrorKind, ServerError
from ..core.server import CoreServer, ModelControlMode
from .openai_answers import (
    Answer,
    ToolCalls,
    chat_logprobs,
    completion_logprobs,
    done_event,
    event,
)
from .openai_chat import ChatError, Templates, Tokenizer
from .openai_engine import ClientError, Engine, Generated, ServerFailure, generated
from .openai_groups import restriction_of
from .openai_schema import (
    ChatRequest,
    CompletionRequest,
    EmbeddingRequest,
    ValidationError,
    validation_detail,
)

__all__ = ["OpenAIFrontend"]

log = logging.getLogger("mock_server.openai")

_EVENT_STREAM = "text/event-stream; charset=utf-8"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _detail(status: int, detail: Any) -> web.Response:
    return web.json_response({"detail": detail}, status=status)


def _error(status: int, message: str, kind: str, code: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": code}}
    return web.json_response(body, status=status)


class OpenAIFrontend:
    """The OpenAI routes over ``core`` (see the module).

    Parameters
    ----------
    core : CoreServer
        The core the models run on (shared with the other frontends).
    host, port : str, int
        Where to listen (port 0: a free one).
    metrics : callable, optional
        Renders the Prometheus text of ``GET /metrics`` (the composition root passes the
        same renderer as the metrics port's); without it, ``/metrics`` answers 404.
    restricted_apis : dict, optional
        ``{api group: (header, value)}`` (:func:`.openai_groups.parse_openai_restricted`).
    max_input_size : int
        The largest request body (``--http-max-input-size``; Triton's default 64 MiB).
    tokenizer : str, optional
        A local tokenizer folder (``--tokenizer``).
    chat_template : str, optional
        A Jinja chat template file for every model (``--chat-template``).
    default_max_tokens : int
        ``max_tokens`` of a request that gives none (``--default-max-tokens``, 16).
    tool_call_parser : str, optional
        ``--tool-call-parser``: ``llama3`` (the only one).
    """

    def __init__(
        self,
        core: CoreServer,
        host: str = "127.0.0.1",
        port: int = 9000,
        *,
        metrics: Callable[[], bytes] | None = None,
        restricted_apis: dict[str, tuple[str, str]] | None = None,
        max_input_size: int = 1 << 26,
        tokenizer: str | None = None,
        chat_template: str | None = None,
        default_max_tokens: int = 16,
        tool_call_parser: str | None = None,
    ) -> None:
        if tool_call_parser not in (None, "llama3"):
            raise ValueError(
                f"--tool-call-parser {tool_call_parser}: unknown parser (expected 'llama3')"
            )
        if max_input_size <= 0:
            raise ValueError(f"value must be greater than 0, got {max_input_size!r}")
        self._core = core
        self._host = host
        self._port = port
        self._metrics = metrics
        self._restricted = restricted_apis or {}
        self._max_input_size = max_input_size
        self._tokenizer = Tokenizer(tokenizer) if tokenizer else None
        self._templates = Templates(chat_template, self._tokenizer)
        self.engine = Engine(core, default_max_tokens, tool_call_parser)
        self._runner: web.AppRunner | None = None
        if self._restricted:
            summary = {api: key for api, (key, _) in self._restricted.items()}
            log.info("OpenAI API restrictions enabled: %s", summary)

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> int:
        """Bind and start serving; returns the bound port."""
        app = web.Application(middlewares=[self._limits], client_max_size=self._max_input_size + 1)
        get, post = web.get, web.post
        app.add_routes(
            [
                get("/v1/models", self._list),
                get("/v1/models/{name}", self._retrieve),
                post("/v1/models/{name}/load", self._load),
                post("/v1/models/{name}/unload", self._unload),
                post("/v1/completions", self._completions),
                post("/v1/chat/completions", self._chat),
                post("/v1/embeddings", self._embeddings),
                get("/metrics", self._metrics_text),
                get("/health/ready", self._ready),
            ]
        )
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server: Any = site._server
        return int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop serving (streams in progress are closed)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- middleware: size limit, restrictions, errors --------------------------------------
    @web.middleware
    async def _limits(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        length = request.content_length
        if length is not None and length > self._max_input_size:
            return self._too_large(length)
        auth = restriction_of(self._restricted, request.method, request.path)
        if auth is not None and request.headers.get(auth[0]) != auth[1]:
            message = f"This API is restricted, expecting header '{auth[0]}' with valid value"
            return _error(401, message, "authentication_error", "invalid_auth")
        try:
            return await handler(request)
        except web.HTTPException as exc:  # aiohttp's 404 and 405, in FastAPI's words
            if exc.status in (404, 405):
                return _detail(exc.status, exc.reason)
            raise
        except _Answered as answered:
            return answered.response
        except ClientError as exc:
            return _detail(exc.status, str(exc))
        except ServerFailure as exc:
            return _detail(500, str(exc))

    def _too_large(self, size: int) -> web.Response:
        message = (
            f"Request size of {size} bytes exceeds the maximum allowed input size of "
            f"{self._max_input_size} bytes. Use --http-max-input-size to increase the limit."
        )
        return _error(413, message, "invalid_request_error", "content_too_large")

    async def _body(self, request: web.Request, schema: Any) -> Any:
        """The request's body validated by ``schema``; a 413/422 answer is raised."""
        chunks, total = [], 0
        while True:
            chunk = await request.content.readany()
            if not chunk:
                break
            total += len(chunk)
            if total > self._max_input_size:
                raise _Answered(self._too_large(total))
            chunks.append(chunk)
        text = b"".join(chunks)
        try:
            payload = json.loads(text)
        except ValueError as exc:
            position = getattr(exc, "pos", 0)
            detail = [
                {
                    "type": "json_invalid",
                    "loc": ["body", position],
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": getattr(exc, "msg", str(exc))},
                }
            ]
            raise _Answered(_detail(422, detail)) from None
        try:
            return schema.model_validate(payload)
        except ValidationError as exc:
            raise _Answered(_detail(422, validation_detail(exc))) from None

    # -- models, health, metrics ---------------------------------------------------------
    async def _list(self, request: web.Request) -> web.Response:
        models = await self._blocking(self.engine.models)
        return web.json_response({"object": "list", "data": [m.card() for m in models]})

    async def _retrieve(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        found = await self._blocking(self.engine.model, name)
        if found is None:
            return _detail(404, f"Unknown model: {name}")
        return web.json_response(found.card())

    def _require_explicit(self) -> None:
        if self._core.options.model_control_mode is not ModelControlMode.EXPLICIT:
            raise ClientError("Model load/unload requires --model-control-mode=explicit")

    async def _load(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self._require_explicit()
        if await self._blocking(self.engine.model, name) is not None:
            raise ClientError(f"Model '{name}' is already loaded")
        try:
            await self._blocking(self._core.load_model, name)
        except ServerError as exc:
            status = 400 if exc.kind in (ErrorKind.INVALID_ARG, ErrorKind.NOT_FOUND) else 500
            raise ClientError(f"Failed to load model '{name}': {exc.message}", status) from None
        found = await self._blocking(self.engine.model, name)
        if found is None:
            raise ServerFailure(f"Failed to load model '{name}': it is not ready")
        return web.json_response(found.card())

    async def _unload(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self._require_explicit()
        if await self._blocking(self.engine.model, name) is None:
            raise ClientError(f"Unknown model: {name}")
        try:
            await self._blocking(self._core.unload_model, name)
        except ServerError as exc:
            status = 400 if exc.kind is ErrorKind.INVALID_ARG else 500
            raise ClientError(f"Failed to unload model '{name}': {exc.message}", status) from None
        return web.json_response({"status": "success", "model": name})

    async def _ready(self, request: web.Request) -> web.Response:
        if not self._core.ready():
            return _detail(400, "Attached inference engine is not ready for inference requests.")
        return web.Response(status=200)

    async def _metrics_text(self, request: web.Request) -> web.Response:
        if self._metrics is None:
            return _detail(404, "Not Found")
        text = await self._blocking(self._metrics)
        return web.Response(body=text, content_type="text/plain", charset="utf-8")

    async def _blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    # -- inference -----------------------------------------------------------------------
    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body: CompletionRequest = await self._body(request, CompletionRequest)
        model = self.engine.check_completion(body)
        assert isinstance(body.prompt, str)  # checked
        params = self.engine.sampling_parameters(body)
        core_request = self.engine.text_request(
            model, body.prompt, params, stream=bool(body.stream), echo=body.echo
        )
        answer = Answer(body.model, chat=False)
        usage = bool(body.stream_options and body.stream_options.include_usage)
        pieces = self._pieces(core_request, answer)
        if body.stream:
            offset = 0

            def chunks(piece: Generated) -> list[bytes]:
                nonlocal offset
                logprobs = completion_logprobs(piece.logprobs, offset)
                offset += len(piece.text)
                return [answer.completion_chunk(piece, logprobs)]

            return await self._stream(request, pieces, chunks, answer if usage else None)
        text, logprobs = await self._collect(pieces)
        return web.json_response(answer.completion(text, completion_logprobs(logprobs)))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: ChatRequest = await self._body(request, ChatRequest)
        model = self.engine.check_chat(body)
        tools = _tool_calls(body, self.engine.tool_call_parser)
        guided = None
        if tools.named is not None:
            found = {t.function.name: t.function for t in body.tools or []}
            if tools.named not in found:
                raise ClientError(f"Tool '{tools.named}' has not been passed in `tools`.")
            guided = json.dumps(found[tools.named].parameters or {})
        try:
            prompt = self._templates.render(model.folder, body)
        except ChatError as exc:
            raise ClientError(str(exc)) from None
        params = self.engine.sampling_parameters(body, guided)
        core_request = self.engine.text_request(
            model, prompt, params, stream=bool(body.stream), echo=None
        )
        answer = Answer(body.model, chat=True)
        pieces = self._pieces(core_request, answer, prompt)
        if body.stream:
            usage = bool(body.stream_options and body.stream_options.include_usage)
            opened = False

            def chunks(piece: Generated) -> list[bytes]:
                nonlocal opened
                out = [] if opened else [answer.chat_opening()]
                opened = True
                out.extend(answer.chat_chunks(piece, tools, chat_logprobs(piece.logprobs)))
                return out

            return await self._stream(request, pieces, chunks, answer if usage else None)
        text, logprobs = await self._collect(pieces)
        return web.json_response(answer.chat_completion(text, tools, chat_logprobs(logprobs)))

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body: EmbeddingRequest = await self._body(request, EmbeddingRequest)
        model = self.engine.check_embedding(body)
        answer = Answer(body.model, chat=False)
        text, _ = await self._collect(
            self._pieces(self.engine.embedding_request(model, body), answer)
        )
        try:
            vector = [float(x) for x in json.loads(text)]
        except (ValueError, TypeError):
            raise ServerFailure(f"model '{model.name}' answered no JSON list of numbers") from None
        embedding: Any = vector
        if body.encoding_format == "base64":
            embedding = base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()
        usage = answer.usage()
        return web.json_response(
            {
                "object": "list",
                "data": [{"object": "embedding", "embedding": embedding, "index": 0}],
                "model": body.model,
                "usage": usage
                and {
                    "prompt_tokens": usage["prompt_tokens"],
                    "total_tokens": usage["prompt_tokens"],
                },
            }
        )

    async def _pieces(self, core_request: Any, answer: Answer, prompt: str | None = None) -> Any:
        """The model's responses read, their counts added to ``answer`` (from the tokenizer
        when the model reports none)."""
        async for response in self.engine.run(core_request):
            piece = generated(response)
            if piece.prompt_tokens is None and self._tokenizer is not None:
                source = prompt if prompt is not None else _prompt_of(core_request)
                piece.prompt_tokens = self._tokenizer.count(source)
                piece.completion_tokens = self._tokenizer.count(piece.text)
            answer.count(piece)
            yield piece

    @staticmethod
    async def _collect(pieces: Any) -> tuple[str, list[dict[str, Any]] | None]:
        # Decoupled models answer with one response and maybe a flags-only final one;
        # whatever comes, the texts are joined.
        texts: list[str] = []
        logprobs: list[dict[str, Any]] = []
        async for piece in pieces:
            texts.append(piece.text)
            logprobs.extend(piece.logprobs or [])
        return "".join(texts), logprobs or None

    async def _stream(
        self,
        request: web.Request,
        pieces: Any,
        chunks: Callable[[Generated], list[bytes]],
        usage_of: Answer | None,
    ) -> web.StreamResponse:
        """Send ``pieces`` as events; an error before the first one is answered 500."""
        iterator = pieces.__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            first = Generated("", final=True)
        stream = web.StreamResponse(headers={"Content-Type": _EVENT_STREAM})
        await stream.prepare(request)
        piece: Generated | None = first
        try:
            try:
                while piece is not None:
                    for chunk in chunks(piece):
                        await stream.write(chunk)
                    try:
                        piece = await iterator.__anext__()
                    except StopAsyncIteration:
                        piece = None
            except ServerFailure as exc:
                error = {"message": str(exc), "type": "server_error", "code": 500}
                await stream.write(event({"error": error}))
            if usage_of is not None and (last := usage_of.usage_chunk()) is not None:
                await stream.write(last)
            await stream.write(done_event())
            await stream.write_eof()
        except ConnectionResetError:
            # The client went away (an ended stream is not a server error): closing the
            # responses cancels the request, which the model sees as is_cancelled().
            await iterator.aclose()
        return stream


class _Answered(Exception):
    """A ready answer (413, 422) raised out of body reading."""

    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


def _tool_calls(body: ChatRequest, parser: str | None) -> ToolCalls:
    choice = body.tool_choice
    if choice is not None and not isinstance(choice, str):
        return ToolCalls(named=choice.function.name)
    if choice == "required" and body.tools:
        return ToolCalls(named=body.tools[0].function.name)
    auto = bool(body.tools) and parser is not None and choice in (None, "auto")
    return ToolCalls(auto=auto)


def _prompt_of(core_request: Any) -> str:
    for tensor in core_request.inputs:
        if tensor.name in ("text_input", "embedding_request"):
            value = tensor.data.reshape(-1)[0]
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""
