"""The compatibility profile: mock_server behaves as Triton 2.73 by default, as 2.51 on request.

Each 2.73 behaviour is tested against what Triton's server source says at the 2.73.0 branch
point (``triton-inference-server/server``, the file and line are in each test's docstring); the
2.51 behaviour is checked against the real Triton 2.51 by the differential suite
(``tests/conformance``, which runs mock_server with ``--triton-compat 2.51``), so here it is only
checked that the 2.51 profile turns the 2.73 behaviour off.
"""

from __future__ import annotations

import base64
import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from mock_server.__main__ import build_parser, options_from_args
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.compat import (
    DEFAULT_COMPAT,
    TRITON_2_51,
    TRITON_2_73,
    TritonCompat,
    compat_profile,
)
from mock_server.core.server import ServerOptions
from tests.test_cli import serve
from tritonclient.utils import TRITON_RESERVED_REQUEST_PARAMS, InferenceServerException

#: src/common.h:51-53 (kClientShmDisabledErrorStr), 2.73.0
SHM_DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)
PORTS = {"http_port": 0, "grpc_port": 0, "metrics_port": 0}


def _server(compat: str, **options: object) -> MockServer:
    return MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], triton_compat=compat, **options),  # type: ignore[arg-type]
        FrontendOptions(**PORTS),
    )


@pytest.fixture(scope="module")
def server_273() -> Iterator[MockServer]:
    with _server("2.73") as server:
        yield server


@pytest.fixture(scope="module")
def server_273_shm() -> Iterator[MockServer]:
    with _server("2.73", allow_client_shm=True) as server:
        yield server


@pytest.fixture(scope="module")
def server_251() -> Iterator[MockServer]:
    with _server("2.51") as server:
        yield server


def _client(
    server: MockServer, protocol: str
) -> httpclient.InferenceServerClient | grpcclient.InferenceServerClient:
    if protocol == "http":
        return httpclient.InferenceServerClient(server.http_url)
    return grpcclient.InferenceServerClient(server.grpc_url)


# -- the profile itself ------------------------------------------------------------------------


def test_profiles_by_version() -> None:
    assert DEFAULT_COMPAT is TRITON_2_73
    assert compat_profile("2.73") is TRITON_2_73
    assert compat_profile(" 2.51 ") is TRITON_2_51
    assert compat_profile(TRITON_2_51) is TRITON_2_51
    with pytest.raises(ValueError, match=r"unknown Triton compatibility version '2\.60'"):
        compat_profile("2.60")


def test_every_behaviour_differs_between_the_profiles() -> None:
    """A field that is the same in both profiles decides nothing: it should not exist."""
    for name in TritonCompat.__dataclass_fields__:
        assert getattr(TRITON_2_73, name) != getattr(TRITON_2_51, name), name


def test_command_line_default_and_flag() -> None:
    parser = build_parser()
    core, _ = options_from_args(parser.parse_args([]))
    assert core.triton_compat == "2.73" and core.allow_client_shm is None
    core, _ = options_from_args(parser.parse_args(["--triton-compat", "2.51"]))
    assert core.triton_compat == "2.51"
    core, _ = options_from_args(parser.parse_args(["--allow-client-shm=true"]))
    assert core.allow_client_shm is True
    with pytest.raises(SystemExit):
        parser.parse_args(["--triton-compat", "2.60"])


def test_in_process_api_option(tmp_path: Path) -> None:
    from mock_server.api import InvalidArgumentError, Options

    assert Options(model_repository=str(tmp_path))._core_options().triton_compat is TRITON_2_73
    options = Options(model_repository=str(tmp_path), triton_compat="2.51")
    assert options._core_options().triton_compat is TRITON_2_51
    with pytest.raises(InvalidArgumentError, match=r"2\.60"):
        Options(model_repository=str(tmp_path), triton_compat="2.60")._core_options()


# -- client shared memory (#8721) --------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_client_shm_refused_by_default(server_273: MockServer, protocol: str) -> None:
    """Without ``--allow-client-shm=true`` register and unregister of system and CUDA regions
    answer UNSUPPORTED with Triton's text; status still answers, with no region.

    2.73.0: src/command_line_parser.h:244 (``allow_client_shm_{false}``); src/http_server.cc:2255
    and :2305 (system register, unregister), :2350 and :2415 (CUDA), status at :2242 not gated;
    src/grpc/grpc_server.cc:1742, :1787, :1901, :1956; the text is src/common.h:51-53.
    """
    client = _client(server_273, protocol)
    region = shm.create_shared_memory_region("compat_refused", "/compat_refused", 64)
    try:
        calls = [
            lambda: client.register_system_shared_memory("r", "/compat_refused", 64),
            lambda: client.unregister_system_shared_memory("r"),
            lambda: client.unregister_system_shared_memory(),
            lambda: client.register_cuda_shared_memory("r", base64.b64encode(bytes(64)), 0, 64),
            lambda: client.unregister_cuda_shared_memory(),
        ]
        for call in calls:
            with pytest.raises(InferenceServerException) as error:
                call()
            assert SHM_DISABLED in error.value.message()
            assert error.value.status() == (
                "501" if protocol == "http" else "StatusCode.UNIMPLEMENTED"
            )
        status = client.get_system_shared_memory_status()
        assert (status if protocol == "http" else list(status.regions)) == []
        status = client.get_cuda_shared_memory_status()
        assert (status if protocol == "http" else list(status.regions)) == []
        # An input placed in a region the server has not got: the usual lookup error.
        inputs = [_shm_input(protocol, "INPUT0", "r"), _shm_input(protocol, "INPUT1", "r")]
        with pytest.raises(
            InferenceServerException, match="Unable to find shared memory region: 'r'"
        ):
            client.infer("simple", inputs)
    finally:
        shm.destroy_shared_memory_region(region)
        client.close()


def _shm_input(
    protocol: str, name: str, region: str
) -> httpclient.InferInput | grpcclient.InferInput:
    module = httpclient if protocol == "http" else grpcclient
    tensor = module.InferInput(name, [1, 16], "INT32")
    tensor.set_shared_memory(region, 64)
    return tensor


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("which", ["server_273_shm", "server_251"])
def test_client_shm_allowed(request: pytest.FixtureRequest, which: str, protocol: str) -> None:
    """``--allow-client-shm=true`` (2.73) or the 2.51 profile, which has no gate: our client's
    shared-memory round trip works."""
    server: MockServer = request.getfixturevalue(which)
    client = _client(server, protocol)
    key = f"/compat_ok_{which}_{protocol}"
    region = shm.create_shared_memory_region("compat_ok", key, 128)
    try:
        data = np.arange(16, dtype=np.int32)
        shm.set_shared_memory_region(region, [data, np.ones(16, dtype=np.int32)])
        client.register_system_shared_memory("compat_ok", key, 128)
        module = httpclient if protocol == "http" else grpcclient
        inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        inputs[0].set_shared_memory("compat_ok", 64)
        inputs[1].set_shared_memory("compat_ok", 64, offset=64)
        result = client.infer("simple", inputs)
        assert result.as_numpy("OUTPUT0").tolist() == [(data + 1).tolist()]
        client.unregister_system_shared_memory()
    finally:
        shm.destroy_shared_memory_region(region)
        client.close()


def test_python_m_mock_server_alone_refuses_client_shm(tmp_path: Path) -> None:
    """``python -m mock_server`` with no flag is Triton 2.73: client shared memory is refused
    (HTTP 501 and Triton's JSON error); ``--triton-compat 2.51`` allows it."""
    body = json.dumps({"key": "/compat_cli", "offset": 0, "byte_size": 8}).encode()
    region = shm.create_shared_memory_region("compat_cli", "/compat_cli", 8)
    try:
        for args, allowed in (((), False), (("--triton-compat", "2.51"), True)):
            with serve(tmp_path, *args) as info:
                base = f"http://127.0.0.1:{info['http']}/v2/systemsharedmemory"
                request = urllib.request.Request(
                    f"{base}/region/r/register", method="POST", data=body
                )
                if allowed:
                    try:
                        with urllib.request.urlopen(request, timeout=10) as reply:
                            assert reply.status == 200
                    except urllib.error.HTTPError as refused:
                        # The server's words, so that a failure says why.
                        pytest.fail(f"register refused: {refused.code} {refused.read()!r}")
                else:
                    with pytest.raises(urllib.error.HTTPError) as error:
                        urllib.request.urlopen(request, timeout=10)
                    assert error.value.code == 501
                    assert json.loads(error.value.read()) == {"error": SHM_DISABLED}
                with urllib.request.urlopen(f"{base}/status", timeout=10) as reply:
                    listed = json.loads(reply.read())
                assert [r["name"] for r in listed] == (["r"] if allowed else [])
    finally:
        shm.destroy_shared_memory_region(region)


# -- forwarded headers named like reserved parameters (#8763) -----------------------------------

#: A pattern that forwards every header these tests send.
FORWARD_ALL = "^(x-|sequence_|priority|timeout|headers|binary_|triton_|Triton_)"
RESERVED_HEADERS = (
    *TRITON_RESERVED_REQUEST_PARAMS,
    "triton_x",
    "triton_enable_empty_final_response",
)


def _forwarding_server(compat: str) -> MockServer:
    return MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], triton_compat=compat),
        FrontendOptions(
            **PORTS,
            http_header_forward_pattern=FORWARD_ALL,
            grpc_header_forward_pattern=FORWARD_ALL,
        ),
    )


def _simple_inputs(protocol: str) -> list[httpclient.InferInput] | list[grpcclient.InferInput]:
    module = httpclient if protocol == "http" else grpcclient
    inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    return inputs  # type: ignore[return-value]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_reserved_forwarded_headers_refused(protocol: str) -> None:
    """A header that the forward pattern matches and that is named like a reserved parameter
    (compared as received, case-sensitively) or starts ``triton_`` is refused with INVALID_ARG
    "Header 'X' is reserved for Triton usage and cannot be forwarded."; other matching headers
    are forwarded, and the server keeps serving.

    2.73.0: src/common.h:75-77 (``kReservedParameterKeys``); src/http_server.cc:3244-3262
    (``ForEachHeader``: ``std::find`` over the keys, ``header_key.rfind("triton_", 0) == 0``);
    src/grpc/infer_handler.h:1595-1615 (``ForwardHeadersAsParameters``, the same checks on the
    call's metadata).
    """
    with _forwarding_server("2.73") as server:
        client = _client(server, protocol)
        try:
            for name in RESERVED_HEADERS:
                with pytest.raises(InferenceServerException) as error:
                    client.infer("simple", _simple_inputs(protocol), headers={name: "1"})
                assert error.value.message() == (
                    f"Header '{name}' is reserved for Triton usage and cannot be forwarded."
                )
                assert error.value.status() == (
                    "400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT"
                )
            result = client.infer("simple", _simple_inputs(protocol), headers={"x-fine": "1"})
            assert result.as_numpy("OUTPUT0").tolist() == [[2] * 16]
        finally:
            client.close()


def test_reserved_header_names_compare_as_received() -> None:
    """HTTP header names are compared as the client spelled them: ``Triton_x`` is not the
    reserved prefix, and is forwarded (``rfind("triton_", 0)`` in src/http_server.cc:3256 of
    2.73.0 is case-sensitive); ``priority``, which aiohttp's parser knows as ``Priority``, is
    still refused under its received name."""
    with _forwarding_server("2.73") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            result = client.infer("simple", _simple_inputs("http"), headers={"Triton_x": "1"})
            assert result.as_numpy("OUTPUT0") is not None
            with pytest.raises(InferenceServerException, match="Header 'priority' is reserved"):
                client.infer("simple", _simple_inputs("http"), headers={"priority": "1"})
        finally:
            client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_reserved_forwarded_headers_under_2_51(protocol: str) -> None:
    """The 2.51 profile forwards them, as the real Triton 2.51 does (the differential cases
    ``forward-reserved/*`` compare it with the peer)."""
    with _forwarding_server("2.51") as server:
        client = _client(server, protocol)
        try:
            for name in RESERVED_HEADERS:
                result = client.infer("simple", _simple_inputs(protocol), headers={name: "1"})
                assert result.as_numpy("OUTPUT0").tolist() == [[2] * 16]
        finally:
            client.close()


# -- duplicate requested outputs (#8741) --------------------------------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_duplicate_output_names_refused(server_273: MockServer, protocol: str) -> None:
    """A request naming an output twice is refused: "output 'OUTPUT0' already exists in
    request" (INVALID_ARG), and the server stays live.

    2.73.0: qa/L0_grpc/python_unit_test.py:53-78 (``GrpcTest.test_duplicate_output_names_
    rejected``) and qa/L0_http/http_test.py:463-501 (``test_duplicate_output_names``), added
    with the check by #8741 (the check is in the core's requested-output set).
    """
    module = httpclient if protocol == "http" else grpcclient
    client = _client(server_273, protocol)
    try:
        outputs = [module.InferRequestedOutput("OUTPUT0") for _ in range(2)]
        with pytest.raises(InferenceServerException) as error:
            client.infer("simple", _simple_inputs(protocol), outputs=outputs)  # type: ignore[arg-type]
        # Triton's QA checks the words (assertIn); the request prefix is the one the core puts
        # before its duplicate-input error.
        assert error.value.message() == (
            "[request id: <id_unknown>] output 'OUTPUT0' already exists in request"
        )
        assert error.value.status() == (
            "400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT"
        )
        assert client.is_server_live()
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_duplicate_output_names_under_2_51(server_251: MockServer, protocol: str) -> None:
    """2.51 keeps requested outputs in a set: the output comes back once (the differential
    cases ``*/infer/duplicate-output`` compare it with the peer)."""
    module = httpclient if protocol == "http" else grpcclient
    client = _client(server_251, protocol)
    try:
        outputs = [module.InferRequestedOutput("OUTPUT0") for _ in range(2)]
        result = client.infer("simple", _simple_inputs(protocol), outputs=outputs)  # type: ignore[arg-type]
        assert result.as_numpy("OUTPUT0").tolist() == [[2] * 16]
    finally:
        client.close()


# -- reserved parameters in generate ----------------------------------------------------------


def _generate(server: MockServer, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/simple/generate",
        method="POST",
        data=json.dumps(body).encode(),
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "triton_x",
            "parameter keys starting with 'triton_' are reserved for Triton usage and should "
            "not be specified.",
        ),
        ("sequence_id", None),
    ],
)
def test_generate_reserved_keys(
    server_273: MockServer, server_251: MockServer, key: str, message: str | None
) -> None:
    """A generate request's unknown key becomes a request parameter
    (src/http_server.cc:3670 of 2.73.0, ``SetTritonParameterFromJsonParameter``); one named
    like a reserved parameter is refused by 2.73, delivered to the model by 2.51 (the
    differential cases ``http/generate/reserved-key-*`` compare that with the peer)."""
    body = {"INPUT0": list(range(16)), "INPUT1": [1] * 16, key: 5}
    status, answer = _generate(server_273, body)
    assert status == 400
    if message is None:
        message = f"parameter '{key}' is reserved for Triton usage and should not be specified."
    assert answer == {"error": message}
    status, answer = _generate(server_251, body)
    assert status == 200 and answer["OUTPUT0"] == list(range(1, 17))


# -- --http-max-input-size ----------------------------------------------------------------------


def _post(
    server: MockServer, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"http://{server.http_url}{path}", method="POST", data=body, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_http_max_input_size_default_by_profile() -> None:
    """Not given, ``--http-max-input-size`` is 64 MiB under 2.73 (src/common.h:69,
    ``HTTP_DEFAULT_MAX_INPUT_SIZE = 1 << 26``; src/command_line_parser.h:202) and no limit
    under 2.51, which has neither the flag nor a limit (its src/http_server.cc reads any
    body); given, it is what it says, and it must be positive
    (src/command_line_parser.cc:1411-1418)."""
    from mock_server.core.server import CoreServer

    core, frontends = options_from_args(build_parser().parse_args([]))
    assert frontends.http_max_input_size is None
    assert CoreServer(core).http_max_input_size(None) == 1 << 26
    assert CoreServer(ServerOptions(triton_compat="2.51")).http_max_input_size(None) is None
    assert CoreServer(ServerOptions(triton_compat="2.51")).http_max_input_size(10) == 10
    with pytest.raises(ValueError, match="must be greater than 0"):
        CoreServer(core).http_max_input_size(0)


def test_http_max_input_size_default_refuses_a_larger_body(
    server_273: MockServer, server_251: MockServer
) -> None:
    """A gzip body that inflates past the default 64 MiB is refused under 2.73 with
    ``DecompressData``'s words naming the flag (src/data_compressor.h:258-265, 2.73.0, called
    with ``max_input_size_`` at src/http_server.cc:3330-3332); 2.51 inflates it all and reads
    it (then fails to parse it as JSON: a body that is not what the model takes)."""
    import gzip

    body = gzip.compress(bytes((1 << 26) + 1), compresslevel=1)
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"}
    status, answer = _post(server_273, "/v2/models/identity_uint8/infer", body, headers)
    assert (status, answer) == (
        400,
        {
            "error": "Decompressed data size exceeds the maximum allowed value of 67108864 "
            "bytes. Use --http-max-input-size to increase the limit."
        },
    )
    status, answer = _post(server_251, "/v2/models/identity_uint8/infer", body, headers)
    assert status == 500 and "Decompressed" not in str(answer["error"])


def test_http_max_input_size_texts() -> None:
    """A JSON request part or a raw binary body over the limit, with 2.73's words:
    src/http_server.cc:3170-3177 (``EVBufferToJson``: "request JSON size of N bytes exceeds
    the maximum allowed input size of M bytes. Use --http-max-input-size to increase the
    limit.") and :3091-3099 (``EVBufferToRawInput``: "Raw input has a byte_size (N bytes)
    that exceeds the maximum allowed value of M bytes. ...")."""
    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS]),
        FrontendOptions(**PORTS, http_max_input_size=256),
    ) as server:
        inputs = [
            {"name": n, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
            for n in ("INPUT0", "INPUT1")
        ]
        body = json.dumps({"inputs": inputs}).encode()
        status, answer = _post(server, "/v2/models/simple/infer", body)
        assert (status, answer) == (
            400,
            {
                "error": f"request JSON size of {len(body)} bytes exceeds the maximum allowed "
                "input size of 256 bytes. Use --http-max-input-size to increase the limit."
            },
        )
        raw = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "0"}
        status, answer = _post(server, "/v2/models/identity_uint8/infer", bytes(300), raw)
        assert (status, answer) == (
            400,
            {
                "error": "Raw input has a byte_size (300 bytes) that exceeds the maximum allowed "
                "value of 256 bytes. Use --http-max-input-size to increase the limit."
            },
        )


# -- generate inputs and --http-max-input-size --------------------------------------------------


def _limited_server(compat: str, limit: int) -> MockServer:
    return MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS], triton_compat=compat),
        FrontendOptions(**PORTS, http_max_input_size=limit),
    )


@pytest.mark.parametrize("endpoint", ["generate", "generate_stream"])
def test_generate_input_size_limit(endpoint: str) -> None:
    """2.73 adds up a generate request's input bytes (each input's elements times its
    datatype's size, in document order) and refuses the one that takes them past
    ``--http-max-input-size``: INVALID_ARG (400) "request size of N bytes with input 'X' of
    size M bytes exceeds the maximum allowed input size of L. Use --http-max-input-size to
    increase the limit." (``ExactMappingInput``, src/http_server.cc:3690-3741, 2.73.0), before
    the shape is converted (:3743-3793) and before inference, on both endpoints (the error
    callback of ``HandleGenerate``, :3522-3525).  ``parameters`` is converted by a call of its
    own (``ConvertGenerateRequest``, :3611-3645), whose count starts at 0.  2.51's
    ``ExactMappingInput`` has no limit (src/http_server.cc:3483-3584 at v2.51.0)."""
    limit = 110
    path = f"/v2/models/simple/{endpoint}"

    def post(server: MockServer, body: dict[str, object]) -> tuple[int, dict[str, object]]:
        data = json.dumps(body, separators=(",", ":")).encode()
        assert len(data) <= limit  # the body itself passes the limit
        return _post(server, path, data)

    two = {"INPUT0": [0] * 16, "INPUT1": [1] * 16}  # 64 bytes each, 128 together
    nested = {"INPUT0": [0] * 16, "parameters": {"INPUT1": [1] * 16}}
    oversized = {"INPUT0": [0] * 30}  # 120 bytes, and not a [-1, 16] shape
    with _limited_server("2.73", limit) as server:
        assert post(server, two) == (
            400,
            {
                "error": "request size of 64 bytes with input 'INPUT1' of size 64 bytes exceeds "
                "the maximum allowed input size of 110. Use --http-max-input-size to increase "
                "the limit."
            },
        )
        assert post(server, oversized) == (
            400,
            {
                "error": "request size of 0 bytes with input 'INPUT0' of size 120 bytes exceeds "
                "the maximum allowed input size of 110. Use --http-max-input-size to increase "
                "the limit."
            },
        )
        if endpoint == "generate":
            status, answer = post(server, nested)
            assert status == 200 and answer["OUTPUT1"] == [-1] * 16
    with _limited_server("2.51", limit) as server:
        if endpoint == "generate":
            status, answer = post(server, two)
            assert status == 200 and answer["OUTPUT0"] == [1] * 16
        assert post(server, oversized) == (
            400,
            {"error": "The schema can not convert input 'INPUT0' to tensor with proper shape"},
        )


def test_generate_empty_input(server_273: MockServer, server_251: MockServer) -> None:
    """2.73 adds a generate input of no bytes (an empty list) with no dimension and no data,
    without converting its shape (``ExactMappingInput``, src/http_server.cc:3718-3724,
    2.73.0): the core then refuses the shape (core src/infer_request.cc:1133-1176).  2.51
    spreads it over the model's dims (src/http_server.cc:3519-3565 at v2.51.0): ``[1, 0]``
    for ``identity_int32``'s ``[-1, -1]``, which runs."""
    path = "/v2/models/identity_int32/generate"
    body = b'{"INPUT0":[]}'
    assert _post(server_273, path, body) == _core_error(
        "unexpected shape for input 'INPUT0' for model 'identity_int32'. Expected [-1,-1], got []. "
    )
    assert _post(server_251, path, body) == (
        200,
        {"OUTPUT0": [], "model_name": "identity_int32", "model_version": "1"},
    )


# -- JSON nesting depth -------------------------------------------------------------------------


def _nested_input(levels: int) -> bytes:
    data: list[object] = [1, 2]
    for _ in range(levels - 1):
        data = [data]
    tensor = {"name": "INPUT0", "datatype": "INT32", "shape": [1, 2], "data": data}
    return json.dumps({"inputs": [tensor]}).encode()


def test_json_nesting_depth_limit(server_273: MockServer, server_251: MockServer) -> None:
    """An input's JSON ``data`` with a value 100 arrays deep is refused under 2.73:
    "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)" (400);
    99 deep is read.  2.73.0: src/common.h:66 (``HTTP_MAX_JSON_NESTING_DEPTH = 100``);
    src/http_server.cc:533-540 (``ReadDataFromJsonHelper``) under ``RETURN_MSG_IF_ERR(...,
    "Unable to parse 'data'")`` at :727-730.  2.51 reads any depth (the differential cases
    ``http/infer/data-nested-*-deep`` compare it with the peer)."""
    path = "/v2/models/identity_int32/infer"
    status, answer = _post(server_273, path, _nested_input(100))
    assert (status, answer) == (
        400,
        {"error": "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)"},
    )
    status, answer = _post(server_273, path, _nested_input(99))
    assert status == 200, answer
    status, answer = _post(server_251, path, _nested_input(100))
    assert status == 200, answer


# -- chunked request bodies ---------------------------------------------------------------------


def _chunked_infer(server: MockServer, chunks: int) -> tuple[int, bytes]:
    """POST a valid JSON inference body to ``simple`` in ``chunks`` non-empty chunks (one byte
    each, the body padded with spaces), over a raw socket; the status and the answer."""
    import socket

    inputs = [
        {"name": n, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
        for n in ("INPUT0", "INPUT1")
    ]
    body = json.dumps({"inputs": inputs}).encode()
    body += b" " * (chunks - len(body))
    head = (
        b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
        b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
    )
    payload = b"".join(b"1\r\n%c\r\n" % byte for byte in body) + b"0\r\n\r\n"
    host, port = server.http_url.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        # The server may answer and close before it has read it all.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + payload)
        answer = _read_answer(sock)
    status = int(answer.split(b" ", 2)[1])
    return status, answer


def _read_answer(sock: Any) -> bytes:
    """One HTTP answer with a Content-Length, head and body."""
    answer = b""
    while True:
        head, _, body = answer.partition(b"\r\n\r\n")
        if _:
            length = int(head.lower().partition(b"content-length: ")[2].split(b"\r\n")[0])
            if len(body) >= length:
                return answer
        piece = sock.recv(65536)
        if not piece:
            return answer
        answer += piece


def test_chunked_body_chunk_limit(server_273: MockServer, server_251: MockServer) -> None:
    """A chunked body with more than 65,536 non-empty chunks is refused under 2.73: 400,
    ``application/json`` "Chunked request body exceeds maximum of 65536 non-empty chunks.
    Send fewer or larger HTTP chunks.", and the connection closes; 65,536 are read.
    2.73.0: src/http_server.cc:53-56 (``kMaxChunkedChunks = 1 << 16``) and :307-335
    (``HTTPServer::ChunkCountIncrement``).  2.51 has no such hook (its src/http_server.cc has
    no ``ChunkCountIncrement``): any number is read."""
    status, answer = _chunked_infer(server_273, 65537)
    assert status == 400
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/json" in head.lower() and b"connection: close" in head.lower()
    assert json.loads(body) == {
        "error": "Chunked request body exceeds maximum of 65536 non-empty chunks. Send fewer "
        "or larger HTTP chunks."
    }
    assert _chunked_infer(server_273, 65536)[0] == 200
    assert _chunked_infer(server_251, 65537)[0] == 200


# -- endpoint-load-metrics (#7839) --------------------------------------------------------------

KV_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.family = family = pb_utils.MetricFamily(
            name="nv_trt_llm_kv_cache_block_metrics",
            description="KV cache blocks",
            kind=pb_utils.MetricFamily.GAUGE,
        )
        self.metrics = []
        for kind, value in (("tokens_per", 16), ("used", 3), ("max", 8)):
            metric = family.Metric(labels={"kv_cache_block_type": kind, "model": "kv"})
            metric.set(value)
            self.metrics.append(metric)

    def execute(self, requests):
        out = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
        return out
"""
KV_CONFIG = (
    'name: "kv" backend: "python" max_batch_size: 0\n'
    'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
    'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
)


def _kv_server(tmp_path: Path, compat: str) -> MockServer:
    model = tmp_path / "kv"
    (model / "1").mkdir(parents=True, exist_ok=True)
    (model / "config.pbtxt").write_text(KV_CONFIG)
    (model / "1" / "model.py").write_text(KV_MODEL)
    return MockServer(
        ServerOptions(model_repository=[tmp_path], triton_compat=compat), FrontendOptions(**PORTS)
    )


def _generate_headers(server: MockServer, path: str, report_format: str | None) -> Any:
    headers = {} if report_format is None else {"endpoint-load-metrics-format": report_format}
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/kv/{path}",
        method="POST",
        data=json.dumps({"IN": [7]}).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()
        return reply.headers


def test_endpoint_load_metrics_header(tmp_path: Path) -> None:
    """``/generate`` and ``/generate_stream`` with ``endpoint-load-metrics-format: text`` or
    ``json`` answer with an ``endpoint-load-metrics`` header computed from the
    ``nv_trt_llm_kv_cache_block_metrics`` family: utilization used/max, capacity
    max*tokens_per (here 3/8 and 8*16); another format gives none.

    2.73.0: src/http_server.cc:4460-4484 (``GenerateRequestClass::StartResponse``);
    src/orca_http.cc:33-72 (``SetEndpointLoadMetricsHeader``), :154-189 (``ExtractKVMetrics``),
    :191-230 (``OrcaKVMetricHeader``: ``"JSON "`` + the JSON object, ``"TEXT "`` + a comma
    separated list with ``std::to_string``); src/orca_http.h:34-43 (the names).
    """
    with _kv_server(tmp_path, "2.73") as server:
        for path in ("generate", "generate_stream"):
            headers = _generate_headers(server, path, "text")
            assert headers["endpoint-load-metrics"] == (
                "TEXT named_metrics.kv_cache_utilization=0.375000, "
                "named_metrics.max_token_capacity=128"
            )
            headers = _generate_headers(server, path, "json")
            assert headers["endpoint-load-metrics"] == (
                'JSON {"named_metrics":{"kv_cache_utilization":0.375,"max_token_capacity":128}}'
            )
            for report_format in (None, "xml"):
                headers = _generate_headers(server, path, report_format)
                assert "endpoint-load-metrics" not in headers


def test_endpoint_load_metrics_header_not_in_2_51(tmp_path: Path) -> None:
    """Triton 2.51 has no load reports (its src/ has no orca_http.cc)."""
    with _kv_server(tmp_path, "2.51") as server:
        headers = _generate_headers(server, "generate", "text")
        assert "endpoint-load-metrics" not in headers


def test_load_metrics_header_values() -> None:
    """``ExtractKVMetrics`` (src/orca_http.cc:154-189, 2.73.0): the last sample of each block
    type counts; a missing one gives no header; no ``max`` blocks is utilization 0; rapidjson
    writes small doubles positionally down to 1e-6."""
    from mock_server.frontends.load_report import load_metrics_header

    def text(used: float, top: float, tokens: float = 4) -> str:
        family = "nv_trt_llm_kv_cache_block_metrics"
        return "".join(
            f'{family}{{kv_cache_block_type="{kind}",model="m",version="1"}} {value}\n'
            for kind, value in (("tokens_per", tokens), ("used", used), ("max", top))
        )

    assert load_metrics_header(text(0, 0), "text") == (
        "TEXT named_metrics.kv_cache_utilization=0.000000, named_metrics.max_token_capacity=0"
    )
    assert load_metrics_header(text(1, 100000), "json") == (
        'JSON {"named_metrics":{"kv_cache_utilization":0.00001,"max_token_capacity":400000}}'
    )
    assert load_metrics_header(text(1, 2).replace('"max"', '"other"'), "json") is None
    assert load_metrics_header(text(1, 2), "TEXT") is None


# -- shared-memory bounds and keys (#8273, #8330, #8335, #8336) --------------------------------


def _shm_infer(server: MockServer, offset: int, byte_size: int) -> tuple[int, dict[str, object]]:
    tensor = {
        "name": "INPUT0",
        "datatype": "INT32",
        "shape": [1, byte_size // 4 if byte_size < 2**32 else 1],
        "parameters": {
            "shared_memory_region": "bounds",
            "shared_memory_byte_size": byte_size,
            "shared_memory_offset": offset,
        },
    }
    body = json.dumps({"inputs": [tensor]}).encode()
    return _post(server, "/v2/models/identity_int32/infer", body)


def test_shm_tensor_bounds(server_273_shm: MockServer) -> None:
    """A tensor's place in a region, as 2.73's ``GetMemoryInfo`` checks it
    (src/shared_memory_manager.cc:447-500, 2.73.0): the offset must lie inside the region,
    offset plus byte size must not pass ``SIZE_MAX`` ("Integer overflow detected: ..."), and
    the end must not pass the region's size, so that an empty tensor at offset 0 is read (2.51
    refused it: the differential cases ``http/shm/infer-empty-at-*``)."""
    region = shm.create_shared_memory_region("bounds", "/compat_bounds", 64)
    client = httpclient.InferenceServerClient(server_273_shm.http_url)
    try:
        client.register_system_shared_memory("bounds", "/compat_bounds", 64)
        status, answer = _shm_infer(server_273_shm, 0, 0)
        assert status == 200, answer
        status, answer = _shm_infer(server_273_shm, 60, 4)
        assert status == 200, answer
        for offset, byte_size, message in (
            (64, 0, "Invalid offset for shared memory region: 'bounds'"),
            (60, 8, "Invalid offset + byte size for shared memory region: 'bounds'"),
            (
                8,
                2**64 - 1,
                f"Integer overflow detected: byte_size ({2**64 - 1}) + offset (8) exceeds "
                f"maximum value ({2**64 - 1}) for region 'bounds'",
            ),
        ):
            assert _shm_infer(server_273_shm, offset, byte_size) == (400, {"error": message})
    finally:
        client.unregister_system_shared_memory()
        client.close()
        shm.destroy_shared_memory_region(region)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("///", "cannot register shared memory region 'k' - invalid shm key '///'"),
        ("/", "cannot register shared memory region 'k' - invalid shm key '/'"),
        (
            "///triton_python_backend_shm_region_x",
            "cannot register shared memory region 'k' with key "
            "'///triton_python_backend_shm_region_x' as the key contains the reserved prefix "
            "'triton_python_backend_shm_region_'",
        ),
    ],
)
def test_shm_register_key_checks(server_273_shm: MockServer, key: str, message: str) -> None:
    """``ValidateSharedMemoryKey`` (src/common.cc:167-199, 2.73.0): a key of slashes only, or
    the reserved prefix after leading slashes, is refused (INVALID_ARG) before anything is
    opened.  2.51 checks the prefix at the key's start only (the differential cases
    ``http/shm/key-slashes``, ``http/shm/reserved-prefix-after-slashes``)."""
    body = json.dumps({"key": key, "offset": 0, "byte_size": 64}).encode()
    status, answer = _post(server_273_shm, "/v2/systemsharedmemory/region/k/register", body)
    assert (status, answer) == (400, {"error": message})


# -- gRPC graceful shutdown (#7969) -------------------------------------------------------------


def test_grpc_graceful_shutdown_refuses_new_requests_on_open_streams() -> None:
    """Once the server is stopping, a new request on a stream that is still open is refused
    with "GRPC server is shutting down and has stopped accepting new requests." (UNAVAILABLE,
    reported in the stream) while the stream stays open for the grace period.

    2.73.0: src/main.cc:343-350 (``GracefulStop`` of the gRPC service on shutdown);
    src/grpc/grpc_server.cc:2589-2611 and :2648-2655 (``DisableNewConnections`` sets
    ``accepting_new_conn_ = false``); src/grpc/stream_infer_handler.cc:235-241 (the error of a
    new request on an open stream), src/grpc/infer_handler.cc:787-800 (unary).
    """
    import queue
    import threading
    import time

    server = _server("2.73").start()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    answers: queue.Queue[tuple[object, InferenceServerException | None]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    stopper = threading.Thread(target=server.stop)
    try:
        client.async_stream_infer("simple", _simple_inputs("grpc"))
        assert answers.get(timeout=30)[1] is None
        stopper.start()
        error = None
        for _ in range(400):  # until the gRPC service stops accepting (the stop's first step)
            client.async_stream_infer("simple", _simple_inputs("grpc"))
            error = answers.get(timeout=30)[1]
            if error is not None:
                break
            time.sleep(0.01)
        assert error is not None
        assert error.message() == (
            "GRPC server is shutting down and has stopped accepting new requests."
        )
    finally:
        client.stop_stream()
        client.close()
        if stopper.is_alive() or stopper.ident is not None:
            stopper.join(60)
        else:
            server.stop()


# -- negative dimensions of JSON data --------------------------------------------------------


@pytest.mark.parametrize("shape", [[1, 2**64 - 16], [2**64 - 2, 16], [1, 2**63]])
def test_json_input_invalid_dimension(server_273: MockServer, shape: list[int]) -> None:
    """A JSON-data input whose shape has a dimension below -1 as an int64 (a uint64 of 2**63
    or more: src/http_server.cc:2594-2599 reads each as ``uint64_t`` into an ``int64_t``
    vector), before any -1 or 0, is refused by 2.73's HTTP frontend: "invalid shape for input
    'INPUT0': shape [..] contains one or more invalid dimensions" (src/http_server.cc:2701-2716
    and ``GetElementCount`` returning -2, src/common.cc:109-135, 2.73.0).  2.51 reads the data
    and reports its own error (the differential case
    ``compat/http/wrapped-dim-int64-min``; Triton 2.51 aborts on the other two shapes)."""
    inputs = [
        {"name": "INPUT0", "datatype": "INT32", "shape": shape, "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
    ]
    status, answer = _post(
        server_273, "/v2/models/simple/infer", json.dumps({"inputs": inputs}).encode()
    )
    dims = ",".join(str(d - 2**64 if d >= 2**63 else d) for d in shape)
    assert (status, answer) == (
        400,
        {
            "error": f"invalid shape for input 'INPUT0': shape [{dims}] contains one or more "
            "invalid dimensions"
        },
    )


def _json_infer(
    server: MockServer, model: str, datatype: str, shape: list[int], data: list[object]
) -> tuple[int, dict[str, object]]:
    tensor = {"name": "INPUT0", "datatype": datatype, "shape": shape, "data": data}
    body = json.dumps({"inputs": [tensor]}, separators=(",", ":")).encode()
    return _post(server, f"/v2/models/{model}/infer", body)


@pytest.mark.parametrize(
    ("shape", "dims"),
    [([2**32, 2**32], "4294967296,4294967296"), ([3, 2**62, 5], f"3,{2**62},5")],
)
def test_json_input_element_count_overflow(
    server_273: MockServer, server_251: MockServer, shape: list[int], dims: str
) -> None:
    """A JSON-data input whose element count passes ``INT64_MAX``: ``GetElementCount``
    returns -3 (src/common.cc:125-129, 2.73.0) and ``ParseJsonTritonIO`` answers "invalid
    shape for input 'INPUT0': shape [..] causes total element count to exceed maximum size
    of 9223372036854775807" (src/http_server.cc:2717-2726).  2.51's ``GetElementCount``
    multiplies on, wrapping round (src/common.cc:79-97 at v2.51.0): no such text."""
    status, answer = _json_infer(server_273, "simple", "INT32", shape, list(range(16)))
    assert (status, answer) == (
        400,
        {
            "error": f"invalid shape for input 'INPUT0': shape [{dims}] causes total element "
            "count to exceed maximum size of 9223372036854775807"
        },
    )
    status, answer = _json_infer(server_251, "simple", "INT32", shape, list(range(16)))
    assert status != 200 and "exceed maximum size" not in str(answer["error"])


def test_json_input_byte_size_overflow(server_273: MockServer, server_251: MockServer) -> None:
    """A typed JSON-data input whose byte size passes ``INT64_MAX`` though its element count
    does not: "byte size overflow for input 'INPUT0': element count (N) * data type size (4)
    exceeds maximum allowed size (9223372036854775807)" (src/http_server.cc:2736-2753,
    2.73.0), before the data are read.  2.51 has no such check."""
    count = 2**62
    status, answer = _json_infer(server_273, "simple", "INT32", [1, count], [1])
    assert (status, answer) == (
        400,
        {
            "error": f"byte size overflow for input 'INPUT0': element count ({count}) * data "
            "type size (4) exceeds maximum allowed size (9223372036854775807)"
        },
    )
    status, answer = _json_infer(server_251, "simple", "INT32", [1, count], [1])
    assert status != 200 and "byte size overflow" not in str(answer["error"])


def test_json_input_byte_size_limit(server_251: MockServer) -> None:
    """A JSON-data input larger than ``--http-max-input-size``: "JSON input 'INPUT0' has a
    byte_size (N bytes) that exceeds the maximum allowed value of M bytes. Use
    --http-max-input-size to increase the limit." (src/http_server.cc:2757-2767, 2.73.0).
    A typed input is sized from its shape before its data are read (:2736-2755), so that a
    wildcard dimension (a uint64 of 2**64-1, read as -1: ``GetElementCount`` returns -1)
    wraps round as a ``size_t``; a BYTES input is sized from its strings, 4 bytes and the
    string each (``JsonBytesArrayByteSize``, :479-516).  2.51 has no such limit."""
    limit = 1024

    def error(size: int) -> dict[str, object]:
        return {
            "error": f"JSON input 'INPUT0' has a byte_size ({size} bytes) that exceeds the "
            f"maximum allowed value of {limit} bytes. Use --http-max-input-size to increase "
            "the limit."
        }

    with MockServer(
        ServerOptions(model_repository=[BUNDLED_MODELS]),
        FrontendOptions(**PORTS, http_max_input_size=limit),
    ) as server:
        assert _json_infer(server, "identity_int32", "INT32", [1, 257], [1]) == (400, error(1028))
        status, _ = _json_infer(server, "identity_int32", "INT32", [1, 256], [0] * 256)
        assert status == 200
        assert _json_infer(server, "identity_int32", "INT32", [2**64 - 1, 4], [1]) == (
            400,
            error(2**64 - 4),
        )
        assert _json_infer(server, "identity_bytes", "BYTES", [1, 300], [""] * 300) == (
            400,
            error(1200),
        )
        status, _ = _json_infer(server, "identity_bytes", "BYTES", [1, 256], [""] * 256)
        assert status == 200
    status, answer = _json_infer(server_251, "identity_int32", "INT32", [1, 2**25], [1])
    assert status != 200 and "JSON input" not in str(answer["error"])


WILD = 2**64 - 1  # a JSON shape's uint64 that Triton keeps as the int64 -1 (the wildcard)


def _binary_infer(
    server: MockServer, model: str, datatype: str, shape: list[int], data: bytes
) -> tuple[int, dict[str, object]]:
    tensor = {"name": "INPUT0", "datatype": datatype, "shape": shape}
    tensor["parameters"] = {"binary_data_size": len(data)}
    header = json.dumps({"inputs": [tensor]}, separators=(",", ":")).encode()
    length = {"Inference-Header-Content-Length": str(len(header))}
    return _post(server, f"/v2/models/{model}/infer", header + data, length)


def _core_error(message: str) -> tuple[int, dict[str, object]]:
    return 400, {"error": f"[request id: <id_unknown>] {message}"}


def test_edge_shapes_of_json_data(server_273: MockServer) -> None:
    """JSON data of no dimension, or with a wildcard (a uint64 of 2**64-1 read as -1,
    src/http_server.cc:2589-2599, 2.73.0) beside a 0.  ``GetElementCount``
    (src/common.cc:109-135, 2.73.0) counts 0 elements for ``[]`` (no dimension: the count
    stays 0), 0 for ``[0, -1]`` (it stops at the first 0) and -1 for ``[-1, 0]`` (it stops at
    the first wildcard).  ``ParseJsonTritonIO`` reads no data for a count of 0
    (src/http_server.cc:2702-2707), so the core refuses the shape (core
    src/infer_request.cc:1133-1176, 2.73: "unexpected shape ...", "All input dimensions
    should be specified ..."); a typed input counting -1 is sized as -1 elements, which
    wraps round as a ``size_t`` past ``--http-max-input-size`` (src/http_server.cc:
    2736-2767); a BYTES one is sized from its strings and its data read
    (``JsonBytesArrayByteSize``), then the core refuses the shape.  Triton 2.51 agrees on the
    shapes it survives (the differential cases ``compat/http/edge-shape-*``); its typed
    count of -1 aborts it (``std::length_error``)."""
    too_big = {
        "error": f"JSON input 'INPUT0' has a byte_size ({2**64 - 4} bytes) that exceeds the "
        "maximum allowed value of 67108864 bytes. Use --http-max-input-size to increase the "
        "limit."
    }
    assert _json_infer(server_273, "identity_int32", "INT32", [], [1]) == _core_error(
        "unexpected shape for input 'INPUT0' for model 'identity_int32'. Expected [-1,-1], got []. "
    )
    assert _json_infer(server_273, "identity_int32", "INT32", [WILD, 0], []) == (400, too_big)
    assert _json_infer(server_273, "identity_int32", "INT32", [0, WILD], []) == _core_error(
        "All input dimensions should be specified for input 'INPUT0' for model "
        "'identity_int32', got [0,-1]"
    )
    assert _json_infer(server_273, "identity_bytes", "BYTES", [WILD, 0], []) == _core_error(
        "All input dimensions should be specified for input 'INPUT0' for model "
        "'identity_bytes', got [-1,0]"
    )


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([], "input 'INPUT0' has no shape but model requires batch dimension for 'simple'"),
        (
            [WILD, 0],
            "input 'INPUT0' batch size does not match other inputs for 'simple'",
        ),
        (
            [1, WILD],
            "All input dimensions should be specified for input 'INPUT0' for model 'simple', "
            "got [1,-1]",
        ),
    ],
)
def test_edge_shapes_of_binary_data(
    server_273: MockServer, server_251: MockServer, shape: list[int], message: str
) -> None:
    """Binary data are never counted by the HTTP frontend (src/http_server.cc:2604-2650,
    2.73.0): whatever the shape, the core refuses it before it sizes the data, in its order
    of checks (core src/infer_request.cc:1076-1176 at 2.73: no shape for a batching model,
    the batch sizes, then the dimensions in order, a wildcard refused where it is met).  The
    same under both profiles (Triton 2.51 answers so: ``compat/http/edge-shape-*-binary``)."""
    inputs = [
        {"name": "INPUT0", "datatype": "INT32", "shape": shape},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16]},
    ]
    for each in inputs:
        each["parameters"] = {"binary_data_size": 64}
    header = json.dumps({"inputs": inputs}, separators=(",", ":")).encode()
    body = header + bytes(128)
    length = {"Inference-Header-Content-Length": str(len(header))}
    for server in (server_273, server_251):
        answer = _post(server, "/v2/models/simple/infer", body, length)
        assert answer == _core_error(message)
    assert _binary_infer(server_273, "identity_int8", "INT8", [0, WILD], b"") == _core_error(
        "All input dimensions should be specified for input 'INPUT0' for model "
        "'identity_int8', got [0,-1]"
    )


# -- HTTP request checks of 2.73 -------------------------------------------------------------


def test_index_ready_must_be_a_boolean(server_273: MockServer, server_251: MockServer) -> None:
    """A repository index request whose ``ready`` is not a boolean: 400 "Invalid value for
    'ready': expected a boolean" (src/http_server.cc:1455-1466, 2.73.0); 2.51 answers 500
    (the differential case ``compat/http/index-ready-not-bool``)."""
    body = json.dumps({"ready": "yes"}).encode()
    status, answer = _post(server_273, "/v2/repository/index", body)
    assert (status, answer) == (400, {"error": "Invalid value for 'ready': expected a boolean"})
    status, _ = _post(server_251, "/v2/repository/index", body)
    assert status == 500


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "Unable to parse Inference-Header-Content-Length, got: abc"),
        (
            "99999999999",
            "Unable to parse Inference-Header-Content-Length, value is out of range "
            "[ -2147483648, 2147483647 ], got: 99999999999",
        ),
    ],
)
def test_inference_header_length_read_with_stoi(
    server_273: MockServer, value: str, message: str
) -> None:
    """``Inference-Header-Content-Length`` is read with ``std::stoi`` (src/http_server.cc:
    2475-2518, 2.73.0): text without a number, or a number outside int32, is refused (400);
    2.51 read it with ``atoi`` (text is 0: a raw binary request; the differential case
    ``compat/http/header-length-text``)."""
    body = json.dumps({"inputs": []}).encode()
    headers = {"Inference-Header-Content-Length": value}
    assert _post(server_273, "/v2/models/simple/infer", body, headers) == (
        400,
        {"error": message},
    )
