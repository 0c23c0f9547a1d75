"""The layering the architecture promises, checked in fresh interpreters.

The server core and the in-process API know nothing of the wire: importing them must not load
a client, a frontend, grpcio or aiohttp (an HTTP-only or in-process user pays for neither).
The codecs are sans-I/O: they load no transport either.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Module prefixes no import of the named package may load.
_TRANSPORTS = ("grpc", "aiohttp", "geventhttpclient", "gevent")
_CLIENTS = ("tritonclient.grpc", "tritonclient.http")
_FRONTENDS = (
    "mock_server.frontends.http_generate",
    "mock_server.frontends.http_support",
    "mock_server.frontends.http",
    "mock_server.frontends.grpc",
    "mock_server.frontends.grpc_stream",
    "mock_server.frontends.grpc_support",
    "mock_server.frontends.metrics",
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


CODEC = Path(__file__).resolve().parent.parent / "tritonclient" / "_codec"
CODEC_MODULES = sorted(p.stem for p in CODEC.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", CODEC_MODULES)
def test_codecs_load_no_transport_client_or_server(module: str) -> None:
    names = loaded_after(f"tritonclient._codec.{module}")
    assert offenders(names, _TRANSPORTS + _CLIENTS + _FRONTENDS + ("mock_server",)) == []


def imported_modules(path: Path) -> set[str]:
    """The modules a source file imports (relative imports resolved inside the codec)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = "tritonclient._codec" + (f".{base}" if base else "")
                if not node.module:  # from . import x
                    found.update(f"{base}.{alias.name}" for alias in node.names)
                    continue
            found.add(base)
    return found


@pytest.mark.parametrize("module", CODEC_MODULES)
def test_protocols_never_import_each_other(module: str) -> None:
    imports = imported_modules(CODEC / f"{module}.py")
    for mine, theirs in (("http_", "grpc_"), ("grpc_", "http_")):
        if module.startswith(mine):
            assert not [m for m in imports if m.startswith(f"tritonclient._codec.{theirs}")]
    # The shared modules belong to neither protocol.
    if not module.startswith(("http_", "grpc_", "generate")):
        assert not [
            m
            for m in imports
            if m.startswith(("tritonclient._codec.http_", "tritonclient._codec.grpc_"))
        ]


def test_the_sdk_never_imports_the_server() -> None:
    root = CODEC.parent
    users = [
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if any(m == "mock_server" or m.startswith("mock_server.") for m in imported_modules(path))
    ]
    assert users == []


def test_the_check_sees_a_forbidden_import() -> None:
    # The rule above is only worth something if importing a client shows up in the list.
    names = loaded_after("mock_server.core", "tritonclient.grpc")
    assert "tritonclient.grpc" in offenders(names, _CLIENTS)
    assert "grpc" in offenders(names, _TRANSPORTS)


@pytest.mark.parametrize(
    "module",
    [
        "tritonclient._codec.grpc_client",
        "tritonclient._codec.grpc_server",
        "tritonclient._codec.http_client",
        "tritonclient._codec.http_server",
        "tritonclient.grpc.service_pb2",
        "tritonclient.grpc",
        "tritonclient.grpc.aio",
        "tritonclient.http",
        "tritonclient.http.aio",
        "mock_server.frontends.grpc",
        "mock_server.frontends.grpc_stream",
        "mock_server.frontends.grpc_support",
        "mock_server.frontends.http",
        "mock_server.frontends.http_generate",
        "mock_server.frontends.http_support",
        "mock_server.frontends.metrics",
    ],
)
def test_each_module_imports_first(module: str) -> None:
    # An import circle shows up as an ImportError when the module in the middle of it is the
    # first one imported; each must work as the very first import of a fresh interpreter.
    assert module in loaded_after(module)
