"""No per-request state is left behind in the server after a request completes, fails, is
cancelled by its client or runs past its deadline (issue 4, conformance item 6)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from mock_server.app import MockServer
from mock_server.core import instances
from mock_server.testing import serve
from tritonclient.utils import InferenceServerException

MODELS = ("simple", "slow", "slow_queue")
BUNDLED = Path(__file__).resolve().parent.parent / "mock_server" / "models"

#: ``slow`` with batching and a queue policy that lets requests set their own timeout.
SLOW_QUEUE_CONFIG = """
name: "slow_queue"
backend: "python"
max_batch_size: 4
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY_MS" data_type: TYPE_UINT32 dims: [ 1 ] optional: true }
]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching {
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 10000000
    allow_timeout_override: true
  }
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    repo = tmp_path_factory.mktemp("repo")
    shutil.copytree(BUNDLED / "slow" / "1", repo / "slow_queue" / "1")
    (repo / "slow_queue" / "config.pbtxt").write_text(SLOW_QUEUE_CONFIG)
    with serve(
        [BUNDLED, repo], startup_models=list(MODELS), model_control_mode="explicit"
    ) as running:
        yield running


def _settled(server: MockServer) -> dict[str, Any]:
    """What the server still holds for requests: in flight, queued, deadlines watched."""
    state: dict[str, Any] = {}
    for name in MODELS:
        version = server.core.model_version(name)
        state[name] = (version.in_flight(), version.scheduler.queued())
    state["deadlines"] = instances._deadlines.watched()
    return state


def _wait_settled(server: MockServer, timeout: float = 15.0) -> dict[str, Any]:
    idle = {name: (0, 0) for name in MODELS} | {"deadlines": 0}
    deadline = time.monotonic() + timeout
    state = _settled(server)
    while state != idle and time.monotonic() < deadline:
        time.sleep(0.02)
        state = _settled(server)
    return state


def _inputs(
    module: Any, delay_ms: int | None = None, bad: bool = False, batched: bool = False
) -> list[Any]:
    if delay_ms is not None:
        shape = [1, 1] if batched else [1]
        value = module.InferInput("INPUT0", shape, "INT32")
        value.set_data_from_numpy(np.full(shape, delay_ms, dtype=np.int32))
        delay = module.InferInput("DELAY_MS", shape, "UINT32")
        delay.set_data_from_numpy(np.full(shape, delay_ms, dtype=np.uint32))
        return [value, delay]
    width = 8 if bad else 16
    items = []
    for name in ("INPUT0", "INPUT1"):
        item = module.InferInput(name, [1, width], "INT32")
        item.set_data_from_numpy(np.ones((1, width), dtype=np.int32))
        items.append(item)
    return items


def _expect_error(call: Callable[[], Any]) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_nothing_left_after_completion_errors_cancellation_and_deadlines(
    server: MockServer, protocol: str
) -> None:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = server.grpc_url if protocol == "grpc" else server.http_url
    # Two HTTP connections, so that a request can queue on the server behind another.
    client = module.InferenceServerClient(url, **({"concurrency": 2} if protocol == "http" else {}))
    try:
        # Completed and failed requests.
        for _ in range(10):
            client.infer("simple", _inputs(module))
        _expect_error(lambda: client.infer("simple", _inputs(module, bad=True)))
        _expect_error(
            lambda: client.infer(
                "simple", _inputs(module), outputs=[module.InferRequestedOutput("NOPE")]
            )
        )
        # A client that gives up: the server cancels the running request.
        if protocol == "grpc":
            _expect_error(lambda: client.infer("slow", _inputs(module, 3000), client_timeout=0.3))
        else:
            impatient = httpclient.InferenceServerClient(url, network_timeout=0.3)
            try:
                _expect_error(lambda: impatient.infer("slow", _inputs(module, 3000)))
            finally:
                impatient.close()
        # Server-side deadlines (a queue policy that lets requests set their timeout): one
        # that passes while the request runs cancels it; one that passes while it is queued
        # behind another rejects it.
        queue_inputs = _inputs(module, 3000, batched=True)
        error = _expect_error(lambda: client.infer("slow_queue", queue_inputs, timeout=200_000))
        assert "cancel" in str(error).lower()
        kw = {} if protocol == "http" else {"callback": _ignore}
        first = client.async_infer("slow_queue", _inputs(module, 500, batched=True), **kw)
        time.sleep(0.1)
        queued = _inputs(module, 10, batched=True)
        error = _expect_error(lambda: client.infer("slow_queue", queued, timeout=50_000))
        assert "timeout" in str(error).lower()
        if protocol == "http":
            first.get_result(timeout=30)
        # A stream closed with requests in flight (gRPC).
        if protocol == "grpc":
            client.start_stream(callback=_ignore)
            client.async_stream_infer("slow", _inputs(module, 3000))
            time.sleep(0.2)
            client.stop_stream(cancel_requests=True)
    finally:
        client.close()
    state = _wait_settled(server)
    assert state == {name: (0, 0) for name in MODELS} | {"deadlines": 0}
    # And the server still answers.
    with module.InferenceServerClient(url) as again:
        assert again.infer("simple", _inputs(module)).as_numpy("OUTPUT0") is not None


def _ignore(*_: Any, **__: Any) -> None:
    pass
