"""Class for interacting with the models of an in-process server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.config import is_decoupled
from ..core.config_json import config_to_json
from ._enums import MemoryType, ModelBatchFlag, ModelTxnPropertyFlag
from ._errors import InvalidArgumentError, UnsupportedError, translate_errors
from ._request import InferenceRequest
from ._response import AsyncResponseIterator, ResponseIterator
from ._tensor import parse_device_or_memory_type

if TYPE_CHECKING:
    from ..core.server import CoreServer
    from ._server import Server

__all__ = ["Model"]

_Iterator = TypeVar("_Iterator", ResponseIterator, AsyncResponseIterator)


class Model:
    """Class for interacting with Triton Inference Server models.

    Model objects are returned from server factory methods and allow users to query metadata
    and execute inference requests.

    Parameters
    ----------
    server : Server
        Server instance (must be started).
    name : str
        model name
    version : int
        model version (-1: the version the model's version policy picks, the highest ready)
    state : Optional[str]
        state of model (if known)
    reason : Optional[str]
        reason for model state (if known)

    Raises
    ------
    InvalidArgumentError
        If the server is not started.

    Examples
    --------
    >>> server.model("simple")
    {'name': 'simple', 'version': -1, 'state': None}
    """

    def __init__(
        self,
        server: Server,
        name: str,
        version: int = -1,
        state: str | None = None,
        reason: str | None = None,
    ) -> None:
        server._require_core()
        self._server = server
        self.name = name
        self.version = version
        self.state = state
        self.reason = reason

    def _core(self) -> CoreServer:
        return self._server._require_core()

    def create_request(self, **kwargs: Any) -> InferenceRequest:
        """Inference request factory method.

        Return an inference request object that can be used with model.infer() or
        model.async_infer()

        Parameters
        ----------
        kwargs : Unpack[InferenceRequest]
            Keyword arguments passed to `InferenceRequest` constructor (``model`` is ignored).
            See `InferenceRequest` documentation for details.

        Returns
        -------
        InferenceRequest
            Inference request associated with this model

        Examples
        --------
        >>> request = server.model("simple").create_request(request_id="1")
        """
        kwargs.pop("model", None)
        return InferenceRequest(model=self, **kwargs)

    def _submit(
        self,
        inference_request: InferenceRequest | None,
        kwargs: dict[str, Any],
        raise_on_error: bool,
        iterator_type: Callable[..., _Iterator],
    ) -> _Iterator:
        """Check and submit a request for :meth:`infer` or :meth:`async_infer`: its responses
        go to a new ``iterator_type``."""
        if inference_request is None:
            kwargs.pop("model", None)
            inference_request = InferenceRequest(model=self, **kwargs)
        elif not isinstance(inference_request, InferenceRequest):
            raise InvalidArgumentError(
                f"inference_request must be an InferenceRequest, got "
                f"{type(inference_request).__name__}"
            )
        if inference_request.output_memory_type is not None:
            memory_type, _ = parse_device_or_memory_type(inference_request.output_memory_type)
            if memory_type is MemoryType.GPU and inference_request.output_memory_allocator is None:
                raise UnsupportedError(
                    "output_memory_type GPU needs an output_memory_allocator: mock_server keeps "
                    "outputs in host (CPU) memory"
                )
        core_request = inference_request._to_core()
        iterator = iterator_type(
            inference_request.model,
            core_request,
            inference_request.response_queue,
            raise_on_error,
            _output_memory_type=inference_request.output_memory_type,
            _output_memory_allocator=inference_request.output_memory_allocator,
        )
        with translate_errors():
            inference_request.model._core().infer(core_request)
        return iterator

    def infer(
        self,
        inference_request: InferenceRequest | None = None,
        raise_on_error: bool = True,
        **kwargs: Any,
    ) -> ResponseIterator:
        """Send an inference request to the model for execution.

        Sends an inference request to the model. Responses are returned asynchronously using an
        iterator.  The request goes to ``inference_request.model``.

        Parameters
        ----------
        inference_request : Optional[InferenceRequest]
            inference request object. If not provided inference request will be created using
            remaining keyword arguments (they are ignored when a request is given).
        raise_on_error : bool, default True
            if True iterator will raise an error on any response errors returned from the
            model. If False errors will be returned as part of the response object.
        kwargs : Unpack[InferenceRequest]
            If a request object is not provided, a new object will be created with remaining
            keyword arguments. See `InferenceRequest` documentation for valid arguments.

        Returns
        -------
        ResponseIterator
            Response iterator

        Raises
        ------
        InvalidArgumentError
            if any invalid arguments are provided, or the request fails validation
        NotFoundError
            if the model (version) does not exist
        UnavailableError
            if the model has no ready version

        Examples
        --------
        >>> responses = list(server.model("identity_bytes").infer(inputs={"INPUT0": [["hi"]]}))
        >>> responses[0].outputs["OUTPUT0"].to_bytes_array()
        array([[b'hi']], dtype=object)
        """
        return self._submit(inference_request, kwargs, raise_on_error, ResponseIterator)

    def async_infer(
        self,
        inference_request: InferenceRequest | None = None,
        raise_on_error: bool = True,
        **kwargs: Any,
    ) -> AsyncResponseIterator:
        """Send an inference request to the model for execution.

        Sends an inference request to the model. Responses are returned using an asyncio
        compatible iterator.  Submitting does not block: the request is validated and queued.

        Parameters
        ----------
        inference_request : Optional[InferenceRequest]
            inference request object. If not provided inference request will be created using
            remaining keyword arguments.
        raise_on_error : bool, default True
            if True iterator will raise an error on any response errors returned from the
            model. If False errors will be returned as part of the response object.
        kwargs : Unpack[InferenceRequest]
            If a request object is not provided, a new object will be created with remaining
            keyword arguments. See `InferenceRequest` documentation for valid arguments.

        Returns
        -------
        AsyncResponseIterator
            asyncio compatible iterator

        Raises
        ------
        InvalidArgumentError
            if any invalid arguments are provided, or the request fails validation
        NotFoundError
            if the model (version) does not exist

        Examples
        --------
        >>> async for response in server.model("simple").async_infer(inputs=inputs):
        ...     print(response.outputs["OUTPUT0"])
        """
        return self._submit(inference_request, kwargs, raise_on_error, AsyncResponseIterator)

    def metadata(self) -> dict[str, Any]:
        """Returns metadata about a model and its inputs and outputs.

        Returns
        -------
        dict[str, Any]
            Model metadata as a dictionary of key value pairs

        Raises
        ------
        NotFoundError
            If the model (version) is unknown.
        UnavailableError
            If the model has no ready version.

        Examples
        --------
        >>> server.model("identity_fp32").metadata()
        {'name': 'identity_fp32', 'versions': ['1'], 'platform': 'python', 'inputs': [{'name':
        'INPUT0', 'datatype': 'FP32', 'shape': [-1, -1]}], 'outputs': [{'name': 'OUTPUT0',
        'datatype': 'FP32', 'shape': [-1, -1]}]}
        """
        with translate_errors():
            return self._core().model_metadata(self.name, self.version)

    def ready(self) -> bool:
        """Returns whether a model is ready to accept requests.

        Returns
        -------
        bool
            True if model is ready. False otherwise.

        Examples
        --------
        >>> server.model("simple").ready()
        True
        """
        return self._core().model_ready(self.name, self.version)

    def batch_properties(self) -> ModelBatchFlag:
        """Returns the batch properties of the model.

        Returns
        -------
        ModelBatchFlag
            ModelBatchFlag.UNKNOWN or ModelBatchFlag.FIRST_DIM (``max_batch_size > 0``)

        Examples
        --------
        >>> server.model("simple").batch_properties()
        <ModelBatchFlag.FIRST_DIM: 2>
        """
        with translate_errors():
            config = self._core().model_config(self.name, self.version)
        return ModelBatchFlag.FIRST_DIM if config.max_batch_size > 0 else ModelBatchFlag.UNKNOWN

    def transaction_properties(self) -> ModelTxnPropertyFlag:
        """Returns the transaction properties of the model.

        Returns
        -------
        ModelTxnPropertyFlag
            ModelTxnPropertyFlag.ONE_TO_ONE or ModelTxnPropertyFlag.DECOUPLED

        Examples
        --------
        >>> server.model("repeat_int32").transaction_properties()
        <ModelTxnPropertyFlag.DECOUPLED: 2>
        """
        with translate_errors():
            config = self._core().model_config(self.name, self.version)
        if is_decoupled(config):
            return ModelTxnPropertyFlag.DECOUPLED
        return ModelTxnPropertyFlag.ONE_TO_ONE

    def statistics(self) -> dict[str, Any]:
        """Returns model statistics.

        Returns
        -------
        dict[str, Any]
            ``{"model_stats": [...]}``, one entry per loaded version (or the one version asked
            for), in the statistics extension's JSON form.

        Raises
        ------
        InvalidArgumentError
            If the model (version) is not loaded.

        Examples
        --------
        >>> server.model("simple").statistics()["model_stats"][0]["inference_count"]
        2
        """
        with translate_errors():
            stats = self._core().statistics(self.name, self.version)
        return {"model_stats": [asdict(each) for each in stats]}

    def config(self, config_version: int = 1) -> dict[str, Any]:
        """Returns model configuration.

        Parameters
        ----------
        config_version : int
            configuration version in case multiple are supported (only 1 is)

        Returns
        -------
        dict[str, Any]
            Dictionary of key value pairs for model configuration (the completed configuration
            in the model configuration extension's JSON form)

        Raises
        ------
        InvalidArgumentError
            If ``config_version`` is not 1.
        NotFoundError
            If the model (version) is unknown.

        Examples
        --------
        >>> server.model("simple").config()["max_batch_size"]
        8
        """
        if config_version != 1:
            raise InvalidArgumentError(
                f"model configuration version {config_version} not supported, supported "
                "versions are: 1"
            )
        with translate_errors():
            return config_to_json(self._core().model_config(self.name, self.version))

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return str({"name": self.name, "version": self.version, "state": self.state})
