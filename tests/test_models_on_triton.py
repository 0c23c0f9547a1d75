"""The bundled model repository (mock_server/models) on NVIDIA's real Triton server.

The models are written for Triton's Python backend, so the real server is the reference
for what they do. These tests start Triton 2.51 (from the ``nvidia-pytriton`` wheel, see
tests/peers.py) on the repository and check every model's tensors and behaviour over plain
HTTP with ``urllib``: KServe v2 JSON, the binary tensor extension, and the generate
extension (server-sent events) for the decoupled models. They skip when the server is not
installed.

The module's server runs on a copy of the repository made by
``copy_repository_for_triton``, which drops the TYPE_STRING CORRID control of
``simple_string_dyna_sequence``: Triton 2.51 rejects every request to such a model (a bug
in its sequence batcher), and the model then keys its state by
``request.correlation_id()``. The unmodified configuration is loaded in
``test_model_control_explicit_mode``.
"""

from __future__ import annotations

import contextlib
import json
import struct
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.peers import (
    RunningTritonServer,
    copy_repository_for_triton,
    find_tritonserver,
    run_tritonserver,
)

INSTALL = find_tritonserver()
pytestmark = pytest.mark.triton_peer

REPO = Path(__file__).resolve().parent.parent / "mock_server" / "models"
TIMEOUT = 30.0  # seconds, for every HTTP exchange
# Loopback traffic never goes through an HTTP proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

EXPECTED_MODELS = {
    "simple",
    "simple_int8",
    "simple_string",
    "simple_identity",
    "simple_sequence",
    "simple_dyna_sequence",
    "simple_string_dyna_sequence",
    "repeat_int32",
    "square_int32",
    "bls_simple",
    "add_sub_gpu",
    "slow",
    "simple_ensemble",
}
IDENTITY_DTYPES = {
    "bool": ("BOOL", np.bool_),
    "uint8": ("UINT8", np.uint8),
    "uint16": ("UINT16", np.uint16),
    "uint32": ("UINT32", np.uint32),
    "uint64": ("UINT64", np.uint64),
    "int8": ("INT8", np.int8),
    "int16": ("INT16", np.int16),
    "int32": ("INT32", np.int32),
    "int64": ("INT64", np.int64),
    "fp16": ("FP16", np.float16),
    "fp32": ("FP32", np.float32),
    "fp64": ("FP64", np.float64),
    "bf16": ("BF16", np.float32),  # carried as float32 values exactly representable in BF16
    "bytes": ("BYTES", np.object_),
}
EXPECTED_MODELS |= {f"identity_{name}" for name in IDENTITY_DTYPES}


# --- HTTP helpers (KServe v2 over urllib) -------------------------------------------


class HttpError(Exception):
    """A non-2xx answer; ``status`` and the ``error`` text of its JSON body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _request(
    url: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    method: str | None = None,
) -> tuple[dict[str, str], bytes]:
    req = urllib.request.Request(
        f"http://{url}{path}", data=body, headers=headers or {}, method=method
    )
    try:
        with OPENER.open(req, timeout=TIMEOUT) as resp:
            return dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        with contextlib.suppress(ValueError, KeyError, TypeError):
            text = json.loads(text)["error"]
        raise HttpError(exc.code, text) from None


def get_json(server: RunningTritonServer, path: str) -> Any:
    return json.loads(_request(server.http_url, path)[1])


def post_json(server: RunningTritonServer, path: str, payload: Any) -> Any:
    _, body = _request(
        server.http_url,
        path,
        json.dumps(payload).encode(),
        {"Content-Type": "application/json"},
        "POST",
    )
    return json.loads(body) if body else None


def infer_json(
    server: RunningTritonServer,
    model: str,
    inputs: list[dict[str, Any]],
    parameters: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """POST /infer with JSON tensors; return the outputs by name."""
    payload: dict[str, Any] = {"inputs": inputs}
    if parameters:
        payload["parameters"] = parameters
    answer = post_json(server, f"/v2/models/{model}/infer", payload)
    return {out["name"]: out for out in answer["outputs"]}


def _to_wire(array: np.ndarray, datatype: str) -> bytes:
    if datatype == "BYTES":
        parts = []
        for item in array.reshape(-1):
            raw = item if isinstance(item, bytes) else str(item).encode()
            parts.append(struct.pack("<I", len(raw)) + raw)
        return b"".join(parts)
    if datatype == "BF16":
        bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32) >> 16
        return bits.astype("<u2").tobytes()
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def _from_wire(raw: bytes, datatype: str, shape: list[int], dtype: Any) -> np.ndarray:
    if datatype == "BYTES":
        items, offset = [], 0
        while offset < len(raw):
            (size,) = struct.unpack_from("<I", raw, offset)
            items.append(raw[offset + 4 : offset + 4 + size])
            offset += 4 + size
        return np.array(items, dtype=np.object_).reshape(shape)
    if datatype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)


def infer_binary(
    server: RunningTritonServer,
    model: str,
    inputs: dict[str, tuple[np.ndarray, str]],
    outputs: dict[str, Any],
) -> dict[str, np.ndarray]:
    """POST /infer with the binary tensor extension both ways.

    ``inputs`` maps names to (array, datatype); ``outputs`` maps names to numpy dtypes.
    """
    header: dict[str, Any] = {"inputs": [], "outputs": []}
    blobs = []
    for name, (array, datatype) in inputs.items():
        blob = _to_wire(array, datatype)
        blobs.append(blob)
        header["inputs"].append(
            {
                "name": name,
                "shape": list(array.shape),
                "datatype": datatype,
                "parameters": {"binary_data_size": len(blob)},
            }
        )
    for name in outputs:
        header["outputs"].append({"name": name, "parameters": {"binary_data": True}})
    head = json.dumps(header).encode()
    headers, body = _request(
        server.http_url,
        f"/v2/models/{model}/infer",
        head + b"".join(blobs),
        {
            "Content-Type": "application/octet-stream",
            "Inference-Header-Content-Length": str(len(head)),
        },
        "POST",
    )
    lengths = {k.lower(): v for k, v in headers.items()}
    json_size = int(lengths.get("inference-header-content-length", len(body)))
    answer = json.loads(body[:json_size])
    result, offset = {}, json_size
    for out in answer["outputs"]:
        size = out["parameters"]["binary_data_size"]
        raw = body[offset : offset + size]
        offset += size
        result[out["name"]] = _from_wire(raw, out["datatype"], out["shape"], outputs[out["name"]])
    return result


def generate_stream(server: RunningTritonServer, model: str, payload: Any) -> list[dict[str, Any]]:
    """POST to the generate_stream extension; return the server-sent events' JSON."""
    _, body = _request(
        server.http_url,
        f"/v2/models/{model}/generate_stream",
        json.dumps(payload).encode(),
        {"Content-Type": "application/json"},
        "POST",
    )
    events = []
    for block in body.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:"):
                events.append(json.loads(line[len("data:") :]))
    return events


def tensor(name: str, datatype: str, array: Any) -> dict[str, Any]:
    array = np.asarray(array)
    return {
        "name": name,
        "shape": list(array.shape),
        "datatype": datatype,
        "data": array.reshape(-1).tolist(),
    }


# --- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTritonServer]:
    assert INSTALL is not None
    repo = copy_repository_for_triton(REPO, tmp_path_factory.mktemp("triton") / "models")
    with run_tritonserver(INSTALL, repo, startup_timeout=120) as running:
        yield running


# --- repository -----------------------------------------------------------------------


def test_every_bundled_model_loads(server: RunningTritonServer) -> None:
    index = post_json(server, "/v2/repository/index", {})
    states = {entry["name"]: entry.get("state") for entry in index}
    on_disk = {p.name for p in REPO.iterdir() if (p / "config.pbtxt").is_file()}
    assert on_disk >= EXPECTED_MODELS
    assert set(states) == on_disk
    assert {name for name, state in states.items() if state != "READY"} == set()


def test_configs_as_triton_reads_them(server: RunningTritonServer) -> None:
    simple = get_json(server, "/v2/models/simple/config")
    assert simple["max_batch_size"] == 8
    assert [(t["name"], t["data_type"], t["dims"]) for t in simple["input"]] == [
        ("INPUT0", "TYPE_INT32", [16]),
        ("INPUT1", "TYPE_INT32", [16]),
    ]
    for name in ("repeat_int32", "square_int32"):
        config = get_json(server, f"/v2/models/{name}/config")
        assert config["model_transaction_policy"]["decoupled"] is True
    dyna = get_json(server, "/v2/models/simple_dyna_sequence/config")
    controls = {
        c["name"]: c["control"][0]["kind"] for c in dyna["sequence_batching"]["control_input"]
    }
    assert controls == {
        "START": "CONTROL_SEQUENCE_START",
        "END": "CONTROL_SEQUENCE_END",
        "READY": "CONTROL_SEQUENCE_READY",
        "CORRID": "CONTROL_SEQUENCE_CORRID",
    }
    # KIND_AUTO becomes KIND_CPU on a server without GPUs (KIND_GPU would not load).
    gpu = get_json(server, "/v2/models/add_sub_gpu/config")
    assert [g["kind"] for g in gpu["instance_group"]] == ["KIND_CPU"]
    metadata = get_json(server, "/v2/models/identity_bf16")
    assert metadata["inputs"] == [{"name": "INPUT0", "datatype": "BF16", "shape": [-1, -1]}]


# --- simple, simple_int8, simple_string, simple_identity -----------------------------


def test_simple_add_sub(server: RunningTritonServer) -> None:
    in0 = np.arange(16, dtype=np.int32).reshape(1, 16)
    in1 = np.ones((1, 16), dtype=np.int32)
    out = infer_json(
        server, "simple", [tensor("INPUT0", "INT32", in0), tensor("INPUT1", "INT32", in1)]
    )
    assert out["OUTPUT0"]["shape"] == [1, 16]
    assert out["OUTPUT0"]["data"] == (in0 + in1).reshape(-1).tolist()
    assert out["OUTPUT1"]["data"] == (in0 - in1).reshape(-1).tolist()
    # a full batch of 8, binary both ways
    b0 = np.arange(128, dtype=np.int32).reshape(8, 16)
    b1 = np.full((8, 16), -3, dtype=np.int32)
    got = infer_binary(
        server,
        "simple",
        {"INPUT0": (b0, "INT32"), "INPUT1": (b1, "INT32")},
        {"OUTPUT0": np.int32, "OUTPUT1": np.int32},
    )
    np.testing.assert_array_equal(got["OUTPUT0"], b0 + b1)
    np.testing.assert_array_equal(got["OUTPUT1"], b0 - b1)


def test_simple_rejects_batch_over_max(server: RunningTritonServer) -> None:
    big = np.zeros((9, 16), dtype=np.int32)
    with pytest.raises(HttpError) as info:
        infer_json(
            server, "simple", [tensor("INPUT0", "INT32", big), tensor("INPUT1", "INT32", big)]
        )
    assert info.value.status == 400
    assert "batch-size must be <= 8" in info.value.message


def test_simple_int8_wraps(server: RunningTritonServer) -> None:
    in0 = np.array([list(range(14)) + [127, -128]], dtype=np.int8)
    in1 = np.ones((1, 16), dtype=np.int8)
    out = infer_json(
        server, "simple_int8", [tensor("INPUT0", "INT8", in0), tensor("INPUT1", "INT8", in1)]
    )
    assert out["OUTPUT0"]["datatype"] == "INT8"
    assert out["OUTPUT0"]["data"] == [*range(1, 15), -128, -127]
    assert out["OUTPUT1"]["data"] == [*range(-1, 13), 126, 127]


def test_simple_string(server: RunningTritonServer) -> None:
    in0 = [str(i) for i in range(16)]
    in1 = ["1"] * 16
    out = infer_json(
        server,
        "simple_string",
        [tensor("INPUT0", "BYTES", [in0]), tensor("INPUT1", "BYTES", [in1])],
    )
    assert out["OUTPUT0"]["datatype"] == "BYTES"
    assert out["OUTPUT0"]["data"] == [str(i + 1) for i in range(16)]
    assert out["OUTPUT1"]["data"] == [str(i - 1) for i in range(16)]
    # binary, batch of 2
    arr0 = np.array([[str(i).encode() for i in range(16)]] * 2, dtype=np.object_)
    arr1 = np.array([[b"-5"] * 16] * 2, dtype=np.object_)
    got = infer_binary(
        server,
        "simple_string",
        {"INPUT0": (arr0, "BYTES"), "INPUT1": (arr1, "BYTES")},
        {"OUTPUT0": np.object_, "OUTPUT1": np.object_},
    )
    assert got["OUTPUT0"].shape == (2, 16)
    assert got["OUTPUT0"][1].tolist() == [str(i - 5).encode() for i in range(16)]
    assert got["OUTPUT1"][0].tolist() == [str(i + 5).encode() for i in range(16)]


def test_simple_string_rejects_non_integers(server: RunningTritonServer) -> None:
    bad = [["x"] * 16]
    with pytest.raises(HttpError) as info:
        infer_json(
            server,
            "simple_string",
            [tensor("INPUT0", "BYTES", bad), tensor("INPUT1", "BYTES", bad)],
        )
    assert info.value.status == 400
    assert "decimal integers" in info.value.message


def test_simple_identity(server: RunningTritonServer) -> None:
    with_nul = np.array([[b"he\x00llo"] * 16], dtype=np.object_)
    blobs = np.array([[b"\x00\x01\x02\x03"] * 16], dtype=np.object_)
    for array in (with_nul, blobs):
        got = infer_binary(
            server, "simple_identity", {"INPUT0": (array, "BYTES")}, {"OUTPUT0": np.object_}
        )
        assert got["OUTPUT0"].tolist() == array.tolist()
    out = infer_json(server, "simple_identity", [tensor("INPUT0", "BYTES", [["he\x00llo"] * 3])])
    assert out["OUTPUT0"]["data"] == ["he\x00llo"] * 3


# --- identity_<dtype> -----------------------------------------------------------------


def _sample(name: str, shape: tuple[int, ...]) -> np.ndarray:
    datatype, dtype = IDENTITY_DTYPES[name]
    count = int(np.prod(shape))
    if datatype == "BYTES":
        return np.array([f"v{i}\x00".encode() for i in range(count)], dtype=np.object_).reshape(
            shape
        )
    if datatype == "BOOL":
        flags: np.ndarray = np.arange(count) % 3 == 0
        return flags.reshape(shape)
    if datatype in ("FP16", "FP32", "FP64", "BF16"):
        floats: np.ndarray = (np.arange(count, dtype=np.float64) * -1.5 + 0.25).astype(dtype)
        return floats.reshape(shape)
    info = np.iinfo(dtype)
    values = [info.min, info.max, 0, 1, 7, info.max - 1][:count] + list(range(count))
    return np.array(values[:count], dtype=dtype).reshape(shape)


@pytest.mark.parametrize("name", sorted(IDENTITY_DTYPES))
@pytest.mark.parametrize("shape", [(2, 3), (1, 1), (0, 4)])
def test_identity_binary(server: RunningTritonServer, name: str, shape: tuple[int, int]) -> None:
    datatype, dtype = IDENTITY_DTYPES[name]
    array = _sample(name, shape)
    got = infer_binary(
        server, f"identity_{name}", {"INPUT0": (array, datatype)}, {"OUTPUT0": dtype}
    )["OUTPUT0"]
    assert got.shape == shape
    if datatype == "BYTES":
        assert got.tolist() == array.tolist()
    else:
        np.testing.assert_array_equal(got, array)


@pytest.mark.parametrize("name", sorted(set(IDENTITY_DTYPES) - {"fp16", "bf16"}))
def test_identity_json(server: RunningTritonServer, name: str) -> None:
    datatype, _ = IDENTITY_DTYPES[name]
    array = _sample(name, (2, 3))
    data = [x.decode() for x in array.reshape(-1)] if datatype == "BYTES" else array
    out = infer_json(
        server, f"identity_{name}", [tensor("INPUT0", datatype, np.reshape(data, (2, 3)))]
    )
    assert out["OUTPUT0"]["datatype"] == datatype
    assert out["OUTPUT0"]["shape"] == [2, 3]
    expected = np.asarray(data).reshape(-1).tolist()
    assert out["OUTPUT0"]["data"] == expected


def test_identity_rejects_wrong_rank(server: RunningTritonServer) -> None:
    with pytest.raises(HttpError) as info:
        infer_json(server, "identity_fp32", [tensor("INPUT0", "FP32", [1.0, 2.0])])
    assert info.value.status == 400


@pytest.mark.parametrize("datatype", ["FP16", "BF16"])
def test_identity_json_refuses_half_floats(server: RunningTritonServer, datatype: str) -> None:
    name = f"identity_{datatype.lower()}"
    with pytest.raises(HttpError) as info:
        infer_json(server, name, [tensor("INPUT0", datatype, [[1.5, 2.0]])])
    assert info.value.status == 400
    assert f"receiving {datatype} data via JSON is not supported" in info.value.message


# --- sequences (values asserted by Triton's sequence example clients) -------------------

VALUES = [11, 7, 5, 3, 2, 0, 1]


def run_sequence(
    server: RunningTritonServer, model: str, sequence_id: int | str, values: list[int]
) -> list[int]:
    results = []
    for i, value in enumerate(values):
        out = infer_json(
            server,
            model,
            [tensor("INPUT", "INT32", [[value]])],
            {
                "sequence_id": sequence_id,
                "sequence_start": i == 0,
                "sequence_end": i == len(values) - 1,
            },
        )
        assert out["OUTPUT"]["shape"] == [1, 1]
        results.append(out["OUTPUT"]["data"][0])
    return results


def test_simple_sequence(server: RunningTritonServer) -> None:
    assert run_sequence(server, "simple_sequence", 1000, [0, *VALUES]) == [1, *VALUES]
    negated = [-v for v in VALUES]
    assert run_sequence(server, "simple_sequence", 1001, [100, *negated]) == [101, *negated]
    # a string (UUID) sequence id, as the clients use without -d
    assert run_sequence(server, "simple_sequence", str(uuid.uuid4()), [20, *negated]) == [
        21,
        *negated,
    ]


def test_simple_dyna_sequence(server: RunningTritonServer) -> None:
    got = run_sequence(server, "simple_dyna_sequence", 1000, [0, *VALUES])
    assert got == [1, 11, 7, 5, 3, 2, 0, 1 + 1000]
    got = run_sequence(server, "simple_dyna_sequence", 1001, [100, *(-v for v in VALUES)])
    assert got == [101, -11, -7, -5, -3, -2, 0, -1 + 1001]


def test_simple_string_dyna_sequence(server: RunningTritonServer) -> None:
    got = run_sequence(server, "simple_string_dyna_sequence", "1002", [20, *(-v for v in VALUES)])
    assert got == [20, 9, 2, -3, -6, -8, -8, -9 + 1002]


def test_string_dyna_sequence_keeps_state_per_sequence(server: RunningTritonServer) -> None:
    model = "simple_string_dyna_sequence"
    seqs = {"2001": [1, 2, 3], "2002": [10, 20, 30]}
    got: dict[str, list[int]] = {key: [] for key in seqs}
    for step in range(3):  # interleave the two sequences
        for key, values in seqs.items():
            out = infer_json(
                server,
                model,
                [tensor("INPUT", "INT32", [[values[step]]])],
                {"sequence_id": key, "sequence_start": step == 0, "sequence_end": step == 2},
            )
            got[key].append(out["OUTPUT"]["data"][0])
    assert got == {"2001": [1, 3, 6 + 2001], "2002": [10, 30, 60 + 2002]}


def test_string_dyna_sequence_needs_numeric_ids(server: RunningTritonServer) -> None:
    with pytest.raises(HttpError) as info:
        run_sequence(server, "simple_string_dyna_sequence", "not-a-number", [1])
    assert info.value.status == 400
    assert "decimal integers" in info.value.message


def test_sequence_without_start_is_rejected(server: RunningTritonServer) -> None:
    with pytest.raises(HttpError) as info:
        infer_json(
            server,
            "simple_sequence",
            [tensor("INPUT", "INT32", [[1]])],
            {"sequence_id": 424242, "sequence_start": False},
        )
    assert info.value.status == 400
    assert "must specify the START flag" in info.value.message


# --- decoupled models -------------------------------------------------------------------


def test_decoupled_models_refuse_plain_infer(server: RunningTritonServer) -> None:
    with pytest.raises(HttpError) as info:
        infer_json(server, "square_int32", [tensor("IN", "INT32", [3])])
    assert info.value.status == 501
    assert "decoupled" in info.value.message


def test_square_int32_stream(server: RunningTritonServer) -> None:
    events = generate_stream(server, "square_int32", {"IN": [3]})
    assert [e["OUT"] for e in events] == [3, 3, 3]
    assert generate_stream(server, "square_int32", {"IN": [0]}) == []


def test_repeat_int32_stream(server: RunningTritonServer) -> None:
    start = time.monotonic()
    events = generate_stream(
        server, "repeat_int32", {"IN": [100, 101, 102], "DELAY": [100], "WAIT": [0]}
    )
    elapsed = time.monotonic() - start
    assert [(e["OUT"], e["IDX"]) for e in events] == [(100, 0), (101, 1), (102, 2)]
    assert elapsed >= 0.3


# --- bls, gpu, slow ---------------------------------------------------------------------


def test_bls_simple(server: RunningTritonServer) -> None:
    in0 = np.arange(32, dtype=np.int32).reshape(2, 16)
    in1 = np.full((2, 16), 7, dtype=np.int32)
    out = infer_json(
        server, "bls_simple", [tensor("INPUT0", "INT32", in0), tensor("INPUT1", "INT32", in1)]
    )
    assert out["OUTPUT0"]["shape"] == [2, 16]
    assert out["OUTPUT0"]["data"] == (in0 + in1).reshape(-1).tolist()
    assert out["OUTPUT1"]["data"] == (in0 - in1).reshape(-1).tolist()


def test_simple_ensemble(server: RunningTritonServer) -> None:
    in0 = np.arange(48, dtype=np.int32).reshape(3, 16)
    in1 = np.full((3, 16), -2, dtype=np.int32)
    out = infer_json(
        server,
        "simple_ensemble",
        [tensor("INPUT0", "INT32", in0), tensor("INPUT1", "INT32", in1)],
    )
    assert out["OUTPUT0"]["shape"] == [3, 16]
    assert out["OUTPUT0"]["data"] == (2 * in0).reshape(-1).tolist()
    assert out["OUTPUT1"]["data"] == (2 * in1).reshape(-1).tolist()
    config = get_json(server, "/v2/models/simple_ensemble/config")
    assert config["platform"] == "ensemble"
    assert config["model_transaction_policy"] == {"decoupled": False}
    assert [s["model_name"] for s in config["ensemble_scheduling"]["step"]] == ["simple"] * 2


def test_add_sub_gpu_runs_on_cpu(server: RunningTritonServer) -> None:
    in0 = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    in1 = np.full((2, 5), 0.5, dtype=np.float32)
    got = infer_binary(
        server,
        "add_sub_gpu",
        {"INPUT0": (in0, "FP32"), "INPUT1": (in1, "FP32")},
        {"OUTPUT0": np.float32, "OUTPUT1": np.float32},
    )
    np.testing.assert_allclose(got["OUTPUT0"], in0 + in1)
    np.testing.assert_allclose(got["OUTPUT1"], in0 - in1)
    with pytest.raises(HttpError) as info:
        infer_json(
            server,
            "add_sub_gpu",
            [tensor("INPUT0", "FP32", [[1.0, 2.0]]), tensor("INPUT1", "FP32", [[1.0]])],
        )
    assert info.value.status == 400
    assert "one shape" in info.value.message


def test_slow_sleeps_for_delay_ms(server: RunningTritonServer) -> None:
    start = time.monotonic()
    out = infer_json(
        server,
        "slow",
        [tensor("INPUT0", "INT32", [1, 2, 3]), tensor("DELAY_MS", "UINT32", [300])],
    )
    assert time.monotonic() - start >= 0.3
    assert out["OUTPUT0"]["data"] == [1, 2, 3]


def test_slow_default_delay_from_config(server: RunningTritonServer) -> None:
    start = time.monotonic()
    out = infer_json(server, "slow", [tensor("INPUT0", "INT32", [5])])
    elapsed = time.monotonic() - start
    assert out["OUTPUT0"]["data"] == [5]
    assert 1.0 <= elapsed < 10.0


# --- model control on the unmodified repository --------------------------------------------


def test_model_control_explicit_mode() -> None:
    assert INSTALL is not None
    with run_tritonserver(INSTALL, REPO, ["--model-control-mode=explicit"]) as server:
        index = post_json(server, "/v2/repository/index", {})
        assert {entry["name"] for entry in index} >= EXPECTED_MODELS
        # The configuration with the TYPE_STRING CORRID control loads as written.
        post_json(server, "/v2/repository/models/simple_string_dyna_sequence/load", {})
        config = get_json(server, "/v2/models/simple_string_dyna_sequence/config")
        corrid = [c for c in config["sequence_batching"]["control_input"] if c["name"] == "CORRID"]
        assert corrid[0]["control"][0]["data_type"] == "TYPE_STRING"
        # BLS relays the error of a target model that is not loaded ...
        post_json(server, "/v2/repository/models/bls_simple/load", {})
        zeros = np.zeros((1, 16), dtype=np.int32)
        inputs = [tensor("INPUT0", "INT32", zeros), tensor("INPUT1", "INT32", zeros)]
        with pytest.raises(HttpError) as info:
            infer_json(server, "bls_simple", inputs)
        assert "bls_simple: inference on 'simple' failed" in info.value.message
        # ... and works once it is.
        post_json(server, "/v2/repository/models/simple/load", {})
        assert infer_json(server, "bls_simple", inputs)["OUTPUT0"]["data"] == [0] * 16
        # Loading with an override config, as simple_{grpc,http}_model_control.py do.
        post_json(
            server,
            "/v2/repository/models/simple/load",
            {"parameters": {"config": json.dumps({"max_batch_size": 16})}},
        )
        assert get_json(server, "/v2/models/simple/config")["max_batch_size"] == 16
        post_json(server, "/v2/repository/models/simple/unload", {})
        with pytest.raises(HttpError):
            get_json(server, "/v2/models/simple/ready")
