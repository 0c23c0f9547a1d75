"""``InferInput``: one input tensor of an HTTP inference request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tritonclient._codec.http_client import RequestInput, encode_input, encode_input_shm
from tritonclient._codec.types import Buffer

__all__ = ["InferInput"]


class InferInput:
    """An input tensor of an inference request.

    Parameters
    ----------
    name : str
        The name of the input whose data will be described by this object.
    shape : list
        The shape of the associated input.
    datatype : str
        The datatype of the associated input (``"FP32"``, ``"BYTES"``, ...).
    """

    def __init__(self, name: str, shape: Sequence[int], datatype: str) -> None:
        self._name = name
        self._shape: list[int] = list(shape)
        self._datatype = datatype
        self._input: RequestInput | None = None
        self._cached: tuple[RequestInput | None, list[int], RequestInput] | None = None

    def name(self) -> str:
        """Get the name of the input associated with this object.

        Returns
        -------
        str
            The name of the input.
        """
        return self._name

    def datatype(self) -> str:
        """Get the datatype of the input associated with this object.

        Returns
        -------
        str
            The datatype of the input.
        """
        return self._datatype

    def shape(self) -> list[int]:
        """Get the shape of the input associated with this object.

        Returns
        -------
        list
            The shape of the input.
        """
        return self._shape

    def set_shape(self, shape: Sequence[int]) -> InferInput:
        """Set the shape of the input.

        Parameters
        ----------
        shape : list
            The shape of the associated input.

        Returns
        -------
        InferInput
            This object.
        """
        self._shape = list(shape)
        return self

    def set_data_from_numpy(
        self, input_tensor: npt.NDArray[Any], binary_data: bool = True
    ) -> InferInput:
        """Set the tensor data from the specified numpy array.

        Parameters
        ----------
        input_tensor : numpy.ndarray
            The tensor data in numpy array format; its dtype and shape must match the input's
            (BF16 takes ``ml_dtypes.bfloat16``, or float32 which is truncated).
        binary_data : bool
            Send the data with the binary tensor extension, after the JSON header (default),
            rather than as explicit JSON ``data``.  BF16 cannot be sent as JSON.

        Returns
        -------
        InferInput
            This object.

        Raises
        ------
        InferenceServerException
            If the dtype or shape does not match, or the data cannot be sent as JSON.
        """
        encoded = encode_input(
            self._name, self._datatype, self._shape, input_tensor, binary_data=binary_data
        )
        raw = encoded.raw
        if isinstance(raw, memoryview) and not raw.readonly:
            # A view of the caller's writable array: take the values now, as NVIDIA's
            # tobytes() does, so a later change to the array does not change what is sent.
            snapshot = np.frombuffer(raw.cast("B"), dtype=np.uint8).copy()
            encoded.raw = snapshot.data.toreadonly()
        self._input = encoded
        return self

    def set_shared_memory(self, region_name: str, byte_size: int, offset: int = 0) -> InferInput:
        """Set the tensor data from the specified shared memory region.

        Parameters
        ----------
        region_name : str
            The name of the shared memory region holding the tensor data.
        byte_size : int
            The size of the shared memory region holding the tensor data.
        offset : int
            The offset, in bytes, into the region where the data for the tensor starts.
            The default value is 0.

        Returns
        -------
        InferInput
            This object.
        """
        self._input = encode_input_shm(
            self._name, self._datatype, self._shape, region_name, byte_size, offset
        )
        return self

    def _request_input(self) -> RequestInput:
        """The codec's description of this input, with the current name/shape/datatype.

        Kept while the data and the shape stay the same, so that an input sent again (the
        usual loop) reuses the JSON text made for it the first time.
        """
        cached = self._cached
        if cached is not None and cached[0] is self._input and cached[1] == self._shape:
            return cached[2]
        if self._input is None:
            made = RequestInput(self._name, self._datatype, list(self._shape))
        else:
            made = self._input.replace(self._name, self._datatype, list(self._shape))
        self._cached = (self._input, list(self._shape), made)
        return made

    def _get_binary_data(self) -> Buffer | None:
        """The binary data of this input, or None (NVIDIA's private helper)."""
        return None if self._input is None else self._input.raw

    def _get_tensor(self) -> dict[str, Any]:
        """The JSON ``$request_input`` object of this input (NVIDIA's private helper)."""
        return self._request_input().to_json()
