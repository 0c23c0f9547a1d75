"""The HTTP/REST corpus: every endpoint of protocol.md section 3, with its error paths.

Each case is a list of steps (:mod:`tests.conformance.wire`) run against the "main" pair:
both servers started with ``--model-control-mode=explicit --load-model=*`` on the bundled
models plus ``tests/conformance/models``. Cases that change server state put it back in their
last steps (unload what they loaded, unregister what they registered), so that the order of
cases does not matter.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.wire import H, Pause, Shm, ShmRead

JSON = (("Content-Type", "application/json"),)
SIMPLE_IN = list(range(16))
ONES = [1] * 16
IDENTITY_MODELS = {
    "BOOL": "identity_bool",
    "UINT8": "identity_uint8",
    "UINT16": "identity_uint16",
    "UINT32": "identity_uint32",
    "UINT64": "identity_uint64",
    "INT8": "identity_int8",
    "INT16": "identity_int16",
    "INT32": "identity_int32",
    "INT64": "identity_int64",
    "FP16": "identity_fp16",
    "FP32": "identity_fp32",
    "FP64": "identity_fp64",
    "BF16": "identity_bf16",
    "BYTES": "identity_bytes",
}
ALL_MODELS = (
    "add_sub_gpu",
    "bls_simple",
    "optional_inputs",
    *IDENTITY_MODELS.values(),
    "repeat_int32",
    "simple",
    "simple_dyna_sequence",
    "simple_identity",
    "simple_int8",
    "simple_sequence",
    "simple_string",
    "simple_string_dyna_sequence",
    "slow",
    "square_int32",
    "vllm_model",
)


def tensor(name: str, datatype: str, shape: list[int], data: Any = None, **params: Any) -> dict:
    t: dict[str, Any] = {"name": name, "datatype": datatype, "shape": shape}
    if data is not None:
        t["data"] = data
    if params:
        t["parameters"] = params
    return t


def simple_body(**extra: Any) -> dict:
    body: dict[str, Any] = {
        "inputs": [
            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
            tensor("INPUT1", "INT32", [1, 16], ONES),
        ]
    }
    body.update(extra)
    return body


def binary_input(name: str, datatype: str, shape: list[int], size: int) -> dict:
    return tensor(name, datatype, shape, binary_data_size=size)


def raw_int32(values: list[int]) -> bytes:
    return np.array(values, dtype=np.int32).tobytes()


def bytes_tensor(items: list[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


def infer(model: str, body: Any, *, version: str = "", **kw: Any) -> H:
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    return H("POST", path, body, **kw)


def get(path: str, **kw: Any) -> H:
    return H("GET", path, **kw)


def post(path: str, body: Any = None, **kw: Any) -> H:
    return H("POST", path, body, **kw)


def _health_and_metadata() -> list[Case]:
    cases = [
        Case("http/health/live", [get("/v2/health/live")]),
        Case("http/health/ready", [get("/v2/health/ready")]),
        Case("http/health/live-post", [post("/v2/health/live")]),
        Case("http/health/no-kind", [get("/v2/health")]),
        Case("http/health/trailing-slash", [get("/v2/health/live/")]),
        Case("http/health/query-string", [get("/v2/health/ready?x=1")]),
        # The version is each server's own (Triton 2.51.0; this package's).
        Case("http/server-metadata", [get("/v2", volatile=("version",))]),
        Case("http/server-metadata/trailing-slash", [get("/v2/")]),
        Case("http/server-metadata/post", [post("/v2")]),
        Case("http/server-metadata/put", [H("PUT", "/v2")]),
        Case("http/unknown-route", [get("/v3")]),
        Case("http/unknown-route/models", [get("/v2/models")]),
        Case("http/unknown-route/deep", [get("/v2/models/simple/versions/1/infer/extra")]),
        Case("http/model-ready", [get("/v2/models/simple/ready")]),
        Case("http/model-ready/version", [get("/v2/models/simple/versions/1/ready")]),
        Case("http/model-ready/unknown-version", [get("/v2/models/simple/versions/7/ready")]),
        Case("http/model-ready/unknown-model", [get("/v2/models/nope/ready")]),
        Case("http/model-ready/post", [post("/v2/models/simple/ready")]),
        Case("http/model-metadata/unknown", [get("/v2/models/nope")]),
        Case("http/model-metadata/unknown-version", [get("/v2/models/simple/versions/9")]),
        Case("http/model-metadata/bad-version", [get("/v2/models/simple/versions/x")]),
        Case("http/model-metadata/empty-version", [get("/v2/models/simple/versions/")]),
        Case("http/model-metadata/percent-encoded", [get("/v2/models/simpl%65")]),
        Case("http/model-metadata/post", [post("/v2/models/simple")]),
        Case("http/model-config/unknown", [get("/v2/models/nope/config")]),
        Case("http/model-config/unknown-version", [get("/v2/models/simple/versions/3/config")]),
        Case("http/model-config/post", [post("/v2/models/simple/config")]),
    ]
    for model in ALL_MODELS:
        cases.append(Case(f"http/model-metadata/{model}", [get(f"/v2/models/{model}")]))
        cases.append(Case(f"http/model-config/{model}", [get(f"/v2/models/{model}/config")]))
    cases.append(Case("http/model-metadata/version-1", [get("/v2/models/simple/versions/1")]))
    cases.append(Case("http/model-config/version-1", [get("/v2/models/simple/versions/1/config")]))
    return cases


def _infer_json() -> list[Case]:
    cases = [
        Case("http/infer/json", [infer("simple", simple_body())]),
        Case("http/infer/json-version", [infer("simple", simple_body(), version="1")]),
        Case("http/infer/json-unknown-version", [infer("simple", simple_body(), version="2")]),
        Case("http/infer/unknown-model", [infer("nope", simple_body())]),
        Case("http/infer/get", [get("/v2/models/simple/infer")]),
        Case("http/infer/with-id", [infer("simple", simple_body(id="req-7"))]),
        Case("http/infer/id-not-string", [infer("simple", simple_body(id=7))]),
        Case(
            "http/infer/one-output",
            [infer("simple", simple_body(outputs=[{"name": "OUTPUT1"}]))],
        ),
        Case(
            "http/infer/outputs-empty-list",
            [infer("simple", simple_body(outputs=[]))],
        ),
        Case(
            "http/infer/duplicate-output",
            [infer("simple", simple_body(outputs=[{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]))],
        ),
        Case(
            "http/infer/unknown-output",
            [infer("simple", simple_body(outputs=[{"name": "NOPE"}]))],
        ),
        Case(
            "http/infer/output-no-name",
            [infer("simple", simple_body(outputs=[{"parameters": {}}]))],
        ),
        Case(
            "http/infer/outputs-not-list",
            [infer("simple", simple_body(outputs={"name": "OUTPUT0"}))],
        ),
        Case("http/infer/no-inputs", [infer("simple", {"id": "x"})]),
        Case("http/infer/inputs-empty", [infer("simple", {"inputs": []})]),
        Case("http/infer/inputs-not-list", [infer("simple", {"inputs": {}})]),
        Case(
            "http/infer/missing-input",
            [infer("simple", {"inputs": [tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN)]})],
        ),
        Case(
            "http/infer/unknown-input",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
                            tensor("BOGUS", "INT32", [1, 16], SIMPLE_IN),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/extra-input",
            [
                infer(
                    "simple",
                    simple_body(
                        inputs=[
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                            tensor("BOGUS", "INT32", [1, 16], SIMPLE_IN),
                        ]
                    ),
                )
            ],
        ),
        Case(
            "http/infer/duplicate-input",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/wrong-datatype",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "FP32", [1, 16], [0.5] * 16),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/invalid-datatype",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT33", [1, 16], SIMPLE_IN),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/wrong-shape-second",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN),
                            tensor("INPUT1", "INT32", [1, 8], ONES[:8]),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/wrong-shape-both",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 8], SIMPLE_IN[:8]),
                            tensor("INPUT1", "INT32", [1, 8], ONES[:8]),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/no-batch-dim",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [16], SIMPLE_IN),
                            tensor("INPUT1", "INT32", [16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/batch-too-big",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [9, 16], SIMPLE_IN * 9),
                            tensor("INPUT1", "INT32", [9, 16], ONES * 9),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/batch-mismatch",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [2, 16], SIMPLE_IN * 2),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/batch-2",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [2, 16], SIMPLE_IN * 2),
                            tensor("INPUT1", "INT32", [2, 16], ONES * 2),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/batch-zero",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [0, 16], []),
                            tensor("INPUT1", "INT32", [0, 16], []),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/data-short",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN[:15]),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/data-long",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], [*SIMPLE_IN, 1]),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        # Data nested 100 and 150 arrays deep: Triton 2.51 walks any depth (2.73 refuses a
        # value 100 deep: the compatibility profile's json_depth_limit).
        *(
            Case(
                f"http/infer/data-nested-{levels}-deep",
                [
                    infer(
                        "identity_int32",
                        {"inputs": [tensor("INPUT0", "INT32", [1, 2], _nested(levels))]},
                    )
                ],
            )
            for levels in (100, 150)
        ),
        Case(
            "http/infer/data-nested",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], [SIMPLE_IN]),
                            tensor("INPUT1", "INT32", [1, 16], [ONES]),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/data-wrong-type",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], ["a"] * 16),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/data-float-for-int",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], [0.5] * 16),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/data-out-of-range",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], [2**40] * 16),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/shape-negative",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [-1, 16], SIMPLE_IN),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/shape-not-list",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", 16, SIMPLE_IN),  # type: ignore[arg-type]
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/input-no-name",
            [
                infer(
                    "simple",
                    {"inputs": [{"datatype": "INT32", "shape": [1, 16], "data": SIMPLE_IN}]},
                )
            ],
        ),
        Case(
            "http/infer/input-no-datatype",
            [
                infer(
                    "simple",
                    {"inputs": [{"name": "INPUT0", "shape": [1, 16], "data": SIMPLE_IN}]},
                )
            ],
        ),
        Case(
            "http/infer/input-no-shape",
            [
                infer(
                    "simple",
                    {"inputs": [{"name": "INPUT0", "datatype": "INT32", "data": SIMPLE_IN}]},
                )
            ],
        ),
        Case(
            "http/infer/input-no-data",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16]),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        Case("http/infer/bad-json", [infer("simple", "{not json")]),
        Case("http/infer/empty-body", [infer("simple", b"")]),
        Case("http/infer/json-array", [infer("simple", [1, 2])]),
        Case("http/infer/json-null", [infer("simple", "null")]),
        Case(
            "http/infer/trailing-bytes",
            [infer("simple", json.dumps(simple_body()) + "garbage")],
        ),
        Case(
            "http/infer/trailing-whitespace",
            [infer("simple", json.dumps(simple_body()) + "  \n")],
        ),
        Case(
            "http/infer/invalid-utf8",
            [infer("simple", b'{"id":"\xff\xfe","inputs":[]}')],
        ),
        Case(
            "http/infer/decoupled",
            [
                infer(
                    "repeat_int32",
                    {
                        "inputs": [
                            tensor("IN", "INT32", [1], [1]),
                            tensor("DELAY", "UINT32", [1], [0]),
                            tensor("WAIT", "UINT32", [1], [0]),
                        ]
                    },
                )
            ],
        ),
        *[
            Case(
                f"http/infer/optional-model-{'-'.join(names).lower()}",
                [
                    infer(
                        "optional_inputs",
                        {"inputs": [tensor(n, "FP32", [1], [1.0]) for n in names]},
                    )
                ],
            )
            for names in (
                ("INPUT0", "INPUT1", "INPUT2", "INPUT3"),
                ("INPUT0", "INPUT1", "INPUT2"),
                ("INPUT0", "INPUT1", "INPUT3"),
                ("INPUT3", "INPUT2", "INPUT1"),
                ("INPUT0",),
                (),
                ("INPUT0", "INPUT1", "INPUT2", "INPUT3", "INPUT4"),
                ("INPUT0", "INPUT1", "BOGUS"),
            )
        ],
        Case(
            "http/infer/optional-input-missing",
            [infer("slow", {"inputs": [tensor("INPUT0", "INT32", [2], [1, 2])]})],
        ),
        Case(
            "http/infer/optional-input-given",
            [
                infer(
                    "slow",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [2], [1, 2]),
                            tensor("DELAY_MS", "UINT32", [1], [0]),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/model-error",
            [
                infer(
                    "simple_string",
                    {
                        "inputs": [
                            tensor("INPUT0", "BYTES", [1, 16], ["x"] * 16),
                            tensor("INPUT1", "BYTES", [1, 16], ["1"] * 16),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/strings-json",
            [
                infer(
                    "simple_string",
                    {
                        "inputs": [
                            tensor("INPUT0", "BYTES", [1, 16], [str(i) for i in range(16)]),
                            tensor("INPUT1", "BYTES", [1, 16], ["1"] * 16),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/strings-wrong-count",
            [
                infer(
                    "simple_string",
                    {
                        "inputs": [
                            tensor("INPUT0", "BYTES", [1, 16], ["1"] * 15),
                            tensor("INPUT1", "BYTES", [1, 16], ["1"] * 16),
                        ]
                    },
                )
            ],
        ),
        Case(
            "http/infer/strings-not-strings",
            [
                infer(
                    "simple_string",
                    {
                        "inputs": [
                            tensor("INPUT0", "BYTES", [1, 16], list(range(16))),
                            tensor("INPUT1", "BYTES", [1, 16], ["1"] * 16),
                        ]
                    },
                )
            ],
        ),
    ]
    # Every datatype as JSON, in and out.
    values: dict[str, list[Any]] = {
        "BOOL": [True, False, True],
        "UINT8": [0, 7, 255],
        "UINT16": [0, 7, 65535],
        "UINT32": [0, 7, 4294967295],
        "UINT64": [0, 7, 18446744073709551615],
        "INT8": [-128, 0, 127],
        "INT16": [-32768, 0, 32767],
        "INT32": [-2147483648, 0, 2147483647],
        "INT64": [-9223372036854775808, 0, 9223372036854775807],
        "FP16": [0.5, -1.0, 2.0],
        "FP32": [0.1, -1.5, 3.4028234663852886e38],
        "FP64": [0.1, -1.5, 1e300],
        "BF16": [0.5, -1.0, 2.0],
        "BYTES": ["a", "", "\u00e9t\u00e9"],
    }
    for datatype, model in IDENTITY_MODELS.items():
        body = {"inputs": [tensor("INPUT0", datatype, [1, 3], values[datatype])]}
        cases.append(Case(f"http/infer/json-{datatype.lower()}", [infer(model, body)]))
        empty = {"inputs": [tensor("INPUT0", datatype, [1, 0], [])]}
        cases.append(Case(f"http/infer/empty-{datatype.lower()}", [infer(model, empty)]))
        rank1 = {"inputs": [tensor("INPUT0", datatype, [3], values[datatype])]}
        cases.append(Case(f"http/infer/rank1-{datatype.lower()}", [infer(model, rank1)]))
    cases.append(
        Case(
            "http/infer/json-fp32-specials",
            [
                infer(
                    "identity_fp32",
                    {"inputs": [tensor("INPUT0", "FP32", [1, 2], [1e-45, -0.0])]},
                )
            ],
        )
    )
    cases.append(
        Case(
            "http/infer/json-bool-as-int",
            [infer("identity_bool", {"inputs": [tensor("INPUT0", "BOOL", [1, 2], [1, 0])]})],
        )
    )
    cases.append(
        Case(
            "http/infer/json-uint8-negative",
            [infer("identity_uint8", {"inputs": [tensor("INPUT0", "UINT8", [1, 1], [-1])]})],
        )
    )
    return cases


def _infer_binary() -> list[Case]:
    a = raw_int32(SIMPLE_IN)
    b = raw_int32(ONES)
    both = {
        "inputs": [
            binary_input("INPUT0", "INT32", [1, 16], 64),
            binary_input("INPUT1", "INT32", [1, 16], 64),
        ]
    }
    cases = [
        Case("http/binary/inputs", [infer("simple", both, binary=a + b)]),
        Case(
            "http/binary/outputs-request-param",
            [infer("simple", simple_body(parameters={"binary_data_output": True}))],
        ),
        Case(
            "http/binary/outputs-per-output",
            [
                infer(
                    "simple",
                    simple_body(
                        outputs=[
                            {"name": "OUTPUT0", "parameters": {"binary_data": True}},
                            {"name": "OUTPUT1", "parameters": {"binary_data": False}},
                        ]
                    ),
                )
            ],
        ),
        Case(
            "http/binary/output-order",
            [
                infer(
                    "simple",
                    simple_body(
                        outputs=[
                            {"name": "OUTPUT1", "parameters": {"binary_data": True}},
                            {"name": "OUTPUT0", "parameters": {"binary_data": True}},
                        ]
                    ),
                )
            ],
        ),
        Case(
            "http/binary/param-not-bool",
            [infer("simple", simple_body(parameters={"binary_data_output": "yes"}))],
        ),
        Case(
            "http/binary/output-param-not-bool",
            [
                infer(
                    "simple",
                    simple_body(outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": 1}}]),
                )
            ],
        ),
        Case(
            "http/binary/size-short",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            binary_input("INPUT0", "INT32", [1, 16], 60),
                            binary_input("INPUT1", "INT32", [1, 16], 64),
                        ]
                    },
                    binary=a[:60] + b,
                )
            ],
        ),
        Case(
            "http/binary/tail-short",
            [infer("simple", both, binary=a + b[:32])],
        ),
        Case(
            "http/binary/tail-long",
            [infer("simple", both, binary=a + b + b"xxxx")],
        ),
        Case(
            "http/binary/header-length-too-big",
            [
                infer(
                    "simple",
                    both,
                    binary=a + b,
                    headers=(("Inference-Header-Content-Length", "100000"),),
                )
            ],
        ),
        Case(
            "http/binary/header-length-not-number",
            [
                infer(
                    "simple",
                    simple_body(),
                    headers=(("Inference-Header-Content-Length", "abc"),),
                )
            ],
        ),
        Case(
            "http/binary/header-length-negative",
            [
                infer(
                    "simple",
                    simple_body(),
                    headers=(("Inference-Header-Content-Length", "-1"),),
                )
            ],
        ),
        Case(
            "http/binary/data-and-binary",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN, binary_data_size=64),
                            binary_input("INPUT1", "INT32", [1, 16], 64),
                        ]
                    },
                    binary=a + b,
                )
            ],
        ),
        Case(
            "http/binary/size-not-int",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            binary_input("INPUT0", "INT32", [1, 16], "64"),  # type: ignore[arg-type]
                            binary_input("INPUT1", "INT32", [1, 16], 64),
                        ]
                    },
                    binary=a + b,
                )
            ],
        ),
        Case(
            "http/binary/bytes",
            [
                infer(
                    "identity_bytes",
                    {"inputs": [binary_input("INPUT0", "BYTES", [1, 3], 19)]},
                    binary=bytes_tensor([b"abc", b"", b"\x00\xffxx"]),
                )
            ],
        ),
        Case(
            "http/binary/bytes-out",
            [
                infer(
                    "identity_bytes",
                    {
                        "inputs": [tensor("INPUT0", "BYTES", [1, 2], ["a", "bc"])],
                        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
                    },
                )
            ],
        ),
        Case(
            "http/binary/bytes-truncated",
            [
                infer(
                    "identity_bytes",
                    {"inputs": [binary_input("INPUT0", "BYTES", [1, 2], 9)]},
                    binary=struct.pack("<I", 3) + b"abc" + b"\x05\x00",
                )
            ],
        ),
        Case(
            "http/binary/bytes-element-too-long",
            [
                infer(
                    "identity_bytes",
                    {"inputs": [binary_input("INPUT0", "BYTES", [1, 1], 6)]},
                    binary=struct.pack("<I", 5) + b"ab",
                )
            ],
        ),
        Case(
            "http/binary/bytes-too-few",
            [
                infer(
                    "identity_bytes",
                    {"inputs": [binary_input("INPUT0", "BYTES", [1, 3], 7)]},
                    binary=struct.pack("<I", 3) + b"abc",
                )
            ],
        ),
        Case(
            "http/binary/empty-output-binary",
            [
                infer(
                    "identity_fp32",
                    {
                        "inputs": [tensor("INPUT0", "FP32", [1, 0], [])],
                        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
                    },
                )
            ],
        ),
        Case(
            "http/binary/raw-body",
            [
                infer(
                    "identity_int32",
                    None,
                    binary=raw_int32([1, 2, 3]),
                    headers=(("Inference-Header-Content-Length", "0"),),
                )
            ],
        ),
        Case(
            "http/binary/raw-body-two-inputs",
            [
                infer(
                    "simple",
                    None,
                    binary=a + b,
                    headers=(("Inference-Header-Content-Length", "0"),),
                )
            ],
        ),
    ]
    for datatype, model in IDENTITY_MODELS.items():
        if datatype == "BYTES":
            continue
        np_type = {"BF16": np.uint16, "BOOL": np.bool_}.get(datatype)
        if np_type is None:
            np_type = np.dtype(datatype.lower().replace("fp", "float"))
        raw = np.arange(4).astype(np_type).tobytes()
        body = {
            "inputs": [binary_input("INPUT0", datatype, [2, 2], len(raw))],
            "parameters": {"binary_data_output": True},
        }
        cases.append(Case(f"http/binary/{datatype.lower()}", [infer(model, body, binary=raw)]))
        json_out = {"inputs": [binary_input("INPUT0", datatype, [2, 2], len(raw))]}
        cases.append(
            Case(
                f"http/binary/{datatype.lower()}-json-out",
                [infer(model, json_out, binary=raw)],
            )
        )
    return cases


def _parameters() -> list[Case]:
    cases = []
    for name, value in [
        ("sequence_id", 5),
        ("sequence_start", True),
        ("priority", 1),
        ("timeout", 1000),
        ("custom_string", "x"),
        ("custom_int", 3),
        ("custom_bool", False),
        ("custom_float", 0.5),
        ("custom_list", [1]),
        ("custom_object", {"a": 1}),
        ("custom_null", None),
        ("triton_x", 1),
        ("binary_data_size", 4),
        ("headers", {"a": "b"}),
        ("sequence_id", "abc"),
        ("sequence_id", -1),
        ("sequence_start", 1),
        ("priority", -1),
        ("priority", "high"),
        ("timeout", "x"),
    ]:
        cases.append(
            Case(
                f"http/params/{name}-{json.dumps(value)}",
                [infer("simple", simple_body(parameters={name: value}))],
            )
        )
    cases.append(Case("http/params/not-object", [infer("simple", simple_body(parameters=[1]))]))
    cases.append(
        Case(
            "http/params/input-param-unknown",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], SIMPLE_IN, foo="bar"),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        )
    )
    cases.append(
        Case(
            "http/classification",
            [
                infer(
                    "simple",
                    simple_body(outputs=[{"name": "OUTPUT0", "parameters": {"classification": 2}}]),
                )
            ],
        )
    )
    cases.append(
        Case(
            "http/classification-binary",
            [
                infer(
                    "simple",
                    simple_body(
                        outputs=[
                            {
                                "name": "OUTPUT0",
                                "parameters": {"classification": 3, "binary_data": True},
                            }
                        ]
                    ),
                )
            ],
        )
    )
    cases.append(
        Case(
            "http/classification-not-int",
            [
                infer(
                    "simple",
                    simple_body(
                        outputs=[{"name": "OUTPUT0", "parameters": {"classification": "2"}}]
                    ),
                )
            ],
        )
    )
    cases.append(
        Case(
            "http/classification-zero",
            [
                infer(
                    "simple",
                    simple_body(outputs=[{"name": "OUTPUT0", "parameters": {"classification": 0}}]),
                )
            ],
        )
    )
    return cases


def _sequences() -> list[Case]:
    def seq(model: str, sid: Any, value: int, **flags: Any) -> H:
        params = {"sequence_id": sid, **flags}
        body = {"inputs": [tensor("INPUT", "INT32", [1, 1], [value])], "parameters": params}
        return infer(model, body)

    return [
        Case(
            "http/sequence/direct",
            [
                seq("simple_sequence", 31, 0, sequence_start=True),
                seq("simple_sequence", 31, 11),
                seq("simple_sequence", 31, 7, sequence_end=True),
            ],
        ),
        Case(
            "http/sequence/dyna-uint64",
            [
                seq("simple_dyna_sequence", 1000, 0, sequence_start=True),
                seq("simple_dyna_sequence", 1000, 11),
                seq("simple_dyna_sequence", 1000, 1, sequence_end=True),
            ],
        ),
        Case(
            "http/sequence/string-id",
            [
                seq("simple_string_dyna_sequence", "1002", 20, sequence_start=True),
                seq("simple_string_dyna_sequence", "1002", -11),
                seq("simple_string_dyna_sequence", "1002", -1, sequence_end=True),
            ],
        ),
        Case("http/sequence/no-start", [seq("simple_sequence", 32, 5)]),
        Case("http/sequence/id-zero", [seq("simple_sequence", 0, 5, sequence_start=True)]),
        Case("http/sequence/id-empty-string", [seq("simple_sequence", "", 5)]),
        Case(
            "http/sequence/no-id",
            [
                infer(
                    "simple_sequence",
                    {"inputs": [tensor("INPUT", "INT32", [1, 1], [5])]},
                )
            ],
        ),
        Case(
            "http/sequence/batch-2",
            [
                infer(
                    "simple_sequence",
                    {
                        "inputs": [tensor("INPUT", "INT32", [2, 1], [5, 6])],
                        "parameters": {"sequence_id": 33, "sequence_start": True},
                    },
                )
            ],
        ),
        Case(
            "http/sequence/end-only",
            [seq("simple_sequence", 34, 5, sequence_start=True, sequence_end=True)],
        ),
        Case(
            "http/sequence/id-on-plain-model",
            [infer("simple", simple_body(parameters={"sequence_id": 9}))],
        ),
    ]


def _compression() -> list[Case]:
    import gzip
    import zlib

    body = json.dumps(simple_body()).encode()
    return [
        Case(
            "http/compression/gzip-request",
            [
                infer(
                    "simple",
                    gzip.compress(body),
                    headers=(("Content-Encoding", "gzip"),),
                )
            ],
        ),
        Case(
            "http/compression/deflate-request",
            [
                infer(
                    "simple",
                    zlib.compress(body),
                    headers=(("Content-Encoding", "deflate"),),
                )
            ],
        ),
        # A body that inflates past 64 MiB: Triton 2.51 has no --http-max-input-size and reads
        # it (2.73 refuses it by default: the compatibility profile's http_input_limits).
        Case(
            "http/compression/inflates-past-64mib",
            [
                infer(
                    "simple",
                    gzip.compress(body + b" " * (1 << 26), compresslevel=1),
                    headers=(("Content-Encoding", "gzip"),),
                )
            ],
        ),
        Case(
            "http/compression/unknown-encoding",
            [infer("simple", body, headers=(("Content-Encoding", "br"),))],
        ),
        Case(
            "http/compression/corrupt-gzip",
            [infer("simple", b"\x1f\x8bnotgzip", headers=(("Content-Encoding", "gzip"),))],
        ),
        Case(
            "http/compression/accept-gzip",
            [infer("simple", body, headers=(("Accept-Encoding", "gzip"),))],
        ),
        Case(
            "http/compression/accept-deflate",
            [infer("simple", body, headers=(("Accept-Encoding", "deflate"),))],
        ),
        Case(
            "http/compression/accept-both",
            [infer("simple", body, headers=(("Accept-Encoding", "gzip, deflate"),))],
        ),
        Case(
            "http/compression/accept-br",
            [infer("simple", body, headers=(("Accept-Encoding", "br"),))],
        ),
        Case(
            "http/compression/accept-gzip-binary",
            [
                infer(
                    "simple",
                    simple_body(parameters={"binary_data_output": True}),
                    headers=(("Accept-Encoding", "gzip"),),
                )
            ],
        ),
    ]


def _chunked(body: bytes, pieces: int = 2) -> bytes:
    """``body`` in the chunked transfer coding, cut into ``pieces`` chunks."""
    step = -(-len(body) // pieces)
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def _framing() -> list[Case]:
    # Triton (libevhtp) reads a request with both Content-Length and Transfer-Encoding: chunked
    # by its chunked framing (RFC 9112 section 6.3), in either order of the two headers.
    body = json.dumps(simple_body()).encode()
    length = ("Content-Length", str(len(body)))
    chunked = ("Transfer-Encoding", "chunked")
    return [
        Case("http/framing/chunked", [infer("simple", _chunked(body), headers=(chunked,))]),
        Case(
            "http/framing/content-length-and-chunked",
            [infer("simple", _chunked(body), headers=(length, chunked))],
        ),
        Case(
            "http/framing/chunked-and-content-length",
            [infer("simple", _chunked(body, 5), headers=(chunked, length))],
        ),
        # 2.51 takes the JSON as the first Content-Length bytes of the de-chunked body.
        Case(
            "http/framing/content-length-short-of-the-chunks",
            [infer("simple", _chunked(body), headers=(("Content-Length", "5"), chunked))],
        ),
    ]


_FAIL_MODES_CONFIG = {
    "backend": "python",
    "input": [{"name": "MODE", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
}


def _load_config(model: str, config: dict[str, Any]) -> H:
    return post(
        f"/v2/repository/models/{model}/load", {"parameters": {"config": json.dumps(config)}}
    )


def _statistics() -> list[Case]:
    # identity_uint16 is used by no other case, so its counts are this case's own.
    body = {"inputs": [tensor("INPUT0", "UINT16", [1, 2], [1, 2])]}
    return [
        Case(
            "http/stats/after-inference",
            [
                post("/v2/repository/models/identity_uint16/load"),
                infer("identity_uint16", body),
                infer("identity_uint16", body),
                infer("identity_uint16", {"inputs": [tensor("INPUT0", "UINT16", [2], [1, 2])]}),
                # Triton records an execution after its answer is out.
                Pause(0.5),
                get("/v2/models/identity_uint16/stats"),
                get("/v2/models/identity_uint16/versions/1/stats"),
            ],
        ),
        Case("http/stats/unknown-model", [get("/v2/models/nope/stats")]),
        Case("http/stats/unknown-version", [get("/v2/models/simple/versions/4/stats")]),
        Case("http/stats/post", [post("/v2/models/simple/stats")]),
        Case("http/stats/all-post", [post("/v2/models/stats")]),
        Case(
            "http/stats/decoupled",
            [
                post("/v2/repository/models/square_int32/load"),
                H(
                    "POST",
                    "/v2/models/square_int32/generate_stream",
                    {"IN": 2},
                ),
                # The model's error response: a successful request in Triton's statistics.
                post("/v2/models/square_int32/generate", {"IN": -1}),
                # Triton counts a decoupled request once execute returns, which may be after
                # the client has its last response.
                Pause(0.5),
                get("/v2/models/square_int32/stats"),
            ],
        ),
        # fail_modes (a conformance model) is used by no other case: MODE 0 answers, 1 answers
        # with an error (a success for Triton), 2 makes execute raise (a failure).
        Case(
            "http/stats/model-errors",
            [
                *(
                    infer("fail_modes", {"inputs": [tensor("MODE", "INT32", [1], [mode])]})
                    for mode in (0, 1, 2, 1)
                ),
                Pause(0.5),
                get("/v2/models/fail_modes/stats"),
            ],
        ),
        Case(
            "http/stats/reload-changed",
            [
                infer("fail_modes", {"inputs": [tensor("MODE", "INT32", [1], [0])]}),
                # An override config that changes nothing: the model keeps serving as it is.
                _load_config("fail_modes", _FAIL_MODES_CONFIG),
                get("/v2/models/fail_modes/stats"),
                # One that changes the model makes a new one: its statistics start from zero.
                _load_config(
                    "fail_modes",
                    {**_FAIL_MODES_CONFIG, "parameters": {"case": {"string_value": "reload"}}},
                ),
                get("/v2/models/fail_modes/stats"),
                infer("fail_modes", {"inputs": [tensor("MODE", "INT32", [1], [0])]}),
                # Triton answers before it records the execution: read once both are counted
                # (a loaded run once read Triton's inference_count 1 beside execution_count 0).
                Pause(0.5),
                get("/v2/models/fail_modes/stats"),
                # Back to the repository's files: unload, then load.
                post("/v2/repository/models/fail_modes/unload"),
                post("/v2/repository/models/fail_modes/load"),
                get("/v2/models/fail_modes/stats"),
            ],
        ),
    ]


def _python_backend() -> list[Case]:
    """Models using pb_utils as Triton's Python backend allows (``test_pb_utils_differential``
    compares pb_utils call by call)."""

    def by_name(model: str) -> H:
        body = {
            "inputs": [
                tensor("MODEL", "BYTES", [1], [model]),
                tensor("INPUT0", "INT32", [1, 2], [1, 2]),
            ]
        }
        return infer("bls_by_name", body)

    return [
        # The model passes the name, a BYTES element (bytes), to InferenceRequest(model_name=).
        Case("http/python-backend/bls-model-name-bytes", [by_name("identity_int32")]),
        Case("http/python-backend/bls-unknown-model", [by_name("nope")]),
        Case("http/python-backend/bls-invalid-request", [by_name("simple")]),
    ]


def _metrics_port() -> list[Case]:
    """The metrics port's answers to other paths and methods (the metrics themselves are
    compared family by family by ``test_metrics_differential.py``)."""
    cases = [
        Case(f"http/metrics-port/get{path.replace('/', '-')}", [get(path, port="metrics")])
        for path in ("/", "/foo", "/metricsx", "/metrics/x", "//metrics", "/v2/health/ready")
    ]
    cases += [
        Case(f"http/metrics-port/{method.lower()}", [H(method, "/metrics", port="metrics")])
        for method in ("POST", "PUT", "DELETE", "OPTIONS")
    ]
    cases.append(Case("http/metrics-port/post-other", [post("/foo", "x", port="metrics")]))
    return cases


_ECHO_MODEL = b"""import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]
            )
            for r in requests
        ]
"""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _repository() -> list[Case]:
    config = json.dumps({"backend": "python", "max_batch_size": 8})
    return [
        Case("http/repository/index-get", [get("/v2/repository/index")]),
        Case("http/repository/index-bad-json", [post("/v2/repository/index", "{")]),
        Case("http/repository/index-ready-not-bool", [post("/v2/repository/index", {"ready": 1})]),
        Case("http/repository/index-repo-name", [post("/v2/repository/myrepo/index")]),
        Case(
            "http/repository/load-unload-cycle",
            [
                post("/v2/repository/models/identity_int16/unload"),
                get("/v2/models/identity_int16/ready"),
                get("/v2/models/identity_int16"),
                infer(
                    "identity_int16",
                    {"inputs": [tensor("INPUT0", "INT16", [1, 1], [1])]},
                ),
                post("/v2/repository/models/identity_int16/load"),
                get("/v2/models/identity_int16/ready"),
            ],
        ),
        Case("http/repository/load-unknown", [post("/v2/repository/models/nope/load")]),
        Case("http/repository/unload-unknown", [post("/v2/repository/models/nope/unload")]),
        Case("http/repository/load-get", [get("/v2/repository/models/simple/load")]),
        Case(
            "http/repository/load-repo-name",
            [post("/v2/repository/myrepo/models/simple/load")],
        ),
        Case(
            "http/repository/unload-repo-name",
            [post("/v2/repository/myrepo/models/simple/unload")],
        ),
        Case("http/repository/load-bad-json", [post("/v2/repository/models/simple/load", "{")]),
        Case(
            "http/repository/load-config-not-json",
            [post("/v2/repository/models/simple/load", {"parameters": {"config": "{not json"}})],
        ),
        Case(
            "http/repository/load-config-not-string",
            [post("/v2/repository/models/simple/load", {"parameters": {"config": {"a": 1}}})],
        ),
        Case(
            "http/repository/load-unknown-param",
            [post("/v2/repository/models/simple/load", {"parameters": {"foo": "bar"}})],
        ),
        Case(
            "http/repository/load-parameters-not-object",
            [post("/v2/repository/models/simple/load", {"parameters": 1})],
        ),
        Case(
            "http/repository/load-file-without-config",
            [
                post(
                    "/v2/repository/models/simple/load",
                    {"parameters": {"file:1/model.py": base64.b64encode(b"x").decode()}},
                )
            ],
        ),
        Case(
            "http/repository/load-file-bad-base64",
            [
                post(
                    "/v2/repository/models/simple/load",
                    {"parameters": {"config": config, "file:1/model.py": "***"}},
                )
            ],
        ),
        Case(
            "http/repository/load-config-override",
            [
                post(
                    "/v2/repository/models/identity_int8/load",
                    {
                        "parameters": {
                            "config": json.dumps(
                                {
                                    "backend": "python",
                                    "max_batch_size": 0,
                                    "input": [
                                        {"name": "INPUT0", "data_type": "TYPE_INT8", "dims": [-1]}
                                    ],
                                    "output": [
                                        {"name": "OUTPUT0", "data_type": "TYPE_INT8", "dims": [-1]}
                                    ],
                                }
                            )
                        }
                    },
                ),
                get("/v2/models/identity_int8"),
                infer("identity_int8", {"inputs": [tensor("INPUT0", "INT8", [3], [1, 2, 3])]}),
                post("/v2/repository/models/identity_int8/load"),
                get("/v2/models/identity_int8"),
                post("/v2/repository/models/identity_int8/unload"),
                post("/v2/repository/models/identity_int8/load"),
                get("/v2/models/identity_int8"),
            ],
        ),
        *[
            Case(
                f"http/repository/load-file-{what}",
                [
                    post(
                        "/v2/repository/models/simple/load",
                        {"parameters": {"config": config, "file:1/model.py": _b64(source)}},
                    ),
                    get("/v2/models/simple/ready"),
                    get("/v2/models/simple/config"),
                ],
            )
            for what, source in (
                ("import-error", b"import no_such_module_here\n"),
                ("no-class", b"x = 1\n"),
                (
                    "init-error",
                    b"class TritonPythonModel:\n"
                    b"    def initialize(self, args):\n"
                    b"        raise ValueError('boom at init')\n",
                ),
            )
        ],
        Case(
            "http/repository/load-new-model-from-files",
            [
                post(
                    "/v2/repository/models/made_of_files/load",
                    {
                        "parameters": {
                            "config": json.dumps(
                                {
                                    "backend": "python",
                                    "max_batch_size": 0,
                                    "input": [
                                        {"name": "IN", "data_type": "TYPE_INT32", "dims": [-1]}
                                    ],
                                    "output": [
                                        {"name": "OUT", "data_type": "TYPE_INT32", "dims": [-1]}
                                    ],
                                }
                            ),
                            "file:1/model.py": _b64(_ECHO_MODEL),
                        }
                    },
                ),
                get("/v2/models/made_of_files"),
                infer("made_of_files", {"inputs": [tensor("IN", "INT32", [2], [4, 5])]}),
                post("/v2/repository/index"),
                post("/v2/repository/models/made_of_files/unload"),
                get("/v2/models/made_of_files/ready"),
            ],
        ),
        Case(
            "http/repository/load-config-unknown-field",
            [
                post(
                    "/v2/repository/models/simple/load",
                    {"parameters": {"config": json.dumps({"backend": "python", "bogus": 1})}},
                )
            ],
        ),
        Case(
            "http/repository/load-param-not-string",
            [post("/v2/repository/models/simple/load", {"parameters": {"config": 5}})],
        ),
        Case(
            "http/repository/load-body-array",
            [post("/v2/repository/models/identity_int32/load", [1])],
        ),
        Case(
            "http/repository/load-body-whitespace",
            [post("/v2/repository/models/identity_int32/load", " ")],
        ),
        Case("http/repository/index-body-array", [post("/v2/repository/index", [1])]),
        Case(
            "http/repository/index-ready-true",
            [post("/v2/repository/index", {"ready": True})],
        ),
        Case(
            "http/repository/unload-dependents-not-bool",
            [
                post(
                    "/v2/repository/models/identity_int64/unload",
                    {"parameters": {"unload_dependents": "yes"}},
                ),
                post("/v2/repository/models/identity_int64/load"),
            ],
        ),
    ]


def _shared_memory() -> list[Case]:
    data = raw_int32(SIMPLE_IN) + raw_int32(ONES)
    reg = "/v2/systemsharedmemory/region"

    def register(name: str, key: str, size: int, offset: int | None = None) -> H:
        body: dict[str, Any] = {"key": f"{{key:{key}}}", "byte_size": size}
        if offset is not None:
            body["offset"] = offset
        return post(f"{reg}/{name}/register", body)

    shm_in = {
        "inputs": [
            tensor(
                "INPUT0", "INT32", [1, 16], shared_memory_region="in", shared_memory_byte_size=64
            ),
            tensor(
                "INPUT1",
                "INT32",
                [1, 16],
                shared_memory_region="in",
                shared_memory_byte_size=64,
                shared_memory_offset=64,
            ),
        ]
    }
    shm_out = simple_body(
        outputs=[
            {
                "name": "OUTPUT0",
                "parameters": {"shared_memory_region": "out", "shared_memory_byte_size": 64},
            },
            {"name": "OUTPUT1"},
        ]
    )
    unregister_all = post("/v2/systemsharedmemory/unregister")
    return [
        Case("http/shm/status-empty", [get("/v2/systemsharedmemory/status")]),
        Case(
            "http/shm/register-status-unregister",
            [
                Shm("a", 128, data),
                register("r1", "a", 128),
                get("/v2/systemsharedmemory/status"),
                get(f"{reg}/r1/status"),
                post(f"{reg}/r1/unregister"),
                get(f"{reg}/r1/status"),
            ],
        ),
        Case(
            "http/shm/infer-in-out",
            [
                Shm("a", 128, data),
                Shm("b", 64),
                register("in", "a", 128),
                register("out", "b", 64),
                infer("simple", shm_in),
                infer("simple", shm_out),
                ShmRead("b"),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/output-region-too-small",
            [
                Shm("b", 32),
                register("out", "b", 32),
                infer(
                    "simple",
                    simple_body(
                        outputs=[
                            {
                                "name": "OUTPUT0",
                                "parameters": {
                                    "shared_memory_region": "out",
                                    "shared_memory_byte_size": 32,
                                },
                            }
                        ]
                    ),
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/mixed-output-order",
            [
                Shm("b", 64),
                register("out", "b", 64),
                infer(
                    "simple",
                    simple_body(
                        outputs=[
                            {"name": "OUTPUT1"},
                            {
                                "name": "OUTPUT0",
                                "parameters": {
                                    "shared_memory_region": "out",
                                    "shared_memory_byte_size": 64,
                                },
                            },
                        ]
                    ),
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/duplicate-name",
            [
                Shm("a", 64),
                register("dup", "a", 64),
                register("dup", "a", 64),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/same-key-twice",
            [
                Shm("a", 64),
                register("k1", "a", 64),
                # Triton 2.51 looks the second region up by the descriptor number it closed
                # after mapping the first. Each step comes on a new connection: if Triton has
                # not yet closed the previous one when it accepts this, the connection takes
                # that number and the answer is "invalid args" (a socket's size is 0) instead
                # of "Invalid shared memory region" (no such descriptor).  The pause lets it
                # close the connection first, which is what happens on an idle machine.
                Pause(0.3),
                register("k2", "a", 64),
                get("/v2/systemsharedmemory/status"),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/no-key",
            [post(f"{reg}/x/register", {"byte_size": 64})],
        ),
        Case(
            "http/shm/no-byte-size",
            [Shm("a", 64), post(f"{reg}/x/register", {"key": "{key:a}"})],
        ),
        Case(
            "http/shm/missing-object",
            [post(f"{reg}/x/register", {"key": "/conformance_no_such_object", "byte_size": 64})],
        ),
        Case(
            "http/shm/beyond-object",
            [Shm("a", 64), register("x", "a", 128)],
        ),
        Case(
            "http/shm/offset-beyond-object",
            [Shm("a", 64), register("x", "a", 16, offset=60)],
        ),
        Case(
            "http/shm/zero-size",
            [Shm("a", 64), register("x", "a", 0), unregister_all],
        ),
        # The edges of Triton's own QA (L0_shared_memory test_register_out_of_bound, L0_grpc
        # python_grpc_aio_test: a missing object with byte_size 0).
        Case(
            "http/shm/missing-object-zero-size",
            [post(f"{reg}/x/register", {"key": "/conformance_no_such_object", "byte_size": 0})],
        ),
        Case("http/shm/one-past-the-end", [Shm("a", 64), register("x", "a", 65)]),
        Case("http/shm/offset-one-full-size", [Shm("a", 64), register("x", "a", 64, offset=1)]),
        Case("http/shm/one-byte-at-the-end", [Shm("a", 64), register("x", "a", 1, offset=64)]),
        Case(
            "http/shm/zero-size-past-the-end",
            [Shm("a", 64), register("x", "a", 0, offset=65), unregister_all],
        ),
        Case("http/shm/key-slash", [post(f"{reg}/x/register", {"key": "/", "byte_size": 64})]),
        Case("http/shm/key-slashes", [post(f"{reg}/x/register", {"key": "///", "byte_size": 64})]),
        Case(
            "http/shm/reserved-prefix-after-slashes",
            [
                post(
                    f"{reg}/x/register",
                    {"key": "///triton_python_backend_shm_region_k", "byte_size": 64},
                )
            ],
        ),
        Case(
            "http/shm/bad-json",
            [post(f"{reg}/x/register", "{")],
        ),
        Case(
            "http/shm/byte-size-not-int",
            [Shm("a", 64), post(f"{reg}/x/register", {"key": "{key:a}", "byte_size": "64"})],
        ),
        Case(
            "http/shm/key-not-string",
            [post(f"{reg}/x/register", {"key": 5, "byte_size": 64})],
        ),
        Case(
            "http/shm/register-no-region",
            [post("/v2/systemsharedmemory/register", {"key": "/x", "byte_size": 1})],
        ),
        Case("http/shm/unregister-unknown", [post(f"{reg}/nope/unregister")]),
        Case("http/shm/status-unknown", [get(f"{reg}/nope/status")]),
        Case("http/shm/status-post", [post("/v2/systemsharedmemory/status")]),
        Case("http/shm/register-get", [get(f"{reg}/x/register")]),
        Case(
            "http/shm/infer-unknown-region",
            [
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor(
                                "INPUT0",
                                "INT32",
                                [1, 16],
                                shared_memory_region="nope",
                                shared_memory_byte_size=64,
                            ),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                )
            ],
        ),
        # An empty tensor in shared memory: Triton 2.51 checks its last byte with unsigned
        # arithmetic, which wraps at offset 0 (2.73 compares the end with the region's size:
        # the compatibility profile's shm_bounds_2_73).
        *(
            Case(
                f"http/shm/infer-empty-at-{offset}",
                [
                    Shm("a", 64),
                    register("in", "a", 64),
                    infer(
                        "identity_int32",
                        {
                            "inputs": [
                                tensor(
                                    "INPUT0",
                                    "INT32",
                                    [1, 0],
                                    shared_memory_region="in",
                                    shared_memory_byte_size=0,
                                    shared_memory_offset=offset,
                                )
                            ]
                        },
                    ),
                    unregister_all,
                ],
            )
            for offset in (0, 8, 64)
        ),
        Case(
            "http/shm/infer-offset-outside",
            [
                Shm("a", 128, data),
                register("in", "a", 128),
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor(
                                "INPUT0",
                                "INT32",
                                [1, 16],
                                shared_memory_region="in",
                                shared_memory_byte_size=64,
                                shared_memory_offset=200,
                            ),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/infer-size-outside",
            [
                Shm("a", 128, data),
                register("in", "a", 128),
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor(
                                "INPUT0",
                                "INT32",
                                [1, 16],
                                shared_memory_region="in",
                                shared_memory_byte_size=64,
                                shared_memory_offset=100,
                            ),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/infer-size-mismatch",
            [
                Shm("a", 128, data),
                register("in", "a", 128),
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor(
                                "INPUT0",
                                "INT32",
                                [1, 16],
                                shared_memory_region="in",
                                shared_memory_byte_size=128,
                            ),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/infer-no-byte-size",
            [
                Shm("a", 128, data),
                register("in", "a", 128),
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor("INPUT0", "INT32", [1, 16], shared_memory_region="in"),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                ),
                unregister_all,
            ],
        ),
        Case(
            "http/shm/infer-data-and-region",
            [
                Shm("a", 128, data),
                register("in", "a", 128),
                infer(
                    "simple",
                    {
                        "inputs": [
                            tensor(
                                "INPUT0",
                                "INT32",
                                [1, 16],
                                SIMPLE_IN,
                                shared_memory_region="in",
                                shared_memory_byte_size=64,
                            ),
                            tensor("INPUT1", "INT32", [1, 16], ONES),
                        ]
                    },
                ),
                unregister_all,
            ],
        ),
        Case("http/cudashm/status", [get("/v2/cudasharedmemory/status")]),
        Case("http/cudashm/status-unknown", [get("/v2/cudasharedmemory/region/x/status")]),
        Case(
            "http/cudashm/register",
            [
                post(
                    "/v2/cudasharedmemory/region/c/register",
                    {
                        "raw_handle": {"b64": base64.b64encode(bytes(64)).decode()},
                        "device_id": 0,
                        "byte_size": 64,
                    },
                )
            ],
        ),
        Case(
            "http/cudashm/register-bad-handle",
            [
                post(
                    "/v2/cudasharedmemory/region/c/register",
                    {"raw_handle": {"b64": "abc"}, "device_id": 0, "byte_size": 64},
                )
            ],
        ),
        Case(
            "http/cudashm/register-no-handle",
            [post("/v2/cudasharedmemory/region/c/register", {"device_id": 0, "byte_size": 64})],
        ),
        Case("http/cudashm/unregister-unknown", [post("/v2/cudasharedmemory/region/c/unregister")]),
        Case("http/cudashm/unregister-all", [post("/v2/cudasharedmemory/unregister")]),
        Case(
            "http/shm/system-status-of-cuda-name",
            [get("/v2/cudasharedmemory/region/nope/status")],
        ),
    ]


def _trace_and_logging() -> list[Case]:
    return [
        Case("http/trace/get", [get("/v2/trace/setting")]),
        Case("http/trace/model-get", [get("/v2/models/simple/trace/setting")]),
        Case("http/trace/model-unknown", [get("/v2/models/nope/trace/setting")]),
        Case("http/trace/model-version", [get("/v2/models/simple/versions/1/trace/setting")]),
        Case(
            "http/trace/set-rate-and-back",
            [
                post("/v2/trace/setting", {"trace_rate": "7"}),
                post("/v2/trace/setting", {"trace_rate": "1000"}),
            ],
        ),
        Case(
            "http/trace/model-set-and-clear",
            [
                post("/v2/models/simple/trace/setting", {"trace_count": "5"}),
                get("/v2/models/simple/trace/setting"),
                post("/v2/models/simple/trace/setting", {"trace_count": None}),
                get("/v2/models/simple/trace/setting"),
            ],
        ),
        Case("http/trace/unknown-key", [post("/v2/trace/setting", {"bogus": "1"})]),
        Case("http/trace/bad-level", [post("/v2/trace/setting", {"trace_level": ["LOUD"]})]),
        Case(
            "http/trace/level-off-and-other",
            [post("/v2/trace/setting", {"trace_level": ["OFF", "TIMESTAMPS"]})],
        ),
        Case(
            "http/trace/level-without-file",
            [post("/v2/trace/setting", {"trace_level": ["TIMESTAMPS"]})],
        ),
        Case("http/trace/rate-not-string", [post("/v2/trace/setting", {"trace_rate": 5})]),
        Case("http/trace/rate-not-number", [post("/v2/trace/setting", {"trace_rate": "x"})]),
        Case(
            "http/trace/rate-with-tail-and-back",
            [
                post("/v2/trace/setting", {"trace_rate": " 12abc"}),
                post("/v2/trace/setting", {"trace_rate": "1000"}),
            ],
        ),
        Case(
            "http/trace/rate-out-of-range",
            [post("/v2/trace/setting", {"trace_rate": "9999999999"})],
        ),
        Case("http/trace/count-too-low", [post("/v2/trace/setting", {"trace_count": "-2"})]),
        Case(
            "http/trace/frequency-negative-and-back",
            [
                post("/v2/trace/setting", {"log_frequency": "-1"}),
                post("/v2/trace/setting", {"log_frequency": "0"}),
            ],
        ),
        Case("http/trace/empty-body", [post("/v2/trace/setting", b"")]),
        Case("http/trace/level-not-list", [post("/v2/trace/setting", {"trace_level": "OFF"})]),
        Case("http/trace/set-file", [post("/v2/trace/setting", {"trace_file": "/tmp/x"})]),
        Case("http/trace/bad-json", [post("/v2/trace/setting", "{")]),
        Case("http/trace/put", [H("PUT", "/v2/trace/setting")]),
        Case("http/logging/get", [get("/v2/logging")]),
        Case(
            "http/logging/set-and-back",
            [
                post("/v2/logging", {"log_verbose_level": 1}),
                post("/v2/logging", {"log_verbose_level": 0}),
            ],
        ),
        Case("http/logging/info-not-bool", [post("/v2/logging", {"log_info": 1})]),
        Case("http/logging/bad-format", [post("/v2/logging", {"log_format": "xml"})]),
        Case(
            "http/logging/format-iso-and-back",
            [
                post("/v2/logging", {"log_format": "ISO8601"}),
                post("/v2/logging", {"log_format": "default"}),
            ],
        ),
        Case("http/logging/set-file", [post("/v2/logging", {"log_file": "/tmp/x"})]),
        Case("http/logging/file-null", [post("/v2/logging", {"log_file": None})]),
        Case("http/logging/unknown-key", [post("/v2/logging", {"bogus": 1})]),
        Case("http/logging/verbose-negative", [post("/v2/logging", {"log_verbose_level": -1})]),
        Case("http/logging/bad-json", [post("/v2/logging", "{")]),
        Case("http/logging/put", [H("PUT", "/v2/logging")]),
    ]


def _nested(levels: int) -> list[Any]:
    """``[1, 2]`` inside ``levels - 1`` more arrays: its elements sit at depth ``levels``."""
    value: list[Any] = [1, 2]
    for _ in range(levels - 1):
        value = [value]
    return value


def _generate() -> list[Case]:
    gen = "/v2/models/{}/generate"
    stream = "/v2/models/{}/generate_stream"
    return [
        Case(
            "http/generate/identity",
            [post(gen.format("identity_int32"), {"INPUT0": [[1, 2, 3]]})],
        ),
        Case(
            "http/generate/batching-1d",
            [post(gen.format("simple"), {"INPUT0": SIMPLE_IN, "INPUT1": ONES})],
        ),
        Case(
            "http/generate/batching-2d",
            [post(gen.format("simple"), {"INPUT0": [SIMPLE_IN], "INPUT1": [ONES]})],
        ),
        Case(
            "http/generate/with-id-and-params",
            [
                post(
                    gen.format("simple"),
                    {"INPUT0": SIMPLE_IN, "INPUT1": ONES, "id": "g1", "parameters": {"x": 1}},
                )
            ],
        ),
        Case("http/generate/string", [post(gen.format("simple_identity"), {"INPUT0": "hello"})]),
        # Keys named like reserved parameters reach the model as custom parameters in 2.51
        # (2.73 refuses them: the compatibility profile's refuse_reserved_parameters).
        *(
            Case(
                f"http/generate/reserved-key-{key}",
                [post(gen.format("echo_params"), {"INPUT0": [1], key: value})],
            )
            for key, value in (
                ("triton_x", 1),
                ("triton_enable_empty_final_response", True),
                ("headers", "h"),
                ("binary_data_output", True),
                ("sequence_id", 5),
                ("priority", 1),
                ("timeout", 10),
            )
        ),
        # A repeated input name (Triton's L0_http generate_endpoint_test test_duplicate_inputs:
        # JSON text, a dict cannot hold it), on both endpoints.
        *(
            Case(
                f"http/{kind}/duplicate-input-{n}",
                [post(path.format("simple_identity"), text)],
            )
            for kind, path in (("generate", gen), ("generate-stream", stream))
            for n, text in enumerate(
                (
                    '{"INPUT0": "hello", "INPUT0": "again"}',
                    '{"INPUT0": "hello", "x": 1, "x": 2}',
                )
            )
        ),
        Case("http/generate/unknown-model", [post(gen.format("nope"), {"INPUT0": 1})]),
        Case("http/generate/missing-input", [post(gen.format("simple"), {"INPUT0": SIMPLE_IN})]),
        Case("http/generate/bad-json", [post(gen.format("simple"), "{")]),
        Case("http/generate/not-object", [post(gen.format("simple"), [1])]),
        Case("http/generate/get", [get(gen.format("simple"))]),
        Case("http/generate/decoupled-one", [post(gen.format("square_int32"), {"IN": 1})]),
        Case("http/generate/decoupled-many", [post(gen.format("square_int32"), {"IN": 3})]),
        Case("http/generate/decoupled-none", [post(gen.format("square_int32"), {"IN": 0})]),
        Case("http/generate/model-error", [post(gen.format("simple_string"), {})]),
        Case(
            "http/generate_stream/decoupled",
            [post(stream.format("square_int32"), {"IN": 3})],
        ),
        Case(
            "http/generate_stream/repeat",
            [post(stream.format("repeat_int32"), {"IN": [4, 5], "DELAY": [0, 0], "WAIT": 0})],
        ),
        Case(
            "http/generate_stream/plain-model",
            [post(stream.format("simple"), {"INPUT0": SIMPLE_IN, "INPUT1": ONES})],
        ),
        Case(
            "http/generate_stream/model-error",
            [
                post(
                    stream.format("simple_string"),
                    {"INPUT0": ["x"] * 16, "INPUT1": ["1"] * 16},
                )
            ],
        ),
        Case("http/generate_stream/unknown-model", [post(stream.format("nope"), {"IN": 1})]),
        Case("http/generate_stream/bad-json", [post(stream.format("square_int32"), "{")]),
        *_generate_llm(),
    ]


def _generate_llm() -> list[Case]:
    """The generate extension as LLM clients use it: ``vllm_model`` (the bundled model shaped
    like Triton's vLLM backend), parameter mapping, errors before and during the stream,
    unknown members and wrong types."""
    gen = "/v2/models/vllm_model/generate"
    stream = "/v2/models/vllm_model/generate_stream"
    sampling = json.dumps({"max_tokens": 4, "temperature": 0})
    cases = [
        Case("http/generate/vllm/defaults", [post(gen, {"text_input": "Hello"})]),
        Case(
            "http/generate/vllm/sampling-input",
            [
                post(
                    gen,
                    {
                        "text_input": "Hi",
                        "sampling_parameters": sampling,
                        "exclude_input_in_output": True,
                    },
                )
            ],
        ),
        # A parameters object: its members become request parameters (the vLLM backend reads
        # them when the sampling_parameters input is absent).
        Case(
            "http/generate/vllm/parameters-object",
            [post(gen, {"text_input": "Hi", "parameters": {"max_tokens": 3, "top_p": 0.5}})],
        ),
        # An input given inside the parameters object is still an input.
        Case(
            "http/generate/vllm/input-in-parameters",
            [post(gen, {"parameters": {"text_input": "Hi", "max_tokens": 2}})],
        ),
        Case(
            "http/generate/vllm/top-level-parameter",
            [post(gen, {"text_input": "Hi", "max_tokens": 2, "unknown_member": "x"})],
        ),
        Case("http/generate/vllm/with-id", [post(gen, {"text_input": "Hi", "id": "r-1"})]),
        Case("http/generate/vllm/numeric-id", [post(gen, {"text_input": "Hi", "id": 5})]),
        Case(
            "http/generate/vllm/version",
            [post("/v2/models/vllm_model/versions/1/generate", {"text_input": "Hi"})],
        ),
        Case(
            "http/generate/vllm/unknown-version",
            [post("/v2/models/vllm_model/versions/7/generate", {"text_input": "Hi"})],
        ),
        # stream true on /generate: several responses, which /generate refuses (status 200).
        Case(
            "http/generate/vllm/stream-on-generate",
            [post(gen, {"text_input": "Hi", "stream": True, "max_tokens": 3})],
        ),
        Case(
            "http/generate_stream/vllm/stream",
            [post(stream, {"text_input": "Hello", "stream": True, "max_tokens": 5})],
        ),
        Case(
            "http/generate_stream/vllm/id-and-version",
            [
                post(
                    "/v2/models/vllm_model/versions/1/generate_stream",
                    {"text_input": "Hi", "stream": True, "max_tokens": 2, "id": "s1"},
                )
            ],
        ),
        # stream false on /generate_stream: one event with the whole text.
        Case(
            "http/generate_stream/vllm/not-streaming",
            [post(stream, {"text_input": "Hello", "max_tokens": 3})],
        ),
        # The model refuses before its first response: the stream opens with 400 and the
        # error is its one event.
        Case(
            "http/generate_stream/vllm/prepend-refused",
            [post(stream, {"text_input": "Hi", "stream": True, "exclude_input_in_output": False})],
        ),
        Case(
            "http/generate_stream/vllm/max-tokens-zero",
            [post(stream, {"text_input": "Hi", "stream": True, "max_tokens": 0})],
        ),
        # Errors before inference: a JSON error with its status, not an event stream.
        Case("http/generate_stream/vllm/missing-input", [post(stream, {"stream": True})]),
        Case("http/generate_stream/vllm/empty-object", [post(stream, {})]),
        Case("http/generate_stream/vllm/not-object", [post(stream, "[1]")]),
        Case("http/generate_stream/vllm/get", [get(stream)]),
        Case(
            "http/generate_stream/vllm/gzip",
            [
                post(
                    stream,
                    b"x",
                    headers=(("Content-Type", "application/json"), ("Content-Encoding", "gzip")),
                )
            ],
        ),
        # Errors after events: the status is 200 by then; the error is an event.
        Case(
            "http/generate_stream/fail-after",
            [post("/v2/models/fail_after/generate_stream", {"IN": 2})],
        ),
        Case(
            "http/generate_stream/fail-first",
            [post("/v2/models/fail_after/generate_stream", {"IN": 0})],
        ),
        Case("http/generate/fail-after", [post("/v2/models/fail_after/generate", {"IN": 1})]),
        Case("http/generate/fail-first", [post("/v2/models/fail_after/generate", {"IN": 0})]),
    ]
    # Wrong types and shapes for the model's inputs and parameters.
    wrong = {
        "number-for-bytes": {"text_input": 5},
        "string-for-bool": {"text_input": "x", "stream": "yes"},
        "number-for-bool": {"text_input": "x", "stream": 1},
        "two-prompts": {"text_input": ["a", "b"]},
        "empty-list": {"text_input": []},
        "nested-list": {"text_input": [["a"]]},
        "null-input": {"text_input": None},
        "object-input": {"text_input": {"a": 1}},
        "array-parameter": {"text_input": "x", "parameters": {"max_tokens": [1]}},
        "object-parameter": {"text_input": "x", "parameters": {"max_tokens": {"a": 1}}},
        "null-parameter": {"text_input": "x", "parameters": {"max_tokens": None}},
        "float-parameter": {"text_input": "x", "parameters": {"max_tokens": 2.5}},
        "parameters-string": {"text_input": "x", "parameters": "max_tokens=2"},
        "parameters-array": {"text_input": "x", "parameters": [1]},
        "bad-sampling-json": {"text_input": "x", "sampling_parameters": "{"},
        "top-level-array-parameter": {"text_input": "x", "stop": ["a", "b"]},
    }
    for name, body in wrong.items():
        cases.append(Case(f"http/generate/vllm/wrong/{name}", [post(gen, body)]))
        cases.append(Case(f"http/generate_stream/vllm/wrong/{name}", [post(stream, body)]))
    return cases


def cases() -> list[Case]:
    """Every HTTP case."""
    return [
        *_health_and_metadata(),
        *_infer_json(),
        *_infer_binary(),
        *_parameters(),
        *_sequences(),
        *_compression(),
        *_framing(),
        *_statistics(),
        *_metrics_port(),
        *_python_backend(),
        *_repository(),
        *_shared_memory(),
        *_trace_and_logging(),
        *_generate(),
    ]
