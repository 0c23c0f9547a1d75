"""The gRPC frontend's control RPCs: the model repository, shared-memory regions, trace and log
settings (``docs/protocol.md`` section 4), each a call of the core between two protobuf
messages.  :class:`~mock_server.frontends.grpc.GrpcFrontend` routes them here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from tritonclient._codec import grpc_server
from tritonclient._proto import service_pb2 as pb

from ..core.errors import ServerError
from ..core.server import CoreServer

__all__ = ["ControlRpcs"]


class ControlRpcs:
    """The repository, shared-memory, trace and logging RPCs of one core.

    Parameters
    ----------
    core : CoreServer
        The core they act on.
    """

    def __init__(self, core: CoreServer) -> None:
        self._core = core

    # -- model repository ----------------------------------------------------------------
    @staticmethod
    def _check_repository_name(name: str) -> None:
        if name:
            raise ServerError.unsupported("'repository_name' specification is not supported")

    async def repository_index(self, request: pb.RepositoryIndexRequest, context: Any) -> Any:
        self._check_repository_name(request.repository_name)
        rows = await asyncio.to_thread(self._core.repository_index, request.ready)
        response = pb.RepositoryIndexResponse()
        for row in rows:
            response.models.add(
                name=row["name"],
                version=row.get("version", ""),
                state=row.get("state", ""),
                reason=row.get("reason", ""),
            )
        return response

    async def repository_load(self, request: pb.RepositoryModelLoadRequest, context: Any) -> Any:
        self._check_repository_name(request.repository_name)
        config: str | None = None
        files: dict[str, bytes] = {}
        for key in sorted(request.parameters):
            param = request.parameters[key]
            which = param.WhichOneof("parameter_choice")
            if key == "config":
                if which != "string_param":
                    raise ServerError.invalid_arg(
                        "invalid value type for load parameter 'config', expected string_param."
                    )
                config = param.string_param
            elif key.startswith("file:"):
                if which != "bytes_param":
                    raise ServerError.invalid_arg(
                        f"invalid value type for load parameter '{key}', expected bytes_param."
                    )
                files[key] = param.bytes_param
            else:
                raise ServerError.invalid_arg(f"unrecognized load parameter '{key}'.")
        await asyncio.to_thread(self._core.load_model, request.model_name, config, files)
        return pb.RepositoryModelLoadResponse()

    async def repository_unload(
        self, request: pb.RepositoryModelUnloadRequest, context: Any
    ) -> Any:
        self._check_repository_name(request.repository_name)
        unload_dependents = False
        if "unload_dependents" in request.parameters:
            param = request.parameters["unload_dependents"]
            if param.WhichOneof("parameter_choice") != "bool_param":
                raise ServerError.invalid_arg(
                    "invalid value type for 'unload_dependents' parameter, expected bool_param."
                )
            unload_dependents = param.bool_param
        await asyncio.to_thread(self._core.unload_model, request.model_name, unload_dependents)
        return pb.RepositoryModelUnloadResponse()

    # -- shared memory -------------------------------------------------------------------
    async def system_shm_status(
        self, request: pb.SystemSharedMemoryStatusRequest, context: Any
    ) -> Any:
        regions = self._core.shm.system_status(request.name or None)
        return _regions(pb.SystemSharedMemoryStatusResponse(), regions)

    async def system_shm_register(
        self, request: pb.SystemSharedMemoryRegisterRequest, context: Any
    ) -> Any:
        self._core.shm.register_system(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    async def system_shm_unregister(
        self, request: pb.SystemSharedMemoryUnregisterRequest, context: Any
    ) -> Any:
        self._core.shm.unregister_system(request.name or None)
        return pb.SystemSharedMemoryUnregisterResponse()

    async def cuda_shm_status(self, request: pb.CudaSharedMemoryStatusRequest, context: Any) -> Any:
        regions = self._core.shm.cuda_status(request.name or None)
        return _regions(pb.CudaSharedMemoryStatusResponse(), regions)

    async def cuda_shm_register(
        self, request: pb.CudaSharedMemoryRegisterRequest, context: Any
    ) -> Any:
        self._core.shm.register_cuda(
            request.name, request.raw_handle, request.device_id, request.byte_size
        )
        return pb.CudaSharedMemoryRegisterResponse()

    async def cuda_shm_unregister(
        self, request: pb.CudaSharedMemoryUnregisterRequest, context: Any
    ) -> Any:
        self._core.shm.unregister_cuda(request.name or None)
        return pb.CudaSharedMemoryUnregisterResponse()

    # -- trace and logging ---------------------------------------------------------------
    async def trace_setting(self, request: pb.TraceSettingRequest, context: Any) -> Any:
        model = request.model_name or None
        if request.settings:
            changes = grpc_server.parse_trace_setting_request(request)
            settings = self._core.update_trace_settings(changes, model)
        else:
            settings = self._core.trace_settings(model)
        response = pb.TraceSettingResponse()
        for key, value in settings.items():
            values = value if isinstance(value, list) else [value]
            response.settings[key].value.extend(str(v) for v in values)
        return response

    async def log_settings(self, request: pb.LogSettingsRequest, context: Any) -> Any:
        if request.settings:
            changes = grpc_server.parse_log_settings_request(request)
            settings = self._core.log_settings.update(changes)
        else:
            settings = self._core.log_settings.get()
        response = pb.LogSettingsResponse()
        for key, value in settings.items():
            entry = response.settings[key]
            if isinstance(value, bool):
                entry.bool_param = value
            elif isinstance(value, int):
                entry.uint32_param = value
            else:
                entry.string_param = str(value)
        return response


def _regions(response: Any, regions: Iterable[Any]) -> Any:
    """``response`` with one entry per region status (its fields are the message's)."""
    for region in regions:
        entry = response.regions[region.name]
        for field, value in asdict(region).items():
            setattr(entry, field, value)
    return response
