"""``repeat_int32``: decoupled model that answers one request with many responses.

Inputs: ``IN`` (INT32, dims ``[-1]``), ``DELAY`` (UINT32, dims ``[-1]``, milliseconds) and
``WAIT`` (UINT32, dims ``[1]``, milliseconds). Outputs of each response: ``OUT`` (INT32,
dims ``[1]``) and ``IDX`` (UINT32, dims ``[1]``).

For a request with ``IN = [v0, v1, ...]`` the model sends, from a worker thread, one
response per value: response ``i`` carries ``OUT = [vi]`` and ``IDX = [i]`` and is sent
``DELAY[i]`` ms after the previous one (the last ``DELAY`` value is reused when ``DELAY`` is
shorter than ``IN``, 0 when it is empty). Then it sends a flags-only response with
``TRITONSERVER_RESPONSE_COMPLETE_FINAL``. ``execute`` itself returns after ``WAIT`` ms, so
the request can be released before or after its responses are sent, as in Triton's C++
repeat backend. When the client cancels, the model stops and ends the stream with a
CANCELLED error.

Used by Triton's example clients simple_grpc_custom_repeat.py (10 values from 100, 1000 ms
delays: expects OUT 100..109 in order) and the Python backend's repeat_client.py.
"""

import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# Granularity of the cancellation checks while waiting, in seconds.
_POLL_S = 0.02


def _wait_unless_cancelled(sender, seconds):
    """Sleep ``seconds``; return False as soon as the request is cancelled."""
    deadline = time.monotonic() + seconds
    while True:
        if sender.is_cancelled():
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, _POLL_S))


class TritonPythonModel:
    """Decoupled repeat model."""

    def initialize(self, args):
        self._lock = threading.Lock()
        self._workers = set()

    def _respond(self, sender, values, delays_ms):
        try:
            for idx, value in enumerate(values):
                if delays_ms.size:
                    delay = float(delays_ms[min(idx, delays_ms.size - 1)]) / 1000.0
                else:
                    delay = 0.0
                if not _wait_unless_cancelled(sender, delay):
                    error = pb_utils.TritonError(
                        "repeat_int32: request cancelled", pb_utils.TritonError.CANCELLED
                    )
                    sender.send(
                        pb_utils.InferenceResponse(error=error),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                    )
                    return
                sender.send(
                    pb_utils.InferenceResponse(
                        output_tensors=[
                            pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                            pb_utils.Tensor("IDX", np.array([idx], dtype=np.uint32)),
                        ]
                    )
                )
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        finally:
            with self._lock:
                self._workers.discard(threading.current_thread())

    def execute(self, requests):
        for request in requests:
            # Copy the inputs: request tensors are freed when execute returns.
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().reshape(-1)
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy().reshape(-1)
            sender = request.get_response_sender()
            worker = threading.Thread(
                target=self._respond,
                args=(sender, values.copy(), delays.copy()),
                name="repeat_int32-responder",
                daemon=True,
            )
            with self._lock:
                self._workers.add(worker)
            worker.start()
            if wait.size:
                time.sleep(float(wait[0]) / 1000.0)
        return None

    def finalize(self):
        # Let in-flight responders finish, but never hang the unload.
        deadline = time.monotonic() + 10.0
        while True:
            with self._lock:
                workers = list(self._workers)
            if not workers or time.monotonic() > deadline:
                return
            workers[0].join(timeout=max(0.0, deadline - time.monotonic()))
