"""Model instances in stub processes, as Triton runs them: a real ``python -m mock_server``
on free loopback ports, driven over HTTP.

What Triton 2.51 does was read on the real server (``tests/peers.py``'s install):

* a model file is the module ``1.model`` (``'model' in sys.modules`` is False in ``execute``),
  with its version and model folders on ``sys.path``, so ``import model`` and
  ``unittest.main("model")`` work;
* ``os._exit()`` or SIGKILL inside ``execute``: that request and every later one for the model
  fail with HTTP 500 ``Stub process '<instance>' is not healthy.``; other models keep serving;
  the model stays READY in the repository index;
* ``SystemExit(5)`` inside ``execute`` is an error like any other (``Failed to process the
  request(s) for model 'crash_0', message: SystemExit: 5`` and the traceback), and the model
  serves the next request;
* a model whose ``initialize`` raises at start-up makes ``tritonserver`` exit with status 1
  (``error: creating server: Internal - failed to load all models``), the exception text in its
  log.

Model readiness after a stub died, and a model's own ``is_model_ready()``, follow current
Triton's Python backend (its active health check, newer than 2.51, which reports a model with
a dead stub as ready and never calls such a hook): not ready.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conformance.pair import Endpoint, run_mock_server

TIMEOUT = 30.0

CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "IN" data_type: {dtype} dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: {dtype} dims: [ -1 ] }} ]
{extra}
"""

# One model with a behaviour per input value: echo (the default), report facts, or fail.
PROBE = """
import os
import signal
import sys
import unittest

import numpy as np
import triton_python_backend_utils as pb_utils

STATE = {"calls": 0}


class ModelFileTest(unittest.TestCase):
    def test_the_model_module_is_importable(self):
        import model

        self.assertTrue(hasattr(model, "TritonPythonModel"))


class TritonPythonModel:
    def initialize(self, args):
        if __name__ == "1.model":  # in a stub: it must not change how the server stops
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pb_utils.Logger.log_info(f"stub of {args['model_instance_name']} up")

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            STATE["calls"] += 1
            code = int(data.flat[0]) if data.size else 0
            if code == -1:
                os._exit(3)
            if code == -2:
                raise SystemExit(5)
            if code == -3:
                os.kill(os.getpid(), signal.SIGKILL)
            if code == -4:  # facts about the process the model runs in
                facts = [
                    os.getpid(),
                    os.getppid(),
                    int("model" in sys.modules),
                    int(__name__ == "1.model"),
                    int(os.path.dirname(os.path.abspath(__file__)) in sys.path),
                    STATE["calls"],
                ]
                data = np.array(facts, dtype=data.dtype)
            if code == -6:  # a message the server cannot read on the stub's channel
                from mock_server.python_backend import _stub

                from mock_server.python_backend import _ipc

                os.write(_stub._stub.channel.fileno(), _ipc._HEADER.pack(4) + b"junk")
            if code == -7:  # an exception that escapes the stub's own code
                raise KeyboardInterrupt("stop here")
            if code == -5:  # run the model file's own unittest, as Triton's QA models do
                result = unittest.main("model", argv=["model"], exit=False).result
                data = np.array([result.testsRun, len(result.failures) + len(result.errors)],
                                dtype=data.dtype)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", data)]))
        return responses
"""


def write_model(
    repo: Path, name: str, source: str, dtype: str = "TYPE_INT64", extra: str = ""
) -> None:
    folder = repo / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(CONFIG.format(name=name, dtype=dtype, extra=extra))
    (folder / "1" / "model.py").write_text(textwrap.dedent(source))


def infer(server: Endpoint, model: str, data: np.ndarray[Any, Any]) -> tuple[int, Any]:
    """POST an inference of ``data`` as input IN; (status, parsed body)."""
    datatype = {"int64": "INT64", "float32": "FP32"}[str(data.dtype)]
    body = {
        "inputs": [
            {"name": "IN", "datatype": datatype, "shape": list(data.shape), "data": data.tolist()}
        ]
    }
    return request(server, "POST", f"/v2/models/{model}/infer", body)


def request(server: Endpoint, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(server.http, timeout=TIMEOUT)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw) if raw else None
    except json.JSONDecodeError:
        return response.status, raw.decode()


def facts(server: Endpoint, model: str) -> list[int]:
    status, body = infer(server, model, np.array([-4], dtype=np.int64))
    assert status == 200, body
    return list(body["outputs"][0]["data"])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        living = [pid for pid in pids if alive(pid)]
        if not living:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def stub_shm(server_pid: int) -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob(f"mockpb_{server_pid}_*"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_model(root, "crash", PROBE)
    write_model(root, "ok", PROBE)
    return root


@pytest.fixture
def server(repo: Path) -> Iterator[Endpoint]:
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as endpoint:
        yield endpoint


# -- the stub process ----------------------------------------------------------------------------
def test_each_instance_runs_in_its_own_process_with_the_model_module_as_triton_imports_it(
    server: Endpoint,
) -> None:
    pid, parent, model_in_modules, named, on_path, _ = facts(server, "crash")
    other = facts(server, "ok")[0]
    assert len({pid, other, server.pid}) == 3
    assert parent != server.pid  # forked by the zygote, not the server itself
    assert (model_in_modules, named, on_path) == (0, 1, 1)  # as Triton 2.51: "1.model"
    status, body = infer(server, "crash", np.array([-5], dtype=np.int64))
    assert status == 200, body
    assert body["outputs"][0]["data"] == [1, 0]  # unittest.main("model") found and ran it


def test_module_state_lives_as_long_as_the_instance(server: Endpoint) -> None:
    first = facts(server, "crash")[5]
    assert facts(server, "crash")[5] == first + 1
    status, _ = request(server, "POST", "/v2/repository/models/crash/load")
    assert status == 200  # unchanged: kept loaded
    assert facts(server, "crash")[5] == first + 2


@pytest.mark.parametrize("code", [-1, -3], ids=["os._exit", "SIGKILL"])
def test_a_dead_stub_fails_its_model_only(server: Endpoint, code: int) -> None:
    pid = facts(server, "crash")[0]
    status, body = infer(server, "crash", np.array([code], dtype=np.int64))
    assert (status, body) == (500, {"error": "Stub process 'crash_0' is not healthy."})
    assert wait_gone([pid]) == []
    status, body = infer(server, "crash", np.array([1], dtype=np.int64))
    assert (status, body) == (500, {"error": "Stub process 'crash_0' is not healthy."})
    status, body = infer(server, "ok", np.array([7], dtype=np.int64))
    assert status == 200 and body["outputs"][0]["data"] == [7]
    _, index = request(server, "POST", "/v2/repository/index")
    assert {"name": "crash", "version": "1", "state": "READY"} in index  # as Triton 2.51
    # Readiness as current Triton's active health check answers it (2.51 still says ready).
    assert request(server, "GET", "/v2/models/crash/ready")[0] == 400
    assert request(server, "GET", "/v2/models/ok/ready")[0] == 200
    _, stats = request(server, "GET", "/v2/models/crash/stats")
    assert stats["model_stats"][0]["inference_stats"]["fail"]["count"] == 2
    # Loading it again starts a new stub.
    assert request(server, "POST", "/v2/repository/models/crash/unload")[0] == 200
    assert request(server, "POST", "/v2/repository/models/crash/load")[0] == 200
    assert facts(server, "crash")[0] not in (pid, 0)


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (-1, "exited with status 3"),
        (-3, "was killed by signal 9 (SIGKILL)"),
        (-6, "was killed by signal 9 (SIGKILL): the server could not read its message"),
        (-7, "exited with status 1: Traceback (most recent call last):"),
    ],
    ids=["os._exit", "SIGKILL", "unreadable message", "exception"],
)
def test_every_stub_exit_is_explained_in_the_log(tmp_path: Path, code: int, why: str) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "crash", PROBE)
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        pid = facts(server, "crash")[0]
        status, body = infer(server, "crash", np.array([code], dtype=np.int64))
        assert (status, body) == (500, {"error": "Stub process 'crash_0' is not healthy."})
        assert wait_gone([pid]) == []
        log_path = Path(f"/proc/{server.pid}/fd/1")
        deadline = time.monotonic() + TIMEOUT
        while "its requests fail from now on" not in log_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, "no log line for the stub's exit"
            time.sleep(0.05)
        log = log_path.read_text(errors="replace")
    line = f"the stub process of 'crash_0' (pid {pid}) "
    assert line + why in log, log[-3000:]
    if code == -6:
        assert "the server could not read its message: UnpicklingError" in log
    if code == -7:
        assert "KeyboardInterrupt: stop here" in log and "in execute" in log


def test_system_exit_is_an_error_of_that_request(server: Endpoint, repo: Path) -> None:
    status, body = infer(server, "crash", np.array([-2], dtype=np.int64))
    model_file = repo / "crash" / "1" / "model.py"
    assert status == 500
    assert body["error"].startswith(
        "Failed to process the request(s) for model 'crash_0', message: SystemExit: 5\n\nAt:\n"
    )
    assert f"{model_file}(" in body["error"]
    status, body = infer(server, "crash", np.array([3], dtype=np.int64))
    assert status == 200 and body["outputs"][0]["data"] == [3]


def test_large_tensors_cross_through_shared_memory_and_nothing_is_left(repo: Path) -> None:
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=ok"]) as server:
        data = np.arange(200_000, dtype=np.float32)
        write_model(repo, "big", PROBE, dtype="TYPE_FP32")
        assert request(server, "POST", "/v2/repository/models/big/load")[0] == 200
        status, body = infer(server, "big", data)
        assert status == 200
        assert np.array_equal(np.array(body["outputs"][0]["data"], np.float32), data)
        assert stub_shm(server.pid) == []
        pids = [facts(server, "ok")[0]]
        assert request(server, "POST", "/v2/repository/models/ok/unload")[0] == 200
        assert wait_gone(pids) == []
        server_pid = server.pid
    assert stub_shm(server_pid) == []


def test_shutdown_ends_every_stub_and_the_zygote(repo: Path) -> None:
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        stubs = [facts(server, "crash")[0], facts(server, "ok")[0]]
        zygote = facts(server, "ok")[1]
        server_pid = server.pid
        # The model ignores SIGTERM; the server still stops (the stub is finalized, not signalled).
    assert wait_gone([*stubs, zygote]) == []
    assert stub_shm(server_pid) == []


def test_thread_isolation_runs_models_in_the_server(repo: Path) -> None:
    args = ["--model-control-mode=explicit", "--load-model=*", "--python-backend-isolation=thread"]
    with run_mock_server(repo, args) as server:
        assert facts(server, "ok")[0] == server.pid


def test_the_model_parameter_overrides_the_server_isolation(repo: Path) -> None:
    write_model(
        repo,
        "inside",
        PROBE,
        extra='parameters { key: "python_backend_isolation" value: { string_value: "thread" } }',
    )
    write_model(
        repo,
        "fresh",
        PROBE,
        extra=(
            'parameters { key: "EXECUTION_ENV_PATH" value: { string_value: "'
            + sys.executable
            + '" } }'
        ),
    )
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        assert facts(server, "inside")[0] == server.pid
        pid, parent = facts(server, "fresh")[:2]
        assert pid != server.pid and parent == server.pid  # its own interpreter, not forked
        assert facts(server, "ok")[0] != server.pid


def test_an_invalid_isolation_parameter_fails_the_load(repo: Path) -> None:
    write_model(
        repo,
        "odd",
        PROBE,
        extra='parameters { key: "python_backend_isolation" value: { string_value: "vm" } }',
    )
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=ok"]) as server:
        status, body = request(server, "POST", "/v2/repository/models/odd/load")
    assert status == 400
    assert (
        "parameter 'python_backend_isolation' must be 'process' or 'thread', got 'vm'"
        in (body["error"])
    )


# -- start-up failures (tritonserver's --exit-on-error) ------------------------------------------
FAILING_INIT = """
class TritonPythonModel:
    def initialize(self, args):
        raise ValueError("boom in initialize")

    def execute(self, requests):
        return []
"""

FAILING_AUTO_COMPLETE = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        raise RuntimeError("boom in auto_complete_config")

    def execute(self, requests):
        return []
"""


def run_cli(repo: Path, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    port_args = [f"--{kind}-port=0" for kind in ("http", "grpc", "metrics")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "mock_server", f"--model-repository={repo}", *port_args, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (FAILING_INIT, "ValueError: boom in initialize"),
        (FAILING_AUTO_COMPLETE, "RuntimeError: boom in auto_complete_config"),
    ],
    ids=["initialize", "auto_complete_config"],
)
@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_a_model_failing_at_start_up_makes_the_server_exit(
    tmp_path: Path, source: str, text: str, isolation: str
) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "bad", source)
    done = run_cli(repo, f"--python-backend-isolation={isolation}")
    assert done.returncode == 1
    assert text in done.stderr
    assert "error: creating server: Internal - failed to load all models" in done.stderr


def test_exit_on_error_false_keeps_serving(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "bad", FAILING_INIT)
    write_model(repo, "ok", PROBE)
    with run_mock_server(repo, ["--exit-on-error=false", "--strict-readiness=false"]) as server:
        assert facts(server, "ok")[0] != server.pid
        _, index = request(server, "POST", "/v2/repository/index")
        bad = next(row for row in index if row["name"] == "bad")
        assert bad["state"] == "UNAVAILABLE" and "boom in initialize" in bad["reason"]


def test_help_documents_the_isolation_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--python-backend-isolation {process,thread}" in done.stdout
    assert "--exit-on-error" in done.stdout


def test_no_zygote_outlives_an_in_process_server(tmp_path: Path) -> None:
    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions
    from mock_server.python_backend import _launcher

    repo = tmp_path / "repo"
    write_model(repo, "ok", PROBE)
    core = build_core(
        ServerOptions(model_repository=[repo], model_control_mode=ModelControlMode.NONE)
    )
    core.start()
    try:
        assert core.model_ready("ok")
        zygote = _launcher.zygote_pid()
        assert zygote is not None
    finally:
        core.stop()
    # The zygote lingers briefly for a reload, then goes.
    assert wait_gone([zygote], timeout=_launcher.LINGER_S + 10) == []


# -- behaviours Triton's QA suite checks (qa/L0_backend_python/bls/test.sh) ----------------------
BLS_IN_INITIALIZE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        request = pb_utils.InferenceRequest(
            model_name="ok", inputs=[pb_utils.Tensor("IN", np.array([1]))],
            requested_output_names=["OUT"])
        request.exec()

    def execute(self, requests):
        return []
"""

BLS_IN_FINALIZE = BLS_IN_INITIALIZE.replace("def initialize(self, args)", "def finalize(self)")

BLS_BIG = """
import os
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            size = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            data = np.random.randn(size).astype(np.float32)
            data[0] = 1.0  # PROBE's codes are in its first value: echo
            bls = pb_utils.InferenceRequest(
                model_name="echo_fp32", inputs=[pb_utils.Tensor("IN", data)],
                requested_output_names=["OUT"])
            ok = True
            for decoupled in (False, True):
                if decoupled:
                    iterator = bls.exec(decoupled=True)
                    answer = next(iterator)
                    ok &= next(iterator, None) is None or not next(iterator).output_tensors()
                else:
                    answer = bls.exec()
                out = pb_utils.get_output_tensor_by_name(answer, "OUT")
                ok &= not answer.has_error() and np.array_equal(out.as_numpy(), data)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([int(ok)], dtype=np.int64))]))
        return responses
"""


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_bls_in_initialize_stops_the_start_up_with_tritons_words(
    tmp_path: Path, isolation: str
) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "ok", PROBE)
    write_model(repo, "bls_init", BLS_IN_INITIALIZE)
    done = run_cli(repo, f"--python-backend-isolation={isolation}")
    assert done.returncode == 1
    assert "BLS is only supported during the 'execute' function." in done.stderr


def test_bls_in_finalize_is_refused_and_logged(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "ok", PROBE)
    write_model(repo, "bls_fini", BLS_IN_FINALIZE)
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        assert request(server, "POST", "/v2/repository/models/bls_fini/unload")[0] == 200
        log = Path(f"/proc/{server.pid}/fd/1").read_text(errors="replace")
    assert "BLS is only supported during the 'execute' function." in log


def test_bls_moves_large_tensors_both_ways(repo: Path) -> None:
    write_model(repo, "echo_fp32", PROBE, dtype="TYPE_FP32")
    write_model(repo, "bls_big", BLS_BIG)
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        status, body = infer(server, "bls_big", np.array([4 << 20], dtype=np.int64))
        assert status == 200, body
        assert body["outputs"][0]["data"] == [1]
        assert stub_shm(server.pid) == []


# Triton's qa/L0_backend_python/argument_validation: the model's own unittest expects a
# TypeError (pybind11's ``.none(false)``) for None as correlation_id, and a
# TritonModelException only for a value of another type.
CORRELATION_ID_ARGS = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        raised = []
        for correlation_id in (None, 1.5):
            try:
                pb_utils.InferenceRequest(
                    model_name="ok", inputs=[], requested_output_names=["OUT"],
                    correlation_id=correlation_id)
            except Exception as exc:
                raised.append(type(exc).__name__)
            else:
                raised.append("nothing")
        text = np.array([" ".join(raised).encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", text)]) for _ in requests]
"""


def test_a_none_correlation_id_is_a_type_error_in_the_stub(repo: Path) -> None:
    write_model(repo, "correlation_args", CORRELATION_ID_ARGS, dtype="TYPE_STRING")
    with run_mock_server(repo, ["--model-control-mode=explicit", "--load-model=*"]) as server:
        status, body = request(
            server,
            "POST",
            "/v2/models/correlation_args/infer",
            {"inputs": [{"name": "IN", "datatype": "BYTES", "shape": [1], "data": ["x"]}]},
        )
        assert status == 200, body
        assert body["outputs"][0]["data"] == ["TypeError TritonModelException"]
        assert stub_shm(server.pid) == []


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_the_in_process_api_chooses_the_isolation(tmp_path: Path, isolation: str) -> None:
    import mock_server as tritonserver

    repo = tmp_path / "repo"
    write_model(repo, "ok", PROBE)
    server = tritonserver.Server(
        tritonserver.Options(model_repository=str(repo), python_backend_isolation=isolation)
    )
    server.start(wait_until_ready=True)
    try:
        (response,) = list(server.model("ok").infer(inputs={"IN": np.array([-4], np.int64)}))
        pid = int(np.from_dlpack(response.outputs["OUT"])[0])
        assert (pid == os.getpid()) is (isolation == "thread")
    finally:
        server.stop()
    with pytest.raises(tritonserver.InvalidArgumentError, match="python_backend_isolation"):
        tritonserver.Server(
            tritonserver.Options(model_repository=str(repo), python_backend_isolation="vm")
        ).start()


# -- an asyncio loop reads the stub's reply itself (requests that skip the queue) ------------


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_request_sent_from_an_event_loop_is_answered_on_that_loop(loop_kind: str) -> None:
    """A frontend's loop sends an idle stub its request and reads the reply itself (no worker
    or reader thread in between); afterwards the channel is blocking again, its background
    reader serves callers without a loop, and concurrent requests from the loop queue."""
    import asyncio
    import threading

    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions
    from mock_server.core.types import InferRequest, InferResponse, Tensor

    repo = Path(__file__).resolve().parents[1] / "mock_server" / "models"
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["simple"],
            python_backend_isolation="process",
        )
    )
    core.start()
    a = np.arange(16, dtype=np.int32).reshape(1, 16)

    def simple(value: int) -> InferRequest:
        b = np.full((1, 16), value, np.int32)
        return InferRequest(
            "simple",
            id=str(value),
            inputs=[Tensor("INPUT0", "INT32", (1, 16), a), Tensor("INPUT1", "INT32", (1, 16), b)],
        )

    async def run(value: int) -> tuple[InferResponse, int]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[InferResponse, int]] = loop.create_future()

        def answered(response: InferResponse) -> None:
            here = threading.get_ident()
            loop.call_soon_threadsafe(future.set_result, (response, here))

        request = simple(value)
        request.response_callback = answered
        core.infer(request)
        return await asyncio.wait_for(future, TIMEOUT)

    async def main() -> None:
        loop_thread = threading.get_ident()
        instance = core.model_version("simple", -1)._instances[0]
        stub = instance._stub
        # Until the worker waits for work the request would be queued: wait for it.
        scheduler = core.model_version("simple", -1).scheduler
        end = time.monotonic() + TIMEOUT
        while not scheduler._parked and time.monotonic() < end:
            await asyncio.sleep(0.01)
        response, thread = await run(3)
        assert response.error is None, response.error
        assert response.outputs[0].data.tolist() == (a + 3).tolist()
        assert thread == loop_thread  # read and delivered by the loop
        await asyncio.sleep(0)  # the reader's removal
        assert stub.loop_reading is None
        assert os.get_blocking(stub.channel.fileno())
        # Many at once from the loop: one skips the queue, the others queue; all answered.
        results = await asyncio.gather(*(run(v) for v in range(20)))
        for value, (resp, _) in enumerate(results):
            assert resp.error is None and resp.id == str(value)
            assert resp.outputs[1].data.tolist() == (a - value).tolist()

    try:
        if loop_kind == "uvloop":
            uvloop = pytest.importorskip("uvloop")
            uvloop.run(main())
        else:
            asyncio.run(main())
        # Without a loop (a plain thread): the channel's background thread reads.
        (response,) = list(core.infer_iter(simple(7), timeout_s=TIMEOUT))
        assert response.error is None and response.outputs[0].data.tolist() == (a + 7).tolist()
    finally:
        core.stop()


def test_a_loop_reading_ended_after_its_loop_closed_lets_go_of_the_channel() -> None:
    """The end of a batch read by another thread after the loop closed: the hold on the
    channel's background reader is released there (nobody else would)."""
    import asyncio
    import socket
    import threading
    from types import SimpleNamespace

    from mock_server.python_backend._process import _LoopReading

    holds: list[int] = []
    mine, other = socket.socketpair()
    pump = SimpleNamespace(
        hold=lambda: holds.append(1), unhold=lambda: holds.append(-1), read_ready=lambda: None
    )
    stub = SimpleNamespace(channel=mine, pump=pump, loop_reading=None)
    loop = asyncio.new_event_loop()
    try:
        reading = _LoopReading(loop, stub)  # type: ignore[arg-type]
        assert reading.start() and stub.loop_reading is reading
        assert os.get_blocking(mine.fileno())
        loop.remove_reader(mine.fileno())
        loop.close()
        thread = threading.Thread(target=reading.stop)
        thread.start()
        thread.join(TIMEOUT)
        assert sum(holds) == 0 and stub.loop_reading is None
        reading.stop()  # once only
        assert sum(holds) == 0 and holds.count(-1) == 1
    finally:
        if not loop.is_closed():
            loop.close()
        mine.close()
        other.close()


# -- a thread blocked in infer_iter reads the stub's reply itself (core.types.Assist) ---------

ASSISTED = """
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if data[0] == -1:
                os._exit(3)  # the stub dies while the server's thread waits for it
            if data[0] > 0:
                time.sleep(float(data[0]) / 1000)  # milliseconds
            out = pb_utils.Tensor("OUT", data.copy())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""


@pytest.fixture
def assisted_core(tmp_path: Path) -> Iterator[Any]:
    """A core serving ``assisted`` (ASSISTED) in a stub process, its worker parked (so that a
    request skips the queue and goes to the stub from the calling thread)."""
    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions

    model = tmp_path / "assisted"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(ASSISTED)
    (model / "config.pbtxt").write_text(
        CONFIG.format(name="assisted", dtype="TYPE_INT32", extra="")
    )
    core = build_core(
        ServerOptions(
            model_repository=[tmp_path],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["assisted"],
            python_backend_isolation="process",
        )
    )
    core.start()
    try:
        yield core
    finally:
        core.stop()
    assert not list(Path("/dev/shm").glob(f"mockpb_{os.getpid()}_*"))  # nothing left


def _assisted_request(value: int) -> Any:
    from mock_server.core.types import InferRequest, Tensor

    data = np.array([value, 5], np.int32)
    return InferRequest("assisted", id=str(value), inputs=[Tensor("IN", "INT32", (2,), data)])


def _recording_reads(core: Any) -> tuple[Any, list[int]]:
    """The model's stub connection, after its worker parked, with the threads that dispatch
    each end of a batch recorded."""
    import threading

    from mock_server.python_backend import _messages as msg

    version = core.model_version("assisted", -1)
    end = time.monotonic() + TIMEOUT
    while not version.scheduler._parked and time.monotonic() < end:
        time.sleep(0.01)
    stub = version._instances[0]._stub
    readers: list[int] = []
    handler = stub.handlers[msg.Executed]

    def recorded(message: Any) -> None:
        readers.append(threading.get_ident())
        handler(message)

    stub.handlers[msg.Executed] = recorded
    return stub, readers


def test_a_thread_waiting_in_infer_iter_reads_the_stubs_reply_itself(assisted_core: Any) -> None:
    """The reply is read and dispatched by the waiting thread (no hand-over from the channel's
    reader thread); afterwards the reader thread is free again, and serves a request nobody
    waits for in infer_iter."""
    import threading

    stub, readers = _recording_reads(assisted_core)
    for value in (0, 1):
        (response,) = list(assisted_core.infer_iter(_assisted_request(value), timeout_s=TIMEOUT))
        assert response.error is None and response.outputs[0].data.tolist() == [value, 5]
    assert readers == [threading.get_ident()] * 2
    assert stub.pump._interest == 0  # no hold left behind

    answered = threading.Event()
    request = _assisted_request(0)
    request.response_callback = lambda response: answered.set()
    assisted_core.infer(request)
    assert answered.wait(TIMEOUT)
    assert readers[-1] != threading.get_ident()  # the channel's own reader


class _AlwaysIdle:
    def recent(self) -> bool:
        return True


def test_idle_cpus_follow_the_share_of_idle_time_between_readings(tmp_path: Path) -> None:
    from mock_server.python_backend._process import IdleCpus

    stat = tmp_path / "stat"

    def write(busy: int, idle: int) -> None:
        # user nice system idle iowait irq softirq steal guest guest_nice
        stat.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 {busy} 0\ncpu0 1 2 3 4\n")

    cpus = IdleCpus(str(stat), period_ns=0, quota=lambda: None)
    write(1000, 1000)
    assert cpus.recent()  # one reading: nothing to compare yet
    write(1400, 1000)  # 400 busy, 0 idle since
    assert not cpus.recent()
    write(1500, 1100)  # 100 busy, 100 idle
    assert cpus.recent()
    write(1800, 1150)  # 300 busy, 50 idle: 14%, under IDLE_SHARE (the guest column not counted)
    assert not cpus.recent()
    stat.unlink()
    assert cpus.recent()  # unreadable: counted as idle
    slow = IdleCpus(str(stat), period_ns=10**12, quota=lambda: None)
    write(1000, 0)
    assert slow.recent()
    write(2000, 0)
    assert slow.recent()  # not read again within the period


def test_idle_cpus_of_a_process_held_to_some_cpus_are_its_own(tmp_path: Path) -> None:
    """With an affinity that is a part of the machine's CPUs (taskset, a cpuset), the idle
    time of those CPUs counts, not the machine's; with all of them, the machine's line."""
    from mock_server.python_backend._process import IdleCpus

    stat = tmp_path / "stat"

    def write(busy: list[int], idle: list[int]) -> None:
        rows = [
            f"cpu{n} {b} 0 0 {i} 0 0 0 0 0 0"
            for n, (b, i) in enumerate(zip(busy, idle, strict=True))
        ]
        total = f"cpu  {sum(busy)} 0 0 {sum(idle)} 0 0 0 0 0 0"
        stat.write_text("\n".join([total, *rows, "intr 1 2 3", "ctxt 5"]) + "\n")

    held = IdleCpus(str(stat), period_ns=0, affinity=lambda: {1, 2}, quota=lambda: None)
    free = IdleCpus(str(stat), period_ns=0, affinity=lambda: {0, 1, 2, 3}, quota=lambda: None)
    write([0, 0, 0, 0], [0, 0, 0, 0])
    assert held.recent() and free.recent()
    # CPUs 1 and 2 busy, 0 and 3 idle: half the machine's time idle, none of the process's.
    write([0, 1000, 1000, 0], [1000, 0, 0, 1000])
    assert not held.recent()
    assert free.recent()
    # Then the other way round: 0 and 3 busy, 1 and 2 mostly idle (the machine: 1,800 of 4,000).
    write([1000, 1100, 1100, 1000], [1000, 900, 900, 1000])
    assert held.recent() and free.recent()
    # All four busy: 100 of 4,000 idle.
    write([2000, 2050, 2050, 2000], [1000, 925, 925, 1000])
    assert not held.recent() and not free.recent()


@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_idle_cpus_under_a_quota_need_the_groups_headroom(tmp_path: Path, kind: str) -> None:
    """Under a CPU quota the host's idle CPUs are not enough: the group must have used at
    least QUOTA_HEADROOM_CPUS less than its quota since the previous reading."""
    from mock_server.python_backend._process import QUOTA_HEADROOM_CPUS, IdleCpus
    from shm.copy import CpuQuota

    stat = tmp_path / "stat"
    stat.write_text("cpu  0 0 0 0 0 0 0 0 0 0\n")
    usage = tmp_path / ("cpu.stat" if kind == "v2" else "cpuacct.usage")
    now = [0]

    def used(ns: int) -> None:
        if kind == "v2":
            usage.write_text(f"usage_usec {ns // 1000}\nuser_usec 0\nsystem_usec 0\n")
        else:
            usage.write_text(f"{ns}\n")

    def host_idle() -> None:  # the host's CPUs stay idle throughout
        fields = stat.read_text().split()
        stat.write_text(f"cpu  {int(fields[1]) + 10} 0 0 {int(fields[4]) + 1000} 0 0 0 0 0 0\n")

    quota = CpuQuota(1.05, str(usage))
    cpus = IdleCpus(str(stat), period_ns=0, quota=lambda: quota, clock=lambda: now[0])
    used(0)
    assert cpus.recent()  # one reading: nothing to compare yet
    # 0.9 CPUs used over a second, of 1.05: 0.15 left, under the headroom.
    now[0] += 10**9
    used(900_000_000)
    host_idle()
    assert not cpus.recent()
    # 0.3 CPUs over the next second: 0.75 left.
    now[0] += 10**9
    used(1_200_000_000)
    host_idle()
    assert cpus.recent()
    # Exactly the headroom left counts as idle; a little less does not.
    now[0] += 10**9
    used(1_200_000_000 + int((1.05 - QUOTA_HEADROOM_CPUS) * 10**9) - 1000)
    host_idle()
    assert cpus.recent()
    now[0] += 10**9
    used(1_200_000_000 + int((1.05 - QUOTA_HEADROOM_CPUS) * 2 * 10**9) + 10_000_000)
    host_idle()
    assert not cpus.recent()
    # A usage file that cannot be read leaves the CPUs' own lines to decide.
    usage.unlink()
    now[0] += 10**9
    host_idle()
    assert cpus.recent()
    # No quota at all: the host's lines alone.
    free = IdleCpus(str(stat), period_ns=0, quota=lambda: None, clock=lambda: now[0])
    assert free.recent()


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_loop_alone_with_a_quick_model_reads_its_reply_before_it_goes_back_to_waiting(
    assisted_core: Any, loop_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sequential requests from a loop: the end of a quick batch is read by polling for it
    within the send (ProcessModelInstance.settle), no reader ever registered on the loop; a
    slow batch is not waited for (the loop goes back to its work and its registered reader
    reads the end), and the batch after it is not either (the last batch was slow).  The
    polling limit is raised to 100 ms, so that a loaded machine's quick batch stays quick."""
    import asyncio
    import threading

    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "SETTLE_NS", 100_000_000)
    monkeypatch.setattr(_process, "QUICK_BATCH_NS", 100_000_000)
    monkeypatch.setattr(_process, "_SEVERAL_CPUS", True)  # (a one-CPU runner polls too)
    monkeypatch.setattr(_process, "_idle_cpus", _AlwaysIdle())  # (and a busy one)
    stub, readers = _recording_reads(assisted_core)

    async def send(value: int) -> tuple[bool, bool, Any]:
        """(answered within core.infer, a reader registered meanwhile, the response)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        request = _assisted_request(value)
        request.response_callback = lambda response: loop.call_soon_threadsafe(
            future.set_result, response
        )
        before = len(readers)
        assisted_core.infer(request)
        within = len(readers) > before  # the end was dispatched before infer returned
        await asyncio.sleep(0)  # the deferred registration, if any, runs
        registered = loop in stub.reader_loops
        response = await asyncio.wait_for(future, TIMEOUT)
        return within, registered, response

    async def main() -> None:
        thread = threading.get_ident()
        within, registered, response = await send(0)
        assert response.error is None and response.outputs[0].data.tolist() == [0, 5]
        assert within and not registered and readers[-1] == thread
        within, registered, response = await send(300)  # 300 ms: above both limits
        assert not within and registered and readers[-1] == thread
        assert response.outputs[0].data.tolist() == [300, 5]
        within, registered, _ = await send(0)  # the last batch was slow: no polling
        assert not within and registered
        await asyncio.sleep(0)
        assert stub.loop_reading is None
        assert stub.pump._interest == 0

    if loop_kind == "uvloop":
        pytest.importorskip("uvloop").run(main())
    else:
        asyncio.run(main())


def test_a_loop_on_one_cpu_never_polls_for_the_reply(
    assisted_core: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one CPU the stub cannot answer while the loop polls: the loop goes back to its
    work at once, and its registered reader reads the end."""
    import asyncio

    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "SETTLE_NS", 100_000_000)
    monkeypatch.setattr(_process, "QUICK_BATCH_NS", 100_000_000)
    monkeypatch.setattr(_process, "_SEVERAL_CPUS", False)
    monkeypatch.setattr(_process, "_idle_cpus", _AlwaysIdle())
    _, readers = _recording_reads(assisted_core)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        request = _assisted_request(0)
        request.response_callback = lambda response: loop.call_soon_threadsafe(
            future.set_result, response
        )
        before = len(readers)
        assisted_core.infer(request)
        assert len(readers) == before  # not read within the call
        response = await asyncio.wait_for(future, TIMEOUT)
        assert response.error is None and len(readers) == before + 1

    asyncio.run(main())


def test_an_execution_longer_than_the_assist_slice_is_read_by_the_channels_reader(
    assisted_core: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from mock_server.core import server

    monkeypatch.setattr(server, "_ASSIST_SLICE_S", 0.05)
    stub, readers = _recording_reads(assisted_core)
    (response,) = list(assisted_core.infer_iter(_assisted_request(300), timeout_s=TIMEOUT))
    assert response.error is None and response.outputs[0].data.tolist() == [300, 5]
    assert readers and readers[-1] != threading.get_ident()
    assert stub.pump._interest == 0


def test_a_timed_out_wait_lets_go_of_the_channel(assisted_core: Any) -> None:
    """infer_iter's own timeout while it reads for its request: the request is cancelled and
    the channel's reader takes over (the late reply is still read; the next request works)."""
    from mock_server.core.errors import ServerError

    stub, _ = _recording_reads(assisted_core)
    with pytest.raises(ServerError, match="timed out"):
        list(assisted_core.infer_iter(_assisted_request(500), timeout_s=0.1))
    assert stub.pump._interest == 0
    end = time.monotonic() + TIMEOUT
    while assisted_core.model_version("assisted", -1).in_flight() and time.monotonic() < end:
        time.sleep(0.01)
    (response,) = list(assisted_core.infer_iter(_assisted_request(2), timeout_s=TIMEOUT))
    assert response.error is None


def test_a_stub_dying_while_a_thread_reads_for_it_fails_the_request_at_once(
    assisted_core: Any,
) -> None:
    _recording_reads(assisted_core)
    start = time.monotonic()
    (response,) = list(assisted_core.infer_iter(_assisted_request(-1), timeout_s=TIMEOUT))
    assert time.monotonic() - start < 10
    assert response.error is not None
    assert "Stub process 'assisted_0' is not healthy." in response.error.message


def test_assist_offers_and_holds() -> None:
    """core.types.Assist: one offer, held until the waiting thread reads or closes; nothing
    held for an offer after close; a reader that gives up ends the offer."""
    from mock_server.core.types import Assist

    holds: list[int] = []

    def hold() -> None:
        holds.append(1)

    def release() -> None:
        holds.append(-1)

    assist = Assist()
    assert not assist.wait(lambda: True, 1.0)  # nothing offered: the queue it is
    answers = [False]
    assert assist.offer(lambda done, timeout: answers.pop(0), hold, release)
    assert not assist.offer(lambda done, timeout: True, hold, release)  # one offer only
    assert holds == [1]
    assert not assist.wait(lambda: False, 1.0)  # the reader gave up: the hold ends ...
    assert holds == [1, -1]
    assert not assist.wait(lambda: True, 1.0)  # ... and so does the offer
    assist.close()
    assert holds == [1, -1]

    closed = Assist()
    closed.close()
    assert not closed.offer(lambda done, timeout: True, hold, release)
    assert holds == [1, -1]

    served = Assist()
    assert served.offer(lambda done, timeout: True, hold, release)
    assert served.wait(lambda: True, 1.0)
    assert served.wait(lambda: True, 1.0)  # still offered for later responses
    served.close()
    assert holds == [1, -1, 1, -1]


SLOW_INITIALIZE = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(1.5)

    def execute(self, requests):
        out = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", data)]))
        return out
"""


def test_an_initialize_that_does_not_return_is_reported_and_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An ``initialize()`` still running after the report period gets a warning naming the
    instance and its stub, and the stub's stacks (its SIGUSR1 handler: without it the signal
    would kill the stub); the load is never cut short, and the instance then serves."""
    from mock_server.compose import build_core
    from mock_server.core.server import ModelControlMode, ServerOptions
    from mock_server.core.types import InferRequest, Tensor
    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "INITIALIZE_REPORT_S", 0.4)
    repo = tmp_path / "repo"
    write_model(repo, "slow_init", SLOW_INITIALIZE, dtype="TYPE_INT32")
    core = build_core(
        ServerOptions(model_repository=[repo], model_control_mode=ModelControlMode.NONE)
    )
    with caplog.at_level("WARNING", logger="mock_server.python_backend"):
        core.start()
    try:
        assert core.model_ready("slow_init")
        reports = [r.getMessage() for r in caplog.records if "has not returned" in r.getMessage()]
        assert reports and "'slow_init_0'" in reports[0] and "pid" in reports[0]
        data = np.array([3, 4], np.int32)
        request = InferRequest("slow_init", inputs=[Tensor("IN", "INT32", (2,), data)])
        (response,) = list(core.infer_iter(request, timeout_s=30))
        assert response.error is None and (response.outputs[0].data == data).all()
    finally:
        core.stop()


def test_back_to_back_batches_from_a_loop_keep_its_reader_registered(
    assisted_core: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued requests sent one after another from the loop (the end of each batch runs the
    next): the reader the first batch registered is handed to each next batch's reading, not
    removed and added again; once the last batch ended it is removed, and no hold is left."""
    import asyncio
    import threading

    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "_SEVERAL_CPUS", False)  # no polling: the reader reads
    stub, readers = _recording_reads(assisted_core)
    calls: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        add, remove = loop.add_reader, loop.remove_reader

        def adding(*args: Any) -> None:
            calls.append("add")
            add(*args)

        def removing(fd: int) -> bool:
            calls.append("remove")
            return remove(fd)

        loop.add_reader, loop.remove_reader = adding, removing  # type: ignore[method-assign]
        futures: list[asyncio.Future[Any]] = []
        for value in (5,) * 8:  # 5 ms each: the others queue behind the first
            future: asyncio.Future[Any] = loop.create_future()
            request = _assisted_request(value)
            request.response_callback = lambda response, f=future: loop.call_soon_threadsafe(
                f.set_result, response
            )
            futures.append(future)
            assisted_core.infer(request)
        for response in await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT):
            assert response.error is None and response.outputs[0].data.tolist() == [5, 5]
        await asyncio.sleep(0)
        assert readers[-8:] == [threading.get_ident()] * 8  # every end read by the loop
        assert calls == ["add", "remove"]
        assert not stub.reader_loops and stub.loop_reading is None
        assert stub.pump._interest == 0

    asyncio.run(main())


def test_a_stub_is_woken_ahead_of_a_request_only_while_its_batches_are_quick(
    assisted_core: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ModelVersion.ahead (a frontend looked the model up and began to read a request) sends
    the idle instance's stub an Ahead while its last batch was quick, the CPUs idle and
    several; not after a slow batch, nor on one CPU.  An Ahead no request follows costs
    nothing but the stub's bounded poll: the next request is answered as before."""
    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "QUICK_BATCH_NS", 100_000_000)  # a loaded machine's quick batch
    monkeypatch.setattr(_process, "_SEVERAL_CPUS", True)
    monkeypatch.setattr(_process, "_idle_cpus", _AlwaysIdle())
    stub, _ = _recording_reads(assisted_core)
    sent: list[str] = []
    send = stub.send

    def recorded(message: Any) -> None:
        sent.append(type(message).__name__)
        send(message)

    monkeypatch.setattr(stub, "send", recorded)
    version = assisted_core.model_version("assisted", -1)

    def run(value: int) -> None:
        (response,) = list(assisted_core.infer_iter(_assisted_request(value), timeout_s=TIMEOUT))
        assert response.error is None and response.outputs[0].data.tolist() == [value, 5]
        end = time.monotonic() + TIMEOUT  # the request's end recorded, the worker parked
        while (version._flights or version.scheduler.idle() is None) and time.monotonic() < end:
            time.sleep(0.005)

    run(0)  # a quick batch
    sent.clear()
    version.ahead()
    assert sent == ["Ahead"]
    time.sleep(0.05)  # no request followed: the stub's poll gave up
    run(0)
    assert sent == ["Ahead", "Execute"]
    run(300)  # 300 ms: slower than QUICK_BATCH_NS (as patched)
    sent.clear()
    version.ahead()
    assert sent == []
    run(0)
    sent.clear()
    monkeypatch.setattr(_process, "_SEVERAL_CPUS", False)
    version.ahead()
    assert sent == []


def test_a_batch_is_quick_by_the_stubs_own_time_not_by_its_round_trip(
    assisted_core: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the loop polls (and the stub is woken ahead) is judged on the time the stub
    worked on the last batch (Executed.busy_ns), not on the time from the send to the end:
    that time holds the wake-ups the poll saves, and a machine where it once ran past the
    limit would never poll again.  Here every end reaches the server 50 ms late: the batch
    still counts as quick; a batch whose model sleeps 300 ms does not."""
    from mock_server.python_backend import _messages as msg
    from mock_server.python_backend import _process

    monkeypatch.setattr(_process, "SETTLE_NS", 20_000_000)
    monkeypatch.setattr(_process, "QUICK_BATCH_NS", 20_000_000)  # a loaded machine's stub
    monkeypatch.setattr(_process, "_SEVERAL_CPUS", True)
    monkeypatch.setattr(_process, "_idle_cpus", _AlwaysIdle())
    stub, _ = _recording_reads(assisted_core)
    version = assisted_core.model_version("assisted", -1)
    instance = version._instances[0]
    handler = stub.handlers[msg.Executed]

    def late(message: Any) -> None:
        time.sleep(0.05)  # a slow channel: the end is read 50 ms after the stub sent it
        handler(message)

    stub.handlers[msg.Executed] = late

    def run(value: int) -> None:
        (response,) = list(assisted_core.infer_iter(_assisted_request(value), timeout_s=TIMEOUT))
        assert response.error is None and response.outputs[0].data.tolist() == [value, 5]

    run(0)
    assert 0 < instance._busy_ns < 20_000_000
    assert instance._may_poll()
    run(300)
    assert instance._busy_ns >= 300_000_000
    assert not instance._may_poll()
    run(0)
    assert instance._may_poll()
