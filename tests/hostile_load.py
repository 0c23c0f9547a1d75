"""The suite's hostile inputs (``tests/test_hostile_input.py``) sent to a running server while
good traffic runs from other client processes (``tests/loadgen.py``): what the robustness test
(``tests/test_load.py``) checks and ``benchmarks/stress.py --hostile`` measures.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests import loadgen
from tests import test_hostile_input as hostile

__all__ = ["GOOD", "Attacked", "attacks", "under_attack"]

#: Good traffic while the attacks run: small requests over both protocols, an ensemble, a
#: decoupled stream and BYTES.  (Not shared memory: some attacks unregister every region, which
#: any client may do: a region's name is global.)
GOOD = ["small_http", "small_grpc", "ensemble_http", "stream_grpc", "bytes_http"]

#: How long good traffic runs beside the attacks (one round of them takes 11-35 s on a 2-core
#: machine, most of it the decompression bombs).
ATTACK_SECONDS = 60.0


def attacks() -> list[tuple[str, Callable[[Any], None]]]:
    """Every test of ``tests/test_hostile_input.py`` that attacks through the network alone (not
    through the in-process server's objects), with each of its parameter sets."""
    skipped = {
        # Good traffic, not attacks (run here as the traffic itself).
        "test_concurrent_http_connections",
        "test_concurrent_grpc_streams",
        "test_http_and_grpc_same_model",
        # A timed assertion of its own, meant for a quiet server.
        "test_slow_model_does_not_stall_simple",
    }
    attacks: list[tuple[str, Callable[[Any], None]]] = []
    for name, function in inspect.getmembers(hostile, inspect.isfunction):
        if not name.startswith("test_") or name in skipped:
            continue
        if {"core", "app"} & set(function.__code__.co_names):
            continue  # reaches into the server's objects: needs the in-process server
        grids: list[list[dict[str, Any]]] = []
        for mark in getattr(function, "pytestmark", []):
            if mark.name != "parametrize":
                continue
            names = (
                [n.strip() for n in mark.args[0].split(",")]
                if isinstance(mark.args[0], str)
                else list(mark.args[0])
            )
            values = mark.args[1]
            grids.append(
                [dict(zip(names, v if len(names) > 1 else (v,), strict=True)) for v in values]
            )
        for combination in itertools.product(*grids) if grids else [()]:
            params: dict[str, Any] = {}
            for part in combination:
                params.update(part)
            attacks.append(
                (f"{name}{params or ''}", lambda server, f=function, p=params: f(server, **p))
            )
    return attacks


@dataclass
class Attacked:
    """Good traffic on a quiet server, then beside one round of every attack."""

    quiet: list[loadgen.Outcome] = field(default_factory=list)
    attacked: list[loadgen.Outcome] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # attacks whose own checks failed
    window: tuple[float, float] = (0.0, 0.0)  # time.time() when the attacks began and ended

    def p99_quiet(self) -> float:
        return max(o.p99() for o in self.quiet)

    def p99_attacked(self) -> float:
        """The p99 of the good requests that started while the attacks ran."""
        return max(o.p99_between(*self.window) for o in self.attacked)


def under_attack(
    server: Any, quiet_seconds: float = 10.0, big: int = 1 << 20, rate: float = 0.0
) -> Attacked:
    """Warm up, run :data:`GOOD` traffic for ``quiet_seconds``, then again while every attack
    runs once (from this process) against ``server`` (a :class:`tests.loadgen.Served`); the
    good traffic as fast as answers come, or ``rate`` requests per second per client."""
    http, grpc = server.http, server.grpc
    loadgen.run_workloads(http, grpc, GOOD, seconds=5.0, big=big)  # warm-up
    result = Attacked(
        quiet=loadgen.run_workloads(http, grpc, GOOD, seconds=quiet_seconds, big=big, rate=rate)
    )
    marks: list[float] = []

    def attack() -> None:
        time.sleep(2.0)  # the workers' own warm-up first
        marks.append(time.time())
        for name, run in attacks():
            try:
                run(server)
            except Exception as exc:
                result.failures.append(f"{name}: {type(exc).__name__}: {exc}"[:500])
        marks.append(time.time())

    result.attacked = loadgen.run_workloads(
        http, grpc, GOOD, seconds=ATTACK_SECONDS, big=big, during=attack, rate=rate
    )
    result.window = (marks[0], marks[1])
    return result
