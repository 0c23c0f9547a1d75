"""Drive one ``tritonclient`` package through fixed call sequences and print what it returned.

Run by ``test_client_differential.py`` once with this project's interpreter and once with the
interpreter of NVIDIA's ``tritonclient`` 2.73, each with ``PYTHONPATH`` unset and ``cwd="/"``
so that each imports its own package; both drive the same server, one after the other.
This script imports nothing but the standard library, numpy, ml_dtypes and ``tritonclient``.

Usage::

    python client_driver.py --http 127.0.0.1:8000 --grpc 127.0.0.1:8001 [--only PREFIX ...]

Prints one JSON object: ``{"sequences": {id: [[label, outcome], ...]}}`` where an outcome is
``{"ok": value}`` or ``{"error": {...}}`` (plus ``"warnings"`` when the call warned). Values
are plain JSON data: numpy arrays as dtype + shape + list, protobuf messages as dicts,
exceptions as type, message, status and debug details. Names this run made unique (shared
memory keys, model names) are written as ``<run>``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import inspect
import json
import math
import os
import queue
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

import tritonclient.grpc
import tritonclient.grpc.aio
import tritonclient.http
import tritonclient.http.aio
import tritonclient.utils
import tritonclient.utils.cuda_shared_memory as cudashm
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

RUN = f"cd{os.getpid()}x"
"""Prefix of the names (shm keys, models) this run makes; written as ``<run>`` in the output."""
_OTHER_RUNS = re.compile(r"^cd\d+x")
WAIT = 20.0
"""Seconds any wait for a callback or a stream response may take."""

# -- normalising results -----------------------------------------------------------------------


def norm(value: Any) -> Any:
    """``value`` as plain JSON data (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else repr(number)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, np.ndarray):
        data = value
        if value.dtype == ml_dtypes.bfloat16:
            data = value.astype(np.float32)
        return {
            "ndarray": str(value.dtype),
            "shape": list(value.shape),
            "data": norm(data.tolist()),
        }
    if isinstance(value, np.generic):
        return {"scalar": str(value.dtype), "value": norm(value.item())}
    if isinstance(value, dict):
        return {str(k): norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    if isinstance(value, type):
        return {"type": f"{value.__module__}.{value.__qualname__}"}
    if isinstance(value, np.dtype):
        return {"dtype": str(value)}
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "SerializeToString"):
        from google.protobuf import json_format

        return {
            "message": type(value).__name__,
            "fields": norm(json_format.MessageToDict(value, preserving_proto_field_name=True)),
        }
    return {"object": type(value).__name__}


def norm_error(error: BaseException) -> dict[str, Any]:
    """An exception as type, message, status and debug details."""
    if isinstance(error, InferenceServerException):
        return {
            "type": "InferenceServerException",
            "message": error.message(),
            "status": error.status(),
            "debug_details": error.debug_details(),
            "str": str(error),
        }
    return {"type": type(error).__name__, "message": str(error)}


class Recorder:
    """Runs calls, recording each outcome under a label; awaits what a call returns in aio."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.records: list[list[Any]] = []

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` (awaiting its result in an aio sequence) and return what it returned."""
        if self.loop is None:
            return fn(*args, **kwargs)

        async def invoke() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        return self.loop.run_until_complete(asyncio.wait_for(invoke(), WAIT))

    def __call__(
        self, label: str, fn: Callable[..., Any], *args: Any, show: Any = None, **kwargs: Any
    ) -> Any:
        """Record the outcome of ``fn(*args, **kwargs)``; return its result (None on error).

        ``show`` turns the result into what is recorded (default: the result itself).
        """
        outcome: dict[str, Any] = {}
        result = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = self.run(fn, *args, **kwargs)
                outcome["ok"] = norm(show(result) if show is not None else result)
            except (Exception, asyncio.CancelledError) as error:  # every failure is a record
                outcome["error"] = norm_error(error)
        shown = [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]
        if shown:
            outcome["warnings"] = shown
        self.records.append([label, outcome])
        return result

    def note(self, label: str, value: Any) -> None:
        """Record a value computed by the sequence itself."""
        self.records.append([label, {"ok": norm(value)}])


# -- helpers -----------------------------------------------------------------------------------

FLAVOURS = ("grpc", "grpc.aio", "http", "http.aio")


def module(flavour: str) -> Any:
    return {
        "grpc": tritonclient.grpc,
        "grpc.aio": tritonclient.grpc.aio,
        "http": tritonclient.http,
        "http.aio": tritonclient.http.aio,
    }[flavour]


class Ctx:
    """One sequence's client flavour, URLs and recorder."""

    def __init__(self, flavour: str, urls: dict[str, str], rec: Recorder) -> None:
        self.flavour = flavour
        self.grpc = flavour.startswith("grpc")
        self.aio = flavour.endswith("aio")
        self.mod = module(flavour)
        self.url = urls["grpc"] if self.grpc else urls["http"]
        self.rec = rec

    def client(self, **kwargs: Any) -> Any:
        return self.rec.run(lambda: self.mod.InferenceServerClient(self.url, **kwargs))

    def close(self, client: Any) -> None:
        self.rec.run(client.close)

    def json_kw(self) -> dict[str, Any]:
        """The keyword that asks a gRPC client for JSON (HTTP answers JSON already)."""
        return {"as_json": True} if self.grpc else {}

    def inp(self, name: str, shape: list[int], datatype: str, data: Any = None, **kw: Any) -> Any:
        tensor = self.mod.InferInput(name, shape, datatype)
        if data is not None:
            tensor.set_data_from_numpy(data, **kw)
        return tensor

    def out(self, name: str, **kw: Any) -> Any:
        return self.mod.InferRequestedOutput(name, **kw)

    def simple_inputs(self, batch: int = 1, **kw: Any) -> list[Any]:
        a = np.arange(16 * batch, dtype=np.int32).reshape(batch, 16)
        b = np.ones((batch, 16), dtype=np.int32)
        return [
            self.inp("INPUT0", [batch, 16], "INT32", a, **kw),
            self.inp("INPUT1", [batch, 16], "INT32", b, **kw),
        ]


def result_view(ctx: Ctx, result: Any, outputs: list[str]) -> dict[str, Any]:
    """What a client's InferResult tells: the response and each output as numpy."""
    response = result.get_response(as_json=True) if ctx.grpc else result.get_response()
    view: dict[str, Any] = {
        "response": response,
        "outputs": {name: result.as_numpy(name) for name in outputs},
        "get_output": {name: result.get_output(name) for name in outputs},
    }
    if ctx.grpc:
        view["get_output_pb"] = [result.get_output(name) for name in outputs]
        view["response_pb"] = result.get_response()
    return view


# -- sequences for every client flavour ----------------------------------------------------------


def seq_health(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    rec("is_server_live", c.is_server_live)
    rec("is_server_ready", c.is_server_ready)
    rec("is_model_ready", c.is_model_ready, "simple")
    rec("is_model_ready v1", c.is_model_ready, "simple", "1")
    rec("is_model_ready v9", c.is_model_ready, "simple", "9")
    rec("is_model_ready unknown", c.is_model_ready, "no_such_model")
    rec("is_model_ready int version", c.is_model_ready, "simple", 1)
    ctx.close(c)


def seq_metadata(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    rec("server metadata", c.get_server_metadata)
    rec("server metadata json", c.get_server_metadata, **ctx.json_kw())
    rec("model metadata", c.get_model_metadata, "simple")
    rec("model metadata json", c.get_model_metadata, "simple", **ctx.json_kw())
    rec("model metadata v1", c.get_model_metadata, "simple", "1")
    rec("model metadata v9", c.get_model_metadata, "simple", "9")
    rec("model metadata bad version", c.get_model_metadata, "simple", "x")
    rec("model metadata unknown", c.get_model_metadata, "no_such_model")
    rec("model metadata int version", c.get_model_metadata, "simple", 1)
    rec("model config", c.get_model_config, "simple")
    rec("model config json", c.get_model_config, "simple", **ctx.json_kw())
    rec("model config bf16", c.get_model_config, "identity_bf16", **ctx.json_kw())
    rec("model config unknown", c.get_model_config, "no_such_model")
    rec("model config v9", c.get_model_config, "simple", "9")
    if not ctx.grpc:
        rec("metadata query", c.get_model_metadata, "simple", query_params={"a": "b"})
        rec("metadata headers", c.get_model_metadata, "simple", headers={"x-a": "b"})
    else:
        rec("metadata headers", c.get_model_metadata, "simple", headers={"x-a": "b"})
    ctx.close(c)


def seq_infer(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    outs = ["OUTPUT0", "OUTPUT1"]

    def view(result: Any) -> Any:
        return result_view(ctx, result, [*outs, "NOPE"])

    rec("infer", c.infer, "simple", ctx.simple_inputs(), show=view)
    rec("infer batch 3", c.infer, "simple", ctx.simple_inputs(3), show=view)
    rec(
        "infer outputs",
        c.infer,
        "simple",
        ctx.simple_inputs(),
        outputs=[ctx.out("OUTPUT1")],
        request_id="req-1",
        model_version="1",
        show=view,
    )
    rec(
        "infer parameters",
        c.infer,
        "simple",
        ctx.simple_inputs(),
        parameters={"custom": "x", "n": 3, "flag": True, "f": 0.5},
        show=view,
    )
    rec("infer priority", c.infer, "simple", ctx.simple_inputs(), priority=1, show=view)
    if not ctx.grpc:
        rec(
            "infer json inputs",
            c.infer,
            "simple",
            ctx.simple_inputs(binary_data=False),
            outputs=[ctx.out("OUTPUT0", binary_data=False), ctx.out("OUTPUT1")],
            show=view,
        )
        for algorithm in ("gzip", "deflate"):
            rec(
                f"infer compressed {algorithm}",
                c.infer,
                "simple",
                ctx.simple_inputs(),
                request_compression_algorithm=algorithm,
                response_compression_algorithm=algorithm,
                show=view,
            )
        rec(
            "infer classification",
            c.infer,
            "simple",
            ctx.simple_inputs(),
            outputs=[ctx.out("OUTPUT0", class_count=3)],
            show=view,
        )
        rec("infer query", c.infer, "simple", ctx.simple_inputs(), query_params={"q": "1"})
    else:
        for algorithm in ("gzip", "deflate"):
            rec(
                f"infer compressed {algorithm}",
                c.infer,
                "simple",
                ctx.simple_inputs(),
                compression_algorithm=algorithm,
                show=view,
            )
        rec(
            "infer classification",
            c.infer,
            "simple",
            ctx.simple_inputs(),
            outputs=[ctx.out("OUTPUT0", class_count=3)],
            show=view,
        )
        rec(
            "infer client_timeout",
            c.infer,
            "simple",
            ctx.simple_inputs(),
            client_timeout=30.0,
            show=view,
        )
    rec(
        "string model",
        c.infer,
        "simple_string",
        [
            ctx.inp("INPUT0", [1, 16], "BYTES", np.array([[str(i) for i in range(16)]], object)),
            ctx.inp("INPUT1", [1, 16], "BYTES", np.array([[b"1"] * 16], dtype=np.bytes_)),
        ],
        show=lambda r: result_view(ctx, r, outs),
    )
    ctx.close(c)


def seq_infer_errors(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    good = ctx.simple_inputs()
    rec("unknown model", c.infer, "no_such_model", good)
    rec("unknown version", c.infer, "simple", good, model_version="9")
    rec("bad version string", c.infer, "simple", good, model_version="x")
    rec("int version", c.infer, "simple", good, model_version=1)
    rec("missing input", c.infer, "simple", good[:1])
    wrong_name = ctx.inp("INPUTX", [1, 16], "INT32", np.zeros((1, 16), np.int32))
    rec("unknown input", c.infer, "simple", [good[0], wrong_name])
    bad_shape = [
        ctx.inp("INPUT0", [1, 8], "INT32", np.zeros((1, 8), np.int32)),
        ctx.inp("INPUT1", [1, 8], "INT32", np.zeros((1, 8), np.int32)),
    ]
    rec("bad shape", c.infer, "simple", bad_shape)
    too_big = ctx.simple_inputs(9)
    rec("batch too big", c.infer, "simple", too_big)
    bad_dtype = [
        ctx.inp("INPUT0", [1, 16], "FP32", np.zeros((1, 16), np.float32)),
        ctx.inp("INPUT1", [1, 16], "FP32", np.zeros((1, 16), np.float32)),
    ]
    rec("bad dtype", c.infer, "simple", bad_dtype)
    rec("unknown output", c.infer, "simple", good, outputs=[ctx.out("NOPE")])
    no_data = ctx.inp("INPUT0", [1, 16], "INT32")
    rec("input without data", c.infer, "simple", [no_data, good[1]])
    for key in (
        "sequence_id",
        "sequence_start",
        "sequence_end",
        "priority",
        "timeout",
        "headers",
        "binary_data_output",
        "triton_enable_empty_final_response",
        "triton_x",
    ):
        rec(f"reserved parameter {key}", c.infer, "simple", good, parameters={key: 1})
    rec("parameter of a bad type", c.infer, "simple", good, parameters={"a": [1]})
    rec("parameter None", c.infer, "simple", good, parameters={"a": None})
    rec("decoupled model", c.infer, "repeat_int32", repeat_inputs(ctx, [1, 2]))
    rec("sequence id without sequence model", c.infer, "simple", good, sequence_id=5)
    rec("negative priority", c.infer, "simple", good, priority=-1)
    rec("timeout", c.infer, "simple", good, timeout=1000)
    ctx.close(c)


def seq_tensors(ctx: Ctx) -> None:
    """InferInput / InferRequestedOutput methods, success and errors (no server)."""
    rec, mod = ctx.rec, ctx.mod
    t = mod.InferInput("IN", [2, 3], "INT32")
    rec("name", t.name)
    rec("datatype", t.datatype)
    rec("shape", t.shape)
    rec("set_shape", t.set_shape, [3, 2])
    rec("shape after set_shape", t.shape)
    rec("set ok", t.set_data_from_numpy, np.zeros((3, 2), np.int32))
    rec("set wrong dtype", t.set_data_from_numpy, np.zeros((3, 2), np.float32))
    rec("set wrong shape", t.set_data_from_numpy, np.zeros((2, 2), np.int32))
    rec("set not an array", t.set_data_from_numpy, [[1, 2], [3, 4], [5, 6]])
    rec("set int64", t.set_data_from_numpy, np.zeros((3, 2), np.int64))
    b = mod.InferInput("B", [2], "BYTES")
    rec("bytes object", b.set_data_from_numpy, np.array([b"a", "b"], dtype=object))
    rec("bytes np.bytes_", b.set_data_from_numpy, np.array([b"a", b"bc"], dtype=np.bytes_))
    rec("bytes from str_", b.set_data_from_numpy, np.array(["a", "b"], dtype=np.str_))
    rec("bytes from int", b.set_data_from_numpy, np.array([1, 2], dtype=np.int32))
    f = mod.InferInput("F", [2], "BF16")
    rec("bf16 ml_dtypes", f.set_data_from_numpy, np.array([1.5, 2.0], dtype=ml_dtypes.bfloat16))
    rec("bf16 from float32", f.set_data_from_numpy, np.array([1.5, 2.0], dtype=np.float32))
    rec("bf16 from float16", f.set_data_from_numpy, np.array([1.5, 2.0], dtype=np.float16))
    h = mod.InferInput("H", [2], "FP16")
    rec("fp16 from bf16", h.set_data_from_numpy, np.array([1, 2], dtype=ml_dtypes.bfloat16))
    u = mod.InferInput("U", [1], "UNKNOWN")
    rec("unknown datatype", u.set_data_from_numpy, np.array([1], dtype=np.int32))
    s = mod.InferInput("S", [2], "INT32")
    rec("shared memory", s.set_shared_memory, "region", 8, offset=4)
    rec("shared memory then data", s.set_data_from_numpy, np.array([1, 2], dtype=np.int32))
    if not ctx.grpc:
        j = mod.InferInput("J", [2], "FP32")
        rec("json data", j.set_data_from_numpy, np.array([1.5, 2.0], np.float32), binary_data=False)
        jb = mod.InferInput("JB", [2], "BYTES")
        rec(
            "json bytes",
            jb.set_data_from_numpy,
            np.array([b"a", b"b"], dtype=object),
            binary_data=False,
        )
        jf = mod.InferInput("JF", [2], "BF16")
        rec(
            "json bf16",
            jf.set_data_from_numpy,
            np.array([1, 2], dtype=ml_dtypes.bfloat16),
            binary_data=False,
        )
        rec("json fp16", h.set_data_from_numpy, np.array([1, 2], np.float16), binary_data=False)
    o = ctx.out("OUT")
    rec("output name", o.name)
    rec("output shm", o.set_shared_memory, "region", 16, offset=0)
    rec("output unset shm", o.unset_shared_memory)
    if not ctx.grpc:
        rec("output binary", lambda: ctx.out("O", binary_data=False).name())
    rec("output class_count", lambda: ctx.out("O", class_count=2).name())


def identity(dtype: str) -> str:
    return "identity_" + dtype.lower()


DTYPE_DATA: dict[str, Any] = {
    "BOOL": np.array([[True, False, True]]),
    "INT8": np.array([[-128, 0, 127]], np.int8),
    "INT16": np.array([[-1, 0, 1]], np.int16),
    "INT32": np.array([[-(2**31), 0, 2**31 - 1]], np.int32),
    "INT64": np.array([[-(2**63), 0, 2**63 - 1]], np.int64),
    "UINT8": np.array([[0, 1, 255]], np.uint8),
    "UINT16": np.array([[0, 1, 65535]], np.uint16),
    "UINT32": np.array([[0, 1, 2**32 - 1]], np.uint32),
    "UINT64": np.array([[0, 1, 2**64 - 1]], np.uint64),
    "FP16": np.array([[0.5, -1.25, 65504]], np.float16),
    "FP32": np.array([[0.5, -1.25, 3.0e38]], np.float32),
    "FP64": np.array([[0.5, -1.25, 1e300]], np.float64),
    "BF16": np.array([[0.5, -1.25, 3.0e38]], ml_dtypes.bfloat16),
    "BYTES": np.array([[b"a", b"", "\u00e9".encode()]], dtype=object),
}


def seq_dtypes(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    for dtype, data in DTYPE_DATA.items():
        modes = [True, False] if not ctx.grpc else [True]
        for binary in modes:
            kw = {} if ctx.grpc else {"binary_data": binary}
            outs = None if ctx.grpc else [ctx.out("OUTPUT0", binary_data=binary)]

            def show(r: Any) -> Any:
                return result_view(ctx, r, ["OUTPUT0"])

            label = f"{dtype}" + ("" if binary else " json")
            try:
                inputs = [ctx.inp("INPUT0", list(data.shape), dtype, data, **kw)]
            except Exception as error:
                rec.note(f"{label} set_data_from_numpy", norm_error(error))
                continue
            rec(label, c.infer, identity(dtype), inputs, outputs=outs, show=show)
            empty = np.empty((1, 0), dtype=data.dtype)
            try:
                inputs = [ctx.inp("INPUT0", [1, 0], dtype, empty, **kw)]
            except Exception as error:
                rec.note(f"{label} empty set_data_from_numpy", norm_error(error))
                continue
            rec(f"{label} empty", c.infer, identity(dtype), inputs, outputs=outs, show=show)
    ctx.close(c)


def repeat_inputs(ctx: Ctx, values: list[int], wait: int = 0) -> list[Any]:
    return [
        ctx.inp("IN", [len(values)], "INT32", np.array(values, np.int32)),
        ctx.inp("DELAY", [len(values)], "UINT32", np.zeros(len(values), np.uint32)),
        ctx.inp("WAIT", [1], "UINT32", np.array([wait], np.uint32)),
    ]


def stream_view(ctx: Ctx, result: Any, error: Any) -> Any:
    if error is not None:
        return {"error": norm_error(error)}
    names = [o.name for o in result.get_response().outputs]
    return {"result": result_view(ctx, result, names)}


def seq_async_infer(ctx: Ctx) -> None:
    """The sync clients' async_infer (gRPC with a callback, HTTP with InferAsyncRequest)."""
    rec, c = ctx.rec, ctx.client()
    if ctx.grpc:
        answers: queue.Queue[Any] = queue.Queue()

        def callback(result: Any, error: Any) -> None:
            answers.put(stream_view(ctx, result, error))

        for label, model, inputs in (
            ("ok", "simple", ctx.simple_inputs()),
            ("unknown model", "no_such_model", ctx.simple_inputs()),
        ):
            rec(f"async_infer {label}", c.async_infer, model, inputs, callback, request_id="7")
            rec.note(f"callback {label}", answers.get(timeout=WAIT))
        rec(
            "async_infer reserved parameter",
            c.async_infer,
            "simple",
            ctx.simple_inputs(),
            callback,
            parameters={"triton_x": 1},
        )
    else:
        for label, model in (("ok", "simple"), ("unknown model", "no_such_model")):
            request = rec(f"async_infer {label}", c.async_infer, model, ctx.simple_inputs())
            if request is not None:
                rec(
                    f"get_result {label}",
                    request.get_result,
                    timeout=WAIT,
                    show=lambda r: result_view(ctx, r, ["OUTPUT0", "OUTPUT1"]),
                )
        rec(
            "async_infer reserved parameter",
            c.async_infer,
            "simple",
            ctx.simple_inputs(),
            parameters={"headers": 1},
        )
    ctx.close(c)


def seq_stream(ctx: Ctx) -> None:
    """gRPC streaming: start_stream / async_stream_infer / stop_stream, aio stream_infer."""
    rec = ctx.rec
    c = ctx.client()
    requests: list[tuple[str, dict[str, Any], int]] = [
        ("decoupled", {"model_name": "repeat_int32", "inputs": repeat_inputs(ctx, [4, 5, 6])}, 3),
        (
            "empty final",
            {
                "model_name": "repeat_int32",
                "inputs": repeat_inputs(ctx, [7]),
                "enable_empty_final_response": True,
                "request_id": "r2",
            },
            2,
        ),
        ("unknown model", {"model_name": "no_such_model", "inputs": repeat_inputs(ctx, [1])}, 1),
        (
            "sequence",
            {
                "model_name": "simple_sequence",
                "inputs": [ctx.inp("INPUT", [1, 1], "INT32", np.array([[3]], np.int32))],
                "sequence_id": 11,
                "sequence_start": True,
                "sequence_end": True,
            },
            1,
        ),
        ("bad shape", {"model_name": "simple", "inputs": ctx.simple_inputs()[:1]}, 1),
        (
            "parameters",
            {"model_name": "simple", "inputs": ctx.simple_inputs(), "parameters": {"p": "v"}},
            1,
        ),
    ]
    if not ctx.aio:
        answers: queue.Queue[Any] = queue.Queue()

        def callback(result: Any, error: Any) -> None:
            answers.put(stream_view(ctx, result, error))

        rec("stop_stream before start", c.stop_stream)
        rec("start_stream", c.start_stream, callback, stream_timeout=WAIT)
        rec("start_stream twice", c.start_stream, callback)
        for label, kwargs, count in requests:
            rec(f"async_stream_infer {label}", c.async_stream_infer, **kwargs)
            got = []
            for _ in range(count):
                try:
                    got.append(answers.get(timeout=WAIT))
                except queue.Empty:
                    got.append("timed out")
            rec.note(f"responses {label}", got)
        rec(
            "async_stream_infer reserved",
            c.async_stream_infer,
            "simple",
            ctx.simple_inputs(),
            parameters={"timeout": 5},
        )
        rec("stop_stream", c.stop_stream)
        rec("async_stream_infer after stop", c.async_stream_infer, "simple", ctx.simple_inputs())
        rec("stop_stream again", c.stop_stream)
        rec("start_stream again", c.start_stream, callback)
        rec("async_stream_infer then cancel", c.async_stream_infer, "simple", ctx.simple_inputs())
        rec("stop_stream cancel_requests", c.stop_stream, cancel_requests=True)
        ctx.close(c)
        return
    loop = rec.loop
    assert loop is not None

    async def run_stream(items: list[dict[str, Any]]) -> list[Any]:
        # Read to the end: the stream ends when the server has answered every request
        # (cancelling a stream with a decoupled request in flight crashes Triton 2.51).
        async def requests_iter() -> Any:
            for item in items:
                yield item

        return [
            stream_view(ctx, result, error)
            async for result, error in c.stream_infer(requests_iter(), stream_timeout=WAIT)
        ]

    for label, kwargs, _ in requests:
        rec(f"stream_infer {label}", run_stream, [kwargs])

    async def two_requests() -> list[Any]:
        # The two requests' responses may interleave: keep each request's own order. Both go
        # to the decoupled model: Triton 2.51's stream handler writes a decoupled request's
        # responses and a non-decoupled one's on two paths (stream_infer_handler.cc,
        # StreamInferResponseComplete), and a stream mixing them once never ended in CI
        # (NVIDIA's client had passed on the same server just before).
        first = dict(requests[0][1], request_id="a")
        second = dict(requests[0][1], inputs=repeat_inputs(ctx, [8, 9]), request_id="b")
        got = await run_stream([first, second])
        return sorted(got, key=lambda r: str(r.get("result", {}).get("response", {}).get("id")))

    rec("stream_infer two requests", two_requests)
    rec(
        "stream_infer reserved",
        run_stream,
        [{"model_name": "simple", "inputs": ctx.simple_inputs(), "parameters": {"triton_a": 1}}],
    )
    rec("stream_infer not a dict", run_stream, [["simple"]])
    rec("stream_infer no inputs", run_stream, [{"model_name": "simple"}])
    ctx.close(c)


def seq_statistics(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    model = "identity_int8"
    rec("unload", c.unload_model, model)
    rec("load", c.load_model, model)
    data = np.array([[1, 2]], np.int8)
    for i in range(2):
        rec(f"infer {i}", c.infer, model, [ctx.inp("INPUT0", [1, 2], "INT8", data)], show=bool)
    # Triton counts a request after answering it: wait (bounded) until both are counted.
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        stats = norm(rec.run(c.get_inference_statistics, model, **ctx.json_kw()))
        if int(stats["model_stats"][0].get("inference_count", 0)) >= 2:
            break
        time.sleep(0.05)
    rec("statistics", c.get_inference_statistics, model)
    rec("statistics json", c.get_inference_statistics, model, **ctx.json_kw())
    rec("statistics v1", c.get_inference_statistics, model, "1", **ctx.json_kw())
    rec("statistics v9", c.get_inference_statistics, model, "9")
    rec("statistics unknown", c.get_inference_statistics, "no_such_model")

    def names(stats: Any) -> Any:
        if not isinstance(stats, dict):
            from google.protobuf import json_format

            stats = json_format.MessageToDict(stats, preserving_proto_field_name=True)
        # Only models no other sequence reloads: the rest depend on the server's history.
        return sorted(
            (s["name"], s["version"])
            for s in stats.get("model_stats", [])
            if s["name"] in ("identity_int8", "simple", "simple_string")
        )

    rec("statistics all (names)", c.get_inference_statistics, show=names)
    ctx.close(c)


ADD_CONFIG = {
    "name": "PLACEHOLDER",
    "backend": "python",
    "max_batch_size": 0,
    "input": [{"name": "INPUT0", "data_type": "TYPE_INT8", "dims": [-1, -1]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT8", "dims": [-1, -1]}],
    "instance_group": [{"count": 1, "kind": "KIND_CPU"}],
}

MODEL_PY = b"""
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            tensor = pb_utils.Tensor("OUTPUT0", data + 1)
            out.append(pb_utils.InferenceResponse(output_tensors=[tensor]))
        return out
"""


def seq_repository(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()

    def index(value: Any) -> Any:
        if not isinstance(value, (dict, list)):
            from google.protobuf import json_format

            value = json_format.MessageToDict(value, preserving_proto_field_name=True)
        models = value.get("models", []) if isinstance(value, dict) else value
        return [m for m in models if not _OTHER_RUNS.match(m.get("name", ""))]

    rec("index", c.get_model_repository_index, show=index)
    if ctx.grpc:
        rec("index json", c.get_model_repository_index, as_json=True, show=index)
    rec("load unknown", c.load_model, "no_such_model")
    rec("unload unknown", c.unload_model, "no_such_model")
    rec("load loaded", c.load_model, "identity_int16")
    override = dict(ADD_CONFIG, name="identity_int16")
    override["input"] = [{"name": "INPUT0", "data_type": "TYPE_INT16", "dims": [-1, -1]}]
    override["output"] = [{"name": "OUTPUT0", "data_type": "TYPE_INT16", "dims": [-1, -1]}]
    override["max_batch_size"] = 0
    override["parameters"] = {"marker": {"string_value": "override"}}
    rec("load config override", c.load_model, "identity_int16", config=json.dumps(override))
    rec(
        "config after override",
        c.get_model_config,
        "identity_int16",
        **ctx.json_kw(),
        show=lambda v: v.get("config", v).get("parameters"),
    )
    rec("load bad config", c.load_model, "identity_int16", config="{not json")
    rec("load again", c.load_model, "identity_int16")
    # Put the repository's config back: a model is read from disk again only once unloaded.
    rec("unload overridden", c.unload_model, "identity_int16")
    rec("load from disk", c.load_model, "identity_int16")
    rec(
        "config from disk",
        c.get_model_config,
        "identity_int16",
        **ctx.json_kw(),
        show=lambda v: v.get("config", v).get("parameters"),
    )
    name = f"{RUN}_files"
    files_config = json.dumps(dict(ADD_CONFIG, name=name))
    rec("load files without config", c.load_model, name, files={"file:1/model.py": MODEL_PY})
    rec(
        "load with files",
        c.load_model,
        name,
        config=files_config,
        files={"file:1/model.py": MODEL_PY},
    )
    rec("ready with files", c.is_model_ready, name)
    rec(
        "infer model from files",
        c.infer,
        name,
        [ctx.inp("INPUT0", [1, 2], "INT8", np.array([[1, 2]], np.int8))],
        show=lambda r: r.as_numpy("OUTPUT0"),
    )
    rec("unload files model", c.unload_model, name)
    rec("unload dependents", c.unload_model, "identity_int32", unload_dependents=True)
    rec("ready after unload", c.is_model_ready, "identity_int32")
    rec("load back", c.load_model, "identity_int32")
    rec("ready after load", c.is_model_ready, "identity_int32")
    ctx.close(c)


def seq_shared_memory(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    key_in, key_out = f"/{RUN}_{ctx.flavour}_in", f"/{RUN}_{ctx.flavour}_out"
    region_in = f"{RUN}_in"
    region_out = f"{RUN}_out"
    h_in = shm.create_shared_memory_region(region_in, key_in, 128)
    h_out = shm.create_shared_memory_region(region_out, key_out, 128)
    try:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.ones((1, 16), dtype=np.int32)
        shm.set_shared_memory_region(h_in, [a, b])
        rec("status empty", c.get_system_shared_memory_status, **ctx.json_kw())
        rec("register in", c.register_system_shared_memory, region_in, key_in, 128)
        rec("register out", c.register_system_shared_memory, region_out, key_out, 128)
        rec("register again", c.register_system_shared_memory, region_in, key_in, 128)
        rec("register bad key", c.register_system_shared_memory, f"{RUN}_x", "/no_such_key", 8)
        rec("register too big", c.register_system_shared_memory, f"{RUN}_y", key_in, 4096)
        rec("register offset", c.register_system_shared_memory, f"{RUN}_z", key_in, 64, offset=64)
        rec("status", c.get_system_shared_memory_status)
        rec("status json", c.get_system_shared_memory_status, **ctx.json_kw())
        rec("status one", c.get_system_shared_memory_status, region_in)
        rec("status unknown", c.get_system_shared_memory_status, "no_such_region")
        inputs = [ctx.inp("INPUT0", [1, 16], "INT32"), ctx.inp("INPUT1", [1, 16], "INT32")]
        inputs[0].set_shared_memory(region_in, 64)
        inputs[1].set_shared_memory(region_in, 64, offset=64)
        outs = [ctx.out("OUTPUT0"), ctx.out("OUTPUT1")]
        outs[0].set_shared_memory(region_out, 64)
        outs[1].set_shared_memory(region_out, 64, offset=64)

        def response(result: Any) -> Any:
            return result.get_response(as_json=True) if ctx.grpc else result.get_response()

        result = rec("infer shm", c.infer, "simple", inputs, outputs=outs, show=response)
        if result is not None:
            rec("as_numpy of an output in shm", result.as_numpy, "OUTPUT0")
            rec("get_output of an output in shm", result.get_output, "OUTPUT0")
        rec("output 0 in shm", shm.get_contents_as_numpy, h_out, np.int32, [1, 16])
        rec("output 1 in shm", shm.get_contents_as_numpy, h_out, np.int32, [1, 16], offset=64)
        small = ctx.out("OUTPUT0")
        small.set_shared_memory(region_out, 8)
        rec("infer output region too small", c.infer, "simple", inputs, outputs=[small])
        bad = ctx.inp("INPUT0", [1, 16], "INT32")
        bad.set_shared_memory("no_such_region", 64)
        rec("infer unknown region", c.infer, "simple", [bad, inputs[1]])
        rec("unregister one", c.unregister_system_shared_memory, region_out)
        rec("unregister unknown", c.unregister_system_shared_memory, "no_such_region")
        rec("status after", c.get_system_shared_memory_status)
        rec("unregister all", c.unregister_system_shared_memory)
        rec("status none", c.get_system_shared_memory_status, **ctx.json_kw())
        # CUDA shared memory: no GPU here, the server answers errors.
        raw = base64.b64encode(b"\0" * 64)
        rec("cuda register", c.register_cuda_shared_memory, f"{RUN}_cuda", raw, 0, 64)
        rec("cuda status", c.get_cuda_shared_memory_status, **ctx.json_kw())
        rec("cuda status unknown", c.get_cuda_shared_memory_status, "no_such_region")
        rec("cuda unregister unknown", c.unregister_cuda_shared_memory, "no_such_region")
        rec("cuda unregister all", c.unregister_cuda_shared_memory)
    finally:
        # A server that died must not leave the regions behind.
        with contextlib.suppress(Exception):
            ctx.rec.run(c.unregister_system_shared_memory)
        shm.destroy_shared_memory_region(h_in)
        shm.destroy_shared_memory_region(h_out)
        ctx.close(c)


def seq_settings(ctx: Ctx) -> None:
    rec, c = ctx.rec, ctx.client()
    original = rec.run(c.get_trace_settings)
    rec("trace settings", c.get_trace_settings, **ctx.json_kw())
    rec("trace settings model", c.get_trace_settings, "simple", **ctx.json_kw())
    rec("trace settings unknown model", c.get_trace_settings, "no_such_model")
    rec("update trace model", c.update_trace_settings, "simple", {"trace_rate": "7"})
    rec(
        "update trace model json",
        c.update_trace_settings,
        "simple",
        {"trace_count": "5"},
        **ctx.json_kw(),
    )
    rec(
        "clear trace model",
        c.update_trace_settings,
        "simple",
        {"trace_rate": None, "trace_count": None},
    )
    rec("update trace bad value", c.update_trace_settings, settings={"trace_rate": "x"})
    rec("update trace unknown key", c.update_trace_settings, settings={"nope": "1"})
    rec("update trace unknown model", c.update_trace_settings, "no_such_model", {"trace_rate": "2"})
    rec("update trace global", c.update_trace_settings, settings={"trace_rate": "3"})
    rec("update trace list", c.update_trace_settings, settings={"trace_level": ["TIMESTAMPS"]})
    rec("trace settings after", c.get_trace_settings, **ctx.json_kw())
    if original is not None:
        original = norm(original)
        if "settings" in original.get("fields", {}):
            keep = {k: v.get("value", []) for k, v in original["fields"]["settings"].items()}
        else:
            keep = {k: v for k, v in original.items()}
        keep = {k: v for k, v in keep.items() if k in ("trace_rate", "trace_level")}
        rec.run(c.update_trace_settings, settings=keep)
    log = rec("log settings", c.get_log_settings, **ctx.json_kw())
    rec("update log verbose", c.update_log_settings, {"log_verbose_level": 1})
    rec("update log json", c.update_log_settings, {"log_verbose_level": 0}, **ctx.json_kw())
    rec("update log bool", c.update_log_settings, {"log_info": True})
    rec("update log bad type", c.update_log_settings, {"log_verbose_level": "x"})
    rec("update log unknown", c.update_log_settings, {"no_such": 1})
    rec("update log bad format", c.update_log_settings, {"log_format": "xml"})
    if isinstance(log, dict):
        restore = log.get("settings", log)
        restore = {
            k: (
                v.get("uint32_param", v.get("bool_param", v.get("string_param")))
                if isinstance(v, dict)
                else v
            )
            for k, v in restore.items()
        }
        restore = {k: v for k, v in restore.items() if k != "log_file" and v is not None}
        rec.run(c.update_log_settings, restore)
    ctx.close(c)


def seq_connection(ctx: Ctx) -> None:
    """Errors before any server answers: bad URLs, nothing listening."""
    rec = ctx.rec
    c = rec("client on a closed port", lambda: ctx.mod.InferenceServerClient("127.0.0.1:1"))
    if c is not None:
        rec("metadata on a closed port", c.get_server_metadata)
        rec("is_server_live on a closed port", c.is_server_live)
        ctx.close(c)
    rec(
        "client with scheme",
        lambda: type(ctx.mod.InferenceServerClient(f"http://{ctx.url}")).__name__,
    )


def seq_plugins(ctx: Ctx) -> None:
    """register_plugin / plugin / unregister_plugin; a plugin's headers reach the server."""
    rec, c = ctx.rec, ctx.client()
    seen: list[Any] = []

    class Plugin(ctx.mod.InferenceServerClientPlugin):  # type: ignore[misc, name-defined]
        def __call__(self, request: Any) -> None:
            request.headers["x-plugin"] = "1"
            seen.append(sorted(request.headers))

    plugin = Plugin()
    rec("plugin before", lambda: c.plugin() is None)
    rec("register_plugin", c.register_plugin, plugin)
    rec("plugin after", lambda: c.plugin() is plugin)
    rec("register twice", c.register_plugin, Plugin())
    rec("call with plugin", c.is_server_live, headers={"x-call": "2"})
    rec.note("headers the plugin saw", seen)
    rec("unregister_plugin", c.unregister_plugin)
    rec("plugin removed", lambda: c.plugin() is None)
    rec("unregister again", c.unregister_plugin)
    ctx.close(c)


def seq_http_body(ctx: Ctx) -> None:
    """The HTTP clients' static generate_request_body / parse_response_body (no server)."""
    rec, cls = ctx.rec, ctx.mod.InferenceServerClient
    inputs = ctx.simple_inputs()
    text = ctx.inp("T", [2], "BYTES", np.array([b"a", b"bc"], dtype=object), binary_data=False)
    outputs = [ctx.out("OUTPUT0"), ctx.out("OUTPUT1", binary_data=False)]
    rec("body", cls.generate_request_body, inputs)
    rec("body json input", cls.generate_request_body, [text])
    rec(
        "body with everything",
        cls.generate_request_body,
        inputs,
        outputs=outputs,
        request_id="r",
        sequence_id=3,
        sequence_start=True,
        priority=2,
        timeout=100,
        parameters={"p": 1},
    )
    rec("body reserved", cls.generate_request_body, inputs, parameters={"headers": 1})
    header = json.dumps(
        {
            "model_name": "m",
            "model_version": "1",
            "outputs": [
                {
                    "name": "A",
                    "datatype": "INT32",
                    "shape": [2],
                    "parameters": {"binary_data_size": 8},
                },
                {"name": "B", "datatype": "FP32", "shape": [1], "data": [1.5]},
            ],
        }
    ).encode()
    binary = np.array([1, 2], np.int32).tobytes()

    def view(result: Any) -> Any:
        return result_view(ctx, result, ["A", "B", "C"])

    rec(
        "parse binary",
        cls.parse_response_body,
        header + binary,
        header_length=len(header),
        show=view,
    )
    rec(
        "parse json only",
        cls.parse_response_body,
        header.replace(b'"parameters": {"binary_data_size": 8}', b'"data": [1, 2]'),
        show=view,
    )
    rec("parse not json", cls.parse_response_body, b"nope", show=view)
    rec(
        "parse bad length",
        cls.parse_response_body,
        header,
        header_length=len(header) + 5,
        show=view,
    )
    import gzip

    rec(
        "parse gzip",
        cls.parse_response_body,
        gzip.compress(header + binary),
        header_length=len(header),
        content_encoding="gzip",
        show=view,
    )


# -- sequences without a server --------------------------------------------------------------------


def seq_utils(rec: Recorder) -> None:
    u = tritonclient.utils
    for dtype in (
        bool,
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        ml_dtypes.bfloat16,
        np.object_,
        np.bytes_,
        np.str_,
        np.complex64,
    ):
        rec(
            f"np_to_triton_dtype {getattr(dtype, '__name__', dtype)}",
            u.np_to_triton_dtype,
            np.dtype(dtype),
        )
    rec("np_to_triton_dtype type object", u.np_to_triton_dtype, np.int32)
    for name in (
        "BOOL",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "UINT8",
        "UINT16",
        "UINT32",
        "UINT64",
        "FP16",
        "FP32",
        "FP64",
        "BF16",
        "BYTES",
        "STRING",
        "fp32",
    ):
        rec(f"triton_to_np_dtype {name}", u.triton_to_np_dtype, name)
    for label, value in (
        ("object bytes", np.array([b"ab", b"", b"\x00c"], dtype=object)),
        ("object str", np.array(["x", "\u00e9"], dtype=object)),
        ("object int", np.array([1, 22], dtype=object)),
        ("np.bytes_", np.array([b"ab", b"c"], dtype=np.bytes_)),
        ("2-d", np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object)),
        ("fortran", np.asfortranarray(np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object))),
        ("empty", np.array([], dtype=object)),
        ("int32", np.array([1, 2], dtype=np.int32)),
    ):
        out = rec(f"serialize_byte_tensor {label}", u.serialize_byte_tensor, value)
        if out is not None and out.size:
            rec(f"deserialize {label}", u.deserialize_bytes_tensor, out.item())
    rec("deserialize empty", u.deserialize_bytes_tensor, b"")
    rec("deserialize truncated", u.deserialize_bytes_tensor, b"\x05\x00\x00\x00ab")
    rec("deserialize short prefix", u.deserialize_bytes_tensor, b"\x05\x00")
    rec("serialized_byte_size", u.serialized_byte_size, np.array([b"ab", b"cde"], dtype=object))
    rec("serialized_byte_size int", u.serialized_byte_size, np.array([1], dtype=np.int32))
    rec("reserved params", lambda: u.TRITON_RESERVED_REQUEST_PARAMS)
    rec("reserved prefix", lambda: u.TRITON_RESERVED_REQUEST_PARAMS_PREFIX)
    rec("raise_error", u.raise_error, "boom")
    e = u.InferenceServerException("msg", "400", "details")
    rec("exception str", str, e)
    rec("exception no status", str, u.InferenceServerException("m"))
    rec("exception accessors", lambda: [e.message(), e.status(), e.debug_details()])
    rec("SharedMemoryTensor exported", hasattr, u, "SharedMemoryTensor")


def seq_shm_utils(rec: Recorder) -> None:
    key = f"/{RUN}_util"
    h = rec("create", shm.create_shared_memory_region, "r", key, 64)
    try:
        rec("mapped", lambda: [k.replace(RUN, "<run>") for k in shm.mapped_shared_memory_regions()])
        data = np.arange(16, dtype=np.int32)
        rec("set", shm.set_shared_memory_region, h, [data])
        rec("get", shm.get_contents_as_numpy, h, np.int32, [16])
        rec("get offset", shm.get_contents_as_numpy, h, np.int32, [2, 2], offset=8)
        rec("get float", shm.get_contents_as_numpy, h, np.float32, [2])
        rec("set offset", shm.set_shared_memory_region, h, [np.array([7, 8], np.int32)], offset=4)
        rec("get after offset", shm.get_contents_as_numpy, h, np.int32, [4])
        rec("set past end", shm.set_shared_memory_region, h, [np.zeros(17, np.int32)])
        rec("set not a list", shm.set_shared_memory_region, h, data)
        rec("set not arrays", shm.set_shared_memory_region, h, [[1, 2]])
        strings = tritonclient.utils.serialize_byte_tensor(np.array([b"ab", b"c"], dtype=object))
        rec("set serialized bytes", shm.set_shared_memory_region, h, [strings])
        rec("get bytes", shm.get_contents_as_numpy, h, np.object_, [2])
        rec("get np.bytes_", shm.get_contents_as_numpy, h, np.bytes_, [2])
        rec("set bf16", shm.set_shared_memory_region, h, [np.array([1.5, 2], ml_dtypes.bfloat16)])
        rec("get bf16", shm.get_contents_as_numpy, h, ml_dtypes.bfloat16, [2])
        # the same key again, smaller and larger
        h2 = rec(
            "reopen smaller",
            shm.create_shared_memory_region,
            "r2",
            key,
            32,
            show=type,
        )
        h3 = rec(
            "reopen larger", shm.create_shared_memory_region, "r3", key, 4096, show=lambda x: None
        )
        if h3 is not None:
            rec("set past actual size", shm.set_shared_memory_region, h3, [np.zeros(100, np.int32)])
            rec(
                "set within actual size", shm.set_shared_memory_region, h3, [np.zeros(16, np.int32)]
            )
            rec("get from reopened", shm.get_contents_as_numpy, h3, np.int32, [4])
            rec("destroy reopened", shm.destroy_shared_memory_region, h3)
        if h2 is not None:
            rec("destroy smaller", shm.destroy_shared_memory_region, h2)
        rec(
            "create_only existing", shm.create_shared_memory_region, "r4", key, 64, create_only=True
        )
        rec(
            "mapped before destroy",
            lambda: [k.replace(RUN, "<run>") for k in shm.mapped_shared_memory_regions()],
        )
    finally:
        if h is not None:
            rec("destroy", shm.destroy_shared_memory_region, h)
    rec(
        "mapped after",
        lambda: [k.replace(RUN, "<run>") for k in shm.mapped_shared_memory_regions()],
    )
    rec("exists after destroy", os.path.exists, "/dev/shm" + key)
    fresh = f"/{RUN}_fresh"
    h4 = rec(
        "create_only new",
        shm.create_shared_memory_region,
        "r5",
        fresh,
        16,
        create_only=True,
        show=lambda x: None,
    )
    if h4 is not None:
        rec("destroy new", shm.destroy_shared_memory_region, h4)
    zero = f"/{RUN}_zero"
    h5 = rec("create zero size", shm.create_shared_memory_region, "r6", zero, 0, show=type)
    rec("zero size left an object", os.path.exists, "/dev/shm" + zero)
    if h5 is not None:
        rec("destroy zero size", shm.destroy_shared_memory_region, h5)
    rec(
        "SharedMemoryException base",
        lambda: [c.__name__ for c in shm.SharedMemoryException.__mro__],
    )
    rec(
        "cuda exception base",
        lambda: [c.__name__ for c in cudashm.CudaSharedMemoryException.__mro__],
    )


# -- main ------------------------------------------------------------------------------------------

PER_FLAVOUR: dict[str, Callable[[Ctx], None]] = {
    "health": seq_health,
    "metadata": seq_metadata,
    "infer": seq_infer,
    "infer_errors": seq_infer_errors,
    "tensors": seq_tensors,
    "dtypes": seq_dtypes,
    "statistics": seq_statistics,
    "repository": seq_repository,
    "shared_memory": seq_shared_memory,
    "settings": seq_settings,
    "connection": seq_connection,
}
PER_FLAVOUR["plugins"] = seq_plugins
SYNC_ONLY = {"async_infer": seq_async_infer}
GRPC_ONLY = {"stream": seq_stream}
HTTP_ONLY = {"body": seq_http_body}


def sequence_ids() -> list[str]:
    """Every sequence id, in the order they run."""
    ids = ["utils", "shm_utils"]
    for flavour in FLAVOURS:
        names = list(PER_FLAVOUR)
        if not flavour.endswith("aio"):
            names += list(SYNC_ONLY)
        if flavour.startswith("grpc"):
            names += list(GRPC_ONLY)
        else:
            names += list(HTTP_ONLY)
        ids += [f"{flavour}/{name}" for name in names]
    return ids


def run_sequence(seq_id: str, urls: dict[str, str]) -> list[list[Any]]:
    flavour, _, name = seq_id.partition("/")
    aio = flavour.endswith("aio")
    loop = asyncio.new_event_loop() if aio else None
    rec = Recorder(loop)
    try:
        if seq_id == "utils":
            seq_utils(rec)
        elif seq_id == "shm_utils":
            seq_shm_utils(rec)
        else:
            fn = {**PER_FLAVOUR, **SYNC_ONLY, **GRPC_ONLY, **HTTP_ONLY}[name]
            fn(Ctx(flavour, urls, rec))
    except Exception as error:  # a broken sequence is a record too
        frames = traceback.extract_tb(error.__traceback__)
        where = frames[-1].lineno if frames else 0
        rec.records.append(["sequence failed", {"error": norm_error(error), "line": where}])
    finally:
        if loop is not None:
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()
    return rec.records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--only", nargs="*", default=None, help="sequence id prefixes")
    parser.add_argument("--list", action="store_true", help="print the sequence ids and exit")
    args = parser.parse_args(argv)
    if args.list:
        print(json.dumps(sequence_ids()))
        return 0
    urls = {"http": args.http, "grpc": args.grpc}
    out: dict[str, Any] = {}
    for seq_id in sequence_ids():
        if args.only and not any(seq_id.startswith(p) for p in args.only):
            continue
        out[seq_id] = run_sequence(seq_id, urls)
    text = json.dumps({"sequences": out}, sort_keys=True)
    sys.stdout.write(text.replace(RUN, "<run>") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
