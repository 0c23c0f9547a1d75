"""The server core end to end: bundled models, control modes, overrides, statistics, errors."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mock_server.compose import build_core
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.server import CoreServer, ModelControlMode, ServerOptions
from mock_server.core.types import InferRequest, InferResponse, RequestedOutput, Tensor

MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"


def tensor(name: str, data: np.ndarray, datatype: str) -> Tensor:
    return Tensor(name, datatype, tuple(data.shape), data)


def run(server: CoreServer, request: InferRequest, timeout: float = 20) -> list[InferResponse]:
    return list(server.infer_iter(request, timeout))


def one(server: CoreServer, request: InferRequest) -> InferResponse:
    responses = run(server, request)
    assert len(responses) == 1 and responses[0].final
    return responses[0]


def outputs(response: InferResponse) -> dict[str, np.ndarray]:
    assert response.error is None, response.error
    return {t.name: t.data for t in response.outputs}


@pytest.fixture(scope="module")
def server() -> Iterator[CoreServer]:
    core = build_core(ServerOptions(model_repository=[MODELS]))
    core.start()
    yield core
    core.stop()


def simple_request(a: np.ndarray, b: np.ndarray, **kw: Any) -> InferRequest:
    return InferRequest(
        model_name="simple",
        inputs=[tensor("INPUT0", a, "INT32"), tensor("INPUT1", b, "INT32")],
        **kw,
    )


def test_every_bundled_model_loads(server: CoreServer) -> None:
    assert server.live() and server.ready()
    index = server.repository_index()
    names = {row["name"] for row in index}
    assert {"simple", "simple_string", "repeat_int32", "bls_simple", "identity_bf16"} <= names
    bad = [row for row in index if row.get("state") != "READY"]
    assert not bad, bad


def test_simple_add_sub(server: CoreServer) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    response = one(server, simple_request(a, b, id="req-1"))
    out = outputs(response)
    assert np.array_equal(out["OUTPUT0"], a + b)
    assert np.array_equal(out["OUTPUT1"], a - b)
    assert (response.model_name, response.model_version, response.id) == ("simple", "1", "req-1")


def test_requested_outputs_only(server: CoreServer) -> None:
    a = np.zeros((2, 16), dtype=np.int32)
    request = simple_request(a, a, outputs=[RequestedOutput("OUTPUT1")])
    assert list(outputs(one(server, request))) == ["OUTPUT1"]


def test_validation_errors_come_back_synchronously(server: CoreServer) -> None:
    a = np.zeros((1, 16), dtype=np.int32)
    with pytest.raises(ServerError) as info:
        server.infer(simple_request(a, a.astype(np.float32).view(np.int32)[:, :8]))
    assert info.value.kind is ErrorKind.INVALID_ARG
    with pytest.raises(ServerError) as info:
        server.infer(InferRequest(model_name="nope"))
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert "unknown model" in info.value.message
    with pytest.raises(ServerError) as info:
        server.infer(simple_request(a, a, model_version=7))
    assert info.value.kind is ErrorKind.NOT_FOUND
    big = np.zeros((9, 16), dtype=np.int32)
    with pytest.raises(ServerError, match="batch-size must be <= 8"):
        server.infer(simple_request(big, big))
    # The server keeps serving after bad requests.
    assert outputs(one(server, simple_request(a, a)))["OUTPUT0"].sum() == 0


def test_bytes_and_bf16_identity(server: CoreServer) -> None:
    words = np.array([[b"hello", b"\x00\x01"]], dtype=np.object_)
    out = outputs(
        one(
            server,
            InferRequest(model_name="identity_bytes", inputs=[tensor("INPUT0", words, "BYTES")]),
        )
    )
    assert out["OUTPUT0"].tolist() == words.tolist()
    import ml_dtypes

    bf = np.array([[1.5, -2.0, 3.25]], dtype=ml_dtypes.bfloat16)
    out = outputs(
        one(server, InferRequest(model_name="identity_bf16", inputs=[tensor("INPUT0", bf, "BF16")]))
    )
    assert out["OUTPUT0"].astype(np.float32).tolist() == [[1.5, -2.0, 3.25]]


def test_simple_string(server: CoreServer) -> None:
    a = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    b = np.array([[b"1"] * 16], dtype=np.object_)
    out = outputs(
        one(
            server,
            InferRequest(
                model_name="simple_string",
                inputs=[tensor("INPUT0", a, "BYTES"), tensor("INPUT1", b, "BYTES")],
            ),
        )
    )
    assert [int(x) for x in out["OUTPUT0"].ravel()] == [i + 1 for i in range(16)]
    assert [int(x) for x in out["OUTPUT1"].ravel()] == [i - 1 for i in range(16)]


def test_sequence_routes_by_correlation_id(server: CoreServer) -> None:
    def step(corr: int, value: int, start: bool = False, end: bool = False) -> int:
        data = np.array([[value]], dtype=np.int32)
        request = InferRequest(
            model_name="simple_sequence",
            inputs=[tensor("INPUT", data, "INT32")],
            correlation_id=corr,
            sequence_start=start,
            sequence_end=end,
        )
        return int(outputs(one(server, request))["OUTPUT"].item())

    # simple_sequence returns INPUT + START (as Triton's example clients assert).
    assert step(1001, 0, start=True) == 1
    assert step(1002, 100, start=True) == 101
    assert step(1001, 5) == 5
    assert step(1002, -5, end=True) == -5
    with pytest.raises(ServerError, match="START flag"):
        server.infer(
            InferRequest(
                model_name="simple_sequence",
                inputs=[tensor("INPUT", np.array([[1]], np.int32), "INT32")],
                correlation_id=1002,
            )
        )
    with pytest.raises(ServerError, match="correlation ID"):
        server.infer(
            InferRequest(
                model_name="simple_sequence",
                inputs=[tensor("INPUT", np.array([[1]], np.int32), "INT32")],
            )
        )


def test_decoupled_repeat(server: CoreServer) -> None:
    values = np.array([4, 2, 0, 1], dtype=np.int32)
    request = InferRequest(
        model_name="repeat_int32",
        id="rep",
        inputs=[
            tensor("IN", values, "INT32"),
            tensor("DELAY", np.zeros(4, np.uint32), "UINT32"),
            tensor("WAIT", np.zeros(1, np.uint32), "UINT32"),
        ],
    )
    responses = run(server, request)
    data = [r for r in responses if r.outputs]
    assert [int(outputs(r)["OUT"].item()) for r in data] == [4, 2, 0, 1]
    assert [int(outputs(r)["IDX"].item()) for r in data] == [0, 1, 2, 3]
    assert responses[-1].final and all(not r.final for r in responses[:-1])
    assert all(r.id == "rep" for r in responses)


def test_bls_model_calls_simple(server: CoreServer) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    request = InferRequest(
        model_name="bls_simple",
        inputs=[tensor("INPUT0", a, "INT32"), tensor("INPUT1", a, "INT32")],
    )
    out = outputs(one(server, request))
    assert np.array_equal(out["OUTPUT0"], 2 * a)
    assert np.array_equal(out["OUTPUT1"], 0 * a)


def test_timeout_reaches_running_model_as_cancellation(tmp_path: Path) -> None:
    # A queue policy that lets clients lower the timeout (Triton honours a request's
    # timeout only then); the deadline passes while the model runs.
    repo = make_repo(tmp_path, "slow")
    config = (repo / "slow" / "config.pbtxt").read_text()
    config = config.replace("max_batch_size: 0", "max_batch_size: 1")
    config += (
        "\ndynamic_batching { default_queue_policy { default_timeout_microseconds: 60000000 "
        "allow_timeout_override: true } }\n"
    )
    (repo / "slow" / "config.pbtxt").write_text(config)
    core = build_core(ServerOptions(model_repository=[repo]))
    core.start()
    try:
        request = InferRequest(
            model_name="slow",
            inputs=[
                tensor("INPUT0", np.array([[1]], np.int32), "INT32"),
                tensor("DELAY_MS", np.array([[5000]], np.uint32), "UINT32"),
            ],
            timeout_us=200_000,
        )
        start = time.monotonic()
        response = one(core, request)
        assert time.monotonic() - start < 3
        assert response.error is not None and response.error.kind is ErrorKind.CANCELLED
    finally:
        core.stop()


def test_client_cancellation_reaches_model(server: CoreServer) -> None:
    request = InferRequest(
        model_name="slow",
        inputs=[
            tensor("INPUT0", np.array([1], np.int32), "INT32"),
            tensor("DELAY_MS", np.array([5000], np.uint32), "UINT32"),
        ],
    )
    threading.Timer(0.2, request.cancel).start()
    start = time.monotonic()
    response = one(server, request)
    assert time.monotonic() - start < 3
    assert response.error is not None and response.error.kind is ErrorKind.CANCELLED


def test_statistics_count_requests(server: CoreServer) -> None:
    before = server.statistics("simple_int8")[0].inference_stats.success.count
    a = np.ones((3, 16), dtype=np.int8)
    for _ in range(2):
        one(
            server,
            InferRequest(
                model_name="simple_int8",
                inputs=[tensor("INPUT0", a, "INT8"), tensor("INPUT1", a, "INT8")],
            ),
        )
    stats = server.statistics("simple_int8")[0]
    assert stats.inference_stats.success.count == before + 2
    assert stats.inference_count >= 6
    assert any(b.batch_size == 3 for b in stats.batch_stats)
    with pytest.raises(ServerError) as info:
        server.statistics("missing")
    assert info.value.kind is ErrorKind.INVALID_ARG


def test_load_unload_refused_outside_explicit_mode(server: CoreServer) -> None:
    with pytest.raises(ServerError) as info:
        server.load_model("simple")
    assert info.value.kind is ErrorKind.UNAVAILABLE


def make_repo(tmp_path: Path, *names: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in names:
        shutil.copytree(MODELS / name, repo / name)
    return repo


def test_explicit_mode_load_unload_override_and_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "simple", "identity_int32")
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["identity_int32"],
        )
    )
    core.start()
    try:
        assert core.model_ready("identity_int32") and not core.model_ready("simple")
        assert {"name": "simple"} in core.repository_index()
        core.load_model("simple")
        assert core.model_ready("simple")
        override = (
            '{"name": "simple", "backend": "python", "max_batch_size": 16, '
            '"input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]}, '
            '{"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]}], '
            '"output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]}, '
            '{"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]}]}'
        )
        core.load_model("simple", config=override)
        assert core.model_config("simple").max_batch_size == 16
        big = np.zeros((12, 16), np.int32)
        assert outputs(one(core, simple_request(big, big)))["OUTPUT0"].shape == (12, 16)
        core.unload_model("simple")
        assert not core.model_ready("simple")
        states = {(r["name"], r.get("state")) for r in core.repository_index()}
        assert ("simple", "UNAVAILABLE") in states
        # A model that exists only as uploaded files.
        code = (MODELS / "identity_int32" / "1" / "model.py").read_bytes()
        config = (MODELS / "identity_int32" / "config.pbtxt").read_text()
        from google.protobuf import text_format

        from mock_server.core.config_json import config_to_json
        from tritonclient.grpc import model_config_pb2

        parsed = text_format.Parse(config, model_config_pb2.ModelConfig())
        parsed.name = "uploaded"
        import json

        core.load_model(
            "uploaded", config=json.dumps(config_to_json(parsed)), files={"file:1/model.py": code}
        )
        data = np.array([[1, 2, 3]], np.int32)
        out = outputs(
            one(core, InferRequest(model_name="uploaded", inputs=[tensor("INPUT0", data, "INT32")]))
        )
        assert out["OUTPUT0"].tolist() == [[1, 2, 3]]
        with pytest.raises(ServerError):
            core.load_model("uploaded", config="{not json")
        assert core.model_ready("uploaded")  # a failed reload keeps the old version serving
        core.unload_model("does_not_exist")  # succeeds, as in Triton
    finally:
        core.stop()


def test_bad_config_fails_only_that_model(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "simple")
    (repo / "broken").mkdir()
    (repo / "broken" / "1").mkdir()
    (repo / "broken" / "config.pbtxt").write_text('name: "broken"\nmax_batch_size: "x"\n')
    core = build_core(ServerOptions(model_repository=[repo]))
    core.start()
    try:
        assert core.model_ready("simple")
        assert not core.ready()  # strict readiness: a startup model failed
        rows = [r for r in core.repository_index() if r["name"] == "broken"]
        assert rows and rows[0]["state"] == "UNAVAILABLE"
        assert "config.pbtxt" in rows[0]["reason"]
    finally:
        core.stop()


def test_poll_mode_reloads_changed_and_unloads_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "identity_int32", "simple")
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.POLL,
            repository_poll_secs=3600,
        )
    )
    core.start()
    try:
        request = lambda: InferRequest(  # noqa: E731
            model_name="identity_int32",
            inputs=[tensor("INPUT0", np.array([[5]], np.int32), "INT32")],
        )
        assert outputs(one(core, request()))["OUTPUT0"].tolist() == [[5]]
        model_py = repo / "identity_int32" / "1" / "model.py"
        source = model_py.read_text()
        marker = "def execute(self, requests):"
        assert marker in source
        patched = source.replace(
            marker,
            marker + "\n        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("
            "'OUTPUT0', pb_utils.get_input_tensor_by_name(r, 'INPUT0').as_numpy() * 2)]) "
            "for r in requests]",
            1,
        )
        model_py.write_text(patched)
        core.poll_model_repository()
        assert outputs(one(core, request()))["OUTPUT0"].tolist() == [[10]]
        shutil.rmtree(repo / "simple")
        core.poll_model_repository()
        assert not core.model_ready("simple")
    finally:
        core.stop()


def test_implicit_sequence_state_is_refused_clearly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "simple_sequence")
    config = (repo / "simple_sequence" / "config.pbtxt").read_text()
    config = config.replace(
        "sequence_batching {",
        'sequence_batching {\n  state [{ input_name: "IN_STATE" output_name: "OUT_STATE" '
        "data_type: TYPE_INT32 dims: [1] }]",
        1,
    )
    (repo / "simple_sequence" / "config.pbtxt").write_text(config)
    core = build_core(ServerOptions(model_repository=[repo]))
    core.start()
    try:
        rows = [r for r in core.repository_index() if r["name"] == "simple_sequence"]
        assert rows[0]["state"] == "UNAVAILABLE"
        assert "implicit sequence state" in rows[0]["reason"]
    finally:
        core.stop()


def _explicit_simple(tmp_path: Path, trace_file: Path) -> CoreServer:
    core = build_core(
        ServerOptions(
            model_repository=[MODELS],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["simple"],
            trace_file=str(trace_file),
        )
    )
    core.start()
    return core


def test_traces_are_written_as_triton_writes_them(tmp_path: Path) -> None:
    import json

    trace_file = tmp_path / "trace.json"
    core = _explicit_simple(tmp_path, trace_file)
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    try:
        one(core, simple_request(a, a))  # level OFF: not traced
        core.update_trace_settings(
            {"trace_level": ["TIMESTAMPS"], "trace_rate": "2", "trace_count": "3"}
        )
        for i in range(10):
            one(core, simple_request(a, a, id=f"r{i}"))
        assert core.trace_settings()["trace_count"] == "0"  # the remaining count
        assert not trace_file.exists()  # log_frequency 0: written at shutdown
    finally:
        core.stop()
    entries = json.loads(trace_file.read_text())
    heads = [e for e in entries if "model_name" in e]
    # Rate 2 traces requests 0, 2 and 4 of those sent once tracing was on; count 3 stops it.
    assert [(h["id"], h["request_id"]) for h in heads] == [(1, "r0"), (2, "r2"), (3, "r4")]
    assert all(h["model_name"] == "simple" and h["model_version"] == 1 for h in heads)
    stamps = [e["timestamps"] for e in entries if "timestamps" in e]
    assert len(stamps) == 3
    for trace in stamps:
        names = [t["name"] for t in trace]
        assert names == [
            "REQUEST_START",
            "QUEUE_START",
            "COMPUTE_START",
            "COMPUTE_INPUT_END",
            "COMPUTE_OUTPUT_START",
            "COMPUTE_END",
            "REQUEST_END",
        ]
        ns = [t["ns"] for t in trace]
        assert ns == sorted(ns) and ns[-1] > ns[0]


def test_trace_tensors_and_log_frequency(tmp_path: Path) -> None:
    import json

    trace_file = tmp_path / "t.json"
    core = _explicit_simple(tmp_path, trace_file)
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    try:
        core.update_trace_settings(
            {"trace_level": ["TENSORS"], "trace_rate": "1", "log_frequency": "2"}, model="simple"
        )
        core.update_trace_settings({"log_frequency": "2"})
        for _ in range(3):
            one(core, simple_request(a, b))
        first = json.loads((tmp_path / "t.json.0").read_text())  # written after two traces
        assert len([e for e in first if "model_name" in e]) == 2
    finally:
        core.stop()
    rest = json.loads((tmp_path / "t.json.1").read_text())  # the third, at shutdown
    tensors = {e["tensor"]["name"]: (e["activity"], e["tensor"]) for e in rest if "tensor" in e}
    assert tensors["INPUT0"][0] == "TENSOR_QUEUE_INPUT"
    assert tensors["INPUT0"][1]["data"] == ",".join(str(v) for v in range(16))
    assert tensors["INPUT0"][1]["shape"] == "1,16" and tensors["INPUT0"][1]["dtype"] == "INT32"
    assert tensors["OUTPUT0"][0] == "TENSOR_BACKEND_OUTPUT"
    assert tensors["OUTPUT0"][1]["data"] == ",".join(str(v + 1) for v in range(16))
    assert not any("timestamps" in e for e in rest)  # TENSORS alone: no timestamps
    assert not trace_file.exists()
