"""Cases where Triton 2.51 and 2.73 answer differently: mock_server's 2.51 profile (which the
differential suite runs) must answer as the real Triton 2.51; the 2.73 behaviour is tested in
``tests/test_compat.py``.  Raw requests, both protocols, on the main pair.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.cases import Case
from tests.conformance.cases_grpc import _shm_register, infer_request
from tests.conformance.cases_grpc import infer as grpc_infer
from tests.conformance.cases_grpc import tensor as grpc_tensor
from tests.conformance.cases_http import ONES, SIMPLE_IN, infer, post, raw_int32
from tests.conformance.cases_http import tensor as json_tensor
from tests.conformance.wire import G, Shm
from tritonclient.grpc import service_pb2 as pb

_RAW = (("Inference-Header-Content-Length", "0"),)


def _simple_json(datatype: str = "INT32", shape: list[int] | None = None, **extra: Any) -> Any:
    body: dict[str, Any] = {
        "inputs": [
            json_tensor("INPUT0", datatype, shape or [1, 16], SIMPLE_IN),
            json_tensor("INPUT1", "INT32", [1, 16], ONES),
        ]
    }
    body.update(extra)
    return infer("simple", body)


def _simple_binary(datatype: str = "INT32", shape: list[int] | None = None) -> Any:
    body = {
        "inputs": [
            json_tensor("INPUT0", datatype, shape or [1, 16], binary_data_size=64),
            json_tensor("INPUT1", "INT32", [1, 16], binary_data_size=64),
        ]
    }
    return infer("simple", body, binary=raw_int32(SIMPLE_IN) + raw_int32(ONES))


def _simple_grpc(datatype: str = "INT32", shape: list[int] | None = None, **parameters: Any) -> G:
    return grpc_infer(
        infer_request(
            "simple",
            [
                (grpc_tensor("INPUT0", datatype, shape or [1, 16]), raw_int32(SIMPLE_IN)),
                (grpc_tensor("INPUT1", "INT32", [1, 16]), raw_int32(ONES)),
            ],
            parameters=parameters,
        )
    )


def _datatypes() -> list[Case]:
    cases = []
    for datatype in ("FLOAT", "int32", "", "TYPE_INT32", "STRING"):
        label = datatype or "empty"
        cases += [
            Case(f"compat/http/datatype-{label}-json", [_simple_json(datatype)]),
            Case(f"compat/http/datatype-{label}-binary", [_simple_binary(datatype)]),
            Case(f"compat/grpc/datatype-{label}", [_simple_grpc(datatype)]),
        ]
    return cases


def _negative_dims() -> list[Case]:
    cases = []
    for shape in ([1, -16], [-2, 16], [-1, -16], [-16]):
        label = "_".join(map(str, shape))
        cases += [
            Case(f"compat/http/negative-dim-{label}-json", [_simple_json(shape=shape)]),
            Case(f"compat/http/negative-dim-{label}-binary", [_simple_binary(shape=shape)]),
            Case(f"compat/grpc/negative-dim-{label}", [_simple_grpc(shape=shape)]),
        ]
    # JSON shapes are uint64 that Triton keeps as int64: 2**63 is INT64_MIN (2.73 refuses it
    # as an invalid dimension, the compatibility profile's element_count_2_73).  Triton 2.51
    # aborts (SIGABRT) on [1, 2**64 - 16] and [2**64 - 2, 16]: no case here.
    cases.append(Case("compat/http/wrapped-dim-int64-min", [_simple_json(shape=[1, 2**63])]))
    return cases


def _edge_shapes() -> list[Case]:
    """Shapes of no dimension, or with a wildcard (2**64 - 1, read as -1) beside a 0 or not,
    whose element count 2.73's ``GetElementCount`` changed (src/common.cc:109-135): where
    Triton 2.51 stays up, both releases hand the data on unread (JSON of no dimension counts
    0 elements; binary data are never counted) and the core refuses the shape.  Typed JSON
    data with a wildcard are left out: Triton 2.51 sizes them from a count of -1 and aborts
    (``std::length_error``); 2.73 refuses their byte size (tests/test_compat.py)."""
    wild = 2**64 - 1
    cases = []
    for label, shape in (
        ("none", []),
        ("wild-0", [wild, 0]),
        ("0-wild", [0, wild]),
        ("1-wild", [1, wild]),
        ("wild", [wild]),
    ):
        simple = {
            "inputs": [
                json_tensor("INPUT0", "INT32", shape, binary_data_size=64),
                json_tensor("INPUT1", "INT32", [1, 16], binary_data_size=64),
            ]
        }
        cases += [
            Case(
                f"compat/http/edge-shape-{label}-binary",
                [infer("simple", simple, binary=raw_int32(SIMPLE_IN) + raw_int32(ONES))],
            ),
            Case(
                f"compat/http/edge-shape-{label}-bytes-json",
                [infer("identity_bytes", {"inputs": [json_tensor("INPUT0", "BYTES", shape, [])]})],
            ),
            Case(
                f"compat/http/edge-shape-{label}-int8-binary",
                [
                    infer(
                        "identity_int8",
                        {"inputs": [json_tensor("INPUT0", "INT8", shape, binary_data_size=0)]},
                        binary=b"",
                    )
                ],
            ),
        ]
    json_none = {
        "inputs": [
            json_tensor("INPUT0", "INT32", [], SIMPLE_IN),
            json_tensor("INPUT1", "INT32", [1, 16], ONES),
        ]
    }
    cases.append(Case("compat/http/edge-shape-none-json", [infer("simple", json_none)]))
    return cases


def _raw_body() -> list[Case]:
    return [
        Case(
            f"compat/http/raw-body-{label}",
            [infer(model, None, binary=raw_int32(values), headers=_RAW)],
        )
        for label, model, values in (
            ("short", "ens_add_one", [1, 2, 3]),
            ("long", "ens_add_one", [1, 2, 3, 4, 5]),
            ("exact", "ens_add_one", [1, 2, 3, 4]),
        )
    ]


def _timeouts() -> list[Case]:
    return [
        Case("compat/http/timeout-negative", [_simple_json(parameters={"timeout": -1})]),
        Case("compat/grpc/timeout-negative", [_simple_grpc(timeout=-1)]),
        Case("compat/grpc/timeout-negative-big", [_simple_grpc(timeout=-(2**40))]),
    ]


def _shm_empty_name() -> list[Case]:
    unregister_all = G("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest())
    status = G("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest())
    return [
        Case(
            "compat/grpc/shm-register-empty-name",
            [Shm("a", 64), _shm_register("", "a", 64), status, unregister_all, status],
        ),
        Case(
            "compat/grpc/shm-unregister-empty-name",
            [
                Shm("a", 64),
                _shm_register("", "a", 64),
                G("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="")),
                status,
            ],
        ),
    ]


def _http_checks() -> list[Case]:
    # 2.73 refuses these with 400 (the compatibility profile's http_checks_2_73).
    return [
        Case("compat/http/index-ready-not-bool", [post("/v2/repository/index", {"ready": "yes"})]),
        Case(
            "compat/http/header-length-text",
            [infer("simple", {"inputs": []}, headers=(("Inference-Header-Content-Length", "x"),))],
        ),
    ]


def cases() -> list[Case]:
    """The 2.51-versus-2.73 cases."""
    return [
        *_http_checks(),
        *_datatypes(),
        *_negative_dims(),
        *_edge_shapes(),
        *_raw_body(),
        *_timeouts(),
        *_shm_empty_name(),
    ]
