"""The Prometheus endpoint: Triton 2.51's families and text format, counts that follow traffic,
custom metrics, the metrics port's answers.

These run the bundled server in-process; ``tests/conformance/test_metrics_differential.py``
compares the same exposition with the real Triton's.
"""

from __future__ import annotations

import http.client
import math
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.metrics_core import Metric

from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions
from mock_server.core.types import InferRequest, InferResponse, Tensor
from mock_server.metrics import exposition

CONFORMANCE_MODELS = Path(__file__).resolve().parent / "conformance" / "models"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    repo = tmp_path_factory.mktemp("repo")
    shutil.copytree(BUNDLED_MODELS / "simple", repo / "simple")
    shutil.copytree(BUNDLED_MODELS / "identity_int32", repo / "identity_int32")
    for name in ("custom_metrics", "fail_modes"):
        shutil.copytree(CONFORMANCE_MODELS / name, repo / name)
    frontends = FrontendOptions(allow_http=False, allow_grpc=False, metrics_port=0)
    options = ServerOptions(
        model_repository=[Path(repo)],
        model_control_mode=ModelControlMode.EXPLICIT,
        startup_models=["*"],
    )
    with MockServer(options, frontends) as srv:
        yield srv


def get(server: MockServer, path: str = "/metrics", method: str = "GET") -> tuple[int, str, str]:
    """(status, Content-Type, body) of one request to the metrics port."""
    conn = http.client.HTTPConnection(server.metrics_url, timeout=10)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        body = response.read().decode()
        return response.status, response.getheader("Content-Type") or "", body
    finally:
        conn.close()


def scrape(server: MockServer) -> str:
    status, content_type, body = get(server)
    assert (status, content_type) == (200, "text/plain; charset=utf-8")
    return body


def sample(text: str, line_prefix: str) -> str:
    """The value, as written, of the sample line starting with ``line_prefix``."""
    match = re.search(rf"^{re.escape(line_prefix)} (\S+)$", text, re.M)
    assert match, f"no line {line_prefix!r} in\n{text}"
    return match.group(1)


def families(text: str) -> list[tuple[str, str]]:
    """(name, type) of each family, in order."""
    return re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)


def infer(server: MockServer, model: str, **inputs: np.ndarray) -> InferResponse:
    tensors = [Tensor(name, _datatype(a), a.shape, a) for name, a in inputs.items()]
    responses = list(server.core.infer_iter(InferRequest(model_name=model, inputs=tensors), 20))
    return responses[-1]


def _datatype(array: np.ndarray) -> str:
    return {np.dtype(np.int32): "INT32", np.dtype(np.float64): "FP64"}[array.dtype]


def simple(server: MockServer, batch: int) -> None:
    data = np.ones((batch, 16), np.int32)
    assert infer(server, "simple", INPUT0=data, INPUT1=data).error is None


def test_families_and_format_as_triton(server: MockServer) -> None:
    text = scrape(server)
    names = families(text)
    builtin = [
        ("nv_inference_request_success", "counter"),
        ("nv_inference_request_failure", "counter"),
        ("nv_inference_count", "counter"),
        ("nv_inference_exec_count", "counter"),
        ("nv_inference_request_duration_us", "counter"),
        ("nv_inference_queue_duration_us", "counter"),
        ("nv_inference_compute_input_duration_us", "counter"),
        ("nv_inference_compute_infer_duration_us", "counter"),
        ("nv_inference_compute_output_duration_us", "counter"),
        ("nv_inference_pending_request_count", "gauge"),
        ("nv_pinned_memory_pool_total_bytes", "gauge"),
        ("nv_pinned_memory_pool_used_bytes", "gauge"),
        ("nv_cpu_utilization", "gauge"),
        ("nv_cpu_memory_total_bytes", "gauge"),
        ("nv_cpu_memory_used_bytes", "gauge"),
    ]
    assert [n for n in names if n[0].startswith("nv_")] == builtin
    assert (
        "# HELP nv_inference_request_success Number of successful inference requests, all "
        "batch sizes\n# TYPE nv_inference_request_success counter\n" in text
    )
    assert not re.search(r"^# (HELP|TYPE) nv_inference\w*_total ", text, re.M)
    labels = '{model="identity_int32",version="1"}'
    # Counters are doubles written as C's %.16g: a zero is "0", not "0.0".
    assert sample(text, f"nv_inference_request_success{labels}") == "0"
    assert sample(text, "nv_pinned_memory_pool_total_bytes") == "268435456"
    assert sample(text, "nv_pinned_memory_pool_used_bytes") == "0"
    assert re.fullmatch(r"\d+", sample(text, "nv_cpu_memory_total_bytes"))
    for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
        line = (
            f'nv_inference_request_failure{{model="identity_int32",reason="{reason}",version="1"}}'
        )
        assert sample(text, line) == "0"
    # The custom metrics model's unused family has no metric: it is not written.
    assert "custom_metrics_unused" not in text


def test_counts_follow_traffic(server: MockServer) -> None:
    labels = '{model="simple",version="1"}'
    before = scrape(server)
    success = int(sample(before, f"nv_inference_request_success{labels}"))
    count = int(sample(before, f"nv_inference_count{labels}"))
    simple(server, 3)
    simple(server, 2)
    after = scrape(server)
    assert int(sample(after, f"nv_inference_request_success{labels}")) == success + 2
    assert int(sample(after, f"nv_inference_count{labels}")) == count + 5
    assert int(sample(after, f"nv_inference_exec_count{labels}")) >= 2
    assert sample(after, f"nv_inference_pending_request_count{labels}") == "0"
    for phase in ("request", "queue", "compute_input", "compute_infer", "compute_output"):
        assert int(sample(after, f"nv_inference_{phase}_duration_us{labels}")) >= 0
    assert int(sample(after, f"nv_inference_request_duration_us{labels}")) > 0


def test_failures_are_counted_as_triton_does(server: MockServer) -> None:
    """An error response the model sends is a success on Triton 2.51; a failed execute a
    BACKEND failure."""
    labels = '{model="fail_modes",version="1"}'
    backend = 'nv_inference_request_failure{model="fail_modes",reason="BACKEND",version="1"}'
    before = scrape(server)
    success = int(sample(before, f"nv_inference_request_success{labels}"))
    failed = int(sample(before, backend))
    for mode in (0, 1, 2):
        infer(server, "fail_modes", MODE=np.array([mode], np.int32))
    after = scrape(server)
    assert int(sample(after, f"nv_inference_request_success{labels}")) == success + 2
    assert int(sample(after, backend)) == failed + 1
    stats = server.core.statistics("fail_modes")[0]
    assert stats.inference_stats.fail.count == failed + 1
    assert stats.response_stats == {}


def test_custom_metrics_as_triton_writes_them(server: MockServer) -> None:
    for value in (0.25, 3.0, 1e20, -1.5):
        response = infer(server, "custom_metrics", VALUE=np.array([value]))
        assert response.error is None
    text = scrape(server)
    names = [n for n, _ in families(text)]
    # Custom counters after Triton's counters, custom gauges after its gauges, then histograms.
    assert (
        names.index("custom_metrics_requests")
        == names.index("nv_inference_compute_output_duration_us") + 1
    )
    assert names.index("custom_metrics_last_value") == names.index("nv_cpu_memory_used_bytes") + 1
    assert names[-1] == "custom_metrics_value"
    assert (
        '# HELP custom_metrics_last_value Last VALUE received (a "gauge"), with a back\\slash\n'
        in text
    )
    assert sample(text, 'custom_metrics_requests{model="custom_metrics",version="1"}') == "4"
    assert sample(text, "custom_metrics_requests") == "1e+20"
    assert (
        sample(
            text,
            'custom_metrics_last_value{empty="",model="custom_metrics",'
            'quoted="say \\"hi\\"\\\\ok",version="1"}',
        )
        == "-1.5"
    )
    histogram = re.findall(r"^custom_metrics_value_\S+ \S+$", text, re.M)
    assert histogram == [
        'custom_metrics_value_count{model="custom_metrics",version="1"} 4',
        'custom_metrics_value_sum{model="custom_metrics",version="1"} 1e+20',
        'custom_metrics_value_bucket{model="custom_metrics",version="1",le="0.5"} 2',
        'custom_metrics_value_bucket{model="custom_metrics",version="1",le="1"} 2',
        'custom_metrics_value_bucket{model="custom_metrics",version="1",le="2.5"} 2',
        'custom_metrics_value_bucket{model="custom_metrics",version="1",le="10"} 3',
        'custom_metrics_value_bucket{model="custom_metrics",version="1",le="+Inf"} 4',
    ]


def test_unloaded_model_keeps_its_failure_counters_and_custom_metrics(
    server: MockServer,
) -> None:
    """Triton 2.51 removes a model's per-model samples on unload, except its failure
    counters; its custom metrics stay, and a reload continues them."""
    infer(server, "custom_metrics", VALUE=np.array([1.0]))
    before = int(
        sample(scrape(server), 'custom_metrics_requests{model="custom_metrics",version="1"}')
    )
    server.core.unload_model("custom_metrics")
    try:
        text = scrape(server)
        assert 'nv_inference_count{model="custom_metrics"' not in text
        assert (
            'nv_inference_request_failure{model="custom_metrics",reason="OTHER",version="1"} 0'
            in text
        )
        line = 'custom_metrics_requests{model="custom_metrics",version="1"}'
        assert int(sample(text, line)) == before
    finally:
        server.core.load_model("custom_metrics")
    infer(server, "custom_metrics", VALUE=np.array([1.0]))
    assert int(sample(scrape(server), line)) == before + 1


def test_metrics_port_paths_and_methods(server: MockServer) -> None:
    for path in ("/metrics/", "/metrics?x=1"):
        status, content_type, body = get(server, path)
        assert (status, content_type) == (200, "text/plain; charset=utf-8")
        assert "# TYPE nv_inference_count counter\n" in body
    for path in ("/", "/other", "/metricsx", "/metrics/x", "//metrics"):
        assert get(server, path) == (200, "text/plain; charset=utf-8", "")
    for method in ("POST", "PUT", "DELETE"):
        assert get(server, "/metrics", method) == (
            405,
            "text/plain",
            '{"error":"Method Not Allowed"}',
        )


def test_in_process_api_reports_the_same_text(server: MockServer) -> None:
    from mock_server.api._metrics import prometheus_text

    text = prometheus_text(server.core)
    assert [n for n, _ in families(text)] == [n for n, _ in families(scrape(server))]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (25276510208.0, "25276510208"),
        (0.1 + 0.2, "0.3"),
        (0.0001, "0.0001"),
        (1e-7, "1e-07"),
        (1e16, "1e+16"),
        (1234567890123456789.0, "1.234567890123457e+18"),
        (5e-324, "4.940656458412465e-324"),
        (math.nan, "Nan"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
    ],
)
def test_values_written_as_prometheus_cpp(value: float, written: str) -> None:
    family = Metric("g", "help", "gauge")
    family.add_sample("g", {}, value)
    assert exposition([family]) == f"# HELP g help\n# TYPE g gauge\ng {written}\n".encode()


def test_labels_sorted_and_escaped_and_empty_families_left_out() -> None:
    family = Metric("c", "multi\nline \\ help", "counter")
    family.add_sample("c", {"z": "1", "a": 'q"\\\n'}, 3.0)
    assert exposition([Metric("empty", "x", "gauge"), family]) == (
        b'# HELP c multi\nline \\ help\n# TYPE c counter\nc{a="q\\"\\\\\\n",z="1"} 3\n'
    )
    assert exposition([]) == b""


def test_a_stopped_servers_custom_metrics_end_with_it(tmp_path: Path) -> None:
    """Custom metric families stay for the server's lifetime, not the process's: after a
    server stops, neither the families its models held when it stopped nor those kept from an
    earlier unload show in the metrics of the next server run in the same process."""
    repo = tmp_path / "repo"
    for name in ("custom_metrics", "simple"):
        source = CONFORMANCE_MODELS if name == "custom_metrics" else BUNDLED_MODELS
        shutil.copytree(source / name, repo / name)
    frontends = FrontendOptions(allow_http=False, allow_grpc=False, metrics_port=0)

    def options(*models: str) -> ServerOptions:
        return ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=list(models),
        )

    with MockServer(options("custom_metrics"), frontends) as first:
        infer(first, "custom_metrics", VALUE=np.array([1.0]))
        assert "custom_metrics_requests{" in scrape(first)
        first.core.unload_model("custom_metrics")
        assert "custom_metrics_requests{" in scrape(first)  # kept after the unload
    with MockServer(options("simple"), frontends) as second:
        assert "custom_metrics_" not in scrape(second)
    with MockServer(options("custom_metrics"), frontends) as third:
        infer(third, "custom_metrics", VALUE=np.array([1.0]))
    with MockServer(options("simple"), frontends) as fourth:
        assert "custom_metrics_" not in scrape(fourth)  # held by the model when it stopped
