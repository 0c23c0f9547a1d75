"""The Python-backend adapter: model.py files driven through PythonBackendModel/Instance.

Models are written into ``tmp_path`` as ``<name>/1/model.py`` and driven with core
``InferRequest`` objects whose ``response_callback`` collects the responses.  The helpers here
are also used by the other ``test_python_backend_*`` modules.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.types import InferRequest, InferResponse, RequestedOutput, Tensor
from mock_server.python_backend import PythonBackendModel, collect_metrics
from tritonclient.utils import np_to_triton_dtype

# -- helpers -------------------------------------------------------------------------------------


def write_model(
    root: Path,
    source: str,
    name: str = "m",
    version: int = 1,
    filename: str = "model.py",
    extra: dict[str, str] | None = None,
) -> Path:
    """Write ``<root>/<name>/<version>/<filename>`` (and ``extra`` files beside it)."""
    folder = root / name / str(version)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(textwrap.dedent(source), encoding="utf-8")
    for rel, text in (extra or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / name


def tensor_config(name: str, data_type: str, dims: list[int]) -> dict[str, Any]:
    return {"name": name, "data_type": data_type, "dims": dims}


def make_config(
    name: str = "m",
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": name,
        "backend": "python",
        "max_batch_size": 0,
        "input": inputs or [],
        "output": outputs or [],
    }
    config.update(extra)
    return config


class Collector:
    """A response_callback that records responses; wait() blocks for final responses."""

    def __init__(self) -> None:
        self.responses: list[InferResponse] = []
        self.threads: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, response: InferResponse) -> None:
        with self._cond:
            self.responses.append(response)
            self.threads.append(threading.current_thread().name)
            self._cond.notify_all()

    def finals(self) -> int:
        with self._cond:
            return sum(r.final for r in self.responses)

    def wait(self, finals: int = 1, timeout: float = 10.0) -> list[InferResponse]:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: sum(r.final for r in self.responses) >= finals, timeout
            )
            assert ok, f"got {self.responses!r}, expected {finals} final response(s)"
            return list(self.responses)


def core_tensor(name: str, array: Any) -> Tensor:
    array = np.asarray(array)
    datatype = np_to_triton_dtype(array.dtype)
    assert datatype is not None
    return Tensor(name, datatype, tuple(array.shape), array)


def make_request(
    inputs: dict[str, Any] | None = None,
    collector: Collector | None = None,
    model_name: str = "m",
    **fields: Any,
) -> InferRequest:
    return InferRequest(
        model_name=model_name,
        inputs=[core_tensor(k, v) for k, v in (inputs or {}).items()],
        response_callback=collector,
        **fields,
    )


def output(response: InferResponse, name: str) -> Any:
    for tensor in response.outputs:
        if tensor.name == name:
            return tensor.data
    raise AssertionError(f"no output {name!r} in {response!r}")


def only(collector: Collector) -> InferResponse:
    responses = collector.wait(1)
    assert len(responses) == 1, responses
    assert responses[0].final
    return responses[0]


class FakeRuntime:
    """A BackendRuntime whose inference is done by handlers registered per model name."""

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[[InferRequest], Iterator[InferResponse]]] = {}
        self.requests: list[InferRequest] = []
        self.calls: list[tuple[Any, ...]] = []
        self.ready: dict[str, bool] = {}
        #: Set when the test's "server" stops (Loader.close).
        self.stopping = False

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        self.requests.append(request)
        handler = self.handlers.get(request.model_name)
        if handler is None:
            raise ServerError.not_found(f"Request for unknown model: '{request.model_name}'")
        return handler(request)

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        self.calls.append(("ready", model_name, model_version))
        return self.ready.get(model_name, False)

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        self.calls.append(("load", model_name, config, files))
        if model_name == "broken":
            raise ServerError.invalid_arg("failed to load 'broken'")
        self.ready[model_name] = True

    def unload_model(self, model_name: str) -> None:
        self.calls.append(("unload", model_name))
        self.ready[model_name] = False

    def server_stopping(self) -> bool:
        return self.stopping


class Loader:
    """Loads models (in stub processes or in this process, as ``isolation`` says) and
    finalizes every instance at teardown."""

    def __init__(self, root: Path, isolation: str = "process") -> None:
        self.root = root
        self.isolation = isolation
        self.runtime = FakeRuntime()
        self.instances: list[Any] = []

    def __call__(
        self,
        source: str,
        config: dict[str, Any] | None = None,
        name: str = "m",
        instance_name: str | None = None,
        kind: str = "CPU",
        device_id: int = 0,
        extra: dict[str, str] | None = None,
        filename: str = "model.py",
        write: bool = True,
    ) -> Any:
        model_dir = self.root / name
        if write:
            model_dir = write_model(self.root, source, name, extra=extra, filename=filename)
        config = config if config is not None else make_config(name)
        model = PythonBackendModel(
            name, model_dir, 1, config, filename, self.runtime, isolation=self.isolation
        )
        instance = model.create_instance(instance_name or f"{name}_0", kind, device_id)
        self.instances.append(instance)
        return instance

    def close(self) -> None:
        """Stop as a server does: the custom metric families its instances kept at unload go
        with it, instead of staying in this process's registry, where every later server in
        the process would report them (as test_metrics' servers would)."""
        self.runtime.stopping = True
        for instance in self.instances:
            instance.finalize()


@pytest.fixture(params=["process", "thread"])
def load(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Loader]:
    """Models run in both isolation modes: in stub processes (the default) and in this
    process."""
    loader = Loader(tmp_path, request.param)
    yield loader
    loader.close()


@pytest.fixture
def load_in_process(tmp_path: Path) -> Iterator[Loader]:
    """Models run in this process, for tests that look inside the model object or module."""
    loader = Loader(tmp_path, "thread")
    yield loader
    loader.close()


# -- models --------------------------------------------------------------------------------------
ADD_SUB = """
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            responses = []
            for request in requests:
                in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
                in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
                responses.append(pb_utils.InferenceResponse(output_tensors=[
                    pb_utils.Tensor("OUTPUT0", (in0 + in1).astype(np.float32)),
                    pb_utils.Tensor("OUTPUT1", (in0 - in1).astype(np.float32)),
                ]))
            return responses
"""


# -- initialize ----------------------------------------------------------------------------------
def test_initialize_receives_every_documented_key(load: Loader) -> None:
    source = """
        import json
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.args = args

            def execute(self, requests):
                text = json.dumps(self.args)
                return [
                    pb_utils.InferenceResponse([pb_utils.Tensor("ARGS", np.array([text], object))])
                    for _ in requests
                ]
    """
    config = make_config(
        "argsmodel",
        outputs=[tensor_config("ARGS", "TYPE_STRING", [1])],
        parameters={"custom_key": {"string_value": "custom_value"}},
    )
    instance = load(
        source, config, name="argsmodel", instance_name="argsmodel_0_1", kind="GPU", device_id=3
    )
    collector = Collector()
    assert instance.execute([make_request(collector=collector, model_name="argsmodel")]) == []
    args = json.loads(output(only(collector), "ARGS")[0])
    assert args == {
        "model_config": json.dumps(config),
        "model_instance_kind": "GPU",
        "model_instance_name": "argsmodel_0_1",
        "model_instance_device_id": "3",
        "model_repository": str(load.root / "argsmodel"),
        "model_version": "1",
        "model_name": "argsmodel",
    }
    assert all(isinstance(v, str) for v in args.values())
    assert json.loads(args["model_config"])["parameters"] == {
        "custom_key": {"string_value": "custom_value"}
    }


def test_initialize_failure_is_a_clear_server_error(load: Loader) -> None:
    source = """
        class TritonPythonModel:
            def initialize(self, args):
                raise RuntimeError("no weights found")

            def execute(self, requests):
                return []
    """
    with pytest.raises(ServerError) as info:
        load(source, name="badinit")
    assert info.value.kind is ErrorKind.INTERNAL
    assert "badinit" in info.value.message
    assert "RuntimeError: no weights found" in info.value.message


@pytest.mark.parametrize(
    ("source", "kind", "fragment"),
    [
        # The Python backend stub's words (checked on Triton 2.51 by the conformance suite's
        # http/repository/load-file-* cases): the exception, then the model's frames.
        ("def broken(:\n", ErrorKind.INTERNAL, "SyntaxError: invalid syntax (model.py, line 1)"),
        (
            "import no_such_module_xyz\n",
            ErrorKind.INTERNAL,
            "ModuleNotFoundError: No module named 'no_such_module_xyz'\n\nAt:\n  ",
        ),
        (
            "X = 1\n",
            ErrorKind.INTERNAL,
            "AttributeError: module '1.model' has no attribute 'TritonPythonModel'",
        ),
        (
            "class TritonPythonModel:\n    pass\n",
            ErrorKind.INVALID_ARG,
            "model 'unusable': class TritonPythonModel in",
        ),
    ],
)
def test_unusable_model_file_fails_the_load(
    load: Loader, source: str, kind: ErrorKind, fragment: str
) -> None:
    with pytest.raises(ServerError) as info:
        load(source, name="unusable")
    assert info.value.kind is kind
    assert info.value.message.startswith(fragment) or fragment in info.value.message


def test_missing_model_file_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "ghost" / "1").mkdir(parents=True)
    model = PythonBackendModel(
        "ghost", tmp_path / "ghost", 1, make_config("ghost"), "model.py", FakeRuntime()
    )
    with pytest.raises(ServerError) as info:
        model.create_instance("ghost_0", "CPU", 0)
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert "model.py" in info.value.message


def test_async_initialize_runs_on_the_event_loop(load: Loader) -> None:
    source = """
        import asyncio
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            async def initialize(self, args):
                await asyncio.sleep(0)
                self.value = 7

            def execute(self, requests):
                return [
                    pb_utils.InferenceResponse([pb_utils.Tensor("V", np.array([self.value]))])
                    for _ in requests
                ]
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert output(only(collector), "V").tolist() == [7]


# -- default mode --------------------------------------------------------------------------------
def test_add_sub_batch(load: Loader) -> None:
    instance = load(ADD_SUB)
    collectors = [Collector(), Collector()]
    requests = [
        make_request(
            {"INPUT0": np.arange(4, dtype=np.float32), "INPUT1": np.ones(4, np.float32) * k},
            collectors[k],
            id=f"req{k}",
        )
        for k in range(2)
    ]
    assert instance.execute(requests) == []
    for k, collector in enumerate(collectors):
        response = only(collector)
        assert response.error is None
        assert response.id == f"req{k}"
        assert response.model_name == "m" and response.model_version == "1"
        out0, out1 = response.outputs
        assert (out0.name, out0.datatype, out0.shape) == ("OUTPUT0", "FP32", (4,))
        np.testing.assert_array_equal(out0.data, np.arange(4) + k)
        np.testing.assert_array_equal(out1.data, np.arange(4) - k)


def test_error_response_codes_map_to_server_error_kinds(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                return [
                    pb_utils.InferenceResponse(error=pb_utils.TritonError("default code")),
                    pb_utils.InferenceResponse(
                        error=pb_utils.TritonError("The file is not found",
                                                   pb_utils.TritonError.NOT_FOUND)),
                    pb_utils.InferenceResponse(
                        error=pb_utils.TritonError("bad", pb_utils.TritonError.INVALID_ARG)),
                    pb_utils.InferenceResponse(
                        error=pb_utils.TritonError("gone", pb_utils.TritonError.CANCELLED)),
                ]
    """
    instance = load(source)
    collectors = [Collector() for _ in range(4)]
    instance.execute([make_request(collector=c) for c in collectors])
    got = [(only(c).error.kind, only(c).error.message) for c in collectors]  # type: ignore[union-attr]
    assert got == [
        (ErrorKind.INTERNAL, "default code"),
        (ErrorKind.NOT_FOUND, "The file is not found"),
        (ErrorKind.INVALID_ARG, "bad"),
        (ErrorKind.CANCELLED, "gone"),
    ]
    assert all(only(c).outputs == [] and only(c).final for c in collectors)


def test_exception_in_execute_fails_the_whole_batch(load: Loader) -> None:
    source = """
        class TritonPythonModel:
            def execute(self, requests):
                raise ValueError("boom")
    """
    instance = load(source, name="exploder")
    collectors = [Collector(), Collector()]
    assert (
        instance.execute([make_request(collector=c, model_name="exploder") for c in collectors])
        == []
    )
    for collector in collectors:
        error = only(collector).error
        assert error is not None and error.kind is ErrorKind.INTERNAL
        assert "exploder" in error.message and "ValueError: boom" in error.message


def test_wrong_number_of_responses_fails_every_request(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                return [pb_utils.InferenceResponse([])]
    """
    instance = load(source)
    collectors = [Collector(), Collector()]
    instance.execute([make_request(collector=c) for c in collectors])
    for collector in collectors:
        error = only(collector).error
        assert error is not None and error.kind is ErrorKind.INTERNAL
        assert error.message == (  # Triton 2.51's words, with its newline
            "Failed to process the request(s) for model 'm_0', message: Number of "
            "InferenceResponse objects do not match the number of InferenceRequest objects. "
            "InferenceRequest(s) size is:2, and InferenceResponse(s) size is:1\n"
        )


def test_non_response_items_fail_only_their_request(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                good = pb_utils.InferenceResponse([pb_utils.Tensor("X", np.array([1]))])
                return [good, "not a response", None]
    """
    instance = load(source)
    collectors = [Collector() for _ in range(3)]
    instance.execute([make_request(collector=c) for c in collectors])
    assert only(collectors[0]).error is None
    second = only(collectors[1]).error
    assert second is not None and second.message == (  # Triton 2.51's words
        "Failed to process the request(s) for model 'm_0', message: Expected an "
        "'InferenceResponse' object in the execute function return list, found type "
        "'<class 'str'>'."
    )
    third = only(collectors[2]).error
    assert third is not None and "no InferenceResponse" in third.message


@pytest.mark.parametrize(("returned", "shown"), [("42", "int"), ("(None,)", "tuple")])
def test_execute_returning_a_non_list_fails_the_batch(
    load: Loader, returned: str, shown: str
) -> None:
    source = f"""
        class TritonPythonModel:
            def execute(self, requests):
                return {returned}
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    error = only(collector).error
    assert error is not None and error.message == (  # Triton 2.51's words, a tuple refused too
        "Failed to process the request(s) for model 'm_0', message: Expected a list in the "
        f"execute return, found type '<class '{shown}'>'."
    )


def test_response_parameters_reach_the_core(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                return [pb_utils.InferenceResponse([], parameters={"key": "value", "n": 3,
                                                                   "flag": True})
                        for _ in requests]
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert only(collector).parameters == {"key": "value", "n": 3, "flag": True}


def test_request_accessors(load: Loader) -> None:
    source = """
        import json
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                out = []
                for r in requests:
                    info = {
                        "id": r.request_id(),
                        "corr": r.correlation_id(),
                        "flags": r.flags(),
                        "params": json.loads(r.parameters()),
                        "params_type": type(r.parameters()).__name__,
                        "outputs": sorted(r.requested_output_names()),
                        "timeout": r.timeout(),
                        "model": r.model_name(),
                        "inputs": [t.name() for t in r.inputs()],
                    }
                    out.append(pb_utils.InferenceResponse(
                        [pb_utils.Tensor("INFO", np.array([json.dumps(info)], object))]))
                return out
    """
    config = make_config(
        outputs=[tensor_config("INFO", "TYPE_STRING", [1]), tensor_config("B", "TYPE_FP32", [1])]
    )
    instance = load(source, config)
    first, second = Collector(), Collector()
    requests = [
        make_request(
            {"A": np.zeros(1, np.float32)},
            first,
            id="r1",
            correlation_id=17,
            sequence_start=True,
            sequence_end=True,
            parameters={"a": 1, "b": "x", "c": True},
            outputs=[RequestedOutput("INFO")],
            timeout_us=250,
        ),
        make_request(collector=second, correlation_id="seq-a", sequence_end=True),
    ]
    instance.execute(requests)
    info = json.loads(output(only(first), "INFO")[0])
    assert info == {
        "id": "r1",
        "corr": 17,
        "flags": 3,
        "params": {"a": 1, "b": "x", "c": True},
        "params_type": "str",
        "outputs": ["INFO"],
        "timeout": 250,
        "model": "m",
        "inputs": ["A"],
    }
    info = json.loads(output(only(second), "INFO")[0])
    assert info["corr"] == "seq-a" and info["flags"] == 2
    assert info["outputs"] == ["B", "INFO"]  # none requested: all of the model's outputs
    assert info["params"] == {} and info["id"] == ""


def test_is_cancelled_reflects_request_cancel(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                responses = []
                for request in requests:
                    cancelled = request.is_cancelled()
                    assert cancelled == request.get_response_sender().is_cancelled()
                    if cancelled:
                        responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                            "Message", pb_utils.TritonError.CANCELLED)))
                    else:
                        responses.append(pb_utils.InferenceResponse(
                            [pb_utils.Tensor("OK", np.array([1]))]))
                return responses
    """
    instance = load(source)
    live, cancelled = Collector(), Collector()
    requests = [make_request(collector=live), make_request(collector=cancelled)]
    requests[1].cancel()
    instance.execute(requests)
    assert only(live).error is None
    error = only(cancelled).error
    assert error is not None and error.kind is ErrorKind.CANCELLED


# -- BYTES and BF16 ------------------------------------------------------------------------------
def test_bytes_inputs_and_str_outputs(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                out = []
                for r in requests:
                    data = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
                    types = sorted({type(x).__name__ for x in data.reshape(-1)})
                    upper = np.array([x.decode().upper() for x in data.reshape(-1)],
                                     dtype=object).reshape(data.shape)
                    out.append(pb_utils.InferenceResponse([
                        pb_utils.Tensor("UPPER", upper),
                        pb_utils.Tensor("UNICODE", np.array(["é", "日本"])),
                        pb_utils.Tensor("FIXED", np.array([b"ab", b"c"], dtype=np.bytes_)),
                        pb_utils.Tensor("MIXED", np.array([b"raw", "text", 5], dtype=object)),
                        pb_utils.Tensor("TYPES", np.array(types, dtype=object)),
                    ]))
                return out
    """
    instance = load(source)
    collector = Collector()
    data = np.array([[b"abc", b"x\x00y"]], dtype=object)
    instance.execute([make_request({"IN": data}, collector)])
    response = only(collector)
    assert response.error is None
    by_name = {t.name: t for t in response.outputs}
    assert by_name["UPPER"].datatype == "BYTES" and by_name["UPPER"].shape == (1, 2)
    assert by_name["UPPER"].data.tolist() == [[b"ABC", b"X\x00Y"]]
    assert by_name["UNICODE"].data.tolist() == ["é".encode(), "日本".encode()]
    assert by_name["UNICODE"].data.dtype == object
    assert by_name["FIXED"].data.tolist() == [b"ab", b"c"]
    assert by_name["MIXED"].data.tolist() == [b"raw", b"text", b"5"]
    assert by_name["TYPES"].data.tolist() == [b"bytes"]
    for tensor in response.outputs:
        assert tensor.datatype == "BYTES"
        assert all(type(x) is bytes for x in tensor.data.reshape(-1))


def test_unencodable_str_output_is_an_error_for_that_request(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                return [pb_utils.InferenceResponse(
                    [pb_utils.Tensor("S", np.array(["\\ud800"], dtype=object))])]
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    error = only(collector).error
    assert error is not None and "UTF-8" in error.message


def test_bf16_through_dlpack_and_numpy(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                out = []
                for r in requests:
                    tensor = pb_utils.get_input_tensor_by_name(r, "IN")
                    try:
                        tensor.as_numpy()
                    except pb_utils.TritonModelException as exc:
                        refused = str(exc)
                    doubled = pb_utils.Tensor.from_dlpack("VIA_NUMPY", tensor)  # __dlpack__
                    out.append(pb_utils.InferenceResponse([
                        pb_utils.Tensor.from_dlpack("VIA_DLPACK", tensor.to_dlpack()),
                        doubled,
                        pb_utils.Tensor("REFUSED", np.array([refused], dtype=object)),
                    ]))
                return out
    """
    instance = load(source)
    collector = Collector()
    data = np.array([[1.5, -2.0, 3.25]], dtype=ml_dtypes.bfloat16)
    instance.execute([make_request({"IN": data}, collector)])
    response = only(collector)
    assert response.error is None
    dl, num, refused = response.outputs
    # Triton 2.51's words (as_numpy() of a BF16 tensor is refused there).
    assert refused.data.tolist() == [
        b"Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
        b"from_dlpack() instead."
    ]
    assert (dl.datatype, num.datatype) == ("BF16", "BF16")
    assert dl.data.dtype == ml_dtypes.bfloat16 and dl.shape == (1, 3)
    np.testing.assert_array_equal(dl.data, data)
    np.testing.assert_array_equal(num.data.astype(np.float32), data.astype(np.float32))


# -- rescheduling --------------------------------------------------------------------------------
def test_reschedule_in_default_mode(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.idx = 0

            def execute(self, requests):
                responses = []
                for request in requests:
                    if self.idx == 0:
                        request.set_release_flags(
                            pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                        responses.append(None)
                        self.idx += 1
                    else:
                        responses.append(pb_utils.InferenceResponse(
                            [pb_utils.Tensor("RUN", np.array([self.idx]))]))
                        self.idx += 1
                return responses
    """
    instance = load(source)
    collector = Collector()
    request = make_request(collector=collector)
    assert instance.execute([request]) == [request]
    assert collector.responses == []
    assert instance.execute([request]) == []
    assert output(only(collector), "RUN").tolist() == [1]


def test_rescheduled_request_with_a_returned_response_fails(load: Loader) -> None:
    # Triton 2.51's words (QA request_rescheduling, wrong_return_type), its class shown as
    # the stub's extension module names it.
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                requests[0].set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                return [pb_utils.InferenceResponse([])]
    """
    instance = load(source)
    collector = Collector()
    assert instance.execute([make_request(collector=collector)]) == []
    error = only(collector).error
    assert error is not None and error.message == (
        "Failed to process the request(s) for model 'm_0', message: Expected a None object in "
        "the execute function return list for reschduled request, found type "
        "'<class 'c_python_backend_utils.InferenceResponse'>'."
    )


def test_reschedule_in_decoupled_mode(load: Loader) -> None:
    # The seed's example: IN=[2] gives OUT=1 (then reschedule) and OUT=0 (final).
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.reset_flag = True

            def execute(self, requests):
                for request in requests:
                    in_input = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
                    if self.reset_flag:
                        self.remaining_response = in_input[0]
                        self.reset_flag = False
                    response_sender = request.get_response_sender()
                    self.remaining_response -= 1
                    out_output = pb_utils.Tensor(
                        "OUT", np.array([self.remaining_response], np.int32))
                    response = pb_utils.InferenceResponse(output_tensors=[out_output])
                    if self.remaining_response <= 0:
                        response_sender.send(
                            response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                        self.reset_flag = True
                    else:
                        request.set_release_flags(
                            pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                        response_sender.send(response)
                return None
    """
    config = make_config(model_transaction_policy={"decoupled": True})
    instance = load(source, config)
    collector = Collector()
    request = make_request({"IN": np.array([2], np.int32)}, collector)
    assert instance.execute([request]) == [request]
    assert [r.final for r in collector.responses] == [False]
    assert instance.execute([request]) == []
    responses = collector.wait(1)
    assert [output(r, "OUT").tolist() for r in responses] == [[1], [0]]
    assert [r.final for r in responses] == [False, True]


# -- response sender -----------------------------------------------------------------------------
DECOUPLED_THREAD = """
    import threading
    import time
    import numpy as np
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def initialize(self, args):
            self.errors = []
            self.threads = []

        def _respond(self, sender, count):
            time.sleep(0.05)
            for i in range(count):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i]))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            try:
                sender.send(pb_utils.InferenceResponse([]))
            except pb_utils.TritonModelException as exc:
                self.errors.append(str(exc))
            try:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            except pb_utils.TritonModelException as exc:
                self.errors.append(str(exc))

        def execute(self, requests):
            for request in requests:
                count = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
                worker = threading.Thread(
                    target=self._respond, args=(request.get_response_sender(), count))
                worker.start()
                self.threads.append(worker)
            return None

        def finalize(self):
            for worker in self.threads:
                worker.join(5)
"""


def test_decoupled_sends_from_another_thread_after_execute_returns(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    config = make_config(model_transaction_policy={"decoupled": True})
    instance = load(DECOUPLED_THREAD, config)
    three, none = Collector(), Collector()
    requests = [
        make_request({"N": np.array([3])}, three),
        make_request({"N": np.array([0])}, none),
    ]
    assert instance.execute(requests) == []
    assert three.responses == [] and none.responses == []  # nothing sent before execute returned
    responses = three.wait(1)
    assert [output(r, "OUT").tolist() for r in responses[:3]] == [[0], [1], [2]]
    assert [r.final for r in responses] == [False, False, False, True]
    assert responses[3].outputs == [] and responses[3].error is None  # empty final response
    assert all(name != threading.current_thread().name for name in three.threads)
    empty = none.wait(1)
    assert len(empty) == 1 and empty[0].final and empty[0].outputs == []
    model = instance._model
    deadline = time.monotonic() + 5
    while len(model.errors) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.errors == ["Unable to send response. Response sender has been closed."] * 4
    time.sleep(0.05)
    assert len(three.responses) == 4 and len(none.responses) == 1


def test_sender_argument_errors(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                sender = requests[0].get_response_sender()
                self.errors = []
                for call in (lambda: sender.send(),
                             lambda: sender.send(pb_utils.InferenceResponse([]), flags=4)):
                    try:
                        call()
                    except pb_utils.TritonModelException as exc:
                        self.errors.append(str(exc))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return None
    """
    instance = load(source, make_config(model_transaction_policy={"decoupled": True}))
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert only(collector).outputs == []
    assert instance._model.errors == [
        "Inference Response object must be provided when the response flags is set to zero.",
        "Unable to send response. Unsupported flag provided.",
    ]


def test_default_mode_may_answer_through_the_sender(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                self.errors = []
                one, two, three = requests
                resp = pb_utils.InferenceResponse([pb_utils.Tensor("X", np.array([1]))])
                # 1: response and final flag together
                one.get_response_sender().send(
                    resp, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                # 2: response, then a flags-only final
                s = two.get_response_sender()
                for call in (lambda: s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL),):
                    try:
                        call()
                    except pb_utils.TritonModelException as exc:
                        self.errors.append(str(exc))
                s.send(resp)
                try:
                    s.send(resp)
                except pb_utils.TritonModelException as exc:
                    self.errors.append(str(exc))
                s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                # 3: returned normally
                return [None, None, resp]
    """
    instance = load(source)
    collectors = [Collector() for _ in range(3)]
    instance.execute([make_request(collector=c) for c in collectors])
    for collector in collectors:
        response = only(collector)
        assert response.error is None and output(response, "X").tolist() == [1]
    assert instance._model.errors == [
        "Non-decoupled model cannot send complete final before sending a response.",
        "Non-decoupled model cannot send more than one response.",
    ]


def test_default_mode_response_sent_and_returned_is_answered_once(load: Loader) -> None:
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                resp = pb_utils.InferenceResponse([pb_utils.Tensor("X", np.array([1]))])
                requests[0].get_response_sender().send(
                    resp, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return [resp]
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    time.sleep(0.05)
    assert len(collector.responses) == 1 and collector.responses[0].error is None


def test_default_mode_sender_may_answer_after_execute_returned(load: Loader) -> None:
    # As Triton (QA response_sender, *_post_return): a default-mode model that took the
    # request's response sender and returned None answers later through it; a request the
    # model returned None for without taking its sender fails at once.
    source = """
        import threading
        import time
        import numpy as np
        import triton_python_backend_utils as pb_utils

        def later(sender):
            time.sleep(0.2)
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("X", np.array([7]))]),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        class TritonPythonModel:
            def execute(self, requests):
                taken, forgotten = requests
                threading.Thread(target=later, args=(taken.get_response_sender(),)).start()
                return None
    """
    instance = load(source)
    taken, forgotten = Collector(), Collector()
    instance.execute([make_request(collector=taken), make_request(collector=forgotten)])
    failed = only(forgotten)
    assert failed.error is not None and "sent none with its response sender" in str(failed.error)
    answered = only(taken)
    assert answered.error is None and output(answered, "X").tolist() == [7]


def test_default_mode_error_after_a_sent_response_follows_it(load: Loader) -> None:
    # As Triton (QA response_sender, non_decoupled_two_response_pre_return): the response a
    # default-mode model sent has left it; the error of the failing second send comes after it
    # (each frontend then does what Triton's does with the two, see the gRPC frontend tests).
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                sender = requests[0].get_response_sender()
                for value in (1, 2):
                    sender.send(pb_utils.InferenceResponse(
                        [pb_utils.Tensor("X", np.array([value]))]))
    """
    instance = load(source)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    first, last = collector.wait(1)
    assert not first.final and first.error is None and output(first, "X").tolist() == [1]
    assert last.final and last.error is not None
    assert "Non-decoupled model cannot send more than one response." in str(last.error)


def test_decoupled_execute_must_return_none(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                return [pb_utils.InferenceResponse([]) for _ in requests]
    """
    instance = load(source, make_config(model_transaction_policy={"decoupled": True}))
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    error = only(collector).error
    assert error is not None and "must return None" in error.message


def test_decoupled_exception_fails_only_open_requests(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                requests[0].get_response_sender().send(
                    pb_utils.InferenceResponse([]),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                raise KeyError("late")
    """
    instance = load(source, make_config(model_transaction_policy={"decoupled": True}))
    done, failed = Collector(), Collector()
    instance.execute([make_request(collector=done), make_request(collector=failed)])
    assert only(done).error is None
    error = only(failed).error
    assert error is not None and "KeyError" in error.message


# -- async execute -------------------------------------------------------------------------------
def test_async_execute_default_mode(load: Loader) -> None:
    source = """
        import asyncio
        import threading
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            async def execute(self, requests):
                await asyncio.sleep(0.01)
                asyncio.get_running_loop()
                name = threading.current_thread().name
                return [pb_utils.InferenceResponse([
                    pb_utils.Tensor("THREAD", np.array([name], dtype=object))]) for _ in requests]
    """
    instance = load(source)
    collectors = [Collector(), Collector()]
    instance.execute([make_request(collector=c) for c in collectors])
    for collector in collectors:
        thread = output(only(collector), "THREAD")[0].decode()
        assert thread != threading.current_thread().name and "asyncio" in thread


def test_async_execute_decoupled_overlaps_batches(load: Loader) -> None:
    source = """
        import asyncio
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.gate = None

            async def execute(self, requests):
                if self.gate is None:
                    self.gate = asyncio.Event()
                for request in requests:
                    sender = request.get_response_sender()
                    role = pb_utils.get_input_tensor_by_name(request, "ROLE").as_numpy()[0]
                    if role == 0:
                        await asyncio.wait_for(self.gate.wait(), 5)
                    else:
                        self.gate.set()
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("ROLE",
                                                                            np.array([role]))]),
                                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return None
    """
    instance = load(source, make_config(model_transaction_policy={"decoupled": True}))
    waiter, opener = Collector(), Collector()
    start = time.monotonic()
    assert instance.execute([make_request({"ROLE": np.array([0])}, waiter)]) == []
    assert waiter.responses == []  # still waiting on the gate; execute did not block
    assert instance.execute([make_request({"ROLE": np.array([1])}, opener)]) == []
    assert output(only(opener), "ROLE").tolist() == [1]
    assert output(only(waiter), "ROLE").tolist() == [0]
    assert time.monotonic() - start < 4


def test_async_decoupled_exception_fails_open_requests(load: Loader) -> None:
    source = """
        import asyncio

        class TritonPythonModel:
            async def execute(self, requests):
                await asyncio.sleep(0)
                raise RuntimeError("async failure")
    """
    instance = load(source, make_config(model_transaction_policy={"decoupled": True}))
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    error = only(collector).error
    assert error is not None and "RuntimeError: async failure" in error.message


# -- auto-complete -------------------------------------------------------------------------------
AUTO_COMPLETE = """
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        @staticmethod
        def auto_complete_config(auto_complete_model_config):
            inputs = [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
                      {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]}]
            outputs = [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}]
            config = auto_complete_model_config.as_dict()
            input_names = [i["name"] for i in config["input"]]
            for inp in inputs:
                if inp["name"] not in input_names:
                    auto_complete_model_config.add_input(inp)
            for out in outputs:
                auto_complete_model_config.add_output(out)
            auto_complete_model_config.set_max_batch_size(8)
            auto_complete_model_config.set_dynamic_batching()
            auto_complete_model_config.set_model_transaction_policy({"decoupled": True})
            return auto_complete_model_config

        def execute(self, requests):
            return None
"""


HOOK = """
    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        @staticmethod
        def auto_complete_config(config):
            {body}
            return config

        def execute(self, requests):
            return None
"""


def test_auto_complete_fills_in_the_config(tmp_path: Path) -> None:
    model_dir = write_model(tmp_path, AUTO_COMPLETE, name="auto")
    original = make_config("auto", inputs=[tensor_config("INPUT1", "TYPE_FP32", [4])])
    snapshot = json.loads(json.dumps(original))
    completed = PythonBackendModel.auto_complete(model_dir, 1, original, "model.py")
    assert original == snapshot  # the input is not modified
    assert completed["max_batch_size"] == 8
    assert completed["dynamic_batching"] == {}
    assert completed["model_transaction_policy"] == {"decoupled": True}
    assert completed["input"] == [
        tensor_config("INPUT1", "TYPE_FP32", [4]),
        {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
    ]
    assert completed["output"] == [tensor_config("OUTPUT0", "TYPE_FP32", [4])]


def test_auto_complete_without_hook_returns_the_config(tmp_path: Path) -> None:
    model_dir = write_model(tmp_path, ADD_SUB, name="plain")
    config = make_config("plain", inputs=[tensor_config("INPUT0", "TYPE_FP32", [4])])
    completed = PythonBackendModel.auto_complete(model_dir, 1, config, "model.py")
    assert completed == config and completed is not config


def test_auto_complete_merges_dims_given_as_strings(tmp_path: Path) -> None:
    body = 'config.add_input({"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]})'
    model_dir = write_model(tmp_path, HOOK.replace("{body}", body), name="auto")
    config = make_config(
        "auto", inputs=[{"name": "INPUT1", "data_type": "TYPE_INVALID", "dims": ["4"]}]
    )
    completed = PythonBackendModel.auto_complete(model_dir, 1, config, "model.py")
    assert completed["input"][0] == tensor_config("INPUT1", "TYPE_FP32", [4])


@pytest.mark.parametrize(
    ("config_extra", "body", "fragment"),
    [
        (
            {"input": [tensor_config("IN", "TYPE_INT32", [4])]},
            'config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4]})',
            "configuration expects datatype TYPE_INT32 for input 'IN', model provides TYPE_FP32",
        ),
        (
            {"input": [tensor_config("IN", "TYPE_FP32", [4])]},
            'config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [5]})',
            "the model expects dims [5] but the model configuration specifies dims [4]",
        ),
        (
            {"output": [tensor_config("OUT", "TYPE_FP32", [2])]},
            'config.add_output({"name": "OUT", "data_type": "TYPE_FP16", "dims": [2]})',
            "configuration expects datatype TYPE_FP32 for output 'OUT'",
        ),
        (
            {"input": [{**tensor_config("IN", "TYPE_FP32", [4]), "optional": False}]},
            'config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4],'
            ' "optional": True})',
            "the model expects optional True",
        ),
        (
            {},
            'config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [1], "x": 1})',
            "contains property other than 'name', 'data_type', 'dims' and 'optional'",
        ),
        ({}, 'config.add_output({"name": "OUT", "dims": [1]})', "missing 'data_type' property"),
        ({"max_batch_size": 16}, "config.set_max_batch_size(4)", "specified max_batch_size 4"),
        (
            {"sequence_batching": {}},
            "config.set_dynamic_batching()",
            "scheduling_choice as 'sequence_batching'",
        ),
        (
            {"model_transaction_policy": {"decoupled": False}},
            'config.set_model_transaction_policy({"decoupled": True})',
            "trying to change decoupled property",
        ),
        (
            {},
            'config.set_model_transaction_policy({"other": 1})',
            "contains property other than 'decoupled'",
        ),
    ],
)
def test_auto_complete_conflicts_fail_the_load(
    tmp_path: Path, config_extra: dict[str, Any], body: str, fragment: str
) -> None:
    model_dir = write_model(tmp_path, HOOK.replace("{body}", body), name="conflict")
    config = make_config("conflict")
    config.update(config_extra)
    with pytest.raises(ServerError) as info:
        PythonBackendModel.auto_complete(model_dir, 1, config, "model.py")
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert fragment in info.value.message
    assert "conflict" in info.value.message


def test_auto_complete_must_return_the_model_config(tmp_path: Path) -> None:
    source = HOOK.replace("{body}", "pass").replace("return config", "return None")
    model_dir = write_model(tmp_path, source, name="noreturn")
    with pytest.raises(ServerError) as info:
        PythonBackendModel.auto_complete(model_dir, 1, make_config("noreturn"), "model.py")
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert "must return a valid pb_utils.ModelConfig" in info.value.message


def test_auto_complete_exception_is_internal(tmp_path: Path) -> None:
    model_dir = write_model(tmp_path, HOOK.replace("{body}", "1 / 0"), name="zero")
    with pytest.raises(ServerError) as info:
        PythonBackendModel.auto_complete(model_dir, 1, make_config("zero"), "model.py")
    assert info.value.kind is ErrorKind.INTERNAL
    assert "ZeroDivisionError" in info.value.message and "zero" in info.value.message


# -- finalize and module loading -----------------------------------------------------------------
def test_finalize_is_called_and_its_errors_logged(
    load: Loader, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "finalized.txt"
    source = f"""
        class TritonPythonModel:
            def execute(self, requests):
                return []

            def finalize(self):
                with open({str(marker)!r}, "w") as handle:
                    handle.write("done")
                raise RuntimeError("cleanup failed")
    """
    instance = load(source)
    with caplog.at_level(logging.ERROR, logger="mock_server.python_backend"):
        instance.finalize()
    assert marker.read_text() == "done"
    assert "finalize of model 'm'" in caplog.text and "cleanup failed" in caplog.text
    instance.finalize()  # idempotent
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    error = only(collector).error
    assert error is not None and error.kind is ErrorKind.UNAVAILABLE


def test_same_file_and_sibling_names_do_not_collide(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils
        import utils
        from . import helper

        class TritonPythonModel:
            def execute(self, requests):
                from . import helper as late
                values = [utils.VALUE, helper.VALUE, late.VALUE, utils.nested()]
                return [pb_utils.InferenceResponse([pb_utils.Tensor("V", np.array(values))])
                        for _ in requests]
    """
    instances = {}
    for name, value in (("alpha", 1), ("beta", 2)):
        extra = {
            "utils.py": f"from pkg import sub\nVALUE = {value}\ndef nested():\n"
            "    return sub.VALUE\n",
            "helper.py": f"VALUE = {value * 10}\n",
            "pkg/__init__.py": "",
            "pkg/sub.py": f"VALUE = {value * 100}\n",
        }
        instances[name] = load(source, make_config(name), name=name, extra=extra)
    for name, value in (("alpha", 1), ("beta", 2)):
        collector = Collector()
        instances[name].execute([make_request(collector=collector, model_name=name)])
        assert output(only(collector), "V").tolist() == [value, value * 10, value * 10, value * 100]
    assert "utils" not in sys.modules and "pkg" not in sys.modules
    module_names = {instance._loaded.name for instance in instances.values()}
    assert len(module_names) == 2


def test_each_instance_imports_the_module_afresh(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    source = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        COUNTER = []

        class TritonPythonModel:
            def execute(self, requests):
                COUNTER.append(1)
                return [pb_utils.InferenceResponse([pb_utils.Tensor("N", np.array([len(COUNTER)]))])
                        for _ in requests]
    """
    first = load(source, instance_name="m_0")
    second = load(source, instance_name="m_1", write=False)
    for instance in (first, first, second):
        instance.execute([make_request(collector=Collector())])
    assert first._loaded.module.COUNTER == [1, 1]
    assert second._loaded.module.COUNTER == [1]


def test_reload_picks_up_edited_code(load_in_process: Loader) -> None:
    load = load_in_process  # looks inside the model object or module
    template = """
        import numpy as np
        import triton_python_backend_utils as pb_utils

        VALUE = {value}

        class TritonPythonModel:
            def execute(self, requests):
                return [pb_utils.InferenceResponse([pb_utils.Tensor("V", np.array([VALUE]))])
                        for _ in requests]
    """
    first = load(template.format(value=1))
    name = first._loaded.name
    first.finalize()
    assert name not in sys.modules
    second = load(template.format(value=2))  # same size, same second: no stale bytecode
    collector = Collector()
    second.execute([make_request(collector=collector)])
    assert output(only(collector), "V").tolist() == [2]
    assert not (load.root / "m" / "1" / "__pycache__").exists()


def test_custom_filename(load: Loader) -> None:
    instance = load(ADD_SUB, filename="custom_model.py")
    collector = Collector()
    instance.execute(
        [
            make_request(
                {"INPUT0": np.ones(2, np.float32), "INPUT1": np.ones(2, np.float32)}, collector
            )
        ]
    )
    assert output(only(collector), "OUTPUT0").tolist() == [2.0, 2.0]


def test_metrics_an_instance_holds_at_unload_stay(load: Loader) -> None:
    """As on Triton 2.51: what an unloaded model still holds stays reported, and the next load
    that creates the same family and metric continues its value."""
    # One family per isolation mode: both keep theirs in this process's registry.
    family_name = f"pb_test_requests_total_{load.isolation}"
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.family = pb_utils.MetricFamily(
                    name="FAMILY", description="requests seen",
                    kind=pb_utils.MetricFamily.COUNTER)
                self.metric = self.family.Metric(labels={"model": args["model_name"]})

            def execute(self, requests):
                self.metric.increment(len(requests))
                return [pb_utils.InferenceResponse([]) for _ in requests]
    """.replace("FAMILY", family_name)

    def values() -> list[tuple[dict[str, str], float | None]]:
        family = {f.name: f for f in collect_metrics()}[family_name]
        assert family.kind == "counter" and family.description == "requests seen"
        return [(m.labels, m.value) for m in family.metrics]

    instance = load(source)
    instance.execute([make_request(collector=Collector()), make_request(collector=Collector())])
    assert values() == [({"model": "m"}, 2.0)]
    instance.finalize()
    gc.collect()
    assert values() == [({"model": "m"}, 2.0)]
    again = load(source)
    again.execute([make_request(collector=Collector())])
    assert values() == [({"model": "m"}, 3.0)]


def test_metrics_a_model_deletes_in_finalize_go(load: Loader) -> None:
    source = """
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def initialize(self, args):
                self.family = pb_utils.MetricFamily(
                    name="pb_test_deleted", description="deleted at finalize",
                    kind=pb_utils.MetricFamily.GAUGE)
                self.metric = self.family.Metric(labels={})
                self.metric.set(4)

            def execute(self, requests):
                return [pb_utils.InferenceResponse([]) for _ in requests]

            def finalize(self):
                del self.metric
                del self.family
    """
    instance = load(source)
    assert "pb_test_deleted" in {f.name for f in collect_metrics()}
    instance.finalize()
    assert "pb_test_deleted" not in {f.name for f in collect_metrics()}


def test_data_folders_and_stdlib_names_do_not_shadow_modules(load: Loader) -> None:
    source = """
        import json
        import queue
        import numpy as np
        import triton_python_backend_utils as pb_utils

        class TritonPythonModel:
            def execute(self, requests):
                ok = hasattr(json, "dumps") and hasattr(queue, "Queue")
                return [pb_utils.InferenceResponse([pb_utils.Tensor("OK", np.array([ok]))])
                        for _ in requests]
    """
    extra = {"json/vocab.txt": "a b c\n", "queue.py": "BROKEN = True\n"}
    instance = load(source, extra=extra)
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert output(only(collector), "OK").tolist() == [True]


# -- readiness (current Triton: the model's own is_model_ready(), newer than Triton 2.51) ---------
READY_HOOK = """
    import asyncio
    import time

    import triton_python_backend_utils as pb_utils

    class TritonPythonModel:
        def execute(self, requests):
            return [pb_utils.InferenceResponse([]) for _ in requests]

        def is_model_ready(self):
            return ANSWER
"""


@pytest.mark.parametrize(
    ("answer", "ready"),
    [
        ("True", True),
        ("False", False),
        ("1", False),  # not a bool
        ("None", False),
        ("[][0]", False),  # raises
        ("asyncio.sleep(0, True)", True),  # a coroutine's result counts (current Triton)
        ("asyncio.sleep(0, False)", False),
        ("time.sleep(30)", False),  # too slow
    ],
    ids=["true", "false", "int", "none", "raises", "coroutine-true", "coroutine-false", "slow"],
)
def test_the_model_decides_its_readiness(load: Loader, answer: str, ready: bool) -> None:
    instance = load(READY_HOOK.replace("ANSWER", answer))
    start = time.monotonic()
    assert instance.ready(0.5) is ready
    assert time.monotonic() - start < 5
    collector = Collector()
    instance.execute([make_request(collector=collector)])
    assert only(collector).error is None  # readiness does not stop it from serving


def test_a_model_without_the_hook_is_ready_until_finalized(load: Loader) -> None:
    instance = load(READY_HOOK.replace("def is_model_ready", "def other"))
    assert instance.ready()
    instance.finalize()
    assert not instance.ready()
