"""The metrics corpus: what both servers are sent before their Prometheus expositions are read.

Each scenario is a list of steps (:mod:`tests.conformance.wire`) run in order, against the
"metrics" pair (both servers started with ``--model-control-mode=explicit --load-model=*`` on
a few models, used by nothing else); after each, ``test_metrics_differential.py`` reads both
expositions and compares them family by family. Scenarios build on one another (counters only
grow), so they run in this order. Differences kept on purpose are allow-listed as
``metrics/<scenario>/<family>``.

Triton finishes unloading a model after its unload request has been answered (its Python
stub takes about a second to stop): a scenario names the models it unloads, and the test
reads the metrics once they are gone from the per-model families.

This module also reads an exposition (:func:`parse`) and replaces, in a named list of families,
the values two correct servers cannot share (:func:`normalize`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.conformance.wire import H, Pause, Step

#: The models of the "metrics" pair (the ensembles run simple, and fail_modes then ens_probe).
MODELS = (
    "simple",
    "identity_int32",
    "square_int32",
    "fail_modes",
    "custom_metrics",
    "simple_ensemble",
    "ensemble_fail",
    "ens_probe",
)

#: Families whose values are measured times (microseconds): kept only as "0" or ">0", since
#: whether a server counted time at all is a difference, how much is not.
TIMED = frozenset(
    {
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_input_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_inference_compute_output_duration_us",
    }
)

#: Measured times that are about a microsecond a request on either server, so that "0" or ">0"
#: is chance: an ensemble has no queue of its own, and Triton stamps its queue and compute start
#: a few statements apart (a single request reads 0 on one run, 1 on another).
ABOUT_A_MICROSECOND = frozenset(
    ("nv_inference_queue_duration_us", f'{{model="{model}",version="1"}}')
    for model in ("simple_ensemble", "ensemble_fail")
)

#: Families whose values belong to the machine and the moment (CPU load, memory in use): their
#: values are replaced by their shape (a number of the same kind), not compared.
MACHINE = frozenset({"nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"})


def _infer(model: str, name: str, datatype: str, shape: list[int], data: list[Any]) -> H:
    body = {"inputs": [{"name": name, "datatype": datatype, "shape": shape, "data": data}]}
    return H("POST", f"/v2/models/{model}/infer", body)


def _load(model: str) -> H:
    return H("POST", f"/v2/repository/models/{model}/load")


def _unload(model: str) -> H:
    return H("POST", f"/v2/repository/models/{model}/unload")


def _custom(value: float) -> H:
    return _infer("custom_metrics", "VALUE", "FP64", [1], [value])


_SIMPLE = {
    "inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [2, 16], "data": list(range(32))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [2, 16], "data": [1] * 32},
    ]
}


@dataclass(frozen=True)
class Scenario:
    """Requests sent to both servers before their metrics are compared.

    Attributes
    ----------
    id : str
        ``metrics/<what>``; the prefix of its allow-list entries.
    steps : sequence of Step
        The requests, in order.
    unloaded : tuple of str
        Models the steps unload: the metrics are read once these are gone from
        ``nv_inference_count``.
    """

    id: str
    steps: Sequence[Step]
    unloaded: tuple[str, ...] = ()


SCENARIOS: list[Scenario] = [
    # As started: every family a CPU-only Triton 2.51 reports with default flags, all zero.
    Scenario("metrics/startup", []),
    Scenario(
        "metrics/traffic",
        [
            H("POST", "/v2/models/simple/infer", _SIMPLE),
            H("POST", "/v2/models/simple/infer", _SIMPLE),
            _infer("identity_int32", "INPUT0", "INT32", [1, 3], [1, 2, 3]),
            # Refused by validation: never reaches the model, counted nowhere.
            _infer("identity_int32", "INPUT0", "INT32", [3], [1, 2, 3]),
            # An answer, an error response (a success for Triton 2.51), a failed execute.
            *(_infer("fail_modes", "MODE", "INT32", [1], [mode]) for mode in (0, 1, 2)),
            H("POST", "/v2/models/square_int32/generate_stream", {"IN": 3}),
            H("POST", "/v2/models/square_int32/generate", {"IN": -1}),
            # An ensemble runs its steps (counted there too); a failed one counts twice.
            H("POST", "/v2/models/simple_ensemble/infer", _SIMPLE),
            *(_infer("ensemble_fail", "MODE", "INT32", [1], [mode]) for mode in (0, 1)),
            *(_custom(value) for value in (0.25, 3.0, 1e20, -1.5, 1.0)),
            Pause(0.5),  # decoupled requests count once their execute has returned
        ],
    ),
    # Per-model samples go, but the failure counters and the custom metrics the model held
    # (the ensemble that runs fail_modes goes with it).
    Scenario(
        "metrics/unloaded",
        [_unload("custom_metrics"), _unload("fail_modes")],
        unloaded=("custom_metrics", "fail_modes", "ensemble_fail"),
    ),
    # Reloaded models continue their failure counters and custom metrics (the ensemble comes
    # back with fail_modes).
    Scenario(
        "metrics/reloaded",
        [
            _load("custom_metrics"),
            _load("fail_modes"),
            _custom(2.5),
            _infer("fail_modes", "MODE", "INT32", [1], [2]),
            _infer("ensemble_fail", "MODE", "INT32", [1], [2]),
        ],
    ),
    # No model left: the per-model families have no sample and are not written at all.
    Scenario(
        "metrics/no-models",
        [_unload(model) for model in MODELS],
        unloaded=MODELS,
    ),
]


# -- reading an exposition -----------------------------------------------------------------------
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?P<labels>\{.*\})? (?P<value>\S+)$")
_LE = re.compile(r',?le="[^"]*"')


@dataclass
class Family:
    """One family of an exposition, as written.

    Attributes
    ----------
    name : str
        The family's name (from its ``# TYPE`` line).
    help : str
        Its ``# HELP`` line, whole.
    type : str
        Its ``# TYPE`` line, whole.
    metrics : dict of str to list of str
        Its sample lines grouped by metric: the key is the labels as written, less a
        histogram bucket's ``le``; the lines keep their order (a histogram's ``_count``,
        ``_sum``, then buckets). Triton writes the metrics of a family in hash order, so their
        order is not compared, only the lines of each.
    """

    name: str
    help: str
    type: str
    metrics: dict[str, list[str]]


def parse(text: str) -> list[Family]:
    """The families of a Prometheus text exposition, in order.

    Raises
    ------
    ValueError
        For text that is not in the format (a sample outside a family, an unreadable line).
    """
    families: list[Family] = []
    help_line = ""
    for line in text.split("\n"):
        if not line:
            continue
        if line.startswith("# HELP "):
            help_line = line
        elif line.startswith("# TYPE "):
            families.append(Family(line.split(" ")[2], help_line, line, {}))
            help_line = ""
        elif help_line:
            help_line += "\n" + line  # a HELP text with a newline, written raw as Triton does
        else:
            match = _SAMPLE.match(line)
            if match is None or not families:
                raise ValueError(f"not a sample line of a family: {line!r}")
            key = _LE.sub("", match.group("labels") or "")
            families[-1].metrics.setdefault(key, []).append(line)
    return families


def _value_shape(value: str) -> str:
    """ "<number>" for a number written as prometheus-cpp writes it (``%.16g``); the text
    itself otherwise, so that a number written another way ("0.0", "2.5e+10") still differs."""
    try:
        number = float(value)
    except ValueError:
        return value
    return "<number>" if format(number, ".16g") == value else value


def normalize(family: Family) -> Family:
    """``family`` with the values of :data:`TIMED` and :data:`MACHINE` families replaced (those
    of :data:`ABOUT_A_MICROSECOND` by one text whatever they are)."""
    if family.name not in TIMED and family.name not in MACHINE:
        return family
    metrics: dict[str, list[str]] = {}
    for key, lines in family.metrics.items():
        replaced = []
        for line in lines:
            head, _, value = line.rpartition(" ")
            if (family.name, key) in ABOUT_A_MICROSECOND:
                timed = "0 or >0"
            else:
                timed = "0" if value == "0" else ">0"
            replaced.append(f"{head} {timed if family.name in TIMED else _value_shape(value)}")
        metrics[key] = replaced
    return Family(family.name, family.help, family.type, metrics)
