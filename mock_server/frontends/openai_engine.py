"""The OpenAI frontend's engine: OpenAI requests as the core's inference requests, and back.

Which models serve which endpoint is decided by their tensors, whatever backend runs them
(Triton's frontend decides by the ``backend`` name, so a Python-backend model that speaks the
vLLM backend's tensors is served as a TensorRT-LLM one there):

* **text generation** (``/v1/completions``, ``/v1/chat/completions``): input ``text_input``
  and output ``text_output``, with the vLLM backend's optional inputs ``stream``,
  ``sampling_parameters`` (a JSON object: ``max_tokens``, ``stop``, ``seed``, ``temperature``
  ...), ``exclude_input_in_output``, ``return_num_input_tokens``,
  ``return_num_output_tokens``, ``return_logprobs`` and outputs ``num_input_tokens``,
  ``num_output_tokens`` (the usage) and ``logprobs``.  Only the inputs a model declares are
  sent; without ``sampling_parameters`` the parameters go as request parameters.
* **embeddings** (``/v1/embeddings``): the vLLM backend's input ``embedding_request`` (a JSON
  object: ``input``, ``pooling_params``) and output ``text_output`` (a JSON list of floats).

Requests are checked with Triton's frontend's words (:class:`ClientError`, answered 400), then
submitted through the core's dataplane like every other frontend's, so statistics and metrics
count them; their responses come back on the frontends' loop (:mod:`._delivery`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.config import datatype_of
from ..core.dataplane import Call, Dataplane
from ..core.errors import ServerError
from ..core.types import InferRequest, InferResponse, Tensor
from ._delivery import Responses, delivery_for
from .openai_schema import ChatRequest, CompletionRequest, EmbeddingRequest

if TYPE_CHECKING:
    from ..core.server import CoreServer

__all__ = ["ClientError", "Engine", "Generated", "LlmModel", "ServerFailure"]

#: The owner every model is listed with, as Triton's frontend lists them.
OWNED_BY = "Triton Inference Server"

#: Request fields that are not sampling parameters (Triton's frontend leaves them out of
#: ``sampling_parameters``; ``max_tokens`` and ``logprobs`` are added back as the model
#: takes them).
_NOT_SAMPLING = frozenset(
    {
        "model", "stream", "messages", "prompt", "echo", "store", "metadata",
        "response_format", "service_tier", "stream_options", "tools", "tool_choice",
        "parallel_tool_calls", "user", "function_call", "functions", "suffix",
        "max_completion_tokens", "max_tokens", "logprobs", "top_logprobs", "best_of",
    }
)  # fmt: skip


class ClientError(Exception):
    """A request this frontend refuses (400, or ``status``), with Triton's words."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ServerFailure(Exception):
    """Inference failed (500): the core refused the request, or the model answered an error."""


@dataclass
class LlmModel:
    """What the frontend knows of one ready model.

    Attributes
    ----------
    name : str
        The model's name (its OpenAI id).
    inputs : dict
        Its inputs: name to (datatype, shape sent).
    outputs : frozenset of str
        Its output names.
    folder : Path or None
        Its folder in the repository (for ``chat_template.jinja``).
    created : int
        When the frontend first saw it ready (Unix seconds; the ``created`` it is listed with).
    config : object
        The configuration these were read from.
    """

    name: str
    inputs: dict[str, tuple[str, tuple[int, ...]]]
    outputs: frozenset[str]
    folder: Path | None
    created: int = field(default_factory=lambda: int(time.time()))
    config: object = None

    @property
    def generates(self) -> bool:
        """Whether it has the text-generation interface."""
        return "text_input" in self.inputs and "text_output" in self.outputs

    @property
    def embeds(self) -> bool:
        """Whether it has the embedding interface."""
        return "embedding_request" in self.inputs and "text_output" in self.outputs

    def card(self) -> dict[str, Any]:
        """Its entry in ``/v1/models``."""
        return {"id": self.name, "object": "model", "created": self.created, "owned_by": OWNED_BY}


@dataclass
class Generated:
    """One response of a text model, as the frontend uses it.

    Attributes
    ----------
    text : str
        Its ``text_output`` (the whole text, or a streamed delta).
    prompt_tokens, completion_tokens : int or None
        Its ``num_input_tokens`` / ``num_output_tokens``, when the model reports them.
    logprobs : list or None
        Its ``logprobs`` (the vLLM backend's JSON), when asked for and reported.
    final : bool
        Whether it is the last one.
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    logprobs: list[dict[str, Any]] | None = None
    final: bool = False


def _first_text(tensor: Tensor) -> str:
    values = tensor.data.reshape(-1)
    raw = b"".join(v if isinstance(v, bytes) else str(v).encode() for v in values)
    return raw.decode("utf-8", errors="replace")


def _first_int(tensor: Tensor | None) -> int | None:
    if tensor is None or tensor.data.size == 0:
        return None
    return int(tensor.data.reshape(-1)[0])


def generated(response: InferResponse) -> Generated:
    """A text model's response read (``text_output``, the counts, the logprobs)."""
    by_name = {t.name: t for t in response.outputs}
    text = by_name.get("text_output")
    logprobs = by_name.get("logprobs")
    parsed = json.loads(_first_text(logprobs)) if logprobs is not None else None
    return Generated(
        _first_text(text) if text is not None else "",
        _first_int(by_name.get("num_input_tokens")),
        _first_int(by_name.get("num_output_tokens")),
        parsed if isinstance(parsed, list) else None,
        response.final,
    )


class Engine:
    """OpenAI requests over a core (see the module).

    Parameters
    ----------
    core : CoreServer
        The core the models run on.
    default_max_tokens : int
        ``max_tokens`` when a request gives none (Triton's frontend: 16).
    tool_call_parser : str or None
        ``--tool-call-parser``: whether ``tools`` with an "auto" choice are taken.
    """

    def __init__(
        self, core: CoreServer, default_max_tokens: int = 16, tool_call_parser: str | None = None
    ) -> None:
        self.core = core
        self.dataplane = Dataplane(core)
        self.default_max_tokens = default_max_tokens
        self.tool_call_parser = tool_call_parser
        self._seen: dict[str, LlmModel] = {}

    # -- models --------------------------------------------------------------------------
    def models(self) -> list[LlmModel]:
        """Every ready model, as ``/v1/models`` lists them (the core is asked each time, so
        models loaded over any frontend are listed)."""
        names = sorted({row["name"] for row in self.core.repository_index(ready_only=True)})
        out = []
        for name in names:
            found = self.model(name)
            if found is not None:
                out.append(found)
        return out

    def model(self, name: str) -> LlmModel | None:
        """The ready model ``name``, or None."""
        try:
            version = self.core.model_version(name)
        except ServerError:
            self._seen.pop(name, None)
            return None
        known = self._seen.get(name)
        config = version.config
        # A reload brings a new configuration object: read the tensors again, keep `created`.
        if known is None or known.config is not config:
            batch = (1,) if int(config.max_batch_size) > 0 else ()
            inputs = {
                i.name: (datatype_of(i.data_type), batch + tuple(max(int(d), 1) for d in i.dims))
                for i in config.input
            }
            try:
                folder: Path | None = self.core.repository.source(name).path
            except ServerError:
                folder = None
            created = known.created if known is not None else int(time.time())
            outputs = frozenset(o.name for o in config.output)
            known = LlmModel(name, inputs, outputs, folder, created, config)
            self._seen[name] = known
        return known

    def _require(self, name: str) -> LlmModel:
        found = self.model(name)
        if found is None:
            raise ClientError(f"Unknown model: {name}")
        return found

    # -- checks (Triton's frontend's words) ----------------------------------------------
    def check_completion(self, request: CompletionRequest) -> LlmModel:
        """The model of a completion request, after Triton's frontend's checks.

        Raises
        ------
        ClientError
            An unknown model, or what Triton's frontend refuses (``suffix``, an empty or
            non-string prompt, ``best_of``, ``n`` > 1, ``logit_bias`` ...).
        """
        model = self._require_text(request.model)
        if request.suffix is not None:
            raise ClientError("suffix is not currently supported")
        if not request.prompt:
            raise ClientError("prompt must be non-empty")
        if not isinstance(request.prompt, str):
            raise ClientError("only single string input is supported")
        if "best_of" in request.model_fields_set and "sampling_parameters" in model.inputs:
            raise ClientError(
                "best_of is no longer supported in vLLM backend, removed from vLLM V1 engine"
            )
        _check_choices(request.n)
        if request.best_of and request.best_of > 1:
            raise ClientError(
                f"Received best_of={request.best_of}, but only single choice (best_of=1) is "
                "currently supported"
            )
        if request.logit_bias is not None:
            raise ClientError("logit bias is not supported")
        if request.logprobs and "return_logprobs" not in model.inputs:
            raise ClientError("logprobs are currently available only for the vLLM backend")
        _check_stream_options(request)
        return model

    def check_chat(self, request: ChatRequest) -> LlmModel:
        """The model of a chat request, after Triton's frontend's checks (see
        :meth:`check_completion`; and the tool settings)."""
        model = self._require_text(request.model)
        _check_choices(request.n)
        if request.logit_bias is not None:
            raise ClientError("logit bias is not currently supported")
        if (request.logprobs or request.top_logprobs is not None) and (
            "return_logprobs" not in model.inputs
        ):
            raise ClientError("logprobs are currently available only for the vLLM backend")
        if request.top_logprobs is not None and not request.logprobs:
            raise ClientError("`top_logprobs` can only be used when `logprobs` is True")
        choice = request.tool_choice
        if choice == "required" and not request.tools:
            raise ClientError(
                '"required" tool choice requires CreateChatCompletionRequest.tools to be provided'
            )
        if choice is not None and not isinstance(choice, str) and not request.tools:
            raise ClientError(
                "Named tool choice requires CreateChatCompletionRequest.tools to be provided"
            )
        if choice == "auto" and self.tool_call_parser is None:
            raise ClientError('"auto" tool choice requires --tool-call-parser to be set')
        if choice is None and request.tools and self.tool_call_parser is None:
            raise ClientError("having tools in the request requires --tool-call-parser to be set")
        _check_stream_options(request)
        return model

    def check_embedding(self, request: EmbeddingRequest) -> LlmModel:
        """The model of an embedding request (an unknown one, or one without the embedding
        interface, is refused)."""
        model = self._require(request.model)
        if not model.embeds:
            raise ClientError(
                f"model '{model.name}' does not serve embeddings: it has no input "
                "'embedding_request' and output 'text_output' (the vLLM backend's embedding "
                "interface)"
            )
        return model

    def _require_text(self, name: str) -> LlmModel:
        model = self._require(name)
        if not model.generates:
            raise ClientError(
                f"model '{model.name}' does not generate text: it has no input 'text_input' "
                "and output 'text_output' (the vLLM backend's interface)"
            )
        return model

    # -- inference -----------------------------------------------------------------------
    def sampling_parameters(
        self, request: CompletionRequest | ChatRequest, guided_json: str | None = None
    ) -> dict[str, Any]:
        """The vLLM sampling parameters of ``request`` (what Triton's frontend sends)."""
        params = request.model_dump(exclude=set(_NOT_SAMPLING), exclude_none=True)
        params.pop("stream_options", None)
        limit = request.max_tokens
        if isinstance(request, ChatRequest):
            if request.max_completion_tokens is not None:
                limit = request.max_completion_tokens
            if request.logprobs:
                params["logprobs"] = request.top_logprobs or 1
        elif request.logprobs:
            params["logprobs"] = request.logprobs
        params["max_tokens"] = self.default_max_tokens if limit is None else limit
        if guided_json is not None:
            params["structured_outputs"] = json.dumps({"json": guided_json})
        return params

    def text_request(
        self,
        model: LlmModel,
        prompt: str,
        params: dict[str, Any],
        *,
        stream: bool,
        echo: bool | None,
    ) -> InferRequest:
        """The core's request for a text model: only the inputs ``model`` declares."""
        values: dict[str, Any] = {
            "text_input": prompt.encode("utf-8"),
            "stream": stream,
            "exclude_input_in_output": True if echo is None else not echo,
            "return_num_input_tokens": True,
            "return_num_output_tokens": True,
            "return_logprobs": "logprobs" in params,
        }
        parameters: dict[str, Any] = {}
        if "sampling_parameters" in model.inputs:
            values["sampling_parameters"] = json.dumps(params).encode("utf-8")
        else:
            parameters = {
                k: (json.dumps(v) if isinstance(v, list | dict) else v) for k, v in params.items()
            }
        return InferRequest(model.name, inputs=_tensors(model, values), parameters=parameters)

    def embedding_request(self, model: LlmModel, request: EmbeddingRequest) -> InferRequest:
        """The core's request for an embedding model (the vLLM backend's JSON)."""
        body: dict[str, Any] = {"input": request.input, "pooling_params": {}}
        if request.dimensions is not None:
            body["pooling_params"]["dimensions"] = [request.dimensions]
        values = {
            "embedding_request": json.dumps(body).encode("utf-8"),
            "return_num_input_tokens": True,
            "return_num_output_tokens": True,
        }
        return InferRequest(model.name, inputs=_tensors(model, values))

    async def run(self, request: InferRequest) -> AsyncIterator[InferResponse]:
        """Submit ``request`` through the dataplane and yield its responses as they come.

        A model's error response ends the iteration with :class:`ServerFailure`; leaving the
        iteration early (the client went away) cancels the request.

        Raises
        ------
        ServerFailure
            When the core refuses the request, or the model answers an error.
        """
        call = Call(request, {}, self.dataplane.holds())  # no shared memory: nothing held
        responses: Responses[InferResponse] = Responses(delivery_for(asyncio.get_running_loop()))
        try:
            self.dataplane.submit(call, responses.put)
        except ServerError as exc:
            raise ServerFailure(exc.message) from None
        finished = False
        try:
            while True:
                response = await responses.get()
                if response.error is not None:
                    finished = True
                    raise ServerFailure(response.error.message)
                yield response
                if response.final:
                    finished = True
                    return
        finally:
            if not finished:
                call.cancel()


def _tensors(model: LlmModel, values: dict[str, Any]) -> list[Tensor]:
    """The inputs of ``values`` that ``model`` declares, shaped as its configuration says."""
    tensors = []
    for name, value in values.items():
        if name not in model.inputs:
            continue
        datatype, shape = model.inputs[name]
        dtype = np.object_ if datatype == "BYTES" else np.bool_
        data = np.array([value], dtype=dtype).reshape(shape)
        tensors.append(Tensor(name, datatype, shape, data))
    return tensors


def _check_choices(n: int | None) -> None:
    if n and n > 1:
        raise ClientError(f"Received n={n}, but only single choice (n=1) is currently supported")


def _check_stream_options(request: CompletionRequest | ChatRequest) -> None:
    if request.stream_options and not request.stream:
        raise ClientError("`stream_options` can only be used when `stream` is True")
