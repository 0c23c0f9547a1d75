"""The ensemble corpus: ensemble models on both protocols, against Triton 2.51.

Runs on the "ensemble" pair (``conftest.PAIRS``): the ensembles of ``tests/conformance/models``
(``ensemble_*``), their composing models (``ens_*``, ``fail_modes``, ``simple_sequence``) and
``bls_ensemble``, all loaded at start, with the iterative sequence models of
``cases_sequence_id.py`` (that corpus and ``cases_overrides.py`` run on this pair too).

Covered: metadata and configuration, inference through chains, fan-out/fan-in, a nested
ensemble, a decoupled step (streamed over gRPC, refused over HTTP), failing steps, what a step
receives (id, parameters, correlation id, flags, timeout), a sequence model as a step,
requested-output pruning, statistics of the ensemble and its composing models, the load-time
checks (override configurations of ``ensemble_target``), and loading and unloading with
composing models and dependents. Cases that change what is loaded put it back.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.cases_grpc import _load, _unload, infer_request, tensor
from tests.conformance.cases_http import get, infer, post
from tests.conformance.cases_http import tensor as json_tensor
from tests.conformance.wire import GS, G, H, Pause, Step
from tritonclient.grpc import service_pb2 as pb

PAIR = "ensemble"

ENSEMBLES = (
    "ensemble_chain",
    "ensemble_decoupled",
    "ensemble_fail",
    "ensemble_fan",
    "ensemble_nested",
    "ensemble_params",
    "ensemble_sequence",
    "ensemble_target",
)
#: The models of the "ensemble" pair: the ensembles, their composing models, a BLS caller.
PAIR_MODELS = (
    *ENSEMBLES,
    "bls_ensemble",
    "ens_add_one",
    "ens_count",
    "ens_double",
    "ens_probe",
    "ens_sum",
    "fail_modes",
    "simple_sequence",
    # For cases_sequence_id.py and cases_overrides.py, which run on this pair too.
    "iterative_probe",
    "iterative_probe_decoupled",
)
FOUR = [1.0, 2.0, 3.0, 4.0]
_NESTED_BODY = {"inputs": [json_tensor("INPUT", "FP32", [2, 4], FOUR * 2)]}
_INDEX_HTTP = post("/v2/repository/index")
_INDEX_GRPC = G("RepositoryIndex", pb.RepositoryIndexRequest())
#: Triton answers an unload request before a Python model's stub has stopped (the index shows
#: it UNLOADING a little longer); an index read waits this long after one.
_SETTLE = Pause(2.0)


def _case(name: str, steps: list[Step]) -> Case:
    return Case(f"ensemble/{name}", steps, PAIR)


def _fp32_body(model_rows: int = 1, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "inputs": [json_tensor("INPUT", "FP32", [model_rows, 4], FOUR * model_rows)]
    }
    body.update(extra)
    return body


def _int_body(name: str, value: int, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"inputs": [json_tensor(name, "INT32", [1], [value])]}
    body.update(extra)
    return body


def _grpc_fp32(model: str, rows: int = 1, **kw: Any) -> pb.ModelInferRequest:
    data = np.tile(np.array(FOUR, dtype=np.float32), (rows, 1))
    return infer_request(model, [(tensor("INPUT", "FP32", [rows, 4]), data.tobytes())], **kw)


def _grpc_int(model: str, name: str, value: int, **kw: Any) -> pb.ModelInferRequest:
    raw = np.array([value], dtype=np.int32).tobytes()
    return infer_request(model, [(tensor(name, "INT32", [1]), raw)], **kw)


def _stats(model: str) -> H:
    return get(f"/v2/models/{model}/stats")


def _grpc_stats(model: str) -> G:
    return G("ModelStatistics", pb.ModelStatisticsRequest(name=model))


# -- metadata, configuration, index ----------------------------------------------------------------


def _metadata() -> list[Case]:
    cases = [
        _case("http/index", [_INDEX_HTTP]),
        _case("grpc/index", [_INDEX_GRPC]),
        _case("http/index-ready", [post("/v2/repository/index", {"ready": True})]),
    ]
    for model in ENSEMBLES:
        cases += [
            _case(f"http/metadata/{model}", [get(f"/v2/models/{model}")]),
            _case(f"http/config/{model}", [get(f"/v2/models/{model}/config")]),
            _case(f"http/ready/{model}", [get(f"/v2/models/{model}/versions/1/ready")]),
            _case(
                f"grpc/metadata/{model}", [G("ModelMetadata", pb.ModelMetadataRequest(name=model))]
            ),
            _case(f"grpc/config/{model}", [G("ModelConfig", pb.ModelConfigRequest(name=model))]),
        ]
    return cases


# -- inference -------------------------------------------------------------------------------------


def _infer_http() -> list[Case]:
    fan = "ensemble_fan"
    return [
        _case("http/chain", [infer("ensemble_chain", _fp32_body(id="c1"))]),
        _case("http/chain-batch-3", [infer("ensemble_chain", _fp32_body(3))]),
        _case("http/chain-version-1", [infer("ensemble_chain", _fp32_body(), version="1")]),
        _case("http/chain-unknown-version", [infer("ensemble_chain", _fp32_body(), version="2")]),
        _case(
            "http/chain-binary-output",
            [infer("ensemble_chain", _fp32_body(parameters={"binary_data_output": True}))],
        ),
        _case("http/fan", [infer(fan, _fp32_body(2))]),
        _case("http/fan-sum-only", [infer(fan, _fp32_body(outputs=[{"name": "SUM"}]))]),
        # Triton 2.51's pruning drops the step writing PLUS_ONE (it also feeds the pruned sum).
        _case("http/fan-plus-one-only", [infer(fan, _fp32_body(outputs=[{"name": "PLUS_ONE"}]))]),
        _case(
            "http/fan-outputs-reversed",
            [infer(fan, _fp32_body(outputs=[{"name": "SUM"}, {"name": "PLUS_ONE"}]))],
        ),
        _case(
            "http/fan-classification",
            [
                infer(
                    fan,
                    _fp32_body(
                        outputs=[
                            {"name": "SUM", "parameters": {"classification": 2}},
                            {"name": "PLUS_ONE"},
                        ]
                    ),
                )
            ],
        ),
        _case("http/fan-unknown-output", [infer(fan, _fp32_body(outputs=[{"name": "NOPE"}]))]),
        _case("http/fan-batch-too-big", [infer(fan, _fp32_body(9))]),
        _case(
            "http/fan-wrong-datatype",
            [infer(fan, {"inputs": [json_tensor("INPUT", "INT32", [1, 4], [1, 2, 3, 4])]})],
        ),
        _case(
            "http/fan-wrong-shape",
            [infer(fan, {"inputs": [json_tensor("INPUT", "FP32", [1, 3], [1, 2, 3])]})],
        ),
        _case("http/fan-no-input", [infer(fan, {"inputs": []})]),
        _case(
            "http/nested",
            [infer("ensemble_nested", _NESTED_BODY)],
        ),
        _case(
            "http/params",
            [
                infer(
                    "ensemble_params",
                    _int_body(
                        "IN",
                        7,
                        id="p1",
                        parameters={"s": "text", "i": -3, "b": True, "f": 0.5, "timeout": 1000},
                    ),
                )
            ],
        ),
        _case(
            "http/params-sequence-flags",
            [
                infer(
                    "ensemble_params",
                    _int_body(
                        "IN",
                        1,
                        parameters={"sequence_id": 42, "sequence_start": True, "priority": 1},
                    ),
                )
            ],
        ),
        _case(
            "http/params-string-sequence-id",
            [
                infer(
                    "ensemble_params",
                    _int_body("IN", 1, parameters={"sequence_id": "seq", "sequence_end": True}),
                )
            ],
        ),
        _case(
            "http/params-info-only",
            [infer("ensemble_params", _int_body("IN", 2, outputs=[{"name": "INFO"}]))],
        ),
        _case(
            "http/sequence",
            [
                infer(
                    "ensemble_sequence",
                    {
                        "inputs": [json_tensor("INPUT", "INT32", [1, 1], [value])],
                        "parameters": parameters,
                    },
                )
                for value, parameters in (
                    (5, {"sequence_id": 77, "sequence_start": True}),
                    (6, {"sequence_id": 77}),
                    (7, {"sequence_id": 77, "sequence_end": True}),
                    (8, {"sequence_id": 77}),
                    (9, {}),
                    (10, {"sequence_id": "s77", "sequence_start": True, "sequence_end": True}),
                )
            ],
        ),
        _case("http/decoupled-refused", [infer("ensemble_decoupled", _int_body("COUNT", 2))]),
        *[
            _case(f"http/fail-mode-{mode}", [infer("ensemble_fail", _int_body("MODE", mode))])
            for mode in (0, 1, 2)
        ],
        _case(
            "http/bls",
            [
                infer(
                    "bls_ensemble",
                    {
                        "inputs": [
                            json_tensor("INPUT", "FP32", [1, 4], FOUR),
                            json_tensor("COUNT", "INT32", [1], [3]),
                            json_tensor("MODE", "INT32", [1], [1]),
                        ]
                    },
                )
            ],
        ),
    ]


def _infer_grpc() -> list[Case]:
    def stream(*requests: pb.ModelInferRequest) -> GS:
        return GS(list(requests))

    def count(value: int, request_id: str, **parameters: Any) -> pb.ModelInferRequest:
        return _grpc_int(
            "ensemble_decoupled", "COUNT", value, request_id=request_id, parameters=parameters
        )

    return [
        _case("grpc/chain", [G("ModelInfer", _grpc_fp32("ensemble_chain", request_id="g1"))]),
        _case("grpc/fan", [G("ModelInfer", _grpc_fp32("ensemble_fan", 2))]),
        _case(
            "grpc/fan-plus-one-only",
            [G("ModelInfer", _grpc_fp32("ensemble_fan", outputs=["PLUS_ONE"]))],
        ),
        _case(
            "grpc/params",
            [
                G(
                    "ModelInfer",
                    _grpc_int(
                        "ensemble_params",
                        "IN",
                        3,
                        request_id="gp",
                        parameters={"x": "y", "sequence_id": 8, "sequence_end": True},
                    ),
                )
            ],
        ),
        _case("grpc/decoupled-unary-refused", [G("ModelInfer", count(2, "u"))]),
        _case("grpc/decoupled-stream", [stream(count(3, "s3"))]),
        _case("grpc/decoupled-stream-none", [stream(count(0, "s0"))]),
        _case(
            "grpc/decoupled-stream-empty-final",
            [stream(count(2, "e2", triton_enable_empty_final_response=True))],
        ),
        _case(
            "grpc/decoupled-stream-none-empty-final",
            [stream(count(0, "e0", triton_enable_empty_final_response=True))],
        ),
        _case("grpc/decoupled-stream-error", [stream(count(-1, "neg"))]),
        _case("grpc/decoupled-stream-two", [stream(count(2, "a"), count(1, "b"))]),
        _case("grpc/chain-stream", [stream(_grpc_fp32("ensemble_chain", request_id="cs"))]),
        *[
            _case(
                f"grpc/fail-mode-{mode}",
                [G("ModelInfer", _grpc_int("ensemble_fail", "MODE", mode))],
            )
            for mode in (0, 1, 2)
        ],
        _case(
            "grpc/sequence-string-id",
            [
                G(
                    "ModelInfer",
                    infer_request(
                        "ensemble_sequence",
                        [(tensor("INPUT", "INT32", [1, 1]), np.int32([[4]]).tobytes())],
                        parameters={"sequence_id": "g-seq", "sequence_start": True},
                    ),
                ),
                G(
                    "ModelInfer",
                    infer_request(
                        "ensemble_sequence",
                        [(tensor("INPUT", "INT32", [1, 1]), np.int32([[3]]).tobytes())],
                        parameters={"sequence_id": "g-seq", "sequence_end": True},
                    ),
                ),
            ],
        ),
    ]


# -- statistics ------------------------------------------------------------------------------------


def _statistics() -> list[Case]:
    # Each case unloads what it counts and loads it again first, so that its statistics start
    # from zero on both servers whatever ran before.
    chain_reset = [
        post("/v2/repository/models/ensemble_chain/unload"),
        post("/v2/repository/models/ens_add_one/unload"),
        post("/v2/repository/models/ens_double/unload"),
        post("/v2/repository/models/ens_add_one/load"),
        post("/v2/repository/models/ens_double/load"),
        post("/v2/repository/models/ensemble_chain/load"),
    ]
    fail_reset = [
        post("/v2/repository/models/ensemble_fail/unload"),
        post("/v2/repository/models/fail_modes/unload"),
        post("/v2/repository/models/ens_probe/unload"),
        post("/v2/repository/models/fail_modes/load"),
        post("/v2/repository/models/ens_probe/load"),
        post("/v2/repository/models/ensemble_fail/load"),
    ]
    decoupled_reset = [
        post("/v2/repository/models/ensemble_decoupled/unload"),
        post("/v2/repository/models/ens_count/unload"),
        post("/v2/repository/models/ens_count/load"),
        post("/v2/repository/models/ensemble_decoupled/load"),
    ]
    return [
        _case(
            "http/stats-chain",
            [
                *chain_reset,
                _stats("ensemble_chain"),
                infer("ensemble_chain", _fp32_body()),
                infer("ensemble_chain", _fp32_body(3)),
                infer("ensemble_chain", _fp32_body(9)),  # refused before it runs: not counted
                _stats("ensemble_chain"),
                _stats("ens_add_one"),
                _stats("ens_double"),
                _grpc_stats("ensemble_chain"),
            ],
        ),
        _case(
            "http/stats-failures",
            [
                *fail_reset,
                *[infer("ensemble_fail", _int_body("MODE", mode)) for mode in (0, 1, 2, 1)],
                _stats("ensemble_fail"),
                _stats("fail_modes"),
                _stats("ens_probe"),
                _grpc_stats("ensemble_fail"),
            ],
        ),
        _case(
            "grpc/stats-decoupled",
            [
                *decoupled_reset,
                GS(
                    [
                        _grpc_int("ensemble_decoupled", "COUNT", 3, request_id="a"),
                        _grpc_int("ensemble_decoupled", "COUNT", 0, request_id="b"),
                        _grpc_int("ensemble_decoupled", "COUNT", -1, request_id="c"),
                    ]
                ),
                # Triton counts a decoupled step once its execute returns, after its responses.
                Pause(0.5),
                _grpc_stats("ensemble_decoupled"),
                _grpc_stats("ens_count"),
            ],
        ),
        _case(
            "http/stats-pruned",
            [
                post("/v2/repository/models/ensemble_fan/unload"),
                post("/v2/repository/models/ensemble_fan/load"),
                infer("ensemble_fan", _fp32_body(outputs=[{"name": "PLUS_ONE"}])),
                infer("ensemble_fan", _fp32_body(outputs=[{"name": "SUM"}])),
                _stats("ensemble_fan"),
            ],
        ),
    ]


# -- loading: dependencies -------------------------------------------------------------------------


def _lifecycle() -> list[Case]:
    unload_dependents = {"parameters": {"unload_dependents": True}}
    return [
        _case(
            "http/unload-composing-model",
            [
                post("/v2/repository/models/ens_double/unload"),
                _SETTLE,
                _INDEX_HTTP,
                get("/v2/models/ensemble_chain/ready"),
                infer("ensemble_chain", _fp32_body()),
                _stats("ensemble_fan"),
                post("/v2/repository/models/ens_double/load"),
                _INDEX_HTTP,
                infer("ensemble_chain", _fp32_body()),
                infer("ensemble_nested", _NESTED_BODY),
            ],
        ),
        _case(
            "http/load-ensemble-loads-composing",
            [
                post("/v2/repository/models/ensemble_fan/unload"),
                post("/v2/repository/models/ens_sum/unload"),
                _SETTLE,
                _INDEX_HTTP,
                post("/v2/repository/models/ensemble_fan/load"),
                _INDEX_HTTP,
                infer("ensemble_fan", _fp32_body()),
            ],
        ),
        _case(
            "http/unload-dependents",
            [
                post("/v2/repository/models/ensemble_sequence/unload"),
                post("/v2/repository/models/simple_sequence/unload"),
                # Loaded only as the ensemble's composing model...
                post("/v2/repository/models/ensemble_sequence/load"),
                _SETTLE,
                _INDEX_HTTP,
                # ...it stays when the ensemble goes...
                post("/v2/repository/models/ensemble_sequence/unload"),
                _SETTLE,
                _INDEX_HTTP,
                # ...unless the unload cascades.
                post("/v2/repository/models/ensemble_sequence/load"),
                post("/v2/repository/models/ensemble_sequence/unload", unload_dependents),
                _SETTLE,
                _INDEX_HTTP,
                # Loaded explicitly, it stays in any case.
                post("/v2/repository/models/simple_sequence/load"),
                post("/v2/repository/models/ensemble_sequence/load"),
                post("/v2/repository/models/ensemble_sequence/unload", unload_dependents),
                _SETTLE,
                _INDEX_HTTP,
                post("/v2/repository/models/ensemble_sequence/load"),
            ],
        ),
        _case(
            "grpc/unload-dependents",
            [
                _unload("ens_sum", unload_dependents=True),
                _SETTLE,
                _INDEX_GRPC,
                _load("ens_sum"),
                _INDEX_GRPC,
                G("ModelReady", pb.ModelReadyRequest(name="ensemble_fan")),
            ],
        ),
        _case(
            "http/reload-composing-reloads-ensemble",
            [
                infer("ensemble_chain", _fp32_body()),
                post("/v2/repository/models/ens_double/load"),  # unchanged: nothing reloads
                _stats("ensemble_chain"),
                post(
                    "/v2/repository/models/ens_double/load",
                    {"parameters": {"config": json.dumps(_DOUBLE_CONFIG)}},
                ),
                _stats("ensemble_chain"),
                infer("ensemble_chain", _fp32_body()),
                post("/v2/repository/models/ens_double/unload"),
                post("/v2/repository/models/ens_double/load"),
                _SETTLE,
                _INDEX_HTTP,
            ],
        ),
    ]


_DOUBLE_CONFIG = {
    "backend": "python",
    "max_batch_size": 4,
    "input": [{"name": "INPUT", "data_type": "TYPE_FP32", "dims": [4]}],
    "output": [{"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [4]}],
}


# -- loading: Triton's checks of an ensemble configuration -----------------------------------------


def _step(model: str, inputs: dict[str, str], outputs: dict[str, str], version: Any = -1) -> dict:
    step: dict[str, Any] = {"model_name": model, "input_map": inputs, "output_map": outputs}
    if version is not None:
        step["model_version"] = version
    return step


def _io(name: str, datatype: str = "TYPE_FP32", dims: tuple[int, ...] = (4,), **kw: Any) -> dict:
    return {"name": name, "data_type": datatype, "dims": list(dims), **kw}


def _ensemble(steps: list[dict], *, batch: int = 8, **kw: Any) -> dict:
    config: dict[str, Any] = {
        "platform": "ensemble",
        "max_batch_size": batch,
        "input": kw.pop("inputs", [_io("INPUT")]),
        "output": kw.pop("outputs", [_io("OUTPUT")]),
        "ensemble_scheduling": {"step": steps},
    }
    config.update(kw)
    return config


def _add_one(source: str = "INPUT", target: str = "OUTPUT", **kw: Any) -> dict:
    return _step("ens_add_one", {"INPUT": source}, {"OUTPUT": target}, **kw)


def _double(source: str, target: str) -> dict:
    return _step("ens_double", {"INPUT": source}, {"OUTPUT": target})


_INT = "TYPE_INT32"
_FROM_INPUT = {"INPUT": "INPUT"}
_TO_OUTPUT = {"OUTPUT": "OUTPUT"}

#: name -> override configuration of ensemble_target (loaded, then the original is restored).
OVERRIDES: dict[str, dict[str, Any]] = {
    "valid": _ensemble([_add_one()]),
    "two-steps": _ensemble([_add_one(target="mid"), _double("mid", "OUTPUT")]),
    "unknown-model": _ensemble([_step("nope", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"})]),
    "two-unknown-models": _ensemble(
        [
            _step("nope_b", {"INPUT": "INPUT"}, {"OUTPUT": "mid"}),
            _step("nope_a", {"INPUT": "mid"}, {"OUTPUT": "OUTPUT"}),
        ]
    ),
    "version-omitted": _ensemble([_add_one(version=None)]),
    "version-7": _ensemble([_add_one(version=7)]),
    "version-1": _ensemble([_add_one(version=1)]),
    "non-existing-input": _ensemble([_step("ens_add_one", {"NOPE": "INPUT"}, _TO_OUTPUT)]),
    "non-existing-output": _ensemble([_step("ens_add_one", _FROM_INPUT, {"NOPE": "OUTPUT"})]),
    "input-not-mapped": _ensemble([_step("ens_sum", {"A": "INPUT"}, {"OUTPUT": "OUTPUT"})]),
    "optional-input-not-mapped": _ensemble(
        [_step("ens_probe", {"IN": "IN"}, {"OUT": "OUT"})],
        batch=0,
        inputs=[_io("IN", _INT, (1,))],
        outputs=[_io("OUT", _INT, (1,))],
    ),
    "input-mapped-twice": _ensemble(
        [_step("ens_sum", {"A": "INPUT", "B": "INPUT"}, {"OUTPUT": "OUTPUT"})]
    ),
    "datatype-mismatch": _ensemble([_add_one()], inputs=[_io("INPUT", _INT)]),
    "shape-mismatch": _ensemble([_add_one()], inputs=[_io("INPUT", dims=(3,))]),
    "output-datatype-mismatch": _ensemble([_add_one()], outputs=[_io("OUTPUT", _INT)]),
    "output-shape-mismatch": _ensemble([_add_one()], outputs=[_io("OUTPUT", dims=(2, 2))]),
    "batch-too-big": _ensemble([_add_one()], batch=16),
    "non-batching-full-shape": _ensemble(
        [_add_one()],
        batch=0,
        inputs=[_io("INPUT", dims=(-1, 4))],
        outputs=[_io("OUTPUT", dims=(-1, 4))],
    ),
    "non-batching-same-dims": _ensemble([_add_one()], batch=0),
    "output-not-written": _ensemble([_add_one(target="elsewhere")]),
    "input-unused": _ensemble([_add_one()], inputs=[_io("INPUT"), _io("EXTRA")]),
    "tensor-unused": _ensemble([_add_one(), _double("INPUT", "dangling")]),
    "output-written-twice": _ensemble([_add_one(), _double("INPUT", "OUTPUT")]),
    "steps-in-a-cycle": _ensemble(
        [_add_one("loop_b", "loop_a"), _double("loop_a", "loop_b"), _add_one()]
    ),
    "no-steps": _ensemble([]),
    "step-without-model": _ensemble([_step("", {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT"})]),
    "step-without-input-map": _ensemble([_step("ens_add_one", {}, {"OUTPUT": "OUTPUT"})]),
    "step-without-output-map": _ensemble([_step("ens_add_one", {"INPUT": "INPUT"}, {})]),
    "instance-group": _ensemble([_add_one()], instance_group=[{"kind": "KIND_CPU"}]),
    "with-backend": _ensemble([_add_one()], backend="python"),
    "scheduling-not-ensemble": {**_ensemble([_add_one()]), "platform": "", "backend": "python"},
    "decoupled-and-not-joined": _ensemble(
        [
            _step("ens_count", {"IN": "COUNT"}, {"OUT": "counted"}),
            _step("ens_probe", {"IN": "COUNT"}, {"OUT": "probed"}),
            _step("ens_probe", {"IN": "counted", "EXTRA": "probed"}, {"OUT": "OUT"}),
        ],
        batch=0,
        inputs=[_io("COUNT", _INT, (1,))],
        outputs=[_io("OUT", _INT, (1,))],
    ),
    "decoupled-step": _ensemble(
        [_step("ens_count", {"IN": "COUNT"}, {"OUT": "OUT"})],
        batch=0,
        inputs=[_io("COUNT", _INT, (1,))],
        outputs=[_io("OUT", _INT, (1,))],
    ),
    "declared-decoupled": _ensemble([_add_one()], model_transaction_policy={"decoupled": True}),
    "nested-ensemble": _ensemble([_step("ensemble_chain", _FROM_INPUT, _TO_OUTPUT)]),
    "runs-itself": _ensemble([_step("ensemble_target", _FROM_INPUT, _TO_OUTPUT)]),
    "dynamic-batching": _ensemble([_add_one()], dynamic_batching={}),
}


def _overrides() -> list[Case]:
    cases = []
    restore: list[Step] = [
        post("/v2/repository/models/ensemble_target/unload"),
        post("/v2/repository/models/ensemble_target/load"),
    ]
    for name, config in OVERRIDES.items():
        body = {"parameters": {"config": json.dumps(config)}}
        steps: list[Step] = [
            post("/v2/repository/models/ensemble_target/load", body),
            get("/v2/models/ensemble_target"),
            get("/v2/models/ensemble_target/config"),
            Pause(0.5),  # Triton unloads an ensemble that fails its checks after it answers
            _INDEX_HTTP,
            *restore,
        ]
        cases.append(_case(f"http/load/{name}", steps))
    cases.append(
        _case(
            "grpc/load/unknown-model",
            [
                _load("ensemble_target", config=json.dumps(OVERRIDES["unknown-model"])),
                Pause(0.5),
                _INDEX_GRPC,
                *restore,
            ],
        )
    )
    cases.append(
        _case(
            "http/load/valid-then-infer",
            [
                post(
                    "/v2/repository/models/ensemble_target/load",
                    {"parameters": {"config": json.dumps(OVERRIDES["two-steps"])}},
                ),
                infer("ensemble_target", _fp32_body()),
                _stats("ensemble_target"),
                *restore,
                infer("ensemble_target", _fp32_body()),
            ],
        )
    )
    return cases


def cases() -> list[Case]:
    """Every ensemble case (all on the "ensemble" pair)."""
    return [
        *_metadata(),
        *_infer_http(),
        *_infer_grpc(),
        *_statistics(),
        *_lifecycle(),
        *_overrides(),
    ]
