"""The compatibility profile: mock_server behaves as Triton 2.73 by default, as 2.51 on request.

Each 2.73 behaviour is tested against what Triton's server source says at the 2.73.0 branch
point (``triton-inference-server/server``, the file and line are in each test's docstring); the
2.51 behaviour is checked against the real Triton 2.51 by the differential suite
(``tests/conformance``, which runs mock_server with ``--triton-compat 2.51``), so here it is only
checked that the 2.51 profile turns the 2.73 behaviour off.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

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
from tritonclient.utils import InferenceServerException

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
