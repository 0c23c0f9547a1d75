"""What the sync and asyncio gRPC clients share: everything but moving the messages.

Channel options and credentials, plugins and headers, inference requests (through
:mod:`tritonclient._codec.grpc_client`), stream responses, compression names and error mapping;
the other unary calls are described in :mod:`tritonclient.grpc._calls`.
``_client.InferenceServerClient`` (threads and ``grpc``) and
``aio.InferenceServerClient`` (``grpc.aio``) only send what these functions build.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from tritonclient._codec import grpc_client, grpc_common, grpc_framing
from tritonclient._codec.arguments import check_model_version
from tritonclient._codec.checks import Requested, response_fault
from tritonclient._codec.types import NO_OPTIONS, InferOptions
from tritonclient._plugin import InferenceServerClientPlugin, PluginSlot, Request
from tritonclient._proto import service_pb2
from tritonclient._retry import check_retry_policy
from tritonclient._transport.grpc import KeepAliveOptions, cancelled_error, compression_type
from tritonclient._transport.grpc_replicas import Named, check_infer_over_stream, open_transport
from tritonclient.utils import InferenceServerException, ReplicaStats, raise_error
from tritonclient.utils._errors import (
    InferenceServerDeadlineExceededError,
    InferenceServerProtocolError,
    InferenceServerUnavailableError,
    RetryPolicy,
    server_error_with_hint,
    with_note,
)

from ._tensors import InferInput, InferRequestedOutput, InferResult

if TYPE_CHECKING:
    from ._calls import Call

__all__ = [
    "ClientBase",
    "InferCall",
    "Ready",
    "UnaryCall",
    "cancelled_error",
    "check_infer_over_stream",
    "encode_infer",
    "infer_request_from_dict",
    "parse_infer",
    "parse_reply",
    "parse_stream",
    "parse_streamed_infer",
    "requested_outputs",
    "serialize_request",
    "stream_item",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


_SERVICE = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]


def parse_reply(rpc: str, data: bytes) -> Any:
    """The response message of unary RPC ``rpc`` from its wire bytes.

    Raises
    ------
    InferenceServerProtocolError
        If ``data`` is not such a message.
    """
    name = _SERVICE.methods_by_name[rpc].output_type.name
    cls = getattr(service_pb2, name)
    try:
        return cls.FromString(data)
    except Exception as exc:  # DecodeError, or whatever a protobuf backend raises for bytes
        raise InferenceServerProtocolError(
            f"invalid {rpc} response: the {name} message does not parse ({exc})"
        ) from None


def infer_retry_policy(policy: RetryPolicy | None, options: InferOptions) -> RetryPolicy | None:
    """The retry policy of an ``infer`` call: ``policy`` when it has ``retry_infer`` and the
    call is not part of a sequence, else None (never repeated)."""
    if policy is not None and policy.retry_infer and not options.sequence_id:
        return policy
    return None


def is_retryable(error: InferenceServerException) -> bool:
    """Whether a retry policy retries a call that failed with ``error`` (UNAVAILABLE)."""
    return isinstance(error, InferenceServerUnavailableError)


def not_ready_error(what: str, timeout: float, last: BaseException | None) -> Exception:
    """The error of ``wait_until_ready`` when ``what`` was still not ready after ``timeout``."""
    detail = f" (last error: {last})" if last is not None else ""
    return InferenceServerDeadlineExceededError(
        f"{what} not ready after {timeout:g} s{detail}", "StatusCode.DEADLINE_EXCEEDED"
    )


class ClientBase(PluginSlot):
    """What both clients are but their driver (``_run``): set-up, plugins and headers, and
    each call made ready to go (:meth:`_c_unary`, :meth:`_c_infer`)."""

    #: ``(grpc module, transport class, infer-stream class)``: what a client moves its calls
    #: with (``grpc`` or ``grpc.aio``, and the transport and stream classes over it).
    _driver: ClassVar[tuple[Any, Callable[[Any], Any], Callable[[Any, Any], Any]]]

    def __init__(
        self,
        url: str | Sequence[str],
        verbose: bool = False,
        ssl: bool = False,
        root_certificates: str | None = None,
        private_key: str | None = None,
        certificate_chain: str | None = None,
        creds: Any = None,
        keepalive_options: KeepAliveOptions | None = None,
        channel_args: Sequence[tuple[str, Any]] | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        infer_over_stream: bool = False,
    ) -> None:
        # Both clients' constructor (each class's docstring has the parameters): the arguments
        # checked, the transport of ``_driver`` opened (over several replicas a wrapper: see
        # :func:`~tritonclient._transport.grpc_replicas.open_transport`) with NVIDIA's
        # ``_channel`` beside it, and the stream that carries ``infer`` calls when
        # ``infer_over_stream``.
        self._plugin: InferenceServerClientPlugin | None = None
        self._verbose = bool(verbose)
        self._stub: Any = None
        #: The stream that carries ``infer`` calls (``infer_over_stream``), or None.
        self._infer_stream: Any = None
        self._retry_policy = check_retry_policy(retry_policy)
        check_infer_over_stream(url, infer_over_stream)
        grpc_module, transport_class, stream_class = self._driver
        tls = (ssl, root_certificates, private_key, certificate_chain, creds)
        #: The client's transport (``GrpcTransport`` or ``GrpcAioTransport``, or their replicas).
        self._transport: Any = open_transport(
            grpc_module, transport_class, url, tls, keepalive_options, channel_args
        )
        self._channel = self._transport.channel
        if infer_over_stream:
            self._infer_stream = stream_class(self._transport.stream_method(), parse_stream)
        self._closed = False

    @property
    def _client_stub(self) -> Any:
        """NVIDIA's ``GRPCInferenceServiceStub`` over the client's channel, made when first
        read (the client's own calls go through its transport, not through it)."""
        if self._stub is None:
            from tritonclient._proto import service_pb2_grpc

            self._stub = service_pb2_grpc.GRPCInferenceServiceStub(self._channel)  # type: ignore[no-untyped-call]
        return self._stub

    @_client_stub.setter
    def _client_stub(self, stub: Any) -> None:
        self._stub = stub

    # -- calls made ready for a driver ---------------------------------------------------------

    def _c_unary(
        self, call: Call[T], headers: Mapping[str, Any] | None, client_timeout: float | None
    ) -> UnaryCall[T]:
        """``call`` ready to go over the client's transport with ``headers`` (after the
        plugin) and ``client_timeout``.

        Raises
        ------
        InferenceServerException
            For a call made per server (shared-memory registration) on a client over
            several replicas.
        """
        self._transport.admit(call.rpc)
        metadata = self._get_metadata(headers)
        if self._verbose:
            print(f"{call.label}, metadata {metadata}\n{call.request}")
        policy = self._retry_policy if call.idempotent else None
        return UnaryCall(self, call, metadata, client_timeout, policy)

    def _c_infer(
        self,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str,
        outputs: Sequence[InferRequestedOutput] | None,
        options: InferOptions,
        transfer: tuple[float | None, Mapping[str, Any] | None, str | None],
        label: str = "infer",
    ) -> InferCall:
        """An inference call ready to go: over the stream (``infer_over_stream``) or unary,
        to the transport of its replica.

        Parameters
        ----------
        model_name, inputs, model_version, outputs
            As the client method's.
        options : InferOptions
            The method's ``request_id, sequence_id, sequence_start, sequence_end, priority,
            timeout, parameters`` (:func:`tritonclient._codec.types.infer_options`).
        transfer : tuple
            The method's ``client_timeout, headers, compression_algorithm``.
        label : str
            The method's name, for verbose output: ``"infer"``, or ``"async_infer"`` (always
            unary).

        Raises
        ------
        InferenceServerException
            For arguments the request cannot be made of (see :func:`encode_infer`), an
            unknown compression algorithm.
        """
        client_timeout, headers, compression_algorithm = transfer
        metadata = self._get_metadata(headers)
        data = self._infer_request(
            f"{label}, metadata {metadata}" if self._verbose else "",
            model_name,
            inputs,
            model_version,
            outputs,
            options,
        )
        requested = requested_outputs(outputs)
        stream = self._over_stream(headers, compression_algorithm) if label == "infer" else None
        if stream is not None:
            return InferCall(self, data, metadata, client_timeout, options, requested, stream)
        compression = compression_type(compression_algorithm)
        transport, named = self._transport.route(
            options.sequence_id, options.sequence_start, options.sequence_end
        )
        return InferCall(
            self,
            data,
            metadata,
            client_timeout,
            options,
            requested,
            None,
            transport,
            named,
            compression,
        )

    def _over_stream(self, headers: Any, compression_algorithm: str | None) -> Any:
        """The stream an ``infer`` call goes over (``infer_over_stream``), or None for a unary
        call: always without the option, and for a call with its own ``headers`` or
        compression (a stream has one set of headers and one compression)."""
        if headers is None and compression_algorithm is None:
            return self._infer_stream
        return None

    def _streamed_result(
        self, answer: Any, options: InferOptions, requested: Requested
    ) -> InferResult:
        """The result of an ``infer`` call carried over the stream
        (:func:`parse_streamed_infer`)."""
        result = parse_streamed_infer(answer, options.request_id, requested)
        if self._verbose:
            print(result.get_response())
        return result

    def replica_stats(self) -> list[ReplicaStats]:
        """The counters of each replica of a client over several replicas (gRPC's channelz).

        Not in NVIDIA's client.

        Returns
        -------
        list of tritonclient.utils.ReplicaStats
            One per replica gRPC connects to (see
            :meth:`tritonclient._transport.grpc_replicas.ChannelCounters.stats` for what
            gRPC counts). Empty for a client of one server.
        """
        return self._transport.replica_stats()  # type: ignore[no-any-return]

    def _get_metadata(self, headers: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
        """The gRPC metadata of a request: ``headers`` after the plugin saw them.

        Parameters
        ----------
        headers : dict or None
            Request headers (not modified).

        Returns
        -------
        tuple of (str, value)
            Keys in lower case, as gRPC metadata requires.
        """
        if headers is None and self._plugin is None:
            return ()
        request = Request(headers)
        if self._plugin is not None:
            self._plugin(request)
        return tuple((str(k).lower(), v) for k, v in request.headers.items())

    def _log(self, *parts: Any) -> None:
        if self._verbose:
            print(*parts)

    def _infer_request(
        self,
        label: str,
        model_name: str,
        inputs: Sequence[InferInput],
        model_version: str,
        outputs: Sequence[InferRequestedOutput] | None,
        options: InferOptions,
    ) -> bytes:
        """The wire form of an inference call's request (:func:`encode_infer`); when verbose,
        printed after ``label`` as the message (without its raw contents)."""
        data = encode_infer(model_name, inputs, model_version, outputs, options)
        if self._verbose:
            print(f"{label}\n{grpc_client.request_message(data)}")
        return data


class Ready(Protocol[T_co]):
    """A call ready to go, as a client's driver (``_run``) makes it: :meth:`send` (again as
    :attr:`policy` allows when it fails with UNAVAILABLE), its answer given to
    :meth:`finish`, or what :meth:`failed` makes of its error raised."""

    @property
    def policy(self) -> RetryPolicy | None: ...

    def send(self) -> Any: ...

    def finish(self, answer: Any) -> T_co: ...

    def failed(self, error: InferenceServerException) -> InferenceServerException: ...


class UnaryCall(Generic[T]):
    """A :class:`~tritonclient.grpc._calls.Call` ready to go (made by
    :meth:`ClientBase._c_unary`).

    A client's driver calls :meth:`send` (again as :attr:`policy` allows when it fails with
    UNAVAILABLE), then gives its answer to :meth:`finish`, or raises what :meth:`failed`
    makes of its error.
    """

    __slots__ = ("_call", "_client", "_how", "policy")

    def __init__(
        self,
        client: ClientBase,
        call: Call[T],
        metadata: tuple[tuple[str, Any], ...],
        timeout: float | None,
        policy: RetryPolicy | None,
    ) -> None:
        self._client = client
        self._call = call
        self._how = {"metadata": metadata, "timeout": timeout}
        self.policy = policy

    def send(self) -> Any:
        """The transport's unary call: the response's bytes (awaitable over ``grpc.aio``)."""
        call = self._call
        return self._client._transport.unary(call.rpc, call.request, **self._how)

    def finish(self, data: bytes) -> T:
        """The client method's result from the response's bytes."""
        call = self._call
        response = parse_reply(call.rpc, data)
        self._client._log(call.done if call.done is not None else response)
        return call.convert(response)

    def failed(self, error: InferenceServerException) -> InferenceServerException:
        """The error the method raises when the call failed with ``error``: the same."""
        return error


class InferCall:
    """An ``infer`` call ready to go (made by :meth:`ClientBase._c_infer`): the encoded
    request, over the client's stream (``stream``) or unary to ``transport``, and how its
    answer becomes the :class:`InferResult`.  Driven as :class:`UnaryCall`.
    """

    __slots__ = (
        "_client",
        "compression",
        "data",
        "metadata",
        "named",
        "options",
        "policy",
        "requested",
        "stream",
        "timeout",
        "transport",
    )

    def __init__(
        self,
        client: ClientBase,
        data: bytes,
        metadata: tuple[tuple[str, Any], ...],
        timeout: float | None,
        options: InferOptions,
        requested: Requested,
        stream: Any,
        transport: Any = None,
        named: Named | None = None,
        compression: Any = None,
    ) -> None:
        self._client = client
        self.data, self.metadata, self.timeout = data, metadata, timeout
        self.options = options
        #: What the call asked for, to check the answer with.
        self.requested = requested
        policy = client._retry_policy
        self.policy = None if policy is None else infer_retry_policy(policy, options)
        #: The stream that carries it (``infer_over_stream``), or None: unary to
        #: ``transport``, with ``compression``; ``named`` names its replica in its errors
        #: (a sequence pinned to one; None otherwise).
        self.stream = stream
        self.transport, self.named, self.compression = transport, named, compression

    def send(self) -> Any:
        """The transport's call: its answer (awaitable over ``grpc.aio``)."""
        if self.stream is not None:
            return self.stream.infer(self.data, metadata=self.metadata, timeout=self.timeout)
        return self.transport.infer(
            self.data, metadata=self.metadata, timeout=self.timeout, compression=self.compression
        )

    def finish(self, answer: Any) -> InferResult:
        """The :class:`InferResult` of the answer, checked against what the call asked for."""
        if self.stream is not None:
            return self._client._streamed_result(answer, self.options, self.requested)
        result = parse_infer(answer, self.requested)
        if self._client._verbose:
            print(result.get_response())
        return result

    def failed(self, error: InferenceServerException) -> InferenceServerException:
        """The error the method raises when the call failed with ``error``: for a sequence
        pinned to a replica, naming the replica (see
        :meth:`tritonclient._transport.grpc_replicas.SequencePins.failed`)."""
        if self.named is None:
            return error
        return self.named(error)


# ------------------------------------------------------------------------------------------
# Inference
# ------------------------------------------------------------------------------------------


def _checked_items(
    model_version: Any,
    inputs: Sequence[InferInput] | InferInput,
    outputs: Sequence[InferRequestedOutput] | InferRequestedOutput | None,
) -> tuple[Sequence[InferInput], Sequence[InferRequestedOutput] | None]:
    """The inputs and outputs of an inference call as sequences, after NVIDIA's checks (the
    version first, then each input, then each output)."""
    check_model_version(model_version)
    if isinstance(inputs, InferInput):
        inputs = [inputs]
    for item in inputs:
        if not isinstance(item, InferInput):
            raise_error(f"inputs must be InferInput objects, got {type(item).__name__}")
    if isinstance(outputs, InferRequestedOutput):
        outputs = [outputs]
    for out in outputs or ():
        if not isinstance(out, InferRequestedOutput):
            raise_error(f"outputs must be InferRequestedOutput objects, got {type(out).__name__}")
    return inputs, outputs


def encode_infer(
    model_name: str,
    inputs: Sequence[InferInput],
    model_version: str = "",
    outputs: Sequence[InferRequestedOutput] | None = None,
    options: InferOptions = NO_OPTIONS,
) -> bytes:
    """The wire form of an inference request, with the codec's one encoder
    (:func:`grpc_client.encode_infer_request`) and each input's and output's cached entry.

    Raises
    ------
    InferenceServerException
        For a non-string version, inputs/outputs of the wrong type, reserved or
        unsupported parameters, inputs without data.
    """
    inputs, outputs = _checked_items(model_version, inputs, outputs)
    return grpc_client.encode_infer_request(
        model_name,
        [item._codec_tensor() for item in inputs],
        None if outputs is None else [out._codec_output() for out in outputs],
        model_version,
        options,
    )


def serialize_request(data: bytes) -> bytes:
    """Request serializer of the infer methods: the request is already in wire form."""
    return data


def requested_outputs(
    outputs: Sequence[InferRequestedOutput] | InferRequestedOutput | None,
) -> Requested:
    """What an inference call asked for, to check its response with (outputs already checked
    by :func:`encode_infer`)."""
    if outputs is None:
        return _EVERY_OUTPUT
    if isinstance(outputs, InferRequestedOutput):
        outputs = [outputs]
    return Requested({out._name: out._shm is not None for out in outputs})


#: A request that names no outputs: the server returns every one, none in shared memory.
_EVERY_OUTPUT = Requested(None)


def parse_infer(data: bytes, requested: Requested | None = None) -> InferResult:
    """An :class:`InferResult` over a ``ModelInfer`` response, checked and decoded.

    Parameters
    ----------
    data : bytes
        The wire form of the ``ModelInferResponse``.
    requested : Requested, optional
        The outputs the call asked for (see :func:`grpc_client.check_infer_response`).

    Raises
    ------
    InferenceServerProtocolError
        If the message does not parse, or does not hold what it says.
    """
    small = len(data) <= grpc_framing.SMALL_MESSAGE_BYTES
    if small and type(data) is bytes:
        # The same model's usual answer: the outputs of a layout checked before, as views
        # of the wire bytes (the message, parsed before in the same form, parses again).
        known = grpc_client.known_infer_outputs(data, requested)
        if known is not None:
            return InferResult(service_pb2.ModelInferResponse.FromString(data), None, known)
    try:
        if small:
            # Small: protobuf parses it all at once (the raw contents stay in the message).
            message = service_pb2.ModelInferResponse.FromString(data)
            raw = None
        else:
            message, raw = grpc_framing.parse_infer_response(data)
    except Exception as exc:  # DecodeError, ValueError: whatever the bytes were
        raise response_fault(f"the ModelInferResponse message does not parse ({exc})") from None
    outputs = grpc_client.check_infer_response(message, raw, requested)
    if small and type(data) is bytes:
        grpc_client.remember_infer_layout(data, message, outputs)
    return InferResult(message, raw, outputs)


def parse_streamed_infer(
    answer: tuple[tuple[Any, list[memoryview] | None], str],
    request_id: str,
    requested: Requested | None = None,
) -> InferResult:
    """The :class:`InferResult` of an ``infer`` carried over a stream (``infer_over_stream``),
    as the unary call gives it: the caller's request id, no ``triton_final_response``
    parameter, the error of a failed request raised as the unary call would (see
    :func:`grpc_client.streamed_infer_response`).

    Parameters
    ----------
    answer : tuple
        ``((ModelStreamInferResponse, raw contents), id the request was sent with)``, as
        :meth:`tritonclient._transport.grpc_infer_stream.InferStream.infer` returns it.
    request_id : str
        The caller's request id.
    requested : Requested, optional
        The outputs the call asked for (see :func:`parse_infer`).
    """
    (message, raw), tag = answer
    try:
        response = grpc_client.streamed_infer_response(message, tag, request_id)
    except InferenceServerException as error:
        raise server_error_with_hint(error) from None
    outputs = grpc_client.check_infer_response(response, raw, requested)
    return InferResult(response, raw, outputs)


def parse_stream(
    data: bytes,
) -> tuple[service_pb2.ModelStreamInferResponse, list[memoryview] | None]:
    """A ``ModelStreamInfer`` response from its wire bytes: a small one parsed by protobuf at
    once (its raw contents stay in the message: None), a large one with its raw contents
    split off as views of ``data`` (as :func:`parse_infer`).

    Raises
    ------
    InferenceServerProtocolError
        If ``data`` is not such a message: the stream cannot go on (which request it
        answered is unknown).
    """
    try:
        if len(data) <= grpc_framing.SMALL_MESSAGE_BYTES:
            # protobuf's C parser, instead of splitting the fields in Python first.
            return service_pb2.ModelStreamInferResponse.FromString(data), None
        return grpc_framing.parse_stream_response(data)
    except Exception as exc:  # DecodeError, ValueError: whatever the bytes were
        raise InferenceServerProtocolError(
            f"invalid stream response: the ModelStreamInferResponse message does not parse "
            f"({exc}); the stream is ended"
        ) from None


def stream_item(
    parsed: tuple[service_pb2.ModelStreamInferResponse, list[memoryview] | None],
) -> tuple[InferResult | None, InferenceServerException | None]:
    """One stream response as the ``(result, error)`` pair given to the user.

    Parameters
    ----------
    parsed : tuple
        What :func:`parse_stream` returned.

    Returns
    -------
    tuple of (InferResult or None, InferenceServerException or None)
        An error (no status) when the response carries ``error_message``, or when its outputs
        do not hold what they say (:class:`InferenceServerProtocolError`; the stream goes
        on).
    """
    message, raw = parsed
    if message.error_message:
        return None, grpc_common.exception_from_stream_error(message.error_message)
    response = message.infer_response
    try:
        outputs = grpc_client.check_infer_response(response, raw)
    except InferenceServerException as error:
        if response.id:
            with_note(error, f"in the response to request id {response.id!r}")
        return None, error
    return InferResult(response, raw, outputs), None


_STREAM_KEYS = frozenset(
    {
        "model_name",
        "inputs",
        "model_version",
        "outputs",
        "request_id",
        "sequence_id",
        "sequence_start",
        "sequence_end",
        "priority",
        "timeout",
        "parameters",
        "enable_empty_final_response",
    }
)


def infer_request_from_dict(item: Any) -> bytes:
    """Build a stream request from one dict yielded to ``aio`` ``stream_infer``.

    Parameters
    ----------
    item : dict
        ``model_name`` and ``inputs`` (required), and optionally ``model_version``,
        ``outputs``, ``request_id``, ``sequence_id``, ``sequence_start``, ``sequence_end``,
        ``priority``, ``timeout``, ``parameters``, ``enable_empty_final_response``.

    Raises
    ------
    InferenceServerException
        If ``item`` is not such a dict.
    """
    if not isinstance(item, dict):
        raise_error(
            "inputs_iterator is not yielding a dict",
            hint=f"it yielded a {type(item).__name__}: yield the arguments of async_stream_infer",
        )
    if "model_name" not in item or "inputs" not in item:
        raise_error("model_name and/or inputs is missing from inputs_iterator's yielded dict")
    if not _STREAM_KEYS.issuperset(item):
        raise_error(
            f"unexpected keys {sorted(set(item) - _STREAM_KEYS)} in inputs_iterator's yielded "
            f"dict; expected some of {sorted(_STREAM_KEYS)}"
        )
    given = _OPTION_KEYS.intersection(item)
    # The usual item names no option: no InferOptions to make (the encoder's fast path).
    options = InferOptions(**{key: item[key] for key in given}) if given else NO_OPTIONS
    return encode_infer(
        item["model_name"],
        item["inputs"],
        item.get("model_version", ""),
        item.get("outputs"),
        options,
    )


_OPTION_KEYS = frozenset(field.name for field in dataclasses.fields(InferOptions))
