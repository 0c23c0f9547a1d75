"""``InferResult``: the decoded response of an HTTP inference."""

from __future__ import annotations

from typing import Any, Protocol

import numpy.typing as npt

from tritonclient._codec.http_body import (
    HEADER_CONTENT_ENCODING,
    HEADER_INFERENCE_HEADER_CONTENT_LENGTH,
)
from tritonclient._codec.http_client import DecodedResponse, decode_infer_response
from tritonclient._codec.types import Buffer

__all__ = ["InferResult"]


class _ResponseLike(Protocol):
    def get(self, key: str) -> Any: ...

    def read(self) -> Buffer: ...


class InferResult:
    """The result of an inference request.

    Parameters
    ----------
    response : DecodedResponse or response object
        The decoded response, or (as NVIDIA's client passes it) an HTTP response object
        with ``get(header)`` and ``read()``.
    verbose : bool
        If True, print the response JSON.
    """

    def __init__(self, response: DecodedResponse | _ResponseLike, verbose: bool = False) -> None:
        if not isinstance(response, DecodedResponse):
            response = decode_infer_response(
                response.read(),
                response.get(HEADER_INFERENCE_HEADER_CONTENT_LENGTH),
                response.get(HEADER_CONTENT_ENCODING),
            )
        self._decoded = response
        if verbose:
            print(response.response)

    @classmethod
    def from_response_body(
        cls,
        response_body: Buffer,
        verbose: bool = False,
        header_length: int | str | None = None,
        content_encoding: str | None = None,
    ) -> InferResult:
        """Build an ``InferResult`` from the body of a response.

        Parameters
        ----------
        response_body : bytes
            The inference response body.
        verbose : bool
            If True, print the response JSON.
        header_length : int
            The length of the JSON part (``Inference-Header-Content-Length``); None when the
            whole body is JSON.
        content_encoding : str
            The ``Content-Encoding`` of the body (``gzip``, ``deflate`` or None).

        Returns
        -------
        InferResult
            The result.

        Raises
        ------
        InferenceServerException
            If the body is not a valid inference response.
        """
        return cls(decode_infer_response(response_body, header_length, content_encoding), verbose)

    def as_numpy(self, name: str) -> npt.NDArray[Any] | None:
        """Get the tensor data for the output as a numpy array.

        Parameters
        ----------
        name : str
            The name of the output tensor.

        Returns
        -------
        numpy.ndarray
            The tensor data (read-only when decoded from the binary body); None if the output
            is not in the response (or was written to shared memory).
        """
        return self._decoded.as_numpy(name)

    def get_output(self, name: str) -> dict[str, Any] | None:
        """Retrieve the JSON object of an output.

        Parameters
        ----------
        name : str
            The name of the output.

        Returns
        -------
        dict
            The ``$response_output`` object, or None if there is no such output.
        """
        return self._decoded.get_output(name)

    def get_response(self) -> dict[str, Any]:
        """Retrieve the complete response JSON.

        Returns
        -------
        dict
            The underlying response dictionary.
        """
        return self._decoded.response
