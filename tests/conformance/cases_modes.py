"""Cases for the pairs started with other flags: control modes, restricted APIs, forwarding.

Both protocols; see ``tests/conformance/conftest.py`` for the flags of each pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.cases_grpc import _load, _unload, infer_request, tensor
from tests.conformance.cases_http import get, infer, post
from tests.conformance.cases_http import tensor as json_tensor
from tests.conformance.wire import G, H
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import TRITON_RESERVED_REQUEST_PARAMS

_INDEX = G("RepositoryIndex", pb.RepositoryIndexRequest())


def _control_mode(pair: str) -> list[Case]:
    return [
        Case(f"{pair}/http/index", [post("/v2/repository/index")], pair),
        Case(f"{pair}/http/index-ready", [post("/v2/repository/index", {"ready": True})], pair),
        Case(f"{pair}/http/load", [post("/v2/repository/models/simple/load")], pair),
        Case(f"{pair}/http/unload", [post("/v2/repository/models/simple/unload")], pair),
        Case(f"{pair}/http/load-unknown", [post("/v2/repository/models/nope/load")], pair),
        Case(f"{pair}/http/ready", [get("/v2/health/ready")], pair),
        Case(f"{pair}/grpc/index", [_INDEX], pair),
        Case(f"{pair}/grpc/load", [_load("simple")], pair),
        Case(f"{pair}/grpc/unload", [_unload("simple")], pair),
    ]


def _echo_http(headers: tuple[tuple[str, str], ...] = (), **parameters: Any) -> H:
    body: dict[str, Any] = {"inputs": [json_tensor("INPUT0", "INT32", [1], [1])]}
    if parameters:
        body["parameters"] = parameters
    return infer("echo_params", body, headers=headers)


def _echo_grpc(metadata: tuple[tuple[str, str], ...] = (), **parameters: Any) -> G:
    request = infer_request(
        "echo_params",
        [(tensor("INPUT0", "INT32", [1]), np.int32([1]).tobytes())],
        parameters=parameters,
    )
    return G("ModelInfer", request, metadata=metadata)


def _restricted() -> list[Case]:
    pair = "restricted"
    key = (("admin-key", "secret"),)
    grpc_key = (("triton-grpc-protocol-admin-key", "secret"),)
    wrong = (("admin-key", "wrong"),)
    return [
        Case(f"{pair}/http/index-denied", [post("/v2/repository/index")], pair),
        Case(f"{pair}/http/index-wrong-value", [post("/v2/repository/index", headers=wrong)], pair),
        Case(f"{pair}/http/index-allowed", [post("/v2/repository/index", headers=key)], pair),
        Case(f"{pair}/http/shm-denied", [get("/v2/systemsharedmemory/status")], pair),
        Case(f"{pair}/http/health-open", [get("/v2/health/ready")], pair),
        Case(f"{pair}/http/infer-open", [_echo_http()], pair),
        Case(f"{pair}/grpc/index-denied", [_INDEX], pair),
        Case(
            f"{pair}/grpc/index-allowed",
            [G("RepositoryIndex", pb.RepositoryIndexRequest(), metadata=grpc_key)],
            pair,
        ),
        Case(
            f"{pair}/grpc/index-plain-key",
            [G("RepositoryIndex", pb.RepositoryIndexRequest(), metadata=key)],
            pair,
        ),
        Case(
            f"{pair}/http/forwarded-headers",
            [_echo_http(headers=(("x-fwd-a", "1"), ("X-Fwd-Up", "u"), ("other", "no")))],
            pair,
        ),
        Case(
            f"{pair}/http/forwarded-header-and-parameter",
            [_echo_http(headers=(("x-fwd-a", "header"),), **{"x-fwd-a": "body"})],
            pair,
        ),
        Case(
            f"{pair}/grpc/forwarded-metadata",
            [_echo_grpc(metadata=(("x-fwd-a", "1"), ("other", "no")))],
            pair,
        ),
    ]


def _forwarding() -> list[Case]:
    """Triton matches a forward pattern anywhere in a header's name, case-insensitively unless
    the pattern turns it off with RE2's (?-i); gRPC metadata names are always lower case."""
    http_headers = (("my_header_1", "a"), ("MY_HEADER_2", "b"), ("x-my_header_3", "c"), ("z", "d"))
    metadata = (("my_header_1", "a"), ("x-my_header_3", "c"), ("z", "d"))
    cases = []
    for pair in ("forward", "forward-case"):
        cases += [
            Case(f"{pair}/http/headers", [_echo_http(headers=http_headers)], pair),
            Case(f"{pair}/grpc/metadata", [_echo_grpc(metadata=metadata)], pair),
        ]
    return cases


#: Header names like the reserved parameters (``kReservedParameterKeys`` of 2.73's src/common.h)
#: and the ``triton_`` prefix.
RESERVED_HEADERS = (
    *TRITON_RESERVED_REQUEST_PARAMS,
    "triton_x",
    "triton_enable_empty_final_response",
)


def _forwarding_reserved() -> list[Case]:
    """Triton 2.51 forwards a header named like a reserved parameter as a string parameter
    (2.73 refuses it: the compatibility profile decides)."""
    pair = "forward-reserved"
    cases = []
    for name in RESERVED_HEADERS:
        cases += [
            Case(f"{pair}/http/{name}", [_echo_http(headers=((name, "7"),))], pair),
            Case(f"{pair}/grpc/{name}", [_echo_grpc(metadata=((name, "7"),))], pair),
        ]
    return cases


def _echo_cases() -> list[Case]:
    return [
        Case(
            "http/params/echo-types",
            [_echo_http(s="x", i=-3, big=2**62, b=True, f=0.25, empty="")],
        ),
        Case("http/params/echo-none", [_echo_http()]),
        Case(
            "http/params/echo-reserved",
            [_echo_http(sequence_id=5, sequence_start=True, priority=2, timeout=100)],
        ),
        Case("http/params/echo-binary-data-output", [_echo_http(binary_data_output=False)]),
        Case(
            "grpc/params/echo-types",
            [_echo_grpc(s="x", i=-3, big=2**62, b=True, f=0.25, empty="")],
        ),
        Case(
            "grpc/params/echo-reserved",
            [_echo_grpc(sequence_id=5, sequence_start=True, priority=2, timeout=100)],
        ),
    ]


def _crash() -> list[Case]:
    pair = "crash-classification"
    body = {
        "inputs": [json_tensor("INPUT0", "BYTES", [1, 2], ["a", "b"])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}],
    }
    return [
        Case(
            f"{pair}/http/classification-of-bytes",
            [infer("identity_bytes", body), get("/v2/health/ready")],
            pair,
        )
    ]


def cases() -> list[Case]:
    """The cases of every pair but "main" (and the echo cases, which run on it)."""
    return [
        *_crash(),
        *_control_mode("none"),
        *_control_mode("poll"),
        *_restricted(),
        *_forwarding(),
        *_forwarding_reserved(),
        *_echo_cases(),
    ]
