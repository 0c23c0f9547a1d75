"""Ensembles in the server core: scheduling, errors, statistics, loading with dependencies.

The models are those of the conformance suite (``tests/conformance/models``: the ``ens_*``
composing models and the ``ensemble_*`` ensembles), which the differential suite also runs on
Triton 2.51; here the core is driven directly, for what a differential case cannot pin down:
concurrency of independent steps, cancellation, the exact order of streamed responses, the
statistics arithmetic, and the dependency graph across many operations.
"""

from __future__ import annotations

import json
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

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "tests" / "conformance" / "models"
BUNDLED = ROOT / "mock_server" / "models"
FOUR = np.array([[1, 2, 3, 4]], np.float32)


def make_repo(tmp_path: Path, *names: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    for name in names:
        source = CONFORMANCE / name if (CONFORMANCE / name).is_dir() else BUNDLED / name
        shutil.copytree(source, repo / name)
    return repo


def write_ensemble(repo: Path, name: str, config: dict[str, Any]) -> None:
    """An ensemble folder from a JSON-shaped configuration (written as text proto)."""
    from google.protobuf import json_format, text_format

    from tritonclient._proto import model_config_pb2 as mc

    message = json_format.ParseDict({"name": name, **config}, mc.ModelConfig())
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(text_format.MessageToString(message))


def step(model: str, inputs: dict[str, str], outputs: dict[str, str]) -> dict[str, Any]:
    return {"model_name": model, "model_version": -1, "input_map": inputs, "output_map": outputs}


def io(name: str, datatype: str = "TYPE_FP32", dims: tuple[int, ...] = (4,)) -> dict[str, Any]:
    return {"name": name, "data_type": datatype, "dims": list(dims)}


def run(core: CoreServer, model: str, timeout: float = 20, **kw: Any) -> list[InferResponse]:
    inputs = kw.pop("inputs")
    request = InferRequest(
        model_name=model,
        inputs=[Tensor(n, dt, tuple(a.shape), a) for n, dt, a in inputs],
        **kw,
    )
    return list(core.infer_iter(request, timeout))


def fp32(model: str, core: CoreServer, data: np.ndarray = FOUR, **kw: Any) -> list[InferResponse]:
    return run(core, model, inputs=[("INPUT", "FP32", data)], **kw)


def outputs(response: InferResponse) -> dict[str, np.ndarray]:
    assert response.error is None, response.error
    return {t.name: t.data for t in response.outputs}


def index_states(core: CoreServer, *names: str) -> dict[str, Any]:
    return {r["name"]: r.get("state") for r in core.repository_index() if r["name"] in names}


ALL = (
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
    "ensemble_params",
    "ensemble_nested",
)


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoreServer]:
    repo = make_repo(tmp_path_factory.mktemp("ensembles"), *ALL)
    server = build_core(ServerOptions(model_repository=[repo]))
    server.start()
    assert server.ready()
    yield server
    server.stop()


def explicit(repo: Path, *startup: str) -> CoreServer:
    server = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=list(startup),
        )
    )
    server.start()
    return server


# -- inference -------------------------------------------------------------------------------------


def test_chain_runs_every_step_in_order(core: CoreServer) -> None:
    (response,) = fp32("ensemble_chain", core, np.vstack([FOUR, FOUR * 10]), id="r")
    assert response.final and response.id == "r" and response.model_name == "ensemble_chain"
    np.testing.assert_array_equal(
        outputs(response)["OUTPUT"], (np.vstack([FOUR, FOUR * 10]) + 1) * 2 + 1
    )
    # Triton 2.51 puts the sequence parameters of the writing step on every response.
    assert response.parameters == {"sequence_id": 0, "sequence_start": False, "sequence_end": False}


def test_fan_out_fan_in_and_output_order(core: CoreServer) -> None:
    (response,) = fp32("ensemble_fan", core)
    # Outputs in the order of Triton's hash map of them, not the configuration's.
    assert [t.name for t in response.outputs] == ["PLUS_ONE", "SUM"]
    got = outputs(response)
    np.testing.assert_array_equal(got["SUM"], (FOUR + 1) + FOUR * 2)
    np.testing.assert_array_equal(got["PLUS_ONE"], FOUR + 1)


def test_requested_outputs_prune_steps_as_triton_does(core: CoreServer) -> None:
    (response,) = fp32(
        "ensemble_fan", core, outputs=[RequestedOutput("SUM"), RequestedOutput("PLUS_ONE")]
    )
    assert sorted(outputs(response)) == ["PLUS_ONE", "SUM"]
    # Triton 2.51's walk prunes the step writing PLUS_ONE when only SUM is asked for (its one
    # output is an ensemble output not asked for), although the sum reads it; asked for alone,
    # PLUS_ONE loses its step too. Both requests fail as they do on Triton.
    for wanted in ("SUM", "PLUS_ONE"):
        (response,) = fp32("ensemble_fan", core, outputs=[RequestedOutput(wanted)])
        assert response.error is not None and response.error.kind is ErrorKind.INVALID_ARG
        assert response.error.message == (
            "in ensemble 'ensemble_fan', [request id: <id_unknown>] unexpected deadlock, at least "
            "one output is not set while no more ensemble steps can be made"
        )
    (response,) = run(
        core,
        "ensemble_params",
        inputs=[("IN", "INT32", np.array([1], np.int32))],
        outputs=[RequestedOutput("OUT")],
    )
    assert list(outputs(response)) == ["OUT"]  # a step with other outputs asked for still runs


def test_nested_ensemble_between_batching_and_non_batching(core: CoreServer) -> None:
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    (response,) = fp32("ensemble_nested", core, data)
    np.testing.assert_array_equal(outputs(response)["OUTPUT"], ((data + 1) * 2 + 1) * 2)


def test_step_receives_the_request_id_parameters_and_sequence(core: CoreServer) -> None:
    (response,) = run(
        core,
        "ensemble_params",
        inputs=[("IN", "INT32", np.array([7], np.int32))],
        id="p",
        parameters={"custom": "v", "n": 3},
        correlation_id="corr",
        sequence_end=True,
        priority=2,
        timeout_us=5000,
        outputs=[RequestedOutput("INFO")],
    )
    assert list(outputs(response)) == ["INFO"]
    info = json.loads(outputs(response)["INFO"][0])
    assert info == {
        "id": "p",
        "correlation_id": "corr",
        "flags": 2,
        "timeout": 5000,
        "parameters": {"custom": "v", "n": 3},
        # A step is asked for every output its output_map names, whatever the client asked.
        "requested": ["INFO", "OUT"],
    }
    assert response.parameters == {
        "sequence_id": "corr",
        "sequence_start": False,
        "sequence_end": True,
    }


def test_decoupled_ensemble_streams_one_response_per_step_response(core: CoreServer) -> None:
    assert core.model_config("ensemble_decoupled").model_transaction_policy.decoupled
    assert not core.model_config("ensemble_chain").model_transaction_policy.decoupled
    responses = run(
        core, "ensemble_decoupled", inputs=[("COUNT", "INT32", np.array([4], np.int32))]
    )
    assert [int(outputs(r)["VALUE"][0]) for r in responses] == [0, 1, 2, 3]
    assert [r.final for r in responses] == [False, False, False, True]
    (empty,) = run(core, "ensemble_decoupled", inputs=[("COUNT", "INT32", np.array([0], np.int32))])
    assert empty.final and empty.error is None and not empty.outputs


@pytest.mark.parametrize(
    ("mode", "kind", "message"),
    [
        (1, ErrorKind.INVALID_ARG, "in ensemble 'ensemble_fail', fail_modes: error response"),
        (2, ErrorKind.INTERNAL, "in ensemble 'ensemble_fail', Failed to process the request(s)"),
    ],
)
def test_a_failing_step_fails_the_request_with_its_error(
    core: CoreServer, mode: int, kind: ErrorKind, message: str
) -> None:
    (response,) = run(core, "ensemble_fail", inputs=[("MODE", "INT32", np.array([mode], np.int32))])
    assert response.final and response.error is not None
    assert response.error.kind is kind and response.error.message.startswith(message)


def test_decoupled_step_error(core: CoreServer) -> None:
    (response,) = run(
        core, "ensemble_decoupled", inputs=[("COUNT", "INT32", np.array([-1], np.int32))]
    )
    assert response.error is not None and response.final
    assert response.error.message == "in ensemble 'ensemble_decoupled', ens_count: negative count"


def test_requests_are_validated_against_the_ensemble(core: CoreServer) -> None:
    with pytest.raises(ServerError, match="inference request batch-size must be <= 8"):
        fp32("ensemble_chain", core, np.ones((9, 4), np.float32))
    with pytest.raises(ServerError, match="unexpected inference output 'NOPE'"):
        fp32("ensemble_chain", core, outputs=[RequestedOutput("NOPE")])


def test_statistics_of_the_ensemble_and_its_steps(tmp_path: Path) -> None:
    server = explicit(
        make_repo(tmp_path, "ens_add_one", "ens_double", "ensemble_chain"), "ensemble_chain"
    )
    try:
        for rows in (1, 3):
            fp32("ensemble_chain", server, np.ones((rows, 4), np.float32))
        (chain,) = server.statistics("ensemble_chain")
        assert (chain.inference_count, chain.execution_count) == (4, 2)
        assert chain.inference_stats.success.count == 2 and chain.inference_stats.fail.count == 0
        assert sorted(b.batch_size for b in chain.batch_stats) == [1, 3]
        # Its compute time is the sum of its steps' (three per request here).
        steps = server.statistics("ens_add_one") + server.statistics("ens_double")
        assert sum(s.inference_stats.success.count for s in steps) == 6
        assert chain.inference_stats.compute_infer.ns == sum(
            s.inference_stats.compute_infer.ns for s in steps
        )
        assert chain.inference_stats.success.ns >= chain.inference_stats.compute_infer.ns > 0
    finally:
        server.stop()


def test_a_failed_request_counts_twice_as_in_triton(tmp_path: Path) -> None:
    server = explicit(
        make_repo(tmp_path, "fail_modes", "ens_probe", "ensemble_fail"), "ensemble_fail"
    )
    try:
        run(server, "ensemble_fail", inputs=[("MODE", "INT32", np.array([1], np.int32))])
        (stats,) = server.statistics("ensemble_fail")
        assert stats.inference_stats.fail.count == 2 and stats.inference_stats.success.count == 0
        assert server.stats.failure_counts()[("ensemble_fail", 1)] == {"OTHER": 2}
        assert server.statistics("ens_probe")[0].inference_stats.success.count == 0
    finally:
        server.stop()


def slow_steps(repo: Path, name: str, flow: list[tuple[str, str]]) -> None:
    """An ensemble of ``slow`` steps (``source`` -> ``target`` each), inputs A and DELAY."""
    targets = {target for _, target in flow}
    outputs = sorted(targets - {source for source, _ in flow})
    config = {
        "platform": "ensemble",
        "max_batch_size": 0,
        "input": [io("A", "TYPE_INT32", (-1,)), io("DELAY", "TYPE_UINT32", (1,))],
        "output": [io(output, "TYPE_INT32", (-1,)) for output in outputs],
        "ensemble_scheduling": {
            "step": [
                step("slow", {"INPUT0": source, "DELAY_MS": "DELAY"}, {"OUTPUT0": target})
                for source, target in flow
            ]
        },
    }
    write_ensemble(repo, name, config)


def test_independent_steps_run_concurrently(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "slow")
    slow_steps(repo, "both_slow", [("A", "X"), ("A", "Y")])
    config = (repo / "slow" / "config.pbtxt").read_text()
    (repo / "slow" / "config.pbtxt").write_text(config.replace("count: 1", "count: 2"))
    server = explicit(repo, "both_slow")
    try:
        start = time.monotonic()
        (response,) = run(
            server,
            "both_slow",
            inputs=[
                ("A", "INT32", np.array([5], np.int32)),
                ("DELAY", "UINT32", np.array([600], np.uint32)),
            ],
        )
        elapsed = time.monotonic() - start
        assert sorted(outputs(response)) == ["X", "Y"]
        assert elapsed < 1.1, f"the two 0.6 s steps ran one after the other ({elapsed:.2f} s)"
    finally:
        server.stop()


def test_a_step_error_is_answered_at_once_while_other_steps_run(tmp_path: Path) -> None:
    # As Triton 2.51: the error goes out when it happens. (2.51 then stops answering the
    # ensemble at all, a bug this server does not share: the next request is served.)
    repo = make_repo(tmp_path, "slow", "fail_modes")
    config = {
        "platform": "ensemble",
        "max_batch_size": 0,
        "input": [io("MODE", "TYPE_INT32", (1,)), io("A", "TYPE_INT32", (-1,))]
        + [io("DELAY", "TYPE_UINT32", (1,))],
        "output": [io("OUT1", "TYPE_INT32", (1,)), io("OUT2", "TYPE_INT32", (-1,))],
        "ensemble_scheduling": {
            "step": [
                step("fail_modes", {"MODE": "MODE"}, {"OUT": "OUT1"}),
                step("slow", {"INPUT0": "A", "DELAY_MS": "DELAY"}, {"OUTPUT0": "OUT2"}),
            ]
        },
    }
    write_ensemble(repo, "half_fails", config)
    server = explicit(repo, "half_fails")
    try:
        inputs = [
            ("A", "INT32", np.array([1, 2], np.int32)),
            ("DELAY", "UINT32", np.array([800], np.uint32)),
        ]
        start = time.monotonic()
        (response,) = run(
            server, "half_fails", inputs=[("MODE", "INT32", np.array([1], np.int32)), *inputs]
        )
        assert response.error is not None and time.monotonic() - start < 0.6
        (served,) = run(
            server, "half_fails", inputs=[("MODE", "INT32", np.array([0], np.int32)), *inputs]
        )
        assert sorted(outputs(served)) == ["OUT1", "OUT2"]
        (stats,) = server.statistics("half_fails")
        assert (stats.inference_stats.fail.count, stats.inference_stats.success.count) == (2, 1)
    finally:
        server.stop()


def test_cancelling_the_request_cancels_the_steps_not_yet_scheduled(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "slow")
    slow_steps(repo, "slow_chain", [("A", "B"), ("B", "Z")])
    server = explicit(repo, "slow_chain")
    try:
        request = InferRequest(
            model_name="slow_chain",
            inputs=[
                Tensor("A", "INT32", (1,), np.array([1], np.int32)),
                Tensor("DELAY", "UINT32", (1,), np.array([300], np.uint32)),
            ],
        )
        threading.Timer(0.1, request.cancel).start()
        start = time.monotonic()
        (response,) = list(server.infer_iter(request, 20))
        assert response.error is not None and response.error.kind is ErrorKind.CANCELLED
        assert time.monotonic() - start < 2
        (stats,) = server.statistics("slow")
        assert stats.inference_stats.success.count == 1  # only the first step ran
    finally:
        server.stop()


def test_bls_into_ensembles(tmp_path: Path) -> None:
    names = ("bls_ensemble", *ALL)
    server = explicit(
        make_repo(tmp_path, *names),
        "bls_ensemble",
        "ensemble_chain",
        "ensemble_decoupled",
        "ensemble_fail",
    )
    try:
        (response,) = run(
            server,
            "bls_ensemble",
            inputs=[
                ("INPUT", "FP32", FOUR),
                ("COUNT", "INT32", np.array([3], np.int32)),
                ("MODE", "INT32", np.array([1], np.int32)),
            ],
        )
        got = outputs(response)
        np.testing.assert_array_equal(got["OUTPUT"], (FOUR + 1) * 2 + 1)
        assert got["VALUES"].tolist() == [0, 1, 2]
        assert got["ERROR"][0].startswith(
            b"in ensemble 'ensemble_fail', fail_modes: error response"
        )
    finally:
        server.stop()


# -- loading with dependencies --------------------------------------------------------------------


def test_loading_an_ensemble_loads_its_composing_models(tmp_path: Path) -> None:
    server = explicit(make_repo(tmp_path, "ens_add_one", "ens_double", "ens_sum", "ensemble_fan"))
    try:
        assert not server.model_ready("ens_sum")
        server.load_model("ensemble_fan")
        assert all(
            server.model_ready(m) for m in ("ensemble_fan", "ens_add_one", "ens_double", "ens_sum")
        )
        # Not asked for by name: the cascading unload takes them with the ensemble.
        server.unload_model("ensemble_fan", unload_dependents=True)
        assert index_states(server, "ens_add_one", "ens_sum") == {
            "ens_add_one": "UNAVAILABLE",
            "ens_sum": "UNAVAILABLE",
        }
    finally:
        server.stop()


def test_unloading_keeps_composing_models_asked_for_or_shared(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path, "ens_add_one", "ens_double", "ens_sum", "ensemble_fan", "ensemble_chain"
    )
    server = explicit(repo, "ens_sum", "ensemble_fan", "ensemble_chain")
    try:
        server.unload_model("ensemble_fan", unload_dependents=True)
        assert server.model_ready("ens_sum")  # loaded explicitly
        assert server.model_ready("ens_add_one") and server.model_ready("ens_double")  # shared
        server.unload_model("ensemble_chain")  # no cascade: composing models stay
        assert server.model_ready("ens_add_one")
    finally:
        server.stop()


def test_dependents_follow_the_models_they_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "ens_add_one", "ens_double", "ensemble_chain", "ensemble_nested")
    server = explicit(repo, "ensemble_nested")
    try:
        fp32("ensemble_chain", server)
        server.unload_model("ens_double")
        # Both ensembles run it (one directly, one through the other): both go.
        assert not server.model_ready("ensemble_chain")
        assert not server.model_ready("ensemble_nested")
        assert index_states(server, "ensemble_chain")["ensemble_chain"] == "UNAVAILABLE"
        server.load_model("ens_double")
        # ...and come back with it, their statistics reset (a reload).
        assert server.model_ready("ensemble_chain") and server.model_ready("ensemble_nested")
        assert server.statistics("ensemble_chain")[0].inference_count == 0
        fp32("ensemble_nested", server, np.ones((2, 4), np.float32))
    finally:
        server.stop()


def test_a_composing_model_that_no_longer_fits_unloads_its_ensemble(tmp_path: Path) -> None:
    server = explicit(
        make_repo(tmp_path, "ens_add_one", "ens_double", "ensemble_chain"), "ensemble_chain"
    )
    try:
        smaller = {
            "backend": "python",
            "max_batch_size": 4,
            "input": [io("INPUT")],
            "output": [io("OUTPUT")],
        }
        server.load_model("ens_double", config=json.dumps(smaller))  # succeeds itself
        assert server.model_ready("ens_double") and not server.model_ready("ensemble_chain")
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {
                "ensemble_scheduling": {
                    "step": [step("nope", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"})]
                }
            },
            "ensemble target contains models that are not available or ambiguous: nope",
        ),
        (
            {
                "ensemble_scheduling": {
                    "step": [
                        {
                            **step("ens_add_one", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"}),
                            "model_version": 0,
                        }
                    ]
                }
            },
            "ensemble 'target' depends on 'ens_add_one' whose required version 0 is not loaded.",
        ),
        (
            {
                "ensemble_scheduling": {
                    "step": [step("target", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"})]
                }
            },
            "circular dependency between ensembles: target -> ... -> target -> target",
        ),
        (
            {"max_batch_size": 16},
            "ensemble target allows maximum batch size 16, but it contains model ens_add_one which "
            "only allows maximum batch size to be 8",
        ),
        (
            {"input": [io("INPUT", "TYPE_INT32")]},
            "in ensemble target, ensemble tensor INPUT: inconsistent data type: TYPE_INT32 is "
            "inferred from model target while TYPE_FP32 is inferred from model ens_add_one",
        ),
    ],
)
def test_load_failures_name_the_problem(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    repo = make_repo(tmp_path, "ens_add_one")
    base = {
        "platform": "ensemble",
        "max_batch_size": 8,
        "input": [io("INPUT")],
        "output": [io("OUTPUT")],
        "ensemble_scheduling": {
            "step": [step("ens_add_one", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"})]
        },
    }
    write_ensemble(repo, "target", {**base, **config})
    server = explicit(repo)
    try:
        with pytest.raises(ServerError) as info:
            server.load_model("target")
        assert info.value.kind is ErrorKind.INVALID_ARG
        assert info.value.message == f"load failed for model 'target': {message}\n"
        assert index_states(server, "target") == {"target": None}  # never loaded: no state
    finally:
        server.stop()


def test_a_broken_composing_model_is_quoted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "ensemble_chain", "ens_double")
    (repo / "ens_add_one" / "1").mkdir(parents=True)
    (repo / "ens_add_one" / "config.pbtxt").write_text(
        (CONFORMANCE / "ens_add_one" / "config.pbtxt").read_text()
    )
    broken = (
        "class TritonPythonModel:\n    def initialize(self, args):\n        raise ValueError()\n"
    )
    (repo / "ens_add_one" / "1" / "model.py").write_text(broken)
    server = explicit(repo)
    try:
        with pytest.raises(ServerError) as info:
            server.load_model("ensemble_chain")
        assert info.value.message.startswith(
            "load failed for model 'ensemble_chain': ensemble 'ensemble_chain' depends on "
            "'ens_add_one' which has no loaded version. Model 'ens_add_one' loading failed with "
            "error: version 1 is at UNAVAILABLE state: "
        )
        assert server.model_ready("ens_double")  # loaded on the way, and kept
    finally:
        server.stop()


def test_poll_mode_loads_ensembles_after_their_models_and_stops_them_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "ensemble_chain", "ens_add_one", "ens_double")
    server = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.POLL,
            repository_poll_secs=0,
        )
    )
    server.start()
    try:
        assert server.ready() and server.model_ready("ensemble_chain")
        shutil.rmtree(repo / "ens_double")
        server.poll_model_repository()
        assert not server.model_ready("ensemble_chain")  # what it runs is gone
    finally:
        server.stop()
