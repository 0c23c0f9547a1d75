"""The messages between the server and a stub process, declared once: their names and fields.

Each message is a :class:`typing.NamedTuple`, declared with the tag that names it on the
channel.  On the wire a message is the plain tuple ``(tag, *fields)`` (:func:`encode`;
:func:`decode` turns it back into its type): a plain tuple pickles in half the time of a class
instance, which every request crossing to a stub pays twice.  Tensors, requests and responses
travel inside these messages in the packed forms of :mod:`mock_server.python_backend._ipc`.

Server to stub
    :class:`Start`, :class:`Ahead`, :class:`Execute`, :class:`Finalize`, :class:`IsReady`,
    :class:`ForgetRegion`, :class:`Reply` (to a call), :class:`BlsResponse`, :class:`BlsError`,
    :class:`BlsEnd`.
Stub to server
    :class:`Started`, :class:`AutoCompleted`, :class:`InitFailed`, :class:`Initialized`,
    :class:`Executed`, :class:`Response`, :class:`Ready`, :class:`Finalized`, :class:`Fatal`,
    :class:`Log`, :class:`Print`, :class:`Bls`, :class:`BlsCancel`, :class:`MetricRelease`,
    and the calls the server answers with a :class:`Reply` (:data:`CALLS`).
Both ways
    :class:`Release`: the shared-memory blocks one side is done with (see
    :class:`~mock_server.python_backend._transfer.Link`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

__all__ = [
    "CALLS",
    "METRIC_OPERATIONS",
    "Ahead",
    "AutoCompleted",
    "Bls",
    "BlsCancel",
    "BlsEnd",
    "BlsError",
    "BlsResponse",
    "Call",
    "Execute",
    "Executed",
    "Fatal",
    "Finalize",
    "Finalized",
    "ForgetRegion",
    "InitFailed",
    "Initialized",
    "IsCancelled",
    "IsModelReady",
    "IsReady",
    "LoadModel",
    "Log",
    "Message",
    "MetricOperation",
    "MetricRelease",
    "NewMetric",
    "NewMetricFamily",
    "Print",
    "Ready",
    "Release",
    "Reply",
    "Response",
    "Start",
    "Started",
    "UnloadModel",
    "decode",
    "encode",
    "tag_of",
]

#: An error as it crosses: its core kind's name and its message.
ErrorFields = tuple[str, str]

_M = TypeVar("_M", bound=type)
_BY_TAG: dict[str, type[Any]] = {}
_TAG_OF: dict[type[Any], str] = {}


def _message(tag: str) -> Callable[[_M], _M]:
    """Declare a message type and the tag that names it on the wire."""

    def declare(cls: _M) -> _M:
        assert tag not in _BY_TAG, f"two messages are tagged {tag!r}"
        _BY_TAG[tag] = cls
        _TAG_OF[cls] = tag
        return cls

    return declare


# -- starting and stopping -------------------------------------------------------------------------
@_message("start")
class Start(NamedTuple):
    """The server's first message: what the stub is for (``spec["what"]``: ``"instance"`` or
    ``"auto_complete"``), the model, and the shared-memory name prefixes of both sides."""

    spec: dict[str, Any]


@_message("started")
class Started(NamedTuple):
    """The stub is up (its reply to :class:`Start`)."""

    pid: int


@_message("auto_completed")
class AutoCompleted(NamedTuple):
    """The result of ``auto_complete_config``: ``("ok", config)`` or ``("error", error)``."""

    result: tuple[str, Any]


@_message("init_failed")
class InitFailed(NamedTuple):
    """Importing the model or its ``initialize`` failed."""

    error: ErrorFields


@_message("initialized")
class Initialized(NamedTuple):
    """The instance is ready; whether the model has its own ``is_model_ready()``."""

    has_ready_hook: bool


@_message("finalize")
class Finalize(NamedTuple):
    """Run the model's ``finalize`` and end."""


@_message("finalized")
class Finalized(NamedTuple):
    """``finalize`` has run; the stub ends."""


@_message("fatal")
class Fatal(NamedTuple):
    """The stub's last words: the exception that ends it, with its traceback."""

    text: str


# -- execution -------------------------------------------------------------------------------------
@_message("ahead")
class Ahead(NamedTuple):
    """A request for the instance is on its way (a frontend has begun to read it): the stub
    wakes now and polls for the :class:`Execute` that follows, instead of being woken by it."""


@_message("execute")
class Execute(NamedTuple):
    """One batch: each request under the handle its responses come back with."""

    batch_id: int
    requests: list[tuple[int, tuple[Any, ...]]]


@_message("response")
class Response(NamedTuple):
    """A response of the request known by ``handle`` (packed), sent as the model sends it."""

    handle: int
    packed: tuple[Any, ...]


@_message("executed")
class Executed(NamedTuple):
    """The end of a batch: the responses produced during ``execute`` (sent here, in one
    message), the handles of the requests to reschedule, the compute window (``monotonic_ns``
    before and after the model's ``execute``), a failure of the backend itself, and how long
    the stub worked on the batch (ns, from taking it off its queue to this message: its
    wake-up and the channel left out)."""

    batch_id: int
    responses: list[tuple[int, tuple[Any, ...]]]
    again: list[int]
    window: tuple[int, int] | None
    error: ErrorFields | None
    busy_ns: int


@_message("is_ready")
class IsReady(NamedTuple):
    """Ask the model's own ``is_model_ready()``; answered by :class:`Ready`."""

    call_id: int


@_message("ready")
class Ready(NamedTuple):
    """The answer to :class:`IsReady`."""

    call_id: int
    ready: bool


@_message("release")
class Release(NamedTuple):
    """Blocks of the receiver's pool the sender is done with, and blocks of the sender's own
    pool it let go of (the receiver unmaps them)."""

    released: list[int]
    forgotten: list[int]


@_message("forget_region")
class ForgetRegion(NamedTuple):
    """A client region the stub may have mapped was unregistered."""

    token: int


# -- BLS -------------------------------------------------------------------------------------------
@_message("bls")
class Bls(NamedTuple):
    """A request a model makes to another model (packed)."""

    call_id: int
    packed: tuple[Any, ...]


@_message("bls_cancel")
class BlsCancel(NamedTuple):
    """The model cancelled its BLS request."""

    call_id: int


@_message("bls_response")
class BlsResponse(NamedTuple):
    """A response to a BLS request (packed)."""

    call_id: int
    packed: tuple[Any, ...]


@_message("bls_error")
class BlsError(NamedTuple):
    """A BLS request failed before (or instead of) a response."""

    call_id: int
    kind: str
    message: str


@_message("bls_end")
class BlsEnd(NamedTuple):
    """A BLS request's responses ended without a final one."""

    call_id: int


# -- calls the stub makes, answered by a Reply -----------------------------------------------------
@_message("is_cancelled")
class IsCancelled(NamedTuple):
    """Whether the client cancelled the request known by ``handle``."""

    call_id: int
    handle: int


@_message("is_model_ready")
class IsModelReady(NamedTuple):
    """``pb_utils.is_model_ready``."""

    call_id: int
    model_name: str
    model_version: str


@_message("load_model")
class LoadModel(NamedTuple):
    """``pb_utils.load_model``."""

    call_id: int
    model_name: str
    config: str
    files: dict[str, bytes] | None


@_message("unload_model")
class UnloadModel(NamedTuple):
    """``pb_utils.unload_model``."""

    call_id: int
    model_name: str


@_message("metric_family")
class NewMetricFamily(NamedTuple):
    """``pb_utils.MetricFamily(name, description, kind)``; the reply is the family's handle,
    name and description."""

    call_id: int
    name: Any
    description: Any
    kind: Any


@_message("metric")
class NewMetric(NamedTuple):
    """``family.Metric(labels, buckets)`` on the family known by ``family``; the reply is the
    metric's handle."""

    call_id: int
    family: int
    labels: Any
    buckets: Any


#: What :class:`MetricOperation` may do to a metric (``value`` and ``repr`` read it; ``value``
#: is None for them).
METRIC_OPERATIONS = ("increment", "set", "observe", "value", "repr")


@_message("metric_op")
class MetricOperation(NamedTuple):
    """One of :data:`METRIC_OPERATIONS` on the metric known by ``handle``."""

    call_id: int
    handle: int
    operation: str
    value: float | None


@_message("reply")
class Reply(NamedTuple):
    """The server's answer to a call: its result, or (``ok`` False) the exception it raised."""

    call_id: int
    ok: bool
    value: Any


@_message("metric_release")
class MetricRelease(NamedTuple):
    """The stub dropped its last handle on a metric family or metric."""

    handle: int


# -- what model code logs and prints ---------------------------------------------------------------
@_message("log")
class Log(NamedTuple):
    """A log record of the stub, for the server to log as its own (``exc``: the record's
    exception, pickled when it can be, with its type name and text)."""

    name: str
    level: int
    text: str
    path: str
    line: int
    function: str
    exc_text: str | None
    exc: tuple[bytes | None, str, str] | None
    model_name: str | None
    model_version: Any


@_message("print")
class Print(NamedTuple):
    """Text model code printed, for the server's stream of that name (stdout, stderr)."""

    stream: str
    text: str


#: The calls a stub makes; the server answers each with a :class:`Reply`.
CALLS = (
    IsCancelled,
    IsModelReady,
    LoadModel,
    UnloadModel,
    NewMetricFamily,
    NewMetric,
    MetricOperation,
)

Call = (
    IsCancelled
    | IsModelReady
    | LoadModel
    | UnloadModel
    | NewMetricFamily
    | NewMetric
    | MetricOperation
)

Message = (
    Start
    | Started
    | AutoCompleted
    | InitFailed
    | Initialized
    | Finalize
    | Finalized
    | Fatal
    | Ahead
    | Execute
    | Response
    | Executed
    | IsReady
    | Ready
    | Release
    | ForgetRegion
    | Bls
    | BlsCancel
    | BlsResponse
    | BlsError
    | BlsEnd
    | Call
    | Reply
    | MetricRelease
    | Log
    | Print
)


def tag_of(cls: type[Any]) -> str:
    """The tag of a message type (how logs and errors name it)."""
    return _TAG_OF[cls]


def encode(message: Message) -> tuple[Any, ...]:
    """The wire form of ``message``: ``(tag, *fields)``."""
    return (_TAG_OF[type(message)], *message)


def decode(frame: tuple[Any, ...]) -> Message:
    """The message of a wire tuple (:func:`encode`'s result).

    Raises
    ------
    ValueError
        For an unknown tag or a wrong number of fields (a peer out of step).
    """
    cls = _BY_TAG.get(frame[0]) if frame else None
    if cls is None:
        raise ValueError(f"unknown stub message {frame[:1]!r}")
    try:
        message: Message = cls._make(frame[1:])
    except TypeError as exc:
        raise ValueError(f"malformed stub message {frame[0]!r}: {exc}") from None
    return message
