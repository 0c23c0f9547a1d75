"""The gRPC corpus: every RPC of protocol.md section 4 (and the health service), with errors.

Requests are protobuf messages built here from the generated ``service_pb2`` (or raw bytes, for
malformed messages), sent with plain grpcio calls by :mod:`tests.conformance.wire`. Cases that
change server state put it back before they end, as in :mod:`tests.conformance.cases_http`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.cases_http import ALL_MODELS, IDENTITY_MODELS, bytes_tensor
from tests.conformance.wire import GS, Context, G, Pause, Shm, ShmRead
from tritonclient.grpc import service_pb2 as pb

HEALTH = "grpc.health.v1.Health"
SIMPLE_IN = np.arange(16, dtype=np.int32)
ONES = np.ones(16, dtype=np.int32)


def param(value: Any) -> pb.InferParameter:
    """An ``InferParameter`` holding ``value`` in the field its Python type selects."""
    p = pb.InferParameter()
    if isinstance(value, bool):
        p.bool_param = value
    elif isinstance(value, int):
        p.int64_param = value
    elif isinstance(value, float):
        p.double_param = value
    elif isinstance(value, str):
        p.string_param = value
    elif isinstance(value, pb.InferParameter):
        p.CopyFrom(value)
    return p


def uint64_param(value: int) -> pb.InferParameter:
    return pb.InferParameter(uint64_param=value)


def tensor(
    name: str, datatype: str, shape: Sequence[int], **parameters: Any
) -> pb.ModelInferRequest.InferInputTensor:
    t = pb.ModelInferRequest.InferInputTensor(name=name, datatype=datatype, shape=list(shape))
    for key, value in parameters.items():
        t.parameters[key].CopyFrom(param(value))
    return t


def infer_request(
    model: str,
    inputs: Sequence[tuple[pb.ModelInferRequest.InferInputTensor, bytes | None]],
    *,
    version: str = "",
    request_id: str = "",
    outputs: Sequence[str | tuple[str, dict[str, Any]]] = (),
    parameters: dict[str, Any] | None = None,
) -> pb.ModelInferRequest:
    """A request: each input with its raw bytes (None: none appended for it)."""
    request = pb.ModelInferRequest(model_name=model, model_version=version, id=request_id)
    for t, raw in inputs:
        request.inputs.append(t)
        if raw is not None:
            request.raw_input_contents.append(raw)
    for output in outputs:
        name, params = (output, {}) if isinstance(output, str) else output
        o = request.outputs.add(name=name)
        for key, value in params.items():
            o.parameters[key].CopyFrom(param(value))
    for key, value in (parameters or {}).items():
        request.parameters[key].CopyFrom(param(value))
    return request


def simple(**kw: Any) -> pb.ModelInferRequest:
    return infer_request(
        "simple",
        [
            (tensor("INPUT0", "INT32", [1, 16]), SIMPLE_IN.tobytes()),
            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
        ],
        **kw,
    )


def infer(request: pb.ModelInferRequest | bytes | Callable[[Context], pb.ModelInferRequest]) -> G:
    return G("ModelInfer", request)


def _health_and_metadata() -> list[Case]:
    cases = [
        Case("grpc/server-live", [G("ServerLive", pb.ServerLiveRequest())]),
        Case("grpc/server-ready", [G("ServerReady", pb.ServerReadyRequest())]),
        # The version is each server's own (Triton 2.51.0; this package's).
        Case(
            "grpc/server-metadata",
            [G("ServerMetadata", pb.ServerMetadataRequest(), volatile=("version",))],
        ),
        Case("grpc/health-check", [G("Check", b"", service=HEALTH)]),
        Case("grpc/model-ready", [G("ModelReady", pb.ModelReadyRequest(name="simple"))]),
        Case(
            "grpc/model-ready/version",
            [G("ModelReady", pb.ModelReadyRequest(name="simple", version="1"))],
        ),
        Case(
            "grpc/model-ready/unknown-version",
            [G("ModelReady", pb.ModelReadyRequest(name="simple", version="7"))],
        ),
        Case(
            "grpc/model-ready/bad-version",
            [G("ModelReady", pb.ModelReadyRequest(name="simple", version="x"))],
        ),
        Case("grpc/model-ready/unknown", [G("ModelReady", pb.ModelReadyRequest(name="nope"))]),
        Case("grpc/model-ready/empty-name", [G("ModelReady", pb.ModelReadyRequest())]),
        Case(
            "grpc/model-metadata/unknown",
            [G("ModelMetadata", pb.ModelMetadataRequest(name="nope"))],
        ),
        Case(
            "grpc/model-metadata/unknown-version",
            [G("ModelMetadata", pb.ModelMetadataRequest(name="simple", version="9"))],
        ),
        Case(
            "grpc/model-metadata/bad-version",
            [G("ModelMetadata", pb.ModelMetadataRequest(name="simple", version="one"))],
        ),
        Case(
            "grpc/model-metadata/negative-version",
            [G("ModelMetadata", pb.ModelMetadataRequest(name="simple", version="-1"))],
        ),
        Case(
            "grpc/model-config/unknown",
            [G("ModelConfig", pb.ModelConfigRequest(name="nope"))],
        ),
        Case(
            "grpc/model-config/unknown-version",
            [G("ModelConfig", pb.ModelConfigRequest(name="simple", version="3"))],
        ),
        Case("grpc/model-config/empty-name", [G("ModelConfig", pb.ModelConfigRequest())]),
        Case(
            "grpc/model-metadata/percent-encoded",
            [G("ModelMetadata", pb.ModelMetadataRequest(name="simpl%65"))],
        ),
    ]
    for model in ALL_MODELS:
        cases.append(
            Case(
                f"grpc/model-metadata/{model}",
                [G("ModelMetadata", pb.ModelMetadataRequest(name=model))],
            )
        )
        cases.append(
            Case(
                f"grpc/model-config/{model}",
                [G("ModelConfig", pb.ModelConfigRequest(name=model))],
            )
        )
    return cases


def _infer() -> list[Case]:
    wrong_shape = infer_request(
        "simple",
        [
            (tensor("INPUT0", "INT32", [1, 8]), SIMPLE_IN[:8].tobytes()),
            (tensor("INPUT1", "INT32", [1, 8]), ONES[:8].tobytes()),
        ],
    )
    typed = pb.ModelInferRequest(model_name="simple")
    for name, values in (("INPUT0", SIMPLE_IN), ("INPUT1", ONES)):
        t = typed.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        t.contents.int_contents.extend(int(v) for v in values)
    mixed = pb.ModelInferRequest()
    mixed.CopyFrom(typed)
    mixed.raw_input_contents.append(SIMPLE_IN.tobytes())
    wrong_contents = pb.ModelInferRequest(model_name="simple")
    for name in ("INPUT0", "INPUT1"):
        t = wrong_contents.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        t.contents.fp32_contents.extend([1.0] * 16)
    cases = [
        Case("grpc/infer/raw", [infer(simple())]),
        Case("grpc/infer/typed-contents", [infer(typed)]),
        Case("grpc/infer/contents-and-raw", [infer(mixed)]),
        Case("grpc/infer/contents-wrong-type", [infer(wrong_contents)]),
        Case("grpc/infer/with-id", [infer(simple(request_id="r-1"))]),
        Case("grpc/infer/version", [infer(simple(version="1"))]),
        Case("grpc/infer/unknown-version", [infer(simple(version="2"))]),
        Case("grpc/infer/bad-version", [infer(simple(version="latest"))]),
        Case(
            "grpc/infer/unknown-model",
            [infer(infer_request("nope", [(tensor("INPUT0", "INT32", [1]), b"\0" * 4)]))],
        ),
        Case("grpc/infer/wrong-shape", [infer(wrong_shape)]),
        Case("grpc/infer/one-output", [infer(simple(outputs=["OUTPUT1"]))]),
        Case("grpc/infer/outputs-reversed", [infer(simple(outputs=["OUTPUT1", "OUTPUT0"]))]),
        Case("grpc/infer/duplicate-output", [infer(simple(outputs=["OUTPUT0", "OUTPUT0"]))]),
        Case("grpc/infer/unknown-output", [infer(simple(outputs=["NOPE"]))]),
        Case(
            "grpc/infer/classification",
            [infer(simple(outputs=[("OUTPUT0", {"classification": 3})]))],
        ),
        Case(
            "grpc/infer/classification-not-int",
            [infer(simple(outputs=[("OUTPUT0", {"classification": "3"})]))],
        ),
        Case(
            "grpc/infer/missing-raw",
            [
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT32", [1, 16]), SIMPLE_IN.tobytes()),
                            (tensor("INPUT1", "INT32", [1, 16]), None),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/extra-raw",
            [
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT32", [1, 16]), SIMPLE_IN.tobytes()),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/raw-too-short",
            [
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT32", [1, 16]), SIMPLE_IN.tobytes()[:60]),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/missing-input",
            [
                infer(
                    infer_request(
                        "simple", [(tensor("INPUT0", "INT32", [1, 16]), SIMPLE_IN.tobytes())]
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/unknown-datatype",
            [
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT33", [1, 16]), SIMPLE_IN.tobytes()),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/negative-dim",
            [
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT32", [-1, 16]), SIMPLE_IN.tobytes()),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/decoupled",
            [
                infer(
                    infer_request(
                        "repeat_int32",
                        [
                            (tensor("IN", "INT32", [1]), np.int32([1]).tobytes()),
                            (tensor("DELAY", "UINT32", [1]), np.uint32([0]).tobytes()),
                            (tensor("WAIT", "UINT32", [1]), np.uint32([0]).tobytes()),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/model-error",
            [
                infer(
                    infer_request(
                        "simple_string",
                        [
                            (tensor("INPUT0", "BYTES", [1, 16]), bytes_tensor([b"x"] * 16)),
                            (tensor("INPUT1", "BYTES", [1, 16]), bytes_tensor([b"1"] * 16)),
                        ],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/bytes-contents",
            [
                infer(
                    _with_contents(
                        "identity_bytes", "INPUT0", "BYTES", [1, 2], bytes_contents=[b"a", b""]
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/bytes-element-too-long",
            [
                infer(
                    infer_request(
                        "identity_bytes",
                        [(tensor("INPUT0", "BYTES", [1, 1]), b"\x05\0\0\0ab")],
                    )
                )
            ],
        ),
        Case(
            "grpc/infer/bytes-length-cut",
            [
                infer(
                    infer_request(
                        "identity_bytes",
                        [(tensor("INPUT0", "BYTES", [1, 2]), b"\x01\0\0\0a\x05\0")],
                    )
                )
            ],
        ),
        Case("grpc/infer/malformed-message", [infer(b"\x0a\xff\xff\xff\xff\x0f")]),
        Case("grpc/infer/empty-message", [infer(b"")]),
    ]
    values: dict[str, Any] = {
        "BOOL": np.array([[True, False, True]]),
        "UINT8": np.array([[0, 7, 255]], np.uint8),
        "UINT16": np.array([[0, 7, 65535]], np.uint16),
        "UINT32": np.array([[0, 7, 2**32 - 1]], np.uint32),
        "UINT64": np.array([[0, 7, 2**64 - 1]], np.uint64),
        "INT8": np.array([[-128, 0, 127]], np.int8),
        "INT16": np.array([[-32768, 0, 32767]], np.int16),
        "INT32": np.array([[-(2**31), 0, 2**31 - 1]], np.int32),
        "INT64": np.array([[-(2**63), 0, 2**63 - 1]], np.int64),
        "FP16": np.array([[0.5, -1.0, 2.0]], np.float16),
        "FP32": np.array([[0.1, -1.5, 3.0]], np.float32),
        "FP64": np.array([[0.1, -1.5, 1e300]], np.float64),
        "BF16": np.array([[0x3F00, 0xBF80, 0x4000]], np.uint16),
    }
    for datatype, model in IDENTITY_MODELS.items():
        raw = (
            bytes_tensor([b"a", b"", b"\xc3\xa9"])
            if datatype == "BYTES"
            else values[datatype].tobytes()
        )
        request = infer_request(model, [(tensor("INPUT0", datatype, [1, 3]), raw)])
        cases.append(Case(f"grpc/infer/raw-{datatype.lower()}", [infer(request)]))
        empty = infer_request(model, [(tensor("INPUT0", datatype, [1, 0]), b"")])
        cases.append(Case(f"grpc/infer/empty-{datatype.lower()}", [infer(empty)]))
    for field, datatype, model, data in (
        ("bool_contents", "BOOL", "identity_bool", [True, False]),
        ("int_contents", "INT8", "identity_int8", [-1, 300]),
        ("int_contents", "INT16", "identity_int16", [-1, 70000]),
        ("uint_contents", "UINT8", "identity_uint8", [1, 257]),
        ("int64_contents", "INT64", "identity_int64", [-5, 5]),
        ("uint64_contents", "UINT64", "identity_uint64", [5, 2**64 - 1]),
        ("fp32_contents", "FP32", "identity_fp32", [0.25, -2.0]),
        ("fp64_contents", "FP64", "identity_fp64", [0.25, -2.0]),
    ):
        request = _with_contents(model, "INPUT0", datatype, [1, 2], **{field: data})
        cases.append(Case(f"grpc/infer/contents-{datatype.lower()}", [infer(request)]))
    cases.append(
        Case(
            "grpc/infer/contents-count-wrong",
            [infer(_with_contents("identity_int32", "INPUT0", "INT32", [1, 3], int_contents=[1]))],
        )
    )
    return cases


def _with_contents(
    model: str, name: str, datatype: str, shape: list[int], **contents: Any
) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model)
    t = request.inputs.add(name=name, datatype=datatype, shape=shape)
    for field, data in contents.items():
        getattr(t.contents, field).extend(data)
    return request


def _parameters() -> list[Case]:
    cases = []
    for name, value in [
        ("sequence_id", 5),
        ("sequence_id", "abc"),
        ("sequence_start", True),
        ("sequence_start", 1),
        ("priority", 1),
        ("priority", uint64_param(2)),
        ("priority", "high"),
        ("timeout", 1000),
        ("timeout", "x"),
        ("custom_string", "x"),
        ("custom_int", 3),
        ("custom_bool", False),
        ("custom_double", 0.5),
        ("custom_uint64", uint64_param(3)),
        ("custom_unset", pb.InferParameter()),
        ("triton_x", 1),
        ("triton_enable_empty_final_response", True),
        ("binary_data_output", True),
        ("headers", "x"),
        ("binary_data_size", 4),
    ]:
        label = (
            value.WhichOneof("parameter_choice")
            if isinstance(value, pb.InferParameter)
            else (json.dumps(value))
        )
        cases.append(
            Case(
                f"grpc/params/{name}-{label}",
                [infer(simple(parameters={name: value}))],
            )
        )
    return cases


def _sequence(model: str, sid: Any, value: int, **flags: Any) -> pb.ModelInferRequest:
    return infer_request(
        model,
        [(tensor("INPUT", "INT32", [1, 1]), np.int32([value]).tobytes())],
        parameters={"sequence_id": sid, **flags},
    )


def _sequences() -> list[Case]:
    return [
        Case(
            "grpc/sequence/direct",
            [
                infer(_sequence("simple_sequence", 41, 0, sequence_start=True)),
                infer(_sequence("simple_sequence", 41, 11)),
                infer(_sequence("simple_sequence", 41, 7, sequence_end=True)),
            ],
        ),
        Case("grpc/sequence/no-start", [infer(_sequence("simple_sequence", 42, 5))]),
        Case(
            "grpc/sequence/id-zero",
            [infer(_sequence("simple_sequence", 0, 5, sequence_start=True))],
        ),
        Case(
            "grpc/sequence/string-id",
            [
                infer(_sequence("simple_string_dyna_sequence", "77", 3, sequence_start=True)),
                infer(_sequence("simple_string_dyna_sequence", "77", 4, sequence_end=True)),
            ],
        ),
    ]


def _repeat(values: list[int], request_id: str, **parameters: Any) -> pb.ModelInferRequest:
    n = len(values)
    return infer_request(
        "repeat_int32",
        [
            (tensor("IN", "INT32", [n]), np.int32(values).tobytes()),
            (tensor("DELAY", "UINT32", [n]), np.zeros(n, np.uint32).tobytes()),
            (tensor("WAIT", "UINT32", [1]), np.zeros(1, np.uint32).tobytes()),
        ],
        request_id=request_id,
        parameters=parameters,
    )


def _square(n: int, request_id: str, **parameters: Any) -> pb.ModelInferRequest:
    return infer_request(
        "square_int32",
        [(tensor("IN", "INT32", [1]), np.int32([n]).tobytes())],
        request_id=request_id,
        parameters=parameters,
    )


def _streams() -> list[Case]:
    error_mode = (("triton_grpc_error", "true"),)
    return [
        Case("grpc/stream/plain-model", [GS([simple(request_id="a")])]),
        Case("grpc/stream/two-plain", [GS([simple(request_id="a"), simple(request_id="b")])]),
        Case("grpc/stream/decoupled", [GS([_repeat([4, 5, 6], "r")])]),
        Case(
            "grpc/stream/empty-final",
            [GS([_repeat([4, 5], "r", triton_enable_empty_final_response=True)])],
        ),
        Case("grpc/stream/zero-responses", [GS([_square(0, "z")])]),
        Case(
            "grpc/stream/zero-responses-empty-final",
            [GS([_square(0, "z", triton_enable_empty_final_response=True)])],
        ),
        Case(
            "grpc/stream/empty-final-not-bool",
            [GS([_square(1, "z", triton_enable_empty_final_response=1)])],
        ),
        Case(
            "grpc/stream/unknown-model-in-band",
            [
                GS(
                    [
                        infer_request(
                            "nope", [(tensor("X", "INT32", [1]), b"\0" * 4)], request_id="u"
                        ),
                        simple(request_id="after"),
                    ]
                )
            ],
        ),
        Case(
            "grpc/stream/bad-shape-in-band",
            [GS([simple(request_id="ok"), _bad_shape("bad")])],
        ),
        Case(
            "grpc/stream/model-error-in-band",
            [GS([_model_error("m"), simple(request_id="after")])],
        ),
        Case(
            "grpc/stream/reserved-param-in-band",
            [GS([simple(request_id="p", parameters={"triton_x": 1})])],
        ),
        Case(
            "grpc/stream/error-mode-request-error",
            [GS([_bad_shape("bad")], metadata=error_mode)],
        ),
        Case(
            "grpc/stream/error-mode-model-error",
            [GS([_model_error("m")], metadata=error_mode)],
        ),
        Case(
            "grpc/stream/sequence",
            [
                GS(
                    [
                        _sequence("simple_sequence", 51, 1, sequence_start=True),
                        _sequence("simple_sequence", 51, 2, sequence_end=True),
                    ]
                )
            ],
        ),
        Case("grpc/stream/malformed-message", [GS([b"\x0a\xff\xff\xff\xff\x0f"])]),
    ]


def _bad_shape(request_id: str) -> pb.ModelInferRequest:
    return infer_request(
        "simple",
        [
            (tensor("INPUT0", "INT32", [1, 8]), SIMPLE_IN[:8].tobytes()),
            (tensor("INPUT1", "INT32", [1, 8]), ONES[:8].tobytes()),
        ],
        request_id=request_id,
    )


def _model_error(request_id: str) -> pb.ModelInferRequest:
    return infer_request(
        "simple_string",
        [
            (tensor("INPUT0", "BYTES", [1, 16]), bytes_tensor([b"x"] * 16)),
            (tensor("INPUT1", "BYTES", [1, 16]), bytes_tensor([b"1"] * 16)),
        ],
        request_id=request_id,
    )


def _statistics() -> list[Case]:
    request = infer_request(
        "identity_uint32",
        [(tensor("INPUT0", "UINT32", [1, 2]), np.uint32([1, 2]).tobytes())],
    )
    return [
        Case(
            "grpc/stats/after-inference",
            [
                G(
                    "RepositoryModelLoad",
                    pb.RepositoryModelLoadRequest(model_name="identity_uint32"),
                ),
                infer(request),
                infer(request),
                # Triton records an execution after its answer is out.
                Pause(0.5),
                G("ModelStatistics", pb.ModelStatisticsRequest(name="identity_uint32")),
                G(
                    "ModelStatistics",
                    pb.ModelStatisticsRequest(name="identity_uint32", version="1"),
                ),
            ],
        ),
        Case("grpc/stats/unknown", [G("ModelStatistics", pb.ModelStatisticsRequest(name="no"))]),
        Case(
            "grpc/stats/unknown-version",
            [G("ModelStatistics", pb.ModelStatisticsRequest(name="simple", version="5"))],
        ),
        Case(
            "grpc/stats/bad-version",
            [G("ModelStatistics", pb.ModelStatisticsRequest(name="simple", version="v"))],
        ),
    ]


def _load(model: str, **parameters: Any) -> G:
    request = pb.RepositoryModelLoadRequest(model_name=model)
    for key, value in parameters.items():
        if isinstance(value, bytes):
            request.parameters[key].bytes_param = value
        else:
            request.parameters[key].CopyFrom(_model_param(value))
    return G("RepositoryModelLoad", request)


def _model_param(value: Any) -> pb.ModelRepositoryParameter:
    p = pb.ModelRepositoryParameter()
    if isinstance(value, bool):
        p.bool_param = value
    elif isinstance(value, int):
        p.int64_param = value
    elif isinstance(value, str):
        p.string_param = value
    return p


def _unload(model: str, **parameters: Any) -> G:
    request = pb.RepositoryModelUnloadRequest(model_name=model)
    for key, value in parameters.items():
        request.parameters[key].CopyFrom(_model_param(value))
    return G("RepositoryModelUnload", request)


def _repository() -> list[Case]:
    override = json.dumps(
        {
            "backend": "python",
            "max_batch_size": 0,
            "input": [{"name": "INPUT0", "data_type": "TYPE_FP64", "dims": [-1]}],
            "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP64", "dims": [-1]}],
        }
    )
    return [
        Case("grpc/repository/index", [G("RepositoryIndex", pb.RepositoryIndexRequest())]),
        Case(
            "grpc/repository/index-ready",
            [G("RepositoryIndex", pb.RepositoryIndexRequest(ready=True))],
        ),
        Case(
            "grpc/repository/index-repo-name",
            [G("RepositoryIndex", pb.RepositoryIndexRequest(repository_name="r"))],
        ),
        Case(
            "grpc/repository/load-repo-name",
            [
                G(
                    "RepositoryModelLoad",
                    pb.RepositoryModelLoadRequest(model_name="simple", repository_name="r"),
                )
            ],
        ),
        Case(
            "grpc/repository/unload-repo-name",
            [
                G(
                    "RepositoryModelUnload",
                    pb.RepositoryModelUnloadRequest(model_name="simple", repository_name="r"),
                )
            ],
        ),
        Case("grpc/repository/load-unknown", [_load("nope")]),
        Case("grpc/repository/unload-unknown", [_unload("nope")]),
        Case("grpc/repository/load-empty-name", [_load("")]),
        Case("grpc/repository/load-config-not-json", [_load("simple", config="{x")]),
        Case("grpc/repository/load-config-not-string", [_load("simple", config=5)]),
        Case("grpc/repository/load-unknown-param", [_load("simple", foo="bar")]),
        Case("grpc/repository/load-file-without-config", [_load("simple", **{"file:1/x": b"x"})]),
        Case(
            "grpc/repository/override-cycle",
            [
                _load("identity_fp64", config=override),
                G("ModelMetadata", pb.ModelMetadataRequest(name="identity_fp64")),
                _unload("identity_fp64"),
                G("ModelReady", pb.ModelReadyRequest(name="identity_fp64")),
                _load("identity_fp64"),
                G("ModelMetadata", pb.ModelMetadataRequest(name="identity_fp64")),
            ],
        ),
        Case(
            "grpc/repository/unload-dependents",
            [_unload("identity_int16", unload_dependents=True), _load("identity_int16")],
        ),
        Case(
            "grpc/repository/unload-dependents-not-bool",
            [_unload("identity_int16", unload_dependents="yes"), _load("identity_int16")],
        ),
    ]


def _shm_register(name: str, key_of: str, size: int, offset: int = 0) -> G:
    def build(ctx: Context) -> pb.SystemSharedMemoryRegisterRequest:
        return pb.SystemSharedMemoryRegisterRequest(
            name=name, key=ctx.key(key_of), offset=offset, byte_size=size
        )

    return G("SystemSharedMemoryRegister", build)


def _shm_input_request(
    region: str, offset: int, size: int, out_region: str | None = None
) -> pb.ModelInferRequest:
    request = infer_request(
        "simple",
        [
            (
                tensor(
                    "INPUT0",
                    "INT32",
                    [1, 16],
                    shared_memory_region=region,
                    shared_memory_byte_size=size,
                    shared_memory_offset=offset,
                ),
                None,
            ),
            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
        ],
    )
    if out_region is not None:
        o = request.outputs.add(name="OUTPUT0")
        o.parameters["shared_memory_region"].string_param = out_region
        o.parameters["shared_memory_byte_size"].int64_param = 64
        request.outputs.add(name="OUTPUT1")
    return request


def _shared_memory() -> list[Case]:
    data = SIMPLE_IN.tobytes() + ONES.tobytes()
    unregister_all = G("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest())
    status = G("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest())
    return [
        Case("grpc/shm/status-empty", [status]),
        Case(
            "grpc/shm/register-status-unregister",
            [
                Shm("a", 128, data),
                _shm_register("r1", "a", 128),
                status,
                G("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest(name="r1")),
                G(
                    "SystemSharedMemoryUnregister",
                    pb.SystemSharedMemoryUnregisterRequest(name="r1"),
                ),
                G("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest(name="r1")),
            ],
        ),
        Case(
            "grpc/shm/infer-in-out",
            [
                Shm("a", 128, data),
                Shm("b", 64),
                _shm_register("in", "a", 128),
                _shm_register("out", "b", 64),
                infer(_shm_input_request("in", 0, 64, out_region="out")),
                ShmRead("b"),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/duplicate-name",
            [
                Shm("a", 64),
                _shm_register("d", "a", 64),
                _shm_register("d", "a", 64),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/same-key-twice",
            [
                Shm("a", 64),
                _shm_register("k1", "a", 64),
                _shm_register("k2", "a", 64),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/missing-object",
            [
                G(
                    "SystemSharedMemoryRegister",
                    pb.SystemSharedMemoryRegisterRequest(
                        name="x", key="/conformance_no_such_object", byte_size=64
                    ),
                )
            ],
        ),
        Case("grpc/shm/beyond-object", [Shm("a", 64), _shm_register("x", "a", 128)]),
        Case("grpc/shm/zero-size", [Shm("a", 64), _shm_register("x", "a", 0), unregister_all]),
        Case(
            "grpc/shm/unregister-unknown",
            [G("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="n"))],
        ),
        Case(
            "grpc/shm/status-unknown",
            [G("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest(name="n"))],
        ),
        Case(
            "grpc/shm/infer-unknown-region",
            [infer(_shm_input_request("nope", 0, 64))],
        ),
        Case(
            "grpc/shm/infer-offset-outside",
            [
                Shm("a", 128, data),
                _shm_register("in", "a", 128),
                infer(_shm_input_request("in", 200, 64)),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/infer-size-outside",
            [
                Shm("a", 128, data),
                _shm_register("in", "a", 128),
                infer(_shm_input_request("in", 100, 64)),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/infer-no-byte-size",
            [
                Shm("a", 128, data),
                _shm_register("in", "a", 128),
                infer(
                    infer_request(
                        "simple",
                        [
                            (tensor("INPUT0", "INT32", [1, 16], shared_memory_region="in"), None),
                            (tensor("INPUT1", "INT32", [1, 16]), ONES.tobytes()),
                        ],
                    )
                ),
                unregister_all,
            ],
        ),
        Case(
            "grpc/shm/output-too-small",
            [
                Shm("b", 32),
                _shm_register("out", "b", 32),
                infer(_out_request("out", 32)),
                unregister_all,
            ],
        ),
        Case(
            "grpc/cudashm/status",
            [G("CudaSharedMemoryStatus", pb.CudaSharedMemoryStatusRequest())],
        ),
        Case(
            "grpc/cudashm/status-unknown",
            [G("CudaSharedMemoryStatus", pb.CudaSharedMemoryStatusRequest(name="c"))],
        ),
        Case(
            "grpc/cudashm/register",
            [
                G(
                    "CudaSharedMemoryRegister",
                    pb.CudaSharedMemoryRegisterRequest(
                        name="c", raw_handle=bytes(64), device_id=0, byte_size=64
                    ),
                )
            ],
        ),
        Case(
            "grpc/cudashm/register-short-handle",
            [
                G(
                    "CudaSharedMemoryRegister",
                    pb.CudaSharedMemoryRegisterRequest(
                        name="c", raw_handle=b"abc", device_id=0, byte_size=64
                    ),
                )
            ],
        ),
        Case(
            "grpc/cudashm/unregister-unknown",
            [G("CudaSharedMemoryUnregister", pb.CudaSharedMemoryUnregisterRequest(name="c"))],
        ),
    ]


def _out_request(region: str, size: int) -> pb.ModelInferRequest:
    request = simple()
    o = request.outputs.add(name="OUTPUT0")
    o.parameters["shared_memory_region"].string_param = region
    o.parameters["shared_memory_byte_size"].int64_param = size
    return request


def _trace_request(model: str = "", **settings: Any) -> pb.TraceSettingRequest:
    request = pb.TraceSettingRequest(model_name=model)
    for key, values in settings.items():
        entry = request.settings[key]
        if values is not None:
            entry.value.extend(values)
    return request


def _log_request(**settings: Any) -> pb.LogSettingsRequest:
    request = pb.LogSettingsRequest()
    for key, value in settings.items():
        entry = request.settings[key]
        if isinstance(value, bool):
            entry.bool_param = value
        elif isinstance(value, int):
            entry.uint32_param = value
        elif isinstance(value, str):
            entry.string_param = value
    return request


def _trace_and_logging() -> list[Case]:
    return [
        Case("grpc/trace/get", [G("TraceSetting", _trace_request())]),
        Case("grpc/trace/model-get", [G("TraceSetting", _trace_request("simple"))]),
        Case("grpc/trace/model-unknown", [G("TraceSetting", _trace_request("nope"))]),
        Case(
            "grpc/trace/set-rate-and-back",
            [
                G("TraceSetting", _trace_request(trace_rate=["7"])),
                G("TraceSetting", _trace_request(trace_rate=["1000"])),
            ],
        ),
        Case(
            "grpc/trace/model-set-and-clear",
            [
                G("TraceSetting", _trace_request("simple", trace_count=["5"])),
                G("TraceSetting", _trace_request("simple", trace_count=None)),
            ],
        ),
        Case("grpc/trace/unknown-key", [G("TraceSetting", _trace_request(bogus=["1"]))]),
        Case("grpc/trace/bad-level", [G("TraceSetting", _trace_request(trace_level=["LOUD"]))]),
        Case(
            "grpc/trace/level-without-file",
            [G("TraceSetting", _trace_request(trace_level=["TIMESTAMPS"]))],
        ),
        Case(
            "grpc/trace/off-and-other",
            [G("TraceSetting", _trace_request(trace_level=["OFF", "TENSORS"]))],
        ),
        Case("grpc/trace/rate-not-number", [G("TraceSetting", _trace_request(trace_rate=["x"]))]),
        Case(
            "grpc/trace/rate-with-tail-and-back",
            [
                G("TraceSetting", _trace_request(trace_rate=[" 12abc"])),
                G("TraceSetting", _trace_request(trace_rate=["1000"])),
            ],
        ),
        Case(
            "grpc/trace/rate-out-of-range",
            [G("TraceSetting", _trace_request(trace_rate=["9999999999"]))],
        ),
        Case(
            "grpc/trace/count-too-low",
            [G("TraceSetting", _trace_request(trace_count=["-2"]))],
        ),
        Case(
            "grpc/trace/frequency-negative-and-back",
            [
                G("TraceSetting", _trace_request(log_frequency=["-1"])),
                G("TraceSetting", _trace_request(log_frequency=["0"])),
            ],
        ),
        Case(
            "grpc/trace/two-rates",
            [G("TraceSetting", _trace_request(trace_rate=["1", "2"]))],
        ),
        Case("grpc/trace/set-file", [G("TraceSetting", _trace_request(trace_file=["/tmp/t"]))]),
        Case("grpc/log/get", [G("LogSettings", _log_request())]),
        Case(
            "grpc/log/set-and-back",
            [
                G("LogSettings", _log_request(log_verbose_level=1)),
                G("LogSettings", _log_request(log_verbose_level=0)),
            ],
        ),
        Case("grpc/log/info-not-bool", [G("LogSettings", _log_request(log_info="yes"))]),
        Case("grpc/log/bad-format", [G("LogSettings", _log_request(log_format="xml"))]),
        Case("grpc/log/unknown-key", [G("LogSettings", _log_request(bogus=True))]),
        Case("grpc/log/set-file", [G("LogSettings", _log_request(log_file="/tmp/x"))]),
        Case("grpc/log/level-as-string", [G("LogSettings", _log_request(log_verbose_level="1"))]),
    ]


def cases() -> list[Case]:
    """Every gRPC case."""
    return [
        *_health_and_metadata(),
        *_infer(),
        *_parameters(),
        *_sequences(),
        *_streams(),
        *_statistics(),
        *_repository(),
        *_shared_memory(),
        *_trace_and_logging(),
    ]
