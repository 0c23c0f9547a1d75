"""What the sync and asyncio HTTP clients share: every endpoint as a transport-free
:class:`HttpCall` (method, path, headers, body, and how to read the reply).

Both clients build calls here and differ only in how the bytes move (gevent in
:mod:`tritonclient.http._client`, aiohttp in :mod:`tritonclient.http.aio`).  Encoding,
validation and error mapping all come from :mod:`tritonclient._codec` (``http_client``,
``http_body``).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

from tritonclient._codec.arguments import check_model_version
from tritonclient._codec.checks import Requested
from tritonclient._codec.errors import HttpCodecError
from tritonclient._codec.generate import (
    EVENT_STREAM,
    decode_generate_response,
    encode_generate_request,
    generate_path,
)
from tritonclient._codec.http_body import (
    HEADER_ACCEPT_ENCODING,
    HEADER_CONTENT_ENCODING,
    HEADER_INFERENCE_HEADER_CONTENT_LENGTH,
    EncodedBody,
    cuda_shm_path,
    decompress,
    encode_query,
    model_path,
    system_shm_path,
)
from tritonclient._codec.http_client import (
    decode_infer_response,
    encode_cuda_shm_register,
    encode_index_request,
    encode_infer_request,
    encode_load_request,
    encode_system_shm_register,
    encode_unload_request,
    error_from_response,
)
from tritonclient._codec.jsontext import client_json, dumps
from tritonclient._codec.types import Buffer, InferOptions, infer_options
from tritonclient._plugin import InferenceServerClientPlugin, PluginSlot, Request
from tritonclient._transport.http import HttpCall, HttpReply, transport_error
from tritonclient.http._infer_input import InferInput
from tritonclient.http._infer_result import InferResult
from tritonclient.http._requested_output import InferRequestedOutput
from tritonclient.utils import (
    InferenceServerException,
    ReplicaStats,
    RetryPolicy,
    raise_error,
)
from tritonclient.utils._errors import (
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerProtocolError,
    server_error_with_hint,
)

__all__ = [
    "ClientCore",
    "HttpCall",
    "HttpReply",
    "build_infer_body",
    "decode_error",
    "is_retryable",
    "not_ready_error",
    "parse_url",
    "reply_error",
    "transport_error",
]

T = TypeVar("T")

_COMPRESSION = ("gzip", "deflate")


def parse_url(url: str, ssl: bool) -> tuple[str, str, int, str]:
    """Split ``host:port/<base-path>`` into scheme, host, port and base path.

    Raises
    ------
    InferenceServerException
        If ``url`` includes a scheme.
    """
    if url.startswith("http://") or url.startswith("https://"):
        raise_error("url should not include the scheme")
    scheme = "https" if ssl else "http"
    hostport, _, base = url.partition("/")
    base = ("/" + base).rstrip("/") if base else ""
    host, port = hostport, 443 if ssl else 80
    if hostport.startswith("["):  # IPv6 literal
        end = hostport.find("]")
        host = hostport[1:end]
        if hostport[end + 1 : end + 2] == ":":
            port = int(hostport[end + 2 :])
    elif ":" in hostport:
        host, _, port_text = hostport.rpartition(":")
        try:
            port = int(port_text)
        except ValueError:
            raise_error(f"invalid port in url '{url}'")
    if not host:
        raise_error(f"invalid url '{url}': expected host:port")
    return scheme, host, port, base


def reply_error(reply: HttpReply) -> InferenceServerException | None:
    """The exception of a reply that is not 200 (None for 200)."""
    if reply.status == 200:
        return None
    body: Buffer = reply.body
    with contextlib.suppress(HttpCodecError):
        body = decompress(body, reply.header(HEADER_CONTENT_ENCODING))
    error = error_from_response(reply.status, body)
    return None if error is None else server_error_with_hint(error)


def _raise_if_error(reply: HttpReply) -> None:
    error = reply_error(reply)
    if error is not None:
        raise error


def _per_server(call: HttpCall[T]) -> HttpCall[T]:
    """``call``, marked as changing state that lives on one server (see ``per_server``)."""
    call.per_server = True
    return call


def _parse_ok(reply: HttpReply) -> bool:
    return reply.status == 200


def _parse_none(reply: HttpReply) -> None:
    _raise_if_error(reply)


def _parse_json(reply: HttpReply) -> Any:
    _raise_if_error(reply)
    try:
        body = decompress(reply.body, reply.header(HEADER_CONTENT_ENCODING))
    except HttpCodecError as exc:
        raise InferenceServerProtocolError(
            f"the server answered 200 with a body that cannot be decompressed: {exc.message()}"
        ) from None
    return client_json(body, "the server's answer (200)")


def decode_error(error: BaseException, what: str) -> InferenceServerException:
    """The exception for a response that arrived but could not be decoded."""
    if isinstance(error, InferenceServerException):
        return error
    return InferenceServerProtocolError(
        f"{what}: failed to decode the response ({type(error).__name__}: {error})"
    )


def is_retryable(error: BaseException) -> bool:
    """Whether a retry policy retries a call that failed with ``error`` (connection
    failures)."""
    return isinstance(error, InferenceServerConnectionError)


def not_ready_error(what: str, timeout: float, last: BaseException | None) -> Exception:
    """The error of ``wait_until_ready`` when ``what`` was still not ready after ``timeout``."""
    detail = f" (last error: {last})" if last is not None else ""
    return InferenceServerDeadlineExceededError(f"{what} not ready after {timeout:g} s{detail}")


#: The reply headers of an inference, as transports give them (lower-case names).
_JSON_SIZE_HEADER = HEADER_INFERENCE_HEADER_CONTENT_LENGTH.lower()
_ENCODING_HEADER = HEADER_CONTENT_ENCODING.lower()

#: Request bodies from this size on are sent from their buffers rather than joined first.
_CHUNKS_FROM = 1 << 20

#: Triton's limit for the JSON part of a request with binary data (a 32-bit length).
MAX_INFERENCE_HEADER_SIZE = 2**31 - 1


def build_infer_body(
    inputs: Iterable[InferInput],
    outputs: Iterable[InferRequestedOutput] | None,
    options: InferOptions,
) -> EncodedBody:
    """The body of an inference request from ``InferInput``/``InferRequestedOutput`` objects."""
    return encode_infer_request(
        [each._request_input() for each in inputs],
        None if outputs is None else [each._request_output() for each in outputs],
        options,
    )


def _raw_handle_bytes(raw_handle: bytes | str) -> bytes:
    """The handle from ``cuda_shared_memory.get_raw_handle`` (base64 text) as raw bytes."""
    text = raw_handle.encode("ascii") if isinstance(raw_handle, str) else bytes(raw_handle)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise_error("raw_handle must be the base64-encoded handle from get_raw_handle()")


class ClientCore(PluginSlot):
    """Plugins, verbose output and the description of every endpoint, for both clients."""

    def __init__(self, base_path: str, verbose: bool, retry_policy: RetryPolicy | None) -> None:
        self._plugin: InferenceServerClientPlugin | None = None
        self._base_path = base_path
        self._verbose = verbose
        #: The client's ``retry_policy`` (checked by the constructor, before anything else).
        self._retry_policy = retry_policy
        #: The inference path of each (model, version) called (quoting is not free).
        self._infer_paths: dict[tuple[str, str], str] = {}
        #: NVIDIA's stub once read or set (``_client_stub``, ``_stub``): see
        #: :mod:`tritonclient.http._seams`.
        self._seam: Any = None

    # -- request bodies (static, as in NVIDIA's client) -----------------------------------

    @staticmethod
    def generate_request_body(
        inputs: Sequence[InferInput],
        outputs: Sequence[InferRequestedOutput] | None = None,
        request_id: str = "",
        sequence_id: int | str = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout: int | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> tuple[bytes, int | None]:
        """Generate a request body for inference using the supplied 'inputs' requesting the
        outputs specified by 'outputs'.

        Parameters
        ----------
        inputs : list
            A list of InferInput objects, each describing data for a input tensor required by
            the model.
        outputs : list
            A list of InferRequestedOutput objects, each describing how the output data must
            be returned. If not specified all outputs produced by the model will be returned
            using default settings.
        request_id : str
            Optional identifier for the request.
        sequence_id : int or str
            The unique identifier for the sequence being represented by the object. A value
            of 0 or "" means that the request does not belong to a sequence.
        sequence_start : bool
            Indicates whether the request being added marks the start of the sequence.
        sequence_end : bool
            Indicates whether the request being added marks the end of the sequence.
        priority : int
            Indicates the priority of the request (0: the default priority).
        timeout : int
            The timeout value for the request, in microseconds.
        parameters : dict
            Optional custom parameters to be included in the inference request.

        Returns
        -------
        bytes
            The request body of the inference.
        int
            The byte size of the inference request header in the request body. Returns None
            if the whole request body constitutes the request header.

        Raises
        ------
        InferenceServerException
            If server fails to perform inference.
        """
        options = infer_options(
            request_id, sequence_id, sequence_start, sequence_end, priority, timeout, parameters
        )
        body: EncodedBody = build_infer_body(inputs, outputs, options)
        return body.tobytes(), body.json_size

    @staticmethod
    def parse_response_body(
        response_body: Buffer,
        verbose: bool = False,
        header_length: int | str | None = None,
        content_encoding: str | None = None,
    ) -> InferResult:
        """Generate an InferResult object from the given 'response_body'.

        Parameters
        ----------
        response_body : bytes
            The inference response from the server.
        verbose : bool
            If True generate verbose output. Default value is False.
        header_length : int
            The length of the inference header if the header does not occupy the whole
            response body. Default value is None.
        content_encoding : str
            The encoding of the response body if it is compressed. Default value is None.

        Returns
        -------
        InferResult
            The InferResult object generated from the response body.
        """
        return InferResult.from_response_body(
            response_body, verbose, header_length, content_encoding
        )

    # -- building calls -----------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        headers: Mapping[str, Any] | None,
        query_params: Mapping[str, Any] | None,
        parse: Callable[[HttpReply], T],
        body: bytes | None = None,
        body_headers: Mapping[str, str] | None = None,
    ) -> HttpCall[T]:
        if headers is None and self._plugin is None and not query_params and not self._verbose:
            # The usual call: nothing to merge, check or print.
            final = body_headers if body_headers is not None else {}  # made for this call
            return HttpCall(method, self._base_path + path, dict(final), body, parse)
        request = Request(dict(headers) if headers is not None else {})
        if self._plugin is not None:
            self._plugin(request)
        final = {str(k): str(v) for k, v in request.headers.items()}
        if any(k.lower() == "transfer-encoding" for k in final):
            raise_error(
                "Unsupported HTTP header: 'Transfer-Encoding' is not supported in the Python "
                "client library. Use raw HTTP request libraries or the C++ client instead for "
                "this header."
            )
        if body_headers:
            lower = {k.lower() for k in body_headers}
            final = {k: v for k, v in final.items() if k.lower() not in lower}
            final.update(body_headers)
        query = encode_query(query_params)
        uri = self._base_path + path + ("?" + query if query else "")
        if self._verbose:
            print(f"{method} {uri}, headers {final}")
            if body:
                print(body[:1024])
        return HttpCall(method, uri, final, body, parse)

    def _verbose_reply(self, reply: HttpReply) -> None:
        if self._verbose:
            print(f"<{reply.status}> headers {reply.headers}")
            print(bytes(reply.body[:1024]))

    def _finish(self, call: HttpCall[T], reply: HttpReply) -> T:
        """The method's result from the reply to ``call`` (both clients, any transport)."""
        if self._verbose:
            self._verbose_reply(reply)
        try:
            return call.parse(reply)
        except Exception as error:
            raise decode_error(error, f"{call.method} {call.path}") from None

    def _c_get(
        self,
        path: str,
        headers: Mapping[str, Any] | None,
        query_params: Mapping[str, Any] | None,
        parse: Callable[[HttpReply], T],
    ) -> HttpCall[T]:
        call = self._call("GET", path, headers, query_params, parse)
        call.idempotent = True
        return call

    def _c_post(
        self,
        path: str,
        body: bytes,
        headers: Mapping[str, Any] | None,
        query_params: Mapping[str, Any] | None,
        parse: Callable[[HttpReply], T],
    ) -> HttpCall[T]:
        extra = {"Content-Type": "application/json"} if body else None
        return self._call("POST", path, headers, query_params, parse, body, extra)

    def _c_server_live(self, headers: Any, query_params: Any) -> HttpCall[bool]:
        return self._c_get("/v2/health/live", headers, query_params, _parse_ok)

    def _c_server_ready(self, headers: Any, query_params: Any) -> HttpCall[bool]:
        return self._c_get("/v2/health/ready", headers, query_params, _parse_ok)

    def _c_model_ready(
        self, model_name: str, model_version: str, headers: Any, query_params: Any
    ) -> HttpCall[bool]:
        path = model_path(model_name, check_model_version(model_version), "ready")
        return self._c_get(path, headers, query_params, _parse_ok)

    def _c_server_metadata(self, headers: Any, query_params: Any) -> HttpCall[Any]:
        return self._c_get("/v2", headers, query_params, _parse_json)

    def _c_model_metadata(
        self, model_name: str, model_version: str, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        path = model_path(model_name, check_model_version(model_version))
        return self._c_get(path, headers, query_params, _parse_json)

    def _c_model_config(
        self, model_name: str, model_version: str, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        path = model_path(model_name, check_model_version(model_version), "config")
        return self._c_get(path, headers, query_params, _parse_json)

    def _c_repository_index(self, headers: Any, query_params: Any) -> HttpCall[Any]:
        body = encode_index_request()
        call = self._c_post("/v2/repository/index", body, headers, query_params, _parse_json)
        call.idempotent = True
        return call

    def _c_load_model(
        self,
        model_name: str,
        headers: Any,
        query_params: Any,
        config: str | None,
        files: Mapping[str, bytes] | None,
    ) -> HttpCall[None]:
        path = f"/v2/repository/models/{quote(model_name)}/load"
        body = encode_load_request(config, files)
        return self._c_post(path, body, headers, query_params, _parse_none)

    def _c_unload_model(
        self, model_name: str, headers: Any, query_params: Any, unload_dependents: bool
    ) -> HttpCall[None]:
        path = f"/v2/repository/models/{quote(model_name)}/unload"
        body = encode_unload_request(unload_dependents)
        return self._c_post(path, body, headers, query_params, _parse_none)

    def _c_statistics(
        self, model_name: str, model_version: str, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        if model_name:
            path = model_path(model_name, check_model_version(model_version), "stats")
        else:
            path = "/v2/models/stats"
        return self._c_get(path, headers, query_params, _parse_json)

    @staticmethod
    def _trace_path(model_name: str | None) -> str:
        return model_path(model_name, "", "trace/setting") if model_name else "/v2/trace/setting"

    def _c_update_trace(
        self,
        model_name: str | None,
        settings: Mapping[str, Any] | None,
        headers: Any,
        query_params: Any,
    ) -> HttpCall[Any]:
        body = dumps(dict(settings or {}))
        path = self._trace_path(model_name)
        return self._c_post(path, body, headers, query_params, _parse_json)

    def _c_get_trace(
        self, model_name: str | None, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        return self._c_get(self._trace_path(model_name), headers, query_params, _parse_json)

    def _c_update_log(
        self, settings: Mapping[str, Any], headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        body = dumps(dict(settings))
        return self._c_post("/v2/logging", body, headers, query_params, _parse_json)

    def _c_get_log(self, headers: Any, query_params: Any) -> HttpCall[Any]:
        return self._c_get("/v2/logging", headers, query_params, _parse_json)

    def _c_system_shm_status(
        self, region_name: str, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        path = system_shm_path("status", region_name)
        return self._c_get(path, headers, query_params, _parse_json)

    def _c_system_shm_register(
        self, name: str, key: str, byte_size: int, offset: int, headers: Any, query_params: Any
    ) -> HttpCall[None]:
        body = encode_system_shm_register(key, offset, byte_size)
        path = system_shm_path("register", name)
        return _per_server(self._c_post(path, body, headers, query_params, _parse_none))

    def _c_system_shm_unregister(
        self, name: str, headers: Any, query_params: Any
    ) -> HttpCall[None]:
        path = system_shm_path("unregister", name)
        return _per_server(self._c_post(path, b"", headers, query_params, _parse_none))

    def _c_cuda_shm_status(
        self, region_name: str, headers: Any, query_params: Any
    ) -> HttpCall[Any]:
        path = cuda_shm_path("status", region_name)
        return self._c_get(path, headers, query_params, _parse_json)

    def _c_cuda_shm_register(
        self,
        name: str,
        raw_handle: bytes | str,
        device_id: int,
        byte_size: int,
        headers: Any,
        query_params: Any,
    ) -> HttpCall[None]:
        body = encode_cuda_shm_register(_raw_handle_bytes(raw_handle), device_id, byte_size)
        path = cuda_shm_path("register", name)
        return _per_server(self._c_post(path, body, headers, query_params, _parse_none))

    def _c_cuda_shm_unregister(self, name: str, headers: Any, query_params: Any) -> HttpCall[None]:
        path = cuda_shm_path("unregister", name)
        return _per_server(self._c_post(path, b"", headers, query_params, _parse_none))

    def _c_infer(
        self,
        model_name: str,
        inputs: Iterable[InferInput],
        model_version: str,
        outputs: Iterable[InferRequestedOutput] | None,
        options: InferOptions,
        headers: Any,
        query_params: Any,
        request_compression_algorithm: str | None,
        response_compression_algorithm: str | None,
    ) -> HttpCall[InferResult]:
        if request_compression_algorithm is not None or response_compression_algorithm is not None:
            for name, algorithm in (
                ("request_compression_algorithm", request_compression_algorithm),
                ("response_compression_algorithm", response_compression_algorithm),
            ):
                if algorithm is not None and algorithm not in _COMPRESSION:
                    raise_error(f"unsupported {name} '{algorithm}'; expected 'gzip' or 'deflate'")
        path = self._infer_paths.get((model_name, model_version))
        if path is None:
            path = model_path(model_name, check_model_version(model_version), "infer")
            if len(self._infer_paths) < 1024:  # bounded: model names may come from anywhere
                self._infer_paths[(model_name, model_version)] = path
        if outputs is not None:
            outputs = list(outputs)
        requested = Requested(
            None if outputs is None else {o._name: o._shared_memory is not None for o in outputs}
        )
        body = build_infer_body(inputs, outputs, options)
        if body.json_size is not None and body.json_size > MAX_INFERENCE_HEADER_SIZE:
            raise_error(
                f"the JSON part of the inference request is {body.json_size} bytes; the "
                f"protocol allows at most {MAX_INFERENCE_HEADER_SIZE} (send large tensors as "
                "binary data)"
            )
        body = body.compressed(request_compression_algorithm)
        body_headers = body.headers()
        if response_compression_algorithm is not None:
            body_headers[HEADER_ACCEPT_ENCODING] = response_compression_algorithm
        verbose = self._verbose

        def parse(reply: HttpReply) -> InferResult:
            if reply.status != 200:
                _raise_if_error(reply)
            headers = reply.headers
            try:
                decoded = decode_infer_response(
                    reply.body,
                    headers.get(_JSON_SIZE_HEADER),
                    headers.get(_ENCODING_HEADER),
                    requested,
                )
                return InferResult(decoded, verbose)
            except Exception as error:
                raise decode_error(error, f"inference of model '{model_name}'") from None

        chunks = body.chunks
        if len(chunks) == 1 or body.nbytes < _CHUNKS_FROM:
            # One buffer, written at once: a small request written in two parts would wait
            # for the server's delayed ACK (Nagle), about 40 ms.
            data = bytes(chunks[0]) if len(chunks) == 1 else body.tobytes()
            call = self._call("POST", path, headers, query_params, parse, data, body_headers)
        else:
            call = self._call("POST", path, headers, query_params, parse, None, body_headers)
            call.chunks = tuple(body.chunks)  # the binary data goes out from its buffers
            if self._verbose:
                print(bytes(memoryview(body.chunks[0])[:1024]))
        call.kind = "infer"
        if options.sequence_id:
            # A client over several replicas keeps a sequence on its replica; never retried.
            call.sequence = (options.sequence_id, options.sequence_start, options.sequence_end)
        else:
            policy = self._retry_policy
            call.idempotent = policy is not None and policy.retry_infer
        return call

    def replica_stats(self) -> list[ReplicaStats]:
        """The counters of each replica of a client over several replicas (``url`` a list).

        Not in NVIDIA's client.

        Returns
        -------
        list of tritonclient.utils.ReplicaStats
            One per replica, in the order of ``url``: address, calls sent, failures,
            ejections, calls in progress and whether it takes calls now. Empty for a client
            of one server (``url`` a string).
        """
        transport = getattr(self, "_transport", None)
        stats = getattr(transport, "replica_stats", None)
        return [] if stats is None else list(stats())

    # -- the generate extension (not in NVIDIA's client) ----------------------------------

    def _c_generate(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        parameters: Mapping[str, Any] | None,
        model_version: str,
        headers: Any,
        query_params: Any,
        stream: bool,
    ) -> HttpCall[dict[str, Any]]:
        """``POST .../generate`` (its answer decoded), or ``.../generate_stream`` (whose body
        the clients read as it arrives, through :class:`~tritonclient._codec.generate.
        GenerateStreamDecoder`; ``parse`` is then only used for a whole error answer)."""
        path = generate_path(model_name, check_model_version(model_version), stream)
        body = encode_generate_request(inputs, parameters)
        extra = {"Content-Type": "application/json"}
        if stream:
            extra["Accept"] = EVENT_STREAM

        def parse(reply: HttpReply) -> dict[str, Any]:
            _raise_if_error(reply)
            return decode_generate_response(reply.body)

        return self._call("POST", path, headers, query_params, parse, body, extra)
