"""The example models of the Python-backend documentation, run unchanged through the core.

Every model below is copied from /work/shared/seeds/python-backend.txt (the Python-backend
README).  Where the seed shows complete code it is used as is; where it shows a fragment
(``...``, ``<pb_utils.Tensor object>``, ``an_error_occurred``) the gaps are filled in minimally
and every addition is marked with an ``# ADDED:`` comment (``# CHANGED:`` where a seed line had
to be altered, e.g. an onnx model swapped for a Python one).  The models are written into a
temporary model repository with a ``config.pbtxt`` each and served by a real
:class:`CoreServer`; the tests check the behaviour the seed documents.
"""

from __future__ import annotations

import json
import logging
import queue
import shutil
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mock_server.compose import build_core
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.server import CoreServer, ModelControlMode, ServerOptions
from mock_server.core.types import InferRequest, InferResponse, RequestedOutput, Tensor
from mock_server.metrics import render_metrics
from mock_server.python_backend import collect_metrics

BUNDLED = Path(__file__).resolve().parent.parent / "mock_server" / "models"

# -- model sources -------------------------------------------------------------------------------

# examples/add_sub/model.py: the seed's Quick Start installs it but does not print it; this is
# the upstream file (python_backend examples/add_sub), comments shortened.
ADD_SUB = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
        self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])

    def execute(self, requests):
        output0_dtype = self.output0_dtype
        output1_dtype = self.output1_dtype
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            out_0, out_1 = (
                in_0.as_numpy() + in_1.as_numpy(),
                in_0.as_numpy() - in_1.as_numpy(),
            )
            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(output0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(output1_dtype))
            inference_response = pb_utils.InferenceResponse(
                output_tensors=[out_tensor_0, out_tensor_1]
            )
            responses.append(inference_response)
        return responses

    def finalize(self):
        print("Cleaning up...")
"""

# examples/add_sub/config.pbtxt (upstream).
ADD_SUB_CONFIG = """
name: "add_sub"
backend: "python"
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
instance_group [{ kind: KIND_CPU }]
"""

# "Usage": the TritonPythonModel skeleton, verbatim (docstrings kept) except the body of the
# loop in execute, which the seed leaves as a comment only.
SKELETON = '''
import triton_python_backend_utils as pb_utils
import numpy as np  # ADDED: used by the completed execute loop
class TritonPythonModel:
    """Your Python model must use the same class name. Every Python model
    that is created must have "TritonPythonModel" as the class name.
    """
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        """`auto_complete_config` is called only once when loading the model
        assuming the server was not started with
        `--disable-auto-complete-config`.
        """
        inputs = [{
            'name': 'INPUT0',
            'data_type': 'TYPE_FP32',
            'dims': [4],
            # this parameter will set `INPUT0 as an optional input`
            'optional': True
        }, {
            'name': 'INPUT1',
            'data_type': 'TYPE_FP32',
            'dims': [4]
        }]
        outputs = [{
            'name': 'OUTPUT0',
            'data_type': 'TYPE_FP32',
            'dims': [4]
        }, {
            'name': 'OUTPUT1',
            'data_type': 'TYPE_FP32',
            'dims': [4]
        }]
        # Demonstrate the usage of `as_dict`, `add_input`, `add_output`,
        # `set_max_batch_size`, and `set_dynamic_batching` functions.
        # Store the model configuration as a dictionary.
        config = auto_complete_model_config.as_dict()
        input_names = []
        output_names = []
        for input in config['input']:
            input_names.append(input['name'])
        for output in config['output']:
            output_names.append(output['name'])
        for input in inputs:
            # The name checking here is only for demonstrating the usage of
            # `as_dict` function. `add_input` will check for conflicts and
            # raise errors if an input with the same name already exists in
            # the configuration but has different data_type or dims property.
            if input['name'] not in input_names:
                auto_complete_model_config.add_input(input)
        for output in outputs:
            # The name checking here is only for demonstrating the usage of
            # `as_dict` function. `add_output` will check for conflicts and
            # raise errors if an output with the same name already exists in
            # the configuration but has different data_type or dims property.
            if output['name'] not in output_names:
                auto_complete_model_config.add_output(output)
        auto_complete_model_config.set_max_batch_size(0)
        # To enable a dynamic batcher with default settings, you can use
        # auto_complete_model_config set_dynamic_batching() function. It is
        # commented in this example because the max_batch_size is zero.
        #
        # auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config
    def initialize(self, args):
        """`initialize` is called only once when the model is being loaded."""
        print('Initialized...')
    def execute(self, requests):
        """`execute` must be implemented in every Python model."""
        responses = []
        for request in requests:
            # Perform inference on the request and append it to responses
            # list...
            # ADDED (the seed's loop has no body): add/sub, INPUT0 is optional (zeros if absent)
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in0 = np.zeros_like(in1) if in0 is None else in0.as_numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", in0 + in1),
                pb_utils.Tensor("OUTPUT1", in0 - in1)]))
            # END ADDED
        # You must return a list of pb_utils.InferenceResponse. Length
        # of this list must match the length of `requests` list.
        return responses
    def finalize(self):
        """`finalize` is called only once when the model is being unloaded."""
        print('Cleaning up...')
'''

# "auto_complete_config": the set_model_transaction_policy fragment.
AUTO_COMPLETE_DECOUPLED = """
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
      # ADDED (for the seed's "..."): one input and one output
      auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_INT32", "dims": [1]})
      auto_complete_model_config.add_output({"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]})
      transaction_policy = {"decoupled": True}
      auto_complete_model_config.set_model_transaction_policy(transaction_policy)
      return auto_complete_model_config  # ADDED (for the seed's trailing "...")
    # ADDED: execute, so that the model loads; sends IN once then the final flag
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

# "Error Handling": per-request TritonError, with and without an error code.
ERRORS = """
import numpy as np  # ADDED
import json  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            # ADDED: the seed leaves `an_error_occurred` undefined; here a request parameter
            # "code" asks for an error (with that pb_utils.TritonError code, "" = no code).
            params = json.loads(request.parameters())
            an_error_occurred = "code" in params
            if an_error_occurred:
              if params["code"] == "":  # ADDED: the seed's example without a code
                  responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("An Error Occurred")))
              else:  # ADDED: the seed's constructor with a code, e.g. NOT_FOUND
                  responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("The file is not found",
                                               getattr(pb_utils.TritonError, params["code"]))))
            else:  # ADDED: a normal response
                responses.append(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([1], np.int32))]))
        return responses
"""

# "Request Cancellation Handling" (default mode).
CANCELLATION = """
import time  # ADDED
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            if request.is_cancelled():
                responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("Message", pb_utils.TritonError.CANCELLED)))
            else:
                # ADDED (for the seed's "..."): sleep DELAY seconds, answer OUT=DELAY
                delay = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()
                time.sleep(float(delay.flat[0]))
                responses.append(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", delay)]))
        return responses
"""

# "Decoupled mode" + "Use Cases": one response sender per request, handed to a thread that
# keeps sending after execute returned, checks response_sender.is_cancelled() and always ends
# with COMPLETE_FINAL (also with no response when N == 0).  The seed describes this workflow in
# prose only; the model is the minimal one following it step by step.
DECOUPLED_REPEAT = """
import threading
import time
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.threads = []
    def _generate(self, sender, count, delay):
        for i in range(count):
            if sender.is_cancelled():
                break
            out = pb_utils.Tensor("OUT", np.array([i], np.int32))
            sender.send(pb_utils.InferenceResponse([out]))
            time.sleep(delay)
        # "Sending the COMPLETE_FINAL flag at the end of response is still needed even the
        # request is cancelled."
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            delay = pb_utils.get_input_tensor_by_name(request, "DELAY")
            delay = 0.0 if delay is None else float(delay.as_numpy()[0])
            thread = threading.Thread(
                target=self._generate, args=(request.get_response_sender(), count, delay))
            thread.start()
            self.threads.append(thread)
        return None
    def finalize(self):
        for thread in self.threads:
            thread.join(10)
"""

# "Default Mode": since 24.06 a default-mode model may answer through the response sender.
DEFAULT_MODE_SENDER = """
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            out = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

# "Request Rescheduling", default mode: the seed's fragment.
RESCHEDULE_DEFAULT = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    # ADDED: the state the seed's execute uses
    def initialize(self, args):
        self.idx = 0
        self.runs = 0
    def execute(self, requests):
        self.runs += 1  # ADDED: count executions
        responses = []
        for request in requests:
            # Explicitly reschedule the first request
            if self.idx == 0:
                request.set_release_flags(
                    pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
                )
                responses.append(None)
                self.idx += 1
            else:
                # ADDED: the seed's undefined `inference_response`
                inference_response = pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([self.runs], np.int32))])
                responses.append(inference_response)
        return responses
"""

# "Request Rescheduling", decoupled mode: the seed's example, verbatim but for initialize.
RESCHEDULE_DECOUPLED = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    # ADDED (for the seed's "..."): the state the seed's execute uses
    def initialize(self, args):
        self.reset_flag = True
    def execute(self, requests):
        responses = []
        for request in requests:
            in_input = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if self.reset_flag:
                self.remaining_response = in_input[0]
                self.reset_flag = False
            response_sender = request.get_response_sender()
            self.remaining_response -= 1
            out_output = pb_utils.Tensor(
                "OUT", np.array([self.remaining_response], np.int32)
            )
            response = pb_utils.InferenceResponse(output_tensors=[out_output])
            if self.remaining_response <= 0:
                response_sender.send(
                    response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                )
                self.reset_flag = True
            else:
                request.set_release_flags(
                    pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
                )
                response_sender.send(response)
        return None
"""

# "Error Handling" (initialize/execute/finalize): TritonModelException raised from finalize.
FINALIZE_ERROR = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    # ADDED (for the seed's "..."): a trivial execute
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([1], np.int32))])
                for _ in requests]
    def finalize(self):
      error_during_finalize = True  # ADDED: the seed leaves it undefined
      if error_during_finalize:
        raise pb_utils.TritonModelException(
          "An error occurred during finalize.")
"""

# Shared by the BLS examples (ADDED): build the request the seed leaves as
# `inputs=[<pb_utils.Tensor object>]`, for the add_sub model, and pack the outputs.
_BLS_HELPERS = """
def _inputs(request):
    return [pb_utils.get_input_tensor_by_name(request, "INPUT0"),
            pb_utils.get_input_tensor_by_name(request, "INPUT1")]
"""

# "Business Logic Scripting": synchronous exec.  'model_name' -> 'add_sub' and
# REQUESTED_OUTPUT_1/2 -> OUTPUT0/1 (CHANGED); the outputs become the model's response.
BLS_SYNC = (
    """
import triton_python_backend_utils as pb_utils
"""
    + _BLS_HELPERS
    + """
class TritonPythonModel:
    def execute(self, requests):
      responses = []  # ADDED
      for request in requests:  # ADDED
      # (body re-indented under the ADDED loop; otherwise as in the seed)
        inference_request = pb_utils.InferenceRequest(
            model_name='add_sub',  # CHANGED: 'model_name'
            requested_output_names=['OUTPUT0', 'OUTPUT1'],  # CHANGED: REQUESTED_OUTPUT_1/2
            inputs=_inputs(request))  # CHANGED: [<pb_utils.Tensor object>]
        # Execute the inference_request and wait for the response
        inference_response = inference_request.exec()
        # Check if the inference response has an error
        if inference_response.has_error():
            raise pb_utils.TritonModelException(
              inference_response.error().message())
        else:
            # Extract the output tensors from the inference response.
            output1 = pb_utils.get_output_tensor_by_name(
              inference_response, 'OUTPUT0')
            output2 = pb_utils.get_output_tensor_by_name(
              inference_response, 'OUTPUT1')
            # ADDED: use them for the final inference response
            responses.append(pb_utils.InferenceResponse([output1, output2]))
      return responses  # ADDED
"""
)

# "Business Logic Scripting": async_exec, four in flight.  The seed's loop reads
# `inference_response` (undefined there: a NameError) instead of the loop variable
# `infer_response`; CHANGED to the loop variable.
BLS_ASYNC = (
    """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
import asyncio
"""
    + _BLS_HELPERS
    + """
class TritonPythonModel:
    # You must add the Python 'async' keyword to the beginning of `execute`
    # function if you want to use `async_exec` function.
    async def execute(self, requests):
      responses = []  # ADDED
      for request in requests:  # ADDED
        inference_request = pb_utils.InferenceRequest(
            model_name='add_sub',  # CHANGED
            requested_output_names=['OUTPUT0', 'OUTPUT1'],  # CHANGED
            inputs=_inputs(request))  # CHANGED
        infer_response_awaits = []
        for i in range(4):
          infer_response_awaits.append(inference_request.async_exec())
        # Wait for all of the inference requests to complete.
        infer_responses = await asyncio.gather(*infer_response_awaits)
        sums = []  # ADDED
        for infer_response in infer_responses:
          # Check if the inference response has an error
          if infer_response.has_error():  # CHANGED: inference_response
              raise pb_utils.TritonModelException(
                infer_response.error().message())  # CHANGED: inference_response
          else:
              # Extract the output tensors from the inference response.
              output1 = pb_utils.get_output_tensor_by_name(
                infer_response, 'OUTPUT0')  # CHANGED
              output2 = pb_utils.get_output_tensor_by_name(
                infer_response, 'OUTPUT1')  # CHANGED
              sums.append(output1.as_numpy() + output2.as_numpy())  # ADDED
        # ADDED: the model answers the sum over the four responses of OUTPUT0 + OUTPUT1
        responses.append(pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUTPUT0", np.sum(sums, axis=0))]))
      return responses  # ADDED
"""
)

# "Using BLS with Decoupled Models": exec(decoupled=True) on the decoupled repeat model.  The
# seed's `infer_response.output_tensors()` names an undefined variable (the loop variable is
# `inference_response`); CHANGED.
BLS_DECOUPLED = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
      responses = []  # ADDED
      for request in requests:  # ADDED
        inference_request = pb_utils.InferenceRequest(
            model_name='repeat',  # CHANGED
            requested_output_names=['OUT'],  # CHANGED
            inputs=[pb_utils.get_input_tensor_by_name(request, "N")])  # CHANGED
        inference_responses = inference_request.exec(decoupled=True)
        seen = []  # ADDED
        for inference_response in inference_responses:
          # Check if the inference response has an error
          if inference_response.has_error():
              raise pb_utils.TritonModelException(
                inference_response.error().message())
          # For some models, it is possible that the last response is empty
          if len(inference_response.output_tensors()) > 0:  # CHANGED: infer_response
            # Extract the output tensors from the inference response.
            output1 = pb_utils.get_output_tensor_by_name(
              inference_response, 'OUT')  # CHANGED
            seen.append(int(output1.as_numpy()[0]))  # ADDED
          else:  # ADDED
            seen.append(-1)  # ADDED: marks the empty (final) response
        responses.append(pb_utils.InferenceResponse(  # ADDED
            [pb_utils.Tensor("SEEN", np.array(seen, np.int32))]))
      return responses  # ADDED
"""

# "Using BLS with Decoupled Models": async_exec(decoupled=True), four in flight.  Same
# undefined-name slips in the seed as above; CHANGED to the loop variable.
BLS_DECOUPLED_ASYNC = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
import asyncio
class TritonPythonModel:
    async def execute(self, requests):
      responses = []  # ADDED
      for request in requests:  # ADDED
        inference_request = pb_utils.InferenceRequest(
            model_name='repeat',  # CHANGED
            requested_output_names=['OUT'],  # CHANGED
            inputs=[pb_utils.get_input_tensor_by_name(request, "N")])  # CHANGED
        infer_response_awaits = []
        for i in range(4):
          infer_response_awaits.append(
            inference_request.async_exec(decoupled=True))
        # Wait for all of the inference requests to complete.
        async_responses = await asyncio.gather(*infer_response_awaits)
        counts = []  # ADDED
        for infer_responses in async_responses:
          count = 0  # ADDED
          for infer_response in infer_responses:
            # Check if the inference response has an error
            if infer_response.has_error():  # CHANGED
                raise pb_utils.TritonModelException(
                  infer_response.error().message())  # CHANGED
            # For some models, it is possible that the last response is empty
            if len(infer_response.output_tensors()) > 0:
                output1 = pb_utils.get_output_tensor_by_name(
                  infer_response, 'OUT')  # CHANGED
                count += 1  # ADDED
          counts.append(count)  # ADDED
        responses.append(pb_utils.InferenceResponse(  # ADDED
            [pb_utils.Tensor("COUNTS", np.array(counts, np.int32))]))
      return responses  # ADDED
"""

# "Cancelling decoupled BLS requests": cancel() on the response iterator (sync and async).
BLS_CANCEL = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    async def execute(self, requests):
        responses = []  # ADDED
        for request in requests:  # ADDED
            # ADDED: a long stream from the repeat model (1000 responses, 10 ms apart)
            bls_request = pb_utils.InferenceRequest(
                model_name="repeat", requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("N", np.array([1000], np.int32)),
                        pb_utils.Tensor("DELAY", np.array([0.01], np.float32))])
            use_async = pb_utils.get_input_tensor_by_name(request, "ASYNC").as_numpy()[0]  # ADDED
            if use_async:  # ADDED: the seed's async variant
                bls_response_iterator = await bls_request.async_exec(decoupled=True)
            else:  # ADDED: the seed's sync variant
                bls_response_iterator = bls_request.exec(decoupled=True)
            first = next(bls_response_iterator)  # ADDED: read one response before cancelling
            bls_response_iterator.cancel()
            # ADDED: drain the rest; count data responses and note a CANCELLED error
            rest, cancelled = 0, 0
            for response in bls_response_iterator:
                if response.has_error():
                    cancelled += response.error().code() == pb_utils.TritonError.CANCELLED
                elif len(response.output_tensors()) > 0:
                    rest += 1
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("FIRST", first.output_tensors()[0].as_numpy()),
                pb_utils.Tensor("REST", np.array([rest], np.int32)),
                pb_utils.Tensor("CANCELLED", np.array([cancelled], np.int32))]))
        return responses  # ADDED
"""

# "Using BLS with Stateful Models": correlation_id and the SEQUENCE_START/END flags, sent to
# the bundled simple_sequence model (OUTPUT = INPUT, plus 1 on a sequence's first request).
BLS_SEQUENCE = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        responses = []  # ADDED
        for request in requests:  # ADDED
            values = pb_utils.get_input_tensor_by_name(request, "VALUES").as_numpy()  # ADDED
            outs = []  # ADDED
            for i, value in enumerate(values):  # ADDED: one sequence, one request per value
                flags = 0  # ADDED
                if i == 0:  # ADDED
                    flags |= pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
                if i == len(values) - 1:  # ADDED
                    flags |= pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
                inference_request = pb_utils.InferenceRequest(model_name='simple_sequence',
                  requested_output_names=['OUTPUT'],
                  inputs=[pb_utils.Tensor("INPUT", np.array([[value]], np.int32))],
                  request_id="1", correlation_id=4,
                  flags=flags)
                response = inference_request.exec()  # ADDED
                if response.has_error():  # ADDED
                    raise pb_utils.TritonModelException(response.error().message())
                outs.append(int(pb_utils.get_output_tensor_by_name(
                    response, "OUTPUT").as_numpy().ravel()[0]))  # ADDED
            responses.append(pb_utils.InferenceResponse(  # ADDED
                [pb_utils.Tensor("OUTS", np.array(outs, np.int32))]))
        return responses  # ADDED
"""

# "Model Loading API": is_model_ready / load_model (plain, with a JSON config override, with
# config + file overrides) in initialize, BLS on the loaded model, then unload_model.  The seed
# loads an onnx model; here "onnx_model" is a Python model that auto-completes its config (the
# skeleton): the config override's backend is CHANGED from "onnxruntime" to "python" and the
# override file is that model's model.py instead of model.onnx.
MODEL_LOADER = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.model_name="onnx_model"
        self.loaded = []  # ADDED: which of the seed's three load_model calls ran
        if not pb_utils.is_model_ready(model_name=self.model_name,
                                       model_version="1"):
            # Load the model from the model repository
            pb_utils.load_model(model_name=self.model_name)
            self.loaded.append(pb_utils.is_model_ready(self.model_name))  # ADDED
            config = "{\\"backend\\":\\"python\\", \\"version_policy\\":{\\"specific\\":{\\"versions\\":[1]}}}"  # CHANGED: onnxruntime
            pb_utils.load_model(model_name=self.model_name, config=config)
            self.loaded.append(pb_utils.is_model_ready(self.model_name))  # ADDED
            # CHANGED: the path ('models/onnx_int32_int32_int32/1/model.onnx')
            with open(args["model_repository"] + '/../onnx_model/1/model.py', 'rb') as file:
                data = file.read()
            files = {"file:1/model.py": data}  # CHANGED: file:1/model.onnx
            pb_utils.load_model(model_name=self.model_name,
                                config=config, files=files)
            self.loaded.append(pb_utils.is_model_ready(self.model_name))  # ADDED
    def execute(self, requests):
        # Execute the model
        # ADDED (for the seed's "..."): BLS on the loaded model
        responses = []
        for request in requests:
            response = pb_utils.InferenceRequest(
                model_name=self.model_name, requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                        pb_utils.get_input_tensor_by_name(request, "INPUT1")]).exec()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.get_output_tensor_by_name(response, "OUTPUT0"),
                pb_utils.Tensor("LOADED", np.array(self.loaded, np.bool_))]))
        # END ADDED
        pb_utils.unload_model(model_name=self.model_name,
                              unload_dependents=True)
        return responses  # ADDED
"""  # noqa: E501 (the seed's config line)

# "Custom Metrics": the seed's counter example; preprocess and the response are ADDED.
CUSTOM_METRICS = """
import time  # ADDED
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
      # Create a MetricFamily object to report the latency of the model
      # execution. The 'kind' parameter must be either 'COUNTER',
      # 'GAUGE' or 'HISTOGRAM'.
      self.metric_family = pb_utils.MetricFamily(
          name="preprocess_latency_ns",
          description="Cumulative time spent pre-processing requests",
          kind=pb_utils.MetricFamily.COUNTER
      )
      # Create a Metric object under the MetricFamily object. The 'labels'
      # is a dictionary of key-value pairs.
      self.metric = self.metric_family.Metric(
        labels={"model" : "model_name", "version" : "1"}
      )
    def preprocess(self, request):  # ADDED
        time.sleep(0.002)
    def execute(self, requests):
      responses = []
      for request in requests:
        # Pre-processing - time it to capture latency
        start_ns = time.time_ns()
        self.preprocess(request)
        end_ns = time.time_ns()
        # Update metric to track cumulative pre-processing latency
        self.metric.increment(end_ns - start_ns)
        # ADDED (for the seed's "..."): answer the metric's value
        responses.append(pb_utils.InferenceResponse(
            [pb_utils.Tensor("VALUE", np.array([self.metric.value()], np.float64))]))
        print("Cumulative pre-processing latency:", self.metric.value())
      return responses
"""

# "Logging": every method of pb_utils.Logger, in initialize, execute and finalize.
LOGGING = """
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
  def initialize(self, args):  # ADDED: "the logger can be used in initialize"
    pb_utils.Logger.log_info("init Msg!")
  def execute(self, requests):
    logger = pb_utils.Logger
    logger.log_info("Info Msg!")
    logger.log_warn("Warning Msg!")
    logger.log_error("Error Msg!")
    logger.log_verbose("Verbose Msg!")
    # log-level options: INFO, WARNING, ERROR, VERBOSE
    logger.log("Specific Msg!", logger.INFO)
    logger.log("Default Msg!")  # ADDED: "If no log-level is specified, ... INFO"
    # ADDED: a response per request
    return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([1], np.int32))])
            for _ in requests]
  def finalize(self):  # ADDED: "the logger can be used in finalize"
    pb_utils.Logger.log_info("finalize Msg!")
"""

# "Inference Request/Response Parameters": request.parameters() as JSON, InferenceRequest
# (parameters=...) for BLS, InferenceResponse(output_tensors, parameters=...) and
# inference_response.parameters().  The seed shows one-line fragments only; the model
# (written for this test) answers its request's parameters as response parameters; with a
# request parameter "bls" it first sends them through the "echo" model (a second copy of this
# model) and answers what came back.
PARAMETERS = """
import json
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            params = json.loads(request.parameters())
            if params.pop("bls", False):
                request = pb_utils.InferenceRequest(
                    parameters=params, model_name="echo", requested_output_names=["OUT"],
                    inputs=[pb_utils.Tensor("IN", np.array([0], np.int32))])
                inference_response = request.exec()
                params = json.loads(inference_response.parameters())
            output_tensors = [pb_utils.Tensor("OUT", np.array([len(params)], np.int32))]
            response = pb_utils.InferenceResponse(
                output_tensors, parameters=params
            )
            responses.append(response)
        return responses
"""

# "Adding Custom Parameters in the Model Configuration": initialize prints the parameters.
CONFIG_PARAMETERS = """
import json  # ADDED
import numpy as np  # ADDED
import triton_python_backend_utils as pb_utils  # ADDED
class TritonPythonModel:  # ADDED
  def initialize(self, args):
      print(json.loads(args['model_config'])['parameters'])
      # Should print {'custom_key': {'string_value': 'custom_value'}}
  def execute(self, requests):  # ADDED
      return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([1], np.int32))])
              for _ in requests]
"""

# "Interoperability and GPU Support": to_dlpack / from_dlpack / __dlpack__ / is_cpu.  torch is
# not installed here, so numpy stands in for it (CHANGED): torch.utils.dlpack.from_dlpack(
# capsule) -> np.from_dlpack(tensor), to_dlpack(torch_tensor) -> numpy_array.__dlpack__(), and
# torch.tensor(..., device='cuda') -> a host numpy array.
DLPACK = """
import numpy as np  # CHANGED: for torch
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
  def execute(self, requests):
    responses = []  # ADDED
    for request in requests:  # ADDED
      input0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
      # (seed: pytorch_tensor = from_dlpack(input0.to_dlpack()))
      capsule = input0.to_dlpack()  # ADDED: the seed's call, the capsule itself checked below
      pytorch_tensor = np.from_dlpack(input0)  # CHANGED: numpy reads objects, not capsules
      shares = np.shares_memory(pytorch_tensor, input0.as_numpy())  # ADDED: zero-copy?
      # Create a Python backend tensor from the DLPack encoding of a tensor.
      out0 = pb_utils.Tensor.from_dlpack("OUTPUT0", (pytorch_tensor * 2).__dlpack__())  # CHANGED
      out1 = pb_utils.Tensor.from_dlpack("OUTPUT1", pytorch_tensor + 1)  # __dlpack__ interface
      flags = np.array([shares, input0.is_cpu(), out0.is_cpu(),
                        type(capsule).__name__ == "PyCapsule"], np.bool_)  # ADDED
      responses.append(pb_utils.InferenceResponse(  # ADDED
          [out0, out1, pb_utils.Tensor("FLAGS", flags)]))
    return responses  # ADDED
"""


# -- helpers -------------------------------------------------------------------------------------
def pbtxt_io(kind: str, specs: list[tuple[str, str, list[int]]]) -> str:
    body = ",\n".join(
        f'  {{ name: "{name}" data_type: TYPE_{dt} dims: [ {", ".join(map(str, dims))} ] }}'
        for name, dt, dims in specs
    )
    return f"{kind} [\n{body}\n]\n"


def config(
    name: str,
    inputs: list[tuple[str, str, list[int]]] | None = None,
    outputs: list[tuple[str, str, list[int]]] | None = None,
    extra: str = "",
) -> str:
    text = f'name: "{name}"\nbackend: "python"\n'
    if inputs:
        text += pbtxt_io("input", inputs)
    if outputs:
        text += pbtxt_io("output", outputs)
    return text + extra


DECOUPLED = "model_transaction_policy { decoupled: true }\n"
ADD_SUB_IO = {
    "inputs": [("INPUT0", "FP32", [4]), ("INPUT1", "FP32", [4])],
    "outputs": [("OUTPUT0", "FP32", [4]), ("OUTPUT1", "FP32", [4])],
}

#: name -> (model.py, config.pbtxt)
MODELS: dict[str, tuple[str, str | None]] = {
    "add_sub": (ADD_SUB, ADD_SUB_CONFIG),
    # Stands in for the seed's onnx model: like onnxruntime it completes its own config
    # (auto_complete_config), so the seed's backend+version_policy override config suffices.
    "onnx_model": (SKELETON, 'name: "onnx_model"\nbackend: "python"\n'),
    # Minimal config: auto_complete_config supplies the inputs, outputs and max_batch_size.
    "skeleton": (SKELETON, 'name: "skeleton"\nbackend: "python"\n'),
    "auto_decoupled": (AUTO_COMPLETE_DECOUPLED, 'backend: "python"\n'),
    "errors": (ERRORS, config("errors", outputs=[("OUT", "INT32", [1])])),
    # No batching: one request per execute, so a request waits in the scheduler's queue.
    "cancellation": (
        CANCELLATION,
        config("cancellation", [("DELAY", "FP32", [1])], [("OUT", "FP32", [1])]),
    ),
    # Batches of two: the second request of a batch is cancelled while the model is busy with
    # the first, so the model's own is_cancelled() check sees it.
    "cancellation_batched": (
        CANCELLATION,
        config(
            "cancellation_batched",
            [("DELAY", "FP32", [1])],
            [("OUT", "FP32", [1])],
            "max_batch_size: 2\ndynamic_batching { max_queue_delay_microseconds: 2000000 }\n",
        ),
    ),
    "repeat": (
        DECOUPLED_REPEAT,
        config(
            "repeat",
            [("N", "INT32", [1])],
            [("OUT", "INT32", [1])],
            DECOUPLED
            + 'input [{ name: "DELAY" data_type: TYPE_FP32 dims: [ 1 ] optional: true }]\n'
            + "instance_group [{ count: 2 kind: KIND_CPU }]\n",
        ),
    ),
    "default_sender": (
        DEFAULT_MODE_SENDER,
        config("default_sender", [("IN", "INT32", [1])], [("OUT", "INT32", [1])]),
    ),
    "reschedule_default": (
        RESCHEDULE_DEFAULT,
        config(
            "reschedule_default",
            outputs=[("OUT", "INT32", [1])],
            extra="sequence_batching { iterative_sequence: true }\n",
        ),
    ),
    "reschedule_decoupled": (
        RESCHEDULE_DECOUPLED,
        config(
            "reschedule_decoupled",
            [("IN", "INT32", [1])],
            [("OUT", "INT32", [1])],
            DECOUPLED + "sequence_batching { iterative_sequence: true }\n",
        ),
    ),
    "finalize_error": (FINALIZE_ERROR, config("finalize_error", outputs=[("OUT", "INT32", [1])])),
    # dims [-1]: a wrong shape reaches the model and fails only in the BLS call to add_sub.
    "bls_sync": (
        BLS_SYNC,
        config(
            "bls_sync",
            [("INPUT0", "FP32", [-1]), ("INPUT1", "FP32", [-1])],
            [("OUTPUT0", "FP32", [-1]), ("OUTPUT1", "FP32", [-1])],
        ),
    ),
    "bls_async": (
        BLS_ASYNC,
        config("bls_async", ADD_SUB_IO["inputs"], [("OUTPUT0", "FP32", [4])]),
    ),
    "bls_decoupled": (
        BLS_DECOUPLED,
        config("bls_decoupled", [("N", "INT32", [1])], [("SEEN", "INT32", [-1])]),
    ),
    "bls_decoupled_async": (
        BLS_DECOUPLED_ASYNC,
        config("bls_decoupled_async", [("N", "INT32", [1])], [("COUNTS", "INT32", [4])]),
    ),
    "bls_cancel": (
        BLS_CANCEL,
        config(
            "bls_cancel",
            [("ASYNC", "BOOL", [1])],
            [("FIRST", "INT32", [1]), ("REST", "INT32", [1]), ("CANCELLED", "INT32", [1])],
        ),
    ),
    "bls_sequence": (
        BLS_SEQUENCE,
        config("bls_sequence", [("VALUES", "INT32", [-1])], [("OUTS", "INT32", [-1])]),
    ),
    "custom_metrics": (
        CUSTOM_METRICS,
        config("custom_metrics", outputs=[("VALUE", "FP64", [1])]),
    ),
    "logging": (LOGGING, config("logging", outputs=[("OUT", "INT32", [1])])),
    "parameters": (PARAMETERS, config("parameters", outputs=[("OUT", "INT32", [1])])),
    "echo": (
        PARAMETERS,
        config("echo", [("IN", "INT32", [1])], [("OUT", "INT32", [1])]),
    ),
    "config_parameters": (
        CONFIG_PARAMETERS,
        config(
            "config_parameters",
            outputs=[("OUT", "INT32", [1])],
            extra='parameters {\n  key: "custom_key"\n  value: {\n'
            '    string_value: "custom_value"\n  }\n}\n',
        ),
    ),
    "dlpack": (
        DLPACK,
        config(
            "dlpack",
            [("INPUT0", "FP32", [3])],
            [("OUTPUT0", "FP32", [3]), ("OUTPUT1", "FP32", [3]), ("FLAGS", "BOOL", [4])],
            'parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: {string_value:"no"}}\n',
        ),
    ),
    "model_loader": (
        MODEL_LOADER,
        config("model_loader", ADD_SUB_IO["inputs"], [("OUTPUT0", "FP32", [4])])
        + 'output [{ name: "LOADED" data_type: TYPE_BOOL dims: [ 3 ] }]\n',
    ),
}


def write_repo(root: Path, names: list[str]) -> Path:
    for name in names:
        source, pbtxt = MODELS[name]
        (root / name / "1").mkdir(parents=True)
        (root / name / "1" / "model.py").write_text(textwrap.dedent(source), encoding="utf-8")
        if pbtxt is not None:
            (root / name / "config.pbtxt").write_text(textwrap.dedent(pbtxt), encoding="utf-8")
    return root


ServerFactory = Callable[..., CoreServer]


@pytest.fixture(params=["process", "thread"])
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    """serve(*names, mode=..., bundled=[...]): a started CoreServer over those seed models,
    with the models in stub processes (the default) and in the server's process."""
    started: list[CoreServer] = []

    def factory(
        *names: str,
        mode: ModelControlMode = ModelControlMode.NONE,
        bundled: tuple[str, ...] = (),
    ) -> CoreServer:
        repo = write_repo(tmp_path / "models", list(names))
        for name in bundled:
            shutil.copytree(BUNDLED / name, repo / name)
        core = build_core(
            ServerOptions(
                model_repository=[repo],
                model_control_mode=mode,
                python_backend_isolation=request.param,
            )
        )
        started.append(core)
        core.start()
        return core

    yield factory
    for core in started:
        core.stop()


def t(name: str, data: Any, datatype: str) -> Tensor:
    array = np.asarray(data)
    return Tensor(name, datatype, tuple(array.shape), array)


def run(core: CoreServer, model: str, *inputs: Tensor, **kw: Any) -> list[InferResponse]:
    return list(core.infer_iter(InferRequest(model_name=model, inputs=list(inputs), **kw), 30))


def one(core: CoreServer, model: str, *inputs: Tensor, **kw: Any) -> InferResponse:
    responses = run(core, model, *inputs, **kw)
    assert len(responses) == 1 and responses[0].final, responses
    return responses[0]


def outs(response: InferResponse) -> dict[str, np.ndarray]:
    assert response.error is None, response.error
    return {tensor.name: tensor.data for tensor in response.outputs}


def fp32(values: list[float]) -> np.ndarray:
    return np.array(values, np.float32)


A = fp32([1, 2, 3, 4])
B = fp32([10, 20, 30, 40])


# -- add_sub and the skeleton --------------------------------------------------------------------
def test_add_sub_example(serve: ServerFactory, capsys: pytest.CaptureFixture[str]) -> None:
    core = serve("add_sub")
    out = outs(one(core, "add_sub", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32")))
    assert out["OUTPUT0"].tolist() == (A + B).tolist()
    assert out["OUTPUT1"].tolist() == (A - B).tolist()
    assert out["OUTPUT0"].dtype == np.float32
    core.stop()
    assert "Cleaning up..." in capsys.readouterr().out


def test_skeleton_auto_complete_initialize_execute_finalize(
    serve: ServerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    core = serve("skeleton")
    assert "Initialized..." in capsys.readouterr().out
    cfg = core.model_config("skeleton")
    assert cfg.max_batch_size == 0
    assert [(i.name, list(i.dims), i.optional) for i in cfg.input] == [
        ("INPUT0", [4], True),
        ("INPUT1", [4], False),
    ]
    assert [o.name for o in cfg.output] == ["OUTPUT0", "OUTPUT1"]
    out = outs(one(core, "skeleton", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32")))
    assert out["OUTPUT0"].tolist() == (A + B).tolist()
    # INPUT0 is optional: a request without it is accepted.
    out = outs(one(core, "skeleton", t("INPUT1", B, "FP32")))
    assert out["OUTPUT1"].tolist() == (-B).tolist()
    core.stop()
    assert "Cleaning up..." in capsys.readouterr().out


def test_auto_complete_sets_the_decoupled_transaction_policy(serve: ServerFactory) -> None:
    core = serve("auto_decoupled")
    cfg = core.model_config("auto_decoupled")
    assert cfg.name == "auto_decoupled"
    assert cfg.model_transaction_policy.decoupled
    responses = run(core, "auto_decoupled", t("IN", np.array([7], np.int32), "INT32"))
    assert [r.final for r in responses] == [False, True]
    assert outs(responses[0])["OUT"].tolist() == [7]
    assert responses[1].outputs == [] and responses[1].error is None


# -- error handling ------------------------------------------------------------------------------
CODES = [
    "UNKNOWN",
    "INTERNAL",
    "NOT_FOUND",
    "INVALID_ARG",
    "UNAVAILABLE",
    "UNSUPPORTED",
    "ALREADY_EXISTS",
    "CANCELLED",
]


def test_per_request_errors_and_codes(serve: ServerFactory) -> None:
    core = serve("errors")
    # No code: INTERNAL by default.
    response = one(core, "errors", parameters={"code": ""})
    assert response.error is not None and response.outputs == []
    assert response.error.kind is ErrorKind.INTERNAL
    assert "An Error Occurred" in response.error.message
    for code in CODES:
        response = one(core, "errors", parameters={"code": code})
        assert response.error is not None, code
        assert response.error.kind is ErrorKind[code], (code, response.error)
        assert "The file is not found" in response.error.message
    assert outs(one(core, "errors"))["OUT"].tolist() == [1]


def test_model_exception_in_finalize_is_logged_and_unload_completes(
    serve: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    core = serve("finalize_error")
    assert outs(one(core, "finalize_error"))["OUT"].tolist() == [1]
    with caplog.at_level(logging.DEBUG):
        core.stop()
    failed = [r for r in caplog.records if "finalize of model 'finalize_error'" in r.getMessage()]
    assert failed and failed[0].levelno == logging.ERROR
    assert failed[0].exc_info is not None
    assert str(failed[0].exc_info[1]) == "An error occurred during finalize."
    assert not core.model_ready("finalize_error")


def test_model_exception_in_execute_fails_the_request(serve: ServerFactory) -> None:
    # The BLS example raises TritonModelException when the BLS response has an error; here the
    # add_sub call fails (shape [3] where add_sub wants [4]), so the request fails with it.
    core = serve("add_sub", "bls_sync")
    bad = fp32([1, 2, 3])
    response = one(core, "bls_sync", t("INPUT0", bad, "FP32"), t("INPUT1", bad, "FP32"))
    assert response.error is not None and response.outputs == []
    assert response.error.kind is ErrorKind.INTERNAL
    assert "add_sub" in response.error.message and "[3]" in response.error.message
    # add_sub itself rejects that shape before running (validation, synchronously).
    with pytest.raises(ServerError) as info:
        one(core, "add_sub", t("INPUT0", bad, "FP32"), t("INPUT1", bad, "FP32"))
    assert info.value.kind is ErrorKind.INVALID_ARG
    assert info.value.message in response.error.message
    # The model keeps serving.
    response = one(core, "bls_sync", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32"))
    assert outs(response)["OUTPUT0"].tolist() == (A + B).tolist()


# -- cancellation --------------------------------------------------------------------------------
def infer_async(core: CoreServer, request: InferRequest) -> queue.Queue[InferResponse]:
    responses: queue.Queue[InferResponse] = queue.Queue()
    request.response_callback = responses.put
    core.infer(request)
    return responses


def test_request_cancellation_default_mode(serve: ServerFactory) -> None:
    core = serve("cancellation")
    slow = InferRequest(model_name="cancellation", inputs=[t("DELAY", fp32([0.5]), "FP32")])
    queued = InferRequest(model_name="cancellation", inputs=[t("DELAY", fp32([0.0]), "FP32")])
    slow_q = infer_async(core, slow)
    time.sleep(0.1)  # the single instance is busy with `slow`
    queued_q = infer_async(core, queued)
    queued.cancel()
    assert outs(slow_q.get(timeout=10))["OUT"].tolist() == [0.5]
    response = queued_q.get(timeout=10)
    assert response.final and response.error is not None
    # Cancelled while queued: the scheduler drops it before execute ("Request cancelled").
    assert response.error.kind is ErrorKind.CANCELLED


def test_request_cancellation_observed_by_the_model(serve: ServerFactory) -> None:
    core = serve("cancellation_batched")
    slow = InferRequest(
        model_name="cancellation_batched", inputs=[t("DELAY", fp32([[0.5]]), "FP32")]
    )
    second = InferRequest(
        model_name="cancellation_batched", inputs=[t("DELAY", fp32([[0.0]]), "FP32")]
    )
    slow_q = infer_async(core, slow)
    second_q = infer_async(core, second)  # a batch of two: execute starts at once
    time.sleep(0.2)  # execute is sleeping on `slow`
    second.cancel()
    assert outs(slow_q.get(timeout=10))["OUT"].tolist() == [[0.5]]
    response = second_q.get(timeout=10)
    assert response.final and response.error is not None
    assert response.error.kind is ErrorKind.CANCELLED
    assert response.error.message == "Message"  # the seed model's own error


def test_decoupled_response_sender_thread_and_cancellation(serve: ServerFactory) -> None:
    core = serve("repeat")
    n = t("N", np.array([3], np.int32), "INT32")
    responses = run(core, "repeat", n)
    assert [r.final for r in responses] == [False, False, False, True]
    assert [outs(r)["OUT"].tolist() for r in responses[:3]] == [[0], [1], [2]]
    assert responses[3].outputs == [] and responses[3].error is None
    # No response at all: only the COMPLETE_FINAL flag.
    responses = run(core, "repeat", t("N", np.array([0], np.int32), "INT32"))
    assert len(responses) == 1 and responses[0].final and responses[0].outputs == []
    # Cancelled mid-stream: the thread sees is_cancelled() and still sends the final flag.
    request = InferRequest(
        model_name="repeat",
        inputs=[t("N", np.array([1000], np.int32), "INT32"), t("DELAY", fp32([0.01]), "FP32")],
    )
    got = infer_async(core, request)
    first = got.get(timeout=10)
    assert outs(first)["OUT"].tolist() == [0] and not first.final
    request.cancel()
    collected = [first]
    while not collected[-1].final:
        collected.append(got.get(timeout=10))
    assert len(collected) < 100
    assert collected[-1].final


def test_default_mode_may_answer_through_the_sender(serve: ServerFactory) -> None:
    core = serve("default_sender")
    response = one(core, "default_sender", t("IN", np.array([5], np.int32), "INT32"))
    assert outs(response)["OUT"].tolist() == [5]


# -- rescheduling --------------------------------------------------------------------------------
def test_reschedule_default_mode(serve: ServerFactory) -> None:
    core = serve("reschedule_default")
    response = one(core, "reschedule_default", correlation_id=1, sequence_start=True)
    # The first execution rescheduled the request; the second answered it.
    assert outs(response)["OUT"].tolist() == [2]


def test_reschedule_decoupled_iterative_sequence(serve: ServerFactory) -> None:
    core = serve("reschedule_decoupled")
    for count in (2, 4):
        responses = run(
            core,
            "reschedule_decoupled",
            t("IN", np.array([count], np.int32), "INT32"),
            correlation_id=count,
            sequence_start=True,
        )
        assert [outs(r)["OUT"].tolist() for r in responses] == [
            [left] for left in range(count - 1, -1, -1)
        ]
        assert [r.final for r in responses] == [False] * (count - 1) + [True]


# -- BLS -----------------------------------------------------------------------------------------
def test_bls_sync_exec(serve: ServerFactory) -> None:
    core = serve("add_sub", "bls_sync")
    out = outs(one(core, "bls_sync", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32")))
    assert out["OUTPUT0"].tolist() == (A + B).tolist()
    assert out["OUTPUT1"].tolist() == (A - B).tolist()


def test_bls_async_exec(serve: ServerFactory) -> None:
    core = serve("add_sub", "bls_async")
    out = outs(one(core, "bls_async", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32")))
    # four responses, each OUTPUT0 + OUTPUT1 = 2 * INPUT0
    assert out["OUTPUT0"].tolist() == (4 * 2 * A).tolist()


def test_bls_exec_on_a_decoupled_model(serve: ServerFactory) -> None:
    core = serve("repeat", "bls_decoupled")
    out = outs(one(core, "bls_decoupled", t("N", np.array([3], np.int32), "INT32")))
    # three data responses, then the empty final one the seed warns about
    assert out["SEEN"].tolist() == [0, 1, 2, -1]


def test_bls_async_exec_on_a_decoupled_model(serve: ServerFactory) -> None:
    core = serve("repeat", "bls_decoupled_async")
    out = outs(one(core, "bls_decoupled_async", t("N", np.array([3], np.int32), "INT32")))
    assert out["COUNTS"].tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize("use_async", [False, True])
def test_bls_response_iterator_cancel(serve: ServerFactory, use_async: bool) -> None:
    core = serve("repeat", "bls_cancel")
    start = time.monotonic()
    out = outs(one(core, "bls_cancel", t("ASYNC", np.array([use_async]), "BOOL")))
    assert out["FIRST"].tolist() == [0]
    assert out["REST"][0] < 100  # the stream of 1000 stopped early
    assert time.monotonic() - start < 5


def test_bls_with_a_stateful_model(serve: ServerFactory) -> None:
    core = serve("bls_sequence", bundled=("simple_sequence",))
    out = outs(one(core, "bls_sequence", t("VALUES", np.array([1, 2, 3], np.int32), "INT32")))
    # simple_sequence answers INPUT + 1 on the request that starts a sequence, INPUT after.
    assert out["OUTS"].tolist() == [2, 2, 3]
    # SEQUENCE_START | SEQUENCE_END on a one-request sequence (the seed's bitwise OR).
    out = outs(one(core, "bls_sequence", t("VALUES", np.array([5], np.int32), "INT32")))
    assert out["OUTS"].tolist() == [6]


def test_model_loading_api(serve: ServerFactory) -> None:
    core = serve("add_sub", "onnx_model", "model_loader", mode=ModelControlMode.EXPLICIT)
    assert not core.model_ready("onnx_model")
    core.load_model("model_loader")  # after start, as the seed requires
    assert core.model_ready("onnx_model")
    out = outs(one(core, "model_loader", t("INPUT0", A, "FP32"), t("INPUT1", B, "FP32")))
    assert out["OUTPUT0"].tolist() == (A + B).tolist()
    assert out["LOADED"].tolist() == [True, True, True]
    # execute unloaded it (unload_dependents=True)
    deadline = time.monotonic() + 10
    while core.model_ready("onnx_model") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not core.model_ready("onnx_model")


# -- metrics, logging, parameters, DLPack --------------------------------------------------------
def test_custom_metrics(serve: ServerFactory) -> None:
    core = serve("custom_metrics")
    values = [outs(one(core, "custom_metrics"))["VALUE"][0] for _ in range(3)]
    assert 0 < values[0] < values[1] < values[2]
    assert values[0] >= 2_000_000  # preprocess sleeps 2 ms
    text = render_metrics(core, collect_metrics).decode()
    # Triton writes "# HELP preprocess_latency_ns ..."; prometheus_client adds "_total" to the
    # HELP/TYPE lines of counters (a known, documented difference of mock_server.metrics).
    assert (
        "preprocess_latency_ns_total Cumulative time spent pre-processing requests" in text
        or "preprocess_latency_ns Cumulative time spent pre-processing requests" in text
    )
    lines = [line for line in text.splitlines() if line.startswith("preprocess_latency_ns{")]
    assert len(lines) == 1, lines
    assert 'model="model_name"' in lines[0] and 'version="1"' in lines[0]
    assert float(lines[0].rsplit(" ", 1)[1]) == values[2]


def test_logging(serve: ServerFactory, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mock_server.model"):
        core = serve("logging")
        assert outs(one(core, "logging"))["OUT"].tolist() == [1]
        core.stop()
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "mock_server.model"]
    assert records == [
        (logging.INFO, "init Msg!"),
        (logging.INFO, "Info Msg!"),
        (logging.WARNING, "Warning Msg!"),
        (logging.ERROR, "Error Msg!"),
        (logging.DEBUG, "Verbose Msg!"),
        (logging.INFO, "Specific Msg!"),
        (logging.INFO, "Default Msg!"),
        (logging.INFO, "finalize Msg!"),
    ]
    assert all(
        getattr(r, "model_name", None) == "logging"
        for r in caplog.records
        if r.name == "mock_server.model"
    )


def test_request_and_response_parameters(serve: ServerFactory) -> None:
    core = serve("parameters", "echo")
    params = {"key": "value", "n": 3, "flag": True}
    response = one(core, "parameters", parameters=params)
    assert response.parameters == params
    assert outs(response)["OUT"].tolist() == [3]
    # Through BLS: InferenceRequest(parameters=...) and inference_response.parameters().
    response = one(core, "parameters", parameters={**params, "bls": True})
    assert response.parameters == params


def test_custom_parameters_in_the_model_configuration(
    serve: ServerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    serve("config_parameters")
    printed = capsys.readouterr().out
    assert "{'custom_key': {'string_value': 'custom_value'}}" in printed


def test_dlpack(serve: ServerFactory) -> None:
    core = serve("dlpack")
    x = fp32([1, 2, 3])
    out = outs(one(core, "dlpack", t("INPUT0", x, "FP32")))
    assert out["OUTPUT0"].tolist() == (2 * x).tolist()
    assert out["OUTPUT1"].tolist() == (x + 1).tolist()
    assert out["FLAGS"].tolist() == [True, True, True, True]


def test_requested_outputs_subset_through_bls(serve: ServerFactory) -> None:
    core = serve("add_sub", "bls_sync")
    response = one(
        core,
        "bls_sync",
        t("INPUT0", A, "FP32"),
        t("INPUT1", B, "FP32"),
        outputs=[RequestedOutput("OUTPUT1")],
    )
    assert list(outs(response)) == ["OUTPUT1"]
    assert json.dumps(outs(response)["OUTPUT1"].tolist()) == json.dumps((A - B).tolist())
