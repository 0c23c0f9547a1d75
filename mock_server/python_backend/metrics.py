"""Custom metrics of Python models (``pb_utils.MetricFamily`` / ``pb_utils.Metric``).

Models create metric families and metrics; they live in one thread-safe, process-wide registry
that the server's metrics endpoint reads with :func:`collect`.  What is kept, shared and refused
is what Triton 2.51 does (its Python backend, core and prometheus-cpp, checked on the real
server by ``tests/conformance/test_pb_utils_differential.py`` and the metrics differential
test):

* a family is identified by its name: creating it again with the same kind shares it (the first
  description stays), with another kind is an error;
* a metric is identified by its family and labels: creating it again shares its value, and it
  lives as long as its family, whether or not the ``Metric`` object is kept;
* a family is removed, with its metrics, when the last ``MetricFamily`` object naming it is
  deleted; using one of its ``Metric`` objects afterwards is an error;
* the families a model instance still holds when it is unloaded are never removed: Triton 2.51
  does not delete them, so they stay in the metrics output, and a reloaded model that creates
  them again continues their values;
* families without metrics are not reported; families are reported in creation order.

Error messages are Triton's, with the model instance's name where Triton gives it.
"""

from __future__ import annotations

import bisect
import enum
import itertools
import json
import math
import re
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from . import _context, _pybind
from ._errors import TritonModelException

if TYPE_CHECKING:
    from ..core.backends import BackendRuntime

__all__ = [
    "FamilyView",
    "Metric",
    "MetricFamily",
    "MetricFamilySnapshot",
    "MetricKind",
    "MetricSample",
    "collect",
    "release_owner",
]

# prometheus-cpp's CheckMetricName / CheckLabelName (a leading "__" is reserved for both).
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

_FAMILY_DELETED = (
    "Invalid metric operation as the corresponding 'MetricFamily' has been deleted. The "
    "'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects have been "
    "deleted."
)


class MetricKind(enum.IntEnum):
    """The kind of a metric family (``TRITONSERVER_MetricKind``)."""

    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


@dataclass(frozen=True)
class MetricSample:
    """The value of one metric (one label set) at collection time.

    Attributes
    ----------
    labels : dict of str to str
        The metric's labels, in the order the model gave them.
    value : float or None
        The value of a counter or gauge; None for a histogram.
    buckets : tuple of (float, int) or None
        For a histogram, the cumulative count of observations ``<=`` each upper bound, in the
        order of the bounds the metric was created with, then ``(math.inf, count)``; None
        otherwise.
    sum : float or None
        For a histogram, the sum of the observations.
    count : int or None
        For a histogram, the number of observations.
    """

    labels: dict[str, str]
    value: float | None = None
    buckets: tuple[tuple[float, int], ...] | None = None
    sum: float | None = None
    count: int | None = None


@dataclass(frozen=True)
class MetricFamilySnapshot:
    """One metric family at collection time.

    Attributes
    ----------
    name : str
        The family's name (a valid Prometheus metric name).
    description : str
        Its description (Prometheus ``HELP``).
    kind : str
        ``"counter"``, ``"gauge"`` or ``"histogram"`` (Prometheus ``TYPE``).
    metrics : tuple of MetricSample
        Its metrics, in creation order.
    """

    name: str
    description: str
    kind: str
    metrics: tuple[MetricSample, ...] = ()


# -- registry ------------------------------------------------------------------------------------
_LabelKey = tuple[tuple[str, str], ...]


@dataclass(eq=False)
class _MetricState:
    labels: dict[str, str]
    bounds: tuple[float, ...] = ()
    value: float = 0.0
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    observations: int = 0


@dataclass(eq=False)
class _FamilyState:
    name: str
    description: str
    kind: MetricKind
    metrics: dict[_LabelKey, _MetricState] = field(default_factory=dict)
    refs: int = 0  # live MetricFamily objects naming it
    kept: bool = False  # held by an unloaded model instance: never removed
    alive: bool = True


_lock = threading.RLock()
_families: dict[str, _FamilyState] = {}
_owned: dict[int, tuple[object, list[_FamilyState]]] = {}
#: The families kept after their instance was unloaded, by the server's runtime (its id).
_kept: dict[int, tuple[BackendRuntime, list[_FamilyState]]] = {}


def _own(state: _FamilyState) -> None:
    """Record that the calling model instance holds a ``MetricFamily`` of ``state``."""
    context = _context.current()
    if context is None:
        return
    with _lock:
        _, states = _owned.setdefault(id(context.owner), (context.owner, []))
        if len(states) > 64:
            states[:] = [s for s in states if s.alive]
        states.append(state)


def release_owner(context: _context.ModelContext) -> None:
    """Note that the model instance of ``context`` is unloaded.

    The families it still holds are kept for the server's lifetime, as Triton 2.51 keeps them;
    when the server itself is stopping they go with it (several servers may run one after
    another in one process, and a stopped one's families must not show in the next one's
    metrics).
    """
    owner, runtime = context.owner, context.runtime
    stopping = runtime is not None and runtime.server_stopping()
    with _lock:
        entry = _owned.pop(id(owner), None)
        held = entry[1] if entry is not None and entry[0] is owner else []
        if stopping:
            # This instance's families, and those kept from the server's earlier unloads.
            _, kept = _kept.pop(id(runtime), (runtime, []))
            for state in [*held, *kept]:
                if state.alive:
                    _forget_family(state)
            return
        for state in held:
            if state.alive:
                state.kept = True
                if runtime is not None:
                    _kept.setdefault(id(runtime), (runtime, []))[1].append(state)


def _release_family(state: _FamilyState) -> None:
    with _lock:
        state.refs -= 1
        if state.refs > 0 or state.kept:
            return
        _forget_family(state)


def _forget_stopped_servers() -> None:
    """Drop the families kept from unloads of servers that have stopped since (the caller
    holds the lock; a server's stop finds no instance left to release them)."""
    for key, (runtime, kept) in list(_kept.items()):
        if runtime.server_stopping():
            del _kept[key]
            for state in kept:
                if state.alive:
                    _forget_family(state)


def _forget_family(state: _FamilyState) -> None:
    """Drop ``state`` from the registry (the caller holds the lock)."""
    state.alive = False
    state.metrics.clear()
    if _families.get(state.name) is state:
        del _families[state.name]


def collect() -> list[MetricFamilySnapshot]:
    """Return a consistent snapshot of every live custom metric family, in creation order.

    Returns
    -------
    list of MetricFamilySnapshot
        Plain data for the metrics endpoint to render (families without metrics included).
    """
    out: list[MetricFamilySnapshot] = []
    with _lock:
        _forget_stopped_servers()
        # Copies: the lock is re-entrant, and a family object the garbage collector frees
        # while this runs releases its family on this very thread (_release_family).
        for family in list(_families.values()):
            if not family.alive:
                continue
            samples: list[MetricSample] = []
            for metric in list(family.metrics.values()):
                labels = dict(metric.labels)
                if family.kind is MetricKind.HISTOGRAM:
                    running = 0
                    buckets: list[tuple[float, int]] = []
                    for bound, count in zip(metric.bounds, metric.counts, strict=False):
                        running += count
                        buckets.append((bound, running))
                    buckets.append((math.inf, metric.observations))
                    samples.append(
                        MetricSample(
                            labels,
                            buckets=tuple(buckets),
                            sum=metric.total,
                            count=metric.observations,
                        )
                    )
                else:
                    samples.append(MetricSample(labels, value=metric.value))
            out.append(
                MetricFamilySnapshot(
                    family.name, family.description, family.kind.name.lower(), tuple(samples)
                )
            )
    return out


def _server_error(what: str, message: str) -> TritonModelException:
    """An error of Triton's core about a metric, worded as the Python backend passes it on."""
    context = _context.current()
    instance = context.instance_name if context is not None else ""
    return TritonModelException(
        f"{what}: Failed to process the request for model '{instance}', message: {message}"
    )


# -- model-facing classes ------------------------------------------------------------------------
_Kind = MetricKind  # MetricFamily.MetricKind shadows the name inside the class
_FAMILY_SIGNATURE = "MetricFamily(name: str, description: str, kind: MetricKind)"


class FamilyView:
    """What a model reads of a metric family: the same from a family kept here and from a
    stub's handle on a family the server keeps."""

    COUNTER: ClassVar[_Kind] = MetricKind.COUNTER
    GAUGE: ClassVar[_Kind] = MetricKind.GAUGE
    HISTOGRAM: ClassVar[_Kind] = MetricKind.HISTOGRAM
    MetricKind: ClassVar[type[_Kind]] = MetricKind

    _name: str
    _description: str
    _kind: _Kind

    def name(self) -> str:
        """Return the family's name."""
        return self._name

    def description(self) -> str:
        """Return the family's description."""
        return self._description

    def kind(self) -> _Kind:
        """Return the family's kind."""
        return self._kind

    def __repr__(self) -> str:
        return f"MetricFamily({self._name!r}, kind={self._kind.name})"


class MetricFamily(FamilyView):
    """A family of metrics sharing a name, description and kind.

    Parameters
    ----------
    name : str
        Metric name, e.g. ``"preprocess_latency_ns"`` (``[a-zA-Z_:][a-zA-Z0-9_:]*``, not
        starting with ``__``); ``bytes`` are accepted, as by Triton.
    description : str
        Human-readable description (Prometheus ``HELP``).
    kind : MetricKind
        ``MetricFamily.COUNTER``, ``MetricFamily.GAUGE`` or ``MetricFamily.HISTOGRAM``.

    Raises
    ------
    TypeError
        If the name or description is not text or the kind not a ``MetricKind``.
    TritonModelException
        If the name is not a valid metric name, or a family with this name exists with
        another kind.
    """

    def __init__(self, name: str, description: str, kind: _Kind) -> None:
        text_name = _pybind.text_arg(name)
        text_description = _pybind.text_arg(description)
        if text_name is None or text_description is None or not isinstance(kind, MetricKind):
            raise _pybind.incompatible(
                "__init__", _FAMILY_SIGNATURE, (name, description, kind), constructor=True
            )
        if not _NAME.match(text_name) or text_name.startswith("__"):
            raise _server_error("Error when creating MetricFamily", "Invalid metric name")
        with _lock:
            state = _families.get(text_name)
            if state is None:
                state = _FamilyState(text_name, text_description, kind)
                _families[text_name] = state
            elif state.kind is not kind:
                raise _server_error(
                    "Error when creating MetricFamily",
                    "Family name already exists with different type",
                )
            state.refs += 1
        self._state = state
        self._name, self._description, self._kind = state.name, state.description, state.kind
        self._finalizer = weakref.finalize(self, _release_family, state)
        _own(state)

    def Metric(  # the Python backend's public name
        self, labels: Mapping[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:
        """Create (or share) the metric of this family with ``labels``.

        Parameters
        ----------
        labels : dict of str to str, optional
            The metric's labels.
        buckets : list of float, optional
            Histogram bucket upper bounds, strictly increasing; required for (and only for)
            histograms.

        Returns
        -------
        Metric
        """
        return Metric(self, labels, buckets)


class Metric:
    """One metric (one label set) of a :class:`MetricFamily`.

    Created with ``family.Metric(labels=..., buckets=...)``.  The metric belongs to the family:
    its value stays when this object is deleted, and the object must not be used once every
    ``MetricFamily`` object of its family is deleted.

    Parameters
    ----------
    family : MetricFamily
        The family it belongs to.
    labels : dict of str to str, optional
        Its labels.
    buckets : list of float, optional
        Histogram bucket upper bounds (histograms only, required there).

    Raises
    ------
    TypeError
        If a label name or value cannot be written as JSON (as ``json.dumps`` says).
    RuntimeError
        If a bucket bound is not a number.
    TritonModelException
        If the labels are not a dict or not valid Prometheus labels, or the buckets are missing
        for a histogram, given for another kind, not a list, or not strictly increasing.
    """

    def __init__(
        self,
        family: MetricFamily,
        labels: Mapping[str, str] | None = None,
        buckets: list[float] | None = None,
    ) -> None:
        if not isinstance(family, MetricFamily):
            raise _pybind.incompatible(
                "Metric",
                "(self: MetricFamily, labels: object = None, buckets: object = None) -> Metric",
                (family, labels, buckets),
            )
        fstate = family._state
        # The order of the Python backend's checks, then of Triton's core and prometheus-cpp.
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        decoded = json.loads(json.dumps(labels))  # the labels travel as JSON, as in Triton
        bounds = _check_buckets(fstate.kind, buckets)
        clean = _check_labels(decoded)
        if any(b <= a for a, b in itertools.pairwise(bounds)):
            raise _server_error(
                "Error when creating Metric", "Bucket Boundaries must be strictly sorted"
            )
        if any(not _LABEL.match(name) or name.startswith("__") for name in clean):
            raise _server_error("Error when creating Metric", "Invalid label name")
        key: _LabelKey = tuple(sorted(clean.items()))
        with _lock:
            state = fstate.metrics.get(key)
            if state is None:
                state = _MetricState(clean, bounds, counts=[0] * len(bounds))
                fstate.metrics[key] = state
        self._family = fstate
        self._state = state

    def _live(self, verb: str, operation: str, *kinds: MetricKind) -> _MetricState:
        """The metric's state, once it is known to support ``operation``; call with the lock."""
        fstate = self._family
        if not fstate.alive:
            raise TritonModelException(f"Failed to {verb} metric value: {_FAMILY_DELETED}")
        if fstate.kind not in kinds:
            raise _server_error(
                f"Failed to {verb} metric value",
                f"TRITONSERVER_METRIC_KIND_{fstate.kind.name} does not support {operation}",
            )
        return self._state

    def increment(self, value: float) -> None:
        """Add ``value`` (non-negative for counters) to a counter or gauge."""
        number = _number(self, "increment", value)
        with _lock:
            state = self._live("increment", "Increment", MetricKind.COUNTER, MetricKind.GAUGE)
            if self._family.kind is MetricKind.COUNTER and number < 0:
                raise _server_error(
                    "Failed to increment metric value",
                    "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                    "non-negative values.",
                )
            state.value += number

    def set(self, value: float) -> None:
        """Set a gauge to ``value``."""
        number = _number(self, "set", value)
        with _lock:
            self._live("set", "Set", MetricKind.GAUGE).value = number

    def value(self) -> float:
        """Return the current value of a counter or gauge."""
        with _lock:
            return self._live("get", "Value", MetricKind.COUNTER, MetricKind.GAUGE).value

    def observe(self, value: float) -> None:
        """Record one observation of ``value`` in a histogram (in the first bucket whose upper
        bound is ``>= value``)."""
        number = _number(self, "observe", value)
        with _lock:
            state = self._live("observe", "Observe", MetricKind.HISTOGRAM)
            index = bisect.bisect_left(state.bounds, number)
            if index < len(state.counts):
                state.counts[index] += 1
            state.total += number
            state.observations += 1

    def __repr__(self) -> str:
        return f"Metric({self._family.name!r}, labels={self._state.labels})"


def _number(metric: Metric, method: str, value: Any) -> float:
    number = _pybind.number_arg(value)
    if number is None:
        raise _pybind.incompatible(method, "(self: Metric, arg0: float) -> None", (metric, value))
    return number


def _check_labels(decoded: Any) -> dict[str, str]:
    """The labels read back from their JSON form, as Triton's core reads them."""
    if decoded is None:
        return {}
    clean: dict[str, str] = {}
    for key, val in decoded.items():
        if not isinstance(val, str):
            raise _server_error(
                "Error when creating Metric", "attempt to access JSON non-string as string"
            )
        clean[key] = val
    return clean


def _check_buckets(kind: MetricKind, buckets: Any) -> tuple[float, ...]:
    if buckets is None:
        if kind is MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        return ()
    if not isinstance(buckets, list):
        raise TritonModelException("Failed to create metric. Buckets must be a list.")
    if kind is not MetricKind.HISTOGRAM:
        raise TritonModelException("Failed to create metric. Unexpected buckets found.")
    bounds = [_pybind.number_arg(b) for b in buckets]
    if any(b is None for b in bounds):
        raise RuntimeError(_pybind.CAST_ERROR)
    return tuple(b for b in bounds if b is not None)
