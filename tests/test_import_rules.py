"""The layering the architecture promises, checked in fresh interpreters and in the sources.

The server core and the in-process API know nothing of the wire: importing them must not load
a client, a frontend, grpcio or aiohttp (an HTTP-only or in-process user pays for neither).
The core knows no backend either: the composition root (``mock_server.compose``) gives it the
Python backend.  The codecs are sans-I/O: they load no transport either.  And no package has an
import circle: modules that import each other (even inside functions) are one tangle, whatever
the order they happen to load in.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Module prefixes no import of the named package may load.
_TRANSPORTS = ("grpc", "aiohttp", "geventhttpclient", "gevent")
_CLIENTS = ("tritonclient.grpc", "tritonclient.http")
_FRONTENDS = ("mock_server.frontends", "mock_server.app")
#: What the core is given by the composition root, and never loads itself.
_BACKENDS = ("mock_server.python_backend", "mock_server.compose", "mock_server.api")

ROOT = Path(__file__).resolve().parent.parent
CORE_MODULES = sorted(
    f"mock_server.core.{p.stem}"
    for p in (ROOT / "mock_server" / "core").glob("*.py")
    if p.stem != "__init__"
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


def test_the_core_loads_no_backend_frontend_or_client() -> None:
    # Every module of the core at once, in a fresh interpreter.
    names = loaded_after("mock_server.core", *CORE_MODULES)
    assert set(CORE_MODULES) <= set(names)
    assert offenders(names, _BACKENDS + _FRONTENDS + _CLIENTS + _TRANSPORTS) == []


@pytest.mark.parametrize("module", CORE_MODULES)
def test_no_core_module_imports_a_backend_frontend_or_client(module: str) -> None:
    # In the source, imports inside functions included: loading a backend late is still the
    # core depending on it.
    imported = whole_graph()[module]
    forbidden = _BACKENDS + _FRONTENDS + _CLIENTS + ("mock_server.metrics",)
    assert offenders(sorted(imported), forbidden) == []


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


# -- import circles ------------------------------------------------------------------------------
def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_submodule(root: Path, package: str, name: str) -> bool:
    """Whether ``package.name`` is a module of its own (a source file, a package, or a compiled
    extension beside its C source): ``from package import name`` then imports it, not a name
    of the package's ``__init__``."""
    folder = root.joinpath(*package.split("."))
    return (folder / name).is_dir() or any(folder.glob(f"{name}.*"))


def _imports(root: Path, module: str, path: Path) -> set[str]:
    """The modules ``module`` imports, at any depth of its code (not under ``TYPE_CHECKING``:
    those never run)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for each in child.orelse:
                    visit_one(each)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            names = [alias.name for alias in node.names]
            submodules = [n for n in names if _is_submodule(root, source, n)]
            found.update(f"{source}.{n}" for n in submodules)
            if len(submodules) < len(names):
                found.add(source)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def import_graph(root: Path, *packages: str) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (a package's own subpackages and
    modules are nodes of their own)."""
    paths = {
        _module_name(root, path): path
        for package in packages
        for path in root.joinpath(*package.split(".")).rglob("*.py")
        # The bundled model repository is data: models are loaded by the server, not imported.
        if "models" not in path.relative_to(root).parts
    }
    return {
        module: {m for m in _imports(root, module, path) if m in paths and m != module}
        for module, path in paths.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@functools.cache
def whole_graph() -> dict[str, set[str]]:
    """The import graph of the project's packages."""
    return import_graph(ROOT, "mock_server", "tritonclient", "shm")


@pytest.mark.parametrize("package", ["mock_server", "tritonclient", "shm"])
def test_no_import_circles(package: str) -> None:
    graph = whole_graph()
    mine = {m for m in graph if m == package or m.startswith(package + ".")}
    assert len(mine) > 3
    assert [c for c in circles(graph) if set(c) & mine] == []


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    # Imports inside functions count; imports under TYPE_CHECKING do not; "from . import x"
    # names the module x, not the package.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n")
    (package / "b.py").write_text("from .c import name\n")
    (package / "c.py").write_text("from pkg import a\nname = 1\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import e\n"
    )
    (package / "e.py").write_text("from . import d\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.d"] == set()
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
