"""Sequence id 0: "no sequence", and what each kind of model makes of it, against Triton 2.51.

* An iterative sequence model (``sequence_batching { iterative_sequence: true }``) gives a
  request without a correlation id (0, "" or none) a sequence of its own: ids 1, 2, ... per
  model, with the START flag only; a sequence ends when the model releases its request
  without rescheduling it, so a later request of it needs START again.
* Other sequence models refuse such a request ("must specify a non-zero or non-empty
  correlation ID"), START flag or not.
* Models without sequence batching take it as it comes.

Runs on the "ensemble" pair (``iterative_probe``, ``iterative_probe_decoupled``,
``simple_sequence`` and ``ens_probe`` are in it); the ids the cases see depend on the order
they run in, the same on both servers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.cases_ensemble import PAIR
from tests.conformance.cases_grpc import infer_request, tensor
from tests.conformance.cases_http import infer
from tests.conformance.cases_http import tensor as json_tensor
from tests.conformance.wire import GS, G, Pause, Step

#: Request parameters of the cases, in order (each is one request).
FLAGS: tuple[dict[str, Any], ...] = (
    {},
    {"sequence_id": 0},
    {"sequence_id": 0, "sequence_start": True},
    {"sequence_id": 0, "sequence_end": True},
    {"sequence_start": True, "sequence_end": True},
    {"sequence_id": ""},
    {"sequence_id": 9, "sequence_start": True},
    {"sequence_id": 9},  # the sequence ended with its first request
    {"sequence_id": 9, "sequence_start": True, "sequence_end": True},
    {"sequence_id": "s", "sequence_start": True},
)


#: Where the cases wait: after the request that starts sequence 9. The model's release of that
#: request ends the sequence, and both servers take the release after the response is on its
#: way (Triton 2.51 when the stub's ``execute`` has returned), so a client that sends the next
#: request at once races the release. Triton once took that request into the still-open
#: sequence (flags 0) while the bundled server had ended it.
_RELEASED_AFTER = 6


def _paced(steps: list[Step]) -> list[Step]:
    return [*steps[: _RELEASED_AFTER + 1], Pause(0.5), *steps[_RELEASED_AFTER + 1 :]]


def _http(model: str, parameters: dict[str, Any], shape: list[int]) -> Step:
    body: dict[str, Any] = {"inputs": [json_tensor("IN", "INT32", shape, [1])]}
    if parameters:
        body["parameters"] = parameters
    return infer(model, body)


def _grpc(model: str, parameters: dict[str, Any], shape: list[int]) -> Any:
    raw = np.ones(shape, dtype=np.int32).tobytes()
    return infer_request(model, [(tensor("IN", "INT32", shape), raw)], parameters=parameters)


def cases() -> list[Case]:
    """The sequence-id cases (on the "ensemble" pair)."""
    simple = [
        infer(
            "simple_sequence",
            {"inputs": [json_tensor("INPUT", "INT32", [1, 1], [1])], "parameters": parameters},
        )
        for parameters in FLAGS[:6]
    ]
    return [
        Case(
            "sequence-id/http/iterative",
            _paced([_http("iterative_probe", p, [1]) for p in FLAGS]),
            PAIR,
        ),
        Case(
            "sequence-id/grpc/iterative",
            _paced([G("ModelInfer", _grpc("iterative_probe", p, [1])) for p in FLAGS]),
            PAIR,
        ),
        Case(
            "sequence-id/grpc/iterative-decoupled",
            _paced([GS([_grpc("iterative_probe_decoupled", p, [1])]) for p in FLAGS]),
            PAIR,
        ),
        Case("sequence-id/http/sequence-model", simple, PAIR),
        Case(
            "sequence-id/http/no-sequence-model", [_http("ens_probe", p, [1]) for p in FLAGS], PAIR
        ),
    ]
