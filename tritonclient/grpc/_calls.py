"""Every unary gRPC call of the clients but inference, described once.

Each function takes a client method's parameters and returns a :class:`Call`: the RPC, its
request message, and how its response message becomes the method's result (the message
itself, or a dict when ``as_json``).  The sync and asyncio clients hand a ``Call`` to their
driver (``_unary``), which differs only in how it calls the stub.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tritonclient._codec.arguments import check_model_version
from tritonclient._proto import service_pb2
from tritonclient.utils import raise_error

from ._tensors import message_to_json

__all__ = [
    "Call",
    "cuda_shm_status",
    "inference_statistics",
    "load_model",
    "log_settings",
    "model_config",
    "model_metadata",
    "model_ready",
    "readiness",
    "register_cuda_shm",
    "register_system_shm",
    "repository_index",
    "server_live",
    "server_metadata",
    "server_ready",
    "system_shm_status",
    "trace_settings",
    "unload_model",
    "unregister_cuda_shm",
    "unregister_system_shm",
]

T = TypeVar("T")


@dataclass
class Call(Generic[T]):
    """One unary non-inference RPC: what to send and how to read the answer.

    Attributes
    ----------
    rpc : str
        The stub method (``"ServerLive"``, ...).
    label : str
        The client method name, for verbose output.
    request : protobuf message
        The request.
    convert : callable
        Response message -> the client method's return value.
    done : str or None
        Verbose message printed after success (load, unload, register...).
    """

    rpc: str
    label: str
    request: Any
    convert: Callable[[Any], T]
    done: str | None = None

    @property
    def idempotent(self) -> bool:
        """Whether a retry policy may repeat this call (health, metadata, status, gets)."""
        return self.label.startswith(("is_", "get_"))


def _as_json_or_message(as_json: bool) -> Callable[[Any], Any]:
    return message_to_json if as_json else (lambda response: response)


def server_live() -> Call[bool]:
    return Call("ServerLive", "is_server_live", service_pb2.ServerLiveRequest(), _live)


def _live(response: Any) -> bool:
    return bool(response.live)


def _ready(response: Any) -> bool:
    return bool(response.ready)


def server_ready() -> Call[bool]:
    return Call("ServerReady", "is_server_ready", service_pb2.ServerReadyRequest(), _ready)


def model_ready(model_name: str, model_version: str) -> Call[bool]:
    check_model_version(model_version)
    request = service_pb2.ModelReadyRequest(name=model_name, version=model_version)
    return Call("ModelReady", "is_model_ready", request, _ready)


def server_metadata(as_json: bool) -> Call[Any]:
    request = service_pb2.ServerMetadataRequest()
    return Call("ServerMetadata", "get_server_metadata", request, _as_json_or_message(as_json))


def model_metadata(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelMetadataRequest(name=model_name, version=model_version)
    return Call("ModelMetadata", "get_model_metadata", request, _as_json_or_message(as_json))


def model_config(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelConfigRequest(name=model_name, version=model_version)
    return Call("ModelConfig", "get_model_config", request, _as_json_or_message(as_json))


def repository_index(as_json: bool) -> Call[Any]:
    request = service_pb2.RepositoryIndexRequest()
    return Call(
        "RepositoryIndex", "get_model_repository_index", request, _as_json_or_message(as_json)
    )


def _none(response: Any) -> None:
    return None


def load_model(
    model_name: str, config: str | None, files: Mapping[str, bytes] | None
) -> Call[None]:
    request = service_pb2.RepositoryModelLoadRequest(model_name=model_name)
    if config is not None:
        request.parameters["config"].string_param = config
    for path, content in (files or {}).items():
        if not isinstance(content, (bytes, bytearray)):
            raise_error(
                f"the content of override file '{path}' must be bytes, got {type(content).__name__}"
            )
        request.parameters[path].bytes_param = bytes(content)
    return Call("RepositoryModelLoad", "load_model", request, _none, f"Loaded model '{model_name}'")


def unload_model(model_name: str, unload_dependents: bool) -> Call[None]:
    request = service_pb2.RepositoryModelUnloadRequest(model_name=model_name)
    request.parameters["unload_dependents"].bool_param = bool(unload_dependents)
    return Call(
        "RepositoryModelUnload", "unload_model", request, _none, f"Unloaded model '{model_name}'"
    )


def inference_statistics(model_name: str, model_version: str, as_json: bool) -> Call[Any]:
    check_model_version(model_version)
    request = service_pb2.ModelStatisticsRequest(name=model_name, version=model_version)
    return Call(
        "ModelStatistics", "get_inference_statistics", request, _as_json_or_message(as_json)
    )


def trace_settings(
    model_name: str | None, settings: Mapping[str, Any] | None, as_json: bool, label: str
) -> Call[Any]:
    request = service_pb2.TraceSettingRequest()
    if model_name:
        request.model_name = model_name
    for key, value in (settings or {}).items():
        if value is None:
            request.settings[key]  # present and empty: clear the setting
        else:
            values = value if isinstance(value, (list, tuple)) else [value]
            request.settings[key].value.extend(str(v) for v in values)
    return Call("TraceSetting", label, request, _as_json_or_message(as_json))


def log_settings(settings: Mapping[str, Any] | None, as_json: bool, label: str) -> Call[Any]:
    request = service_pb2.LogSettingsRequest()
    for key, value in (settings or {}).items():
        if value is None:
            request.settings[key]
        elif key in ("log_file", "log_format"):
            request.settings[key].string_param = value
        elif key == "log_verbose_level":
            request.settings[key].uint32_param = value
        else:
            request.settings[key].bool_param = value
    return Call("LogSettings", label, request, _as_json_or_message(as_json))


#: The RPC prefix and the request messages of each kind of shared memory.
_SHM_KINDS = {
    "system": (
        "SystemSharedMemory",
        service_pb2.SystemSharedMemoryStatusRequest,
        service_pb2.SystemSharedMemoryUnregisterRequest,
    ),
    "cuda": (
        "CudaSharedMemory",
        service_pb2.CudaSharedMemoryStatusRequest,
        service_pb2.CudaSharedMemoryUnregisterRequest,
    ),
}


def _shm_status(kind: str, region_name: str, as_json: bool) -> Call[Any]:
    prefix, status_request, _ = _SHM_KINDS[kind]
    label = f"get_{kind}_shared_memory_status"
    convert = _as_json_or_message(as_json)
    return Call(f"{prefix}Status", label, status_request(name=region_name), convert)


def _shm_unregister(kind: str, name: str) -> Call[None]:
    prefix, _, unregister_request = _SHM_KINDS[kind]
    done = (
        f"Unregistered {kind} shared memory with name '{name}'"
        if name
        else f"Unregistered all {kind} shared memory regions"
    )
    label = f"unregister_{kind}_shared_memory"
    return Call(f"{prefix}Unregister", label, unregister_request(name=name), _none, done)


def system_shm_status(region_name: str, as_json: bool) -> Call[Any]:
    return _shm_status("system", region_name, as_json)


def _shm_register(kind: str, request: Any) -> Call[None]:
    prefix = _SHM_KINDS[kind][0]
    done = f"Registered {kind} shared memory with name '{request.name}'"
    return Call(f"{prefix}Register", f"register_{kind}_shared_memory", request, _none, done)


def register_system_shm(name: str, key: str, byte_size: int, offset: int) -> Call[None]:
    request = service_pb2.SystemSharedMemoryRegisterRequest(
        name=name, key=key, offset=offset, byte_size=byte_size
    )
    return _shm_register("system", request)


def unregister_system_shm(name: str) -> Call[None]:
    return _shm_unregister("system", name)


def cuda_shm_status(region_name: str, as_json: bool) -> Call[Any]:
    return _shm_status("cuda", region_name, as_json)


def register_cuda_shm(name: str, raw_handle: Any, device_id: int, byte_size: int) -> Call[None]:
    try:
        handle = base64.b64decode(raw_handle, validate=True)
    except (ValueError, TypeError) as e:
        raise_error(
            f"raw_handle must be the base64-encoded serialized cudaIPC handle (as "
            f"cuda_shared_memory.get_raw_handle() returns it): {e}"
        )
    request = service_pb2.CudaSharedMemoryRegisterRequest(
        name=name, raw_handle=handle, device_id=device_id, byte_size=byte_size
    )
    return _shm_register("cuda", request)


def unregister_cuda_shm(name: str) -> Call[None]:
    return _shm_unregister("cuda", name)


def readiness(what: str, model_name: str | None, model_version: str) -> Call[bool]:
    """One check of ``wait_until_ready``: the server's readiness (``what`` is ``"server"``),
    or the model's."""
    if what == "server":
        return server_ready()
    assert model_name is not None
    return model_ready(model_name, model_version)
