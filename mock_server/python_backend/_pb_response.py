"""``pb_utils.InferenceResponse`` and a request's response sender (``InferenceResponseSender``).

Part of ``triton_python_backend_utils`` (:mod:`.triton_python_backend_utils`, the module
models import), which re-exports every public name.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import ServerError
from ..core.types import InferRequest as CoreRequest
from ..core.types import InferResponse as CoreResponse
from . import _pybind
from ._errors import TritonModelException
from ._pb_tensor import Tensor, _tensor_from_core, _tensor_to_core
from ._pb_types import TRITONSERVER_RESPONSE_COMPLETE_FINAL, TritonError, _check_parameters


class InferenceResponse:
    """The response to an inference request.

    Parameters
    ----------
    output_tensors : list of Tensor, optional
        The outputs (ignored when ``error`` is given).
    error : TritonError, optional
        The error of a failed request.
    parameters : dict, optional
        Response parameters: str keys, bool, int or str values (a later Python backend's
        argument; Triton 2.51 has none).

    Raises
    ------
    TypeError
        If ``output_tensors`` is not a list of Tensor or ``error`` not a TritonError.
    TritonModelException
        If a parameter is not of a supported type.
    """

    def __init__(
        self,
        output_tensors: Sequence[Tensor] = (),
        error: TritonError | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        # None is no list to pybind11 (a TypeError, as Triton's QA argument_validation checks).
        outputs = _pybind.sequence_arg(output_tensors)
        if (
            outputs is None
            or any(tensor is not None and not isinstance(tensor, Tensor) for tensor in outputs)
            or (error is not None and not isinstance(error, TritonError))
        ):
            raise _pybind.incompatible(
                "__init__",
                "InferenceResponse(output_tensors: List[Tensor] = [], error: TritonError = None)",
                (),
                {"output_tensors": output_tensors, "error": error},
                constructor=True,
            )
        if any(tensor is None for tensor in outputs):  # pybind11's null pointer, refused
            raise TritonModelException("Output tensor for inference response should not be empty.")
        self._outputs: list[Tensor] = outputs
        self._error = error
        self._parameters = _check_parameters(parameters)

    def output_tensors(self) -> list[Tensor]:
        """Return the output tensors."""
        return self._outputs

    def has_error(self) -> bool:
        """Whether the response carries an error."""
        return self._error is not None

    def error(self) -> TritonError | None:
        """Return the response's error, or None."""
        return self._error

    def parameters(self) -> str:
        """Return the response parameters as a JSON string."""
        return json.dumps(self._parameters)

    def __repr__(self) -> str:
        if self._error is not None:
            return f"InferenceResponse(error={self._error!r})"
        return f"InferenceResponse({self._outputs!r})"

    def _to_core(
        self, model_name: str, model_version: str, request_id: str, final: bool
    ) -> CoreResponse:
        if self._error is not None:
            return CoreResponse(
                model_name,
                model_version,
                request_id,
                error=self._error._to_server_error(),
                parameters=dict(self._parameters),
                final=final,
                model_error=True,
            )
        return CoreResponse(
            model_name,
            model_version,
            request_id,
            outputs=[_tensor_to_core(t) for t in self._outputs],
            parameters=dict(self._parameters),
            final=final,
        )

    @classmethod
    def _from_core(cls, response: CoreResponse) -> InferenceResponse:
        error = (
            TritonError._from_server_error(response.error) if response.error is not None else None
        )
        made = cls([], error)
        if error is None:
            made._outputs = [_tensor_from_core(t) for t in response.outputs]
        made._parameters = dict(response.parameters)
        return made


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Tensor | None:
    """Return the output tensor called ``name`` of a response, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


class InferenceResponseSender:
    """Sends the responses of one request (``request.get_response_sender()``).

    In decoupled mode any number of responses may be sent, from any thread, also after
    ``execute`` returned; the last one carries ``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` (alone,
    with ``response=None``, for an empty final response).  In default mode exactly one response
    may be sent, with the final flag or followed by a flags-only final call.
    """

    def __init__(
        self, request: CoreRequest, model_name: str, model_version: str, decoupled: bool
    ) -> None:
        self._request = request
        self._model_name = model_name
        self._model_version = model_version
        self._decoupled = decoupled
        self._lock = threading.RLock()
        self._closed = False
        self._sent = 0
        self._held: CoreResponse | None = None
        #: The model asked for this sender (``request.get_response_sender()``): a default-mode
        #: model that returns None for the request may still answer through it later.
        self._taken = False

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        """Send ``response``, and with ``flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL`` close.

        Parameters
        ----------
        response : InferenceResponse, optional
            The response; may be omitted only together with the final flag.
        flags : int, optional
            0, or ``TRITONSERVER_RESPONSE_COMPLETE_FINAL`` for the last response.

        Raises
        ------
        TritonModelException
            For an unsupported flag, a missing response without the final flag, a send after
            the final one, or a second response of a default-mode model.
        """
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if response is None and flags == 0:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError(
                f"response must be a pb_utils.InferenceResponse, got {type(response).__name__}"
            )
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        with self._lock:
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Non-decoupled model cannot send more than one response."
                    )
                if response is None and self._sent == 0:
                    raise TritonModelException(
                        "Non-decoupled model cannot send complete final before sending a response."
                    )
            core = None
            if response is not None:
                core = response._to_core(
                    self._model_name, self._model_version, self._request.id, final
                )
            if final:
                self._closed = True
            if response is not None:
                self._sent += 1
            if self._decoupled:
                self._deliver(core or self._empty_final())
            elif core is not None and not final:
                self._held = core  # one response, completed by the flags-only call
            else:
                held = core or self._held
                assert held is not None
                held.final = True
                self._held = None
                self._deliver(held)

    def is_cancelled(self) -> bool:
        """Whether the client cancelled the request."""
        return self._request.cancelled.is_set()

    # -- backend side ----------------------------------------------------------------------------
    def _empty_final(self) -> CoreResponse:
        return CoreResponse(self._model_name, self._model_version, self._request.id, final=True)

    def _deliver(self, response: CoreResponse) -> None:
        callback = self._request.response_callback
        if callback is not None:
            callback(response)

    @property
    def _used(self) -> bool:
        return self._sent > 0 or self._closed

    def _finish(self, response: InferenceResponse) -> None:
        """Deliver the response ``execute`` returned for the request (default mode)."""
        try:
            core = response._to_core(self._model_name, self._model_version, self._request.id, True)
        except TritonModelException as exc:
            self._fail(ServerError.internal(f"model '{self._model_name}': {exc}"))
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._sent += 1
            self._deliver(core)

    def _fail(self, error: ServerError) -> bool:
        """Complete the request with ``error`` unless it is complete already.

        A default-mode response sent without the final flag has left the model already (in
        Triton it reaches the frontend at once): it goes out first, the error after it, and
        each frontend makes of the two what Triton's does (a gRPC stream keeps the first,
        unary gRPC answers "expected a single response").
        """
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            held, self._held = self._held, None
            if held is not None:
                self._deliver(held)
            self._deliver(
                CoreResponse(self._model_name, self._model_version, self._request.id, error=error)
            )
            return True
