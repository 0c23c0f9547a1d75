"""Run the bundled server in your own tests: a pytest plugin and a context manager.

Outside pytest::

    from mock_server.testing import serve

    with serve("path/to/model_repository") as server:
        client = tritonclient.http.InferenceServerClient(server.http_url)

With pytest (the plugin is registered through the ``pytest11`` entry point when the package
is installed; otherwise pass ``-p mock_server.testing`` or list it in ``pytest_plugins``)::

    def test_simple(triton_server):
        client = tritonclient.grpc.InferenceServerClient(triton_server.grpc_url)
        assert client.is_model_ready("simple")

The repository is, in order of precedence: the ``triton_model_repository`` marker on the test
(paths relative to the test file; keyword arguments ``model_control_mode`` and
``startup_models`` are accepted too), the ``--triton-model-repository`` command-line option
(relative to the invocation directory; several paths separated by ``os.pathsep``), the
``triton_model_repository`` ini value (relative to the ini file), and finally the models bundled
with the package.  Servers listen on free ports of 127.0.0.1 and are shared by every test that
asks for the same repository and options; all of them stop at the end of the session.

The server behaves as Triton 2.73 unless told otherwise: client shared memory is refused as
Triton 2.73 refuses it unless the marker says ``allow_client_shm=True`` (Triton's
``--allow-client-shm=true``), and ``triton_compat="2.51"`` (marker) or ``--triton-compat 2.51``
(command line) makes it behave as Triton 2.51 (see :mod:`mock_server.core.compat`)::

    @pytest.mark.triton_model_repository("models", allow_client_shm=True)
    def test_shm(triton_server): ...
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .app import BUNDLED_MODELS, FrontendOptions, MockServer
from .core.server import ModelControlMode, ServerOptions

__all__ = ["serve", "triton_server"]

PathLike = str | os.PathLike[str]


def _repositories(model_repository: PathLike | Sequence[PathLike] | None) -> list[Path]:
    if model_repository is None:
        return [BUNDLED_MODELS]
    if isinstance(model_repository, (str, os.PathLike)):
        model_repository = [model_repository]
    paths = [Path(p).resolve() for p in model_repository]
    for path in paths:
        if not path.is_dir():
            raise FileNotFoundError(f"model repository '{path}' is not a directory")
    return paths


def _control_mode(mode: ModelControlMode | str | None) -> ModelControlMode:
    if mode is None:
        return ModelControlMode.NONE
    if isinstance(mode, ModelControlMode):
        return mode
    try:
        return ModelControlMode(mode.lower())
    except ValueError:
        raise ValueError(
            f"unknown model control mode {mode!r}: expected one of "
            f"{', '.join(m.value for m in ModelControlMode)}"
        ) from None


@contextlib.contextmanager
def serve(
    model_repository: PathLike | Sequence[PathLike] | None = None,
    *,
    model_control_mode: ModelControlMode | str | None = None,
    startup_models: Sequence[str] = (),
    host: str = "127.0.0.1",
    http_port: int = 0,
    grpc_port: int = 0,
    metrics_port: int = 0,
    timeout: float = 120.0,
    **server_options: Any,
) -> Iterator[MockServer]:
    """Start the bundled server, yield it, and stop it.

    Parameters
    ----------
    model_repository : path or list of paths, optional
        Model repository folders; the models bundled with the package by default.
    model_control_mode : ModelControlMode or str, optional
        "none" (default: load everything), "poll" or "explicit".
    startup_models : list of str
        Models loaded at start in explicit mode (``"*"`` for all).
    host : str
        Address to listen on.
    http_port, grpc_port, metrics_port : int
        Ports; 0 (the default) picks free ones.
    timeout : float
        Seconds allowed for starting.
    **server_options
        Further :class:`mock_server.core.server.ServerOptions` fields.

    Yields
    ------
    MockServer
        The running server: ``http_url``, ``grpc_url`` and ``metrics_url`` are ``host:port``
        strings to hand to the clients.
    """
    options = ServerOptions(
        model_repository=_repositories(model_repository),
        model_control_mode=_control_mode(model_control_mode),
        startup_models=list(startup_models),
        **server_options,
    )
    frontends = FrontendOptions(
        host=host, http_port=http_port, grpc_port=grpc_port, metrics_port=metrics_port
    )
    server = MockServer(options, frontends)
    server.start(timeout)
    try:
        yield server
    finally:
        server.stop()


# -- pytest plugin ---------------------------------------------------------------------------

_INI = "triton_model_repository"
_MARKER = "triton_model_repository"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("triton", "bundled Triton-compatible server (mock_server.testing)")
    group.addoption(
        "--triton-model-repository",
        action="store",
        default=None,
        metavar="PATH",
        help="model repository for the triton_server fixture (several separated by "
        f"'{os.pathsep}'); default: the models bundled with mock_server",
    )
    group.addoption(
        "--triton-compat",
        action="store",
        default=None,
        choices=["2.73", "2.51"],
        help="which Triton release the triton_server fixture behaves as (default 2.73)",
    )
    parser.addini(
        _INI,
        type="paths",
        default=[],
        help="model repository folders for the triton_server fixture",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(*paths, model_control_mode=None, startup_models=(), "
        "allow_client_shm=None, triton_compat=None): model repository (relative to the test "
        "file) and options of the triton_server fixture",
    )


class _ServerPool:
    """Servers started by the fixture, one per repository and options, stopped at session end."""

    def __init__(self) -> None:
        self._servers: dict[tuple[Any, ...], tuple[contextlib.ExitStack, MockServer]] = {}

    def get(
        self,
        repositories: list[Path],
        mode: ModelControlMode,
        startup_models: list[str],
        **options: Any,
    ) -> MockServer:
        key = (tuple(repositories), mode, tuple(startup_models), tuple(sorted(options.items())))
        if key not in self._servers:
            stack = contextlib.ExitStack()
            server = stack.enter_context(
                serve(
                    repositories, model_control_mode=mode, startup_models=startup_models, **options
                )
            )
            self._servers[key] = (stack, server)
        return self._servers[key][1]

    def close(self) -> None:
        while self._servers:
            _, (stack, _server) = self._servers.popitem()
            stack.close()


@pytest.fixture(scope="session")
def _triton_server_pool() -> Iterator[_ServerPool]:
    pool = _ServerPool()
    try:
        yield pool
    finally:
        pool.close()


def _configured_repositories(request: pytest.FixtureRequest) -> list[Path]:
    marker = request.node.get_closest_marker(_MARKER)
    if marker is not None and marker.args:
        base = Path(request.path).parent
        return _repositories([base / Path(p) for p in marker.args])
    config = request.config
    option = config.getoption("--triton-model-repository")
    if option:
        base = Path(config.invocation_params.dir)
        return _repositories([base / p for p in str(option).split(os.pathsep) if p])
    ini = config.getini(_INI)
    if ini:
        return _repositories(list(ini))
    return [BUNDLED_MODELS]


@pytest.fixture
def triton_server(request: pytest.FixtureRequest, _triton_server_pool: _ServerPool) -> MockServer:
    """The bundled server running on the configured model repository, on free ports.

    Returns the :class:`mock_server.app.MockServer`; use its ``http_url``, ``grpc_url`` and
    ``metrics_url``.  Tests asking for the same repository share one server.
    """
    marker = request.node.get_closest_marker(_MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    unknown = set(kwargs) - {
        "model_control_mode",
        "startup_models",
        "allow_client_shm",
        "triton_compat",
    }
    if unknown:
        raise pytest.UsageError(
            f"{_MARKER} marker: unknown argument(s) {', '.join(sorted(unknown))}"
        )
    options: dict[str, Any] = {}
    compat = kwargs.get("triton_compat") or request.config.getoption("--triton-compat")
    if compat:
        options["triton_compat"] = str(compat)
    if kwargs.get("allow_client_shm") is not None:
        options["allow_client_shm"] = bool(kwargs["allow_client_shm"])
    return _triton_server_pool.get(
        _configured_repositories(request),
        _control_mode(kwargs.get("model_control_mode")),
        list(kwargs.get("startup_models", ())),
        **options,
    )
