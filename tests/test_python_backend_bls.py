"""Business logic scripting and model control from inside models, through a fake runtime."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.types import InferRequest, InferResponse
from mock_server.python_backend import PythonBackendModel
from tests.test_python_backend import (
    Collector,
    Loader,
    core_tensor,
    make_config,
    make_request,
    only,
    output,
    write_model,
)


@pytest.fixture(params=["process", "thread"])
def load(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Loader]:
    """Models run in both isolation modes: in stub processes (the default) and in this
    process."""
    loader = Loader(tmp_path, request.param)
    yield loader
    loader.close()


def doubler(request: InferRequest) -> Iterator[InferResponse]:
    data = request.input("IN")
    assert data is not None
    yield InferResponse(
        "target", "1", request.id, outputs=[core_tensor("OUT", data.data * 2)], parameters={"p": 1}
    )


def streamer(request: InferRequest) -> Iterator[InferResponse]:
    data = request.input("IN")
    assert data is not None
    for value in range(int(data.data[0])):
        yield InferResponse(
            "stream", "1", request.id, outputs=[core_tensor("OUT", np.array([value]))], final=False
        )
    yield InferResponse("stream", "1", request.id, final=True)


BLS_EXEC = """
    import json
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            responses = []
            for request in requests:
                target = json.loads(request.parameters())["target"]
                inference_request = pb_utils.InferenceRequest(
                    model_name=target,
                    requested_output_names=["OUT"],
                    inputs=[pb_utils.get_input_tensor_by_name(request, "IN")],
                    request_id="inner", correlation_id=4, model_version=1,
                    flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
                    timeout=5_000_000, parameters={"key": "value"},
                    preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU, 0))
                inference_response = inference_request.exec()
                if inference_response.has_error():
                    error = inference_response.error()
                    responses.append(pb_utils.InferenceResponse(
                        error=pb_utils.TritonError("inner: " + error.message(), error.code())))
                    continue
                out = pb_utils.get_output_tensor_by_name(inference_response, "OUT")
                responses.append(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", out.as_numpy())],
                    parameters=json.loads(inference_response.parameters())))
            return responses
"""


def test_exec_runs_the_request_through_the_runtime(load: Loader) -> None:
    load.runtime.handlers["target"] = doubler
    instance = load(BLS_EXEC)
    collector = Collector()
    instance.execute(
        [
            make_request(
                {"IN": np.array([1, 2], np.int32)}, collector, parameters={"target": "target"}
            )
        ]
    )
    response = only(collector)
    assert response.error is None, response.error
    assert output(response, "OUT").tolist() == [2, 4]
    assert response.parameters == {"p": 1}
    (sent,) = load.runtime.requests
    assert sent.model_name == "target" and sent.model_version == 1 and sent.id == "inner"
    assert [o.name for o in sent.outputs] == ["OUT"]
    assert [(t.name, t.datatype, t.shape) for t in sent.inputs] == [("IN", "INT32", (2,))]
    assert sent.correlation_id == 4 and sent.sequence_start and not sent.sequence_end
    assert sent.timeout_us == 5_000_000 and sent.parameters == {"key": "value"}


@pytest.mark.parametrize("where", ["call", "iteration"])
def test_exec_errors_come_back_as_error_responses(load: Loader, where: str) -> None:
    if where == "iteration":

        def failing(request: InferRequest) -> Iterator[InferResponse]:
            raise ServerError.invalid_arg("unexpected inference input 'IN'")
            yield  # pragma: no cover

        load.runtime.handlers["target"] = failing
    instance = load(BLS_EXEC)
    collector = Collector()
    instance.execute(
        [make_request({"IN": np.array([1])}, collector, parameters={"target": "target"})]
    )
    error = only(collector).error
    assert error is not None
    # In the Python backend's words, with its code (INTERNAL) whatever the server's was.
    assert error.kind is ErrorKind.INTERNAL
    if where == "call":
        assert error.message == (
            "inner: Model target - Error when running inference: Failed for execute the "
            "inference request. Model 'target' is not ready."
        )
    else:
        assert error.message == (
            "inner: Model target - Error when running inference: unexpected inference input 'IN'"
        )


def test_exec_of_a_streaming_model_needs_decoupled(load: Loader) -> None:
    load.runtime.handlers["stream"] = streamer
    instance = load(BLS_EXEC)
    collector = Collector()
    instance.execute(
        [make_request({"IN": np.array([3])}, collector, parameters={"target": "stream"})]
    )
    error = only(collector).error
    assert error is not None and "decoupled=True" in error.message


BLS_DECOUPLED = """
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            responses = []
            for request in requests:
                inference_request = pb_utils.InferenceRequest(
                    model_name="stream", requested_output_names=["OUT"],
                    inputs=[pb_utils.get_input_tensor_by_name(request, "IN")])
                values, empty_last = [], False
                for inference_response in inference_request.exec(decoupled=True):
                    if inference_response.has_error():
                        raise pb_utils.TritonModelException(inference_response.error().message())
                    if len(inference_response.output_tensors()) > 0:
                        out = pb_utils.get_output_tensor_by_name(inference_response, "OUT")
                        values.extend(out.as_numpy().tolist())
                    else:
                        empty_last = True
                responses.append(pb_utils.InferenceResponse([
                    pb_utils.Tensor("VALUES", np.array(values, np.int64)),
                    pb_utils.Tensor("EMPTY_LAST", np.array([empty_last]))]))
            return responses
"""


def test_exec_decoupled_iterates_every_response(load: Loader) -> None:
    load.runtime.handlers["stream"] = streamer
    instance = load(BLS_DECOUPLED)
    collector = Collector()
    instance.execute([make_request({"IN": np.array([4])}, collector)])
    response = only(collector)
    assert output(response, "VALUES").tolist() == [0, 1, 2, 3]
    assert output(response, "EMPTY_LAST").tolist() == [True]


BLS_ASYNC = """
    import asyncio
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        async def execute(self, requests):
            responses = []
            for request in requests:
                tensor = pb_utils.get_input_tensor_by_name(request, "IN")
                inference_request = pb_utils.InferenceRequest(
                    model_name="target", requested_output_names=["OUT"], inputs=[tensor])
                infer_response_awaits = [inference_request.async_exec() for _ in range(3)]
                infer_responses = await asyncio.gather(*infer_response_awaits)
                doubled = [
                    int(pb_utils.get_output_tensor_by_name(r, "OUT").as_numpy()[0])
                    for r in infer_responses
                ]
                stream_request = pb_utils.InferenceRequest(
                    model_name="stream", requested_output_names=["OUT"], inputs=[tensor])
                async_responses = await asyncio.gather(
                    stream_request.async_exec(decoupled=True),
                    stream_request.async_exec(decoupled=True))
                counted = [len(list(iterator)) for iterator in async_responses]
                iterator = await stream_request.async_exec(decoupled=True)
                async_counted = 0
                async for _ in iterator:
                    async_counted += 1
                missing = await pb_utils.InferenceRequest(
                    model_name="nope", requested_output_names=[], inputs=[]).async_exec()
                responses.append(pb_utils.InferenceResponse([
                    pb_utils.Tensor("DOUBLED", np.array(doubled)),
                    pb_utils.Tensor("COUNTED", np.array(counted + [async_counted])),
                    pb_utils.Tensor("MISSING", np.array([missing.error().code()]))]))
            return responses
"""


def test_async_exec(load: Loader) -> None:
    load.runtime.handlers["target"] = doubler
    load.runtime.handlers["stream"] = streamer
    instance = load(BLS_ASYNC)
    collector = Collector()
    instance.execute([make_request({"IN": np.array([2])}, collector)])
    response = only(collector)
    assert response.error is None, response.error
    assert output(response, "DOUBLED").tolist() == [4, 4, 4]
    assert output(response, "COUNTED").tolist() == [3, 3, 3]  # 2 values + the empty final
    # An unknown model: INTERNAL "... is not ready.", as Triton's Python backend answers.
    assert output(response, "MISSING").tolist() == [1]
    assert len(load.runtime.requests) == 7


BLS_ASYNC_DECOUPLED_FREES_THE_LOOP = """
    import asyncio
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        async def execute(self, requests):
            gated = pb_utils.InferenceRequest(
                model_name="gated", requested_output_names=["OUT"], inputs=[]
            ).async_exec(decoupled=True)

            async def consume():
                iterator = await gated
                return [  # a plain for, as Triton's QA model async_execute_decouple_bls has
                    int(pb_utils.get_output_tensor_by_name(r, "OUT").as_numpy()[0])
                    for r in iterator
                ]

            consumer = asyncio.ensure_future(consume())
            await asyncio.sleep(0.2)  # consume() is waiting for the gated model's answer
            await pb_utils.InferenceRequest(
                model_name="opener", requested_output_names=[], inputs=[]).async_exec()
            values = await consumer
            return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(values))])]
"""


def test_async_exec_decoupled_resolves_with_the_first_response(load: Loader) -> None:
    # As Triton's stub (QA async_execute, test_concurrent_execute_multi_request_bls): awaiting
    # async_exec(decoupled=True) resolves once the first response is there, so the event loop
    # stays free for the model's other coroutines while the called model works. Here the
    # called model answers only after the calling model's next BLS request arrived.
    opened = threading.Event()

    def gated(request: InferRequest) -> Iterator[InferResponse]:
        value = 1 if opened.wait(10) else 0  # 0: the caller's event loop was held up
        yield InferResponse(
            "gated", "1", request.id, outputs=[core_tensor("OUT", np.array([value]))]
        )

    def opener(request: InferRequest) -> Iterator[InferResponse]:
        opened.set()
        yield InferResponse("opener", "1", request.id)

    load.runtime.handlers["gated"] = gated
    load.runtime.handlers["opener"] = opener
    instance = load(BLS_ASYNC_DECOUPLED_FREES_THE_LOOP)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    response = collector.wait(1, timeout=30)[-1]
    assert response.error is None, response.error
    assert output(response, "OUT").tolist() == [1]


BLS_TIMEOUT = """
    import time
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            start = time.monotonic()
            response = pb_utils.InferenceRequest(
                model_name="slow", requested_output_names=[], inputs=[],
                timeout=100_000).exec()
            elapsed = time.monotonic() - start
            error = response.error() or pb_utils.TritonError("", pb_utils.TritonError.UNKNOWN)
            code = int(error.code()) if response.has_error() else -1
            return [pb_utils.InferenceResponse([
                pb_utils.Tensor("CODE", np.array([code])),
                pb_utils.Tensor("MESSAGE", np.array([error.message()], dtype=object)),
                pb_utils.Tensor("ELAPSED", np.array([elapsed]))])]
"""


def test_exec_timeout_is_the_servers_not_a_deadline(load: Loader) -> None:
    """As Triton 2.51: the time-out travels with the request (the server expires it while
    queued); a target that runs longer still answers (read on Triton: a BLS request with a
    1.2 ms or 100 ms time-out to a model that sleeps 1 s gets its response after 1 s)."""

    def slow(request: InferRequest) -> Iterator[InferResponse]:
        time.sleep(0.3)
        yield InferResponse("slow", "1", request.id)

    load.runtime.handlers["slow"] = slow
    instance = load(BLS_TIMEOUT)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    response = only(collector)
    assert output(response, "CODE").tolist() == [-1]  # no error
    assert output(response, "ELAPSED")[0] >= 0.3
    assert load.runtime.requests[0].timeout_us == 100_000
    assert not load.runtime.requests[0].cancelled.is_set()


def test_exec_of_a_request_the_server_expires(load: Loader) -> None:
    def expired(request: InferRequest) -> Iterator[InferResponse]:
        yield InferResponse(
            "slow", "1", request.id, error=ServerError.unavailable("Request timeout expired")
        )

    load.runtime.handlers["slow"] = expired
    instance = load(BLS_TIMEOUT)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    response = only(collector)
    assert output(response, "CODE").tolist() == [4]  # UNAVAILABLE
    assert output(response, "MESSAGE").tolist() == [b"Request timeout expired"]


BLS_CANCEL = """
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            iterator = pb_utils.InferenceRequest(
                model_name="cancellable", requested_output_names=[], inputs=[]).exec(decoupled=True)
            first = next(iterator)
            iterator.cancel()
            rest = list(iterator)
            codes = [int(r.error().code()) if r.has_error() else -1 for r in [first] + rest]
            return [pb_utils.InferenceResponse([pb_utils.Tensor("CODES", np.array(codes))])]
"""


def test_response_iterator_cancel(load: Loader) -> None:
    def cancellable(request: InferRequest) -> Iterator[InferResponse]:
        yield InferResponse("c", "1", request.id, final=False)
        if request.cancelled.wait(5):
            yield InferResponse(
                "c", "1", request.id, error=ServerError(ErrorKind.CANCELLED, "cancelled")
            )

    load.runtime.handlers["cancellable"] = cancellable
    instance = load(BLS_CANCEL)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert output(only(collector), "CODES").tolist() == [-1, 7]


# -- model control -------------------------------------------------------------------------------
CONTROL = """
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def initialize(self, args):
            self.model_name = "onnx_model"
            if not pb_utils.is_model_ready(model_name=self.model_name, model_version="1"):
                config = '{"backend":"onnxruntime"}'
                pb_utils.load_model(model_name=self.model_name, config=config,
                                    files={"file:1/model.onnx": b"weights"})

        def execute(self, requests):
            ready = pb_utils.is_model_ready(self.model_name)
            pb_utils.unload_model(model_name=self.model_name, unload_dependents=True)
            try:
                pb_utils.load_model("broken")
                message = ""
            except pb_utils.TritonModelException as exc:
                message = str(exc)
            return [pb_utils.InferenceResponse([
                pb_utils.Tensor("READY", np.array([ready])),
                pb_utils.Tensor("ERROR", np.array([message], dtype=object))]) for _ in requests]

        def finalize(self):
            try:
                pb_utils.load_model("late")
            except pb_utils.TritonModelException as exc:
                pb_utils.Logger.log_warn("finalize: " + str(exc))
"""


def test_model_control_goes_through_the_runtime(
    load: Loader, caplog: pytest.LogCaptureFixture
) -> None:
    instance = load(CONTROL)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    response = only(collector)
    assert output(response, "READY").tolist() == [True]
    assert output(response, "ERROR").tolist() == [b"failed to load 'broken'"]
    assert load.runtime.calls == [
        ("ready", "onnx_model", "1"),
        ("load", "onnx_model", '{"backend":"onnxruntime"}', {"file:1/model.onnx": b"weights"}),
        ("ready", "onnx_model", ""),
        ("unload", "onnx_model"),
        ("load", "broken", "", None),
    ]
    with caplog.at_level(logging.WARNING, logger="mock_server.model"):
        instance.finalize()
    (record,) = [r for r in caplog.records if r.name == "mock_server.model"]
    assert "load_model is not supported in the finalize function" in record.getMessage()
    assert record.model_name == "m"  # type: ignore[attr-defined]
    assert record.filename == "model.py"


def test_model_control_is_refused_in_auto_complete(tmp_path: Path) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            @staticmethod
            def auto_complete_config(config):
                pb_utils.load_model("other")
                return config

            def execute(self, requests):
                return None
    """
    model_dir = write_model(tmp_path, source, name="ac")
    with pytest.raises(ServerError) as info:
        PythonBackendModel.auto_complete(model_dir, 1, make_config("ac"), "model.py")
    assert "not supported in the auto_complete_config function" in info.value.message


BLS_FROM_THREAD = """
    import threading
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def _work(self, sender, tensor):
            response = pb_utils.InferenceRequest(
                model_name="target", requested_output_names=["OUT"], inputs=[tensor]).exec()
            out = pb_utils.get_output_tensor_by_name(response, "OUT")
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out.as_numpy())]),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        def execute(self, requests):
            for request in requests:
                tensor = pb_utils.Tensor(
                    "IN", pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy())
                threading.Thread(target=self._work,
                                 args=(request.get_response_sender(), tensor)).start()
            return None
"""


def test_bls_from_a_model_thread(load: Loader) -> None:
    load.runtime.handlers["target"] = doubler
    instance = load(BLS_FROM_THREAD, make_config(model_transaction_policy={"decoupled": True}))
    collector = Collector()
    instance.execute([make_request({"IN": np.array([21])}, collector)])
    assert output(only(collector), "OUT").tolist() == [42]


# -- two real models -----------------------------------------------------------------------------
class InstanceRuntime:
    """A BackendRuntime that runs requests on PythonModelInstances, one worker thread each."""

    def __init__(self) -> None:
        self.instances: dict[str, Any] = {}
        self.locks: dict[str, threading.Lock] = {}

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        instance = self.instances.get(request.model_name)
        if instance is None:
            raise ServerError.not_found(f"Request for unknown model: '{request.model_name}'")
        responses: queue.Queue[InferResponse] = queue.Queue()
        request.response_callback = responses.put

        def work() -> None:
            with self.locks[request.model_name]:
                instance.execute([request])

        threading.Thread(target=work, daemon=True).start()
        while True:
            response = responses.get(timeout=10)
            yield response
            if response.final:
                return

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        return model_name in self.instances

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        raise ServerError.unsupported("not here")

    def unload_model(self, model_name: str) -> None:
        raise ServerError.unsupported("not here")

    def server_stopping(self) -> bool:
        return False


REPEAT = """
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            for request in requests:
                sender = request.get_response_sender()
                for value in pb_utils.get_input_tensor_by_name(request, "IN").as_numpy():
                    sender.send(pb_utils.InferenceResponse(
                        [pb_utils.Tensor("OUT", np.array([value * 10]))]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
"""


def test_bls_between_two_python_models(tmp_path: Path) -> None:
    runtime = InstanceRuntime()
    created: list[Any] = []
    try:
        for name, source, config in (
            ("stream", REPEAT, make_config("stream", model_transaction_policy={"decoupled": True})),
            ("bls", BLS_DECOUPLED, make_config("bls")),
        ):
            model_dir = write_model(tmp_path, source, name=name)
            model = PythonBackendModel(name, model_dir, 1, config, "model.py", runtime)
            instance = model.create_instance(f"{name}_0", "CPU", 0)
            created.append(instance)
            runtime.instances[name] = instance
            runtime.locks[name] = threading.Lock()
        collector = Collector()
        request = make_request({"IN": np.array([1, 2, 3])}, collector, model_name="bls")
        start = time.monotonic()
        runtime.instances["bls"].execute([request])
        response = only(collector)
        assert response.error is None, response.error
        assert output(response, "VALUES").tolist() == [10, 20, 30]
        assert output(response, "EMPTY_LAST").tolist() == [True]
        assert time.monotonic() - start < 5
    finally:
        for instance in created:
            instance.finalize()


def test_request_parameters_reach_the_target(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                pb_utils.InferenceRequest(model_name=b"echo", requested_output_names=[], inputs=[],
                                          parameters={"a": 1, "b": "two", "c": False}).exec()
                return [pb_utils.InferenceResponse([]) for _ in requests]
    """

    def echo(request: InferRequest) -> Iterator[InferResponse]:
        yield InferResponse("echo", "1", request.id)

    load.runtime.handlers["echo"] = echo
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert only(collector).error is None
    assert load.runtime.requests[0].parameters == {"a": 1, "b": "two", "c": False}
    assert json.dumps(load.runtime.requests[0].parameters)
