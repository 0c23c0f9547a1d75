"""The server's side of a stub process: a model instance that runs in a process of its own.

:class:`ProcessModelInstance` is what the core drives (``execute``, ``finalize``,
``compute_window``) for a model instance isolated in a stub (see
:mod:`mock_server.python_backend._stub`).  It starts the stub, sends it batches and routes
what comes back: responses to their requests' callbacks, BLS requests and model control to the
server's :class:`~mock_server.python_backend.runtime.BackendRuntime`, custom-metric operations
to the server's registry (run as the instance, so that Triton's ownership rules hold), log
records to the server's loggers.

When the stub dies (a crash, ``os._exit``, a signal), its reader sees the channel close.  As in
Triton 2.51, the model stays READY, its requests in flight and every later one fail with
``Stub process '<instance>' is not healthy.``, and other models keep serving.  Finalizing the
instance ends the process (killing it if it does not end on its own) and removes every
shared-memory object it or the server made for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shm.copy import CpuQuota, own_cpu_quota, usable_cores
from shm.copy import affinity as shm_affinity

from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest
from . import _context, _ipc, _launcher, _transfer, metrics
from . import _messages as msg
from ._inprocess import READY_TIMEOUT_S, LocalModel
from .runtime import BackendRuntime

__all__ = ["ProcessModelInstance", "StubSpec", "auto_complete_in_stub"]

log = logging.getLogger("mock_server.python_backend")

#: How long a stub may take to start and say hello (Triton's ``stub-timeout-seconds``).
STARTUP_TIMEOUT_S = 30.0
#: How long a model's ``initialize()`` may run before the server says so (and again after each
#: such period): it is never cut short (it may load a big model, and Triton waits for it as
#: long as the stub lives), but a stuck one is then visible, with the stub's stacks.
INITIALIZE_REPORT_S = 60.0
#: How long ``finalize`` may run before the stub is killed.
FINALIZE_TIMEOUT_S = 30.0
#: How long a frontend's loop with nothing else to do polls for the end of a batch it just
#: sent, instead of sleeping until the stub's write wakes it (see ProcessModelInstance.settle);
#: only while the instance's last batch was quick (QUICK_BATCH_NS).
SETTLE_NS = 400_000
#: A batch is quick when the stub worked on it for at most this long (``Executed.busy_ns``,
#: its wake-up and the channel left out), which leaves the rest of SETTLE_NS for the channel.
#: Judged on the stub's own time, not on the time from the send to the end: that time holds
#: the two wake-ups the poll saves, so a machine where it once ran past the limit would
#: never poll again (a 2-core VM: 532 us per hop without polling, 411 us with it).
QUICK_BATCH_NS = 250_000
#: Whether this process may run on more than one CPU (its affinity and its control group's
#: CPU quota, see shm.copy.usable_cores): on one, the stub cannot answer while the loop polls
#: (and waking a thread costs little there), so the loop never polls; nor is a stub woken
#: ahead of a request.
_SEVERAL_CPUS = usable_cores() > 1

#: A CPU counts as idle lately when at least this share of the machine's CPU time was idle.
IDLE_SHARE = 0.25
#: Under a CPU quota, the CPUs count as idle lately only while the group used at least this
#: many CPUs less than its quota: the poll keeps up to two threads (the loop and the stub)
#: running for part of each request.  Measured under a v1 quota of 1.05 CPUs on the 2-core
#: EPYC VM, HTTP c=1: without the poll the group used 0.72 CPUs and was never throttled; with
#: it 0.90-0.96, throttled in 38-46 of 56 periods (189-239 ms in 5 s); at a quota of 1.2 CPUs
#: never.
QUOTA_HEADROOM_CPUS = 0.5


class IdleCpus:
    """Whether the CPUs this process may run on have had idle time lately (``/proc/stat``,
    re-read at most every ``period_ns``): polling for a stub's reply (ProcessModelInstance.settle)
    spends CPU time that would otherwise be idle, and saves the wake-up of a halted CPU; on a
    machine with no idle CPU there is nothing to save and the poll takes time from other work
    (2 busy loops beside the server on 2 CPUs: c=1 HTTP 798-818 -> 714-760 req/s with the poll).

    A process whose affinity is a part of the machine's CPUs (``taskset``, a container's
    cpuset) counts the idle time of its own CPUs only (the file's per-CPU lines): a host's
    idle CPUs elsewhere are no use to it.  Otherwise the machine's total line is read.

    A process under a CPU quota (a container's ``--cpus``, a Kubernetes CPU limit) may find
    the host's CPUs idle and its own quota spent: polling then has its group throttled, every
    thread of it stopped until the next period.  There the CPUs also count as idle only while
    the group (the one whose quota binds, :func:`shm.copy.cpu_quota`) used at least
    :data:`QUOTA_HEADROOM_CPUS` less than its quota since the previous reading.

    Where ``/proc/stat`` cannot be read, the CPUs count as idle (the quota still applies)."""

    def __init__(
        self,
        path: str = "/proc/stat",
        period_ns: int = 500_000_000,
        affinity: Callable[[], set[int]] | None = None,
        quota: Callable[[], CpuQuota | None] | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._path = path
        self._period_ns = period_ns
        self._affinity = affinity or shm_affinity
        self._quota = quota or own_cpu_quota
        self._clock = clock
        self._read_at = -period_ns
        self._last: tuple[int, int] | None = None
        self._cpus_idle = True
        self._usage: tuple[int, int] | None = None  # (group usage, when), both in ns
        self._headroom = True

    def recent(self) -> bool:
        """Whether at least :data:`IDLE_SHARE` of the CPU time since the previous reading
        (at least ``period_ns`` ago) was idle, and under a quota the group left at least
        :data:`QUOTA_HEADROOM_CPUS` of it unused."""
        now = self._clock()
        if now - self._read_at >= self._period_ns:
            self._read_at = now
            self._cpus_idle = self._read_cpus()
            self._headroom = self._read_quota(now)
        return self._cpus_idle and self._headroom

    def _read_cpus(self) -> bool:
        try:
            with open(self._path, "rb") as f:
                sample = self._sample(f.read().splitlines())
        except (OSError, ValueError, IndexError):
            return True
        last, self._last = self._last, sample
        if last is not None and sample[0] > last[0]:
            return (sample[1] - last[1]) >= IDLE_SHARE * (sample[0] - last[0])
        return self._cpus_idle

    def _read_quota(self, now: int) -> bool:
        quota = self._quota()
        usage = None if quota is None else quota.usage_ns()
        if quota is None or usage is None:
            return True
        last, self._usage = self._usage, (usage, now)
        if last is not None and now > last[1]:
            used_cpus = (usage - last[0]) / (now - last[1])
            return quota.cpus - used_cpus >= QUOTA_HEADROOM_CPUS
        return self._headroom

    def _sample(self, lines: list[bytes]) -> tuple[int, int]:
        """(all time, idle time) of the CPUs counted, summed over their lines."""
        total = lines[0]  # "cpu  ...": the machine's
        per_cpu: dict[int, bytes] = {}
        for line in lines[1:]:
            name, _, rest = line.partition(b" ")
            if not name.startswith(b"cpu"):
                break  # the per-CPU lines come first, one after another
            per_cpu[int(name[3:])] = rest
        mine = self._affinity()
        chosen = (
            [per_cpu[cpu] for cpu in mine]
            if mine and mine < per_cpu.keys()
            else [total.partition(b" ")[2]]
        )
        all_time = idle_time = 0
        for line in chosen:
            # user nice system idle iowait irq softirq steal (guest time is in user's)
            fields = [int(v) for v in line.split()[:8]]
            all_time += sum(fields)
            idle_time += fields[3] + fields[4]  # idle and iowait are the CPUs' idle time
        return all_time, idle_time


_idle_cpus = IdleCpus()
_prefix_counter = itertools.count(1)


def _new_prefix() -> str:
    # Unique per stub: a dead one's leftovers are found by this prefix (see _ipc.sweep).
    return f"mockpb_{os.getpid()}_{next(_prefix_counter)}_{uuid.uuid4().hex[:6]}_"


@dataclass
class StubSpec:
    """How to start a stub.

    Attributes
    ----------
    python : str or None
        The interpreter (a model's ``EXECUTION_ENV_PATH``); None: fork the server's own.
    env : dict or None
        The environment for a fresh interpreter (None: the server's).
    """

    python: str | None = None
    env: dict[str, str] | None = None


@dataclass
class _Batch:
    #: Set when the batch ends, for the thread that waits for it (``execute``).
    done: threading.Event | None = None
    again: list[int] = field(default_factory=list)
    window: tuple[int, int] | None = None
    #: execute_async's callback, called once when the batch ends.
    on_done: Callable[[], None] | None = None
    #: How long the stub worked on it (Executed.busy_ns), and whether it has ended.
    busy_ns: int = 0
    ended: bool = False

    def end(self) -> None:
        """Mark the batch ended: wake the thread waiting for it, or call its callback."""
        self.ended = True
        if self.done is not None:
            self.done.set()
        if self.on_done is not None:
            self.on_done()


def _wait_initialized(stub: _StubConnection) -> Any:
    """The stub's ``Initialized`` reply, however long ``initialize()`` takes; every
    :data:`INITIALIZE_REPORT_S` without it, a warning, and the stub's threads' stacks on its
    stderr (its ``SIGUSR1`` handler, see ``_stub.main``), so that a stuck one shows where.

    Raises
    ------
    ServerError
        When the stub dies (or reports the failure of ``initialize()``) first.
    """
    waited = 0.0
    while True:
        try:
            return stub.wait_reply(msg.Initialized, INITIALIZE_REPORT_S)
        except ServerError:
            if stub.dead.is_set() or msg.InitFailed in stub.replies:
                raise
        waited += INITIALIZE_REPORT_S
        log.warning(
            "initialize() of model instance '%s' has not returned after %.0f s; the stacks "
            "of its stub process (pid %d) follow on stderr",
            stub.label,
            waited,
            stub.process.pid,
        )
        with contextlib.suppress(OSError):
            os.kill(stub.process.pid, signal.SIGUSR1)


class _StubConnection:
    """A started stub process and its channel; the reader thread dispatches its messages."""

    def __init__(
        self,
        label: str,
        spec: StubSpec,
        start: dict[str, Any],
        regions: _transfer.RegistryRegions | None = None,
    ) -> None:
        self.label = label
        self.prefix = _new_prefix()
        # Tensors cross as references to the client's regions or to blocks of the two pools
        # (this side's names end "p", the stub's "s"; both start with the prefix, for sweep).
        self.regions = regions
        self.link = _transfer.Link("p", self.prefix + "p", "s", self.prefix + "s", regions)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if spec.python is None:
                self.process = _launcher.spawn_forked(child.fileno())
            else:
                self.process = _launcher.spawn_interpreter(spec.python, child.fileno(), spec.env)
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.channel = _ipc.Channel(parent.detach())
        self.channel.link = self.link
        self.dead = threading.Event()
        #: What to do with each kind of message; the others are replies someone waits for.
        self.handlers: dict[type[Any], Callable[[Any], None]] = {
            msg.Release: lambda message: self.link.on_release(message.released, message.forgotten),
            msg.Fatal: self._on_fatal,
        }
        #: Why the stub ended, when it said so (its traceback) or the channel broke.
        self.fatal: str | None = None
        self.replies: dict[Any, Any] = {}
        self.on_death: Callable[[], None] | None = None
        #: The asyncio loop reading the channel now, if any (see _LoopReading).
        self.loop_reading: _LoopReading | None = None
        #: The asyncio loops whose reader is registered on the channel (one, but for a moment
        #: two when requests come from two loops).
        self.reader_loops: set[asyncio.AbstractEventLoop] = set()
        self.pump = _ipc.Pump(self.channel, self._dispatch, self._on_eof, f"stub:{label}")
        start = dict(start, prefix=self.prefix + "s", peer_prefix=self.prefix + "p")
        self.send(msg.Start(start))
        self.pump.start()
        self.wait_reply(msg.Started, STARTUP_TIMEOUT_S)

    def _dispatch(self, frame: tuple[Any, ...]) -> None:
        message = msg.decode(frame)
        kind = type(message)
        handler = self.handlers.get(kind)
        if handler is None:
            # A readiness answer is waited for by its call.
            key = (msg.Ready, message.call_id) if isinstance(message, msg.Ready) else kind
            self.replies[key] = message
            return
        try:
            handler(message)
        except Exception:
            log.exception("handling %r from the stub of '%s' failed", msg.tag_of(kind), self.label)

    def _on_eof(self) -> None:
        failure = self.pump.failure
        if failure is not None:
            # The stream is out of step: the stub cannot be talked to any more.
            self.fatal = self.fatal or (
                f"the server could not read its message: {type(failure).__name__}: {failure}"
            )
            self.process.kill()
        self.dead.set()
        if self.on_death is not None:
            self.on_death()

    def _on_fatal(self, message: msg.Fatal) -> None:
        """The stub's last words: the traceback of the exception that ends it."""
        self.fatal = str(message.text).rstrip()

    def wait_reply(self, key: Any, timeout: float | None) -> Any:
        """The stub's next message of type ``key`` (``(Ready, call_id)`` for a readiness
        answer); ServerError when it dies or ``timeout`` passes."""
        replies = self.replies
        if not self.pump.pump_until(lambda: key in replies, timeout):
            if self.dead.is_set():
                raise ServerError.internal(self.death_text())
            what = f"ready:{key[1]}" if isinstance(key, tuple) else msg.tag_of(key)
            raise ServerError.internal(
                f"timed out waiting for the stub process of '{self.label}' ({what})"
            )
        return replies.pop(key)

    def death_text(self) -> str:
        """How the stub ended, with why when known: its exception and traceback, the signal
        that killed it, or the message the server could not read."""
        code = self.process.exit_code(1.0)
        how = "ended" if code is None else f"exited with status {code}"
        if code is not None and code < 0:
            how = f"was killed by signal {-code} ({_signal_name(-code)})"
        text = f"the stub process of '{self.label}' (pid {self.process.pid}) {how}"
        if self.fatal:
            text += f": {self.fatal}"
        return text

    def send(self, message: msg.Message) -> None:
        self.channel.send(msg.encode(message))

    def close(self, timeout: float = 5.0) -> None:
        """End the process (killed if it does not end within ``timeout``), close the channel
        and remove the shared-memory objects it left."""
        if self.process.exit_code(timeout) is None:
            self.process.kill()
            self.process.exit_code(timeout)
        self.channel.close()
        self.pump.join(timeout)
        self.process.release()
        self.link.close()
        _ipc.sweep(self.prefix)

    def forget_region(self, token: int) -> None:
        """Tell the stub that a client region it may have mapped was unregistered."""
        regions = self.regions
        if regions is None or token not in regions.seen or self.dead.is_set():
            return
        regions.seen.discard(token)
        with contextlib.suppress(OSError):
            self.send(msg.ForgetRegion(token))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _start_payload(
    what: str, model_name: str, model_dir: Path, version: int, config: Any, filename: str
) -> dict[str, Any]:
    return {
        "what": what,
        "model_name": model_name,
        "model_dir": str(model_dir),
        "version": version,
        "config_json": config,
        "filename": filename,
        "log_level": logging.getLogger().getEffectiveLevel(),
    }


def auto_complete_in_stub(
    model_dir: Path, version: int, config_json: dict[str, Any], filename: str, spec: StubSpec
) -> dict[str, Any]:
    """Run the model's ``auto_complete_config`` in a stub of its own (as Triton does) and
    return the completed configuration.

    Raises
    ------
    ServerError
        As :meth:`~.backend.PythonBackendModel.auto_complete`, or when the stub dies.
    """
    name = str(config_json.get("name") or Path(model_dir).name)
    stub = _StubConnection(
        f"{name} (auto-complete)",
        spec,
        _start_payload("auto_complete", name, model_dir, version, config_json, filename),
    )
    stub.handlers[msg.Log] = _relay_log
    stub.handlers[msg.Print] = _relay_print
    try:
        reply = stub.wait_reply(msg.AutoCompleted, None)
    except ServerError as exc:
        raise ServerError.internal(
            f"auto-complete-config of model '{name}' failed: {exc.message}"
        ) from None
    finally:
        stub.close()
    status, value = reply.result
    if status == "error":
        raise ServerError(ErrorKind[value[0]], value[1])
    assert isinstance(value, dict)
    return value


class StubException(Exception):
    """An exception raised in a stub process, as a log record forwarded from there carries it
    (its text is the original's ``<Type>: <message>``; the traceback is the record's text)."""


def _relay_log(message: msg.Log) -> None:
    """Log a record the stub forwarded, as if model code had logged it here."""
    (name, level, text, path, line, function, exc_text, exc, model_name, model_version) = message
    logger = logging.getLogger(name)
    if not logger.isEnabledFor(level):
        return
    extra = None
    if model_name is not None:
        extra = {"model_name": model_name, "model_version": model_version}
    exc_info = None
    if exc is not None:
        data, type_name, exc_message = exc
        error: BaseException = StubException(f"{type_name}: {exc_message}")
        if data is not None:
            with contextlib.suppress(Exception):  # the model's own, when it can be rebuilt here
                error = pickle.loads(data)
        exc_info = (type(error), error, None)
    record = logger.makeRecord(name, level, path, line, text, (), exc_info, function, extra)
    record.exc_text = exc_text
    logger.handle(record)


def _relay_print(message: msg.Print) -> None:
    """Write what model code printed in its stub to this process's stream of that name."""
    stream = sys.stdout if message.stream == "stdout" else sys.stderr
    try:
        stream.write(message.text)
        stream.flush()
    except (OSError, ValueError):  # a closed stream: nowhere to print
        pass


class ProcessModelInstance:
    """One model instance in a stub process, driven by the core like an in-process instance.

    Created by :meth:`start`.
    """

    def __init__(
        self,
        model_name: str,
        version: int,
        instance_name: str,
        decoupled: bool,
        runtime: BackendRuntime,
        context: _context.ModelContext,
    ) -> None:
        self._model_name = model_name
        self._version = version
        self.instance_name = instance_name
        self._decoupled = decoupled
        self._runtime = runtime
        self._context = context
        self._lock = threading.Lock()
        self._handles = itertools.count(1)
        self._requests: dict[int, InferRequest] = {}
        self._batches: dict[int, _Batch] = {}
        self._bls: dict[int, InferRequest] = {}
        self._metric_objects: dict[int, Any] = {}
        self._metric_ids = itertools.count(1)
        self._compute: tuple[int, int] | None = None
        #: How long the stub worked on the last batch (Executed.busy_ns), and the batch the
        #: loop of a thread sent last (see settle).
        self._busy_ns = 0
        self._settling: tuple[int, _Batch] | None = None
        self._finalized = False
        self._stub: _StubConnection | None = None
        self._unwatch: Callable[[], None] | None = None
        self._ready_hook = False  # the model has its own is_model_ready()

    # -- start -----------------------------------------------------------------------------------
    @classmethod
    def start(
        cls, model: LocalModel, instance_name: str, kind: str, device_id: int, spec: StubSpec
    ) -> ProcessModelInstance:
        """Start the stub, import ``model`` there and run its ``initialize``.

        Raises
        ------
        ServerError
            As :meth:`~.backend.PythonBackendModel.create_instance`, or when the stub cannot
            start or dies while initializing.
        """
        name, version, runtime = model.model_name, model.version, model.runtime
        context = _context.ModelContext(
            name, version, instance_name, runtime, model_dir=str(model.path.parent)
        )
        instance = cls(name, version, instance_name, model.decoupled, runtime, context)
        payload = _start_payload(
            "instance", name, model.model_dir, version, model.config_json, model.filename
        )
        payload.update(instance_name=instance_name, kind=kind, device_id=device_id)
        registry = getattr(runtime, "shared_regions", None)
        regions = None if registry is None else _transfer.RegistryRegions(registry)
        stub = _StubConnection(instance_name, spec, payload, regions)
        instance._stub = stub
        if registry is not None:
            instance._unwatch = registry.watch(stub.forget_region)
        stub.handlers.update(
            {
                msg.Response: instance._on_response,
                msg.Executed: instance._on_executed,
                msg.Bls: instance._on_bls,
                msg.BlsCancel: instance._on_bls_cancel,
                msg.MetricRelease: instance._on_metric_release,
                msg.Log: _relay_log,
                msg.Print: _relay_print,
            }
        )
        stub.handlers.update((call, instance._on_call) for call in msg.CALLS)
        stub.on_death = instance._on_death
        try:
            # No time limit: initialize() may load big models; a dead stub ends the wait.
            reply = _wait_initialized(stub)
            instance._ready_hook = bool(reply.has_ready_hook)
        except ServerError:
            failed = stub.replies.pop(msg.InitFailed, None)
            instance._release()
            if failed is not None:
                raise ServerError(ErrorKind[failed.error[0]], failed.error[1]) from None
            raise
        return instance

    # -- what the core calls ---------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._model_name

    def compute_window(self) -> tuple[int, int] | None:
        """The ``time.monotonic_ns()`` readings around the model's ``execute`` in the last
        batch (the stub reads the same system-wide monotonic clock)."""
        return self._compute

    def ready(self, timeout_s: float | None = None) -> bool:
        """Whether the instance is ready, as current Triton's Python backend checks it when
        asked for the model's readiness: the stub process is alive, and the model's own
        ``is_model_ready()`` (if any) says True within the time limit."""
        stub = self._stub
        if stub is None or self._finalized:
            return False
        if stub.dead.is_set():
            # Current Triton's log line for this answer (its instance names end in _0_0).
            log.error(
                "Model '%s' version %d is not ready: %s",
                self._model_name,
                self._version,
                self._unhealthy().message,
            )
            return False
        if not self._ready_hook:
            return True
        with self._lock:
            call_id = next(self._handles)
        try:
            stub.send(msg.IsReady(call_id))
            reply = stub.wait_reply(
                (msg.Ready, call_id), READY_TIMEOUT_S if timeout_s is None else timeout_s
            )
        except (OSError, ServerError):
            stub.replies.pop((msg.Ready, call_id), None)
            return False
        return bool(reply.ready)

    def _unhealthy(self) -> ServerError:
        return ServerError.internal(f"Stub process '{self.instance_name}' is not healthy.")

    def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
        """Run one batch in the stub and wait for its ``execute`` to return.

        Returns
        -------
        list of InferRequest
            The requests the model asked to reschedule.
        """
        stub = self._stub
        ended = threading.Event()
        batch = _Batch(done=ended)
        # This thread reads the stub's messages until its batch is done: no wake-up of another
        # thread on the way (see _ipc.Pump); a dead stub ends the wait.
        with contextlib.ExitStack() as reading:
            if stub is not None:
                reading.enter_context(stub.pump.expecting())
            if not self._send_batch(requests, batch):
                return []
            assert stub is not None
            stub.pump.pump_until(ended.is_set)
        ended.wait()
        return self._ended(batch)

    def execute_async(
        self, requests: list[InferRequest], done: Callable[[list[InferRequest]], None]
    ) -> None:
        """Send one batch to the stub and return; ``done(rescheduled)`` is called once the
        model's ``execute`` has returned (or the stub died), on the thread that reads the
        stub's reply (the channel's background reader, the running asyncio loop, or a thread
        waiting for the responses through the requests' ``assist``), or on this thread when
        the batch could not be sent."""
        # Called on an asyncio loop (a frontend's), the loop reads the stub's reply itself
        # instead of the channel's background thread, so the reply reaches the loop without
        # a hand-over between threads (each costs a wake-up and the GIL).
        stub = self._stub
        loop = _running_loop()
        reading = None
        self._settling = None
        if stub is not None and loop is not None:
            reading = _LoopReading(loop, stub)
            if not reading.start():  # closed under us: the background thread reads
                reading = None

        def ended() -> None:
            if reading is not None:
                reading.stop()
            done(self._ended(batch))

        batch = _Batch(on_done=ended)
        if reading is not None:
            self._settling = (threading.get_ident(), batch)
        elif stub is not None:
            # Off a loop, a thread that then blocks for a request's responses (the core's
            # infer_iter) reads the stub's reply itself (see core.types.Assist).
            pump = stub.pump
            for request in requests:
                if request.assist is not None:
                    request.assist.offer(pump.pump_until, pump.hold, pump.unhold)
        if not self._send_batch(requests, batch):
            if reading is not None:
                reading.stop()
            done([])

    def settle(self) -> None:
        """The caller's loop has nothing else to do (the core calls this right after
        :meth:`execute_async` when the request is the only one in flight for the model):
        read the end of the batch just sent on this thread, polling for it for at most
        :data:`SETTLE_NS`, when the instance's last batch was quick (:data:`QUICK_BATCH_NS`).

        A loop that goes back to sleep is woken by the stub's write: on a virtual machine,
        waking a halted CPU costs the writer and the woken thread 25-45 us each (two bare
        processes ping-pong in 5 us on one CPU, 55-65 us across two), and the loop then runs
        the reply's Python on a cold cache.  Polling costs CPU while the stub works instead,
        hence the bound and the conditions."""
        entry, self._settling = self._settling, None
        stub = self._stub
        if entry is None or stub is None or entry[0] != threading.get_ident():
            return
        if not self._may_poll():
            return
        batch = entry[1]
        stub.pump.spin(lambda: batch.ended, SETTLE_NS)

    def ahead(self) -> None:
        """A request for this idle instance is on its way (the core calls this when a frontend
        begins to read one, see ModelVersion.ahead): wake the stub now, so that it polls for
        the request instead of being woken by it, when the instance's last batch was quick
        (the conditions of :meth:`settle`).

        The stub's wake-up (25-45 us on the virtual machines measured, and its Python on a
        cold cache after it) then overlaps the frontend's decoding of the request; the write
        that wakes it costs this thread what the request's own write would have."""
        stub = self._stub
        if stub is None or self._finalized or stub.dead.is_set() or not self._may_poll():
            return
        with contextlib.suppress(OSError):  # a broken channel: the request's send reports it
            stub.send(msg.Ahead())

    def _may_poll(self) -> bool:
        """Whether a thread may poll for the stub (this side in :meth:`settle`, the stub after
        :meth:`ahead`): the stub's work on the instance's last batch took at most
        :data:`QUICK_BATCH_NS`, and the process has several CPUs that have had idle time
        lately."""
        return self._busy_ns <= QUICK_BATCH_NS and _SEVERAL_CPUS and _idle_cpus.recent()

    def _send_batch(self, requests: list[InferRequest], batch: _Batch) -> bool:
        """Register ``batch`` and send it to the stub; False (the requests failed) when the
        instance is gone or the stub cannot take it."""
        stub = self._stub
        if stub is None or self._finalized:
            error = ServerError.unavailable(f"model '{self._model_name}' is not loaded")
            for request in requests:
                _fail(request, self._model_name, self._version, error)
            return False
        with self._lock:
            batch_id = next(self._handles)
            packed = []
            for request in requests:
                handle = next(self._handles)
                self._requests[handle] = request
                packed.append((handle, request))
            self._batches[batch_id] = batch
        try:
            if stub.dead.is_set():
                raise BrokenPipeError
            stub.send(
                msg.Execute(batch_id, [(h, _ipc.pack_request(r, stub.link)) for h, r in packed])
            )
        except OSError:  # SharedMemoryError is an OSError too
            with self._lock:
                self._batches.pop(batch_id, None)
            self._fail_all([h for h, _ in packed], self._unhealthy())
            return False
        return True

    def _ended(self, batch: _Batch) -> list[InferRequest]:
        """The requests an ended batch asked to reschedule; notes its compute window."""
        self._compute = batch.window
        self._busy_ns = batch.busy_ns
        with self._lock:
            return [self._requests.pop(h) for h in batch.again if h in self._requests]

    def finalize(self) -> None:
        """Run the model's ``finalize`` in the stub, then end the stub and clean up after it."""
        if self._finalized:
            return
        self._finalized = True
        stub = self._stub
        if stub is None:
            return
        if not stub.dead.is_set():
            try:
                stub.send(msg.Finalize())
                stub.wait_reply(msg.Finalized, FINALIZE_TIMEOUT_S)
            except (OSError, ServerError) as exc:
                log.error("finalize of model instance '%s' failed: %s", self.instance_name, exc)
        self._release()

    def _release(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        stub = self._stub
        if stub is not None:
            stub.close()
        for request in list(self._bls.values()):
            request.cancel()
        # The families the instance still holds stay, as Triton keeps them (see metrics).
        metrics.release_owner(self._context)
        with self._lock:
            self._metric_objects.clear()

    # -- messages from the stub (reader thread) --------------------------------------------------
    def _deliver(self, handle: int, packed: tuple[Any, ...]) -> None:
        stub = self._stub
        assert stub is not None
        response = _ipc.unpack_response(packed, stub.link)
        with self._lock:
            # A request is done with its final response (a rescheduled one gets none: it is
            # dropped when its batch ends, and comes back under a new handle).
            request = self._requests.pop(handle, None) if response.final else None
            if request is None and not response.final:
                request = self._requests.get(handle)
        if request is None:
            return
        callback = request.response_callback
        if callback is not None:
            callback(response)

    def _on_response(self, message: msg.Response) -> None:
        self._deliver(message.handle, message.packed)

    def _on_executed(self, message: msg.Executed) -> None:
        batch_id, responses, again, window, error, busy_ns = message
        for handle, packed in responses:
            self._deliver(handle, packed)
        with self._lock:
            batch = self._batches.pop(batch_id, None)
        if batch is None:
            return
        if error is not None:
            log.error("model instance '%s': %s", self.instance_name, error[1])
        batch.again = list(again)
        batch.window = (window[0], window[1]) if window is not None else None
        batch.busy_ns = busy_ns
        batch.end()

    def _on_death(self) -> None:
        stub = self._stub
        if not self._finalized and stub is not None:
            log.error("%s; its requests fail from now on", stub.death_text())
        error = self._unhealthy()
        with self._lock:
            handles = list(self._requests)
            batches = list(self._batches.values())
            self._batches.clear()
        self._fail_all(handles, error)
        for batch in batches:
            batch.end()
        for request in list(self._bls.values()):
            request.cancel()

    def _fail_all(self, handles: list[int], error: ServerError) -> None:
        for handle in handles:
            with self._lock:
                request = self._requests.pop(handle, None)
            if request is not None:
                _fail(request, self._model_name, self._version, error)

    # -- calls the stub makes --------------------------------------------------------------------
    def _reply(self, call_id: int, ok: bool, value: Any) -> None:
        stub = self._stub
        if stub is None:
            return
        try:
            stub.send(msg.Reply(call_id, ok, value))
        except OSError:
            pass
        except Exception as exc:  # an unpicklable result or exception
            stub.send(msg.Reply(call_id, False, RuntimeError(f"{type(exc).__name__}: {exc}")))

    def _on_call(self, call: msg.Call) -> None:
        if isinstance(call, msg.IsModelReady | msg.LoadModel | msg.UnloadModel):
            # Model control may take long (or call back into this stub): off the reader.
            threading.Thread(target=self._answer, args=(call,), daemon=True).start()
            return
        self._answer(call)

    def _answer(self, call: msg.Call) -> None:
        try:
            with _context.entered(self._context, "execute"):
                value = self._run_call(call)
        except BaseException as exc:
            self._reply(call.call_id, False, exc)
            return
        self._reply(call.call_id, True, value)

    def _run_call(self, call: msg.Call) -> Any:
        runtime = self._runtime
        if isinstance(call, msg.IsCancelled):
            request = self._requests.get(call.handle)
            return request is not None and request.cancelled.is_set()
        if isinstance(call, msg.IsModelReady):
            return runtime.is_model_ready(call.model_name, call.model_version)
        if isinstance(call, msg.LoadModel):
            return runtime.load_model(call.model_name, call.config, call.files)
        if isinstance(call, msg.UnloadModel):
            return runtime.unload_model(call.model_name)
        if isinstance(call, msg.NewMetricFamily):
            family = metrics.MetricFamily(call.name, call.description, call.kind)
            return self._keep(family), family.name(), family.description()
        if isinstance(call, msg.NewMetric):
            family = self._metric_objects[call.family]
            return self._keep(family.Metric(call.labels, call.buckets))
        return _METRIC_OPERATIONS[call.operation](self._metric_objects[call.handle], call.value)

    def _keep(self, obj: Any) -> int:
        with self._lock:
            handle = next(self._metric_ids)
            self._metric_objects[handle] = obj
        return handle

    def _on_metric_release(self, message: msg.MetricRelease) -> None:
        with self._lock:
            self._metric_objects.pop(message.handle, None)

    def _on_bls(self, message: msg.Bls) -> None:
        call_id, packed = message
        stub = self._stub
        assert stub is not None
        try:
            request, _ = _ipc.unpack_request(packed, stub.link)
        except ServerError as exc:
            with contextlib.suppress(OSError):
                stub.send(msg.BlsError(call_id, exc.kind.name, exc.message))
            return
        self._bls[call_id] = request
        threading.Thread(
            target=self._run_bls,
            args=(call_id, request),
            name=f"bls:{request.model_name}",
            daemon=True,
        ).start()

    def _run_bls(self, call_id: int, request: InferRequest) -> None:
        stub = self._stub
        assert stub is not None
        try:
            try:
                for response in self._runtime.infer(request):
                    stub.send(msg.BlsResponse(call_id, _ipc.pack_response(response, stub.link)))
                    if response.final:
                        return
                stub.send(msg.BlsEnd(call_id))
            except ServerError as exc:
                stub.send(msg.BlsError(call_id, exc.kind.name, exc.message))
            except Exception as exc:
                stub.send(msg.BlsError(call_id, "INTERNAL", f"{type(exc).__name__}: {exc}"))
        except OSError:
            request.cancel()  # the stub is gone: stop the work it asked for
        finally:
            self._bls.pop(call_id, None)

    def _on_bls_cancel(self, message: msg.BlsCancel) -> None:
        request = self._bls.get(message.call_id)
        if request is not None:
            request.cancel()


#: What a :class:`~._messages.MetricOperation` does to the metric it names.
_METRIC_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "increment": lambda metric, value: metric.increment(value),
    "set": lambda metric, value: metric.set(value),
    "observe": lambda metric, value: metric.observe(value),
    "value": lambda metric, _: metric.value(),
    "repr": lambda metric, _: repr(metric),
}
assert tuple(_METRIC_OPERATIONS) == msg.METRIC_OPERATIONS


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop running on this thread, if any (asyncio's own getter, which returns
    None where ``get_running_loop()`` raises: off a loop, that raise cost every request)."""
    return asyncio.events._get_running_loop()


class _LoopReading:
    """An asyncio loop reading a stub's channel for one batch (see
    ProcessModelInstance.execute_async): the channel's background thread is held off while
    the loop's reader is registered.  :meth:`stop` may run on any thread (whichever read the
    batch's end), once; a later batch's reading of the same channel is left alone.

    The reader is registered by a callback the loop runs before it next waits (never later
    than a registration made at once would be polled): a batch whose end this thread reads
    first (ProcessModelInstance.settle) then never registers one, which saves the loop's
    system calls for adding and removing it.  Likewise the reader of a batch whose end the
    loop read is removed by a callback: the next batch's reading, started meanwhile on the
    same loop, takes it over."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stub: _StubConnection) -> None:
        self._loop = loop
        self._stub = stub
        self._fd = stub.channel.fileno()
        self._thread = threading.get_ident()
        self._started = False

    def start(self) -> bool:
        stub = self._stub
        stub.pump.hold()
        try:
            self._loop.call_soon(self._register)
        except RuntimeError:  # the loop is closed
            stub.pump.unhold()
            return False
        stub.loop_reading = self
        self._started = True
        return True

    def _register(self) -> None:
        if not self._started or self._stub.loop_reading is not self:
            return  # the batch ended first (or a later batch reads)
        if self._loop in self._stub.reader_loops:
            return  # the previous batch's reader, handed over (see stop)
        try:
            self._loop.add_reader(self._fd, self._stub.pump.read_ready)
        except (OSError, ValueError, RuntimeError):  # closed under us: the background reads
            self._started = False
            self._abandon()
            return
        self._stub.reader_loops.add(self._loop)
        # uvloop makes a polled descriptor non-blocking; the channel reads whole messages.
        os.set_blocking(self._fd, True)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if threading.get_ident() == self._thread:
            if self._loop not in self._stub.reader_loops:
                self._stop()  # nothing registered: let go of the hold at once
                return
            # The reader stays registered until the loop next runs its callbacks: the batch
            # whose end was just read usually makes way for the next one, sent from here
            # (the core's direct run), and that batch's reading then takes the registration
            # over instead of adding it again (at concurrency 8 that saves the loop's
            # epoll_ctl and fcntl calls, and their Python, for every batch).
            with contextlib.suppress(RuntimeError):  # the loop is closed: its reader is gone
                self._loop.call_soon(self._stop)
                return
            self._stub.reader_loops.discard(self._loop)
            self._abandon()
            return
        try:
            self._loop.call_soon_threadsafe(self._stop)
        except RuntimeError:  # the loop is closed, its reader gone with it: let go of the hold
            self._abandon()

    def _stop(self) -> None:
        stub = self._stub
        # A later batch's reading on the same loop (started meanwhile) keeps the registration.
        later = stub.loop_reading
        if self._loop in stub.reader_loops and (
            later is None or later is self or later._loop is not self._loop
        ):
            stub.reader_loops.discard(self._loop)
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                self._loop.remove_reader(self._fd)
        self._abandon()

    def _abandon(self) -> None:
        stub = self._stub
        if stub.loop_reading is self:
            stub.loop_reading = None
        stub.pump.unhold()


def _fail(request: InferRequest, model: str, version: int, error: ServerError) -> None:
    from ..core.types import InferResponse

    callback = request.response_callback
    if callback is not None:
        callback(InferResponse(model, str(version), request.id, error=error, final=True))
