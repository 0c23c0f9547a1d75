"""``slow``: echoes its input after a delay, stopping early when cancelled.

Inputs: ``INPUT0`` (INT32, dims ``[-1]``) and the optional ``DELAY_MS`` (UINT32, dims
``[1]``); output ``OUTPUT0`` = ``INPUT0``. The model sleeps ``DELAY_MS`` milliseconds, or the
config parameter ``default_delay_ms`` (1000) when ``DELAY_MS`` is not sent, checking
``request.is_cancelled()`` every 10 ms; a cancelled request gets a CANCELLED error at once.
There is one instance and no batching, so requests are served one after another: a second
request waits for the first, which timeout and queueing tests rely on.

Used by the project's client timeout, cancellation and async-ordering tests.
"""

import json
import time

import triton_python_backend_utils as pb_utils

# Granularity of the cancellation checks while sleeping, in seconds.
_POLL_S = 0.01


class TritonPythonModel:
    """Delayed identity on INT32."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameter = config.get("parameters", {}).get("default_delay_ms", {})
        self.default_delay_ms = float(parameter.get("string_value", "1000"))

    @staticmethod
    def _sleep_unless_cancelled(request, seconds):
        """Sleep ``seconds``; return False as soon as ``request`` is cancelled."""
        deadline = time.monotonic() + seconds
        while True:
            if request.is_cancelled():
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, _POLL_S))

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            delay = pb_utils.get_input_tensor_by_name(request, "DELAY_MS")
            delay_ms = (
                float(delay.as_numpy().reshape(-1)[0])
                if delay is not None
                else self.default_delay_ms
            )
            if self._sleep_unless_cancelled(request, delay_ms / 1000.0):
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
            else:
                error = pb_utils.TritonError(
                    "slow: request cancelled", pb_utils.TritonError.CANCELLED
                )
                responses.append(pb_utils.InferenceResponse(error=error))
        return responses
