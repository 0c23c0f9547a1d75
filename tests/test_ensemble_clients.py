"""Ensembles end to end: ``python -m mock_server`` in its own process, driven by this project's
HTTP and gRPC clients on 127.0.0.1 (free ports), with the ensembles of the conformance suite.

What the clients see: results of a pipeline, a decoupled ensemble streamed over gRPC and
refused over HTTP, a failing step's error as an ``InferenceServerException``, the ensemble's
configuration and statistics, and loading and unloading with ``unload_dependents``.
"""

from __future__ import annotations

import queue
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tests.conformance.pair import BUNDLED, CONFORMANCE_MODELS, Endpoint, run_mock_server
from tritonclient.utils import InferenceServerException

MODELS = (
    "ens_add_one",
    "ens_double",
    "ens_sum",
    "ens_probe",
    "ens_count",
    "fail_modes",
    "ensemble_chain",
    "ensemble_fan",
    "ensemble_decoupled",
    "ensemble_fail",
)
FOUR = np.array([[1, 2, 3, 4]], np.float32)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    repo = tmp_path_factory.mktemp("ensemble-repo")
    for name in MODELS:
        shutil.copytree(CONFORMANCE_MODELS / name, repo / name)
    shutil.copytree(BUNDLED / "simple", repo / "simple")
    shutil.copytree(BUNDLED / "simple_ensemble", repo / "simple_ensemble")
    args = ["--model-control-mode=explicit", "--load-model=*"]
    with run_mock_server(Path(repo), args) as endpoint:
        yield endpoint


def fp32_input(module: Any, data: np.ndarray = FOUR) -> list[Any]:
    tensor = module.InferInput("INPUT", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    return [tensor]


def int_input(module: Any, name: str, value: int) -> list[Any]:
    tensor = module.InferInput(name, [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], np.int32))
    return [tensor]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_pipeline_and_fan_in(server: Endpoint, protocol: str) -> None:
    module: Any = httpclient if protocol == "http" else grpcclient
    url = server.http if protocol == "http" else server.grpc
    with module.InferenceServerClient(url) as client:
        result = client.infer("ensemble_chain", fp32_input(module, np.vstack([FOUR, FOUR])))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT"), np.vstack([FOUR, FOUR]) * 2 + 3)
        result = client.infer("ensemble_fan", fp32_input(module))
        np.testing.assert_array_equal(result.as_numpy("SUM"), FOUR * 3 + 1)
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        for tensor in inputs:
            tensor.set_data_from_numpy(a)
        result = client.infer("simple_ensemble", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), 2 * a)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_failing_step_reaches_the_client(server: Endpoint, protocol: str) -> None:
    module: Any = httpclient if protocol == "http" else grpcclient
    url = server.http if protocol == "http" else server.grpc
    with module.InferenceServerClient(url) as client:
        with pytest.raises(InferenceServerException) as info:
            client.infer("ensemble_fail", int_input(module, "MODE", 1))
        assert info.value.message() == (
            "in ensemble 'ensemble_fail', fail_modes: error response as asked (MODE 1)"
        )
        with pytest.raises(InferenceServerException) as info:
            client.infer("ensemble_decoupled", int_input(module, "COUNT", 2))
        assert "decoupled transaction policy" in info.value.message()


def test_decoupled_ensemble_streams_over_grpc(server: Endpoint) -> None:
    responses: queue.Queue[Any] = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc) as client:
        client.start_stream(callback=lambda result, error: responses.put((result, error)))
        client.async_stream_infer(
            "ensemble_decoupled",
            int_input(grpcclient, "COUNT", 3),
            request_id="count",
            enable_empty_final_response=True,
        )
        values = []
        while True:
            result, error = responses.get(timeout=30)
            assert error is None, error
            response = result.get_response()
            if response.outputs:
                values.append(int(result.as_numpy("VALUE")[0]))
            if response.parameters["triton_final_response"].bool_param:
                break
        client.stop_stream()
    assert values == [0, 1, 2]


def test_configuration_statistics_and_dependents(server: Endpoint) -> None:
    with httpclient.InferenceServerClient(server.http) as client:
        config = client.get_model_config("ensemble_decoupled")
        assert config["platform"] == "ensemble"
        assert config["model_transaction_policy"] == {"decoupled": True}
        before = client.get_inference_statistics("ensemble_chain")["model_stats"][0]
        client.infer("ensemble_chain", fp32_input(httpclient))
        after = client.get_inference_statistics("ensemble_chain")["model_stats"][0]
        assert after["inference_count"] == before["inference_count"] + 1

        client.unload_model("ens_double")
        assert not client.is_model_ready("ensemble_chain")  # it runs ens_double
        client.load_model("ens_double")
        assert client.is_model_ready("ensemble_chain")

    with grpcclient.InferenceServerClient(server.grpc) as client:
        client.unload_model("ensemble_fan")
        client.unload_model("ens_sum")
        client.load_model("ensemble_fan")  # pulls ens_sum in
        assert client.is_model_ready("ens_sum")
        client.unload_model("ensemble_fan", unload_dependents=True)
        assert not client.is_model_ready("ens_sum")  # only the ensemble needed it
        assert client.is_model_ready("ens_add_one")  # loaded at start, explicitly
        client.load_model("ensemble_fan")
        states = {m.name: m.state for m in client.get_model_repository_index().models}
        assert states["ensemble_fan"] == "READY" and states["ens_sum"] == "READY"
