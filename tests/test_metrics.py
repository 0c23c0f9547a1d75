"""The Prometheus endpoint: Triton's families, counts that follow traffic, custom metrics."""

from __future__ import annotations

import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from mock_server.core.types import InferRequest, Tensor

CUSTOM_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        # Kept: as on Triton, a metric is unusable once its family object is deleted.
        self.family = pb_utils.MetricFamily(
            name="requests_seen", description="requests seen by the model",
            kind=pb_utils.MetricFamily.COUNTER)
        self.counter = self.family.Metric(labels={"who": "test"})

    def execute(self, requests):
        out = []
        for request in requests:
            self.counter.increment(1)
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
        return out
"""

CUSTOM_CONFIG = """
name: "counting"
backend: "python"
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    repo = tmp_path_factory.mktemp("repo")
    shutil.copytree(BUNDLED_MODELS / "simple", repo / "simple")
    (repo / "counting" / "1").mkdir(parents=True)
    (repo / "counting" / "config.pbtxt").write_text(CUSTOM_CONFIG)
    (repo / "counting" / "1" / "model.py").write_text(CUSTOM_MODEL)
    frontends = FrontendOptions(allow_http=False, allow_grpc=False, metrics_port=0)
    with MockServer(ServerOptions(model_repository=[Path(repo)]), frontends) as srv:
        yield srv


def scrape(server: MockServer, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://{server.metrics_url}{path}", timeout=10) as response:
        assert response.status == 200
        return response.read().decode()


def value(text: str, line_prefix: str) -> float:
    match = re.search(rf"^{re.escape(line_prefix)} ([0-9.e+]+)$", text, re.M)
    assert match, f"no line {line_prefix!r} in\n{text}"
    return float(match.group(1))


def infer(server: MockServer, model: str, batch: int = 1) -> None:
    if model == "simple":
        data = np.ones((batch, 16), np.int32)
        inputs = [
            Tensor("INPUT0", "INT32", data.shape, data),
            Tensor("INPUT1", "INT32", data.shape, data),
        ]
    else:
        data = np.ones(3, np.int32)
        inputs = [Tensor("INPUT0", "INT32", data.shape, data)]
    responses = list(server.core.infer_iter(InferRequest(model_name=model, inputs=inputs), 20))
    assert responses[-1].error is None


def test_families_follow_traffic(server: MockServer) -> None:
    labels = '{model="simple",version="1"}'
    before = scrape(server)
    assert "# TYPE nv_inference_count" in before
    start_success = value(before, f"nv_inference_request_success{labels}")
    start_count = value(before, f"nv_inference_count{labels}")
    infer(server, "simple", batch=3)
    infer(server, "simple", batch=2)
    after = scrape(server)
    assert value(after, f"nv_inference_request_success{labels}") == start_success + 2
    assert value(after, f"nv_inference_count{labels}") == start_count + 5
    assert value(after, f"nv_inference_exec_count{labels}") >= 2
    assert value(after, f"nv_inference_pending_request_count{labels}") == 0
    assert value(after, f"nv_inference_request_duration_us{labels}") > 0
    assert (
        value(after, 'nv_inference_request_failure{model="simple",reason="BACKEND",version="1"}')
        == 0
    )
    assert value(after, "nv_cpu_memory_total_bytes") > 0


def test_custom_metrics_from_models(server: MockServer) -> None:
    infer(server, "counting")
    infer(server, "counting")
    text = scrape(server)
    assert value(text, 'requests_seen{who="test"}') >= 2


def test_other_paths_and_methods(server: MockServer) -> None:
    assert scrape(server, "/other") == ""
    request = urllib.request.Request(f"http://{server.metrics_url}/metrics", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 405
