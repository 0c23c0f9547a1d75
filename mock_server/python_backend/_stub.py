"""The stub process: one model instance (or one ``auto_complete_config`` call) in a process of
its own, as Triton's ``triton_python_backend_stub`` runs it.

The stub runs the same backend code as the in-process mode
(:class:`~mock_server.python_backend._inprocess.LocalModel`), on these terms:

* the model file is imported as Triton's stub imports it: the version folder, then the model
  folder are appended to ``sys.path`` and the file is the module ``<version>.<file stem>``
  (so ``import model`` from model code imports the file again, under the name ``model``, as
  Triton's QA models rely on); no bytecode is written next to it;
* model code runs on the process's main thread (signal handlers can be installed, as in
  Triton); a reader thread takes the server's messages;
* requests arrive as core requests whose responses go back over the channel; their
  cancellation flag asks the server; BLS requests and model control
  (:class:`StubRuntime`), custom metrics (:class:`RemoteMetricFamily`) and log records are
  sent to the server, which owns them;
* ``SystemExit`` and every other exception of model code become errors, as in Triton; the
  process ends when the server finalizes the instance, when the server goes away, or when
  model code ends it (the server then reports the stub as unhealthy).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import faulthandler
import gc
import io
import itertools
import logging
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from ..core.backends import LoadSpec
from ..core.errors import ErrorKind, ServerError
from ..core.types import CancelFlag, InferRequest, InferResponse
from . import _context, _ipc, _loader, _transfer
from . import _messages as msg
from . import metrics as _metrics
from . import triton_python_backend_utils as pb_utils
from ._inprocess import LocalModel, user_readiness
from .runtime import SharedRegions

__all__ = ["Metric", "MetricFamily", "StubRuntime", "main", "report_fatal", "run"]

#: How long a stub woken ahead of a request (msg.Ahead) polls for it: the frontend reads and
#: checks the request meanwhile (50-100 us for a small one); a request that never comes (it
#: failed its checks) costs at most this.
AHEAD_NS = 300_000


class _Stub:
    """The stub's end of the channel: a reader thread and the RPCs made over it."""

    def __init__(self, channel: _ipc.Channel, prefix: str, peer_prefix: str) -> None:
        self.channel = channel
        self.regions = _transfer.MappedRegions()
        self.link = _transfer.Link("s", prefix, "p", peer_prefix, self.regions)
        channel.link = self.link
        self.work: collections.deque[msg.Message] = collections.deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._replies: dict[int, concurrent.futures.Future[Any]] = {}
        self._bls: dict[int, queue.Queue[msg.BlsResponse | msg.BlsError | msg.BlsEnd]] = {}
        self.finishing = False
        self.batch_responses: list[tuple[Any, ...]] | None = None
        self.executing_thread: int | None = None
        self.instance: Any = None
        #: An Ahead came since the main thread last took work (see next_work).
        self.ahead = False
        self.pump = _ipc.Pump(channel, self._dispatch, self._on_eof, "stub-reader")

    def start(self) -> None:
        self.pump.start()

    def _dispatch(self, frame: tuple[Any, ...]) -> None:
        message = msg.decode(frame)
        if isinstance(message, msg.Release):
            self.link.on_release(message.released, message.forgotten)
        elif isinstance(message, msg.ForgetRegion):
            self.regions.forget(message.token)
        elif isinstance(message, msg.Reply):
            with self._lock:
                future = self._replies.pop(message.call_id, None)
            if future is not None:
                if message.ok:
                    future.set_result(message.value)
                else:
                    future.set_exception(message.value)
        elif isinstance(message, msg.BlsResponse | msg.BlsError | msg.BlsEnd):
            with self._lock:
                sink = self._bls.get(message.call_id)
            if sink is not None:
                sink.put(message)
            elif isinstance(message, msg.BlsResponse):
                _ipc.discard_response(message.packed, self.link)
        elif isinstance(message, msg.Ahead):
            self.ahead = True
        elif isinstance(message, msg.IsReady):
            # Answered beside whatever the main thread runs, as a readiness probe must be.
            answer = threading.Thread(
                target=self._answer_ready, args=(message.call_id,), daemon=True
            )
            answer.start()
        else:
            self.work.append(message)

    def _on_eof(self) -> None:
        failure = self.pump.failure
        if failure is not None and not self.finishing:
            # A message this side could not read or handle: the stream is out of step.
            report_fatal(failure)
            os._exit(1)
        # The server closed the channel or died: nothing is left to do for whoever runs here.
        if not self.finishing:
            os._exit(0)

    def next_work(self) -> msg.Message:
        """The next message for the main thread (``execute``, ``finalize``), reading the
        channel on this thread until one comes."""
        work = self.work
        while True:
            if not self.pump.pump_until(lambda: bool(work) or self.ahead):
                _finish(self)  # the server is gone
            ahead, self.ahead = self.ahead, False
            if work:
                return work.popleft()
            if ahead:
                # Woken ahead of a request: poll for it (see msg.Ahead), then sleep again.
                self.pump.spin(lambda: bool(work), AHEAD_NS)

    def _answer_ready(self, call_id: int) -> None:
        instance = self.instance
        ready = instance is not None and user_readiness(instance._model, instance.model_name)
        self.notify(msg.Ready(call_id, ready))

    # -- calls to the server ---------------------------------------------------------------------
    def call(self, call: Callable[..., msg.Call], *args: Any) -> Any:
        """Make the call ``call(call_id, *args)`` (one of :data:`~._messages.CALLS`) to the
        server and return its result (or raise its exception)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            call_id = next(self._ids)
            self._replies[call_id] = future
        with self.pump.expecting():
            self.send(call(call_id, *args))
            done = self.pump.pump_until(future.done)
        if not done:
            raise BrokenPipeError("the server is gone")
        return future.result()

    def send(self, message: msg.Message) -> None:
        """Send ``message`` to the server."""
        self.channel.send(msg.encode(message))

    def notify(self, message: msg.Message) -> None:
        """Send a message that needs no answer (ignored once the server is gone)."""
        with contextlib.suppress(OSError):
            self.send(message)

    def open_bls(self) -> tuple[int, queue.Queue[msg.BlsResponse | msg.BlsError | msg.BlsEnd]]:
        sink: queue.Queue[msg.BlsResponse | msg.BlsError | msg.BlsEnd] = queue.Queue()
        with self._lock:
            call_id = next(self._ids)
            self._bls[call_id] = sink
        return call_id, sink

    def close_bls(self, call_id: int) -> None:
        with self._lock:
            self._bls.pop(call_id, None)

    # -- responses -------------------------------------------------------------------------------
    def send_response(
        self, handle: int, response: InferResponse, placements: dict[str, _transfer.RegionRef]
    ) -> None:
        packed = _ipc.pack_response(response, self.link, placements)
        batch = self.batch_responses
        if batch is not None and threading.get_ident() == self.executing_thread:
            batch.append((handle, packed))  # sent with the end of the execution, in one message
            return
        self.send(msg.Response(handle, packed))


_stub: _Stub | None = None


def _the_stub() -> _Stub:
    assert _stub is not None, "not running in a stub process"
    return _stub


class _RemoteCancel(CancelFlag):
    """The cancellation flag of a request the stub received: the server knows whether the
    client cancelled it, so asking it is the answer (as Triton's stub asks its parent)."""

    def __init__(self, handle: int) -> None:
        super().__init__()
        self._handle = handle

    def is_set(self) -> bool:
        if not self._set and _the_stub().call(msg.IsCancelled, self._handle):
            self._set = True
        return self._set


class _BlsCancel(CancelFlag):
    """The cancellation flag of a BLS request the model made: setting it cancels the request
    in the server."""

    def __init__(self, call_id: int) -> None:
        super().__init__()
        self._call_id = call_id

    def set(self) -> None:
        if not self._set:
            _the_stub().notify(msg.BlsCancel(self._call_id))
        super().set()


class StubRuntime:
    """:class:`~mock_server.python_backend.runtime.BackendRuntime` for model code in a stub:
    every call goes to the server."""

    #: The stub maps client regions itself (see _transfer): models never see the registry.
    shared_regions: SharedRegions | None = None

    def infer(self, request: InferRequest) -> Iterator[InferResponse]:
        stub = _the_stub()
        call_id, sink = stub.open_bls()
        request.cancelled = _BlsCancel(call_id)
        return self._responses(stub, call_id, sink, request)

    @staticmethod
    def _responses(
        stub: _Stub,
        call_id: int,
        sink: queue.Queue[msg.BlsResponse | msg.BlsError | msg.BlsEnd],
        request: InferRequest,
    ) -> Iterator[InferResponse]:
        try:
            stub.send(msg.Bls(call_id, _ipc.pack_request(request, stub.link)))
            while True:
                stub.pump.pump_until(lambda: not sink.empty())
                message = sink.get_nowait()
                if isinstance(message, msg.BlsEnd):
                    return
                if isinstance(message, msg.BlsError):
                    raise ServerError(ErrorKind[message.kind], message.message)
                response = _ipc.unpack_response(message.packed, stub.link)
                yield response
                if response.final:
                    return
        finally:
            stub.close_bls(call_id)
            while not sink.empty():  # responses nobody will read: their shared memory goes
                message = sink.get_nowait()
                if isinstance(message, msg.BlsResponse):
                    _ipc.discard_response(message.packed, stub.link)

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        return bool(_the_stub().call(msg.IsModelReady, model_name, model_version))

    def load_model(
        self, model_name: str, config: str = "", files: dict[str, bytes] | None = None
    ) -> None:
        _the_stub().call(msg.LoadModel, model_name, config, files)

    def unload_model(self, model_name: str) -> None:
        _the_stub().call(msg.UnloadModel, model_name)

    def server_stopping(self) -> bool:
        # Nothing in a stub outlives its instance: the server keeps the families.
        return False


# -- custom metrics, kept by the server ----------------------------------------------------------
class MetricFamily(_metrics.FamilyView):  # pb_utils' name: models may print type names
    """``pb_utils.MetricFamily`` in a stub: the family lives in the server (where Triton keeps
    it too, so that every instance of every model shares it by name); this object is a handle,
    and dropping the last handle of a family deletes it there."""

    def __init__(self, name: Any, description: Any, kind: Any) -> None:
        stub = _the_stub()
        self._handle, self._name, self._description = stub.call(
            msg.NewMetricFamily, name, description, kind
        )
        self._kind = _metrics.MetricKind(kind)
        weakref.finalize(self, stub.notify, msg.MetricRelease(self._handle))

    def Metric(  # the Python backend's public name
        self, labels: Mapping[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:
        """Create (or share) the metric of this family with ``labels``."""
        return Metric(self, labels, buckets)


class Metric:
    """``pb_utils.Metric`` in a stub: a handle on the metric the server keeps."""

    def __init__(
        self,
        family: MetricFamily,
        labels: Mapping[str, str] | None = None,
        buckets: list[float] | None = None,
    ) -> None:
        stub = _the_stub()
        # Only the handle: as in Triton, a metric does not keep its family object alive.
        family_handle = family._handle if isinstance(family, MetricFamily) else family
        self._handle = stub.call(msg.NewMetric, family_handle, labels, buckets)
        weakref.finalize(self, stub.notify, msg.MetricRelease(self._handle))

    def _op(self, operation: str, value: float | None = None) -> Any:
        return _the_stub().call(msg.MetricOperation, self._handle, operation, value)

    def increment(self, value: float) -> None:
        """Add ``value`` to a counter or gauge."""
        self._op("increment", value)

    def set(self, value: float) -> None:
        """Set a gauge to ``value``."""
        self._op("set", value)

    def value(self) -> float:
        """Return the current value of a counter or gauge."""
        return float(self._op("value"))

    def observe(self, value: float) -> None:
        """Record one observation in a histogram."""
        self._op("observe", value)

    def __repr__(self) -> str:
        return str(self._op("repr"))


# -- logging -------------------------------------------------------------------------------------
def _exception_payload(record: logging.LogRecord) -> tuple[bytes | None, str, str] | None:
    """A record's exception for the server: pickled when it can be, and its type and text."""
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None:
        return None
    try:
        data: bytes | None = pickle.dumps(exc)  # (its traceback is not pickled)
    except Exception:
        data = None
    return (data, type(exc).__name__, str(exc))


class _ForwardLogs(logging.Handler):
    """Sends log records to the server, which logs them there (and filters them by its own
    loggers' levels, which may change while the stub runs): every record of ``pb_utils.Logger``
    and the backend (loggers ``mock_server.*``), and other loggers' records from ``threshold``
    up (what the server's root logger let through when the stub started)."""

    def __init__(self, threshold: int) -> None:
        super().__init__(logging.DEBUG)
        self._threshold = threshold

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.startswith("mock_server") or record.levelno >= self._threshold

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
        except Exception:
            self.handleError(record)
            return
        _the_stub().notify(
            msg.Log(
                record.name,
                record.levelno,
                message,
                record.pathname,
                record.lineno,
                record.funcName,
                record.exc_text,
                _exception_payload(record),
                getattr(record, "model_name", None),
                getattr(record, "model_version", None),
            )
        )


class _ForwardStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of the stub: text goes to the server's stream of the
    same name, a line (or a flush) at a time."""

    def __init__(self, stub: _Stub, name: str, fallback: Any) -> None:
        super().__init__()
        self._stub = stub
        self._name = name
        self._fallback = fallback
        self._pending: list[str] = []
        self._lock = threading.Lock()

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return int(self._fallback.fileno())

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self._pending.append(text)
            if "\n" not in text:
                return len(text)
            chunk, self._pending = "".join(self._pending), []
        self._stub.notify(msg.Print(self._name, chunk))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            chunk, self._pending = "".join(self._pending), []
        if chunk:
            self._stub.notify(msg.Print(self._name, chunk))


# -- the main loop -------------------------------------------------------------------------------
def _error(exc: ServerError) -> tuple[str, str]:
    return (exc.kind.name, exc.message)


def _auto_complete(stub: _Stub, spec: dict[str, Any]) -> None:
    try:
        result: Any = (
            "ok",
            LocalModel.auto_complete(
                spec["model_dir"], spec["version"], spec["config_json"], spec["filename"]
            ),
        )
    except ServerError as exc:
        result = ("error", _error(exc))
    stub.send(msg.AutoCompleted(result))


def _execute(stub: _Stub, instance: Any, batch_id: int, packed: list[Any]) -> msg.Executed:
    """Run one batch; return the message that ends it (sent by the caller)."""
    taken_ns = time.monotonic_ns()
    requests: list[InferRequest] = []
    handles: dict[int, int] = {}
    refused: list[tuple[Any, ...]] = []
    for handle, request_data in packed:
        try:
            request, placements = _ipc.unpack_request(request_data, stub.link)
        except ServerError as exc:  # an input's region cannot be viewed: that request fails
            model, version, request_id = _ipc.request_identity(request_data)
            failed = InferResponse(model, str(version), request_id, error=exc)
            refused.append((handle, _ipc.pack_response(failed, stub.link)))
            continue
        request.cancelled = _RemoteCancel(handle)
        request.response_callback = _responder(stub, handle, placements)
        handles[id(request)] = handle
        requests.append(request)
    if not requests:
        return msg.Executed(batch_id, refused, [], None, None, time.monotonic_ns() - taken_ns)
    stub.batch_responses = [] if not instance._owner.decoupled else None
    stub.executing_thread = threading.get_ident()
    error: tuple[str, str] | None = None
    try:
        again = instance.execute(requests)
    except Exception as exc:  # a bug of the backend, not of the model: fail the batch
        again = []
        error = ("INTERNAL", f"failed to execute: {type(exc).__name__}: {exc}")
    finally:
        responses, stub.batch_responses = stub.batch_responses, None
        stub.executing_thread = None
    window = instance.compute_window()
    answered = refused + (responses or [])
    again_handles = [handles[id(r)] for r in again]
    busy_ns = time.monotonic_ns() - taken_ns
    return msg.Executed(batch_id, answered, again_handles, window, error, busy_ns)


def _responder(stub: _Stub, handle: int, placements: dict[str, _transfer.RegionRef]) -> Any:
    return lambda response: stub.send_response(handle, response, placements)


def main(fd: int) -> int:
    """Serve one model instance (or one auto-complete call) on channel socket ``fd``.

    Returns
    -------
    int
        The process's exit status.
    """
    global _stub
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when a stub ends
    # The server's report of an initialize() that does not return (SIGUSR1): every thread's
    # stack on stderr (a model may install its own handler instead).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Triton's stub writes no bytecode beside the model here (it would look like a changed
    # model to the repository poller), and imports nothing from the working directory.
    sys.dont_write_bytecode = True
    if "" in sys.path:
        sys.path.remove("")
    channel = _ipc.Channel(fd)
    hello = msg.decode(channel.recv())
    assert isinstance(hello, msg.Start), hello
    spec: dict[str, Any] = hello.spec
    stub = _Stub(channel, spec["prefix"], spec.get("peer_prefix", spec["prefix"]))
    _stub = stub
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(_ForwardLogs(spec.get("log_level", logging.INFO)))
    root.setLevel(logging.DEBUG)
    # What model code prints reaches the server's own sys.stdout / sys.stderr (the server's
    # console, or whatever an in-process user has put there).
    sys.stdout = _ForwardStream(stub, "stdout", sys.stdout)
    sys.stderr = _ForwardStream(stub, "stderr", sys.stderr)
    _loader.use_triton_import()
    # Custom metrics are the server's: the model's MetricFamily objects are handles on them.
    pb_utils.MetricFamily = MetricFamily  # type: ignore[misc,assignment]
    pb_utils.Metric = Metric  # type: ignore[misc,assignment]
    _context.register_runtime(StubRuntime())
    stub.start()
    stub.send(msg.Started(os.getpid()))
    if spec["what"] == "auto_complete":
        _auto_complete(stub, spec)
        return _finish(stub)
    try:
        files = LoadSpec(
            spec["model_name"],
            Path(spec["model_dir"]),
            spec["version"],
            spec["config_json"],
            spec["filename"],
        )
        model = LocalModel(files, StubRuntime())
        instance = model.create_instance(spec["instance_name"], spec["kind"], spec["device_id"])
    except ServerError as exc:
        stub.send(msg.InitFailed(_error(exc)))
        return _finish(stub)
    stub.instance = instance
    gc.freeze()  # the interpreter, its libraries and the model: never garbage (see __main__)
    has_ready_hook = getattr(instance._model, "is_model_ready", None) is not None
    stub.send(msg.Initialized(has_ready_hook))
    reply: msg.Executed | None = None
    while True:
        # The end of a batch is sent with the channel already held for the next message, so
        # that the server's next batch, however quick, is read here, not by the background
        # thread (see _ipc.Pump).
        with stub.pump.expecting():
            if reply is not None:
                stub.send(reply)
            message = stub.next_work()
        if isinstance(message, msg.Execute):
            reply = _execute(stub, instance, message.batch_id, message.requests)
        elif isinstance(message, msg.Finalize):
            # The model object outlives the reply: the metric families it still holds are
            # then kept by the server, as Triton keeps them, instead of being released by
            # the object's teardown before the server knows the instance is gone.
            model = instance._model
            instance.finalize()
            stub.send(msg.Finalized())
            _finish(stub)
            del model


def run(fd: int) -> int:
    """:func:`main`, and the exit status; an exception that ends it is reported to the server
    first (:func:`report_fatal`), so that no stub ends without saying why."""
    try:
        return main(fd)
    except BaseException as exc:
        report_fatal(exc)
        return 1


def report_fatal(exc: BaseException) -> None:
    """Tell the server why this stub ends: ``exc`` and its traceback, in a
    :class:`~._messages.Fatal` message it logs with the stub's exit; on the process's own
    stderr when the channel is gone.  Called around :func:`main` (:func:`run`), and when the
    channel breaks."""
    text = "".join(traceback.format_exception(exc)).rstrip()
    stub = _stub
    if stub is not None:
        try:
            stub.send(msg.Fatal(text))
            return
        except Exception:  # the channel is gone: the process's own stderr is what is left
            pass
    with contextlib.suppress(OSError):
        os.write(2, f"stub process {os.getpid()} ends: {text}\n".encode(errors="replace"))


def _finish(stub: _Stub) -> NoReturn:
    """Flush what the model printed and end the process without running interpreter teardown
    (which would run model objects' finalizers after the server is done with the stub)."""
    stub.finishing = True
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)
