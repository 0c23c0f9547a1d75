"""Unregistering a shared-memory region while an inference request uses it (Triton #7743).

Every test runs a real ``python -m mock_server`` process on loopback ports, serving the
``slow`` model (an identity that sleeps ``DELAY_MS``; one instance, so requests run one after
another), and drives it with this project's clients.  A request is held in the server as
follows: a first request without shared memory occupies the model's only instance, and a
second one, with its input and output placed in shared memory, waits in the queue behind it
(the ``nv_inference_pending_request_count`` gauge says when it is queued, so its regions are
held by then; an attempt where the second one reached the model first is made again).  The
regions are unregistered while that second request waits.

What Triton 2.73 does is written in its server repository (the 2.73.0 branch point):
``UnregisterHelper`` of src/shared_memory_manager.cc:675-719 marks a region that a request
holds (``use_count() > 1``) ``awaiting_unregister_`` and answers success; the region stays in
the manager (status lists it, a register of its name is "already in manager",
src/shared_memory_manager.cc:352-367) until the request's release calls ``Unregister`` again
(src/http_server.h:294-315 for HTTP, released after the reply at src/http_server.cc:3946-3969;
src/grpc/infer_handler.h:1395-1419 for gRPC).  Triton 2.51 refuses to unregister a held region
(src/shared_memory_manager.cc:682-695 and :634-678 at v2.51.0).

Every test removes its regions and stops its server; every wait has a timeout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tests.test_cli import ROOT, serve
from tritonclient.utils import InferenceServerException

#: What the held request sends and gets back.
DATA = np.arange(16, dtype=np.int32)
NBYTES = DATA.nbytes
#: How long the first request keeps the model's instance busy, and the second one runs.
BLOCK_MS = 2500
HELD_MS = 100
#: Upper bound of every wait.
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    """One server process per profile, client shared memory allowed, serving ``slow``."""
    folders = {}
    for version in ("2.73", "2.51"):
        folders[version] = tmp_path_factory.mktemp(f"deferred_unregister_{version}")
        shutil.copytree(
            ROOT / "mock_server" / "models" / "slow", folders[version] / "repo" / "slow"
        )
    with (
        serve(folders["2.73"], "--allow-client-shm", "true", "--triton-compat", "2.73") as new,
        serve(folders["2.51"], "--allow-client-shm", "true", "--triton-compat", "2.51") as old,
    ):
        yield {"2.73": new, "2.51": old}


class Regions:
    """The client's side of three system regions: the held request's input (``in``) and
    output (``out``), and one no request uses (``idle``); unique keys, removed by
    :meth:`destroy`."""

    NAMES = ("in", "out", "idle")

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:10]
        self.keys = {name: f"/deferred_{name}_{tag}" for name in self.NAMES}
        self.handles = {
            name: shm.create_shared_memory_region(name, key, NBYTES)
            for name, key in self.keys.items()
        }
        shm.set_shared_memory_region(self.handles["in"], [DATA])

    def register(self, client: Any) -> None:
        for name, key in self.keys.items():
            client.register_system_shared_memory(name, key, NBYTES)

    def output(self) -> list[int]:
        return shm.get_contents_as_numpy(self.handles["out"], np.int32, [16]).tolist()

    def destroy(self) -> None:
        for handle in self.handles.values():
            shm.destroy_shared_memory_region(handle)


def _client(info: dict[str, Any], protocol: str) -> Any:
    if protocol == "http":
        return httpclient.InferenceServerClient(f"127.0.0.1:{info['http']}", concurrency=4)
    return grpcclient.InferenceServerClient(f"127.0.0.1:{info['grpc']}")


class _Sent:
    """A request sent with ``async_infer``: call it to wait for its result and error;
    :meth:`done` says whether they are in without waiting."""

    def __init__(self) -> None:
        self._answered = threading.Event()
        self._answer: tuple[Any, InferenceServerException | None] = (None, None)

    def answer(self, result: Any, error: InferenceServerException | None) -> None:
        self._answer = (result, error)
        self._answered.set()

    def done(self) -> bool:
        return self._answered.is_set()

    def __call__(self) -> tuple[Any, InferenceServerException | None]:
        if not self._answered.wait(TIMEOUT_S):
            raise AssertionError(f"no answer in {TIMEOUT_S} s")
        return self._answer


def _infer(client: Any, protocol: str, delay_ms: int, shared: bool) -> _Sent:
    """Send one request to ``slow`` (``shared``: its input from region ``in`` and its output
    to region ``out``)."""
    module = httpclient if protocol == "http" else grpcclient
    tensor = module.InferInput("INPUT0", [16], "INT32")
    delay = module.InferInput("DELAY_MS", [1], "UINT32")
    delay.set_data_from_numpy(np.array([delay_ms], dtype=np.uint32))
    output = module.InferRequestedOutput("OUTPUT0")
    if shared:
        tensor.set_shared_memory("in", NBYTES)
        output.set_shared_memory("out", NBYTES)
    else:
        tensor.set_data_from_numpy(DATA)
    sent = _Sent()
    if protocol == "http":
        pending = client.async_infer("slow", [tensor, delay], outputs=[output])

        def wait_http() -> None:
            try:
                sent.answer(pending.get_result(timeout=TIMEOUT_S), None)
            except InferenceServerException as exc:
                sent.answer(None, exc)

        threading.Thread(target=wait_http, daemon=True).start()
    else:
        client.async_infer("slow", [tensor, delay], sent.answer, outputs=[output])
    return sent


def _wait_until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


def _queued(info: dict[str, Any]) -> float:
    """``nv_inference_pending_request_count`` of ``slow``."""
    url = f"http://127.0.0.1:{info['metrics']}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    for line in text.splitlines():
        if line.startswith('nv_inference_pending_request_count{model="slow"'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _listed(client: Any, protocol: str) -> list[str]:
    status = client.get_system_shared_memory_status()
    regions = status if protocol == "http" else status.regions.values()
    return sorted(r["name"] if protocol == "http" else r.name for r in regions)


def _family(pid: int) -> list[int]:
    """``pid`` and its descendants (the model's stub processes)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    family = [pid]
    for each in family:
        family.extend(child for child, parent in parents.items() if parent == each)
    return family


def _in_use_by_server(info: dict[str, Any], key: str) -> bool:
    """Whether the server or a stub of it maps the object ``key`` or has it open."""
    path = "/dev/shm" + key
    for pid in _family(info["process"].pid):
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8") as maps:
                if any(line.rstrip().endswith(path) for line in maps):
                    return True
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(path):
                    return True
        except OSError:
            continue  # a process that ended meanwhile
    return False


def _hold(info: dict[str, Any], client: Any, protocol: str) -> tuple[_Sent, _Sent]:
    """Occupy the model, then queue the request whose tensors are in shared memory; return
    both once the second one is queued (its regions held).

    The two requests travel on different connections (HTTP) or handler threads (gRPC), so the
    second may reach the model first on a loaded machine: it then runs at once, and what is
    queued is the first.  An attempt where the request in shared memory is done within a few
    of its run times is waited out and made again."""
    for _ in range(3):
        blocker = _infer(client, protocol, BLOCK_MS, shared=False)
        time.sleep(0.2)  # what the first request needs to reach the model on an idle machine
        held = _infer(client, protocol, HELD_MS, shared=True)
        _wait_until(lambda: _queued(info) >= 1, "a request is queued behind the other")
        time.sleep(3 * HELD_MS / 1000)
        if not held.done():
            return blocker, held
        blocker()
    raise AssertionError("the request in shared memory ran before the one meant to hold it")


def _wait_until_let_go(info: dict[str, Any], regions: Regions) -> None:
    """Wait until neither the server nor its stubs map the held request's regions."""
    for name in ("in", "out"):
        _wait_until(
            lambda name=name: not _in_use_by_server(info, regions.keys[name]),
            f"the server lets go of region {name!r}",
        )


@contextlib.contextmanager
def _held_request(info: dict[str, Any], protocol: str) -> Iterator[tuple[Any, Regions, Any, Any]]:
    """Register the regions and hold a request in the server (:func:`_hold`); yield the
    client, the regions and the waits of both requests; unregister and remove every region
    and close the client afterwards."""
    client = _client(info, protocol)
    regions = Regions()
    try:
        regions.register(client)
        yield (client, regions, *_hold(info, client, protocol))
    finally:
        try:
            client.unregister_system_shared_memory()
        finally:
            client.close()
            regions.destroy()


@pytest.mark.parametrize("everything", [False, True], ids=["by-name", "all"])
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unregister_during_inference_is_deferred(
    servers: dict[str, dict[str, Any]], protocol: str, everything: bool
) -> None:
    """Triton 2.73: unregistering the regions of a request in flight succeeds
    (src/shared_memory_manager.cc:682-688, ``awaiting_unregister_``); meanwhile status lists
    them (:534-616 does not look at the mark) and registering their names again is "already
    in manager" (:362-367); the request's result is right; once it is done the regions are
    gone without another unregister (src/http_server.h:294-315,
    src/grpc/infer_handler.h:1395-1419), and no mapping or descriptor of them is left in the
    server or its stubs.  A region no request holds goes at once (``UnregisterAll``,
    :628-673)."""
    info = servers["2.73"]
    with _held_request(info, protocol) as (client, regions, blocker, held):
        if everything:
            client.unregister_system_shared_memory()
            assert _listed(client, protocol) == ["in", "out"]
        else:
            for name in ("in", "out"):
                client.unregister_system_shared_memory(name)
            assert _listed(client, protocol) == ["idle", "in", "out"]
        with pytest.raises(InferenceServerException) as again:
            client.register_system_shared_memory("in", regions.keys["in"], NBYTES)
        assert "shared memory region 'in' already in manager" in again.value.message()
        assert blocker()[1] is None
        result, error = held()
        assert error is None, error
        assert result.as_numpy("OUTPUT0") is None  # the output went to shared memory
        assert regions.output() == DATA.tolist()
        _wait_until(
            lambda: _listed(client, protocol) == ([] if everything else ["idle"]),
            "the held regions are released",
        )
        _wait_until_let_go(info, regions)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_request_after_a_deferred_unregister_keeps_the_regions(
    servers: dict[str, dict[str, Any]], protocol: str
) -> None:
    """Triton 2.73: a region marked ``awaiting_unregister_`` is still found by a request sent
    after the unregister (``GetMemoryInfo``, src/shared_memory_manager.cc:446-509, does not
    look at the mark), which holds it in turn: the first request's release finds it in use
    (:682-688) and only the last one releases it (src/http_server.h:294-315) -- the QA case
    ``test_unregister_shm_during_inference_multiple_req_*`` of
    qa/L0_shared_memory/shared_memory_test.py:739-770 and :822-868."""
    info = servers["2.73"]
    with _held_request(info, protocol) as (client, regions, blocker, held):
        client.unregister_system_shared_memory()
        later = _infer(client, protocol, BLOCK_MS, shared=True)
        _wait_until(lambda: _queued(info) >= 2, "the later request is queued")
        assert blocker()[1] is None and held()[1] is None
        assert _listed(client, protocol) == ["in", "out"]  # the later request holds them
        assert later()[1] is None
        assert regions.output() == DATA.tolist()
        _wait_until(lambda: _listed(client, protocol) == [], "the regions are released")
        _wait_until_let_go(info, regions)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unregister_during_inference_refused_under_2_51(
    servers: dict[str, dict[str, Any]], protocol: str
) -> None:
    """Triton 2.51 (src/shared_memory_manager.cc at v2.51.0): unregistering a region a request
    holds is INTERNAL "Cannot unregister shared memory region 'in', it is currently in use."
    (:682-695); unregistering all of them unregisters the idle one and fails naming the held
    ones, "Failed to unregister the following system shared memory regions: in ,out ,"
    (:634-678).  The request completes and the regions stay registered until unregistered
    after it."""
    info = servers["2.51"]
    with _held_request(info, protocol) as (client, regions, blocker, held):
        with pytest.raises(InferenceServerException) as refused:
            client.unregister_system_shared_memory("in")
        assert refused.value.message() == (
            "Cannot unregister shared memory region 'in', it is currently in use."
        )
        with pytest.raises(InferenceServerException) as refused:
            client.unregister_system_shared_memory()
        assert refused.value.message() == (
            "Failed to unregister the following system shared memory regions: in ,out ,"
        )
        assert _listed(client, protocol) == ["in", "out"]
        assert blocker()[1] is None
        assert held()[1] is None
        assert regions.output() == DATA.tolist()
        time.sleep(0.2)  # no release is coming: give a wrong one the time to show
        assert _listed(client, protocol) == ["in", "out"]
        client.unregister_system_shared_memory()
        assert _listed(client, protocol) == []
        _wait_until_let_go(info, regions)


def _refusals(info: dict[str, Any], protocol: str) -> list[object]:
    """What a client sees when it unregisters a held region, then all regions, while a
    request is held; then the request's outcome and the regions listed after it."""
    seen: list[object] = []
    with _held_request(info, protocol) as (client, regions, blocker, held):
        for args in (("in",), ()):
            try:
                client.unregister_system_shared_memory(*args)
                seen.append("unregistered")
            except InferenceServerException as exc:
                seen.append((exc.status(), exc.message()))
        seen.append(_listed(client, protocol))
        seen.extend((blocker()[1], held()[1], regions.output()))
        seen.append(_listed(client, protocol))
    return seen


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_2_51_profile_answers_as_the_real_triton_2_51(tmp_path: Path, protocol: str) -> None:
    """The real Triton 2.51 (the peer of :mod:`tests.conformance`) and mock_server under the
    2.51 profile answer the same, status included, when a held region is unregistered
    (src/shared_memory_manager.cc:682-695 and :634-678 at v2.51.0)."""
    from tests.conformance.pair import run_pair

    with run_pair(tmp_path, models=["slow"]) as pair:
        seen = {
            endpoint.name: _refusals(
                {
                    "http": endpoint.http.rsplit(":", 1)[1],
                    "grpc": endpoint.grpc.rsplit(":", 1)[1],
                    "metrics": endpoint.metrics.rsplit(":", 1)[1],
                },
                protocol,
            )
            for endpoint in pair
        }
    assert seen["mock"] == seen["triton"]
    assert seen["mock"][0][1] == (
        "Cannot unregister shared memory region 'in', it is currently in use."
    )
