"""``InferInput``, ``InferRequestedOutput`` and ``InferResult`` of ``tritonclient.grpc``.

Thin user-facing wrappers: the wire encoding and decoding are those of
:mod:`tritonclient._codec.grpc_client`, shared with the asyncio client.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy.typing as npt
from google.protobuf.json_format import MessageToJson

from tritonclient._codec import grpc_client, raw, types
from tritonclient._codec.arguments import check_input_array
from tritonclient._codec.checks import DecodedOutputs
from tritonclient._proto import service_pb2
from tritonclient.utils import raise_error

__all__ = ["InferInput", "InferRequestedOutput", "InferResult", "message_to_json"]

_SHM_KEYS = ("shared_memory_region", "shared_memory_byte_size", "shared_memory_offset")


def message_to_json(message: Any) -> Any:
    """Convert a protobuf message to a JSON dict as NVIDIA's client does.

    Parameters
    ----------
    message : protobuf message
        The message.

    Returns
    -------
    dict
        ``json.loads(MessageToJson(message, preserving_proto_field_name=True))``: int64
        values are strings.
    """
    return json.loads(MessageToJson(message, preserving_proto_field_name=True))


class InferInput:
    """An object of InferInput class is used to describe an input tensor of an inference
    request.

    Parameters
    ----------
    name : str
        The name of input whose data will be described by this object.
    shape : list
        The shape of the associated input.
    datatype : str
        The datatype of the associated input.
    """

    def __init__(self, name: str, shape: Sequence[int], datatype: str) -> None:
        self._name = name
        self._shape = [int(d) for d in shape]
        self._datatype = datatype
        self._data: types.Buffer | None = None
        self._shm: types.SharedMemoryRef | None = None
        # Wire form of the tensor description (everything but the data), built on first use
        # and dropped whenever the shape or the placement changes.
        self._wire: bytes | None = None
        # What the encoder is given (:meth:`_codec_tensor`), made on first use and dropped
        # whenever the shape, the data or the placement changes.
        self._codec: grpc_client.InputTensor | None = None

    def name(self) -> str:
        """Get the name of input associated with this object.

        Returns
        -------
        str
            The name of input.
        """
        return self._name

    def datatype(self) -> str:
        """Get the datatype of input associated with this object.

        Returns
        -------
        str
            The datatype of input.
        """
        return self._datatype

    def shape(self) -> list[int]:
        """Get the shape of input associated with this object.

        Returns
        -------
        list
            The shape of input.
        """
        return list(self._shape)

    def set_shape(self, shape: Sequence[int]) -> InferInput:
        """Set the shape of input.

        Parameters
        ----------
        shape : list
            The shape of the associated input.

        Returns
        -------
        InferInput
            The updated input.
        """
        self._shape = [int(d) for d in shape]
        self._wire = None
        self._codec = None
        return self

    def set_data_from_numpy(self, input_tensor: npt.NDArray[Any]) -> InferInput:
        """Set the tensor data from the specified numpy array for input associated with this
        object.

        The array is not copied when it is read-only and laid out as the wire expects;
        otherwise its data are copied here, so later changes to the array do not affect the
        input.

        Parameters
        ----------
        input_tensor : numpy array
            The tensor data in numpy array format. For BF16 inputs use
            ``ml_dtypes.bfloat16`` (as NVIDIA's 2.73, a ``float32`` array is refused).

        Returns
        -------
        InferInput
            The updated input.

        Raises
        ------
        InferenceServerException
            If the value is not a numpy array, or its datatype or shape does not match the
            input's.
        """
        check_input_array(self._name, self._datatype, self._shape, input_tensor)
        buffer = raw.tensor_to_buffer(self._datatype, input_tensor)
        if isinstance(buffer, memoryview) and input_tensor.flags.writeable:
            # A view of the caller's array: copy so that the input keeps these values.
            buffer = buffer.tobytes()
        self._data = buffer
        self._codec = None
        if self._shm is not None:
            self._shm = None
            self._wire = None
        return self

    def set_shared_memory(self, region_name: str, byte_size: int, offset: int = 0) -> InferInput:
        """Set the tensor data from the specified shared memory region.

        Parameters
        ----------
        region_name : str
            The name of the shared memory region holding tensor data.
        byte_size : int
            The size of the shared memory region holding tensor data.
        offset : int
            The offset, in bytes, into the region where the data for the tensor starts.
            The default value is 0.

        Returns
        -------
        InferInput
            The updated input.

        Raises
        ------
        InferenceServerValueError
            If ``byte_size`` or ``offset`` does not fit a signed 64-bit integer (also a
            ``ValueError``, ``Value out of range: N``, as NVIDIA's client raises).
        """
        self._data = None
        self._shm = types.SharedMemoryRef(region_name, int(byte_size), int(offset))
        self._wire = None
        self._codec = None
        self._wire_field()  # encoded now: a size out of range is refused here, as NVIDIA's
        return self

    def _get_tensor(self) -> service_pb2.ModelInferRequest.InferInputTensor:
        """Retrieve the underlying InferInputTensor message.

        Returns
        -------
        protobuf message
            The underlying InferInputTensor protobuf message.
        """
        request = service_pb2.ModelInferRequest.FromString(self._wire_field())
        return request.inputs[0]

    def _get_content(self) -> bytes | None:
        """Retrieve the contents for this tensor in raw bytes.

        Returns
        -------
        bytes
            The associated contents for this tensor in raw bytes, or None if no data were
            set or the input is in shared memory.
        """
        return None if self._data is None else bytes(self._data)

    def _wire_field(self) -> bytes:
        """The ``inputs`` entry of this tensor in wire form (cached)."""
        wire = self._wire
        if wire is None:
            described = grpc_client.InputTensor(
                self._name, self._datatype, self._shape, shared_memory=self._shm
            )
            wire = self._wire = grpc_client.input_tensor_field(described)
        return wire

    def _codec_tensor(self) -> grpc_client.InputTensor:
        """This input for the codec's encoder, with its cached wire entry (kept until the
        input changes: the encoder only reads it)."""
        codec = self._codec
        if codec is None:
            codec = self._codec = grpc_client.InputTensor(
                self._name,
                self._datatype,
                self._shape,
                self._data,
                self._shm,
                wire=self._wire_field(),
            )
        return codec


class InferRequestedOutput:
    """An object of InferRequestedOutput class is used to describe a requested output
    tensor for an inference request.

    Parameters
    ----------
    name : str
        The name of output tensor to associate with this object.
    class_count : int
        The number of classifications to be requested. The default value is 0 which means
        the classification results are not requested.
    """

    def __init__(self, name: str, class_count: int = 0) -> None:
        self._name = name
        self._class_count = int(class_count)
        self._shm: types.SharedMemoryRef | None = None
        self._wire: bytes | None = None
        self._codec: grpc_client.RequestedOutput | None = None
        if self._class_count:
            self._wire_field()  # encoded now: a count out of range is refused here, as NVIDIA's

    def name(self) -> str:
        """Get the name of output associated with this object.

        Returns
        -------
        str
            The name of output.
        """
        return self._name

    def set_shared_memory(self, region_name: str, byte_size: int, offset: int = 0) -> None:
        """Marks the output to return the inference result in specified shared memory region.

        Parameters
        ----------
        region_name : str
            The name of the shared memory region to hold tensor data.
        byte_size : int
            The size of the shared memory region to hold tensor data.
        offset : int
            The offset, in bytes, into the region where the data for the tensor starts.
            The default value is 0.

        Raises
        ------
        InferenceServerException
            If failed to set shared memory for the tensor; an
            :class:`~tritonclient.utils.InferenceServerValueError` (also a ``ValueError``,
            ``Value out of range: N``, as NVIDIA's) if ``byte_size`` or ``offset`` does not
            fit a signed 64-bit integer.
        """
        if self._class_count:
            raise_error("shared memory can't be set on classification output")
        self._shm = types.SharedMemoryRef(region_name, int(byte_size), int(offset))
        self._wire = None
        self._codec = None
        self._wire_field()  # encoded now: a size out of range is refused here, as NVIDIA's

    def unset_shared_memory(self) -> None:
        """Clears the shared memory option set by the last call to
        :py:meth:`InferRequestedOutput.set_shared_memory()`. After call to this function
        requested output will no longer be returned in a shared memory region.
        """
        self._shm = None
        self._wire = None
        self._codec = None

    def _get_tensor(self) -> service_pb2.ModelInferRequest.InferRequestedOutputTensor:
        """Retrieve the underlying InferRequestedOutputTensor message.

        Returns
        -------
        protobuf message
            The underlying InferRequestedOutputTensor protobuf message.
        """
        request = service_pb2.ModelInferRequest.FromString(self._wire_field())
        return request.outputs[0]

    def _wire_field(self) -> bytes:
        """The ``outputs`` entry of this output in wire form (cached)."""
        wire = self._wire
        if wire is None:
            described = grpc_client.RequestedOutput(
                self._name, class_count=self._class_count, shared_memory=self._shm
            )
            wire = self._wire = grpc_client.requested_output_field(described)
        return wire

    def _codec_output(self) -> grpc_client.RequestedOutput:
        """This output for the codec's encoder, with its cached wire entry (kept until the
        output changes: the encoder only reads it)."""
        codec = self._codec
        if codec is None:
            codec = self._codec = grpc_client.RequestedOutput(self._name, wire=self._wire_field())
        return codec


class InferResult:
    """An object of InferResult class holds the response of an inference request and
    provides methods to retrieve inference results.

    Parameters
    ----------
    result : protobuf message
        The ModelInferResponse returned by the server.
    raw_output_contents : list of bytes-like, optional
        The response's raw output contents when they were split off the message while
        parsing (no copy); by default those of ``result``.
    outputs : DecodedOutputs, optional
        The outputs, already checked and decoded (:func:`grpc_client.check_infer_response`), as
        the clients give them; by default each :meth:`as_numpy` decodes its output.
    """

    def __init__(
        self,
        result: service_pb2.ModelInferResponse,
        raw_output_contents: Sequence[types.Buffer] | None = None,
        outputs: DecodedOutputs | None = None,
    ) -> None:
        self._result = result
        self._raw = list(raw_output_contents) if raw_output_contents else None
        self._outputs = outputs

    def as_numpy(self, name: str) -> npt.NDArray[Any] | None:
        """Get the tensor data for output associated with this object in numpy format.

        Parameters
        ----------
        name : str
            The name of the output tensor whose result is to be retrieved.

        Returns
        -------
        numpy array
            The numpy array containing the response data for the tensor or None if the data
            for specified tensor name is not found (or the output was written to shared
            memory). BYTES outputs are object arrays of ``bytes``; BF16 outputs have dtype
            ``ml_dtypes.bfloat16``. The array is read-only.

        Raises
        ------
        InferenceServerException
            If the output's data do not match its datatype and shape (a result the client
            received was checked before it was handed out: it never raises).
        """
        if self._outputs is None:
            # A result made outside the clients (from a message alone): check and decode it
            # the way the clients do, once.
            self._outputs = grpc_client.check_infer_response(self._result, self._raw)
        return self._outputs.get(name)

    def get_output(self, name: str, as_json: bool = False) -> Any:
        """Retrieves the InferOutputTensor corresponding to the named output.

        Parameters
        ----------
        name : str
            The name of the tensor for which Output is to be retrieved.
        as_json : bool
            If True then returns response as a json dict, otherwise as a protobuf message.
            Default value is False. The returned json is generated from the protobuf
            message using MessageToJson and as a result int64 values are represented as
            string. It is the caller's responsibility to convert these strings back to
            int64 values as necessary.

        Returns
        -------
        protobuf message or dict
            If a InferOutputTensor with specified name is present in ModelInferResponse
            then returns it as a protobuf message or dict, otherwise returns None.
        """
        for output in self._result.outputs:
            if output.name == name:
                return message_to_json(output) if as_json else output
        return None

    def get_response(self, as_json: bool = False) -> Any:
        """Retrieves the complete ModelInferResponse as a json dict object or protobuf
        message.

        Parameters
        ----------
        as_json : bool
            If True then returns response as a json dict, otherwise as a protobuf message.
            Default value is False. The returned json is generated from the protobuf
            message using MessageToJson and as a result int64 values are represented as
            string. It is the caller's responsibility to convert these strings back to
            int64 values as necessary.

        Returns
        -------
        protobuf message or dict
            The underlying ModelInferResponse as a protobuf message or dict.
        """
        if self._raw is not None:
            # The raw contents were kept out of the message while parsing: put them back.
            self._result.raw_output_contents.extend(bytes(b) for b in self._raw)
            self._raw = None
        return message_to_json(self._result) if as_json else self._result
