"""Custom metrics of Python models (``pb_utils.MetricFamily`` / ``pb_utils.Metric``).

Models create metric families and metrics; they live in one thread-safe, process-wide registry
that the server's metrics endpoint reads with :func:`collect`.  As in Triton:

* two families with the same name share one registry entry when their kind and description
  match (another kind or description under a taken name is an error);
* two metrics of one family with the same labels share one value;
* an entry is removed when the last Python object referring to it is deleted, and everything a
  model instance created is removed when the instance is finalized (unloaded).
"""

from __future__ import annotations

import enum
import itertools
import math
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from . import _context
from ._errors import TritonModelException

__all__ = [
    "Metric",
    "MetricFamily",
    "MetricFamilySnapshot",
    "MetricKind",
    "MetricSample",
    "collect",
    "release_owner",
]

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


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
        The metric's labels.
    value : float or None
        The value of a counter or gauge; None for a histogram.
    buckets : tuple of (float, int) or None
        For a histogram, the cumulative count of observations ``<=`` each upper bound, the last
        bound being ``math.inf``; None otherwise.
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
    refs: int = 0
    alive: bool = True


@dataclass(eq=False)
class _FamilyState:
    name: str
    description: str
    kind: MetricKind
    metrics: dict[_LabelKey, _MetricState] = field(default_factory=dict)
    refs: int = 0
    alive: bool = True


_lock = threading.RLock()
_families: dict[str, _FamilyState] = {}
_owned: dict[int, tuple[object, list[weakref.finalize[Any, Any]]]] = {}


def _own(finalizer: weakref.finalize[Any, Any]) -> None:
    """Record ``finalizer`` under the calling model instance, for :func:`release_owner`."""
    context = _context.current()
    if context is None:
        return
    with _lock:
        _, finalizers = _owned.setdefault(id(context.owner), (context.owner, []))
        if len(finalizers) > 64:
            finalizers[:] = [f for f in finalizers if f.alive]
        finalizers.append(finalizer)


def release_owner(owner: object) -> None:
    """Delete every metric and family created by the model instance identified by ``owner``."""
    with _lock:
        entry = _owned.pop(id(owner), None)
    if entry is None or entry[0] is not owner:
        return
    for finalizer in reversed(entry[1]):
        finalizer()


def _release_family(state: _FamilyState) -> None:
    with _lock:
        state.refs -= 1
        if state.refs > 0:
            return
        state.alive = False
        for metric in state.metrics.values():
            metric.alive = False
        state.metrics.clear()
        if _families.get(state.name) is state:
            del _families[state.name]


def _release_metric(family: _FamilyState, key: _LabelKey, state: _MetricState) -> None:
    with _lock:
        state.refs -= 1
        if state.refs > 0:
            return
        state.alive = False
        if family.metrics.get(key) is state:
            del family.metrics[key]


def collect() -> list[MetricFamilySnapshot]:
    """Return a consistent snapshot of every live custom metric, families sorted by name.

    Returns
    -------
    list of MetricFamilySnapshot
        Plain data for the metrics endpoint to render.
    """
    out: list[MetricFamilySnapshot] = []
    with _lock:
        for name in sorted(_families):
            family = _families[name]
            samples: list[MetricSample] = []
            for metric in family.metrics.values():
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


# -- model-facing classes ------------------------------------------------------------------------
_Kind = MetricKind  # MetricFamily.MetricKind shadows the name inside the class


class MetricFamily:
    """A family of metrics sharing a name, description and kind.

    Parameters
    ----------
    name : str
        Metric name, e.g. ``"preprocess_latency_ns"`` (``[a-zA-Z_:][a-zA-Z0-9_:]*``).
    description : str
        Human-readable description.
    kind : MetricKind
        ``MetricFamily.COUNTER``, ``MetricFamily.GAUGE`` or ``MetricFamily.HISTOGRAM``.

    Raises
    ------
    TritonModelException
        If the name is not a valid metric name, the kind is unknown, or a family with this name
        already exists with another kind or description.
    """

    COUNTER: ClassVar[_Kind] = MetricKind.COUNTER
    GAUGE: ClassVar[_Kind] = MetricKind.GAUGE
    HISTOGRAM: ClassVar[_Kind] = MetricKind.HISTOGRAM
    MetricKind: ClassVar[type[_Kind]] = MetricKind

    def __init__(self, name: str, description: str, kind: _Kind | int) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise TritonModelException(
                f"invalid metric family name {name!r}: expected [a-zA-Z_:][a-zA-Z0-9_:]*"
            )
        if not isinstance(description, str):
            raise TritonModelException(
                f"metric family '{name}': description must be a str, got "
                f"{type(description).__name__}"
            )
        try:
            metric_kind = MetricKind(kind)
        except ValueError:
            raise TritonModelException(
                f"metric family '{name}': unknown kind {kind!r}; expected MetricFamily.COUNTER, "
                "MetricFamily.GAUGE or MetricFamily.HISTOGRAM"
            ) from None
        with _lock:
            state = _families.get(name)
            if state is None:
                state = _FamilyState(name, description, metric_kind)
                _families[name] = state
            elif state.kind is not metric_kind or state.description != description:
                raise TritonModelException(
                    f"metric family '{name}' already exists with kind {state.kind.name} and "
                    f"description {state.description!r}; cannot create it again with kind "
                    f"{metric_kind.name} and description {description!r}"
                )
            state.refs += 1
        self._state = state
        self._finalizer = weakref.finalize(self, _release_family, state)
        _own(self._finalizer)

    def name(self) -> str:
        """Return the family's name."""
        return self._state.name

    def description(self) -> str:
        """Return the family's description."""
        return self._state.description

    def kind(self) -> _Kind:
        """Return the family's kind."""
        return self._state.kind

    def Metric(  # the Python backend's public name
        self, labels: Mapping[str, str] | None = None, buckets: Sequence[float] | None = None
    ) -> Metric:
        """Create (or share) the metric of this family with ``labels``.

        Parameters
        ----------
        labels : dict of str to str, optional
            The metric's labels.
        buckets : list of float, optional
            Histogram bucket upper bounds, increasing; required for (and only for) histograms.

        Returns
        -------
        Metric
        """
        return Metric(self, labels, buckets)

    def __repr__(self) -> str:
        return f"MetricFamily({self._state.name!r}, kind={self._state.kind.name})"


class Metric:
    """One metric (one label set) of a :class:`MetricFamily`.

    Usually created with ``family.Metric(labels=..., buckets=...)``.

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
    TritonModelException
        If the labels are not a mapping of valid label names to str, buckets are missing for a
        histogram or given for another kind, not increasing, or differ from those of an existing
        metric with the same labels.
    """

    def __init__(
        self,
        family: MetricFamily,
        labels: Mapping[str, str] | None = None,
        buckets: Sequence[float] | None = None,
    ) -> None:
        if not isinstance(family, MetricFamily):
            raise TritonModelException(f"Metric needs a MetricFamily, got {type(family).__name__}")
        fstate = family._state
        clean = _check_labels(fstate.name, labels)
        bounds = _check_buckets(fstate, buckets)
        key: _LabelKey = tuple(sorted(clean.items()))
        with _lock:
            if not fstate.alive:
                raise TritonModelException(f"metric family '{fstate.name}' was deleted")
            state = fstate.metrics.get(key)
            if state is None:
                state = _MetricState(clean, bounds, counts=[0] * len(bounds))
                fstate.metrics[key] = state
            elif state.bounds != bounds:
                raise TritonModelException(
                    f"metric family '{fstate.name}': a metric with labels {clean} already exists "
                    f"with buckets {list(state.bounds)}"
                )
            state.refs += 1
        self._family = family  # keeps the family alive as long as its metrics
        self._state = state
        self._finalizer = weakref.finalize(self, _release_metric, fstate, key, state)
        _own(self._finalizer)

    def _live(self, operation: str, *kinds: MetricKind) -> _MetricState:
        fstate = self._family._state
        if fstate.kind not in kinds:
            raise TritonModelException(
                f"metric family '{fstate.name}' of kind {fstate.kind.name} does not support "
                f"{operation}()"
            )
        if not self._state.alive:
            raise TritonModelException(f"a metric of family '{fstate.name}' was deleted")
        return self._state

    def increment(self, value: float) -> None:
        """Add ``value`` (non-negative for counters) to a counter or gauge."""
        number = _number(value, "increment")
        with _lock:
            state = self._live("increment", MetricKind.COUNTER, MetricKind.GAUGE)
            if self._family._state.kind is MetricKind.COUNTER and number < 0:
                raise TritonModelException(
                    f"counter '{self._family._state.name}' can only be incremented by "
                    f"non-negative values, got {number}"
                )
            state.value += number

    def set(self, value: float) -> None:
        """Set a gauge to ``value``."""
        number = _number(value, "set")
        with _lock:
            self._live("set", MetricKind.GAUGE).value = number

    def value(self) -> float:
        """Return the current value of a counter or gauge."""
        with _lock:
            return self._live("value", MetricKind.COUNTER, MetricKind.GAUGE).value

    def observe(self, value: float) -> None:
        """Record one observation of ``value`` in a histogram."""
        number = _number(value, "observe")
        with _lock:
            state = self._live("observe", MetricKind.HISTOGRAM)
            for index, bound in enumerate(state.bounds):
                if number <= bound:
                    state.counts[index] += 1
                    break
            state.total += number
            state.observations += 1

    def __repr__(self) -> str:
        return f"Metric({self._family._state.name!r}, labels={self._state.labels})"


def _number(value: Any, operation: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise TritonModelException(
                f"{operation}() needs a number, got {type(value).__name__}"
            ) from None
    return float(value)


def _check_labels(family: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise TritonModelException(
            f"metric of family '{family}': labels must be a dict of str to str, got "
            f"{type(labels).__name__}"
        )
    clean: dict[str, str] = {}
    for key, val in labels.items():
        if not isinstance(key, str) or not _LABEL.match(key) or key.startswith("__"):
            raise TritonModelException(f"metric of family '{family}': invalid label name {key!r}")
        if not isinstance(val, str):
            raise TritonModelException(
                f"metric of family '{family}': label '{key}' must have a str value, got "
                f"{type(val).__name__}"
            )
        clean[key] = val
    return clean


def _check_buckets(family: _FamilyState, buckets: Sequence[float] | None) -> tuple[float, ...]:
    if family.kind is not MetricKind.HISTOGRAM:
        if buckets is not None:
            raise TritonModelException(
                f"metric family '{family.name}' of kind {family.kind.name} does not take buckets; "
                "only histograms do"
            )
        return ()
    if buckets is None:
        raise TritonModelException(
            f"metric of histogram family '{family.name}' needs buckets (increasing upper bounds)"
        )
    try:
        bounds = tuple(float(b) for b in buckets)
    except (TypeError, ValueError):
        raise TritonModelException(
            f"metric of histogram family '{family.name}': buckets must be numbers"
        ) from None
    if any(math.isnan(b) for b in bounds) or any(a >= b for a, b in itertools.pairwise(bounds)):
        raise TritonModelException(
            f"metric of histogram family '{family.name}': buckets must be strictly increasing, "
            f"got {list(bounds)}"
        )
    if bounds and math.isinf(bounds[-1]) and bounds[-1] > 0:
        bounds = bounds[:-1]  # the +Inf bucket is implicit
    return bounds
