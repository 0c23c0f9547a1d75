"""A decoupled model's responses reach the client in the order the model sent them, for each
request (Triton's guarantee; Triton's own QA checks it in ``L0_decoupled``'s
``test_response_order``).

A stress loop on a real ``python -m mock_server`` with the model in its stub process: many
small responses per request, sent from ``execute`` and then from a thread the model starts
(with ``is_cancelled()`` calls between them, which the stub makes to the server), several
requests in flight on each of several gRPC streams while ``generate_stream`` requests run
beside them over HTTP.  The responses cross the stub's channel (read by the channel's
background thread, by the frontends' loop for a request that went straight to the idle
instance, or by an instance worker waiting for its batch), the core and the frontends' hand-over
to their loop (``frontends/_delivery.py``) on their way.
"""

from __future__ import annotations

import functools
import http.client
import json
import queue
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
from tests.conformance.pair import Endpoint, run_mock_server

TIMEOUT = 60.0
COUNT = 150  # responses per request

CONFIG = """
name: "burst"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

# IN = [responses, how many of them execute sends itself, whether to pause on the way]
MODEL = """
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def send(sender, start, stop, final, pause):
    for i in range(start, stop):
        if pause and i % 7 == 0:
            sender.is_cancelled()
            time.sleep(0.0005)
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i], np.int32))]))
    if final:
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            count, in_execute, pause = (int(v) for v in data)
            sender = request.get_response_sender()
            send(sender, 0, in_execute, False, pause)
            threading.Thread(
                target=send, args=(sender, in_execute, count, True, pause), daemon=True
            ).start()
        return None
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    repo = tmp_path_factory.mktemp("order") / "repo"
    (repo / "burst" / "1").mkdir(parents=True)
    (repo / "burst" / "config.pbtxt").write_text(CONFIG)
    (repo / "burst" / "1" / "model.py").write_text(textwrap.dedent(MODEL))
    with run_mock_server(repo) as endpoint:
        yield endpoint


def collect(answers: queue.Queue[tuple[Any, Any]], result: Any, error: Any) -> None:
    answers.put((result, error))


def stream_rounds(url: str, stream: int, rounds: int, in_flight: int, wrong: list[Any]) -> None:
    """``rounds`` times: ``in_flight`` requests on one stream, every response checked."""
    for round_ in range(rounds):
        answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
        client = grpcclient.InferenceServerClient(url)
        try:
            client.start_stream(callback=functools.partial(collect, answers))
            for k in range(in_flight):
                tensor = grpcclient.InferInput("IN", [3], "INT32")
                tensor.set_data_from_numpy(np.array([COUNT, (k * 7) % 40, k % 2], np.int32))
                client.async_stream_infer(
                    "burst",
                    [tensor],
                    request_id=f"{stream}-{round_}-{k}",
                    enable_empty_final_response=True,
                )
            following: dict[str, int] = {}
            finished = 0
            while finished < in_flight:
                result, error = answers.get(timeout=TIMEOUT)
                assert error is None, error
                response = result.get_response()
                if response.parameters["triton_final_response"].bool_param:
                    finished += 1
                if response.outputs:
                    value = int(result.as_numpy("OUT")[0])
                    due = following.get(response.id, 0)
                    if value != due:
                        wrong.append((response.id, due, value))
                    following[response.id] = value + 1
            assert following == {f"{stream}-{round_}-{k}": COUNT for k in range(in_flight)}
        finally:
            client.stop_stream()
            client.close()


def generate_rounds(host: str, rounds: int, wrong: list[Any]) -> None:
    """``rounds`` ``generate_stream`` requests, one after another, every event checked."""
    address, port = host.split(":")
    for round_ in range(rounds):
        conn = http.client.HTTPConnection(address, int(port), timeout=TIMEOUT)
        try:
            body = json.dumps({"IN": [COUNT, round_ % 30, round_ % 2]})
            conn.request("POST", "/v2/models/burst/generate_stream", body)
            response = conn.getresponse()
            assert response.status == 200
            due = 0
            for line in response:
                if not line.startswith(b"data:"):
                    continue
                event = json.loads(line[5:])
                value = event["OUT"][0] if isinstance(event["OUT"], list) else event["OUT"]
                if value != due:
                    wrong.append((f"generate-{round_}", due, value))
                due = value + 1
            assert due == COUNT
        finally:
            conn.close()


def test_each_requests_responses_arrive_in_the_order_the_model_sent_them(
    server: Endpoint,
) -> None:
    wrong: list[Any] = []
    failures: list[BaseException] = []

    def run(target: Any, *args: Any) -> None:
        try:
            target(*args)
        except BaseException as exc:  # reported below, with the thread's traceback lost
            failures.append(exc)

    threads = [
        threading.Thread(target=run, args=(stream_rounds, server.grpc, s, 4, 6, wrong))
        for s in range(4)
    ]
    threads += [
        threading.Thread(target=run, args=(generate_rounds, server.http, 8, wrong))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures
    assert not wrong, wrong[:10]
