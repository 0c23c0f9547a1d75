"""Every script in examples/ runs against the bundled server and exits 0 (each checks its results).

One bundled server serves the module; the scripts that need something else get their own,
started as a user would start Triton 2.73 for them: model control an EXPLICIT-mode server,
shared memory a server allowing client shared memory (``--allow-client-shm=true``), TLS a server
with certificates, the auth plugin a server restricting the model-repository API.  ``tour.py``
and ``inprocess_client.py`` start their own.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
BOTH = ("grpc", "http")
AUTH_USER, AUTH_PASSWORD = "triton", "example-secret"

#: script -> (server it needs, protocols to run it with; None: no ``-i``)
CASES: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "tour.py": ("none", (None,)),
    "inprocess_client.py": ("none", (None,)),
    "several_servers_client.py": ("none", (None,)),
    "simple_infer_client.py": ("default", BOTH),
    "simple_async_infer_client.py": ("default", BOTH),
    "simple_aio_infer_client.py": ("default", BOTH),
    "simple_string_infer_client.py": ("default", BOTH),
    "simple_sequence_sync_client.py": ("default", BOTH),
    "simple_sequence_stream_client.py": ("default", (None,)),
    "decoupled_stream_client.py": ("default", (None,)),
    "keepalive_client.py": ("default", (None,)),
    "health_metadata_client.py": ("default", BOTH),
    "statistics_client.py": ("default", BOTH),
    "system_shm_client.py": ("shm", BOTH),
    "shm_string_client.py": ("shm", BOTH),
    "cuda_shm_client.py": ("shm", BOTH),
    "custom_parameters_client.py": ("default", BOTH),
    "compression_client.py": ("default", BOTH),
    "classification_client.py": ("default", BOTH),
    "ensemble_client.py": ("default", BOTH),
    "trace_log_settings_client.py": ("default", BOTH),
    "model_control_client.py": ("explicit", BOTH),
    "tls_client.py": ("tls", BOTH),
    "auth_plugin_client.py": ("auth", BOTH),
    "generate_client.py": ("default", ("http", "aio")),
    "chat_stream_client.py": ("default", ("http", "aio")),
    "openai_client.py": ("none", (None,)),
}

PARAMS = [
    pytest.param(name, kind, protocol, id=f"{name}-{protocol}" if protocol else name)
    for name, (kind, protocols) in CASES.items()
    for protocol in protocols
]

PORTS = {"http_port": 0, "grpc_port": 0, "metrics_port": 0}


@pytest.fixture(scope="module")
def default_server() -> Iterator[MockServer]:
    with MockServer(frontends=FrontendOptions(**PORTS)) as server:
        yield server


@pytest.fixture(scope="module")
def shm_server() -> Iterator[MockServer]:
    options = ServerOptions(model_repository=[BUNDLED_MODELS], allow_client_shm=True)
    with MockServer(options, FrontendOptions(**PORTS)) as server:
        yield server


@pytest.fixture(scope="module")
def explicit_server() -> Iterator[MockServer]:
    options = ServerOptions(
        model_repository=[BUNDLED_MODELS], model_control_mode=ModelControlMode.EXPLICIT
    )
    with MockServer(options, FrontendOptions(**PORTS)) as server:
        yield server


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MockServer, list[str]]]:
    from tests.tls import make_tls_files

    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    frontends = FrontendOptions(
        **PORTS,
        http_ssl_cert=str(files.server_cert),
        http_ssl_key=str(files.server_key),
        grpc_ssl_cert=str(files.server_cert),
        grpc_ssl_key=str(files.server_key),
    )
    args = ["--ca", str(files.ca_cert), "--cert", str(files.client_cert)]
    args += ["--key", str(files.client_key)]
    with MockServer(frontends=frontends) as server:
        yield server, args


@pytest.fixture(scope="module")
def auth_server() -> Iterator[MockServer]:
    token = base64.b64encode(f"{AUTH_USER}:{AUTH_PASSWORD}".encode()).decode()
    rule = {"model-repository": ("authorization", f"Basic {token}")}
    frontends = FrontendOptions(**PORTS, http_restricted_api=rule, grpc_restricted_protocol=rule)
    with MockServer(frontends=frontends) as server:
        yield server


def test_every_example_is_run() -> None:
    assert sorted(p.name for p in EXAMPLES_DIR.glob("*.py")) == sorted(CASES)


@pytest.mark.parametrize(("name", "kind", "protocol"), PARAMS)
def test_example_runs(
    request: pytest.FixtureRequest, name: str, kind: str, protocol: str | None
) -> None:
    args: list[str] = []
    server: MockServer | None = None
    if kind == "tls":
        server, args = request.getfixturevalue("tls_server")
    elif kind == "auth":
        server = request.getfixturevalue("auth_server")
        args = ["--username", AUTH_USER, "--password", AUTH_PASSWORD]
    elif kind != "none":
        server = request.getfixturevalue(f"{kind}_server")
    if server is not None:
        url = server.http_url if protocol in ("http", "aio") else server.grpc_url
        args += ["-u", url]
    if protocol is not None:
        args += ["-i", protocol]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES_DIR.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WRONG" not in result.stdout
