"""Per-model-version inference statistics (the statistics extension).

:class:`ModelStats` records what Triton's ``InferenceStatsAggregator`` records and reads
out as a :class:`StatsSnapshot`, plain data in the statistics extension's schema that each
frontend renders in its own wire form (HTTP JSON, protocol reference section 3.11; a
``ModelStatistics`` message, section 4.6).  :class:`StatsRegistry` holds
one recorder per loaded model version and answers statistics requests.

How the numbers are accumulated follows Triton's core (``infer_stats.cc``):

* per request, on success (:meth:`ModelStats.record_success`): ``success`` (request
  duration), ``queue``, ``compute_input``, ``compute_infer``, ``compute_output`` each
  count 1, and ``inference_count`` grows by the request's batch size (1 for a
  non-batching model);
* per request, on failure (:meth:`ModelStats.record_failure`): ``fail`` counts 1 with the
  time from the request's arrival at the core to its failure.  Requests rejected by
  validation never reach a model and are not recorded (as in Triton);
* per model execution (:meth:`ModelStats.record_execution`): ``execution_count`` grows by
  1, ``batch_stats`` for the executed batch size count 1, and ``last_inference`` becomes
  the current wall-clock time in ms;
* per response (:meth:`ModelStats.record_response`): the entry of ``response_stats`` keyed by
  the response index; only backends that report per-response statistics fill it, and Triton
  2.51's Python backend does not, so this server leaves ``response_stats`` empty (``{}``);
* cache hits and misses (:meth:`ModelStats.record_cache_hit`,
  :meth:`ModelStats.record_cache_miss`), for completeness.

Durations are nanoseconds, typically differences of :func:`time.monotonic_ns` readings;
negative durations (a clock mix-up) are recorded as 0 rather than raising.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import ServerError

__all__ = [
    "BatchStats",
    "Duration",
    "InferStats",
    "ModelStats",
    "ResponseStats",
    "StatsRegistry",
    "StatsSnapshot",
    "epoch_ms",
]


def epoch_ms() -> int:
    """Return the current wall-clock time in milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def _ns(value: int) -> int:
    return value if value > 0 else 0


@dataclass
class Duration:
    """A cumulative duration statistic (``StatisticDuration``).

    Attributes
    ----------
    count : int
        Number of occurrences.
    ns : int
        Total nanoseconds over all occurrences.
    """

    count: int = 0
    ns: int = 0

    def add(self, ns: int) -> None:
        """Count one occurrence lasting ``ns`` nanoseconds."""
        self.count += 1
        self.ns += _ns(ns)


def _copy_of(stats: Any) -> Any:
    return type(stats)(
        **{
            f.name: Duration(getattr(stats, f.name).count, getattr(stats, f.name).ns)
            if isinstance(getattr(stats, f.name), Duration)
            else getattr(stats, f.name)
            for f in fields(stats)
        }
    )


@dataclass
class InferStats:
    """Request-level statistics (``InferStatistics``), in the protocol's key order."""

    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    queue: Duration = field(default_factory=Duration)
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)
    cache_hit: Duration = field(default_factory=Duration)
    cache_miss: Duration = field(default_factory=Duration)


@dataclass
class BatchStats:
    """Statistics of the executions of one batch size (``InferBatchStatistics``)."""

    batch_size: int
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)


@dataclass
class ResponseStats:
    """Statistics of the responses with one index (``InferResponseStatistics``)."""

    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)
    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    empty_response: Duration = field(default_factory=Duration)
    cancel: Duration = field(default_factory=Duration)


@dataclass
class StatsSnapshot:
    """One model version's statistics at one moment (an element of ``model_stats``).

    Plain data whose fields, names and nesting are the statistics extension's schema, in
    Triton's key order, so a frontend renders it directly: :func:`dataclasses.asdict` is the
    HTTP JSON element, and the same mapping fills a ``ModelStatistics`` message.  ``version``
    is a string and ``response_stats`` is keyed by the response index as a string, as both
    wire forms have them.
    """

    name: str
    version: str
    last_inference: int
    inference_count: int
    execution_count: int
    inference_stats: InferStats
    response_stats: dict[str, ResponseStats]
    batch_stats: list[BatchStats]
    memory_usage: list[dict[str, Any]] = field(default_factory=list)


class ModelStats:
    """Thread-safe statistics recorder for one model version.

    Parameters
    ----------
    name : str
        Model name.
    version : int
        Model version.
    clock_ms : callable, optional
        Returns the wall-clock time in ms since the epoch for ``last_inference``;
        :func:`epoch_ms` by default.

    Notes
    -----
    The read accessors return copies taken under the lock, so a reader never sees a
    half-applied update.
    """

    def __init__(self, name: str, version: int, *, clock_ms: Callable[[], int] = epoch_ms):
        self.name = name
        self.version = version
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._last_inference = 0
        self._inference_count = 0
        self._execution_count = 0
        self._infer = InferStats()
        self._batches: dict[int, BatchStats] = {}
        self._responses: dict[int, ResponseStats] = {}

    def __repr__(self) -> str:
        return f"ModelStats({self.name!r}, {self.version})"

    # -- recording -------------------------------------------------------------------

    def record_success(
        self,
        batch_size: int,
        queue_ns: int,
        compute_input_ns: int,
        compute_infer_ns: int,
        compute_output_ns: int,
        *,
        request_ns: int | None = None,
    ) -> None:
        """Record one request that completed successfully.

        Parameters
        ----------
        batch_size : int
            The request's batch size; values below 1 count as 1 (non-batching models).
            Added to ``inference_count``.
        queue_ns : int
            Time from entering the scheduler queue to the start of execution.
        compute_input_ns, compute_infer_ns, compute_output_ns : int
            The request's share of the execution: input preparation, the model's
            computation and output handling.
        request_ns : int, optional
            End-to-end time from the request's arrival at the core to its completion,
            added to ``success``; defaults to the sum of the four durations above.
        """
        total = (
            request_ns
            if request_ns is not None
            else _ns(queue_ns)
            + _ns(compute_input_ns)
            + _ns(compute_infer_ns)
            + _ns(compute_output_ns)
        )
        with self._lock:
            self._inference_count += max(1, batch_size)
            self._infer.success.add(total)
            self._infer.queue.add(queue_ns)
            self._infer.compute_input.add(compute_input_ns)
            self._infer.compute_infer.add(compute_infer_ns)
            self._infer.compute_output.add(compute_output_ns)

    def record_failure(self, duration_ns: int) -> None:
        """Record one request that failed after reaching the model's scheduler.

        Parameters
        ----------
        duration_ns : int
            Time from the request's arrival at the core to its failure (Triton's
            ``request_end_ns - request_start_ns``).  Covers queue rejections, timeouts,
            cancellations and model errors; validation failures are not recorded.
        """
        with self._lock:
            self._infer.fail.add(duration_ns)

    def record_execution(
        self,
        batch_size: int,
        compute_input_ns: int,
        compute_infer_ns: int,
        compute_output_ns: int,
    ) -> None:
        """Record one model execution (a whole dynamic batch counts once).

        Parameters
        ----------
        batch_size : int
            Total batch size executed (values below 1 count as 1).
        compute_input_ns, compute_infer_ns, compute_output_ns : int
            Durations of the execution's phases.

        Notes
        -----
        Updates ``execution_count``, the ``batch_stats`` entry for ``batch_size`` and
        ``last_inference``.  ``inference_count`` is counted per successful request by
        :meth:`record_success`, as in Triton, so that failed requests of an executed batch
        are not counted as inferences.
        """
        now_ms = self._clock_ms()
        size = max(1, batch_size)
        with self._lock:
            self._last_inference = max(self._last_inference, now_ms)
            self._execution_count += 1
            batch = self._batches.get(size)
            if batch is None:
                batch = self._batches[size] = BatchStats(size)
            batch.compute_input.add(compute_input_ns)
            batch.compute_infer.add(compute_infer_ns)
            batch.compute_output.add(compute_output_ns)

    def record_response(
        self,
        index: int,
        compute_infer_ns: int,
        compute_output_ns: int,
        success: bool,
        empty: bool = False,
        cancelled: bool = False,
    ) -> None:
        """Record one response of a (decoupled) request.

        Parameters
        ----------
        index : int
            The response's position among its request's responses (0 for the first).
        compute_infer_ns : int
            Time from the start of the response (the request's compute start, or the
            previous response) to the start of its output handling.
        compute_output_ns : int
            Time spent producing the response's outputs.
        success : bool
            Whether the response carries a result (False: an error response).
        empty : bool, optional
            An empty final response (flags only, no outputs).
        cancelled : bool, optional
            The response was cut short by cancellation.

        Notes
        -----
        As in Triton: a cancelled response counts only in ``cancel``; an empty response
        counts in ``compute_infer`` and ``empty_response``; a successful response in
        ``compute_infer``, ``compute_output`` and ``success``; a failed one in
        ``compute_infer``, ``fail`` and (when it had output time) ``compute_output``.  The
        ``success``/``fail``/``empty_response``/``cancel`` durations are the response's
        total time, ``compute_infer_ns + compute_output_ns``.
        """
        if index < 0:
            raise ValueError(f"response index must be >= 0, got {index}")
        infer_ns = _ns(compute_infer_ns)
        output_ns = _ns(compute_output_ns)
        total = infer_ns + output_ns
        with self._lock:
            entry = self._responses.get(index)
            if entry is None:
                entry = self._responses[index] = ResponseStats()
            if cancelled:
                entry.cancel.add(total)
            elif empty:
                entry.compute_infer.add(total)
                entry.empty_response.add(total)
            elif success:
                entry.compute_infer.add(infer_ns)
                entry.compute_output.add(output_ns)
                entry.success.add(total)
            else:
                entry.compute_infer.add(infer_ns)
                if output_ns > 0:
                    entry.compute_output.add(output_ns)
                entry.fail.add(total)

    def record_cache_hit(self, request_ns: int, queue_ns: int, lookup_ns: int) -> None:
        """Record a request answered from the response cache.

        Counts in ``success``, ``queue`` and ``cache_hit``; not in ``inference_count``,
        ``execution_count`` or the ``compute_*`` statistics.
        """
        with self._lock:
            self._infer.success.add(request_ns)
            self._infer.queue.add(queue_ns)
            self._infer.cache_hit.add(lookup_ns)

    def record_cache_miss(self, lookup_and_insert_ns: int) -> None:
        """Record a cache miss (lookup plus insertion time) of an executed request.

        The time is also added to the ``success`` duration (not its count), as Triton does,
        because the insertion happens after :meth:`record_success`.
        """
        with self._lock:
            self._infer.success.ns += _ns(lookup_and_insert_ns)
            self._infer.cache_miss.add(lookup_and_insert_ns)

    # -- reading ---------------------------------------------------------------------

    @property
    def last_inference(self) -> int:
        """Wall-clock ms since the epoch of the last execution; 0 if none."""
        with self._lock:
            return self._last_inference

    @property
    def inference_count(self) -> int:
        """Successful inferences, each batch element counted (cache hits excluded)."""
        with self._lock:
            return self._inference_count

    @property
    def execution_count(self) -> int:
        """Model executions (cache hits excluded)."""
        with self._lock:
            return self._execution_count

    @property
    def inference_stats(self) -> InferStats:
        """A copy of the request-level statistics."""
        with self._lock:
            result: InferStats = _copy_of(self._infer)
            return result

    @property
    def batch_stats(self) -> list[BatchStats]:
        """Copies of the per-batch-size statistics, by ascending batch size."""
        with self._lock:
            return [_copy_of(self._batches[size]) for size in sorted(self._batches)]

    @property
    def response_stats(self) -> dict[str, ResponseStats]:
        """Copies of the per-response statistics keyed ``"0"``, ``"1"``, ... in index order."""
        with self._lock:
            return {str(i): _copy_of(self._responses[i]) for i in sorted(self._responses)}

    @property
    def memory_usage(self) -> list[dict[str, Any]]:
        """Memory used by the model: always empty (not tracked)."""
        return []

    def snapshot(self) -> StatsSnapshot:
        """This version's statistics, copied under the lock (a consistent reading)."""
        with self._lock:
            return StatsSnapshot(
                name=self.name,
                version=str(self.version),
                last_inference=self._last_inference,
                inference_count=self._inference_count,
                execution_count=self._execution_count,
                inference_stats=_copy_of(self._infer),
                response_stats={
                    str(i): _copy_of(self._responses[i]) for i in sorted(self._responses)
                },
                batch_stats=[_copy_of(self._batches[size]) for size in sorted(self._batches)],
            )


def _parse_version(name: str, version: int | str | None) -> int | None:
    """Turn a statistics request's version into an int, or None for "all versions"."""
    if version is None or version == "":
        return None
    if isinstance(version, int):
        return version
    try:
        return int(version)
    except ValueError:
        raise ServerError.invalid_arg(
            f"failed to get model version from specified version string '{version}' for "
            f"model '{name}', version should be an integral value > 0"
        ) from None


class StatsRegistry:
    """The statistics of every loaded model version.

    The model lifecycle makes a recorder with :meth:`new` for each version it starts, hands it
    to :meth:`publish` when the version becomes ready (replacing the recorder of the version it
    reloads) and to :meth:`remove` when the version is unloaded, so that a replaced version
    cannot remove its successor's statistics.  As in Triton, only loaded versions appear
    in statistics, and a reloaded version starts again from zero (Triton builds a new model
    object, with new statistics, on every load).

    The request failures counted by reason for ``nv_inference_request_failure``
    (:meth:`failures`) are kept apart, per model version, for the server's lifetime: Triton 2.51
    never removes those counters, so they survive an unload, keep being reported, and a reload
    continues them.

    Parameters
    ----------
    clock_ms : callable, optional
        Passed to every :class:`ModelStats` created.
    """

    def __init__(self, *, clock_ms: Callable[[], int] = epoch_ms) -> None:
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._models: dict[str, dict[int, ModelStats]] = {}
        self._failures: dict[tuple[str, int], collections.Counter[str]] = {}

    def new(self, name: str, version: int) -> ModelStats:
        """Return a fresh recorder for a version being loaded, not yet reported (see
        :meth:`publish`)."""
        return ModelStats(name, version, clock_ms=self._clock_ms)

    def publish(self, stats: ModelStats) -> None:
        """Report ``stats`` from now on, in place of any recorder of the same version."""
        with self._lock:
            self._models.setdefault(stats.name, {})[stats.version] = stats

    def failures(self, name: str, version: int) -> collections.Counter[str]:
        """The failed-request counter of a model version, by reason (``REJECTED``,
        ``CANCELED``, ``BACKEND``, ``OTHER``); the same counter on every load (get-or-create)."""
        with self._lock:
            return self._failures.setdefault((name, version), collections.Counter())

    def failure_counts(self) -> dict[tuple[str, int], dict[str, int]]:
        """A snapshot of every failure counter ever created, keyed by (model, version)."""
        with self._lock:
            return {key: dict(counter) for key, counter in self._failures.items()}

    def get(self, name: str, version: int) -> ModelStats:
        """Return the recorder of a model version, creating it if needed (get-or-create)."""
        with self._lock:
            versions = self._models.setdefault(name, {})
            stats = versions.get(version)
            if stats is None:
                stats = versions[version] = ModelStats(name, version, clock_ms=self._clock_ms)
            return stats

    def get_or_create(self, name: str, version: int) -> ModelStats:
        """Same as :meth:`get`."""
        return self.get(name, version)

    def find(self, name: str, version: int) -> ModelStats | None:
        """Return the recorder of a model version, or None if it has none (never creates)."""
        with self._lock:
            return self._models.get(name, {}).get(version)

    def remove(self, name: str, version: int | None = None, *, only: object | None = None) -> None:
        """Forget a model version's statistics (all versions when ``version`` is None).

        Parameters
        ----------
        name : str
            Model name.
        version : int, optional
            The version; None removes every version.
        only : ModelStats, optional
            Remove the version's recorder only if it is this very object (a reload has published its
            successor otherwise).

        Notes
        -----
        Removing something that is not there is not an error.
        """
        with self._lock:
            versions = self._models.get(name)
            if versions is None:
                return
            if version is None:
                versions.clear()
            elif only is None or versions.get(version) is only:
                versions.pop(version, None)
            if not versions:
                del self._models[name]

    def collect(
        self, name: str | None = None, version: int | str | None = None
    ) -> list[ModelStats]:
        """Return the recorders a statistics request asks for.

        Parameters
        ----------
        name : str, optional
            Model name; None or ``""`` selects every model (``version`` is then ignored,
            as in Triton).
        version : int or str, optional
            Version; None or ``""`` selects every version of ``name``.

        Returns
        -------
        list of ModelStats
            Ordered by model name, then version.

        Raises
        ------
        ServerError
            ``INVALID_ARG`` for an unknown model (``requested model 'x' is not
            available``), an unknown version (``requested model version is not available
            for model 'm'``) or a version string that is not an integer.
        """
        with self._lock:
            if not name:
                return [
                    self._models[n][v]
                    for n in sorted(self._models)
                    for v in sorted(self._models[n])
                ]
            requested = _parse_version(name, version)
            versions = self._models.get(name)
            if not versions:
                raise ServerError.invalid_arg(f"requested model '{name}' is not available")
            if requested is None:
                return [versions[v] for v in sorted(versions)]
            stats = versions.get(requested)
            if stats is None:
                raise ServerError.invalid_arg(
                    f"requested model version is not available for model '{name}'"
                )
            return [stats]
