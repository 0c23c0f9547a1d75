"""Run Triton's own python_backend QA cases against real Triton 2.51 and mock_server.

Give it a checkout (or a partial copy) of the ``qa`` folder of Triton's server repository
(``triton-inference-server/server``): the folders ``qa/python_models`` and
``qa/L0_backend_python`` are read, nothing is written there (from a clone or a bare mirror of
that repository: ``git -C MIRROR archive HEAD qa | tar -x -C DIR`` gives ``DIR/qa``; older and
newer ``qa`` folders both work). For each chosen subtest it builds
the model repository that subtest's ``test.sh`` builds (the layout is written down below, as
data), starts each server on it on free loopback ports, runs the subtest's unittest client
and the server-log checks of its ``test.sh``, and prints one row per case::

    python -m tools.qa_parity --qa /path/to/server/qa                 # every subtest below
    python -m tools.qa_parity --qa /path/to/server/qa lifecycle bls   # some of them
    python -m tools.qa_parity --qa ... --servers mock --client ours   # only ours, our client

Runs from the repository root (it uses ``tests/peers.py`` to find and start the peer, which
``bash scripts/peers.sh`` installs). It is not part of the test suite: it needs Triton's files.

What is changed on the way, and only that: the clients' hard-wired ports (``HOST:8000/8001/8002``)
become the servers' free ports, and ``qa/common``'s ``test_util``/``shm_util`` (not needed for
the verdicts) are replaced by minimal stand-ins (``TestResultCollector`` is ``unittest.TestCase``;
the shared-memory leak probe checks nothing), and so are ``pytest`` and ``requests`` where the
client's interpreter lacks them. Models, configs and test bodies run as they are.

Rows read ``pass``, ``FAIL``, ``skip`` (the client skipped it) or ``n/a``, printed with its
reason: a case whose model needs what this runner leaves out (torch), or, in the triton column
only, a case of a newer ``qa`` folder that Triton 2.51 cannot pass (a later feature or fix).
By default the clients run on NVIDIA's ``tritonclient`` (the peer's venv), so that a difference
is the server's; ``--client ours`` runs them on this project's client.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import peers  # noqa: E402

# ----------------------------------------------------------------------------------------
# What each subtest's test.sh builds and runs (facts read from Triton's scripts).
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """One model of a subtest's repository.

    ``src`` is a folder under ``qa/`` holding ``model_file`` (and ``config``, if any). With
    ``versioned`` the source folder already has the ``1/model.py`` layout.
    """

    name: str
    src: str
    model_file: str = "model.py"
    config: str | None = "config.pbtxt"
    versioned: bool = False
    subs: tuple[tuple[str, str], ...] = ()  # regex substitutions in the config, per line
    append: str = ""  # text test.sh appends to the config
    extra_files: tuple[str, ...] = ()  # more files of ``src`` copied next to model.py
    #: A config (relative to ``src``) used where ``config`` is missing from an older ``qa``.
    config_fallback: str | None = None
    #: Only in newer ``qa`` folders: left out where its source is missing.
    optional: bool = False


@dataclass(frozen=True)
class ClientRun:
    """A unittest client file (relative to ``qa/``), run with ``env`` in a fresh folder
    where the server's log is visible as ``server_log`` (some clients read it)."""

    script: str
    env: tuple[tuple[str, str], ...] = ()
    server_log: str | None = None
    server_log_env: str | None = None  # an environment variable naming the server's log
    label: str = ""  # distinguishes several runs of one script (e.g. MODEL_NAME)
    #: Cases not counted, with the reason (their models need what this runner leaves out).
    not_run: tuple[tuple[str, str], ...] = ()
    #: Only these cases (``Class.method``) run; all when empty.
    only: tuple[str, ...] = ()
    #: These cases do not run here (another run of the same script takes them).
    skip: tuple[str, ...] = ()
    #: Cases that newer ``qa`` folders hold and the Triton peer (2.51) cannot pass: they test a
    #: feature or a fix of a later release. With the reason; a failure there is shown as
    #: ``n/a`` with it (a pass stays a pass; on mock_server a failure stays a failure).
    peer_too_old: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LogCheck:
    """A test.sh check on the server log: ``start_fails`` (the server must exit during
    start-up) or not (checked after a normal stop), and the text the log must hold."""

    case: str
    text: str
    start_fails: bool


@dataclass(frozen=True)
class Subtest:
    name: str
    models: tuple[Model, ...]
    runs: tuple[ClientRun, ...] = ()
    log_checks: tuple[LogCheck, ...] = ()
    server_args: tuple[str, ...] = ("--log-verbose=1",)


PM = "python_models"
L0 = "L0_backend_python"


def _unittest_model(name: str, src: str | None = None, **kw: object) -> Model:
    return Model(name, src or f"{PM}/{name}", **kw)  # type: ignore[arg-type]


def _python_unittest(*model_names: str) -> tuple[ClientRun, ...]:
    return tuple(
        ClientRun(f"{L0}/python_unittest.py", (("MODEL_NAME", m),), label=m) for m in model_names
    )


def _startup_error(name: str, src: str, text: str, **kw: object) -> Subtest:
    """A test.sh block: a repository of one model whose start-up must fail with ``text``."""
    return Subtest(
        name,
        (Model(name, src, **kw),),  # type: ignore[arg-type]
        log_checks=(LogCheck(f"{name} start-up error", text, start_fails=True),),
    )


_DECOUPLED = "model_transaction_policy { decoupled: True }\n"
_DELAYED_FINAL = "LifecycleTest.test_triton_grpc_error_decoupled_delayed_final"
_BATCHING = "dynamic_batching { max_queue_delay_microseconds: 500000 }\n"


def _batched_error_model(name: str, delay_us: int, optional: bool = False) -> Model:
    """lifecycle/test.sh's error models: renamed, batch 8, one preferred batch of 8."""
    return Model(
        name,
        f"{PM}/{name}",
        subs=((r"^name:.*", f'name: "{name}"'), (r"^max_batch_size:.*", "max_batch_size: 8")),
        append="dynamic_batching { preferred_batch_size: [8], "
        f"max_queue_delay_microseconds: {delay_us} }}\n",
        optional=optional,
    )


def _response_sender_models() -> tuple[Model, ...]:
    models = []
    for batching in (False, True):
        for decoupled in (False, True):
            for use_async in (False, True):
                name = "response_sender" + "_decoupled" * decoupled + "_async" * use_async
                name += "_batching" * batching
                models.append(
                    Model(
                        name,
                        f"{PM}/response_sender",
                        model_file="model_async.py" if use_async else "model.py",
                        extra_files=("model_common.py",),
                        append=_DECOUPLED * decoupled + _BATCHING * batching,
                    )
                )
    return tuple(models)


SUBTESTS: tuple[Subtest, ...] = (
    Subtest(
        "argument_validation",
        (
            Model(
                "argument_validation",
                f"{L0}/argument_validation/models/argument_validation",
                versioned=True,
            ),
        ),
        _python_unittest("argument_validation"),
    ),
    Subtest(
        "lifecycle",
        (
            Model("error_code", f"{PM}/error_code"),
            Model("execute_cancel", f"{PM}/execute_cancel"),
            _batched_error_model("execute_error", 12000000),
            Model("execute_return_error", f"{PM}/execute_return_error"),
            # triton_grpc_error mode (2.67 on; newer qa folders only).
            _batched_error_model("execute_grpc_error", 1200000, optional=True),
            Model("decoupled_grpc_error", f"{PM}/decoupled_grpc_error", optional=True),
            Model(
                "wrong_model",
                f"{PM}/wrong_model",
                subs=((r"^name:.*", 'name: "wrong_model"'), (r"TYPE_FP32", "TYPE_UINT32")),
            ),
        ),
        (
            ClientRun(
                f"{L0}/lifecycle/lifecycle_test.py",
                server_log="lifecycle_server.log",
                skip=(_DELAYED_FINAL,),
            ),
            # Last and alone: Triton 2.51 crashes on it, which would fail the cases after it.
            ClientRun(
                f"{L0}/lifecycle/lifecycle_test.py",
                server_log="lifecycle_server.log",
                only=(_DELAYED_FINAL,),
                peer_too_old=(
                    (
                        _DELAYED_FINAL,
                        "Triton 2.51 segfaults on it: the use-after-free in triton_grpc_error "
                        "streams that this case guards was fixed in 2.68 (server#8708)",
                    ),
                ),
            ),
        ),
    ),
    Subtest(
        "response_sender",
        _response_sender_models(),
        (ClientRun(f"{L0}/response_sender/response_sender_test.py"),),
    ),
    Subtest(
        "async_execute",
        (
            # The stored copy of Triton's repository lacks async_execute_decouple's config;
            # the BLS model's, which declares the same tensors, stands in for it.
            Model(
                "async_execute_decouple",
                f"{PM}/async_execute_decouple",
                config_fallback="../async_execute_decouple_bls/config.pbtxt",
            ),
            Model("async_execute_decouple_bls", f"{PM}/async_execute_decouple_bls"),
        ),
        (ClientRun(f"{L0}/async_execute/concurrency_test.py", server_log_env="SERVER_LOG"),),
    ),
    Subtest(
        "request_rescheduling",
        tuple(
            Model(name, f"{PM}/{name}")
            for name in (
                "bls_request_rescheduling",
                "request_rescheduling_addsub",
                "iterative_sequence",
                "wrong_return_type",
            )
        ),
        (
            *_python_unittest("bls_request_rescheduling"),
            ClientRun(f"{L0}/request_rescheduling/grpc_endpoint_test.py"),
        ),
        server_args=("--model-control-mode=explicit", "--load-model=*", "--log-verbose=1"),
    ),
    Subtest(
        "decoupled",
        (
            *(
                Model(name, f"{L0}/decoupled/models/{name}", versioned=True)
                for name in (
                    "decoupled_execute_error",
                    "decoupled_raise_exception",
                    "decoupled_return_response_error",
                    "decoupled_bls_stream",
                )
            ),
            # Newer qa folders: BLS cancellation models and what they call.
            *(
                Model(name, f"{L0}/decoupled/models/{name}", versioned=True, optional=True)
                for name in (
                    "decoupled_bls_async_cancel",
                    "decoupled_bls_cancel",
                    "decoupled_bls_cancel_after_complete",
                    "decoupled_send_after_close_error",
                )
            ),
            Model("identity_fp32", f"{PM}/identity_fp32", optional=True),
            Model(
                "response_sender_until_cancelled",
                f"{PM}/response_sender_until_cancelled",
                optional=True,
            ),
            Model("execute_cancel", f"{PM}/execute_cancel", append=_DECOUPLED),
            # test.sh takes it from python_backend's examples (a checkout beside qa/).
            Model(
                "square_int32",
                "../python_backend/examples/decoupled",
                model_file="square_model.py",
                config="square_config.pbtxt",
            ),
        ),
        (
            ClientRun(
                f"{L0}/decoupled/decoupled_test.py",
                server_log="decoupled_server.log",
                not_run=(("DecoupledTest.test_decoupled_bls", "its model needs torch"),),
                peer_too_old=tuple(
                    (
                        f"DecoupledTest.{case}",
                        "Triton 2.51's BLS ResponseIterator has no cancel() (added in 2.57, "
                        "python_backend#398)",
                    )
                    for case in (
                        "test_decoupled_bls_cancel",
                        "test_decoupled_bls_ignore_cancel",
                        "test_decoupled_bls_cancel_after_cancellation",
                        "test_decoupled_bls_cancel_after_completion",
                    )
                ),
            ),
        ),
    ),
    _startup_error("init_error", f"{PM}/init_error", "name 'lorem_ipsum' is not defined"),
    Subtest(
        "fini_error",
        (Model("fini_error", f"{PM}/fini_error"),),
        log_checks=(
            LogCheck(
                "fini_error finalize error", "name 'undefined_variable' is not defined", False
            ),
        ),
    ),
    Subtest(
        "auto_complete_error",
        (Model("auto_complete_error", f"{PM}/auto_complete_error", config=None),),
        log_checks=(
            LogCheck(
                "auto_complete_error start-up error",
                "name 'undefined_variable' is not defined",
                True,
            ),
        ),
        server_args=("--log-verbose=1", "--strict-model-config=false"),
    ),
)

# ----------------------------------------------------------------------------------------
# Building a repository and the client's folder.
# ----------------------------------------------------------------------------------------

_SHIMS = {
    "test_util.py": (
        "import unittest\n\n\n"
        "class TestResultCollector(unittest.TestCase):\n"
        '    """Stand-in for qa/common/test_util.TestResultCollector."""\n'
    ),
    "shm_util.py": (
        "import contextlib\n\n\n"
        "class ShmLeakDetector:\n"
        '    """Stand-in for qa/common/shm_util.ShmLeakDetector: checks nothing."""\n\n'
        "    @contextlib.contextmanager\n"
        '    def Probe(self, debug_str=""):\n'
        "        yield self\n"
    ),
    # Newer clients import pytest only for pytest.exit (NVIDIA's client venv has no pytest).
    "pytest.py": (
        '"""Stand-in for pytest in the QA clients: only pytest.exit is used."""\n\n\n'
        "def exit(reason, returncode=1):\n"
        "    raise AssertionError(reason)\n"
    ),
}

#: Stand-ins written only where the client's interpreter lacks the module (NVIDIA's client venv
#: has no ``requests``; lifecycle_test reads the metrics page with ``requests.get``).
_OPTIONAL_SHIMS = {
    "requests": (
        '"""Stand-in for requests in the QA clients: get/post over urllib."""\n\n'
        "import json as _json\n"
        "import urllib.error\n"
        "import urllib.request\n\n\n"
        "class RequestException(OSError):\n"
        "    pass\n\n\n"
        "class HTTPError(RequestException):\n"
        "    def __init__(self, msg, response=None):\n"
        "        super().__init__(msg)\n"
        "        self.response = response\n\n\n"
        "class Response:\n"
        "    def __init__(self, url, status, headers, content):\n"
        "        self.url, self.status_code, self.headers = url, status, headers\n"
        "        self.content, self.ok = content, status < 400\n"
        '        self.text = content.decode("utf-8", "replace")\n\n'
        "    def json(self):\n"
        "        return _json.loads(self.text)\n\n"
        # lifecycle_test reads the metrics page through raise_for_status().
        "    def raise_for_status(self):\n"
        "        if not self.ok:\n"
        '            why = f"{self.status_code} for url: {self.url}"\n'
        "            raise HTTPError(why, response=self)\n\n\n"
        "def request(method, url, data=None, json=None, headers=None, timeout=60):\n"
        "    headers = dict(headers or {})\n"
        "    if json is not None:\n"
        "        data = _json.dumps(json).encode()\n"
        '        headers.setdefault("Content-Type", "application/json")\n'
        "    if isinstance(data, str):\n"
        "        data = data.encode()\n"
        "    req = urllib.request.Request(url, data=data, headers=headers, method=method)\n"
        "    try:\n"
        "        with urllib.request.urlopen(req, timeout=timeout) as r:\n"
        "            return Response(url, r.status, dict(r.headers), r.read())\n"
        "    except urllib.error.HTTPError as e:\n"
        "        return Response(url, e.code, dict(e.headers), e.read())\n\n\n"
        'exceptions = type(_json)("requests.exceptions")\n'
        "exceptions.RequestException, exceptions.HTTPError = RequestException, HTTPError\n\n\n"
        "def get(url, **kw):\n"
        '    return request("GET", url, **kw)\n\n\n'
        "def post(url, **kw):\n"
        '    return request("POST", url, **kw)\n'
    ),
}

_HAS_MODULE: dict[tuple[str, str], bool] = {}


def _has_module(python: str, module: str) -> bool:
    key = (python, module)
    if key not in _HAS_MODULE:
        probe = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, timeout=60, check=False
        )
        _HAS_MODULE[key] = probe.returncode == 0
    return _HAS_MODULE[key]


#: Client files Triton renamed: newer ``qa`` folders (2.52 on) have the right-hand one.
_RENAMED = {
    f"{L0}/python_unittest.py": f"{L0}/test_infer_shm_leak.py",
}

# Runs one client file's unittest cases and writes {case: [status, detail]} as JSON.
_BOOTSTRAP = r"""
import importlib.util, json, sys, unittest
path, out, only, skip = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
only, skip = set(filter(None, only.split(","))), set(filter(None, skip.split(",")))
sys.argv = [path]
spec = importlib.util.spec_from_file_location("qa_client", path)
mod = importlib.util.module_from_spec(spec)
sys.modules["qa_client"] = mod
spec.loader.exec_module(mod)
suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
# pytest-style classes (Test*, not TestCase) of newer clients, one case per test_ method
for cls_name, cls in sorted(vars(mod).items()):
    if (cls_name.startswith("Test") and isinstance(cls, type)
            and not issubclass(cls, unittest.TestCase)):
        for meth in sorted(m for m in vars(cls) if m.startswith("test")):
            case = unittest.FunctionTestCase(getattr(cls(), meth))
            case.id = lambda c=cls_name, m=meth: f"qa_client.{c}.{m}"
            suite.addTest(case)
def ids(s):
    for t in s:
        if isinstance(t, unittest.TestSuite):
            yield from ids(t)
        else:
            yield t
def chosen(t):
    case = t.id().split(".", 1)[1]
    return (not only or case in only) and case not in skip
suite = unittest.TestSuite([t for t in ids(suite) if chosen(t)])
verdicts = {t.id().split(".", 1)[1]: ["pass", ""] for t in ids(suite)}
result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
for t, tb in result.failures + result.errors:
    verdicts[t.id().split(".", 1)[-1]] = ["FAIL", tb.strip().splitlines()[-1][:300]]
for t, why in result.skipped:
    verdicts[t.id().split(".", 1)[-1]] = ["skip", why[:300]]
json.dump(verdicts, open(out, "w"))
"""


def _log(path: Path) -> str:
    return peers.read_log(path, limit=10**7)


def build_repository(qa: Path, models: Sequence[Model], dst: Path) -> None:
    dst.mkdir(parents=True)
    for m in models:
        src = qa / m.src
        if m.optional and not src.is_dir():
            continue  # an older qa folder: its test.sh does not build this model either
        target = dst / m.name
        (target / "1").mkdir(parents=True)
        if m.versioned:
            shutil.copy2(src / "1" / m.model_file, target / "1" / "model.py")
        else:
            shutil.copy2(src / m.model_file, target / "1" / "model.py")
        for extra in m.extra_files:
            shutil.copy2(src / extra, target / "1" / extra)
        if m.config is None:
            continue
        config = src / m.config
        if not config.exists() and m.config_fallback is not None:
            config = src / m.config_fallback
        lines = config.read_text().splitlines(keepends=True)
        for pattern, repl in m.subs:
            lines = [re.sub(pattern, repl, line) for line in lines]
        (target / "config.pbtxt").write_text("".join(lines) + m.append)


def prepare_client(
    qa: Path, run: ClientRun, ports: dict[int, int], workdir: Path, python: str
) -> Path:
    """Copy the client next to the shims, its fixed ports replaced by the server's."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in _SHIMS.items():
        (workdir / name).write_text(text)
    for module, text in _OPTIONAL_SHIMS.items():
        if not _has_module(python, module):
            (workdir / f"{module}.py").write_text(text)
    script = run.script
    if not (qa / script).exists() and script in _RENAMED:
        script = _RENAMED[script]
    text = (qa / script).read_text()
    for fixed, port in ports.items():
        text = re.sub(rf"(?<=[\w}}]):{fixed}\b", f":{port}", text)  # host:8001, {ip}:8001
    client = workdir / Path(script).name
    client.write_text(text)
    return client


# ----------------------------------------------------------------------------------------
# Servers.
# ----------------------------------------------------------------------------------------


@dataclass
class Started:
    """A server that is up (``ports`` maps Triton's default ports to its own) or that
    exited during start-up (``ports`` is None)."""

    ports: dict[int, int] | None
    log_path: Path
    stop: Callable[[], None] | None = None  # stops it; the log stays readable afterwards
    startup_log: str = ""


@contextlib.contextmanager
def start_triton(repo: Path, args: Sequence[str], keep_dir: Path) -> Iterator[Started]:
    install = peers.find_tritonserver()
    if install is None:
        raise SystemExit("Triton peer missing: run `bash scripts/peers.sh`")
    log_copy = keep_dir / "tritonserver.log"
    try:
        with peers.run_tritonserver(install, repo, args, startup_timeout=120, may_exit=True) as s:
            port = {8000: s.http_url, 8001: s.grpc_url, 8002: s.metrics_url}

            def stop() -> None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(s.pid, signal.SIGTERM)
                deadline = time.monotonic() + 30
                while s.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                shutil.copy2(s.log_path, log_copy)

            started = Started(
                {k: int(v.rsplit(":", 1)[1]) for k, v in port.items()}, s.log_path, stop
            )
            yield started
    except peers.PeerServerError as exc:
        log_copy.write_text(str(exc))
        yield Started(None, log_copy, None, str(exc))


@contextlib.contextmanager
def start_mock(repo: Path, args: Sequence[str], keep_dir: Path, python: str) -> Iterator[Started]:
    log_path = keep_dir / "mock_server.log"
    port_file = keep_dir / "ports.json"
    cmd = [
        python,
        "-m",
        "mock_server",
        f"--model-repository={repo}",
        "--http-port=0",
        "--grpc-port=0",
        "--metrics-port=0",
        f"--port-file={port_file}",
        *args,
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    proc = peers.spawn_server(cmd, env, keep_dir, log_path)
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        ports = None
        if port_file.exists():
            for _ in range(20):  # written by another process: it may still be empty
                with contextlib.suppress(ValueError):
                    ports = json.loads(port_file.read_text())
                    break
                time.sleep(0.05)
        if ports is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            yield Started(None, log_path, None, peers.read_log(log_path))
            return
        http = f"127.0.0.1:{ports['http']}"
        try:
            peers.wait_until_ready("mock_server", proc, http, log_path, 120)
        except peers.PeerServerError as exc:
            yield Started(None, log_path, None, str(exc))
            return

        def stop() -> None:
            peers.stop_process_group(proc, 30)

        yield Started(
            {8000: ports["http"], 8001: ports["grpc"], 8002: ports["metrics"]}, log_path, stop
        )
    finally:
        peers.stop_process_group(proc, 30)


# ----------------------------------------------------------------------------------------
# Running a subtest.
# ----------------------------------------------------------------------------------------


@dataclass
class Verdicts:
    rows: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)

    def put(self, case: str, server: str, status: str, detail: str = "") -> None:
        self.rows.setdefault(case, {})[server] = (status, detail)


def run_client(
    client_python: str, qa: Path, run: ClientRun, started: Started, workdir: Path, timeout: float
) -> dict[str, list[str]]:
    assert started.ports is not None
    client = prepare_client(qa, run, started.ports, workdir, client_python)
    if run.server_log:
        with contextlib.suppress(FileExistsError):
            (workdir / run.server_log).symlink_to(started.log_path)
    out = workdir / "verdicts.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(dict(run.env))
    if run.server_log_env:
        env[run.server_log_env] = str(started.log_path)
    env["PYTHONPATH"] = str(workdir)
    env["no_proxy"] = env["NO_PROXY"] = "localhost,127.0.0.1"
    with open(workdir / "client.log", "wb") as log:
        try:
            subprocess.run(
                [
                    client_python,
                    "-c",
                    _BOOTSTRAP,
                    str(client),
                    str(out),
                    ",".join(run.only),
                    ",".join(run.skip),
                ],
                cwd=workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"(client)": ["FAIL", f"timed out after {timeout:.0f} s"]}
    if not out.exists():
        tail = (workdir / "client.log").read_text(errors="replace").strip().splitlines()[-1:]
        return {"(client)": ["FAIL", "; ".join(tail)[:300]]}
    verdicts: dict[str, list[str]] = json.loads(out.read_text())
    return verdicts


def run_subtest(
    sub: Subtest,
    server: str,
    qa: Path,
    scratch: Path,
    client_python: str,
    mock_python: str,
    verdicts: Verdicts,
    timeout: float,
) -> None:
    base = scratch / sub.name / server
    repo = base / "models"
    build_repository(qa, sub.models, repo)
    starter = (
        start_triton(repo, sub.server_args, base)
        if server == "triton"
        else start_mock(repo, sub.server_args, base, mock_python)
    )
    with starter as started:
        for check in sub.log_checks:
            if check.start_fails:
                if started.ports is not None:
                    verdicts.put(check.case, server, "FAIL", "server started")
                elif (
                    check.text
                    in peers.read_log(started.log_path, limit=10**7) + started.startup_log
                ):
                    verdicts.put(check.case, server, "pass")
                else:
                    verdicts.put(check.case, server, "FAIL", f"log lacks {check.text!r}")
        if started.ports is None:
            for run in sub.runs:
                verdicts.put(
                    f"{sub.name}: {run.label or run.script}",
                    server,
                    "FAIL",
                    "server did not start: " + started.startup_log[-200:],
                )
            return
        for i, run in enumerate(sub.runs):
            results = run_client(client_python, qa, run, started, base / f"client{i}", timeout)
            for case, reason in run.not_run:
                if case in results:
                    results[case] = ["n/a", reason]
            if server == "triton":
                for case, reason in run.peer_too_old:
                    if results.get(case, ["pass"])[0] == "FAIL":
                        results[case] = ["n/a", reason]
            for case, (status, detail) in results.items():
                name = f"{sub.name}: {case}" + (f" [{run.label}]" if run.label else "")
                verdicts.put(name, server, status, detail)
        if started.stop is not None:
            started.stop()
        log = ""
        for candidate in (base / "tritonserver.log", started.log_path):
            if candidate.exists():
                log = peers.read_log(candidate, limit=10**7)
                break
        for check in sub.log_checks:
            if not check.start_fails:
                ok = check.text in log
                verdicts.put(
                    check.case,
                    server,
                    "pass" if ok else "FAIL",
                    "" if ok else f"log lacks {check.text!r}",
                )


def print_table(verdicts: Verdicts, servers: Sequence[str], details: bool) -> None:
    width = max([len(c) for c in verdicts.rows] + [4])
    print(f"{'case':<{width}}  " + "  ".join(f"{s:<7}" for s in servers))
    for case, per in verdicts.rows.items():
        cells = [per.get(s, ("-", ""))[0] for s in servers]
        print(f"{case:<{width}}  " + "  ".join(f"{c:<7}" for c in cells))
        for s in servers:
            status, detail = per.get(s, ("-", ""))
            # Why a case is not counted is always shown: an n/a must never pass unexplained.
            if detail and (status == "n/a" or (details and status == "FAIL")):
                print(f"    {s}: {detail}")

    def count(server: str, status: str) -> int:
        return sum(1 for p in verdicts.rows.values() if p.get(server, ("",))[0] == status)

    print(
        "passed: "
        + ", ".join(
            f"{s} {count(s, 'pass')}/{len(verdicts.rows)}"
            f" ({count(s, 'FAIL')} failed, {count(s, 'n/a')} n/a, {count(s, 'skip')} skipped)"
            for s in servers
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    names = [s.name for s in SUBTESTS]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qa", type=Path, required=True, help="Triton's qa folder")
    parser.add_argument(
        "subtests", nargs="*", default=[], help=f"subtests to run (default all: {', '.join(names)})"
    )
    parser.add_argument("--servers", default="triton,mock", help="triton, mock or both")
    parser.add_argument("--client", choices=("nvidia", "ours"), default="nvidia")
    parser.add_argument(
        "--mock-arg", action="append", default=[], help="extra flag for mock_server (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds per client run")
    parser.add_argument("--keep", type=Path, help="keep repositories and logs in this folder")
    parser.add_argument("--details", action="store_true", help="print why each case failed")
    args = parser.parse_args(argv)

    unknown = sorted(set(args.subtests) - set(names))
    if unknown:
        parser.error(f"unknown subtests {unknown}; known: {', '.join(names)}")
    servers = [s for s in args.servers.split(",") if s]
    chosen = [s for s in SUBTESTS if not args.subtests or s.name in args.subtests]
    if args.client == "nvidia":
        nvidia = peers.nvidia_client_python()
        if nvidia is None:
            raise SystemExit("NVIDIA's client peer missing: run `bash scripts/peers.sh`")
        client_python = str(nvidia)
    else:
        client_python = sys.executable
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="qa-parity-"))
    verdicts = Verdicts()
    try:
        for sub in chosen:
            for server in servers:
                if server == "mock" and args.mock_arg:
                    sub = Subtest(
                        sub.name,
                        sub.models,
                        sub.runs,
                        sub.log_checks,
                        (*sub.server_args, *args.mock_arg),
                    )
                print(f"... {sub.name} on {server}", file=sys.stderr, flush=True)
                run_subtest(
                    sub,
                    server,
                    args.qa.resolve(),
                    scratch,
                    client_python,
                    sys.executable,
                    verdicts,
                    args.timeout,
                )
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print_table(verdicts, servers, args.details)
    # A script (CI, a shell loop) can tell a run with a failure from a clean one.
    failed = any(status == "FAIL" for row in verdicts.rows.values() for status, _ in row.values())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
