"""``InferRequestedOutput``: one output requested from an HTTP inference."""

from __future__ import annotations

from typing import Any

from tritonclient._codec.http_client import RequestOutput, encode_output
from tritonclient._codec.types import SharedMemoryRef
from tritonclient.utils import raise_error

__all__ = ["InferRequestedOutput"]


class InferRequestedOutput:
    """An output requested from an inference request.

    Parameters
    ----------
    name : str
        The name of the output tensor.
    binary_data : bool
        Return the output with the binary tensor extension (default True) rather than as
        JSON; ignored while shared memory is set.
    class_count : int
        The number of classifications to return (0, the default: return the tensor itself).
    """

    def __init__(self, name: str, binary_data: bool = True, class_count: int = 0) -> None:
        self._name = name
        self._binary = binary_data
        self._class_count = class_count
        self._shared_memory: SharedMemoryRef | None = None
        self._cached: tuple[SharedMemoryRef | None, RequestOutput] | None = None

    def name(self) -> str:
        """Get the name of the output associated with this object.

        Returns
        -------
        str
            The name of the output.
        """
        return self._name

    def set_shared_memory(self, region_name: str, byte_size: int, offset: int = 0) -> None:
        """Have the server write the output into a registered shared memory region.

        Parameters
        ----------
        region_name : str
            The name of the shared memory region.
        byte_size : int
            The size of the region reserved for the output.
        offset : int
            The offset, in bytes, into the region where the output starts (default 0).

        Raises
        ------
        InferenceServerException
            For a classification output.
        """
        if self._class_count != 0:
            raise_error("shared memory can't be set on classification output")
        self._shared_memory = SharedMemoryRef(region_name, byte_size, offset)

    def unset_shared_memory(self) -> None:
        """Return the output in the response again rather than in shared memory."""
        self._shared_memory = None

    def _request_output(self) -> RequestOutput:
        """The codec's description of this output (kept until the shared memory changes, so
        that its JSON text is made once)."""
        cached = self._cached
        if cached is not None and cached[0] is self._shared_memory:
            return cached[1]
        made = encode_output(
            self._name,
            binary_data=self._binary,
            class_count=self._class_count,
            shared_memory=self._shared_memory,
        )
        self._cached = (self._shared_memory, made)
        return made

    def _get_tensor(self) -> dict[str, Any]:
        """The JSON ``$request_output`` object (NVIDIA's private helper)."""
        return self._request_output().to_json()
