"""``python -m mock_server`` as a real process: ports, TLS, restricted APIs, clean shutdown."""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.tls import TlsFiles, make_tls_files
from tritonclient.grpc import service_pb2, service_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
TINY_REPO_MODELS = ("simple",)


@contextmanager
def serve(tmp_path: Path, *args: str, timeout: float = 90) -> Iterator[dict[str, Any]]:
    port_file = tmp_path / f"ports-{time.monotonic_ns()}.json"
    repo = tmp_path / "repo"
    if not repo.exists():
        import shutil

        repo.mkdir()
        for name in TINY_REPO_MODELS:
            shutil.copytree(ROOT / "mock_server" / "models" / name, repo / name)
    command = [
        sys.executable,
        "-m",
        "mock_server",
        "--model-repository",
        str(repo),
        "--http-port",
        "0",
        "--grpc-port",
        "0",
        "--metrics-port",
        "0",
        "--port-file",
        str(port_file),
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"server did not start (rc={process.poll()}):\n"
                    + (tmp_path / "server.log").read_text()
                )
            time.sleep(0.1)
        time.sleep(0.05)
        info = json.loads(port_file.read_text())
        info["process"] = process
        yield info
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        log.close()


def test_serves_http_grpc_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    with serve(tmp_path) as info:
        assert info["ready"] is True
        with urllib.request.urlopen(
            f"http://127.0.0.1:{info['http']}/v2/health/ready", timeout=10
        ) as response:
            assert response.status == 200
        with grpc.insecure_channel(f"127.0.0.1:{info['grpc']}") as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=10).live
        with urllib.request.urlopen(
            f"http://127.0.0.1:{info['metrics']}/metrics", timeout=10
        ) as response:
            assert b"nv_inference_count" in response.read()
        process = info["process"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    log = (tmp_path / "server.log").read_text()
    assert "Started HTTPService at 127.0.0.1:" in log
    assert "Started GRPCInferenceService at 127.0.0.1:" in log


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--http-restricted-api", "bogus:k=v"], "unknown restricted api 'bogus'"),
        (
            ["--grpc-restricted-protocol", "model-reposit,health:k1=v1"],
            "unknown restricted protocol 'model-reposit'",
        ),
        (
            [
                "--http-restricted-api=model-repository,health:k1=v1",
                "--http-restricted-api=metadata,health:k2=v2",
            ],
            "restricted api 'health' can not be specified in multiple config groups",
        ),
        (
            [
                "--grpc-restricted-protocol=health:k1=v1",
                "--grpc-restricted-protocol=health:k2=v2",
            ],
            "restricted protocol 'health' can not be specified in multiple config groups",
        ),
    ],
)
def test_bad_restrictions_stop_the_start_with_tritons_words(flags: list[str], words: str) -> None:
    """As Triton's L0_http / L0_grpc QA expects of ``tritonserver``'s log."""
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert words in result.stderr


def test_restricted_api(tmp_path: Path) -> None:
    with serve(
        tmp_path,
        "--http-restricted-api",
        "model-repository,statistics:admin-key=secret",
        "--grpc-restricted-protocol",
        "statistics:admin-key=secret",
    ) as info:
        url = f"http://127.0.0.1:{info['http']}/v2/repository/index"
        request = urllib.request.Request(url, method="POST", data=b"{}")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=10)
        assert error.value.code == 403
        assert "admin-key" in json.loads(error.value.read())["error"]
        request.add_header("admin-key", "secret")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        # Unrestricted groups stay open.
        with urllib.request.urlopen(
            f"http://127.0.0.1:{info['http']}/v2/health/live", timeout=10
        ) as response:
            assert response.status == 200
        with grpc.insecure_channel(f"127.0.0.1:{info['grpc']}") as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as rpc_error:
                stub.ModelStatistics(service_pb2.ModelStatisticsRequest(), timeout=10)
            assert rpc_error.value.code() is grpc.StatusCode.UNAVAILABLE
            stats = stub.ModelStatistics(
                service_pb2.ModelStatisticsRequest(),
                timeout=10,
                metadata=[("triton-grpc-protocol-admin-key", "secret")],
            )
            assert stats.model_stats


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def test_https_and_grpc_tls(tmp_path: Path, tls: TlsFiles) -> None:
    with serve(
        tmp_path,
        "--http-ssl-cert",
        str(tls.server_cert),
        "--http-ssl-key",
        str(tls.server_key),
        "--grpc-use-ssl",
        "true",
        "--grpc-server-cert",
        str(tls.server_cert),
        "--grpc-server-key",
        str(tls.server_key),
    ) as info:
        context = ssl.create_default_context(cafile=str(tls.ca_cert))
        with urllib.request.urlopen(
            f"https://127.0.0.1:{info['http']}/v2/health/live", timeout=10, context=context
        ) as response:
            assert response.status == 200
        # Plain HTTP is not served on the HTTPS port.
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            urllib.request.urlopen(f"http://127.0.0.1:{info['http']}/v2/health/live", timeout=10)
        credentials = grpc.ssl_channel_credentials(root_certificates=tls.ca_cert.read_bytes())
        with grpc.secure_channel(f"127.0.0.1:{info['grpc']}", credentials) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerReady(service_pb2.ServerReadyRequest(), timeout=10).ready


def test_grpc_mutual_tls_requires_client_certificate(tmp_path: Path, tls: TlsFiles) -> None:
    with serve(
        tmp_path,
        "--allow-http",
        "false",
        "--grpc-use-ssl-mutual",
        "true",
        "--grpc-server-cert",
        str(tls.server_cert),
        "--grpc-server-key",
        str(tls.server_key),
        "--grpc-root-cert",
        str(tls.ca_cert),
    ) as info:
        assert info["http"] is None
        target = f"127.0.0.1:{info['grpc']}"
        anonymous = grpc.ssl_channel_credentials(root_certificates=tls.ca_cert.read_bytes())
        with grpc.secure_channel(target, anonymous) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            with pytest.raises(grpc.RpcError):
                stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=10)
        with_cert = grpc.ssl_channel_credentials(
            root_certificates=tls.ca_cert.read_bytes(),
            private_key=tls.client_key.read_bytes(),
            certificate_chain=tls.client_cert.read_bytes(),
        )
        with grpc.secure_channel(target, with_cert) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=10).live


def test_ready_line_and_client_shm_gate(tmp_path: Path) -> None:
    with serve(tmp_path, "--allow-client-shm", "false", "--http-address", "127.0.0.1") as info:
        url = f"http://127.0.0.1:{info['http']}/v2/systemsharedmemory/region/r/register"
        body = json.dumps({"key": "/x", "offset": 0, "byte_size": 8}).encode()
        request = urllib.request.Request(url, method="POST", data=body)
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=10)
        assert error.value.code == 501
        assert "--allow-client-shm=true" in json.loads(error.value.read())["error"]
    log = (tmp_path / "server.log").read_text()
    line = next(x for x in log.splitlines() if x.startswith("mock_server ready:"))
    assert f"http={info['http']} grpc={info['grpc']} metrics={info['metrics']}" in line


def test_strict_model_config_refuses_models_without_config(tmp_path: Path) -> None:
    from mock_server.compose import build_core
    from mock_server.core.server import ServerOptions

    repo = tmp_path / "strict"
    (repo / "auto" / "1").mkdir(parents=True)
    (repo / "auto" / "1" / "model.py").write_text(
        "class TritonPythonModel:\n"
        "    @staticmethod\n"
        "    def auto_complete_config(config):\n"
        "        return config\n"
        "    def execute(self, requests):\n"
        "        return []\n"
    )
    core = build_core(ServerOptions(model_repository=[repo], strict_model_config=True))
    core.start()
    try:
        rows = [r for r in core.repository_index() if r["name"] == "auto"]
        assert rows[0]["state"] == "UNAVAILABLE" and "strict model config" in rows[0]["reason"]
    finally:
        core.stop()


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "mock-server"
    assert script.exists(), "pip install should create the mock-server console script"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--model-repository" in result.stdout


def test_shm_copy_inputs_option_reaches_the_registry() -> None:
    from mock_server.__main__ import build_parser, options_from_args
    from mock_server.compose import build_core

    for argv, expected in (([], False), (["--shm-copy-inputs", "true"], True)):
        options, _ = options_from_args(
            build_parser().parse_args(["--model-repository", "/x", *argv])
        )
        assert options.shm_copy_inputs is expected
    options.model_repository = []
    server = build_core(options)
    try:
        assert server.shm._copy_inputs is True
    finally:
        server.stop()


def test_trace_config_writes_a_trace_file_at_shutdown(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    with serve(
        tmp_path,
        "--trace-config",
        f"triton,file={trace}",
        "--trace-config",
        "level=TIMESTAMPS",
        "--trace-config",
        "rate=1",
    ) as info:
        base = f"http://127.0.0.1:{info['http']}"
        with urllib.request.urlopen(f"{base}/v2/trace/setting", timeout=10) as reply:
            settings = json.loads(reply.read())
        assert settings["trace_level"] == ["TIMESTAMPS"] and settings["trace_rate"] == "1"
        assert settings["trace_file"] == str(trace)
        body = json.dumps(
            {
                "inputs": [
                    {"name": n, "shape": [1, 16], "datatype": "INT32", "data": list(range(16))}
                    for n in ("INPUT0", "INPUT1")
                ]
            }
        ).encode()
        for _ in range(2):
            request = urllib.request.Request(f"{base}/v2/models/simple/infer", data=body)
            with urllib.request.urlopen(request, timeout=10) as reply:
                assert reply.status == 200
    entries = json.loads(trace.read_text())
    assert [e["model_name"] for e in entries if "model_name" in e] == ["simple", "simple"]
    assert len([e for e in entries if "timestamps" in e]) == 2


def test_bad_trace_config_is_a_usage_error() -> None:
    from mock_server.__main__ import build_parser, options_from_args

    for bad in ("level=LOUD", "colour=red", "opentelemetry,url=x", "rate"):
        args = build_parser().parse_args(["--trace-config", bad])
        with pytest.raises(ValueError, match="trace"):
            options_from_args(args)


def test_every_tritonserver_flag_is_taken(tmp_path: Path) -> None:
    """Scripts and tests written to start tritonserver start mock_server with the same flags
    (Triton's QA passes --grpc-max-response-pool-size, --backend-directory ...): those with a
    meaning here are honoured, the others logged as having no effect."""
    flags = [
        "--grpc-max-response-pool-size=1",
        "--backend-directory=/nowhere",
        "--backend-config=python,shm-default-byte-size=1048576",
        "--backend-config=python,shm-growth-byte-size=1048576",
        "--model-load-thread-count=2",
        "--reuse-grpc-port=true",
        "--disable-auto-complete-config",
        "--http-max-input-size=4096",
        "--http-thread-count=2",
        f"--trace-file={tmp_path / 'trace.json'}",
        "--trace-level=TIMESTAMPS",
        "--trace-rate=5",
        "--log-info=true",
    ]
    with serve(tmp_path, *flags) as info:
        body = json.dumps(
            {
                "inputs": [
                    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [0] * 16},
                    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
                ],
                "parameters": {"padding": "x" * 5000},
            }
        )
        connection = http.client.HTTPConnection("127.0.0.1", info["http"], timeout=30)
        connection.request("POST", "/v2/models/simple/infer", body)
        reply = connection.getresponse()
        assert reply.status == 400
        assert "Use --http-max-input-size to increase the limit" in reply.read().decode()
        connection.request("GET", "/v2/trace/setting")
        settings = json.loads(connection.getresponse().read())
        assert settings["trace_level"] == ["TIMESTAMPS"] and settings["trace_rate"] == "5"
        connection.close()
    log = (tmp_path / "server.log").read_text()
    for flag in ("--grpc-max-response-pool-size", "--backend-directory", "--backend-config"):
        assert f"{flag} has no effect in mock_server" in log
    assert "--http-max-input-size has no effect" not in log


def test_grpc_answers_are_delayed_by_tritons_test_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC (Triton's L0_client_timeout QA): every gRPC
    answer but inference's comes that many seconds late, so client deadlines can be tested."""
    monkeypatch.setenv("TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC", "2")
    with serve(tmp_path) as info, grpc.insecure_channel(f"127.0.0.1:{info['grpc']}") as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=0.5)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(grpc.RpcError) as error:  # an error answer is delayed too
            stub.ModelMetadata(service_pb2.ModelMetadataRequest(name="nope"), timeout=0.5)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=30).live
        request = service_pb2.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            request.raw_input_contents.append(bytes(64))
        answer = stub.ModelInfer(request, timeout=1.9)  # inference is not delayed
        assert len(answer.raw_output_contents) == 2
