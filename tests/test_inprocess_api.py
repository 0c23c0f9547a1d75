"""In-process API (``import mock_server as tritonserver``) on the bundled and tmp repositories."""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mock_server as tritonserver

MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"

IDENTITY_CONFIG = """
name: "identity"
backend: "python"
max_batch_size: 0
input [ { name: "string_input", data_type: TYPE_STRING, dims: [ -1, -1 ] } ]
output [ { name: "string_output", data_type: TYPE_STRING, dims: [ -1, -1 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
"""

IDENTITY_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "string_input").as_numpy()
            out = pb_utils.Tensor("string_output", data)
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""


def identity_repository(root: Path) -> Path:
    """The tutorial's repository: one model ``identity`` (string_input -> string_output)."""
    repo = root / "identity-models"
    (repo / "identity" / "1").mkdir(parents=True)
    (repo / "identity" / "config.pbtxt").write_text(IDENTITY_CONFIG)
    (repo / "identity" / "1" / "model.py").write_text(IDENTITY_MODEL)
    return repo


def copy_models(root: Path, *names: str, folder: str = "repo") -> Path:
    repo = root / folder
    repo.mkdir()
    for name in names:
        shutil.copytree(MODELS / name, repo / name)
    return repo


def add_broken_model(repo: Path) -> None:
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "config.pbtxt").write_text('name: "broken"\nmax_batch_size: "x"\n')


@pytest.fixture(scope="module")
def server() -> Iterator[tritonserver.Server]:
    srv = tritonserver.Server(model_repository=str(MODELS)).start(wait_until_ready=True)
    yield srv
    srv.stop()


def simple_inputs(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    return {"INPUT0": a, "INPUT1": b}


def repeat_inputs(values: list[int], delay_ms: int = 0) -> dict[str, Any]:
    return {
        "IN": np.array(values, dtype=np.int32),
        "DELAY": np.full(len(values), delay_ms, dtype=np.uint32),
        "WAIT": np.zeros(1, dtype=np.uint32),
    }


# -- the tutorial, as written --------------------------------------------------------------------
def test_tutorial_hello_world(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repository = identity_repository(tmp_path)

    server = tritonserver.Server(model_repository=str(repository))
    server.start()
    try:
        assert str(server.models()) == (
            "{('identity', 1): {'name': 'identity', 'version': 1, 'state': 'READY'}}"
        )
        model = server.model("identity")
        responses = model.infer(inputs={"string_input": [["hello world!"]]})
        for response in responses:
            print(response.outputs["string_output"].to_string_array())
    finally:
        server.stop()
    assert capsys.readouterr().out == "[['hello world!']]\n"


# -- lifecycle -----------------------------------------------------------------------------------
def test_lifecycle_start_stop_restart(tmp_path: Path) -> None:
    repository = identity_repository(tmp_path)
    options = tritonserver.Options(model_repository=[str(repository)], server_id="in-process")
    server = tritonserver.Server(options)
    for call in (server.live, server.ready, server.metadata, server.models, server.stop):
        with pytest.raises(tritonserver.InvalidArgumentError, match="Server not started"):
            call()
    with pytest.raises(tritonserver.InvalidArgumentError):
        server.model("identity")
    assert server.start() is server
    try:
        assert server.live() and server.ready()
        with pytest.raises(tritonserver.InvalidArgumentError, match="already started"):
            server.start()
        metadata = server.metadata()
        assert metadata["name"] == "in-process" and metadata["version"] == tritonserver.__version__
        assert "model_repository" in metadata["extensions"]
        model = server.model("identity")
    finally:
        assert server.stop() is server
    with pytest.raises(tritonserver.InvalidArgumentError):
        server.live()
    with pytest.raises(tritonserver.InvalidArgumentError):
        model.ready()  # the model's server is stopped
    server.start(wait_until_ready=True, timeout=10)
    try:
        assert server.model("identity").ready()
    finally:
        server.stop()


def test_kwargs_options_and_invalid_options(tmp_path: Path) -> None:
    base = tritonserver.Options(model_repository=str(tmp_path))
    server = tritonserver.Server(base, server_id="replaced")
    assert server.options.server_id == "replaced" and base.server_id == "triton"
    with pytest.raises(tritonserver.InvalidArgumentError, match="Model repository"):
        tritonserver.Server().start()
    with pytest.raises(tritonserver.InvalidArgumentError, match="model_control_mode"):
        tritonserver.Server(model_repository=str(tmp_path), model_control_mode=7).start()
    with pytest.raises(tritonserver.InvalidArgumentError, match="log file"):
        tritonserver.Server(model_repository=str(tmp_path), log_file=str(tmp_path)).start()
    with pytest.raises(tritonserver.InvalidArgumentError, match="exit_timeout"):
        tritonserver.Server(model_repository=str(tmp_path), exit_timeout=-1).start()
    missing = tritonserver.Server(model_repository=str(tmp_path / "missing"))
    with pytest.raises(tritonserver.InternalError, match="missing"):
        missing.start()
    with pytest.raises(tritonserver.InvalidArgumentError):
        missing.live()  # a failed start leaves the server stopped
    with pytest.raises(TypeError):
        tritonserver.Options(no_such_option=1)  # type: ignore[call-arg]
    # Options with no meaning here are accepted and kept.
    accepted = tritonserver.Options(
        model_repository=str(tmp_path),
        rate_limiter_mode=tritonserver.RateLimitMode.EXEC_COUNT,
        rate_limiter_resources=[tritonserver.RateLimiterResource("R", 2, 0)],
        pinned_memory_pool_size=0,
        cuda_memory_pool_sizes={0: 1 << 20},
        cache_config={"local": {"size": 1024}},
        model_load_device_limits=[
            tritonserver.ModelLoadDeviceLimit(tritonserver.InstanceGroupKind.GPU, 0, 0.5)
        ],
        backend_directory="/nowhere",
    )
    empty = tritonserver.Server(accepted).start()
    try:
        assert empty.ready() and dict(empty.models()) == {}
        assert empty.options.cache_config == {"local": {"size": 1024}}
    finally:
        empty.stop()


def test_exit_on_error_fails_start_with_the_model_reason(tmp_path: Path) -> None:
    repo = copy_models(tmp_path, "identity_int32")
    add_broken_model(repo)
    server = tritonserver.Server(model_repository=str(repo))
    with pytest.raises(tritonserver.InternalError, match="failed to load all models: 'broken'"):
        server.start()
    with pytest.raises(tritonserver.InvalidArgumentError):
        server.live()
    explicit = tritonserver.Server(
        model_repository=str(repo),
        model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
        startup_models=["identity_int32", "not_there"],
    )
    with pytest.raises(tritonserver.InternalError, match="'not_there'"):
        explicit.start()
    explicit.options.startup_models = ["identity_int32"]
    explicit.start()  # the broken model is not a startup model now
    try:
        assert explicit.model("identity_int32").ready()
    finally:
        explicit.stop()


def test_wait_until_ready_times_out_under_strict_readiness(tmp_path: Path) -> None:
    repo = copy_models(tmp_path, "identity_int32")
    add_broken_model(repo)
    server = tritonserver.Server(model_repository=str(repo), exit_on_error=False)
    started = time.monotonic()
    with pytest.raises(tritonserver.UnavailableError, match="Timeout before ready"):
        server.start(wait_until_ready=True, polling_interval=0.05, timeout=0.3)
    assert 0.25 <= time.monotonic() - started < 5
    try:
        assert server.live() and not server.ready()
        models = server.models()
        assert models[("broken", 1)].state == "UNAVAILABLE"
        assert "config.pbtxt" in (models[("broken", 1)].reason or "")
        assert models[("identity_int32", 1)].state == "READY"
    finally:
        server.stop()
    lenient = tritonserver.Server(
        model_repository=str(repo), exit_on_error=False, strict_readiness=False
    )
    lenient.start(wait_until_ready=True, timeout=10)
    try:
        assert lenient.ready()
    finally:
        lenient.stop()


def test_log_options_write_the_log_file_and_restore_the_logger(tmp_path: Path) -> None:
    logger = logging.getLogger("mock_server")
    before = logger.level
    log_file = tmp_path / "server.log"
    server = tritonserver.Server(
        model_repository=str(identity_repository(tmp_path)),
        log_file=str(log_file),
        log_info=True,
        log_format=tritonserver.LogFormat.ISO8601,
    ).start()
    try:
        assert logger.level == logging.INFO
        logging.getLogger("mock_server.api.test").info("hello from the test")
    finally:
        server.stop()
    line = log_file.read_text().strip()
    assert line.endswith("hello from the test") and "Z I " in line
    assert logger.level == before
    quiet = tritonserver.Server(model_repository=str(tmp_path / "identity-models")).start()
    try:
        assert logger.level > logging.CRITICAL  # Triton's defaults: every log level off
    finally:
        quiet.stop()
    assert logger.level == before


# -- models --------------------------------------------------------------------------------------
def test_models_dictionary(server: tritonserver.Server) -> None:
    models = server.models()
    assert isinstance(models, tritonserver.ModelDictionary)
    assert ("simple", 1) in models and ("repeat_int32", 1) in models
    simple = models[("simple", 1)]
    assert isinstance(simple, tritonserver.Model)
    assert (simple.name, simple.version, simple.state) == ("simple", 1, "READY")
    assert repr(simple) == "{'name': 'simple', 'version': 1, 'state': 'READY'}"
    assert all(isinstance(k[1], int) and m.state == "READY" for k, m in models.items())
    by_name = models["simple"]
    assert (by_name.name, by_name.version, by_name.state) == ("simple", -1, None)
    with pytest.raises(KeyError):
        models["nope"]
    with pytest.raises(KeyError):
        models[("simple", 9)]
    assert set(server.models(exclude_not_ready=True)) == set(models)


def test_model_errors(server: tritonserver.Server) -> None:
    missing = server.model("nope")  # not validated until used
    assert repr(missing) == "{'name': 'nope', 'version': -1, 'state': None}"
    assert not missing.ready()
    with pytest.raises(tritonserver.NotFoundError, match="unknown model"):
        missing.metadata()
    with pytest.raises(tritonserver.NotFoundError):
        missing.config()
    with pytest.raises(tritonserver.NotFoundError):
        missing.infer(inputs={"INPUT0": [[1]]})
    with pytest.raises(tritonserver.InvalidArgumentError):
        missing.statistics()
    with pytest.raises(tritonserver.NotFoundError):
        server.model("simple", 7).metadata()
    assert not server.model("simple", 7).ready()
    assert server.model("simple", 1).ready()
    with pytest.raises(tritonserver.InvalidArgumentError, match="version 2 not supported"):
        server.model("simple").config(config_version=2)


def test_metadata_config_properties(server: tritonserver.Server) -> None:
    metadata = server.model("identity_fp32").metadata()
    assert metadata == {
        "name": "identity_fp32",
        "versions": ["1"],
        "platform": "python",
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [-1, -1]}],
        "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [-1, -1]}],
    }
    config = server.model("simple").config()
    assert config["name"] == "simple" and config["max_batch_size"] == 8
    assert config["backend"] == "python"
    assert [i["data_type"] for i in config["input"]] == ["TYPE_INT32", "TYPE_INT32"]
    json.dumps(config)  # JSON form
    assert server.model("simple").batch_properties() is tritonserver.ModelBatchFlag.FIRST_DIM
    assert server.model("identity_fp32").batch_properties() is tritonserver.ModelBatchFlag.UNKNOWN
    txn = tritonserver.ModelTxnPropertyFlag
    assert server.model("repeat_int32").transaction_properties() is txn.DECOUPLED
    assert server.model("simple").transaction_properties() is txn.ONE_TO_ONE


def test_statistics_count_inferences(server: tritonserver.Server) -> None:
    model = server.model("simple_int8")
    before = model.statistics()["model_stats"][0]
    assert (before["name"], before["version"]) == ("simple_int8", "1")
    data = np.ones((3, 16), dtype=np.int8)
    for _ in range(2):
        list(model.infer(inputs={"INPUT0": data, "INPUT1": data}))
    after = model.statistics()["model_stats"][0]
    success = after["inference_stats"]["success"]["count"]
    assert success == before["inference_stats"]["success"]["count"] + 2
    assert after["inference_count"] == before["inference_count"] + 6
    assert any(b["batch_size"] == 3 for b in after["batch_stats"])


def test_metrics_report_inference_counters(server: tritonserver.Server) -> None:
    data = np.ones((1, 16), dtype=np.int32)
    list(server.model("simple").infer(inputs=simple_inputs(data, data)))
    text = server.metrics()
    line = next(
        ln for ln in text.splitlines() if ln.startswith('nv_inference_count{model="simple"')
    )
    assert float(line.rsplit(" ", 1)[1]) >= 1
    assert "nv_inference_request_success" in text
    explicit = server.metrics(tritonserver.MetricFormat.PROMETHEUS)
    assert 'nv_inference_count{model="simple",version="1"}' in explicit
    with pytest.raises(tritonserver.InvalidArgumentError):
        server.metrics(5)  # type: ignore[arg-type]
    server.options.metrics = False
    try:
        with pytest.raises(tritonserver.UnsupportedError):
            server.metrics()
    finally:
        server.options.metrics = True


# -- inference -----------------------------------------------------------------------------------
def test_infer_with_numpy_and_tensor_inputs(server: tritonserver.Server) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    model = server.model("simple")
    for inputs in (
        simple_inputs(a, b),
        {
            "INPUT0": tritonserver.Tensor.from_dlpack(a),
            "INPUT1": tritonserver.Tensor.from_dlpack(b),
        },
    ):
        responses = list(model.infer(inputs=inputs, request_id="req-1"))
        assert len(responses) == 1
        response = responses[0]
        assert response.final and response.error is None
        assert response.request_id == "req-1"
        assert (response.model.name, response.model.version) == ("simple", 1)
        out0 = response.outputs["OUTPUT0"]
        assert out0.data_type is tritonserver.DataType.INT32 and list(out0.shape) == [1, 16]
        assert np.array_equal(np.from_dlpack(out0), a + b)
        assert np.array_equal(np.from_dlpack(response.outputs["OUTPUT1"]), a - b)


def test_infer_lists_become_tensors(server: tritonserver.Server) -> None:
    (response,) = server.model("identity_int64").infer(inputs={"INPUT0": [[1, 2, 3]]})
    assert np.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [[1, 2, 3]]


def test_invalid_requests_raise_before_queuing(server: tritonserver.Server) -> None:
    model = server.model("simple")
    short = np.zeros((1, 8), dtype=np.int32)
    with pytest.raises(tritonserver.InvalidArgumentError):
        model.infer(inputs=simple_inputs(short, short))
    with pytest.raises(tritonserver.InvalidArgumentError):
        model.infer(inputs={"INPUT0": object()})
    with pytest.raises(tritonserver.InvalidArgumentError, match="flags"):
        model.infer(inputs={}, flags=8)
    with pytest.raises(tritonserver.InvalidArgumentError, match="parameter"):
        model.infer(inputs={}, parameters={"p": [1]})
    with pytest.raises(tritonserver.InvalidArgumentError, match="timeout"):
        model.infer(inputs={}, timeout=-1)
    with pytest.raises(tritonserver.InvalidArgumentError, match="SimpleQueue"):
        model.infer(inputs={}, response_queue=asyncio.Queue())


def test_bytes_round_trip(server: tritonserver.Server) -> None:
    words = [["hello", "wörld"], ["", "x" * 1000]]
    tensor = tritonserver.Tensor.from_string_array(words)
    (response,) = server.model("identity_bytes").infer(inputs={"INPUT0": tensor})
    output = response.outputs["OUTPUT0"]
    assert output.data_type is tritonserver.DataType.BYTES and list(output.shape) == [2, 2]
    assert output.to_string_array().tolist() == words
    assert output.to_bytes_array()[0, 1] == "wörld".encode()
    numbers = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    (response,) = server.model("simple_string").infer(inputs=simple_inputs(numbers, numbers))
    assert response.outputs["OUTPUT0"].to_string_array().tolist() == [
        [str(2 * i) for i in range(16)]
    ]


def test_dlpack_output_round_trip(server: tritonserver.Server) -> None:
    data = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float16)
    (response,) = server.model("identity_fp16").infer(inputs={"INPUT0": data})
    output = response.outputs["OUTPUT0"]
    assert output.memory_type is tritonserver.MemoryType.CPU
    back = np.from_dlpack(output)
    assert back.dtype == np.float16 and np.array_equal(back, data)
    again = tritonserver.Tensor.from_dlpack(back)
    assert again.data_ptr == output.data_ptr  # shared, no copy
    assert output.to_host() is output


def test_decoupled_model_yields_every_response_then_final(server: tritonserver.Server) -> None:
    responses = list(server.model("repeat_int32").infer(inputs=repeat_inputs([4, 2, 0, 1])))
    data = [r for r in responses if r.outputs]
    assert [int(np.from_dlpack(r.outputs["OUT"])[0]) for r in data] == [4, 2, 0, 1]
    assert [int(np.from_dlpack(r.outputs["IDX"])[0]) for r in data] == [0, 1, 2, 3]
    assert responses[-1].final and not any(r.final for r in responses[:-1])
    assert len(responses) == 5 and responses[-1].outputs == {}


def test_sequence_flags_and_correlation_id(server: tritonserver.Server) -> None:
    model = server.model("simple_sequence")
    flags = tritonserver.RequestFlag

    def step(value: int, flag: int = 0, correlation_id: int | str | None = 4242) -> int:
        (response,) = model.infer(
            inputs={"INPUT": np.array([[value]], dtype=np.int32)},
            correlation_id=correlation_id,
            flags=flag,
        )
        return int(np.from_dlpack(response.outputs["OUTPUT"])[0, 0])

    assert step(10, flags.SEQUENCE_START) == 11  # OUTPUT = INPUT + START
    assert step(5) == 5
    assert step(7, flags.SEQUENCE_END) == 7
    with pytest.raises(tritonserver.InvalidArgumentError, match="START"):
        step(1)
    with pytest.raises(tritonserver.InvalidArgumentError, match="correlation ID"):
        step(1, correlation_id=None)


def test_create_request_and_parameters(server: tritonserver.Server) -> None:
    model = server.model("slow")
    request = model.create_request(request_id="r7", parameters={"note": "x", "n": 1, "ok": True})
    assert request.model is model and request.request_id == "r7"
    request.inputs["INPUT0"] = np.array([3], dtype=np.int32)
    request.inputs["DELAY_MS"] = np.array([0], dtype=np.uint32)
    (response,) = model.infer(request)
    assert response.request_id == "r7"
    assert np.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [3]


def test_raise_on_error_true_raises_false_returns_error(server: tritonserver.Server) -> None:
    bad = np.array([[b"not-a-number"] * 16], dtype=np.object_)
    model = server.model("simple_string")
    with pytest.raises(tritonserver.InvalidArgumentError, match="decimal integers"):
        list(model.infer(inputs=simple_inputs(bad, bad)))
    responses = list(model.infer(inputs=simple_inputs(bad, bad), raise_on_error=False))
    assert len(responses) == 1
    error = responses[0].error
    assert isinstance(error, tritonserver.InvalidArgumentError) and responses[0].final
    assert responses[0].outputs == {}


def slow_inputs(delay_ms: int) -> dict[str, Any]:
    return {
        "INPUT0": np.array([1], dtype=np.int32),
        "DELAY_MS": np.array([delay_ms], dtype=np.uint32),
    }


def test_cancel_stops_a_running_request(server: tritonserver.Server) -> None:
    model = server.model("slow")
    responses = model.infer(inputs=slow_inputs(5000), raise_on_error=False)
    threading.Timer(0.2, responses.cancel).start()
    started = time.monotonic()
    (response,) = list(responses)
    assert time.monotonic() - started < 3
    assert isinstance(response.error, tritonserver.CancelledError) and response.final
    responses.cancel()  # after the final response: no-op
    again = model.infer(inputs=slow_inputs(5000))
    again.cancel()
    with pytest.raises(tritonserver.CancelledError):
        next(again)


def test_timeout_needs_a_queue_policy(server: tritonserver.Server) -> None:
    # As in Triton, a request's timeout (µs) counts only where the model's queue policy
    # allows overriding a default timeout; `slow` has none, so the request completes.
    # (tests/test_core_server.py covers a model with such a policy.)
    started = time.monotonic()
    (response,) = server.model("slow").infer(
        inputs=slow_inputs(300), timeout=50_000, raise_on_error=False
    )
    assert time.monotonic() - started >= 0.3
    assert response.error is None


def test_response_queue_receives_responses_too(server: tritonserver.Server) -> None:
    user_queue: queue.SimpleQueue[tritonserver.InferenceResponse] = queue.SimpleQueue()
    iterator = server.model("repeat_int32").infer(
        inputs=repeat_inputs([1, 2, 3]), response_queue=user_queue
    )
    from_iterator = list(iterator)
    from_queue = []
    while True:
        response = user_queue.get(timeout=10)
        from_queue.append(response)
        if response.final:
            break
    assert from_queue == from_iterator and len(from_queue) == 4
    assert user_queue.empty()


def test_output_memory_allocator_and_memory_type(server: tritonserver.Server) -> None:
    class NumpyAllocator(tritonserver.MemoryAllocator):
        def __init__(self) -> None:
            self.requests: list[tuple[int, tritonserver.MemoryType, int]] = []
            self.arrays: list[np.ndarray] = []

        def allocate(
            self, size: int, memory_type: tritonserver.MemoryType, memory_type_id: int
        ) -> tritonserver.MemoryBuffer:
            self.requests.append((size, memory_type, memory_type_id))
            array = np.empty(size, dtype=np.uint8)
            self.arrays.append(array)
            return tritonserver.MemoryBuffer.from_dlpack(array)

    allocator = NumpyAllocator()
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    (response,) = server.model("identity_fp64").infer(
        inputs={"INPUT0": data}, output_memory_allocator=allocator
    )
    output = response.outputs["OUTPUT0"]
    assert allocator.requests == [(48, tritonserver.MemoryType.CPU, 0)]
    assert output.memory_buffer.owner is allocator.arrays[0]
    assert output.data_ptr == allocator.arrays[0].ctypes.data
    assert np.array_equal(np.from_dlpack(output), data)
    (response,) = server.model("identity_fp64").infer(
        inputs={"INPUT0": data}, output_memory_type="cpu"
    )
    assert np.array_equal(np.from_dlpack(response.outputs["OUTPUT0"]), data)
    with pytest.raises(tritonserver.UnsupportedError, match="host"):
        server.model("identity_fp64").infer(inputs={"INPUT0": data}, output_memory_type="gpu")


# -- asyncio -------------------------------------------------------------------------------------
def test_async_infer_does_not_block_the_loop(server: tritonserver.Server) -> None:
    async def main() -> tuple[list[tritonserver.InferenceResponse], int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        responses = []
        iterator = server.model("repeat_int32").async_infer(inputs=repeat_inputs([7, 8, 9], 100))
        assert isinstance(iterator, tritonserver.AsyncResponseIterator)
        async for response in iterator:
            responses.append(response)
        done.set()
        await task
        return responses, ticks

    responses, ticks = asyncio.run(main())
    values = [int(np.from_dlpack(r.outputs["OUT"])[0]) for r in responses if r.outputs]
    assert values == [7, 8, 9] and responses[-1].final
    assert ticks >= 10  # the loop ran while the ~300 ms of responses were awaited


def test_async_response_queue_and_errors(server: tritonserver.Server) -> None:
    async def main() -> None:
        user_queue: asyncio.Queue[tritonserver.InferenceResponse] = asyncio.Queue()
        model = server.model("repeat_int32")
        got = [
            r
            async for r in model.async_infer(
                inputs=repeat_inputs([1, 2]), response_queue=user_queue
            )
        ]
        assert len(got) == 3 and user_queue.qsize() == 3
        assert [user_queue.get_nowait() for _ in range(3)] == got
        with pytest.raises(tritonserver.InvalidArgumentError, match=r"asyncio\.Queue"):
            model.async_infer(inputs=repeat_inputs([1]), response_queue=queue.SimpleQueue())
        bad = np.array([[b"?"] * 16], dtype=np.object_)
        failing = server.model("simple_string").async_infer(inputs=simple_inputs(bad, bad))
        with pytest.raises(tritonserver.InvalidArgumentError):
            await failing.__anext__()
        lenient = server.model("simple_string").async_infer(
            inputs=simple_inputs(bad, bad), raise_on_error=False
        )
        (response,) = [r async for r in lenient]
        assert isinstance(response.error, tritonserver.InvalidArgumentError)
        slow = server.model("slow").async_infer(inputs=slow_inputs(5000), raise_on_error=False)
        asyncio.get_running_loop().call_later(0.2, slow.cancel)
        (cancelled,) = [r async for r in slow]
        assert isinstance(cancelled.error, tritonserver.CancelledError)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_async_iterator_created_outside_a_loop(server: tritonserver.Server) -> None:
    iterator = server.model("repeat_int32").async_infer(inputs=repeat_inputs([5, 6]))
    time.sleep(0.2)  # responses arrive before any loop consumes them

    async def consume() -> list[bool]:
        return [r.final async for r in iterator]

    assert asyncio.run(consume()) == [False, False, True]


# -- model control -------------------------------------------------------------------------------
def test_explicit_mode_load_unload_with_parameters(tmp_path: Path) -> None:
    repo = copy_models(tmp_path, "simple", "identity_int32")
    options = tritonserver.Options()
    options.model_control_mode = tritonserver.ModelControlMode.EXPLICIT
    options.model_repository = str(repo)
    options.startup_models = ["identity_int32"]
    server = tritonserver.Server(options)
    server.start()
    try:
        assert str(server.models()) == (
            "{('identity_int32', 1): {'name': 'identity_int32', 'version': 1, 'state': "
            "'READY'}, ('simple', -1): {'name': 'simple', 'version': -1, 'state': None}}"
        )
        assert not server.model("simple").ready()
        loaded = server.load("simple")
        assert isinstance(loaded, tritonserver.Model) and loaded.ready()
        override = {
            "name": "simple",
            "backend": "python",
            "max_batch_size": 16,
            "input": [
                {"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]},
            ],
            "output": [
                {"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]},
            ],
        }
        server.load("simple", {"config": json.dumps(override)})
        assert server.model("simple").config()["max_batch_size"] == 16
        big = np.zeros((12, 16), dtype=np.int32)
        (response,) = server.model("simple").infer(inputs=simple_inputs(big, big))
        assert list(response.outputs["OUTPUT0"].shape) == [12, 16]
        # A model uploaded as files.
        config = server.model("identity_int32").config()
        config["name"] = "uploaded"
        code = (MODELS / "identity_int32" / "1" / "model.py").read_bytes()
        uploaded = server.load("uploaded", {"config": json.dumps(config), "file:1/model.py": code})
        (response,) = uploaded.infer(inputs={"INPUT0": np.array([[1, 2]], dtype=np.int32)})
        assert np.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [[1, 2]]
        with pytest.raises(tritonserver.InvalidArgumentError, match="must be bytes"):
            server.load("uploaded", {"config": json.dumps(config), "file:1/model.py": "text"})
        with pytest.raises(tritonserver.InvalidArgumentError, match="'config'"):
            server.load("uploaded", {"config": 3})
        # Triton's core words for a config it cannot use: its repository poll failed.
        with pytest.raises(tritonserver.InternalError, match="failed to poll from model"):
            server.load("uploaded", {"config": "{not json"})
        assert uploaded.ready()  # a failed reload keeps the old version serving
        server.unload(server.model("simple"), wait_until_unloaded=True, timeout=10)
        assert server.models()[("simple", 1)].state == "UNAVAILABLE"
        assert not server.model("simple").ready()
        server.unload("uploaded", unload_dependents=True)
        assert not server.model("uploaded").ready()
        with pytest.raises(tritonserver.UnavailableError, match="polling is disabled"):
            server.poll_model_repository()
    finally:
        server.stop()


def test_load_and_unload_refused_outside_explicit_mode(server: tritonserver.Server) -> None:
    refused = "explicit model load / unload is not allowed if polling is enabled"
    with pytest.raises(tritonserver.UnavailableError, match=refused):
        server.load("simple")
    with pytest.raises(tritonserver.UnavailableError, match=refused):
        server.unload("simple")
    with pytest.raises(tritonserver.UnsupportedError, match="EXPLICIT"):
        server.register_model_repository(str(MODELS))
    with pytest.raises(tritonserver.UnsupportedError, match="EXPLICIT"):
        server.unregister_model_repository(str(MODELS))
    with pytest.raises(tritonserver.UnavailableError, match="polling is disabled"):
        server.poll_model_repository()


def test_register_and_unregister_model_repository(tmp_path: Path) -> None:
    first = copy_models(tmp_path, "simple", folder="first")
    second = copy_models(tmp_path, "identity_int32", "identity_fp32", folder="second")
    server = tritonserver.Server(
        model_repository=str(first), model_control_mode=tritonserver.ModelControlMode.EXPLICIT
    ).start()
    try:
        assert set(server.models()) == {("simple", -1)}
        server.register_model_repository(str(second), {"identity_int32": "renamed"})
        assert set(server.models()) == {("simple", -1), ("renamed", -1), ("identity_fp32", -1)}
        renamed = server.load("renamed")
        assert renamed.config()["name"] == "renamed"
        (response,) = renamed.infer(inputs={"INPUT0": np.array([[9]], dtype=np.int32)})
        assert np.from_dlpack(response.outputs["OUTPUT0"]).tolist() == [[9]]
        with pytest.raises(tritonserver.NotFoundError):
            server.model("identity_int32").metadata()
        with pytest.raises(tritonserver.InternalError):
            server.load("identity_int32")  # the mapped folder is served as "renamed" only
        with pytest.raises(tritonserver.AlreadyExistsError, match="already been registered"):
            server.register_model_repository(str(second))
        third = copy_models(tmp_path, "identity_int8", folder="third")
        with pytest.raises(tritonserver.AlreadyExistsError, match="conflicting mapping"):
            server.register_model_repository(str(third), {"identity_int8": "renamed"})
        assert ("identity_int8", -1) not in server.models()  # a refused registration adds nothing
        with pytest.raises(tritonserver.InvalidArgumentError, match="repository not found"):
            server.register_model_repository(str(tmp_path / "missing"))
        assert server.unregister_model_repository(str(second)) is server
        keys = set(server.models())
        assert ("identity_fp32", -1) not in keys and ("simple", -1) in keys
        assert renamed.ready()  # loaded models stay loaded
        with pytest.raises(tritonserver.InvalidArgumentError, match="repository not found"):
            server.unregister_model_repository(str(second))
        with pytest.raises(tritonserver.InternalError):
            server.load("identity_fp32")
        server.register_model_repository(str(second))
        assert server.load("identity_int32").ready()  # unmapped now: served under its own name
    finally:
        server.stop()


def test_poll_mode_applies_changes_when_asked(tmp_path: Path) -> None:
    repo = copy_models(tmp_path, "identity_int32")
    server = tritonserver.Server(
        model_repository=str(repo), model_control_mode=tritonserver.ModelControlMode.POLL
    ).start(wait_until_ready=True, timeout=10)
    try:
        shutil.copytree(MODELS / "identity_fp32", repo / "identity_fp32")
        time.sleep(0.1)
        assert not server.model("identity_fp32").ready()  # no background polling
        assert server.poll_model_repository() is server
        assert server.model("identity_fp32").ready()
        shutil.rmtree(repo / "identity_int32")
        server.poll_model_repository()
        assert not server.model("identity_int32").ready()
    finally:
        server.stop()
