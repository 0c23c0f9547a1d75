"""The dependency range that pyproject.toml claims (protobuf, grpcio, numpy, ml_dtypes), tested.

For each end of the range a fresh virtual environment gets this project's ``grpc`` extra:
once pinned to the lower bound of every dependency, once unconstrained (the newest releases
pip finds).  In each, the generated modules must import, round-trip messages and parse
text format, and the tensor codecs must round-trip.  Needs PyPI (or a pip cache); marked slow.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.venvs import ensure_venv

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys
import google.protobuf, grpc, numpy
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc

req = service_pb2.ModelInferRequest(model_name="m", id="1")
req.parameters["p"].uint64_param = 2**63
req.inputs.add(name="I", datatype="FP32", shape=[2]).contents.fp32_contents.extend([1.5, 2])
req.raw_input_contents.append(b"\x00\x01")
assert service_pb2.ModelInferRequest.FromString(req.SerializeToString()) == req
cfg = text_format.Parse('name: "m" input [{name: "I" data_type: TYPE_FP32 dims: [2]}]',
                        model_config_pb2.ModelConfig())
assert cfg.input[0].data_type == model_config_pb2.TYPE_FP32
assert hasattr(service_pb2_grpc, "GRPCInferenceServiceStub")
# Both gRPC clients build their channels and hand-coded RPCs with this grpcio.
import asyncio
import tritonclient.grpc as grpcclient, tritonclient.grpc.aio as grpcaio
grpcclient.InferenceServerClient("127.0.0.1:1").close()
async def _aio():
    await grpcaio.InferenceServerClient("127.0.0.1:1").close()
asyncio.run(_aio())
import ml_dtypes
from tritonclient import utils
arr = numpy.array([[b"a", "\u00e9"], [b"", b"xyz"]], dtype=object)
assert utils.deserialize_bytes_tensor(utils.serialize_byte_tensor(arr)).tolist() == [
    b"a", b"\xc3\xa9", b"", b"xyz"]
bf = numpy.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
assert utils.deserialize_bf16_tensor(utils.serialize_bf16_tensor(bf)).tolist() == [1.5, -2.0]
assert utils.np_to_triton_dtype(bf.dtype) == "BF16"
print(json.dumps({"protobuf": google.protobuf.__version__, "grpcio": grpc.__version__,
                  "numpy": numpy.__version__, "ml_dtypes": ml_dtypes.__version__,
                  "speedups": utils.HAVE_SPEEDUPS}))
"""


def lower_bounds() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounds = {}
    for spec in project["dependencies"] + project["optional-dependencies"]["grpc"]:
        match = re.match(r"^([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)", spec)
        assert match, f"every dependency needs a lower bound: {spec}"
        bounds[match.group(1)] = match.group(2)
    return bounds


def install_and_probe(tmp: Path, constraints: dict[str, str]) -> dict[str, str]:
    pins = tmp / "constraints.txt"
    pins.write_text("".join(f"{name}=={version}\n" for name, version in constraints.items()))
    python = ensure_venv(tmp / "venv", [f"{ROOT}[grpc]"], constraints=pins)
    result = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=tmp
    )
    assert result.returncode == 0, result.stderr
    import json

    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_oldest_claimed_versions(tmp_path: Path) -> None:
    bounds = lower_bounds()
    versions = install_and_probe(tmp_path, bounds)
    print("oldest:", versions)
    assert versions["protobuf"] == bounds["protobuf"]
    assert versions["grpcio"] == bounds["grpcio"]
    assert versions["numpy"] == bounds["numpy"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_newest_versions(tmp_path: Path) -> None:
    versions = install_and_probe(tmp_path, {})
    print("newest:", versions)
    upper = re.search(r'"protobuf>=[^,]+,<(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert upper is not None
    assert int(versions["protobuf"].split(".")[0]) < int(upper.group(1))


def test_lower_bounds_are_declared() -> None:
    assert {"protobuf", "grpcio", "numpy", "ml_dtypes"} <= set(lower_bounds())
    assert sys.version_info >= (3, 10)
