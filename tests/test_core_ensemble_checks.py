"""Triton's checks of an ensemble configuration, and the reshaping between steps, as units.

The messages are Triton 2.51's (poll-time ones are only logged there; the load-time ones are
compared with a real server by ``tests/conformance/cases_ensemble.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from mock_server.core.config_checks import validate_config_on_poll
from mock_server.core.ensemble import reshape_for
from mock_server.core.ensemble_checks import (
    check_composition,
    check_dataflow,
    composing_models,
    dims_match,
    ensemble_steps,
)
from mock_server.core.errors import ErrorKind, ServerError
from tritonclient._proto import model_config_pb2 as mc


def config(**fields: Any) -> mc.ModelConfig:
    return json_format.ParseDict(fields, mc.ModelConfig())


def io(name: str, dims: tuple[int, ...] = (4,), datatype: str = "TYPE_FP32", **kw: Any) -> dict:
    return {"name": name, "data_type": datatype, "dims": list(dims), **kw}


def step(model: str, inputs: dict[str, str], outputs: dict[str, str], version: int = -1) -> dict:
    return {
        "model_name": model,
        "model_version": version,
        "input_map": inputs,
        "output_map": outputs,
    }


def ensemble(steps: list[dict], inputs: Any = None, outputs: Any = None, batch: int = 8) -> Any:
    return config(
        name="e",
        platform="ensemble",
        max_batch_size=batch,
        input=inputs or [io("IN")],
        output=outputs or [io("OUT")],
        ensemble_scheduling={"step": steps},
    )


def model(name: str, inputs: list[dict], outputs: list[dict], batch: int = 8, **kw: Any) -> Any:
    return config(
        name=name, backend="python", max_batch_size=batch, input=inputs, output=outputs, **kw
    )


UNARY = model("unary", [io("X")], [io("Y")])


def test_steps_and_composing_models() -> None:
    e = ensemble(
        [step("a", {"X": "IN"}, {"Y": "t"}), step("b", {"X": "t"}, {"Y": "OUT"}, 2)]
        + [step("a", {"X": "t"}, {"Y": "u"}, 3)]
    )
    assert [s.model_name for s in ensemble_steps(e)] == ["a", "b", "a"]
    assert composing_models(e) == {"a": (-1, 3), "b": (2,)}


@pytest.mark.parametrize(
    ("steps", "inputs", "outputs", "message"),
    [
        ([step("m", {"X": "IN"}, {"Y": "OUT"})], None, None, None),
        (
            [step("m", {"X": "IN"}, {"Y": "OUT"}), step("m", {"X": "IN"}, {"Y": "OUT"})],
            None,
            None,
            "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'e' step 1",
        ),
        (
            [step("m", {"X": "IN"}, {"Y": "OUT"})],
            [io("IN"), io("SPARE")],
            None,
            "ensemble input 'SPARE' for ensemble e' is not used",
        ),
        (
            [step("m", {"X": "IN"}, {"Y": "OUT"})],
            None,
            [io("OUT"), io("NEVER")],
            "ensemble output 'NEVER' for ensemble e' is not used",
        ),
        (
            [step("m", {"X": "IN"}, {"Y": "t"}), step("m", {"X": "t"}, {"Y": "dead"})],
            None,
            [io("t")],
            "ensemble tensor 'dead' is unused in ensemble 'e'",
        ),
        (
            [step("m", {"X": "ghost"}, {"Y": "OUT"}), step("m", {"X": "IN"}, {"Y": "t"})],
            None,
            [io("OUT"), io("t")],
            "output 'OUT' for ensemble 'e' is not written",
        ),
        (
            [
                step("m", {"X": "loop_b"}, {"Y": "loop_a"}),
                step("m", {"X": "loop_a"}, {"Y": "loop_b"}),
                step("m", {"X": "IN"}, {"Y": "OUT"}),
            ],
            None,
            None,
            "ensemble tensor 'loop_a' is unused in ensemble 'e'",
        ),
        (
            [step("", {"X": "IN"}, {"Y": "OUT"})],
            None,
            None,
            "must specify 'model_name' in step 0 of ensemble 'e'",
        ),
    ],
)
def test_dataflow(steps: list[dict], inputs: Any, outputs: Any, message: str | None) -> None:
    e = ensemble(steps, inputs, outputs)
    if message is None:
        check_dataflow(e)
        return
    with pytest.raises(ServerError) as info:
        check_dataflow(e)
    assert info.value.kind is ErrorKind.INVALID_ARG and info.value.message == message


def test_dataflow_is_part_of_the_poll_time_checks() -> None:
    e = ensemble([step("m", {"X": "IN"}, {"Y": "elsewhere"})])
    e.version_policy.latest.num_versions = 1
    with pytest.raises(ServerError, match="ensemble output 'OUT' for ensemble e' is not used"):
        validate_config_on_poll(e)


@pytest.mark.parametrize(
    ("steps", "composing", "message"),
    [
        (
            [step("unary", {"NOPE": "IN"}, {"Y": "OUT"})],
            {"unary": UNARY},
            "in ensemble e, ensemble tensor IN is mapping to non-existing input NOPE in model "
            "unary",
        ),
        (
            [step("pair", {"A": "IN"}, {"Y": "OUT"})],
            {"pair": model("pair", [io("A"), io("B")], [io("Y")])},
            "in ensemble e, input B in model pair is not mapped to any ensemble tensors",
        ),
        (
            [step("unary", {"X": "IN"}, {"Y": "OUT"})],
            {"unary": model("unary", [io("X", (3,))], [io("Y")])},
            "in ensemble e, ensemble tensor IN: inconsistent shape: [-1,4] is inferred from model "
            "e while [-1,3] is inferred from model unary",
        ),
        (
            [step("unary", {"X": "IN"}, {"Y": "OUT"})],
            {"unary": model("unary", [io("X")], [io("Y")], batch=2)},
            "ensemble e allows maximum batch size 8, but it contains model unary which only "
            "allows maximum batch size to be 2",
        ),
    ],
)
def test_composition_errors(steps: list[dict], composing: dict[str, Any], message: str) -> None:
    with pytest.raises(ServerError) as info:
        check_composition(ensemble(steps), composing)
    assert info.value.kind is ErrorKind.INVALID_ARG and info.value.message == message


def test_optional_inputs_may_stay_unmapped_and_full_shapes_may_match() -> None:
    optional = model("opt", [io("X"), io("Z", optional=True)], [io("Y")])
    assert not check_composition(
        ensemble([step("opt", {"X": "IN"}, {"Y": "OUT"})]), {"opt": optional}
    )
    # A non-batching [-1, 4] tensor meets a batching [4] one: their full shapes agree.
    flat = ensemble(
        [step("unary", {"X": "IN"}, {"Y": "OUT"})], [io("IN", (-1, 4))], [io("OUT", (-1, 4))], 0
    )
    assert not check_composition(flat, {"unary": UNARY})


def test_decoupled_steps_make_the_ensemble_decoupled_and_may_not_meet() -> None:
    streaming = model(
        "streaming", [io("X")], [io("Y")], model_transaction_policy={"decoupled": True}
    )
    pair = model("pair", [io("A"), io("B")], [io("Y")])
    chain = ensemble(
        [step("streaming", {"X": "IN"}, {"Y": "t"}), step("unary", {"X": "t"}, {"Y": "OUT"})]
    )
    assert check_composition(chain, {"streaming": streaming, "unary": UNARY})
    joined = ensemble(
        [
            step("streaming", {"X": "IN"}, {"Y": "s"}),
            step("unary", {"X": "IN"}, {"Y": "u"}),
            step("pair", {"A": "s", "B": "u"}, {"Y": "joined"}),
            step("unary", {"X": "joined"}, {"Y": "OUT"}),
        ]
    )
    with pytest.raises(ServerError) as info:
        check_composition(joined, {"streaming": streaming, "unary": UNARY, "pair": pair})
    assert info.value.message == (
        "in ensemble e, step of model 'pair' receives inputs originated from different decoupled "
        "models"
    )


@pytest.mark.parametrize(
    ("dims", "batching", "tensor_batch", "shape", "expected"),
    [
        ((4,), True, 2, (2, 4), (2, 4)),  # both batch: as it is
        ((4,), True, 0, (4,), (1, 4)),  # to a batching model from a non-batching one
        ((2, 4), True, 0, (2, 4), (1, 2, 4)),  # its shape fits the dims: a batch of 1
        ((4,), True, 0, (2, 4), (2, 4)),  # already carries a batch dimension
        ((4,), False, 1, (1, 4), (4,)),  # to a non-batching model: batch of 1 dropped
        ((1, 4), False, 1, (1, 4), (1, 4)),  # ...unless the shape already fits
        ((4,), False, 3, (3, 4), (3, 4)),  # a larger batch cannot be dropped
    ],
)
def test_reshape_between_batching_and_non_batching(
    dims: tuple[int, ...],
    batching: bool,
    tensor_batch: int,
    shape: tuple[int, ...],
    expected: tuple[int, ...],
) -> None:
    assert reshape_for(dims, batching, tensor_batch, shape) == expected


def test_dims_match_with_wildcards() -> None:
    assert dims_match([-1, 4], [3, 4]) and dims_match([2, -1], [2, 9])
    assert not dims_match([4], [1, 4]) and not dims_match([3], [4])
