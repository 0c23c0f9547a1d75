"""``custom_metrics``: updates custom metrics of every kind from each request's ``VALUE``.

Input ``VALUE`` (FP64, dims ``[1]``); output ``COUNT`` (FP64, dims ``[1]``), the counter's value
after the request. ``initialize`` creates, through ``pb_utils.MetricFamily``:

* counter ``custom_metrics_requests``: one metric labelled with the model's name and version,
  incremented by 1 per request, and one without labels, incremented by ``VALUE``;
* gauge ``custom_metrics_last_value``: set to ``VALUE`` (labels with characters that need
  escaping in the Prometheus text format);
* histogram ``custom_metrics_value``: observes ``VALUE`` in buckets 0.5, 1, 2.5, 10;
* gauge ``custom_metrics_unused``: a family without metrics.

The differential metrics test reads the Prometheus exposition of both servers after sending the
same values to both.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Custom metrics model."""

    def initialize(self, args):
        labels = {"model": args["model_name"], "version": args["model_version"]}
        self.requests_family = pb_utils.MetricFamily(
            name="custom_metrics_requests",
            description="Requests seen by the custom_metrics model",
            kind=pb_utils.MetricFamily.COUNTER,
        )
        self.requests = self.requests_family.Metric(labels=labels)
        self.total = self.requests_family.Metric(labels={})
        self.last_family = pb_utils.MetricFamily(
            name="custom_metrics_last_value",
            description='Last VALUE received (a "gauge"), with a back\\slash',
            kind=pb_utils.MetricFamily.GAUGE,
        )
        self.last = self.last_family.Metric(
            labels={**labels, "quoted": 'say "hi"\\ok', "empty": ""}
        )
        self.value_family = pb_utils.MetricFamily(
            name="custom_metrics_value",
            description="VALUE distribution",
            kind=pb_utils.MetricFamily.HISTOGRAM,
        )
        self.value = self.value_family.Metric(labels=labels, buckets=[0.5, 1.0, 2.5, 10.0])
        self.unused_family = pb_utils.MetricFamily(
            name="custom_metrics_unused",
            description="A family without metrics",
            kind=pb_utils.MetricFamily.GAUGE,
        )

    def execute(self, requests):
        responses = []
        for request in requests:
            value = float(pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()[0])
            self.requests.increment(1)
            self.total.increment(abs(value))
            self.last.set(value)
            self.value.observe(value)
            count = np.array([self.requests.value()], dtype=np.float64)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("COUNT", count)]))
        return responses
