"""The layering the architecture promises, checked in fresh interpreters.

The server core and the in-process API know nothing of the wire: importing them must not load
a client, a frontend, grpcio or aiohttp (an HTTP-only or in-process user pays for neither).
The codecs are sans-I/O: they load no transport either.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Module prefixes no import of the named package may load.
_TRANSPORTS = ("grpc", "aiohttp", "geventhttpclient", "gevent")
_CLIENTS = ("tritonclient.grpc", "tritonclient.http")
_FRONTENDS = (
    "mock_server.http_frontend",
    "mock_server.grpc_frontend",
    "mock_server.metrics_frontend",
    "mock_server.app",
)


def loaded_after(*modules: str) -> list[str]:
    """The module names in ``sys.modules`` after importing ``modules`` in a new interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    names: list[str] = json.loads(result.stdout)
    return names


def offenders(names: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)]


@pytest.mark.parametrize(
    "package",
    [
        "mock_server.core",
        "mock_server.api",
        "mock_server.python_backend",
        "mock_server.metrics",
        "mock_server",
    ],
)
def test_server_core_and_api_load_no_wire(package: str) -> None:
    names = loaded_after(package)
    assert package in names
    assert offenders(names, _TRANSPORTS + _CLIENTS + _FRONTENDS) == []


@pytest.mark.parametrize(
    "module",
    ["tritonclient._codec.http", "tritonclient._codec.grpc", "tritonclient.utils"],
)
def test_codecs_load_no_transport_or_client(module: str) -> None:
    names = loaded_after(module)
    assert offenders(names, _TRANSPORTS + _CLIENTS + _FRONTENDS) == []


def test_the_check_sees_a_forbidden_import() -> None:
    # The rule above is only worth something if importing a client shows up in the list.
    names = loaded_after("mock_server.core", "tritonclient.grpc")
    assert "tritonclient.grpc" in offenders(names, _CLIENTS)
    assert "grpc" in offenders(names, _TRANSPORTS)


@pytest.mark.parametrize(
    "module",
    [
        "tritonclient._codec.grpc",
        "tritonclient._codec.http",
        "tritonclient.grpc.service_pb2",
        "tritonclient.grpc",
        "tritonclient.grpc.aio",
        "tritonclient.http",
        "tritonclient.http.aio",
        "mock_server.grpc_frontend",
        "mock_server.http_frontend",
        "mock_server.metrics_frontend",
    ],
)
def test_each_module_imports_first(module: str) -> None:
    # An import circle shows up as an ImportError when the module in the middle of it is the
    # first one imported; each must work as the very first import of a fresh interpreter.
    assert module in loaded_after(module)
