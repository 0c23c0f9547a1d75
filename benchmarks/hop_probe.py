"""Timestamps along the stub hop, taken inside the bundled server and its stub processes for
``bench_hop.py``.

``bench_hop.py`` starts the server with a ``sitecustomize`` module on ``PYTHONPATH`` that calls
:func:`install` in every Python process of the server's tree (the server, the stub launcher
and, forked from it, the stubs).  :func:`install` wraps a few methods of ``mock_server`` so that
each appends ``(event, time.monotonic_ns())`` to a buffer, written in batches to
``<directory>/<pid>.txt``: the clock is the system-wide monotonic one, so the events of all
processes fall on one timeline.  The server's code is not changed, and a server started
without the probe pays nothing for it.

Events, in the order one request meets them (c=1, one instance):

``begin``     the core hands the request to the instance (``ModelVersion._begin`` returned)
``send``      the server starts sending the batch (``ProcessModelInstance._send_batch``)
``sent``      the batch is written to the stub's socket
``got``       the stub has read and decoded the batch (its ``_execute`` starts)
``cstart``    the model's ``execute`` starts (the stub's compute window)
``cend``      the model's ``execute`` returned
``done``      the stub has the batch's end message ready (``_execute`` returned)
``ssend``     the stub starts sending it
``ssent``     the stub's write returned
``wake``      the server starts reading the end message (``Pump._read_one``, whether its
              loop was woken for it or polled for it, see ``ProcessModelInstance.settle``)
``executed``  the server has read and decoded the end message (``_on_executed``)
``finish``    the core has recorded the execution (``ModelVersion._finish`` returned)

With ``BENCH_HOP_WHOLE`` set, the server (not the stub launcher, which forks the stubs and must
not import grpc) also marks the frontend's part of the request, around the events above:

``in``        the frontend's handler starts (gRPC ``InferRpcs.model_infer``, HTTP
              ``InferEndpoint.answer``)
``ahead``     the model was looked up and its stub woken ahead (``ModelVersion.ahead`` returned)
``decoded``   the request is parsed and decoded (gRPC ``InferRpcs.decode``, HTTP
              ``http_infer.decode`` returned)
``out``       the handler returns the encoded response
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable
from typing import Any

#: Events buffered before a write (a stub ends with ``os._exit``: what is left unwritten at
#: the end is lost, which the analysis tolerates).
_FLUSH_EVERY = 240

_events: list[tuple[str, int]] = []
_directory = ""


def _mark(event: str, ns: int | None = None) -> None:
    _events.append((event, time.monotonic_ns() if ns is None else ns))
    if len(_events) >= _FLUSH_EVERY:
        _flush()


def _flush() -> None:
    with open(os.path.join(_directory, f"{os.getpid()}.txt"), "a") as f:
        f.writelines(f"{event} {ns}\n" for event, ns in _events)
    _events.clear()


def _around(owner: Any, name: str, before: str | None, after: str | None) -> None:
    """Wrap ``owner.name`` (a function or a coroutine function) to mark ``before`` at its call
    and ``after`` at its return."""
    original: Callable[..., Any] = getattr(owner, name)

    def marked(result: Any) -> Any:
        if after is not None:
            _mark(after)
        return result

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def awaiting(*args: Any, **kwargs: Any) -> Any:
            if before is not None:
                _mark(before)
            return marked(await original(*args, **kwargs))

        setattr(owner, name, awaiting)
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            _mark(before)
        return marked(original(*args, **kwargs))

    setattr(owner, name, wrapper)


def _install_frontends() -> None:
    from mock_server.core import instances
    from mock_server.frontends import grpc_infer, http_infer

    _around(grpc_infer.InferRpcs, "model_infer", "in", "out")
    _around(http_infer.InferEndpoint, "answer", "in", "out")
    _around(instances.ModelVersion, "ahead", None, "ahead")
    _around(grpc_infer.InferRpcs, "decode", None, "decoded")
    _around(http_infer, "decode", None, "decoded")


def install(directory: str) -> None:
    """Wrap the server's and the stub's methods along the hop (see the module's docstring)."""
    global _directory
    _directory = directory
    from mock_server.core import instances
    from mock_server.python_backend import _ipc, _process, _stub
    from mock_server.python_backend import _messages as msg

    _around(instances.ModelVersion, "_begin", None, "begin")
    _around(instances.ModelVersion, "_finish", None, "finish")
    _around(_process.ProcessModelInstance, "_send_batch", "send", "sent")
    _around(_ipc.Pump, "_read_one", "wake", None)
    _around(_process.ProcessModelInstance, "_on_executed", "executed", None)

    execute = _stub._execute

    def traced_execute(stub: Any, instance: Any, batch_id: int, packed: list[Any]) -> Any:
        _mark("got")
        reply = execute(stub, instance, batch_id, packed)
        now = time.monotonic_ns()
        if reply.window is not None:
            _mark("cstart", reply.window[0])
            _mark("cend", reply.window[1])
        _mark("done", now)
        return reply

    _stub._execute = traced_execute
    send = _stub._Stub.send

    def traced_send(self: Any, message: Any) -> None:
        ends = isinstance(message, msg.Executed)
        if ends:
            _mark("ssend")
        send(self, message)
        if ends:
            _mark("ssent")

    _stub._Stub.send = traced_send  # type: ignore[method-assign]
    if os.environ.get("BENCH_HOP_WHOLE"):
        with open("/proc/self/cmdline", "rb") as cmdline:
            if b"_zygote_main" not in cmdline.read():  # not the stub launcher
                _install_frontends()
