"""The module names of old tritonclient releases import, work and warn."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LEGACY = [
    ("tritongrpcclient", "tritonclient.grpc", "InferenceServerClient"),
    ("tritongrpcclient.grpc_service_pb2", "tritonclient.grpc.service_pb2", "ModelInferRequest"),
    (
        "tritongrpcclient.grpc_service_pb2_grpc",
        "tritonclient.grpc.service_pb2_grpc",
        "GRPCInferenceServiceStub",
    ),
    ("tritongrpcclient.model_config_pb2", "tritonclient.grpc.model_config_pb2", "ModelConfig"),
    ("tritonhttpclient", "tritonclient.http", "InferenceServerClient"),
    ("tritonclientutils", "tritonclient.utils", "serialize_byte_tensor"),
    (
        "tritonshmutils.shared_memory",
        "tritonclient.utils.shared_memory",
        "create_shared_memory_region",
    ),
    (
        "tritonshmutils.cuda_shared_memory",
        "tritonclient.utils.cuda_shared_memory",
        "create_shared_memory_region",
    ),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("old", "new", "name"), LEGACY)
def test_alias_reexports_and_warns(old: str, new: str, name: str) -> None:
    for module in [m for m in sys.modules if m == old or m.startswith(old.split(".")[0])]:
        del sys.modules[module]
    with pytest.warns(DeprecationWarning, match=f"`{new}`"):
        legacy = importlib.import_module(old)
    target = importlib.import_module(new)
    assert getattr(legacy, name) is getattr(target, name)
    for public in getattr(target, "__all__", []):
        assert getattr(legacy, public) is getattr(target, public)


def test_warning_visible_in_a_script() -> None:
    """Python shows the warning by default: it is attributed to the importing script."""
    code = (
        "import tritonhttpclient, tritonclientutils\n"
        "print(tritonclientutils.InferenceServerException)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "DeprecationWarning" in proc.stderr and "`tritonclient.http`" in proc.stderr
    assert "`tritonclient.utils`" in proc.stderr
    assert "InferenceServerException" in proc.stdout


def test_legacy_shm_helpers_work() -> None:
    with pytest.warns(DeprecationWarning):
        sys.modules.pop("tritonshmutils.shared_memory", None)
        legacy = importlib.import_module("tritonshmutils.shared_memory")
    import numpy as np

    handle = legacy.create_shared_memory_region("legacy", "/tcng_legacy_test", 16)
    try:
        legacy.set_shared_memory_region(handle, [np.arange(4, dtype=np.int32)])
        assert legacy.get_contents_as_numpy(handle, np.int32, [4]).tolist() == [0, 1, 2, 3]
    finally:
        legacy.destroy_shared_memory_region(handle)
