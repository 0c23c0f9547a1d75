"""Steps of a differential case and the records they leave, for HTTP, gRPC and shared memory.

A case is a list of steps. :func:`run_case` performs them in order against one server and
returns one record per step: what the server answered, as plain JSON-able data, after
:mod:`tests.conformance.normalize` has replaced what must differ between two servers (timings,
versions). Running a case against both servers and comparing the two record lists is the
differential test.

Requests are sent with the standard library's ``http.client`` and raw grpcio calls, not with a
Triton client, so that every byte is the case's own and neither client's encoder hides a
difference.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import http.client
import json
import os
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from shm import posix
from tests.conformance.normalize import normalize_json, normalize_text
from tests.conformance.pair import Endpoint
from tritonclient.grpc import service_pb2

TIMEOUT = 30.0
SERVICE = "inference.GRPCInferenceService"
_BINARY_SHOWN = 256  # a binary tail longer than this is recorded as length + sha256


# -- steps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class H:
    """One HTTP request. ``body`` may be bytes, text, or JSON data (dumped compactly).

    ``binary`` is appended after a JSON body, with ``Inference-Header-Content-Length`` set to
    the JSON's length unless ``headers`` sets it. Strings may hold ``{key:NAME}``, replaced by
    the system shared-memory key made for NAME by a :class:`Shm` step.
    """

    method: str
    path: str
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    binary: bytes | None = None
    port: str = "http"  # "http" or "metrics"
    #: Top-level members of a JSON answer that legitimately differ between the servers (the
    #: server's own version); replaced by "<differs>" before the comparison.
    volatile: tuple[str, ...] = ()


@dataclass(frozen=True)
class G:
    """One unary gRPC call: ``request`` is a message, raw bytes, or a function of the context."""

    rpc: str
    request: Message | bytes | Callable[[Context], Message]
    metadata: tuple[tuple[str, str], ...] = ()
    service: str = SERVICE
    #: Top-level response fields that legitimately differ (see :attr:`H.volatile`).
    volatile: tuple[str, ...] = ()


@dataclass(frozen=True)
class GS:
    """A ``ModelStreamInfer`` stream: send ``requests``, half-close, read to the end."""

    requests: Sequence[Message | bytes | Callable[[Context], Message]]
    metadata: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Shm:
    """Create system shared memory NAME (a fresh key per run) of ``size`` bytes holding ``data``."""

    name: str
    size: int
    data: bytes = b""


@dataclass(frozen=True)
class ShmRead:
    """Record ``size`` bytes of region NAME from ``offset`` (what a server wrote there)."""

    name: str
    offset: int = 0
    size: int | None = None


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds`` before the next step (no record): for what a server does after it has
    answered, such as Triton 2.51 counting a decoupled request in its statistics once the
    model's ``execute`` has returned, which may be after the client has the final response."""

    seconds: float


Step = H | G | GS | Shm | ShmRead | Pause


@dataclass
class Context:
    """What one run of a case against one server needs."""

    server: Endpoint
    case_key: str = ""
    regions: dict[str, posix.MappedRegion] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    channel: grpc.Channel | None = None

    def key(self, name: str) -> str:
        return self.keys[name]

    def expand(self, text: str) -> str:
        for name, key in self.keys.items():
            text = text.replace(f"{{key:{name}}}", key)
        return text


# -- records -----------------------------------------------------------------------------------


def _binary_record(data: bytes) -> Any:
    if len(data) <= _BINARY_SHOWN:
        return {"hex": data.hex()}
    return {"len": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _decode_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _binary_record(raw)
    if content_type.startswith("text/event-stream"):
        return [_event(e) for e in text.split("\n\n") if e.strip()]
    try:
        return normalize_json(json.loads(text))
    except ValueError:
        return normalize_text(text)


def _event(text: str) -> Any:
    lines = text.split("\n")
    if all(line.startswith("data: ") for line in lines):
        data = "\n".join(line[len("data: ") :] for line in lines)
        with contextlib.suppress(ValueError):
            return {"data": normalize_json(json.loads(data))}
    return {"raw": normalize_text(text)}


def _http(ctx: Context, step: H) -> dict[str, Any]:
    host = ctx.server.metrics if step.port == "metrics" else ctx.server.http
    body: bytes | None
    headers = {k: ctx.expand(v) for k, v in step.headers}
    if step.body is None:
        body = None
    elif isinstance(step.body, bytes):
        body = step.body
    elif isinstance(step.body, str):
        body = ctx.expand(step.body).encode()
    else:
        body = ctx.expand(json.dumps(step.body, separators=(",", ":"))).encode()
    if step.binary is not None:
        headers.setdefault("Inference-Header-Content-Length", str(len(body or b"")))
        body = (body or b"") + step.binary
    conn = http.client.HTTPConnection(host, timeout=TIMEOUT)
    try:
        try:
            conn.request(step.method, ctx.expand(step.path), body=body, headers=headers)
            response = conn.getresponse()
        except (ConnectionError, http.client.RemoteDisconnected) as exc:
            # A server that died (Triton's crash cases): what the client saw is the record.
            return {"connection": type(exc).__name__}
        raw = response.read()
        status = response.status
        content_type = (response.getheader("Content-Type") or "").replace(" ", "").lower()
        encoding = response.getheader("Content-Encoding")
        ihcl = response.getheader("Inference-Header-Content-Length")
    finally:
        conn.close()
    record: dict[str, Any] = {"status": status, "content_type": content_type}
    if encoding:
        record["content_encoding"] = encoding
        raw = gzip.decompress(raw) if encoding == "gzip" else zlib.decompress(raw)
    if ihcl is not None:
        record["inference_header_content_length"] = "present"
        split = int(ihcl)
        record["body"] = _decode_body(raw[:split], "application/json")
        record["binary"] = _binary_record(raw[split:])
    else:
        record["body"] = _decode_body(raw, content_type)
    if isinstance(record["body"], dict):
        for key in step.volatile:
            if key in record["body"]:
                record["body"][key] = "<differs>"
    return record


def _message(ctx: Context, request: Message | bytes | Callable[[Context], Message]) -> Any:
    return request(ctx) if callable(request) else request


def _serialize(message: Message | bytes) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def _response_class(rpc: str, service: str) -> type[Message]:
    if service == SERVICE:
        cls: type[Message] = getattr(service_pb2, f"{rpc}Response")
        return cls
    from grpc_health.v1 import health_pb2

    return health_pb2.HealthCheckResponse  # type: ignore[no-any-return]


def _message_record(message: Message) -> Any:
    return normalize_json(
        json_format.MessageToDict(message, preserving_proto_field_name=True),
    )


def _error_record(exc: grpc.RpcError) -> dict[str, Any]:
    return {
        "code": exc.code().name,  # type: ignore[attr-defined]
        "details": normalize_text(exc.details() or ""),  # type: ignore[attr-defined]
    }


def _grpc(ctx: Context, step: G) -> dict[str, Any]:
    assert ctx.channel is not None
    call = ctx.channel.unary_unary(
        f"/{step.service}/{step.rpc}",
        request_serializer=_serialize,
        response_deserializer=_response_class(step.rpc, step.service).FromString,
    )
    try:
        response, state = call.with_call(
            _message(ctx, step.request), timeout=TIMEOUT, metadata=step.metadata or None
        )
    except grpc.RpcError as exc:
        return _error_record(exc)
    record: dict[str, Any] = {"code": "OK", "response": _message_record(response)}
    for key in step.volatile:
        if key in record["response"]:
            record["response"][key] = "<differs>"
    trailing = [(k, v) for k, v in (state.trailing_metadata() or ())]
    if trailing:
        record["trailing_metadata"] = trailing
    return record


def _grpc_stream(ctx: Context, step: GS) -> dict[str, Any]:
    assert ctx.channel is not None
    call = ctx.channel.stream_stream(
        f"/{SERVICE}/ModelStreamInfer",
        request_serializer=_serialize,
        response_deserializer=service_pb2.ModelStreamInferResponse.FromString,
    )
    requests = [_message(ctx, r) for r in step.requests]
    responses: list[Any] = []
    stream = call(iter(requests), timeout=TIMEOUT, metadata=step.metadata or None)
    record: dict[str, Any] = {}
    try:
        for response in stream:
            responses.append(_message_record(response))
        record["code"] = "OK"
    except grpc.RpcError as exc:
        record.update(_error_record(exc))
    record["responses"] = _order_stream(responses)
    return record


def _order_stream(responses: list[Any]) -> list[Any]:
    """Responses of different requests may interleave: keep each request's own order only."""
    by_id: dict[str, list[Any]] = {}
    for response in responses:
        rid = str(response.get("infer_response", {}).get("id", ""))
        by_id.setdefault(rid, []).append(response)
    return [r for rid in sorted(by_id) for r in by_id[rid]]


def _shm_create(ctx: Context, step: Shm) -> None:
    # The same key in both runs (they never overlap), so answers that echo it compare equal;
    # the process id keeps concurrent test sessions apart.
    key = f"/conformance_{os.getpid()}_{ctx.case_key}_{step.name}"
    posix.unlink(key)  # left by an interrupted run
    region = posix.create(key, step.size, create_only=True)
    ctx.regions[step.name] = region
    ctx.keys[step.name] = key
    region.buffer[: len(step.data)] = step.data


def _shm_read(ctx: Context, step: ShmRead) -> dict[str, Any]:
    region = ctx.regions[step.name]
    end = region.byte_size if step.size is None else step.offset + step.size
    return {"shm": step.name, "data": _binary_record(bytes(region.buffer[step.offset : end]))}


@contextlib.contextmanager
def context(server: Endpoint, case_key: str = "") -> Iterator[Context]:
    """A context for one run; closes its channel and removes its regions afterwards."""
    ctx = Context(server, case_key)
    ctx.channel = grpc.insecure_channel(
        server.grpc,
        options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
    )
    try:
        yield ctx
    finally:
        ctx.channel.close()
        for region in ctx.regions.values():
            region.close()
            posix.unlink(region.key)


def run_case(server: Endpoint, steps: Sequence[Step], case_id: str = "") -> list[Any]:
    """Perform ``steps`` against ``server``; one record per step (set-up steps leave none)."""
    records: list[Any] = []
    case_key = hashlib.sha256(case_id.encode()).hexdigest()[:12]
    with context(server, case_key) as ctx:
        for step in steps:
            if isinstance(step, H):
                records.append(_http(ctx, step))
            elif isinstance(step, G):
                records.append(_grpc(ctx, step))
            elif isinstance(step, GS):
                records.append(_grpc_stream(ctx, step))
            elif isinstance(step, Shm):
                _shm_create(ctx, step)
            elif isinstance(step, ShmRead):
                records.append(_shm_read(ctx, step))
            elif isinstance(step, Pause):
                time.sleep(step.seconds)
            else:  # pragma: no cover - a corpus error
                raise TypeError(f"unknown step {step!r}")
    return records


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
