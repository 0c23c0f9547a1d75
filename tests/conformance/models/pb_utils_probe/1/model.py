"""``pb_utils_probe``: calls ``triton_python_backend_utils`` as ``NAMES`` asks and says what came
back.

Input ``NAMES`` (BYTES, dims ``[-1]``): names of probes (see ``PROBES``; ``list`` answers the
names). Output ``OUT`` (BYTES, dims ``[1]``): a JSON object, for each probe run, of
``"ok <value>"`` (the probe's result, described by ``show``) or ``"err <Type>: <message>"``.
Each probe is one call, mostly with arguments of a type other than the documented one (bytes
for str above all), so that the conformance suite sees what Triton's bindings accept, return
and refuse, and compares it with this server's ``pb_utils``. BLS probes call
``identity_int32``.

Left out because they abort Triton 2.51 (``boost::interprocess::lock_exception``, or
prometheus-cpp throwing): a second custom-metrics call that Triton's core refuses (an invalid
family or label name, a family name of another kind, a label value that is not a string,
unsorted buckets, an operation the metric's kind does not support, a negative counter
increment: the first one is answered, a later one often ends the server), a request reaching
the stub soon after ``pb_utils.load_model`` reloaded a model, ``exec()`` of a decoupled model,
and a family named ``""`` or starting with a digit. Those answers were read on Triton one
server at a time and are checked by ``tests/test_python_backend_utils.py``.

Metric families made here are kept for the model's lifetime, so probes that use them, run
again on one server, keep counting.
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

ONE = np.array([[1, 2]], dtype=np.int32)
KEEP = []  # metric families (and metrics) kept alive


def tensor(name="INPUT0", data=ONE):
    return pb_utils.Tensor(name, data)


def request(**kw):
    args = {
        "inputs": [tensor()],
        "requested_output_names": ["OUTPUT0"],
        "model_name": "identity_int32",
    }
    args.update(kw)
    return pb_utils.InferenceRequest(**args)


def run(**kw):
    """Build a BLS request and run it: the output's values, or the error and its code."""
    answer = request(**kw).exec()
    if answer.has_error():
        return f"error {answer.error().code().name}: {answer.error().message()}"
    return pb_utils.get_output_tensor_by_name(answer, "OUTPUT0").as_numpy().tolist()


def family(name, kind, description="d"):
    made = pb_utils.MetricFamily(name, description, getattr(pb_utils.MetricFamily, kind))
    KEEP.append(made)
    return made


def metric(name, kind, **kw):
    made = family(name, kind).Metric(**kw)
    KEEP.append(made)
    return made


def counted(made, *calls):
    for method, value in calls:
        getattr(made, method)(value)
    return made.value()


def deleted_family_use():
    made = pb_utils.MetricFamily("probe_deleted", "d", pb_utils.MetricFamily.GAUGE)
    gauge = made.Metric(labels={"a": "1"})
    del made
    gauge.set(3)


def show(value):
    """A description of a result that reads the same on both servers."""
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}:[" + ",".join(show(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}:[" + ",".join(sorted(show(v) for v in value)) + "]"
    return type(value).__name__


PROBES = {
    # InferenceRequest: the str arguments take bytes (a BYTES element passed as is).
    "request/model_name bytes": lambda: run(model_name=b"identity_int32"),
    "request/model_name bytearray": lambda: run(model_name=bytearray(b"identity_int32")),
    "request/model_name numpy bytes_": lambda: run(model_name=np.bytes_(b"identity_int32")),
    "request/model_name numpy str_": lambda: run(model_name=np.str_("identity_int32")),
    "request/model_name int": lambda: request(model_name=5),
    "request/model_name unknown bytes": lambda: run(model_name=b"nope"),
    "request/exec unknown version": lambda: run(model_version=7),
    "request/exec one-dimensional input": lambda: run(inputs=[tensor(data=ONE[0])]),
    "request/exec unknown input": lambda: run(inputs=[tensor("NOPE")]),
    "request/exec unknown output": lambda: run(requested_output_names=["NOPE"]),
    "request/request_id bytes": lambda: request(request_id=b"rid").request_id(),
    "request/request_id int": lambda: request(request_id=3),
    "request/correlation_id bytes": lambda: request(correlation_id=b"cid"),
    "request/correlation_id str": lambda: request(correlation_id="cid").correlation_id(),
    "request/correlation_id negative": lambda: request(correlation_id=-1),
    "request/correlation_id float": lambda: request(correlation_id=1.5),
    "request/correlation_id bool": lambda: request(correlation_id=True).correlation_id(),
    "request/output names bytes": lambda: request(
        requested_output_names=[b"OUTPUT0"]
    ).requested_output_names(),
    "request/output names str": lambda: request(requested_output_names="OUTPUT0"),
    "request/output names tuple": lambda: request(
        requested_output_names=("OUTPUT0",)
    ).requested_output_names(),
    "request/output names int": lambda: request(requested_output_names=[1]),
    "request/inputs tuple": lambda: request(inputs=(tensor(),)).inputs(),
    "request/parameters dict": lambda: request(parameters={"a": 1, "b": "x"}).parameters(),
    "request/parameters None": lambda: request(parameters=None).parameters(),
    "request/parameters json str": lambda: request(parameters='{"a": 1}'),
    "request/parameters json bytes": lambda: request(parameters=b'{"a": 1}'),
    "request/parameters list": lambda: request(parameters=[1]),
    "request/parameters bytes key": lambda: request(parameters={b"a": 1}),
    "request/parameters bytes value": lambda: request(parameters={"a": b"v"}),
    "request/parameters float value": lambda: request(parameters={"a": 1.5}),
    "request/parameters list value": lambda: request(parameters={"a": [1]}),
    "request/model_version str": lambda: request(model_version="1"),
    "request/model_version float": lambda: request(model_version=1.0),
    "request/flags str": lambda: request(flags="1"),
    "request/timeout negative": lambda: request(timeout=-1),
    # Triton's QA argument_validation model: None where a tensor or a name goes.
    "request/inputs None element": lambda: request(inputs=[None]),
    "request/inputs None": lambda: request(inputs=None),
    "request/output names empty": lambda: request(requested_output_names=[""]),
    "request/output names None element": lambda: request(requested_output_names=[None]),
    "response/outputs None element": lambda: pb_utils.InferenceResponse(output_tensors=[None]),
    "response/outputs None": lambda: pb_utils.InferenceResponse(output_tensors=None),
    "tensor/from_dlpack None": lambda: pb_utils.Tensor.from_dlpack("X", None),
    "tensor/from_dlpack empty name None": lambda: pb_utils.Tensor.from_dlpack("", None),
    "logger/log level None": lambda: pb_utils.Logger.log("m", None),
    # Tensor
    "tensor/name bytes": lambda: tensor(b"X").name(),
    "tensor/name numpy str_": lambda: tensor(np.str_("X")).name(),
    "tensor/name int": lambda: tensor(3),
    "tensor/data list": lambda: pb_utils.Tensor("X", [1, 2]),
    "tensor/from_dlpack name bytes": lambda: pb_utils.Tensor.from_dlpack(
        b"X", tensor().to_dlpack()
    ).name(),
    "tensor/bytes elements": lambda: (
        pb_utils.Tensor("X", np.array([b"a", "b"], dtype=np.object_)).as_numpy().tolist()
    ),
    # TritonError / InferenceResponse
    "error/message bytes": lambda: pb_utils.TritonError(b"boom").message(),
    "error/message int": lambda: pb_utils.TritonError(3),
    "error/message None": lambda: pb_utils.TritonError(None),
    "error/code int": lambda: pb_utils.TritonError("m", 3),
    "response/error str": lambda: pb_utils.InferenceResponse(error="boom"),
    "response/outputs tuple": lambda: pb_utils.InferenceResponse((tensor(),)).output_tensors(),
    "response/outputs one tensor": lambda: pb_utils.InferenceResponse(tensor()),
    "response/get output bytes name": lambda: pb_utils.get_output_tensor_by_name(
        pb_utils.InferenceResponse([tensor()]), b"INPUT0"
    ),
    "request/get input bytes name": lambda: pb_utils.get_input_tensor_by_name(request(), b"INPUT0"),
    # Model control
    "control/is_model_ready bytes": lambda: pb_utils.is_model_ready(b"identity_int32"),
    "control/is_model_ready version bytes": lambda: pb_utils.is_model_ready("identity_int32", b"1"),
    "control/is_model_ready version int": lambda: pb_utils.is_model_ready("identity_int32", 1),
    "control/is_model_ready unknown": lambda: pb_utils.is_model_ready("nope"),
    "control/unload_model bytes unknown": lambda: pb_utils.unload_model(b"nope"),
    # Helpers of the module
    "helpers/get_model_dir": lambda: (
        pb_utils.get_model_dir() == os.path.dirname(os.path.abspath(__file__))
    ),
    "helpers/serialize_byte_tensor": lambda: pb_utils.serialize_byte_tensor(
        np.array([b"ab", "c", 1], dtype=np.object_)
    ),
    "helpers/serialize_byte_tensor empty": lambda: pb_utils.serialize_byte_tensor(
        np.array([], dtype=np.object_)
    ),
    "helpers/serialize_byte_tensor int32": lambda: pb_utils.serialize_byte_tensor(ONE),
    "helpers/deserialize_bytes_tensor": lambda: pb_utils.deserialize_bytes_tensor(
        b"\x02\x00\x00\x00ab\x00\x00\x00\x00"
    ).tolist(),
    "helpers/triton_string_to_numpy bytes": lambda: pb_utils.triton_string_to_numpy(b"TYPE_FP32"),
    "helpers/get_input_config_by_name bytes": lambda: pb_utils.get_input_config_by_name(
        {"input": [{"name": "IN"}]}, b"IN"
    ),
    # Custom metrics
    "metrics/family bytes": lambda: counted(
        family(b"probe_bytes", "COUNTER", b"from bytes").Metric(labels={"a": "b"}),
        ("increment", 2),
    ),
    "metrics/family int kind": lambda: pb_utils.MetricFamily("probe_int_kind", "d", 0),
    "metrics/family int description": lambda: pb_utils.MetricFamily(
        "probe_int_description", 5, pb_utils.MetricFamily.GAUGE
    ),
    "metrics/family colon name": lambda: counted(metric("probe:colon", "GAUGE"), ("set", 1)),
    "metrics/family other description": lambda: (
        family("probe_described", "GAUGE", "first"),
        family("probe_described", "GAUGE", "second"),
    ),
    "metrics/labels None": lambda: counted(metric("probe_labels_none", "GAUGE", labels=None)),
    "metrics/labels list": lambda: metric("probe_labels_list", "GAUGE", labels=[("a", "b")]),
    "metrics/labels bytes key": lambda: metric("probe_labels_bk", "GAUGE", labels={b"a": "b"}),
    "metrics/labels bytes value": lambda: metric("probe_labels_bv", "GAUGE", labels={"a": b"b"}),
    "metrics/labels empty value": lambda: counted(
        metric("probe_labels_ev", "GAUGE", labels={"a": ""})
    ),
    "metrics/shared by labels": lambda: (
        counted(
            family("probe_shared", "GAUGE").Metric(labels={"a": "1"}),
            ("increment", 2),
        )
        + family("probe_shared", "GAUGE").Metric(labels={"a": "1"}).value()
    ),
    "metrics/counter increments": lambda: counted(
        metric("probe_counter", "COUNTER"), ("increment", 2), ("increment", 3.5)
    ),
    "metrics/gauge set str": lambda: metric("probe_gauge_str", "GAUGE").set("2"),
    "metrics/gauge set None": lambda: metric("probe_gauge_none", "GAUGE").set(None),
    "metrics/gauge increment bool": lambda: counted(
        metric("probe_gauge_bool", "GAUGE"), ("increment", True)
    ),
    "metrics/gauge numpy float": lambda: counted(
        metric("probe_gauge_np", "GAUGE"), ("set", np.float32(1.5))
    ),
    "metrics/gauge buckets": lambda: metric("probe_gauge_b", "GAUGE", buckets=[1.0]),
    "metrics/histogram no buckets": lambda: metric("probe_hist_none", "HISTOGRAM"),
    "metrics/histogram tuple buckets": lambda: metric(
        "probe_hist_tuple", "HISTOGRAM", buckets=(1.0,)
    ),
    "metrics/histogram str buckets": lambda: metric("probe_hist_str", "HISTOGRAM", buckets=["1"]),
    "metrics/histogram observe": lambda: metric(
        "probe_hist_o", "HISTOGRAM", buckets=[1, 2]
    ).observe(1),
    "metrics/family deleted": deleted_family_use,
    # Logger: last, as on Triton 2.51 a model control call (is_model_ready...) soon after
    # Logger calls can abort the server (boost::interprocess::lock_exception).
    "logger/log_info bytes": lambda: pb_utils.Logger.log_info(b"pb_utils_probe: bytes"),
    "logger/log_info int": lambda: pb_utils.Logger.log_info(5),
    "logger/log_info None": lambda: pb_utils.Logger.log_info(None),
    "logger/log bytes": lambda: pb_utils.Logger.log(b"pb_utils_probe: log", pb_utils.Logger.INFO),
    "logger/log int level": lambda: pb_utils.Logger.log("x", 1),
}


class TritonPythonModel:
    """Runs the probes a request names."""

    def execute(self, requests):
        responses = []
        for req in requests:
            names = [n.decode() for n in pb_utils.get_input_tensor_by_name(req, "NAMES").as_numpy()]
            if names == ["list"]:
                result = list(PROBES)
            else:
                result = {}
                for name in names:
                    try:
                        result[name] = "ok " + show(PROBES[name]())
                    except Exception as exc:  # what the probe raised is its answer
                        result[name] = f"err {type(exc).__name__}: {exc}"
            out = np.array([json.dumps(result).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
        return responses
