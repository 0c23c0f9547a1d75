"""The .proto sources, the generated modules, and their agreement with NVIDIA's descriptors."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pb2, json_format, text_format

from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "proto_descriptors.json"


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "proto" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dump = load_script("dump_descriptors")


def test_generated_modules_match_nvidia_descriptors() -> None:
    protos = dump.load_from_modules(
        ["tritonclient.grpc.service_pb2", "tritonclient.grpc.model_config_pb2"]
    )
    assert dump.render(protos) == GOLDEN.read_text(encoding="utf-8")


def test_descriptor_file_names_and_service() -> None:
    assert service_pb2.DESCRIPTOR.name == "grpc_service.proto"
    assert model_config_pb2.DESCRIPTOR.name == "model_config.proto"
    service = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert service.full_name == "inference.GRPCInferenceService"
    assert len(service.methods) == 20
    stream = service.methods_by_name["ModelStreamInfer"]
    assert stream.input_type.full_name == "inference.ModelInferRequest"
    assert stream.output_type.full_name == "inference.ModelStreamInferResponse"
    stub_methods = {m.name for m in service.methods}
    for method in stub_methods:
        assert hasattr(service_pb2_grpc.GRPCInferenceServiceServicer, method)
    assert hasattr(service_pb2_grpc, "add_GRPCInferenceServiceServicer_to_server")


@pytest.mark.slow
def test_generated_modules_are_not_stale() -> None:
    # Regenerates with the pinned protoc (in a private venv) and diffs with the committed files.
    result = subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_health_proto_matches_grpc_health_checking() -> None:
    grpc_health = pytest.importorskip("grpc_health.v1.health_pb2")
    generate = load_script("generate")
    python = generate.tool_python()
    out = ROOT / ".cache" / "health.pb"
    subprocess.run(
        [
            str(python),
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT / 'proto'}",
            f"--descriptor_set_out={out}",
            "health.proto",
        ],
        check=True,
        timeout=120,
    )
    ours = json.loads(dump.render(dump.load_from_descriptor_set(str(out))))["files"]["health.proto"]
    theirs_proto = descriptor_pb2.FileDescriptorProto.FromString(
        grpc_health.DESCRIPTOR.serialized_pb
    )
    theirs = json.loads(dump.render([theirs_proto]))["files"][theirs_proto.name]
    assert ours["package"] == theirs["package"] == "grpc.health.v1"
    for kind in ("messages", "enums"):
        for name, body in ours[kind].items():
            assert theirs[kind][name] == body, name
    for method, body in ours["services"]["grpc.health.v1.Health"].items():
        assert theirs["services"]["grpc.health.v1.Health"][method] == body


def test_infer_request_round_trip() -> None:
    request = service_pb2.ModelInferRequest(model_name="simple", model_version="1", id="r1")
    request.parameters["sequence_id"].int64_param = 42
    request.parameters["flag"].bool_param = True
    request.parameters["ratio"].double_param = 0.5
    tensor = request.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 16])
    tensor.parameters["shared_memory_region"].string_param = "region"
    request.outputs.add(name="OUTPUT0").parameters["binary_data"].bool_param = True
    request.raw_input_contents.append(bytes(range(64)))
    back = service_pb2.ModelInferRequest.FromString(request.SerializeToString())
    assert back == request
    assert back.parameters["sequence_id"].WhichOneof("parameter_choice") == "int64_param"
    assert back.inputs[0].shape == [1, 16]
    assert json_format.MessageToDict(back)["inputs"][0]["datatype"] == "INT32"


def test_stream_response_carries_error_or_response() -> None:
    msg = service_pb2.ModelStreamInferResponse(error_message="bad input")
    back = service_pb2.ModelStreamInferResponse.FromString(msg.SerializeToString())
    assert back.error_message == "bad input" and not back.HasField("infer_response")


def test_model_config_parses_from_text_format() -> None:
    config = text_format.Parse(
        """
        name: "simple"
        backend: "python"
        max_batch_size: 8
        input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
        output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
        instance_group [ { kind: KIND_CPU count: 2 } ]
        dynamic_batching { max_queue_delay_microseconds: 100 }
        version_policy { latest { num_versions: 2 } }
        model_transaction_policy { decoupled: true }
        parameters { key: "k" value { string_value: "v" } }
        """,
        model_config_pb2.ModelConfig(),
    )
    assert config.input[0].data_type == model_config_pb2.TYPE_INT32
    assert list(config.output[0].dims) == [-1]
    assert config.instance_group[0].kind == model_config_pb2.ModelInstanceGroup.KIND_CPU
    assert config.WhichOneof("scheduling_choice") == "dynamic_batching"
    assert config.model_transaction_policy.decoupled
    assert config.parameters["k"].string_value == "v"
    wrapped = service_pb2.ModelConfigResponse(config=config)
    assert service_pb2.ModelConfigResponse.FromString(wrapped.SerializeToString()) == wrapped
    with pytest.raises(text_format.ParseError, match="no_such_field"):
        text_format.Parse("no_such_field: 1", model_config_pb2.ModelConfig())


def test_generated_modules_need_no_runtime_version_check() -> None:
    # What keeps the modules importable on protobuf 4.x (see tests/test_protobuf_range.py).
    for module in (service_pb2, model_config_pb2):
        assert module.__file__ is not None
        assert "runtime_version" not in Path(module.__file__).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["service_pb2", "service_pb2_grpc", "model_config_pb2"])
def test_nvidia_import_paths_are_the_generated_modules(name: str) -> None:
    # ``tritonclient.grpc.<name>`` is where NVIDIA's users import from; it must be the very module
    # the codecs and the server use, or isinstance checks across the two would fail.
    import importlib

    public = importlib.import_module(f"tritonclient.grpc.{name}")
    generated = importlib.import_module(f"tritonclient._proto.{name}")
    assert public is generated
    if name != "service_pb2_grpc":
        assert (
            public.DESCRIPTOR.pool.FindFileByName(generated.DESCRIPTOR.name) is generated.DESCRIPTOR
        )
